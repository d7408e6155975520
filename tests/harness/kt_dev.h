/*
 * The device API fixture, one body compiled two ways: under host emulation
 * (a C file built with KINET_HOST_EMU, pthreads playing GPU threads) and on
 * a GPU (a .cu file built by nvcc; without a CUDA device a test skips,
 * exit 77).  Connected QP pairs with separate, exclusive send and receive
 * CQs, exported descriptors, registered buffers (kd_*).  Only the memory
 * and the context differ between the two, and only the backend section
 * below knows which: descriptors the CPU threads can read in emulation,
 * CUDA device 0 and GPU or pinned host memory on a GPU.  GPU-only helpers
 * (G_NEED_GPU, G_CUDA, g_rig) follow at the end.
 */
#ifndef KINET_TEST_KT_DEV_H
#define KINET_TEST_KT_DEV_H

#if !defined(KINET_HOST_EMU) && !defined(__CUDACC__)
#error "kt_dev.h: build with KINET_HOST_EMU (host emulation) or with nvcc"
#endif

#include "kinet/device.cuh"
#include "kt_host.h"
#if defined(__CUDACC__)
#include <cuda_runtime.h>
#define KD_HD __host__ __device__
#else
#define KD_HD
#endif

static const enum kinet_db_mode kt_db_modes[3] = {KINET_DB_CPU, KINET_DB_GPU, KINET_DB_BF};
static const char *const kt_db_names[4] = {"auto", "cpu", "gpu", "bf"};

/* ---- the backend: where contexts and buffers live ------------------------ */

#if defined(__CUDACC__)
/* GPU kernels run longer than CPU threads and queue deeper. */
#define KD_SQ_DEPTH 256
#define KD_RQ_DEPTH 64
#define KD_MAX_RECV_SGE 1
#define KD_TIMEOUT_MS 20000
#define KD_RNR_TIMEOUT_MS 1000

static inline void kd_backend_ctx_attr(struct kinet_ctx_attr *attr)
{
	attr->cuda_device = 0;
}

/* gpu: cudaMalloc, zeroed before any kernel on a non-blocking stream may
 * touch it (the memset is asynchronous on the legacy stream); else pinned,
 * mapped host memory (p usable on both sides). */
static inline uint8_t *kd_backend_alloc(size_t len, int gpu)
{
	uint8_t *p = NULL;

	if (gpu) {
		if (cudaMalloc((void **)&p, len) != cudaSuccess)
			return NULL;
		if (cudaMemset(p, 0, len) != cudaSuccess || cudaDeviceSynchronize() != cudaSuccess) {
			cudaFree(p);
			return NULL;
		}
		return p;
	}
	if (cudaHostAlloc((void **)&p, len, cudaHostAllocMapped | cudaHostAllocPortable) != cudaSuccess)
		return NULL;
	memset(p, 0, len);
	return p;
}

static inline void kd_backend_free(uint8_t *p, int gpu)
{
	if (!p)
		return;
	if (gpu)
		cudaFree(p);
	else
		cudaFreeHost(p);
}

static inline int kd_backend_copy(void *dst, const void *src, size_t n)
{
	return cudaMemcpy(dst, src, n, cudaMemcpyDefault) == cudaSuccess ? 0 : -EIO;
}
#else
#define KD_SQ_DEPTH 64
#define KD_RQ_DEPTH 32
#define KD_MAX_RECV_SGE 2
#define KD_TIMEOUT_MS 5000
#define KD_RNR_TIMEOUT_MS 200

/* Descriptors the CPU threads can read, one engine thread. */
static inline void kd_backend_ctx_attr(struct kinet_ctx_attr *attr)
{
	attr->engine_threads = 1;
	attr->cuda_device = KINET_CUDA_DEVICE_NONE;
}

/* Host memory only, 64-byte aligned; there is no GPU memory to ask for. */
static inline uint8_t *kd_backend_alloc(size_t len, int gpu)
{
	uint8_t *p;

	if (gpu)
		return NULL;
	p = (uint8_t *)aligned_alloc(64, (len + 63) & ~(size_t)63);
	if (p)
		memset(p, 0, len);
	return p;
}

static inline void kd_backend_free(uint8_t *p, int gpu)
{
	(void)gpu;
	free(p);
}

static inline int kd_backend_copy(void *dst, const void *src, size_t n)
{
	memcpy(dst, src, n);
	return 0;
}
#endif

/* ---- contexts and connected pairs --------------------------------------- */

struct kd_opts {
	uint32_t sq_depth;
	uint32_t rq_depth; /* 0: no receive queue */
	uint32_t max_recv_sge;
	uint32_t timeout_ms;
	uint32_t rnr_timeout_ms;
	enum kinet_db_mode db_mode;
	enum kinet_qp_sharing sharing;
	int two_ctx;	       /* the two QPs in two contexts */
	struct kinet_ctx *ctx; /* use this context (not closed by the pair); NULL: open one */
};

static inline void kd_opts_init(struct kd_opts *o)
{
	o->sq_depth = KD_SQ_DEPTH;
	o->rq_depth = KD_RQ_DEPTH;
	o->max_recv_sge = KD_MAX_RECV_SGE;
	o->timeout_ms = KD_TIMEOUT_MS;
	o->rnr_timeout_ms = KD_RNR_TIMEOUT_MS;
	o->db_mode = KINET_DB_CPU;
	o->sharing = KINET_SHARE_GPU;
	o->two_ctx = 0;
	o->ctx = NULL;
}

struct kd_side {
	struct kinet_ctx *ctx;
	struct kinet_cq *scq, *rcq;
	struct kinet_qp *qp;
	struct kinet_dev_qp *d; /* scratch buffer provided by kinet_qp_export (GPU memory on a GPU) */
};

struct kd_pair {
	struct kinet_ctx *ctx[2];
	int nctx;
	struct kd_side s[2];
};

static inline struct kinet_ctx *kd_ctx_open(void)
{
	struct kinet_ctx_attr attr;
	struct kinet_ctx *ctx = NULL;
	kinet_ctx_attr_init(&attr);
	attr.provider = kt_provider();
	kd_backend_ctx_attr(&attr);
	int rc = kinet_ctx_open(&attr, &ctx);
	if (rc) {
		fprintf(stderr, "kinet_ctx_open: %s\n", kinet_strerror(rc));
		return NULL;
	}
	return ctx;
}

static inline int kd_side_create(struct kd_side *s, struct kinet_ctx *ctx, const struct kd_opts *o)
{
	struct kinet_cq_attr ca = {.size = sizeof(struct kinet_cq_attr), .depth = 0, .flags = 0};
	struct kinet_qp_attr qa;
	int rc;

	memset(s, 0, sizeof(*s));
	s->ctx = ctx;
	/* Every high-level WQE is signalled: the CQ must hold a full SQ's
	 * worth plus the engine's reserved overrun slot (SQs have >= 8 BBs). */
	ca.depth = (o->sq_depth < 8 ? 8 : o->sq_depth) * 2;
	rc = kinet_cq_create(ctx, &ca, &s->scq);
	if (rc)
		return rc;
	if (o->rq_depth) {
		ca.depth = o->rq_depth * 2;
		rc = kinet_cq_create(ctx, &ca, &s->rcq);
		if (rc)
			return rc;
	}
	kinet_qp_attr_init(&qa);
	qa.send_cq = s->scq;
	qa.recv_cq = s->rcq;
	qa.sq_depth = o->sq_depth;
	qa.rq_depth = o->rq_depth;
	qa.max_recv_sge = o->max_recv_sge;
	qa.db_mode = o->db_mode;
	qa.sharing = o->sharing;
	qa.timeout_ms = o->timeout_ms;
	qa.rnr_timeout_ms = o->rnr_timeout_ms;
	return kinet_qp_create(ctx, &qa, &s->qp);
}

/* Destroys what kd_side_create made (not the context). */
static inline void kd_side_destroy(struct kd_side *s)
{
	if (s->qp)
		kinet_qp_destroy(s->qp);
	if (s->scq)
		kinet_cq_destroy(s->scq);
	if (s->rcq)
		kinet_cq_destroy(s->rcq);
	memset(s, 0, sizeof(*s));
}

static inline void kd_pair_destroy(struct kd_pair *p)
{
	for (int i = 0; i < 2; i++)
		kd_side_destroy(&p->s[i]);
	for (int i = 0; i < p->nctx; i++)
		kinet_ctx_close(p->ctx[i]);
	p->nctx = 0;
}

/* Two QPs connected to each other and exported; o NULL: the defaults. */
static inline int kd_pair_create(struct kd_pair *p, const struct kd_opts *o)
{
	struct kd_opts dflt;
	struct kinet_qp_info info[2];
	int rc;

	if (!o) {
		kd_opts_init(&dflt);
		o = &dflt;
	}
	memset(p, 0, sizeof(*p));
	p->nctx = o->ctx ? 0 : o->two_ctx ? 2 : 1;
	if (o->ctx)
		p->ctx[0] = o->ctx;
	for (int i = 0; i < p->nctx; i++) {
		p->ctx[i] = kd_ctx_open();
		if (!p->ctx[i]) {
			p->nctx = i;
			kd_pair_destroy(p);
			return -EIO;
		}
	}
	if (p->nctx <= 1)
		p->ctx[1] = p->ctx[0];
	for (int i = 0; i < 2; i++) {
		rc = kd_side_create(&p->s[i], p->ctx[i], o);
		if (rc)
			goto fail;
	}
	for (int i = 0; i < 2; i++) {
		rc = kinet_qp_pack(p->s[i].qp, &info[i]);
		if (rc)
			goto fail;
	}
	for (int i = 0; i < 2; i++) {
		rc = kinet_qp_connect(p->s[i].qp, &info[1 - i]);
		if (rc)
			goto fail;
	}
	for (int i = 0; i < 2; i++) {
		rc = kinet_qp_export(p->s[i].qp, &p->s[i].d);
		if (rc)
			goto fail;
	}
	return 0;
fail:
	fprintf(stderr, "kd_pair_create: %s\n", kinet_strerror(rc));
	kd_pair_destroy(p);
	return rc;
}

/* ---- registered buffers -------------------------------------------------- */

/* Registered, zeroed buffer: host memory (64-byte aligned in emulation,
 * pinned and mapped on a GPU) or, on a GPU only, GPU memory. */
struct kd_buf {
	int gpu;
	uint8_t *p;
	size_t len;
	struct kinet_mr *mr;
	uint32_t key;
};

/* gpu: 1 for GPU memory (-ENOMEM in emulation, where there is none). */
static inline int kd_buf_alloc_mem(struct kinet_ctx *ctx, struct kd_buf *b, size_t len, int gpu)
{
	memset(b, 0, sizeof(*b));
	b->p = kd_backend_alloc(len, gpu);
	if (!b->p)
		return -ENOMEM;
	b->gpu = gpu;
	b->len = len;
	int rc = kinet_mr_reg(ctx, b->p, len, KT_ACC_ALL, &b->mr);
	if (rc) {
		kd_backend_free(b->p, gpu);
		b->p = NULL;
		return rc;
	}
	b->key = kinet_mr_lkey(b->mr);
	return 0;
}

static inline int kd_buf_alloc(struct kinet_ctx *ctx, struct kd_buf *b, size_t len)
{
	return kd_buf_alloc_mem(ctx, b, len, 0);
}

static inline void kd_buf_free(struct kd_buf *b)
{
	if (b->mr)
		kinet_mr_dereg(b->mr);
	kd_backend_free(b->p, b->gpu);
	memset(b, 0, sizeof(*b));
}

/* A pair with a registered buffer of len bytes in each side's context
 * (a: QP 0's, b: QP 1's); kd_pair_bufs_destroy frees all of it. */
static inline int kd_pair_bufs_create(struct kd_pair *p, const struct kd_opts *o, struct kd_buf *a,
				      struct kd_buf *b, size_t len)
{
	memset(a, 0, sizeof(*a));
	memset(b, 0, sizeof(*b));
	int rc = kd_pair_create(p, o);
	if (rc)
		return rc;
	rc = kd_buf_alloc(p->ctx[0], a, len);
	if (!rc)
		rc = kd_buf_alloc(p->ctx[1], b, len);
	return rc;
}

static inline void kd_pair_bufs_destroy(struct kd_pair *p, struct kd_buf *a, struct kd_buf *b)
{
	kd_buf_free(a);
	kd_buf_free(b);
	kd_pair_destroy(p);
}

static inline uint64_t kd_addr(const struct kd_buf *b, size_t off)
{
	return (uint64_t)(uintptr_t)(b->p + off);
}

/* n bytes at off of b to dst, and back (cudaMemcpy on a GPU). */
static inline int kd_copy_out(void *dst, const struct kd_buf *b, size_t off, size_t n)
{
	return kd_backend_copy(dst, b->p + off, n);
}

static inline int kd_copy_in(struct kd_buf *b, size_t off, const void *src, size_t n)
{
	return kd_backend_copy(b->p + off, src, n);
}

/* Byte i of the pattern with this seed: what device code writes and the
 * host checks, or the reverse. */
static KD_HD inline uint8_t kd_pat(uint64_t i, uint32_t seed)
{
	return (uint8_t)(i * 131u + seed * 7u + (i >> 9) + 1);
}

static inline void kd_pattern(void *p, size_t len, uint32_t seed)
{
	uint8_t *c = (uint8_t *)p;
	for (size_t i = 0; i < len; i++)
		c[i] = kd_pat(i, seed);
}

#if defined(__CUDACC__)
/* ---- GPU only --------------------------------------------------------------- */

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

/* What most device-API GPU tests start from: a context, a connected pair
 * of exported QPs in doorbell mode `mode`, a source and a destination
 * buffer (each in GPU memory or pinned host memory) and two ints of GPU
 * memory, zeroed, for a kernel to report the first failed check and its
 * status. */
struct g_rig {
	struct kinet_ctx *ctx;
	struct kd_pair p;
	struct kd_buf src, dst;
	int *err;
};

static inline void g_rig_close(struct g_rig *r)
{
	cudaFree(r->err);
	kd_buf_free(&r->src);
	kd_buf_free(&r->dst);
	kd_pair_destroy(&r->p);
	if (r->ctx)
		kinet_ctx_close(r->ctx);
	memset(r, 0, sizeof(*r));
}

static inline int g_rig_open(struct g_rig *r, enum kinet_db_mode mode, size_t src_len, int src_gpu,
			     size_t dst_len, int dst_gpu)
{
	struct kd_opts o;
	int rc;

	memset(r, 0, sizeof(*r));
	if (!(r->ctx = kd_ctx_open()))
		return -ENODEV;
	kd_opts_init(&o);
	o.db_mode = mode;
	o.ctx = r->ctx;
	if (!(rc = kd_pair_create(&r->p, &o)) &&
	    !(rc = kd_buf_alloc_mem(r->ctx, &r->src, src_len, src_gpu)) &&
	    !(rc = kd_buf_alloc_mem(r->ctx, &r->dst, dst_len, dst_gpu))) {
		if (cudaMalloc((void **)&r->err, 2 * sizeof(int)) != cudaSuccess ||
		    cudaMemset(r->err, 0, 2 * sizeof(int)) != cudaSuccess ||
		    cudaDeviceSynchronize() != cudaSuccess)
			rc = -ENOMEM;
	}
	if (rc)
		g_rig_close(r);
	return rc;
}
#endif /* __CUDACC__ */

#endif /* KINET_TEST_KT_DEV_H */
