/*
 * kinet-perf, CPU-initiated: the host posts the same WQEs with
 * kinet_qp_post_send and waits with kinet_cq_poll, the way an application
 * without GPU-initiated networking would (after its kernel ends).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "perf.h"

#define PERF_WAIT_NS (10ull * 1000000000ull)
/* Where threads outnumber the cores, polls that long before yielding
 * between polls (a completion in one process takes less). */
#define PERF_YIELD_NS 1000ull

int perf_wqes_per_op(enum perf_op op)
{
	return op == PERF_OP_PUT_SIGNAL ? 2 : 1;
}

struct cpu_wr {
	struct kinet_send_wr wr[2];
	struct kinet_sge sge[2];
	int n;
};

/* The WQE(s) of one operation of poster p on QP q (iteration i). */
static void make_wr(struct perf_env *e, int q, size_t p, uint64_t i, struct cpu_wr *w)
{
	const struct perf_opts *o = e->o;
	uint64_t src = (uint64_t)(uintptr_t)(e->src + (size_t)q * e->src_stride);
	uint64_t dst = e->rdst + (uint64_t)q * e->dst_stride;
	struct kinet_send_wr *wr = &w->wr[0];
	memset(w, 0, sizeof(*w));
	w->n = 1;
	wr->sg_list = &w->sge[0];
	wr->num_sge = 1;
	wr->send_flags = KINET_SEND_SIGNALED;
	wr->remote_addr = dst;
	wr->rkey = e->rkey;
	w->sge[0].addr = src;
	w->sge[0].length = (uint32_t)e->size;
	w->sge[0].lkey = kinet_mr_lkey(e->src_mr);
	switch (o->op) {
	case PERF_OP_WRITE:
		wr->opcode = KINET_WR_RDMA_WRITE;
		if (e->inl && o->src_mem == PERF_MEM_HOST) /* the CPU reads inline data */
			wr->send_flags |= KINET_SEND_INLINE;
		break;
	case PERF_OP_READ:
		wr->opcode = KINET_WR_RDMA_READ;
		break;
	case PERF_OP_FETCH_ADD:
	case PERF_OP_COMPARE_SWAP:
		wr->opcode = o->op == PERF_OP_FETCH_ADD ? KINET_WR_ATOMIC_FETCH_AND_ADD
							: KINET_WR_ATOMIC_CMP_AND_SWP;
		w->sge[0].addr = (uint64_t)(uintptr_t)&e->results[p];
		w->sge[0].length = 8;
		w->sge[0].lkey = kinet_mr_lkey(e->res_mr);
		wr->compare_add = o->op == PERF_OP_FETCH_ADD ? 1 : i;
		wr->swap = i + 1;
		break;
	case PERF_OP_PUT_SIGNAL:
		wr->opcode = KINET_WR_RDMA_WRITE;
		w->n = 2;
		w->wr[1].opcode = KINET_WR_ATOMIC_FETCH_AND_ADD;
		w->wr[1].send_flags = KINET_SEND_SIGNALED;
		w->wr[1].sg_list = &w->sge[1];
		w->wr[1].num_sge = 1;
		w->wr[1].remote_addr = e->rdst + e->sig_off + (uint64_t)q * 8;
		w->wr[1].rkey = e->rkey;
		w->wr[1].compare_add = 1;
		w->sge[1].addr = (uint64_t)(uintptr_t)&e->scratch[q];
		w->sge[1].length = 8;
		w->sge[1].lkey = kinet_mr_lkey(e->scratch_mr);
		break;
	case PERF_OP_SEND:
		wr->opcode = KINET_WR_SEND;
		wr->remote_addr = 0;
		wr->rkey = 0;
		break;
	}
}

/* Takes up to max completions of QP q: the count, or a negative errno. */
static int reap(struct perf_env *e, int q, int max, char *err, size_t errlen)
{
	struct kinet_wc wc[64];
	int n = kinet_cq_poll(e->ini[q].scq, max < 64 ? max : 64, wc);
	if (n < 0) {
		snprintf(err, errlen, "kinet_cq_poll: %s", kinet_strerror(n));
		return n;
	}
	for (int i = 0; i < n; i++) {
		if (wc[i].status) {
			snprintf(err, errlen, "completion error: %s (syndrome 0x%x, vendor 0x%x)",
				 kinet_wc_status_str(wc[i].status), wc[i].status, wc[i].vendor_err);
			return -EIO;
		}
	}
	return n;
}

static int post(struct perf_env *e, int q, struct cpu_wr *w, char *err, size_t errlen)
{
	int rc = kinet_qp_post_send(e->ini[q].qp, w->wr, w->n, NULL);
	if (rc)
		snprintf(err, errlen, "kinet_qp_post_send: %s", kinet_strerror(rc));
	return rc;
}

/* Whether a waiting poster keeps the core: when each polling thread of
 * this host (every rank's engine threads and poster) has one, as an
 * application's completion loop would; else the engine thread that will
 * write the completion may be waiting for this core. */
static bool waiter_spins(struct perf_env *e)
{
	struct kinet_engine_stats st;

	if (e->waiter_spins)
		return e->waiter_spins > 0;
	cpu_set_t set;
	int cores = sched_getaffinity(0, sizeof(set), &set) == 0 ? CPU_COUNT(&set) : 1;
	int engines = kinet_ctx_engine_stats(e->ctx, 0, &st);
	int ranks = e->o->nranks ? e->o->nranks : 1;

	/* Loopback: the target's context may have engines of its own. */
	if (!e->o->nranks && e->tgt_ctx != e->ctx)
		engines *= 2;
	e->waiter_spins = engines > 0 && cores >= ranks * (engines + 1) ? 1 : -1;
	return e->waiter_spins > 0;
}

/* A poll that found nothing, *since the first of a run of them (0: this
 * is the first): where threads outnumber the cores (!spin) yields after a
 * while, as the engine thread may need this core; -ETIMEDOUT after
 * PERF_WAIT_NS. */
static int idle_poll(bool spin, uint64_t *since, char *err, size_t errlen)
{
	uint64_t now = perf_now_ns();

	if (!*since) {
		*since = now;
		return 0;
	}
	if (!spin && now - *since > PERF_YIELD_NS)
		sched_yield();
	if (now - *since > PERF_WAIT_NS) {
		snprintf(err, errlen, "timed out waiting for completions");
		return -ETIMEDOUT;
	}
	return 0;
}

/* Waits for n completions of QP q (bounded). */
static int wait_n(struct perf_env *e, int q, int n, char *err, size_t errlen)
{
	uint64_t since = 0;
	bool spin = waiter_spins(e);
	while (n > 0) {
		int got = reap(e, q, n, err, errlen);
		if (got < 0)
			return got;
		n -= got;
		if (got)
			since = 0;
		else if ((got = idle_poll(spin, &since, err, errlen)))
			return got;
	}
	return 0;
}

int perf_cpu_lat(struct perf_env *e, long warmup, long iters, uint64_t *samples, char *err, size_t errlen)
{
	struct cpu_wr w;
	for (long i = 0; i < warmup + iters; i++) {
		make_wr(e, 0, 0, (uint64_t)i, &w);
		uint64_t t0 = perf_now_ns();
		int rc = post(e, 0, &w, err, errlen);
		if (!rc)
			rc = wait_n(e, 0, w.n, err, errlen);
		uint64_t t1 = perf_now_ns();
		if (rc)
			return rc;
		if (i >= warmup)
			samples[i - warmup] = t1 - t0;
	}
	return 0;
}

int perf_cpu_put_wait(struct perf_env *e)
{
	struct cpu_wr w;
	char err[128];
	make_wr(e, 0, 0, 0, &w);
	w.wr[0].opcode = KINET_WR_RDMA_WRITE;
	w.n = 1;
	int rc = post(e, 0, &w, err, sizeof(err));
	return rc ? rc : wait_n(e, 0, 1, err, sizeof(err));
}

/* ---- bandwidth / rate: one host thread per QP, window outstanding ---- */

struct cpu_bw {
	struct perf_env *e;
	int q;
	long warmup, iters;
	int window;
	pthread_barrier_t *bar;
	uint64_t t0, t1;
	int rc;
	char err[128];
};

static int run_window(struct cpu_bw *b, long n)
{
	struct perf_env *e = b->e;
	int wpo = perf_wqes_per_op(e->o->op);
	long posted = 0, done = 0; /* operations */
	int pending_wqes = 0;
	uint64_t idle_since = 0;
	bool spin = waiter_spins(e);
	struct cpu_wr w;
	while (done < n) {
		while (posted < n && posted - done < b->window) {
			make_wr(e, b->q, (size_t)b->q, (uint64_t)posted, &w);
			int rc = post(e, b->q, &w, b->err, sizeof(b->err));
			if (rc)
				return rc;
			posted++;
		}
		int got = reap(e, b->q, 64, b->err, sizeof(b->err));
		if (got < 0)
			return got;
		pending_wqes += got;
		done += pending_wqes / wpo;
		pending_wqes %= wpo;
		if (got)
			idle_since = 0;
		else if ((got = idle_poll(spin, &idle_since, b->err, sizeof(b->err))))
			return got;
	}
	return 0;
}

static void *bw_main(void *p)
{
	struct cpu_bw *b = (struct cpu_bw *)p;
	b->rc = run_window(b, b->warmup);
	pthread_barrier_wait(b->bar);
	b->t0 = perf_now_ns();
	if (!b->rc)
		b->rc = run_window(b, b->iters);
	b->t1 = perf_now_ns();
	return NULL;
}

int perf_cpu_bw(struct perf_env *e, long warmup, long iters, int window, double *elapsed_us, char *err,
		size_t errlen)
{
	int n = e->nqps, rc = 0, started = 0;
	struct cpu_bw *b = (struct cpu_bw *)calloc((size_t)n, sizeof(*b));
	pthread_t *t = (pthread_t *)calloc((size_t)n, sizeof(*t));
	pthread_barrier_t bar;
	if (!b || !t) {
		free(b);
		free(t);
		return -ENOMEM;
	}
	pthread_barrier_init(&bar, NULL, (unsigned)n);
	for (int i = 0; i < n; i++) {
		b[i].e = e;
		b[i].q = i;
		b[i].warmup = warmup;
		b[i].iters = iters;
		b[i].window = window;
		b[i].bar = &bar;
	}
	for (; started < n; started++) {
		if (pthread_create(&t[started], NULL, bw_main, &b[started])) {
			/* The started ones wait at the barrier for the rest. */
			fprintf(stderr, "kinet-perf: cannot start %d posting threads\n", n);
			exit(1);
		}
	}
	uint64_t t0 = UINT64_MAX, t1 = 0;
	for (int i = 0; i < started; i++) {
		pthread_join(t[i], NULL);
		if (b[i].rc && !rc) {
			rc = b[i].rc;
			snprintf(err, errlen, "QP %d: %s", i, b[i].err);
		}
		if (b[i].t0 < t0)
			t0 = b[i].t0;
		if (b[i].t1 > t1)
			t1 = b[i].t1;
	}
	pthread_barrier_destroy(&bar);
	*elapsed_us = t1 > t0 ? (double)(t1 - t0) / 1000.0 : 0;
	free(b);
	free(t);
	return rc;
}
