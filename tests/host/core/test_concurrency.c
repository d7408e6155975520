/*
 * Concurrent posting: several threads each with their own QPs, and several
 * threads sharing one QP (kinet_qp_post_send is thread-safe), with one and with
 * four engine threads.  Every completion arrives exactly once, data is
 * right, and fetch-adds from everywhere on one counter are atomic.
 */
#include "kt_host.h"

#define NTHREADS 4
#define OPS 2000

/* Shared target: per-thread write areas and one atomic counter. */
struct shared {
	struct kinet_ctx *ctx;
	struct kt_buf target;  /* NTHREADS * 4096 bytes of write areas, counter at the end */
	struct kt_buf results; /* NTHREADS * OPS old values of fetch-adds */
	_Atomic int failures;
};

#define COUNTER_OFF (NTHREADS * 4096)

struct worker {
	struct shared *sh;
	int id;
	struct kt_pair p;
	struct kt_buf src;
	pthread_t tid;
};

static int post_retry(struct kinet_qp *qp, const struct kinet_send_wr *w)
{
	uint64_t deadline = kt_now_ms() + KT_DEADLINE_MS;
	for (;;) {
		int rc = kt_post(qp, w);
		if (rc != -ENOMEM && rc != -EAGAIN)
			return rc;
		if (kt_now_ms() > deadline)
			return -ETIMEDOUT;
		sched_yield();
	}
}

/* Own QP pair: alternates writes of a stamped 64-byte block and fetch-adds;
 * every 8th WQE is signaled and polled in order. */
static void *own_qp_worker(void *arg)
{
	struct worker *w = arg;
	struct shared *sh = w->sh;
	struct kinet_wc wc[8];
	uint64_t expect_id = 0;
	int fail = 0;

	for (int i = 0; i < OPS && !fail; i++) {
		struct kinet_sge s;
		struct kinet_send_wr wr;
		bool sig = (i % 8) == 7 || i == OPS - 1;
		if (i % 2 == 0) {
			/* write: stamp block (i/2) % 64 of our source area */
			size_t off = (size_t)((i / 2) % 32) * 64;
			uint64_t stamp = ((uint64_t)w->id << 32) | (uint64_t)i;
			memcpy(w->src.p + off, &stamp, 8);
			s = kt_sge(&w->src, off, 64);
			wr = kt_wr((uint64_t)i, KINET_WR_RDMA_WRITE, sig ? KINET_SEND_SIGNALED : 0, &s, 1,
				   kt_addr(&sh->target, (size_t)w->id * 4096 + off), kt_rkey(&sh->target));
		} else {
			s = kt_sge(&sh->results, ((size_t)w->id * OPS + (size_t)i) * 8, 8);
			wr = kt_wr((uint64_t)i, KINET_WR_ATOMIC_FETCH_AND_ADD, sig ? KINET_SEND_SIGNALED : 0,
				   &s, 1, kt_addr(&sh->target, COUNTER_OFF), kt_rkey(&sh->target));
			wr.compare_add = 1;
		}
		if (post_retry(w->p.qp[0], &wr)) {
			fail = 1;
			break;
		}
		if (sig) {
			if (kt_poll_n(w->p.cq[0], 1, wc, KT_DEADLINE_MS) != 1 || wc[0].status ||
			    wc[0].wr_id != (uint64_t)i) {
				fprintf(stderr, "worker %d: bad completion at %d\n", w->id, i);
				fail = 1;
			}
			expect_id = (uint64_t)i + 1;
			/* The write just completed is visible at the target. */
			if (!fail && i % 2 == 0) {
				size_t off = (size_t)((i / 2) % 32) * 64;
				if (memcmp(sh->target.p + (size_t)w->id * 4096 + off, w->src.p + off, 64)) {
					fprintf(stderr, "worker %d: data mismatch at %d\n", w->id, i);
					fail = 1;
				}
			}
		}
	}
	(void)expect_id;
	if (!fail && kt_poll_for(w->p.cq[0], 5, 8, wc) != 0) {
		fprintf(stderr, "worker %d: extra completions\n", w->id);
		fail = 1;
	}
	if (fail)
		sh->failures++;
	return NULL;
}

static void check_counter(struct shared *sh, int nfa)
{
	uint64_t counter;
	memcpy(&counter, sh->target.p + COUNTER_OFF, 8);
	KT_CHECK_EQ(counter, (uint64_t)nfa);
	/* The old values are a permutation of 0..nfa-1. */
	uint8_t *seen = calloc((size_t)nfa, 1);
	KT_CHECK(seen != NULL);
	int n = 0;
	for (int t = 0; t < NTHREADS; t++)
		for (int i = 1; i < OPS; i += 2) {
			uint64_t v;
			memcpy(&v, sh->results.p + ((size_t)t * OPS + (size_t)i) * 8, 8);
			if (v >= (uint64_t)nfa || seen[v]) {
				fprintf(stderr,
					"fetch-add old value %" PRIu64 " out of range or seen twice\n", v);
				free(seen);
				KT_CHECK(0);
			}
			seen[v] = 1;
			n++;
		}
	free(seen);
	KT_CHECK_EQ(n, nfa);
}

static void own_qps(int engine_threads, bool two_ctx)
{
	struct shared sh;
	struct worker w[NTHREADS];
	struct kinet_ctx *ctx2 = NULL;

	memset(&sh, 0, sizeof(sh));
	KT_OK(kt_ctx_open(engine_threads, &sh.ctx));
	if (two_ctx)
		KT_OK(kt_ctx_open(engine_threads, &ctx2));
	KT_OK(kt_buf_alloc(two_ctx ? ctx2 : sh.ctx, &sh.target, COUNTER_OFF + 64, KT_ACC_ALL, 0));
	KT_OK(kt_buf_alloc(sh.ctx, &sh.results, (size_t)NTHREADS * OPS * 8, KT_ACC_ALL, 0xff));
	for (int t = 0; t < NTHREADS; t++) {
		w[t].sh = &sh;
		w[t].id = t;
		KT_OK(kt_pair_create(&w[t].p, sh.ctx, two_ctx ? ctx2 : sh.ctx, NULL));
		KT_OK(kt_buf_alloc(sh.ctx, &w[t].src, 4096, KT_ACC_ALL, (uint8_t)t));
	}
	for (int t = 0; t < NTHREADS; t++)
		KT_OK(pthread_create(&w[t].tid, NULL, own_qp_worker, &w[t]));
	for (int t = 0; t < NTHREADS; t++)
		pthread_join(w[t].tid, NULL);
	KT_CHECK_EQ(sh.failures, 0);
	check_counter(&sh, NTHREADS * (OPS / 2));
	KT_CHECK(kt_buf_guards_ok(&sh.target));
	KT_CHECK(kt_buf_guards_ok(&sh.results));
	for (int t = 0; t < NTHREADS; t++) {
		kt_pair_destroy(&w[t].p);
		kt_buf_free(&w[t].src);
	}
	kt_buf_free(&sh.target);
	kt_buf_free(&sh.results);
	if (ctx2)
		kinet_ctx_close(ctx2);
	kinet_ctx_close(sh.ctx);
}

KT_TEST(own_qps_one_engine)
{
	own_qps(1, false);
}

KT_TEST(own_qps_four_engines)
{
	own_qps(4, false);
}

KT_TEST(own_qps_two_ctx)
{
	own_qps(2, true);
}

/* ---- several threads, one QP ---- */

struct shared_qp {
	struct kt_pair p;
	struct kt_buf target, results;
	_Atomic int posted;
	_Atomic int failures;
};

struct poster {
	struct shared_qp *s;
	int id;
	pthread_t tid;
};

/* All signaled; wr_id = id << 32 | i. Odd i: fetch-add, even i: NOP. */
static void *shared_poster(void *arg)
{
	struct poster *pp = arg;
	struct shared_qp *s = pp->s;
	for (int i = 0; i < OPS; i++) {
		struct kinet_sge sg = kt_sge(&s->results, ((size_t)pp->id * OPS + (size_t)i) * 8, 8);
		uint64_t id = ((uint64_t)pp->id << 32) | (uint64_t)i;
		struct kinet_send_wr wr;
		if (i % 2) {
			wr = kt_wr(id, KINET_WR_ATOMIC_FETCH_AND_ADD, KINET_SEND_SIGNALED, &sg, 1,
				   kt_addr(&s->target, COUNTER_OFF), kt_rkey(&s->target));
			wr.compare_add = 1;
		} else {
			wr = kt_wr(id, KINET_WR_NOP, KINET_SEND_SIGNALED, NULL, 0, 0, 0);
		}
		if (post_retry(s->p.qp[0], &wr)) {
			s->failures++;
			return NULL;
		}
		s->posted++;
	}
	return NULL;
}

static void shared_qp(int engine_threads)
{
	struct kinet_ctx *ctx;
	struct shared_qp s;
	struct poster pp[NTHREADS];
	struct kt_pair_opts o;
	struct kinet_wc wc[32];

	memset(&s, 0, sizeof(s));
	KT_OK(kt_ctx_open(engine_threads, &ctx));
	kt_pair_opts_init(&o);
	o.sq_depth = 64;
	o.cq_depth = 256; /* more than the send queue: never overruns */
	KT_OK(kt_pair_create(&s.p, ctx, ctx, &o));
	KT_OK(kt_buf_alloc(ctx, &s.target, COUNTER_OFF + 64, KT_ACC_ALL, 0));
	KT_OK(kt_buf_alloc(ctx, &s.results, (size_t)NTHREADS * OPS * 8, KT_ACC_ALL, 0xff));
	for (int t = 0; t < NTHREADS; t++) {
		pp[t].s = &s;
		pp[t].id = t;
		KT_OK(pthread_create(&pp[t].tid, NULL, shared_poster, &pp[t]));
	}
	/* This thread polls; each poster's completions arrive in its order. */
	int next[NTHREADS] = {0};
	int total = 0, bad = 0;
	uint64_t deadline = kt_now_ms() + 20000;
	while (total < NTHREADS * OPS && kt_now_ms() < deadline && !s.failures) {
		int n = kinet_cq_poll(s.p.cq[0], 32, wc);
		if (n < 0) {
			fprintf(stderr, "poll: %s\n", kinet_strerror(n));
			bad++;
			break;
		}
		for (int i = 0; i < n; i++) {
			int t = (int)(wc[i].wr_id >> 32), k = (int)(wc[i].wr_id & 0xffffffffu);
			if (wc[i].status || t < 0 || t >= NTHREADS || k != next[t]) {
				fprintf(stderr, "completion wr_id %" PRIx64 " status %x unexpected\n",
					wc[i].wr_id, wc[i].status);
				bad++;
				continue;
			}
			next[t]++;
		}
		total += n;
		if (!n)
			sched_yield();
	}
	for (int t = 0; t < NTHREADS; t++)
		pthread_join(pp[t].tid, NULL);
	KT_CHECK_EQ(s.failures, 0);
	KT_CHECK_EQ(bad, 0);
	KT_CHECK_EQ(total, NTHREADS * OPS);
	KT_CHECK_EQ(kt_poll_for(s.p.cq[0], 5, 32, wc), 0);
	struct shared sh = {.target = s.target, .results = s.results};
	check_counter(&sh, NTHREADS * (OPS / 2));
	kt_buf_free(&s.target);
	kt_buf_free(&s.results);
	kt_pair_destroy(&s.p);
	kinet_ctx_close(ctx);
}

KT_TEST(shared_qp_one_engine)
{
	shared_qp(1);
}

KT_TEST(shared_qp_four_engines)
{
	shared_qp(4);
}

/* Threads creating, using and destroying pairs in one context at once. */
static void *churn(void *arg)
{
	struct kinet_ctx *ctx = arg;
	for (int i = 0; i < 15; i++)
		if (kt_smoke(ctx))
			return (void *)1;
	return NULL;
}

KT_TEST(create_destroy_concurrently)
{
	struct kinet_ctx *ctx;
	pthread_t t[NTHREADS];

	KT_OK(kt_ctx_open(2, &ctx));
	for (int i = 0; i < NTHREADS; i++)
		KT_OK(pthread_create(&t[i], NULL, churn, ctx));
	int fails = 0;
	for (int i = 0; i < NTHREADS; i++) {
		void *r;
		pthread_join(t[i], &r);
		fails += r != NULL;
	}
	KT_CHECK_EQ(fails, 0);
	kinet_ctx_close(ctx);
}

KT_MAIN(own_qps_one_engine, own_qps_four_engines, own_qps_two_ctx, shared_qp_one_engine,
	shared_qp_four_engines, create_destroy_concurrently)
