/*
 * kinet-perf device code, bandwidth and message rate: every posting unit (a
 * thread, or with --group a warp or a block calling the _warp/_block forms)
 * posts, keeping at most `window` operations outstanding (every half
 * window it waits for the ticket that makes room), each unit from and to
 * its own slot of its QP's part of the buffers; a grid barrier after the
 * warm-up, then bytes and operations over the slowest unit's span.
 */
#include "unit.cuh"

/* n operations with at most a->window outstanding; waits for all.  The
 * unit waits every half window (for the operation that leaves room for
 * the next half), not after every post: a wait is what completes puts on
 * the peer path (a system fence), and NVSHMEM-style rate loops fence once
 * per batch too.  Half a window always stays in flight for the engine. */
KINET_DEV_FN int perf_window(const struct perf_kargs *a, struct kinet_dev_qp *qp, uint32_t q, uint32_t u,
			     uint32_t slot, uint64_t base, uint64_t n)
{
	uint64_t ring[PERF_MAX_WINDOW];
	uint64_t last = 0;
	uint32_t half = a->window > 1 ? a->window / 2 : 1;
	for (uint64_t i = 0; i < n; i++) {
		uint32_t r = (uint32_t)(i % a->window);
		int st;
		if (i % half == 0 && i + half > a->window) {
			/* Completions are in order: this one covers the older ones. */
			st = perf_wait(a, qp, ring[(i + half - 1 - a->window) % a->window]);
			if (st)
				return st;
		}
		st = perf_post(a, qp, q, u, slot, base + i, &ring[r]);
		if (st)
			return st;
		last = ring[r];
	}
	return last ? perf_wait(a, qp, last) : 0;
}

KINET_DEV_FN void perf_bw_body(struct perf_kargs *a)
{
	int lead;
	uint64_t unused = 0;
	if (perf_tid() >= a->nthreads)
		return;
	uint32_t u = perf_unit(a, &lead);
	/* Contiguous units share a QP: a block keeps to its own QPs when
	 * they divide evenly (CTA sharing), see perf_env_sharing().  Units
	 * ceil(q * nunits / nqps) .. of QP q take its slots 0, 1, ... */
	uint32_t q = (uint32_t)(((uint64_t)u * a->nqps) / a->nunits);
	uint32_t slot = u - (uint32_t)(((uint64_t)q * a->nunits + a->nqps - 1) / a->nqps);
	struct kinet_dev_qp *qp = a->qps[q];
	int st = perf_window(a, qp, q, u, slot, 0, a->warmup);
	if (st)
		perf_fail(a, st, 0);
	perf_barrier(a);
	uint64_t t0 = kinet_dev_now_ns();
	/* The group goes on or stops as one (its lead's view of the status). */
	int go = !st && !kinet_devi_load_relaxed_u32(a->status);
	kinet_devi_group_bcast(perf_kgroup(a), &go, &unused);
	if (go) {
		st = perf_window(a, qp, q, u, slot, a->warmup, a->iters);
		if (st)
			perf_fail(a, st, a->warmup);
	}
	if (lead) {
		a->t0[u] = t0;
		a->t1[u] = kinet_dev_now_ns();
	}
}

PERF_ENTRY(bw)
