/*
 * Each doorbell mode (CPU-assisted, regular, BlueFlame) with host posting:
 * writes, reads and atomics complete with the right data, and the QP
 * reports the mode it was created with.
 */
#include "kt_host.h"

static void run_mode(enum kinet_db_mode mode, int engine_threads)
{
	struct kinet_ctx *ctx;
	struct kt_pair p;
	struct kt_pair_opts o;
	struct kt_buf loc, rem;
	struct kinet_wc wc[8];

	KT_OK(kt_ctx_open(engine_threads, &ctx));
	kt_pair_opts_init(&o);
	o.db_mode = mode;
	o.sq_depth = 32;
	KT_OK(kt_pair_create(&p, ctx, ctx, &o));
	if (mode != KINET_DB_AUTO) {
		KT_CHECK_EQ(kinet_qp_db_mode(p.qp[0]), mode);
		KT_CHECK_EQ(kinet_qp_db_mode(p.qp[1]), mode);
	} else {
		KT_CHECK(kinet_qp_db_mode(p.qp[0]) != KINET_DB_AUTO);
	}
	KT_OK(kt_buf_alloc(ctx, &loc, 65536, KT_ACC_ALL, 0));
	KT_OK(kt_buf_alloc(ctx, &rem, 65536, KT_ACC_ALL, 0));
	uint64_t *ctr = (uint64_t *)(void *)(rem.p + 60000);
	for (int r = 0; r < 300; r++) {
		/* Batches of 1..6, mixing single- and multi-BB WQEs (inline). */
		int n = 1 + r % 6;
		struct kinet_send_wr w[6];
		struct kinet_sge s[6];
		uint8_t inl[6][100];
		for (int i = 0; i < n; i++) {
			uint32_t len = 16 + (uint32_t)(r * 7 + i) % 80;
			size_t off = (size_t)i * 128;
			kt_fill_pattern(loc.p + off, len, (uint32_t)(r * 8 + i));
			switch (i % 3) {
			case 0:
				s[i] = kt_sge(&loc, off, len);
				w[i] = kt_wr((uint64_t)i, KINET_WR_RDMA_WRITE, 0, &s[i], 1,
					     kt_addr(&rem, off), kt_rkey(&rem));
				break;
			case 1:
				memcpy(inl[i], loc.p + off, len);
				s[i] = (struct kinet_sge){.addr = (uint64_t)(uintptr_t)inl[i], .length = len};
				w[i] = kt_wr((uint64_t)i, KINET_WR_RDMA_WRITE, KINET_SEND_INLINE, &s[i], 1,
					     kt_addr(&rem, off), kt_rkey(&rem));
				break;
			default:
				s[i] = kt_sge(&loc, 32768 + off, 8);
				w[i] = kt_wr((uint64_t)i, KINET_WR_ATOMIC_FETCH_AND_ADD, 0, &s[i], 1,
					     kt_addr(&rem, 60000), kt_rkey(&rem));
				w[i].compare_add = 1;
				break;
			}
		}
		w[n - 1].send_flags |= KINET_SEND_SIGNALED;
		int bad = -1;
		uint64_t before = *ctr;
		KT_OK(kinet_qp_post_send(p.qp[0], w, n, &bad));
		KT_OK(kt_poll1(p.cq[0], wc));
		KT_OK(kt_wc_expect(wc, (uint64_t)(n - 1), 0));
		int fas = 0;
		for (int i = 0; i < n; i++) {
			size_t off = (size_t)i * 128;
			uint32_t len = 16 + (uint32_t)(r * 7 + i) % 80;
			if (i % 3 == 2) {
				uint64_t old;
				memcpy(&old, loc.p + 32768 + off, 8);
				KT_CHECK_EQ(old, before + (uint64_t)fas);
				fas++;
			} else {
				KT_CHECK(memcmp(rem.p + off, loc.p + off, len) == 0);
			}
		}
		KT_CHECK_EQ(*ctr, before + (uint64_t)fas);
	}
	/* A read back, and a send with a receive, complete the set. */
	struct kinet_sge rs = kt_sge(&loc, 40000, 1000);
	struct kinet_send_wr rw =
		kt_wr(50, KINET_WR_RDMA_READ, KINET_SEND_SIGNALED, &rs, 1, kt_addr(&rem, 0), kt_rkey(&rem));
	KT_OK(kt_post(p.qp[0], &rw));
	KT_OK(kt_poll1(p.cq[0], wc));
	KT_OK(kt_wc_expect(wc, 50, 0));
	KT_CHECK(memcmp(loc.p + 40000, rem.p, 1000) == 0);
	struct kinet_sge recv = kt_sge(&rem, 50000, 256);
	KT_OK(kt_post_recv(p.qp[1], 60, &recv, 1));
	struct kinet_sge ss = kt_sge(&loc, 0, 200);
	struct kinet_send_wr sw = kt_wr(61, KINET_WR_SEND, KINET_SEND_SIGNALED, &ss, 1, 0, 0);
	KT_OK(kt_post(p.qp[0], &sw));
	KT_OK(kt_poll1(p.cq[0], wc));
	KT_OK(kt_wc_expect(wc, 61, 0));
	KT_OK(kt_poll1(p.cq[1], wc));
	KT_OK(kt_wc_expect(wc, 60, 0));
	KT_CHECK(memcmp(rem.p + 50000, loc.p, 200) == 0);
	KT_CHECK(kt_buf_guards_ok(&rem));
	kt_buf_free(&loc);
	kt_buf_free(&rem);
	kt_pair_destroy(&p);
	kinet_ctx_close(ctx);
}

KT_TEST(db_cpu)
{
	run_mode(KINET_DB_CPU, 1);
}

KT_TEST(db_gpu)
{
	run_mode(KINET_DB_GPU, 1);
}

KT_TEST(db_bf)
{
	run_mode(KINET_DB_BF, 1);
}

KT_TEST(db_auto)
{
	run_mode(KINET_DB_AUTO, 1);
}

KT_TEST(db_modes_four_engines)
{
	run_mode(KINET_DB_CPU, 4);
	run_mode(KINET_DB_GPU, 4);
	run_mode(KINET_DB_BF, 4);
}

/* Two QPs of different modes talking to each other. */
KT_TEST(mixed_modes)
{
	struct kinet_ctx *ctx;
	struct kinet_cq *cq;
	struct kinet_qp *qp[2];
	struct kinet_qp_info info[2];
	struct kt_buf buf;
	struct kinet_wc wc;
	const enum kinet_db_mode modes[2] = {KINET_DB_BF, KINET_DB_CPU};

	KT_OK(kt_ctx_open(1, &ctx));
	struct kinet_cq_attr ca = {.depth = 64};
	KT_OK(kinet_cq_create(ctx, &ca, &cq));
	for (int i = 0; i < 2; i++) {
		struct kinet_qp_attr a;
		kinet_qp_attr_init(&a);
		a.send_cq = cq;
		a.recv_cq = cq;
		a.sq_depth = 16;
		a.rq_depth = 16;
		a.max_recv_sge = 1;
		a.db_mode = modes[i];
		KT_OK(kinet_qp_create(ctx, &a, &qp[i]));
		KT_OK(kinet_qp_pack(qp[i], &info[i]));
	}
	KT_OK(kinet_qp_connect(qp[0], &info[1]));
	KT_OK(kinet_qp_connect(qp[1], &info[0]));
	KT_OK(kt_buf_alloc(ctx, &buf, 4096, KT_ACC_ALL, 0));
	for (int i = 0; i < 2; i++) {
		buf.p[i * 1024] = (uint8_t)(0x40 + i);
		struct kinet_sge s = kt_sge(&buf, (size_t)i * 1024, 16);
		struct kinet_send_wr w = kt_wr((uint64_t)i, KINET_WR_RDMA_WRITE, KINET_SEND_SIGNALED, &s, 1,
					       kt_addr(&buf, 2048 + (size_t)i * 16), kt_rkey(&buf));
		KT_OK(kt_post(qp[i], &w));
		KT_OK(kt_poll1(cq, &wc));
		KT_OK(kt_wc_expect(&wc, (uint64_t)i, 0));
		KT_CHECK_EQ(wc.qp_num, kinet_qp_num(qp[i]));
		KT_CHECK_EQ(buf.p[2048 + i * 16], 0x40 + i);
	}
	KT_OK(kinet_qp_destroy(qp[0]));
	KT_OK(kinet_qp_destroy(qp[1]));
	KT_OK(kinet_cq_destroy(cq));
	kt_buf_free(&buf);
	kinet_ctx_close(ctx);
}

KT_MAIN(db_cpu, db_gpu, db_bf, db_auto, db_modes_four_engines, mixed_modes)
