/*
 * kinet-perf device code shared by the modes: which posting unit a thread
 * is, one operation of a unit and its wait (every verb and group form),
 * the first failure, and the grid barrier.
 */
#ifndef KINET_PERF_UNIT_CUH
#define KINET_PERF_UNIT_CUH

#include "kargs.h"
#include "kinet/device.cuh"
#include "perf.h"

/* The entry points of a mode whose device code is perf_<name>_body
 * (kargs.h declares them). */
#if defined(KINET_HOST_EMU)
#define PERF_ENTRY(name)                                                                                     \
	void perf_##name##_emu(void *p)                                                                      \
	{                                                                                                    \
		perf_##name##_body((struct perf_kargs *)p);                                                  \
	}
#else
#define PERF_ENTRY(name)                                                                                     \
	__global__ void perf_##name##_kernel(struct perf_kargs a)                                            \
	{                                                                                                    \
		perf_##name##_body(&a);                                                                      \
	}
#endif

/* Bound of the grid barrier (every thread arrives unless one is stuck). */
#define PERF_BARRIER_NS (30ull * 1000000000ull)

#if defined(KINET_HOST_EMU)
static inline uint32_t perf_tid(void)
{
	return kinet_dev_block_id();
}
/* An emulated thread is one unit of any group (groups are one thread). */
static inline uint32_t perf_unit(const struct perf_kargs *a, int *lead)
{
	(void)a;
	*lead = 1;
	return kinet_dev_block_id();
}
#else
static __device__ __forceinline__ uint32_t perf_tid(void)
{
	return blockIdx.x * blockDim.x + threadIdx.x;
}
/* The unit this thread belongs to; *lead: its first thread. */
static __device__ __forceinline__ uint32_t perf_unit(const struct perf_kargs *a, int *lead)
{
	switch (a->group) {
	case PERF_GROUP_WARP:
		*lead = (threadIdx.x & 31) == 0;
		return blockIdx.x * ((blockDim.x + 31) / 32) + threadIdx.x / 32;
	case PERF_GROUP_BLOCK:
		*lead = threadIdx.x == 0;
		return blockIdx.x;
	default:
		*lead = 1;
		return blockIdx.x * blockDim.x + threadIdx.x;
	}
}
#endif

KINET_DEV_FN int perf_kgroup(const struct perf_kargs *a)
{
	return a->group == PERF_GROUP_WARP    ? KINET_DEVI_GROUP_WARP
	       : a->group == PERF_GROUP_BLOCK ? KINET_DEVI_GROUP_BLOCK
					      : KINET_DEVI_GROUP_THREAD;
}

/* st: a device status (negative errno); the first is kept as its errno. */
KINET_DEV_FN void perf_fail(const struct perf_kargs *a, int st, uint64_t i)
{
	if (kinet_devi_atomic_cas_u32(a->status, 0, (uint32_t)-st) == 0)
		kinet_devi_store_relaxed_u64(a->fail_at, i);
}

/* Every posting thread arrives; all resident (the launcher checks). */
KINET_DEV_FN void perf_barrier(const struct perf_kargs *a)
{
	struct kinet_devi_deadline d;
	kinet_devi_deadline_init(&d, PERF_BARRIER_NS);
	kinet_devi_atomic_add_u64(a->barrier, 1);
	while (kinet_devi_load_acquire_u64_gpu(a->barrier) < a->nthreads) {
		if (kinet_devi_deadline_expired(&d)) {
			perf_fail(a, -ETIMEDOUT, 0);
			return;
		}
	}
}

/* One operation of unit u (slot `slot` of QP q) on QP q; *tk its ticket.
 * Warp and block units: every thread of the group calls with the same
 * arguments (the group forms give all of them lane 0's ticket). */
KINET_DEV_FN int perf_post(const struct perf_kargs *a, struct kinet_dev_qp *qp, uint32_t q, uint32_t u,
			   uint32_t slot, uint64_t i, uint64_t *tk)
{
	uint8_t *src = a->src + q * a->src_stride + slot * a->slot;
	uint64_t dst = a->dst + q * a->dst_stride + slot * a->slot;
	int g = a->group;
	switch (a->op) {
	case PERF_OP_WRITE:
		if (a->inl) {
			/* A value the thread holds (registers), as a GPU thread
			 * putting a flag or a small result would. */
			uint64_t v[4] = {i, i + 1, i + 2, i + 3};
			uint32_t n = (uint32_t)a->size;
			if (g == PERF_GROUP_WARP)
				return kinet_dev_put_inline_warp(qp, v, n, dst, a->rkey, tk);
			if (g == PERF_GROUP_BLOCK)
				return kinet_dev_put_inline_block(qp, v, n, dst, a->rkey, tk);
			return kinet_dev_put_inline(qp, v, n, dst, a->rkey, tk);
		}
		if (g == PERF_GROUP_WARP)
			return kinet_dev_put_warp(qp, src, a->lkey, dst, a->rkey, a->size, tk);
		if (g == PERF_GROUP_BLOCK)
			return kinet_dev_put_block(qp, src, a->lkey, dst, a->rkey, a->size, tk);
		return kinet_dev_put(qp, src, a->lkey, dst, a->rkey, a->size, tk);
	case PERF_OP_READ:
		if (g == PERF_GROUP_WARP)
			return kinet_dev_get_warp(qp, src, a->lkey, dst, a->rkey, a->size, tk);
		if (g == PERF_GROUP_BLOCK)
			return kinet_dev_get_block(qp, src, a->lkey, dst, a->rkey, a->size, tk);
		return kinet_dev_get(qp, src, a->lkey, dst, a->rkey, a->size, tk);
	case PERF_OP_FETCH_ADD:
		return kinet_dev_fetch_add(qp, &a->results[u], a->res_lkey, dst, a->rkey, 1, tk);
	case PERF_OP_COMPARE_SWAP:
		return kinet_dev_compare_swap(qp, &a->results[u], a->res_lkey, dst, a->rkey, i, i + 1, tk);
	case PERF_OP_PUT_SIGNAL:
		/* Signal words stay one per QP (after every QP's slots). */
		if (g == PERF_GROUP_WARP)
			return kinet_dev_put_signal_warp(qp, src, a->lkey, dst, a->rkey, a->size,
							 a->sig + 8 * q, a->rkey, 1, tk);
		if (g == PERF_GROUP_BLOCK)
			return kinet_dev_put_signal_block(qp, src, a->lkey, dst, a->rkey, a->size,
							  a->sig + 8 * q, a->rkey, 1, tk);
		return kinet_dev_put_signal(qp, src, a->lkey, dst, a->rkey, a->size, a->sig + 8 * q, a->rkey,
					    1, tk);
	default:
		return kinet_dev_send(qp, src, a->lkey, a->size, tk);
	}
}

/* Wait for a ticket: the whole group, identical arguments. */
KINET_DEV_FN int perf_wait(const struct perf_kargs *a, struct kinet_dev_qp *qp, uint64_t tk)
{
	if (a->group == PERF_GROUP_WARP)
		return kinet_dev_wait_warp(qp, tk);
	if (a->group == PERF_GROUP_BLOCK)
		return kinet_dev_wait_block(qp, tk);
	return kinet_dev_wait(qp, tk);
}

#endif /* KINET_PERF_UNIT_CUH */
