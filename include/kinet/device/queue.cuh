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
 * How they are accessed depends on qp->sharing (kinet_dev_qp_scope):
 *   EXCLUSIVE  one thread (or a group's leader) at a time on each side (send,
 *              receive): plain loads and stores, no CAS, no in-order commit
 *              wait, no poll lock;
 *   CTA        threads of one block: block-scope atomics, acquire/release;
 *   GPU        any thread: device-scope atomics, acquire/release.
 * Host-memory ordering (WQEs, doorbells, CQEs) is system scope in all modes.
 *
 * Doorbell (kinet_dev_sq_ring), per qp->db_mode:
 *   CPU: release fence (sys) -> atomic max of the 64-bit PI into *db_cpu_pi.
 *   GPU: release fence (sys) -> dbrec[SEND] = be32(pi & 0xffff) -> release
 *        fence (sys) -> 8-byte store of the last WQE's first 8 bytes to *uar_db.
 *   BF:  release fence (sys) -> dbrec[SEND] -> bytes 8..63 of the last WQE to
 *        the BF window -> release fence (sys) -> bytes 0..7 (the soft NIC
 *        takes a change of the first 8 bytes as the doorbell, then reads the
 *        record and the rest of the window).
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

/* Set to 1 to make the send-CQ poller take a system-scope acquire fence
 * after every batch of CQEs, also when the batch only completes writes and
 * sends (which hand no data to the caller; see kinet_dev_cqe_covers_data). */
#ifndef KINET_DEV_ACQUIRE_ALL_CQES
#define KINET_DEV_ACQUIRE_ALL_CQES 0
#endif

/* kinet_dev_cq_consume publishes the consumer index once it has moved by
 * depth / KINET_DEV_CQ_PUBLISH_DIV (at least 1) since the last publication.
 * Must be >= 2 for the no-overrun argument (docs/DEVICE_API.md). */
#ifndef KINET_DEV_CQ_PUBLISH_DIV
#define KINET_DEV_CQ_PUBLISH_DIV 4u
#endif

/* sq_error / rq_error hold the first error syndrome | this flag. */
#define KINET_DEV_ERROR_FLAG 0x100u

/* ---- sharing scopes ---- */

#define KINET_DEV_SCOPE_THREAD 0 /* KINET_SHARE_EXCLUSIVE */
#define KINET_DEV_SCOPE_CTA 1	 /* KINET_SHARE_CTA */
#define KINET_DEV_SCOPE_GPU 2	 /* KINET_SHARE_GPU */

KINET_DEV_FN int kinet_dev_qp_scope(const struct kinet_dev_qp *qp)
{
	if (qp->sharing == KINET_SHARE_EXCLUSIVE)
		return KINET_DEV_SCOPE_THREAD;
	return qp->sharing == KINET_SHARE_CTA ? KINET_DEV_SCOPE_CTA : KINET_DEV_SCOPE_GPU;
}

/* Accesses to the descriptor's device counters (GPU memory) at a scope:
 * THREAD = plain (one user at a time), CTA = block scope, GPU = device. */
KINET_DEV_FN uint64_t kinet_dev_scoped_load_relaxed_u64(int scope, const uint64_t *p)
{
	return scope == KINET_DEV_SCOPE_THREAD ? *p : kinet_dev_load_relaxed_u64(p);
}
KINET_DEV_FN uint32_t kinet_dev_scoped_load_relaxed_u32(int scope, const uint32_t *p)
{
	return scope == KINET_DEV_SCOPE_THREAD ? *p : kinet_dev_load_relaxed_u32(p);
}
KINET_DEV_FN uint64_t kinet_dev_scoped_load_acquire_u64(int scope, const uint64_t *p)
{
	if (scope == KINET_DEV_SCOPE_THREAD)
		return *p;
	if (scope == KINET_DEV_SCOPE_CTA)
		return kinet_dev_load_acquire_u64_cta(p);
	return kinet_dev_load_acquire_u64_gpu(p);
}
KINET_DEV_FN uint32_t kinet_dev_scoped_load_acquire_u32(int scope, const uint32_t *p)
{
	if (scope == KINET_DEV_SCOPE_THREAD)
		return *p;
	if (scope == KINET_DEV_SCOPE_CTA)
		return kinet_dev_load_acquire_u32_cta(p);
	return kinet_dev_load_acquire_u32_gpu(p);
}
KINET_DEV_FN void kinet_dev_scoped_store_relaxed_u64(int scope, uint64_t *p, uint64_t v)
{
	if (scope == KINET_DEV_SCOPE_THREAD)
		*p = v;
	else
		kinet_dev_store_relaxed_u64(p, v);
}
KINET_DEV_FN void kinet_dev_scoped_store_relaxed_u32(int scope, uint32_t *p, uint32_t v)
{
	if (scope == KINET_DEV_SCOPE_THREAD)
		*p = v;
	else
		kinet_dev_store_relaxed_u32(p, v);
}
KINET_DEV_FN void kinet_dev_scoped_store_release_u64(int scope, uint64_t *p, uint64_t v)
{
	if (scope == KINET_DEV_SCOPE_THREAD)
		*p = v;
	else if (scope == KINET_DEV_SCOPE_CTA)
		kinet_dev_store_release_u64_cta(p, v);
	else
		kinet_dev_store_release_u64_gpu(p, v);
}
/* After relaxed loads of the counters: an acquire of what they showed. */
KINET_DEV_FN void kinet_dev_scoped_fence_acquire(int scope)
{
	if (scope == KINET_DEV_SCOPE_CTA)
		kinet_dev_fence_cta();
	else if (scope == KINET_DEV_SCOPE_GPU)
		kinet_dev_fence_acquire_gpu();
}
/* Orders the counter accesses around it (no-op for THREAD). */
KINET_DEV_FN void kinet_dev_scoped_fence(int scope)
{
	if (scope == KINET_DEV_SCOPE_CTA)
		kinet_dev_fence_cta();
	else if (scope == KINET_DEV_SCOPE_GPU)
		kinet_dev_fence_gpu();
}
/* CAS for CTA and GPU (THREAD callers store instead). */
KINET_DEV_FN uint64_t kinet_dev_scoped_cas_u64(int scope, uint64_t *p, uint64_t expected, uint64_t desired)
{
	if (scope == KINET_DEV_SCOPE_CTA)
		return kinet_dev_atomic_cas_u64_cta(p, expected, desired);
	return kinet_dev_atomic_cas_u64(p, expected, desired);
}
KINET_DEV_FN uint32_t kinet_dev_scoped_cas_u32(int scope, uint32_t *p, uint32_t expected, uint32_t desired)
{
	if (scope == KINET_DEV_SCOPE_CTA)
		return kinet_dev_atomic_cas_u32_cta(p, expected, desired);
	return kinet_dev_atomic_cas_u32(p, expected, desired);
}

/* The poll lock of a CQ (CTA, GPU): 1 when taken.  An acquire fence at the
 * scope follows, so ci and the counters are as the last holder left them. */
KINET_DEV_FN int kinet_dev_cq_trylock(int scope, struct kinet_dev_cq *cq)
{
	if (scope == KINET_DEV_SCOPE_THREAD)
		return 1;
	if (kinet_dev_load_relaxed_u32(&cq->poll_lock) != 0 ||
	    kinet_dev_scoped_cas_u32(scope, &cq->poll_lock, 0, 1) != 0)
		return 0;
	kinet_dev_scoped_fence(scope);
	return 1;
}
KINET_DEV_FN void kinet_dev_cq_unlock(int scope, struct kinet_dev_cq *cq)
{
	if (scope == KINET_DEV_SCOPE_THREAD)
		return;
	kinet_dev_scoped_fence(scope); /* release: our ci / counters before the unlock */
	if (scope == KINET_DEV_SCOPE_CTA)
		kinet_dev_atomic_exch_u32_cta(&cq->poll_lock, 0);
	else
		kinet_dev_atomic_exch_u32(&cq->poll_lock, 0);
}

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

/* A CQE as device code sees it: decoded from one snapshot of the CQE's
 * last 32 bytes (never read field by field from host memory). */
struct kinet_dev_cqe {
	uint8_t opcode;		 /* KINET_CQE_* (op_own >> 4) */
	uint8_t syndrome;	 /* 0 for a good CQE, else the PRM syndrome */
	uint8_t vendor_syndrome; /* error CQEs (e.g. KINET_VENDOR_SYND_CQ_OVERRUN), else 0 */
	uint8_t wqe_opcode;	 /* requester CQEs: the WQE's KINET_WQE_OP_*; responder: 0 */
	uint16_t wqe_counter;	 /* WQE index (16 bits) */
	uint16_t pad;
	uint32_t byte_len; /* bytes (responder: received); 0 for error CQEs */
	uint32_t imm;	   /* immediate, host order (RESP_SEND_IMM / RESP_WR_IMM), else 0 */
	uint32_t qpn;
};

KINET_DEV_FN int kinet_dev_cqe_is_error(const struct kinet_dev_cqe *e)
{
	return e->opcode == KINET_CQE_REQ_ERR || e->opcode == KINET_CQE_RESP_ERR;
}

/* 1 when the CQE may report data the caller will read (RDMA read results,
 * atomic old values, received messages; an error, a NOP that may complete
 * earlier unsignalled reads): the consumer then needs a system-scope
 * acquire fence before that data is read.  Good requester completions of
 * writes and sends hand no data back. */
KINET_DEV_FN int kinet_dev_cqe_covers_data(const struct kinet_dev_cqe *e)
{
	if (KINET_DEV_ACQUIRE_ALL_CQES || e->opcode != KINET_CQE_REQ)
		return 1;
	switch (e->wqe_opcode) {
	case KINET_WQE_OP_RDMA_WRITE:
	case KINET_WQE_OP_RDMA_WRITE_IMM:
	case KINET_WQE_OP_SEND:
	case KINET_WQE_OP_SEND_IMM:
		return 0;
	default:
		return 1;
	}
}

/* Decodes a snapshot: q[0..1] = CQE bytes 48..63, q[2..3] = bytes 32..47
 * (only read when full).  Little-endian words of big-endian fields. */
KINET_DEV_FN void kinet_dev_cqe_decode(const uint64_t *q, int full, struct kinet_dev_cqe *out)
{
	uint8_t op = (uint8_t)(q[1] >> 60);
	int err = op == KINET_CQE_REQ_ERR || op == KINET_CQE_RESP_ERR;
	uint32_t opqpn = kinet_be32((uint32_t)q[1]); /* bytes 56..59 */
	out->opcode = op;
	out->syndrome = err ? (uint8_t)(q[0] >> 56) : 0;	/* byte 55 */
	out->vendor_syndrome = err ? (uint8_t)(q[0] >> 48) : 0; /* byte 54 */
	out->wqe_opcode = (uint8_t)(opqpn >> 24);
	out->wqe_counter = kinet_be16((uint16_t)(q[1] >> 32)); /* bytes 60..61 */
	out->pad = 0;
	out->qpn = opqpn & 0xffffffu;
	out->byte_len = full && !err ? kinet_be32((uint32_t)(q[3] >> 32)) : 0; /* bytes 44..47 */
	out->imm = full && (op == KINET_CQE_RESP_SEND_IMM || op == KINET_CQE_RESP_WR_IMM)
			   ? kinet_be32((uint32_t)(q[2] >> 32)) /* bytes 36..39 */
			   : 0;
}

/* The CQE at consumer index ci, read ONCE, without any fence: 0 and *out
 * when it belongs to software, else EAGAIN.  full = 0 skips byte_len and
 * imm (bytes 32..47; a requester CQE needs only bytes 48..63).
 *
 On the GPU, bytes 48..63 (op_own, wqe_counter, opcode/qpn, syndromes)
 * come from ONE 16-byte relaxed system-scope load: one PCIe read request,
 * ~2 us, instead of one per field.  Why a snapshot holding the new op_own
 * holds the new fields: the engine writes all fields of the CQE, then
 * op_own last with a release store (src/core/cq.c, cqe_publish); the host
 * serves one read request from one coherent copy of the cache line, so if
 * it returns the new op_own it returns the fields written before it.
 * Bytes 32..47 (byte_cnt, imm: receive CQEs only) are a second request,
 * issued after an acquire fence once op_own was seen: PCIe lets read
 * requests pass each other, so issuing both at once could return an older
 * byte_cnt beside a newer op_own.  The slot cannot change again before we
 * consume it (the engine only reuses a slot after the consumer index
 * passes it), so the snapshot is stable once valid.
 *
 * Under KINET_HOST_EMU: acquire load of op_own, then (when valid) the rest,
 * which the acquire orders after it (C11). */
KINET_DEV_FN int kinet_dev_cq_peek_at(struct kinet_dev_cq *cq, uint64_t ci, int full,
				      struct kinet_dev_cqe *out)
{
	const struct kinet_cqe64 *c = &cq->cqes[ci & cq->mask];
	uint64_t q[4] = {0, 0, 0, 0};
	uint8_t op_own;
#if defined(KINET_HOST_EMU)
	op_own = __atomic_load_n(&c->op_own, __ATOMIC_ACQUIRE);
	if ((op_own >> 4) == KINET_CQE_INVALID || (op_own & 1) != kinet_cqe_sw_owner(ci, cq->log_depth))
		return EAGAIN;
	memcpy(q, (const uint8_t *)c + 48, 16);
	if (full)
		memcpy(&q[2], (const uint8_t *)c + 32, 16);
#else
	kinet_dev_load_cqe_hi(c, q);
	op_own = (uint8_t)(q[1] >> 56);
	if ((op_own >> 4) == KINET_CQE_INVALID || (op_own & 1) != kinet_cqe_sw_owner(ci, cq->log_depth))
		return EAGAIN;
	if (full) {
		kinet_dev_fence_acquire_sys(); /* op_own, then the rest of the line */
		kinet_dev_load_cqe_lo(c, &q[2]);
	}
#endif
	kinet_dev_cqe_decode(q, full, out);
	return 0;
}

/* 0 and *out (every field) when the CQE at consumer index ci is ready, then
 * a system-scope acquire fence: the data the CQE reports (read results,
 * atomic old values, received bytes) can be read.  Else EAGAIN. */
KINET_DEV_FN int kinet_dev_cq_poll_at(struct kinet_dev_cq *cq, uint64_t ci, struct kinet_dev_cqe *out)
{
	if (kinet_dev_cq_peek_at(cq, ci, 1, out) != 0)
		return EAGAIN;
	kinet_dev_fence_acquire_sys();
	return 0;
}

/* Waits up to timeout_ns for the CQE at ci (as kinet_dev_cq_poll_at): 0 or
 * ETIMEDOUT. */
KINET_DEV_FN int kinet_dev_cq_wait_at(struct kinet_dev_cq *cq, uint64_t ci, uint64_t timeout_ns,
				      struct kinet_dev_cqe *out)
{
	struct kinet_dev_deadline d;
	kinet_dev_deadline_init(&d, timeout_ns);
	while (kinet_dev_cq_peek_at(cq, ci, 1, out) != 0)
		if (kinet_dev_deadline_expired(&d))
			return ETIMEDOUT;
	kinet_dev_fence_acquire_sys();
	return 0;
}

/* Writes consumer index ci to the CQ doorbell record now (system-scope
 * release: the CQE reads before it are done before the engine may reuse
 * the entries).  For CQs that can hold more than depth / 2 unconsumed CQEs
 * (not one of an exported QP), call it after every kinet_dev_cq_consume. */
KINET_DEV_FN void kinet_dev_cq_publish(struct kinet_dev_cq *cq, uint64_t ci)
{
	kinet_dev_store_release_u32_sys(&cq->dbrec[KINET_CQ_DBR_CI],
					kinet_be32((uint32_t)ci & KINET_CQ_CI_MASK));
	kinet_dev_store_relaxed_u64(&cq->ci_published, ci);
}

/* Publication threshold: depth / KINET_DEV_CQ_PUBLISH_DIV, at least 1. */
KINET_DEV_FN uint64_t kinet_dev_cq_publish_step(const struct kinet_dev_cq *cq)
{
	uint64_t step = ((uint64_t)cq->mask + 1) / KINET_DEV_CQ_PUBLISH_DIV;
	return step ? step : 1;
}

/* Hands the CQEs before next_ci back to the NIC: cq->ci = next_ci, and the
 * doorbell record (host memory, a system-scope release store) only once the
 * consumer index has moved by kinet_dev_cq_publish_step() since the last
 * publication.  The engine only reads the record to know free space; it
 * treats the CQ as full when pi - published >= depth - 1.  With at most
 * depth / 2 CQEs ever produced and not yet consumed (true for the CQs of an
 * exported QP: CQ depth > queue depth, both powers of two, and a queue slot
 * is reused only after its CQE is consumed), the engine sees at most
 * depth / 2 - 1 + step - 1 < depth - 1 in use: it never overruns.  See
 * docs/DEVICE_API.md, "Performance notes". */
KINET_DEV_FN void kinet_dev_cq_consume(struct kinet_dev_cq *cq, uint64_t next_ci)
{
	kinet_dev_store_relaxed_u64(&cq->ci, next_ci);
	if (next_ci - kinet_dev_load_relaxed_u64(&cq->ci_published) >= kinet_dev_cq_publish_step(cq))
		kinet_dev_cq_publish(cq, next_ci);
}

/* The same with the QP's scope (plain accesses for EXCLUSIVE). */
KINET_DEV_FN void kinet_dev_cq_consume_scoped(int scope, struct kinet_dev_cq *cq, uint64_t published,
					      uint64_t next_ci)
{
	kinet_dev_scoped_store_relaxed_u64(scope, &cq->ci, next_ci);
	if (next_ci - published >= kinet_dev_cq_publish_step(cq)) {
		kinet_dev_store_release_u32_sys(&cq->dbrec[KINET_CQ_DBR_CI],
						kinet_be32((uint32_t)next_ci & KINET_CQ_CI_MASK));
		kinet_dev_scoped_store_relaxed_u64(scope, &cq->ci_published, next_ci);
	}
}

/* ---- send-queue progress (high-level CQ poller) ---- */

/* Consumes ready CQEs of the QP's (exclusive) send CQ, in order, if no other
 * thread is doing it, until sq_done >= target (or none is ready): good CQEs
 * move sq_done to their WQE index + 1; the first error CQE sets
 * sq_error_idx, sq_error (syndrome | 0x100) and the context's error record,
 * and also moves sq_done past it (every later WQE completes with a flush
 * error).  Stopping at the target saves a PCIe read of the next (empty)
 * slot.  When a consumed CQE covers data (kinet_dev_cqe_covers_data), one
 * system-scope acquire fence follows the batch, before sq_done is
 * published: whoever sees the new sq_done (acquire) may read that data.
 * Returns the number of CQEs consumed. */
KINET_DEV_FN int kinet_dev_qp_progress_until(struct kinet_dev_qp *qp, uint64_t target)
{
	struct kinet_dev_cq *cq = qp->send_cq;
	int scope = kinet_dev_qp_scope(qp);
	if (!kinet_dev_cq_trylock(scope, cq))
		return 0;
	uint64_t ci = kinet_dev_scoped_load_relaxed_u64(scope, &cq->ci);
	uint64_t pub = kinet_dev_scoped_load_relaxed_u64(scope, &cq->ci_published);
	uint64_t done = kinet_dev_scoped_load_relaxed_u64(scope, &qp->sq_done);
	uint32_t depth = cq->mask + 1;
	uint32_t n = 0;
	int acquire = 0;
	struct kinet_dev_cqe e;
	while (n < depth && done < target && kinet_dev_cq_peek_at(cq, ci, 0, &e) == 0) {
		uint64_t widx = kinet_dev_extend16(done, e.wqe_counter);
		acquire |= kinet_dev_cqe_covers_data(&e);
		if (kinet_dev_cqe_is_error(&e)) {
			if (!kinet_dev_scoped_load_relaxed_u32(scope, &qp->sq_error)) {
				kinet_dev_scoped_store_relaxed_u64(scope, &qp->sq_error_idx, widx);
				kinet_dev_scoped_fence(scope); /* index before the flag */
				kinet_dev_scoped_store_relaxed_u32(scope, &qp->sq_error,
								   e.syndrome | KINET_DEV_ERROR_FLAG);
				kinet_dev_record_error(qp->err, -EIO, qp->qpn, e.syndrome, e.wqe_opcode,
						       e.wqe_counter);
			}
		}
		if (widx + 1 > done)
			done = widx + 1;
		ci++;
		n++;
	}
	if (n) {
		if (acquire)
			kinet_dev_fence_acquire_sys(); /* CQE reads, then the data they cover */
		kinet_dev_scoped_store_release_u64(scope, &qp->sq_done, done);
		kinet_dev_cq_consume_scoped(scope, cq, pub, ci);
	}
	kinet_dev_cq_unlock(scope, cq);
	return (int)n;
}

/* Consumes every ready CQE (kinet_dev_qp_progress_until without a target). */
KINET_DEV_FN int kinet_dev_qp_progress(struct kinet_dev_qp *qp)
{
	return kinet_dev_qp_progress_until(qp, ~0ull);
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
 * timeout, EINVAL for a bad n.  Thread-safe for CTA and GPU sharing (CAS);
 * EXCLUSIVE: plain load and store. */
KINET_DEV_FN int kinet_dev_sq_reserve(struct kinet_dev_qp *qp, uint32_t n, uint64_t *idx)
{
	uint64_t depth = kinet_dev_sq_depth(qp);
	if (n == 0 || n > depth)
		return EINVAL;
	int scope = kinet_dev_qp_scope(qp);
	struct kinet_dev_deadline d;
	kinet_dev_deadline_init(&d, kinet_dev_qp_timeout_ns(qp));
	uint64_t r = kinet_dev_scoped_load_relaxed_u64(scope, &qp->sq_reserved);
	for (;;) {
		if (kinet_dev_scoped_load_relaxed_u32(scope, &qp->sq_error))
			return EIO;
		uint64_t done = kinet_dev_scoped_load_acquire_u64(scope, &qp->sq_done);
		if (r + n - done <= depth) {
			if (scope == KINET_DEV_SCOPE_THREAD) {
				qp->sq_reserved = r + n;
				*idx = r;
				return 0;
			}
			uint64_t old = kinet_dev_scoped_cas_u64(scope, &qp->sq_reserved, r, r + n);
			if (old == r) {
				*idx = r;
				return 0;
			}
			r = old;
			continue;
		}
		kinet_dev_qp_progress_until(qp, r + n - depth);
		if (kinet_dev_deadline_expired(&d)) /* checked even while CQEs flow: no starvation */
			return kinet_dev_qp_timed_out(qp);
		r = kinet_dev_scoped_load_relaxed_u64(scope, &qp->sq_reserved);
	}
}

/* Rings the doorbell for producer index pi (BBs posted); last holds the 64
 * bytes of the WQE at pi - 1.  GPU and BF modes need them: NULL reads them
 * back from the ring (host memory: a ~2 us PCIe read; the high level never
 * does).  The WQE stores must precede it in this thread, or in the group
 * before a barrier.
 *
 * Fences (all fence.acq_rel.sys: each orders earlier stores before later
 * stores, which is all a doorbell needs; fence.sc.sys would only add
 * store->load ordering, which nothing here relies on):
 *   GPU: WQEs -> fence -> record -> fence -> UAR.  The first keeps the WQEs
 *        before the record (a NIC may read the record at any time), the
 *        second the record before the doorbell (the NIC reads the record when
 *        it sees the doorbell).
 *   BF:  WQEs -> fence -> record, bytes 8..63 -> fence -> bytes 0..7.  The
 *        soft NIC acts on a change of bytes 0..7 only, then reads the record
 *        and bytes 8..63, so one fence before bytes 0..7 orders both. */
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
		if (qp->db_mode == KINET_DB_GPU) {
			/* 2. doorbell record before the doorbell register. */
			kinet_dev_fence_release_sys();
			kinet_dev_store_relaxed_u64(qp->uar_db, q[0]);
		} else {
			uint64_t *bf = qp->bf ? qp->bf : qp->uar_db;
			for (int i = 1; i < 8; i++)
				kinet_dev_store_relaxed_u64(&bf[i], q[i]);
			/* 2. record and bytes 8..63 before the first 8 (the trigger). */
			kinet_dev_fence_release_sys();
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
	kinet_dev_scoped_store_release_u64(kinet_dev_qp_scope(qp), &qp->sq_ready, idx + n);
}

/* Low level: rings the doorbell for everything marked ready (the WQE at
 * sq_ready - 1 must be a one-BB WQE, as all the builders make; GPU and BF
 * modes read it back from the ring: prefer kinet_dev_sq_ring with last). */
KINET_DEV_FN void kinet_dev_sq_submit(struct kinet_dev_qp *qp)
{
	uint64_t pi = kinet_dev_scoped_load_acquire_u64(kinet_dev_qp_scope(qp), &qp->sq_ready);
	if (pi)
		kinet_dev_sq_ring(qp, pi, NULL);
}

/* In-order commit of reserved slots [idx, idx+n) whose WQEs are written:
 * waits (bounded) until every earlier reservation is committed (CTA, GPU
 * sharing; EXCLUSIVE has no earlier poster to wait for), rings the doorbell
 * with pi = idx + n, then publishes sq_ready = idx + n.  last: the WQE at
 * idx + n - 1 (NULL: read back from the ring in GPU/BF modes, slow).  0 or
 * ETIMEDOUT (then an earlier poster never committed and the QP cannot be
 * used any more). */
KINET_DEV_FN int kinet_dev_sq_commit(struct kinet_dev_qp *qp, uint64_t idx, uint32_t n, const uint64_t *last)
{
	int scope = kinet_dev_qp_scope(qp);
	if (scope != KINET_DEV_SCOPE_THREAD) {
		struct kinet_dev_deadline d;
		kinet_dev_deadline_init(&d, kinet_dev_qp_timeout_ns(qp));
		while (kinet_dev_scoped_load_acquire_u64(scope, &qp->sq_ready) != idx)
			if (kinet_dev_deadline_expired(&d))
				return kinet_dev_qp_timed_out(qp);
	}
	kinet_dev_sq_ring(qp, idx + n, last);
	kinet_dev_scoped_store_release_u64(scope, &qp->sq_ready, idx + n);
	return 0;
}

/* ---- tickets ---- */

/* Ticket of an operation = index + 1 of its last WQE (0: nothing to wait
 * for).  0 when complete, EIO when it (or an earlier WQE) failed, EAGAIN
 * when not yet.  Non-blocking; makes progress.  On 0 the data the operation
 * returns (get, fetch_add / compare_swap result) can be read: the poller
 * took a system-scope acquire fence after the CQE that covers it, before
 * publishing sq_done, which is read here with an acquire. */
KINET_DEV_FN int kinet_dev_sq_test(struct kinet_dev_qp *qp, uint64_t ticket)
{
	int scope = kinet_dev_qp_scope(qp);
	for (int pass = 0; pass < 2; pass++) {
		uint64_t done = kinet_dev_scoped_load_acquire_u64(scope, &qp->sq_done);
		if (kinet_dev_scoped_load_acquire_u32(scope, &qp->sq_error) &&
		    ticket > kinet_dev_scoped_load_relaxed_u64(scope, &qp->sq_error_idx))
			return EIO;
		if (done >= ticket)
			return 0;
		if (pass == 0)
			kinet_dev_qp_progress_until(qp, ticket);
	}
	return EAGAIN;
}

/* kinet_dev_sq_wait: waits for a ticket, bounded by the QP timeout: 0, EIO
 * (error CQE; see kinet_dev_qp_error), ETIMEDOUT (also recorded in the
 * context).  kinet_dev_test / kinet_dev_wait (ops.cuh) add the completion
 * of peer-path stores. */
KINET_DEV_FN int kinet_dev_sq_wait(struct kinet_dev_qp *qp, uint64_t ticket)
{
	struct kinet_dev_deadline d;
	kinet_dev_deadline_init(&d, kinet_dev_qp_timeout_ns(qp));
	for (;;) {
		int st = kinet_dev_sq_test(qp, ticket);
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
 * without a receive queue, EIO after a receive error.  Thread-safe for CTA
 * and GPU sharing. */
KINET_DEV_FN int kinet_dev_rq_reserve(struct kinet_dev_qp *qp, uint32_t n, uint64_t *idx)
{
	uint64_t depth = kinet_dev_rq_depth(qp);
	if (!depth || n == 0 || n > depth)
		return EINVAL;
	int scope = kinet_dev_qp_scope(qp);
	uint64_t r = kinet_dev_scoped_load_relaxed_u64(scope, &qp->rq_reserved);
	for (;;) {
		if (kinet_dev_scoped_load_relaxed_u32(scope, &qp->rq_error))
			return EIO;
		uint64_t done = kinet_dev_scoped_load_acquire_u64(scope, &qp->rq_done);
		if (r + n - done > depth) {
			if (scope == KINET_DEV_SCOPE_THREAD)
				return EAGAIN;
			uint64_t again = kinet_dev_load_relaxed_u64(&qp->rq_reserved);
			if (again == r)
				return EAGAIN;
			r = again;
			continue;
		}
		if (scope == KINET_DEV_SCOPE_THREAD) {
			qp->rq_reserved = r + n;
			*idx = r;
			return 0;
		}
		uint64_t old = kinet_dev_scoped_cas_u64(scope, &qp->rq_reserved, r, r + n);
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
	kinet_dev_store_relaxed_u32(&qp->dbrec[KINET_DBR_RECV], kinet_be32((uint32_t)pi & 0xffffu));
}

/* In-order commit of receive WQEs [idx, idx+n), as kinet_dev_sq_commit. */
KINET_DEV_FN int kinet_dev_rq_commit(struct kinet_dev_qp *qp, uint64_t idx, uint32_t n)
{
	int scope = kinet_dev_qp_scope(qp);
	if (scope != KINET_DEV_SCOPE_THREAD) {
		struct kinet_dev_deadline d;
		kinet_dev_deadline_init(&d, kinet_dev_qp_timeout_ns(qp));
		while (kinet_dev_scoped_load_acquire_u64(scope, &qp->rq_ready) != idx)
			if (kinet_dev_deadline_expired(&d))
				return kinet_dev_qp_timed_out(qp);
	}
	kinet_dev_rq_ring(qp, idx + n);
	kinet_dev_scoped_store_release_u64(scope, &qp->rq_ready, idx + n);
	return 0;
}

/* Takes the next receive completion of the QP's (exclusive) receive CQ, if
 * there is one: 0 with its byte count, immediate (host order, 0 if none)
 * and receive WQE index (after a system-scope acquire fence: the received
 * bytes can be read); EIO for an error completion (or none left after an
 * error); EAGAIN when none is ready.  Thread-safe for CTA and GPU sharing
 * (one taker at a time; each completion goes to exactly one caller).
 * Outputs may be NULL. */
KINET_DEV_FN int kinet_dev_rq_poll(struct kinet_dev_qp *qp, uint32_t *byte_len, uint32_t *imm,
				   uint64_t *index)
{
	struct kinet_dev_cq *cq = qp->recv_cq;
	if (!cq || !qp->rq)
		return EINVAL;
	int scope = kinet_dev_qp_scope(qp);
	if (!kinet_dev_cq_trylock(scope, cq))
		return EAGAIN;
	int st;
	uint64_t ci = kinet_dev_scoped_load_relaxed_u64(scope, &cq->ci);
	uint64_t pub = kinet_dev_scoped_load_relaxed_u64(scope, &cq->ci_published);
	uint64_t done = kinet_dev_scoped_load_relaxed_u64(scope, &qp->rq_done);
	struct kinet_dev_cqe e;
	if (kinet_dev_cq_peek_at(cq, ci, 1, &e) == 0) {
		uint64_t widx = kinet_dev_extend16(done, e.wqe_counter);
		if (kinet_dev_cqe_is_error(&e)) {
			if (!kinet_dev_scoped_load_relaxed_u32(scope, &qp->rq_error)) {
				kinet_dev_scoped_store_relaxed_u64(scope, &qp->rq_error_idx, widx);
				kinet_dev_scoped_fence(scope);
				kinet_dev_scoped_store_relaxed_u32(scope, &qp->rq_error,
								   e.syndrome | KINET_DEV_ERROR_FLAG);
				kinet_dev_record_error(qp->err, -EIO, qp->qpn, e.syndrome, 0, e.wqe_counter);
			}
			st = EIO;
		} else {
			kinet_dev_fence_acquire_sys(); /* the completion, then the received data */
			if (byte_len)
				*byte_len = e.byte_len;
			if (imm)
				*imm = e.imm;
			st = 0;
		}
		if (index)
			*index = widx;
		if (widx + 1 > done)
			kinet_dev_scoped_store_release_u64(scope, &qp->rq_done, widx + 1);
		kinet_dev_cq_consume_scoped(scope, cq, pub, ci + 1);
	} else {
		st = kinet_dev_scoped_load_relaxed_u32(scope, &qp->rq_error) ? EIO : EAGAIN;
	}
	kinet_dev_cq_unlock(scope, cq);
	return st;
}

#endif /* KINET_DEVICE_QUEUE_CUH */
