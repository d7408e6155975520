/*
 * Completion queues: depth rounding, the state of a fresh ring, CQ numbers,
 * wrap-around (the owner bit flips each pass), a CQ shared by several QPs
 * and by send and receive, overrun and overrun ignored.
 */
#include "kt_host.h"

#include "internal.h"

KT_TEST(depth_rounding)
{
	struct kinet_ctx *ctx;
	struct kinet_cq *cq;
	static const uint32_t in[] = {1, 2, 3, 10, 16, 17, 1000};

	KT_OK(kt_ctx_open(1, &ctx));
	for (unsigned i = 0; i < sizeof(in) / sizeof(in[0]); i++) {
		struct kinet_cq_attr a = {.depth = in[i]};
		KT_OK(kinet_cq_create(ctx, &a, &cq));
		uint32_t d = kinet_cq_depth(cq);
		KT_CHECK(d >= in[i]);
		KT_CHECK((d & (d - 1)) == 0);
		KT_CHECK(d < 2 * in[i] || d <= 4);
		KT_OK(kinet_cq_destroy(cq));
	}
	kinet_ctx_close(ctx);
}

/* A fresh ring holds op_own 0xf1 (INVALID, owner 1) in every slot, as
 * ConnectX drivers initialise it: neither kinet's pollers nor one that looks
 * only at the owner bit (GPUNetIO's sm_90 path) take a slot of the first
 * pass for a completion. */
KT_TEST(fresh_ring)
{
	struct kinet_ctx *ctx;
	struct kinet_cq *cq;
	struct kinet_wc wc;
	struct kinet_cq_attr a = {.depth = 64};

	KT_OK(kt_ctx_open(1, &ctx));
	KT_OK(kinet_cq_create(ctx, &a, &cq));
	for (uint32_t i = 0; i < cq->depth; i++) {
		uint8_t op_own = cq->ring[i].op_own;
		KT_CHECK_EQ(op_own, 0xf1);
		KT_CHECK(!kinet_cqe_ready(&cq->ring[i], i, cq->log_depth));
		KT_CHECK((op_own & 1) != kinet_cqe_sw_owner(i, cq->log_depth));
	}
	KT_CHECK_EQ(kinet_cq_poll(cq, 1, &wc), 0);
	KT_OK(kinet_cq_destroy(cq));
	kinet_ctx_close(ctx);
}

/* Numbers are 24-bit, non-zero and differ between the CQs of a context. */
KT_TEST(cq_numbers)
{
	struct kinet_ctx *ctx;
	struct kinet_cq *cq[8];

	KT_OK(kt_ctx_open(1, &ctx));
	for (int i = 0; i < 8; i++) {
		struct kinet_cq_attr a = {.depth = 4, .flags = i & 1 ? KINET_CQ_IGNORE_OVERRUN : 0};
		KT_OK(kinet_cq_create(ctx, &a, &cq[i]));
		uint32_t n = kinet_cq_num(cq[i]);
		KT_CHECK(n != 0 && n <= 0xffffff);
		for (int j = 0; j < i; j++)
			KT_CHECK(kinet_cq_num(cq[j]) != n);
	}
	KT_CHECK_EQ(kinet_cq_num(NULL), 0);
	struct kinet_cq *bad = NULL;
	struct kinet_cq_attr a = {.depth = 4, .flags = 1u << 7};
	KT_CHECK_EQ(kinet_cq_create(ctx, &a, &bad), -EINVAL);
	KT_CHECK(bad == NULL);
	for (int i = 0; i < 8; i++)
		KT_OK(kinet_cq_destroy(cq[i]));
	kinet_ctx_close(ctx);
}

/* 10000 signaled WQEs through a CQ of 16, polled in batches of at most 8:
 * the ring wraps 625 times, every completion arrives once, in order. */
static void wrap(enum kinet_wr_opcode op, int total)
{
	struct kinet_ctx *ctx;
	struct kt_pair p;
	struct kt_pair_opts o;
	struct kt_buf loc, rem;
	struct kinet_wc wc[8];

	KT_OK(kt_ctx_open(1, &ctx));
	kt_pair_opts_init(&o);
	o.cq_depth = 16;
	o.sq_depth = 16;
	KT_OK(kt_pair_create(&p, ctx, ctx, &o));
	KT_CHECK_EQ(kinet_cq_depth(p.cq[0]), 16);
	KT_OK(kt_buf_alloc(ctx, &loc, 8 * 64, KT_ACC_ALL, 0));
	KT_OK(kt_buf_alloc(ctx, &rem, 8 * 64, KT_ACC_ALL, 0));
	uint64_t next = 0, done = 0;
	unsigned batch = 1;
	while (done < (uint64_t)total) {
		struct kinet_send_wr w[8];
		struct kinet_sge s[8];
		unsigned n = batch;
		if (n > (uint64_t)total - next)
			n = (unsigned)((uint64_t)total - next);
		for (unsigned i = 0; i < n; i++) {
			uint64_t id = next + i;
			memcpy(loc.p + i * 64, &id, 8);
			s[i] = kt_sge(&loc, i * 64, 64);
			w[i] = kt_wr(id, op, KINET_SEND_SIGNALED, op == KINET_WR_NOP ? NULL : &s[i],
				     op == KINET_WR_NOP ? 0 : 1, kt_addr(&rem, i * 64), kt_rkey(&rem));
		}
		int bad = -1;
		KT_OK(kinet_qp_post_send(p.qp[0], w, (int)n, &bad));
		next += n;
		KT_CHECK_EQ(kt_poll_n(p.cq[0], (int)n, wc, KT_DEADLINE_MS), (int)n);
		for (unsigned i = 0; i < n; i++) {
			KT_OK(kt_wc_expect(&wc[i], done + i, 0));
			KT_CHECK_EQ(wc[i].qp_num, kinet_qp_num(p.qp[0]));
			if (op == KINET_WR_RDMA_WRITE) {
				uint64_t got;
				memcpy(&got, rem.p + i * 64, 8);
				KT_CHECK_EQ(got, done + i);
			}
		}
		done += n;
		batch = batch % 8 + 1;
	}
	KT_CHECK_EQ(kinet_qp_get_state(p.qp[0]), KINET_QPS_RTS);
	KT_CHECK_EQ(kt_poll_for(p.cq[0], 10, 8, wc), 0);
	kt_buf_free(&loc);
	kt_buf_free(&rem);
	kt_pair_destroy(&p);
	kinet_ctx_close(ctx);
}

KT_TEST(wrap_nop)
{
	wrap(KINET_WR_NOP, 10000);
}

KT_TEST(wrap_write)
{
	wrap(KINET_WR_RDMA_WRITE, 10000);
}

/* Unsignaled work between signaled WQEs: only the signaled ones complete,
 * and the send queue (16 BBs) is recycled from them. */
KT_TEST(wrap_mostly_unsignaled)
{
	struct kinet_ctx *ctx;
	struct kt_pair p;
	struct kt_pair_opts o;
	struct kinet_wc wc;

	KT_OK(kt_ctx_open(1, &ctx));
	kt_pair_opts_init(&o);
	o.cq_depth = 4;
	o.sq_depth = 16;
	KT_OK(kt_pair_create(&p, ctx, ctx, &o));
	for (int r = 0; r < 2000; r++) {
		struct kinet_send_wr w[8];
		for (int i = 0; i < 8; i++)
			w[i] = kt_wr((uint64_t)(r * 8 + i), KINET_WR_NOP, i == 7 ? KINET_SEND_SIGNALED : 0,
				     NULL, 0, 0, 0);
		int bad = -1;
		KT_OK(kinet_qp_post_send(p.qp[0], w, 8, &bad));
		KT_OK(kt_poll1(p.cq[0], &wc));
		KT_OK(kt_wc_expect(&wc, (uint64_t)(r * 8 + 7), 0));
	}
	KT_CHECK_EQ(kt_poll_for(p.cq[0], 10, 1, &wc), 0);
	kt_pair_destroy(&p);
	kinet_ctx_close(ctx);
}

/* One CQ for the send and receive side of two QPs. */
KT_TEST(shared_cq)
{
	struct kinet_ctx *ctx;
	struct kinet_cq *cq;
	struct kinet_qp *qp[2];
	struct kinet_qp_info info[2];
	struct kt_buf buf;
	struct kinet_wc wc[8];

	KT_OK(kt_ctx_open(1, &ctx));
	struct kinet_cq_attr ca = {.depth = 64};
	KT_OK(kinet_cq_create(ctx, &ca, &cq));
	for (int i = 0; i < 2; i++) {
		struct kinet_qp_attr qa;
		kinet_qp_attr_init(&qa);
		qa.send_cq = cq;
		qa.recv_cq = cq;
		qa.sq_depth = 16;
		qa.rq_depth = 16;
		qa.max_recv_sge = 1;
		KT_OK(kinet_qp_create(ctx, &qa, &qp[i]));
		KT_OK(kinet_qp_pack(qp[i], &info[i]));
	}
	KT_CHECK(kinet_qp_num(qp[0]) != kinet_qp_num(qp[1]));
	KT_OK(kinet_qp_connect(qp[0], &info[1]));
	KT_OK(kinet_qp_connect(qp[1], &info[0]));
	KT_OK(kt_buf_alloc(ctx, &buf, 4096, KT_ACC_ALL, 0));
	struct kinet_sge r0 = kt_sge(&buf, 0, 64), r1 = kt_sge(&buf, 64, 64);
	KT_OK(kt_post_recv(qp[0], 10, &r0, 1));
	KT_OK(kt_post_recv(qp[1], 11, &r1, 1));
	struct kinet_sge s = kt_sge(&buf, 1024, 16);
	struct kinet_send_wr w = kt_wr(20, KINET_WR_SEND, KINET_SEND_SIGNALED, &s, 1, 0, 0);
	KT_OK(kt_post(qp[0], &w));
	w.wr_id = 21;
	KT_OK(kt_post(qp[1], &w));
	KT_CHECK_EQ(kt_poll_n(cq, 4, wc, KT_DEADLINE_MS), 4);
	unsigned seen = 0;
	for (int i = 0; i < 4; i++) {
		KT_CHECK_EQ(wc[i].status, 0);
		switch (wc[i].wr_id) {
		case 10: /* qp0 received from qp1 */
			KT_CHECK_EQ(wc[i].opcode, KINET_WC_RECV);
			KT_CHECK_EQ(wc[i].qp_num, kinet_qp_num(qp[0]));
			seen |= 1;
			break;
		case 11:
			KT_CHECK_EQ(wc[i].opcode, KINET_WC_RECV);
			KT_CHECK_EQ(wc[i].qp_num, kinet_qp_num(qp[1]));
			seen |= 2;
			break;
		case 20:
			KT_CHECK_EQ(wc[i].opcode, KINET_WC_SEND);
			KT_CHECK_EQ(wc[i].qp_num, kinet_qp_num(qp[0]));
			seen |= 4;
			break;
		case 21:
			KT_CHECK_EQ(wc[i].opcode, KINET_WC_SEND);
			KT_CHECK_EQ(wc[i].qp_num, kinet_qp_num(qp[1]));
			seen |= 8;
			break;
		default:
			KT_CHECK(!"unexpected wr_id");
		}
	}
	KT_CHECK_EQ(seen, 15);
	KT_OK(kinet_qp_destroy(qp[0]));
	KT_OK(kinet_qp_destroy(qp[1]));
	KT_OK(kinet_cq_destroy(cq));
	kt_buf_free(&buf);
	kinet_ctx_close(ctx);
}

/* A CQ of 4 keeps its last slot for the overrun report: 8 signaled NOPs
 * without polling give 3 completions, then the overrun CQE, the QP in
 * error, and -EOVERFLOW from the poll once the entries are consumed. */
KT_TEST(overrun)
{
	struct kinet_ctx *ctx;
	struct kt_pair p;
	struct kt_pair_opts o;
	struct kinet_wc wc[8];

	KT_OK(kt_ctx_open(1, &ctx));
	kt_pair_opts_init(&o);
	o.cq_depth = 4;
	o.sq_depth = 16;
	KT_OK(kt_pair_create(&p, ctx, ctx, &o));
	KT_CHECK_EQ(kinet_cq_depth(p.cq[0]), 4);
	struct kinet_send_wr w[8];
	for (int i = 0; i < 8; i++)
		w[i] = kt_wr((uint64_t)i, KINET_WR_NOP, KINET_SEND_SIGNALED, NULL, 0, 0, 0);
	int bad = -1;
	KT_OK(kinet_qp_post_send(p.qp[0], w, 8, &bad));
	KT_CHECK(kt_wait_state(p.qp[0], KINET_QPS_ERR, KT_DEADLINE_MS));
	kt_sleep_ms(20);
	int n = kinet_cq_poll(p.cq[0], 8, wc);
	KT_CHECK_EQ(n, 4);
	for (int i = 0; i < 3; i++)
		KT_OK(kt_wc_expect(&wc[i], (uint64_t)i, 0));
	KT_CHECK_EQ(wc[3].status, KINET_SYND_LOCAL_QP_OP_ERR);
	KT_CHECK_EQ(wc[3].vendor_err, KINET_VENDOR_SYND_CQ_OVERRUN);
	KT_CHECK_EQ(kinet_cq_poll(p.cq[0], 8, wc), -EOVERFLOW);
	KT_CHECK_EQ(kinet_cq_poll(p.cq[0], 8, wc), -EOVERFLOW);
	/* The other side's CQ is unaffected, and the engine lives on. */
	KT_CHECK_EQ(kinet_cq_poll(p.cq[1], 8, wc), 0);
	KT_OK(kt_smoke(ctx));
	kt_pair_destroy(&p);
	kinet_ctx_close(ctx);
}

/* Overrun by responder CQEs: receives complete into a CQ nobody polls. */
KT_TEST(overrun_responder)
{
	struct kinet_ctx *ctx;
	struct kt_pair p;
	struct kt_pair_opts o;
	struct kt_buf buf;
	struct kinet_wc wc[16];

	KT_OK(kt_ctx_open(1, &ctx));
	kt_pair_opts_init(&o);
	o.cq_depth = 4;
	o.sq_depth = 16;
	o.rq_depth = 16;
	o.rnr_timeout_ms = 50;
	KT_OK(kt_pair_create(&p, ctx, ctx, &o));
	KT_OK(kt_buf_alloc(ctx, &buf, 4096, KT_ACC_ALL, 0));
	for (int i = 0; i < 8; i++) {
		struct kinet_sge r = kt_sge(&buf, (size_t)i * 64, 64);
		KT_OK(kt_post_recv(p.qp[1], 100 + (uint64_t)i, &r, 1));
	}
	/* Sends are unsignaled so the requester CQ never fills. */
	for (int i = 0; i < 8; i++) {
		struct kinet_sge s = kt_sge(&buf, 2048, 8);
		struct kinet_send_wr w = kt_wr((uint64_t)i, KINET_WR_SEND, 0, &s, 1, 0, 0);
		KT_OK(kt_post(p.qp[0], &w));
	}
	KT_CHECK(kt_wait_state(p.qp[1], KINET_QPS_ERR, KT_DEADLINE_MS));
	kt_sleep_ms(20);
	int n = kinet_cq_poll(p.cq[1], 16, wc);
	KT_CHECK_EQ(n, 4);
	for (int i = 0; i < 3; i++)
		KT_OK(kt_wc_expect(&wc[i], 100 + (uint64_t)i, 0));
	KT_CHECK_EQ(wc[3].status, KINET_SYND_LOCAL_QP_OP_ERR);
	KT_CHECK_EQ(wc[3].vendor_err, KINET_VENDOR_SYND_CQ_OVERRUN);
	KT_CHECK_EQ(kinet_cq_poll(p.cq[1], 16, wc), -EOVERFLOW);
	KT_OK(kt_smoke(ctx));
	kt_buf_free(&buf);
	kt_pair_destroy(&p);
	kinet_ctx_close(ctx);
}

/* KINET_CQ_IGNORE_OVERRUN: 40 signaled NOPs into a CQ of 4 that nobody
 * polls (the consumer index stays 0): no overrun report, the QP stays in
 * RTS, and the ring holds the last four CQEs with their owner bits, as a
 * consumer that knows which index it waits for (GPUNetIO) reads them. */
KT_TEST(overrun_ignored)
{
	struct kinet_ctx *ctx;
	struct kinet_cq *cq;
	struct kinet_qp *qp;
	struct kinet_qp_info info;
	struct kinet_error err;
	struct kinet_cq_attr ca = {.depth = 4, .flags = KINET_CQ_IGNORE_OVERRUN};
	struct kinet_qp_attr qa;
	enum { N = 40 };

	KT_OK(kt_ctx_open(1, &ctx));
	KT_OK(kinet_cq_create(ctx, &ca, &cq));
	kinet_qp_attr_init(&qa);
	qa.send_cq = cq;
	qa.sq_depth = 64;
	KT_OK(kinet_qp_create(ctx, &qa, &qp));
	KT_OK(kinet_qp_pack(qp, &info));
	KT_OK(kinet_qp_connect(qp, &info));
	struct kinet_send_wr w[N];
	for (int i = 0; i < N; i++)
		w[i] = kt_wr((uint64_t)i, KINET_WR_NOP, KINET_SEND_SIGNALED, NULL, 0, 0, 0);
	int bad = -1;
	KT_OK(kinet_qp_post_send(qp, w, N, &bad));
	uint64_t deadline = kt_now_ms() + KT_DEADLINE_MS;
	while (__atomic_load_n(&cq->pi, __ATOMIC_ACQUIRE) < N && kt_now_ms() < deadline)
		kt_sleep_ms(1);
	KT_CHECK_EQ(__atomic_load_n(&cq->pi, __ATOMIC_ACQUIRE), N);
	for (uint64_t i = N - 4; i < N; i++) {
		const struct kinet_cqe64 *cqe = &cq->ring[i & 3];
		KT_CHECK(kinet_cqe_ready(cqe, i, cq->log_depth));
		KT_CHECK_EQ(kinet_cqe_opcode(cqe), KINET_CQE_REQ);
		KT_CHECK_EQ(kinet_be16(cqe->wqe_counter), i);
	}
	kt_sleep_ms(20);
	KT_CHECK_EQ(__atomic_load_n(&cq->pi, __ATOMIC_ACQUIRE), N);
	KT_CHECK_EQ(kinet_qp_get_state(qp), KINET_QPS_RTS);
	KT_CHECK(!atomic_load(&cq->overrun));
	KT_OK(kinet_ctx_last_error(ctx, &err));
	KT_CHECK_EQ(err.status, 0);
	KT_OK(kinet_qp_destroy(qp));
	KT_OK(kinet_cq_destroy(cq));
	kinet_ctx_close(ctx);
}

KT_MAIN(depth_rounding, fresh_ring, cq_numbers, wrap_nop, wrap_write, wrap_mostly_unsignaled, shared_cq,
	overrun, overrun_responder, overrun_ignored)
