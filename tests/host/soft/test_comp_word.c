/*
 * The software NIC's completion word (kinet/device/types.h, KINET_COMP_*):
 * after every CQE it counts the CQEs, names the last requester CQE's WQE,
 * counts the CQEs that hand data back, and keeps an error sticky.
 */
#include "internal.h"
#include "kt_host.h"

static uint64_t word(struct kinet_cq *cq)
{
	return __atomic_load_n(cq->comp_word, __ATOMIC_ACQUIRE);
}

KT_TEST(counts_last_data_error)
{
	struct kinet_ctx *ctx;
	struct kt_pair p;
	struct kt_buf src, dst;
	struct kinet_wc wc[8];
	struct kinet_sge sg;
	struct kinet_send_wr wr;
	uint64_t w;

	KT_OK(kt_ctx_open(1, &ctx));
	KT_OK(kt_pair_create(&p, ctx, ctx, NULL));
	KT_OK(kt_buf_alloc(ctx, &src, 4096, KT_ACC_ALL, 1));
	KT_OK(kt_buf_alloc(ctx, &dst, 4096, KT_ACC_ALL, 2));
	KT_CHECK(p.cq[0]->comp_word != NULL);
	KT_CHECK_EQ(word(p.cq[0]), 0u);

	/* Three signalled writes and an unsignalled one: three CQEs, the
	 * last names WQE 3 (the unsignalled WQE 1 makes none), no data. */
	for (int k = 0; k < 4; k++) {
		sg = kt_sge(&src, (size_t)k * 8, 8);
		wr = kt_wr((uint64_t)k, KINET_WR_RDMA_WRITE, k == 1 ? 0 : KINET_SEND_SIGNALED, &sg, 1,
			   kt_addr(&dst, (size_t)k * 8), kt_rkey(&dst));
		KT_OK(kt_post(p.qp[0], &wr));
	}
	KT_CHECK_EQ(kt_poll_n(p.cq[0], 3, wc, KT_DEADLINE_MS), 3);
	w = word(p.cq[0]);
	KT_CHECK_EQ(KINET_COMP_COUNT(w), 3u);
	KT_CHECK_EQ(KINET_COMP_WQE_COUNTER(w), 3u);
	KT_CHECK_EQ(KINET_COMP_DATA(w), 0u);
	KT_CHECK(!(w & KINET_COMP_ERROR));

	/* A read hands data back. */
	sg = kt_sge(&src, 64, 8);
	wr = kt_wr(9, KINET_WR_RDMA_READ, KINET_SEND_SIGNALED, &sg, 1, kt_addr(&dst, 0), kt_rkey(&dst));
	KT_OK(kt_post(p.qp[0], &wr));
	KT_CHECK_EQ(kt_poll_n(p.cq[0], 1, wc, KT_DEADLINE_MS), 1);
	w = word(p.cq[0]);
	KT_CHECK_EQ(KINET_COMP_COUNT(w), 4u);
	KT_CHECK_EQ(KINET_COMP_WQE_COUNTER(w), 4u);
	KT_CHECK_EQ(KINET_COMP_DATA(w), 1u);
	KT_CHECK(!(w & KINET_COMP_ERROR));

	/* A bad rkey, unsignalled: the error CQE is still written, and the
	 * error bit stays. */
	sg = kt_sge(&src, 0, 8);
	wr = kt_wr(10, KINET_WR_RDMA_WRITE, 0, &sg, 1, kt_addr(&dst, 0), kt_rkey(&dst) ^ 0x100);
	KT_OK(kt_post(p.qp[0], &wr));
	KT_CHECK_EQ(kt_poll_n(p.cq[0], 1, wc, KT_DEADLINE_MS), 1);
	KT_CHECK(wc[0].status != 0);
	w = word(p.cq[0]);
	KT_CHECK_EQ(KINET_COMP_COUNT(w), 5u);
	KT_CHECK_EQ(KINET_COMP_WQE_COUNTER(w), 5u);
	KT_CHECK_EQ(KINET_COMP_DATA(w), 2u);
	KT_CHECK(w & KINET_COMP_ERROR);

	kt_pair_destroy(&p);
	kt_buf_free(&src);
	kt_buf_free(&dst);
	KT_OK(kinet_ctx_close(ctx));
}

KT_MAIN(counts_last_data_error)
