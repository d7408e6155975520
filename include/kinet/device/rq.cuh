/*
 * kinet device API: the receive queue, low level.  Counters rq_reserved,
 * rq_ready, rq_done (receive WQEs) follow the send queue's protocol
 * (sq.cuh): reserve, write, commit in order; rq_done moves as
 * kinet_dev_rq_poll consumes receive completions.
 */
#ifndef KINET_DEVICE_RQ_CUH
#define KINET_DEVICE_RQ_CUH

#include "kinet/device/cq.cuh"
#include "kinet/device/doorbell.cuh"
#include "kinet/device/error.cuh"
#include "kinet/device/impl/deadline.cuh"
#include "kinet/device/impl/scope.cuh"
#include "kinet/device/platform.cuh"
#include "kinet/device/types.h"
#include "kinet/wire.h"

KINET_DEV_FN uint32_t kinet_dev_rq_depth(const struct kinet_dev_qp *qp)
{
	return qp->rq ? qp->rq_mask + 1 : 0;
}

KINET_DEV_FN void *kinet_devi_rq_wqe(const struct kinet_dev_qp *qp, uint64_t idx)
{
	return qp->rq + (size_t)(idx & qp->rq_mask) * qp->rq_stride;
}

/* Low level: writes receive WQE idx with one scatter entry (and the
 * end marker {0, KINET_INVALID_LKEY, 0} when the WQE has room for more). */
KINET_DEV_FN void kinet_dev_rq_prep(struct kinet_dev_qp *qp, uint64_t idx, void *laddr, uint32_t lkey,
				    uint32_t size)
{
	struct kinet_wqe_data_seg *seg = (struct kinet_wqe_data_seg *)kinet_devi_rq_wqe(qp, idx);
	uint32_t nseg = qp->rq_stride / KINET_WQE_DS_SIZE;
	if (qp->rq_max_sge && qp->rq_max_sge < nseg)
		nseg = qp->rq_max_sge;
	uint32_t i = 0;
	if (size)
		kinet_wqe_set_data(&seg[i++], (uint64_t)(uintptr_t)laddr, size, lkey);
	if (i < nseg)
		kinet_wqe_set_data(&seg[i], 0, 0, KINET_INVALID_LKEY);
}

/* Reserves n receive WQEs without waiting: -EAGAIN when the RQ is full
 * (receives free up as kinet_dev_recv consumes completions), -EINVAL
 * without a receive queue, -EIO after a receive error.  Thread-safe for CTA
 * and GPU sharing. */
KINET_DEV_FN int kinet_dev_rq_reserve(struct kinet_dev_qp *qp, uint32_t n, uint64_t *idx)
{
	uint64_t depth = kinet_dev_rq_depth(qp);
	if (!depth || n == 0 || n > depth)
		return -EINVAL;
	int scope = kinet_devi_qp_scope(qp);
	uint64_t r = kinet_devi_scoped_load_relaxed_u64(scope, &qp->rq_reserved);
	for (;;) {
		if (kinet_devi_scoped_load_relaxed_u32(scope, &qp->rq_error))
			return -EIO;
		uint64_t done = kinet_devi_scoped_load_acquire_u64(scope, &qp->rq_done);
		if (r + n - done > depth) {
			if (scope == KINET_DEVI_SCOPE_THREAD)
				return -EAGAIN;
			uint64_t again = kinet_devi_load_relaxed_u64(&qp->rq_reserved);
			if (again == r)
				return -EAGAIN;
			r = again;
			continue;
		}
		if (scope == KINET_DEVI_SCOPE_THREAD) {
			qp->rq_reserved = r + n;
			*idx = r;
			return 0;
		}
		uint64_t old = kinet_devi_scoped_cas_u64(scope, &qp->rq_reserved, r, r + n);
		if (old == r) {
			*idx = r;
			return 0;
		}
		r = old;
	}
}

/* In-order commit of receive WQEs [idx, idx+n), as kinet_dev_sq_commit. */
KINET_DEV_FN int kinet_dev_rq_commit(struct kinet_dev_qp *qp, uint64_t idx, uint32_t n)
{
	int scope = kinet_devi_qp_scope(qp);
	if (scope != KINET_DEVI_SCOPE_THREAD) {
		struct kinet_devi_deadline d;
		kinet_devi_deadline_init(&d, kinet_devi_qp_timeout_ns(qp));
		while (kinet_devi_scoped_load_acquire_u64(scope, &qp->rq_ready) != idx)
			if (kinet_devi_deadline_expired(&d))
				return kinet_devi_qp_timed_out(qp);
	}
	kinet_dev_rq_ring(qp, idx + n);
	kinet_devi_scoped_store_release_u64(scope, &qp->rq_ready, idx + n);
	return 0;
}

/* Takes the next receive completion of the QP's (exclusive) receive CQ, if
 * there is one: 0 with its byte count, immediate (host order, 0 if none)
 * and receive WQE index (after a system-scope acquire fence: the received
 * bytes can be read); -EIO for an error completion (or none left after an
 * error); -EAGAIN when none is ready.  Thread-safe for CTA and GPU sharing
 * (one taker at a time; each completion goes to exactly one caller).
 * Outputs may be NULL. */
KINET_DEV_FN int kinet_dev_rq_poll(struct kinet_dev_qp *qp, uint32_t *byte_len, uint32_t *imm,
				   uint64_t *index)
{
	struct kinet_dev_cq *cq = qp->recv_cq;
	if (!cq || !qp->rq)
		return -EINVAL;
	int scope = kinet_devi_qp_scope(qp);
	if (!kinet_devi_cq_trylock(scope, cq))
		return -EAGAIN;
	int st;
	uint64_t ci = kinet_devi_scoped_load_relaxed_u64(scope, &cq->ci);
	uint64_t pub = kinet_devi_scoped_load_relaxed_u64(scope, &cq->ci_published);
	uint64_t done = kinet_devi_scoped_load_relaxed_u64(scope, &qp->rq_done);
	struct kinet_dev_cqe e;
	if (kinet_dev_cq_peek_at(cq, ci, 1, &e) == 0) {
		uint64_t widx = kinet_devi_extend16(done, e.wqe_counter);
		if (kinet_dev_cqe_is_error(&e)) {
			if (!kinet_devi_scoped_load_relaxed_u32(scope, &qp->rq_error)) {
				kinet_devi_scoped_store_relaxed_u64(scope, &qp->rq_error_idx, widx);
				kinet_devi_scoped_fence(scope);
				kinet_devi_scoped_store_relaxed_u32(scope, &qp->rq_error,
								    e.syndrome | KINET_DEVI_ERROR_FLAG);
				kinet_dev_record_error(qp->err, -EIO, qp->qpn, e.syndrome, 0, e.wqe_counter);
			}
			st = -EIO;
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
			kinet_devi_scoped_store_release_u64(scope, &qp->rq_done, widx + 1);
		kinet_devi_cq_consume_scoped(scope, cq, pub, ci + 1);
	} else {
		st = kinet_devi_scoped_load_relaxed_u32(scope, &qp->rq_error) ? -EIO : -EAGAIN;
	}
	kinet_devi_cq_unlock(scope, cq);
	return st;
}

#endif /* KINET_DEVICE_RQ_CUH */
