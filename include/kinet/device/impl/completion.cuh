/*
 * kinet device API, implementation: wait, quiet, fence.
 * One generic definition per verb; impl/forms.cuh makes the public forms.
 */
#ifndef KINET_DEVICE_IMPL_COMPLETION_CUH
#define KINET_DEVICE_IMPL_COMPLETION_CUH

#include "kinet/device/impl/peer.cuh"
#include "kinet/device/impl/post.cuh"
#include "kinet/device/impl/scope.cuh"
#include "kinet/device/platform.cuh"
#include "kinet/device/types.h"
#include "kinet/device/wqe.cuh"

KINET_DEV_FN int kinet_devi_test_one(struct kinet_dev_qp *qp, uint64_t ticket)
{
	kinet_devi_peer_complete(qp);
	if (kinet_devi_sq_cover(qp, &ticket) == -ETIMEDOUT)
		return -ETIMEDOUT;
	return kinet_dev_sq_test(qp, ticket);
}

KINET_DEV_FN int kinet_devi_wait_one(struct kinet_dev_qp *qp, uint64_t ticket)
{
	kinet_devi_peer_complete(qp);
	if (kinet_devi_sq_cover(qp, &ticket) == -ETIMEDOUT)
		return -ETIMEDOUT;
	return kinet_dev_sq_wait(qp, ticket);
}

KINET_DEV_FN int kinet_devi_wait_g(int g, struct kinet_dev_qp *qp, uint64_t ticket)
{
	int st = 0;
	uint64_t unused = 0;
	if (kinet_devi_group_rank(g) == 0)
		st = kinet_devi_wait_one(qp, ticket);
	kinet_devi_group_bcast(g, &st, &unused);
	return st;
}

KINET_DEV_FN int kinet_devi_quiet_one(struct kinet_dev_qp *qp)
{
	return kinet_devi_wait_one(
		qp, kinet_devi_scoped_load_acquire_u64(kinet_devi_qp_scope(qp), &qp->sq_ready));
}

KINET_DEV_FN int kinet_devi_quiet_g(int g, struct kinet_dev_qp *qp)
{
	int st = 0;
	uint64_t unused = 0;
	kinet_devi_group_sync(g); /* posts of every member before the snapshot */
	if (kinet_devi_group_rank(g) == 0)
		st = kinet_devi_quiet_one(qp);
	kinet_devi_group_bcast(g, &st, &unused);
	return st;
}

KINET_DEV_FN int kinet_devi_fence_g(int g, struct kinet_dev_qp *qp, uint64_t *ticket)
{
	struct kinet_devi_tail t;
	kinet_devi_tail_init(&t, KINET_WQE_OP_NOP);
	t.flags = KINET_DEV_WQE_FENCE;
	kinet_devi_group_sync(g);
	if (kinet_devi_peer_on(qp)) {
		/* Peer reads and atomics are complete on return; only WQEs still
		 * in flight need the fenced NOP. */
		int st = 0;
		uint64_t ready = 0;
		if (kinet_devi_group_rank(g) == 0)
			st = kinet_devi_peer_sq_idle(qp, &ready) ? 0 : KINET_DEVI_PEER_MISS;
		kinet_devi_group_bcast(g, &st, &ready);
		if (st != KINET_DEVI_PEER_MISS)
			return kinet_devi_peer_done(st, ready, ticket);
	}
	return kinet_devi_post_tail(g, qp, &t, ticket);
}

#endif /* KINET_DEVICE_IMPL_COMPLETION_CUH */
