/*
 * kinet device API: completion queues, low level (one consumer; the caller
 * orders).  A CQE is read once, as one snapshot, and decoded in registers
 * (struct kinet_dev_cqe); the consumer index goes back to the NIC lazily.
 * The high level polls the send CQ through kinet_dev_qp_progress (sq.cuh)
 * and the receive CQ through kinet_dev_rq_poll (rq.cuh).
 */
#ifndef KINET_DEVICE_CQ_CUH
#define KINET_DEVICE_CQ_CUH

#include "kinet/device/impl/deadline.cuh"
#include "kinet/device/impl/scope.cuh"
#include "kinet/device/platform.cuh"
#include "kinet/device/types.h"
#include "kinet/wire.h"

/* Set to 1 to make the send-CQ poller take a system-scope acquire fence
 * after every batch of CQEs, also when the batch only completes writes and
 * sends (which hand no data to the caller; see kinet_dev_cqe_covers_data). */
#ifndef KINET_DEV_ACQUIRE_ALL_CQES
#define KINET_DEV_ACQUIRE_ALL_CQES 0
#endif

/* kinet_dev_cq_consume publishes the consumer index once it has moved by
 * depth / KINET_DEV_CQ_PUBLISH_DIV (at least 1) since the last publication.
 * Must be >= 2 for the no-overrun argument (docs/device-api/performance.md). */
#ifndef KINET_DEV_CQ_PUBLISH_DIV
#define KINET_DEV_CQ_PUBLISH_DIV 4u
#endif

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
KINET_DEV_FN void kinet_devi_cqe_decode(const uint64_t *q, int full, struct kinet_dev_cqe *out)
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

/* 64-bit index of a 16-bit counter, relative to base (the oldest index that
 * can still complete; at most depth <= 32768 entries are outstanding). */
KINET_DEV_FN uint64_t kinet_devi_extend16(uint64_t base, uint16_t v)
{
	uint64_t x = base + (uint16_t)(v - (uint16_t)base);
	if (x - base >= 0x8000u && x >= 0x10000u)
		x -= 0x10000u; /* an entry just below base: never jump ahead */
	return x;
}

/* The CQE at consumer index ci, read ONCE, without any fence: 0 and *out
 * when it belongs to software, else -EAGAIN.  full = 0 skips byte_len and
 * imm (bytes 32..47; a requester CQE needs only bytes 48..63).
 *
 * On the GPU, bytes 48..63 (op_own, wqe_counter, opcode/qpn, syndromes)
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
		return -EAGAIN;
	memcpy(q, (const uint8_t *)c + 48, 16);
	if (full)
		memcpy(&q[2], (const uint8_t *)c + 32, 16);
#else
	kinet_devi_load_cqe_hi(c, q);
	op_own = (uint8_t)(q[1] >> 56);
	if ((op_own >> 4) == KINET_CQE_INVALID || (op_own & 1) != kinet_cqe_sw_owner(ci, cq->log_depth))
		return -EAGAIN;
	if (full) {
		kinet_dev_fence_acquire_sys(); /* op_own, then the rest of the line */
		kinet_devi_load_cqe_lo(c, &q[2]);
	}
#endif
	kinet_devi_cqe_decode(q, full, out);
	return 0;
}

/* 0 and *out (every field) when the CQE at consumer index ci is ready, then
 * a system-scope acquire fence: the data the CQE reports (read results,
 * atomic old values, received bytes) can be read.  Else -EAGAIN. */
KINET_DEV_FN int kinet_dev_cq_poll_at(struct kinet_dev_cq *cq, uint64_t ci, struct kinet_dev_cqe *out)
{
	if (kinet_dev_cq_peek_at(cq, ci, 1, out) != 0)
		return -EAGAIN;
	kinet_dev_fence_acquire_sys();
	return 0;
}

/* Waits up to timeout_ns for the CQE at ci (as kinet_dev_cq_poll_at): 0 or
 * -ETIMEDOUT. */
KINET_DEV_FN int kinet_dev_cq_wait_at(struct kinet_dev_cq *cq, uint64_t ci, uint64_t timeout_ns,
				      struct kinet_dev_cqe *out)
{
	struct kinet_devi_deadline d;
	kinet_devi_deadline_init(&d, timeout_ns);
	while (kinet_dev_cq_peek_at(cq, ci, 1, out) != 0)
		if (kinet_devi_deadline_expired(&d))
			return -ETIMEDOUT;
	kinet_dev_fence_acquire_sys();
	return 0;
}

/* Writes consumer index ci to the CQ doorbell record now (system-scope
 * release: the CQE reads before it are done before the engine may reuse
 * the entries).  For CQs that can hold more than depth / 2 unconsumed CQEs
 * (not one of an exported QP), call it after every kinet_dev_cq_consume. */
KINET_DEV_FN void kinet_dev_cq_publish(struct kinet_dev_cq *cq, uint64_t ci)
{
	kinet_devi_store_release_u32_sys(&cq->dbrec[KINET_CQ_DBR_CI],
					 kinet_be32((uint32_t)ci & KINET_CQ_CI_MASK));
	kinet_devi_store_relaxed_u64(&cq->ci_published, ci);
}

/* Publication threshold: depth / KINET_DEV_CQ_PUBLISH_DIV, at least 1. */
KINET_DEV_FN uint64_t kinet_devi_cq_publish_step(const struct kinet_dev_cq *cq)
{
	uint64_t step = ((uint64_t)cq->mask + 1) / KINET_DEV_CQ_PUBLISH_DIV;
	return step ? step : 1;
}

/* Hands the CQEs before next_ci back to the NIC: cq->ci = next_ci, and the
 * doorbell record (host memory, a system-scope release store) only once the
 * consumer index has moved by kinet_devi_cq_publish_step() since the last
 * publication.  The engine only reads the record to know free space; it
 * treats the CQ as full when pi - published >= depth - 1.  With at most
 * depth / 2 CQEs ever produced and not yet consumed (true for the CQs of an
 * exported QP: CQ depth > queue depth, both powers of two, and a queue slot
 * is reused only after its CQE is consumed), the engine sees at most
 * depth / 2 - 1 + step - 1 < depth - 1 in use: it never overruns.  See
 * docs/device-api/performance.md. */
KINET_DEV_FN void kinet_dev_cq_consume(struct kinet_dev_cq *cq, uint64_t next_ci)
{
	kinet_devi_store_relaxed_u64(&cq->ci, next_ci);
	if (next_ci - kinet_devi_load_relaxed_u64(&cq->ci_published) >= kinet_devi_cq_publish_step(cq))
		kinet_dev_cq_publish(cq, next_ci);
}

/* The same with the QP's scope (plain accesses for EXCLUSIVE). */
KINET_DEV_FN void kinet_devi_cq_consume_scoped(int scope, struct kinet_dev_cq *cq, uint64_t published,
					       uint64_t next_ci)
{
	kinet_devi_scoped_store_relaxed_u64(scope, &cq->ci, next_ci);
	if (next_ci - published >= kinet_devi_cq_publish_step(cq)) {
		kinet_devi_store_release_u32_sys(&cq->dbrec[KINET_CQ_DBR_CI],
						 kinet_be32((uint32_t)next_ci & KINET_CQ_CI_MASK));
		kinet_devi_scoped_store_relaxed_u64(scope, &cq->ci_published, next_ci);
	}
}

#endif /* KINET_DEVICE_CQ_CUH */
