/*
 * kinet device API, implementation: what the send queue's low level
 * (sq.cuh) builds on -- the completion-word fast path of the CQ poller and
 * combined doorbells for the posters of a shared QP.
 */
#ifndef KINET_DEVICE_IMPL_SQ_CUH
#define KINET_DEVICE_IMPL_SQ_CUH

#include "kinet/device/cq.cuh"
#include "kinet/device/doorbell.cuh"
#include "kinet/device/error.cuh"
#include "kinet/device/impl/deadline.cuh"
#include "kinet/device/impl/scope.cuh"
#include "kinet/device/platform.cuh"
#include "kinet/device/types.h"
#include "kinet/device/wqe.cuh"

/* Records the first error CQE of the send queue (poll lock held). */
KINET_DEV_FN void kinet_devi_qp_note_error(int scope, struct kinet_dev_qp *qp, uint64_t widx,
					   const struct kinet_dev_cqe *e)
{
	if (kinet_devi_scoped_load_relaxed_u32(scope, &qp->sq_error))
		return;
	kinet_devi_scoped_store_relaxed_u64(scope, &qp->sq_error_idx, widx);
	kinet_devi_scoped_fence(scope); /* index before the flag */
	kinet_devi_scoped_store_relaxed_u32(scope, &qp->sq_error, e->syndrome | KINET_DEVI_ERROR_FLAG);
	kinet_dev_record_error(qp->err, -EIO, qp->qpn, e->syndrome, e->wqe_opcode, e->wqe_counter);
}

/* Fast path of the poller (poll lock held): one 8-byte read of the CQ's
 * completion word (types.h, KINET_COMP_*) instead of one 16-byte read per
 * CQE.  Without an error among the CQEs written (the word's sticky bit),
 * every CQE the word counts is consumed unread: the word names the last
 * requester CQE's WQE, and an exclusive send CQ (receive CQ apart) holds
 * only this QP's requester CQEs, in order.  Returns the CQEs consumed (0:
 * none new), or -1 when they must be read one by one (no word, a receive
 * CQ that is the send CQ, an error CQE written). */
KINET_DEV_FN int kinet_devi_qp_progress_word(int scope, struct kinet_dev_qp *qp, struct kinet_dev_cq *cq,
					     uint64_t ci, uint64_t pub, uint64_t done)
{
	if (!cq->comp_word || qp->recv_cq == cq)
		return -1;
	uint64_t w = kinet_devi_load_relaxed_u64_sys(cq->comp_word);
	if (w & KINET_COMP_ERROR)
		return -1;
	uint32_t n = KINET_COMP_COUNT(w) - (uint32_t)ci;
	if (n == 0 || n > cq->mask + 1)
		return 0; /* nothing new (or a word older than an export's ci: not yet) */
	uint32_t data = KINET_COMP_DATA(w);
	if (data != kinet_devi_scoped_load_relaxed_u32(scope, &cq->comp_data)) {
		/* A read result or an atomic's old value among them: the word,
		 * then that data (the engine wrote the data, the CQE, then the
		 * word).  Writes and sends hand nothing back: no fence, and no
		 * L1 invalidation for the caller's next loads. */
		kinet_dev_fence_acquire_sys();
		kinet_devi_scoped_store_relaxed_u32(scope, &cq->comp_data, data);
	}
	uint64_t widx = kinet_devi_extend16(done, KINET_COMP_WQE_COUNTER(w));
	if (widx + 1 > done)
		kinet_devi_scoped_store_release_u64(scope, &qp->sq_done, widx + 1);
	kinet_devi_cq_consume_scoped(scope, cq, pub, ci + n);
	return (int)n;
}

/* kinet_dev_sq_ring for a poster whose turn it is: commits ring in index
 * order (the previous ringer's sq_ready store or db_lock release happens
 * before this ring, so its doorbell store precedes this one in the word's
 * coherence order), so in CPU mode the word only grows and a plain store
 * after the release fence does what the atomic max does.  The store is
 * cheaper: an atomic on pinned host memory is a PCIe atomic, and 8 B
 * GPU-initiated writes took 4.70 us with it against 4.11 us for the GPU
 * doorbell mode's two fences and two stores (H200, same run). */
KINET_DEV_FN void kinet_devi_sq_ring_in_order(struct kinet_dev_qp *qp, uint64_t pi, const uint64_t *last)
{
	if (qp->db_mode != KINET_DB_CPU) {
		kinet_dev_sq_ring(qp, pi, last);
		return;
	}
	kinet_dev_fence_release_sys();
	kinet_devi_store_relaxed_u64(qp->db_cpu_pi, pi);
}

/* The 8-byte doorbell that announces producer index pi without a WQE copy
 * (ds 0: the WQE index is the producer index, as GPUNetIO and NVSHMEM
 * ring): what whoever rings for several posters writes in GPU and BF
 * modes, since it holds only its own last WQE. */
KINET_DEV_FN void kinet_devi_sq_plain_doorbell(const struct kinet_dev_qp *qp, uint64_t pi, uint64_t q[8])
{
	union kinet_dev_wqe w;
	kinet_dev_wqe_build_nop(&w, qp->qpn, pi, 0);
	w.rdma.ctrl.qpn_ds = kinet_be32(qp->qpn << 8); /* ds 0 */
	kinet_dev_wqe_words(&w, q);
}

/* Shared QPs with sq_marks: the post [idx, idx+n) is written; returns once
 * a doorbell covers it.  Posters do not wait in turn behind each other's
 * system fences: each marks its post written (a release at the QP's scope,
 * after its WQE stores), and whoever takes db_lock rings once, behind one
 * fence, for every consecutive written post from sq_ready on (flat
 * combining).  The marks are read with acquire at that scope and the fence
 * before the doorbell is cumulative, so every marked post's WQE stores
 * reach host memory before the doorbell.  0 or -ETIMEDOUT. */
KINET_DEV_FN int kinet_devi_sq_commit_combined(struct kinet_dev_qp *qp, int scope, uint64_t idx, uint32_t n,
					       const uint64_t *last)
{
	uint64_t end = idx + n, depth = (uint64_t)qp->sq_mask + 1;
	struct kinet_devi_deadline d;
	kinet_devi_scoped_store_release_u64(scope, &qp->sq_marks[idx & qp->sq_mask], end);
	kinet_devi_deadline_init(&d, kinet_devi_qp_timeout_ns(qp));
	for (;;) {
		if (kinet_devi_scoped_load_acquire_u64(scope, &qp->sq_ready) >= end)
			return 0; /* another poster rang for this post */
		if (kinet_devi_load_relaxed_u32(&qp->db_lock) == 0 &&
		    kinet_devi_scoped_cas_u32(scope, &qp->db_lock, 0, 1) == 0) {
			kinet_devi_scoped_fence(scope); /* the lock, then sq_ready and the marks */
			uint64_t ready = kinet_devi_scoped_load_relaxed_u64(scope, &qp->sq_ready), pi = ready;
			for (;;) {
				/* A mark left by an earlier lap of the ring is <= pi. */
				uint64_t e = kinet_devi_scoped_load_acquire_u64(
					scope, &qp->sq_marks[pi & qp->sq_mask]);
				if (e <= pi || e - pi > depth)
					break;
				pi = e;
			}
			if (pi > ready) {
				uint64_t q[8];
				if (pi == end && last) {
					kinet_devi_sq_ring_in_order(qp, pi, last);
				} else {
					kinet_devi_sq_plain_doorbell(qp, pi, q);
					kinet_devi_sq_ring_in_order(qp, pi, q);
				}
				kinet_devi_scoped_store_release_u64(scope, &qp->sq_ready, pi);
			}
			kinet_devi_scoped_fence(scope); /* sq_ready before the unlock */
			if (scope == KINET_DEVI_SCOPE_CTA)
				kinet_devi_atomic_exch_u32_cta(&qp->db_lock, 0);
			else
				kinet_devi_atomic_exch_u32(&qp->db_lock, 0);
			if (pi >= end)
				return 0;
			/* Not this post yet: an earlier one is still being written. */
		}
		if (kinet_devi_deadline_expired(&d))
			return kinet_devi_qp_timed_out(qp);
	}
}

#endif /* KINET_DEVICE_IMPL_SQ_CUH */
