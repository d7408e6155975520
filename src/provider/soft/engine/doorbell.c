/*
 * How the software NIC learns a QP's producer index, per doorbell mode
 * (docs/architecture/wire.md, the doorbell modes), as ConnectX does: nothing is executed until the doorbell
 * the mode calls for has been rung.
 *
 * GPU and BlueFlame modes: the 8-byte doorbell is an event, not a state.
 * The engine takes each value it finds and clears the word, so a repeated
 * value (GPUNetIO rings twice) or an older value rung again over a newer
 * one (A, B, A) is still a doorbell.  The value's producer index is
 * authoritative; the doorbell record is read at each doorbell as a hint
 * and counts too when it is ahead (every poster writes it after its WQEs).
 * QPN 0 does not exist, so a cleared word never looks like a doorbell.
 */
#include <string.h>

#include "engine.h"

/* Where a 16-bit counter (a doorbell value's index, the doorbell record)
 * puts the producer index: at most a ring ahead of execution.  0 and *pi;
 * 1 when it is behind execution (a stale value: ignored); -1 when it
 * cannot be right. */
static int db_extend16(const struct kinet_qp *qp, uint16_t v, uint64_t *pi)
{
	int16_t d = (int16_t)(uint16_t)(v - (uint16_t)kinet_sqp(qp)->sq_ci);

	if (d < 0)
		return 1;
	if ((uint32_t)d > qp->sq_bbs)
		return -1;
	*pi = kinet_sqp(qp)->sq_ci + (uint64_t)d;
	return 0;
}

/* The producer index an 8-byte doorbell value announces.  A plain doorbell
 * (ds 0; what GPUNetIO, NVSHMEM and DOCA's CPU proxy write) carries it as
 * its WQE index; the first 8 bytes of a WQE (a BlueFlame copy, or
 * rdma-core's doorbell) announce that WQE, which ends bbs(ds) blocks
 * later. */
static int db_value_pi(const struct kinet_qp *qp, uint64_t v, uint64_t *pi)
{
	struct kinet_wqe_ctrl_seg c;
	uint32_t ds;

	memcpy(&c, &v, sizeof(v));
	if (kinet_wqe_ctrl_qpn(&c) != qp->qpn)
		return -1;
	ds = kinet_wqe_ctrl_ds(&c);
	return db_extend16(qp, (uint16_t)(kinet_wqe_ctrl_index(&c) + (ds ? kinet_wqe_bbs(ds) : 0)), pi);
}

/* A doorbell that cannot be right: ignored, logged once per QP (the
 * engine may see it on every pass), counted. */
static void db_bad(struct kinet_qp *qp, const char *what, uint64_t v)
{
	if (v == kinet_sqp(qp)->db_bad_value && kinet_sqp(qp)->db_bad)
		return;
	kinet_sqp(qp)->db_bad_value = v;
	if (!kinet_sqp(qp)->db_bad++)
		KINET_WARN("QP %u: bad %s 0x%016llx (execution at %llu, ring of %u); ignored, further bad "
			   "doorbells of this QP are only counted",
			   qp->qpn, what, (unsigned long long)v, (unsigned long long)kinet_sqp(qp)->sq_ci,
			   qp->sq_bbs);
}

/* BlueFlame: a copy of a WQE (ds > 0) should be the WQE the ring holds at
 * its index.  ConnectX would execute the copy; the software NIC executes
 * the ring and counts disagreements, which only a writer racing its own
 * doorbell (or a copy seen while it is being written) produces.  A plain
 * doorbell written over the copy (GPUNetIO) carries no copy to check. */
static void check_bf_copy(struct kinet_qp *qp, const volatile uint8_t *window, uint64_t db)
{
	uint8_t copy[KINET_UAR_BF_SIZE];
	const struct kinet_wqe_ctrl_seg *ctrl = (const void *)copy;

	memcpy(copy, &db, sizeof(db));
	if (!kinet_wqe_ctrl_ds(ctrl) || kinet_wqe_ctrl_qpn(ctrl) != qp->qpn)
		return;
	for (unsigned i = sizeof(db); i < sizeof(copy); i++)
		copy[i] = window[i];
	uint16_t idx = kinet_wqe_ctrl_index(ctrl);
	const uint8_t *bb = qp->sq + (size_t)(idx & (qp->sq_bbs - 1)) * KINET_WQE_BB_SIZE;
	if (memcmp(bb, copy, sizeof(copy)))
		kinet_sqp(qp)->bf_mismatch++;
}

static uint64_t read_cpu(struct kinet_qp *qp)
{
	uint64_t pi = atomic_load_explicit(qp->db_cpu, memory_order_acquire);

	if (pi <= kinet_sqp(qp)->sq_seen_pi)
		return kinet_sqp(qp)->sq_seen_pi;
	if (pi - kinet_sqp(qp)->sq_ci > qp->sq_bbs) {
		db_bad(qp, "producer index", pi);
		return kinet_sqp(qp)->sq_seen_pi;
	}
	return pi;
}

static uint64_t read_uar(struct kinet_qp *qp)
{
	_Atomic uint64_t *db = (_Atomic uint64_t *)(void *)kinet_qp_db_reg(qp);
	uint64_t pi = kinet_sqp(qp)->sq_seen_pi, p, v;
	uint32_t rec;
	int rc;

	/* A load first: the common empty case leaves the line shared. */
	if (!atomic_load_explicit(db, memory_order_relaxed))
		return pi;
	v = atomic_exchange_explicit(db, 0, memory_order_acquire);
	if (qp->db_mode == KINET_DB_BF)
		check_bf_copy(qp, (const volatile uint8_t *)db, v);
	rc = db_value_pi(qp, v, &p);
	if (rc < 0)
		db_bad(qp, "doorbell", v);
	else if (!rc && p > pi)
		pi = p;
	rec = kinet_be32(__atomic_load_n(&qp->dbrec[KINET_DBR_SEND], __ATOMIC_ACQUIRE));
	rc = db_extend16(qp, (uint16_t)rec, &p);
	if (rc < 0)
		db_bad(qp, "doorbell record", rec);
	else if (!rc && p > pi)
		pi = p;
	return pi;
}

bool kinet_engine_db_pending(struct kinet_qp *qp)
{
	uint64_t pi;

	if (qp->db_mode != KINET_DB_CPU)
		return atomic_load_explicit((_Atomic uint64_t *)(void *)kinet_qp_db_reg(qp),
					    memory_order_relaxed) != 0;
	pi = atomic_load_explicit(qp->db_cpu, memory_order_relaxed);
	return pi > kinet_sqp(qp)->sq_seen_pi && pi - kinet_sqp(qp)->sq_ci <= qp->sq_bbs;
}

uint64_t kinet_engine_read_pi(struct kinet_qp *qp)
{
	kinet_sqp(qp)->sq_seen_pi = qp->db_mode == KINET_DB_CPU ? read_cpu(qp) : read_uar(qp);
	return kinet_sqp(qp)->sq_seen_pi;
}
