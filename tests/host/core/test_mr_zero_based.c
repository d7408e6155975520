/*
 * Zero-based memory regions (KINET_ACCESS_ZERO_BASED, as
 * IBV_ACCESS_ZERO_BASED): WQEs name them by offset, through the rkey, the
 * lkey and in receive WQEs; ranges are checked against [0, length); the
 * packed info says address 0.  ctest also runs this suite over the node transport.
 */
#include "kt_host.h"

#define LEN 4096
#define ZB (KT_ACC_ALL | KINET_ACCESS_ZERO_BASED)

/* Initiator in ctx[0] (loc, zloc), target in ctx[1] (zrem): two contexts,
 * so KINET_TRANSPORT=node can carry it. */
struct zb {
	struct kinet_ctx *ctx[2];
	struct kt_pair p;
	struct kt_buf loc, zloc, zrem; /* plain local, zero-based local and remote */
};

static int zb_pair(struct zb *z)
{
	return kt_pair_create(&z->p, z->ctx[0], z->ctx[1], NULL);
}

static int zb_open(struct zb *z)
{
	int rc;

	memset(z, 0, sizeof(*z));
	rc = kt_ctx_open(1, &z->ctx[0]);
	if (!rc)
		rc = kt_ctx_open(1, &z->ctx[1]);
	if (!rc)
		rc = zb_pair(z);
	if (!rc)
		rc = kt_buf_alloc(z->ctx[0], &z->loc, LEN, KT_ACC_ALL, 0);
	if (!rc)
		rc = kt_buf_alloc(z->ctx[0], &z->zloc, LEN, ZB, 0);
	if (!rc)
		rc = kt_buf_alloc(z->ctx[1], &z->zrem, LEN, ZB, 0);
	return rc;
}

static void zb_close(struct zb *z)
{
	KT_CHECK(kt_buf_guards_ok(&z->loc));
	KT_CHECK(kt_buf_guards_ok(&z->zloc));
	KT_CHECK(kt_buf_guards_ok(&z->zrem));
	kt_buf_free(&z->loc);
	kt_buf_free(&z->zloc);
	kt_buf_free(&z->zrem);
	kt_pair_destroy(&z->p);
	kinet_ctx_close(z->ctx[0]);
	kinet_ctx_close(z->ctx[1]);
}

/* Posts one signaled WR on qp[0] and returns its completion status. */
static int zb_run(struct zb *z, struct kinet_send_wr *w)
{
	struct kinet_wc wc;
	int rc;

	w->send_flags |= KINET_SEND_SIGNALED;
	rc = kt_post(z->p.qp[0], w);
	if (!rc)
		rc = kt_poll1(z->p.cq[0], &wc);
	return rc ? -1 : wc.status;
}

static struct kinet_sge zb_sge(const struct kt_buf *b, uint64_t addr, uint32_t len)
{
	struct kinet_sge s = {.addr = addr, .length = len, .lkey = kt_lkey(b)};
	return s;
}

/* Write, read and both atomics with remote offsets; and from a zero-based
 * local region, whose SGE addresses are offsets too. */
KT_TEST(offsets)
{
	struct zb z;
	struct kinet_mr_info info;

	KT_OK(zb_open(&z));
	KT_OK(kinet_mr_pack(z.zrem.mr, &info));
	KT_CHECK_EQ(info.addr, 0);
	KT_CHECK_EQ(info.length, LEN);
	KT_CHECK(info.access & KINET_ACCESS_ZERO_BASED);
	KT_OK(kinet_mr_pack(z.loc.mr, &info));
	KT_CHECK_EQ(info.addr, kt_addr(&z.loc, 0));

	kt_fill_pattern(z.loc.p, LEN, 1);
	struct kinet_sge s = kt_sge(&z.loc, 0, 200);
	struct kinet_send_wr w = kt_wr(1, KINET_WR_RDMA_WRITE, 0, &s, 1, 100, kt_rkey(&z.zrem));
	KT_CHECK_EQ(zb_run(&z, &w), 0);
	KT_CHECK(memcmp(z.zrem.p + 100, z.loc.p, 200) == 0);
	KT_CHECK_EQ(z.zrem.p[99], 0);
	KT_CHECK_EQ(z.zrem.p[300], 0);

	kt_fill_pattern(z.zrem.p + 1000, 300, 2);
	s = kt_sge(&z.loc, 2000, 300);
	w = kt_wr(2, KINET_WR_RDMA_READ, 0, &s, 1, 1000, kt_rkey(&z.zrem));
	KT_CHECK_EQ(zb_run(&z, &w), 0);
	KT_CHECK(memcmp(z.loc.p + 2000, z.zrem.p + 1000, 300) == 0);

	uint64_t *word = (uint64_t *)(void *)(z.zrem.p + 8 * 3);
	*word = 40;
	s = kt_sge(&z.loc, 3000, 8);
	w = kt_wr(3, KINET_WR_ATOMIC_FETCH_AND_ADD, 0, &s, 1, 8 * 3, kt_rkey(&z.zrem));
	w.compare_add = 2;
	KT_CHECK_EQ(zb_run(&z, &w), 0);
	KT_CHECK_EQ(*word, 42);
	KT_CHECK_EQ(*(uint64_t *)(void *)(z.loc.p + 3000), 40);
	w = kt_wr(4, KINET_WR_ATOMIC_CMP_AND_SWP, 0, &s, 1, 8 * 3, kt_rkey(&z.zrem));
	w.compare_add = 42;
	w.swap = 7;
	KT_CHECK_EQ(zb_run(&z, &w), 0);
	KT_CHECK_EQ(*word, 7);

	/* The local side zero-based too: gather from offset 64, and the old
	 * value of an atomic lands at offset 8. */
	kt_fill_pattern(z.zloc.p + 64, 128, 3);
	s = zb_sge(&z.zloc, 64, 128);
	w = kt_wr(5, KINET_WR_RDMA_WRITE, 0, &s, 1, 2048, kt_rkey(&z.zrem));
	KT_CHECK_EQ(zb_run(&z, &w), 0);
	KT_CHECK(memcmp(z.zrem.p + 2048, z.zloc.p + 64, 128) == 0);
	s = zb_sge(&z.zloc, 8, 8);
	w = kt_wr(6, KINET_WR_ATOMIC_FETCH_AND_ADD, 0, &s, 1, 8 * 3, kt_rkey(&z.zrem));
	w.compare_add = 1;
	KT_CHECK_EQ(zb_run(&z, &w), 0);
	KT_CHECK_EQ(*(uint64_t *)(void *)(z.zloc.p + 8), 7);
	KT_CHECK_EQ(*word, 8);
	/* An inline write into a zero-based region. */
	s = (struct kinet_sge){.addr = (uint64_t)(uintptr_t) "offset!", .length = 8};
	w = kt_wr(7, KINET_WR_RDMA_WRITE, KINET_SEND_INLINE, &s, 1, LEN - 8, kt_rkey(&z.zrem));
	KT_CHECK_EQ(zb_run(&z, &w), 0);
	KT_CHECK(memcmp(z.zrem.p + LEN - 8, "offset!", 8) == 0);
	/* A receive WQE naming a zero-based region by offset. */
	struct kinet_sge r = zb_sge(&z.zrem, 512, 256);
	struct kinet_wc wc;
	KT_OK(kt_post_recv(z.p.qp[1], 9, &r, 1));
	kt_fill_pattern(z.loc.p, 200, 4);
	s = kt_sge(&z.loc, 0, 200);
	w = kt_wr(8, KINET_WR_SEND, 0, &s, 1, 0, 0);
	KT_CHECK_EQ(zb_run(&z, &w), 0);
	KT_OK(kt_poll1(z.p.cq[1], &wc));
	KT_OK(kt_wc_expect(&wc, 9, 0));
	KT_CHECK_EQ(wc.byte_len, 200);
	KT_CHECK(memcmp(z.zrem.p + 512, z.loc.p, 200) == 0);
	zb_close(&z);
}

/* Ranges are [0, length): the last byte is reachable, one more is not, and
 * the region's virtual address names nothing.  Nothing outside is touched. */
KT_TEST(ranges)
{
	struct zb z;

	KT_OK(zb_open(&z));
	struct kinet_sge s = kt_sge(&z.loc, 0, 16);
	struct kinet_send_wr w = kt_wr(1, KINET_WR_RDMA_WRITE, 0, &s, 1, LEN - 16, kt_rkey(&z.zrem));
	KT_CHECK_EQ(zb_run(&z, &w), 0);
	kt_pair_destroy(&z.p);

	const uint64_t bad_remote[3] = {LEN - 15, kt_addr(&z.zrem, 0), UINT64_MAX - 8};
	for (int i = 0; i < 3; i++) {
		KT_OK(zb_pair(&z));
		w = kt_wr(2, KINET_WR_RDMA_WRITE, 0, &s, 1, bad_remote[i], kt_rkey(&z.zrem));
		KT_CHECK_EQ(zb_run(&z, &w), KINET_SYND_REMOTE_ACCESS_ERR);
		kt_pair_destroy(&z.p);
	}
	const struct kinet_sge bad_local[3] = {zb_sge(&z.zloc, LEN - 15, 16), zb_sge(&z.zloc, 0, LEN + 1),
					       zb_sge(&z.zloc, kt_addr(&z.zloc, 0), 16)};
	for (int i = 0; i < 3; i++) {
		KT_OK(zb_pair(&z));
		w = kt_wr(3, KINET_WR_RDMA_WRITE, 0, &bad_local[i], 1, 0, kt_rkey(&z.zrem));
		KT_CHECK_EQ(zb_run(&z, &w), KINET_SYND_LOCAL_PROT_ERR);
		kt_pair_destroy(&z.p);
	}
	KT_OK(zb_pair(&z));
	zb_close(&z);
}

/* Unknown access bits are still refused. */
KT_TEST(flags)
{
	struct kinet_ctx *ctx;
	struct kinet_mr *mr = NULL;
	static uint8_t buf[64];

	KT_OK(kt_ctx_open(1, &ctx));
	KT_CHECK_EQ(kinet_mr_reg(ctx, buf, sizeof(buf), KINET_ACCESS_ZERO_BASED << 1, &mr), -EINVAL);
	KT_OK(kinet_mr_reg(ctx, buf, sizeof(buf), KINET_ACCESS_ZERO_BASED, &mr));
	KT_OK(kinet_mr_dereg(mr));
	kinet_ctx_close(ctx);
}

KT_MAIN(offsets, ranges, flags)
