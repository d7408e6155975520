/*
 * The few CUDA runtime calls of the host library.  A build without CUDA, or
 * a machine without a usable device, behaves as host-only.
 */
#include <errno.h>

#include "internal.h"

#ifdef KINET_HAVE_CUDA
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#endif

int kinet_cuda_available(void)
{
#ifdef KINET_HAVE_CUDA
	int n = 0;

	if (cudaGetDeviceCount(&n) != cudaSuccess) {
		/* No driver or no device: not an error for kinet. */
		cudaGetLastError();
		return 0;
	}
	return n > 0;
#else
	return 0;
#endif
}

int kinet_cuda_select(int device)
{
#ifdef KINET_HAVE_CUDA
	cudaError_t e;
	int n = 0;

	if (cudaGetDeviceCount(&n) != cudaSuccess || device < 0 || device >= n) {
		cudaGetLastError();
		return -ENODEV;
	}
	e = cudaSetDevice(device);
	if (e == cudaSuccess)
		e = cudaFree(0); /* creates the primary context now, not on first use */
	if (e != cudaSuccess) {
		KINET_ERR("CUDA device %d unusable: %s", device, cudaGetErrorString(e));
		cudaGetLastError();
		return -ENODEV;
	}
	return 0;
#else
	(void)device;
	return -ENODEV;
#endif
}

enum kinet_mem_type kinet_cuda_mem_type(const void *ptr, int *device)
{
#ifdef KINET_HAVE_CUDA
	struct cudaPointerAttributes a;

	*device = -1;
	if (cudaPointerGetAttributes(&a, ptr) != cudaSuccess) {
		/* Older runtimes fail on pageable host memory; the error is sticky
		 * until read, so clear it for the application. */
		cudaGetLastError();
		return KINET_MEM_HOST;
	}
	if (a.type == cudaMemoryTypeDevice || a.type == cudaMemoryTypeManaged) {
		*device = a.device;
		return KINET_MEM_CUDA;
	}
	return KINET_MEM_HOST;
#else
	(void)ptr;
	*device = -1;
	return KINET_MEM_HOST;
#endif
}

int kinet_cuda_host_native_atomics(int device)
{
#ifdef KINET_HAVE_CUDA
	int v = 0;

	if (cudaDeviceGetAttribute(&v, cudaDevAttrHostNativeAtomicSupported, device) != cudaSuccess) {
		cudaGetLastError();
		return 0;
	}
	return v != 0;
#else
	(void)device;
	return 1;
#endif
}

int kinet_cuda_peer_access(int from, int to)
{
#ifdef KINET_HAVE_CUDA
	int can = 0, old = -1;
	cudaError_t e;

	if (from == to)
		return 0;
	if (cudaDeviceCanAccessPeer(&can, from, to) != cudaSuccess || !can) {
		cudaGetLastError();
		return -ENODEV;
	}
	/* Enabling is per (current device, peer) and process-wide; the caller's
	 * current device is restored. */
	if (cudaGetDevice(&old) != cudaSuccess)
		old = -1;
	e = cudaSetDevice(from);
	if (e == cudaSuccess)
		e = cudaDeviceEnablePeerAccess(to, 0);
	if (e == cudaErrorPeerAccessAlreadyEnabled)
		e = cudaSuccess;
	if (e != cudaSuccess)
		KINET_INFO("CUDA device %d cannot enable peer access to device %d: %s", from, to,
			   cudaGetErrorString(e));
	cudaGetLastError();
	if (old >= 0)
		cudaSetDevice(old);
	return e == cudaSuccess ? 0 : -ENODEV;
#else
	return from == to ? 0 : -ENODEV;
#endif
}

int kinet_cuda_host_mapping(const void *ptr, uint64_t *delta)
{
#ifdef KINET_HAVE_CUDA
	struct cudaPointerAttributes a;

	if (cudaPointerGetAttributes(&a, ptr) != cudaSuccess) {
		cudaGetLastError();
		return -ENOENT;
	}
	if (a.type != cudaMemoryTypeHost || !a.devicePointer)
		return -ENOENT;
	*delta = (uint64_t)(uintptr_t)a.devicePointer - (uint64_t)(uintptr_t)ptr;
	return 0;
#else
	(void)ptr;
	*delta = 0;
	return -ENOENT;
#endif
}

#ifdef KINET_HAVE_CUDA
/* The driver API's cuPointerSetAttribute and cuMemGetAddressRange_v2, taken
 * from libcuda.so.1 (which the runtime loaded: libkinet does not link
 * libcuda), with the values of cuda.h they need. */
#define KINET_CU_POINTER_ATTRIBUTE_SYNC_MEMOPS 6
typedef int (*set_attr_fn)(const void *value, int attribute, unsigned long long ptr);
typedef int (*range_fn)(unsigned long long *base, size_t *size, unsigned long long ptr);
static pthread_once_t driver_once = PTHREAD_ONCE_INIT;
static set_attr_fn set_attr;
static range_fn get_range;

static void driver_init(void)
{
	void *lib = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
	void *a, *r;

	if (!lib)
		lib = dlopen("libcuda.so.1", RTLD_LAZY);
	a = lib ? dlsym(lib, "cuPointerSetAttribute") : NULL;
	r = lib ? dlsym(lib, "cuMemGetAddressRange_v2") : NULL;
	if (a && r) {
		memcpy(&set_attr, &a, sizeof(a));
		memcpy(&get_range, &r, sizeof(r));
	}
}
#endif

int kinet_cuda_sync_memops(void *addr, size_t length, int device)
{
#ifdef KINET_HAVE_CUDA
	static atomic_bool told;
	uintptr_t p = (uintptr_t)addr, end = (uintptr_t)addr + length;
	const char *why = NULL;
	int prev = -1;

	pthread_once(&driver_once, driver_init);
	if (!set_attr) {
		why = "libcuda.so.1 has no cuPointerSetAttribute";
		goto out;
	}
	/* The driver calls need the GPU's context current on this thread; the
	 * caller's device is put back. */
	if (cudaGetDevice(&prev) != cudaSuccess)
		prev = -1;
	if (device >= 0 && device != prev)
		cudaSetDevice(device);
	/* The attribute belongs to an allocation, and a region may span
	 * several (adjacent mappings). */
	while (p < end) {
		unsigned long long base = 0;
		size_t size = 0;
		unsigned one = 1;

		if (get_range(&base, &size, p) || !size || base + size <= p) {
			why = "the CUDA driver does not know the allocation";
			break;
		}
		if (set_attr(&one, KINET_CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, base)) {
			why = "the CUDA driver refused CU_POINTER_ATTRIBUTE_SYNC_MEMOPS";
			break;
		}
		p = (uintptr_t)(base + size);
	}
	if (prev >= 0 && device >= 0 && device != prev)
		cudaSetDevice(prev);
	cudaGetLastError();
out:
	if (!why)
		return 0;
	if (!atomic_exchange(&told, true))
		KINET_INFO("GPU memory at %p: %s; a cudaMemcpy into it from pageable host memory may return "
			   "before its data lands: synchronize the device before posting work that reads it",
			   addr, why);
	return -ENOTSUP;
#else
	(void)addr;
	(void)length;
	(void)device;
	return -ENOTSUP;
#endif
}
