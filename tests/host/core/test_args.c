/*
 * Invalid host API arguments return -EINVAL (the log line naming the
 * argument is not captured here) and change nothing.
 */
#include "kinet/mesh.h"
#include "kinet/team.h"
#include "kt_host.h"
#include <limits.h>

KT_TEST(ctx_args)
{
	struct kinet_ctx_attr attr;
	struct kinet_ctx *ctx = NULL;

	kinet_ctx_attr_init(&attr);
	KT_CHECK(attr.provider == NULL);
	KT_CHECK_EQ(attr.engine_threads, 0);
	KT_CHECK_EQ(attr.cuda_device, -1);
	attr.cuda_device = KT_HOST_ONLY;
	KT_CHECK_EQ(kinet_ctx_open(&attr, NULL), -EINVAL);
	attr.engine_threads = -1;
	KT_CHECK_EQ(kinet_ctx_open(&attr, &ctx), -EINVAL);
	KT_CHECK(ctx == NULL);
	/* Far too many engine threads: clamped, not refused. */
	attr.engine_threads = 100000;
	KT_OK(kinet_ctx_open(&attr, &ctx));
	KT_OK(kt_smoke(ctx));
	KT_OK(kinet_ctx_close(ctx));
	ctx = NULL;
	KT_CHECK_EQ(kinet_ctx_close(NULL), -EINVAL);
	KT_CHECK_EQ(kinet_ctx_pause(NULL), -EINVAL);
	KT_CHECK_EQ(kinet_ctx_resume(NULL), -EINVAL);
	struct kinet_error err;
	KT_CHECK_EQ(kinet_ctx_last_error(NULL, &err), -EINVAL);
	KT_OK(kt_ctx_open(1, &ctx));
	KT_CHECK_EQ(kinet_ctx_last_error(ctx, NULL), -EINVAL);
	KT_OK(kinet_ctx_last_error(ctx, &err));
	KT_CHECK_EQ(err.status, 0);
	KT_OK(kinet_ctx_close(ctx));
}

KT_TEST(mr_args)
{
	struct kinet_ctx *ctx;
	struct kinet_mr *mr = NULL;
	static uint8_t buf[4096];

	KT_OK(kt_ctx_open(1, &ctx));
	KT_CHECK_EQ(kinet_mr_reg(NULL, buf, sizeof(buf), KT_ACC_ALL, &mr), -EINVAL);
	KT_CHECK_EQ(kinet_mr_reg(ctx, NULL, sizeof(buf), KT_ACC_ALL, &mr), -EINVAL);
	KT_CHECK_EQ(kinet_mr_reg(ctx, buf, sizeof(buf), KT_ACC_ALL, NULL), -EINVAL);
	KT_CHECK_EQ(kinet_mr_reg(ctx, buf, 0, KT_ACC_ALL, &mr), -EINVAL);
	/* remote write or atomic without local write makes no sense */
	KT_CHECK_EQ(kinet_mr_reg(ctx, buf, sizeof(buf), KINET_ACCESS_REMOTE_WRITE, &mr), -EINVAL);
	KT_CHECK_EQ(kinet_mr_reg(ctx, buf, sizeof(buf), KINET_ACCESS_REMOTE_ATOMIC, &mr), -EINVAL);
	/* unknown access bits */
	KT_CHECK_EQ(kinet_mr_reg(ctx, buf, sizeof(buf), KT_ACC_ALL | (1u << 12), &mr), -EINVAL);
	KT_CHECK(mr == NULL);
	KT_CHECK_EQ(kinet_mr_dereg(NULL), -EINVAL);
	KT_CHECK_EQ(kinet_mr_pack(NULL, NULL), -EINVAL);
	/* The getters' NULL values, as kinet_mr(3) documents them. */
	KT_CHECK_EQ(kinet_mr_lkey(NULL), 0);
	KT_CHECK_EQ(kinet_mr_rkey(NULL), 0);
	KT_CHECK_EQ(kinet_mr_mem_type(NULL), KINET_MEM_HOST);

	/* And the valid ones work. */
	KT_OK(kinet_mr_reg(ctx, buf, sizeof(buf), 0, &mr));
	KT_OK(kinet_mr_dereg(mr));
	KT_OK(kinet_mr_reg(ctx, buf, sizeof(buf), KINET_ACCESS_REMOTE_READ, &mr));
	KT_CHECK_EQ(kinet_mr_pack(mr, NULL), -EINVAL);
	struct kinet_mr_info info;
	KT_OK(kinet_mr_pack(mr, &info));
	KT_CHECK(info.addr == (uint64_t)(uintptr_t)buf);
	KT_CHECK_EQ(info.length, sizeof(buf));
	KT_CHECK_EQ(info.rkey, kinet_mr_rkey(mr));
	KT_CHECK_EQ(kinet_mr_mem_type(mr), KINET_MEM_HOST);
	KT_OK(kinet_mr_dereg(mr));
	kinet_ctx_close(ctx);
}

KT_TEST(cq_args)
{
	struct kinet_ctx *ctx;
	struct kinet_cq *cq = NULL;
	struct kinet_cq_attr a = {.depth = 16};
	struct kinet_wc wc;

	KT_OK(kt_ctx_open(1, &ctx));
	KT_CHECK_EQ(kinet_cq_create(NULL, &a, &cq), -EINVAL);
	KT_CHECK_EQ(kinet_cq_create(ctx, NULL, &cq), -EINVAL);
	KT_CHECK_EQ(kinet_cq_create(ctx, &a, NULL), -EINVAL);
	a.depth = 0;
	KT_CHECK_EQ(kinet_cq_create(ctx, &a, &cq), -EINVAL);
	a.depth = 0x80000000u + 1;
	KT_CHECK(kinet_cq_create(ctx, &a, &cq) < 0);
	KT_CHECK(cq == NULL);
	KT_CHECK_EQ(kinet_cq_destroy(NULL), -EINVAL);
	a.depth = 16;
	KT_OK(kinet_cq_create(ctx, &a, &cq));
	KT_CHECK_EQ(kinet_cq_poll(NULL, 1, &wc), -EINVAL);
	KT_CHECK_EQ(kinet_cq_poll(cq, 1, NULL), -EINVAL);
	KT_CHECK_EQ(kinet_cq_poll(cq, -1, &wc), -EINVAL);
	KT_CHECK_EQ(kinet_cq_poll(cq, 1, &wc), 0);
	KT_OK(kinet_cq_destroy(cq));
	kinet_ctx_close(ctx);
}

/* Attribute structs start with their size: the _attr_init functions set
 * it, 0 means this header's layout, a newer header's larger struct is taken
 * when its extra bytes are zero, and anything else is -EINVAL, whatever
 * the other fields say. */
KT_TEST(attr_size)
{
	struct kinet_ctx *ctx;
	struct kinet_cq *cq = NULL;
	struct kinet_qp *qp = NULL;
	struct {
		struct kinet_cq_attr a;
		uint8_t newer[16]; /* fields of a later version */
	} big;
	struct kinet_ctx_attr xa;
	struct kinet_cq_attr ca;
	struct kinet_qp_attr qa;
	struct kinet_boot_attr ba;
	struct kinet_mesh_attr ma;
	struct kinet_team_attr ta;

	kinet_ctx_attr_init(&xa);
	kinet_cq_attr_init(&ca);
	kinet_qp_attr_init(&qa);
	kinet_boot_attr_init(&ba);
	kinet_mesh_attr_init(&ma);
	kinet_team_attr_init(&ta);
	KT_CHECK_EQ(xa.size, sizeof(xa));
	KT_CHECK_EQ(ca.size, sizeof(ca));
	KT_CHECK_EQ(ca.depth, 512u);
	KT_CHECK_EQ(ca.flags, 0u);
	KT_CHECK_EQ(qa.size, sizeof(qa));
	KT_CHECK_EQ(ba.size, sizeof(ba));
	KT_CHECK_EQ(ma.size, sizeof(ma));
	KT_CHECK_EQ(ma.qp.size, sizeof(ma.qp));
	KT_CHECK_EQ(ta.size, sizeof(ta));

	xa.cuda_device = KT_HOST_ONLY;
	xa.size = sizeof(xa) - 1;
	KT_CHECK_EQ(kinet_ctx_open(&xa, &ctx), -EINVAL);
	xa.size = 0;
	KT_OK(kinet_ctx_open(&xa, &ctx));

	ca.size = 4;
	KT_CHECK_EQ(kinet_cq_create(ctx, &ca, &cq), -EINVAL);
	ca.size = 0xdeadbeef;
	KT_CHECK_EQ(kinet_cq_create(ctx, &ca, &cq), -EINVAL);
	KT_CHECK(cq == NULL);
	memset(&big, 0, sizeof(big));
	big.a.size = sizeof(big);
	big.a.depth = 64;
	KT_OK(kinet_cq_create(ctx, &big.a, &cq)); /* unknown fields at their defaults */
	KT_CHECK_EQ(kinet_cq_depth(cq), 64u);
	KT_OK(kinet_cq_destroy(cq));
	cq = NULL;
	big.newer[3] = 1;
	KT_CHECK_EQ(kinet_cq_create(ctx, &big.a, &cq), -EINVAL); /* an unknown field set */
	KT_CHECK(cq == NULL);
	ca.size = 0;
	KT_OK(kinet_cq_create(ctx, &ca, &cq));

	qa.send_cq = cq;
	qa.recv_cq = NULL;
	qa.size = 1;
	KT_CHECK_EQ(kinet_qp_create(ctx, &qa, &qp), -EINVAL);
	KT_CHECK(qp == NULL);
	qa.size = sizeof(qa);
	KT_OK(kinet_qp_create(ctx, &qa, &qp));
	KT_OK(kinet_qp_destroy(qp));

	struct kinet_boot *boot = NULL;
	ba.size = 2;
	KT_CHECK_EQ(kinet_boot_init(&ba, &boot), -EINVAL);
	KT_CHECK(boot == NULL);

	KT_OK(kinet_cq_destroy(cq));
	kinet_ctx_close(ctx);
}

KT_TEST(qp_args)
{
	struct kinet_ctx *ctx;
	struct kinet_cq *cq;
	struct kinet_qp *qp = NULL;
	struct kinet_qp_attr a;
	struct kinet_cq_attr ca = {.depth = 64};

	KT_OK(kt_ctx_open(1, &ctx));
	KT_OK(kinet_cq_create(ctx, &ca, &cq));
	kinet_qp_attr_init(&a);
	KT_CHECK(a.sq_depth > 0);
	KT_CHECK(a.timeout_ms > 0);
	KT_CHECK(a.rnr_timeout_ms > 0);
	KT_CHECK_EQ(a.db_mode, KINET_DB_AUTO);
	a.send_cq = cq;
	a.recv_cq = cq;
	a.rq_depth = 16;
	a.max_recv_sge = 1;

	KT_CHECK_EQ(kinet_qp_create(NULL, &a, &qp), -EINVAL);
	KT_CHECK_EQ(kinet_qp_create(ctx, NULL, &qp), -EINVAL);
	KT_CHECK_EQ(kinet_qp_create(ctx, &a, NULL), -EINVAL);
	struct kinet_qp_attr b = a;
	b.send_cq = NULL;
	KT_CHECK_EQ(kinet_qp_create(ctx, &b, &qp), -EINVAL);
	b = a;
	b.sq_depth = 0;
	KT_CHECK_EQ(kinet_qp_create(ctx, &b, &qp), -EINVAL);
	b = a;
	b.db_mode = (enum kinet_db_mode)17;
	KT_CHECK_EQ(kinet_qp_create(ctx, &b, &qp), -EINVAL);
	b = a;
	b.sharing = (enum kinet_qp_sharing)9;
	KT_CHECK_EQ(kinet_qp_create(ctx, &b, &qp), -EINVAL);
	b = a;
	b.max_recv_sge = 0;
	KT_CHECK_EQ(kinet_qp_create(ctx, &b, &qp), -EINVAL);
	KT_CHECK(qp == NULL);

	/* A CQ of another context. */
	struct kinet_ctx *ctx2;
	struct kinet_cq *cq2;
	KT_OK(kt_ctx_open(1, &ctx2));
	KT_OK(kinet_cq_create(ctx2, &ca, &cq2));
	b = a;
	b.send_cq = cq2;
	KT_CHECK_EQ(kinet_qp_create(ctx, &b, &qp), -EINVAL);

	KT_OK(kinet_qp_create(ctx, &a, &qp));
	KT_CHECK_EQ(kinet_qp_get_state(qp), KINET_QPS_RESET);
	KT_CHECK(kinet_qp_db_mode(qp) != KINET_DB_AUTO);
	struct kinet_qp_info info;
	KT_CHECK_EQ(kinet_qp_pack(NULL, &info), -EINVAL);
	KT_CHECK_EQ(kinet_qp_pack(qp, NULL), -EINVAL);
	KT_CHECK_EQ(kinet_qp_connect(NULL, &info), -EINVAL);
	KT_CHECK_EQ(kinet_qp_connect(qp, NULL), -EINVAL);
	KT_OK(kinet_qp_pack(qp, &info));
	KT_CHECK_EQ(info.qpn, kinet_qp_num(qp));
	KT_CHECK_EQ(kinet_qp_set_error(NULL), -EINVAL);
	KT_CHECK_EQ(kinet_qp_destroy(NULL), -EINVAL);
	/* The getters' NULL values, as kinet_qp(3) documents them. */
	KT_CHECK_EQ(kinet_qp_num(NULL), 0);
	KT_CHECK_EQ(kinet_qp_db_mode(NULL), KINET_DB_AUTO);
	KT_CHECK_EQ(kinet_qp_get_path(NULL), KINET_QP_PATH_ENGINE);
	KT_CHECK_EQ(kinet_qp_get_state(NULL), KINET_QPS_ERR);
	/* A CQ in use cannot go away under its QP. */
	KT_CHECK(kinet_cq_destroy(cq) < 0);
	KT_OK(kinet_qp_destroy(qp));
	KT_OK(kinet_cq_destroy(cq));
	KT_OK(kinet_cq_destroy(cq2));
	kinet_ctx_close(ctx2);
	kinet_ctx_close(ctx);
}

/* Connecting to a QP number this process does not have, one destroyed
 * since it was packed or a made-up one, is refused (-ENOENT) and leaves
 * the QP in RESET, ready for its real peer.  (A QP of another process
 * cannot be checked: there connecting succeeds, as on RC hardware, and
 * work fails within the QP's timeout: node_peer_death.) */
KT_TEST(connect_to_nobody)
{
	struct kinet_ctx *ctx, *ctx2;
	struct kt_pair p, q;
	struct kt_buf b;
	struct kinet_wc wc;
	struct kinet_qp_info info, gone_info, forged;
	struct kinet_qp_attr qa;
	struct kinet_qp *gone;

	KT_OK(kt_ctx_open(1, &ctx));
	KT_OK(kt_pair_create_unconnected(&p, ctx, ctx, NULL));
	KT_OK(kt_buf_alloc(ctx, &b, 4096, KT_ACC_ALL, 0x33));
	KT_OK(kinet_qp_pack(p.qp[1], &info));

	forged = info;
	forged.qpn = 0xfffff0;
	KT_CHECK_EQ(kinet_qp_connect(p.qp[0], &forged), -ENOENT);
	KT_CHECK_EQ(kinet_qp_get_state(p.qp[0]), KINET_QPS_RESET);

	kinet_qp_attr_init(&qa);
	qa.send_cq = p.cq[1];
	KT_OK(kinet_qp_create(ctx, &qa, &gone));
	KT_OK(kinet_qp_pack(gone, &gone_info));
	KT_OK(kinet_qp_destroy(gone));
	KT_CHECK_EQ(kinet_qp_connect(p.qp[0], &gone_info), -ENOENT);
	KT_CHECK_EQ(kinet_qp_get_state(p.qp[0]), KINET_QPS_RESET);

	/* The same number in a context closed since: gone too. */
	KT_OK(kt_ctx_open(1, &ctx2));
	KT_OK(kt_pair_create_unconnected(&q, ctx2, ctx2, NULL));
	KT_OK(kinet_qp_pack(q.qp[1], &gone_info));
	kt_pair_destroy(&q);
	KT_OK(kinet_ctx_close(ctx2));
	KT_CHECK_EQ(kinet_qp_connect(p.qp[0], &gone_info), -ENOENT);

	/* The real peer after all that. */
	KT_OK(kt_pair_connect(&p));
	struct kinet_sge s = kt_sge(&b, 0, 64);
	struct kinet_send_wr w =
		kt_wr(3, KINET_WR_RDMA_WRITE, KINET_SEND_SIGNALED, &s, 1, kt_addr(&b, 1024), kt_rkey(&b));
	KT_OK(kt_post(p.qp[0], &w));
	KT_OK(kt_poll1(p.cq[0], &wc));
	KT_OK(kt_wc_expect(&wc, 3, 0));
	KT_CHECK(kt_mem_is(b.p + 1024, 0x33, 64));
	kt_buf_free(&b);
	kt_pair_destroy(&p);
	kinet_ctx_close(ctx);
}

KT_TEST(post_args)
{
	struct kinet_ctx *ctx;
	struct kt_pair p;
	struct kt_pair_opts o;
	struct kt_buf b;
	struct kinet_wc wc[4];

	KT_OK(kt_ctx_open(1, &ctx));
	kt_pair_opts_init(&o);
	o.max_inline = 64;
	o.max_recv_sge = 2;
	KT_OK(kt_pair_create(&p, ctx, ctx, &o));
	KT_OK(kt_buf_alloc(ctx, &b, 4096, KT_ACC_ALL, 0));
	struct kinet_sge s = kt_sge(&b, 0, 64);
	struct kinet_send_wr w =
		kt_wr(1, KINET_WR_RDMA_WRITE, KINET_SEND_SIGNALED, &s, 1, kt_addr(&b, 1024), kt_rkey(&b));
	int bad = -1;
	KT_CHECK_EQ(kinet_qp_post_send(NULL, &w, 1, &bad), -EINVAL);
	KT_CHECK_EQ(kinet_qp_post_send(p.qp[0], NULL, 1, &bad), -EINVAL);
	KT_CHECK_EQ(kinet_qp_post_send(p.qp[0], &w, -1, &bad), -EINVAL);

	/* A batch with a bad request in the middle: those before it post. */
	struct kinet_sge big = kt_sge(&b, 0, 65); /* over max_inline */
	struct kinet_send_wr ws[3] = {
		kt_wr(10, KINET_WR_NOP, KINET_SEND_SIGNALED, NULL, 0, 0, 0),
		kt_wr(11, KINET_WR_RDMA_WRITE, KINET_SEND_SIGNALED | KINET_SEND_INLINE, &big, 1,
		      kt_addr(&b, 0), kt_rkey(&b)),
		kt_wr(12, KINET_WR_NOP, KINET_SEND_SIGNALED, NULL, 0, 0, 0),
	};
	bad = -1;
	KT_CHECK_EQ(kinet_qp_post_send(p.qp[0], ws, 3, &bad), -EINVAL);
	KT_CHECK_EQ(bad, 1);
	KT_OK(kt_poll1(p.cq[0], &wc[0]));
	KT_OK(kt_wc_expect(&wc[0], 10, 0));
	KT_CHECK_EQ(kt_poll_for(p.cq[0], 20, 4, wc), 0);

	/* Inline data from address 0 (the call copies it), or from a range
	 * that wraps: refused, nothing posted.  A zero-length SGE at 0 is
	 * no data. */
	struct kinet_sge nul = {.addr = 0, .length = 8, .lkey = kt_lkey(&b)};
	struct kinet_sge wrap = {.addr = UINT64_MAX - 3, .length = 8, .lkey = kt_lkey(&b)};
	struct kinet_sge none[2] = {{.addr = 0, .length = 0, .lkey = 0}, kt_sge(&b, 0, 8)};
	struct kinet_send_wr wi[4] = {
		kt_wr(20, KINET_WR_RDMA_WRITE, KINET_SEND_SIGNALED | KINET_SEND_INLINE, &nul, 1,
		      kt_addr(&b, 0), kt_rkey(&b)),
		kt_wr(21, KINET_WR_SEND, KINET_SEND_SIGNALED | KINET_SEND_INLINE, &nul, 1, 0, 0),
		kt_wr(22, KINET_WR_RDMA_WRITE, KINET_SEND_SIGNALED | KINET_SEND_INLINE, &wrap, 1,
		      kt_addr(&b, 0), kt_rkey(&b)),
		kt_wr(23, KINET_WR_RDMA_WRITE, KINET_SEND_SIGNALED | KINET_SEND_INLINE, none, 2,
		      kt_addr(&b, 2048), kt_rkey(&b)),
	};
	for (int i = 0; i < 3; i++)
		KT_CHECK_EQ(kt_post(p.qp[0], &wi[i]), -EINVAL);
	KT_CHECK_EQ(kt_poll_for(p.cq[0], 20, 4, wc), 0);
	KT_OK(kt_post(p.qp[0], &wi[3]));
	KT_OK(kt_poll1(p.cq[0], &wc[0]));
	KT_OK(kt_wc_expect(&wc[0], 23, 0));

	/* unknown opcode, negative SGE count, NULL SGE list, too many SGEs */
	struct kinet_send_wr x = w;
	x.opcode = (enum kinet_wr_opcode)77;
	KT_CHECK_EQ(kt_post(p.qp[0], &x), -EINVAL);
	x = w;
	x.num_sge = -1;
	KT_CHECK_EQ(kt_post(p.qp[0], &x), -EINVAL);
	x = w;
	x.sg_list = NULL;
	KT_CHECK_EQ(kt_post(p.qp[0], &x), -EINVAL);
	struct kinet_sge many[64];
	for (int i = 0; i < 64; i++)
		many[i] = kt_sge(&b, (size_t)i, 1);
	x = w;
	x.sg_list = many;
	x.num_sge = 64;
	KT_CHECK_EQ(kt_post(p.qp[0], &x), -EINVAL);
	/* atomics take exactly one 8-byte SGE */
	x = kt_wr(1, KINET_WR_ATOMIC_FETCH_AND_ADD, KINET_SEND_SIGNALED, many, 2, kt_addr(&b, 1024),
		  kt_rkey(&b));
	KT_CHECK_EQ(kt_post(p.qp[0], &x), -EINVAL);
	/* unknown send flags */
	x = w;
	x.send_flags |= 1u << 20;
	KT_CHECK_EQ(kt_post(p.qp[0], &x), -EINVAL);
	KT_CHECK_EQ(kt_poll_for(p.cq[0], 20, 4, wc), 0);
	KT_CHECK_EQ(kinet_qp_get_state(p.qp[0]), KINET_QPS_RTS);

	/* receives */
	struct kinet_recv_wr r = {.wr_id = 1, .sg_list = many, .num_sge = 3}; /* over max_recv_sge */
	KT_CHECK_EQ(kinet_qp_post_recv(p.qp[1], &r, 1, &bad), -EINVAL);
	KT_CHECK_EQ(kinet_qp_post_recv(NULL, &r, 1, &bad), -EINVAL);
	KT_CHECK_EQ(kinet_qp_post_recv(p.qp[1], NULL, 1, &bad), -EINVAL);

	/* custom WQEs */
	uint8_t wqe[64] = {0};
	KT_CHECK_EQ(kinet_qp_post_wqe(NULL, wqe, 1, 0), -EINVAL);
	KT_CHECK_EQ(kinet_qp_post_wqe(p.qp[0], NULL, 1, 0), -EINVAL);
	KT_CHECK_EQ(kinet_qp_post_wqe(p.qp[0], wqe, 0, 0), -EINVAL);
	KT_CHECK_EQ(kinet_qp_post_wqe(p.qp[0], wqe, 1u << 20, 0), -EINVAL);

	/* The QP still works. */
	KT_OK(kt_post(p.qp[0], &w));
	KT_OK(kt_poll1(p.cq[0], &wc[0]));
	KT_OK(kt_wc_expect(&wc[0], 1, 0));
	kt_buf_free(&b);
	kt_pair_destroy(&p);
	kinet_ctx_close(ctx);
}

KT_TEST(send_queue_full)
{
	struct kinet_ctx *ctx;
	struct kt_pair p;
	struct kt_pair_opts o;
	struct kinet_wc wc[32];

	KT_OK(kt_ctx_open(1, &ctx));
	kt_pair_opts_init(&o);
	o.sq_depth = 16;
	o.cq_depth = 64;
	KT_OK(kt_pair_create(&p, ctx, ctx, &o));
	KT_PAUSE(ctx);
	int i, rc = 0;
	for (i = 0; i < 40; i++) {
		struct kinet_send_wr w = kt_wr((uint64_t)i, KINET_WR_NOP, KINET_SEND_SIGNALED, NULL, 0, 0, 0);
		rc = kt_post(p.qp[0], &w);
		if (rc)
			break;
	}
	KT_OK(kinet_ctx_resume(ctx));
	KT_CHECK_EQ(i, 16);
	KT_CHECK(rc == -ENOMEM || rc == -EAGAIN);
	KT_CHECK_EQ(kt_poll_n(p.cq[0], 16, wc, KT_DEADLINE_MS), 16);
	for (i = 0; i < 16; i++)
		KT_OK(kt_wc_expect(&wc[i], (uint64_t)i, 0));
	/* Room again once polled. */
	struct kinet_send_wr w = kt_wr(99, KINET_WR_NOP, KINET_SEND_SIGNALED, NULL, 0, 0, 0);
	KT_OK(kt_post(p.qp[0], &w));
	KT_OK(kt_poll1(p.cq[0], wc));
	KT_OK(kt_wc_expect(&wc[0], 99, 0));
	kt_pair_destroy(&p);
	kinet_ctx_close(ctx);
}

KT_TEST(strerror_text)
{
	static const int errs[] = {-EINVAL, -ENOMEM, -ENODEV, -ETIMEDOUT, -EOVERFLOW, -EIO, -EAGAIN};
	for (unsigned i = 0; i < sizeof(errs) / sizeof(errs[0]); i++) {
		const char *s = kinet_strerror(errs[i]);
		KT_CHECK(s != NULL);
		KT_CHECK(s[0] != 0);
	}
	KT_CHECK(strcmp(kinet_strerror(-EINVAL), kinet_strerror(-ENOMEM)) != 0);
	KT_CHECK(kinet_strerror(0) != NULL);
	KT_CHECK(kinet_strerror(-123456) != NULL);
	KT_CHECK(kinet_strerror(-123456)[0] != 0);
	/* Any int, its extremes too (-INT_MIN overflows; UBSan in the
	 * sanitizer run), and a positive errno reads as the negative one. */
	KT_CHECK_EQ(strcmp(kinet_strerror(INT_MIN), "unknown error"), 0);
	KT_CHECK_EQ(strcmp(kinet_strerror(INT_MAX), "unknown error"), 0);
	KT_CHECK_EQ(strcmp(kinet_strerror(EINVAL), kinet_strerror(-EINVAL)), 0);
}

KT_MAIN(ctx_args, mr_args, cq_args, attr_size, qp_args, connect_to_nobody, post_args, send_queue_full,
	strerror_text)
