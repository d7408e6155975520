/*
 * The host API fixture, what every test starts from (with kt.h, the harness
 * it includes): contexts, connected QP pairs, guarded registered buffers,
 * work-request builders, polling with deadlines, log capture (kt_*).  Every
 * wait here is bounded; nothing blocks forever.  kt_mp.h (ranks of a job)
 * and kt_dev.h (the device API) build on it.
 */
#ifndef KINET_TEST_KT_HOST_H
#define KINET_TEST_KT_HOST_H

#include "kinet/kinet.h"
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

#endif /* KINET_TEST_KT_HOST_H */
