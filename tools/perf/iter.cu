/*
 * kinet-perf device code, iteration: one block computes, then (thread 0,
 * or with --group block the block) puts and waits, per iteration, in one
 * persistent kernel; or the compute alone as a kernel per iteration, the
 * host posting after it ends (CPU-initiated).
 */
#include "unit.cuh"

/* A few microseconds of arithmetic over the buffer by the block, then the
 * first `size` bytes of the result into the put's source. */
KINET_DEV_FN void perf_compute(const struct perf_kargs *a, uint64_t it)
{
	uint32_t r = kinet_devi_group_rank(KINET_DEVI_GROUP_BLOCK);
	uint32_t g = kinet_devi_group_size(KINET_DEVI_GROUP_BLOCK);
	float add = (float)(it & 7) * 0.125f;
	for (uint32_t rep = 0; rep < a->reps; rep++)
		for (uint32_t k = r; k < a->work_n; k += g)
			a->work[k] = a->work[k] * 0.999f + add;
	float *out = (float *)(void *)a->src;
	uint32_t nout = (uint32_t)(a->size / sizeof(float));
	for (uint32_t k = r; k < nout && k < a->work_n; k += g)
		out[k] = a->work[k];
}

/* What the doorbell of kinet's device API used to cost the next compute
 * step: fence.acq_rel.sys is also an acquire, which on sm_90 invalidates
 * the SM's L1 (CCTL.IVALL after the MEMBAR.SYS), so the block re-reads
 * its working set from L2 (variant 3 measures it without a put). */
KINET_DEV_FN void perf_fence_acq_rel_sys(void)
{
#if defined(KINET_HOST_EMU)
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
#else
	asm volatile("fence.acq_rel.sys;" ::: "memory");
#endif
}

/* Persistent: variant 0 compute + put + wait (the put + wait part also in
 * a->phase), 2 compute only, 3 compute + thread 0's fence.acq_rel.sys. */
KINET_DEV_FN void perf_iter_body(struct perf_kargs *a)
{
	struct kinet_dev_qp *qp = a->qps[0];
	uint32_t r = kinet_devi_group_rank(KINET_DEVI_GROUP_BLOCK);
	uint64_t n = a->warmup + a->iters;
	for (uint64_t i = 0; i < n; i++) {
		uint64_t t0 = kinet_dev_now_ns();
		perf_compute(a, i);
		/* The whole result is written before thread 0 posts (the ring's
		 * release fence is cumulative over the barrier). */
		kinet_devi_group_sync(KINET_DEVI_GROUP_BLOCK);
		uint64_t t1 = kinet_dev_now_ns();
		int st = 0;
		if (a->variant == 0 && a->group == PERF_GROUP_BLOCK) {
			/* --group block: the block that computed posts (and, on the
			 * software NIC, stages the source) with the _block forms. */
			uint64_t tk = 0;
			st = kinet_dev_put_block(qp, a->src, a->lkey, a->dst, a->rkey, a->size, &tk);
			if (!st)
				st = kinet_dev_wait_block(qp, tk);
		}
		if (r == 0) {
			if (a->variant == 0 && a->group != PERF_GROUP_BLOCK) {
				uint64_t tk = 0;
				st = kinet_dev_put(qp, a->src, a->lkey, a->dst, a->rkey, a->size, &tk);
				if (!st)
					st = kinet_dev_wait(qp, tk);
			} else if (a->variant == 3) {
				perf_fence_acq_rel_sys();
			}
			uint64_t t2 = kinet_dev_now_ns();
			if (st) {
				perf_fail(a, st, i);
			} else if (i >= a->warmup) {
				a->samples[i - a->warmup] = t2 - t0;
				a->phase[i - a->warmup] = t2 - t1;
			}
		}
		/* The next compute overwrites the source only after the put. */
		kinet_devi_group_sync(KINET_DEVI_GROUP_BLOCK);
		if (kinet_devi_load_relaxed_u32(a->status))
			return;
	}
}

KINET_DEV_FN void perf_compute_body(struct perf_kargs *a)
{
	perf_compute(a, a->iter_i);
}

PERF_ENTRY(iter)
PERF_ENTRY(compute)
