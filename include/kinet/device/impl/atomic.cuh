/*
 * kinet device API, implementation: fetch_add, compare_swap (64-bit remote atomics).
 * One generic definition per verb; impl/forms.cuh makes the public forms.
 */
#ifndef KINET_DEVICE_IMPL_ATOMIC_CUH
#define KINET_DEVICE_IMPL_ATOMIC_CUH

#include "kinet/device/impl/peer.cuh"
#include "kinet/device/impl/post.cuh"
#include "kinet/device/platform.cuh"
#include "kinet/device/types.h"
#include "kinet/device/wqe.cuh"

KINET_DEV_FN int kinet_devi_fetch_add_g(int g, struct kinet_dev_qp *qp, uint64_t *result, uint32_t lkey,
					uint64_t raddr, uint32_t rkey, uint64_t add, uint64_t *ticket)
{
	/* The peer path first: it reads the QP and misses on other QPs. */
	int st = kinet_devi_peer_atomic_g(g, qp, 0, result, lkey, raddr, rkey, add, 0, ticket);
	if (st != KINET_DEVI_PEER_MISS)
		return st;
	struct kinet_devi_tail t;
	kinet_devi_tail_init(&t, KINET_WQE_OP_ATOMIC_FA);
	t.laddr = (uint64_t)(uintptr_t)result;
	t.lkey = lkey;
	t.raddr = raddr;
	t.rkey = rkey;
	t.swap_add = add;
	return kinet_devi_post_tail(g, qp, &t, ticket);
}

KINET_DEV_FN int kinet_devi_compare_swap_g(int g, struct kinet_dev_qp *qp, uint64_t *result, uint32_t lkey,
					   uint64_t raddr, uint32_t rkey, uint64_t compare, uint64_t swap,
					   uint64_t *ticket)
{
	/* The peer path first: it reads the QP and misses on other QPs. */
	int st = kinet_devi_peer_atomic_g(g, qp, 1, result, lkey, raddr, rkey, compare, swap, ticket);
	if (st != KINET_DEVI_PEER_MISS)
		return st;
	struct kinet_devi_tail t;
	kinet_devi_tail_init(&t, KINET_WQE_OP_ATOMIC_CS);
	t.laddr = (uint64_t)(uintptr_t)result;
	t.lkey = lkey;
	t.raddr = raddr;
	t.rkey = rkey;
	t.swap_add = swap;
	t.compare = compare;
	return kinet_devi_post_tail(g, qp, &t, ticket);
}

#endif /* KINET_DEVICE_IMPL_ATOMIC_CUH */
