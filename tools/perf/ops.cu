/*
 * kinet-perf device code: the GPU-initiated side.  One source for CUDA
 * kernels and, under KINET_HOST_EMU, CPU threads that play them (one CPU
 * thread per GPU thread that posts; see kinet/device/launch.h).
 *
 *   latency  one thread: time stamp, post, wait for the ticket, time stamp
 *            (%globaltimer on the GPU), per operation
 *   bw/rate  every posting unit (a thread, or with --group a warp or a
 *            block calling the _warp/_block forms) posts, keeping at most
 *            `window` operations outstanding (every half window it waits
 *            for the ticket that makes room), each unit from and to its own slot of
 *            its QP's part of the buffers; a grid barrier after the
 *            warm-up, then bytes and operations over the slowest unit's
 *            span
 *   iter     one block: compute, then (thread 0, or with --group block
 *            the block) put + wait, per iteration, in one persistent kernel;
 *            or the compute alone as a kernel per iteration, the host
 *            posting after it ends (CPU-initiated)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kinet/device.cuh"
#include "perf.h"

#if !defined(KINET_HOST_EMU)
#include <cuda_runtime.h>
#endif

/* Bound of the grid barrier (every thread arrives unless one is stuck). */
#define PERF_BARRIER_NS (30ull * 1000000000ull)

struct perf_kargs {
	struct kinet_dev_qp **qps;
	uint32_t nqps;
	uint32_t nthreads; /* threads that run (all arrive at the barrier) */
	uint32_t nunits;   /* posting units: threads, warps or blocks */
	int group;	   /* enum perf_group */
	int op;
	int inl;
	uint64_t size;
	uint8_t *src;
	uint32_t lkey;
	uint64_t src_stride;
	uint64_t dst;
	uint32_t rkey;
	uint64_t dst_stride;
	uint64_t slot; /* bytes of a unit's slot within a QP's stride */
	uint64_t sig;  /* signal words: sig + 8 q */
	uint64_t *results;
	uint32_t res_lkey;
	uint64_t warmup, iters;
	uint32_t window;
	uint64_t *samples; /* per timed iteration (lat, iter), ns */
	uint64_t *phase;   /* iter, variant 0: the put + wait part of each sample, ns */
	uint64_t *t0, *t1; /* per unit: timed span, ns */
	uint64_t *barrier; /* grid barrier counter */
	uint32_t *status;  /* first failure: errno */
	uint64_t *fail_at; /* its iteration */
	/* iter */
	float *work;
	uint32_t work_n;
	uint32_t reps;
	int variant;
	uint32_t iter_i; /* CPU-boundary: the iteration of this launch */
};

#if defined(KINET_HOST_EMU)
static inline uint32_t perf_tid(void)
{
	return kinet_dev_block_id();
}
/* An emulated thread is one unit of any group (groups are one thread). */
static inline uint32_t perf_unit(const struct perf_kargs *a, int *lead)
{
	(void)a;
	*lead = 1;
	return kinet_dev_block_id();
}
#else
static __device__ __forceinline__ uint32_t perf_tid(void)
{
	return blockIdx.x * blockDim.x + threadIdx.x;
}
/* The unit this thread belongs to; *lead: its first thread. */
static __device__ __forceinline__ uint32_t perf_unit(const struct perf_kargs *a, int *lead)
{
	switch (a->group) {
	case PERF_GROUP_WARP:
		*lead = (threadIdx.x & 31) == 0;
		return blockIdx.x * ((blockDim.x + 31) / 32) + threadIdx.x / 32;
	case PERF_GROUP_BLOCK:
		*lead = threadIdx.x == 0;
		return blockIdx.x;
	default:
		*lead = 1;
		return blockIdx.x * blockDim.x + threadIdx.x;
	}
}
#endif

KINET_DEV_FN int perf_kgroup(const struct perf_kargs *a)
{
	return a->group == PERF_GROUP_WARP    ? KINET_DEVI_GROUP_WARP
	       : a->group == PERF_GROUP_BLOCK ? KINET_DEVI_GROUP_BLOCK
					      : KINET_DEVI_GROUP_THREAD;
}

/* st: a device status (negative errno); the first is kept as its errno. */
KINET_DEV_FN void perf_fail(const struct perf_kargs *a, int st, uint64_t i)
{
	if (kinet_devi_atomic_cas_u32(a->status, 0, (uint32_t)-st) == 0)
		kinet_devi_store_relaxed_u64(a->fail_at, i);
}

/* Every posting thread arrives; all resident (the launcher checks). */
KINET_DEV_FN void perf_barrier(const struct perf_kargs *a)
{
	struct kinet_devi_deadline d;
	kinet_devi_deadline_init(&d, PERF_BARRIER_NS);
	kinet_devi_atomic_add_u64(a->barrier, 1);
	while (kinet_devi_load_acquire_u64_gpu(a->barrier) < a->nthreads) {
		if (kinet_devi_deadline_expired(&d)) {
			perf_fail(a, -ETIMEDOUT, 0);
			return;
		}
	}
}

/* One operation of unit u (slot `slot` of QP q) on QP q; *tk its ticket.
 * Warp and block units: every thread of the group calls with the same
 * arguments (the group forms give all of them lane 0's ticket). */
KINET_DEV_FN int perf_post(const struct perf_kargs *a, struct kinet_dev_qp *qp, uint32_t q, uint32_t u,
			   uint32_t slot, uint64_t i, uint64_t *tk)
{
	uint8_t *src = a->src + q * a->src_stride + slot * a->slot;
	uint64_t dst = a->dst + q * a->dst_stride + slot * a->slot;
	int g = a->group;
	switch (a->op) {
	case PERF_OP_WRITE:
		if (a->inl) {
			/* A value the thread holds (registers), as a GPU thread
			 * putting a flag or a small result would. */
			uint64_t v[4] = {i, i + 1, i + 2, i + 3};
			uint32_t n = (uint32_t)a->size;
			if (g == PERF_GROUP_WARP)
				return kinet_dev_put_inline_warp(qp, v, n, dst, a->rkey, tk);
			if (g == PERF_GROUP_BLOCK)
				return kinet_dev_put_inline_block(qp, v, n, dst, a->rkey, tk);
			return kinet_dev_put_inline(qp, v, n, dst, a->rkey, tk);
		}
		if (g == PERF_GROUP_WARP)
			return kinet_dev_put_warp(qp, src, a->lkey, dst, a->rkey, a->size, tk);
		if (g == PERF_GROUP_BLOCK)
			return kinet_dev_put_block(qp, src, a->lkey, dst, a->rkey, a->size, tk);
		return kinet_dev_put(qp, src, a->lkey, dst, a->rkey, a->size, tk);
	case PERF_OP_READ:
		if (g == PERF_GROUP_WARP)
			return kinet_dev_get_warp(qp, src, a->lkey, dst, a->rkey, a->size, tk);
		if (g == PERF_GROUP_BLOCK)
			return kinet_dev_get_block(qp, src, a->lkey, dst, a->rkey, a->size, tk);
		return kinet_dev_get(qp, src, a->lkey, dst, a->rkey, a->size, tk);
	case PERF_OP_FETCH_ADD:
		return kinet_dev_fetch_add(qp, &a->results[u], a->res_lkey, dst, a->rkey, 1, tk);
	case PERF_OP_COMPARE_SWAP:
		return kinet_dev_compare_swap(qp, &a->results[u], a->res_lkey, dst, a->rkey, i, i + 1, tk);
	case PERF_OP_PUT_SIGNAL:
		/* Signal words stay one per QP (after every QP's slots). */
		if (g == PERF_GROUP_WARP)
			return kinet_dev_put_signal_warp(qp, src, a->lkey, dst, a->rkey, a->size,
							 a->sig + 8 * q, a->rkey, 1, tk);
		if (g == PERF_GROUP_BLOCK)
			return kinet_dev_put_signal_block(qp, src, a->lkey, dst, a->rkey, a->size,
							  a->sig + 8 * q, a->rkey, 1, tk);
		return kinet_dev_put_signal(qp, src, a->lkey, dst, a->rkey, a->size, a->sig + 8 * q, a->rkey,
					    1, tk);
	default:
		return kinet_dev_send(qp, src, a->lkey, a->size, tk);
	}
}

/* Wait for a ticket: the whole group, identical arguments. */
KINET_DEV_FN int perf_wait(const struct perf_kargs *a, struct kinet_dev_qp *qp, uint64_t tk)
{
	if (a->group == PERF_GROUP_WARP)
		return kinet_dev_wait_warp(qp, tk);
	if (a->group == PERF_GROUP_BLOCK)
		return kinet_dev_wait_block(qp, tk);
	return kinet_dev_wait(qp, tk);
}

/* ---- latency ---- */

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

/* ---- bandwidth / message rate ---- */

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

/* ---- iteration: compute, put, wait ---- */

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

#if defined(KINET_HOST_EMU)
static void perf_lat_emu(void *p)
{
	perf_lat_body((struct perf_kargs *)p);
}
static void perf_bw_emu(void *p)
{
	perf_bw_body((struct perf_kargs *)p);
}
static void perf_iter_emu(void *p)
{
	perf_iter_body((struct perf_kargs *)p);
}
static void perf_compute_emu(void *p)
{
	perf_compute_body((struct perf_kargs *)p);
}
#else
__global__ void perf_lat_kernel(struct perf_kargs a)
{
	perf_lat_body(&a);
}
__global__ void perf_bw_kernel(struct perf_kargs a)
{
	perf_bw_body(&a);
}
__global__ void perf_iter_kernel(struct perf_kargs a)
{
	perf_iter_body(&a);
}
__global__ void perf_compute_kernel(struct perf_kargs a)
{
	perf_compute_body(&a);
}
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

#if !defined(KINET_HOST_EMU)
static int cuda_check(cudaError_t c, const char *what, char *err, size_t errlen)
{
	if (c == cudaSuccess)
		return 0;
	snprintf(err, errlen, "%s: %s", what, cudaGetErrorString(c));
	cudaGetLastError();
	return -EIO;
}
#endif

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
	rc = cuda_check(cudaGetLastError(), "launch", err, errlen);
	if (!rc)
		rc = cuda_check(cudaDeviceSynchronize(), "latency kernel", err, errlen);
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
		rc = cuda_check(
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
		rc = cuda_check(cudaGetLastError(), "launch", err, errlen);
		if (!rc)
			rc = cuda_check(cudaDeviceSynchronize(), "bandwidth kernel", err, errlen);
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
		rc = cuda_check(cudaGetLastError(), "launch", err, errlen);
		if (!rc)
			rc = cuda_check(cudaDeviceSynchronize(), "iteration kernel", err, errlen);
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
			rc = cuda_check(cudaGetLastError(), "launch", err, errlen);
			if (!rc)
				rc = cuda_check(cudaStreamSynchronize(0), "compute kernel", err, errlen);
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
