/*
 * Device API under host emulation: 1, 8 and 64 CPU threads hammering one
 * QP (and many QPs), in each sharing mode and doorbell mode.  Every thread
 * does fetch_add(+1) on one shared counter and writes a (thread, seq)
 * record to a slot of its own (inline and from registered memory,
 * alternately).  Checked: the counter is exact, the old values the
 * fetch-adds returned are a permutation of 0..total-1 (nothing lost or
 * duplicated), every record landed, every ticket completes, and a thread's
 * tickets grow in posting order.
 */
#include "kt_dev.h"

#define MAX_QPS 8

struct stress {
	int nthreads, nops, nqps;
	struct kd_pair pair[MAX_QPS];
	struct kinet_ctx *ctx;
	struct kd_buf counter; /* target: one 64-bit word */
	struct kd_buf records; /* target: nthreads * nops * 8 */
	struct kd_buf results; /* initiator: fetch-add old values */
	struct kd_buf src;     /* initiator: put sources */
	int failures;
};

struct worker {
	struct stress *s;
	int tid;
	int status;
	int line;
};

#define W_CHECK(w, cond)                                                                                     \
	do {                                                                                                 \
		if (!(cond)) {                                                                               \
			(w)->status = -1;                                                                    \
			(w)->line = __LINE__;                                                                \
			return NULL;                                                                         \
		}                                                                                            \
	} while (0)

static void *worker_main(void *arg)
{
	struct worker *w = (struct worker *)arg;
	struct stress *s = w->s;
	struct kinet_dev_qp *d = s->pair[w->tid % s->nqps].s[0].d;
	uint64_t last = 0, tk = 0, *tickets = (uint64_t *)calloc((size_t)s->nops, sizeof(uint64_t));
	W_CHECK(w, tickets != NULL);
	for (int seq = 0; seq < s->nops; seq++) {
		size_t slot = (size_t)w->tid * (size_t)s->nops + (size_t)seq;
		uint64_t rec = ((uint64_t)w->tid << 32) | (uint64_t)seq;
		uint64_t *res = (uint64_t *)(void *)(s->results.p + 8 * slot);
		int st = kinet_dev_fetch_add(d, res, s->results.key, kd_addr(&s->counter, 0), s->counter.key,
					     1, &tk);
		W_CHECK(w, st == 0);
		W_CHECK(w, tk > last);
		last = tk;
		if (seq & 1) {
			st = kinet_dev_put_inline(d, &rec, 8, kd_addr(&s->records, 8 * slot), s->records.key,
						  &tk);
		} else {
			memcpy(s->src.p + 8 * slot, &rec, 8);
			st = kinet_dev_put(d, s->src.p + 8 * slot, s->src.key, kd_addr(&s->records, 8 * slot),
					   s->records.key, 8, &tk);
		}
		W_CHECK(w, st == 0);
		W_CHECK(w, tk > last);
		last = tk;
		tickets[seq] = tk;
		if (seq % 16 == 15)
			W_CHECK(w, kinet_dev_wait(d, tk) == 0);
	}
	W_CHECK(w, kinet_dev_quiet(d) == 0);
	for (int seq = 0; seq < s->nops; seq++)
		W_CHECK(w, kinet_dev_test(d, tickets[seq]) == 0);
	free(tickets);
	return NULL;
}

static void run(int nthreads, int nqps, int nops, enum kinet_qp_sharing sharing, enum kinet_db_mode mode)
{
	static const char *share_names[3] = {"exclusive", "cta", "gpu"};
	struct stress s;
	struct kd_opts o;
	memset(&s, 0, sizeof(s));
	s.nthreads = nthreads;
	s.nops = nops;
	s.nqps = nqps;
	s.ctx = kd_ctx_open();
	KT_CHECK(s.ctx != NULL);
	kd_opts_init(&o);
	o.sq_depth = 64;
	o.rq_depth = 0;
	o.sharing = sharing;
	o.db_mode = mode;
	o.ctx = s.ctx; /* one context: memory keys are valid on every QP */
	for (int q = 0; q < nqps; q++)
		KT_OK(kd_pair_create(&s.pair[q], &o));
	size_t total = (size_t)nthreads * (size_t)nops;
	struct kinet_ctx *tctx = s.ctx;
	KT_OK(kd_buf_alloc(tctx, &s.counter, 8));
	KT_OK(kd_buf_alloc(tctx, &s.records, 8 * total));
	KT_OK(kd_buf_alloc(tctx, &s.results, 8 * total));
	KT_OK(kd_buf_alloc(tctx, &s.src, 8 * total));

	uint64_t t0 = kt_now_ms();
	pthread_t th[64];
	struct worker w[64];
	for (int i = 0; i < nthreads; i++) {
		w[i].s = &s;
		w[i].tid = i;
		w[i].status = 0;
		w[i].line = 0;
		KT_OK(pthread_create(&th[i], NULL, worker_main, &w[i]));
	}
	int bad = 0;
	for (int i = 0; i < nthreads; i++) {
		pthread_join(th[i], NULL);
		if (w[i].status) {
			fprintf(stderr, "thread %d failed at line %d\n", i, w[i].line);
			bad++;
		}
	}
	uint64_t ms = kt_now_ms() - t0;
	KT_CHECK_EQ(bad, 0);
	KT_CHECK_EQ(*(uint64_t *)(void *)s.counter.p, total);
	uint8_t *seen = (uint8_t *)calloc(total, 1);
	KT_CHECK(seen != NULL);
	for (size_t i = 0; i < total; i++) {
		uint64_t old = ((uint64_t *)(void *)s.results.p)[i];
		KT_CHECK(old < total);
		KT_CHECK(!seen[old]);
		seen[old] = 1;
		uint64_t rec = ((uint64_t *)(void *)s.records.p)[i];
		KT_CHECK_EQ(rec, ((uint64_t)(i / (size_t)nops) << 32) | (i % (size_t)nops));
	}
	free(seen);
	for (int q = 0; q < nqps; q++) {
		struct kinet_dev_qp *d = s.pair[q].s[0].d;
		KT_CHECK_EQ(d->sq_done, d->sq_reserved);
		KT_CHECK_EQ(kinet_dev_qp_error(d), 0);
	}
	printf("  %2d threads, %d QP(s), %-9s %-3s: %zu ops x 2 in %llu ms\n", nthreads, nqps,
	       share_names[sharing], kt_db_names[mode], total, (unsigned long long)ms);
	kd_buf_free(&s.counter);
	kd_buf_free(&s.records);
	kd_buf_free(&s.results);
	kd_buf_free(&s.src);
	for (int q = 0; q < nqps; q++)
		kd_pair_destroy(&s.pair[q]);
	kinet_ctx_close(s.ctx);
}

KT_TEST(one_qp_exclusive)
{
	run(1, 1, 20000, KINET_SHARE_EXCLUSIVE, KINET_DB_CPU);
	run(1, 1, 20000, KINET_SHARE_EXCLUSIVE, KINET_DB_GPU);
	run(1, 1, 20000, KINET_SHARE_EXCLUSIVE, KINET_DB_BF);
}

KT_TEST(one_qp_cta)
{
	run(1, 1, 10000, KINET_SHARE_CTA, KINET_DB_GPU);
	run(8, 1, 2500, KINET_SHARE_CTA, KINET_DB_CPU);
	run(64, 1, 400, KINET_SHARE_CTA, KINET_DB_BF);
}

KT_TEST(one_qp_gpu)
{
	run(1, 1, 10000, KINET_SHARE_GPU, KINET_DB_BF);
	run(8, 1, 2500, KINET_SHARE_GPU, KINET_DB_GPU);
	run(64, 1, 400, KINET_SHARE_GPU, KINET_DB_CPU);
}

KT_TEST(eight_threads_each_db_mode)
{
	for (int m = 0; m < 3; m++)
		run(8, 1, 2000, KINET_SHARE_GPU, kt_db_modes[m]);
}

KT_TEST(sixty_four_threads_each_db_mode)
{
	for (int m = 0; m < 3; m++)
		run(64, 1, 300, KINET_SHARE_GPU, kt_db_modes[m]);
}

KT_TEST(many_qps)
{
	run(8, 8, 2000, KINET_SHARE_EXCLUSIVE, KINET_DB_GPU);
	run(64, 8, 400, KINET_SHARE_CTA, KINET_DB_BF);
	run(64, 8, 400, KINET_SHARE_GPU, KINET_DB_CPU);
}

KT_MAIN(one_qp_exclusive, one_qp_cta, one_qp_gpu, eight_threads_each_db_mode, sixty_four_threads_each_db_mode,
	many_qps)
