/*
 * A host post wakes a sleeping engine thread at once.  The engine is told
 * to sleep as soon as it idles, its sleeps doubling up to 2 s
 * (KINET_ENGINE_SPIN_US=0, KINET_ENGINE_YIELD_US=0,
 * KINET_ENGINE_SLEEP_MAX_US); after each idle spell (the thread's sleep
 * counter says it slept) a write posted from the host completes far sooner
 * than the sleep it interrupted, in every doorbell mode.  Also a receive
 * posted to a sleeping engine lets a waiting send complete.
 */
#include "kt_host.h"

/* The sleeps double from 20 us: the 15th runs from 327 to 655 ms into an
 * idle spell, so a post at 350 ms that the engine missed would wait
 * ~300 ms. */
#define IDLE_MS 350
#define ROUNDS 3
#define WAKE_BOUND_MS 100

static void engine_sleeps_long(void)
{
	setenv("KINET_ENGINE_SPIN_US", "0", 1);
	setenv("KINET_ENGINE_YIELD_US", "0", 1);
	setenv("KINET_ENGINE_SLEEP_MAX_US", "2000000", 1);
}

static uint64_t slept_ns(struct kinet_ctx *ctx)
{
	struct kinet_engine_stats st;

	return kinet_ctx_engine_stats(ctx, 0, &st) == 1 ? st.sleep_ns : 0;
}

/* A context whose engine sleeps long, a pair in it, two 64-byte buffers. */
struct sleeper {
	struct kinet_ctx *ctx;
	struct kt_pair p;
	struct kt_buf src, dst;
};

static int sleeper_open(struct sleeper *w, enum kinet_db_mode mode, uint32_t rnr_timeout_ms)
{
	struct kt_pair_opts po;
	int rc;

	engine_sleeps_long();
	if ((rc = kt_ctx_open(1, &w->ctx)))
		return rc;
	kt_pair_opts_init(&po);
	po.db_mode = mode;
	po.rnr_timeout_ms = rnr_timeout_ms;
	if ((rc = kt_pair_create(&w->p, w->ctx, w->ctx, &po)) ||
	    (rc = kt_buf_alloc(w->ctx, &w->src, 64, KT_ACC_ALL, 1)))
		return rc;
	return kt_buf_alloc(w->ctx, &w->dst, 64, KT_ACC_ALL, 0);
}

static int sleeper_close(struct sleeper *w)
{
	kt_buf_free(&w->dst);
	kt_buf_free(&w->src);
	kt_pair_destroy(&w->p);
	return kinet_ctx_close(w->ctx);
}

static void wake_by_post(enum kinet_db_mode mode)
{
	struct sleeper w;
	struct kinet_wc wc;

	KT_OK(sleeper_open(&w, mode, 200));
	for (int r = 0; r < ROUNDS; r++) {
		uint64_t before = slept_ns(w.ctx);
		kt_sleep_ms(IDLE_MS);
		KT_CHECK(slept_ns(w.ctx) - before > IDLE_MS / 2 * 1000000ull);
		struct kinet_sge sge = kt_sge(&w.src, 0, 64);
		struct kinet_send_wr wr = kt_wr(100 + (uint64_t)r, KINET_WR_RDMA_WRITE, KINET_SEND_SIGNALED,
						&sge, 1, kt_addr(&w.dst, 0), kt_rkey(&w.dst));
		w.src.p[0] = (uint8_t)(r + 1);
		uint64_t t0 = kt_now_ms();
		KT_OK(kt_post(w.p.qp[0], &wr));
		KT_OK(kt_poll1(w.p.cq[0], &wc));
		uint64_t took = kt_now_ms() - t0;
		KT_OK(kt_wc_expect(&wc, 100 + (uint64_t)r, 0));
		KT_CHECK_EQ(w.dst.p[0], r + 1);
		printf("  %s doorbell, round %d: completed %llu ms after the post\n",
		       mode == KINET_DB_CPU   ? "CPU"
		       : mode == KINET_DB_GPU ? "GPU"
					      : "BlueFlame",
		       r, (unsigned long long)took);
		KT_CHECK(took < WAKE_BOUND_MS);
	}
	KT_OK(sleeper_close(&w));
}

KT_TEST(post_wakes_cpu_doorbell)
{
	wake_by_post(KINET_DB_CPU);
}

KT_TEST(post_wakes_gpu_doorbell)
{
	wake_by_post(KINET_DB_GPU);
}

KT_TEST(post_wakes_blueflame)
{
	wake_by_post(KINET_DB_BF);
}

/* A send waits at the responder for a receive (RNR); the receive posted
 * while the engine sleeps lets it complete. */
KT_TEST(receive_wakes)
{
	struct sleeper w;
	struct kinet_wc wc;

	KT_OK(sleeper_open(&w, KINET_DB_AUTO, 10000));
	struct kinet_sge sge = kt_sge(&w.src, 0, 64);
	struct kinet_send_wr wr = kt_wr(7, KINET_WR_SEND, KINET_SEND_SIGNALED, &sge, 1, 0, 0);
	uint64_t before = slept_ns(w.ctx);
	KT_OK(kt_post(w.p.qp[0], &wr));
	kt_sleep_ms(IDLE_MS); /* the send waits, the engine sleeps between tries */
	KT_CHECK(slept_ns(w.ctx) - before > IDLE_MS / 2 * 1000000ull);
	KT_CHECK_EQ(kt_poll_for(w.p.cq[0], 1, 1, &wc), 0);
	struct kinet_sge rsge = kt_sge(&w.dst, 0, 64);
	uint64_t t0 = kt_now_ms();
	KT_OK(kt_post_recv(w.p.qp[1], 8, &rsge, 1));
	KT_OK(kt_poll1(w.p.cq[0], &wc));
	uint64_t took = kt_now_ms() - t0;
	KT_OK(kt_wc_expect(&wc, 7, 0));
	printf("  send completed %llu ms after the receive was posted\n", (unsigned long long)took);
	KT_CHECK(took < WAKE_BOUND_MS);
	KT_OK(sleeper_close(&w));
}

KT_MAIN(post_wakes_cpu_doorbell, post_wakes_gpu_doorbell, post_wakes_blueflame, receive_wakes)
