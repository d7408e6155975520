/*
 * Receive side: RNR retry and its limit, receive queue exhaustion, a send
 * longer than the receive buffers, flush of posted receives.
 */
#include "kt_host.h"

struct env {
	struct kinet_ctx *ctx;
	struct kt_pair p;
	struct kt_buf loc, rem;
	int ok;
};

static void env_open(struct env *e, uint32_t rnr_ms)
{
	struct kt_pair_opts o;

	memset(e, 0, sizeof(*e));
	KT_OK(kt_ctx_open(1, &e->ctx));
	kt_pair_opts_init(&o);
	o.rnr_timeout_ms = rnr_ms;
	o.rq_depth = 8;
	KT_OK(kt_pair_create(&e->p, e->ctx, e->ctx, &o));
	KT_OK(kt_buf_alloc(e->ctx, &e->loc, 65536, KT_ACC_ALL, 0x11));
	KT_OK(kt_buf_alloc(e->ctx, &e->rem, 65536, KT_ACC_ALL, 0x22));
	e->ok = 1;
}

static void env_close(struct env *e)
{
	kt_buf_free(&e->loc);
	kt_buf_free(&e->rem);
	kt_pair_destroy(&e->p);
	kinet_ctx_close(e->ctx);
}

/* No receive posted: retried until rnr_timeout_ms, then RNR_RETRY_EXC. */
static void rnr_exceeded(enum kinet_wr_opcode op)
{
	struct env e;
	struct kinet_wc wc;

	env_open(&e, 50);
	KT_CHECK(e.ok);
	struct kinet_sge s = kt_sge(&e.loc, 0, 32);
	struct kinet_send_wr w =
		kt_wr(5, op, KINET_SEND_SIGNALED, &s, 1, kt_addr(&e.rem, 0), kt_rkey(&e.rem));
	struct kinet_send_wr w2 = kt_wr(6, KINET_WR_NOP, KINET_SEND_SIGNALED, NULL, 0, 0, 0);
	uint64_t t0 = kt_now_ms();
	KT_OK(kt_post(e.p.qp[0], &w));
	KT_OK(kt_post(e.p.qp[0], &w2));
	KT_OK(kt_poll1(e.p.cq[0], &wc));
	uint64_t dt = kt_now_ms() - t0;
	KT_OK(kt_wc_expect(&wc, 5, KINET_SYND_RNR_RETRY_EXC_ERR));
	KT_CHECK(dt >= 40);
	KT_CHECK(dt < 2000);
	KT_OK(kt_poll1(e.p.cq[0], &wc));
	KT_OK(kt_wc_expect(&wc, 6, KINET_SYND_WR_FLUSH_ERR));
	KT_CHECK_EQ(kinet_qp_get_state(e.p.qp[0]), KINET_QPS_ERR);
	KT_CHECK(kt_mem_is(e.rem.p, 0x22, e.rem.len));
	KT_CHECK(kt_buf_guards_ok(&e.rem));
	KT_CHECK_EQ(kt_poll_for(e.p.cq[1], 10, 1, &wc), 0);
	env_close(&e);
}

KT_TEST(rnr_send)
{
	rnr_exceeded(KINET_WR_SEND);
}

KT_TEST(rnr_write_imm)
{
	rnr_exceeded(KINET_WR_RDMA_WRITE_WITH_IMM);
}

/* Unsignaled sends report RNR too (errors always complete). */
KT_TEST(rnr_unsignaled)
{
	struct env e;
	struct kinet_wc wc;

	env_open(&e, 30);
	KT_CHECK(e.ok);
	struct kinet_sge s = kt_sge(&e.loc, 0, 32);
	struct kinet_send_wr w = kt_wr(5, KINET_WR_SEND, 0, &s, 1, 0, 0);
	KT_OK(kt_post(e.p.qp[0], &w));
	KT_OK(kt_poll1(e.p.cq[0], &wc));
	KT_OK(kt_wc_expect(&wc, 5, KINET_SYND_RNR_RETRY_EXC_ERR));
	env_close(&e);
}

/* A receive posted while the send is being retried lets it succeed. */
KT_TEST(rnr_recovers)
{
	struct env e;
	struct kinet_wc wc;

	env_open(&e, 3000);
	KT_CHECK(e.ok);
	kt_fill_pattern(e.loc.p, 100, 1);
	struct kinet_sge s = kt_sge(&e.loc, 0, 100);
	struct kinet_send_wr w = kt_wr(5, KINET_WR_SEND, KINET_SEND_SIGNALED, &s, 1, 0, 0);
	KT_OK(kt_post(e.p.qp[0], &w));
	/* Nothing completes while no receive is posted. */
	KT_CHECK_EQ(kt_poll_for(e.p.cq[0], 100, 1, &wc), 0);
	struct kinet_sge r = kt_sge(&e.rem, 0, 128);
	KT_OK(kt_post_recv(e.p.qp[1], 9, &r, 1));
	KT_OK(kt_poll1(e.p.cq[0], &wc));
	KT_OK(kt_wc_expect(&wc, 5, 0));
	KT_OK(kt_poll1(e.p.cq[1], &wc));
	KT_OK(kt_wc_expect(&wc, 9, 0));
	KT_CHECK_EQ(wc.byte_len, 100);
	KT_CHECK(memcmp(e.rem.p, e.loc.p, 100) == 0);
	KT_CHECK_EQ(kinet_qp_get_state(e.p.qp[0]), KINET_QPS_RTS);
	env_close(&e);
}

/* N receives, N+1 sends: N succeed, the last one RNR-errors. */
KT_TEST(exhaustion)
{
	enum { N = 6 };
	struct env e;
	struct kinet_wc wc[N + 1];

	env_open(&e, 50);
	KT_CHECK(e.ok);
	for (int i = 0; i < N; i++) {
		struct kinet_sge r = kt_sge(&e.rem, (size_t)i * 256, 256);
		KT_OK(kt_post_recv(e.p.qp[1], 100 + (uint64_t)i, &r, 1));
	}
	for (int i = 0; i <= N; i++) {
		e.loc.p[i * 256] = (uint8_t)(i + 1);
		struct kinet_sge s = kt_sge(&e.loc, (size_t)i * 256, 200);
		struct kinet_send_wr w = kt_wr((uint64_t)i, KINET_WR_SEND, KINET_SEND_SIGNALED, &s, 1, 0, 0);
		KT_OK(kt_post(e.p.qp[0], &w));
	}
	KT_CHECK_EQ(kt_poll_n(e.p.cq[0], N + 1, wc, KT_DEADLINE_MS), N + 1);
	for (int i = 0; i < N; i++)
		KT_OK(kt_wc_expect(&wc[i], (uint64_t)i, 0));
	KT_OK(kt_wc_expect(&wc[N], N, KINET_SYND_RNR_RETRY_EXC_ERR));
	KT_CHECK_EQ(kt_poll_n(e.p.cq[1], N, wc, KT_DEADLINE_MS), N);
	for (int i = 0; i < N; i++) {
		KT_OK(kt_wc_expect(&wc[i], 100 + (uint64_t)i, 0));
		KT_CHECK_EQ(wc[i].byte_len, 200);
		KT_CHECK_EQ(e.rem.p[i * 256], i + 1);
	}
	KT_CHECK(kt_mem_is(e.rem.p + N * 256, 0x22, e.rem.len - N * 256));
	KT_CHECK_EQ(kinet_qp_get_state(e.p.qp[0]), KINET_QPS_ERR);
	env_close(&e);
}

/* The receive queue holds rq_depth WQEs; it is refilled after consumption. */
KT_TEST(refill)
{
	struct env e;
	struct kinet_wc wc;

	env_open(&e, 200);
	KT_CHECK(e.ok);
	for (int i = 0; i < 200; i++) {
		struct kinet_sge r = kt_sge(&e.rem, (size_t)(i % 8) * 64, 64);
		KT_OK(kt_post_recv(e.p.qp[1], (uint64_t)i, &r, 1));
		struct kinet_sge s = kt_sge(&e.loc, 0, 8);
		memcpy(e.loc.p, &i, sizeof(i));
		struct kinet_send_wr w = kt_wr((uint64_t)i, KINET_WR_SEND, KINET_SEND_SIGNALED, &s, 1, 0, 0);
		KT_OK(kt_post(e.p.qp[0], &w));
		KT_OK(kt_poll1(e.p.cq[0], &wc));
		KT_OK(kt_wc_expect(&wc, (uint64_t)i, 0));
		KT_OK(kt_poll1(e.p.cq[1], &wc));
		KT_OK(kt_wc_expect(&wc, (uint64_t)i, 0));
		int got;
		memcpy(&got, e.rem.p + (i % 8) * 64, sizeof(got));
		KT_CHECK_EQ(got, i);
	}
	env_close(&e);
}

/* More receives than the receive queue holds: refused, not overwritten. */
KT_TEST(rq_full)
{
	struct env e;

	env_open(&e, 200);
	KT_CHECK(e.ok);
	struct kinet_sge r = kt_sge(&e.rem, 0, 64);
	int i, rc = 0;
	for (i = 0; i < 64; i++) {
		rc = kt_post_recv(e.p.qp[1], (uint64_t)i, &r, 1);
		if (rc)
			break;
	}
	KT_CHECK_EQ(i, 8);
	KT_CHECK(rc == -ENOMEM || rc == -EAGAIN);
	env_close(&e);
}

/* A send longer than the receive buffers: requester REMOTE_INVAL_REQ,
 * responder LOCAL_LENGTH, nothing written past the receive buffers. */
KT_TEST(recv_too_small)
{
	struct env e;
	struct kinet_wc wc;

	env_open(&e, 200);
	KT_CHECK(e.ok);
	struct kinet_sge r[2] = {kt_sge(&e.rem, 100, 16), kt_sge(&e.rem, 200, 16)};
	KT_OK(kt_post_recv(e.p.qp[1], 77, r, 2));
	kt_fill_pattern(e.loc.p, 100, 3);
	struct kinet_sge s = kt_sge(&e.loc, 0, 33);
	struct kinet_send_wr w = kt_wr(1, KINET_WR_SEND, KINET_SEND_SIGNALED, &s, 1, 0, 0);
	KT_OK(kt_post(e.p.qp[0], &w));
	KT_OK(kt_poll1(e.p.cq[0], &wc));
	KT_OK(kt_wc_expect(&wc, 1, KINET_SYND_REMOTE_INVAL_REQ_ERR));
	KT_OK(kt_poll1(e.p.cq[1], &wc));
	KT_OK(kt_wc_expect(&wc, 77, KINET_SYND_LOCAL_LENGTH_ERR));
	KT_CHECK_EQ(kinet_qp_get_state(e.p.qp[0]), KINET_QPS_ERR);
	KT_CHECK(kt_mem_is(e.rem.p, 0x22, 100));
	KT_CHECK(kt_mem_is(e.rem.p + 116, 0x22, 84));
	KT_CHECK(kt_mem_is(e.rem.p + 216, 0x22, e.rem.len - 216));
	KT_CHECK(kt_buf_guards_ok(&e.rem));
	env_close(&e);
}

/* Moving a QP to error flushes its posted receives. */
KT_TEST(recv_flush)
{
	struct env e;
	struct kinet_wc wc[4];

	env_open(&e, 200);
	KT_CHECK(e.ok);
	for (int i = 0; i < 3; i++) {
		struct kinet_sge r = kt_sge(&e.rem, (size_t)i * 64, 64);
		KT_OK(kt_post_recv(e.p.qp[1], 40 + (uint64_t)i, &r, 1));
	}
	KT_OK(kinet_qp_set_error(e.p.qp[1]));
	KT_CHECK_EQ(kinet_qp_get_state(e.p.qp[1]), KINET_QPS_ERR);
	KT_CHECK_EQ(kt_poll_n(e.p.cq[1], 3, wc, KT_DEADLINE_MS), 3);
	for (int i = 0; i < 3; i++)
		KT_OK(kt_wc_expect(&wc[i], 40 + (uint64_t)i, KINET_SYND_WR_FLUSH_ERR));
	KT_CHECK_EQ(kt_poll_for(e.p.cq[1], 10, 1, wc), 0);
	KT_CHECK(kt_mem_is(e.rem.p, 0x22, e.rem.len));
	env_close(&e);
}

KT_TEST(recv_without_rq)
{
	struct kinet_ctx *ctx;
	struct kt_pair p;
	struct kt_pair_opts o;
	struct kt_buf b;

	KT_OK(kt_ctx_open(1, &ctx));
	kt_pair_opts_init(&o);
	o.rq_depth = 0;
	KT_OK(kt_pair_create(&p, ctx, ctx, &o));
	KT_OK(kt_buf_alloc(ctx, &b, 64, KT_ACC_ALL, 0));
	struct kinet_sge r = kt_sge(&b, 0, 64);
	KT_CHECK_EQ(kt_post_recv(p.qp[1], 1, &r, 1), -EINVAL);
	kt_buf_free(&b);
	kt_pair_destroy(&p);
	kinet_ctx_close(ctx);
}

KT_MAIN(rnr_send, rnr_write_imm, rnr_unsignaled, rnr_recovers, exhaustion, refill, rq_full, recv_too_small,
	recv_flush, recv_without_rq)
