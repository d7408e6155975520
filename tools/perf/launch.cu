/*
 * kinet-perf, the GPU-initiated modes' host side: their arguments, the
 * launch (a kernel on the GPU, CPU threads under KINET_HOST_EMU: one per
 * GPU thread that posts, see kinet/device/launch.h), and the results.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kargs.h"
#include "kinet/device/launch.h"
#include "perf.h"

#if !defined(KINET_HOST_EMU)
#include <cuda_runtime.h>
#endif

/* ---- host side ---- */

/* Control memory device code writes often: GPU memory on the GPU (stores
 * to host memory would make every later system fence wait for PCIe). */
static void *ctl_alloc(size_t len)
{
#if defined(KINET_HOST_EMU)
	return perf_alloc(PERF_MEM_HOST, len);
#else
	return perf_alloc(PERF_MEM_GPU, len);
#endif
}
static void ctl_free(void *p)
{
#if defined(KINET_HOST_EMU)
	perf_free(PERF_MEM_HOST, p);
#else
	perf_free(PERF_MEM_GPU, p);
#endif
}

struct perf_run {
	struct perf_kargs a;
	uint32_t status;
	uint64_t fail_at;
};

static int args_init(struct perf_env *e, struct perf_kargs *a, uint32_t nthreads, long warmup, long iters,
		     uint64_t nsamples)
{
	memset(a, 0, sizeof(*a));
	a->qps = e->dev_qps;
	a->nqps = (uint32_t)e->nqps;
	a->nthreads = nthreads;
	a->nunits = nthreads;
	a->group = PERF_GROUP_THREAD;
	a->op = e->o->op;
	a->inl = e->inl;
	a->size = e->size;
	a->src = e->src;
	a->lkey = kinet_mr_lkey(e->src_mr);
	a->src_stride = e->src_stride;
	a->dst = e->rdst;
	a->rkey = e->rkey;
	a->dst_stride = e->dst_stride;
	a->slot = e->slot;
	a->sig = e->rdst + e->sig_off;
	a->results = e->results;
	a->res_lkey = kinet_mr_lkey(e->res_mr);
	a->warmup = (uint64_t)warmup;
	a->iters = (uint64_t)iters;
	a->window = (uint32_t)e->o->window;
	a->samples = (uint64_t *)ctl_alloc((nsamples ? nsamples : 1) * 8);
	a->t0 = (uint64_t *)ctl_alloc(nthreads * 8);
	a->t1 = (uint64_t *)ctl_alloc(nthreads * 8);
	a->barrier = (uint64_t *)ctl_alloc(8);
	a->status = (uint32_t *)ctl_alloc(8);
	a->fail_at = (uint64_t *)ctl_alloc(8);
	if (!a->samples || !a->t0 || !a->t1 || !a->barrier || !a->status || !a->fail_at)
		return -ENOMEM;
	return 0;
}

static void args_free(struct perf_kargs *a)
{
	ctl_free(a->samples);
	ctl_free(a->t0);
	ctl_free(a->t1);
	ctl_free(a->barrier);
	ctl_free(a->status);
	ctl_free(a->fail_at);
}

/* Status of a finished launch: 0, or a negative errno with the message. */
static int args_status(struct perf_env *e, struct perf_kargs *a, char *err, size_t errlen)
{
	uint32_t st = 0;
	uint64_t at = 0;
	struct kinet_error ke;
	perf_copy_from(&st, a->status, sizeof(st));
	perf_copy_from(&at, a->fail_at, sizeof(at));
	if (!st)
		return 0;
	memset(&ke, 0, sizeof(ke));
	kinet_ctx_last_error(e->ctx, &ke);
	/* --peer-gpu: an error at the target end is recorded in its context. */
	if (!ke.status && e->tgt_ctx && e->tgt_ctx != e->ctx)
		kinet_ctx_last_error(e->tgt_ctx, &ke);
	snprintf(err, errlen, "device status %u (%s) at iteration %llu; context error %d: %s, qpn %u", st,
		 kinet_strerror(-(int)st), (unsigned long long)at, ke.status,
		 kinet_wc_status_str(ke.syndrome), ke.qpn);
	return -(int)st;
}

int perf_gpu_lat(struct perf_env *e, long warmup, long iters, uint64_t *samples, double *total_us, char *err,
		 size_t errlen)
{
	struct perf_kargs a;
	int rc = args_init(e, &a, 1, warmup, iters, (uint64_t)iters);
	if (rc) {
		snprintf(err, errlen, "out of memory");
		goto out;
	}
#if defined(KINET_HOST_EMU)
	rc = kinet_emu_launch(1, perf_lat_emu, &a);
#else
	perf_lat_kernel<<<1, 1>>>(a);
	rc = perf_cuda_check(cudaGetLastError(), "launch", err, errlen);
	if (!rc)
		rc = perf_cuda_check(cudaDeviceSynchronize(), "latency kernel", err, errlen);
#endif
	if (!rc)
		rc = args_status(e, &a, err, errlen);
	if (!rc) {
		uint64_t t0 = 0, t1 = 0;
		perf_copy_from(samples, a.samples, (size_t)iters * 8);
		perf_copy_from(&t0, a.t0, 8);
		perf_copy_from(&t1, a.t1, 8);
		*total_us = (double)(t1 - t0) / 1000.0;
	}
out:
	args_free(&a);
	return rc;
}

int perf_gpu_bw(struct perf_env *e, long warmup, long iters, int window, double *elapsed_us, char *err,
		size_t errlen)
{
	const struct perf_opts *o = e->o;
	uint32_t nunits = perf_units(o);
#if defined(KINET_HOST_EMU)
	uint32_t nthreads = nunits; /* a CPU thread per unit */
#else
	uint32_t nthreads = (uint32_t)(o->threads * o->blocks);
#endif
	struct perf_kargs a;
	/* t0/t1 get an entry per thread (>= units). */
	int rc = args_init(e, &a, nthreads, warmup, iters, 0);
	(void)window;
	a.nunits = nunits;
	a.group = o->group;
	if (rc) {
		snprintf(err, errlen, "out of memory");
		goto out;
	}
#if defined(KINET_HOST_EMU)
	if (nthreads > PERF_MAX_EMU_THREADS) {
		snprintf(err, errlen, "%u posting units: host emulation runs at most %d", nthreads,
			 PERF_MAX_EMU_THREADS);
		rc = -EINVAL;
		goto out;
	}
	rc = kinet_emu_launch(nthreads, perf_bw_emu, &a);
#else
	{
		/* The grid barrier needs every block resident at once. */
		int per_sm = 0, sms = perf_gpu_sm_count();
		rc = perf_cuda_check(
			cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, perf_bw_kernel, o->threads, 0),
			"occupancy", err, errlen);
		if (rc)
			goto out;
		if ((long)per_sm * sms < o->blocks) {
			snprintf(err, errlen,
				 "%d blocks of %d threads cannot all be resident (%d per SM x %d SMs)",
				 o->blocks, o->threads, per_sm, sms);
			rc = -EINVAL;
			goto out;
		}
		perf_bw_kernel<<<o->blocks, o->threads>>>(a);
		rc = perf_cuda_check(cudaGetLastError(), "launch", err, errlen);
		if (!rc)
			rc = perf_cuda_check(cudaDeviceSynchronize(), "bandwidth kernel", err, errlen);
	}
#endif
	if (!rc)
		rc = args_status(e, &a, err, errlen);
	if (!rc) {
		uint64_t *t0 = (uint64_t *)malloc(nunits * 8), *t1 = (uint64_t *)malloc(nunits * 8);
		uint64_t lo = UINT64_MAX, hi = 0;
		if (!t0 || !t1) {
			rc = -ENOMEM;
		} else {
			perf_copy_from(t0, a.t0, nunits * 8);
			perf_copy_from(t1, a.t1, nunits * 8);
			for (uint32_t i = 0; i < nunits; i++) {
				if (t0[i] < lo)
					lo = t0[i];
				if (t1[i] > hi)
					hi = t1[i];
			}
			*elapsed_us = hi > lo ? (double)(hi - lo) / 1000.0 : 0;
		}
		free(t0);
		free(t1);
	}
out:
	args_free(&a);
	return rc;
}

int perf_iter(struct perf_env *e, int variant, long warmup, long iters, uint64_t *samples, uint64_t *phase,
	      char *err, size_t errlen)
{
	const struct perf_opts *o = e->o;
	struct perf_kargs a;
	int rc = args_init(e, &a, 1, warmup, iters, (uint64_t)iters);
	a.group = o->group;
	a.variant = variant;
	a.reps = (uint32_t)o->compute_reps;
	a.work_n = (uint32_t)o->compute_n;
	a.work = (float *)ctl_alloc((size_t)a.work_n * sizeof(float));
	a.phase = (uint64_t *)ctl_alloc((size_t)(iters > 0 ? iters : 1) * 8);
	if (rc || !a.work || !a.phase) {
		snprintf(err, errlen, "out of memory");
		rc = -ENOMEM;
		goto out;
	}
	if (variant != 1) {
#if defined(KINET_HOST_EMU)
		rc = kinet_emu_launch(1, perf_iter_emu, &a);
#else
		perf_iter_kernel<<<1, o->threads>>>(a);
		rc = perf_cuda_check(cudaGetLastError(), "launch", err, errlen);
		if (!rc)
			rc = perf_cuda_check(cudaDeviceSynchronize(), "iteration kernel", err, errlen);
#endif
		if (!rc)
			rc = args_status(e, &a, err, errlen);
		if (!rc)
			perf_copy_from(samples, a.samples, (size_t)iters * 8);
		if (!rc && phase)
			perf_copy_from(phase, a.phase, (size_t)iters * 8);
	} else {
		/* The kernel-boundary way: the compute kernel ends, the host
		 * posts the put and waits, the next kernel starts. */
		for (long i = 0; i < warmup + iters && !rc; i++) {
			uint64_t t0 = perf_now_ns();
			a.iter_i = (uint32_t)i;
#if defined(KINET_HOST_EMU)
			rc = kinet_emu_launch(1, perf_compute_emu, &a);
#else
			perf_compute_kernel<<<1, o->threads>>>(a);
			rc = perf_cuda_check(cudaGetLastError(), "launch", err, errlen);
			if (!rc)
				rc = perf_cuda_check(cudaStreamSynchronize(0), "compute kernel", err, errlen);
#endif
			if (!rc) {
				rc = perf_cpu_put_wait(e);
				if (rc)
					snprintf(err, errlen, "host put: %s", kinet_strerror(rc));
			}
			if (!rc && i >= warmup)
				samples[i - warmup] = perf_now_ns() - t0;
		}
	}
out:
	ctl_free(a.work);
	ctl_free(a.phase);
	args_free(&a);
	return rc;
}
