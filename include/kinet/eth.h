/*
 * kinet host API, Ethernet half (issue 29): so far the GPU semaphores.
 * Ports, packet queues and steering rules are to come here too.  The
 * model and its mapping to GPUNetIO's names: docs/ETHERNET.md.
 */
#ifndef KINET_ETH_H
#define KINET_ETH_H

#include <stddef.h>
#include <stdint.h>

#include "kinet/api.h"
#include "kinet/device/sem_types.h"
#include "kinet/kinet.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- GPU semaphores (kinet_sem(3)) ------------------------------------
 * A ring of items, each a status (enum kinet_sem_status), a packet info
 * (struct kinet_sem_pkt_info) and custom info of a size chosen at
 * creation, set and read from kernels (kinet/device/sem.cuh) and from the
 * CPU, so that a receive kernel hands batches to the CPU or to another
 * kernel (GPUNetIO's doca_gpu_semaphore). */
struct kinet_sem;

/* Where the items live. */
enum kinet_sem_mem {
	/* Pinned host memory mapped into the GPU (cudaHostAlloc, mapped):
	 * kernels and the CPU both reach it at memory speed on their side.
	 * For GPU <-> CPU rings.  In a context without a CUDA device it is
	 * plain host memory (what CPU threads running the device API use). */
	KINET_SEM_MEM_HOST_MAPPED = 0,
	/* GPU memory (cudaMalloc): kernel <-> kernel rings; the host calls
	 * copy through the CUDA runtime (slow, but correct).  Needs a CUDA
	 * device in the context, else -ENODEV. */
	KINET_SEM_MEM_GPU = 1,
	/* Plain host memory, not mapped: CPU <-> CPU (and the device API on
	 * CPU threads); kernels cannot reach it. */
	KINET_SEM_MEM_HOST = 2,
};

struct kinet_sem_attr {
	uint32_t size;	      /* sizeof(struct kinet_sem_attr), or 0 */
	uint32_t nitems;      /* items in the ring, 1..KINET_SEM_MAX_ITEMS */
	uint32_t custom_size; /* bytes of custom info per item, 0..KINET_SEM_MAX_CUSTOM */
	int32_t mem;	      /* enum kinet_sem_mem */
};
#define KINET_SEM_MAX_ITEMS (1u << 24)
#define KINET_SEM_MAX_CUSTOM (1u << 16)

/* Fills attr with the defaults: its size, 1024 items, no custom info,
 * KINET_SEM_MEM_HOST_MAPPED. */
KINET_API void kinet_sem_attr_init(struct kinet_sem_attr *attr);
/* Every item starts KINET_SEM_FREE with zeroed info.  0; -EINVAL (a bad
 * attribute, named in the log), -ENODEV (GPU memory asked for in a
 * context without a CUDA device, logged), -ENOMEM, -EIO (CUDA failed). */
KINET_API int kinet_sem_create(struct kinet_ctx *ctx, const struct kinet_sem_attr *attr,
			       struct kinet_sem **sem);
/* Frees the ring and its exported descriptor; no kernel may still use
 * them.  kinet_ctx_close destroys the semaphores left. */
KINET_API int kinet_sem_destroy(struct kinet_sem *sem);
KINET_API uint32_t kinet_sem_nitems(const struct kinet_sem *sem);

/* Status of item idx: an acquire load (what the item's writer stored
 * before its release of the status is visible afterwards). */
KINET_API int kinet_sem_get_status(struct kinet_sem *sem, uint32_t idx, enum kinet_sem_status *status);
/* A release store: the item's info and custom info written before it are
 * visible to whoever sees the status. */
KINET_API int kinet_sem_set_status(struct kinet_sem *sem, uint32_t idx, enum kinet_sem_status status);
KINET_API int kinet_sem_get_pkt_info(struct kinet_sem *sem, uint32_t idx, struct kinet_sem_pkt_info *info);
KINET_API int kinet_sem_set_pkt_info(struct kinet_sem *sem, uint32_t idx,
				     const struct kinet_sem_pkt_info *info);
/* Host address of item idx's custom info (custom_size bytes).  -EINVAL
 * without custom info; -EOPNOTSUPP for GPU memory (use the copies below). */
KINET_API int kinet_sem_custom_info_addr(struct kinet_sem *sem, uint32_t idx, void **addr);
/* Copies len bytes (<= custom_size) of item idx's custom info out / in;
 * for every memory type. */
KINET_API int kinet_sem_get_custom_info(struct kinet_sem *sem, uint32_t idx, void *dst, size_t len);
KINET_API int kinet_sem_set_custom_info(struct kinet_sem *sem, uint32_t idx, const void *src, size_t len);
/* The descriptor device code takes (kinet/device/sem.cuh), in GPU memory
 * (host memory without a CUDA device); the same pointer every call, valid
 * until kinet_sem_destroy. */
KINET_API int kinet_sem_export(struct kinet_sem *sem, struct kinet_dev_sem **dsem);

#ifdef __cplusplus
}
#endif

#endif /* KINET_ETH_H */
