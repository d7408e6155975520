/*
 * Fixture of the device-API host tests (KINET_HOST_EMU): connected QP pairs
 * with separate, exclusive send and receive CQs, exported descriptors, and
 * registered buffers.  pthreads play GPU threads.
 */
#ifndef KINET_TEST_DEV_COMMON_H
#define KINET_TEST_DEV_COMMON_H

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kinet/device.cuh"
#include "kinet/kinet.h"
#include "kt.h"

#define KD_ACC_ALL                                                                                           \
	(KINET_ACCESS_LOCAL_WRITE | KINET_ACCESS_REMOTE_WRITE | KINET_ACCESS_REMOTE_READ |                   \
	 KINET_ACCESS_REMOTE_ATOMIC)

static inline uint64_t kd_now_ms(void)
{
	return kinet_dev_now_ns() / 1000000ull;
}

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
	o->sq_depth = 64;
	o->rq_depth = 32;
	o->max_recv_sge = 2;
	o->timeout_ms = 5000;
	o->rnr_timeout_ms = 200;
	o->db_mode = KINET_DB_CPU;
	o->sharing = KINET_SHARE_GPU;
	o->two_ctx = 0;
	o->ctx = NULL;
}

struct kd_side {
	struct kinet_ctx *ctx;
	struct kinet_cq *scq, *rcq;
	struct kinet_qp *qp;
	struct kinet_dev_qp *d; /* scratch buffer provided by kinet_qp_export */
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
	attr.engine_threads = 1;
	attr.cuda_device = KINET_CUDA_DEVICE_NONE; /* descriptors the CPU threads can read */
	int rc = kinet_ctx_open(&attr, &ctx);
	if (rc) {
		fprintf(stderr, "kinet_ctx_open: %s\n", kinet_strerror(rc));
		return NULL;
	}
	return ctx;
}

static inline int kd_side_create(struct kd_side *s, struct kinet_ctx *ctx, const struct kd_opts *o)
{
	struct kinet_cq_attr ca = {.depth = 0};
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

static inline void kd_pair_destroy(struct kd_pair *p)
{
	for (int i = 0; i < 2; i++) {
		struct kd_side *s = &p->s[i];
		if (s->qp)
			kinet_qp_destroy(s->qp);
		if (s->scq)
			kinet_cq_destroy(s->scq);
		if (s->rcq)
			kinet_cq_destroy(s->rcq);
		memset(s, 0, sizeof(*s));
	}
	for (int i = 0; i < p->nctx; i++)
		kinet_ctx_close(p->ctx[i]);
	p->nctx = 0;
}

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

/* Registered, zeroed, 64-byte aligned host buffer. */
struct kd_buf {
	uint8_t *p;
	size_t len;
	struct kinet_mr *mr;
	uint32_t key;
};

static inline int kd_buf_alloc(struct kinet_ctx *ctx, struct kd_buf *b, size_t len)
{
	memset(b, 0, sizeof(*b));
	b->p = (uint8_t *)aligned_alloc(64, (len + 63) & ~(size_t)63);
	if (!b->p)
		return -ENOMEM;
	memset(b->p, 0, len);
	b->len = len;
	int rc = kinet_mr_reg(ctx, b->p, len, KD_ACC_ALL, &b->mr);
	if (rc) {
		free(b->p);
		b->p = NULL;
		return rc;
	}
	b->key = kinet_mr_lkey(b->mr);
	return 0;
}

static inline void kd_buf_free(struct kd_buf *b)
{
	if (b->mr)
		kinet_mr_dereg(b->mr);
	free(b->p);
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

static inline void kd_pattern(void *p, size_t len, uint32_t seed)
{
	uint8_t *c = (uint8_t *)p;
	for (size_t i = 0; i < len; i++)
		c[i] = (uint8_t)(i * 131u + seed * 7u + (i >> 9) + 1);
}

static const enum kinet_db_mode kd_db_modes[3] = {KINET_DB_CPU, KINET_DB_GPU, KINET_DB_BF};
static const char *const kd_db_names[4] = {"auto", "cpu", "gpu", "bf"};

#endif /* KINET_TEST_DEV_COMMON_H */
