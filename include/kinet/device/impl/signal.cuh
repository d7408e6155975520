/*
 * kinet device API, implementation: signal, put_signal, signal_wait_until.
 * One generic definition per verb; impl/forms.cuh makes the public forms.
 */
#ifndef KINET_DEVICE_IMPL_SIGNAL_CUH
#define KINET_DEVICE_IMPL_SIGNAL_CUH

#include "kinet/device/impl/deadline.cuh"
#include "kinet/device/impl/peer.cuh"
#include "kinet/device/impl/post.cuh"
#include "kinet/device/platform.cuh"
#include "kinet/device/types.h"
#include "kinet/device/wqe.cuh"

/* Comparisons of kinet_dev_signal_wait_until. */
#define KINET_DEV_CMP_EQ 0
#define KINET_DEV_CMP_NE 1
#define KINET_DEV_CMP_GT 2
#define KINET_DEV_CMP_GE 3
#define KINET_DEV_CMP_LT 4
#define KINET_DEV_CMP_LE 5

KINET_DEV_FN int kinet_devi_signal_g(int g, struct kinet_dev_qp *qp, uint64_t sig_raddr, uint32_t sig_rkey,
				     uint64_t add, uint64_t *ticket)
{
	if (!qp->scratch)
		return -EINVAL;
	/* The peer path first: it reads the QP and misses on other QPs. */
	int st = kinet_devi_peer_put_signal_g(g, qp, NULL, 0, 0, 0, 0, sig_raddr, sig_rkey, add, ticket);
	if (st != KINET_DEVI_PEER_MISS)
		return st;
	struct kinet_devi_tail t;
	kinet_devi_signal_tail(&t, qp, sig_raddr, sig_rkey, add);
	return kinet_devi_post_tail(g, qp, &t, ticket);
}

KINET_DEV_FN int kinet_devi_put_signal_g(int g, struct kinet_dev_qp *qp, const void *laddr, uint32_t lkey,
					 uint64_t raddr, uint32_t rkey, uint64_t size, uint64_t sig_raddr,
					 uint32_t sig_rkey, uint64_t add, uint64_t *ticket)
{
	if (!qp->scratch)
		return -EINVAL;
	/* The peer path first: it reads the QP and misses on other QPs. */
	int st = kinet_devi_peer_put_signal_g(g, qp, laddr, lkey, raddr, rkey, size, sig_raddr, sig_rkey, add,
					      ticket);
	if (st != KINET_DEVI_PEER_MISS)
		return st;
	struct kinet_devi_xfer x;
	struct kinet_devi_tail t;
	kinet_devi_xfer_init(&x, KINET_WQE_OP_RDMA_WRITE, (uint64_t)(uintptr_t)laddr, lkey, raddr, rkey, size,
			     0);
	kinet_devi_signal_tail(&t, qp, sig_raddr, sig_rkey, add);
	return kinet_devi_post_group(g, qp, &x, &t, ticket);
}

KINET_DEV_FN int kinet_devi_cmp(uint64_t v, int cmp, uint64_t value)
{
	switch (cmp) {
	case KINET_DEV_CMP_EQ:
		return v == value;
	case KINET_DEV_CMP_NE:
		return v != value;
	case KINET_DEV_CMP_GT:
		return v > value;
	case KINET_DEV_CMP_GE:
		return v >= value;
	case KINET_DEV_CMP_LT:
		return v < value;
	default:
		return v <= value;
	}
}

KINET_DEV_FN int kinet_devi_signal_wait_until_one(struct kinet_dev_qp *qp, const uint64_t *sig, int cmp,
						  uint64_t value, uint64_t *seen)
{
	if (cmp < KINET_DEV_CMP_EQ || cmp > KINET_DEV_CMP_LE)
		return -EINVAL;
	struct kinet_devi_deadline d;
	kinet_devi_deadline_init(&d, kinet_devi_qp_timeout_ns(qp));
	for (uint32_t i = 1;; i++) {
		/* Acquire polls (measured: a relaxed poll plus an acquire once
		 * the value is there, or a fence, see it later); the clock is
		 * read every 16 polls. */
		uint64_t v = kinet_devi_load_acquire_u64_sys(sig);
		if (kinet_devi_cmp(v, cmp, value)) {
			if (seen)
				*seen = v;
			return 0;
		}
		if ((i & 15) == 0 && kinet_devi_deadline_expired(&d)) {
			if (qp)
				return kinet_devi_qp_timed_out(qp);
			return -ETIMEDOUT;
		}
	}
}

KINET_DEV_FN int kinet_devi_signal_wait_until_g(int g, struct kinet_dev_qp *qp, const uint64_t *sig, int cmp,
						uint64_t value, uint64_t *seen)
{
	int st = 0;
	uint64_t v = 0;
	if (kinet_devi_group_rank(g) == 0)
		st = kinet_devi_signal_wait_until_one(qp, sig, cmp, value, &v);
	kinet_devi_group_bcast(g, &st, &v);
	if (seen)
		*seen = v;
	return st;
}

#endif /* KINET_DEVICE_IMPL_SIGNAL_CUH */
