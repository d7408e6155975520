/*
 * Fixture of the device-API GPU tests: a CUDA context (cuda_device 0),
 * connected QP pairs with exclusive send/receive CQs exported to GPU
 * memory, and registered buffers in GPU or pinned host memory.
 * Tests skip (exit 77) without a CUDA device.
 */
#ifndef KINET_TEST_DEV_GPU_COMMON_H
#define KINET_TEST_DEV_GPU_COMMON_H

#include <cuda_runtime.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kinet/device.cuh"
#include "kinet/kinet.h"
#include "kt.h"

#define G_ACC_ALL                                                                                            \
	(KINET_ACCESS_LOCAL_WRITE | KINET_ACCESS_REMOTE_WRITE | KINET_ACCESS_REMOTE_READ |                   \
	 KINET_ACCESS_REMOTE_ATOMIC)

static inline int g_gpu_count(void)
{
	int n = 0;
	if (cudaGetDeviceCount(&n) != cudaSuccess) {
		cudaGetLastError();
		return 0;
	}
	return n;
}

#define G_NEED_GPU()                                                                                         \
	do {                                                                                                 \
		if (g_gpu_count() <= 0)                                                                      \
			KT_SKIP("no CUDA device (the device API GPU tests need one)");                       \
	} while (0)

#define G_CUDA(call) KT_CHECK_EQ((int)(call), (int)cudaSuccess)

static inline struct kinet_ctx *g_ctx_open(void)
{
	struct kinet_ctx_attr attr;
	struct kinet_ctx *ctx = NULL;
	kinet_ctx_attr_init(&attr);
	attr.provider = kt_provider();
	attr.cuda_device = 0;
	int rc = kinet_ctx_open(&attr, &ctx);
	if (rc) {
		fprintf(stderr, "kinet_ctx_open: %s\n", kinet_strerror(rc));
		return NULL;
	}
	return ctx;
}

/* A registered buffer in GPU memory (cudaMalloc) or pinned host memory
 * (cudaHostAlloc, mapped: p is usable on both sides). */
struct g_buf {
	int gpu;
	uint8_t *p;
	size_t len;
	struct kinet_mr *mr;
	uint32_t key;
};

static inline int g_buf_alloc(struct kinet_ctx *ctx, struct g_buf *b, size_t len, int gpu)
{
	memset(b, 0, sizeof(*b));
	b->gpu = gpu;
	b->len = len;
	if (gpu) {
		/* The memset is asynchronous on the legacy stream: finished
		 * before kernels on non-blocking streams may touch the buffer. */
		if (cudaMalloc((void **)&b->p, len) != cudaSuccess ||
		    cudaMemset(b->p, 0, len) != cudaSuccess || cudaDeviceSynchronize() != cudaSuccess)
			return -ENOMEM;
	} else {
		if (cudaHostAlloc((void **)&b->p, len, cudaHostAllocMapped | cudaHostAllocPortable) !=
		    cudaSuccess)
			return -ENOMEM;
		memset(b->p, 0, len);
	}
	int rc = kinet_mr_reg(ctx, b->p, len, G_ACC_ALL, &b->mr);
	if (rc)
		return rc;
	b->key = kinet_mr_lkey(b->mr);
	return 0;
}

static inline void g_buf_free(struct g_buf *b)
{
	if (b->mr)
		kinet_mr_dereg(b->mr);
	if (b->p) {
		if (b->gpu)
			cudaFree(b->p);
		else
			cudaFreeHost(b->p);
	}
	memset(b, 0, sizeof(*b));
}

static inline uint64_t g_addr(const struct g_buf *b, size_t off)
{
	return (uint64_t)(uintptr_t)(b->p + off);
}

static inline int g_copy_out(void *dst, const struct g_buf *b, size_t off, size_t n)
{
	return cudaMemcpy(dst, b->p + off, n, cudaMemcpyDefault) == cudaSuccess ? 0 : -EIO;
}

static inline int g_copy_in(struct g_buf *b, size_t off, const void *src, size_t n)
{
	return cudaMemcpy(b->p + off, src, n, cudaMemcpyDefault) == cudaSuccess ? 0 : -EIO;
}

struct g_opts {
	uint32_t sq_depth;
	uint32_t rq_depth;
	uint32_t timeout_ms;
	enum kinet_db_mode db_mode;
	enum kinet_qp_sharing sharing;
};

static inline void g_opts_init(struct g_opts *o)
{
	o->sq_depth = 256;
	o->rq_depth = 64;
	o->timeout_ms = 20000;
	o->db_mode = KINET_DB_CPU;
	o->sharing = KINET_SHARE_GPU;
}

struct g_side {
	struct kinet_cq *scq, *rcq;
	struct kinet_qp *qp;
	struct kinet_dev_qp *d; /* GPU memory; scratch buffer provided by kinet_qp_export */
};

struct g_pair {
	struct kinet_ctx *ctx;
	struct g_side s[2];
};

static inline int g_side_create(struct kinet_ctx *ctx, struct g_side *s, const struct g_opts *o)
{
	struct kinet_cq_attr ca = {.size = sizeof(struct kinet_cq_attr), .depth = 0, .flags = 0};
	struct kinet_qp_attr qa;
	int rc;
	memset(s, 0, sizeof(*s));
	ca.depth = (o->sq_depth < 8 ? 8 : o->sq_depth) * 2;
	if ((rc = kinet_cq_create(ctx, &ca, &s->scq)))
		return rc;
	if (o->rq_depth) {
		ca.depth = o->rq_depth * 2;
		if ((rc = kinet_cq_create(ctx, &ca, &s->rcq)))
			return rc;
	}
	kinet_qp_attr_init(&qa);
	qa.send_cq = s->scq;
	qa.recv_cq = s->rcq;
	qa.sq_depth = o->sq_depth;
	qa.rq_depth = o->rq_depth;
	qa.max_recv_sge = 1;
	qa.db_mode = o->db_mode;
	qa.sharing = o->sharing;
	qa.timeout_ms = o->timeout_ms;
	qa.rnr_timeout_ms = 1000;
	return kinet_qp_create(ctx, &qa, &s->qp);
}

static inline void g_pair_destroy(struct g_pair *p)
{
	for (int i = 0; i < 2; i++) {
		struct g_side *s = &p->s[i];
		if (s->qp)
			kinet_qp_destroy(s->qp);
		if (s->scq)
			kinet_cq_destroy(s->scq);
		if (s->rcq)
			kinet_cq_destroy(s->rcq);
		memset(s, 0, sizeof(*s));
	}
}

static inline int g_pair_create(struct kinet_ctx *ctx, struct g_pair *p, const struct g_opts *o)
{
	struct kinet_qp_info info[2];
	int rc = 0;
	memset(p, 0, sizeof(*p));
	p->ctx = ctx;
	for (int i = 0; i < 2 && !rc; i++)
		rc = g_side_create(ctx, &p->s[i], o);
	for (int i = 0; i < 2 && !rc; i++)
		rc = kinet_qp_pack(p->s[i].qp, &info[i]);
	for (int i = 0; i < 2 && !rc; i++)
		rc = kinet_qp_connect(p->s[i].qp, &info[1 - i]);
	for (int i = 0; i < 2 && !rc; i++)
		rc = kinet_qp_export(p->s[i].qp, &p->s[i].d);
	if (rc) {
		fprintf(stderr, "g_pair_create: %s\n", kinet_strerror(rc));
		g_pair_destroy(p);
	}
	return rc;
}

static const enum kinet_db_mode g_db_modes[3] = {KINET_DB_CPU, KINET_DB_GPU, KINET_DB_BF};
static const char *const g_db_names[4] = {"auto", "cpu", "gpu", "bf"};

/* Byte pattern the kernels write and the host checks. */
static __host__ __device__ inline uint8_t g_pat(uint64_t i, uint32_t seed)
{
	return (uint8_t)(i * 131u + seed * 7u + (i >> 9) + 1);
}

#endif /* KINET_TEST_DEV_GPU_COMMON_H */
