/*
 * How the software NIC learns a QP's producer index, per doorbell mode
 * (DESIGN.md §4).  Each mode is honoured as hardware would: nothing is
 * executed until the doorbell the mode calls for has been rung.
 */
#include <string.h>

#include "engine.h"

/* BlueFlame: the 64-byte copy in the window should be the WQE the ring
 * holds at that index.  ConnectX would execute the copy; the software NIC
 * executes the ring and counts disagreements, which only a writer racing
 * its own doorbell (or a torn read of a later copy) produces. */
static void check_bf_copy(struct kinet_qp *qp, const volatile uint8_t *window, uint64_t db)
{
	uint8_t copy[KINET_UAR_BF_SIZE];
	const struct kinet_wqe_ctrl_seg *ctrl = (const void *)copy;

	for (unsigned i = 0; i < sizeof(copy); i++)
		copy[i] = window[i];
	memcpy(copy, &db, sizeof(db));
	uint16_t idx = kinet_wqe_ctrl_index(ctrl);
	const uint8_t *bb = qp->sq + (size_t)(idx & (qp->sq_bbs - 1)) * KINET_WQE_BB_SIZE;
	if (memcmp(bb, copy, sizeof(copy)))
		qp->bf_mismatch++;
}

uint64_t kinet_engine_read_pi(struct kinet_qp *qp)
{
	uint64_t pi;

	if (qp->db_mode == KINET_DB_CPU) {
		pi = atomic_load_explicit(qp->db_cpu, memory_order_acquire);
	} else {
		_Atomic uint64_t *db = (_Atomic uint64_t *)(void *)(qp->uar + KINET_UAR_DB_OFFSET);
		uint64_t v = atomic_load_explicit(db, memory_order_acquire);

		if (v == qp->uar_seen)
			return qp->sq_seen_pi;
		qp->uar_seen = v;
		/* The poster wrote the doorbell record before the doorbell, so
		 * the record is at least as new as the doorbell just seen. */
		uint32_t rec = __atomic_load_n(&qp->dbrec[KINET_DBR_SEND], __ATOMIC_ACQUIRE);
		pi = kinet_extend16(qp->sq_seen_pi, (uint16_t)kinet_be32(rec));
		if (qp->db_mode == KINET_DB_BF)
			check_bf_copy(qp, (const volatile uint8_t *)(qp->uar + KINET_UAR_DB_OFFSET), v);
	}
	/* A producer index behind what was seen, or more than a ring ahead of
	 * execution, is garbage: never execute slots nobody wrote. */
	if (pi < qp->sq_seen_pi)
		return qp->sq_seen_pi;
	if (pi - qp->sq_ci > qp->sq_bbs) {
		KINET_WARN("QP %u: doorbell claims %llu WQE blocks in a ring of %u; ignored", qp->qpn,
			   (unsigned long long)(pi - qp->sq_ci), qp->sq_bbs);
		return qp->sq_seen_pi;
	}
	qp->sq_seen_pi = pi;
	return pi;
}
