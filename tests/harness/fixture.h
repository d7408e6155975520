/*
 * The tests' one fixture (with kt.h, the harness it includes).  Every wait
 * here is bounded; nothing blocks forever.
 *  - host API (every test): contexts, connected QP pairs, guarded
 *    registered buffers, work-request builders, polling with deadlines,
 *    log capture (kt_*);
 *  - device API under host emulation (KINET_HOST_EMU): connected QP pairs
 *    with separate, exclusive send and receive CQs, exported descriptors,
 *    registered buffers; pthreads play GPU threads (kd_*);
 *  - device API on a GPU (nvcc): the same with a CUDA context
 *    (cuda_device 0), descriptors in GPU memory, buffers in GPU or pinned
 *    host memory; tests skip (exit 77) without a CUDA device (g_*);
 *  - one rank of a job kinetrun started (tests/mp): a bootstrap, a
 *    host-only context, a mesh of QPs to every rank and one registered
 *    buffer whose descriptor every rank has; run without KINET_RANK, a test
 *    skips with the reason (mp_*).
 */
#ifndef KINET_TEST_FIXTURE_H
#define KINET_TEST_FIXTURE_H

#include "kinet/boot.h"
#include "kinet/kinet.h"
#include "kinet/mesh.h"
#include "kinet/wire.h"
#include "kt.h"
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#if defined(KINET_HOST_EMU) || defined(__CUDACC__)
#include "kinet/device.cuh"
#endif
#if defined(__CUDACC__)
#include <cuda_runtime.h>
#endif

/* ==== host API ==== */

/* cuda_device value that keeps a context host-only (no CUDA even when the
 * build and machine have it). */
#define KT_HOST_ONLY (-2)
/* Default deadline of every wait, in milliseconds. */
#define KT_DEADLINE_MS 5000
/* Guard bytes on each side of a test buffer; never registered. */
#define KT_GUARD 256
#define KT_GUARD_BYTE 0xa5

#define KT_ACC_ALL                                                                                           \
	(KINET_ACCESS_LOCAL_WRITE | KINET_ACCESS_REMOTE_WRITE | KINET_ACCESS_REMOTE_READ |                   \
	 KINET_ACCESS_REMOTE_ATOMIC)

static inline uint64_t kt_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline uint64_t kt_now_ms(void)
{
	return kt_now_ns() / 1000000ull;
}

static inline void kt_sleep_ms(unsigned ms)
{
	struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000l};
	nanosleep(&ts, NULL);
}

/* ---- contexts ---------------------------------------------------------- */

static inline int kt_ctx_open(int engine_threads, struct kinet_ctx **ctx)
{
	struct kinet_ctx_attr attr;
	kinet_ctx_attr_init(&attr);
	attr.provider = kt_provider();
	attr.engine_threads = engine_threads;
	attr.cuda_device = KT_HOST_ONLY;
	return kinet_ctx_open(&attr, ctx);
}

/* ---- connected pairs ----------------------------------------------------- */

struct kt_pair_opts {
	uint32_t cq_depth;
	uint32_t sq_depth;
	uint32_t rq_depth; /* 0: no receive queue */
	uint32_t max_recv_sge;
	uint32_t max_inline;
	uint32_t timeout_ms;
	uint32_t rnr_timeout_ms;
	enum kinet_db_mode db_mode;
};

/* Sanitized builds run the engine several times slower (and CI shares its
 * cores): scripts/sanitize.sh sets KT_TIMEOUT_SCALE, which stretches the
 * transport timeouts and the time bounds tests check. */
static inline uint32_t kt_time_scale(void)
{
	const char *v = getenv("KT_TIMEOUT_SCALE");
	int s = v ? atoi(v) : 1;

	return s > 0 ? (uint32_t)s : 1;
}

static inline void kt_pair_opts_init(struct kt_pair_opts *o)
{
	o->cq_depth = 256;
	o->sq_depth = 128;
	o->rq_depth = 64;
	o->max_recv_sge = 4;
	o->max_inline = 128;
	o->timeout_ms = 2000 * kt_time_scale();
	o->rnr_timeout_ms = 200;
	o->db_mode = KINET_DB_AUTO;
}

/* Two RC QPs connected to each other: qp[0] in ctx[0] with cq[0] (send and
 * receive), qp[1] in ctx[1] with cq[1].  ctx[0] may equal ctx[1]. */
struct kt_pair {
	struct kinet_ctx *ctx[2];
	struct kinet_cq *cq[2];
	struct kinet_qp *qp[2];
};

static inline void kt_pair_destroy(struct kt_pair *p)
{
	for (int i = 0; i < 2; i++) {
		if (p->qp[i])
			kinet_qp_destroy(p->qp[i]);
		p->qp[i] = NULL;
	}
	for (int i = 0; i < 2; i++) {
		if (p->cq[i])
			kinet_cq_destroy(p->cq[i]);
		p->cq[i] = NULL;
	}
}

/* Creates (without connecting) the CQs and QPs of a pair. */
static inline int kt_pair_create_unconnected(struct kt_pair *p, struct kinet_ctx *a, struct kinet_ctx *b,
					     const struct kt_pair_opts *opts)
{
	struct kt_pair_opts dflt;
	int rc;

	if (!opts) {
		kt_pair_opts_init(&dflt);
		opts = &dflt;
	}
	memset(p, 0, sizeof(*p));
	p->ctx[0] = a;
	p->ctx[1] = b;
	for (int i = 0; i < 2; i++) {
		struct kinet_cq_attr cattr = {
			.size = sizeof(struct kinet_cq_attr), .depth = opts->cq_depth, .flags = 0};
		struct kinet_qp_attr qattr;

		rc = kinet_cq_create(p->ctx[i], &cattr, &p->cq[i]);
		if (rc) {
			fprintf(stderr, "kinet_cq_create: %s\n", kinet_strerror(rc));
			goto fail;
		}
		kinet_qp_attr_init(&qattr);
		qattr.send_cq = p->cq[i];
		qattr.recv_cq = opts->rq_depth ? p->cq[i] : NULL;
		qattr.sq_depth = opts->sq_depth;
		qattr.rq_depth = opts->rq_depth;
		qattr.max_recv_sge = opts->max_recv_sge;
		qattr.max_inline = opts->max_inline;
		qattr.db_mode = opts->db_mode;
		qattr.timeout_ms = opts->timeout_ms;
		qattr.rnr_timeout_ms = opts->rnr_timeout_ms;
		rc = kinet_qp_create(p->ctx[i], &qattr, &p->qp[i]);
		if (rc) {
			fprintf(stderr, "kinet_qp_create: %s\n", kinet_strerror(rc));
			goto fail;
		}
	}
	return 0;
fail:
	kt_pair_destroy(p);
	return rc;
}

static inline int kt_pair_connect(struct kt_pair *p)
{
	struct kinet_qp_info info[2];
	int rc;

	for (int i = 0; i < 2; i++) {
		rc = kinet_qp_pack(p->qp[i], &info[i]);
		if (rc) {
			fprintf(stderr, "kinet_qp_info: %s\n", kinet_strerror(rc));
			return rc;
		}
	}
	for (int i = 0; i < 2; i++) {
		rc = kinet_qp_connect(p->qp[i], &info[1 - i]);
		if (rc) {
			fprintf(stderr, "kinet_qp_connect: %s\n", kinet_strerror(rc));
			return rc;
		}
	}
	return 0;
}

static inline int kt_pair_create(struct kt_pair *p, struct kinet_ctx *a, struct kinet_ctx *b,
				 const struct kt_pair_opts *opts)
{
	int rc = kt_pair_create_unconnected(p, a, b, opts);
	if (rc)
		return rc;
	rc = kt_pair_connect(p);
	if (rc)
		kt_pair_destroy(p);
	return rc;
}

/* ---- guarded, registered buffers ---------------------------------------- */

/* p[0..len) is registered (when mr is wanted); KT_GUARD bytes of
 * KT_GUARD_BYTE on each side are not. */
struct kt_buf {
	uint8_t *raw;
	uint8_t *p;
	size_t len;
	struct kinet_mr *mr;
};

static inline int kt_buf_alloc(struct kinet_ctx *ctx, struct kt_buf *b, size_t len, unsigned access,
			       uint8_t fill)
{
	size_t total = (len + 2 * KT_GUARD + 63) & ~(size_t)63;
	int rc;

	memset(b, 0, sizeof(*b));
	b->raw = (uint8_t *)aligned_alloc(64, total);
	if (!b->raw)
		return -ENOMEM;
	memset(b->raw, KT_GUARD_BYTE, total);
	b->p = b->raw + KT_GUARD;
	b->len = len;
	memset(b->p, fill, len);
	if (ctx) {
		rc = kinet_mr_reg(ctx, b->p, len, access, &b->mr);
		if (rc) {
			fprintf(stderr, "kinet_mr_reg: %s\n", kinet_strerror(rc));
			free(b->raw);
			b->raw = NULL;
			return rc;
		}
	}
	return 0;
}

static inline void kt_buf_free(struct kt_buf *b)
{
	if (b->mr)
		kinet_mr_dereg(b->mr);
	free(b->raw);
	memset(b, 0, sizeof(*b));
}

static inline bool kt_mem_is(const void *p, uint8_t v, size_t len)
{
	const uint8_t *c = (const uint8_t *)p;
	for (size_t i = 0; i < len; i++)
		if (c[i] != v)
			return false;
	return true;
}

/* Both guards still hold KT_GUARD_BYTE. */
static inline bool kt_buf_guards_ok(const struct kt_buf *b)
{
	if (!kt_mem_is(b->raw, KT_GUARD_BYTE, KT_GUARD)) {
		fprintf(stderr, "guard before buffer %p overwritten\n", (void *)b->p);
		return false;
	}
	if (!kt_mem_is(b->p + b->len, KT_GUARD_BYTE, KT_GUARD)) {
		fprintf(stderr, "guard after buffer %p overwritten\n", (void *)b->p);
		return false;
	}
	return true;
}

static inline uint32_t kt_lkey(const struct kt_buf *b)
{
	return kinet_mr_lkey(b->mr);
}

static inline uint32_t kt_rkey(const struct kt_buf *b)
{
	return kinet_mr_rkey(b->mr);
}

static inline uint64_t kt_addr(const struct kt_buf *b, size_t off)
{
	return (uint64_t)(uintptr_t)(b->p + off);
}

static inline void kt_fill_pattern(void *p, size_t len, uint32_t seed)
{
	uint8_t *c = (uint8_t *)p;
	for (size_t i = 0; i < len; i++)
		c[i] = (uint8_t)((i * 131u + seed * 7u + (i >> 8)) ^ (seed >> 3));
}

/* ---- work requests -------------------------------------------------------- */

static inline struct kinet_sge kt_sge(const struct kt_buf *b, size_t off, uint32_t len)
{
	struct kinet_sge s = {.addr = kt_addr(b, off), .length = len, .lkey = kt_lkey(b)};
	return s;
}

static inline struct kinet_send_wr kt_wr(uint64_t wr_id, enum kinet_wr_opcode op, unsigned flags,
					 const struct kinet_sge *sg, int nsge, uint64_t raddr, uint32_t rkey)
{
	struct kinet_send_wr wr;
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = wr_id;
	wr.opcode = op;
	wr.send_flags = flags;
	wr.sg_list = sg;
	wr.num_sge = nsge;
	wr.remote_addr = raddr;
	wr.rkey = rkey;
	return wr;
}

static inline int kt_post(struct kinet_qp *qp, const struct kinet_send_wr *wr)
{
	int bad = -1;
	return kinet_qp_post_send(qp, wr, 1, &bad);
}

static inline int kt_post_recv(struct kinet_qp *qp, uint64_t wr_id, const struct kinet_sge *sg, int nsge)
{
	struct kinet_recv_wr wr = {.wr_id = wr_id, .sg_list = sg, .num_sge = nsge};
	int bad = -1;
	return kinet_qp_post_recv(qp, &wr, 1, &bad);
}

/* ---- polling ------------------------------------------------------------- */

/* Polls cq until n completions are in wc or timeout_ms passes.  Returns n,
 * -ETIMEDOUT (printing how many arrived), or kinet_cq_poll's error. */
static inline int kt_poll_n(struct kinet_cq *cq, int n, struct kinet_wc *wc, unsigned timeout_ms)
{
	uint64_t deadline = kt_now_ms() + timeout_ms;
	int got = 0;

	while (got < n) {
		int rc = kinet_cq_poll(cq, n - got, wc + got);
		if (rc < 0) {
			fprintf(stderr, "kinet_cq_poll: %d (%s) after %d of %d\n", rc, kinet_strerror(rc),
				got, n);
			return rc;
		}
		if (rc > n - got) {
			fprintf(stderr, "kinet_cq_poll returned %d > max %d\n", rc, n - got);
			return -EPROTO;
		}
		got += rc;
		if (got >= n)
			break;
		if (kt_now_ms() > deadline) {
			fprintf(stderr, "timed out: %d of %d completions\n", got, n);
			return -ETIMEDOUT;
		}
		if (rc == 0)
			sched_yield();
	}
	return got;
}

/* One completion within the default deadline: 0 or a negative errno. */
static inline int kt_poll1(struct kinet_cq *cq, struct kinet_wc *wc)
{
	int rc = kt_poll_n(cq, 1, wc, KT_DEADLINE_MS * kt_time_scale());
	return rc == 1 ? 0 : rc;
}

/* Polls for ms milliseconds; returns how many completions showed up (they
 * are stored in wc, up to max), or a negative errno. */
static inline int kt_poll_for(struct kinet_cq *cq, unsigned ms, int max, struct kinet_wc *wc)
{
	uint64_t end = kt_now_ms() + ms;
	int got = 0;
	do {
		struct kinet_wc tmp;
		int rc = kinet_cq_poll(cq, 1, got < max ? wc + got : &tmp);
		if (rc < 0)
			return rc;
		got += rc;
		if (!rc)
			kt_sleep_ms(1);
	} while (kt_now_ms() < end);
	return got;
}

static inline bool kt_wait_state(struct kinet_qp *qp, enum kinet_qp_state st, unsigned timeout_ms)
{
	uint64_t deadline = kt_now_ms() + timeout_ms;
	while (kinet_qp_get_state(qp) != st) {
		if (kt_now_ms() > deadline)
			return false;
		kt_sleep_ms(1);
	}
	return true;
}

/* Checks one completion against what is expected; prints the difference. */
static inline int kt_wc_expect(const struct kinet_wc *wc, uint64_t wr_id, int status)
{
	if (wc->wr_id != wr_id || wc->status != status) {
		fprintf(stderr,
			"completion: wr_id %" PRIu64 " status 0x%x (%s) vendor 0x%x, expected wr_id %" PRIu64
			" status 0x%x (%s)\n",
			wc->wr_id, wc->status, kinet_wc_status_str(wc->status), wc->vendor_err, wr_id, status,
			kinet_wc_status_str(status));
		return -1;
	}
	return 0;
}

/* A fresh pair in ctx moves data: the engine survived whatever came before. */
static inline int kt_smoke(struct kinet_ctx *ctx)
{
	struct kt_pair p;
	struct kt_buf src, dst;
	struct kinet_wc wc;
	struct kinet_sge sge;
	struct kinet_send_wr wr;
	int rc;

	rc = kt_pair_create(&p, ctx, ctx, NULL);
	if (rc)
		return rc;
	rc = kt_buf_alloc(ctx, &src, 4096, KINET_ACCESS_LOCAL_WRITE, 0);
	if (rc)
		goto out_pair;
	rc = kt_buf_alloc(ctx, &dst, 4096, KT_ACC_ALL, 0);
	if (rc)
		goto out_src;
	kt_fill_pattern(src.p, src.len, 99);
	sge = kt_sge(&src, 0, 4096);
	wr = kt_wr(4242, KINET_WR_RDMA_WRITE, KINET_SEND_SIGNALED, &sge, 1, kt_addr(&dst, 0), kt_rkey(&dst));
	rc = kt_post(p.qp[0], &wr);
	if (!rc)
		rc = kt_poll1(p.cq[0], &wc);
	if (!rc)
		rc = kt_wc_expect(&wc, 4242, 0);
	if (!rc && memcmp(src.p, dst.p, 4096)) {
		fprintf(stderr, "smoke: data mismatch\n");
		rc = -1;
	}
	kt_buf_free(&dst);
out_src:
	kt_buf_free(&src);
out_pair:
	kt_pair_destroy(&p);
	return rc;
}

/* ---- what the library logs ------------------------------------------------ */

/* stderr goes to a file between kt_capture_begin and kt_capture_end, which
 * returns what was written (NUL-terminated, truncated to len) and copies it
 * to the real stderr, so a failing test still shows it. */
struct kt_capture {
	char path[32];
	int fd, saved;
};

static inline int kt_capture_begin(struct kt_capture *c)
{
	snprintf(c->path, sizeof(c->path), "/tmp/kinet-log-XXXXXX");
	c->fd = mkstemp(c->path);
	c->saved = dup(2);
	if (c->fd < 0 || c->saved < 0)
		return -errno;
	fflush(stderr);
	return dup2(c->fd, 2) < 0 ? -errno : 0;
}

static inline void kt_capture_end(struct kt_capture *c, char *buf, size_t len)
{
	FILE *f;
	size_t n = 0;

	fflush(stderr);
	dup2(c->saved, 2);
	close(c->saved);
	close(c->fd);
	if ((f = fopen(c->path, "r"))) {
		n = fread(buf, 1, len - 1, f);
		fclose(f);
	}
	buf[n] = 0;
	fputs(buf, stderr);
	unlink(c->path);
}

/* Lines of a captured log that contain both a and b. */
static inline int kt_count_lines(const char *log, const char *a, const char *b)
{
	int n = 0;

	for (const char *l = log; *l;) {
		const char *end = strchr(l, '\n');
		size_t len = end ? (size_t)(end - l) : strlen(l);
		char line[1024];

		snprintf(line, sizeof(line), "%.*s", (int)len, l);
		n += strstr(line, a) && strstr(line, b);
		l += len + (end ? 1 : 0);
	}
	return n;
}

/* ==== a rank of a job (tests/mp) ==== */

struct mp {
	struct kinet_boot *boot;
	struct kinet_ctx *ctx;
	struct kinet_mesh *mesh;
	int rank, size;
	uint8_t *buf;
	size_t len;
	struct kinet_mr *mr;
	struct kinet_mr_info *peer; /* [rank] */
};

/* 1 when launched by kinetrun (or another launcher), else 0. */
static inline int mp_launched(void)
{
	return getenv("KINET_RANK") && getenv("KINET_NRANKS");
}

/* The buffer is per_rank * size + fixed bytes. */
static inline int mp_open(struct mp *m, size_t per_rank, size_t fixed, const struct kinet_mesh_attr *attr)
{
	struct kinet_ctx_attr ca;
	int rc;

	memset(m, 0, sizeof(*m));
	if ((rc = kinet_boot_init(NULL, &m->boot)))
		return rc;
	m->rank = kinet_boot_rank(m->boot);
	m->size = kinet_boot_size(m->boot);
	kinet_ctx_attr_init(&ca);
	ca.cuda_device = KINET_CUDA_DEVICE_NONE;
	if ((rc = kinet_ctx_open(&ca, &m->ctx)))
		return rc;
	if ((rc = kinet_mesh_create(m->ctx, m->boot, attr, &m->mesh)))
		return rc;
	m->len = per_rank * (size_t)m->size + fixed;
	if (posix_memalign((void **)&m->buf, 4096, m->len))
		return -12;
	memset(m->buf, 0, m->len);
	if ((rc = kinet_mr_reg(m->ctx, m->buf, m->len, KT_ACC_ALL, &m->mr)))
		return rc;
	m->peer = (struct kinet_mr_info *)calloc((size_t)m->size, sizeof(*m->peer));
	if (!m->peer)
		return -12;
	return kinet_mesh_exchange_mr(m->boot, m->mr, m->peer);
}

static inline void mp_close(struct mp *m)
{
	if (m->boot)
		kinet_boot_barrier(m->boot);
	kinet_mesh_destroy(m->mesh);
	if (m->mr)
		kinet_mr_dereg(m->mr);
	if (m->ctx)
		kinet_ctx_close(m->ctx);
	kinet_boot_fini(m->boot);
	free(m->buf);
	free(m->peer);
	memset(m, 0, sizeof(*m));
}

/* Byte i of the pattern a sender `from` writes for `to` in round `k`. */
static inline uint8_t mp_byte(int from, int to, int k, size_t i)
{
	return (uint8_t)((i * 131u + (size_t)from * 7u + (size_t)to * 17u + (size_t)k * 29u) >> 1);
}

static inline void mp_fill(uint8_t *p, size_t n, int from, int to, int k)
{
	for (size_t i = 0; i < n; i++)
		p[i] = mp_byte(from, to, k, i);
}

static inline int mp_check(const uint8_t *p, size_t n, int from, int to, int k)
{
	for (size_t i = 0; i < n; i++) {
		if (p[i] != mp_byte(from, to, k, i)) {
			fprintf(stderr, "data from rank %d to %d (round %d) differs at byte %zu: %u != %u\n",
				from, to, k, i, p[i], mp_byte(from, to, k, i));
			return -1;
		}
	}
	return 0;
}

/* Polls n completions (any order) within ms; returns how many came. */
static inline int mp_poll(struct kinet_cq *cq, int n, struct kinet_wc *wc, unsigned ms)
{
	uint64_t end = kt_now_ms() + ms;
	int got = 0;

	while (got < n && kt_now_ms() < end) {
		int rc = kinet_cq_poll(cq, n - got, wc + got);
		if (rc < 0)
			return rc;
		got += rc;
	}
	return got;
}

#if defined(KINET_HOST_EMU) || defined(__CUDACC__)
/* ==== device API: what emulated and GPU pairs share ==== */

static const enum kinet_db_mode kt_db_modes[3] = {KINET_DB_CPU, KINET_DB_GPU, KINET_DB_BF};
static const char *const kt_db_names[4] = {"auto", "cpu", "gpu", "bf"};
#endif

#if defined(KINET_HOST_EMU)
/* ==== device API under host emulation ==== */

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
	int rc = kinet_mr_reg(ctx, b->p, len, KT_ACC_ALL, &b->mr);
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

#endif /* KINET_HOST_EMU */

#if defined(__CUDACC__)
/* ==== device API on a GPU ==== */

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
	int rc = kinet_mr_reg(ctx, b->p, len, KT_ACC_ALL, &b->mr);
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

/* What most device-API tests start from: a context, a connected pair of
 * exported QPs in doorbell mode `mode`, a source and a destination buffer
 * (each in GPU memory or pinned host memory) and two ints of GPU memory,
 * zeroed, for a kernel to report the first failed check and its status. */
struct g_rig {
	struct kinet_ctx *ctx;
	struct g_pair p;
	struct g_buf src, dst;
	int *err;
};

static inline void g_rig_close(struct g_rig *r)
{
	cudaFree(r->err);
	g_buf_free(&r->src);
	g_buf_free(&r->dst);
	g_pair_destroy(&r->p);
	if (r->ctx)
		kinet_ctx_close(r->ctx);
	memset(r, 0, sizeof(*r));
}

static inline int g_rig_open(struct g_rig *r, enum kinet_db_mode mode, size_t src_len, int src_gpu,
			     size_t dst_len, int dst_gpu)
{
	struct g_opts o;
	int rc;

	memset(r, 0, sizeof(*r));
	if (!(r->ctx = g_ctx_open()))
		return -ENODEV;
	g_opts_init(&o);
	o.db_mode = mode;
	if (!(rc = g_pair_create(r->ctx, &r->p, &o)) &&
	    !(rc = g_buf_alloc(r->ctx, &r->src, src_len, src_gpu)) &&
	    !(rc = g_buf_alloc(r->ctx, &r->dst, dst_len, dst_gpu))) {
		if (cudaMalloc((void **)&r->err, 2 * sizeof(int)) != cudaSuccess ||
		    cudaMemset(r->err, 0, 2 * sizeof(int)) != cudaSuccess ||
		    cudaDeviceSynchronize() != cudaSuccess)
			rc = -ENOMEM;
	}
	if (rc)
		g_rig_close(r);
	return rc;
}

/* Byte pattern the kernels write and the host checks. */
static __host__ __device__ inline uint8_t g_pat(uint64_t i, uint32_t seed)
{
	return (uint8_t)(i * 131u + seed * 7u + (i >> 9) + 1);
}
#endif /* __CUDACC__ */

#endif /* KINET_TEST_FIXTURE_H */
