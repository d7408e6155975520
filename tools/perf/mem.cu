/*
 * kinet-perf memory: host buffers are pinned and mapped into the GPU (so a
 * kernel and the software NIC both reach them at one address, UVA), GPU
 * buffers are cudaMalloc'd.  Under host emulation everything is plain host
 * memory and "GPU memory" is refused (the caller falls back and says so).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "perf.h"

#if defined(KINET_HOST_EMU)

void *perf_alloc(enum perf_mem m, size_t len)
{
	void *p = NULL;
	if (m == PERF_MEM_GPU)
		return NULL;
	if (posix_memalign(&p, 4096, len ? len : 64))
		return NULL;
	memset(p, 0, len);
	return p;
}

void perf_free(enum perf_mem m, void *p)
{
	(void)m;
	free(p);
}

int perf_copy_to(void *dst, const void *src, size_t len)
{
	memcpy(dst, src, len);
	return 0;
}

int perf_copy_from(void *dst, const void *src, size_t len)
{
	memcpy(dst, src, len);
	return 0;
}

int perf_fill(enum perf_mem m, void *p, int byte, size_t len)
{
	(void)m;
	memset(p, byte, len);
	return 0;
}

int perf_gpu_present(char *name, size_t len)
{
	if (name && len)
		snprintf(name, len, "none");
	return 0;
}

int perf_gpu_select(int local_rank)
{
	(void)local_rank;
	return 0;
}

int perf_gpu_sm_count(void)
{
	return 0;
}

int perf_gpu_count(void)
{
	return 0;
}

int perf_gpu_name(int dev, char *name, size_t len)
{
	(void)dev;
	if (name && len)
		snprintf(name, len, "none");
	return -1;
}

int perf_gpu_use(int dev)
{
	(void)dev;
	return -1;
}

void *perf_alloc_on(int dev, enum perf_mem m, size_t len)
{
	(void)dev;
	return perf_alloc(m, len);
}

void perf_free_on(int dev, enum perf_mem m, void *p)
{
	(void)dev;
	perf_free(m, p);
}

#else
#include <cuda_runtime.h>

void *perf_alloc(enum perf_mem m, size_t len)
{
	void *p = NULL;
	if (!len)
		len = 64;
	if (m == PERF_MEM_GPU) {
		if (cudaMalloc(&p, len) != cudaSuccess) {
			cudaGetLastError();
			return NULL;
		}
		cudaMemset(p, 0, len);
		return p;
	}
	/* Mapped + portable: device code and every context reach it. */
	if (cudaHostAlloc(&p, len, cudaHostAllocMapped | cudaHostAllocPortable) != cudaSuccess) {
		cudaGetLastError();
		return NULL;
	}
	memset(p, 0, len);
	return p;
}

void perf_free(enum perf_mem m, void *p)
{
	if (!p)
		return;
	if (m == PERF_MEM_GPU)
		cudaFree(p);
	else
		cudaFreeHost(p);
}

int perf_copy_to(void *dst, const void *src, size_t len)
{
	return cudaMemcpy(dst, src, len, cudaMemcpyDefault) == cudaSuccess ? 0 : -1;
}

int perf_copy_from(void *dst, const void *src, size_t len)
{
	return cudaMemcpy(dst, src, len, cudaMemcpyDefault) == cudaSuccess ? 0 : -1;
}

int perf_fill(enum perf_mem m, void *p, int byte, size_t len)
{
	/* Done on return: kernels and engines on other streams use it next. */
	if (m == PERF_MEM_GPU)
		return cudaMemset(p, byte, len) == cudaSuccess && cudaDeviceSynchronize() == cudaSuccess ? 0
													 : -1;
	memset(p, byte, len);
	return 0;
}

int perf_gpu_present(char *name, size_t len)
{
	int n = 0, dev = 0;
	struct cudaDeviceProp prop;
	if (cudaGetDeviceCount(&n) != cudaSuccess || n < 1) {
		cudaGetLastError();
		if (name && len)
			snprintf(name, len, "none");
		return 0;
	}
	if (cudaGetDevice(&dev) != cudaSuccess || cudaGetDeviceProperties(&prop, dev) != cudaSuccess) {
		cudaGetLastError();
		return 0;
	}
	if (name && len)
		snprintf(name, len, "%s", prop.name);
	return 1;
}

int perf_gpu_select(int local_rank)
{
	int n = 0, dev;
	if (cudaGetDeviceCount(&n) != cudaSuccess || n < 1) {
		cudaGetLastError();
		return 0;
	}
	dev = (local_rank < 0 ? 0 : local_rank) % n;
	if (cudaSetDevice(dev) != cudaSuccess) {
		cudaGetLastError();
		return 0;
	}
	return dev;
}

int perf_gpu_sm_count(void)
{
	int v = 0, dev = 0;
	if (cudaGetDevice(&dev) != cudaSuccess ||
	    cudaDeviceGetAttribute(&v, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess) {
		cudaGetLastError();
		return 0;
	}
	return v;
}

int perf_gpu_count(void)
{
	int n = 0;
	if (cudaGetDeviceCount(&n) != cudaSuccess) {
		cudaGetLastError();
		return 0;
	}
	return n;
}

int perf_gpu_name(int dev, char *name, size_t len)
{
	struct cudaDeviceProp prop;
	if (cudaGetDeviceProperties(&prop, dev) != cudaSuccess) {
		cudaGetLastError();
		if (name && len)
			snprintf(name, len, "none");
		return -1;
	}
	if (name && len)
		snprintf(name, len, "%s", prop.name);
	return 0;
}

int perf_gpu_use(int dev)
{
	int old = -1;
	if (cudaGetDevice(&old) != cudaSuccess)
		old = -1;
	if (dev >= 0 && dev != old && cudaSetDevice(dev) != cudaSuccess)
		old = -1;
	cudaGetLastError();
	return old;
}

/* cudaMalloc and cudaMemset act on the current device, and cudaFree is
 * safest with the owner current: switch for the call, then switch back. */
void *perf_alloc_on(int dev, enum perf_mem m, size_t len)
{
	int old = dev >= 0 ? perf_gpu_use(dev) : -1;
	void *p = perf_alloc(m, len);
	if (old >= 0)
		perf_gpu_use(old);
	return p;
}

void perf_free_on(int dev, enum perf_mem m, void *p)
{
	int old = dev >= 0 && p ? perf_gpu_use(dev) : -1;
	perf_free(m, p);
	if (old >= 0)
		perf_gpu_use(old);
}

int perf_cuda_check(int status, const char *what, char *err, size_t errlen)
{
	cudaError_t c = (cudaError_t)status;
	if (c == cudaSuccess)
		return 0;
	snprintf(err, errlen, "%s: %s", what, cudaGetErrorString(c));
	cudaGetLastError();
	return -EIO;
}

#endif
