/*
 * kinet-perf floors: what the hardware and the CUDA runtime cost before any
 * networking, measured in the same run so every result sits beside them.
 *
 * GPU:  signalling round trip (a kernel and a CPU thread ping-pong on
 *       host-mapped words: the least a GPU-initiated operation through a
 *       CPU-side NIC can take), empty kernel launch + synchronize, 8-byte
 *       cudaMemcpyAsync + synchronize, and cudaMemcpyAsync bandwidth for
 *       each size on the path the data takes (and memcpy host to host,
 *       the software NIC's path between host buffers).
 * Host emulation: the CPU counterparts (thread-to-thread ping-pong through
 *       a shared word, thread create + join, memcpy), labelled as such.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kinet/device.cuh"
#include "perf.h"

#if !defined(KINET_HOST_EMU)
#include <cuda_runtime.h>
#endif

#define RTT_WARMUP 200
#define RTT_ITERS 5000
#define LAUNCH_ITERS 300
#define SPIN_LIMIT_NS (2ull * 1000000000ull)

/* ---- CPU side of the ping-pong (both builds) ---- */

struct pong_arg {
	uint64_t *ping, *pong;
	uint64_t n;
	int failed;
};

/* Answers every ping i with pong i; pure spin (this is the floor). */
static void *pong_main(void *p)
{
	struct pong_arg *a = (struct pong_arg *)p;
	for (uint64_t i = 1; i <= a->n; i++) {
		uint64_t start = perf_now_ns(), spins = 0;
		while (__atomic_load_n(a->ping, __ATOMIC_ACQUIRE) != i) {
			if ((++spins & 0xffff) == 0 && perf_now_ns() - start > SPIN_LIMIT_NS) {
				a->failed = 1;
				return NULL;
			}
		}
		__atomic_store_n(a->pong, i, __ATOMIC_RELEASE);
	}
	return NULL;
}

/* Bytes per second of memcpy at this size, host to host. */
static double memcpy_gbs(uint64_t size)
{
	void *a = NULL, *b = NULL;
	double gbs = 0;
	if (posix_memalign(&a, 4096, size) || posix_memalign(&b, 4096, size)) {
		free(a);
		return 0;
	}
	memset(a, 1, size);
	memset(b, 2, size);
	uint64_t reps = (256ull << 20) / size;
	if (reps < 3)
		reps = 3;
	if (reps > 20000)
		reps = 20000;
	double best = 0;
	for (int round = 0; round < 3; round++) {
		uint64_t t0 = perf_now_ns();
		for (uint64_t r = 0; r < reps; r++) {
			memcpy(b, a, size);
			__atomic_signal_fence(__ATOMIC_SEQ_CST); /* keep every copy */
		}
		uint64_t t1 = perf_now_ns();
		double v = (double)size * (double)reps / (double)(t1 - t0 ? t1 - t0 : 1);
		if (v > best)
			best = v;
	}
	gbs = best; /* bytes per ns = GB/s */
	free(a);
	free(b);
	return gbs;
}

static void copy_sizes(const struct perf_opts *o, struct perf_floors *f)
{
	f->ncopy = 0;
	for (int i = 0; i < o->nsizes && f->ncopy < PERF_MAX_SIZES; i++)
		f->copy_size[f->ncopy++] = o->sizes[i];
}

#if defined(KINET_HOST_EMU)

static void empty_fn(void *p)
{
	(void)p;
}

void perf_floors_measure(const struct perf_opts *o, struct perf_floors *f)
{
	uint64_t n = RTT_WARMUP + RTT_ITERS;
	uint64_t *words = NULL, *samples = (uint64_t *)malloc(n * 8);
	pthread_t t;
	struct pong_arg pa;

	memset(f, 0, sizeof(*f));
	f->rtt_label = "CPU thread<->thread round trip (shared word)";
	f->launch_label = "emulated launch: thread create + join";
	f->small_copy_label = "memcpy 8 B (host, no synchronize needed)";
	f->copy_label = "memcpy (host emulation: no copy engine)";
	if (!samples || posix_memalign((void **)&words, 128, 256))
		goto out;
	memset(words, 0, 256);
	pa.ping = &words[0];
	pa.pong = &words[8]; /* another cache line */
	pa.n = n;
	pa.failed = 0;
	if (pthread_create(&t, NULL, pong_main, &pa))
		goto out;
	for (uint64_t i = 1; i <= n; i++) {
		uint64_t t0 = perf_now_ns(), spins = 0;
		__atomic_store_n(pa.ping, i, __ATOMIC_RELEASE);
		while (__atomic_load_n(pa.pong, __ATOMIC_ACQUIRE) != i) {
			if ((++spins & 0xffff) == 0 && (pa.failed || perf_now_ns() - t0 > SPIN_LIMIT_NS))
				break;
		}
		samples[i - 1] = perf_now_ns() - t0;
	}
	pthread_join(t, NULL);
	perf_stats_ns(samples + RTT_WARMUP, RTT_ITERS, &f->rtt);

	for (int i = 0; i < LAUNCH_ITERS; i++) {
		uint64_t t0 = perf_now_ns();
		kinet_emu_launch(1, empty_fn, NULL);
		samples[i] = perf_now_ns() - t0;
	}
	perf_stats_ns(samples, LAUNCH_ITERS, &f->launch);
	for (int i = 0; i < LAUNCH_ITERS; i++) {
		uint64_t t0 = perf_now_ns();
		memcpy(&words[16], &words[24], 8);
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
		samples[i] = perf_now_ns() - t0;
	}
	perf_stats_ns(samples, LAUNCH_ITERS, &f->small_copy);

	copy_sizes(o, f);
	for (int i = 0; i < f->ncopy; i++)
		f->copy_gbs[i] = f->cpu_copy_gbs[i] = memcpy_gbs(f->copy_size[i]);
	f->measured = 1;
out:
	free(words);
	free(samples);
}

#else

__global__ void perf_empty_kernel(void)
{
}

/* GPU side of the ping-pong: stamps each round trip with %globaltimer. */
__global__ void perf_ping_kernel(uint64_t *ping, uint64_t *pong, uint64_t n, uint64_t *samples,
				 uint32_t *failed)
{
	for (uint64_t i = 1; i <= n; i++) {
		uint64_t t0 = kinet_dev_now_ns();
		kinet_devi_store_release_u64_sys(ping, i);
		uint64_t spins = 0;
		while (kinet_devi_load_acquire_u64_sys(pong) != i) {
			if ((++spins & 0xfff) == 0 && kinet_dev_now_ns() - t0 > SPIN_LIMIT_NS) {
				*failed = 1;
				return;
			}
		}
		samples[i - 1] = kinet_dev_now_ns() - t0;
	}
}

static const char *path_label(enum perf_mem from, enum perf_mem to)
{
	if (from == PERF_MEM_GPU)
		return to == PERF_MEM_GPU ? "cudaMemcpyAsync gpu->gpu (copy engine)"
					  : "cudaMemcpyAsync gpu->host (copy engine)";
	return to == PERF_MEM_GPU ? "cudaMemcpyAsync host->gpu (copy engine)"
				  : "cudaMemcpyAsync host->host (pinned)";
}

static double cuda_copy_gbs(enum perf_mem from, enum perf_mem to, uint64_t size)
{
	void *src = perf_alloc(from, size), *dst = perf_alloc(to, size);
	cudaStream_t s;
	cudaEvent_t e0, e1;
	double best = 0;
	if (!src || !dst || cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) != cudaSuccess) {
		cudaGetLastError();
		perf_free(from, src);
		perf_free(to, dst);
		return 0;
	}
	cudaEventCreate(&e0);
	cudaEventCreate(&e1);
	uint64_t reps = (256ull << 20) / size;
	if (reps < 3)
		reps = 3;
	if (reps > 2000)
		reps = 2000;
	for (int round = 0; round < 3; round++) {
		float ms = 0;
		cudaEventRecord(e0, s);
		for (uint64_t r = 0; r < reps; r++)
			cudaMemcpyAsync(dst, src, size, cudaMemcpyDefault, s);
		cudaEventRecord(e1, s);
		if (cudaEventSynchronize(e1) != cudaSuccess ||
		    cudaEventElapsedTime(&ms, e0, e1) != cudaSuccess) {
			cudaGetLastError();
			break;
		}
		double v = (double)size * (double)reps / ((double)ms * 1e6);
		if (v > best)
			best = v;
	}
	cudaEventDestroy(e0);
	cudaEventDestroy(e1);
	cudaStreamDestroy(s);
	perf_free(from, src);
	perf_free(to, dst);
	return best;
}

void perf_floors_measure(const struct perf_opts *o, struct perf_floors *f)
{
	uint64_t n = RTT_WARMUP + RTT_ITERS;
	uint64_t *words = NULL, *dsamples = NULL, *samples = (uint64_t *)malloc(n * 8);
	uint32_t *dfailed = NULL, failed = 0;
	void *dsmall = NULL;
	pthread_t t;
	struct pong_arg pa;
	/* Data of writes, puts and sends moves source -> target; reads the
	 * other way.  Atomics are 8 bytes either way. */
	enum perf_mem from = o->op == PERF_OP_READ ? o->dst_mem : o->src_mem;
	enum perf_mem to = o->op == PERF_OP_READ ? o->src_mem : o->dst_mem;

	memset(f, 0, sizeof(*f));
	f->rtt_label = "GPU<->CPU round trip (pinned host words)";
	f->launch_label = "empty kernel launch + synchronize";
	f->small_copy_label = "cudaMemcpyAsync 8 B host->gpu + synchronize";
	f->copy_label = path_label(from, to);
	if (!samples)
		return;
	words = (uint64_t *)perf_alloc(PERF_MEM_HOST, 256);
	dsamples = (uint64_t *)perf_alloc(PERF_MEM_GPU, n * 8);
	dfailed = (uint32_t *)perf_alloc(PERF_MEM_GPU, 8);
	dsmall = perf_alloc(PERF_MEM_GPU, 64);
	if (!words || !dsamples || !dfailed || !dsmall)
		goto out;

	pa.ping = &words[0];
	pa.pong = &words[8];
	pa.n = n;
	pa.failed = 0;
	if (pthread_create(&t, NULL, pong_main, &pa))
		goto out;
	perf_ping_kernel<<<1, 1>>>(pa.ping, pa.pong, n, dsamples, dfailed);
	cudaDeviceSynchronize();
	pthread_join(t, NULL);
	perf_copy_from(&failed, dfailed, 4);
	perf_copy_from(samples, dsamples, n * 8);
	if (!failed && !pa.failed)
		perf_stats_ns(samples + RTT_WARMUP, RTT_ITERS, &f->rtt);

	for (int i = 0; i < LAUNCH_ITERS; i++) {
		uint64_t t0 = perf_now_ns();
		perf_empty_kernel<<<1, 1>>>();
		cudaStreamSynchronize(0);
		samples[i] = perf_now_ns() - t0;
	}
	perf_stats_ns(samples + 20, LAUNCH_ITERS - 20, &f->launch);
	for (int i = 0; i < LAUNCH_ITERS; i++) {
		uint64_t t0 = perf_now_ns();
		cudaMemcpyAsync(dsmall, &words[16], 8, cudaMemcpyHostToDevice, 0);
		cudaStreamSynchronize(0);
		samples[i] = perf_now_ns() - t0;
	}
	perf_stats_ns(samples + 20, LAUNCH_ITERS - 20, &f->small_copy);
	cudaGetLastError();

	copy_sizes(o, f);
	for (int i = 0; i < f->ncopy; i++) {
		f->copy_gbs[i] = cuda_copy_gbs(from, to, f->copy_size[i]);
		f->cpu_copy_gbs[i] = memcpy_gbs(f->copy_size[i]);
	}
	f->measured = 1;
out:
	perf_free(PERF_MEM_HOST, words);
	perf_free(PERF_MEM_GPU, dsamples);
	perf_free(PERF_MEM_GPU, dfailed);
	perf_free(PERF_MEM_GPU, dsmall);
	free(samples);
}

#endif
