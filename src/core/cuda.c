/*
 * The few CUDA runtime calls of the host library.  A build without CUDA, or
 * a machine without a usable device, behaves as host-only.
 */
#include <errno.h>

#include "internal.h"

#ifdef KINET_HAVE_CUDA
#include <cuda_runtime_api.h>
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
