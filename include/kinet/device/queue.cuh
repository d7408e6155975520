/*
 * kinet device API: send queue, completion queue and receive queue
 * primitives (the low level), and the progress engine the high level uses.
 *
 * Counters (struct kinet_dev_qp, GPU memory, device state):
 *   sq_reserved  BBs handed out (CAS: only when there is room)
 *   sq_ready     BBs written and rung, in order ("my turn" = sq_ready == start)
 *   sq_done      BBs known complete from CQEs (set by the CQ poller)
 *   sq_reserved - sq_done <= depth always: a slot is reused only after the
 *   WQE that used it is known complete.
 *
 * Doorbell (kinet_dev_sq_ring), per qp->db_mode:
 *   CPU: release fence (sys) -> atomic max of the 64-bit PI into *db_cpu_pi.
 *   GPU: release fence (sys) -> dbrec[SEND] = be32(pi & 0xffff) -> full fence
 *        (sys) -> 8-byte store of the last WQE's first 8 bytes to *uar_db.
 *   BF:  as GPU up to the fence, then bytes 8..63 of the last WQE to the BF
 *        window, full fence (sys), then bytes 0..7 (the soft NIC takes a
 *        change of the first 8 bytes as the doorbell, then checks the rest).
 * Only the poster whose turn it is rings, so doorbell values only grow.
 */
#ifndef KINET_DEVICE_QUEUE_CUH
#define KINET_DEVICE_QUEUE_CUH

#include "kinet/device/platform.cuh"
#include "kinet/device/types.h"
#include "kinet/device/wqe.cuh"
#include "kinet/kinet.h"
#include "kinet/wire.h"

/* Used when a descriptor carries timeout_ns == 0: never wait forever. */
#ifndef KINET_DEV_DEFAULT_TIMEOUT_NS
#define KINET_DEV_DEFAULT_TIMEOUT_NS (10ull * 1000000000ull)
#endif

/* Set to 1 to publish the CPU-mode producer index with a release store
 * instead of an atomic max (equivalent: posters ring in order). */
#ifndef KINET_DEV_CPU_DB_PLAIN_STORE
#define KINET_DEV_CPU_DB_PLAIN_STORE 0
#endif

/* sq_error / rq_error hold the first error syndrome | this flag. */
#define KINET_DEV_ERROR_FLAG 0x100u

/* ---- time bounds ---- */

struct kinet_dev_deadline {
	uint64_t start; /* 0 until the first check */
	uint64_t limit;
	uint32_t iter;
};

KINET_DEV_FN uint64_t kinet_dev_qp_timeout_ns(const struct kinet_dev_qp *qp)
{
	return qp && qp->timeout_ns ? qp->timeout_ns : KINET_DEV_DEFAULT_TIMEOUT_NS;
}

KINET_DEV_FN void kinet_dev_deadline_init(struct kinet_dev_deadline *d, uint64_t timeout_ns)
{
	d->start = 0;
	d->limit = timeout_ns;
	d->iter = 0;
}

/* Relaxes one spin iteration; 1 once the time is up. */
KINET_DEV_FN int kinet_dev_deadline_expired(struct kinet_dev_deadline *d)
{
	kinet_dev_relax(d->iter);
	d->iter++;
	uint64_t now = kinet_dev_now_ns();
	if (!d->start) {
		d->start = now ? now : 1;
		return 0;
	}
	return now - d->start > d->limit;
}

/* ---- errors ---- */

/* Records the context's first device error (claim with a CAS, fill, then
 * publish `valid` with a system-scope release so the host sees it whole). */
KINET_DEV_FN void kinet_dev_record_error(struct kinet_dev_error *e, int status, uint32_t qpn,
					 uint32_t syndrome, uint32_t opcode, uint32_t wqe_counter)
{
	if (!e || kinet_dev_load_relaxed_u32(&e->claimed))
		return;
	if (kinet_dev_atomic_cas_u32(&e->claimed, 0, 1) != 0)
		return;
	volatile struct kinet_dev_error *v = e;
	v->status = status;
	v->qpn = qpn;
	v->syndrome = syndrome;
	v->opcode = opcode;
	v->wqe_counter = wqe_counter;
	kinet_dev_store_release_u32_sys(&e->valid, 1);
}

KINET_DEV_FN int kinet_dev_qp_timed_out(struct kinet_dev_qp *qp)
{
	kinet_dev_record_error(qp->err, -ETIMEDOUT, qp->qpn, 0, 0, 0);
	return ETIMEDOUT;
}

/* Sticky syndrome of the first error CQE on the send queue (0: none). */
KINET_DEV_FN uint32_t kinet_dev_qp_error(const struct kinet_dev_qp *qp)
{
	uint32_t e = kinet_dev_load_relaxed_u32(&qp->sq_error);
	return e ? e & 0xffu : 0;
}

/* Same for the receive queue. */
KINET_DEV_FN uint32_t kinet_dev_qp_recv_error(const struct kinet_dev_qp *qp)
{
	uint32_t e = kinet_dev_load_relaxed_u32(&qp->rq_error);
	return e ? e & 0xffu : 0;
}

/* 64-bit index of a 16-bit counter, relative to base (the oldest index that
 * can still complete; at most depth <= 32768 entries are outstanding). */
KINET_DEV_FN uint64_t kinet_dev_extend16(uint64_t base, uint16_t v)
{
	uint64_t x = base + (uint16_t)(v - (uint16_t)base);
	if (x - base >= 0x8000u && x >= 0x10000u)
		x -= 0x10000u; /* an entry just below base: never jump ahead */
	return x;
}

/* ---- completion queue, low level (one consumer; the caller orders) ---- */

/* 0 and *cqe when the CQE at consumer index ci is ready (after an acquire
 * fence: the entry and the data it reports can be read), else EAGAIN. */
KINET_DEV_FN int kinet_dev_cq_poll_at(struct kinet_dev_cq *cq, uint64_t ci, struct kinet_cqe64 **cqe)
{
	struct kinet_cqe64 *c = &cq->cqes[ci & cq->mask];
	uint8_t op_own = kinet_dev_load_volatile_u8(&c->op_own);
	if ((op_own >> 4) == KINET_CQE_INVALID || (op_own & 1) != kinet_cqe_sw_owner(ci, cq->log_depth))
		return EAGAIN;
	kinet_dev_fence_acquire_sys(); /* owner byte, then the rest of the CQE and the data */
	*cqe = c;
	return 0;
}

/* Waits up to timeout_ns for the CQE at ci: 0 or ETIMEDOUT. */
KINET_DEV_FN int kinet_dev_cq_wait_at(struct kinet_dev_cq *cq, uint64_t ci, uint64_t timeout_ns,
				      struct kinet_cqe64 **cqe)
{
	struct kinet_dev_deadline d;
	kinet_dev_deadline_init(&d, timeout_ns);
	while (kinet_dev_cq_poll_at(cq, ci, cqe) != 0)
		if (kinet_dev_deadline_expired(&d))
			return ETIMEDOUT;
	return 0;
}

/* Hands the CQEs before next_ci back to the NIC: cq->ci, then the 24-bit
 * consumer index in the doorbell record (system-scope release: the CQE
 * reads are done before the engine may overwrite the entries). */
KINET_DEV_FN void kinet_dev_cq_consume(struct kinet_dev_cq *cq, uint64_t next_ci)
{
	kinet_dev_store_relaxed_u64(&cq->ci, next_ci);
	kinet_dev_store_release_u32_sys(&cq->dbrec[KINET_CQ_DBR_CI],
					kinet_be32((uint32_t)next_ci & KINET_CQ_CI_MASK));
}

/* CQE fields (volatile reads: the NIC writes the ring). */
KINET_DEV_FN uint8_t kinet_dev_cqe_opcode(const struct kinet_cqe64 *cqe)
{
	return (uint8_t)(kinet_dev_load_volatile_u8(&cqe->op_own) >> 4);
}
/* 0 for a good CQE, else the PRM syndrome. */
KINET_DEV_FN uint32_t kinet_dev_cqe_status(const struct kinet_cqe64 *cqe)
{
	uint8_t op = kinet_dev_cqe_opcode(cqe);
	if (op != KINET_CQE_REQ_ERR && op != KINET_CQE_RESP_ERR)
		return 0;
	return kinet_dev_load_volatile_u8(&((const struct kinet_err_cqe *)(const void *)cqe)->syndrome);
}
KINET_DEV_FN uint16_t kinet_dev_cqe_wqe_counter(const struct kinet_cqe64 *cqe)
{
	return kinet_be16(*(const volatile uint16_t *)&cqe->wqe_counter);
}
KINET_DEV_FN uint32_t kinet_dev_cqe_byte_len(const struct kinet_cqe64 *cqe)
{
	return kinet_be32(*(const volatile uint32_t *)&cqe->byte_cnt);
}
/* Immediate, host order. */
KINET_DEV_FN uint32_t kinet_dev_cqe_imm(const struct kinet_cqe64 *cqe)
{
	return kinet_be32(*(const volatile uint32_t *)&cqe->imm_inval_pkey);
}
/* Opcode of the WQE a requester (error) CQE reports. */
KINET_DEV_FN uint8_t kinet_dev_cqe_wqe_opcode(const struct kinet_cqe64 *cqe)
{
	return (uint8_t)(kinet_be32(*(const volatile uint32_t *)&cqe->sop_drop_qpn) >> 24);
}

/* ---- send-queue progress (high-level CQ poller) ---- */

/* Consumes every ready CQE of the QP's (exclusive) send CQ, in order, if no
 * other thread is doing it: good CQEs move sq_done to their WQE index + 1;
 * the first error CQE sets sq_error_idx, sq_error (syndrome | 0x100) and the
 * context's error record, and also moves sq_done past it (every later WQE
 * completes with a flush error).  Returns the number of CQEs consumed. */
KINET_DEV_FN int kinet_dev_qp_progress(struct kinet_dev_qp *qp)
{
	struct kinet_dev_cq *cq = qp->send_cq;
	if (kinet_dev_load_relaxed_u32(&cq->poll_lock) != 0 ||
	    kinet_dev_atomic_cas_u32(&cq->poll_lock, 0, 1) != 0)
		return 0;
	kinet_dev_fence_gpu(); /* acquire: ci and sq_done as the last holder left them */
	uint64_t ci = kinet_dev_load_relaxed_u64(&cq->ci);
	uint64_t done = kinet_dev_load_relaxed_u64(&qp->sq_done);
	uint32_t depth = cq->mask + 1;
	uint32_t n = 0;
	struct kinet_cqe64 *cqe;
	while (n < depth && kinet_dev_cq_poll_at(cq, ci, &cqe) == 0) {
		uint16_t wc = kinet_dev_cqe_wqe_counter(cqe);
		uint64_t widx = kinet_dev_extend16(done, wc);
		uint32_t synd = kinet_dev_cqe_status(cqe);
		if (kinet_dev_cqe_opcode(cqe) == KINET_CQE_REQ_ERR ||
		    kinet_dev_cqe_opcode(cqe) == KINET_CQE_RESP_ERR) {
			if (!kinet_dev_load_relaxed_u32(&qp->sq_error)) {
				kinet_dev_store_relaxed_u64(&qp->sq_error_idx, widx);
				kinet_dev_fence_gpu(); /* index before the flag */
				kinet_dev_store_relaxed_u32(&qp->sq_error, synd | KINET_DEV_ERROR_FLAG);
				kinet_dev_record_error(qp->err, -EIO, qp->qpn, synd,
						       kinet_dev_cqe_wqe_opcode(cqe), wc);
			}
		}
		if (widx + 1 > done)
			done = widx + 1;
		ci++;
		n++;
	}
	if (n) {
		kinet_dev_store_release_u64_gpu(&qp->sq_done, done);
		kinet_dev_cq_consume(cq, ci);
	}
	kinet_dev_fence_gpu(); /* release: our ci/sq_done before the unlock */
	kinet_dev_atomic_exch_u32(&cq->poll_lock, 0);
	return (int)n;
}

/* ---- send queue, low level ---- */

KINET_DEV_FN uint32_t kinet_dev_sq_depth(const struct kinet_dev_qp *qp)
{
	return qp->sq_mask + 1;
}

/* Reserves n consecutive basic blocks (1 <= n <= depth); *idx is the first.
 * Claims only when the slots are free (sq_reserved + n - sq_done <= depth),
 * making progress on the send CQ while it waits, so a failed call holds
 * nothing: EIO once the send queue saw an error, ETIMEDOUT after the QP's
 * timeout, EINVAL for a bad n.  Thread-safe. */
KINET_DEV_FN int kinet_dev_sq_reserve(struct kinet_dev_qp *qp, uint32_t n, uint64_t *idx)
{
	uint64_t depth = kinet_dev_sq_depth(qp);
	if (n == 0 || n > depth)
		return EINVAL;
	struct kinet_dev_deadline d;
	kinet_dev_deadline_init(&d, kinet_dev_qp_timeout_ns(qp));
	uint64_t r = kinet_dev_load_relaxed_u64(&qp->sq_reserved);
	for (;;) {
		if (kinet_dev_load_relaxed_u32(&qp->sq_error))
			return EIO;
		uint64_t done = kinet_dev_load_acquire_u64_gpu(&qp->sq_done);
		if (r + n - done <= depth) {
			uint64_t old = kinet_dev_atomic_cas_u64(&qp->sq_reserved, r, r + n);
			if (old == r) {
				*idx = r;
				return 0;
			}
			r = old;
			continue;
		}
		kinet_dev_qp_progress(qp);
		if (kinet_dev_deadline_expired(&d)) /* checked even while CQEs flow: no starvation */
			return kinet_dev_qp_timed_out(qp);
		r = kinet_dev_load_relaxed_u64(&qp->sq_reserved);
	}
}

/* Rings the doorbell for producer index pi (BBs posted); last holds the 64
 * bytes of the WQE at pi - 1 (NULL: read back from the ring).  The WQE
 * stores must precede it in this thread, or in the group before a barrier. */
KINET_DEV_FN void kinet_dev_sq_ring(struct kinet_dev_qp *qp, uint64_t pi, const uint64_t *last)
{
	if (qp->db_mode == KINET_DB_GPU || qp->db_mode == KINET_DB_BF) {
		uint64_t q[8];
		if (last) {
			for (int i = 0; i < 8; i++)
				q[i] = last[i];
		} else {
			kinet_dev_wqe_load(qp, pi - 1, q);
		}
		/* 1. WQE stores before the doorbell record. */
		kinet_dev_fence_release_sys();
		kinet_dev_store_relaxed_u32(&qp->dbrec[KINET_DBR_SEND], kinet_be32((uint32_t)pi & 0xffffu));
		/* 2. doorbell record before the doorbell register. */
		kinet_dev_fence_sys();
		if (qp->db_mode == KINET_DB_GPU) {
			kinet_dev_store_relaxed_u64(qp->uar_db, q[0]);
		} else {
			uint64_t *bf = qp->bf ? qp->bf : qp->uar_db;
			for (int i = 1; i < 8; i++)
				kinet_dev_store_relaxed_u64(&bf[i], q[i]);
			/* 3. bytes 8..63 before the first 8 (the soft NIC's trigger). */
			kinet_dev_fence_sys();
			kinet_dev_store_relaxed_u64(&bf[0], q[0]);
		}
	} else {
		/* CPU mode: WQE stores before the producer index. */
		kinet_dev_fence_release_sys();
#if KINET_DEV_CPU_DB_PLAIN_STORE
		kinet_dev_store_release_u64_sys(qp->db_cpu_pi, pi);
#else
		kinet_dev_atomic_max_u64(qp->db_cpu_pi, pi);
#endif
	}
}

/* Low level: publishes slots [idx, idx+n) as ready (no ordering check: the
 * caller orders).  kinet_dev_sq_submit() then rings up to sq_ready. */
KINET_DEV_FN void kinet_dev_sq_mark_ready(struct kinet_dev_qp *qp, uint64_t idx, uint32_t n)
{
	kinet_dev_store_release_u64_gpu(&qp->sq_ready, idx + n);
}

/* Low level: rings the doorbell for everything marked ready (the WQE at
 * sq_ready - 1 must be a one-BB WQE, as all the builders make). */
KINET_DEV_FN void kinet_dev_sq_submit(struct kinet_dev_qp *qp)
{
	uint64_t pi = kinet_dev_load_acquire_u64_gpu(&qp->sq_ready);
	if (pi)
		kinet_dev_sq_ring(qp, pi, NULL);
}

/* Thread-safe in-order commit of reserved slots [idx, idx+n) whose WQEs are
 * written: waits (bounded) until every earlier reservation is committed,
 * rings the doorbell with pi = idx + n, then publishes sq_ready = idx + n.
 * last: the WQE at idx + n - 1 (or NULL).  0 or ETIMEDOUT (then an earlier
 * poster never committed and the QP cannot be used any more). */
KINET_DEV_FN int kinet_dev_sq_commit(struct kinet_dev_qp *qp, uint64_t idx, uint32_t n, const uint64_t *last)
{
	struct kinet_dev_deadline d;
	kinet_dev_deadline_init(&d, kinet_dev_qp_timeout_ns(qp));
	while (kinet_dev_load_acquire_u64_gpu(&qp->sq_ready) != idx)
		if (kinet_dev_deadline_expired(&d))
			return kinet_dev_qp_timed_out(qp);
	kinet_dev_sq_ring(qp, idx + n, last);
	kinet_dev_store_release_u64_gpu(&qp->sq_ready, idx + n);
	return 0;
}

/* ---- tickets ---- */

/* Ticket of an operation = index + 1 of its last WQE (0: nothing to wait
 * for).  0 when complete, EIO when it (or an earlier WQE) failed, EAGAIN
 * when not yet.  Non-blocking; makes progress. */
KINET_DEV_FN int kinet_dev_test(struct kinet_dev_qp *qp, uint64_t ticket)
{
	for (int pass = 0; pass < 2; pass++) {
		uint64_t done = kinet_dev_load_acquire_u64_gpu(&qp->sq_done);
		if (kinet_dev_load_acquire_u32_gpu(&qp->sq_error) &&
		    ticket > kinet_dev_load_relaxed_u64(&qp->sq_error_idx))
			return EIO;
		if (done >= ticket) {
			kinet_dev_fence_acquire_sys(); /* completion, then the data it covers */
			return 0;
		}
		if (pass == 0)
			kinet_dev_qp_progress(qp);
	}
	return EAGAIN;
}

/* Waits for a ticket, bounded by the QP timeout: 0, EIO (error CQE; see
 * kinet_dev_qp_error), ETIMEDOUT (also recorded in the context). */
KINET_DEV_FN int kinet_dev_wait(struct kinet_dev_qp *qp, uint64_t ticket)
{
	struct kinet_dev_deadline d;
	kinet_dev_deadline_init(&d, kinet_dev_qp_timeout_ns(qp));
	for (;;) {
		int st = kinet_dev_test(qp, ticket);
		if (st != EAGAIN)
			return st;
		if (kinet_dev_deadline_expired(&d))
			return kinet_dev_qp_timed_out(qp);
	}
}

/* ---- receive queue ---- */

KINET_DEV_FN uint32_t kinet_dev_rq_depth(const struct kinet_dev_qp *qp)
{
	return qp->rq ? qp->rq_mask + 1 : 0;
}

KINET_DEV_FN void *kinet_dev_rq_wqe(const struct kinet_dev_qp *qp, uint64_t idx)
{
	return qp->rq + (size_t)(idx & qp->rq_mask) * qp->rq_stride;
}

/* Low level: writes receive WQE idx with one scatter entry (and the
 * end marker {0, KINET_INVALID_LKEY, 0} when the WQE has room for more). */
KINET_DEV_FN void kinet_dev_rq_prep(struct kinet_dev_qp *qp, uint64_t idx, void *laddr, uint32_t lkey,
				    uint32_t size)
{
	struct kinet_wqe_data_seg *seg = (struct kinet_wqe_data_seg *)kinet_dev_rq_wqe(qp, idx);
	uint32_t nseg = qp->rq_stride / KINET_WQE_DS_SIZE;
	if (qp->rq_max_sge && qp->rq_max_sge < nseg)
		nseg = qp->rq_max_sge;
	uint32_t i = 0;
	if (size)
		kinet_wqe_set_data(&seg[i++], (uint64_t)(uintptr_t)laddr, size, lkey);
	if (i < nseg)
		kinet_wqe_set_data(&seg[i], 0, 0, KINET_INVALID_LKEY);
}

/* Reserves n receive WQEs without waiting: EAGAIN when the RQ is full
 * (receives free up as kinet_dev_recv consumes completions), EINVAL
 * without a receive queue, EIO after a receive error.  Thread-safe. */
KINET_DEV_FN int kinet_dev_rq_reserve(struct kinet_dev_qp *qp, uint32_t n, uint64_t *idx)
{
	uint64_t depth = kinet_dev_rq_depth(qp);
	if (!depth || n == 0 || n > depth)
		return EINVAL;
	uint64_t r = kinet_dev_load_relaxed_u64(&qp->rq_reserved);
	for (;;) {
		if (kinet_dev_load_relaxed_u32(&qp->rq_error))
			return EIO;
		uint64_t done = kinet_dev_load_acquire_u64_gpu(&qp->rq_done);
		if (r + n - done > depth) {
			uint64_t again = kinet_dev_load_relaxed_u64(&qp->rq_reserved);
			if (again == r)
				return EAGAIN;
			r = again;
			continue;
		}
		uint64_t old = kinet_dev_atomic_cas_u64(&qp->rq_reserved, r, r + n);
		if (old == r) {
			*idx = r;
			return 0;
		}
		r = old;
	}
}

/* Low level: receive doorbell for pi receive WQEs posted (release fence,
 * then the 16-bit head in dbrec[KINET_DBR_RECV]). */
KINET_DEV_FN void kinet_dev_rq_ring(struct kinet_dev_qp *qp, uint64_t pi)
{
	kinet_dev_fence_release_sys();
	kinet_dev_store_release_u32_sys(&qp->dbrec[KINET_DBR_RECV], kinet_be32((uint32_t)pi & 0xffffu));
}

/* In-order commit of receive WQEs [idx, idx+n), as kinet_dev_sq_commit. */
KINET_DEV_FN int kinet_dev_rq_commit(struct kinet_dev_qp *qp, uint64_t idx, uint32_t n)
{
	struct kinet_dev_deadline d;
	kinet_dev_deadline_init(&d, kinet_dev_qp_timeout_ns(qp));
	while (kinet_dev_load_acquire_u64_gpu(&qp->rq_ready) != idx)
		if (kinet_dev_deadline_expired(&d))
			return kinet_dev_qp_timed_out(qp);
	kinet_dev_rq_ring(qp, idx + n);
	kinet_dev_store_release_u64_gpu(&qp->rq_ready, idx + n);
	return 0;
}

/* Takes the next receive completion of the QP's (exclusive) receive CQ, if
 * there is one: 0 with its byte count, immediate (host order, 0 if none)
 * and receive WQE index; EIO for an error completion (or none left after
 * an error); EAGAIN when none is ready.  Thread-safe (one taker at a time;
 * each completion goes to exactly one caller).  Outputs may be NULL. */
KINET_DEV_FN int kinet_dev_rq_poll(struct kinet_dev_qp *qp, uint32_t *byte_len, uint32_t *imm,
				   uint64_t *index)
{
	struct kinet_dev_cq *cq = qp->recv_cq;
	if (!cq || !qp->rq)
		return EINVAL;
	if (kinet_dev_atomic_cas_u32(&cq->poll_lock, 0, 1) != 0)
		return EAGAIN;
	kinet_dev_fence_gpu();
	int st;
	uint64_t ci = kinet_dev_load_relaxed_u64(&cq->ci);
	struct kinet_cqe64 *cqe;
	if (kinet_dev_cq_poll_at(cq, ci, &cqe) == 0) {
		uint64_t done = kinet_dev_load_relaxed_u64(&qp->rq_done);
		uint16_t wc = kinet_dev_cqe_wqe_counter(cqe);
		uint64_t widx = kinet_dev_extend16(done, wc);
		uint8_t op = kinet_dev_cqe_opcode(cqe);
		if (op == KINET_CQE_RESP_ERR || op == KINET_CQE_REQ_ERR) {
			uint32_t synd = kinet_dev_cqe_status(cqe);
			if (!kinet_dev_load_relaxed_u32(&qp->rq_error)) {
				kinet_dev_store_relaxed_u64(&qp->rq_error_idx, widx);
				kinet_dev_fence_gpu();
				kinet_dev_store_relaxed_u32(&qp->rq_error, synd | KINET_DEV_ERROR_FLAG);
				kinet_dev_record_error(qp->err, -EIO, qp->qpn, synd, 0, wc);
			}
			st = EIO;
		} else {
			if (byte_len)
				*byte_len = kinet_dev_cqe_byte_len(cqe);
			if (imm)
				*imm = (op == KINET_CQE_RESP_SEND_IMM || op == KINET_CQE_RESP_WR_IMM)
					       ? kinet_dev_cqe_imm(cqe)
					       : 0;
			st = 0;
		}
		if (index)
			*index = widx;
		if (widx + 1 > done)
			kinet_dev_store_release_u64_gpu(&qp->rq_done, widx + 1);
		kinet_dev_cq_consume(cq, ci + 1);
	} else {
		st = kinet_dev_load_relaxed_u32(&qp->rq_error) ? EIO : EAGAIN;
	}
	kinet_dev_fence_gpu();
	kinet_dev_atomic_exch_u32(&cq->poll_lock, 0);
	return st;
}

#endif /* KINET_DEVICE_QUEUE_CUH */
