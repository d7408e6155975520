/*
 * kinet device API, implementation: send, send_imm, post_recv, recv (two-sided).
 * One generic definition per verb; impl/forms.cuh makes the public forms.
 */
#ifndef KINET_DEVICE_IMPL_MSG_CUH
#define KINET_DEVICE_IMPL_MSG_CUH

#include "kinet/device/impl/deadline.cuh"
#include "kinet/device/impl/peer.cuh"
#include "kinet/device/impl/post.cuh"
#include "kinet/device/platform.cuh"
#include "kinet/device/rq.cuh"
#include "kinet/device/types.h"
#include "kinet/device/wqe.cuh"

KINET_DEV_FN int kinet_devi_send_g(int g, struct kinet_dev_qp *qp, const void *laddr, uint32_t lkey,
				   uint64_t size, int with_imm, uint32_t imm, uint64_t *ticket)
{
	if (size > KINET_DEV_MAX_WQE_BYTES)
		return -EINVAL;
	struct kinet_devi_tail t;
	kinet_devi_tail_init(&t, with_imm ? KINET_WQE_OP_SEND_IMM : KINET_WQE_OP_SEND);
	t.laddr = (uint64_t)(uintptr_t)laddr;
	t.lkey = lkey;
	t.size = (uint32_t)size;
	t.imm_be = with_imm ? kinet_be32(imm) : 0;
	return kinet_devi_post_tail(g, qp, &t, ticket);
}

/* Inline send: the bytes are copied into the WQE while posting, so data
 * needs no registration and may be reused at return. */
KINET_DEV_FN int kinet_devi_send_inline_g(int g, struct kinet_dev_qp *qp, const void *data, uint32_t size,
					  int with_imm, uint32_t imm, uint64_t *ticket)
{
	uint32_t max =
		qp->max_inline < KINET_DEV_MAX_SEND_INLINE ? qp->max_inline : KINET_DEV_MAX_SEND_INLINE;
	if (size > max)
		return -EINVAL;
	struct kinet_devi_tail t;
	kinet_devi_tail_init(&t, with_imm ? KINET_WQE_OP_SEND_IMM : KINET_WQE_OP_SEND);
	t.inl = data;
	t.size = size;
	t.imm_be = with_imm ? kinet_be32(imm) : 0;
	return kinet_devi_post_tail(g, qp, &t, ticket);
}

KINET_DEV_FN int kinet_devi_post_recv_one(struct kinet_dev_qp *qp, void *laddr, uint32_t lkey, uint32_t size,
					  uint64_t *index)
{
	uint64_t idx = 0;
	int st = kinet_dev_rq_reserve(qp, 1, &idx);
	if (st)
		return st;
	kinet_dev_rq_prep(qp, idx, laddr, lkey, size);
	st = kinet_dev_rq_commit(qp, idx, 1);
	if (index)
		*index = idx;
	return st;
}

KINET_DEV_FN int kinet_devi_post_recv_g(int g, struct kinet_dev_qp *qp, void *laddr, uint32_t lkey,
					uint32_t size, uint64_t *index)
{
	int st = 0;
	uint64_t idx = 0;
	kinet_devi_group_sync(g);
	if (kinet_devi_group_rank(g) == 0)
		st = kinet_devi_post_recv_one(qp, laddr, lkey, size, &idx);
	kinet_devi_group_bcast(g, &st, &idx);
	if (index)
		*index = idx;
	return st;
}

KINET_DEV_FN int kinet_devi_recv_one(struct kinet_dev_qp *qp, uint32_t *byte_len, uint32_t *imm,
				     uint64_t *index)
{
	struct kinet_devi_deadline d;
	kinet_devi_deadline_init(&d, kinet_devi_qp_timeout_ns(qp));
	for (;;) {
		int st = kinet_dev_rq_poll(qp, byte_len, imm, index);
		if (st != -EAGAIN)
			return st;
		if (kinet_devi_deadline_expired(&d))
			return kinet_devi_qp_timed_out(qp);
	}
}

KINET_DEV_FN int kinet_devi_recv_g(int g, struct kinet_dev_qp *qp, uint32_t *byte_len, uint32_t *imm,
				   uint64_t *index)
{
	int st = 0;
	uint32_t len = 0, im = 0;
	uint64_t idx = 0, packed = 0;
	if (kinet_devi_group_rank(g) == 0) {
		st = kinet_devi_recv_one(qp, &len, &im, &idx);
		packed = ((uint64_t)im << 32) | len;
	}
	kinet_devi_group_bcast(g, &st, &packed);
	if (byte_len)
		*byte_len = (uint32_t)packed;
	if (imm)
		*imm = (uint32_t)(packed >> 32);
	kinet_devi_group_bcast(g, &st, &idx);
	if (index)
		*index = idx;
	return st;
}

#endif /* KINET_DEVICE_IMPL_MSG_CUH */
