/*
 * kinet device API, implementation: sharing scopes.
 *
 * How a QP's device counters (GPU memory) are accessed depends on
 * qp->sharing (kinet_devi_qp_scope):
 *   EXCLUSIVE  one thread (or a group's leader) at a time on each side (send,
 *              receive): plain loads and stores, no CAS, no in-order commit
 *              wait, no poll lock;
 *   CTA        threads of one block: block-scope atomics, acquire/release;
 *   GPU        any thread: device-scope atomics, acquire/release.
 * Host-memory ordering (WQEs, doorbells, CQEs) is system scope in all modes.
 */
#ifndef KINET_DEVICE_IMPL_SCOPE_CUH
#define KINET_DEVICE_IMPL_SCOPE_CUH

#include "kinet/device/platform.cuh"
#include "kinet/device/types.h"
#include "kinet/kinet.h"

#define KINET_DEVI_SCOPE_THREAD 0 /* KINET_SHARE_EXCLUSIVE */
#define KINET_DEVI_SCOPE_CTA 1	  /* KINET_SHARE_CTA */
#define KINET_DEVI_SCOPE_GPU 2	  /* KINET_SHARE_GPU */

/* The scope of a sharing mode (enum kinet_qp_sharing). */
KINET_DEV_FN int kinet_devi_sharing_scope(uint32_t sharing)
{
	if (sharing == KINET_SHARE_EXCLUSIVE)
		return KINET_DEVI_SCOPE_THREAD;
	return sharing == KINET_SHARE_CTA ? KINET_DEVI_SCOPE_CTA : KINET_DEVI_SCOPE_GPU;
}

KINET_DEV_FN int kinet_devi_qp_scope(const struct kinet_dev_qp *qp)
{
	return kinet_devi_sharing_scope(qp->sharing);
}

/* Accesses to the descriptor's device counters (GPU memory) at a scope:
 * THREAD = plain (one user at a time), CTA = block scope, GPU = device. */
KINET_DEV_FN uint64_t kinet_devi_scoped_load_relaxed_u64(int scope, const uint64_t *p)
{
	return scope == KINET_DEVI_SCOPE_THREAD ? *p : kinet_devi_load_relaxed_u64(p);
}

KINET_DEV_FN uint32_t kinet_devi_scoped_load_relaxed_u32(int scope, const uint32_t *p)
{
	return scope == KINET_DEVI_SCOPE_THREAD ? *p : kinet_devi_load_relaxed_u32(p);
}

KINET_DEV_FN uint64_t kinet_devi_scoped_load_acquire_u64(int scope, const uint64_t *p)
{
	if (scope == KINET_DEVI_SCOPE_THREAD)
		return *p;
	if (scope == KINET_DEVI_SCOPE_CTA)
		return kinet_devi_load_acquire_u64_cta(p);
	return kinet_devi_load_acquire_u64_gpu(p);
}

KINET_DEV_FN uint32_t kinet_devi_scoped_load_acquire_u32(int scope, const uint32_t *p)
{
	if (scope == KINET_DEVI_SCOPE_THREAD)
		return *p;
	if (scope == KINET_DEVI_SCOPE_CTA)
		return kinet_devi_load_acquire_u32_cta(p);
	return kinet_devi_load_acquire_u32_gpu(p);
}

KINET_DEV_FN void kinet_devi_scoped_store_relaxed_u64(int scope, uint64_t *p, uint64_t v)
{
	if (scope == KINET_DEVI_SCOPE_THREAD)
		*p = v;
	else
		kinet_devi_store_relaxed_u64(p, v);
}

KINET_DEV_FN void kinet_devi_scoped_store_relaxed_u32(int scope, uint32_t *p, uint32_t v)
{
	if (scope == KINET_DEVI_SCOPE_THREAD)
		*p = v;
	else
		kinet_devi_store_relaxed_u32(p, v);
}

KINET_DEV_FN void kinet_devi_scoped_store_release_u64(int scope, uint64_t *p, uint64_t v)
{
	if (scope == KINET_DEVI_SCOPE_THREAD)
		*p = v;
	else if (scope == KINET_DEVI_SCOPE_CTA)
		kinet_devi_store_release_u64_cta(p, v);
	else
		kinet_devi_store_release_u64_gpu(p, v);
}

/* After relaxed loads of the counters: an acquire of what they showed. */
KINET_DEV_FN void kinet_devi_scoped_fence_acquire(int scope)
{
	if (scope == KINET_DEVI_SCOPE_CTA)
		kinet_devi_fence_cta();
	else if (scope == KINET_DEVI_SCOPE_GPU)
		kinet_devi_fence_acquire_gpu();
}

/* Orders the counter accesses around it (no-op for THREAD). */
KINET_DEV_FN void kinet_devi_scoped_fence(int scope)
{
	if (scope == KINET_DEVI_SCOPE_CTA)
		kinet_devi_fence_cta();
	else if (scope == KINET_DEVI_SCOPE_GPU)
		kinet_devi_fence_gpu();
}

/* CAS for CTA and GPU (THREAD callers store instead). */
KINET_DEV_FN uint64_t kinet_devi_scoped_cas_u64(int scope, uint64_t *p, uint64_t expected, uint64_t desired)
{
	if (scope == KINET_DEVI_SCOPE_CTA)
		return kinet_devi_atomic_cas_u64_cta(p, expected, desired);
	return kinet_devi_atomic_cas_u64(p, expected, desired);
}

KINET_DEV_FN uint32_t kinet_devi_scoped_cas_u32(int scope, uint32_t *p, uint32_t expected, uint32_t desired)
{
	if (scope == KINET_DEVI_SCOPE_CTA)
		return kinet_devi_atomic_cas_u32_cta(p, expected, desired);
	return kinet_devi_atomic_cas_u32(p, expected, desired);
}

/* The poll lock of a CQ (CTA, GPU): 1 when taken.  An acquire fence at the
 * scope follows, so ci and the counters are as the last holder left them. */
KINET_DEV_FN int kinet_devi_cq_trylock(int scope, struct kinet_dev_cq *cq)
{
	if (scope == KINET_DEVI_SCOPE_THREAD)
		return 1;
	if (kinet_devi_load_relaxed_u32(&cq->poll_lock) != 0 ||
	    kinet_devi_scoped_cas_u32(scope, &cq->poll_lock, 0, 1) != 0)
		return 0;
	kinet_devi_scoped_fence(scope);
	return 1;
}

KINET_DEV_FN void kinet_devi_cq_unlock(int scope, struct kinet_dev_cq *cq)
{
	if (scope == KINET_DEVI_SCOPE_THREAD)
		return;
	kinet_devi_scoped_fence(scope); /* release: our ci / counters before the unlock */
	if (scope == KINET_DEVI_SCOPE_CTA)
		kinet_devi_atomic_exch_u32_cta(&cq->poll_lock, 0);
	else
		kinet_devi_atomic_exch_u32(&cq->poll_lock, 0);
}

#endif /* KINET_DEVICE_IMPL_SCOPE_CUH */
