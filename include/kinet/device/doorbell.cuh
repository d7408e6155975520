/*
 * kinet device API: doorbells, low level.
 *
 * Send doorbell (kinet_dev_sq_ring), per qp->db_mode:
 *   CPU: release fence (sys) -> atomic max of the 64-bit PI into *db_cpu_pi
 *        (the high level, ringing in index order, stores it: impl/sq.cuh).
 *   GPU: release fence (sys) -> dbrec[SEND] = be32(pi & 0xffff) -> release
 *        fence (sys) -> 8-byte store of the last WQE's first 8 bytes to *uar_db.
 *   BF:  release fence (sys) -> dbrec[SEND] -> bytes 8..63 of the last WQE to
 *        the BF window -> release fence (sys) -> bytes 0..7 (the soft NIC
 *        takes a change of the first 8 bytes as the doorbell, then reads the
 *        record and the rest of the window).
 * Receive doorbell (kinet_dev_rq_ring): release fence, then the 16-bit head
 * in dbrec[RECV].  Only the poster whose turn it is rings (sq.cuh, rq.cuh),
 * so doorbell values only grow.
 */
#ifndef KINET_DEVICE_DOORBELL_CUH
#define KINET_DEVICE_DOORBELL_CUH

#include "kinet/device/impl/scope.cuh"
#include "kinet/device/platform.cuh"
#include "kinet/device/types.h"
#include "kinet/device/wqe.cuh"
#include "kinet/kinet.h"
#include "kinet/wire.h"

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
			kinet_devi_wqe_load(qp, pi - 1, q);
		}
		/* 1. WQE stores before the doorbell record. */
		kinet_dev_fence_release_sys();
		kinet_devi_store_relaxed_u32(&qp->dbrec[KINET_DBR_SEND], kinet_be32((uint32_t)pi & 0xffffu));
		if (qp->db_mode == KINET_DB_GPU) {
			/* 2. doorbell record before the doorbell register. */
			kinet_dev_fence_release_sys();
			kinet_devi_store_relaxed_u64(qp->uar_db, q[0]);
		} else {
			uint64_t *bf = qp->bf ? qp->bf : qp->uar_db;
			for (int i = 1; i < 8; i++)
				kinet_devi_store_relaxed_u64(&bf[i], q[i]);
			/* 2. record and bytes 8..63 before the first 8 (the trigger). */
			kinet_dev_fence_release_sys();
			kinet_devi_store_relaxed_u64(&bf[0], q[0]);
		}
	} else {
		/* CPU mode: WQE stores before the producer index; a max, so
		 * callers may ring in any order (the high level, which rings in
		 * index order, stores instead: impl/sq.cuh). */
		kinet_dev_fence_release_sys();
		kinet_devi_atomic_max_u64(qp->db_cpu_pi, pi);
	}
}

/* Low level: publishes slots [idx, idx+n) as ready (no ordering check: the
 * caller orders).  kinet_dev_sq_submit() then rings up to sq_ready. */
KINET_DEV_FN void kinet_dev_sq_mark_ready(struct kinet_dev_qp *qp, uint64_t idx, uint32_t n)
{
	kinet_devi_scoped_store_release_u64(kinet_devi_qp_scope(qp), &qp->sq_ready, idx + n);
}

/* Low level: rings the doorbell for everything marked ready (the WQE at
 * sq_ready - 1 must be a one-BB WQE, as all the builders make; GPU and BF
 * modes read it back from the ring: prefer kinet_dev_sq_ring with last). */
KINET_DEV_FN void kinet_dev_sq_submit(struct kinet_dev_qp *qp)
{
	uint64_t pi = kinet_devi_scoped_load_acquire_u64(kinet_devi_qp_scope(qp), &qp->sq_ready);
	if (pi)
		kinet_dev_sq_ring(qp, pi, NULL);
}

/* Low level: receive doorbell for pi receive WQEs posted (release fence,
 * then the 16-bit head in dbrec[KINET_DBR_RECV]). */
KINET_DEV_FN void kinet_dev_rq_ring(struct kinet_dev_qp *qp, uint64_t pi)
{
	kinet_dev_fence_release_sys();
	kinet_devi_store_relaxed_u32(&qp->dbrec[KINET_DBR_RECV], kinet_be32((uint32_t)pi & 0xffffu));
}

#endif /* KINET_DEVICE_DOORBELL_CUH */
