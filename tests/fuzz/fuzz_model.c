/*
 * The model the harness checks the engine against: for each template WQE
 * the completion an RC QP on ConnectX gives (success, or the syndrome of
 * the first failed check, then WR_FLUSH_ERR for everything after), and
 * the memory of both regions afterwards.  A difference aborts, which
 * libFuzzer reports as a finding.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "kinet/wire.h"

#define FAIL(...)                                                                                            \
	do {                                                                                                 \
		fprintf(stderr, "fuzz model: " __VA_ARGS__);                                                 \
		fprintf(stderr, "\n");                                                                       \
		abort();                                                                                     \
	} while (0)

void fz_model_reset(struct fz_model *m, struct fz_mr *a, struct fz_mr *b)
{
	m->a = a;
	m->b = b;
	memcpy(m->shadow_a, a->base, FZ_REGION);
	memcpy(m->shadow_b, b->base, FZ_REGION);
	m->nops = 0;
	m->nrecv = 0;
	m->recv_used = 0;
	m->failed = false;
	m->lenient = false;
	m->data_exact = true;
	m->chaos = false;
	m->posted_bbs = 0;
	m->landing_lo = m->landing_hi = 0;
}

void fz_model_teardown(struct fz_model *m)
{
	for (int i = 0; i < m->nops; i++)
		m->ops[i].expect = FZ_ANY;
	m->lenient = true;
	m->data_exact = false;
}

/* The region behind key, when [addr, addr+len) lies in it with access. */
static bool mr_ok(const struct fz_mr *mr, uint32_t key, uint64_t addr, uint32_t len, unsigned access)
{
	uint64_t base = (uintptr_t)mr->base;

	return mr->live && key == mr->key && addr >= base && len <= FZ_REGION &&
	       addr - base <= FZ_REGION - len && (mr->access & access) == access;
}

static uint64_t load64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return v;
}

static void land(struct fz_model *m, uint32_t off, uint32_t len)
{
	if (m->landing_lo == m->landing_hi) {
		m->landing_lo = off;
		m->landing_hi = off + len;
		return;
	}
	if (off < m->landing_lo)
		m->landing_lo = off;
	if (off + len > m->landing_hi)
		m->landing_hi = off + len;
}

/* 0, or the syndrome the requester gets; applies a success. */
static uint8_t predict(struct fz_model *m, const struct fz_wr *wr)
{
	bool atomic =
		wr->opcode == KINET_WR_ATOMIC_CMP_AND_SWP || wr->opcode == KINET_WR_ATOMIC_FETCH_AND_ADD;
	unsigned laccess = wr->opcode == KINET_WR_RDMA_READ || atomic ? KINET_ACCESS_LOCAL_WRITE : 0;
	uint64_t loff = wr->laddr - (uintptr_t)m->a->base, roff = wr->raddr - (uintptr_t)m->b->base;

	if (wr->opcode == KINET_WR_NOP)
		return 0;
	if (!wr->inline_data && !mr_ok(m->a, wr->lkey, wr->laddr, wr->len, laccess))
		return KINET_SYND_LOCAL_PROT_ERR;
	const uint8_t *src = wr->inline_data ? wr->inline_src : m->shadow_a + loff;
	if (wr->fence)
		m->landing_lo = m->landing_hi = 0;
	if (m->pipelined && !wr->inline_data && !laccess && loff < m->landing_hi &&
	    loff + wr->len > m->landing_lo)
		m->data_exact = false; /* gathered before or after the landing: either is right */
	if (m->pipelined && laccess)
		land(m, (uint32_t)loff, wr->len);
	switch (wr->opcode) {
	case KINET_WR_RDMA_WRITE:
	case KINET_WR_RDMA_WRITE_WITH_IMM:
		if (!mr_ok(m->b, wr->rkey, wr->raddr, wr->len, KINET_ACCESS_REMOTE_WRITE))
			return KINET_SYND_REMOTE_ACCESS_ERR;
		if (wr->opcode == KINET_WR_RDMA_WRITE_WITH_IMM) {
			if (m->recv_used == m->nrecv)
				return KINET_SYND_RNR_RETRY_EXC_ERR;
			m->recv_used++;
		}
		memmove(m->shadow_b + roff, src, wr->len);
		return 0;
	case KINET_WR_RDMA_READ:
		if (!mr_ok(m->b, wr->rkey, wr->raddr, wr->len, KINET_ACCESS_REMOTE_READ))
			return KINET_SYND_REMOTE_ACCESS_ERR;
		memmove(m->shadow_a + loff, m->shadow_b + roff, wr->len);
		return 0;
	case KINET_WR_SEND:
	case KINET_WR_SEND_WITH_IMM: {
		if (m->recv_used == m->nrecv)
			return KINET_SYND_RNR_RETRY_EXC_ERR;
		int r = m->recv_used++;
		if (!m->recv[r].valid)
			return KINET_SYND_REMOTE_OP_ERR;
		if (m->recv[r].len < wr->len)
			return KINET_SYND_REMOTE_INVAL_REQ_ERR;
		memmove(m->shadow_b + m->recv[r].off, src, wr->len);
		return 0;
	}
	default: { /* atomics */
		if (wr->raddr & 7)
			return KINET_SYND_REMOTE_INVAL_REQ_ERR;
		if (!mr_ok(m->b, wr->rkey, wr->raddr, 8, KINET_ACCESS_REMOTE_ATOMIC))
			return KINET_SYND_REMOTE_ACCESS_ERR;
		uint64_t old = load64(m->shadow_b + roff), val = old;
		if (wr->opcode == KINET_WR_ATOMIC_FETCH_AND_ADD)
			val = old + wr->compare_add;
		else if (old == wr->compare_add)
			val = wr->swap;
		memcpy(m->shadow_b + roff, &val, 8);
		memcpy(m->shadow_a + loff, &old, 8);
		return 0;
	}
	}
}

static struct fz_op *op_add(struct fz_model *m, uint16_t counter, uint16_t nbb, bool signaled, uint64_t wr_id)
{
	struct fz_op *op = &m->ops[m->nops++];

	m->posted_bbs = (uint32_t)counter + nbb;
	op->wqe_counter = counter;
	op->nbb = nbb;
	op->signaled = signaled;
	op->wr_id = wr_id;
	op->syndrome = 0;
	op->expect = FZ_ANY;
	return op;
}

void fz_model_post(struct fz_model *m, const struct fz_wr *wr, uint16_t counter, uint16_t nbb)
{
	struct fz_op *op = op_add(m, counter, nbb, wr->signaled, counter);

	if (m->lenient)
		return;
	if (m->failed) {
		op->expect = FZ_ERR;
		op->syndrome = KINET_SYND_WR_FLUSH_ERR;
		return;
	}
	op->syndrome = predict(m, wr);
	op->expect = op->syndrome ? FZ_ERR : FZ_OK;
	m->failed = op->syndrome != 0;
}

void fz_model_post_unknown(struct fz_model *m, uint16_t counter, uint16_t nbb, bool signaled)
{
	op_add(m, counter, nbb, signaled, counter);
	m->lenient = true;
	m->data_exact = false;
}

static bool needs_cqe(const struct fz_op *op)
{
	return op->expect == FZ_ERR || (op->expect == FZ_OK && op->signaled);
}

int fz_model_expected(const struct fz_model *m)
{
	int n = 0;

	for (int i = 0; i < m->nops; i++)
		n += needs_cqe(&m->ops[i]);
	return n;
}

void fz_model_check(const struct fz_model *m, const struct kinet_wc *wc, int n, int named, uint32_t qpn,
		    bool all)
{
	int i = 0, last = -1;
	bool error_seen = false;

	for (int c = 0; c < n; c++) {
		const struct kinet_wc *w = &wc[c];

		if (w->qp_num != qpn)
			FAIL("completion %d for QP %u, expected %u", c, w->qp_num, qpn);
		if (error_seen && !w->status)
			FAIL("completion %d (WQE %u) succeeds after an error", c, w->wqe_counter);
		error_seen |= w->status != 0;
		/* A garbage doorbell may announce blocks nobody posted. */
		if ((int)w->wqe_counter <= last || (!m->chaos && w->wqe_counter >= m->posted_bbs))
			FAIL("completion %d names WQE %u (after %d, %u blocks posted)", c, w->wqe_counter,
			     last, m->posted_bbs);
		last = w->wqe_counter;
		if (m->chaos)
			continue;
		/* Completions come in posting order, each WQE at most once. */
		while (i < m->nops && m->ops[i].wqe_counter != w->wqe_counter) {
			if (needs_cqe(&m->ops[i]))
				FAIL("WQE %u completed without a completion (next one is WQE %u)",
				     m->ops[i].wqe_counter, w->wqe_counter);
			i++;
		}
		if (i == m->nops)
			FAIL("completion %d names WQE %u, not posted or out of order", c, w->wqe_counter);
		const struct fz_op *op = &m->ops[i++];
		if (op->expect == FZ_OK && (w->status || (c < named && w->wr_id != op->wr_id)))
			FAIL("WQE %u: status 0x%x wr_id %llu, expected success of %llu", op->wqe_counter,
			     w->status, (unsigned long long)w->wr_id, (unsigned long long)op->wr_id);
		if (op->expect == FZ_OK && !op->signaled)
			FAIL("WQE %u: unsignaled success completed", op->wqe_counter);
		if (op->expect == FZ_ERR && (!w->status || (op->syndrome && w->status != op->syndrome)))
			FAIL("WQE %u: status 0x%x, expected syndrome 0x%x", op->wqe_counter, w->status,
			     op->syndrome);
	}
	for (; all && !m->chaos && i < m->nops; i++)
		if (needs_cqe(&m->ops[i]))
			FAIL("WQE %u: no completion", m->ops[i].wqe_counter);
}

static void dump(const char *what, const uint8_t *real, const uint8_t *model)
{
	for (uint32_t i = 0; i < FZ_REGION; i++)
		if (real[i] != model[i]) {
			fprintf(stderr, "fuzz model: %s byte %u is %02x, model %02x\n", what, i, real[i],
				model[i]);
			return;
		}
}

void fz_model_check_memory(const struct fz_model *m)
{
	if (!m->data_exact)
		return;
	dump("requester", m->a->base, m->shadow_a);
	dump("target", m->b->base, m->shadow_b);
	if (memcmp(m->a->base, m->shadow_a, FZ_REGION))
		FAIL("requester memory differs from the model");
	if (memcmp(m->b->base, m->shadow_b, FZ_REGION))
		FAIL("target memory differs from the model");
}
