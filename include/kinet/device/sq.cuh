/*
 * kinet device API: the send queue, low level -- reservation, in-order
 * commit, the send-CQ poller (progress) and tickets.
 *
 * Counters (struct kinet_dev_qp, GPU memory, device state):
 *   sq_reserved  BBs handed out (CAS: only when there is room)
 *   sq_ready     BBs written and rung, a prefix (one poster may ring for several)
 *   sq_done      BBs known complete from CQEs (set by the CQ poller)
 *   sq_reserved - sq_done <= depth always: a slot is reused only after the
 *   WQE that used it is known complete.
 * Their accesses follow the QP's sharing mode (impl/scope.cuh).
 */
#ifndef KINET_DEVICE_SQ_CUH
#define KINET_DEVICE_SQ_CUH

#include "kinet/device/cq.cuh"
#include "kinet/device/doorbell.cuh"
#include "kinet/device/error.cuh"
#include "kinet/device/impl/deadline.cuh"
#include "kinet/device/impl/scope.cuh"
#include "kinet/device/impl/sq.cuh"
#include "kinet/device/platform.cuh"
#include "kinet/device/types.h"

KINET_DEV_FN uint32_t kinet_dev_sq_depth(const struct kinet_dev_qp *qp)
{
	return qp->sq_mask + 1;
}

/* Consumes ready CQEs of the QP's (exclusive) send CQ, in order, if no other
 * thread is doing it, until sq_done >= target (or none is ready): good CQEs
 * move sq_done to their WQE index + 1; the first error CQE sets
 * sq_error_idx, sq_error (syndrome | 0x100) and the context's error record,
 * and also moves sq_done past it (every later WQE completes with a flush
 * error).  With the NIC's completion word one read covers every CQE
 * written so far (kinet_devi_qp_progress_word); without it (or once an
 * error CQE was written) CQEs are read one per PCIe round trip, stopping
 * at the target (saving a read of the next, empty, slot).  When a consumed
 * CQE covers data (kinet_dev_cqe_covers_data), one system-scope acquire
 * fence follows the batch, before sq_done is published: whoever sees the
 * new sq_done (acquire) may read that data.  Returns the number of CQEs
 * consumed. */
KINET_DEV_FN int kinet_dev_qp_progress_until(struct kinet_dev_qp *qp, uint64_t target)
{
	struct kinet_dev_cq *cq = qp->send_cq;
	int scope = kinet_devi_qp_scope(qp);
	if (!kinet_devi_cq_trylock(scope, cq))
		return 0;
	uint64_t ci = kinet_devi_scoped_load_relaxed_u64(scope, &cq->ci);
	uint64_t pub = kinet_devi_scoped_load_relaxed_u64(scope, &cq->ci_published);
	uint64_t done = kinet_devi_scoped_load_relaxed_u64(scope, &qp->sq_done);
	int fast = kinet_devi_qp_progress_word(scope, qp, cq, ci, pub, done);
	if (fast >= 0) {
		kinet_devi_cq_unlock(scope, cq);
		return fast;
	}
	uint32_t depth = cq->mask + 1;
	uint32_t n = 0;
	int acquire = 0;
	struct kinet_dev_cqe e;
	while (n < depth && done < target && kinet_dev_cq_peek_at(cq, ci, 0, &e) == 0) {
		uint64_t widx = kinet_devi_extend16(done, e.wqe_counter);
		acquire |= kinet_dev_cqe_covers_data(&e);
		if (kinet_dev_cqe_is_error(&e))
			kinet_devi_qp_note_error(scope, qp, widx, &e);
		if (widx + 1 > done)
			done = widx + 1;
		ci++;
		n++;
	}
	if (n) {
		if (acquire)
			kinet_dev_fence_acquire_sys(); /* CQE reads, then the data they cover */
		kinet_devi_scoped_store_release_u64(scope, &qp->sq_done, done);
		kinet_devi_cq_consume_scoped(scope, cq, pub, ci);
	}
	kinet_devi_cq_unlock(scope, cq);
	return (int)n;
}

/* Consumes every ready CQE (kinet_dev_qp_progress_until without a target). */
KINET_DEV_FN int kinet_dev_qp_progress(struct kinet_dev_qp *qp)
{
	return kinet_dev_qp_progress_until(qp, ~0ull);
}

/* Reserves n consecutive basic blocks (1 <= n <= depth); *idx is the first.
 * Claims only when the slots are free (sq_reserved + n - sq_done <= depth),
 * making progress on the send CQ while it waits, so a failed call holds
 * nothing: -EIO once the send queue saw an error, -ETIMEDOUT after the QP's
 * timeout, -EINVAL for a bad n.  Thread-safe for CTA and GPU sharing (CAS);
 * EXCLUSIVE: plain load and store. */
KINET_DEV_FN int kinet_dev_sq_reserve(struct kinet_dev_qp *qp, uint32_t n, uint64_t *idx)
{
	uint64_t depth = kinet_dev_sq_depth(qp);
	if (n == 0 || n > depth)
		return -EINVAL;
	int scope = kinet_devi_qp_scope(qp);
	struct kinet_devi_deadline d;
	kinet_devi_deadline_init(&d, kinet_devi_qp_timeout_ns(qp));
	uint64_t r = kinet_devi_scoped_load_relaxed_u64(scope, &qp->sq_reserved);
	for (;;) {
		if (kinet_devi_scoped_load_relaxed_u32(scope, &qp->sq_error))
			return -EIO;
		uint64_t done = kinet_devi_scoped_load_acquire_u64(scope, &qp->sq_done);
		if (r + n - done <= depth) {
			if (scope == KINET_DEVI_SCOPE_THREAD) {
				qp->sq_reserved = r + n;
				*idx = r;
				return 0;
			}
			uint64_t old = kinet_devi_scoped_cas_u64(scope, &qp->sq_reserved, r, r + n);
			if (old == r) {
				*idx = r;
				return 0;
			}
			r = old;
			continue;
		}
		kinet_dev_qp_progress_until(qp, r + n - depth);
		if (kinet_devi_deadline_expired(&d)) /* checked even while CQEs flow: no starvation */
			return kinet_devi_qp_timed_out(qp);
		r = kinet_devi_scoped_load_relaxed_u64(scope, &qp->sq_reserved);
	}
}

/* Commit of reserved slots [idx, idx+n) whose WQEs are written: rings the
 * doorbell for them (pi = idx + n, or further) and publishes sq_ready, in
 * order: doorbell values only grow and sq_ready is always a prefix of
 * written WQEs.  EXCLUSIVE: rings at once.  CTA and GPU sharing: with
 * sq_marks (every exported shared QP) posts are combined into one doorbell
 * (kinet_devi_sq_commit_combined); without, each poster waits (bounded)
 * until every earlier reservation is committed, then rings.  last: the WQE
 * at idx + n - 1 (NULL: read back from the ring in GPU/BF modes, slow).  On
 * return a doorbell covers the post.  0 or -ETIMEDOUT (then an earlier
 * poster never committed and the QP cannot be used any more). */
KINET_DEV_FN int kinet_dev_sq_commit(struct kinet_dev_qp *qp, uint64_t idx, uint32_t n, const uint64_t *last)
{
	int scope = kinet_devi_qp_scope(qp);
	if (scope != KINET_DEVI_SCOPE_THREAD) {
		if (qp->sq_marks)
			return kinet_devi_sq_commit_combined(qp, scope, idx, n, last);
		struct kinet_devi_deadline d;
		kinet_devi_deadline_init(&d, kinet_devi_qp_timeout_ns(qp));
		while (kinet_devi_scoped_load_acquire_u64(scope, &qp->sq_ready) != idx)
			if (kinet_devi_deadline_expired(&d))
				return kinet_devi_qp_timed_out(qp);
	}
	kinet_devi_sq_ring_in_order(qp, idx + n, last);
	kinet_devi_scoped_store_release_u64(scope, &qp->sq_ready, idx + n);
	return 0;
}

/* Ticket of an operation = index + 1 of its last WQE (0: nothing to wait
 * for).  0 when complete, -EIO when it (or an earlier WQE) failed, -EAGAIN
 * when not yet.  Non-blocking; makes progress.  On 0 the data the operation
 * returns (get, fetch_add / compare_swap result) can be read: the poller
 * took a system-scope acquire fence after the CQE that covers it, before
 * publishing sq_done, which is read here with an acquire. */
KINET_DEV_FN int kinet_dev_sq_test(struct kinet_dev_qp *qp, uint64_t ticket)
{
	int scope = kinet_devi_qp_scope(qp);
	for (int pass = 0; pass < 2; pass++) {
		uint64_t done = kinet_devi_scoped_load_acquire_u64(scope, &qp->sq_done);
		if (kinet_devi_scoped_load_acquire_u32(scope, &qp->sq_error) &&
		    ticket > kinet_devi_scoped_load_relaxed_u64(scope, &qp->sq_error_idx))
			return -EIO;
		if (done >= ticket)
			return 0;
		if (pass == 0)
			kinet_dev_qp_progress_until(qp, ticket);
	}
	return -EAGAIN;
}

/* kinet_dev_sq_wait: waits for a ticket, bounded by the QP timeout: 0, -EIO
 * (error CQE; see kinet_dev_qp_error), -ETIMEDOUT (also recorded in the
 * context).  kinet_dev_test / kinet_dev_wait (completion.cuh) add the completion
 * of peer-path stores. */
KINET_DEV_FN int kinet_dev_sq_wait(struct kinet_dev_qp *qp, uint64_t ticket)
{
	struct kinet_devi_deadline d;
	kinet_devi_deadline_init(&d, kinet_devi_qp_timeout_ns(qp));
	for (;;) {
		int st = kinet_dev_sq_test(qp, ticket);
		if (st != -EAGAIN)
			return st;
		if (kinet_devi_deadline_expired(&d))
			return kinet_devi_qp_timed_out(qp);
	}
}

#endif /* KINET_DEVICE_SQ_CUH */
