/*
 * kinet device API: errors.
 *
 * A QP's send and receive queues keep the syndrome of their first error CQE
 * (sticky: the QP is in error, later WQEs are flushed); the context keeps
 * its first device-side error in a host-mapped record the host reads with
 * kinet_ctx_last_error().
 */
#ifndef KINET_DEVICE_ERROR_CUH
#define KINET_DEVICE_ERROR_CUH

#include "kinet/device/platform.cuh"
#include "kinet/device/types.h"

/* sq_error / rq_error hold the first error syndrome | this flag. */
#define KINET_DEVI_ERROR_FLAG 0x100u

/* Records the context's first device error (claim with a CAS, fill, then
 * publish `valid` with a system-scope release so the host sees it whole). */
KINET_DEV_FN void kinet_dev_record_error(struct kinet_dev_error *e, int status, uint32_t qpn,
					 uint32_t syndrome, uint32_t opcode, uint32_t wqe_counter)
{
	if (!e || kinet_devi_load_relaxed_u32(&e->claimed))
		return;
	if (kinet_devi_atomic_cas_u32(&e->claimed, 0, 1) != 0)
		return;
	volatile struct kinet_dev_error *v = e;
	v->status = status;
	v->qpn = qpn;
	v->syndrome = syndrome;
	v->opcode = opcode;
	v->wqe_counter = wqe_counter;
	kinet_devi_store_release_u32_sys(&e->valid, 1);
}

/* Sticky syndrome of the first error CQE on the send queue (0: none). */
KINET_DEV_FN uint32_t kinet_dev_qp_error(const struct kinet_dev_qp *qp)
{
	uint32_t e = kinet_devi_load_relaxed_u32(&qp->sq_error);
	return e ? e & 0xffu : 0;
}

/* Same for the receive queue. */
KINET_DEV_FN uint32_t kinet_dev_qp_recv_error(const struct kinet_dev_qp *qp)
{
	uint32_t e = kinet_devi_load_relaxed_u32(&qp->rq_error);
	return e ? e & 0xffu : 0;
}

#endif /* KINET_DEVICE_ERROR_CUH */
