/*
 * The ConnectX provider against a fake rdma-core (fake_rdma.c, loaded
 * through $KINET_MLX5_LIBIBVERBS and $KINET_MLX5_LIBMLX5, which ctest sets):
 * the whole control path with no NIC.  Device choice, queue creation on
 * kinet's allocator, the exported layout, memory keys, the RESET -> RTS
 * attributes, host and CPU-assisted doorbells in the doorbell record and
 * the UAR, error CQEs, the NIC's own error state, async events, and a
 * teardown that leaves nothing behind and never frees a busy object.
 * The fake executes no WQE: data movement is for scripts/mlx5-selftest.sh
 * on a real NIC.
 */
#include <dlfcn.h>

#include "fake_rdma.h"
#include "kinet/device/types.h"
#include "kt_host.h"

static struct fake_rdma *F;
static void (*push_event)(enum ibv_event_type, struct ibv_qp *, struct ibv_cq *);

static int open_mlx5(struct kinet_ctx **ctx)
{
	struct kinet_ctx_attr a;

	kinet_ctx_attr_init(&a);
	a.provider = "mlx5";
	a.cuda_device = KT_HOST_ONLY;
	*ctx = NULL;
	return kinet_ctx_open(&a, ctx);
}

static struct fake_qp_rec *qp_rec(const struct kinet_qp *qp)
{
	for (int i = 0; i < F->nqp; i++)
		if (F->qp[i].live && F->qp[i].qpn == kinet_qp_num(qp))
			return &F->qp[i];
	return NULL;
}

static struct fake_cq_rec *cq_rec(const struct kinet_cq *cq)
{
	for (int i = 0; i < F->ncq; i++)
		if (F->cq[i].live && F->cq[i].cqn == kinet_cq_num(cq))
			return &F->cq[i];
	return NULL;
}

/* The doorbell register and record, written by the provider's progress
 * thread in the CPU-assisted mode: read atomically. */
static uint64_t uar_value(const struct fake_qp_rec *r)
{
	return __atomic_load_n((const uint64_t *)(const void *)(r->uar + FAKE_UAR_DB_OFFSET),
			       __ATOMIC_ACQUIRE);
}

static uint32_t dbrec_value(const struct fake_qp_rec *r, int i)
{
	return __atomic_load_n(&r->dbrec[i], __ATOMIC_ACQUIRE);
}

#define NEED_FAKE()                                                                                          \
	do {                                                                                                 \
		if (!F)                                                                                      \
			KT_SKIP("no fake rdma-core (ctest points KINET_MLX5_LIBIBVERBS at it)");             \
	} while (0)

/* The 8-byte doorbell announcing producer index pi, as mlx5dv spells it. */
static uint64_t doorbell(uint32_t qpn, uint16_t pi)
{
	struct mlx5_wqe_ctrl_seg c;
	uint64_t v;

	memset(&c, 0, sizeof(c));
	c.opmod_idx_opcode = htobe32((uint32_t)pi << 8);
	c.qpn_ds = htobe32(qpn << 8);
	memcpy(&v, &c, sizeof(v));
	return v;
}

/* Nothing left open, allocated or misused. */
static int clean(void)
{
	int ok = !F->open_devices && !F->pds && !F->domains && !F->tds && F->allocs == F->frees && !F->misuse;

	if (!ok)
		fprintf(stderr,
			"fake rdma: devices %d pds %d domains %d tds %d allocs %d frees %d misuse %d (%s)\n",
			F->open_devices, F->pds, F->domains, F->tds, F->allocs, F->frees, F->misuse,
			F->misuse_what);
	return ok;
}

KT_TEST(load)
{
	const char *lib = getenv("KINET_MLX5_LIBIBVERBS");
	void *h = lib ? dlopen(lib, RTLD_NOW) : NULL;

	if (!lib)
		KT_SKIP("KINET_MLX5_LIBIBVERBS does not name the fake rdma-core (ctest sets it)");
	KT_CHECK(h != NULL);
	F = dlsym(h, "fake_rdma");
	push_event = (void (*)(enum ibv_event_type, struct ibv_qp *, struct ibv_cq *))dlsym(
		h, "fake_rdma_push_event");
	KT_CHECK(F && push_event);
}

struct lines {
	char text[8192];
};

static void collect(void *arg, const char *line)
{
	struct lines *l = arg;
	size_t n = strlen(l->text);

	snprintf(l->text + n, sizeof(l->text) - n, "%s\n", line);
}

/* Whether text has the line `head` followed by "works" or "no: <why>". */
static int answered(const char *text, const char *head)
{
	const char *p = strstr(text, head);

	if (!p)
		return 0;
	p += strlen(head);
	return !strncmp(p, "works", 5) || (!strncmp(p, "no: ", 4) && p[4] && p[4] != '\n');
}

/* The GPU checks run on the context describe opened: with no CUDA device
 * it says it did not try them; on a GPU machine each path gets an answer
 * ("works", or "no: " and why, as the fake rdma-core decides). */
static int gpu_checks_said(const char *text)
{
	const char *c = strstr(text, ", CUDA device ");
	int device, ok;

	if (!c || sscanf(c, ", CUDA device %d:", &device) != 1)
		return -EINVAL;
	if (device < 0)
		ok = strstr(text, "GPU memory registration: not tried: ") &&
		     strstr(text, "GPU-mapped UAR: not tried: no CUDA device");
	else
		ok = !strstr(text, "not tried") && answered(text, "GPU memory, dma-buf: ") &&
		     answered(text, "GPU memory, peer memory (nvidia-peermem): ") &&
		     answered(text, "GPU-mapped UAR: ");
	return ok ? 0 : -EINVAL;
}

KT_TEST(probe_and_describe)
{
	static struct lines l;
	const char *why = "unset";

	NEED_FAKE();
	KT_OK(kinet_provider_probe("mlx5", &why));
	KT_CHECK(why == NULL);
	KT_OK(kinet_provider_describe("mlx5", collect, &l));
	printf("%s", l.text);
	KT_CHECK(strstr(l.text, "mlx5_0: firmware 99.99.9999, 1 port, atomics HCA"));
	KT_CHECK(strstr(l.text, "port 1: ACTIVE, Ethernet (RoCE), active MTU 1024 (max 4096)"));
	KT_CHECK(strstr(l.text, "GID 1: RoCE v2 fe80::1\n"));
	KT_CHECK(strstr(l.text, "GID 3: RoCE v2 10.0.0.7  (kinet's choice)"));
	KT_CHECK(strstr(l.text, "mlx5_1: firmware"));
	KT_CHECK(strstr(l.text, "port 1: DOWN"));
	KT_CHECK(strstr(l.text, "checks on mlx5_0 port 1"));
	KT_OK(gpu_checks_said(l.text));
	KT_CHECK(clean());
}

KT_TEST(device_choice)
{
	static const char *const bad[] = {"mlx5_1", "mlx5_1:1", "mlx5_9", "mlx5_0:2", "mlx5_0:x"};
	struct kinet_ctx *ctx;

	NEED_FAKE();
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		setenv("KINET_DEVICE", bad[i], 1);
		KT_CHECK_EQ(open_mlx5(&ctx), -ENODEV);
		KT_CHECK(ctx == NULL);
		KT_CHECK(clean());
	}
	setenv("KINET_DEVICE", "mlx5_0:1", 1);
	KT_OK(open_mlx5(&ctx));
	KT_OK(kinet_ctx_close(ctx));
	unsetenv("KINET_DEVICE");
	KT_OK(open_mlx5(&ctx)); /* mlx5_1's port is down: mlx5_0 */
	KT_CHECK_EQ(kinet_ctx_pause(ctx), -EOPNOTSUPP);
	KT_CHECK_EQ(kinet_ctx_resume(ctx), -EOPNOTSUPP);
	KT_OK(kinet_ctx_close(ctx));
	KT_CHECK(clean());
}

KT_TEST(queues)
{
	struct kinet_cq_attr ca = {.depth = 200, .flags = KINET_CQ_IGNORE_OVERRUN};
	struct kinet_cq *scq, *rcq, *cq3;
	struct kinet_qp_attr qa;
	struct kinet_qp *qp, *qp2;
	struct kinet_dev_qp *d;
	struct kinet_ctx *ctx;
	struct fake_qp_rec *r;
	struct fake_cq_rec *c;
	int qp_allocs;

	NEED_FAKE();
	KT_OK(open_mlx5(&ctx));
	KT_OK(kinet_cq_create(ctx, &ca, &scq));
	c = cq_rec(scq);
	KT_CHECK(c != NULL);
	KT_CHECK_EQ(kinet_cq_depth(scq), 256);
	KT_CHECK_EQ(c->ncqe, 256);
	KT_CHECK(c->flags & IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN);
	KT_CHECK((c->dv.comp_mask & MLX5DV_CQ_INIT_ATTR_MASK_CQE_SIZE) && c->dv.cqe_size == 64);
	ca.depth = 64;
	ca.flags = 0;
	KT_OK(kinet_cq_create(ctx, &ca, &rcq));
	KT_OK(kinet_cq_create(ctx, &ca, &cq3));
	KT_CHECK(!(cq_rec(rcq)->flags & IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN));
	KT_CHECK(F->alloc_cq >= 3 && F->alloc_dbr >= 3);

	qp_allocs = F->alloc_qp;
	kinet_qp_attr_init(&qa);
	qa.send_cq = scq;
	qa.recv_cq = rcq;
	qa.sq_depth = 100;
	qa.rq_depth = 10;
	qa.max_recv_sge = 3;
	KT_OK(kinet_qp_create(ctx, &qa, &qp));
	r = qp_rec(qp);
	KT_CHECK(r != NULL);
	KT_CHECK_EQ(F->alloc_qp, qp_allocs + 1); /* the ring came from kinet's allocator */
	KT_CHECK_EQ(r->attr.cap.max_send_wr, 128);
	KT_CHECK_EQ(r->attr.cap.max_send_sge, 1);
	KT_CHECK_EQ(r->attr.cap.max_recv_wr, 16);
	KT_CHECK_EQ(r->attr.cap.max_recv_sge, 3);
	KT_CHECK(r->attr.comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS);
	KT_CHECK(!(r->attr.send_ops_flags & IBV_QP_EX_WITH_BIND_MW));
	KT_CHECK(r->attr.send_ops_flags & IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD);
	KT_CHECK(r->dv.create_flags & MLX5DV_QP_CREATE_DISABLE_SCATTER_TO_CQE);
	KT_CHECK(r->has_td);
	KT_CHECK_EQ(r->sq_cnt, 128);
	KT_CHECK_EQ(kinet_qp_db_mode(qp), KINET_DB_GPU); /* AUTO on a NIC */
	KT_CHECK_EQ(kinet_qp_get_state(qp), KINET_QPS_RESET);

	/* The exported descriptor names the NIC's queues. */
	KT_OK(kinet_qp_export(qp, &d));
	KT_CHECK(d->sq == r->sq);
	KT_CHECK(d->rq == r->rq);
	KT_CHECK_EQ(d->rq_stride, r->rq_stride);
	KT_CHECK_EQ(d->rq_mask, r->rq_cnt - 1);
	KT_CHECK(d->dbrec == r->dbrec);
	KT_CHECK(d->uar_db == (uint64_t *)(void *)(r->uar + FAKE_UAR_DB_OFFSET));
	KT_CHECK_EQ(d->qpn, r->qpn);
	KT_CHECK_EQ(d->sq_mask, 127);
	KT_CHECK(d->send_cq->cqes == cq_rec(scq)->buf);
	KT_CHECK(d->send_cq->dbrec == cq_rec(scq)->dbrec);
	KT_CHECK_EQ(d->send_cq->cqn, cq_rec(scq)->cqn);
	KT_CHECK_EQ(d->send_cq->log_depth, 8);

	/* No receive queue: verbs still gets a receive CQ, and no RQ. */
	qa.recv_cq = NULL;
	qa.send_cq = cq3;
	qa.db_mode = KINET_DB_CPU;
	KT_OK(kinet_qp_create(ctx, &qa, &qp2));
	r = qp_rec(qp2);
	KT_CHECK(r->attr.recv_cq == r->attr.send_cq);
	KT_CHECK_EQ(r->attr.cap.max_recv_wr, 0);
	KT_CHECK_EQ(kinet_qp_db_mode(qp2), KINET_DB_CPU);
	/* A CQ in use is not destroyed (the NIC would refuse). */
	KT_CHECK_EQ(kinet_cq_destroy(cq3), -EBUSY);
	KT_OK(kinet_qp_destroy(qp2));
	KT_OK(kinet_cq_destroy(cq3));
	KT_OK(kinet_ctx_close(ctx)); /* the rest goes with the context */
	KT_CHECK(clean());
}

KT_TEST(memory)
{
	static uint8_t buf[8192];
	struct kinet_mr *mr, *zb;
	struct kinet_mr_info info;
	struct kinet_ctx *ctx;
	int n;

	NEED_FAKE();
	KT_OK(open_mlx5(&ctx));
	n = F->nmr;
	KT_OK(kinet_mr_reg(ctx, buf, 4096, KT_ACC_ALL, &mr));
	KT_CHECK(F->mr[n].live && F->mr[n].addr == buf && F->mr[n].len == 4096);
	KT_CHECK_EQ(F->mr[n].iova, (uintptr_t)buf);
	KT_CHECK_EQ(F->mr[n].access, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
					     IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC);
	/* WQEs carry the NIC's keys. */
	KT_CHECK_EQ(kinet_mr_lkey(mr), F->mr[n].key);
	KT_CHECK_EQ(kinet_mr_rkey(mr), F->mr[n].key);
	KT_OK(kinet_mr_pack(mr, &info));
	KT_CHECK_EQ(info.rkey, F->mr[n].key);
	KT_OK(kinet_mr_reg(ctx, buf + 4096, 4096, KINET_ACCESS_REMOTE_READ | KINET_ACCESS_ZERO_BASED, &zb));
	KT_CHECK_EQ(F->mr[n + 1].iova, 0);
	KT_CHECK_EQ(F->mr[n + 1].access, IBV_ACCESS_REMOTE_READ);
	KT_OK(kinet_mr_dereg(mr));
	KT_CHECK(!F->mr[n].live);
	/* zb is still registered: closing deregisters it before the
	 * protection domain goes (the fake refuses the other order). */
	KT_OK(kinet_ctx_close(ctx));
	KT_CHECK(!F->mr[n + 1].live);
	KT_CHECK(clean());
}

static void pair_opts(struct kt_pair_opts *o, enum kinet_db_mode mode)
{
	kt_pair_opts_init(o);
	o->db_mode = mode;
	o->timeout_ms = 2000;
	o->rnr_timeout_ms = 200;
}

KT_TEST(connect)
{
	struct kt_pair_opts o;
	struct fake_qp_rec *r[2];
	struct kinet_ctx *ctx;
	struct kt_pair p;

	NEED_FAKE();
	KT_OK(open_mlx5(&ctx));
	pair_opts(&o, KINET_DB_AUTO);
	KT_OK(kt_pair_create(&p, ctx, ctx, &o));
	for (int i = 0; i < 2; i++) {
		r[i] = qp_rec(p.qp[i]);
		KT_CHECK(r[i] && r[i]->state == IBV_QPS_RTS);
		KT_CHECK_EQ(kinet_qp_get_state(p.qp[i]), KINET_QPS_RTS);
	}
	for (int i = 0; i < 2; i++) {
		const struct ibv_qp_attr *init = &r[i]->to[IBV_QPS_INIT], *rtr = &r[i]->to[IBV_QPS_RTR],
					 *rts = &r[i]->to[IBV_QPS_RTS];

		KT_CHECK_EQ(init->port_num, 1);
		KT_CHECK_EQ(init->qp_access_flags,
			    IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC);
		/* The port's active MTU, not 4096. */
		KT_CHECK_EQ(rtr->path_mtu, IBV_MTU_1024);
		KT_CHECK_EQ(rtr->dest_qp_num, r[1 - i]->qpn);
		/* Each side starts receiving at the PSN the other sends from. */
		KT_CHECK_EQ(rtr->rq_psn, r[1 - i]->to[IBV_QPS_RTS].sq_psn);
		KT_CHECK(rtr->ah_attr.is_global);
		KT_CHECK_EQ(rtr->ah_attr.grh.sgid_index, 3); /* RoCE v2, IPv4 */
		KT_CHECK_EQ(rtr->ah_attr.grh.dgid.raw[15], 7);
		KT_CHECK_EQ(rtr->ah_attr.grh.dgid.raw[10], 0xff);
		KT_CHECK_EQ(rtr->ah_attr.grh.hop_limit, 255);
		KT_CHECK_EQ(rtr->max_dest_rd_atomic, 16);
		KT_CHECK_EQ(rtr->min_rnr_timer, 23); /* 30.72 ms x 6 <= 200 ms */
		KT_CHECK_EQ(rts->timeout, 15);	     /* 134 ms x 8 <= 2000 ms */
		KT_CHECK_EQ(rts->retry_cnt, 7);
		KT_CHECK_EQ(rts->rnr_retry, 6);
		KT_CHECK_EQ(rts->max_rd_atomic, 16);
		KT_CHECK(rts->sq_psn < (1u << 24));
	}
	kt_pair_destroy(&p);

	/* The peer's smaller active MTU wins, and so does KINET_MLX5_MTU. */
	struct kinet_qp_info info[2];
	KT_OK(kt_pair_create_unconnected(&p, ctx, ctx, &o));
	KT_OK(kinet_qp_pack(p.qp[0], &info[0]));
	KT_OK(kinet_qp_pack(p.qp[1], &info[1]));
	info[1].transport[7] = IBV_MTU_512;
	KT_OK(kinet_qp_connect(p.qp[0], &info[1]));
	KT_CHECK_EQ(qp_rec(p.qp[0])->to[IBV_QPS_RTR].path_mtu, IBV_MTU_512);
	setenv("KINET_MLX5_MTU", "256", 1);
	KT_OK(kinet_qp_connect(p.qp[1], &info[0]));
	unsetenv("KINET_MLX5_MTU");
	KT_CHECK_EQ(qp_rec(p.qp[1])->to[IBV_QPS_RTR].path_mtu, IBV_MTU_256);
	kt_pair_destroy(&p);
	KT_OK(kinet_ctx_close(ctx));
	KT_CHECK(clean());
}

KT_TEST(connect_failures)
{
	struct kinet_qp_info info[2], soft;
	struct kt_pair_opts o;
	struct kinet_ctx *ctx;
	struct kt_pair p;

	NEED_FAKE();
	KT_OK(open_mlx5(&ctx));
	pair_opts(&o, KINET_DB_AUTO);
	KT_OK(kt_pair_create_unconnected(&p, ctx, ctx, &o));
	KT_OK(kinet_qp_pack(p.qp[0], &info[0]));
	KT_OK(kinet_qp_pack(p.qp[1], &info[1]));
	/* Another provider's info (the software NIC starts with a host id). */
	soft = info[1];
	memset(soft.transport, 0x11, sizeof(soft.transport));
	KT_CHECK_EQ(kinet_qp_connect(p.qp[0], &soft), -EPROTO);
	KT_CHECK_EQ(kinet_qp_get_state(p.qp[0]), KINET_QPS_RESET);
	/* The NIC refuses RTR: back to RESET, and a second try works. */
	F->fail_state = IBV_QPS_RTR;
	F->fail_errno = EINVAL;
	KT_CHECK_EQ(kinet_qp_connect(p.qp[0], &info[1]), -EINVAL);
	KT_CHECK_EQ(kinet_qp_get_state(p.qp[0]), KINET_QPS_RESET);
	KT_CHECK_EQ(qp_rec(p.qp[0])->state, IBV_QPS_RESET);
	KT_OK(kinet_qp_connect(p.qp[0], &info[1]));
	KT_CHECK_EQ(qp_rec(p.qp[0])->state, IBV_QPS_RTS);
	setenv("KINET_MLX5_MTU", "1500", 1);
	KT_CHECK_EQ(kinet_qp_connect(p.qp[1], &info[0]), -EINVAL);
	unsetenv("KINET_MLX5_MTU");
	kt_pair_destroy(&p);
	KT_OK(kinet_ctx_close(ctx));
	KT_CHECK(clean());
}

/* Host posting rings the doorbell record, then the 8-byte doorbell, at the
 * register mlx5dv named (0x900 here, not the software NIC's 0x800). */
KT_TEST(host_doorbell)
{
	struct kt_pair_opts o;
	struct kinet_ctx *ctx;
	struct fake_qp_rec *r;
	struct kt_buf src, dst;
	struct kt_pair p;

	NEED_FAKE();
	KT_OK(open_mlx5(&ctx));
	pair_opts(&o, KINET_DB_GPU);
	KT_OK(kt_pair_create(&p, ctx, ctx, &o));
	KT_OK(kt_buf_alloc(ctx, &src, 256, KT_ACC_ALL, 0x11));
	KT_OK(kt_buf_alloc(ctx, &dst, 256, KT_ACC_ALL, 0));
	r = qp_rec(p.qp[0]);
	struct kinet_sge sge = kt_sge(&src, 0, 64);
	struct kinet_send_wr wr[3];
	for (int i = 0; i < 3; i++)
		wr[i] = kt_wr(10 + i, KINET_WR_RDMA_WRITE, KINET_SEND_SIGNALED, &sge, 1, kt_addr(&dst, 0),
			      kt_rkey(&dst));
	KT_OK(kinet_qp_post_send(p.qp[0], wr, 1, NULL));
	/* The WQE in the NIC's ring, with the NIC's keys. */
	const struct kinet_wqe_ctrl_seg *c = (const void *)r->sq;
	KT_CHECK_EQ(kinet_be32(c->opmod_idx_opcode) & 0xff, KINET_WQE_OP_RDMA_WRITE);
	KT_CHECK_EQ(kinet_wqe_ctrl_qpn(c), r->qpn);
	const struct kinet_wqe_raddr_seg *ra = (const void *)(r->sq + 16);
	KT_CHECK_EQ(kinet_be32(ra->rkey), kinet_mr_rkey(dst.mr));
	KT_CHECK_EQ(dbrec_value(r, KINET_DBR_SEND), htobe32(1));
	KT_CHECK_EQ(uar_value(r), doorbell(r->qpn, 1));
	KT_OK(kinet_qp_post_send(p.qp[0], wr + 1, 2, NULL));
	KT_CHECK_EQ(dbrec_value(r, KINET_DBR_SEND), htobe32(3));
	KT_CHECK_EQ(uar_value(r), doorbell(r->qpn, 3));
	/* Receives: the record only (the NIC reads it). */
	struct kinet_sge rs = kt_sge(&dst, 0, 64);
	KT_OK(kt_post_recv(p.qp[1], 7, &rs, 1));
	KT_CHECK_EQ(dbrec_value(qp_rec(p.qp[1]), KINET_DBR_RECV), htobe32(1));
	kt_buf_free(&src);
	kt_buf_free(&dst);
	kt_pair_destroy(&p);
	KT_OK(kinet_ctx_close(ctx));
	KT_CHECK(clean());
}

static bool wait_doorbell(const struct fake_qp_rec *r, uint64_t want, unsigned ms)
{
	for (uint64_t end = kt_now_ms() + ms; kt_now_ms() < end; kt_sleep_ms(1))
		if (uar_value(r) == want)
			return true;
	return uar_value(r) == want;
}

/* CPU-assisted: device code publishes a producer index in host memory; the
 * progress thread turns it into the doorbell record and the doorbell. */
KT_TEST(cpu_assisted)
{
	struct kinet_cq_attr ca = {.depth = 64};
	struct kinet_qp_info info[2];
	struct kinet_cq *cq[2];
	struct kinet_qp *qp[2];
	struct kinet_qp_attr qa;
	struct kinet_dev_qp *d;
	struct kinet_ctx *ctx;
	struct fake_qp_rec *r;

	NEED_FAKE();
	KT_OK(open_mlx5(&ctx));
	for (int i = 0; i < 2; i++) {
		KT_OK(kinet_cq_create(ctx, &ca, &cq[i]));
		kinet_qp_attr_init(&qa);
		qa.send_cq = cq[i];
		qa.sq_depth = 16;
		qa.db_mode = KINET_DB_CPU;
		KT_OK(kinet_qp_create(ctx, &qa, &qp[i]));
		KT_OK(kinet_qp_pack(qp[i], &info[i]));
	}
	KT_OK(kinet_qp_connect(qp[0], &info[1]));
	KT_OK(kinet_qp_connect(qp[1], &info[0]));
	KT_OK(kinet_qp_export(qp[0], &d));
	r = qp_rec(qp[0]);
	KT_CHECK(d->db_cpu_pi != NULL);
	__atomic_store_n(d->db_cpu_pi, 3, __ATOMIC_RELEASE);
	KT_CHECK(wait_doorbell(r, doorbell(r->qpn, 3), 2000));
	KT_CHECK_EQ(dbrec_value(r, KINET_DBR_SEND), htobe32(3));
	/* A producer index more than a ring ahead cannot be right: ignored. */
	__atomic_store_n(d->db_cpu_pi, 3 + 1000, __ATOMIC_RELEASE);
	kt_sleep_ms(50);
	KT_CHECK_EQ(uar_value(r), doorbell(r->qpn, 3));
	__atomic_store_n(d->db_cpu_pi, 5, __ATOMIC_RELEASE);
	KT_CHECK(wait_doorbell(r, doorbell(r->qpn, 5), 2000));
	KT_OK(kinet_ctx_close(ctx));
	KT_CHECK(clean());
}

static void put_err_cqe(struct fake_cq_rec *c, uint32_t idx, uint8_t synd, uint8_t vendor, uint32_t qpn,
			uint16_t counter)
{
	struct kinet_err_cqe *e = (struct kinet_err_cqe *)((uint8_t *)c->buf + (size_t)idx * 64);

	memset(e, 0, 63);
	e->syndrome = synd;
	e->vendor_err_synd = vendor;
	e->s_wqe_opcode_qpn = htobe32((uint32_t)KINET_WQE_OP_RDMA_WRITE << 24 | qpn);
	e->wqe_counter = htobe16(counter);
	/* Owner bit of the first pass, written last, as the NIC does. */
	__atomic_store_n(&e->op_own, (uint8_t)(KINET_CQE_REQ_ERR << 4), __ATOMIC_RELEASE);
}

/* An error CQE the NIC wrote, polled by the host: the syndromes as the NIC
 * gave them, the QP in ERR, the context's first error. */
KT_TEST(error_cqe)
{
	struct kinet_error err;
	struct kt_pair_opts o;
	struct kinet_ctx *ctx;
	struct fake_cq_rec *c;
	struct kinet_wc wc[2];
	struct kt_pair p;
	uint32_t qpn;

	NEED_FAKE();
	KT_OK(open_mlx5(&ctx));
	pair_opts(&o, KINET_DB_AUTO);
	KT_OK(kt_pair_create(&p, ctx, ctx, &o));
	qpn = kinet_qp_num(p.qp[0]);
	c = cq_rec(p.cq[0]);
	KT_CHECK_EQ(kinet_cq_poll(p.cq[0], 2, wc), 0); /* the ring starts empty */
	put_err_cqe(c, 0, KINET_SYND_REMOTE_ACCESS_ERR, 0x88, qpn, 0);
	KT_CHECK_EQ(kinet_cq_poll(p.cq[0], 2, wc), 1);
	KT_CHECK_EQ(wc[0].status, KINET_SYND_REMOTE_ACCESS_ERR);
	KT_CHECK_EQ(wc[0].vendor_err, 0x88);
	KT_CHECK_EQ(wc[0].qp_num, qpn);
	KT_CHECK_EQ(wc[0].opcode, KINET_WC_RDMA_WRITE);
	KT_CHECK_EQ(c->dbrec[0], htobe32(1)); /* consumer index published */
	KT_CHECK_EQ(kinet_qp_get_state(p.qp[0]), KINET_QPS_ERR);
	KT_OK(kinet_ctx_last_error(ctx, &err));
	KT_CHECK_EQ(err.status, -EIO);
	KT_CHECK_EQ(err.qpn, qpn);
	KT_CHECK_EQ(err.syndrome, KINET_SYND_REMOTE_ACCESS_ERR);
	KT_CHECK_EQ(err.opcode, KINET_WQE_OP_RDMA_WRITE);
	KT_CHECK_EQ(err.source, KINET_ERROR_SOURCE_ENGINE);
	/* A flush behind it changes nothing recorded. */
	put_err_cqe(c, 1, KINET_SYND_WR_FLUSH_ERR, 0xf9, qpn, 1);
	KT_CHECK_EQ(kinet_cq_poll(p.cq[0], 2, wc), 1);
	KT_CHECK_EQ(wc[0].status, KINET_SYND_WR_FLUSH_ERR);
	KT_OK(kinet_ctx_last_error(ctx, &err));
	KT_CHECK_EQ(err.syndrome, KINET_SYND_REMOTE_ACCESS_ERR);

	/* The NIC moves a QP to the error state by itself: kinet asks it. */
	KT_CHECK_EQ(kinet_qp_get_state(p.qp[1]), KINET_QPS_RTS);
	qp_rec(p.qp[1])->state = IBV_QPS_ERR;
	KT_CHECK_EQ(kinet_qp_get_state(p.qp[1]), KINET_QPS_ERR);
	kt_pair_destroy(&p);

	/* kinet_qp_set_error moves the NIC's QP too (its work is flushed). */
	KT_OK(kt_pair_create(&p, ctx, ctx, &o));
	KT_OK(kinet_qp_set_error(p.qp[0]));
	KT_CHECK_EQ(qp_rec(p.qp[0])->state, IBV_QPS_ERR);
	KT_CHECK_EQ(qp_rec(p.qp[0])->modify_mask[IBV_QPS_ERR], IBV_QP_STATE);
	kt_pair_destroy(&p);
	KT_OK(kinet_ctx_close(ctx));
	KT_CHECK(clean());
}

/* Async events the progress thread has acknowledged so far. */
static int events_acked(void)
{
	pthread_mutex_lock(&F->lock);
	int n = F->ev_acked;
	pthread_mutex_unlock(&F->lock);
	return n;
}

/* The NIC's async events: a QP's fatal error, a CQ's overrun. */
KT_TEST(async_events)
{
	struct kinet_error err;
	struct kt_pair_opts o;
	struct kinet_ctx *ctx;
	struct kinet_wc wc;
	struct kt_pair p;
	int acked;

	NEED_FAKE();
	KT_OK(open_mlx5(&ctx));
	pair_opts(&o, KINET_DB_AUTO);
	KT_OK(kt_pair_create(&p, ctx, ctx, &o));
	acked = events_acked();
	push_event(IBV_EVENT_QP_FATAL, qp_rec(p.qp[1])->ibqp, NULL);
	KT_CHECK(kt_wait_state(p.qp[1], KINET_QPS_ERR, 2000));
	KT_OK(kinet_ctx_last_error(ctx, &err));
	KT_CHECK_EQ(err.status, -EIO);
	KT_CHECK_EQ(err.qpn, kinet_qp_num(p.qp[1]));
	KT_CHECK_EQ(kinet_qp_get_state(p.qp[0]), KINET_QPS_RTS);
	push_event(IBV_EVENT_CQ_ERR, NULL, cq_rec(p.cq[0])->ibcq);
	for (uint64_t end = kt_now_ms() + 2000;
	     kt_now_ms() < end && kinet_cq_poll(p.cq[0], 1, &wc) != -EOVERFLOW;)
		kt_sleep_ms(1);
	KT_CHECK_EQ(kinet_cq_poll(p.cq[0], 1, &wc), -EOVERFLOW);
	/* The provider fails the QPs before it marks the CQ overrun. */
	KT_CHECK_EQ(kinet_qp_get_state(p.qp[0]), KINET_QPS_ERR);
	/* The acknowledgment follows the handling, on the progress thread. */
	for (uint64_t end = kt_now_ms() + 2000; kt_now_ms() < end && events_acked() < acked + 2;)
		kt_sleep_ms(1);
	KT_CHECK_EQ(events_acked(), acked + 2);
	kt_pair_destroy(&p);
	KT_OK(kinet_ctx_close(ctx));
	KT_CHECK(clean());
}

KT_MAIN(load, probe_and_describe, device_choice, queues, memory, connect, connect_failures, host_doorbell,
	cpu_assisted, error_cqe, async_events)
