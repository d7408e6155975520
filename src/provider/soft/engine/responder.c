/*
 * The RC responder (responder.h): the target's side of every operation,
 * shared by the local transport and the remote protocol.
 */
#include <string.h>

#include "responder.h"

int kinet_resp_check(struct kinet_ctx *ctx, uint8_t opcode, uint32_t rkey, uint64_t raddr, uint32_t length,
		     struct kinet_mr_ref *ref)
{
	unsigned access;

	switch (opcode) {
	case KINET_WQE_OP_RDMA_WRITE:
	case KINET_WQE_OP_RDMA_WRITE_IMM:
		access = KINET_ACCESS_REMOTE_WRITE;
		break;
	case KINET_WQE_OP_RDMA_READ:
		access = KINET_ACCESS_REMOTE_READ;
		break;
	case KINET_WQE_OP_ATOMIC_CS:
	case KINET_WQE_OP_ATOMIC_FA:
		if (raddr & 7)
			return KINET_SYND_REMOTE_INVAL_REQ_ERR;
		access = KINET_ACCESS_REMOTE_ATOMIC;
		length = 8;
		break;
	default:
		return KINET_SYND_REMOTE_INVAL_REQ_ERR;
	}
	if (kinet_mr_lookup(ctx, rkey, raddr, length, access, ref))
		return KINET_SYND_REMOTE_ACCESS_ERR;
	return 0;
}

const struct kinet_wqe_data_seg *kinet_qp_rq_peek(struct kinet_qp *qp, uint16_t *index)
{
	uint32_t head;

	if (!qp->rq)
		return NULL;
	/* Acquire: the receive WQE is read only after the record saying it
	 * is there. */
	head = kinet_be32(__atomic_load_n(&qp->dbrec[KINET_DBR_RECV], __ATOMIC_ACQUIRE)) & 0xffff;
	if (!((head - (uint16_t)kinet_sqp(qp)->rq_ci) & 0xffff))
		return NULL;
	*index = (uint16_t)kinet_sqp(qp)->rq_ci;
	return (const struct kinet_wqe_data_seg *)(qp->rq + (kinet_sqp(qp)->rq_ci & (qp->rq_depth - 1)) *
								    qp->rq_stride);
}

void kinet_qp_rq_consume(struct kinet_qp *qp)
{
	kinet_sqp(qp)->rq_ci++;
}

/* The SRQ's next WQE in list order (its data segments) and its index, or
 * NULL when the count of WQEs posted says none is left; lock held. */
static const struct kinet_wqe_data_seg *srq_peek(struct kinet_srq *srq, uint16_t *index)
{
	struct kinet_soft_srq *s = kinet_ssrq(srq);
	/* Acquire: as for a receive queue's record. */
	uint32_t posted = kinet_be32(__atomic_load_n(&srq->dbrec[0], __ATOMIC_ACQUIRE));

	if (!((posted - s->ci) & 0xffff))
		return NULL;
	*index = (uint16_t)s->head;
	return (const struct kinet_wqe_data_seg *)(kinet_srq_wqe(srq, s->head) + 1);
}

/* Takes the WQE srq_peek gave: the next one is the one it names, which
 * the poster set before posting this one (and rewrites only once this
 * one's completion is polled); lock held. */
static void srq_consume(struct kinet_srq *srq)
{
	struct kinet_soft_srq *s = kinet_ssrq(srq);

	s->head = kinet_be16(kinet_srq_wqe(srq, s->head)->next_wqe_index) & (srq->slots - 1);
	s->ci++;
	atomic_store_explicit(&srq->consumed, s->ci, memory_order_relaxed);
}

/* Where tq's receives come from: its SRQ or its own queue; the lock of
 * that consumer.  The two are never held together. */
static pthread_mutex_t *recv_lock(struct kinet_qp *tq)
{
	return tq->attr.srq ? &kinet_ssrq(tq->attr.srq)->lock : &kinet_sqp(tq)->rq_lock;
}

static const struct kinet_wqe_data_seg *recv_peek(struct kinet_qp *tq, uint16_t *index)
{
	return tq->attr.srq ? srq_peek(tq->attr.srq, index) : kinet_qp_rq_peek(tq, index);
}

static void recv_consume(struct kinet_qp *tq)
{
	if (tq->attr.srq)
		srq_consume(tq->attr.srq);
	else
		kinet_qp_rq_consume(tq);
}

int kinet_resp_take_recv_imm(struct kinet_qp *tq, uint16_t *index)
{
	bool have;

	if (!tq->rq && !tq->attr.srq)
		return KINET_SYND_REMOTE_INVAL_REQ_ERR;
	pthread_mutex_lock(recv_lock(tq));
	have = recv_peek(tq, index) != NULL;
	if (have)
		recv_consume(tq);
	pthread_mutex_unlock(recv_lock(tq));
	return have ? 0 : KINET_RESP_RNR;
}

/* Checks each scatter entry of the receive WQE seg (key, range,
 * LOCAL_WRITE), then that together they hold len bytes. */
static uint8_t resolve(struct kinet_qp *qp, const struct kinet_wqe_data_seg *seg, uint64_t len,
		       struct kinet_resp_recv *rv)
{
	uint32_t nseg = qp->attr.srq ? qp->attr.srq->max_sge : qp->attr.max_recv_sge;
	uint64_t room = 0;

	if (!qp->attr.srq && qp->rq_stride / sizeof(*seg) < nseg)
		nseg = qp->rq_stride / sizeof(*seg);
	rv->ndst = 0;
	for (uint32_t i = 0; i < nseg; i++) {
		struct kinet_wqe_data_seg sg;
		struct kinet_mr_ref ref;

		memcpy(&sg, &seg[i], sizeof(sg));
		uint32_t lkey = kinet_be32(sg.lkey), n = kinet_be32(sg.byte_count);
		if (lkey == KINET_INVALID_LKEY)
			break;
		if (kinet_mr_lookup(qp->ctx, lkey, kinet_be64(sg.addr), n, KINET_ACCESS_LOCAL_WRITE, &ref))
			return KINET_SYND_LOCAL_PROT_ERR;
		rv->dst[rv->ndst++] = (struct kinet_sgl_entry){ref.ptr, n, lkey, ref.type};
		room += n;
	}
	return room < len ? KINET_SYND_LOCAL_LENGTH_ERR : 0;
}

int kinet_resp_recv_peek(struct kinet_qp *tq, uint32_t len, struct kinet_resp_recv *rv)
{
	const struct kinet_wqe_data_seg *seg;

	if (!tq->rq && !tq->attr.srq)
		return KINET_SYND_REMOTE_INVAL_REQ_ERR;
	pthread_mutex_lock(recv_lock(tq));
	seg = recv_peek(tq, &rv->index);
	if (!seg) {
		pthread_mutex_unlock(recv_lock(tq));
		return KINET_RESP_RNR;
	}
	rv->syndrome = resolve(tq, seg, len, rv);
	return 0;
}

void kinet_resp_recv_leave(struct kinet_qp *tq)
{
	pthread_mutex_unlock(recv_lock(tq));
}

int kinet_resp_recv_take(struct kinet_qp *tq, const struct kinet_resp_recv *rv)
{
	recv_consume(tq);
	pthread_mutex_unlock(recv_lock(tq));
	if (!rv->syndrome)
		return 0;
	kinet_resp_recv_fail(tq, rv->index, rv->syndrome);
	/* The requester learns the request was refused. */
	return rv->syndrome == KINET_SYND_LOCAL_LENGTH_ERR ? KINET_SYND_REMOTE_INVAL_REQ_ERR
							   : KINET_SYND_REMOTE_OP_ERR;
}

void kinet_resp_recv_fail(struct kinet_qp *tq, uint16_t index, uint8_t syndrome)
{
	struct kinet_cqe_desc d = kinet_resp_cqe(tq, KINET_CQE_RESP_ERR, index, 0, 0, syndrome);

	/* The responder's receive fails and its QP enters the error state. */
	kinet_engine_complete(tq, tq->attr.recv_cq, &d);
	kinet_qp_to_error(tq, "receive failed");
}

struct kinet_cqe_desc kinet_resp_cqe(const struct kinet_qp *tq, uint8_t cqe_opcode, uint16_t index,
				     uint32_t length, uint32_t imm_be, uint8_t syndrome)
{
	return (struct kinet_cqe_desc){
		.cqe_opcode = cqe_opcode,
		.syndrome = syndrome,
		.wqe_counter = index,
		.qpn = tq->qpn,
		.byte_cnt = length,
		.imm_be = imm_be,
		/* As ConnectX: the poller finds the wr_id through the SRQ. */
		.srqn = tq->attr.srq ? tq->attr.srq->srqn : 0,
	};
}

int kinet_resp_copy_sync(struct kinet_engine_thread *t, void *dst, enum kinet_mem_type dt, const void *src,
			 enum kinet_mem_type st, size_t len)
{
	int rc = kinet_engine_copy(t, dst, dt, src, st, len);

	if (rc > 0)
		rc = kinet_engine_copy_sync(t);
	return rc < 0 ? rc : 0;
}

int kinet_resp_atomic(struct kinet_engine_thread *t, struct kinet_ctx *ctx, const struct kinet_mr_ref *ref,
		      uint8_t opcode, uint64_t swap_add, uint64_t compare, uint64_t *old)
{
	uint64_t val;
	int rc;

	if (ref->type == KINET_MEM_HOST) {
		uint64_t *p = ref->ptr;

		if (opcode == KINET_WQE_OP_ATOMIC_FA) {
			*old = __atomic_fetch_add(p, swap_add, __ATOMIC_SEQ_CST);
		} else {
			*old = compare;
			__atomic_compare_exchange_n(p, old, swap_add, false, __ATOMIC_SEQ_CST,
						    __ATOMIC_SEQ_CST);
		}
		return 0;
	}
	/* GPU memory: read-modify-write through the copy engine. */
	pthread_mutex_lock(&ctx->atomic_lock);
	rc = kinet_resp_copy_sync(t, old, KINET_MEM_HOST, ref->ptr, ref->type, 8);
	if (!rc) {
		val = opcode == KINET_WQE_OP_ATOMIC_FA ? *old + swap_add : *old == compare ? swap_add : *old;
		rc = kinet_resp_copy_sync(t, ref->ptr, ref->type, &val, KINET_MEM_HOST, 8);
	}
	pthread_mutex_unlock(&ctx->atomic_lock);
	return rc ? KINET_SYND_REMOTE_OP_ERR : 0;
}
