/*
 * Executing a QP's send queue: decode each WQE, check it the way ConnectX
 * does, hand it to the transport, write completions, and turn every fault
 * into an error CQE plus the error state (docs/architecture/soft-nic.md,
 * "Errors and protection").  A WQE is read only inside the slots the
 * doorbell covers, and memory only inside registered regions, so no WQE
 * can crash the engine or write astray.
 */
#include <errno.h>
#include <sched.h>
#include <string.h>

#include "engine.h"
#include "responder.h"

#define PASS_BUDGET 64 /* WQEs per QP per pass, for fairness */

/* 16-byte unit `i` of the WQE starting at BB `start`, wrapping the ring. */
static const uint8_t *wqe_unit(const struct kinet_qp *qp, uint64_t start, uint32_t i)
{
	size_t ring = (size_t)qp->sq_bbs * KINET_WQE_BB_SIZE;
	size_t off = ((size_t)start * KINET_WQE_BB_SIZE + (size_t)i * KINET_WQE_DS_SIZE) & (ring - 1);

	return qp->sq + off;
}

void kinet_engine_qp_fail(struct kinet_qp *qp, uint8_t syndrome, uint8_t vendor, uint8_t wqe_opcode,
			  uint16_t wqe_counter)
{
	struct kinet_cqe_desc d = {
		.cqe_opcode = KINET_CQE_REQ_ERR,
		.wqe_opcode = wqe_opcode,
		.syndrome = syndrome,
		.vendor_syndrome = vendor,
		.wqe_counter = wqe_counter,
		.qpn = qp->qpn,
	};

	KINET_INFO("QP %u: WQE %u (opcode 0x%02x) failed, syndrome 0x%02x", qp->qpn, wqe_counter, wqe_opcode,
		   syndrome);
	kinet_ctx_record_error(qp->ctx, -EIO, qp->qpn, syndrome, wqe_opcode, wqe_counter);
	kinet_qp_to_error(qp, "error completion");
	kinet_cq_write(qp->attr.send_cq, &d, false);
}

void kinet_engine_complete(struct kinet_qp *qp, struct kinet_cq *cq, const struct kinet_cqe_desc *desc)
{
	if (kinet_cq_write(cq, desc, false) == -EOVERFLOW)
		kinet_qp_to_error(qp, "completion queue overrun");
}

/* Resolves the WQE's local data segments (or inline data) into op. */
static uint8_t decode_local(struct kinet_engine_thread *t, struct kinet_qp *qp, uint64_t start,
			    uint32_t first, uint32_t ds, unsigned access, bool inline_ok, struct kinet_op *op)
{
	op->length = 0;
	op->nsge = 0;
	op->inline_data = NULL;
	if (first >= ds)
		return 0;

	uint32_t hdr;
	memcpy(&hdr, wqe_unit(qp, start, first), sizeof(hdr));
	hdr = kinet_be32(hdr);
	if (hdr & KINET_INLINE_SEG_FLAG) {
		uint32_t len = hdr & ~KINET_INLINE_SEG_FLAG;
		uint32_t room =
			(ds - first) * KINET_WQE_DS_SIZE - (uint32_t)sizeof(struct kinet_wqe_inline_seg);

		if (!inline_ok || len > room)
			return KINET_SYND_LOCAL_QP_OP_ERR;
		/* Copy out unit by unit: the payload may wrap the ring. */
		for (uint32_t done = 0, u = first; done < len + 4; u++) {
			uint32_t n = len + 4 - done < KINET_WQE_DS_SIZE ? len + 4 - done : KINET_WQE_DS_SIZE;

			memcpy(t->inline_buf + done, wqe_unit(qp, start, u), n);
			done += n;
		}
		op->inline_data = t->inline_buf + 4;
		op->length = len;
		return 0;
	}
	if (ds - first > KINET_MAX_SGE)
		return KINET_SYND_LOCAL_QP_OP_ERR;
	for (uint32_t u = first; u < ds; u++) {
		struct kinet_wqe_data_seg seg;

		memcpy(&seg, wqe_unit(qp, start, u), sizeof(seg));
		uint32_t len = kinet_be32(seg.byte_count);
		uint32_t lkey = kinet_be32(seg.lkey);
		uint64_t addr = kinet_be64(seg.addr);
		int i = op->nsge;

		if (len & KINET_INLINE_SEG_FLAG)
			return KINET_SYND_LOCAL_QP_OP_ERR;
		if (kinet_mr_lookup(qp->ctx, lkey, addr, len, access, &op->sge[i]))
			return KINET_SYND_LOCAL_PROT_ERR;
		if (op->length + (uint64_t)len > 0x7fffffffu)
			return KINET_SYND_LOCAL_LENGTH_ERR;
		op->sge_len[i] = len;
		op->length += len;
		op->nsge++;
	}
	return 0;
}

/* A staged write (KINET_WQE_OPMOD_STAGED): its one data segment, checked
 * by decode_local like any, names the source; the bytes are taken from the
 * QP's staging slot of the WQE's first BB, which the poster filled from it
 * (include/kinet/device/impl/stage.cuh).  Given as inline data: every
 * transport sends those from host memory, and the slot stays as it is
 * until the WQE completes. */
static uint8_t decode_staged(struct kinet_qp *qp, uint64_t start, struct kinet_op *op)
{
	uint32_t bytes = qp->attr.stage_bytes;

	if (!qp->stage || op->nsge != 1 || op->length > bytes)
		return KINET_SYND_LOCAL_QP_OP_ERR;
	op->inline_data = qp->stage + (size_t)(start & (qp->sq_bbs - 1)) * bytes;
	op->nsge = 0;
	return 0;
}

/* The send queue of a raw-packet QP (an Ethernet port's send queue,
 * engine/eth.c): Ethernet sends (ctrl, Ethernet segment, one or two data
 * segments, no inlined headers), WAIT on time, NOP; anything else is
 * LOCAL_QP_OP_ERR.  Data segments are checked as any local SGE. */
static uint8_t decode_raw(struct kinet_engine_thread *t, struct kinet_qp *qp, uint32_t ds,
			  struct kinet_op *op)
{
	uint64_t start = kinet_sqp(qp)->sq_ci;

	switch (op->opcode) {
	case KINET_WQE_OP_NOP:
		return 0;
	case KINET_WQE_OP_SEND: {
		struct kinet_wqe_eth_seg eth;

		if (ds < KINET_ETH_SEND_DS_1 || ds > KINET_ETH_SEND_DS_2 || op->opmod)
			return KINET_SYND_LOCAL_QP_OP_ERR;
		memcpy(&eth, wqe_unit(qp, start, 1), sizeof(eth));
		/* Inlined headers and TSO are not emulated. */
		if (eth.inline_hdr_sz || eth.mss)
			return KINET_SYND_LOCAL_QP_OP_ERR;
		op->cs_flags = eth.cs_flags;
		return decode_local(t, qp, start, 2, ds, 0, false, op);
	}
	case KINET_WQE_OP_WAIT: {
		struct kinet_wqe_wait_time_seg w;
		uint8_t *p = (uint8_t *)&w;

		if (op->opmod != KINET_WQE_OPMOD_WAIT_TIME || ds != KINET_ETH_WAIT_TIME_DS)
			return KINET_SYND_LOCAL_QP_OP_ERR;
		memcpy(p, wqe_unit(qp, start, 1), KINET_WQE_DS_SIZE);
		memcpy(p + KINET_WQE_DS_SIZE, wqe_unit(qp, start, 2), KINET_WQE_DS_SIZE);
		op->wait_ns = kinet_eth_rt_to_ns(kinet_wqe_wait_time_value(&w));
		op->length = 0;
		op->nsge = 0;
		return 0;
	}
	default:
		return KINET_SYND_LOCAL_QP_OP_ERR;
	}
}

/* Decodes the WQE at kinet_sqp(qp)->sq_ci.  Returns 0 or the syndrome of a malformed
 * or unauthorised request. */
static uint8_t decode(struct kinet_engine_thread *t, struct kinet_qp *qp, uint32_t ds, struct kinet_op *op)
{
	uint64_t start = kinet_sqp(qp)->sq_ci;
	struct kinet_wqe_raddr_seg raddr;
	struct kinet_wqe_atomic_seg atomic;
	uint8_t synd;

	if (kinet_sqp(qp)->raw)
		return decode_raw(t, qp, ds, op);
	switch (op->opcode) {
	case KINET_WQE_OP_NOP:
		return 0;
	case KINET_WQE_OP_RDMA_WRITE:
	case KINET_WQE_OP_RDMA_WRITE_IMM:
	case KINET_WQE_OP_RDMA_READ:
		if (ds < 2)
			return KINET_SYND_LOCAL_QP_OP_ERR;
		memcpy(&raddr, wqe_unit(qp, start, 1), sizeof(raddr));
		op->raddr = kinet_be64(raddr.raddr);
		op->rkey = kinet_be32(raddr.rkey);
		if (op->opcode == KINET_WQE_OP_RDMA_READ)
			return decode_local(t, qp, start, 2, ds, KINET_ACCESS_LOCAL_WRITE, false, op);
		synd = decode_local(t, qp, start, 2, ds, 0, !op->opmod, op);
		if (synd || !op->opmod)
			return synd;
		return op->opmod == KINET_WQE_OPMOD_STAGED ? decode_staged(qp, start, op)
							   : KINET_SYND_LOCAL_QP_OP_ERR;
	case KINET_WQE_OP_SEND:
	case KINET_WQE_OP_SEND_IMM:
		return decode_local(t, qp, start, 1, ds, 0, true, op);
	case KINET_WQE_OP_ATOMIC_CS:
	case KINET_WQE_OP_ATOMIC_FA: {
		if (ds != 4)
			return KINET_SYND_LOCAL_QP_OP_ERR;
		memcpy(&raddr, wqe_unit(qp, start, 1), sizeof(raddr));
		memcpy(&atomic, wqe_unit(qp, start, 2), sizeof(atomic));
		op->raddr = kinet_be64(raddr.raddr);
		op->rkey = kinet_be32(raddr.rkey);
		op->swap_add = kinet_be64(atomic.swap_add);
		op->compare = kinet_be64(atomic.compare);
		uint8_t synd = decode_local(t, qp, start, 3, ds, KINET_ACCESS_LOCAL_WRITE, false, op);
		if (synd)
			return synd;
		return op->nsge == 1 && op->length == 8 ? 0 : KINET_SYND_LOCAL_LENGTH_ERR;
	}
	case KINET_WQE_OP_WAIT: {
		struct kinet_wqe_wait_seg wait;
		uint32_t opmod;

		memcpy(&opmod, wqe_unit(qp, start, 0), sizeof(opmod));
		/* opmod 0 waits on a CQ; other modes (wait on data) are not
		 * supported. */
		if (ds != 2 || kinet_be32(opmod) >> 24)
			return KINET_SYND_LOCAL_QP_OP_ERR;
		memcpy(&wait, wqe_unit(qp, start, 1), sizeof(wait));
		op->wait_cqn = kinet_be32(wait.cqn) & 0xffffff;
		op->wait_index = kinet_be32(wait.max_index);
		return 0;
	}
	default:
		return KINET_SYND_LOCAL_QP_OP_ERR;
	}
}

/* WAIT: 1 once the named CQ of the QP's context holds the awaited CQE, 0
 * while it does not (the WAIT stays at the head of the send queue, for as
 * long as it takes, as on ConnectX), -1 when it never will: no such CQ (or
 * it was destroyed meanwhile), or it overran short of the index. */
static int wait_done(struct kinet_qp *qp, const struct kinet_op *op)
{
	uint64_t produced = 0;
	int rc = kinet_cq_produced(qp->ctx, op->wait_cqn, &produced);

	if (rc == -ENOENT) {
		KINET_INFO("QP %u: WAIT names CQ %u, which this context does not have", qp->qpn,
			   op->wait_cqn);
		return -1;
	}
	if (kinet_wait_reached((uint32_t)produced, op->wait_index))
		return 1;
	if (rc == -EOVERFLOW) {
		KINET_INFO("QP %u: WAIT for CQE %u of CQ %u, which overran at %llu", qp->qpn, op->wait_index,
			   op->wait_cqn, (unsigned long long)produced);
		return -1;
	}
	return 0;
}

static void complete_requester(struct kinet_qp *qp, const struct kinet_op *op, uint32_t byte_cnt)
{
	if (!(op->fm_ce_se & KINET_WQE_CTRL_CQ_UPDATE))
		return;
	struct kinet_cqe_desc d = {
		.cqe_opcode = KINET_CQE_REQ,
		.wqe_opcode = op->opcode,
		.wqe_counter = op->wqe_counter,
		.qpn = qp->qpn,
		.byte_cnt = byte_cnt,
	};
	kinet_engine_complete(qp, qp->attr.send_cq, &d);
}

static void complete_responder(struct kinet_exec_result *res)
{
	if (!res->resp_qp)
		return;
	kinet_engine_complete(res->resp_qp, res->resp_cq, &res->resp_cqe);
	kinet_qp_put(res->resp_qp);
	res->resp_qp = NULL;
}

/* Executes the WQE at sq_ci.  Returns false when the QP must stop for this
 * pass (waiting on in-flight work, a peer, or it just failed). */
static bool execute_one(struct kinet_engine_thread *t, struct kinet_qp *qp)
{
	const struct kinet_wqe_ctrl_seg *ctrl = (const void *)wqe_unit(qp, kinet_sqp(qp)->sq_ci, 0);
	uint32_t ds = kinet_wqe_ctrl_ds(ctrl);
	uint32_t nbb = ds ? kinet_wqe_bbs(ds) : 1;
	uint64_t posted = kinet_sqp(qp)->sq_seen_pi - kinet_sqp(qp)->sq_ci;
	struct kinet_op op;
	struct kinet_exec_result res;
	uint8_t synd = 0;

	memset(&res, 0, sizeof(res));
	op.opcode = kinet_wqe_ctrl_opcode(ctrl);
	op.opmod = kinet_wqe_ctrl_opmod(ctrl);
	op.fm_ce_se = ctrl->fm_ce_se;
	op.imm_be = ctrl->imm;
	op.wqe_counter = (uint16_t)kinet_sqp(qp)->sq_ci;
	op.after_pending = kinet_sqp(qp)->npending > 0;

	/* A fence orders this WQE after earlier reads and atomics; the only
	 * unfinished earlier work is what is in flight, so wait for it. */
	if ((op.fm_ce_se & KINET_WQE_CTRL_FENCE_MASK) && kinet_sqp(qp)->npending)
		return false;

	if (kinet_wqe_ctrl_qpn(ctrl) != qp->qpn || ds == 0 || nbb > posted) {
		synd = KINET_SYND_LOCAL_QP_OP_ERR;
		if (nbb > posted)
			nbb = (uint32_t)posted;
	}
	if (!synd)
		synd = decode(t, qp, ds, &op);
	/* A raw-packet QP's WAIT waits on time: its transport says when. */
	bool cq_wait = op.opcode == KINET_WQE_OP_WAIT && !kinet_sqp(qp)->raw;
	if (!synd && cq_wait) {
		int reached = wait_done(qp, &op);

		if (!reached)
			return false;
		if (reached < 0)
			synd = KINET_SYND_LOCAL_QP_OP_ERR;
	}
	if (!synd && (op.opcode == KINET_WQE_OP_NOP || cq_wait)) {
		/* Complete at once, so only after what is in flight:
		 * transports that track operations complete them later. */
		res.status = op.after_pending ? KINET_EXEC_BUSY : KINET_EXEC_DONE;
	} else if (!synd) {
		kinet_sqp(qp)->transport->execute(t, qp, &op, &res);
		if (res.status == KINET_EXEC_ERROR)
			synd = res.syndrome;
	}

	if (synd && kinet_sqp(qp)->npending) {
		/* Completions stay in order: report the error after the
		 * operations before it.  Decoding and checking had no side
		 * effects, so the WQE is simply looked at again later. */
		complete_responder(&res);
		return false;
	}
	if (synd) {
		complete_responder(&res);
		kinet_sqp(qp)->sq_ci += nbb;
		kinet_sqp(qp)->retry_start_ns = 0;
		if (kinet_sqp(qp)->raw)
			kinet_eth_tx_failed(qp, 1);
		kinet_engine_qp_fail(qp, synd, 0, op.opcode, op.wqe_counter);
		return false;
	}
	switch (res.status) {
	case KINET_EXEC_BUSY:
		return false;
	case KINET_EXEC_RETRY: {
		uint64_t now = kinet_now_ns();
		uint64_t limit = res.syndrome == KINET_SYND_RNR_RETRY_EXC_ERR ? qp->attr.rnr_timeout_ms
									      : qp->attr.timeout_ms;
		if (!kinet_sqp(qp)->retry_start_ns)
			kinet_sqp(qp)->retry_start_ns = now;
		if (now - kinet_sqp(qp)->retry_start_ns < limit * 1000000ull)
			return false;
		kinet_sqp(qp)->sq_ci += nbb;
		kinet_sqp(qp)->retry_start_ns = 0;
		kinet_engine_qp_fail(
			qp, res.syndrome,
			res.syndrome == KINET_SYND_TRANSPORT_RETRY_EXC_ERR ? KINET_VENDOR_SYND_PEER_DEAD : 0,
			op.opcode, op.wqe_counter);
		return false;
	}
	case KINET_EXEC_PENDING: {
		struct kinet_pending p = {
			.wqe_counter = op.wqe_counter,
			.wqe_opcode = op.opcode,
			.signaled = (op.fm_ce_se & KINET_WQE_CTRL_CQ_UPDATE) != 0,
			.byte_cnt = res.byte_cnt,
			.resp_qp = res.resp_qp,
			.resp_cq = res.resp_cq,
			.resp_cqe = res.resp_cqe,
			.token = res.token,
		};
		kinet_sqp(qp)->retry_start_ns = 0;
		kinet_sqp(qp)->sq_ci += nbb;
		if (kinet_pending_push(t, qp, &p, res.tracked_by_transport)) {
			/* Could not track it (out of memory): wait for it right
			 * here; transports bound every operation in time. */
			uint8_t syndrome = 0;

			if (res.tracked_by_transport)
				while (!kinet_sqp(qp)->transport->op_done(qp, res.token, &syndrome))
					sched_yield();
			else
				kinet_engine_copy_sync(t); /* its copies, and earlier ones */
			if (syndrome) {
				kinet_engine_qp_fail(qp, syndrome, 0, op.opcode, op.wqe_counter);
				complete_responder(&res);
				return false;
			}
			complete_requester(qp, &op, res.byte_cnt);
			complete_responder(&res);
		}
		return true;
	}
	default:
		kinet_sqp(qp)->retry_start_ns = 0;
		kinet_sqp(qp)->sq_ci += nbb;
		complete_requester(qp, &op, res.byte_cnt);
		complete_responder(&res);
		return true;
	}
}

/* Error state: every WQE posted and not executed, and every receive WQE
 * not consumed, completes with WR_FLUSH_ERR.  Flushes wait for CQ room
 * rather than overrun it. */
static int flush(struct kinet_qp *qp)
{
	int work = 0;

	while (kinet_sqp(qp)->sq_ci < kinet_sqp(qp)->sq_seen_pi) {
		const struct kinet_wqe_ctrl_seg *ctrl = (const void *)wqe_unit(qp, kinet_sqp(qp)->sq_ci, 0);
		uint32_t ds = kinet_wqe_ctrl_ds(ctrl);
		uint64_t nbb = ds ? kinet_wqe_bbs(ds) : 1;
		struct kinet_cqe_desc d = {
			.cqe_opcode = KINET_CQE_REQ_ERR,
			.wqe_opcode = kinet_wqe_ctrl_opcode(ctrl),
			.syndrome = KINET_SYND_WR_FLUSH_ERR,
			.wqe_counter = (uint16_t)kinet_sqp(qp)->sq_ci,
			.qpn = qp->qpn,
		};

		if (kinet_cq_write(qp->attr.send_cq, &d, true) == -EAGAIN)
			break;
		if (nbb > kinet_sqp(qp)->sq_seen_pi - kinet_sqp(qp)->sq_ci)
			nbb = kinet_sqp(qp)->sq_seen_pi - kinet_sqp(qp)->sq_ci;
		kinet_sqp(qp)->sq_ci += nbb;
		work++;
	}
	if (work && kinet_sqp(qp)->raw)
		kinet_eth_tx_failed(qp, (uint32_t)work);
	if (!qp->rq)
		return work;
	pthread_mutex_lock(&kinet_sqp(qp)->rq_lock);
	uint16_t index;
	while (kinet_qp_rq_peek(qp, &index)) {
		struct kinet_cqe_desc d = {
			.cqe_opcode = KINET_CQE_RESP_ERR,
			.syndrome = KINET_SYND_WR_FLUSH_ERR,
			.wqe_counter = index,
			.qpn = qp->qpn,
		};
		if (kinet_cq_write(qp->attr.recv_cq, &d, true) == -EAGAIN)
			break;
		kinet_qp_rq_consume(qp);
		work++;
	}
	pthread_mutex_unlock(&kinet_sqp(qp)->rq_lock);
	return work;
}

int kinet_engine_progress_qp(struct kinet_engine_thread *t, struct kinet_qp *qp)
{
	int work = 0;
	int state = atomic_load_explicit(&qp->state, memory_order_acquire);

	if (kinet_sqp(qp)->npending)
		work += kinet_pending_reap(t, qp);
	if (state != KINET_QPS_RTS && state != KINET_QPS_ERR)
		return work; /* hardware ignores the doorbells of such a QP */
	kinet_engine_read_pi(qp);
	if (state == KINET_QPS_ERR) {
		if (kinet_sqp(qp)->npending)
			return work;
		int flushed = flush(qp);

		__atomic_store_n(&t->stats.wqes, t->stats.wqes + (uint64_t)flushed, __ATOMIC_RELAXED);
		return work + flushed;
	}
	if (kinet_sqp(qp)->sq_ci == kinet_sqp(qp)->sq_seen_pi)
		return work;
	/* The device wrote these blocks, so they are not in this core's cache:
	 * start the misses of the batch together rather than one per WQE. */
	for (uint64_t i = kinet_sqp(qp)->sq_ci;
	     i < kinet_sqp(qp)->sq_seen_pi && i < kinet_sqp(qp)->sq_ci + 16; i++)
		__builtin_prefetch(wqe_unit(qp, i, 0));
	/* One read lock of the registration table, and (in the transport) one
	 * look-up of the target, for the whole batch rather than per WQE: they
	 * are shared cache lines every engine thread would bounce. */
	kinet_mr_table_rdlock(qp->ctx);
	int executed = 0;
	for (; executed < PASS_BUDGET && kinet_sqp(qp)->sq_ci < kinet_sqp(qp)->sq_seen_pi; executed++) {
		if (atomic_load_explicit(&qp->state, memory_order_acquire) != KINET_QPS_RTS)
			break;
		if (!execute_one(t, qp))
			break;
	}
	/* The WQEs executed, not the completions reaped above (each WQE
	 * counts once, also when a transport completes it later). */
	__atomic_store_n(&t->stats.wqes, t->stats.wqes + (uint64_t)executed, __ATOMIC_RELAXED);
	work += executed;
	kinet_pending_seal(t, qp);
	if (kinet_sqp(qp)->transport->batch_end)
		kinet_sqp(qp)->transport->batch_end(qp);
	kinet_mr_table_unlock(qp->ctx);
	return work;
}

void kinet_engine_drain_qp(struct kinet_engine_thread *t, struct kinet_qp *qp)
{
	if (kinet_sqp(qp)->npending) {
		kinet_engine_copy_sync(t);
		kinet_pending_drop_all(t, qp);
	}
}
