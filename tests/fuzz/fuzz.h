/*
 * libFuzzer harness of the software NIC (tests/fuzz/): shared declarations.
 *
 * One input is one run of a requester QP A against a target QP B (local or
 * node transport, any doorbell mode): receives posted at B, then a list of
 * records (template-built WQEs through kinet_qp_post_send, raw WQEs through
 * kinet_qp_post_wqe, garbage doorbells and CQ counters, one teardown in the
 * middle: target or requester destroyed, a region deregistered, the QP set
 * to error, the target context closed).  fuzz_model.c predicts every
 * completion and the memory afterwards; anything the model cannot predict
 * (raw WQEs, garbage, teardown) turns it lenient, where only the rules of
 * an RC QP are checked (completions in order, nothing succeeds after an
 * error, each WQE at most once).  Registered memory sits between
 * inaccessible guard pages, so a stray access is a crash.
 */
#ifndef KINET_FUZZ_H
#define KINET_FUZZ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kinet/kinet.h"

#define FZ_REGION 8192u /* registered bytes on each side */
#define FZ_MAX_OPS 48
#define FZ_MAX_RECVS 8

/* Reads the input; missing bytes read as zero. */
struct fz_in {
	const uint8_t *p;
	size_t n;
};

static inline uint8_t fz_u8(struct fz_in *in)
{
	uint8_t v = 0;

	if (in->n) {
		v = *in->p++;
		in->n--;
	}
	return v;
}

static inline uint16_t fz_u16(struct fz_in *in)
{
	return (uint16_t)(fz_u8(in) | fz_u8(in) << 8);
}

static inline uint64_t fz_u64(struct fz_in *in)
{
	uint64_t v = 0;

	for (int i = 0; i < 8; i++)
		v |= (uint64_t)fz_u8(in) << (8 * i);
	return v;
}

/* A registration as the model sees it. */
struct fz_mr {
	uint8_t *base;
	uint32_t key;
	unsigned access;
	bool live;
};

/* One operation as posted, and what the model expects of it. */
enum fz_expect { FZ_OK, FZ_ERR, FZ_ANY };
struct fz_op {
	uint16_t wqe_counter;
	uint16_t nbb;
	bool signaled;
	enum fz_expect expect;
	uint8_t syndrome; /* FZ_ERR: the one expected, 0 for any */
	uint64_t wr_id;
};

struct fz_model {
	struct fz_mr *a, *b;
	uint8_t shadow_a[FZ_REGION], shadow_b[FZ_REGION];
	struct fz_op ops[FZ_MAX_OPS + 1]; /* and the final NOP of wait_exact */
	int nops;
	/* receives posted at B, in order: range, and whether it can take data */
	struct {
		uint32_t off, len;
		bool valid;
	} recv[FZ_MAX_RECVS];
	int nrecv, recv_used;
	bool failed;  /* an earlier operation fails: the rest is flushed */
	bool lenient; /* outcomes from here on are not predicted */
	bool data_exact;
	/* WQE boundaries or doorbells were garbage: completions may name
	 * any block; only counters rising and no success after an error
	 * are checked. */
	bool chaos;
	uint32_t posted_bbs;
	/* Remote transports pipeline: a WQE may gather its local data before
	 * the answer of an earlier read or atomic landed there, unless it is
	 * fenced (as on ConnectX).  Bytes landing so since the last fence. */
	bool pipelined;
	uint32_t landing_lo, landing_hi;
};

/* What a template WQE is. */
struct fz_wr {
	enum kinet_wr_opcode opcode;
	bool signaled, fence, inline_data;
	uint32_t lkey, rkey;
	uint64_t laddr, raddr;
	uint32_t len;
	uint64_t swap, compare_add;
	const uint8_t *inline_src;
};

void fz_model_reset(struct fz_model *m, struct fz_mr *a, struct fz_mr *b);
/* Predicts the outcome of wr (posted at counter) and applies it to the
 * shadows when it succeeds. */
void fz_model_post(struct fz_model *m, const struct fz_wr *wr, uint16_t counter, uint16_t nbb);
/* A WQE whose outcome is not predicted (raw). */
void fz_model_post_unknown(struct fz_model *m, uint16_t counter, uint16_t nbb, bool signaled);
/* A teardown: nothing in flight or later is predicted any more. */
void fz_model_teardown(struct fz_model *m);
/* Checks the send CQ's completions of A against the model; aborts on a
 * difference.  The first `named` were polled while A existed (they carry
 * its wr_id); all: every expected completion must be there. */
void fz_model_check(const struct fz_model *m, const struct kinet_wc *wc, int n, int named, uint32_t qpn,
		    bool all);
/* Number of completions the model expects (exact mode). */
int fz_model_expected(const struct fz_model *m);
void fz_model_check_memory(const struct fz_model *m);

#endif /* KINET_FUZZ_H */
