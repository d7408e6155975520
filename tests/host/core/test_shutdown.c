/*
 * Clean shutdown with work in flight: closing a context or destroying QPs
 * with large writes queued and sends waiting for receives returns promptly
 * and crashes nothing.  Engine pause and resume.
 */
#include "kt_host.h"

#define BIG (4u << 20)

static void load(struct kt_pair *p, struct kt_buf *src, struct kt_buf *dst, int nwrites, int nsends)
{
	for (int i = 0; i < nwrites; i++) {
		struct kinet_sge s = kt_sge(src, 0, BIG);
		struct kinet_send_wr w = kt_wr((uint64_t)i, KINET_WR_RDMA_WRITE, KINET_SEND_SIGNALED, &s, 1,
					       kt_addr(dst, 0), kt_rkey(dst));
		if (kt_post(p->qp[0], &w))
			break;
	}
	/* No receives: these sit in RNR retry. */
	for (int i = 0; i < nsends; i++) {
		struct kinet_sge s = kt_sge(src, 0, 64);
		struct kinet_send_wr w =
			kt_wr(1000 + (uint64_t)i, KINET_WR_SEND, KINET_SEND_SIGNALED, &s, 1, 0, 0);
		if (kt_post(p->qp[1], &w))
			break;
	}
}

static void close_in_flight(int engine_threads, bool two_ctx)
{
	struct kinet_ctx *ctx, *ctx2 = NULL;
	struct kt_pair p[3];
	struct kt_buf src, dst[3];
	struct kt_pair_opts o;

	KT_OK(kt_ctx_open(engine_threads, &ctx));
	if (two_ctx)
		KT_OK(kt_ctx_open(engine_threads, &ctx2));
	kt_pair_opts_init(&o);
	o.rnr_timeout_ms = 60000;
	o.timeout_ms = 60000;
	KT_OK(kt_buf_alloc(ctx, &src, BIG, KT_ACC_ALL, 1));
	/* One target per pair: concurrent writes to one buffer would race. */
	for (int i = 0; i < 3; i++) {
		KT_OK(kt_buf_alloc(two_ctx ? ctx2 : ctx, &dst[i], BIG, KT_ACC_ALL, 2));
		KT_OK(kt_pair_create(&p[i], ctx, two_ctx ? ctx2 : ctx, &o));
		load(&p[i], &src, &dst[i], 32, 16);
	}
	uint64_t t0 = kt_now_ms();
	if (two_ctx) {
		/* The target context goes first: its QPs are peers of live ones. */
		KT_OK(kinet_ctx_close(ctx2));
	}
	KT_OK(kinet_ctx_close(ctx));
	uint64_t dt = kt_now_ms() - t0;
	KT_CHECK(dt < 2000);
	/* The contexts freed the registrations; the memory is ours. */
	free(src.raw);
	for (int i = 0; i < 3; i++)
		free(dst[i].raw);
}

KT_TEST(close_with_work_one_engine)
{
	close_in_flight(1, false);
}

KT_TEST(close_with_work_four_engines)
{
	close_in_flight(4, false);
}

KT_TEST(close_with_work_two_ctx)
{
	close_in_flight(2, true);
}

/* Closing a context whose engine is paused, with work queued. */
KT_TEST(close_paused)
{
	struct kinet_ctx *ctx;
	struct kt_pair p;
	struct kt_buf src, dst;

	KT_OK(kt_ctx_open(1, &ctx));
	KT_OK(kt_pair_create(&p, ctx, ctx, NULL));
	KT_OK(kt_buf_alloc(ctx, &src, BIG, KT_ACC_ALL, 1));
	KT_OK(kt_buf_alloc(ctx, &dst, BIG, KT_ACC_ALL, 2));
	KT_PAUSE(ctx);
	load(&p, &src, &dst, 8, 4);
	uint64_t t0 = kt_now_ms();
	KT_OK(kinet_ctx_close(ctx));
	KT_CHECK(kt_now_ms() - t0 < 2000);
	free(src.raw);
	free(dst.raw);
}

/* Destroying QPs (requester first, or target first) with work outstanding;
 * the context and its other QPs carry on. */
KT_TEST(destroy_qps_in_flight)
{
	struct kinet_ctx *ctx;
	struct kt_buf src, dst;
	struct kt_pair_opts o;

	KT_OK(kt_ctx_open(2, &ctx));
	kt_pair_opts_init(&o);
	o.rnr_timeout_ms = 60000;
	KT_OK(kt_buf_alloc(ctx, &src, BIG, KT_ACC_ALL, 1));
	KT_OK(kt_buf_alloc(ctx, &dst, BIG, KT_ACC_ALL, 2));
	for (int r = 0; r < 6; r++) {
		struct kt_pair p;
		KT_OK(kt_pair_create(&p, ctx, ctx, &o));
		load(&p, &src, &dst, 16, 8);
		uint64_t t0 = kt_now_ms();
		int first = r % 2;
		KT_OK(kinet_qp_destroy(p.qp[first]));
		p.qp[first] = NULL;
		KT_OK(kinet_qp_destroy(p.qp[1 - first]));
		p.qp[1 - first] = NULL;
		KT_CHECK(kt_now_ms() - t0 < 2000);
		kt_pair_destroy(&p);
		KT_OK(kt_smoke(ctx));
	}
	KT_CHECK(kt_buf_guards_ok(&src));
	KT_CHECK(kt_buf_guards_ok(&dst));
	kt_buf_free(&src);
	kt_buf_free(&dst);
	kinet_ctx_close(ctx);
}

/* Target QP destroyed while the requester keeps posting: the requester gets
 * errors within its timeout, never a hang and never a success that wrote
 * into freed state. */
KT_TEST(target_gone)
{
	struct kinet_ctx *ctx;
	struct kt_pair p;
	struct kt_pair_opts o;
	struct kt_buf src, dst;
	struct kinet_wc wc;

	KT_OK(kt_ctx_open(1, &ctx));
	kt_pair_opts_init(&o);
	o.timeout_ms = 300;
	KT_OK(kt_pair_create(&p, ctx, ctx, &o));
	KT_OK(kt_buf_alloc(ctx, &src, 4096, KT_ACC_ALL, 1));
	KT_OK(kt_buf_alloc(ctx, &dst, 4096, KT_ACC_ALL, 2));
	KT_OK(kinet_qp_destroy(p.qp[1]));
	p.qp[1] = NULL;
	struct kinet_sge s = kt_sge(&src, 0, 64);
	struct kinet_send_wr w = kt_wr(7, KINET_WR_SEND, KINET_SEND_SIGNALED, &s, 1, 0, 0);
	KT_OK(kt_post(p.qp[0], &w));
	KT_OK(kt_poll1(p.cq[0], &wc));
	KT_CHECK_EQ(wc.wr_id, 7);
	KT_CHECK(wc.status != 0);
	KT_CHECK_EQ(kinet_qp_get_state(p.qp[0]), KINET_QPS_ERR);
	kt_buf_free(&src);
	kt_buf_free(&dst);
	kt_pair_destroy(&p);
	kinet_ctx_close(ctx);
}

KT_TEST(pause_resume)
{
	struct kinet_ctx *ctx;
	struct kt_pair p;
	struct kt_buf src, dst;
	struct kinet_wc wc;

	KT_OK(kt_ctx_open(1, &ctx));
	KT_OK(kt_pair_create(&p, ctx, ctx, NULL));
	KT_OK(kt_buf_alloc(ctx, &src, 4096, KT_ACC_ALL, 1));
	KT_OK(kt_buf_alloc(ctx, &dst, 4096, KT_ACC_ALL, 2));
	for (int r = 0; r < 3; r++) {
		memset(dst.p, 2, 4096);
		src.p[0] = (uint8_t)(10 + r);
		KT_PAUSE(ctx);
		struct kinet_sge s = kt_sge(&src, 0, 4096);
		struct kinet_send_wr w = kt_wr((uint64_t)r, KINET_WR_RDMA_WRITE, KINET_SEND_SIGNALED, &s, 1,
					       kt_addr(&dst, 0), kt_rkey(&dst));
		KT_OK(kt_post(p.qp[0], &w));
		KT_CHECK_EQ(kt_poll_for(p.cq[0], 100, 1, &wc), 0);
		KT_CHECK(kt_mem_is(dst.p, 2, 4096));
		KT_OK(kinet_ctx_resume(ctx));
		KT_OK(kt_poll1(p.cq[0], &wc));
		KT_OK(kt_wc_expect(&wc, (uint64_t)r, 0));
		KT_CHECK(memcmp(dst.p, src.p, 4096) == 0);
	}
	kt_buf_free(&src);
	kt_buf_free(&dst);
	kt_pair_destroy(&p);
	kinet_ctx_close(ctx);
}

KT_MAIN(close_with_work_one_engine, close_with_work_four_engines, close_with_work_two_ctx, close_paused,
	destroy_qps_in_flight, target_gone, pause_resume)
