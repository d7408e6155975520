/*
 * Sample statistics: medians and spreads, as the reports need them.
 */
#include <stdlib.h>
#include <time.h>

#include "perf.h"

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* Nearest-rank percentile of sorted samples. */
static double pct(const uint64_t *v, uint64_t n, double p)
{
	uint64_t i = (uint64_t)(p * (double)(n - 1) + 0.5);
	return (double)v[i < n ? i : n - 1] / 1000.0;
}

void perf_stats_ns(uint64_t *ns, uint64_t n, struct perf_stats *s)
{
	double sum = 0;
	s->n = n;
	if (!n) {
		s->min = s->p5 = s->median = s->p95 = s->max = s->mean = 0;
		return;
	}
	qsort(ns, n, sizeof(*ns), cmp_u64);
	for (uint64_t i = 0; i < n; i++)
		sum += (double)ns[i];
	s->min = (double)ns[0] / 1000.0;
	s->max = (double)ns[n - 1] / 1000.0;
	s->p5 = pct(ns, n, 0.05);
	s->median = pct(ns, n, 0.5);
	s->p95 = pct(ns, n, 0.95);
	s->mean = sum / (double)n / 1000.0;
}

uint64_t perf_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

double perf_now_us(void)
{
	return (double)perf_now_ns() / 1000.0;
}
