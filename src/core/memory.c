/*
 * Memory shared between the host library, the engine and device code: queue
 * rings, doorbell records, UAR pages, error records and (without a GPU)
 * exported descriptors.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#ifdef KINET_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

void *kinet_host_alloc(struct kinet_ctx *ctx, size_t size)
{
	void *p = NULL;

#ifdef KINET_HAVE_CUDA
	if (ctx->cuda_device >= 0) {
		cudaError_t e;

		/* Mapped so kernels reach it; portable so every CUDA context of
		 * the process (and every engine thread) sees it pinned. */
		cudaSetDevice(ctx->cuda_device);
		e = cudaHostAlloc(&p, size, cudaHostAllocMapped | cudaHostAllocPortable);
		if (e != cudaSuccess) {
			KINET_ERR("cudaHostAlloc(%zu): %s", size, cudaGetErrorString(e));
			cudaGetLastError();
			return NULL;
		}
		memset(p, 0, size);
		return p;
	}
#else
	(void)ctx;
#endif
	if (posix_memalign(&p, 4096, size))
		return NULL;
	memset(p, 0, size);
	return p;
}

void kinet_host_free(struct kinet_ctx *ctx, void *ptr)
{
	if (!ptr)
		return;
#ifdef KINET_HAVE_CUDA
	if (ctx->cuda_device >= 0) {
		cudaFreeHost(ptr);
		return;
	}
#else
	(void)ctx;
#endif
	free(ptr);
}

void *kinet_host_dev_ptr(struct kinet_ctx *ctx, void *ptr)
{
#ifdef KINET_HAVE_CUDA
	if (ctx->cuda_device >= 0 && ptr) {
		void *d = NULL;

		if (cudaHostGetDevicePointer(&d, ptr, 0) != cudaSuccess) {
			cudaGetLastError();
			return NULL;
		}
		return d;
	}
#else
	(void)ctx;
#endif
	return ptr;
}

void *kinet_dev_alloc(struct kinet_ctx *ctx, size_t size)
{
#ifdef KINET_HAVE_CUDA
	if (ctx->cuda_device >= 0) {
		void *d = NULL;
		cudaError_t e;

		cudaSetDevice(ctx->cuda_device);
		e = cudaMalloc(&d, size);
		if (e == cudaSuccess)
			e = cudaMemset(d, 0, size);
		if (e != cudaSuccess) {
			KINET_ERR("cudaMalloc(%zu): %s", size, cudaGetErrorString(e));
			cudaGetLastError();
			if (d)
				cudaFree(d);
			return NULL;
		}
		return d;
	}
#endif
	return kinet_host_alloc(ctx, size);
}

int kinet_dev_copy_in(struct kinet_ctx *ctx, void *dev, const void *src, size_t size)
{
#ifdef KINET_HAVE_CUDA
	if (ctx->cuda_device >= 0) {
		cudaError_t e;

		cudaSetDevice(ctx->cuda_device);
		e = cudaMemcpy(dev, src, size, cudaMemcpyHostToDevice);
		if (e != cudaSuccess) {
			KINET_ERR("cudaMemcpy(%zu): %s", size, cudaGetErrorString(e));
			cudaGetLastError();
			return -EIO;
		}
		return 0;
	}
#else
	(void)ctx;
#endif
	memcpy(dev, src, size);
	return 0;
}

void kinet_dev_free(struct kinet_ctx *ctx, void *dev)
{
	if (!dev)
		return;
#ifdef KINET_HAVE_CUDA
	if (ctx->cuda_device >= 0) {
		cudaFree(dev);
		return;
	}
#endif
	kinet_host_free(ctx, dev);
}
