/*
 * Memory shared between the host library, the engine and device code: queue
 * rings, doorbell records, UAR pages, error records and (without a GPU)
 * exported descriptors.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#ifdef KINET_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

#ifdef KINET_HAVE_CUDA
/* One non-blocking stream per device for kinet's own small copies into
 * device memory: a cudaMemcpy on the legacy default stream would wait for
 * the application's running kernels, and a window revoked or added while a
 * persistent kernel runs must reach it without the kernel ending first. */
#define COPY_STREAM_DEVICES 64
static pthread_mutex_t copy_stream_lock = PTHREAD_MUTEX_INITIALIZER;
static cudaStream_t copy_streams[COPY_STREAM_DEVICES];

static cudaStream_t copy_stream(int device)
{
	cudaStream_t s = NULL;

	if (device >= COPY_STREAM_DEVICES)
		return NULL;
	pthread_mutex_lock(&copy_stream_lock);
	if (!copy_streams[device] &&
	    cudaStreamCreateWithFlags(&copy_streams[device], cudaStreamNonBlocking) != cudaSuccess) {
		cudaGetLastError();
		copy_streams[device] = NULL;
	}
	s = copy_streams[device];
	pthread_mutex_unlock(&copy_stream_lock);
	return s;
}
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

void *kinet_cuda_alloc(struct kinet_ctx *ctx, size_t size)
{
#ifdef KINET_HAVE_CUDA
	if (ctx->cuda_device >= 0) {
		void *d = NULL;
		cudaError_t e;

		cudaSetDevice(ctx->cuda_device);
		e = cudaMalloc(&d, size);
		if (e == cudaSuccess) {
			/* Zeroed on kinet's stream, like every later write of
			 * kinet's into it: the legacy stream would be ordered
			 * with none of them (nor finish while a kernel runs). */
			cudaStream_t s = copy_stream(ctx->cuda_device);

			e = s ? cudaMemsetAsync(d, 0, size, s) : cudaMemset(d, 0, size);
			if (e == cudaSuccess && s)
				e = cudaStreamSynchronize(s);
		}
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

/* A synchronous copy on the context's copy stream: complete on return.
 * cudaMemcpyDefault: the direction follows from the two addresses. */
static int copy_sync(struct kinet_ctx *ctx, void *dst, const void *src, size_t size)
{
#ifdef KINET_HAVE_CUDA
	if (ctx->cuda_device >= 0) {
		cudaStream_t s;
		cudaError_t e;

		cudaSetDevice(ctx->cuda_device);
		s = copy_stream(ctx->cuda_device);
		if (s) {
			e = cudaMemcpyAsync(dst, src, size, cudaMemcpyDefault, s);
			if (e == cudaSuccess)
				e = cudaStreamSynchronize(s);
		} else {
			e = cudaMemcpy(dst, src, size, cudaMemcpyDefault);
		}
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
	memcpy(dst, src, size);
	return 0;
}

int kinet_cuda_copy_in(struct kinet_ctx *ctx, void *dev, const void *src, size_t size)
{
	return copy_sync(ctx, dev, src, size);
}

int kinet_cuda_copy_out(struct kinet_ctx *ctx, void *dst, const void *dev, size_t size)
{
	return copy_sync(ctx, dst, dev, size);
}

void kinet_cuda_free(struct kinet_ctx *ctx, void *dev)
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
