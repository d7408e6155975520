/*
 * The CUDA runtime (cuda.c, compiled out without CUDA) and descriptor
 * memory for export (memory.c, export.c).  Not named cuda.h: src/core is
 * on white-box tests' include path, where it would hide <cuda.h>.
 */
#ifndef KINET_CORE_CUDA_RT_H
#define KINET_CORE_CUDA_RT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kinet/device/types.h"
#include "kinet/kinet.h"
#include "kinet/wire.h"

struct kinet_ctx;
struct kinet_qp;
struct kinet_cq;
struct kinet_mr;

/* CUDA runtime, compiled out without KINET_HAVE_CUDA (cuda.c). */
int kinet_cuda_select(int device); /* cudaSetDevice + context init; 0 or -ENODEV */
/* Memory type of ptr; *device is the CUDA device owning GPU memory. */
enum kinet_mem_type kinet_cuda_mem_type(const void *ptr, int *device);
/* Makes every synchronous copy into or out of the CUDA allocations under
 * [addr, addr+length) complete before it returns (the driver's
 * CU_POINTER_ATTRIBUTE_SYNC_MEMOPS), as RDMA stacks do for the GPU memory
 * they register: 0, or -ENOTSUP where the driver cannot (logged once). */
int kinet_cuda_sync_memops(void *addr, size_t length, int device);
/* Descriptor memory for export: GPU memory with CUDA, else kinet_host_alloc. */
void *kinet_cuda_alloc(struct kinet_ctx *ctx, size_t size);
int kinet_cuda_copy_in(struct kinet_ctx *ctx, void *dev, const void *src, size_t size);
/* The other way: size bytes of descriptor (or GPU) memory into dst. */
int kinet_cuda_copy_out(struct kinet_ctx *ctx, void *dst, const void *dev, size_t size);
/* A descriptor filled on the host, copied to new descriptor memory (export.c). */
int kinet_cuda_export_copy(struct kinet_ctx *ctx, const void *d, size_t len, void **out);
void kinet_cuda_free(struct kinet_ctx *ctx, void *dev);
/* 0 once device `from` can access device `to`'s memory (peer access
 * enabled), else -ENODEV (cuda.c). */
int kinet_cuda_peer_access(int from, int to);
/* Whether device's atomics on host memory are atomic with the CPU's
 * (cudaDevAttrHostNativeAtomicSupported); 1 without CUDA. */
int kinet_cuda_host_native_atomics(int device);
/* 0 and the device address minus the host address of pinned, mapped host
 * memory; -ENOENT for memory the GPU cannot reach (cuda.c). */
int kinet_cuda_host_mapping(const void *ptr, uint64_t *delta);

#endif /* KINET_CORE_CUDA_RT_H */
