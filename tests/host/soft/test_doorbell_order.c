/*
 * Doorbells as the NIC sees them, written by hand in the orders real
 * posters use: GPUNetIO rings the doorbell (producer index in the value),
 * then writes the doorbell record, then rings the same value again; a ring
 * can be seen before its record; a value can repeat (A, B, A); BlueFlame
 * copies are followed by a plain doorbell over their first 8 bytes.  None
 * of these may lose work, the BlueFlame check must compare the slot the
 * copy belongs to, and a bad doorbell is logged once, not on every pass.
 */
#include "kt_host.h"

#include "soft.h" /* the software NIC's QP: its BlueFlame check */

#define CHUNK 64

struct db_test {
	struct kinet_ctx *ctx;
	struct kt_pair p;
	struct kinet_qp *qp;
	struct kt_buf src, dst;
};

static int db_test_open(struct db_test *t, enum kinet_db_mode mode)
{
	struct kt_pair_opts o;
	int rc;

	memset(t, 0, sizeof(*t));
	rc = kt_ctx_open(1, &t->ctx);
	if (rc)
		return rc;
	kt_pair_opts_init(&o);
	o.db_mode = mode;
	o.sq_depth = 16;
	o.rq_depth = 0;
	rc = kt_pair_create(&t->p, t->ctx, t->ctx, &o);
	if (!rc)
		rc = kt_buf_alloc(t->ctx, &t->src, 16 * CHUNK, KT_ACC_ALL, 0);
	if (!rc)
		rc = kt_buf_alloc(t->ctx, &t->dst, 16 * CHUNK, KT_ACC_ALL, 0);
	t->qp = t->p.qp[0];
	return rc;
}

static void db_test_close(struct db_test *t)
{
	kt_buf_free(&t->src);
	kt_buf_free(&t->dst);
	kt_pair_destroy(&t->p);
	kinet_ctx_close(t->ctx);
}

/* Writes, into send-queue slot idx, a signaled 64-byte RDMA write of a
 * fresh pattern to dst, and clears the destination. */
static void db_put_wqe(struct db_test *t, uint64_t idx)
{
	uint8_t *w = t->qp->sq + (idx & (t->qp->sq_bbs - 1)) * KINET_WQE_BB_SIZE;
	size_t off = (idx & 15) * CHUNK;

	kt_fill_pattern(t->src.p + off, CHUNK, (uint32_t)idx + 1);
	memset(t->dst.p + off, 0, CHUNK);
	memset(w, 0, KINET_WQE_BB_SIZE);
	kinet_wqe_set_ctrl((struct kinet_wqe_ctrl_seg *)(void *)w, KINET_WQE_OP_RDMA_WRITE, (uint16_t)idx,
			   t->qp->qpn, 3, KINET_WQE_CTRL_CQ_UPDATE, 0);
	kinet_wqe_set_raddr((struct kinet_wqe_raddr_seg *)(void *)(w + 16), kt_addr(&t->dst, off),
			    kt_rkey(&t->dst));
	kinet_wqe_set_data((struct kinet_wqe_data_seg *)(void *)(w + 32), kt_addr(&t->src, off), CHUNK,
			   kt_lkey(&t->src));
}

/* The doorbell value GPUNetIO (and NVSHMEM, and DOCA's CPU proxy) write:
 * opcode 0, WQE index = producer index, QPN, ds 0. */
static uint64_t db_value_pi(const struct db_test *t, uint64_t pi)
{
	struct kinet_wqe_ctrl_seg c;
	uint64_t v;

	memset(&c, 0, sizeof(c));
	c.opmod_idx_opcode = kinet_be32((uint32_t)pi << 8);
	c.qpn_ds = kinet_be32(t->qp->qpn << 8);
	memcpy(&v, &c, sizeof(v));
	return v;
}

static void db_record(struct db_test *t, uint64_t pi)
{
	__atomic_store_n(&t->qp->dbrec[KINET_DBR_SEND], kinet_be32((uint32_t)pi & 0xffff), __ATOMIC_RELEASE);
}

static void db_ring(struct db_test *t, uint64_t v)
{
	__atomic_store_n((uint64_t *)(void *)(t->qp->uar + KINET_UAR_DB_OFFSET), v, __ATOMIC_RELEASE);
}

/* A BlueFlame copy of slot idx: bytes 8..63, then the first 8 (ctrl). */
static void db_bf_copy(struct db_test *t, uint64_t idx, const uint8_t *wqe)
{
	uint8_t *win = t->qp->uar + KINET_UAR_DB_OFFSET;
	uint64_t v;

	if (!wqe)
		wqe = t->qp->sq + (idx & (t->qp->sq_bbs - 1)) * KINET_WQE_BB_SIZE;
	memcpy(win + 8, wqe + 8, KINET_WQE_BB_SIZE - 8);
	memcpy(&v, wqe, sizeof(v));
	db_ring(t, v);
}

/* The completion of WQE idx arrives (within the deadline) and its data
 * landed: 0, else -1. */
static int db_done(struct db_test *t, uint64_t idx)
{
	struct kinet_wc wc;
	size_t off = (idx & 15) * CHUNK;

	if (kt_poll_n(t->p.cq[0], 1, &wc, 2000) != 1) {
		fprintf(stderr, "no completion for WQE %llu\n", (unsigned long long)idx);
		return -1;
	}
	if (wc.status || wc.wqe_counter != (uint16_t)idx || memcmp(t->src.p + off, t->dst.p + off, CHUNK)) {
		fprintf(stderr, "WQE %llu: status 0x%x counter %u or data wrong\n", (unsigned long long)idx,
			wc.status, wc.wqe_counter);
		return -1;
	}
	return 0;
}

/* GPUNetIO's order, the engine looking between the first ring and the
 * record: the value alone announces the WQE. */
static void ring_before_record(enum kinet_db_mode mode)
{
	struct db_test t;

	KT_OK(db_test_open(&t, mode));
	KT_OK(kinet_ctx_pause(t.ctx));
	db_put_wqe(&t, 0);
	db_ring(&t, db_value_pi(&t, 1));
	KT_OK(kinet_ctx_resume(t.ctx));
	kt_sleep_ms(30); /* the engine has looked at the doorbell by now */
	db_record(&t, 1);
	db_ring(&t, db_value_pi(&t, 1));
	KT_OK(db_done(&t, 0));
	/* Then the same in steady state, many times. */
	for (uint64_t i = 1; i < 300; i++) {
		db_put_wqe(&t, i);
		db_ring(&t, db_value_pi(&t, i + 1));
		db_record(&t, i + 1);
		db_ring(&t, db_value_pi(&t, i + 1));
		KT_OK(db_done(&t, i));
	}
	db_test_close(&t);
}

KT_TEST(ring_before_record_gpu)
{
	KT_NEED_SOFT("the software NIC's doorbell parsing");
	ring_before_record(KINET_DB_GPU);
}

KT_TEST(ring_before_record_bf)
{
	KT_NEED_SOFT("the software NIC's doorbell parsing");
	ring_before_record(KINET_DB_BF);
}

/* A poster whose doorbell value does not change (the record carries the
 * new producer index): every ring is a doorbell, even a repeated one. */
static void repeated_value(enum kinet_db_mode mode)
{
	struct db_test t;
	uint64_t v;

	KT_OK(db_test_open(&t, mode));
	db_put_wqe(&t, 0);
	db_record(&t, 1);
	v = db_value_pi(&t, 1);
	db_ring(&t, v);
	KT_OK(db_done(&t, 0));
	for (uint64_t i = 1; i < 100; i++) {
		db_put_wqe(&t, i);
		db_record(&t, i + 1);
		db_ring(&t, v);
		KT_OK(db_done(&t, i));
	}
	db_test_close(&t);
}

KT_TEST(repeated_value_gpu)
{
	KT_NEED_SOFT("the software NIC's doorbell parsing");
	repeated_value(KINET_DB_GPU);
}

KT_TEST(repeated_value_bf)
{
	KT_NEED_SOFT("the software NIC's doorbell parsing");
	repeated_value(KINET_DB_BF);
}

/* A, then B and A again while the engine is not looking: B's work is not
 * lost behind a value the engine has already seen. */
static void a_b_a(enum kinet_db_mode mode)
{
	struct db_test t;

	KT_OK(db_test_open(&t, mode));
	uint64_t a = db_value_pi(&t, 1);
	db_put_wqe(&t, 0);
	db_record(&t, 1);
	db_ring(&t, a);
	KT_OK(db_done(&t, 0));
	for (uint64_t i = 1; i < 50; i++) {
		KT_OK(kinet_ctx_pause(t.ctx));
		db_put_wqe(&t, i);
		db_record(&t, i + 1);
		db_ring(&t, db_value_pi(&t, i + 1));
		db_ring(&t, a);
		KT_OK(kinet_ctx_resume(t.ctx));
		KT_OK(db_done(&t, i));
	}
	db_test_close(&t);
}

KT_TEST(a_b_a_gpu)
{
	KT_NEED_SOFT("the software NIC's doorbell parsing");
	a_b_a(KINET_DB_GPU);
}

KT_TEST(a_b_a_bf)
{
	KT_NEED_SOFT("the software NIC's doorbell parsing");
	a_b_a(KINET_DB_BF);
}

/* GPUNetIO's BlueFlame submit: the WQE copied to the window, the record,
 * then a plain doorbell (producer index) over the copy's first 8 bytes.
 * The check compares a copy with the slot it came from: no mismatch.  A
 * copy that differs from the ring is counted, and the ring is executed. */
KT_TEST(bf_check_slot)
{
	KT_NEED_SOFT("the software NIC's doorbell parsing");
	struct db_test t;
	uint8_t other[KINET_WQE_BB_SIZE];
	uint64_t i;

	KT_OK(db_test_open(&t, KINET_DB_BF));
	for (i = 0; i < 200; i++) {
		db_put_wqe(&t, i);
		db_bf_copy(&t, i, NULL);
		db_record(&t, i + 1);
		db_ring(&t, db_value_pi(&t, i + 1));
		KT_OK(db_done(&t, i));
	}
	KT_CHECK_EQ(kinet_sqp(t.qp)->bf_mismatch, 0);

	db_put_wqe(&t, i);
	memcpy(other, t.qp->sq + (i & (t.qp->sq_bbs - 1)) * KINET_WQE_BB_SIZE, sizeof(other));
	other[40] ^= 0xff; /* another source address */
	db_record(&t, i + 1);
	db_bf_copy(&t, i, other);
	KT_OK(db_done(&t, i));
	KT_CHECK_EQ(kinet_sqp(t.qp)->bf_mismatch, 1);
	db_test_close(&t);
}

/* stderr into a temporary file while a bad doorbell sits there. */
struct log_capture {
	FILE *f;
	int saved;
};

static int log_capture_begin(struct log_capture *c)
{
	fflush(stderr);
	c->f = tmpfile();
	c->saved = dup(2);
	if (!c->f || c->saved < 0 || dup2(fileno(c->f), 2) < 0)
		return -1;
	return 0;
}

/* Restores stderr; returns the lines that contain `what`. */
static int log_capture_end(struct log_capture *c, const char *what)
{
	char line[1024];
	int n = 0;

	fflush(stderr);
	dup2(c->saved, 2);
	close(c->saved);
	rewind(c->f);
	while (fgets(line, sizeof(line), c->f)) {
		if (strstr(line, what))
			n++;
		fputs(line, stderr);
	}
	fclose(c->f);
	return n;
}

/* A producer index a whole ring beyond execution (CPU mode, re-read every
 * pass) or a doorbell naming another QP (GPU mode, rung 100 times): logged
 * once for the QP, never executed, and good doorbells still work. */
KT_TEST(bad_doorbell_logged_once)
{
	KT_NEED_SOFT("the software NIC's doorbell parsing");
	struct db_test t;
	struct log_capture c;
	struct kinet_wc wc;

	kinet_log_set_level(KINET_LOG_WARN); /* whatever KINET_LOG says: warnings, not more */
	KT_OK(db_test_open(&t, KINET_DB_CPU));
	KT_OK(log_capture_begin(&c));
	atomic_store(t.qp->db_cpu, 100000);
	kt_sleep_ms(50);
	atomic_store(t.qp->db_cpu, 0);
	KT_CHECK_EQ(log_capture_end(&c, "doorbell"), 1);
	KT_CHECK_EQ(kinet_cq_poll(t.p.cq[0], 1, &wc), 0);
	db_put_wqe(&t, 0);
	atomic_store(t.qp->db_cpu, 1);
	KT_OK(db_done(&t, 0));
	db_test_close(&t);

	KT_OK(db_test_open(&t, KINET_DB_GPU));
	KT_OK(log_capture_begin(&c));
	db_put_wqe(&t, 0);
	for (int i = 0; i < 100; i++) {
		struct kinet_wqe_ctrl_seg ctrl;
		uint64_t v;

		memset(&ctrl, 0, sizeof(ctrl));
		ctrl.opmod_idx_opcode = kinet_be32(1u << 8);
		ctrl.qpn_ds = kinet_be32((t.qp->qpn + 1) << 8);
		memcpy(&v, &ctrl, sizeof(v));
		db_ring(&t, v);
		kt_sleep_ms(1);
	}
	KT_CHECK_EQ(log_capture_end(&c, "doorbell"), 1);
	KT_CHECK_EQ(kinet_cq_poll(t.p.cq[0], 1, &wc), 0);
	db_record(&t, 1);
	db_ring(&t, db_value_pi(&t, 1));
	KT_OK(db_done(&t, 0));
	db_test_close(&t);
}

KT_MAIN(ring_before_record_gpu, ring_before_record_bf, repeated_value_gpu, repeated_value_bf, a_b_a_gpu,
	a_b_a_bf, bf_check_slot, bad_doorbell_logged_once)
