/*
 * Memory the kernel and the host thread both reach while the kernel runs
 * (status words, stop words, records): pinned host memory mapped into the
 * GPU, or plain memory where the "kernel" is CPU threads (KINET_HOST_EMU).
 * mapped_alloc returns the kernel's address and sets *host to the host's.
 */
#ifndef ETH_MAPPED_H
#define ETH_MAPPED_H

#include <stdlib.h>
#include <string.h>

#if !defined(KINET_HOST_EMU)
#include <cuda_runtime.h>
#endif

static inline void *mapped_alloc(size_t n, void **host)
{
#if defined(KINET_HOST_EMU)
	*host = calloc(1, n);
	return *host;
#else
	void *d = NULL;
	if (cudaHostAlloc(host, n, cudaHostAllocMapped) != cudaSuccess)
		return NULL;
	memset(*host, 0, n);
	return cudaHostGetDevicePointer(&d, *host, 0) == cudaSuccess ? d : NULL;
#endif
}

static inline void mapped_free(void *host)
{
#if defined(KINET_HOST_EMU)
	free(host);
#else
	cudaFreeHost(host);
#endif
}

#endif /* ETH_MAPPED_H */
