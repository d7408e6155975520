/*
 * RDMA write, read and send whose local and remote ranges overlap in host
 * memory (one registered buffer on both sides).  Issue 12, defect 4: the
 * engine copied them with memcpy, whose result is undefined for
 * overlapping ranges (ASan reports memcpy-param-overlap).  The result is
 * now that of memmove, for both directions of overlap.
 */
#include "kt_host.h"

#define LEN 4096
#define SHIFT 1000

static void expect_moved(const uint8_t *buf, const uint8_t *orig, size_t dst, size_t src)
{
	uint8_t want[3 * LEN];

	memcpy(want, orig, sizeof(want));
	memmove(want + dst, want + src, LEN);
	KT_CHECK(memcmp(buf, want, sizeof(want)) == 0);
}

static void overlap(enum kinet_wr_opcode op, bool forward)
{
	struct kinet_ctx *ctx;
	struct kt_pair p;
	struct kt_buf b;
	struct kinet_wc wc;
	uint8_t orig[3 * LEN];
	/* The data moves from `from` to `to`, SHIFT bytes apart. */
	size_t from = forward ? LEN : LEN + SHIFT, to = forward ? LEN + SHIFT : LEN;

	KT_OK(kt_ctx_open(1, &ctx));
	KT_OK(kt_pair_create(&p, ctx, ctx, NULL));
	KT_OK(kt_buf_alloc(ctx, &b, sizeof(orig), KT_ACC_ALL, 0));
	kt_fill_pattern(b.p, b.len, 5);
	memcpy(orig, b.p, sizeof(orig));

	/* For a read the local SGE is the destination. */
	size_t local = op == KINET_WR_RDMA_READ ? to : from;
	size_t remote = op == KINET_WR_RDMA_READ ? from : to;
	if (op == KINET_WR_SEND) {
		struct kinet_sge r = kt_sge(&b, to, LEN);
		KT_OK(kt_post_recv(p.qp[1], 77, &r, 1));
	}
	struct kinet_sge s = kt_sge(&b, local, LEN);
	struct kinet_send_wr w = kt_wr(1, op, KINET_SEND_SIGNALED, &s, 1, kt_addr(&b, remote), kt_rkey(&b));
	KT_OK(kt_post(p.qp[0], &w));
	KT_OK(kt_poll1(p.cq[0], &wc));
	KT_OK(kt_wc_expect(&wc, 1, 0));
	if (op == KINET_WR_SEND) {
		KT_OK(kt_poll1(p.cq[1], &wc));
		KT_OK(kt_wc_expect(&wc, 77, 0));
	}
	expect_moved(b.p, orig, to, from);
	KT_CHECK(kt_buf_guards_ok(&b));
	kt_buf_free(&b);
	kt_pair_destroy(&p);
	KT_OK(kinet_ctx_close(ctx));
}

KT_TEST(write_forward)
{
	overlap(KINET_WR_RDMA_WRITE, true);
}

KT_TEST(write_backward)
{
	overlap(KINET_WR_RDMA_WRITE, false);
}

KT_TEST(read_forward)
{
	overlap(KINET_WR_RDMA_READ, true);
}

KT_TEST(read_backward)
{
	overlap(KINET_WR_RDMA_READ, false);
}

KT_TEST(send_forward)
{
	overlap(KINET_WR_SEND, true);
}

KT_TEST(send_backward)
{
	overlap(KINET_WR_SEND, false);
}

KT_MAIN(write_forward, write_backward, read_forward, read_backward, send_forward, send_backward)
