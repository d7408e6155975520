/*
 * A thread polling an empty CQ gives its core away now and then while the
 * process runs engine threads: the scheduler may have put the engine
 * thread on that very core (it does right after kinet_ctx_open), and a
 * poll loop that never yields then holds the completion back until a tick
 * preempts it (2-4 ms per operation at HZ=250).  Polls that find a
 * completion often enough never yield.  Counted, not timed: this file's
 * sched_yield stands in for libc's (libkinet calls it through the PLT)
 * and counts the calls of the polling thread.
 */
#define _GNU_SOURCE
#include <sys/syscall.h>
#include <unistd.h>

#include "kt_host.h"

static _Thread_local unsigned yields;

int sched_yield(void)
{
	yields++;
	return (int)syscall(SYS_sched_yield);
}

/* Polls until one completion arrives (the last poll then found it). */
static int wait_one(struct kinet_cq *cq, struct kinet_wc *wc)
{
	uint64_t deadline = kt_now_ms() + KT_DEADLINE_MS * kt_time_scale();
	int rc;

	while ((rc = kinet_cq_poll(cq, 1, wc)) == 0)
		if (kt_now_ms() > deadline)
			return -ETIMEDOUT;
	return rc == 1 ? 0 : rc;
}

KT_TEST(empty_polls_yield)
{
	KT_NEED_SOFT("engine threads beside the poller");
	struct kinet_ctx *ctx;
	struct kt_pair p;
	struct kt_pair_opts po;
	struct kt_buf src, dst;
	struct kinet_wc wc;

	KT_OK(kt_ctx_open(1, &ctx));
	kt_pair_opts_init(&po);
	KT_OK(kt_pair_create(&p, ctx, ctx, &po));
	KT_OK(kt_buf_alloc(ctx, &src, 64, KT_ACC_ALL, 1));
	KT_OK(kt_buf_alloc(ctx, &dst, 64, KT_ACC_ALL, 0));

	/* One operation first: the engine thread has run (and counted
	 * itself among the pollers; on a loaded machine it may start after
	 * the context opened, and polls before that have no reason to
	 * yield). */
	struct kinet_sge sge0 = kt_sge(&src, 0, 64);
	struct kinet_send_wr wr0 = kt_wr(99, KINET_WR_RDMA_WRITE, KINET_SEND_SIGNALED, &sge0, 1,
					 kt_addr(&dst, 0), kt_rkey(&dst));
	KT_OK(kt_post(p.qp[0], &wr0));
	KT_OK(wait_one(p.cq[0], &wc));
	KT_OK(kt_wc_expect(&wc, 99, 0));

	/* A long run of empty polls: one yield per 1024 (the run may start
	 * with up to 1023 counted before). */
	unsigned y0 = yields;
	for (int i = 0; i < 10 * 1024; i++)
		KT_CHECK_EQ(kinet_cq_poll(p.cq[0], 1, &wc), 0);
	KT_CHECK(yields - y0 >= 10 && yields - y0 <= 11);

	/* Runs of 1000 empty polls, each ended by a completion: none yields. */
	for (int r = 0; r < 3; r++) {
		struct kinet_sge sge = kt_sge(&src, 0, 64);
		struct kinet_send_wr wr = kt_wr((uint64_t)r, KINET_WR_RDMA_WRITE, KINET_SEND_SIGNALED, &sge,
						1, kt_addr(&dst, 0), kt_rkey(&dst));
		KT_OK(kt_post(p.qp[0], &wr));
		KT_OK(wait_one(p.cq[0], &wc));
		KT_OK(kt_wc_expect(&wc, (uint64_t)r, 0));
		y0 = yields;
		for (int i = 0; i < 1000; i++)
			KT_CHECK_EQ(kinet_cq_poll(p.cq[0], 1, &wc), 0);
		KT_CHECK_EQ(yields - y0, 0);
	}
	kt_buf_free(&src);
	kt_buf_free(&dst);
	kt_pair_destroy(&p);
	KT_OK(kinet_ctx_close(ctx));
}

KT_MAIN(empty_polls_yield)
