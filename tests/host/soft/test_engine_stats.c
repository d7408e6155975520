/*
 * kinet_ctx_engine_stats: QPs spread over the engine threads, every WQE
 * counted once by the thread that ran it, busy time only while there was
 * work, and bad arguments refused; QPs of a remote transport on thread 0,
 * the remote pass's.
 */
#include "kt_host.h"

#define NPAIRS 4
#define NWRITES 64

static void snapshot(struct kinet_ctx *ctx, int n, struct kinet_engine_stats *s)
{
	for (int i = 0; i < n; i++)
		KT_CHECK_EQ(kinet_ctx_engine_stats(ctx, i, &s[i]), n);
}

/* NPAIRS pairs from ini to tgt, queues deep enough for NWRITES. */
static int pairs_create(struct kt_pair *pairs, struct kinet_ctx *ini, struct kinet_ctx *tgt)
{
	struct kt_pair_opts opts;
	int rc = 0;

	kt_pair_opts_init(&opts);
	opts.sq_depth = NWRITES;
	opts.cq_depth = NWRITES * 2;
	for (int i = 0; i < NPAIRS && !rc; i++)
		rc = kt_pair_create(&pairs[i], ini, tgt, &opts);
	return rc;
}

static void pairs_destroy(struct kt_pair *pairs)
{
	for (int i = 0; i < NPAIRS; i++)
		kt_pair_destroy(&pairs[i]);
}

/* NWRITES 8-byte writes from src to dst on every pair's first QP, each
 * pair's completed (successfully) before the next pair's are posted. */
static void write_all(struct kt_pair *pairs, struct kt_buf *src, struct kt_buf *dst)
{
	struct kinet_wc wc[NWRITES];

	for (int i = 0; i < NPAIRS; i++) {
		for (int k = 0; k < NWRITES; k++) {
			struct kinet_sge sg = kt_sge(src, (size_t)k * 8, 8);
			struct kinet_send_wr wr = kt_wr((uint64_t)k, KINET_WR_RDMA_WRITE, KINET_SEND_SIGNALED,
							&sg, 1, kt_addr(dst, (size_t)k * 8), kt_rkey(dst));
			KT_OK(kt_post(pairs[i].qp[0], &wr));
		}
		KT_CHECK_EQ(kt_poll_n(pairs[i].cq[0], NWRITES, wc, KT_DEADLINE_MS), NWRITES);
		for (int k = 0; k < NWRITES; k++)
			KT_CHECK_EQ(wc[k].status, 0);
	}
}

KT_TEST(counts_and_sharding)
{
	struct kinet_ctx *ctx;
	struct kt_pair pairs[NPAIRS];
	struct kt_buf src, dst;
	struct kinet_engine_stats a[2], b[2], bad;
	uint64_t wqes = 0, busy = 0;
	uint32_t qps = 0;

	KT_OK(kt_ctx_open(2, &ctx));
	KT_CHECK_EQ(kinet_ctx_engine_stats(ctx, 2, &bad), -EINVAL);
	KT_CHECK_EQ(kinet_ctx_engine_stats(ctx, -1, &bad), -EINVAL);
	KT_CHECK_EQ(kinet_ctx_engine_stats(ctx, 0, NULL), -EINVAL);
	KT_CHECK_EQ(kinet_ctx_engine_stats(NULL, 0, &bad), -EINVAL);

	KT_OK(pairs_create(pairs, ctx, ctx));
	KT_OK(kt_buf_alloc(ctx, &src, 4096, KT_ACC_ALL, 1));
	KT_OK(kt_buf_alloc(ctx, &dst, 4096, KT_ACC_ALL, 2));

	/* 2 QPs per pair, 8 QPs round robin over 2 threads: 4 each. */
	snapshot(ctx, 2, a);
	KT_CHECK_EQ(a[0].qps, 2 * NPAIRS / 2);
	KT_CHECK_EQ(a[1].qps, 2 * NPAIRS / 2);

	int failed = kt_failed_checks;
	write_all(pairs, &src, &dst);
	KT_CHECK_EQ(kt_failed_checks, failed); /* stop here if a write failed */
	snapshot(ctx, 2, b);
	for (int i = 0; i < 2; i++) {
		wqes += b[i].wqes - a[i].wqes;
		busy += b[i].busy_ns - a[i].busy_ns;
		qps += b[i].qps;
		KT_CHECK(b[i].passes >= a[i].passes);
		KT_CHECK(b[i].busy_passes <= b[i].passes);
	}
	KT_CHECK_EQ(wqes, (uint64_t)NPAIRS * NWRITES);
	KT_CHECK(busy > 0);
	KT_CHECK_EQ(qps, 2 * NPAIRS);

	/* Idle: no WQE and, after a while, idle time grows instead. */
	kt_sleep_ms(20);
	snapshot(ctx, 2, a);
	kt_sleep_ms(20);
	snapshot(ctx, 2, b);
	for (int i = 0; i < 2; i++) {
		KT_CHECK_EQ(b[i].wqes, a[i].wqes);
		KT_CHECK(b[i].spin_ns + b[i].yield_ns + b[i].sleep_ns >
			 a[i].spin_ns + a[i].yield_ns + a[i].sleep_ns);
	}

	pairs_destroy(pairs);
	snapshot(ctx, 2, b);
	KT_CHECK_EQ(b[0].qps + b[1].qps, 0u);
	kt_buf_free(&src);
	kt_buf_free(&dst);
	KT_OK(kinet_ctx_close(ctx));
}

/* Connected over the node transport (forced between two contexts of this
 * process), every QP joins thread 0 and its writes run there. */
KT_TEST(remote_qps_join_thread_0)
{
	enum { NT = 4 };
	struct kinet_ctx *ini, *tgt;
	struct kt_pair pairs[NPAIRS];
	struct kt_buf src, dst;
	struct kinet_engine_stats a[NT], b[NT];

	setenv("KINET_TRANSPORT", "node", 1);
	KT_OK(kt_ctx_open(NT, &ini));
	KT_OK(kt_ctx_open(NT, &tgt));
	KT_OK(pairs_create(pairs, ini, tgt));
	KT_OK(kt_buf_alloc(ini, &src, 4096, KT_ACC_ALL, 3));
	KT_OK(kt_buf_alloc(tgt, &dst, 4096, KT_ACC_ALL, 0));
	snapshot(ini, NT, a);
	KT_CHECK_EQ(a[0].qps, NPAIRS);
	for (int i = 1; i < NT; i++)
		KT_CHECK_EQ(a[i].qps, 0u);
	snapshot(tgt, NT, b);
	KT_CHECK_EQ(b[0].qps, NPAIRS);

	int failed = kt_failed_checks;
	write_all(pairs, &src, &dst);
	KT_CHECK_EQ(kt_failed_checks, failed); /* stop here if a write failed */
	KT_CHECK(kt_mem_is(dst.p, 3, NWRITES * 8));
	snapshot(ini, NT, b);
	KT_CHECK_EQ(b[0].wqes - a[0].wqes, (uint64_t)NPAIRS * NWRITES);
	for (int i = 1; i < NT; i++)
		KT_CHECK_EQ(b[i].wqes, a[i].wqes);

	pairs_destroy(pairs);
	snapshot(ini, NT, b);
	KT_CHECK_EQ(b[0].qps, 0u);
	kt_buf_free(&src);
	kt_buf_free(&dst);
	KT_OK(kinet_ctx_close(ini));
	KT_OK(kinet_ctx_close(tgt));
	unsetenv("KINET_TRANSPORT");
}

KT_MAIN(counts_and_sharding, remote_qps_join_thread_0)
