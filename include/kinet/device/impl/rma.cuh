/*
 * kinet device API, implementation: put, put_inline, get, write_imm.
 * One generic definition per verb; impl/forms.cuh makes the public forms.
 */
#ifndef KINET_DEVICE_IMPL_RMA_CUH
#define KINET_DEVICE_IMPL_RMA_CUH

#include "kinet/device/impl/peer.cuh"
#include "kinet/device/impl/post.cuh"
#include "kinet/device/platform.cuh"
#include "kinet/device/types.h"
#include "kinet/device/wqe.cuh"

KINET_DEV_FN int kinet_devi_put_g(int g, struct kinet_dev_qp *qp, const void *laddr, uint32_t lkey,
				  uint64_t raddr, uint32_t rkey, uint64_t size, uint64_t *ticket)
{
	/* The peer path first: it reads the QP and misses on other QPs. */
	int st = kinet_devi_peer_put_g(g, qp, laddr, lkey, raddr, rkey, size, ticket);
	if (st != KINET_DEVI_PEER_MISS)
		return st;
	struct kinet_devi_xfer x;
	kinet_devi_xfer_init(&x, KINET_WQE_OP_RDMA_WRITE, (uint64_t)(uintptr_t)laddr, lkey, raddr, rkey, size,
			     0);
	return kinet_devi_post_group(g, qp, &x, NULL, ticket);
}

KINET_DEV_FN int kinet_devi_put_inline_g(int g, struct kinet_dev_qp *qp, const void *data, uint32_t size,
					 uint64_t raddr, uint32_t rkey, uint64_t *ticket)
{
	/* The peer path first: its one read of the QP covers max_inline, and
	 * it misses on sizes that need -EINVAL. */
	int st = kinet_devi_peer_put_inline_g(g, qp, data, size, raddr, rkey, ticket);
	if (st != KINET_DEVI_PEER_MISS)
		return st;
	uint32_t max = qp->max_inline < KINET_DEV_MAX_INLINE ? qp->max_inline : KINET_DEV_MAX_INLINE;
	if (size > max)
		return -EINVAL;
	struct kinet_devi_tail t;
	kinet_devi_tail_init(&t, KINET_WQE_OP_RDMA_WRITE);
	t.inl = data;
	t.size = size;
	t.raddr = raddr;
	t.rkey = rkey;
	return kinet_devi_post_tail(g, qp, &t, ticket);
}

KINET_DEV_FN int kinet_devi_get_g(int g, struct kinet_dev_qp *qp, void *laddr, uint32_t lkey, uint64_t raddr,
				  uint32_t rkey, uint64_t size, uint64_t *ticket)
{
	/* The peer path first: it reads the QP and misses on other QPs. */
	int st = kinet_devi_peer_get_g(g, qp, laddr, lkey, raddr, rkey, size, ticket);
	if (st != KINET_DEVI_PEER_MISS)
		return st;
	struct kinet_devi_xfer x;
	kinet_devi_xfer_init(&x, KINET_WQE_OP_RDMA_READ, (uint64_t)(uintptr_t)laddr, lkey, raddr, rkey, size,
			     0);
	return kinet_devi_post_group(g, qp, &x, NULL, ticket);
}

KINET_DEV_FN int kinet_devi_write_imm_g(int g, struct kinet_dev_qp *qp, const void *laddr, uint32_t lkey,
					uint64_t raddr, uint32_t rkey, uint64_t size, uint32_t imm,
					uint64_t *ticket)
{
	struct kinet_devi_xfer x;
	kinet_devi_xfer_init(&x, KINET_WQE_OP_RDMA_WRITE_IMM, (uint64_t)(uintptr_t)laddr, lkey, raddr, rkey,
			     size, kinet_be32(imm));
	return kinet_devi_post_group(g, qp, &x, NULL, ticket);
}

#endif /* KINET_DEVICE_IMPL_RMA_CUH */
