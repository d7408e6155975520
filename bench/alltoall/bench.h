/*
 * kinet-alltoall-bench: what its parts share (one program: alltoall_bench.cu
 * has options, timing, output, floors, NCCL and the plain all-to-all;
 * moe_bench.h, included there, MoE dispatch and combine).
 * docs/benchmarks/alltoall.md describes the method.
 */
#ifndef KINET_BENCH_ALLTOALL_H
#define KINET_BENCH_ALLTOALL_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <kinet/boot.h>
#include <kinet/kinet.h>
#include <kinet/mesh.h>
#include <kinet/team.h>

#include "nccl_dl.h"

#if !defined(KINET_HOST_EMU)
#include <cuda_runtime.h>
#include <time.h>
#endif

#define BENCH_MAX_TOKENS 8

struct bench_opts {
	int tokens[BENCH_MAX_TOKENS], ntokens;
	int hidden, topk, experts;
	int iters, warmup;
	unsigned blocks, threads; /* 0: from the sizes and the GPU */
	int alltoall, moe, nccl, check;
	int layout; /* MoE: MOE_LAYOUT_INDEX (default) or MOE_LAYOUT_COPY */
};

struct bench {
	struct bench_opts o;
	struct kinet_boot *boot;
	struct kinet_ctx *ctx;
	struct kinet_mesh *mesh;
	int rank, size, device, sms;
	const char *path; /* "peer" (some rank mapped) or "engine" */
	char gpu[256];
	struct nccl_dl nccl;
	void *comm; /* NULL: no NCCL */
	const char *nccl_why;
	uint64_t *samples; /* iters */
	double launch_floor_us;
#if !defined(KINET_HOST_EMU)
	cudaStream_t stream;
	cudaEvent_t ev[2];
#endif
};

/* Medians and spreads of one measurement, in microseconds. */
struct bench_stats {
	double median, p10, p90, min, max, median_max_rank;
};

static uint64_t bench_now_ns(void);
static void bench_stats_of(struct bench *b, uint64_t *ns, int n, struct bench_stats *s);
/* One JSON line on stdout (rank 0) and a table row on stderr. */
static void bench_report(struct bench *b, const char *what, const char *timing, int tokens, uint64_t bytes,
			 const struct bench_stats *s);
static int bench_fail(struct bench *b, const char *what, int err);

/* Device memory, copies and the stream's timers (events on the GPU). */
static void *bench_dev_alloc(size_t n);
static void bench_dev_free(void *p);
static int bench_copy(void *dst, const void *src, size_t n, int to_device);
static void bench_timer_start(struct bench *b);
/* Waits for the stream; *gpu_ns: the kernels' time between start and now
 * (events), or the host's under emulation. */
static int bench_timer_stop(struct bench *b, uint64_t *gpu_ns);

/* NCCL's grouped send/recv of per-peer byte counts (an all-to-all(v)). */
static int bench_nccl_alltoallv(struct bench *b, const uint8_t *send, const uint64_t *send_bytes,
				const uint64_t *send_displ, uint8_t *recv, const uint64_t *recv_bytes,
				const uint64_t *recv_displ);

static int bench_moe(struct bench *b, int tokens);

#endif /* KINET_BENCH_ALLTOALL_H */
