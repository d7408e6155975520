/*
 * Shared receive queues: QPs sharing one SRQ (local, node and ofi
 * transports), RNR on an empty SRQ, a full SRQ, the outstanding count, a
 * WQE posted by hand in ConnectX's layout, destroy while used, immediates,
 * and two engine threads consuming from one SRQ.
 */
#include "kt_host.h"

#define MAXQ 4
#define SLOT 256 /* bytes of the target buffer per receive WQE */

/* n initiator QPs in ctx[0] (CQ icq[i]), each connected to a target QP in
 * ctx[1] (CQ tcq[i], receives from srq). */
struct env {
	struct kinet_ctx *ctx[2];
	struct kinet_srq *srq;
	int n;
	struct kinet_cq *icq[MAXQ], *tcq[MAXQ];
	struct kinet_qp *iqp[MAXQ], *tqp[MAXQ];
	struct kt_buf src, dst;
};

static int qp_make(struct kinet_ctx *ctx, struct kinet_srq *srq, uint32_t rnr_ms, struct kinet_cq **cq,
		   struct kinet_qp **qp)
{
	struct kinet_cq_attr ca;
	struct kinet_qp_attr qa;
	int rc;

	kinet_cq_attr_init(&ca);
	ca.depth = 512;
	if ((rc = kinet_cq_create(ctx, &ca, cq)))
		return rc;
	kinet_qp_attr_init(&qa);
	qa.send_cq = *cq;
	qa.recv_cq = srq ? *cq : NULL;
	qa.srq = srq;
	qa.sq_depth = 256;
	qa.timeout_ms = 2000 * kt_time_scale();
	qa.rnr_timeout_ms = rnr_ms;
	return kinet_qp_create(ctx, &qa, qp);
}

static int connect2(struct kinet_qp *a, struct kinet_qp *b)
{
	struct kinet_qp_info ia, ib;
	int rc;

	if ((rc = kinet_qp_pack(a, &ia)) || (rc = kinet_qp_pack(b, &ib)))
		return rc;
	if ((rc = kinet_qp_connect(a, &ib)))
		return rc;
	return kinet_qp_connect(b, &ia);
}

/* Adds initiator/target pair i. */
static int pair_add(struct env *e, int i, uint32_t rnr_ms)
{
	int rc;

	if ((rc = qp_make(e->ctx[0], NULL, rnr_ms, &e->icq[i], &e->iqp[i])) ||
	    (rc = qp_make(e->ctx[1], e->srq, rnr_ms, &e->tcq[i], &e->tqp[i])))
		return rc;
	return connect2(e->iqp[i], e->tqp[i]);
}

static void pair_drop(struct env *e, int i)
{
	if (e->iqp[i])
		kinet_qp_destroy(e->iqp[i]);
	if (e->tqp[i])
		kinet_qp_destroy(e->tqp[i]);
	if (e->icq[i])
		kinet_cq_destroy(e->icq[i]);
	if (e->tcq[i])
		kinet_cq_destroy(e->tcq[i]);
	e->iqp[i] = e->tqp[i] = NULL;
	e->icq[i] = e->tcq[i] = NULL;
}

/* two_ctx: initiators in a context of their own (the transport is then
 * $KINET_TRANSPORT's). */
static int env_open(struct env *e, int n, int threads, bool two_ctx, uint32_t depth, uint32_t rnr_ms)
{
	struct kinet_srq_attr sa;
	int rc;

	memset(e, 0, sizeof(*e));
	if ((rc = kt_ctx_open(threads, &e->ctx[1])))
		return rc;
	e->ctx[0] = e->ctx[1];
	if (two_ctx && (rc = kt_ctx_open(threads, &e->ctx[0])))
		return rc;
	kinet_srq_attr_init(&sa);
	sa.depth = depth;
	sa.max_sge = 2;
	if ((rc = kinet_srq_create(e->ctx[1], &sa, &e->srq)))
		return rc;
	e->n = n;
	for (int i = 0; i < n; i++)
		if ((rc = pair_add(e, i, rnr_ms)))
			return rc;
	if ((rc = kt_buf_alloc(e->ctx[0], &e->src, 4 * 65536, KT_ACC_ALL, 0x11)))
		return rc;
	return kt_buf_alloc(e->ctx[1], &e->dst, 4 * 65536, KT_ACC_ALL, 0x22);
}

static void env_close(struct env *e)
{
	kt_buf_free(&e->src);
	kt_buf_free(&e->dst);
	for (int i = 0; i < MAXQ; i++)
		pair_drop(e, i);
	if (e->srq)
		kinet_srq_destroy(e->srq);
	if (e->ctx[0] && e->ctx[0] != e->ctx[1])
		kinet_ctx_close(e->ctx[0]);
	if (e->ctx[1])
		kinet_ctx_close(e->ctx[1]);
}

/* Receive WQE `slot` of the target buffer (SLOT bytes, split over two
 * SGEs to check the scatter), wr_id 1000 + slot. */
static int post_slot(struct env *e, uint32_t slot)
{
	struct kinet_sge sg[2] = {kt_sge(&e->dst, (size_t)slot * SLOT, 16),
				  kt_sge(&e->dst, (size_t)slot * SLOT + 16, SLOT - 16)};
	struct kinet_recv_wr wr = {.wr_id = 1000 + slot, .sg_list = sg, .num_sge = 2};
	int bad = -1;

	return kinet_srq_post_recv(e->srq, &wr, 1, &bad);
}

/* A send of len bytes from initiator q, its source bytes tagged (q, k). */
static int send_tagged(struct env *e, int q, uint32_t k, uint32_t len, enum kinet_wr_opcode op, uint32_t imm)
{
	size_t off = ((size_t)q * 128 + k % 128) * SLOT;
	uint8_t *p = e->src.p + off;

	kt_fill_pattern(p, len, (uint32_t)q << 16 | k);
	p[0] = (uint8_t)q;
	p[1] = (uint8_t)k;
	struct kinet_sge s = kt_sge(&e->src, off, len);
	struct kinet_send_wr w = kt_wr((uint64_t)q << 32 | k, op, KINET_SEND_SIGNALED, &s, 1, 0, 0);
	w.imm_data = imm;
	return kt_post(e->iqp[q], &w);
}

/* The slot received the bytes of send (q, k) of len bytes. */
static bool slot_holds(struct env *e, uint32_t slot, int q, uint32_t k, uint32_t len)
{
	size_t off = ((size_t)q * 128 + k % 128) * SLOT;

	return !memcmp(e->dst.p + (size_t)slot * SLOT, e->src.p + off, len) &&
	       kt_mem_is(e->dst.p + (size_t)slot * SLOT + len, 0x22, SLOT - len);
}

static int target_index(const struct env *e, uint32_t qpn)
{
	for (int i = 0; i < e->n; i++)
		if (kinet_qp_num(e->tqp[i]) == qpn)
			return i;
	return -1;
}

/* Two (or more) QPs share one SRQ: every send lands in a WQE of it, once;
 * each target CQ gets its own QP's receives with the right wr_id. */
static void shared_by(bool two_ctx, const char *transport)
{
	enum { NQ = 2, PER = 6 };
	struct env e;
	struct kinet_wc wc[NQ * PER];
	bool seen[NQ * PER] = {0};
	int rc;

	if (transport)
		setenv("KINET_TRANSPORT", transport, 1);
	rc = env_open(&e, NQ, 1, two_ctx, 31, 2000);
	if (transport)
		unsetenv("KINET_TRANSPORT");
	if (rc && transport && !strcmp(transport, "ofi")) {
		env_close(&e);
		KT_SKIP("ofi transport unavailable here: %s", kinet_strerror(rc));
	}
	KT_OK(rc);
	for (uint32_t s = 0; s < NQ * PER; s++)
		KT_OK(post_slot(&e, s));
	KT_CHECK_EQ(kinet_srq_outstanding(e.srq), NQ * PER);
	/* Interleaved: QP 0 and QP 1 race for the SRQ's WQEs. */
	for (uint32_t k = 0; k < PER; k++)
		for (int q = 0; q < NQ; q++)
			KT_OK(send_tagged(&e, q, k, 8 + 24 * k + (uint32_t)q, KINET_WR_SEND, 0));
	for (int q = 0; q < NQ; q++) {
		KT_CHECK_EQ(kt_poll_n(e.icq[q], PER, wc, KT_DEADLINE_MS * kt_time_scale()), PER);
		for (uint32_t k = 0; k < PER; k++)
			KT_OK(kt_wc_expect(&wc[k], (uint64_t)q << 32 | k, 0));
	}
	for (int q = 0; q < NQ; q++) {
		uint32_t last = 0;

		KT_CHECK_EQ(kt_poll_n(e.tcq[q], PER, wc, KT_DEADLINE_MS * kt_time_scale()), PER);
		for (uint32_t k = 0; k < PER; k++) {
			uint32_t slot = (uint32_t)(wc[k].wr_id - 1000);

			KT_OK(kt_wc_expect(&wc[k], wc[k].wr_id, 0));
			KT_CHECK(wc[k].wr_id >= 1000 && slot < NQ * PER);
			KT_CHECK(!seen[slot]);
			seen[slot] = true;
			/* A fresh cyclic list is consumed in slot order. */
			KT_CHECK_EQ(wc[k].wqe_counter, slot);
			KT_CHECK(!k || slot > last);
			last = slot;
			KT_CHECK_EQ(wc[k].opcode, KINET_WC_RECV);
			KT_CHECK_EQ(wc[k].qp_num, kinet_qp_num(e.tqp[q]));
			KT_CHECK_EQ(target_index(&e, wc[k].qp_num), q);
			KT_CHECK_EQ(wc[k].byte_len, 8 + 24 * k + (uint32_t)q);
			KT_CHECK(slot_holds(&e, slot, q, k, wc[k].byte_len));
		}
		KT_CHECK_EQ(kt_poll_for(e.tcq[q], 5, 1, wc), 0);
	}
	KT_CHECK_EQ(kinet_srq_outstanding(e.srq), 0);
	KT_CHECK(kt_buf_guards_ok(&e.dst));
	env_close(&e);
}

KT_TEST(shared_local)
{
	shared_by(false, NULL);
}

KT_TEST(shared_node)
{
	KT_NEED_SOFT("node transport");
	shared_by(true, "node");
}

KT_TEST(shared_ofi)
{
	KT_NEED_SOFT("ofi transport");
	shared_by(true, "ofi");
}

/* Nothing in the SRQ: RNR retries, then RNR_RETRY_EXC; the target QP and
 * the SRQ stay usable, and a receive posted while a send waits ends its
 * wait. */
static void empty_by(bool two_ctx, const char *transport)
{
	struct env e;
	struct kinet_wc wc;
	int rc;

	if (transport)
		setenv("KINET_TRANSPORT", transport, 1);
	rc = env_open(&e, 1, 1, two_ctx, 15, 50);
	KT_OK(rc);
	uint64_t t0 = kt_now_ms();
	KT_OK(send_tagged(&e, 0, 0, 32, KINET_WR_SEND, 0));
	KT_OK(kt_poll1(e.icq[0], &wc));
	KT_OK(kt_wc_expect(&wc, 0, KINET_SYND_RNR_RETRY_EXC_ERR));
	KT_CHECK(kt_now_ms() - t0 >= 40);
	KT_CHECK(kt_wait_state(e.iqp[0], KINET_QPS_ERR, 1000));
	KT_CHECK_EQ(kt_poll_for(e.tcq[0], 10, 1, &wc), 0);
	KT_CHECK(kt_mem_is(e.dst.p, 0x22, e.dst.len));

	/* A new pair on the same SRQ, whose send waits for a receive. */
	KT_OK(pair_add(&e, 1, 5000));
	e.n = 2;
	KT_OK(send_tagged(&e, 1, 7, 40, KINET_WR_SEND, 0));
	KT_CHECK_EQ(kt_poll_for(e.icq[1], 30, 1, &wc), 0);
	KT_OK(post_slot(&e, 0));
	KT_OK(kt_poll1(e.icq[1], &wc));
	KT_OK(kt_wc_expect(&wc, (uint64_t)1 << 32 | 7, 0));
	KT_OK(kt_poll1(e.tcq[1], &wc));
	KT_OK(kt_wc_expect(&wc, 1000, 0));
	KT_CHECK_EQ(wc.byte_len, 40);
	KT_CHECK(slot_holds(&e, 0, 1, 7, 40));
	if (transport)
		unsetenv("KINET_TRANSPORT");
	env_close(&e);
}

KT_TEST(empty_rnr)
{
	empty_by(false, NULL);
}

KT_TEST(empty_rnr_node)
{
	KT_NEED_SOFT("node transport");
	empty_by(true, "node");
}

/* The SRQ holds depth WQEs (a power of two minus one); one more is
 * -ENOMEM, as a full receive queue; a polled completion frees a slot. */
KT_TEST(full)
{
	struct env e;
	struct kinet_wc wc;
	struct kinet_srq_rings r;

	KT_OK(env_open(&e, 1, 1, false, 7, 2000));
	KT_OK(kinet_srq_rings(e.srq, &r));
	KT_CHECK_EQ(r.depth, 8);
	KT_CHECK_EQ(r.stride, 64); /* next segment and two data segments, rounded up */
	for (uint32_t s = 0; s < 7; s++)
		KT_OK(post_slot(&e, s));
	KT_CHECK_EQ(post_slot(&e, 7), -ENOMEM);
	KT_CHECK_EQ(kinet_srq_outstanding(e.srq), 7);

	/* A batch stops at the first that does not fit. */
	KT_OK(send_tagged(&e, 0, 0, 16, KINET_WR_SEND, 0));
	KT_OK(kt_poll1(e.icq[0], &wc));
	KT_OK(kt_poll1(e.tcq[0], &wc));
	KT_OK(kt_wc_expect(&wc, 1000, 0));
	struct kinet_sge sg = kt_sge(&e.dst, 7 * SLOT, SLOT);
	struct kinet_recv_wr wr[2] = {{.wr_id = 1007, .sg_list = &sg, .num_sge = 1},
				      {.wr_id = 1008, .sg_list = &sg, .num_sge = 1}};
	int bad = -1;
	KT_CHECK_EQ(kinet_srq_post_recv(e.srq, wr, 2, &bad), -ENOMEM);
	KT_CHECK_EQ(bad, 1);
	/* Too many SGEs is -EINVAL, as for a QP's receive queue. */
	struct kinet_sge sg3[3] = {sg, sg, sg};
	struct kinet_recv_wr w3 = {.wr_id = 9, .sg_list = sg3, .num_sge = 3};
	KT_CHECK_EQ(kinet_srq_post_recv(e.srq, &w3, 1, &bad), -EINVAL);
	/* The batch's first went to the old tail (slot 7); the recycled slot
	 * 0 is the new tail, kept free, and is posted next. */
	for (uint32_t k = 1; k < 8; k++) {
		KT_OK(send_tagged(&e, 0, k, 16, KINET_WR_SEND, 0));
		KT_OK(kt_poll1(e.icq[0], &wc));
		KT_OK(kt_wc_expect(&wc, k, 0));
		KT_OK(kt_poll1(e.tcq[0], &wc));
		KT_OK(kt_wc_expect(&wc, 1000 + k, 0));
		KT_CHECK_EQ(wc.wqe_counter, k);
	}
	KT_OK(kinet_srq_post_recv(e.srq, &wr[1], 1, &bad));
	KT_OK(send_tagged(&e, 0, 8, 16, KINET_WR_SEND, 0));
	KT_OK(kt_poll1(e.icq[0], &wc));
	KT_OK(kt_poll1(e.tcq[0], &wc));
	KT_OK(kt_wc_expect(&wc, 1008, 0));
	KT_CHECK_EQ(wc.wqe_counter, 0);
	env_close(&e);
}

/* kinet_srq_outstanding counts down as sends consume WQEs. */
KT_TEST(outstanding)
{
	struct env e;
	struct kinet_wc wc;

	KT_OK(env_open(&e, 1, 1, false, 15, 2000));
	KT_CHECK_EQ(kinet_srq_outstanding(e.srq), 0);
	for (uint32_t s = 0; s < 5; s++)
		KT_OK(post_slot(&e, s));
	KT_CHECK_EQ(kinet_srq_outstanding(e.srq), 5);
	for (uint32_t k = 0; k < 5; k++) {
		KT_OK(send_tagged(&e, 0, k, 8, KINET_WR_SEND, 0));
		KT_OK(kt_poll1(e.tcq[0], &wc));
		KT_CHECK_EQ(kinet_srq_outstanding(e.srq), 4 - k);
		KT_OK(kt_poll1(e.icq[0], &wc));
	}
	env_close(&e);
}

/* A WQE written by hand in mlx5's SRQ layout (as rdma-core's provider
 * posts) and the big-endian count in the doorbell record: consumed. */
KT_TEST(hand_posted)
{
	struct env e;
	struct kinet_wc wc;
	struct kinet_srq_rings r;
	uint32_t idx;

	KT_OK(env_open(&e, 1, 1, false, 15, 2000));
	KT_OK(kinet_srq_rings(e.srq, &r));
	KT_CHECK_EQ(r.depth, 16);
	KT_CHECK(r.stride >= 32 && !(r.stride & (r.stride - 1)));
	KT_CHECK_EQ(r.head, 0);
	KT_CHECK_EQ(r.tail, 15);
	KT_CHECK_EQ(kinet_srq_num(e.srq) & ~0xffffffu, 0);
	KT_CHECK(kinet_srq_num(e.srq) != 0);
	idx = r.head;
	for (uint32_t k = 0; k < 2; k++) {
		struct kinet_wqe_srq_next_seg *next =
			(struct kinet_wqe_srq_next_seg *)((uint8_t *)r.buf + (size_t)idx * r.stride);
		struct kinet_wqe_data_seg *ds = (struct kinet_wqe_data_seg *)(next + 1);

		/* The list starts cyclic: each names the slot after it. */
		KT_CHECK_EQ(kinet_be16(next->next_wqe_index), (idx + 1) & (r.depth - 1));
		ds[0].byte_count = kinet_be32(SLOT);
		ds[0].lkey = kinet_be32(kt_lkey(&e.dst));
		ds[0].addr = kinet_be64(kt_addr(&e.dst, (size_t)(5 + k) * SLOT));
		ds[1].byte_count = 0;
		ds[1].lkey = kinet_be32(KINET_INVALID_LKEY);
		ds[1].addr = 0;
		__atomic_store_n(&r.dbrec[0], kinet_be32(k + 1), __ATOMIC_RELEASE);
		KT_CHECK_EQ(kinet_srq_outstanding(e.srq), 1);

		KT_OK(send_tagged(&e, 0, k, 100 + k, KINET_WR_SEND, 0));
		KT_OK(kt_poll1(e.icq[0], &wc));
		KT_OK(kt_wc_expect(&wc, k, 0));
		KT_OK(kt_poll1(e.tcq[0], &wc));
		/* Not posted through kinet: no wr_id of kinet's. */
		KT_OK(kt_wc_expect(&wc, 0, 0));
		KT_CHECK_EQ(wc.wqe_counter, idx);
		KT_CHECK_EQ(wc.byte_len, 100 + k);
		KT_CHECK(slot_holds(&e, 5 + k, 0, k, 100 + k));
		KT_CHECK_EQ(kinet_srq_outstanding(e.srq), 0);
		idx = kinet_be16(next->next_wqe_index);
	}
	env_close(&e);
}

/* An SRQ cannot go while a QP names it; it is a QP of an SRQ only with a
 * receive CQ and in the same context. */
KT_TEST(destroy_busy)
{
	struct env e;
	struct kinet_srq *other;
	struct kinet_srq_attr sa;
	struct kinet_qp_attr qa;
	struct kinet_qp *qp;
	struct kinet_ctx *ctx2;

	KT_OK(env_open(&e, 1, 1, false, 15, 2000));
	KT_CHECK_EQ(kinet_srq_destroy(e.srq), -EBUSY);
	pair_drop(&e, 0);
	KT_OK(kinet_srq_destroy(e.srq));
	e.srq = NULL;

	kinet_srq_attr_init(&sa);
	KT_OK(kinet_srq_create(e.ctx[1], &sa, &other));
	kinet_qp_attr_init(&qa);
	KT_OK(kinet_cq_create(e.ctx[1], &(struct kinet_cq_attr){.size = 0, .depth = 64}, &e.tcq[0]));
	qa.send_cq = e.tcq[0];
	qa.srq = other;
	KT_CHECK_EQ(kinet_qp_create(e.ctx[1], &qa, &qp), -EINVAL); /* no recv_cq */
	KT_OK(kt_ctx_open(1, &ctx2));
	struct kinet_srq *foreign;
	KT_OK(kinet_srq_create(ctx2, &sa, &foreign));
	qa.recv_cq = e.tcq[0];
	qa.srq = foreign;
	KT_CHECK_EQ(kinet_qp_create(e.ctx[1], &qa, &qp), -EINVAL);
	qa.srq = other;
	KT_OK(kinet_qp_create(e.ctx[1], &qa, &qp));
	/* No receive queue of its own. */
	struct kinet_sge sg = kt_sge(&e.dst, 0, 8);
	KT_CHECK_EQ(kt_post_recv(qp, 1, &sg, 1), -EINVAL);
	KT_CHECK_EQ(kinet_srq_destroy(other), -EBUSY);
	KT_OK(kinet_qp_destroy(qp));
	KT_OK(kinet_srq_destroy(other));
	/* Closing a context destroys the SRQs left in it. */
	kinet_ctx_close(ctx2);
	sa.depth = 0;
	KT_CHECK_EQ(kinet_srq_create(e.ctx[1], &sa, &other), -EINVAL);
	env_close(&e);
}

/* Send with immediate and write with immediate consume SRQ WQEs. */
KT_TEST(immediate)
{
	struct env e;
	struct kinet_wc wc;

	KT_OK(env_open(&e, 1, 1, false, 15, 2000));
	KT_OK(post_slot(&e, 0));
	KT_OK(post_slot(&e, 1));
	KT_OK(send_tagged(&e, 0, 0, 48, KINET_WR_SEND_WITH_IMM, 0xdeadbeef));
	KT_OK(kt_poll1(e.icq[0], &wc));
	KT_OK(kt_poll1(e.tcq[0], &wc));
	KT_OK(kt_wc_expect(&wc, 1000, 0));
	KT_CHECK_EQ(wc.opcode, KINET_WC_RECV);
	KT_CHECK(wc.wc_flags & KINET_WC_WITH_IMM);
	KT_CHECK_EQ(wc.imm_data, 0xdeadbeef);
	KT_CHECK_EQ(wc.byte_len, 48);
	KT_CHECK(slot_holds(&e, 0, 0, 0, 48));

	struct kinet_sge s = kt_sge(&e.src, 0, 64);
	struct kinet_send_wr w = kt_wr(77, KINET_WR_RDMA_WRITE_WITH_IMM, KINET_SEND_SIGNALED, &s, 1,
				       kt_addr(&e.dst, 60000), kt_rkey(&e.dst));
	w.imm_data = 0x1234;
	KT_OK(kt_post(e.iqp[0], &w));
	KT_OK(kt_poll1(e.icq[0], &wc));
	KT_OK(kt_wc_expect(&wc, 77, 0));
	KT_OK(kt_poll1(e.tcq[0], &wc));
	KT_OK(kt_wc_expect(&wc, 1001, 0));
	KT_CHECK_EQ(wc.opcode, KINET_WC_RECV_RDMA_WITH_IMM);
	KT_CHECK_EQ(wc.imm_data, 0x1234);
	KT_CHECK_EQ(wc.wqe_counter, 1);
	KT_CHECK(!memcmp(e.dst.p + 60000, e.src.p, 64));
	KT_CHECK_EQ(kinet_srq_outstanding(e.srq), 0);
	env_close(&e);
}

/* Two engine threads run the target QPs (and the initiators) of one SRQ:
 * every WQE is consumed exactly once. */
KT_TEST(two_threads)
{
	enum { NQ = 4, PER = 100, N = NQ * PER };
	static bool seen[N], tag_seen[N];
	static struct kinet_wc wc[PER];
	struct env e;
	struct kinet_engine_stats st;
	int per_cq[NQ] = {0};

	memset(seen, 0, sizeof(seen));
	memset(tag_seen, 0, sizeof(tag_seen));
	KT_OK(env_open(&e, NQ, 2, false, N, 5000));
	KT_CHECK_EQ(kinet_ctx_engine_stats(e.ctx[1], 0, &st), 2);
	KT_CHECK(st.qps > 0);
	KT_CHECK_EQ(kinet_ctx_engine_stats(e.ctx[1], 1, &st), 2);
	KT_CHECK(st.qps > 0);
	for (uint32_t s = 0; s < N; s++)
		KT_OK(post_slot(&e, s));
	for (uint32_t k = 0; k < PER; k++)
		for (int q = 0; q < NQ; q++)
			KT_OK(send_tagged(&e, q, k, 8, KINET_WR_SEND, 0));
	for (int q = 0; q < NQ; q++) {
		KT_CHECK_EQ(kt_poll_n(e.icq[q], PER, wc, 20000 * kt_time_scale()), PER);
		for (int i = 0; i < PER; i++)
			KT_OK(kt_wc_expect(&wc[i], wc[i].wr_id, 0));
	}
	for (int q = 0; q < NQ; q++) {
		int got = kt_poll_n(e.tcq[q], PER, wc, 20000 * kt_time_scale());

		KT_CHECK_EQ(got, PER);
		for (int i = 0; i < got; i++) {
			uint32_t slot = (uint32_t)(wc[i].wr_id - 1000);
			const uint8_t *d = e.dst.p + (size_t)slot * SLOT;

			KT_OK(kt_wc_expect(&wc[i], wc[i].wr_id, 0));
			KT_CHECK(slot < N);
			KT_CHECK_EQ(wc[i].wqe_counter, slot);
			KT_CHECK(!seen[slot]);
			seen[slot] = true;
			KT_CHECK_EQ(d[0], q);
			KT_CHECK(!tag_seen[q * PER + d[1]]);
			tag_seen[q * PER + d[1]] = true;
			KT_CHECK(slot_holds(&e, slot, q, d[1], 8));
			per_cq[q]++;
		}
	}
	for (int q = 0; q < NQ; q++)
		KT_CHECK_EQ(per_cq[q], PER);
	KT_CHECK_EQ(kinet_srq_outstanding(e.srq), 0);
	env_close(&e);
}

KT_MAIN(shared_local, shared_node, shared_ofi, empty_rnr, empty_rnr_node, full, outstanding, hand_posted,
	destroy_busy, immediate, two_threads)
