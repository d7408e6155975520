/*
 * One rank of a job kinetrun started (tests/mp): a bootstrap, a host-only
 * context, a mesh of QPs to every rank and one registered buffer whose
 * descriptor every rank has (mp_*).  Run without KINET_RANK, a test skips
 * with the reason (mp_launched).
 */
#ifndef KINET_TEST_KT_MP_H
#define KINET_TEST_KT_MP_H

#include "kinet/boot.h"
#include "kinet/mesh.h"
#include "kt_host.h"

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

#endif /* KINET_TEST_KT_MP_H */
