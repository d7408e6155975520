/*
 * Core's side of the verbs front door (front.h).
 */
#include "front.h"

#include <errno.h>

#include "internal.h"

void kinet_ctx_set_qpn_base(struct kinet_ctx *ctx, uint32_t base)
{
	pthread_mutex_lock(&ctx->obj_lock);
	ctx->next_qpn = base & 0xffffff;
	pthread_mutex_unlock(&ctx->obj_lock);
}

int kinet_front_qp_rings(struct kinet_qp *qp, struct kinet_front_qp_rings *rings)
{
	if (!qp || !rings)
		return -EINVAL;
	rings->sq = qp->sq;
	rings->sq_bbs = qp->sq_bbs;
	rings->rq = qp->rq;
	rings->rq_depth = qp->rq ? qp->rq_depth : 0;
	rings->rq_stride = qp->rq ? qp->rq_stride : 0;
	rings->dbrec = qp->dbrec;
	rings->db_reg = kinet_qp_db_reg(qp);
	return 0;
}

int kinet_front_cq_rings(struct kinet_cq *cq, struct kinet_front_cq_rings *rings)
{
	if (!cq || !rings)
		return -EINVAL;
	rings->ring = cq->ring;
	rings->depth = cq->depth;
	rings->dbrec = cq->dbrec;
	return 0;
}

bool kinet_front_cq_pending(struct kinet_cq *cq)
{
	uint32_t pi = (uint32_t)__atomic_load_n(&cq->pi, __ATOMIC_ACQUIRE) & KINET_CQ_CI_MASK;
	uint32_t ci =
		kinet_be32(__atomic_load_n(&cq->dbrec[KINET_CQ_DBR_CI], __ATOMIC_ACQUIRE)) & KINET_CQ_CI_MASK;

	return pi != ci;
}

static _Thread_local struct {
	bool set, node, ofi;
} pack_wish;

void kinet_front_pack_carriers(bool node, bool ofi)
{
	pack_wish.set = true;
	pack_wish.node = node;
	pack_wish.ofi = ofi;
}

bool kinet_front_pack_carriers_take(bool *node, bool *ofi)
{
	if (!pack_wish.set)
		return false;
	*node = pack_wish.node;
	*ofi = pack_wish.ofi;
	pack_wish.set = false;
	return true;
}
