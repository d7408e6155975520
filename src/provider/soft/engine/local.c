/*
 * Transport `local`: the target QP lives in this process (any context).
 * The requester's engine thread acts as the responder too: it checks the
 * target's keys, places or fetches the data (memcpy for host memory, the
 * copy engine for GPU memory), consumes the target's receive WQEs and
 * writes its responder CQEs.
 *
 * Targets are found by QP number in a registry of the process's connected
 * QPs; a lookup takes a reference that destroy waits for.  Destroy moves
 * the target to the error state first, and every WQE checks that state,
 * so a batch gives its reference back after the operation in progress.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "responder.h"

/* Connected QPs of the process by QP number: a small open hash of chains,
 * read-locked by every look-up. */
#define REGISTRY_BUCKETS 1024u

struct registry_entry {
	struct kinet_qp *qp;
	struct registry_entry *next;
};

/* Sharded: every engine batch reads it, connects and disconnects write it. */
static struct kinet_brlock registry_lock = KINET_BRLOCK_INITIALIZER;
static struct registry_entry *registry[REGISTRY_BUCKETS];

static struct registry_entry **bucket_of(uint32_t qpn)
{
	return &registry[(qpn ^ (qpn >> 10) ^ (qpn >> 20)) & (REGISTRY_BUCKETS - 1)];
}

static int local_connect(struct kinet_qp *qp, const struct kinet_qp_info *remote)
{
	struct registry_entry *e = malloc(sizeof(*e));

	(void)remote;
	if (!e)
		return -ENOMEM;
	e->qp = qp;
	kinet_brlock_wrlock(&registry_lock);
	e->next = *bucket_of(qp->qpn);
	*bucket_of(qp->qpn) = e;
	kinet_brlock_wrunlock(&registry_lock);
	return 0;
}

static void local_disconnect(struct kinet_qp *qp)
{
	kinet_brlock_wrlock(&registry_lock);
	for (struct registry_entry **p = bucket_of(qp->qpn); *p; p = &(*p)->next) {
		if ((*p)->qp == qp) {
			struct registry_entry *e = *p;

			*p = e->next;
			free(e);
			break;
		}
	}
	kinet_brlock_wrunlock(&registry_lock);
}

/* The connected target, with a reference, or NULL while it is not there. */
static struct kinet_qp *target_get(const struct kinet_qp *qp)
{
	struct kinet_qp *target = NULL;

	kinet_brlock_rdlock(&registry_lock);
	for (struct registry_entry *e = *bucket_of(qp->remote.qpn); e; e = e->next) {
		if (e->qp->qpn == qp->remote.qpn && e->qp->remote.qpn == qp->qpn) {
			target = e->qp;
			kinet_qp_get(target);
			break;
		}
	}
	kinet_brlock_rdunlock(&registry_lock);
	return target;
}

static void target_put(struct kinet_qp *target)
{
	kinet_qp_put(target);
}

/* Copies between a flat buffer (remote side) and the op's local SGEs. */
static int copy_sges(struct kinet_engine_thread *t, struct kinet_op *op, uint8_t *remote,
		     enum kinet_mem_type remote_type, bool to_remote)
{
	int async = 0;
	uint64_t off = 0;

	if (op->inline_data)
		return kinet_engine_copy(t, remote, remote_type, op->inline_data, KINET_MEM_HOST, op->length);
	for (int i = 0; i < op->nsge; i++) {
		int rc = to_remote ? kinet_engine_copy(t, remote + off, remote_type, op->sge[i].ptr,
						       op->sge[i].type, op->sge_len[i])
				   : kinet_engine_copy(t, op->sge[i].ptr, op->sge[i].type, remote + off,
						       remote_type, op->sge_len[i]);
		if (rc < 0)
			return rc;
		async |= rc;
		off += op->sge_len[i];
	}
	return async;
}

/* Would the op's copies complete synchronously (host memory both sides)?
 * Then it must not overtake operations still in flight. */
static bool any_sync_copy(const struct kinet_op *op, enum kinet_mem_type remote_type)
{
	if (remote_type == KINET_MEM_HOST && op->inline_data)
		return true;
	for (int i = 0; i < op->nsge; i++)
		if (remote_type == KINET_MEM_HOST && op->sge[i].type == KINET_MEM_HOST && op->sge_len[i])
			return true;
	return false;
}

static void fail(struct kinet_exec_result *res, uint8_t syndrome)
{
	res->status = KINET_EXEC_ERROR;
	res->syndrome = syndrome;
}

static void rnr(struct kinet_exec_result *res)
{
	res->status = KINET_EXEC_RETRY;
	res->syndrome = KINET_SYND_RNR_RETRY_EXC_ERR;
}

/* The responder CQE, written by the engine once the data is placed. */
static void responder_cqe(struct kinet_exec_result *res, struct kinet_qp *target, uint8_t opcode,
			  uint16_t index, uint32_t len, uint32_t imm_be)
{
	kinet_qp_get(target);
	res->resp_qp = target;
	res->resp_cq = target->attr.recv_cq;
	res->resp_cqe = kinet_resp_cqe(target, opcode, index, len, imm_be, 0);
}

static void finish(struct kinet_exec_result *res, int rc)
{
	if (rc < 0)
		fail(res, KINET_SYND_LOCAL_QP_OP_ERR);
	else
		res->status = rc ? KINET_EXEC_PENDING : KINET_EXEC_DONE;
}

static void exec_write(struct kinet_engine_thread *t, struct kinet_op *op, struct kinet_qp *target,
		       struct kinet_exec_result *res)
{
	struct kinet_mr_ref ref;
	bool imm = op->opcode == KINET_WQE_OP_RDMA_WRITE_IMM;
	uint16_t index = 0;
	int synd = kinet_resp_check(target->ctx, op->opcode, op->rkey, op->raddr, op->length, &ref);

	if (synd)
		return fail(res, (uint8_t)synd);
	if (op->after_pending && any_sync_copy(op, ref.type)) {
		res->status = KINET_EXEC_BUSY;
		return;
	}
	if (imm && (synd = kinet_resp_take_recv_imm(target, &index)))
		return synd == KINET_RESP_RNR ? rnr(res) : fail(res, (uint8_t)synd);
	int rc = copy_sges(t, op, ref.ptr, ref.type, true);
	if (imm)
		responder_cqe(res, target, KINET_CQE_RESP_WR_IMM, index, op->length, op->imm_be);
	finish(res, rc);
}

static void exec_read(struct kinet_engine_thread *t, struct kinet_op *op, struct kinet_qp *target,
		      struct kinet_exec_result *res)
{
	struct kinet_mr_ref ref;
	int synd = kinet_resp_check(target->ctx, op->opcode, op->rkey, op->raddr, op->length, &ref);

	if (synd)
		return fail(res, (uint8_t)synd);
	if (op->after_pending && any_sync_copy(op, ref.type)) {
		res->status = KINET_EXEC_BUSY;
		return;
	}
	res->byte_cnt = op->length;
	finish(res, copy_sges(t, op, ref.ptr, ref.type, false));
}

/* Places len bytes of the op's data from byte src_off on into the receive
 * WQE's scatter list at the same offset. */
static int scatter(struct kinet_engine_thread *t, const struct kinet_resp_recv *rv, uint32_t src_off,
		   const uint8_t *src, enum kinet_mem_type stype, uint32_t len)
{
	const struct kinet_sgl_entry *g;
	struct kinet_sgl_iter it;
	uint32_t in, take;
	int async = 0;

	kinet_sgl_iter_init(&it, rv->dst, rv->ndst, src_off, len);
	while (kinet_sgl_iter_next(&it, &g, &in, &take)) {
		int rc = kinet_engine_copy(t, g->ptr + in, g->type, src, stype, take);

		if (rc < 0)
			return rc;
		async |= rc;
		src += take;
	}
	return async;
}

/* Scatters a send into the target's next receive WQE. */
static void exec_send(struct kinet_engine_thread *t, struct kinet_op *op, struct kinet_qp *target,
		      struct kinet_exec_result *res)
{
	bool imm = op->opcode == KINET_WQE_OP_SEND_IMM;
	struct kinet_resp_recv rv;
	bool sync = false;
	int synd = kinet_resp_recv_peek(target, op->length, &rv);

	if (synd)
		return synd == KINET_RESP_RNR ? rnr(res) : fail(res, (uint8_t)synd);
	for (int i = 0; i < rv.ndst; i++)
		sync |= rv.dst[i].type == KINET_MEM_HOST && rv.dst[i].len &&
			any_sync_copy(op, KINET_MEM_HOST);
	if (!rv.syndrome && op->after_pending && sync) {
		kinet_resp_recv_leave(target);
		res->status = KINET_EXEC_BUSY;
		return;
	}
	if ((synd = kinet_resp_recv_take(target, &rv)))
		return fail(res, (uint8_t)synd);

	/* Gather from the op, scatter into the receive SGEs, piecewise. */
	int async = 0, rc = 0;
	if (op->inline_data) {
		rc = scatter(t, &rv, 0, op->inline_data, KINET_MEM_HOST, op->length);
	} else {
		uint32_t off = 0;

		for (int i = 0; i < op->nsge && rc >= 0; i++) {
			rc = scatter(t, &rv, off, op->sge[i].ptr, op->sge[i].type, op->sge_len[i]);
			async |= rc > 0;
			off += op->sge_len[i];
		}
	}
	responder_cqe(res, target, imm ? KINET_CQE_RESP_SEND_IMM : KINET_CQE_RESP_SEND, rv.index, op->length,
		      op->imm_be);
	finish(res, rc < 0 ? rc : async | (rc > 0));
}

static void exec_atomic(struct kinet_engine_thread *t, struct kinet_op *op, struct kinet_qp *target,
			struct kinet_exec_result *res)
{
	struct kinet_mr_ref ref;
	uint64_t old;
	int synd = kinet_resp_check(target->ctx, op->opcode, op->rkey, op->raddr, 8, &ref);

	if (synd)
		return fail(res, (uint8_t)synd);
	/* Atomics complete synchronously: after everything before them. */
	if (op->after_pending) {
		res->status = KINET_EXEC_BUSY;
		return;
	}
	synd = kinet_resp_atomic(t, target->ctx, &ref, op->opcode, op->swap_add, op->compare, &old);
	if (synd)
		return fail(res, (uint8_t)synd);
	/* The old value lands as one 8-byte write when it can, as a NIC's
	 * does: results that nobody reads (a signal's) often share one word,
	 * which several engine threads may write at once. */
	int rc = 0;

	if (op->sge[0].type == KINET_MEM_HOST && !((uintptr_t)op->sge[0].ptr & 7))
		__atomic_store_n((uint64_t *)op->sge[0].ptr, old, __ATOMIC_RELAXED);
	else
		rc = kinet_engine_copy(t, op->sge[0].ptr, op->sge[0].type, &old, KINET_MEM_HOST, 8);
	if (rc > 0)
		rc = kinet_engine_copy_sync(t);
	res->byte_cnt = 8;
	finish(res, rc < 0 ? rc : 0);
}

/* Ends a batch: drops the target looked up for it (see batch_target). */
static void local_batch_end(struct kinet_qp *qp)
{
	struct kinet_qp *target = kinet_sqp(qp)->transport_priv;

	if (!target)
		return;
	if (target->ctx != qp->ctx)
		kinet_mr_table_unlock(target->ctx);
	target_put(target);
	kinet_sqp(qp)->transport_priv = NULL;
}

/* The target for the current batch: looked up (and its registration table
 * read-locked) once per batch of WQEs, not per WQE. */
static struct kinet_qp *batch_target(struct kinet_qp *qp)
{
	struct kinet_qp *target = kinet_sqp(qp)->transport_priv;

	if (!target) {
		target = target_get(qp);
		if (!target)
			return NULL;
		if (target->ctx != qp->ctx)
			kinet_mr_table_rdlock(target->ctx);
		kinet_sqp(qp)->transport_priv = target;
	}
	return target;
}

static void local_execute(struct kinet_engine_thread *t, struct kinet_qp *qp, struct kinet_op *op,
			  struct kinet_exec_result *res)
{
	struct kinet_qp *target = batch_target(qp);

	if (!target || atomic_load(&target->state) != KINET_QPS_RTS) {
		/* Like a responder that does not answer: retried until the
		 * QP's timeout, then TRANSPORT_RETRY_EXC. */
		res->status = KINET_EXEC_RETRY;
		res->syndrome = KINET_SYND_TRANSPORT_RETRY_EXC_ERR;
		return;
	}
	switch (op->opcode) {
	case KINET_WQE_OP_RDMA_WRITE:
	case KINET_WQE_OP_RDMA_WRITE_IMM:
		exec_write(t, op, target, res);
		break;
	case KINET_WQE_OP_RDMA_READ:
		exec_read(t, op, target, res);
		break;
	case KINET_WQE_OP_SEND:
	case KINET_WQE_OP_SEND_IMM:
		exec_send(t, op, target, res);
		break;
	case KINET_WQE_OP_ATOMIC_CS:
	case KINET_WQE_OP_ATOMIC_FA:
		exec_atomic(t, op, target, res);
		break;
	default:
		fail(res, KINET_SYND_LOCAL_QP_OP_ERR);
	}
}

const struct kinet_transport_ops kinet_transport_local = {
	.name = "local",
	.connect = local_connect,
	.disconnect = local_disconnect,
	.execute = local_execute,
	.batch_end = local_batch_end,
};
