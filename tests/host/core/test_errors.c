/*
 * Protection and state errors: each gives an error CQE with the PRM
 * syndrome (even when unsignaled), moves the QP to the error state and
 * flushes what follows; nothing outside a registered range (nor the target)
 * is touched, and the engine keeps working.
 */
#include "kt_host.h"

#define LEN 4096

struct env {
	struct kinet_ctx *ctx;
	struct kt_pair p;
	struct kt_buf loc, rem;
	int ok;
};

static void env_open(struct env *e)
{
	memset(e, 0, sizeof(*e));
	KT_OK(kt_ctx_open(1, &e->ctx));
	KT_OK(kt_pair_create(&e->p, e->ctx, e->ctx, NULL));
	KT_OK(kt_buf_alloc(e->ctx, &e->loc, LEN, KT_ACC_ALL, 0x11));
	KT_OK(kt_buf_alloc(e->ctx, &e->rem, LEN, KT_ACC_ALL, 0x22));
	kinet_ctx_clear_error(e->ctx);
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
 * Posts *bad (signaled or not as given) followed by a signaled write, then
 * expects: the error CQE for bad with synd, a flush CQE for the write, the
 * QP in error, both buffers and all guards untouched, the error recorded,
 * no responder completion, and a fresh pair in the context still working.
 */
static void expect_error(struct env *e, struct kinet_send_wr *bad, int synd)
{
	struct kinet_wc wc;
	struct kinet_error err;

	struct kinet_sge s = kt_sge(&e->loc, 0, 64);
	struct kinet_send_wr follow = kt_wr(999, KINET_WR_RDMA_WRITE, KINET_SEND_SIGNALED, &s, 1,
					    kt_addr(&e->rem, 0), kt_rkey(&e->rem));
	KT_OK(kt_post(e->p.qp[0], bad));
	KT_OK(kt_post(e->p.qp[0], &follow));
	KT_OK(kt_poll1(e->p.cq[0], &wc));
	KT_OK(kt_wc_expect(&wc, bad->wr_id, synd));
	KT_CHECK_EQ(wc.qp_num, kinet_qp_num(e->p.qp[0]));
	KT_OK(kt_poll1(e->p.cq[0], &wc));
	KT_OK(kt_wc_expect(&wc, 999, KINET_SYND_WR_FLUSH_ERR));
	KT_CHECK_EQ(kinet_qp_get_state(e->p.qp[0]), KINET_QPS_ERR);
	KT_CHECK(kt_mem_is(e->loc.p, 0x11, LEN));
	KT_CHECK(kt_mem_is(e->rem.p, 0x22, LEN));
	KT_CHECK(kt_buf_guards_ok(&e->loc));
	KT_CHECK(kt_buf_guards_ok(&e->rem));
	KT_CHECK_EQ(kt_poll_for(e->p.cq[0], 10, 1, &wc), 0);
	KT_OK(kinet_ctx_last_error(e->ctx, &err));
	KT_CHECK(err.status < 0);
	KT_CHECK_EQ(err.syndrome, synd);
	KT_CHECK_EQ(err.qpn, kinet_qp_num(e->p.qp[0]));
	KT_CHECK_EQ(err.source, KINET_ERROR_SOURCE_ENGINE);
	/* Posting to a QP in error flushes. */
	follow.wr_id = 1000;
	KT_OK(kt_post(e->p.qp[0], &follow));
	KT_OK(kt_poll1(e->p.cq[0], &wc));
	KT_OK(kt_wc_expect(&wc, 1000, KINET_SYND_WR_FLUSH_ERR));
	KT_CHECK(kt_mem_is(e->rem.p, 0x22, LEN));
	KT_OK(kt_smoke(e->ctx));
}

/* Runs one case twice: bad WQE unsignaled, then signaled. */
#define ERROR_CASE(name, synd, ...)                                                                          \
	KT_TEST(name)                                                                                        \
	{                                                                                                    \
		for (int sig = 0; sig < 2; sig++) {                                                          \
			struct env env;                                                                      \
			struct env *e = &env;                                                                \
			env_open(e);                                                                         \
			KT_CHECK(e->ok);                                                                     \
			unsigned flags = sig ? KINET_SEND_SIGNALED : 0;                                      \
			struct kinet_send_wr w;                                                              \
			struct kinet_sge s;                                                                  \
			__VA_ARGS__;                                                                         \
			w.send_flags |= flags;                                                               \
			int before = kt_failed_checks;                                                       \
			expect_error(e, &w, synd);                                                           \
			if (kt_failed_checks != before)                                                      \
				fprintf(stderr, "  (case %s, %s)\n", #name,                                  \
					sig ? "signaled" : "unsignaled");                                    \
			env_close(e);                                                                        \
		}                                                                                            \
	}

#define WR(op, sge, raddr, rkey) (w = kt_wr(5, op, 0, sge, 1, raddr, rkey))

/* ---- local protection ---- */

ERROR_CASE(bad_lkey_write, KINET_SYND_LOCAL_PROT_ERR, {
	s = kt_sge(&e->loc, 0, 64);
	s.lkey ^= 0x00ffff00u;
	WR(KINET_WR_RDMA_WRITE, &s, kt_addr(&e->rem, 0), kt_rkey(&e->rem));
})

ERROR_CASE(bad_lkey_read, KINET_SYND_LOCAL_PROT_ERR, {
	s = kt_sge(&e->loc, 0, 64);
	s.lkey = 0x7fffff00u;
	WR(KINET_WR_RDMA_READ, &s, kt_addr(&e->rem, 0), kt_rkey(&e->rem));
})

ERROR_CASE(bad_lkey_send, KINET_SYND_LOCAL_PROT_ERR, {
	struct kinet_sge r = kt_sge(&e->rem, 0, 64);
	KT_OK(kt_post_recv(e->p.qp[1], 1, &r, 1));
	s = kt_sge(&e->loc, 0, 64);
	s.lkey += 0x100;
	WR(KINET_WR_SEND, &s, 0, 0);
})

ERROR_CASE(local_past_end, KINET_SYND_LOCAL_PROT_ERR, {
	s = kt_sge(&e->loc, LEN - 4, 16);
	WR(KINET_WR_RDMA_WRITE, &s, kt_addr(&e->rem, 0), kt_rkey(&e->rem));
})

ERROR_CASE(local_before_start, KINET_SYND_LOCAL_PROT_ERR, {
	s = kt_sge(&e->loc, 0, 16);
	s.addr -= 8;
	WR(KINET_WR_RDMA_WRITE, &s, kt_addr(&e->rem, 0), kt_rkey(&e->rem));
})

/* A read landing partly outside the local region writes nothing. */
ERROR_CASE(local_read_past_end, KINET_SYND_LOCAL_PROT_ERR, {
	s = kt_sge(&e->loc, LEN - 8, 64);
	WR(KINET_WR_RDMA_READ, &s, kt_addr(&e->rem, 0), kt_rkey(&e->rem));
})

/* local address + length wraps around 2^64 */
ERROR_CASE(local_wraps, KINET_SYND_LOCAL_PROT_ERR, {
	s = kt_sge(&e->loc, 0, 0x1000);
	s.addr = UINT64_MAX - 0x7ff;
	WR(KINET_WR_RDMA_WRITE, &s, kt_addr(&e->rem, 0), kt_rkey(&e->rem));
})

/* ---- remote access ---- */

ERROR_CASE(bad_rkey_write, KINET_SYND_REMOTE_ACCESS_ERR, {
	s = kt_sge(&e->loc, 0, 64);
	WR(KINET_WR_RDMA_WRITE, &s, kt_addr(&e->rem, 0), kt_rkey(&e->rem) ^ 0x00ffff00u);
})

ERROR_CASE(bad_rkey_read, KINET_SYND_REMOTE_ACCESS_ERR, {
	s = kt_sge(&e->loc, 0, 64);
	WR(KINET_WR_RDMA_READ, &s, kt_addr(&e->rem, 0), kt_rkey(&e->rem) + 0x100);
})

ERROR_CASE(bad_rkey_atomic, KINET_SYND_REMOTE_ACCESS_ERR, {
	s = kt_sge(&e->loc, 0, 8);
	WR(KINET_WR_ATOMIC_FETCH_AND_ADD, &s, kt_addr(&e->rem, 0), kt_rkey(&e->rem) + 0x100);
	w.compare_add = 1;
})

ERROR_CASE(bad_rkey_write_imm, KINET_SYND_REMOTE_ACCESS_ERR, {
	struct kinet_sge r = kt_sge(&e->rem, 0, 64);
	KT_OK(kt_post_recv(e->p.qp[1], 1, &r, 1));
	s = kt_sge(&e->loc, 0, 64);
	WR(KINET_WR_RDMA_WRITE_WITH_IMM, &s, kt_addr(&e->rem, 0), kt_rkey(&e->rem) + 0x100);
})

ERROR_CASE(remote_past_end, KINET_SYND_REMOTE_ACCESS_ERR, {
	s = kt_sge(&e->loc, 0, 16);
	WR(KINET_WR_RDMA_WRITE, &s, kt_addr(&e->rem, LEN - 4), kt_rkey(&e->rem));
})

ERROR_CASE(remote_before_start, KINET_SYND_REMOTE_ACCESS_ERR, {
	s = kt_sge(&e->loc, 0, 16);
	WR(KINET_WR_RDMA_WRITE, &s, kt_addr(&e->rem, 0) - 8, kt_rkey(&e->rem));
})

ERROR_CASE(remote_read_past_end, KINET_SYND_REMOTE_ACCESS_ERR, {
	s = kt_sge(&e->loc, 0, 64);
	WR(KINET_WR_RDMA_READ, &s, kt_addr(&e->rem, LEN - 32), kt_rkey(&e->rem));
})

ERROR_CASE(remote_wraps, KINET_SYND_REMOTE_ACCESS_ERR, {
	s = kt_sge(&e->loc, 0, 64);
	WR(KINET_WR_RDMA_WRITE, &s, UINT64_MAX - 31, kt_rkey(&e->rem));
})

ERROR_CASE(remote_atomic_past_end, KINET_SYND_REMOTE_ACCESS_ERR, {
	s = kt_sge(&e->loc, 0, 8);
	WR(KINET_WR_ATOMIC_CMP_AND_SWP, &s, kt_addr(&e->rem, LEN), kt_rkey(&e->rem));
})

ERROR_CASE(misaligned_atomic, KINET_SYND_REMOTE_INVAL_REQ_ERR, {
	s = kt_sge(&e->loc, 0, 8);
	WR(KINET_WR_ATOMIC_FETCH_AND_ADD, &s, kt_addr(&e->rem, 4), kt_rkey(&e->rem));
	w.compare_add = 1;
})

ERROR_CASE(misaligned_cas, KINET_SYND_REMOTE_INVAL_REQ_ERR, {
	s = kt_sge(&e->loc, 0, 8);
	WR(KINET_WR_ATOMIC_CMP_AND_SWP, &s, kt_addr(&e->rem, 1), kt_rkey(&e->rem));
	w.compare_add = 0x2222222222222222ull;
	w.swap = 1;
})

/* ---- access rights (checked with a second region of the context) ---- */

static void rights_case(unsigned access, enum kinet_wr_opcode op, bool x_is_local, int synd)
{
	for (int sig = 0; sig < 2; sig++) {
		struct env env;
		struct kt_buf x;
		struct kinet_wc wc;
		struct kinet_sge s;

		env_open(&env);
		KT_CHECK(env.ok);
		KT_OK(kt_buf_alloc(env.ctx, &x, 256, access, 0x33));
		if (x_is_local) {
			s = kt_sge(&x, 0, op == KINET_WR_RDMA_READ ? 64 : 8);
			struct kinet_send_wr w = kt_wr(5, op, sig ? KINET_SEND_SIGNALED : 0, &s, 1,
						       kt_addr(&env.rem, 0), kt_rkey(&env.rem));
			w.compare_add = 1;
			KT_OK(kt_post(env.p.qp[0], &w));
		} else {
			s = kt_sge(&env.loc, 0,
				   op == KINET_WR_RDMA_WRITE || op == KINET_WR_RDMA_READ ? 64 : 8);
			struct kinet_send_wr w = kt_wr(5, op, sig ? KINET_SEND_SIGNALED : 0, &s, 1,
						       kt_addr(&x, 0), kt_rkey(&x));
			w.compare_add = 1;
			KT_OK(kt_post(env.p.qp[0], &w));
		}
		KT_OK(kt_poll1(env.p.cq[0], &wc));
		KT_OK(kt_wc_expect(&wc, 5, synd));
		KT_CHECK_EQ(kinet_qp_get_state(env.p.qp[0]), KINET_QPS_ERR);
		KT_CHECK(kt_mem_is(x.p, 0x33, 256));
		KT_CHECK(kt_buf_guards_ok(&x));
		KT_CHECK(kt_mem_is(env.loc.p, 0x11, LEN));
		KT_CHECK(kt_mem_is(env.rem.p, 0x22, LEN));
		KT_OK(kt_smoke(env.ctx));
		kt_buf_free(&x);
		env_close(&env);
	}
}

KT_TEST(read_into_readonly)
{
	rights_case(0, KINET_WR_RDMA_READ, true, KINET_SYND_LOCAL_PROT_ERR);
	rights_case(KINET_ACCESS_REMOTE_READ, KINET_WR_RDMA_READ, true, KINET_SYND_LOCAL_PROT_ERR);
}

KT_TEST(atomic_result_into_readonly)
{
	rights_case(0, KINET_WR_ATOMIC_FETCH_AND_ADD, true, KINET_SYND_LOCAL_PROT_ERR);
	rights_case(0, KINET_WR_ATOMIC_CMP_AND_SWP, true, KINET_SYND_LOCAL_PROT_ERR);
}

KT_TEST(missing_remote_write)
{
	rights_case(KINET_ACCESS_LOCAL_WRITE | KINET_ACCESS_REMOTE_READ | KINET_ACCESS_REMOTE_ATOMIC,
		    KINET_WR_RDMA_WRITE, false, KINET_SYND_REMOTE_ACCESS_ERR);
}

KT_TEST(missing_remote_read)
{
	rights_case(KINET_ACCESS_LOCAL_WRITE | KINET_ACCESS_REMOTE_WRITE | KINET_ACCESS_REMOTE_ATOMIC,
		    KINET_WR_RDMA_READ, false, KINET_SYND_REMOTE_ACCESS_ERR);
}

KT_TEST(missing_remote_atomic)
{
	rights_case(KINET_ACCESS_LOCAL_WRITE | KINET_ACCESS_REMOTE_WRITE | KINET_ACCESS_REMOTE_READ,
		    KINET_WR_ATOMIC_FETCH_AND_ADD, false, KINET_SYND_REMOTE_ACCESS_ERR);
	rights_case(KINET_ACCESS_LOCAL_WRITE | KINET_ACCESS_REMOTE_WRITE | KINET_ACCESS_REMOTE_READ,
		    KINET_WR_ATOMIC_CMP_AND_SWP, false, KINET_SYND_REMOTE_ACCESS_ERR);
}

/* ---- deregistered keys ---- */

KT_TEST(deregistered_keys)
{
	for (int remote = 0; remote < 2; remote++) {
		struct env env;
		struct kt_buf x;
		struct kinet_wc wc;

		env_open(&env);
		KT_CHECK(env.ok);
		KT_OK(kt_buf_alloc(env.ctx, &x, 256, KT_ACC_ALL, 0x33));
		uint32_t key = kt_lkey(&x);
		uint64_t addr = kt_addr(&x, 0);
		KT_OK(kinet_mr_dereg(x.mr));
		x.mr = NULL;
		struct kinet_sge s = kt_sge(&env.loc, 0, 64);
		struct kinet_send_wr w;
		if (remote) {
			w = kt_wr(5, KINET_WR_RDMA_WRITE, 0, &s, 1, addr, key);
		} else {
			s.addr = addr;
			s.lkey = key;
			w = kt_wr(5, KINET_WR_RDMA_READ, 0, &s, 1, kt_addr(&env.rem, 0), kt_rkey(&env.rem));
		}
		KT_OK(kt_post(env.p.qp[0], &w));
		KT_OK(kt_poll1(env.p.cq[0], &wc));
		KT_OK(kt_wc_expect(&wc, 5,
				   remote ? KINET_SYND_REMOTE_ACCESS_ERR : KINET_SYND_LOCAL_PROT_ERR));
		KT_CHECK(kt_mem_is(x.p, 0x33, 256));
		KT_CHECK(kt_buf_guards_ok(&x));
		kt_buf_free(&x);
		env_close(&env);
	}
}

/* The key of a deregistered region never reaches a region registered
 * after it, even one at the same address. */
KT_TEST(stale_key_does_not_alias)
{
	struct env env;
	struct kt_buf x;
	struct kinet_wc wc;
	struct kinet_mr *mr2[8];

	env_open(&env);
	KT_CHECK(env.ok);
	KT_OK(kt_buf_alloc(env.ctx, &x, 256, KT_ACC_ALL, 0x33));
	uint32_t old = kt_rkey(&x);
	KT_OK(kinet_mr_dereg(x.mr));
	x.mr = NULL;
	for (int i = 0; i < 8; i++) {
		KT_OK(kinet_mr_reg(env.ctx, x.p, 256, KT_ACC_ALL, &mr2[i]));
		KT_CHECK(kinet_mr_rkey(mr2[i]) != old);
	}
	struct kinet_sge s = kt_sge(&env.loc, 0, 64);
	struct kinet_send_wr w =
		kt_wr(5, KINET_WR_RDMA_WRITE, KINET_SEND_SIGNALED, &s, 1, kt_addr(&x, 0), old);
	KT_OK(kt_post(env.p.qp[0], &w));
	KT_OK(kt_poll1(env.p.cq[0], &wc));
	KT_OK(kt_wc_expect(&wc, 5, KINET_SYND_REMOTE_ACCESS_ERR));
	KT_CHECK(kt_mem_is(x.p, 0x33, 256));
	for (int i = 0; i < 8; i++)
		KT_OK(kinet_mr_dereg(mr2[i]));
	kt_buf_free(&x);
	env_close(&env);
}

/* ---- errors in a batch ---- */

/* good (unsignaled), good (signaled), bad (unsignaled), 3 more: the two good
 * ones land, one success CQE, the error, three flushes. */
KT_TEST(error_mid_batch)
{
	struct env env;
	struct kinet_wc wc[8];

	env_open(&env);
	KT_CHECK(env.ok);
	kt_fill_pattern(env.loc.p, 256, 8);
	struct kinet_sge s0 = kt_sge(&env.loc, 0, 128), s1 = kt_sge(&env.loc, 128, 128);
	struct kinet_sge sb = kt_sge(&env.loc, 0, 8);
	sb.lkey ^= 0x00ffff00u;
	uint32_t rk = kt_rkey(&env.rem);
	struct kinet_send_wr w[6] = {
		kt_wr(0, KINET_WR_RDMA_WRITE, 0, &s0, 1, kt_addr(&env.rem, 0), rk),
		kt_wr(1, KINET_WR_RDMA_WRITE, KINET_SEND_SIGNALED, &s1, 1, kt_addr(&env.rem, 128), rk),
		kt_wr(2, KINET_WR_RDMA_WRITE, 0, &sb, 1, kt_addr(&env.rem, 1024), rk),
		kt_wr(3, KINET_WR_RDMA_WRITE, KINET_SEND_SIGNALED, &s0, 1, kt_addr(&env.rem, 2048), rk),
		kt_wr(4, KINET_WR_RDMA_READ, KINET_SEND_SIGNALED, &s0, 1, kt_addr(&env.rem, 2048), rk),
		kt_wr(5, KINET_WR_NOP, KINET_SEND_SIGNALED, NULL, 0, 0, 0),
	};
	int bad = -1;
	uint8_t before[256];
	memcpy(before, env.loc.p, 256);
	KT_OK(kinet_qp_post_send(env.p.qp[0], w, 6, &bad));
	KT_CHECK_EQ(kt_poll_n(env.p.cq[0], 5, wc, KT_DEADLINE_MS), 5);
	KT_OK(kt_wc_expect(&wc[0], 1, 0));
	KT_OK(kt_wc_expect(&wc[1], 2, KINET_SYND_LOCAL_PROT_ERR));
	KT_OK(kt_wc_expect(&wc[2], 3, KINET_SYND_WR_FLUSH_ERR));
	KT_OK(kt_wc_expect(&wc[3], 4, KINET_SYND_WR_FLUSH_ERR));
	KT_OK(kt_wc_expect(&wc[4], 5, KINET_SYND_WR_FLUSH_ERR));
	KT_CHECK(memcmp(env.rem.p, env.loc.p, 256) == 0);
	KT_CHECK(kt_mem_is(env.rem.p + 256, 0x22, LEN - 256));
	KT_CHECK(memcmp(env.loc.p, before, 256) == 0);
	KT_CHECK_EQ(kt_poll_for(env.p.cq[0], 10, 1, wc), 0);
	env_close(&env);
}

/* An error on one QP leaves other QPs of the context alone. */
KT_TEST(error_is_per_qp)
{
	struct env env;
	struct kt_pair other;
	struct kinet_wc wc;

	env_open(&env);
	KT_CHECK(env.ok);
	KT_OK(kt_pair_create(&other, env.ctx, env.ctx, NULL));
	struct kinet_sge s = kt_sge(&env.loc, 0, 64);
	struct kinet_send_wr w = kt_wr(1, KINET_WR_RDMA_WRITE, 0, &s, 1, kt_addr(&env.rem, 0), 0x12345600u);
	KT_OK(kt_post(env.p.qp[0], &w));
	KT_OK(kt_poll1(env.p.cq[0], &wc));
	KT_OK(kt_wc_expect(&wc, 1, KINET_SYND_REMOTE_ACCESS_ERR));
	KT_CHECK_EQ(kinet_qp_get_state(other.qp[0]), KINET_QPS_RTS);
	KT_CHECK_EQ(kinet_qp_get_state(other.qp[1]), KINET_QPS_RTS);
	w = kt_wr(2, KINET_WR_RDMA_WRITE, KINET_SEND_SIGNALED, &s, 1, kt_addr(&env.rem, 0),
		  kt_rkey(&env.rem));
	KT_OK(kt_post(other.qp[0], &w));
	KT_OK(kt_poll1(other.cq[0], &wc));
	KT_OK(kt_wc_expect(&wc, 2, 0));
	KT_CHECK(kt_mem_is(env.rem.p, 0x11, 64));
	kt_pair_destroy(&other);
	env_close(&env);
}

/* ---- QP state ---- */

KT_TEST(post_on_reset_qp)
{
	struct kinet_ctx *ctx;
	struct kt_pair p;
	struct kinet_wc wc;

	KT_OK(kt_ctx_open(1, &ctx));
	KT_OK(kt_pair_create_unconnected(&p, ctx, ctx, NULL));
	KT_CHECK_EQ(kinet_qp_get_state(p.qp[0]), KINET_QPS_RESET);
	struct kinet_send_wr w = kt_wr(1, KINET_WR_NOP, KINET_SEND_SIGNALED, NULL, 0, 0, 0);
	KT_CHECK_EQ(kt_post(p.qp[0], &w), -EINVAL);
	KT_CHECK_EQ(kt_poll_for(p.cq[0], 20, 1, &wc), 0);
	/* Connecting afterwards works, and nothing stale runs. */
	KT_OK(kt_pair_connect(&p));
	KT_CHECK_EQ(kinet_qp_get_state(p.qp[0]), KINET_QPS_RTS);
	w.wr_id = 2;
	KT_OK(kt_post(p.qp[0], &w));
	KT_OK(kt_poll1(p.cq[0], &wc));
	KT_OK(kt_wc_expect(&wc, 2, 0));
	KT_CHECK_EQ(kt_poll_for(p.cq[0], 10, 1, &wc), 0);
	kt_pair_destroy(&p);
	kinet_ctx_close(ctx);
}

KT_TEST(set_error_flushes)
{
	struct env env;
	struct kinet_wc wc[4];

	env_open(&env);
	KT_CHECK(env.ok);
	KT_OK(kinet_qp_set_error(env.p.qp[0]));
	KT_CHECK_EQ(kinet_qp_get_state(env.p.qp[0]), KINET_QPS_ERR);
	struct kinet_sge s = kt_sge(&env.loc, 0, 64);
	struct kinet_send_wr w[3] = {
		kt_wr(1, KINET_WR_RDMA_WRITE, KINET_SEND_SIGNALED, &s, 1, kt_addr(&env.rem, 0),
		      kt_rkey(&env.rem)),
		kt_wr(2, KINET_WR_RDMA_READ, KINET_SEND_SIGNALED, &s, 1, kt_addr(&env.rem, 0),
		      kt_rkey(&env.rem)),
		kt_wr(3, KINET_WR_NOP, KINET_SEND_SIGNALED, NULL, 0, 0, 0),
	};
	int bad = -1;
	KT_OK(kinet_qp_post_send(env.p.qp[0], w, 3, &bad));
	KT_CHECK_EQ(kt_poll_n(env.p.cq[0], 3, wc, KT_DEADLINE_MS), 3);
	for (int i = 0; i < 3; i++)
		KT_OK(kt_wc_expect(&wc[i], (uint64_t)i + 1, KINET_SYND_WR_FLUSH_ERR));
	KT_CHECK(kt_mem_is(env.rem.p, 0x22, LEN));
	KT_CHECK(kt_mem_is(env.loc.p, 0x11, LEN));
	/* The peer is unaffected by our local transition. */
	KT_CHECK_EQ(kinet_qp_get_state(env.p.qp[1]), KINET_QPS_RTS);
	env_close(&env);
}

/* Work queued behind a paused engine is flushed by set_error. */
KT_TEST(set_error_flushes_outstanding)
{
	struct env env;
	struct kinet_wc wc[8];

	env_open(&env);
	KT_CHECK(env.ok);
	KT_PAUSE(env.ctx);
	struct kinet_sge s = kt_sge(&env.loc, 0, 64);
	for (int i = 0; i < 4; i++) {
		struct kinet_send_wr w = kt_wr((uint64_t)i, KINET_WR_RDMA_WRITE, KINET_SEND_SIGNALED, &s, 1,
					       kt_addr(&env.rem, 0), kt_rkey(&env.rem));
		KT_OK(kt_post(env.p.qp[0], &w));
	}
	KT_OK(kinet_qp_set_error(env.p.qp[0]));
	KT_OK(kinet_ctx_resume(env.ctx));
	KT_CHECK_EQ(kt_poll_n(env.p.cq[0], 4, wc, KT_DEADLINE_MS), 4);
	for (int i = 0; i < 4; i++)
		KT_OK(kt_wc_expect(&wc[i], (uint64_t)i, KINET_SYND_WR_FLUSH_ERR));
	KT_CHECK(kt_mem_is(env.rem.p, 0x22, LEN));
	env_close(&env);
}

KT_MAIN(bad_lkey_write, bad_lkey_read, bad_lkey_send, local_past_end, local_before_start, local_read_past_end,
	local_wraps, bad_rkey_write, bad_rkey_read, bad_rkey_atomic, bad_rkey_write_imm, remote_past_end,
	remote_before_start, remote_read_past_end, remote_wraps, remote_atomic_past_end, misaligned_atomic,
	misaligned_cas, read_into_readonly, atomic_result_into_readonly, missing_remote_write,
	missing_remote_read, missing_remote_atomic, deregistered_keys, stale_key_does_not_alias,
	error_mid_batch, error_is_per_qp, post_on_reset_qp, set_error_flushes, set_error_flushes_outstanding)
