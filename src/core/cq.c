/*
 * Completion queues: an mlx5 CQE ring written by engine threads (of this or
 * another context) and read by the host poller or by device code.
 */
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "provider.h"

#define CQ_MIN_DEPTH 2 /* one slot stays reserved for the overrun report */
#define CQ_MAX_DEPTH 65536

static uint32_t log2_ceil(uint32_t v)
{
	uint32_t l = 0;

	while ((1u << l) < v)
		l++;
	return l;
}

void kinet_cq_attr_init(struct kinet_cq_attr *attr)
{
	if (!attr)
		return;
	memset(attr, 0, sizeof(*attr));
	attr->size = sizeof(*attr);
	attr->depth = 512;
}

int kinet_cq_create(struct kinet_ctx *ctx, const struct kinet_cq_attr *attr, struct kinet_cq **out)
{
	struct kinet_cq_attr a;
	struct kinet_cq *cq;
	int ret;

	if (!out)
		return KINET_EINVAL("cq", "NULL");
	*out = NULL;
	if (!ctx)
		return KINET_EINVAL("ctx", "NULL");
	if (!attr)
		return KINET_EINVAL("attr", "NULL");
	if ((ret = kinet_attr_read("attr", attr, sizeof(a), &a)))
		return ret;
	attr = &a;
	if (!attr->depth || attr->depth > CQ_MAX_DEPTH)
		return KINET_EINVAL("attr->depth", "must be 1..65536");
	if (attr->flags & ~(uint32_t)KINET_CQ_IGNORE_OVERRUN)
		return KINET_EINVAL("attr->flags", "unknown flags");

	/* The writers' and the poller's fields have lines of their own (cq.h). */
	cq = kinet_alloc_lines(ctx->ops->cq_size ? ctx->ops->cq_size : sizeof(*cq));
	if (!cq)
		return -ENOMEM;
	cq->ctx = ctx;
	cq->flags = attr->flags;
	cq->log_depth = log2_ceil(attr->depth < CQ_MIN_DEPTH ? CQ_MIN_DEPTH : attr->depth);
	cq->depth = 1u << cq->log_depth;
	ret = ctx->ops->cq_create(cq);
	if (ret) {
		free(cq);
		return ret;
	}
	pthread_mutex_init(&cq->lock, NULL);
	pthread_mutex_init(&cq->poll_lock, NULL);

	pthread_mutex_lock(&ctx->obj_lock);
	/* A NIC numbers its CQs itself (WAIT WQEs name that number). */
	while (!cq->cqn)
		cq->cqn = ctx->next_cqn++ & 0xffffff;
	cq->next_in_ctx = ctx->cqs;
	ctx->cqs = cq;
	pthread_mutex_unlock(&ctx->obj_lock);
	*out = cq;
	return 0;
}

int kinet_cq_destroy(struct kinet_cq *cq)
{
	struct kinet_ctx *ctx;
	struct kinet_cq **p;

	if (!cq)
		return KINET_EINVAL("cq", "NULL");
	if (atomic_load(&cq->users)) {
		KINET_ERR("%s: CQ still used by %d QP(s)", __func__, atomic_load(&cq->users));
		return -EBUSY;
	}
	ctx = cq->ctx;
	pthread_mutex_lock(&ctx->obj_lock);
	for (p = &ctx->cqs; *p; p = &(*p)->next_in_ctx) {
		if (*p == cq) {
			*p = cq->next_in_ctx;
			break;
		}
	}
	pthread_mutex_unlock(&ctx->obj_lock);

	kinet_cuda_free(ctx, cq->dev);
	kinet_cuda_free(ctx, cq->gpunetio);
	ctx->ops->cq_destroy(cq);
	pthread_mutex_destroy(&cq->lock);
	pthread_mutex_destroy(&cq->poll_lock);
	free(cq);
	return 0;
}

uint32_t kinet_cq_depth(const struct kinet_cq *cq)
{
	return cq ? cq->depth : 0;
}

uint32_t kinet_cq_num(const struct kinet_cq *cq)
{
	return cq ? cq->cqn : 0;
}

int kinet_cq_produced(struct kinet_ctx *ctx, uint32_t cqn, uint64_t *produced)
{
	struct kinet_cq *cq;
	int ret = -ENOENT;

	/* Under obj_lock the CQ cannot be freed (kinet_cq_destroy unlinks it
	 * under the same lock first). */
	pthread_mutex_lock(&ctx->obj_lock);
	for (cq = ctx->cqs; cq; cq = cq->next_in_ctx) {
		if (cq->cqn != cqn)
			continue;
		*produced = __atomic_load_n(&cq->pi, __ATOMIC_ACQUIRE);
		ret = atomic_load(&cq->overrun) ? -EOVERFLOW : 0;
		break;
	}
	pthread_mutex_unlock(&ctx->obj_lock);
	return ret;
}

static enum kinet_wc_opcode wc_opcode_of_wqe(uint8_t op)
{
	switch (op) {
	case KINET_WQE_OP_RDMA_WRITE:
	case KINET_WQE_OP_RDMA_WRITE_IMM:
		return KINET_WC_RDMA_WRITE;
	case KINET_WQE_OP_SEND:
	case KINET_WQE_OP_SEND_IMM:
		return KINET_WC_SEND;
	case KINET_WQE_OP_RDMA_READ:
		return KINET_WC_RDMA_READ;
	case KINET_WQE_OP_ATOMIC_CS:
		return KINET_WC_COMP_SWAP;
	case KINET_WQE_OP_ATOMIC_FA:
		return KINET_WC_FETCH_ADD;
	default:
		return KINET_WC_NOP;
	}
}

/* Requester completion: the WQE at wqe_counter and every one before it are
 * done, which frees their send-queue slots for the host poster. */
static void wc_requester(struct kinet_qp *qp, uint16_t wqe_counter, struct kinet_wc *wc)
{
	uint32_t slot;
	uint64_t end;

	if (!qp)
		return;
	pthread_mutex_lock(&qp->post_lock);
	slot = wqe_counter & (qp->sq_bbs - 1);
	wc->wr_id = qp->sq_wrid[slot];
	end = kinet_extend16(qp->sq_ci_host, wqe_counter) + qp->sq_nbb[slot];
	if (end > qp->sq_ci_host && end <= qp->sq_pi)
		qp->sq_ci_host = end;
	pthread_mutex_unlock(&qp->post_lock);
}

/* Responder completion: wqe_counter names a WQE of the SRQ the CQE names
 * (which outlives its QPs, so it is looked up by number), else one of the
 * QP's receive queue.  A QP of an RQ of its own leaves srqn_uidx alone: a
 * NIC may put a user index there. */
static void wc_responder(struct kinet_cq *cq, struct kinet_qp *qp, const struct kinet_cqe64 *cqe,
			 uint16_t wqe_counter, struct kinet_wc *wc)
{
	uint32_t srqn = kinet_be32(cqe->srqn_uidx) & 0xffffff;

	if (srqn && (!qp || qp->attr.srq)) {
		wc->wr_id = kinet_srq_complete(cq->ctx, srqn, wqe_counter);
		return;
	}
	if (!qp || !qp->rq_wrid)
		return;
	pthread_mutex_lock(&qp->post_lock);
	wc->wr_id = qp->rq_wrid[wqe_counter & (qp->rq_depth - 1)];
	if (qp->rq_ci_host < qp->rq_pi)
		qp->rq_ci_host++;
	pthread_mutex_unlock(&qp->post_lock);
}

static void cqe_decode(struct kinet_cq *cq, const struct kinet_cqe64 *cqe, uint8_t opcode,
		       struct kinet_wc *wc)
{
	const struct kinet_err_cqe *ecqe = (const struct kinet_err_cqe *)cqe;
	uint32_t opqpn;
	struct kinet_qp *qp;

	memset(wc, 0, sizeof(*wc));
	wc->wqe_counter = kinet_be16(cqe->wqe_counter);
	wc->byte_len = kinet_be32(cqe->byte_cnt);
	if (opcode == KINET_CQE_REQ_ERR || opcode == KINET_CQE_RESP_ERR) {
		opqpn = kinet_be32(ecqe->s_wqe_opcode_qpn);
		wc->status = ecqe->syndrome;
		wc->vendor_err = ecqe->vendor_err_synd;
		wc->byte_len = 0;
	} else {
		opqpn = kinet_be32(cqe->sop_drop_qpn);
	}
	wc->qp_num = opqpn & 0xffffff;
	/* CQs are attached to QPs of their own context only.  The reference
	 * keeps a QP being destroyed by another thread alive until the
	 * decode is done. */
	qp = kinet_ctx_get_qp(cq->ctx, wc->qp_num);
	/* A NIC wrote it: the provider surfaces the error as the software
	 * NIC does when it writes one (first error, QP to the error state). */
	if ((opcode == KINET_CQE_REQ_ERR || opcode == KINET_CQE_RESP_ERR) && cq->ctx->ops->cq_error)
		cq->ctx->ops->cq_error(cq, qp, cqe);

	switch (opcode) {
	case KINET_CQE_REQ:
	case KINET_CQE_REQ_ERR:
		wc->opcode = wc_opcode_of_wqe((uint8_t)(opqpn >> 24));
		wc_requester(qp, wc->wqe_counter, wc);
		break;
	case KINET_CQE_RESP_WR_IMM:
		wc->opcode = KINET_WC_RECV_RDMA_WITH_IMM;
		wc->wc_flags = KINET_WC_WITH_IMM;
		wc->imm_data = kinet_be32(cqe->imm_inval_pkey);
		wc_responder(cq, qp, cqe, wc->wqe_counter, wc);
		break;
	case KINET_CQE_RESP_SEND_IMM:
		wc->wc_flags = KINET_WC_WITH_IMM;
		wc->imm_data = kinet_be32(cqe->imm_inval_pkey);
		/* fall through */
	default: /* RESP_SEND, RESP_ERR */
		wc->opcode = KINET_WC_RECV;
		wc_responder(cq, qp, cqe, wc->wqe_counter, wc);
		break;
	}
	if (qp)
		kinet_qp_put(qp);
}

/* Whether the CQE at index ci is the host's to take; its op_own. */
static bool cqe_ready(const struct kinet_cq *cq, uint64_t ci, uint8_t *op_own)
{
	const struct kinet_cqe64 *cqe = &cq->ring[ci & (cq->depth - 1)];

	*op_own = __atomic_load_n(&cqe->op_own, __ATOMIC_ACQUIRE);
	return (*op_own >> 4) != KINET_CQE_INVALID && (*op_own & 1) == kinet_cqe_sw_owner(ci, cq->log_depth);
}

/* Empty polls in a row after which a poller yields its core, while engine
 * threads run in the process: about 5 us at ~5 ns a poll, longer than an
 * operation the engine completes with a core of its own (0.4-1 us), so
 * that case never pays for a yield (~1 us in a VM).  The engine may be on
 * this very core: the scheduler may start it beside the thread that opened
 * the context and move one away only when its load balancer runs, at a
 * tick (4 ms at HZ=250); a completion polled for without a yield took
 * 2-4 ms for the first operations after kinet_ctx_open
 * (docs/guide/tuning.md). */
#define CQ_EMPTY_POLLS_YIELD 1024u

static _Thread_local unsigned empty_polls;

int kinet_cq_poll(struct kinet_cq *cq, int max, struct kinet_wc *wc)
{
	uint8_t op_own;
	int n;

	if (!cq)
		return KINET_EINVAL("cq", "NULL");
	if (max < 0)
		return KINET_EINVAL("max", "negative");
	if (max && !wc)
		return KINET_EINVAL("wc", "NULL");

	/* An empty CQ is told without the lock, so a thread spinning on it
	 * only reads: the lock would be a write per look, on a line the
	 * engine then has to take back for the next CQE.  A stale index only
	 * sends the caller to the locked check or back empty-handed. */
	if (max && !cqe_ready(cq, __atomic_load_n(&cq->ci, __ATOMIC_RELAXED), &op_own)) {
		if (++empty_polls >= CQ_EMPTY_POLLS_YIELD && kinet_pollers_engines()) {
			empty_polls = 0;
			sched_yield();
		}
		return atomic_load(&cq->overrun) ? -EOVERFLOW : 0;
	}
	empty_polls = 0;
	pthread_mutex_lock(&cq->poll_lock);
	for (n = 0; n < max; n++) {
		if (!cqe_ready(cq, cq->ci, &op_own))
			break;
		cqe_decode(cq, &cq->ring[cq->ci & (cq->depth - 1)], op_own >> 4, &wc[n]);
		__atomic_store_n(&cq->ci, cq->ci + 1, __ATOMIC_RELAXED);
	}
	if (n)
		__atomic_store_n(&cq->dbrec[KINET_CQ_DBR_CI], kinet_be32((uint32_t)cq->ci & KINET_CQ_CI_MASK),
				 __ATOMIC_RELEASE);
	pthread_mutex_unlock(&cq->poll_lock);
	if (!n && atomic_load(&cq->overrun))
		return -EOVERFLOW;
	return n;
}
