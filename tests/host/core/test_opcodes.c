/*
 * Every opcode with host memory, between two QPs of one context and between
 * QPs of two contexts of one process (local transport).
 */
#include "kt_host.h"

#define LOC_LEN (1u << 20)
#define REM_LEN (1u << 20)

struct env {
	struct kinet_ctx *c[2];
	struct kt_pair p;
	struct kt_buf loc; /* in ctx 0, local side of qp[0] */
	struct kt_buf rem; /* in ctx 1, target of qp[0] */
	int ok;
};

static void env_close(struct env *e)
{
	kt_buf_free(&e->loc);
	kt_buf_free(&e->rem);
	kt_pair_destroy(&e->p);
	if (e->c[1] && e->c[1] != e->c[0])
		kinet_ctx_close(e->c[1]);
	if (e->c[0])
		kinet_ctx_close(e->c[0]);
	memset(e, 0, sizeof(*e));
}

static void env_open(struct env *e, bool two)
{
	memset(e, 0, sizeof(*e));
	KT_OK(kt_ctx_open(1, &e->c[0]));
	if (two)
		KT_OK(kt_ctx_open(1, &e->c[1]));
	else
		e->c[1] = e->c[0];
	KT_OK(kt_pair_create(&e->p, e->c[0], e->c[1], NULL));
	KT_CHECK_EQ(kinet_qp_get_state(e->p.qp[0]), KINET_QPS_RTS);
	KT_CHECK_EQ(kinet_qp_get_state(e->p.qp[1]), KINET_QPS_RTS);
	KT_OK(kt_buf_alloc(e->c[0], &e->loc, LOC_LEN, KT_ACC_ALL, 0x11));
	KT_OK(kt_buf_alloc(e->c[1], &e->rem, REM_LEN, KT_ACC_ALL, 0x22));
	e->ok = 1;
}

/* No further completion shows up on either CQ for a while. */
static void check_quiet(struct env *e)
{
	struct kinet_wc wc;
	KT_CHECK_EQ(kt_poll_for(e->p.cq[0], 20, 1, &wc), 0);
	KT_CHECK_EQ(kt_poll_for(e->p.cq[1], 20, 1, &wc), 0);
}

static void check_guards(struct env *e)
{
	KT_CHECK(kt_buf_guards_ok(&e->loc));
	KT_CHECK(kt_buf_guards_ok(&e->rem));
}

static void do_nop(bool two)
{
	struct env e;
	struct kinet_wc wc;

	env_open(&e, two);
	KT_CHECK(e.ok);
	struct kinet_send_wr w0 = kt_wr(1, KINET_WR_NOP, 0, NULL, 0, 0, 0);
	struct kinet_send_wr w1 = kt_wr(2, KINET_WR_NOP, KINET_SEND_SIGNALED, NULL, 0, 0, 0);
	KT_OK(kt_post(e.p.qp[0], &w0));
	KT_OK(kt_post(e.p.qp[0], &w1));
	KT_OK(kt_poll1(e.p.cq[0], &wc));
	KT_OK(kt_wc_expect(&wc, 2, 0));
	KT_CHECK_EQ(wc.opcode, KINET_WC_NOP);
	KT_CHECK_EQ(wc.qp_num, kinet_qp_num(e.p.qp[0]));
	check_quiet(&e);
	env_close(&e);
}

static void do_write(bool two)
{
	static const uint32_t sizes[] = {1, 7, 64, 4096, 65537, LOC_LEN};
	struct env e;
	struct kinet_wc wc;

	env_open(&e, two);
	KT_CHECK(e.ok);
	for (unsigned i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		uint32_t len = sizes[i];
		uint32_t roff = len == REM_LEN ? 0 : 3;
		kt_fill_pattern(e.loc.p, len, i);
		memset(e.rem.p, 0x22, REM_LEN);
		struct kinet_sge sge = kt_sge(&e.loc, 0, len);
		struct kinet_send_wr wr = kt_wr(100 + i, KINET_WR_RDMA_WRITE, KINET_SEND_SIGNALED, &sge, 1,
						kt_addr(&e.rem, roff), kt_rkey(&e.rem));
		KT_OK(kt_post(e.p.qp[0], &wr));
		KT_OK(kt_poll1(e.p.cq[0], &wc));
		KT_OK(kt_wc_expect(&wc, 100 + i, 0));
		KT_CHECK_EQ(wc.opcode, KINET_WC_RDMA_WRITE);
		KT_CHECK_EQ(wc.qp_num, kinet_qp_num(e.p.qp[0]));
		KT_CHECK(memcmp(e.rem.p + roff, e.loc.p, len) == 0);
		KT_CHECK(kt_mem_is(e.rem.p, 0x22, roff));
		KT_CHECK(kt_mem_is(e.rem.p + roff + len, 0x22, REM_LEN - roff - len));
	}
	check_guards(&e);
	check_quiet(&e);
	env_close(&e);
}

static void do_write_gather(bool two)
{
	struct env e;
	struct kinet_wc wc;

	env_open(&e, two);
	KT_CHECK(e.ok);
	kt_fill_pattern(e.loc.p, 8192, 5);
	struct kinet_sge sg[3] = {kt_sge(&e.loc, 0, 10), kt_sge(&e.loc, 1000, 1), kt_sge(&e.loc, 4096, 2000)};
	struct kinet_send_wr wr = kt_wr(7, KINET_WR_RDMA_WRITE, KINET_SEND_SIGNALED, sg, 3,
					kt_addr(&e.rem, 64), kt_rkey(&e.rem));
	KT_OK(kt_post(e.p.qp[0], &wr));
	KT_OK(kt_poll1(e.p.cq[0], &wc));
	KT_OK(kt_wc_expect(&wc, 7, 0));
	KT_CHECK(memcmp(e.rem.p + 64, e.loc.p, 10) == 0);
	KT_CHECK_EQ(e.rem.p[74], e.loc.p[1000]);
	KT_CHECK(memcmp(e.rem.p + 75, e.loc.p + 4096, 2000) == 0);
	KT_CHECK(kt_mem_is(e.rem.p, 0x22, 64));
	KT_CHECK(kt_mem_is(e.rem.p + 2075, 0x22, 4096));
	check_guards(&e);
	env_close(&e);
}

/* Inline data is copied at post time: scribbling over the source while the
 * engine is paused must not change what lands. */
static void do_write_inline(bool two)
{
	static const uint32_t sizes[] = {1, 12, 28, 100, 128};
	struct env e;
	struct kinet_wc wc;

	env_open(&e, two);
	KT_CHECK(e.ok);
	for (unsigned i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		uint8_t src[128], want[128];
		uint32_t len = sizes[i];
		kt_fill_pattern(src, len, 40 + i);
		memcpy(want, src, len);
		memset(e.rem.p, 0x22, 4096);
		/* An inline SGE is not checked against the key table. */
		struct kinet_sge sge = {.addr = (uint64_t)(uintptr_t)src, .length = len, .lkey = 0xdeadbeef};
		struct kinet_send_wr wr =
			kt_wr(200 + i, KINET_WR_RDMA_WRITE, KINET_SEND_SIGNALED | KINET_SEND_INLINE, &sge, 1,
			      kt_addr(&e.rem, 8), kt_rkey(&e.rem));
		/* Paused (the software NIC), the overwrite below lands before the
		 * engine runs: the data must have been copied at post time.  A
		 * NIC cannot pause; the data is in the WQE all the same. */
		int paused = kinet_ctx_pause(e.c[0]);
		KT_CHECK(paused == 0 || paused == -EOPNOTSUPP);
		int rc = kt_post(e.p.qp[0], &wr);
		memset(src, 0xee, sizeof(src));
		if (!paused)
			KT_OK(kinet_ctx_resume(e.c[0]));
		KT_OK(rc);
		KT_OK(kt_poll1(e.p.cq[0], &wc));
		KT_OK(kt_wc_expect(&wc, 200 + i, 0));
		KT_CHECK_EQ(wc.opcode, KINET_WC_RDMA_WRITE);
		KT_CHECK(memcmp(e.rem.p + 8, want, len) == 0);
		KT_CHECK(kt_mem_is(e.rem.p, 0x22, 8));
		KT_CHECK(kt_mem_is(e.rem.p + 8 + len, 0x22, 4096 - 8 - len));
	}
	check_guards(&e);
	env_close(&e);
}

static void do_write_imm(bool two)
{
	struct env e;
	struct kinet_wc wc;

	env_open(&e, two);
	KT_CHECK(e.ok);
	/* The receive buffer must stay untouched: write-with-immediate only
	 * consumes the receive WQE. */
	struct kinet_sge rsge = kt_sge(&e.rem, 8192, 256);
	KT_OK(kt_post_recv(e.p.qp[1], 555, &rsge, 1));
	kt_fill_pattern(e.loc.p, 300, 9);
	struct kinet_sge sge = kt_sge(&e.loc, 0, 300);
	struct kinet_send_wr wr = kt_wr(77, KINET_WR_RDMA_WRITE_WITH_IMM, KINET_SEND_SIGNALED, &sge, 1,
					kt_addr(&e.rem, 0), kt_rkey(&e.rem));
	wr.imm_data = 0x12345678;
	KT_OK(kt_post(e.p.qp[0], &wr));
	KT_OK(kt_poll1(e.p.cq[0], &wc));
	KT_OK(kt_wc_expect(&wc, 77, 0));
	KT_CHECK_EQ(wc.opcode, KINET_WC_RDMA_WRITE);
	KT_OK(kt_poll1(e.p.cq[1], &wc));
	KT_OK(kt_wc_expect(&wc, 555, 0));
	KT_CHECK_EQ(wc.opcode, KINET_WC_RECV_RDMA_WITH_IMM);
	KT_CHECK_EQ(wc.imm_data, 0x12345678);
	KT_CHECK_EQ(wc.byte_len, 300);
	KT_CHECK(wc.wc_flags & KINET_WC_WITH_IMM);
	KT_CHECK_EQ(wc.qp_num, kinet_qp_num(e.p.qp[1]));
	KT_CHECK(memcmp(e.rem.p, e.loc.p, 300) == 0);
	KT_CHECK(kt_mem_is(e.rem.p + 300, 0x22, REM_LEN - 300));
	check_guards(&e);
	check_quiet(&e);
	env_close(&e);
}

static void do_send(bool two, bool imm, bool inl)
{
	struct env e;
	struct kinet_wc wc;
	uint32_t len = inl ? 100 : 3000;

	env_open(&e, two);
	KT_CHECK(e.ok);
	struct kinet_sge rsge = kt_sge(&e.rem, 4096, 4096);
	KT_OK(kt_post_recv(e.p.qp[1], 900, &rsge, 1));
	kt_fill_pattern(e.loc.p, len, 3);
	struct kinet_sge sge = kt_sge(&e.loc, 0, len);
	unsigned flags = KINET_SEND_SIGNALED | (inl ? KINET_SEND_INLINE : 0);
	struct kinet_send_wr wr =
		kt_wr(31, imm ? KINET_WR_SEND_WITH_IMM : KINET_WR_SEND, flags, &sge, 1, 0, 0);
	wr.imm_data = 0xcafef00d;
	KT_OK(kt_post(e.p.qp[0], &wr));
	KT_OK(kt_poll1(e.p.cq[0], &wc));
	KT_OK(kt_wc_expect(&wc, 31, 0));
	KT_CHECK_EQ(wc.opcode, KINET_WC_SEND);
	KT_OK(kt_poll1(e.p.cq[1], &wc));
	KT_OK(kt_wc_expect(&wc, 900, 0));
	KT_CHECK_EQ(wc.opcode, KINET_WC_RECV);
	KT_CHECK_EQ(wc.byte_len, len);
	KT_CHECK_EQ(wc.qp_num, kinet_qp_num(e.p.qp[1]));
	if (imm) {
		KT_CHECK(wc.wc_flags & KINET_WC_WITH_IMM);
		KT_CHECK_EQ(wc.imm_data, 0xcafef00d);
	} else {
		KT_CHECK(!(wc.wc_flags & KINET_WC_WITH_IMM));
	}
	KT_CHECK(memcmp(e.rem.p + 4096, e.loc.p, len) == 0);
	KT_CHECK(kt_mem_is(e.rem.p, 0x22, 4096));
	KT_CHECK(kt_mem_is(e.rem.p + 4096 + len, 0x22, REM_LEN - 4096 - len));
	check_guards(&e);
	check_quiet(&e);
	env_close(&e);
}

/* Gather from three local SGEs, scatter into three receive SGEs. */
static void do_send_scatter(bool two)
{
	struct env e;
	struct kinet_wc wc;
	uint8_t want[40];

	env_open(&e, two);
	KT_CHECK(e.ok);
	struct kinet_sge rsg[3] = {kt_sge(&e.rem, 100, 5), kt_sge(&e.rem, 200, 7), kt_sge(&e.rem, 300, 100)};
	KT_OK(kt_post_recv(e.p.qp[1], 1, rsg, 3));
	kt_fill_pattern(e.loc.p, 4096, 17);
	struct kinet_sge sg[3] = {kt_sge(&e.loc, 0, 13), kt_sge(&e.loc, 500, 20), kt_sge(&e.loc, 1000, 7)};
	memcpy(want, e.loc.p, 13);
	memcpy(want + 13, e.loc.p + 500, 20);
	memcpy(want + 33, e.loc.p + 1000, 7);
	struct kinet_send_wr wr = kt_wr(2, KINET_WR_SEND, KINET_SEND_SIGNALED, sg, 3, 0, 0);
	KT_OK(kt_post(e.p.qp[0], &wr));
	KT_OK(kt_poll1(e.p.cq[0], &wc));
	KT_OK(kt_wc_expect(&wc, 2, 0));
	KT_OK(kt_poll1(e.p.cq[1], &wc));
	KT_OK(kt_wc_expect(&wc, 1, 0));
	KT_CHECK_EQ(wc.byte_len, 40);
	KT_CHECK(memcmp(e.rem.p + 100, want, 5) == 0);
	KT_CHECK(memcmp(e.rem.p + 200, want + 5, 7) == 0);
	KT_CHECK(memcmp(e.rem.p + 300, want + 12, 28) == 0);
	KT_CHECK(kt_mem_is(e.rem.p, 0x22, 100));
	KT_CHECK(kt_mem_is(e.rem.p + 105, 0x22, 95));
	KT_CHECK(kt_mem_is(e.rem.p + 207, 0x22, 93));
	KT_CHECK(kt_mem_is(e.rem.p + 328, 0x22, 4096));
	check_guards(&e);
	env_close(&e);
}

/* Sends consume receives in posting order. */
static void do_send_many(bool two)
{
	struct env e;
	struct kinet_wc wc[16];

	env_open(&e, two);
	KT_CHECK(e.ok);
	for (int i = 0; i < 16; i++) {
		struct kinet_sge rsge = kt_sge(&e.rem, (size_t)i * 64, 64);
		KT_OK(kt_post_recv(e.p.qp[1], 1000 + (uint64_t)i, &rsge, 1));
	}
	for (int i = 0; i < 16; i++) {
		e.loc.p[i * 64] = (uint8_t)i;
		struct kinet_sge sge = kt_sge(&e.loc, (size_t)i * 64, (uint32_t)(i + 1));
		struct kinet_send_wr wr =
			kt_wr((uint64_t)i, KINET_WR_SEND, KINET_SEND_SIGNALED, &sge, 1, 0, 0);
		KT_OK(kt_post(e.p.qp[0], &wr));
	}
	KT_CHECK_EQ(kt_poll_n(e.p.cq[0], 16, wc, KT_DEADLINE_MS), 16);
	for (int i = 0; i < 16; i++)
		KT_OK(kt_wc_expect(&wc[i], (uint64_t)i, 0));
	KT_CHECK_EQ(kt_poll_n(e.p.cq[1], 16, wc, KT_DEADLINE_MS), 16);
	for (int i = 0; i < 16; i++) {
		KT_OK(kt_wc_expect(&wc[i], 1000 + (uint64_t)i, 0));
		KT_CHECK_EQ(wc[i].byte_len, i + 1);
		KT_CHECK_EQ(e.rem.p[i * 64], i);
	}
	env_close(&e);
}

static void do_read(bool two)
{
	static const uint32_t sizes[] = {1, 8, 1000, 65536, REM_LEN};
	struct env e;
	struct kinet_wc wc;

	env_open(&e, two);
	KT_CHECK(e.ok);
	for (unsigned i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		uint32_t len = sizes[i];
		uint32_t loff = len == LOC_LEN ? 0 : 5;
		kt_fill_pattern(e.rem.p, REM_LEN, 60 + i);
		memset(e.loc.p, 0x11, LOC_LEN);
		struct kinet_sge sge = kt_sge(&e.loc, loff, len);
		struct kinet_send_wr wr = kt_wr(300 + i, KINET_WR_RDMA_READ, KINET_SEND_SIGNALED, &sge, 1,
						kt_addr(&e.rem, 0), kt_rkey(&e.rem));
		KT_OK(kt_post(e.p.qp[0], &wr));
		KT_OK(kt_poll1(e.p.cq[0], &wc));
		KT_OK(kt_wc_expect(&wc, 300 + i, 0));
		KT_CHECK_EQ(wc.opcode, KINET_WC_RDMA_READ);
		KT_CHECK_EQ(wc.byte_len, len);
		KT_CHECK(memcmp(e.loc.p + loff, e.rem.p, len) == 0);
		KT_CHECK(kt_mem_is(e.loc.p, 0x11, loff));
		KT_CHECK(kt_mem_is(e.loc.p + loff + len, 0x11, LOC_LEN - loff - len));
	}
	/* Scatter a read over two local SGEs. */
	memset(e.loc.p, 0x11, 8192);
	struct kinet_sge sg[2] = {kt_sge(&e.loc, 0, 100), kt_sge(&e.loc, 4096, 50)};
	struct kinet_send_wr wr = kt_wr(399, KINET_WR_RDMA_READ, KINET_SEND_SIGNALED, sg, 2,
					kt_addr(&e.rem, 10), kt_rkey(&e.rem));
	KT_OK(kt_post(e.p.qp[0], &wr));
	KT_OK(kt_poll1(e.p.cq[0], &wc));
	KT_OK(kt_wc_expect(&wc, 399, 0));
	KT_CHECK(memcmp(e.loc.p, e.rem.p + 10, 100) == 0);
	KT_CHECK(memcmp(e.loc.p + 4096, e.rem.p + 110, 50) == 0);
	KT_CHECK(kt_mem_is(e.loc.p + 100, 0x11, 3996));
	check_guards(&e);
	check_quiet(&e);
	env_close(&e);
}

static void do_atomics(bool two)
{
	struct env e;
	struct kinet_wc wc;
	uint64_t *target, *res;

	env_open(&e, two);
	KT_CHECK(e.ok);
	target = (uint64_t *)(void *)(e.rem.p + 64);
	res = (uint64_t *)(void *)(e.loc.p + 128);
	*target = 100;
	*res = 0x1111111111111111ull;
	struct kinet_sge sge = kt_sge(&e.loc, 128, 8);

	/* fetch-and-add */
	struct kinet_send_wr wr = kt_wr(1, KINET_WR_ATOMIC_FETCH_AND_ADD, KINET_SEND_SIGNALED, &sge, 1,
					kt_addr(&e.rem, 64), kt_rkey(&e.rem));
	wr.compare_add = 5;
	KT_OK(kt_post(e.p.qp[0], &wr));
	KT_OK(kt_poll1(e.p.cq[0], &wc));
	KT_OK(kt_wc_expect(&wc, 1, 0));
	KT_CHECK_EQ(wc.opcode, KINET_WC_FETCH_ADD);
	KT_CHECK_EQ(wc.byte_len, 8);
	KT_CHECK_EQ(*res, 100);
	KT_CHECK_EQ(*target, 105);

	/* wraps modulo 2^64 */
	*target = UINT64_MAX;
	wr.wr_id = 2;
	wr.compare_add = 3;
	KT_OK(kt_post(e.p.qp[0], &wr));
	KT_OK(kt_poll1(e.p.cq[0], &wc));
	KT_OK(kt_wc_expect(&wc, 2, 0));
	KT_CHECK(*res == UINT64_MAX);
	KT_CHECK_EQ(*target, 2);

	/* compare-and-swap, equal: swaps */
	*target = 0x0123456789abcdefull;
	wr = kt_wr(3, KINET_WR_ATOMIC_CMP_AND_SWP, KINET_SEND_SIGNALED, &sge, 1, kt_addr(&e.rem, 64),
		   kt_rkey(&e.rem));
	wr.compare_add = 0x0123456789abcdefull;
	wr.swap = 0xfedcba9876543210ull;
	KT_OK(kt_post(e.p.qp[0], &wr));
	KT_OK(kt_poll1(e.p.cq[0], &wc));
	KT_OK(kt_wc_expect(&wc, 3, 0));
	KT_CHECK_EQ(wc.opcode, KINET_WC_COMP_SWAP);
	KT_CHECK(*res == 0x0123456789abcdefull);
	KT_CHECK(*target == 0xfedcba9876543210ull);

	/* not equal: leaves the target, returns the current value */
	wr.wr_id = 4;
	wr.compare_add = 42;
	wr.swap = 43;
	*res = 0;
	KT_OK(kt_post(e.p.qp[0], &wr));
	KT_OK(kt_poll1(e.p.cq[0], &wc));
	KT_OK(kt_wc_expect(&wc, 4, 0));
	KT_CHECK(*res == 0xfedcba9876543210ull);
	KT_CHECK(*target == 0xfedcba9876543210ull);

	/* neighbours untouched */
	KT_CHECK(kt_mem_is(e.rem.p, 0x22, 64));
	KT_CHECK(kt_mem_is(e.rem.p + 72, 0x22, 4096));
	KT_CHECK(kt_mem_is(e.loc.p, 0x11, 128));
	KT_CHECK(kt_mem_is(e.loc.p + 136, 0x11, 4096));
	check_guards(&e);
	check_quiet(&e);
	env_close(&e);
}

#define BOTH(name, call)                                                                                     \
	KT_TEST(name##_one_ctx)                                                                              \
	{                                                                                                    \
		bool two = false;                                                                            \
		call;                                                                                        \
	}                                                                                                    \
	KT_TEST(name##_two_ctx)                                                                              \
	{                                                                                                    \
		bool two = true;                                                                             \
		call;                                                                                        \
	}

BOTH(nop, do_nop(two))
BOTH(write, do_write(two))
BOTH(write_gather, do_write_gather(two))
BOTH(write_inline, do_write_inline(two))
BOTH(write_imm, do_write_imm(two))
BOTH(send, do_send(two, false, false))
BOTH(send_imm, do_send(two, true, false))
BOTH(send_inline, do_send(two, false, true))
BOTH(send_scatter, do_send_scatter(two))
BOTH(send_many, do_send_many(two))
BOTH(read, do_read(two))
BOTH(atomics, do_atomics(two))

KT_MAIN(nop_one_ctx, nop_two_ctx, write_one_ctx, write_two_ctx, write_gather_one_ctx, write_gather_two_ctx,
	write_inline_one_ctx, write_inline_two_ctx, write_imm_one_ctx, write_imm_two_ctx, send_one_ctx,
	send_two_ctx, send_imm_one_ctx, send_imm_two_ctx, send_inline_one_ctx, send_inline_two_ctx,
	send_scatter_one_ctx, send_scatter_two_ctx, send_many_one_ctx, send_many_two_ctx, read_one_ctx,
	read_two_ctx, atomics_one_ctx, atomics_two_ctx)
