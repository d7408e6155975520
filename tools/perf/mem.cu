/*
 * kinet-perf memory: host buffers are pinned and mapped into the GPU (so a
 * kernel and the software NIC both reach them at one address, UVA), GPU
 * buffers are cudaMalloc'd.  Under host emulation everything is plain host
 * memory and "GPU memory" is refused (the caller falls back and says so).
 */
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
	if (m == PERF_MEM_GPU)
		return cudaMemset(p, byte, len) == cudaSuccess ? 0 : -1;
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

#endif
