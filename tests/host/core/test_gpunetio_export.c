/*
 * kinet_qp_export_gpunetio / kinet_cq_export_gpunetio on a host-only
 * context (the descriptor is host memory, readable here): every field as
 * GPUNetIO's host library sets it, per doorbell mode; the conditions
 * GPUNetIO's device code needs (own send CQ with overrun ignored, deep
 * enough, nothing posted yet) refused with -EINVAL when unmet; and one
 * device API per QP.
 */
#include "kt_host.h"

#include "internal.h"
#include "kinet/gpunetio.h"

struct gx {
	struct kinet_ctx *ctx;
	struct kinet_cq *scq, *rcq;
	struct kinet_qp *qp;
};

/* A QP with send queue 16, receive queue 8 (rq) and its own CQs. */
static int gx_open(struct gx *g, enum kinet_db_mode mode, uint32_t cq_flags, uint32_t cq_depth, int rq)
{
	struct kinet_cq_attr ca = {.depth = cq_depth, .flags = cq_flags};
	struct kinet_qp_attr qa;
	int rc;

	memset(g, 0, sizeof(*g));
	rc = kt_ctx_open(1, &g->ctx);
	if (!rc)
		rc = kinet_cq_create(g->ctx, &ca, &g->scq);
	if (!rc && rq)
		rc = kinet_cq_create(g->ctx, &ca, &g->rcq);
	if (rc)
		return rc;
	kinet_qp_attr_init(&qa);
	qa.send_cq = g->scq;
	qa.recv_cq = g->rcq;
	qa.sq_depth = 16;
	qa.rq_depth = 8;
	qa.max_recv_sge = 2;
	qa.db_mode = mode;
	return kinet_qp_create(g->ctx, &qa, &g->qp);
}

static void gx_close(struct gx *g)
{
	if (g->qp)
		kinet_qp_destroy(g->qp);
	if (g->scq)
		kinet_cq_destroy(g->scq);
	if (g->rcq)
		kinet_cq_destroy(g->rcq);
	kinet_ctx_close(g->ctx);
}

static void check_cq(const struct kinet_gpunetio_cq *d, struct kinet_cq *cq, uint64_t ci)
{
	KT_CHECK(d->cqe_daddr == (uint8_t *)cq->ring);
	KT_CHECK_EQ(d->cq_num, kinet_cq_num(cq));
	KT_CHECK_EQ(d->cqe_num, kinet_cq_depth(cq));
	KT_CHECK_EQ(d->cqe_mask, kinet_cq_depth(cq) - 1);
	KT_CHECK(d->dbrec == cq->dbrec);
	KT_CHECK_EQ(d->cqe_ci, ci);
	KT_CHECK_EQ(d->cqe_rsvd, ci);
	KT_CHECK_EQ(d->cqe_size, 64);
	KT_CHECK_EQ(d->mem_type, KINET_GPUNETIO_MEM_TYPE_HOST);
}

static void fields(enum kinet_db_mode mode)
{
	struct gx g;
	struct kinet_gpunetio_qp *d, *again;
	struct kinet_dev_qp *kd;

	KT_OK(gx_open(&g, mode, KINET_CQ_IGNORE_OVERRUN, 16, 1));
	KT_OK(kinet_qp_export_gpunetio(g.qp, &d));
	uint32_t qpn = kinet_qp_num(g.qp);
	KT_CHECK_EQ(d->sq_num, qpn);
	KT_CHECK_EQ(d->sq_num_shift8, qpn << 8);
	KT_CHECK_EQ(d->sq_num_shift8_be, kinet_be32(qpn << 8));
	KT_CHECK_EQ(d->sq_num_shift8_be_1ds, kinet_be32(qpn << 8 | 1));
	KT_CHECK_EQ(d->sq_num_shift8_be_2ds, kinet_be32(qpn << 8 | 2));
	KT_CHECK_EQ(d->sq_num_shift8_be_3ds, kinet_be32(qpn << 8 | 3));
	KT_CHECK_EQ(d->sq_num_shift8_be_4ds, kinet_be32(qpn << 8 | 4));
	KT_CHECK_EQ(d->sq_rsvd_index, 0);
	KT_CHECK_EQ(d->sq_ready_index, 0);
	KT_CHECK_EQ(d->sq_wqe_pi, 0);
	KT_CHECK_EQ(d->sq_lock, 0);
	KT_CHECK_EQ(d->sq_wqe_num, 16);
	KT_CHECK_EQ(d->sq_wqe_mask, 15);
	KT_CHECK(d->sq_wqe_daddr == g.qp->sq);
	KT_CHECK(d->sq_dbrec == g.qp->dbrec + KINET_DBR_SEND);
	KT_CHECK_EQ(d->mem_type, KINET_GPUNETIO_MEM_TYPE_HOST);
	if (mode == KINET_DB_CPU) {
		KT_CHECK_EQ(d->nic_handler, KINET_GPUNETIO_NIC_HANDLER_CPU_PROXY);
		KT_CHECK(d->sq_db == (uint64_t *)g.qp->db_cpu);
	} else {
		KT_CHECK_EQ(d->nic_handler, KINET_GPUNETIO_NIC_HANDLER_GPU_SM_DB);
		KT_CHECK(d->sq_db == (uint64_t *)(void *)(g.qp->uar + KINET_UAR_DB_OFFSET));
	}
	check_cq(&d->cq_sq, g.scq, 0);
	KT_CHECK_EQ(d->rq_num, qpn);
	KT_CHECK_EQ(d->rq_wqe_num, 8);
	KT_CHECK_EQ(d->rq_wqe_mask, 7);
	KT_CHECK(d->rq_wqe_daddr == g.qp->rq);
	KT_CHECK(d->rq_dbrec == g.qp->dbrec + KINET_DBR_RECV);
	KT_CHECK_EQ(d->rcv_wqe_size, 32);
	KT_CHECK_EQ(d->rq_wqe_pi, 0);
	KT_CHECK_EQ(d->rq_lock, 0);
	check_cq(&d->cq_rq, g.rcq, 0);

	/* Once exported: the same descriptor again; the send and receive
	 * queues belong to device code; no second device API. */
	struct kinet_qp_info info;
	KT_OK(kinet_qp_pack(g.qp, &info));
	KT_OK(kinet_qp_connect(g.qp, &info));
	KT_OK(kinet_qp_export_gpunetio(g.qp, &again));
	KT_CHECK(again == d);
	KT_CHECK_EQ(kinet_qp_export(g.qp, &kd), -EBUSY);
	struct kinet_send_wr w = kt_wr(1, KINET_WR_NOP, KINET_SEND_SIGNALED, NULL, 0, 0, 0);
	KT_CHECK_EQ(kt_post(g.qp, &w), -EBUSY);
	struct kinet_sge s = {.addr = 0, .length = 0, .lkey = 0};
	KT_CHECK_EQ(kt_post_recv(g.qp, 2, &s, 1), -EBUSY);
	gx_close(&g);
}

KT_TEST(fields_cpu_proxy)
{
	fields(KINET_DB_CPU);
}

KT_TEST(fields_gpu_db)
{
	fields(KINET_DB_GPU);
}

KT_TEST(fields_blueflame)
{
	fields(KINET_DB_BF);
}

/* Without a receive queue the receive side stays zero, as GPUNetIO's. */
KT_TEST(no_receive_queue)
{
	struct gx g;
	struct kinet_gpunetio_qp *d, zero;

	KT_OK(gx_open(&g, KINET_DB_GPU, KINET_CQ_IGNORE_OVERRUN, 32, 0));
	KT_OK(kinet_qp_export_gpunetio(g.qp, &d));
	memset(&zero, 0, sizeof(zero));
	KT_CHECK(memcmp(&d->rq_num, &zero.rq_num,
			offsetof(struct kinet_gpunetio_qp, cq_sq) -
				offsetof(struct kinet_gpunetio_qp, rq_num)) == 0);
	KT_CHECK(memcmp(&d->cq_rq, &zero.cq_rq, sizeof(zero.cq_rq)) == 0);
	gx_close(&g);
}

/* Each unmet condition is refused, and the QP stays usable from the host. */
KT_TEST(refused)
{
	struct gx g;
	struct kinet_gpunetio_qp *d;
	struct kinet_dev_qp *kd;
	struct kinet_wc wc;
	struct kinet_qp_info info;

	KT_OK(gx_open(&g, KINET_DB_CPU, 0, 16, 0));
	KT_CHECK_EQ(kinet_qp_export_gpunetio(g.qp, &d), -EINVAL); /* overrun not ignored */
	KT_CHECK(d == NULL);
	KT_OK(kinet_qp_pack(g.qp, &info));
	KT_OK(kinet_qp_connect(g.qp, &info));
	struct kinet_send_wr w = kt_wr(1, KINET_WR_NOP, KINET_SEND_SIGNALED, NULL, 0, 0, 0);
	KT_OK(kt_post(g.qp, &w));
	KT_OK(kt_poll1(g.scq, &wc));
	gx_close(&g);

	KT_OK(gx_open(&g, KINET_DB_CPU, KINET_CQ_IGNORE_OVERRUN, 8, 0));
	KT_CHECK_EQ(kinet_qp_export_gpunetio(g.qp, &d), -EINVAL); /* CQ shallower than the SQ */
	gx_close(&g);

	/* Something posted and completed already. */
	KT_OK(gx_open(&g, KINET_DB_CPU, KINET_CQ_IGNORE_OVERRUN, 16, 0));
	KT_OK(kinet_qp_pack(g.qp, &info));
	KT_OK(kinet_qp_connect(g.qp, &info));
	KT_OK(kt_post(g.qp, &w));
	KT_OK(kt_poll1(g.scq, &wc));
	KT_CHECK_EQ(kinet_qp_export_gpunetio(g.qp, &d), -EINVAL);
	gx_close(&g);

	/* A send CQ shared with another QP, or with the receive side. */
	KT_OK(gx_open(&g, KINET_DB_CPU, KINET_CQ_IGNORE_OVERRUN, 16, 0));
	struct kinet_qp_attr qa;
	struct kinet_qp *other;
	kinet_qp_attr_init(&qa);
	qa.send_cq = g.scq;
	KT_OK(kinet_qp_create(g.ctx, &qa, &other));
	KT_CHECK_EQ(kinet_qp_export_gpunetio(g.qp, &d), -EINVAL);
	KT_OK(kinet_qp_destroy(other));
	kinet_qp_attr_init(&qa);
	qa.send_cq = g.scq;
	qa.recv_cq = g.scq;
	KT_OK(kinet_qp_create(g.ctx, &qa, &other));
	KT_CHECK_EQ(kinet_qp_export_gpunetio(other, &d), -EINVAL);
	KT_OK(kinet_qp_destroy(other));
	/* Exported for kinet's own device API first. */
	struct kinet_cq *big;
	struct kinet_cq_attr ca = {.depth = 64};
	KT_OK(kinet_cq_create(g.ctx, &ca, &big));
	kinet_qp_attr_init(&qa);
	qa.send_cq = big;
	qa.sq_depth = 16;
	KT_OK(kinet_qp_create(g.ctx, &qa, &other));
	KT_OK(kinet_qp_export(other, &kd));
	KT_CHECK_EQ(kinet_qp_export_gpunetio(other, &d), -EBUSY);
	KT_OK(kinet_qp_destroy(other));
	KT_OK(kinet_cq_destroy(big));
	KT_CHECK_EQ(kinet_qp_export_gpunetio(NULL, &d), -EINVAL);
	KT_CHECK_EQ(kinet_qp_export_gpunetio(g.qp, NULL), -EINVAL);
	gx_close(&g);
}

/* A CQ on its own starts where the host poller stands. */
KT_TEST(cq_alone)
{
	struct gx g;
	struct kinet_gpunetio_cq *d, *again;
	struct kinet_qp_info info;
	struct kinet_wc wc[3];

	KT_OK(gx_open(&g, KINET_DB_CPU, 0, 16, 0));
	KT_OK(kinet_qp_pack(g.qp, &info));
	KT_OK(kinet_qp_connect(g.qp, &info));
	struct kinet_send_wr w[3];
	for (int i = 0; i < 3; i++)
		w[i] = kt_wr((uint64_t)i, KINET_WR_NOP, KINET_SEND_SIGNALED, NULL, 0, 0, 0);
	int bad = -1;
	KT_OK(kinet_qp_post_send(g.qp, w, 3, &bad));
	KT_CHECK_EQ(kt_poll_n(g.scq, 3, wc, KT_DEADLINE_MS), 3);
	KT_OK(kinet_cq_export_gpunetio(g.scq, &d));
	check_cq(d, g.scq, 3);
	KT_OK(kinet_cq_export_gpunetio(g.scq, &again));
	KT_CHECK(again == d);
	KT_CHECK_EQ(kinet_cq_export_gpunetio(NULL, &d), -EINVAL);
	gx_close(&g);
}

KT_MAIN(fields_cpu_proxy, fields_gpu_db, fields_blueflame, no_receive_queue, refused, cq_alone)
