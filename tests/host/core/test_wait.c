/*
 * WAIT WQEs (cross-channel, opcode 0x0f): a QP's send queue goes no further
 * until a named CQ holds the CQE of a given index, which is how GPUNetIO's
 * counters order an atomic on a companion QP after a put on another.
 * Error paths: an unknown CQ, a malformed WAIT, a CQ destroyed while
 * waited on; a blocked WAIT released by moving its QP to error.
 */
#include "kt_host.h"

struct wait_test {
	struct kinet_ctx *ctx;
	struct kinet_cq *cq[2]; /* [0]: the main QP's, [1]: the companion's */
	struct kinet_qp *qp[2];
	struct kt_buf src, dst;
};

static int wait_test_open(struct wait_test *t)
{
	int rc;

	memset(t, 0, sizeof(*t));
	/* Two engine threads: the QPs land on different ones, so the WAIT
	 * reads a CQ another thread writes. */
	rc = kt_ctx_open(2, &t->ctx);
	for (int i = 0; i < 2 && !rc; i++) {
		struct kinet_cq_attr ca = {.depth = 16};
		struct kinet_qp_attr qa;
		struct kinet_qp_info info;

		rc = kinet_cq_create(t->ctx, &ca, &t->cq[i]);
		if (rc)
			break;
		kinet_qp_attr_init(&qa);
		qa.send_cq = t->cq[i];
		qa.sq_depth = 16;
		qa.timeout_ms = 2000;
		rc = kinet_qp_create(t->ctx, &qa, &t->qp[i]);
		if (!rc)
			rc = kinet_qp_pack(t->qp[i], &info);
		if (!rc)
			rc = kinet_qp_connect(t->qp[i], &info);
	}
	if (!rc)
		rc = kt_buf_alloc(t->ctx, &t->src, 4096, KT_ACC_ALL, 0);
	if (!rc)
		rc = kt_buf_alloc(t->ctx, &t->dst, 4096, KT_ACC_ALL, 0);
	return rc;
}

static void wait_test_close(struct wait_test *t)
{
	kt_buf_free(&t->src);
	kt_buf_free(&t->dst);
	for (int i = 0; i < 2; i++)
		if (t->qp[i])
			kinet_qp_destroy(t->qp[i]);
	for (int i = 0; i < 2; i++)
		if (t->cq[i])
			kinet_cq_destroy(t->cq[i]);
	kinet_ctx_close(t->ctx);
}

/* Posts a signaled WAIT (ds and opmod as given, normally 2 and 0). */
static int post_wait_raw(struct kinet_qp *qp, uint32_t cqn, uint32_t max_index, uint32_t ds, uint8_t opmod,
			 uint64_t wr_id)
{
	uint8_t w[KINET_WQE_BB_SIZE];
	struct kinet_wqe_ctrl_seg *ctrl = (struct kinet_wqe_ctrl_seg *)(void *)w;

	memset(w, 0, sizeof(w));
	kinet_wqe_set_ctrl(ctrl, KINET_WQE_OP_WAIT, 0, kinet_qp_num(qp), ds, KINET_WQE_CTRL_CQ_UPDATE, 0);
	ctrl->opmod_idx_opcode |= kinet_be32((uint32_t)opmod << 24);
	kinet_wqe_set_wait((struct kinet_wqe_wait_seg *)(void *)(w + 16), cqn, max_index);
	return kinet_qp_post_wqe(qp, w, 1, wr_id);
}

static int post_wait(struct kinet_qp *qp, struct kinet_cq *cq, uint32_t max_index, uint64_t wr_id)
{
	return post_wait_raw(qp, kinet_cq_num(cq), max_index, 2, 0, wr_id);
}

/* Signaled fetch-add of 1 on the 8 bytes at dst + 4088. */
static int post_count(struct wait_test *t, struct kinet_qp *qp, uint64_t wr_id)
{
	struct kinet_sge s = kt_sge(&t->src, 4088, 8);
	struct kinet_send_wr w = kt_wr(wr_id, KINET_WR_ATOMIC_FETCH_AND_ADD, KINET_SEND_SIGNALED, &s, 1,
				       kt_addr(&t->dst, 4088), kt_rkey(&t->dst));
	w.compare_add = 1;
	return kt_post(qp, &w);
}

/* Signaled 64-byte write of a fresh pattern into dst slot (i % 32). */
static int post_put(struct wait_test *t, uint64_t i)
{
	size_t off = (i % 32) * 64;
	kt_fill_pattern(t->src.p + off, 64, (uint32_t)i + 7);
	struct kinet_sge s = kt_sge(&t->src, off, 64);
	struct kinet_send_wr w = kt_wr(i, KINET_WR_RDMA_WRITE, KINET_SEND_SIGNALED, &s, 1,
				       kt_addr(&t->dst, off), kt_rkey(&t->dst));
	return kt_post(t->qp[0], &w);
}

static uint64_t counter(const struct wait_test *t)
{
	return __atomic_load_n((const uint64_t *)(const void *)(t->dst.p + 4088), __ATOMIC_ACQUIRE);
}

/* The companion's WAIT for CQE 2 of the main CQ holds back its fetch-add
 * through two main completions and releases it at the third. */
KT_TEST(wait_orders)
{
	struct wait_test t;
	struct kinet_wc wc[4];

	KT_OK(wait_test_open(&t));
	KT_OK(post_wait(t.qp[1], t.cq[0], 2, 100));
	KT_OK(post_count(&t, t.qp[1], 101));
	KT_CHECK_EQ(kt_poll_for(t.cq[1], 30, 4, wc), 0);
	KT_OK(post_put(&t, 0));
	KT_OK(post_put(&t, 1));
	KT_CHECK_EQ(kt_poll_n(t.cq[0], 2, wc, KT_DEADLINE_MS), 2);
	KT_CHECK_EQ(kt_poll_for(t.cq[1], 30, 4, wc), 0);
	KT_CHECK_EQ(counter(&t), 0);
	KT_OK(post_put(&t, 2));
	KT_CHECK_EQ(kt_poll_n(t.cq[1], 2, wc, KT_DEADLINE_MS), 2);
	KT_OK(kt_wc_expect(&wc[0], 100, 0));
	KT_CHECK_EQ(wc[0].opcode, KINET_WC_NOP);
	KT_OK(kt_wc_expect(&wc[1], 101, 0));
	KT_CHECK_EQ(counter(&t), 1);
	KT_CHECK_EQ(kt_poll_n(t.cq[0], 1, wc, KT_DEADLINE_MS), 1);
	/* An index already reached does not block. */
	KT_OK(post_wait(t.qp[1], t.cq[0], 0, 102));
	KT_OK(kt_poll1(t.cq[1], wc));
	KT_OK(kt_wc_expect(&wc[0], 102, 0));
	wait_test_close(&t);
}

/* GPUNetIO's put-with-counter, 600 times through CQs of 16: the WAIT names
 * the main CQE of each put, so when the count reaches n, put n-1's data is
 * there. */
KT_TEST(counter_pattern)
{
	struct wait_test t;
	struct kinet_wc wc[2];

	KT_OK(wait_test_open(&t));
	for (uint64_t i = 0; i < 600; i++) {
		KT_OK(post_put(&t, i));
		KT_OK(post_wait(t.qp[1], t.cq[0], (uint32_t)i, 1000 + i));
		KT_OK(post_count(&t, t.qp[1], 2000 + i));
		KT_CHECK_EQ(kt_poll_n(t.cq[1], 2, wc, KT_DEADLINE_MS), 2);
		KT_OK(kt_wc_expect(&wc[0], 1000 + i, 0));
		KT_OK(kt_wc_expect(&wc[1], 2000 + i, 0));
		KT_CHECK_EQ(counter(&t), i + 1);
		KT_CHECK(memcmp(t.src.p + (i % 32) * 64, t.dst.p + (i % 32) * 64, 64) == 0);
		KT_OK(kt_poll1(t.cq[0], wc));
		KT_OK(kt_wc_expect(&wc[0], i, 0));
	}
	wait_test_close(&t);
}

/* A bad WAIT fails with LOCAL_QP_OP_ERR, the QP goes to error and what
 * follows is flushed; the engine and the other QP live on. */
static void wait_fails(const char *what, uint32_t cqn, uint32_t ds, uint8_t opmod)
{
	struct wait_test t;
	struct kinet_wc wc[2];

	fprintf(stderr, "  %s\n", what);
	KT_OK(wait_test_open(&t));
	KT_OK(post_wait_raw(t.qp[1], cqn ? cqn : kinet_cq_num(t.cq[0]), 0, ds, opmod, 1));
	KT_OK(post_count(&t, t.qp[1], 2));
	KT_CHECK_EQ(kt_poll_n(t.cq[1], 2, wc, KT_DEADLINE_MS), 2);
	KT_OK(kt_wc_expect(&wc[0], 1, KINET_SYND_LOCAL_QP_OP_ERR));
	KT_OK(kt_wc_expect(&wc[1], 2, KINET_SYND_WR_FLUSH_ERR));
	KT_CHECK_EQ(kinet_qp_get_state(t.qp[1]), KINET_QPS_ERR);
	KT_CHECK_EQ(counter(&t), 0);
	KT_OK(post_put(&t, 0));
	KT_OK(kt_poll1(t.cq[0], wc));
	KT_OK(kt_wc_expect(&wc[0], 0, 0));
	wait_test_close(&t);
}

KT_TEST(wait_errors)
{
	struct kinet_ctx *other;
	struct kinet_cq *ocq;
	struct kinet_cq_attr ca = {.depth = 4};

	wait_fails("unknown CQ number", 0xfffffe, 2, 0);
	wait_fails("WAIT with 3 segments", 0, 3, 0);
	wait_fails("WAIT on data (opmod 1), not supported", 0, 2, 1);
	/* A CQ of another context is not one this QP can name. */
	KT_OK(kt_ctx_open(1, &other));
	KT_OK(kinet_cq_create(other, &ca, &ocq));
	wait_fails("CQ of another context", kinet_cq_num(ocq), 2, 0);
	KT_OK(kinet_cq_destroy(ocq));
	kinet_ctx_close(other);
}

/* A WAIT on a CQ that is destroyed meanwhile fails instead of blocking for
 * ever; a WAIT that would block for ever is released by the error state. */
KT_TEST(wait_released)
{
	struct wait_test t;
	struct kinet_cq *x;
	struct kinet_cq_attr ca = {.depth = 4};
	struct kinet_wc wc[2];

	KT_OK(wait_test_open(&t));
	KT_OK(kinet_cq_create(t.ctx, &ca, &x));
	KT_OK(post_wait(t.qp[1], x, 0, 1));
	KT_CHECK_EQ(kt_poll_for(t.cq[1], 30, 2, wc), 0);
	KT_OK(kinet_cq_destroy(x));
	KT_OK(kt_poll1(t.cq[1], wc));
	KT_OK(kt_wc_expect(&wc[0], 1, KINET_SYND_LOCAL_QP_OP_ERR));
	wait_test_close(&t);

	KT_OK(wait_test_open(&t));
	KT_OK(post_wait(t.qp[1], t.cq[0], 1000, 1));
	KT_OK(post_count(&t, t.qp[1], 2));
	KT_CHECK_EQ(kt_poll_for(t.cq[1], 30, 2, wc), 0);
	KT_OK(kinet_qp_set_error(t.qp[1]));
	KT_CHECK_EQ(kt_poll_n(t.cq[1], 2, wc, KT_DEADLINE_MS), 2);
	KT_OK(kt_wc_expect(&wc[0], 1, KINET_SYND_WR_FLUSH_ERR));
	KT_OK(kt_wc_expect(&wc[1], 2, KINET_SYND_WR_FLUSH_ERR));
	KT_CHECK_EQ(counter(&t), 0);
	wait_test_close(&t);
}

KT_MAIN(wait_orders, counter_pattern, wait_errors, wait_released)
