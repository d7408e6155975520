/*
 * Hand-built WQEs through kinet_qp_post_wqe: well-formed ones work (so the
 * builders below are right), malformed ones (unknown opcode, bad segment
 * count, wrong QP number, inline data running past the WQE) give
 * LOCAL_QP_OP_ERR, put the QP in error and touch nothing.
 */
#include "kt_host.h"

#define LEN 4096

struct env {
	struct kinet_ctx *ctx;
	struct kt_pair p;
	struct kt_buf loc, rem;
	uint32_t qpn;
	int ok;
};

static void env_open(struct env *e)
{
	memset(e, 0, sizeof(*e));
	KT_OK(kt_ctx_open(1, &e->ctx));
	KT_OK(kt_pair_create(&e->p, e->ctx, e->ctx, NULL));
	KT_OK(kt_buf_alloc(e->ctx, &e->loc, LEN, KT_ACC_ALL, 0x11));
	KT_OK(kt_buf_alloc(e->ctx, &e->rem, LEN, KT_ACC_ALL, 0x22));
	e->qpn = kinet_qp_num(e->p.qp[0]);
	e->ok = 1;
}

static void env_close(struct env *e)
{
	kt_buf_free(&e->loc);
	kt_buf_free(&e->rem);
	kt_pair_destroy(&e->p);
	kinet_ctx_close(e->ctx);
}

/* Up to 4 basic blocks. */
union wqe {
	uint8_t b[4 * KINET_WQE_BB_SIZE];
	struct kinet_wqe_ctrl_seg ctrl;
};

static struct kinet_wqe_raddr_seg *seg_raddr(union wqe *w)
{
	return (struct kinet_wqe_raddr_seg *)(void *)(w->b + 16);
}

static struct kinet_wqe_data_seg *seg_data(union wqe *w, unsigned unit)
{
	return (struct kinet_wqe_data_seg *)(void *)(w->b + 16 * unit);
}

static void build_write(struct env *e, union wqe *w, uint8_t fm)
{
	memset(w, 0, sizeof(*w));
	kinet_wqe_set_ctrl(&w->ctrl, KINET_WQE_OP_RDMA_WRITE, 0, e->qpn, 3, fm, 0);
	kinet_wqe_set_raddr(seg_raddr(w), kt_addr(&e->rem, 0), kt_rkey(&e->rem));
	kinet_wqe_set_data(seg_data(w, 2), kt_addr(&e->loc, 0), 64, kt_lkey(&e->loc));
}

static void build_fa(struct env *e, union wqe *w, uint8_t fm)
{
	memset(w, 0, sizeof(*w));
	kinet_wqe_set_ctrl(&w->ctrl, KINET_WQE_OP_ATOMIC_FA, 0, e->qpn, 4, fm, 0);
	kinet_wqe_set_raddr(seg_raddr(w), kt_addr(&e->rem, 0), kt_rkey(&e->rem));
	kinet_wqe_set_atomic((struct kinet_wqe_atomic_seg *)(void *)(w->b + 32), 7, 0);
	kinet_wqe_set_data(seg_data(w, 3), kt_addr(&e->loc, 0), 8, kt_lkey(&e->loc));
}

static void build_nop(struct env *e, union wqe *w, uint8_t fm)
{
	memset(w, 0, sizeof(*w));
	kinet_wqe_set_ctrl(&w->ctrl, KINET_WQE_OP_NOP, 0, e->qpn, 1, fm, 0);
}

/* Inline write of len bytes of pattern; returns the BBs used. */
static uint32_t build_inline_write(struct env *e, union wqe *w, uint32_t len, uint8_t fm)
{
	uint32_t ds = 2 + kinet_inline_ds(len);
	memset(w, 0, sizeof(*w));
	kinet_wqe_set_ctrl(&w->ctrl, KINET_WQE_OP_RDMA_WRITE, 0, e->qpn, ds, fm, 0);
	kinet_wqe_set_raddr(seg_raddr(w), kt_addr(&e->rem, 0), kt_rkey(&e->rem));
	uint32_t hdr = kinet_be32(KINET_INLINE_SEG_FLAG | len);
	memcpy(w->b + 32, &hdr, 4);
	for (uint32_t i = 0; i < len; i++)
		w->b[36 + i] = (uint8_t)(i + 1);
	return kinet_wqe_bbs(ds);
}

KT_TEST(well_formed)
{
	struct env e;
	union wqe w;
	struct kinet_wc wc;

	env_open(&e);
	KT_CHECK(e.ok);
	build_nop(&e, &w, KINET_WQE_CTRL_CQ_UPDATE);
	KT_OK(kinet_qp_post_wqe(e.p.qp[0], &w, 1, 1));
	KT_OK(kt_poll1(e.p.cq[0], &wc));
	KT_OK(kt_wc_expect(&wc, 1, 0));
	KT_CHECK_EQ(wc.opcode, KINET_WC_NOP);
	KT_CHECK_EQ(wc.wqe_counter, 0);

	kt_fill_pattern(e.loc.p, 64, 4);
	build_write(&e, &w, KINET_WQE_CTRL_CQ_UPDATE);
	KT_OK(kinet_qp_post_wqe(e.p.qp[0], &w, 1, 2));
	KT_OK(kt_poll1(e.p.cq[0], &wc));
	KT_OK(kt_wc_expect(&wc, 2, 0));
	KT_CHECK_EQ(wc.opcode, KINET_WC_RDMA_WRITE);
	KT_CHECK_EQ(wc.wqe_counter, 1);
	KT_CHECK(memcmp(e.rem.p, e.loc.p, 64) == 0);

	uint64_t v = 40;
	memcpy(e.rem.p, &v, 8);
	build_fa(&e, &w, KINET_WQE_CTRL_CQ_UPDATE);
	KT_OK(kinet_qp_post_wqe(e.p.qp[0], &w, 1, 3));
	KT_OK(kt_poll1(e.p.cq[0], &wc));
	KT_OK(kt_wc_expect(&wc, 3, 0));
	KT_CHECK_EQ(wc.opcode, KINET_WC_FETCH_ADD);
	memcpy(&v, e.rem.p, 8);
	KT_CHECK_EQ(v, 47);
	memcpy(&v, e.loc.p, 8);
	KT_CHECK_EQ(v, 40);

	/* A two-BB inline write. */
	uint32_t nbb = build_inline_write(&e, &w, 60, KINET_WQE_CTRL_CQ_UPDATE);
	KT_CHECK_EQ(nbb, 2);
	KT_OK(kinet_qp_post_wqe(e.p.qp[0], &w, nbb, 4));
	KT_OK(kt_poll1(e.p.cq[0], &wc));
	KT_OK(kt_wc_expect(&wc, 4, 0));
	for (int i = 0; i < 60; i++)
		KT_CHECK_EQ(e.rem.p[i], i + 1);
	KT_CHECK(kt_mem_is(e.rem.p + 64, 0x22, LEN - 64));

	/* Without CQ_UPDATE: no completion. */
	build_nop(&e, &w, 0);
	KT_OK(kinet_qp_post_wqe(e.p.qp[0], &w, 1, 5));
	KT_CHECK_EQ(kt_poll_for(e.p.cq[0], 20, 1, &wc), 0);
	KT_CHECK_EQ(kinet_qp_get_state(e.p.qp[0]), KINET_QPS_RTS);
	env_close(&e);
}

/*
 * Posts w (nbb BBs, no CQ_UPDATE), expects its error CQE
 * (synd, or alt when alt != 0), then a signaled NOP flushed, the QP in
 * error, nothing written.
 * A post refused up front with -EINVAL is accepted when einval_ok.
 */
static void expect_bad(struct env *e, union wqe *w, uint32_t nbb, int synd, int alt, bool einval_ok)
{
	struct kinet_wc wc;
	union wqe nop;

	int rc = kinet_qp_post_wqe(e->p.qp[0], w, nbb, 66);
	if (einval_ok && rc == -EINVAL) {
		KT_CHECK_EQ(kt_poll_for(e->p.cq[0], 20, 1, &wc), 0);
		KT_CHECK(kt_mem_is(e->rem.p, 0x22, LEN));
		return;
	}
	KT_OK(rc);
	/* The error first, so the engine never takes the follower for part of
	 * the bad WQE. */
	KT_OK(kt_poll1(e->p.cq[0], &wc));
	if (alt && wc.status == alt)
		wc.status = synd;
	KT_OK(kt_wc_expect(&wc, 66, synd));
	KT_CHECK_EQ(wc.wqe_counter, 0);
	KT_CHECK_EQ(wc.qp_num, e->qpn);
	build_nop(e, &nop, KINET_WQE_CTRL_CQ_UPDATE);
	KT_OK(kinet_qp_post_wqe(e->p.qp[0], &nop, 1, 67));
	KT_OK(kt_poll1(e->p.cq[0], &wc));
	KT_OK(kt_wc_expect(&wc, 67, KINET_SYND_WR_FLUSH_ERR));
	KT_CHECK_EQ(kinet_qp_get_state(e->p.qp[0]), KINET_QPS_ERR);
	KT_CHECK(kt_mem_is(e->rem.p, 0x22, LEN));
	KT_CHECK(kt_mem_is(e->loc.p, 0x11, LEN));
	KT_CHECK(kt_buf_guards_ok(&e->rem));
	KT_CHECK(kt_buf_guards_ok(&e->loc));
	KT_OK(kt_smoke(e->ctx));
}

#define BAD_CASE(name, ...)                                                                                  \
	KT_TEST(name)                                                                                        \
	{                                                                                                    \
		struct env env, *e = &env;                                                                   \
		union wqe w;                                                                                 \
		env_open(e);                                                                                 \
		KT_CHECK(e->ok);                                                                             \
		__VA_ARGS__;                                                                                 \
		env_close(e);                                                                                \
	}

BAD_CASE(unknown_opcodes, {
	static const uint8_t ops[] = {0x01, 0x05, 0x0c, 0x0f, 0x13, 0x14, 0x1d, 0x25, 0xff};
	for (unsigned i = 0; i < sizeof(ops); i++) {
		if (i) {
			env_close(e);
			env_open(e);
			KT_CHECK(e->ok);
		}
		build_write(e, &w, 0);
		w.ctrl.opmod_idx_opcode = kinet_be32(ops[i]);
		int before = kt_failed_checks;
		expect_bad(e, &w, 1, KINET_SYND_LOCAL_QP_OP_ERR, 0, false);
		if (kt_failed_checks != before)
			fprintf(stderr, "  (opcode 0x%02x)\n", ops[i]);
	}
})

BAD_CASE(ds_zero, {
	build_write(e, &w, 0);
	kinet_wqe_set_ctrl(&w.ctrl, KINET_WQE_OP_RDMA_WRITE, 0, e->qpn, 0, 0, 0);
	expect_bad(e, &w, 1, KINET_SYND_LOCAL_QP_OP_ERR, 0, true);
})

BAD_CASE(ds_zero_nop, {
	build_nop(e, &w, 0);
	kinet_wqe_set_ctrl(&w.ctrl, KINET_WQE_OP_NOP, 0, e->qpn, 0, 0, 0);
	expect_bad(e, &w, 1, KINET_SYND_LOCAL_QP_OP_ERR, 0, true);
})

/* RDMA write without its remote-address segment. */
BAD_CASE(write_ds_too_small, {
	build_write(e, &w, 0);
	kinet_wqe_set_ctrl(&w.ctrl, KINET_WQE_OP_RDMA_WRITE, 0, e->qpn, 1, 0, 0);
	expect_bad(e, &w, 1, KINET_SYND_LOCAL_QP_OP_ERR, 0, false);
})

BAD_CASE(read_ds_too_small, {
	build_write(e, &w, 0);
	kinet_wqe_set_ctrl(&w.ctrl, KINET_WQE_OP_RDMA_READ, 0, e->qpn, 1, 0, 0);
	expect_bad(e, &w, 1, KINET_SYND_LOCAL_QP_OP_ERR, 0, false);
})

/* Atomic without its data segment (ds 3) or atomic segment (ds 2). */
BAD_CASE(atomic_ds_too_small, {
	for (uint32_t ds = 1; ds <= 3; ds++) {
		if (ds > 1) {
			env_close(e);
			env_open(e);
			KT_CHECK(e->ok);
		}
		build_fa(e, &w, 0);
		kinet_wqe_set_ctrl(&w.ctrl, KINET_WQE_OP_ATOMIC_FA, 0, e->qpn, ds, 0, 0);
		int before = kt_failed_checks;
		expect_bad(e, &w, 1, KINET_SYND_LOCAL_QP_OP_ERR, 0, false);
		if (kt_failed_checks != before)
			fprintf(stderr, "  (ds %u)\n", ds);
	}
})

/* ds says 8 units (two BBs) but only one BB was posted. */
BAD_CASE(ds_past_posted, {
	build_write(e, &w, 0);
	kinet_wqe_set_ctrl(&w.ctrl, KINET_WQE_OP_RDMA_WRITE, 0, e->qpn, 8, 0, 0);
	for (unsigned u = 3; u < 8; u++)
		kinet_wqe_set_data(seg_data(&w, u), kt_addr(&e->loc, 0), 64, kt_lkey(&e->loc));
	expect_bad(e, &w, 1, KINET_SYND_LOCAL_QP_OP_ERR, 0, true);
})

BAD_CASE(wrong_qpn, {
	build_write(e, &w, 0);
	kinet_wqe_set_ctrl(&w.ctrl, KINET_WQE_OP_RDMA_WRITE, 0, e->qpn + 1, 3, 0, 0);
	expect_bad(e, &w, 1, KINET_SYND_LOCAL_QP_OP_ERR, 0, false);
})

/* The QP number of the peer QP, which exists in the same context. */
BAD_CASE(peer_qpn, {
	build_write(e, &w, 0);
	kinet_wqe_set_ctrl(&w.ctrl, KINET_WQE_OP_RDMA_WRITE, 0, kinet_qp_num(e->p.qp[1]), 3, 0, 0);
	expect_bad(e, &w, 1, KINET_SYND_LOCAL_QP_OP_ERR, 0, false);
})

BAD_CASE(zero_qpn, {
	build_nop(e, &w, 0);
	kinet_wqe_set_ctrl(&w.ctrl, KINET_WQE_OP_NOP, 0, 0, 1, 0, 0);
	expect_bad(e, &w, 1, KINET_SYND_LOCAL_QP_OP_ERR, 0, false);
})

/* Inline byte count larger than the segments the WQE has. */
BAD_CASE(inline_past_wqe, {
	uint32_t nbb = build_inline_write(e, &w, 16, 0);
	KT_CHECK_EQ(nbb, 1);
	uint32_t hdr = kinet_be32(KINET_INLINE_SEG_FLAG | 200);
	memcpy(w.b + 32, &hdr, 4);
	expect_bad(e, &w, 1, KINET_SYND_LOCAL_QP_OP_ERR, KINET_SYND_LOCAL_LENGTH_ERR, false);
})

/* A good WQE, then a bad one, then more good ones: the first lands, the
 * rest is flushed. */
KT_TEST(bad_after_good)
{
	struct env e;
	union wqe w;
	struct kinet_wc wc[3];

	env_open(&e);
	KT_CHECK(e.ok);
	kt_fill_pattern(e.loc.p, 64, 2);
	build_write(&e, &w, KINET_WQE_CTRL_CQ_UPDATE);
	KT_OK(kinet_qp_post_wqe(e.p.qp[0], &w, 1, 1));
	build_nop(&e, &w, 0);
	w.ctrl.opmod_idx_opcode = kinet_be32(0x07);
	KT_OK(kinet_qp_post_wqe(e.p.qp[0], &w, 1, 2));
	build_fa(&e, &w, KINET_WQE_CTRL_CQ_UPDATE);
	KT_OK(kinet_qp_post_wqe(e.p.qp[0], &w, 1, 3));
	KT_CHECK_EQ(kt_poll_n(e.p.cq[0], 3, wc, KT_DEADLINE_MS), 3);
	KT_OK(kt_wc_expect(&wc[0], 1, 0));
	KT_OK(kt_wc_expect(&wc[1], 2, KINET_SYND_LOCAL_QP_OP_ERR));
	KT_CHECK_EQ(wc[1].wqe_counter, 1);
	KT_OK(kt_wc_expect(&wc[2], 3, KINET_SYND_WR_FLUSH_ERR));
	KT_CHECK(memcmp(e.rem.p, e.loc.p, 64) == 0);
	KT_CHECK(kt_mem_is(e.rem.p + 64, 0x22, LEN - 64));
	env_close(&e);
}

/* Many malformed WQEs in a row never take the engine down. */
KT_TEST(garbage_storm)
{
	struct kinet_ctx *ctx;
	uint32_t seed = 12345;

	KT_OK(kt_ctx_open(1, &ctx));
	for (int r = 0; r < 20; r++) {
		struct kt_pair p;
		struct kinet_wc wc[16];
		KT_OK(kt_pair_create(&p, ctx, ctx, NULL));
		for (int i = 0; i < 8; i++) {
			union wqe w;
			for (unsigned j = 0; j < sizeof(w.b); j++) {
				seed = seed * 1103515245u + 12345u;
				w.b[j] = (uint8_t)(seed >> 16);
			}
			/* Random contents but this QP's number and a valid-looking ds,
			 * so the engine has to look deeper. */
			uint32_t ds = 1 + (seed >> 8) % 16;
			w.ctrl.qpn_ds = kinet_be32((kinet_qp_num(p.qp[0]) << 8) | ds);
			w.ctrl.fm_ce_se |= KINET_WQE_CTRL_CQ_UPDATE;
			int rc = kinet_qp_post_wqe(p.qp[0], &w, kinet_wqe_bbs(ds), (uint64_t)i);
			KT_CHECK(rc == 0 || rc == -EINVAL);
		}
		/* Drain whatever completes; errors are expected. */
		kt_poll_for(p.cq[0], 20, 16, wc);
		kt_pair_destroy(&p);
	}
	KT_OK(kt_smoke(ctx));
	kinet_ctx_close(ctx);
}

KT_MAIN(well_formed, unknown_opcodes, ds_zero, ds_zero_nop, write_ds_too_small, read_ds_too_small,
	atomic_ds_too_small, ds_past_posted, wrong_qpn, peer_qpn, zero_qpn, inline_past_wqe, bad_after_good,
	garbage_storm)
