/*
 * The software NIC's CQE writer: engine threads (of this or another
 * context) write mlx5 CQEs into core's CQ ring, as a ConnectX NIC does.
 * Core keeps the CQ object and the host poller (src/core/cq.c); the
 * writer lives here because only this provider produces CQEs in software
 * (mlx5's are written by the hardware).
 */
#include <errno.h>
#include <string.h>

#include "engine.h"

static void cqe_fill(struct kinet_cqe64 *cqe, const struct kinet_cqe_desc *d)
{
	struct kinet_err_cqe *ecqe = (struct kinet_err_cqe *)cqe;

	/* op_own is left alone: the poller must not see a half-written CQE. */
	memset(cqe, 0, offsetof(struct kinet_cqe64, op_own));
	switch (d->cqe_opcode) {
	case KINET_CQE_REQ:
		cqe->sop_drop_qpn = kinet_be32((uint32_t)d->wqe_opcode << 24 | (d->qpn & 0xffffff));
		cqe->wqe_counter = kinet_be16(d->wqe_counter);
		cqe->byte_cnt = kinet_be32(d->byte_cnt);
		break;
	case KINET_CQE_REQ_ERR:
	case KINET_CQE_RESP_ERR:
		ecqe->syndrome = d->syndrome;
		ecqe->vendor_err_synd = d->vendor_syndrome;
		ecqe->s_wqe_opcode_qpn = kinet_be32((uint32_t)d->wqe_opcode << 24 | (d->qpn & 0xffffff));
		ecqe->wqe_counter = kinet_be16(d->wqe_counter);
		ecqe->srqn = kinet_be32(d->srqn & 0xffffff);
		break;
	default: /* responder */
		if (d->eth) {
			struct kinet_cqe_eth_rx rx = {
				.byte_cnt = d->byte_cnt,
				.wqe_counter = d->wqe_counter,
				.timestamp = d->timestamp,
				.qpn = d->qpn,
				.l3_hdr_type = d->l3_type,
				.l4_hdr_type = d->l4_type,
				.csum_ok = d->csum_ok,
			};
			kinet_cqe_eth_rx_encode(cqe, &rx);
			break;
		}
		cqe->sop_drop_qpn = kinet_be32(d->qpn & 0xffffff);
		cqe->byte_cnt = kinet_be32(d->byte_cnt);
		cqe->imm_inval_pkey = d->imm_be;
		cqe->wqe_counter = kinet_be16(d->wqe_counter);
		cqe->srqn_uidx = kinet_be32(d->srqn & 0xffffff);
		break;
	}
}

/* Whether a CQE may hand the consumer data it will read (what device
 * code's kinet_dev_cqe_covers_data says): all but good requester CQEs of
 * writes and sends. */
static bool cqe_covers_data(const struct kinet_cqe_desc *d)
{
	if (d->cqe_opcode != KINET_CQE_REQ)
		return true;
	switch (d->wqe_opcode) {
	case KINET_WQE_OP_RDMA_WRITE:
	case KINET_WQE_OP_RDMA_WRITE_IMM:
	case KINET_WQE_OP_SEND:
	case KINET_WQE_OP_SEND_IMM:
		return false;
	default:
		return true;
	}
}

/* The completion word after one more CQE d (lock held). */
static uint64_t comp_next(uint64_t w, const struct kinet_cqe_desc *d)
{
	uint64_t count = (uint32_t)(KINET_COMP_COUNT(w) + 1u);
	uint64_t wqe = KINET_COMP_WQE_COUNTER(w);
	uint64_t data = KINET_COMP_DATA(w);

	if (d->cqe_opcode == KINET_CQE_REQ || d->cqe_opcode == KINET_CQE_REQ_ERR)
		wqe = d->wqe_counter;
	if (cqe_covers_data(d))
		data = (data + 1) & KINET_COMP_DATA_MASK;
	return count | wqe << 32 | data << 48 |
	       (w & KINET_COMP_ERROR ||
				(d->cqe_opcode == KINET_CQE_REQ_ERR || d->cqe_opcode == KINET_CQE_RESP_ERR)
			? KINET_COMP_ERROR
			: 0);
}

/* Hands the CQE at producer index pi to software: data first, then the
 * op_own byte with the owner bit of this pass, as hardware does; then the
 * completion word, which device code may read instead of the CQE. */
static void cqe_publish(struct kinet_cq *cq, struct kinet_cqe64 *cqe, const struct kinet_cqe_desc *d)
{
	uint8_t op_own = (uint8_t)(d->cqe_opcode << 4 | kinet_cqe_sw_owner(cq->pi, cq->log_depth));

	atomic_thread_fence(memory_order_release);
	__atomic_store_n(&cqe->op_own, op_own, __ATOMIC_RELEASE);
	/* Release: a WAIT that sees the count sees the CQE (kinet_cq_produced). */
	__atomic_store_n(&cq->pi, cq->pi + 1, __ATOMIC_RELEASE);
	if (cq->comp_word) {
		cq->comp = comp_next(cq->comp, d);
		/* Release: whoever reads the word reads the CQEs it counts. */
		__atomic_store_n(cq->comp_word, cq->comp, __ATOMIC_RELEASE);
	}
}

/* Only the reserved last slot is free; lock held. */
static bool cq_full(struct kinet_cq *cq)
{
	/* Overrun ignored: the consumer index is not looked at (GPUNetIO
	 * device code never writes it). */
	if (cq->flags & KINET_CQ_IGNORE_OVERRUN)
		return false;
	/* The consumer index only grows, so while the one last read leaves
	 * room the record is not read again: it is a line the consumer
	 * writes, and reading it costs every completion a transfer from the
	 * consumer's core (or from the GPU's writes). */
	if ((((uint32_t)cq->pi - cq->ci_seen) & KINET_CQ_CI_MASK) < cq->depth - 1)
		return false;
	cq->ci_seen =
		kinet_be32(__atomic_load_n(&cq->dbrec[KINET_CQ_DBR_CI], __ATOMIC_ACQUIRE)) & KINET_CQ_CI_MASK;
	return (((uint32_t)cq->pi - cq->ci_seen) & KINET_CQ_CI_MASK) >= cq->depth - 1;
}

/* An overrun is fatal to the CQ, as on ConnectX (IBV_EVENT_CQ_ERR): every
 * QP completing to it moves to the error state now, each said once,
 * rather than one by one as they next complete. */
static void cq_fail_qps(struct kinet_cq *cq)
{
	pthread_mutex_lock(&cq->ctx->obj_lock);
	for (struct kinet_qp *qp = cq->ctx->qps; qp; qp = qp->next_in_ctx) {
		if ((qp->attr.send_cq == cq || qp->attr.recv_cq == cq) &&
		    atomic_exchange(&qp->state, KINET_QPS_ERR) != KINET_QPS_ERR)
			KINET_WARN("QP %u: its completion queue overran; QP moved to the error state",
				   qp->qpn);
	}
	pthread_mutex_unlock(&cq->ctx->obj_lock);
}

int kinet_cq_write(struct kinet_cq *cq, const struct kinet_cqe_desc *desc, bool may_wait)
{
	struct kinet_cqe_desc ovf;
	struct kinet_cqe64 *cqe;

	pthread_mutex_lock(&cq->lock);
	if (atomic_load(&cq->overrun)) {
		pthread_mutex_unlock(&cq->lock);
		return -EOVERFLOW;
	}
	cqe = &cq->ring[cq->pi & (cq->depth - 1)];
	if (cq_full(cq)) {
		if (may_wait) {
			pthread_mutex_unlock(&cq->lock);
			return -EAGAIN;
		}
		/* The last free slot tells the consumer what was lost. */
		ovf = *desc;
		ovf.cqe_opcode = KINET_CQE_REQ_ERR;
		ovf.syndrome = KINET_SYND_LOCAL_QP_OP_ERR;
		ovf.vendor_syndrome = KINET_VENDOR_SYND_CQ_OVERRUN;
		KINET_ERR("CQ of depth %u overran (QP %u, WQE %u): completions are lost", cq->depth,
			  desc->qpn, desc->wqe_counter);
		/* The error and the QPs' state come before the report, so a
		 * consumer that sees the report or -EOVERFLOW also sees them.
		 * obj_lock nests inside cq->lock here; nothing takes cq->lock
		 * while holding obj_lock. */
		kinet_ctx_record_error(cq->ctx, -EOVERFLOW, desc->qpn, KINET_SYND_LOCAL_QP_OP_ERR,
				       desc->wqe_opcode, desc->wqe_counter);
		cq_fail_qps(cq);
		cqe_fill(cqe, &ovf);
		cqe_publish(cq, cqe, &ovf);
		atomic_store(&cq->overrun, true);
		pthread_mutex_unlock(&cq->lock);
		return -EOVERFLOW;
	}
	cqe_fill(cqe, desc);
	cqe_publish(cq, cqe, desc);
	pthread_mutex_unlock(&cq->lock);
	return 0;
}
