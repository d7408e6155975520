/*
 * kinet-perf peer floors: what two GPUs of one host (NVLink or PCIe peer to
 * peer) cost each other with no kinet in between, measured in the same run
 * as the kinet points that go from GPU A (the initiator's) to GPU B
 * (--peer-gpu).  Peer access is enabled both ways for the measurement and
 * disabled again where it was not on before, so the kinet points run with
 * whatever mappings kinet itself sets up.
 *
 *   store_rtt   a kernel on A and one on B, one thread each, own a flag in
 *               their own memory; A stores i into B's (st.relaxed.sys), B
 *               spins on its own until it reads i and stores i into A's, A
 *               spins until it reads i.  Per-iteration %globaltimer samples
 *               on A, after a warm-up: the round trip of a bare flag.
 *   fence_rtt   the same, but each side first stores i into an 8-byte data
 *               word of the other, then fence.sc.sys, then the flag; the
 *               receiver spins with ld.acquire.sys and checks the data: the
 *               least a put-with-signal is, both ways.
 *   memcpy      cudaMemcpyPeerAsync of each size of the run, a batch per
 *               round, median of the rounds (staged through the host where
 *               there is no peer access).
 *   kcopy       one kernel with the run's grid copies the buffer to the
 *               peer reps times (16-byte loads and stores, grid-stride), so
 *               a launch is paid once as kinet's persistent kernels pay it;
 *               median of the rounds.  With --group block (bw, rate) a
 *               pass copies units x size bytes, what one round of the
 *               benchmark moves (each block its own size bytes), else
 *               size.
 *   store rate  every thread of the grid (the run's in bw and rate modes,
 *               else 132 x 256) stores 8 bytes n times to the peer
 *               (st.relaxed.sys), then fences; stores over the span from
 *               the first thread's start to the last one's end.  Each
 *               thread owns a column of words and moves to the next word
 *               with every store (a warp's stores stay contiguous): on an
 *               H200 pair, stores repeated into one word per thread were
 *               counted at ~5e12/s, some 40 TB/s, so they are absorbed
 *               before the link, and such a floor would bound nothing.
 *
 * Reads move data from B to A: then the copies run B -> A (rev).  Every
 * spin gives up after PEER_SPIN_NS with a failure flag, so a peer that never
 * answers costs two seconds, not the run.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "perf.h"

#if defined(KINET_HOST_EMU)

/* Host emulation has no GPUs (main refuses --peer-gpu there). */
void perf_peer_floors_measure(const struct perf_opts *o, struct perf_peer_floors *f)
{
	(void)o;
	memset(f, 0, sizeof(*f));
}

#else
#include <cuda_runtime.h>

#define PEER_WARMUP 200
#define PEER_ITERS 5000
#define PEER_SPIN_NS (2ull * 1000000000ull)
#define PEER_ROUNDS 5
/* The raw store rate's grid when the run's is not a posting grid (lat,
 * iter): a block per SM of an H100/H200, 256 threads each. */
#define PEER_RATE_BLOCKS 132
#define PEER_RATE_THREADS 256
/* Timed span the store rate aims for (the first launch calibrates). */
#define PEER_RATE_SPAN_NS (20ull * 1000000ull)
/* The store rate's columns: up to 256 MiB in all (beyond an H200's 60 MB
 * L2 for the default grid), so a word is stored again only long after. */
#define PEER_RATE_BYTES (256ull << 20)
#define PEER_RATE_MAX_COLUMN 4096ull

/* Failure flags the kernels leave. */
#define PEER_FAIL_TIMEOUT 1u
#define PEER_FAIL_DATA 2u

static __device__ __forceinline__ uint64_t peer_now_ns(void)
{
	uint64_t t;
	asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
	return t;
}

static __device__ __forceinline__ void peer_st_relaxed_sys(uint64_t *p, uint64_t v)
{
	asm volatile("st.relaxed.sys.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}

static __device__ __forceinline__ uint64_t peer_ld_relaxed_sys(const uint64_t *p)
{
	uint64_t v;
	asm volatile("ld.relaxed.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
	return v;
}

static __device__ __forceinline__ uint64_t peer_ld_acquire_sys(const uint64_t *p)
{
	uint64_t v;
	asm volatile("ld.acquire.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
	return v;
}

/* ---- a, b: ping-pong ---- */

struct peer_pp {
	uint64_t *my_flag, *my_data;	 /* in this GPU's memory: the other side stores here */
	uint64_t *peer_flag, *peer_data; /* in the other GPU's memory */
	uint64_t n;
	int fence;	   /* b: data, fence.sc.sys, flag */
	int first;	   /* A: stores first and takes the samples */
	uint64_t *samples; /* A: ns per round trip */
	uint32_t *failed;  /* PEER_FAIL_* */
};

static __device__ __forceinline__ void peer_pp_send(const struct peer_pp *a, uint64_t i)
{
	if (a->fence) {
		peer_st_relaxed_sys(a->peer_data, i);
		__threadfence_system();
	}
	peer_st_relaxed_sys(a->peer_flag, i);
}

__global__ void perf_peer_pp_kernel(struct peer_pp a)
{
	for (uint64_t i = 1; i <= a.n; i++) {
		uint64_t t0 = peer_now_ns(), spins = 0;
		if (a.first)
			peer_pp_send(&a, i);
		while ((a.fence ? peer_ld_acquire_sys(a.my_flag) : peer_ld_relaxed_sys(a.my_flag)) != i) {
			if ((++spins & 0xff) == 0 && peer_now_ns() - t0 > PEER_SPIN_NS) {
				*a.failed = PEER_FAIL_TIMEOUT;
				return;
			}
		}
		/* What the flag published must be there (the acquire orders it). */
		if (a.fence && peer_ld_relaxed_sys(a.my_data) != i) {
			*a.failed = PEER_FAIL_DATA;
			return;
		}
		if (a.first)
			a.samples[i - 1] = peer_now_ns() - t0;
		else
			peer_pp_send(&a, i);
	}
}

/* ---- d: kernel copy ---- */

static __device__ __forceinline__ void peer_st_v4(uint4 *p, uint4 v)
{
	/* A plain store; asm only so that no pass of the loop is folded away. */
	asm volatile("st.global.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(p), "r"(v.x), "r"(v.y), "r"(v.z),
		     "r"(v.w)
		     : "memory");
}

__global__ void perf_peer_copy_kernel(const uint8_t *src, uint8_t *dst, uint64_t size, uint32_t reps)
{
	uint64_t tid = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
	uint64_t nth = (uint64_t)gridDim.x * blockDim.x;
	uint64_t n16 = size / 16;
	const uint4 *s = (const uint4 *)src;
	uint4 *d = (uint4 *)dst;
	for (uint32_t r = 0; r < reps; r++) {
		for (uint64_t k = tid; k < n16; k += nth)
			peer_st_v4(&d[k], s[k]);
		for (uint64_t k = n16 * 16 + tid; k < size; k += nth)
			((volatile uint8_t *)dst)[k] = src[k];
	}
}

/* ---- e: raw store rate ---- */

/* words: column (a power of two) rows of one word per thread. */
__global__ void perf_peer_store_kernel(uint64_t *words, uint64_t column, uint64_t n, unsigned long long *span)
{
	uint64_t tid = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
	uint64_t nth = (uint64_t)gridDim.x * blockDim.x;
	uint64_t *w = &words[tid];
	unsigned long long t0 = peer_now_ns();
	for (uint64_t i = 0; i < n; i++)
		peer_st_relaxed_sys(&w[(i & (column - 1)) * nth], i);
	/* Counted once performed at the peer, not once issued. */
	__threadfence_system();
	atomicMin(&span[0], t0);
	atomicMax(&span[1], (unsigned long long)peer_now_ns());
}

/* ---- host side ---- */

static int cuda_ok(cudaError_t e)
{
	if (e == cudaSuccess)
		return 1;
	cudaGetLastError();
	return 0;
}

static int cmp_double(const void *x, const void *y)
{
	double a = *(const double *)x, b = *(const double *)y;
	return a < b ? -1 : a > b;
}

static double median_of(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return v[n / 2];
}

/* Lets from's kernels reach to's memory; *mine: this call turned it on. */
static int peer_enable(int from, int to, int *mine)
{
	int can = 0;
	cudaError_t e;
	*mine = 0;
	if (from == to) /* --peer-gpu on the initiator's GPU: it reaches itself */
		return 1;
	if (!cuda_ok(cudaDeviceCanAccessPeer(&can, from, to)) || !can)
		return 0;
	perf_gpu_use(from);
	e = cudaDeviceEnablePeerAccess(to, 0);
	if (e == cudaErrorPeerAccessAlreadyEnabled) {
		cudaGetLastError();
		return 1;
	}
	if (!cuda_ok(e))
		return 0;
	*mine = 1;
	return 1;
}

struct peer_run {
	int a, b;
	cudaStream_t sa, sb; /* on A, on B */
};

/* One ping-pong of n round trips; 0 and samples[0..n) in ns, or
 * PEER_FAIL_* (or -1: could not run it). */
static int peer_pingpong(struct peer_run *r, int fence, uint64_t n, uint64_t *samples)
{
	/* Flag and data a line apart: the data store does not carry the flag. */
	uint64_t *wa = (uint64_t *)perf_alloc_on(r->a, PERF_MEM_GPU, 512);
	uint64_t *wb = (uint64_t *)perf_alloc_on(r->b, PERF_MEM_GPU, 512);
	uint64_t *ds = (uint64_t *)perf_alloc_on(r->a, PERF_MEM_GPU, n * 8);
	uint32_t fa = 0, fb = 0;
	struct peer_pp pa, pb;
	int rc = -1;
	if (!wa || !wb || !ds)
		goto out;
	pa.my_flag = &wa[0];
	pa.my_data = &wa[16];
	pa.failed = (uint32_t *)&wa[32];
	pb.my_flag = &wb[0];
	pb.my_data = &wb[16];
	pb.failed = (uint32_t *)&wb[32];
	pa.peer_flag = pb.my_flag;
	pa.peer_data = pb.my_data;
	pb.peer_flag = pa.my_flag;
	pb.peer_data = pa.my_data;
	pa.n = pb.n = n;
	pa.fence = pb.fence = fence;
	pa.first = 1;
	pb.first = 0;
	pa.samples = ds;
	pb.samples = NULL;

	/* The answering side first: A's first store then finds it running. */
	perf_gpu_use(r->b);
	perf_peer_pp_kernel<<<1, 1, 0, r->sb>>>(pb);
	if (!cuda_ok(cudaGetLastError()))
		goto out;
	perf_gpu_use(r->a);
	perf_peer_pp_kernel<<<1, 1, 0, r->sa>>>(pa);
	if (!cuda_ok(cudaGetLastError())) {
		/* B gives up on its own after PEER_SPIN_NS. */
		perf_gpu_use(r->b);
		cuda_ok(cudaStreamSynchronize(r->sb));
		goto out;
	}
	if (!cuda_ok(cudaStreamSynchronize(r->sa)))
		goto out;
	perf_gpu_use(r->b);
	if (!cuda_ok(cudaStreamSynchronize(r->sb)))
		goto out;
	perf_gpu_use(r->a);
	if (perf_copy_from(&fa, pa.failed, 4) || perf_copy_from(&fb, pb.failed, 4))
		goto out;
	rc = (int)(fa ? fa : fb);
	if (!rc && perf_copy_from(samples, ds, n * 8))
		rc = -1;
out:
	perf_gpu_use(r->a);
	perf_free_on(r->a, PERF_MEM_GPU, wa);
	perf_free_on(r->b, PERF_MEM_GPU, wb);
	perf_free_on(r->a, PERF_MEM_GPU, ds);
	return rc;
}

static uint32_t copy_reps(uint64_t size)
{
	uint64_t reps = (256ull << 20) / size;
	if (reps < 3)
		reps = 3;
	if (reps > 2000)
		reps = 2000;
	return (uint32_t)reps;
}

/* GB/s of size-byte copies src -> dst on A's stream: cudaMemcpyPeerAsync
 * (kernel 0) or the copy kernel with blocks x threads (kernel 1); median
 * of PEER_ROUNDS batches.  0 when it failed. */
static double peer_copy_gbs(struct peer_run *r, int kernel, void *dst, int ddev, const void *src, int sdev,
			    uint64_t size, int blocks, int threads)
{
	uint32_t reps = copy_reps(size);
	double v[PEER_ROUNDS];
	cudaEvent_t e0, e1;
	int ok = 1;
	perf_gpu_use(r->a);
	if (!cuda_ok(cudaEventCreate(&e0)))
		return 0;
	if (!cuda_ok(cudaEventCreate(&e1))) {
		cudaEventDestroy(e0);
		return 0;
	}
	for (int round = -1; round < PEER_ROUNDS && ok; round++) {
		/* Round -1 warms up (first touch of the mappings). */
		uint32_t n = round < 0 ? 1 : reps;
		float ms = 0;
		ok = cuda_ok(cudaEventRecord(e0, r->sa));
		if (kernel) {
			perf_peer_copy_kernel<<<blocks, threads, 0, r->sa>>>((const uint8_t *)src,
									     (uint8_t *)dst, size, n);
			ok = ok && cuda_ok(cudaGetLastError());
		} else {
			for (uint32_t k = 0; k < n && ok; k++)
				ok = cuda_ok(cudaMemcpyPeerAsync(dst, ddev, src, sdev, size, r->sa));
		}
		ok = ok && cuda_ok(cudaEventRecord(e1, r->sa)) && cuda_ok(cudaEventSynchronize(e1)) &&
		     cuda_ok(cudaEventElapsedTime(&ms, e0, e1));
		if (ok && round >= 0)
			v[round] = ms > 0 ? (double)size * (double)n / ((double)ms * 1e6) : 0;
	}
	cudaEventDestroy(e0);
	cudaEventDestroy(e1);
	return ok ? median_of(v, PEER_ROUNDS) : 0;
}

/* One launch of the store kernel: its span in ns, 0 when it failed. */
static uint64_t peer_store_span(struct peer_run *r, uint64_t *words, uint64_t column, uint64_t n,
				unsigned long long *dspan, int blocks, int threads)
{
	unsigned long long span[2] = {~0ull, 0};
	if (perf_copy_to(dspan, span, sizeof(span)))
		return 0;
	perf_peer_store_kernel<<<blocks, threads, 0, r->sa>>>(words, column, n, dspan);
	if (!cuda_ok(cudaGetLastError()) || !cuda_ok(cudaStreamSynchronize(r->sa)) ||
	    perf_copy_from(span, dspan, sizeof(span)))
		return 0;
	return span[1] > span[0] ? span[1] - span[0] : 0;
}

/* 1e6 stores per second of blocks x threads storing to B's memory. */
static double peer_store_mops(struct peer_run *r, int blocks, int threads)
{
	uint64_t nth = (uint64_t)blocks * (uint64_t)threads, n = 256, span, column = 1;
	uint64_t *words;
	while (column * 2 <= PEER_RATE_MAX_COLUMN && column * 2 * nth * 8 <= PEER_RATE_BYTES)
		column *= 2;
	words = (uint64_t *)perf_alloc_on(r->b, PERF_MEM_GPU, column * nth * 8);
	unsigned long long *dspan = (unsigned long long *)perf_alloc_on(r->a, PERF_MEM_GPU, 16);
	double v[PEER_ROUNDS], mops = 0;
	int k = 0;
	perf_gpu_use(r->a);
	if (!words || !dspan)
		goto out;
	/* Calibration: n for about PEER_RATE_SPAN_NS. */
	span = peer_store_span(r, words, column, n, dspan, blocks, threads);
	if (!span)
		goto out;
	if (span < PEER_RATE_SPAN_NS) {
		uint64_t scale = PEER_RATE_SPAN_NS / span;
		n = n * scale > (1ull << 24) ? 1ull << 24 : n * scale;
	}
	for (k = 0; k < PEER_ROUNDS; k++) {
		span = peer_store_span(r, words, column, n, dspan, blocks, threads);
		if (!span)
			break;
		v[k] = (double)(nth * n) / (double)span * 1e3;
	}
	if (k == PEER_ROUNDS)
		mops = median_of(v, PEER_ROUNDS);
out:
	perf_gpu_use(r->a);
	perf_free_on(r->b, PERF_MEM_GPU, words);
	perf_free_on(r->a, PERF_MEM_GPU, dspan);
	return mops;
}

void perf_peer_floors_measure(const struct perf_opts *o, struct perf_peer_floors *f)
{
	struct peer_run r;
	int mine_ab = 0, mine_ba = 0, ab, ba;
	uint64_t n = PEER_WARMUP + PEER_ITERS, maxsize = 0;
	uint64_t *samples = (uint64_t *)malloc(n * 8);
	void *ba_buf = NULL, *bb_buf = NULL;
	int posting = o->mode == PERF_MODE_BW || o->mode == PERF_MODE_RATE;

	memset(f, 0, sizeof(*f));
	memset(&r, 0, sizeof(r));
	r.a = f->gpu_a = o->gpu;
	r.b = f->gpu_b = o->peer_gpu;
	f->rev = o->op == PERF_OP_READ;
	f->copy_blocks = o->blocks;
	f->copy_threads = o->threads;
	f->copy_units = posting && o->group == PERF_GROUP_BLOCK ? perf_units(o) : 1;
	f->rate_blocks = posting ? o->blocks : PEER_RATE_BLOCKS;
	f->rate_threads = posting ? o->threads : PEER_RATE_THREADS;
	if (!samples)
		return;

	ab = peer_enable(r.a, r.b, &mine_ab);
	ba = peer_enable(r.b, r.a, &mine_ba);
	f->p2p = ab && ba;
	if (!f->p2p)
		f->note = "no peer access between the GPUs: store floors and kernel copy not measured, "
			  "cudaMemcpyPeerAsync staged";
	perf_gpu_use(r.b);
	if (!cuda_ok(cudaStreamCreateWithFlags(&r.sb, cudaStreamNonBlocking)))
		goto out;
	perf_gpu_use(r.a);
	if (!cuda_ok(cudaStreamCreateWithFlags(&r.sa, cudaStreamNonBlocking)))
		goto out;

	if (f->p2p) {
		int rc = peer_pingpong(&r, 0, n, samples);
		if (!rc)
			perf_stats_ns(samples + PEER_WARMUP, PEER_ITERS, &f->store_rtt);
		f->store_failed = rc != 0;
		rc = peer_pingpong(&r, 1, n, samples);
		if (!rc)
			perf_stats_ns(samples + PEER_WARMUP, PEER_ITERS, &f->fence_rtt);
		f->fence_failed = rc != 0;
		if (rc == PEER_FAIL_DATA)
			f->note = "store+fence+store ping-pong: a flag arrived before its data";
		else if (f->store_failed || f->fence_failed)
			f->note = "a ping-pong failed: a side did not answer within 2 s, or did not start";
	}

	for (int i = 0; i < o->nsizes && f->ncopy < PERF_MAX_SIZES; i++) {
		f->copy_size[f->ncopy++] = o->sizes[i];
		if (o->sizes[i] > maxsize)
			maxsize = o->sizes[i];
	}
	maxsize *= f->copy_units; /* the kernel copy's bytes (memcpy's are fewer) */
	ba_buf = perf_alloc_on(r.a, PERF_MEM_GPU, maxsize);
	bb_buf = perf_alloc_on(r.b, PERF_MEM_GPU, maxsize);
	if (!ba_buf || !bb_buf) {
		f->note = "out of GPU memory for the copy floors";
	} else {
		void *src = f->rev ? bb_buf : ba_buf, *dst = f->rev ? ba_buf : bb_buf;
		int sdev = f->rev ? r.b : r.a, ddev = f->rev ? r.a : r.b;
		perf_fill(PERF_MEM_GPU, ba_buf, 0x5a, maxsize);
		for (int i = 0; i < f->ncopy; i++) {
			uint64_t sz = f->copy_size[i];
			f->memcpy_gbs[i] = peer_copy_gbs(&r, 0, dst, ddev, src, sdev, sz, 0, 0);
			if (f->p2p)
				f->kcopy_gbs[i] =
					peer_copy_gbs(&r, 1, dst, ddev, src, sdev, sz * f->copy_units,
						      f->copy_blocks, f->copy_threads);
		}
	}

	if (f->p2p) {
		f->store_mops = peer_store_mops(&r, f->rate_blocks, f->rate_threads);
		f->rate_failed = f->store_mops <= 0;
	}
	f->measured = 1;
out:
	perf_free_on(r.a, PERF_MEM_GPU, ba_buf);
	perf_free_on(r.b, PERF_MEM_GPU, bb_buf);
	if (r.sb) {
		perf_gpu_use(r.b);
		cudaStreamDestroy(r.sb);
	}
	if (r.sa) {
		perf_gpu_use(r.a);
		cudaStreamDestroy(r.sa);
	}
	/* As found: kinet's points then run with the mappings kinet makes. */
	if (mine_ab) {
		perf_gpu_use(r.a);
		cuda_ok(cudaDeviceDisablePeerAccess(r.b));
	}
	if (mine_ba) {
		perf_gpu_use(r.b);
		cuda_ok(cudaDeviceDisablePeerAccess(r.a));
	}
	perf_gpu_use(r.a);
	free(samples);
}

#endif
