/*
 * Host side of the MoE example (moe.cuh): options, the job (context on this
 * rank's GPU or host-only under emulation, mesh, team, buffers), inputs,
 * kernel launches and results.  Shared by moe_dispatch_combine.cu and
 * kinet's all-to-all benchmark; compiled by nvcc, or as C with
 * KINET_HOST_EMU.
 */
#ifndef KINET_EXAMPLE_MOE_HOST_H
#define KINET_EXAMPLE_MOE_HOST_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <kinet/boot.h>
#include <kinet/kinet.h>
#include <kinet/mesh.h>
#include <kinet/team.h>

#include "moe.cuh"

#if !defined(KINET_HOST_EMU)
#include <cuda_runtime.h>
#endif

struct moe_opts {
	int tokens, hidden, topk, experts, rounds;
	int layout;		  /* MOE_LAYOUT_COPY (default) or MOE_LAYOUT_INDEX */
	unsigned blocks, threads; /* 0: chosen from the sizes and the GPU */
};

/* Defaults: a small problem that runs anywhere in seconds. */
static inline int moe_opts_parse(struct moe_opts *o, int argc, char **argv, int ranks)
{
	o->tokens = 64;
	o->hidden = 512;
	o->topk = 4;
	o->experts = 8 * ranks;
	o->rounds = 3;
	o->blocks = 0;
	o->threads = 0;
	o->layout = MOE_LAYOUT_COPY;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		long v = i + 1 < argc ? strtol(argv[i + 1], NULL, 0) : -1;
		int *dst = !strcmp(a, "--tokens")    ? &o->tokens
			   : !strcmp(a, "--hidden")  ? &o->hidden
			   : !strcmp(a, "--topk")    ? &o->topk
			   : !strcmp(a, "--experts") ? &o->experts
			   : !strcmp(a, "--rounds")  ? &o->rounds
						     : NULL;
		if (dst && v > 0) {
			*dst = (int)v;
		} else if (!strcmp(a, "--blocks") && v > 0) {
			o->blocks = (unsigned)v;
		} else if (!strcmp(a, "--layout") && i + 1 < argc &&
			   (!strcmp(argv[i + 1], "copy") || !strcmp(argv[i + 1], "index"))) {
			o->layout = !strcmp(argv[i + 1], "copy") ? MOE_LAYOUT_COPY : MOE_LAYOUT_INDEX;
		} else if (!strcmp(a, "--threads") && v >= 32) {
			o->threads = (unsigned)v & ~31u;
		} else {
			fprintf(stderr,
				"usage: %s [--tokens T] [--hidden H (multiple of 8)] [--topk K (<= %d)] "
				"[--experts E (multiple of the ranks)] [--rounds N] [--blocks B] [--threads "
				"N]\n",
				argv[0], MOE_KMAX);
			return 1;
		}
		i++;
	}
	if (o->hidden % 8 || o->topk > MOE_KMAX || o->experts % ranks || o->experts > MOE_MAX_EXPERTS ||
	    o->experts < o->topk || ranks > MOE_MAX_RANKS) {
		fprintf(stderr,
			"%s: H must be a multiple of 8, K <= %d, K <= E <= %d, E a multiple of the %d ranks "
			"(at most %d)\n",
			argv[0], MOE_KMAX, MOE_MAX_EXPERTS, ranks, MOE_MAX_RANKS);
		return 1;
	}
	return 0;
}

struct moe_job {
	struct kinet_boot *boot;
	struct kinet_ctx *ctx;
	struct kinet_mesh *mesh;
	int own; /* ctx and mesh are the job's */
	struct kinet_team *team;
	struct moe_cfg cfg;
	struct moe_args args;
	unsigned blocks, threads;
	char where[320];
	uint8_t *heap;
	int32_t *h_idx;
	float *h_w;
	moe_bf16 *h_x, *h_ex, *h_out;
	uint64_t *h_src;
	uint32_t *h_base;
	int *h_status;
#if !defined(KINET_HOST_EMU)
	cudaStream_t stream;
#endif
};

/* Device-usable memory (GPU memory, or host memory under emulation),
 * zeroed; and copies to and from it. */
static inline void *moe_dev_alloc(size_t n)
{
#if defined(KINET_HOST_EMU)
	return calloc(1, n ? n : 1);
#else
	void *p = NULL;
	if (cudaMalloc(&p, n ? n : 1) != cudaSuccess)
		return NULL;
	cudaMemset(p, 0, n);
	return p;
#endif
}
static inline void moe_dev_free(void *p)
{
#if defined(KINET_HOST_EMU)
	free(p);
#else
	cudaFree(p);
#endif
}
static inline int moe_copy(void *dst, const void *src, size_t n, int to_device)
{
#if defined(KINET_HOST_EMU)
	(void)to_device;
	memcpy(dst, src, n);
	return 0;
#else
	return cudaMemcpy(dst, src, n, to_device ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost) ==
			       cudaSuccess
		       ? 0
		       : -EIO;
#endif
}

/* The mesh a job needs (QPs every block may use), on ctx. */
static inline int moe_mesh_create(struct kinet_ctx *ctx, struct kinet_boot *boot, struct kinet_mesh **mesh)
{
	struct kinet_mesh_attr ma;
	kinet_mesh_attr_init(&ma);
	ma.with_recv = 0;
	ma.qp.sharing = KINET_SHARE_GPU;
	ma.qp.sq_depth = 512;
	ma.qp.timeout_ms = 20000;
	return kinet_mesh_create(ctx, boot, &ma, mesh);
}

/* Sets the job up on ctx and mesh when given (the caller's, on this rank's
 * GPU), else on a context and mesh of its own. */
static inline int moe_job_open(struct moe_job *j, struct kinet_boot *boot, const struct moe_opts *o,
			       struct kinet_ctx *ctx, struct kinet_mesh *mesh)
{
	struct kinet_ctx_attr ca;
	struct kinet_team_attr ta;
	int rc;

	memset(j, 0, sizeof(*j));
	j->boot = boot;
	j->cfg.rank = kinet_boot_rank(boot);
	j->cfg.ranks = kinet_boot_size(boot);
	j->cfg.tokens = o->tokens;
	j->cfg.hidden = o->hidden;
	j->cfg.topk = o->topk;
	j->cfg.experts = o->experts;
	j->cfg.layout = o->layout;
	kinet_ctx_attr_init(&ca);
#if defined(KINET_HOST_EMU)
	ca.cuda_device = KINET_CUDA_DEVICE_NONE;
	snprintf(j->where, sizeof(j->where), "CPU threads (host emulation)");
	j->threads = 1;
	j->blocks = o->blocks ? o->blocks : 3;
#else
	int ndev = 0, sms = 0, occ_d = 0, occ_c = 0;
	const char *lr = getenv("KINET_LOCAL_RANK");
	struct cudaDeviceProp prop;
	if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0)
		return -ENODEV;
	ca.cuda_device = (lr ? atoi(lr) : j->cfg.rank) % ndev;
	if (cudaSetDevice(ca.cuda_device) != cudaSuccess ||
	    cudaGetDeviceProperties(&prop, ca.cuda_device) != cudaSuccess ||
	    cudaStreamCreateWithFlags(&j->stream, cudaStreamNonBlocking) != cudaSuccess)
		return -ENODEV;
	snprintf(j->where, sizeof(j->where), "GPU %d (%s) per rank", ca.cuda_device, prop.name);
	j->threads = o->threads ? o->threads : 512;
	sms = prop.multiProcessorCount;
	/* Every block waits for the others' sends: the grid must fit at once. */
	cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ_d, moe_dispatch_kernel, (int)j->threads, 0);
	cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ_c, moe_combine_kernel, (int)j->threads, 0);
	unsigned resident = (unsigned)(sms * (occ_d < occ_c ? occ_d : occ_c));
	unsigned want = o->blocks ? o->blocks : (unsigned)(o->tokens + 3) / 4;
	j->blocks = want < resident ? want : resident;
	if (j->blocks > (unsigned)sms && !o->blocks)
		j->blocks = (unsigned)sms;
	if (!j->blocks)
		return -EINVAL;
#endif
	j->own = !ctx;
	j->ctx = ctx;
	j->mesh = mesh;
	if (j->own && ((rc = kinet_ctx_open(&ca, &j->ctx)) || (rc = moe_mesh_create(j->ctx, boot, &j->mesh))))
		return rc;
	struct moe_args *a = &j->args;
	moe_layout_init(&a->lay, &j->cfg);
	kinet_team_attr_init(&ta);
	ta.heap_bytes = a->lay.total;
	ta.slots = 2;
	if ((rc = kinet_team_create(boot, j->mesh, &ta, &j->team)) ||
	    (rc = kinet_team_export(j->team, &a->team)))
		return rc;
	j->heap = (uint8_t *)kinet_team_heap(j->team);
	a->cfg = j->cfg;
	size_t T = (size_t)o->tokens, K = (size_t)o->topk, R = (size_t)j->cfg.ranks, H = (size_t)o->hidden;
	size_t rows = (size_t)moe_max_rows(&j->cfg), EL = (size_t)moe_local_experts(&j->cfg);
	a->topk_idx = (const int32_t *)moe_dev_alloc(T * K * 4);
	a->topk_w = (const float *)moe_dev_alloc(T * K * 4);
	a->slot_of = (int32_t *)moe_dev_alloc(T * R * 4);
	a->epos = (uint32_t *)moe_dev_alloc(T * K * 4);
	a->expert_x = (moe_bf16 *)moe_dev_alloc(rows * H * 2);
	a->expert_y = (const moe_bf16 *)moe_dev_alloc(rows * H * 2);
	a->expert_src = (uint64_t *)moe_dev_alloc(rows * 8);
	a->expert_at = (uint32_t *)moe_dev_alloc(rows * 4);
	a->expert_base = (uint32_t *)moe_dev_alloc((EL + 1) * 4);
	a->out = (moe_bf16 *)moe_dev_alloc(T * H * 2);
	a->status = (int *)moe_dev_alloc(j->blocks * sizeof(int));
	a->hist = (uint32_t *)moe_dev_alloc((size_t)j->blocks * (R + (size_t)o->experts) * 4);
	a->flags = (uint64_t *)moe_dev_alloc((size_t)j->blocks * 8);
	j->h_idx = (int32_t *)malloc(T * K * 4);
	j->h_w = (float *)malloc(T * K * 4);
	j->h_x = (moe_bf16 *)malloc(T * H * 2);
	j->h_ex = (moe_bf16 *)malloc(rows * H * 2 + 2);
	j->h_out = (moe_bf16 *)malloc(T * H * 2);
	j->h_src = (uint64_t *)malloc(rows * 8 + 8);
	j->h_base = (uint32_t *)malloc((EL + 1) * 4);
	j->h_status = (int *)malloc(j->blocks * sizeof(int));
	if (!a->topk_idx || !a->topk_w || !a->slot_of || !a->epos || !a->expert_x || !a->expert_y ||
	    !a->expert_src || !a->expert_at || !a->expert_base || !a->out || !a->status || !a->hist ||
	    !a->flags || !j->h_idx || !j->h_w || !j->h_x || !j->h_ex || !j->h_out || !j->h_src ||
	    !j->h_base || !j->h_status)
		return -ENOMEM;
	return 0;
}

/* This rank's tokens and routes of a round into the job's buffers. */
static inline int moe_job_inputs(struct moe_job *j, uint64_t round)
{
	const struct moe_cfg *c = &j->cfg;
	struct moe_args *a = &j->args;
	size_t TK = (size_t)c->tokens * (size_t)c->topk;
	for (int t = 0; t < c->tokens; t++) {
		moe_gen_route(c, c->rank, round, t, j->h_idx + (size_t)t * c->topk,
			      j->h_w + (size_t)t * c->topk);
		for (int h = 0; h < c->hidden; h++)
			j->h_x[(size_t)t * c->hidden + (size_t)h] = moe_gen_x(c->rank, round, t, h);
	}
	if (moe_copy((void *)(uintptr_t)a->topk_idx, j->h_idx, TK * 4, 1) ||
	    moe_copy((void *)(uintptr_t)a->topk_w, j->h_w, TK * 4, 1) ||
	    moe_copy(j->heap + a->lay.x, j->h_x, (size_t)c->tokens * a->lay.row, 1))
		return -EIO;
	return 0;
}

enum moe_kernel { MOE_DISPATCH, MOE_EXPERT, MOE_COMBINE };

/* Starts one kernel (asynchronously on the GPU; under emulation it runs
 * to the end). */
static inline int moe_job_launch(struct moe_job *j, enum moe_kernel which, uint64_t round)
{
	struct moe_args *a = &j->args;
	a->epoch = round;
#if defined(KINET_HOST_EMU)
	void (*fn)(void *) = which == MOE_DISPATCH ? moe_dispatch_emu
			     : which == MOE_EXPERT ? moe_expert_emu
						   : moe_combine_emu;
	return kinet_emu_launch(j->blocks, fn, a) ? -EAGAIN : 0;
#else
	if (which == MOE_DISPATCH)
		moe_dispatch_kernel<<<j->blocks, j->threads, 0, j->stream>>>(*a);
	else if (which == MOE_EXPERT)
		moe_expert_kernel<<<j->blocks, j->threads, 0, j->stream>>>(*a);
	else
		moe_combine_kernel<<<j->blocks, j->threads, 0, j->stream>>>(*a);
	return cudaGetLastError() == cudaSuccess ? 0 : -EIO;
#endif
}

static inline int moe_job_sync(struct moe_job *j)
{
#if defined(KINET_HOST_EMU)
	(void)j;
	return 0;
#else
	return cudaStreamSynchronize(j->stream) == cudaSuccess ? 0 : -EIO;
#endif
}

/* The kernels' statuses: 0, or the first failing one (a negative errno). */
static inline int moe_job_status(struct moe_job *j)
{
	if (moe_copy(j->h_status, j->args.status, j->blocks * sizeof(int), 0))
		return -EIO;
	for (unsigned b = 0; b < j->blocks; b++)
		if (j->h_status[b])
			return j->h_status[b];
	return 0;
}

/* The rows of the expert layout into h_ex: copied from expert_x, or
 * gathered from the receive buffer through expert_at. */
static inline int moe_job_fetch_rows(struct moe_job *j, size_t rows)
{
	const struct moe_cfg *c = &j->cfg;
	struct moe_args *a = &j->args;
	size_t rb = (size_t)a->lay.row, n = (size_t)c->ranks * (size_t)c->tokens;
	if (c->layout == MOE_LAYOUT_COPY)
		return moe_copy(j->h_ex, a->expert_x, rows * rb, 0);
	uint8_t *recv = (uint8_t *)malloc(n * rb + 1);
	uint32_t *at = (uint32_t *)malloc(rows * 4 + 4);
	int rc = recv && at ? 0 : -ENOMEM;
	if (!rc &&
	    (moe_copy(recv, j->heap + a->lay.recv_x, n * rb, 0) || moe_copy(at, a->expert_at, rows * 4, 0)))
		rc = -EIO;
	for (size_t r = 0; !rc && r < rows; r++)
		memcpy((uint8_t *)j->h_ex + r * rb, recv + (size_t)(at[r] < n ? at[r] : 0) * rb, rb);
	free(recv);
	free(at);
	return rc;
}

/* The dispatch layout to the host (h_base, h_src, h_ex).  Called after
 * the dispatch kernel and before the combine: a peer's next dispatch may
 * reuse this rank's receive buffers (which the index layout points into)
 * once this rank's combine has sent its partials. */
static inline int moe_job_fetch_layout(struct moe_job *j)
{
	const struct moe_cfg *c = &j->cfg;
	struct moe_args *a = &j->args;
	int EL = moe_local_experts(c);
	if (moe_copy(j->h_base, a->expert_base, (size_t)(EL + 1) * 4, 0))
		return -EIO;
	size_t rows = j->h_base[EL] < moe_max_rows(c) ? j->h_base[EL] : (size_t)moe_max_rows(c);
	if (moe_copy(j->h_src, a->expert_src, rows * 8, 0) || moe_job_fetch_rows(j, rows))
		return -EIO;
	return 0;
}

/* One round: dispatch, experts, combine, waiting for the end; with fetch,
 * the layout (after dispatch) and the output (at the end) to the host. */
static inline int moe_job_round(struct moe_job *j, uint64_t round, int fetch)
{
	int rc = moe_job_launch(j, MOE_DISPATCH, round);
	if (!rc && fetch && !(rc = moe_job_sync(j)) && !(rc = moe_job_status(j)))
		rc = moe_job_fetch_layout(j);
	if (!rc)
		rc = moe_job_launch(j, MOE_EXPERT, round);
	if (!rc)
		rc = moe_job_launch(j, MOE_COMBINE, round);
	if (!rc)
		rc = moe_job_sync(j);
	if (!rc)
		rc = moe_job_status(j);
	if (!rc && fetch)
		rc = moe_copy(j->h_out, j->args.out, (size_t)j->cfg.tokens * (size_t)j->cfg.hidden * 2, 0);
	return rc;
}

static inline void moe_job_report_error(struct moe_job *j, int rc)
{
	struct kinet_error e;
	fprintf(stderr, "rank %d: %s\n", j->cfg.rank, kinet_strerror(rc));
	if (j->ctx && !kinet_ctx_last_error(j->ctx, &e) && e.status)
		fprintf(stderr, "rank %d: context error: %s, QP %u: %s\n", j->cfg.rank,
			kinet_strerror(e.status), e.qpn, kinet_wc_status_str(e.syndrome));
}

static inline void moe_job_close(struct moe_job *j)
{
	struct moe_args *a = &j->args;
	kinet_team_destroy(j->team);
	if (j->own)
		kinet_mesh_destroy(j->mesh);
	moe_dev_free((void *)(uintptr_t)a->topk_idx);
	moe_dev_free((void *)(uintptr_t)a->topk_w);
	moe_dev_free(a->slot_of);
	moe_dev_free(a->epos);
	moe_dev_free(a->expert_x);
	moe_dev_free((void *)(uintptr_t)a->expert_y);
	moe_dev_free(a->expert_src);
	moe_dev_free(a->expert_at);
	moe_dev_free(a->expert_base);
	moe_dev_free(a->out);
	moe_dev_free(a->status);
	moe_dev_free(a->hist);
	moe_dev_free(a->flags);
	free(j->h_idx);
	free(j->h_w);
	free(j->h_x);
	free(j->h_ex);
	free(j->h_out);
	free(j->h_src);
	free(j->h_base);
	free(j->h_status);
	if (j->own && j->ctx)
		kinet_ctx_close(j->ctx);
#if !defined(KINET_HOST_EMU)
	if (j->stream)
		cudaStreamDestroy(j->stream);
#endif
}

#endif /* KINET_EXAMPLE_MOE_HOST_H */
