/*
 * Device API, low level, under host emulation: WQE layouts byte for byte,
 * reserve / prepare / mark ready / submit in every doorbell mode, CQEs
 * polled at an index, a WAIT on another QP's CQ, receive WQEs and the
 * receive CQ.
 */
#include "kt_dev.h"

/* Waits for the send CQE at ci with the low-level calls; returns its status
 * (0 or syndrome), -1 on timeout; consumes it. */
static int ll_cqe(struct kinet_dev_qp *d, uint64_t *ci, uint16_t *wc)
{
	struct kinet_dev_cqe cqe;
	if (kinet_dev_cq_wait_at(d->send_cq, *ci, 5000000000ull, &cqe))
		return -1;
	if (cqe.qpn != d->qpn || (cqe.opcode != KINET_CQE_REQ && !kinet_dev_cqe_is_error(&cqe)))
		return -2;
	int st = (int)cqe.syndrome;
	if (wc)
		*wc = cqe.wqe_counter;
	*ci += 1;
	kinet_dev_cq_consume(d->send_cq, *ci);
	return st;
}

KT_TEST(layout_matches_wire)
{
	uint8_t ring[64 * 4] __attribute__((aligned(64)));
	struct kinet_dev_qp q;
	uint8_t exp[64];
	uint64_t data = 0x1122334455667788ull;

	memset(&q, 0, sizeof(q));
	q.sq = ring;
	q.sq_mask = 3;
	q.qpn = 0xabcde;
	q.max_inline = 28;

	/* write: ctrl + raddr + data */
	memset(ring, 0xee, sizeof(ring));
	kinet_dev_wqe_prep_write(&q, 5, KINET_DEV_WQE_SIGNALED, (void *)0x1000, 7, 0x2000, 9, 300);
	memset(exp, 0, sizeof(exp));
	kinet_wqe_set_ctrl((struct kinet_wqe_ctrl_seg *)exp, KINET_WQE_OP_RDMA_WRITE, 5, 0xabcde, 3,
			   KINET_WQE_CTRL_CQ_UPDATE, 0);
	kinet_wqe_set_raddr((struct kinet_wqe_raddr_seg *)(exp + 16), 0x2000, 9);
	kinet_wqe_set_data((struct kinet_wqe_data_seg *)(exp + 32), 0x1000, 300, 7);
	KT_CHECK(memcmp(ring + 64, exp, 64) == 0);
	KT_CHECK(kinet_dev_sq_wqe(&q, 5) == ring + 64);

	/* fetch-add: ctrl + raddr + atomic + data(8) */
	kinet_dev_wqe_prep_fetch_add(&q, 6, 0, (uint64_t *)0x3000, 11, 0x4000, 12, 5);
	memset(exp, 0, sizeof(exp));
	kinet_wqe_set_ctrl((struct kinet_wqe_ctrl_seg *)exp, KINET_WQE_OP_ATOMIC_FA, 6, 0xabcde, 4, 0, 0);
	kinet_wqe_set_raddr((struct kinet_wqe_raddr_seg *)(exp + 16), 0x4000, 12);
	kinet_wqe_set_atomic((struct kinet_wqe_atomic_seg *)(exp + 32), 5, 0);
	kinet_wqe_set_data((struct kinet_wqe_data_seg *)(exp + 48), 0x3000, 8, 11);
	KT_CHECK(memcmp(ring + 128, exp, 64) == 0);

	/* compare-swap: swap in swap_add, compare in compare */
	kinet_dev_wqe_prep_compare_swap(&q, 7, 0, (uint64_t *)0x3000, 11, 0x4000, 12, 1, 2);
	kinet_wqe_set_ctrl((struct kinet_wqe_ctrl_seg *)exp, KINET_WQE_OP_ATOMIC_CS, 7, 0xabcde, 4, 0, 0);
	kinet_wqe_set_atomic((struct kinet_wqe_atomic_seg *)(exp + 32), 2, 1);
	KT_CHECK(memcmp(ring + 192, exp, 64) == 0);

	/* inline write: 28 bytes fit, 29 do not */
	KT_OK(kinet_dev_wqe_prep_write_inline(&q, 8, 0, &data, 8, 0x5000, 13));
	memset(exp, 0, sizeof(exp));
	kinet_wqe_set_ctrl((struct kinet_wqe_ctrl_seg *)exp, KINET_WQE_OP_RDMA_WRITE, 8, 0xabcde,
			   2 + kinet_inline_ds(8), 0, 0);
	kinet_wqe_set_raddr((struct kinet_wqe_raddr_seg *)(exp + 16), 0x5000, 13);
	uint32_t hdr = kinet_be32(KINET_INLINE_SEG_FLAG | 8);
	memcpy(exp + 32, &hdr, 4);
	memcpy(exp + 36, &data, 8);
	KT_CHECK(memcmp(ring, exp, 64) == 0);
	uint8_t big[29] = {0};
	KT_OK(kinet_dev_wqe_prep_write_inline(&q, 8, 0, big, 28, 0x5000, 13));
	KT_CHECK_EQ(kinet_wqe_ctrl_ds((const struct kinet_wqe_ctrl_seg *)ring), 4);
	KT_CHECK_EQ(kinet_dev_wqe_prep_write_inline(&q, 8, 0, big, 29, 0x5000, 13), -EINVAL);

	/* send-imm: ctrl(imm) + data; zero-length send: ctrl only */
	kinet_dev_wqe_prep_send_imm(&q, 9, 0, (void *)0x1000, 7, 64, 0xdeadbeef);
	const struct kinet_wqe_ctrl_seg *c = (const struct kinet_wqe_ctrl_seg *)(ring + 64);
	KT_CHECK_EQ(kinet_wqe_ctrl_opcode(c), KINET_WQE_OP_SEND_IMM);
	KT_CHECK_EQ(kinet_wqe_ctrl_ds(c), 2);
	KT_CHECK_EQ(kinet_wqe_ctrl_index(c), 9);
	KT_CHECK_EQ(c->imm, kinet_be32(0xdeadbeef));
	kinet_dev_wqe_prep_send(&q, 9, 0, (void *)0x1000, 7, 0);
	KT_CHECK_EQ(kinet_wqe_ctrl_ds(c), 1);
	kinet_dev_wqe_prep_nop(&q, 10, KINET_DEV_WQE_FENCE);
	c = (const struct kinet_wqe_ctrl_seg *)(ring + 128);
	KT_CHECK_EQ(kinet_wqe_ctrl_opcode(c), KINET_WQE_OP_NOP);
	KT_CHECK_EQ(kinet_wqe_ctrl_ds(c), 1);
	KT_CHECK_EQ(c->fm_ce_se, KINET_WQE_CTRL_FENCE);
	kinet_dev_wqe_prep_read(&q, 0x10003, 0, (void *)0x1000, 7, 0x2000, 9, 0);
	c = (const struct kinet_wqe_ctrl_seg *)(ring + 192);
	KT_CHECK_EQ(kinet_wqe_ctrl_ds(c), 2); /* no data segment for 0 bytes */
	KT_CHECK_EQ(kinet_wqe_ctrl_index(c), 3);

	/* wait: ctrl + wait segment (CQ number, CQE index) */
	memset(ring, 0xee, sizeof(ring));
	kinet_dev_wqe_prep_wait(&q, 11, KINET_DEV_WQE_SIGNALED, 0x123456, 0x89abcdef);
	memset(exp, 0, sizeof(exp));
	kinet_wqe_set_ctrl((struct kinet_wqe_ctrl_seg *)exp, KINET_WQE_OP_WAIT, 11, 0xabcde, 2,
			   KINET_WQE_CTRL_CQ_UPDATE, 0);
	kinet_wqe_set_wait((struct kinet_wqe_wait_seg *)(exp + 16), 0x123456, 0x89abcdef);
	KT_CHECK(memcmp(ring + 192, exp, 64) == 0);
}

KT_TEST(extend16)
{
	KT_CHECK_EQ(kinet_devi_extend16(0, 0), 0);
	KT_CHECK_EQ(kinet_devi_extend16(0, 5), 5);
	KT_CHECK_EQ(kinet_devi_extend16(65530, 3), 65539);
	KT_CHECK_EQ(kinet_devi_extend16(0x12345, 0x2345), 0x12345);
	KT_CHECK_EQ(kinet_devi_extend16(0x12345, 0x2344), 0x12344); /* just below: not ahead */
	KT_CHECK_EQ(kinet_devi_extend16(0x1fff0, 0x0005), 0x20005);
}

/* Every low-level prepare through the engine, one doorbell mode. */
static void ll_all_ops(enum kinet_db_mode mode)
{
	struct kd_opts o;
	struct kd_pair p;
	struct kd_buf a, b;
	uint64_t ci = 0, idx;
	uint16_t wc;

	kd_opts_init(&o);
	o.db_mode = mode;
	o.sharing = KINET_SHARE_EXCLUSIVE;
	KT_OK(kd_pair_create(&p, &o));
	struct kinet_dev_qp *d = p.s[0].d, *t = p.s[1].d;
	KT_CHECK_EQ(d->db_mode, (uint32_t)mode);
	KT_OK(kd_buf_alloc(p.ctx[0], &a, 4096));
	KT_OK(kd_buf_alloc(p.ctx[1], &b, 4096));
	kd_pattern(a.p, 4096, (uint32_t)mode);

	/* write + nop, one doorbell; only the NOP is signalled */
	KT_OK(kinet_dev_sq_reserve(d, 2, &idx));
	KT_CHECK_EQ(idx, 0);
	kinet_dev_wqe_prep_write(d, idx, 0, a.p, a.key, kd_addr(&b, 0), b.key, 1000);
	kinet_dev_wqe_prep_nop(d, idx + 1, KINET_DEV_WQE_SIGNALED);
	kinet_dev_sq_mark_ready(d, idx, 2);
	kinet_dev_sq_submit(d);
	KT_CHECK_EQ(ll_cqe(d, &ci, &wc), 0);
	KT_CHECK_EQ(wc, 1);
	KT_CHECK(memcmp(a.p, b.p, 1000) == 0);
	KT_CHECK(b.p[1000] == 0);
	d->sq_done = 2; /* the low-level user keeps its own books */

	/* inline write */
	uint64_t v = 0x0102030405060708ull;
	KT_OK(kinet_dev_sq_reserve(d, 1, &idx));
	KT_OK(kinet_dev_wqe_prep_write_inline(d, idx, KINET_DEV_WQE_SIGNALED, &v, 8, kd_addr(&b, 2048),
					      b.key));
	KT_OK(kinet_dev_sq_commit(d, idx, 1, NULL));
	KT_CHECK_EQ(ll_cqe(d, &ci, &wc), 0);
	KT_CHECK_EQ(wc, idx & 0xffff);
	KT_CHECK(memcmp(b.p + 2048, &v, 8) == 0);
	d->sq_done = idx + 1;

	/* read */
	kd_pattern(b.p + 3000, 500, 77);
	KT_OK(kinet_dev_sq_reserve(d, 1, &idx));
	kinet_dev_wqe_prep_read(d, idx, KINET_DEV_WQE_SIGNALED, a.p + 3000, a.key, kd_addr(&b, 3000), b.key,
				500);
	KT_OK(kinet_dev_sq_commit(d, idx, 1, NULL));
	KT_CHECK_EQ(ll_cqe(d, &ci, NULL), 0);
	KT_CHECK(memcmp(a.p + 3000, b.p + 3000, 500) == 0);
	d->sq_done = idx + 1;

	/* fetch-add then compare-swap (hit) then compare-swap (miss) */
	uint64_t *target = (uint64_t *)(b.p + 3584), *res = (uint64_t *)(a.p + 3584);
	*target = 40;
	KT_OK(kinet_dev_sq_reserve(d, 3, &idx));
	kinet_dev_wqe_prep_fetch_add(d, idx, KINET_DEV_WQE_SIGNALED, res, a.key, kd_addr(&b, 3584), b.key, 2);
	kinet_dev_wqe_prep_compare_swap(d, idx + 1, KINET_DEV_WQE_SIGNALED, res + 1, a.key, kd_addr(&b, 3584),
					b.key, 42, 100);
	kinet_dev_wqe_prep_compare_swap(d, idx + 2, KINET_DEV_WQE_SIGNALED, res + 2, a.key, kd_addr(&b, 3584),
					b.key, 42, 200);
	KT_OK(kinet_dev_sq_commit(d, idx, 3, NULL));
	for (int i = 0; i < 3; i++) {
		KT_CHECK_EQ(ll_cqe(d, &ci, &wc), 0);
		KT_CHECK_EQ(wc, (idx + (uint64_t)i) & 0xffff);
	}
	KT_CHECK_EQ(res[0], 40);
	KT_CHECK_EQ(res[1], 42);
	KT_CHECK_EQ(res[2], 100);
	KT_CHECK_EQ(*target, 100);
	d->sq_done = idx + 3;

	/* A WAIT on the target's send CQ holds the NOP behind it until the
	 * target's first CQE exists. */
	struct kinet_dev_cqe e;
	uint64_t tidx;
	KT_OK(kinet_dev_sq_reserve(d, 2, &idx));
	kinet_dev_wqe_prep_wait(d, idx, KINET_DEV_WQE_SIGNALED, t->send_cq->cqn, 0);
	kinet_dev_wqe_prep_nop(d, idx + 1, KINET_DEV_WQE_SIGNALED);
	KT_OK(kinet_dev_sq_commit(d, idx, 2, NULL));
	KT_CHECK_EQ(kinet_dev_cq_wait_at(d->send_cq, ci, 30000000ull, &e), -ETIMEDOUT);
	KT_OK(kinet_dev_sq_reserve(t, 1, &tidx));
	kinet_dev_wqe_prep_nop(t, tidx, KINET_DEV_WQE_SIGNALED);
	KT_OK(kinet_dev_sq_commit(t, tidx, 1, NULL));
	for (int i = 0; i < 2; i++) {
		KT_CHECK_EQ(ll_cqe(d, &ci, &wc), 0);
		KT_CHECK_EQ(wc, (idx + (uint64_t)i) & 0xffff);
	}
	d->sq_done = idx + 2;

	/* receives (low level) on the target, then send, send-imm, write-imm */
	uint64_t ridx;
	KT_OK(kinet_dev_rq_reserve(t, 3, &ridx));
	for (int i = 0; i < 3; i++)
		kinet_dev_rq_prep(t, ridx + (uint64_t)i, b.p + 256 * (size_t)i, b.key, 256);
	KT_OK(kinet_dev_rq_commit(t, ridx, 3));
	uint32_t len = 0, imm = 0;
	uint64_t rindex = 99;
	KT_CHECK_EQ(kinet_dev_rq_poll(t, &len, &imm, &rindex), -EAGAIN);
	KT_OK(kinet_dev_sq_reserve(d, 3, &idx));
	kinet_dev_wqe_prep_send(d, idx, KINET_DEV_WQE_SIGNALED, a.p, a.key, 100);
	kinet_dev_wqe_prep_send_imm(d, idx + 1, KINET_DEV_WQE_SIGNALED, a.p + 100, a.key, 50, 0xabcdef01);
	kinet_dev_wqe_prep_write_imm(d, idx + 2, KINET_DEV_WQE_SIGNALED, a.p + 200, a.key, kd_addr(&b, 1024),
				     b.key, 60, 0x55);
	KT_OK(kinet_dev_sq_commit(d, idx, 3, NULL));
	for (int i = 0; i < 3; i++)
		KT_CHECK_EQ(ll_cqe(d, &ci, NULL), 0);
	KT_OK(kinet_dev_recv(t, &len, &imm, &rindex));
	KT_CHECK_EQ(len, 100);
	KT_CHECK_EQ(imm, 0);
	KT_CHECK_EQ(rindex, ridx);
	KT_CHECK(memcmp(b.p, a.p, 100) == 0);
	KT_OK(kinet_dev_recv(t, &len, &imm, &rindex));
	KT_CHECK_EQ(len, 50);
	KT_CHECK_EQ(imm, 0xabcdef01);
	KT_CHECK_EQ(rindex, ridx + 1);
	KT_CHECK(memcmp(b.p + 256, a.p + 100, 50) == 0);
	KT_OK(kinet_dev_recv(t, &len, &imm, &rindex));
	KT_CHECK_EQ(len, 60);
	KT_CHECK_EQ(imm, 0x55);
	KT_CHECK_EQ(rindex, ridx + 2);
	KT_CHECK(memcmp(b.p + 1024, a.p + 200, 60) == 0);
	KT_CHECK_EQ(t->rq_done, ridx + 3);

	/* The CQ doorbell record follows the consumer index lazily (at most a
	 * quarter of the ring behind), and exactly after kinet_dev_cq_publish. */
	uint32_t pub = kinet_be32(d->send_cq->dbrec[KINET_CQ_DBR_CI]);
	KT_CHECK(pub <= ci);
	KT_CHECK(ci - pub < kinet_devi_cq_publish_step(d->send_cq));
	KT_CHECK_EQ(d->send_cq->ci_published, pub);
	kinet_dev_cq_publish(d->send_cq, ci);
	KT_CHECK_EQ(kinet_be32(d->send_cq->dbrec[KINET_CQ_DBR_CI]), ci);
	KT_CHECK_EQ(d->send_cq->ci_published, ci);
	KT_CHECK_EQ(kinet_dev_qp_error(d), 0);

	kd_buf_free(&a);
	kd_buf_free(&b);
	kd_pair_destroy(&p);
}

KT_TEST(ops_db_cpu)
{
	ll_all_ops(KINET_DB_CPU);
}

KT_TEST(ops_db_gpu)
{
	ll_all_ops(KINET_DB_GPU);
}

KT_TEST(ops_db_bf)
{
	ll_all_ops(KINET_DB_BF);
}

/* The queue wraps many times; doorbells in GPU/BF modes see 16-bit PIs. */
KT_TEST(wraparound_all_modes)
{
	for (int m = 0; m < 3; m++) {
		struct kd_opts o;
		struct kd_pair p;
		struct kd_buf a, b;
		kd_opts_init(&o);
		o.sq_depth = 8;
		o.db_mode = kt_db_modes[m];
		KT_OK(kd_pair_create(&p, &o));
		struct kinet_dev_qp *d = p.s[0].d;
		KT_OK(kd_buf_alloc(p.ctx[0], &a, 8));
		KT_OK(kd_buf_alloc(p.ctx[0], &b, 8 * 70000 / 64));
		/* 70000 > 65536 WQEs would take long; 9000 wraps the 8-slot ring
		 * ~1100 times; the 16-bit counters are covered by extend16. */
		uint64_t t = 0;
		for (uint64_t i = 0; i < 9000; i++) {
			uint64_t *dst = (uint64_t *)(void *)(b.p) + (i % 1000);
			KT_OK(kinet_dev_put_inline(d, &i, 8, (uint64_t)(uintptr_t)dst, b.key, &t));
		}
		KT_OK(kinet_dev_quiet(d));
		KT_CHECK_EQ(d->sq_done, 9000);
		KT_CHECK_EQ(t, 9000);
		for (uint64_t i = 0; i < 1000; i++)
			KT_CHECK_EQ(((uint64_t *)(void *)b.p)[i], 8000 + i);
		printf("  %s: ok\n", kt_db_names[o.db_mode]);
		kd_buf_free(&a);
		kd_buf_free(&b);
		kd_pair_destroy(&p);
	}
}

KT_TEST(reserve_limits)
{
	struct kd_opts o;
	struct kd_pair p;
	uint64_t idx;
	kd_opts_init(&o);
	o.sq_depth = 16;
	o.rq_depth = 4;
	KT_OK(kd_pair_create(&p, &o));
	struct kinet_dev_qp *d = p.s[0].d;
	KT_CHECK_EQ(kinet_dev_sq_depth(d), 16);
	KT_CHECK_EQ(kinet_dev_sq_reserve(d, 0, &idx), -EINVAL);
	KT_CHECK_EQ(kinet_dev_sq_reserve(d, 17, &idx), -EINVAL);
	/* RQ full: EAGAIN at once, nothing claimed */
	KT_OK(kinet_dev_rq_reserve(d, 4, &idx));
	KT_CHECK_EQ(kinet_dev_rq_reserve(d, 1, &idx), -EAGAIN);
	KT_CHECK_EQ(d->rq_reserved, 4);
	kd_pair_destroy(&p);
}

KT_MAIN(layout_matches_wire, extend16, ops_db_cpu, ops_db_gpu, ops_db_bf, wraparound_all_modes,
	reserve_limits)
