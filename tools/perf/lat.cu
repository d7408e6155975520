/*
 * kinet-perf device code, latency: one thread time-stamps, posts, waits
 * for the ticket and time-stamps again (%globaltimer on the GPU), per
 * operation.
 */
#include "unit.cuh"

KINET_DEV_FN void perf_lat_body(struct perf_kargs *a)
{
	struct kinet_dev_qp *qp = a->qps[0];
	uint64_t n = a->warmup + a->iters;
	if (perf_tid() != 0)
		return;
	for (uint64_t i = 0; i < n; i++) {
		uint64_t tk = 0;
		if (i == a->warmup)
			a->t0[0] = kinet_dev_now_ns();
		uint64_t t0 = kinet_dev_now_ns();
		int st = perf_post(a, qp, 0, 0, 0, i, &tk);
		if (!st)
			st = kinet_dev_wait(qp, tk);
		uint64_t t1 = kinet_dev_now_ns();
		if (st) {
			perf_fail(a, st, i);
			return;
		}
		if (i >= a->warmup)
			a->samples[i - a->warmup] = t1 - t0;
	}
	a->t1[0] = kinet_dev_now_ns();
}

PERF_ENTRY(lat)
