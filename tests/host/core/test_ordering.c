/*
 * Operations of one QP take effect in posting order; the fence flag makes a
 * WQE wait for earlier reads and atomics.
 */
#include "kt_host.h"

struct env {
	struct kinet_ctx *ctx;
	struct kt_pair p;
	struct kt_buf loc, rem;
	int ok;
};

static void env_open(struct env *e, int threads)
{
	memset(e, 0, sizeof(*e));
	KT_OK(kt_ctx_open(threads, &e->ctx));
	struct kt_pair_opts o;
	kt_pair_opts_init(&o);
	o.sq_depth = 512;
	o.cq_depth = 1024;
	KT_OK(kt_pair_create(&e->p, e->ctx, e->ctx, &o));
	KT_OK(kt_buf_alloc(e->ctx, &e->loc, 1 << 20, KT_ACC_ALL, 0));
	KT_OK(kt_buf_alloc(e->ctx, &e->rem, 1 << 20, KT_ACC_ALL, 0));
	e->ok = 1;
}

static void env_close(struct env *e)
{
	kt_buf_free(&e->loc);
	kt_buf_free(&e->rem);
	kt_pair_destroy(&e->p);
	kinet_ctx_close(e->ctx);
}

/*
 * Per round r, one batch of unsignaled work ending in a signaled WQE:
 *   write X_r (64 KiB) to rem[0..), read rem[0..) into loc[A], fetch_add
 *   rem counter, read rem counter into loc[B], write 8 bytes over rem[0],
 *   read rem[0..8) into loc[C].
 * Every read must see everything posted before it.
 */
static void mixed(int threads, bool batch)
{
	enum { XLEN = 65536, ROUNDS = 50 };
	const size_t SRC = 0, A = 128 * 1024, B = 256 * 1024, C = B + 64, FA = B + 128, CNT = 512 * 1024;
	struct env e;
	struct kinet_wc wc;

	env_open(&e, threads);
	KT_CHECK(e.ok);
	uint64_t *cnt = (uint64_t *)(void *)(e.rem.p + CNT);
	*cnt = 0;
	for (int r = 0; r < ROUNDS; r++) {
		kt_fill_pattern(e.loc.p + SRC, XLEN, (uint32_t)r + 1);
		memset(e.loc.p + A, 0, XLEN);
		uint64_t stamp = 0xabc0000000000000ull | (uint64_t)r;
		memcpy(e.loc.p + SRC + XLEN, &stamp, 8);

		struct kinet_sge s_src = kt_sge(&e.loc, SRC, XLEN);
		struct kinet_sge s_a = kt_sge(&e.loc, A, XLEN);
		struct kinet_sge s_fa = kt_sge(&e.loc, FA, 8);
		struct kinet_sge s_b = kt_sge(&e.loc, B, 8);
		struct kinet_sge s_stamp = kt_sge(&e.loc, SRC + XLEN, 8);
		struct kinet_sge s_c = kt_sge(&e.loc, C, 8);
		uint64_t rem0 = kt_addr(&e.rem, 0), remc = kt_addr(&e.rem, CNT);
		uint32_t rk = kt_rkey(&e.rem);
		struct kinet_send_wr w[6] = {
			kt_wr(1, KINET_WR_RDMA_WRITE, 0, &s_src, 1, rem0, rk),
			kt_wr(2, KINET_WR_RDMA_READ, 0, &s_a, 1, rem0, rk),
			kt_wr(3, KINET_WR_ATOMIC_FETCH_AND_ADD, 0, &s_fa, 1, remc, rk),
			kt_wr(4, KINET_WR_RDMA_READ, 0, &s_b, 1, remc, rk),
			kt_wr(5, KINET_WR_RDMA_WRITE, 0, &s_stamp, 1, rem0, rk),
			kt_wr(6, KINET_WR_RDMA_READ, KINET_SEND_SIGNALED, &s_c, 1, rem0, rk),
		};
		w[2].compare_add = 3;
		if (batch) {
			int bad = -1;
			KT_OK(kinet_qp_post_send(e.p.qp[0], w, 6, &bad));
		} else {
			for (int i = 0; i < 6; i++)
				KT_OK(kt_post(e.p.qp[0], &w[i]));
		}
		KT_OK(kt_poll1(e.p.cq[0], &wc));
		KT_OK(kt_wc_expect(&wc, 6, 0));
		KT_CHECK(memcmp(e.loc.p + A, e.loc.p + SRC, XLEN) == 0);
		uint64_t fa_old, b, c;
		memcpy(&fa_old, e.loc.p + FA, 8);
		memcpy(&b, e.loc.p + B, 8);
		memcpy(&c, e.loc.p + C, 8);
		KT_CHECK_EQ(fa_old, 3ull * (uint64_t)r);
		KT_CHECK_EQ(b, 3ull * (uint64_t)r + 3);
		KT_CHECK(c == stamp);
	}
	KT_CHECK_EQ(*cnt, 3ull * ROUNDS);
	struct kinet_wc extra;
	KT_CHECK_EQ(kt_poll_for(e.p.cq[0], 10, 1, &extra), 0);
	env_close(&e);
}

KT_TEST(mixed_batched)
{
	mixed(1, true);
}

KT_TEST(mixed_single_posts)
{
	mixed(1, false);
}

KT_TEST(mixed_four_engine_threads)
{
	mixed(4, true);
}

/* Signaled completions arrive in posting order, whatever the opcode. */
KT_TEST(completion_order)
{
	struct env e;
	struct kinet_wc wc[256];

	env_open(&e, 1);
	KT_CHECK(e.ok);
	struct kinet_sge s = kt_sge(&e.loc, 0, 4096);
	struct kinet_sge s8 = kt_sge(&e.loc, 8192, 8);
	struct kinet_send_wr w[256];
	for (int i = 0; i < 256; i++) {
		switch (i % 4) {
		case 0:
			w[i] = kt_wr((uint64_t)i, KINET_WR_RDMA_WRITE, KINET_SEND_SIGNALED, &s, 1,
				     kt_addr(&e.rem, 0), kt_rkey(&e.rem));
			break;
		case 1:
			w[i] = kt_wr((uint64_t)i, KINET_WR_RDMA_READ, KINET_SEND_SIGNALED, &s, 1,
				     kt_addr(&e.rem, 0), kt_rkey(&e.rem));
			break;
		case 2:
			w[i] = kt_wr((uint64_t)i, KINET_WR_ATOMIC_FETCH_AND_ADD, KINET_SEND_SIGNALED, &s8, 1,
				     kt_addr(&e.rem, 65536), kt_rkey(&e.rem));
			w[i].compare_add = 1;
			break;
		default:
			w[i] = kt_wr((uint64_t)i, KINET_WR_NOP, KINET_SEND_SIGNALED, NULL, 0, 0, 0);
			break;
		}
	}
	int bad = -1;
	KT_OK(kinet_qp_post_send(e.p.qp[0], w, 256, &bad));
	KT_CHECK_EQ(kt_poll_n(e.p.cq[0], 256, wc, KT_DEADLINE_MS), 256);
	for (int i = 0; i < 256; i++) {
		KT_OK(kt_wc_expect(&wc[i], (uint64_t)i, 0));
		static const enum kinet_wc_opcode ops[4] = {KINET_WC_RDMA_WRITE, KINET_WC_RDMA_READ,
							    KINET_WC_FETCH_ADD, KINET_WC_NOP};
		KT_CHECK_EQ(wc[i].opcode, ops[i % 4]);
	}
	env_close(&e);
}

/* READ brings a value; a fenced WRITE of the same local buffer must carry
 * the value the read brought.  Likewise for the old value of a fetch-add. */
KT_TEST(fence)
{
	struct env e;
	struct kinet_wc wc;

	env_open(&e, 1);
	KT_CHECK(e.ok);
	for (int r = 0; r < 100; r++) {
		uint64_t v = 0x5a5a000000000000ull + (uint64_t)r * 977;
		memcpy(e.rem.p, &v, 8);
		memset(e.loc.p, 0, 64);
		memset(e.rem.p + 4096, 0, 64);
		struct kinet_sge s = kt_sge(&e.loc, 0, 8);
		struct kinet_sge s2 = kt_sge(&e.loc, 8, 8);
		uint32_t rk = kt_rkey(&e.rem);
		uint64_t cnt_before;
		memcpy(&cnt_before, e.rem.p + 8, 8);
		struct kinet_send_wr w[4] = {
			kt_wr(1, KINET_WR_RDMA_READ, 0, &s, 1, kt_addr(&e.rem, 0), rk),
			kt_wr(2, KINET_WR_RDMA_WRITE, KINET_SEND_FENCE, &s, 1, kt_addr(&e.rem, 4096), rk),
			kt_wr(3, KINET_WR_ATOMIC_FETCH_AND_ADD, 0, &s2, 1, kt_addr(&e.rem, 8), rk),
			kt_wr(4, KINET_WR_RDMA_WRITE, KINET_SEND_FENCE | KINET_SEND_SIGNALED, &s2, 1,
			      kt_addr(&e.rem, 4104), rk),
		};
		w[2].compare_add = 1;
		int bad = -1;
		KT_OK(kinet_qp_post_send(e.p.qp[0], w, 4, &bad));
		KT_OK(kt_poll1(e.p.cq[0], &wc));
		KT_OK(kt_wc_expect(&wc, 4, 0));
		uint64_t got, got2;
		memcpy(&got, e.rem.p + 4096, 8);
		memcpy(&got2, e.rem.p + 4104, 8);
		KT_CHECK(got == v);
		KT_CHECK_EQ(got2, cnt_before);
		KT_CHECK_EQ(got2, (uint64_t)r);
	}
	env_close(&e);
}

KT_MAIN(mixed_batched, mixed_single_posts, mixed_four_engine_threads, completion_order, fence)
