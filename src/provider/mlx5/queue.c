/*
 * CQs and RC QPs of the ConnectX provider, made by rdma-core's mlx5
 * provider (mlx5dv_create_cq/qp, which encodes the PRM contexts and asks
 * the kernel) on a parent domain whose allocator is kinet's (ring.c), then
 * taken apart with mlx5dv_init_obj: the rings, doorbell records, QP and CQ
 * numbers and the BlueFlame register are handed to core as the software
 * NIC's are, so the exported kinet_dev_qp/kinet_dev_cq mean the same and
 * device code does not change.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "mlx5.h"

static uint32_t log2_exact(uint32_t v)
{
	uint32_t l = 0;

	while ((1u << l) < v)
		l++;
	return l;
}

static bool pow2(uint32_t v)
{
	return v && !(v & (v - 1));
}

int kinet_mlx5_cq_create(struct kinet_cq *cq)
{
	struct kinet_mlx5_ctx *m = kinet_mctx(cq->ctx);
	struct kinet_mlx5_cq *mc = kinet_mcq(cq);
	struct ibv_cq_init_attr_ex a;
	struct mlx5dv_cq_init_attr dv;
	struct mlx5dv_cq d;
	struct mlx5dv_obj o;
	int err;

	if (cq->depth - 1 > (uint32_t)m->dev_attr.max_cqe) {
		KINET_ERR("mlx5: a CQ of %u entries is deeper than %s allows (%d)", cq->depth, m->device,
			  m->dev_attr.max_cqe + 1);
		return -EINVAL;
	}
	memset(&a, 0, sizeof(a));
	/* rdma-core rounds cqe + 1 up to a power of two: exactly depth. */
	a.cqe = cq->depth - 1;
	a.comp_mask = IBV_CQ_INIT_ATTR_MASK_PD;
	a.parent_domain = m->cq_domain;
	if (cq->flags & KINET_CQ_IGNORE_OVERRUN) {
		a.comp_mask |= IBV_CQ_INIT_ATTR_MASK_FLAGS;
		a.flags = IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN;
	}
	memset(&dv, 0, sizeof(dv));
	/* 64-byte CQEs, uncompressed: what kinet_cqe64 and device code read
	 * ($MLX5_CQE_SIZE=128 would otherwise change them). */
	dv.comp_mask = MLX5DV_CQ_INIT_ATTR_MASK_CQE_SIZE;
	dv.cqe_size = sizeof(struct kinet_cqe64);
	mc->ibcq = m->v->create_cq(m->verbs, &a, &dv);
	if (!mc->ibcq) {
		err = errno ? errno : EINVAL;
		KINET_ERR("mlx5: mlx5dv_create_cq(%u entries): %s", cq->depth, strerror(err));
		return -err;
	}
	memset(&o, 0, sizeof(o));
	o.cq.in = ibv_cq_ex_to_cq(mc->ibcq);
	o.cq.out = &d;
	err = m->v->init_obj(&o, MLX5DV_OBJ_CQ);
	if (err || d.cqe_size != sizeof(struct kinet_cqe64) || !pow2(d.cqe_cnt) || d.cqe_cnt < cq->depth) {
		KINET_ERR("mlx5: CQ layout not usable (mlx5dv_init_obj %d, %u CQEs of %u bytes)", err,
			  d.cqe_cnt, d.cqe_size);
		kinet_mlx5_cq_destroy(cq);
		return -EPROTO;
	}
	cq->depth = d.cqe_cnt;
	cq->log_depth = log2_exact(d.cqe_cnt);
	cq->ring = d.buf;
	cq->dbrec = (uint32_t *)(void *)d.dbrec;
	cq->cqn = d.cqn;
	KINET_DBG("mlx5: cq %u: %u CQEs at %p", cq->cqn, cq->depth, cq->ring);
	return 0;
}

void kinet_mlx5_cq_destroy(struct kinet_cq *cq)
{
	struct kinet_mlx5_cq *mc = kinet_mcq(cq);
	int rc;

	if (!mc->ibcq)
		return;
	rc = kinet_mctx(cq->ctx)->v->destroy_cq(ibv_cq_ex_to_cq(mc->ibcq));
	if (rc)
		KINET_WARN("mlx5: ibv_destroy_cq(%u): %s", cq->cqn, strerror(rc));
	mc->ibcq = NULL;
}

/* The doorbell mode the QP can have: the GPU modes need the UAR page
 * mapped into the GPU (a host-only context writes it from the CPU) and
 * BlueFlame a register of the QP's own; else CPU-assisted, said once. */
static void choose_db_mode(struct kinet_qp *qp, void *reg)
{
	struct kinet_mlx5_ctx *m = kinet_mctx(qp->ctx);
	struct kinet_mlx5_qp *mq = kinet_mqp(qp);
	bool asked = qp->attr.db_mode != KINET_DB_AUTO;
	char why[320];

	if (qp->db_mode == KINET_DB_BF && !mq->td) {
		if (asked)
			KINET_WARN("mlx5: qp %u: BlueFlame needs a register of its own (no thread domain on "
				   "%s); "
				   "regular GPU doorbells instead",
				   qp->qpn, m->device);
		qp->db_mode = KINET_DB_GPU;
	}
	if (qp->db_mode == KINET_DB_CPU || qp->ctx->cuda_device < 0)
		return;
	if (!kinet_mlx5_uar_map(m, reg, &mq->uar_page, why, sizeof(why)))
		return;
	if (asked)
		KINET_WARN("mlx5: qp %u: %s; CPU-assisted doorbells instead", qp->qpn, why);
	else
		KINET_INFO("mlx5: qp %u: %s; CPU-assisted doorbells", qp->qpn, why);
	qp->db_mode = KINET_DB_CPU;
}

static int qp_take_layout(struct kinet_qp *qp, const struct mlx5dv_qp *d)
{
	if (d->sq.stride != KINET_WQE_BB_SIZE || !pow2(d->sq.wqe_cnt) || d->sq.wqe_cnt < qp->sq_bbs ||
	    (qp->rq_depth && (!pow2(d->rq.wqe_cnt) || d->rq.wqe_cnt < qp->rq_depth || !pow2(d->rq.stride) ||
			      d->rq.stride < sizeof(struct kinet_wqe_data_seg) * qp->attr.max_recv_sge))) {
		KINET_ERR("mlx5: QP layout not usable (send %u x %u B, receive %u x %u B)", d->sq.wqe_cnt,
			  d->sq.stride, d->rq.wqe_cnt, d->rq.stride);
		return -EPROTO;
	}
	qp->sq = d->sq.buf;
	qp->sq_bbs = d->sq.wqe_cnt;
	if (qp->rq_depth) {
		qp->rq = d->rq.buf;
		qp->rq_depth = d->rq.wqe_cnt;
		qp->rq_stride = d->rq.stride;
	}
	qp->dbrec = (uint32_t *)(void *)d->dbrec;
	/* The page holding the QP's BlueFlame register is its UAR page. */
	qp->uar = (uint8_t *)((uintptr_t)d->bf.reg & ~(uintptr_t)(sysconf(_SC_PAGESIZE) - 1));
	qp->uar_db_offset = (uint32_t)((uint8_t *)d->bf.reg - qp->uar);
	return 0;
}

int kinet_mlx5_qp_create(struct kinet_qp *qp)
{
	struct kinet_mlx5_ctx *m = kinet_mctx(qp->ctx);
	struct kinet_mlx5_qp *mq = kinet_mqp(qp);
	struct ibv_td_init_attr ta = {0};
	struct ibv_qp_init_attr_ex a;
	struct mlx5dv_qp_init_attr dv;
	struct mlx5dv_qp d;
	struct mlx5dv_obj o;
	int err;

	pthread_mutex_init(&mq->ring_lock, NULL);
	if (getrandom(&mq->psn, sizeof(mq->psn), GRND_NONBLOCK) != sizeof(mq->psn))
		mq->psn = (uint32_t)kinet_now_ns();
	mq->psn &= 0xffffff;
	if (qp->sq_bbs > (uint32_t)m->dev_attr.max_qp_wr || qp->rq_depth > (uint32_t)m->dev_attr.max_qp_wr ||
	    qp->attr.max_recv_sge > (uint32_t)m->dev_attr.max_sge) {
		KINET_ERR("mlx5: QP of %u send BBs, %u receives of %u SGEs exceeds %s (%d WRs, %d SGEs)",
			  qp->sq_bbs, qp->rq_depth, qp->attr.max_recv_sge, m->device, m->dev_attr.max_qp_wr,
			  m->dev_attr.max_sge);
		return -EINVAL;
	}
	qp->db_cpu = kinet_host_alloc(qp->ctx, 64);
	if (!qp->db_cpu)
		return -ENOMEM;
	/* A thread domain gives the QP a BlueFlame register of its own, which
	 * device code writes without rdma-core's lock. */
	mq->td = ibv_alloc_td(m->verbs, &ta);
	if (!mq->td)
		KINET_INFO("mlx5: ibv_alloc_td: %s: QPs share doorbell registers", strerror(errno));
	mq->domain = kinet_mlx5_domain(m, mq->td);
	if (!mq->domain)
		return -ENOMEM;

	memset(&a, 0, sizeof(a));
	a.qp_type = IBV_QPT_RC;
	a.qp_context = qp;
	a.send_cq = ibv_cq_ex_to_cq(kinet_mcq(qp->attr.send_cq)->ibcq);
	/* verbs wants a receive CQ even for a QP without a receive queue. */
	a.recv_cq = qp->attr.recv_cq ? ibv_cq_ex_to_cq(kinet_mcq(qp->attr.recv_cq)->ibcq) : a.send_cq;
	/* One-BB WQEs for rdma-core's sizing (one SGE, no inline): the ring
	 * is then exactly sq_bbs blocks; kinet writes WQEs of any size. */
	a.cap.max_send_wr = qp->sq_bbs;
	a.cap.max_send_sge = 1;
	a.cap.max_recv_wr = qp->rq_depth;
	a.cap.max_recv_sge = qp->rq_depth ? qp->attr.max_recv_sge : 0;
	a.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
	a.pd = mq->domain;
	/* The opcodes kinet posts, no memory-window binds: rdma-core then
	 * sizes a WQE as one BB (ctrl, remote address, atomic, one SGE). */
	a.send_ops_flags = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM | IBV_QP_EX_WITH_RDMA_WRITE |
			   IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM | IBV_QP_EX_WITH_RDMA_READ |
			   IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP | IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD;
	memset(&dv, 0, sizeof(dv));
	/* Small received payloads and read responses land in the buffers the
	 * WQEs name, never in the CQE (which device code does not copy). */
	dv.comp_mask = MLX5DV_QP_INIT_ATTR_MASK_QP_CREATE_FLAGS;
	dv.create_flags = MLX5DV_QP_CREATE_DISABLE_SCATTER_TO_CQE;
	mq->ibqp = m->v->create_qp(m->verbs, &a, &dv);
	if (!mq->ibqp) {
		err = errno ? errno : EINVAL;
		KINET_ERR("mlx5: mlx5dv_create_qp (%u send BBs, %u receives): %s", qp->sq_bbs, qp->rq_depth,
			  strerror(err));
		return -err;
	}
	memset(&o, 0, sizeof(o));
	memset(&d, 0, sizeof(d));
	o.qp.in = mq->ibqp;
	o.qp.out = &d;
	err = m->v->init_obj(&o, MLX5DV_OBJ_QP);
	if (err) {
		KINET_ERR("mlx5: mlx5dv_init_obj(QP): %s", strerror(err));
		return -EPROTO;
	}
	err = qp_take_layout(qp, &d);
	if (err)
		return err;
	qp->qpn = mq->ibqp->qp_num;
	choose_db_mode(qp, d.bf.reg);
	KINET_DBG("mlx5: qp %u: %u send BBs, %u receives of %u B, doorbell register %p (+%#x), mode %d",
		  qp->qpn, qp->sq_bbs, qp->rq_depth, qp->rq_stride, (void *)d.bf.reg, qp->uar_db_offset,
		  qp->db_mode);
	return 0;
}

void kinet_mlx5_qp_fini(struct kinet_qp *qp)
{
	struct kinet_mlx5_ctx *m = kinet_mctx(qp->ctx);
	struct kinet_mlx5_qp *mq = kinet_mqp(qp);
	int rc;

	if (mq->ibqp) {
		rc = m->v->destroy_qp(mq->ibqp);
		if (rc)
			KINET_WARN("mlx5: ibv_destroy_qp(%u): %s", qp->qpn, strerror(rc));
	}
	kinet_mlx5_uar_unmap(m, mq->uar_page);
	if (mq->domain)
		m->v->dealloc_pd(mq->domain);
	if (mq->td)
		ibv_dealloc_td(mq->td);
	kinet_host_free(qp->ctx, (void *)qp->db_cpu);
	pthread_mutex_destroy(&mq->ring_lock);
	mq->ibqp = NULL;
	mq->uar_page = NULL;
	mq->domain = NULL;
	mq->td = NULL;
}
