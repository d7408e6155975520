/*
 * kinet-perf: the arguments the host side (launch.cu) gives the device
 * code of the GPU-initiated modes, and their entry points: a kernel each on
 * the GPU, a function a CPU thread plays under KINET_HOST_EMU.  Each mode's
 * device code is a file of its own (lat.cu, bw.cu, iter.cu): every verb
 * form a mode can post is inlined into its kernel, and nvcc compiles the
 * files side by side rather than one after the other.
 */
#ifndef KINET_PERF_KARGS_H
#define KINET_PERF_KARGS_H

#include <stdint.h>

struct kinet_dev_qp;

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
void perf_lat_emu(void *p);
void perf_bw_emu(void *p);
void perf_iter_emu(void *p);
void perf_compute_emu(void *p);
#else
__global__ void perf_lat_kernel(struct perf_kargs a);
__global__ void perf_bw_kernel(struct perf_kargs a);
__global__ void perf_iter_kernel(struct perf_kargs a);
__global__ void perf_compute_kernel(struct perf_kargs a);
#endif

#endif /* KINET_PERF_KARGS_H */
