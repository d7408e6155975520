/*
 * A fake rdma-core (fake_rdma.h): mlx5_0 with one ACTIVE RoCE port (active
 * MTU 1024, the usual GID table of an interface with 10.0.0.7) and mlx5_1
 * with its port DOWN.  Everything the provider creates is recorded in
 * fake_rdma; calls that real rdma-core would refuse (a busy object freed,
 * an illegal QP transition, attributes missing) are refused here too and
 * counted in fake_rdma.misuse.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fake_rdma.h"

struct fake_rdma fake_rdma = {.lock = PTHREAD_MUTEX_INITIALIZER};

struct fake_dev {
	struct ibv_device dev;
	enum ibv_port_state state;
};
struct fake_ctx {
	struct verbs_context v;
	struct fake_dev *dev;
	int pipe[2];
};
struct fake_pd {
	struct ibv_pd pd;
	int parent;
	struct ibv_td *td;
	struct ibv_parent_domain_init_attr attr;
};
struct fake_td {
	struct ibv_td td;
	uint8_t *uar;
};
struct fake_cq {
	struct ibv_cq_ex cq; /* ibv_cq_ex_to_cq() is this address */
	int rec;
	struct fake_pd *domain;
	int users;
};
struct fake_qp {
	struct ibv_qp qp;
	int rec;
	struct fake_pd *domain;
	void *buf, *dbrec;
};
struct fake_mr {
	struct ibv_mr mr;
	int rec;
};

static struct fake_dev devs[2];

/* Whether regions or QPs still live on pd (rdma-core: EBUSY). */
static int pd_busy(struct ibv_pd *pd)
{
	for (int i = 0; i < fake_rdma.nmr; i++)
		if (fake_rdma.mr[i].live && fake_rdma.mr[i].pd == pd)
			return 1;
	for (int i = 0; i < fake_rdma.nqp; i++)
		if (fake_rdma.qp[i].live && fake_rdma.qp[i].pd == pd)
			return 1;
	return 0;
}

static void misuse(const char *what)
{
	fake_rdma.misuse++;
	snprintf(fake_rdma.misuse_what, sizeof(fake_rdma.misuse_what), "%s", what);
	fprintf(stderr, "fake rdma: misuse: %s\n", what);
}

/* ---- devices ---- */

struct ibv_device **ibv_get_device_list(int *n)
{
	struct ibv_device **l = calloc(3, sizeof(*l));

	for (int i = 0; i < 2; i++) {
		snprintf(devs[i].dev.name, sizeof(devs[i].dev.name), "mlx5_%d", i);
		snprintf(devs[i].dev.ibdev_path, sizeof(devs[i].dev.ibdev_path), "/nonexistent/mlx5_%d", i);
		devs[i].state = i ? IBV_PORT_DOWN : IBV_PORT_ACTIVE;
		l[i] = &devs[i].dev;
	}
	fake_rdma.loaded = 1;
	if (n)
		*n = 2;
	return l;
}

void ibv_free_device_list(struct ibv_device **l)
{
	free(l);
}

const char *ibv_get_device_name(struct ibv_device *d)
{
	return d->name;
}

bool mlx5dv_is_supported(struct ibv_device *d)
{
	(void)d;
	return true;
}

static int query_port(struct ibv_context *c, uint8_t port, struct ibv_port_attr *a, size_t len)
{
	struct fake_ctx *f = (struct fake_ctx *)(void *)((char *)c - offsetof(struct verbs_context, context));

	if (port != 1 || len < sizeof(*a))
		return EINVAL;
	memset(a, 0, len);
	a->state = f->dev->state;
	a->max_mtu = IBV_MTU_4096;
	a->active_mtu = IBV_MTU_1024; /* a 1500-byte Ethernet */
	a->gid_tbl_len = 4;
	a->link_layer = IBV_LINK_LAYER_ETHERNET;
	return 0;
}

/* The exported symbol, which verbs.h's macro of the same name hides. */
#undef ibv_query_port
int ibv_query_port(struct ibv_context *c, uint8_t port, struct _compat_ibv_port_attr *a)
{
	(void)c;
	(void)port;
	(void)a;
	misuse("the exported ibv_query_port (the context has the op)");
	return EINVAL;
}

static void gid(int i, union ibv_gid *g, uint32_t *type)
{
	memset(g, 0, sizeof(*g));
	if (i < 2) { /* fe80::1 */
		g->raw[0] = 0xfe;
		g->raw[1] = 0x80;
		g->raw[15] = 1;
	} else { /* ::ffff:10.0.0.7 */
		g->raw[10] = g->raw[11] = 0xff;
		g->raw[12] = 10;
		g->raw[15] = 7;
	}
	*type = i % 2 ? IBV_GID_TYPE_ROCE_V2 : IBV_GID_TYPE_ROCE_V1;
}

ssize_t _ibv_query_gid_table(struct ibv_context *c, struct ibv_gid_entry *e, size_t max, uint32_t flags,
			     size_t sz)
{
	(void)c;
	if (flags || sz != sizeof(*e) || max < 4)
		return -EINVAL;
	for (int i = 0; i < 4; i++) {
		gid(i, &e[i].gid, &e[i].gid_type);
		e[i].gid_index = (uint32_t)i;
		e[i].port_num = 1;
	}
	return 4;
}

int ibv_query_gid(struct ibv_context *c, uint8_t port, int index, union ibv_gid *g)
{
	uint32_t t;

	(void)c;
	if (port != 1 || index < 0 || index > 3)
		return EINVAL;
	gid(index, g, &t);
	return 0;
}

static struct ibv_td *alloc_td(struct ibv_context *c, struct ibv_td_init_attr *a)
{
	struct fake_td *t = calloc(1, sizeof(*t));

	(void)a;
	t->td.context = c;
	if (posix_memalign((void **)&t->uar, 4096, 4096))
		abort();
	memset(t->uar, 0, 4096);
	fake_rdma.tds++;
	return &t->td;
}

static int dealloc_td(struct ibv_td *td)
{
	struct fake_td *t = (struct fake_td *)td;

	free(t->uar);
	free(t);
	fake_rdma.tds--;
	return 0;
}

static struct ibv_pd *alloc_parent_domain(struct ibv_context *c, struct ibv_parent_domain_init_attr *a)
{
	struct fake_pd *p;

	if (!a->pd || !(a->comp_mask & IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS) || !a->alloc || !a->free) {
		misuse("parent domain without allocators");
		errno = EINVAL;
		return NULL;
	}
	p = calloc(1, sizeof(*p));
	p->pd.context = c;
	p->parent = 1;
	p->td = a->td;
	p->attr = *a;
	fake_rdma.domains++;
	return &p->pd;
}

struct ibv_context *ibv_open_device(struct ibv_device *d)
{
	struct fake_ctx *f = calloc(1, sizeof(*f));

	f->dev = (struct fake_dev *)d;
	f->v.sz = sizeof(f->v);
	f->v.query_port = query_port;
	f->v.alloc_td = alloc_td;
	f->v.dealloc_td = dealloc_td;
	f->v.alloc_parent_domain = alloc_parent_domain;
	f->v.context.device = d;
	f->v.context.abi_compat = __VERBS_ABI_IS_EXTENDED;
	if (pipe(f->pipe))
		abort();
	f->v.context.async_fd = f->pipe[0];
	f->v.context.cmd_fd = -1;
	fake_rdma.open_devices++;
	return &f->v.context;
}

int ibv_close_device(struct ibv_context *c)
{
	struct fake_ctx *f = (struct fake_ctx *)(void *)((char *)c - offsetof(struct verbs_context, context));

	close(f->pipe[0]);
	close(f->pipe[1]);
	free(f);
	fake_rdma.open_devices--;
	return 0;
}

int ibv_query_device(struct ibv_context *c, struct ibv_device_attr *a)
{
	(void)c;
	memset(a, 0, sizeof(*a));
	snprintf(a->fw_ver, sizeof(a->fw_ver), "99.99.9999");
	a->phys_port_cnt = 1;
	a->max_qp_wr = 32768;
	a->max_sge = 30;
	a->max_cqe = 4194303;
	a->max_qp_rd_atom = 16;
	a->max_qp_init_rd_atom = 16;
	a->atomic_cap = IBV_ATOMIC_HCA;
	return 0;
}

const char *ibv_event_type_str(enum ibv_event_type e)
{
	return e == IBV_EVENT_QP_FATAL ? "local work queue catastrophic error"
	       : e == IBV_EVENT_CQ_ERR ? "CQ error"
				       : "other event";
}

int ibv_get_async_event(struct ibv_context *c, struct ibv_async_event *e)
{
	int got = 0;

	(void)c;
	pthread_mutex_lock(&fake_rdma.lock);
	if (fake_rdma.ev_head != fake_rdma.ev_tail) {
		*e = fake_rdma.ev[fake_rdma.ev_head++ % 16];
		got = 1;
	}
	pthread_mutex_unlock(&fake_rdma.lock);
	if (!got) {
		errno = EAGAIN;
		return -1;
	}
	return 0;
}

void ibv_ack_async_event(struct ibv_async_event *e)
{
	(void)e;
	pthread_mutex_lock(&fake_rdma.lock);
	fake_rdma.ev_acked++;
	pthread_mutex_unlock(&fake_rdma.lock);
}

/* ---- protection domains and memory ---- */

struct ibv_pd *ibv_alloc_pd(struct ibv_context *c)
{
	struct fake_pd *p = calloc(1, sizeof(*p));

	p->pd.context = c;
	fake_rdma.pds++;
	return &p->pd;
}

int ibv_dealloc_pd(struct ibv_pd *pd)
{
	struct fake_pd *p = (struct fake_pd *)pd;

	if (p->parent) {
		fake_rdma.domains--;
	} else {
		if (pd_busy(pd)) {
			misuse("ibv_dealloc_pd with regions or QPs left");
			return EBUSY;
		}
		fake_rdma.pds--;
	}
	free(p);
	return 0;
}

struct ibv_mr *ibv_reg_mr_iova2(struct ibv_pd *pd, void *addr, size_t len, uint64_t iova, unsigned access)
{
	struct fake_mr *m;
	int i = fake_rdma.nmr;

	if (((struct fake_pd *)pd)->parent || i >= FAKE_MAX) {
		errno = EINVAL;
		return NULL;
	}
	fake_rdma.nmr++;
	m = calloc(1, sizeof(*m));
	m->rec = i;
	m->mr.addr = addr;
	m->mr.length = len;
	m->mr.lkey = m->mr.rkey = (uint32_t)(0x4200 + i) << 8 | 0x5a;
	fake_rdma.mr[i] = (struct fake_mr_rec){1, addr, len, iova, access, m->mr.lkey, pd};
	return &m->mr;
}

struct ibv_mr *ibv_reg_dmabuf_mr(struct ibv_pd *pd, uint64_t off, size_t len, uint64_t iova, int fd,
				 int access)
{
	(void)pd, (void)off, (void)len, (void)iova, (void)fd, (void)access;
	errno = EOPNOTSUPP;
	return NULL;
}

int ibv_dereg_mr(struct ibv_mr *mr)
{
	struct fake_mr *m = (struct fake_mr *)mr;

	fake_rdma.mr[m->rec].live = 0;
	free(m);
	return 0;
}

static void *domain_alloc(struct fake_pd *d, size_t size, size_t align, uint64_t type)
{
	void *p = d->attr.alloc(&d->pd, d->attr.pd_context, size, align, type);

	if (p == IBV_ALLOCATOR_USE_DEFAULT) {
		misuse("the allocator asked for rdma-core's default");
		return NULL;
	}
	if (p) {
		fake_rdma.allocs++;
		fake_rdma.alloc_cq += type == MLX5DV_RES_TYPE_CQ;
		fake_rdma.alloc_qp += type == MLX5DV_RES_TYPE_QP;
		fake_rdma.alloc_dbr += type == MLX5DV_RES_TYPE_DBR;
	}
	return p;
}

static void domain_free(struct fake_pd *d, void *p, uint64_t type)
{
	d->attr.free(&d->pd, d->attr.pd_context, p, type);
	fake_rdma.frees++;
}

static uint32_t pow2(uint32_t v)
{
	uint32_t p = 1;

	while (p < v)
		p <<= 1;
	return p;
}

/* ---- CQs ---- */

struct ibv_cq_ex *mlx5dv_create_cq(struct ibv_context *c, struct ibv_cq_init_attr_ex *a,
				   struct mlx5dv_cq_init_attr *dv)
{
	struct fake_pd *d = (struct fake_pd *)a->parent_domain;
	struct fake_cq_rec *r;
	struct fake_cq *q;
	uint32_t n = pow2(a->cqe + 1);

	if (!(a->comp_mask & IBV_CQ_INIT_ATTR_MASK_PD) || !d || !d->parent || fake_rdma.ncq >= FAKE_MAX) {
		misuse("CQ not on a parent domain");
		errno = EINVAL;
		return NULL;
	}
	q = calloc(1, sizeof(*q));
	q->rec = fake_rdma.ncq++;
	q->domain = d;
	r = &fake_rdma.cq[q->rec];
	memset(r, 0, sizeof(*r));
	r->live = 1;
	r->cqn = 0x300 + (uint32_t)q->rec;
	r->ncqe = n;
	r->flags = a->comp_mask & IBV_CQ_INIT_ATTR_MASK_FLAGS ? a->flags : 0;
	r->dv = dv ? *dv : (struct mlx5dv_cq_init_attr){0};
	r->buf = domain_alloc(d, (size_t)n * 64, 4096, MLX5DV_RES_TYPE_CQ);
	r->dbrec = domain_alloc(d, 8, 8, MLX5DV_RES_TYPE_DBR);
	r->ibcq = (struct ibv_cq *)(void *)&q->cq;
	for (uint32_t i = 0; i < n; i++) /* as libmlx5: INVALID, owner 0 */
		((uint8_t *)r->buf)[i * 64 + 63] = MLX5_CQE_INVALID << 4;
	q->cq.context = c;
	q->cq.cqe = (int)n - 1;
	return &q->cq;
}

int ibv_destroy_cq(struct ibv_cq *cq)
{
	struct fake_cq *q = (struct fake_cq *)(void *)cq;
	struct fake_cq_rec *r = &fake_rdma.cq[q->rec];

	if (q->users) {
		misuse("ibv_destroy_cq of a CQ a QP uses");
		return EBUSY;
	}
	domain_free(q->domain, r->buf, MLX5DV_RES_TYPE_CQ);
	domain_free(q->domain, r->dbrec, MLX5DV_RES_TYPE_DBR);
	r->live = 0;
	free(q);
	return 0;
}

/* ---- QPs ---- */

struct ibv_qp *mlx5dv_create_qp(struct ibv_context *c, struct ibv_qp_init_attr_ex *a,
				struct mlx5dv_qp_init_attr *dv)
{
	struct fake_pd *d = (struct fake_pd *)a->pd;
	struct fake_qp_rec *r;
	struct fake_qp *q;
	uint32_t rq_stride = pow2(16 * (a->cap.max_recv_sge ? a->cap.max_recv_sge : 1));

	if (a->qp_type != IBV_QPT_RC || !(a->comp_mask & IBV_QP_INIT_ATTR_PD) || !d || !d->parent ||
	    !a->send_cq || !a->recv_cq || !a->cap.max_send_wr || fake_rdma.nqp >= FAKE_MAX) {
		misuse("QP attributes");
		errno = EINVAL;
		return NULL;
	}
	q = calloc(1, sizeof(*q));
	q->rec = fake_rdma.nqp++;
	q->domain = d;
	r = &fake_rdma.qp[q->rec];
	memset(r, 0, sizeof(*r));
	r->live = 1;
	r->qpn = 0x1100 + (uint32_t)q->rec;
	r->attr = *a;
	r->dv = dv ? *dv : (struct mlx5dv_qp_init_attr){0};
	r->has_td = d->td != NULL;
	/* One-BB WQEs only when no memory-window overhead is asked for. */
	r->sq_cnt = pow2(a->cap.max_send_wr) * ((a->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) &&
								!(a->send_ops_flags & IBV_QP_EX_WITH_BIND_MW)
							? 1
							: 4);
	r->rq_cnt = a->cap.max_recv_wr ? pow2(a->cap.max_recv_wr) : 0;
	while (r->rq_cnt && r->rq_cnt * rq_stride < 64)
		r->rq_cnt *= 2;
	r->rq_stride = rq_stride;
	q->buf = domain_alloc(d, (size_t)r->rq_cnt * rq_stride + (size_t)r->sq_cnt * 64, 4096,
			      MLX5DV_RES_TYPE_QP);
	q->dbrec = domain_alloc(d, 8, 8, MLX5DV_RES_TYPE_DBR);
	r->rq = q->buf;
	r->sq = (uint8_t *)q->buf + (size_t)r->rq_cnt * rq_stride;
	r->dbrec = q->dbrec;
	r->uar = d->td ? ((struct fake_td *)d->td)->uar : NULL;
	r->state = IBV_QPS_RESET;
	r->ibqp = &q->qp;
	r->pd = d->attr.pd;
	q->qp.context = c;
	q->qp.qp_context = a->qp_context;
	q->qp.pd = a->pd;
	q->qp.send_cq = a->send_cq;
	q->qp.recv_cq = a->recv_cq;
	q->qp.qp_num = r->qpn;
	q->qp.qp_type = IBV_QPT_RC;
	((struct fake_cq *)(void *)a->send_cq)->users++;
	((struct fake_cq *)(void *)a->recv_cq)->users++;
	return &q->qp;
}

int ibv_destroy_qp(struct ibv_qp *qp)
{
	struct fake_qp *q = (struct fake_qp *)qp;

	((struct fake_cq *)(void *)qp->send_cq)->users--;
	((struct fake_cq *)(void *)qp->recv_cq)->users--;
	domain_free(q->domain, q->buf, MLX5DV_RES_TYPE_QP);
	domain_free(q->domain, q->dbrec, MLX5DV_RES_TYPE_DBR);
	fake_rdma.qp[q->rec].live = 0;
	free(q);
	return 0;
}

int mlx5dv_init_obj(struct mlx5dv_obj *o, uint64_t type)
{
	if (type == MLX5DV_OBJ_CQ) {
		struct fake_cq *q = (struct fake_cq *)(void *)o->cq.in;
		struct fake_cq_rec *r = &fake_rdma.cq[q->rec];

		memset(o->cq.out, 0, sizeof(*o->cq.out));
		o->cq.out->buf = r->buf;
		o->cq.out->dbrec = r->dbrec;
		o->cq.out->cqe_cnt = r->ncqe;
		o->cq.out->cqe_size =
			r->dv.comp_mask & MLX5DV_CQ_INIT_ATTR_MASK_CQE_SIZE ? r->dv.cqe_size : 64;
		o->cq.out->cqn = r->cqn;
		return 0;
	}
	if (type == MLX5DV_OBJ_QP) {
		struct fake_qp_rec *r = &fake_rdma.qp[((struct fake_qp *)o->qp.in)->rec];
		static uint8_t shared_uar[4096] __attribute__((aligned(4096)));

		memset(o->qp.out, 0, sizeof(*o->qp.out));
		o->qp.out->dbrec = r->dbrec;
		o->qp.out->sq.buf = r->sq;
		o->qp.out->sq.wqe_cnt = r->sq_cnt;
		o->qp.out->sq.stride = 64;
		o->qp.out->rq.buf = r->rq;
		o->qp.out->rq.wqe_cnt = r->rq_cnt;
		o->qp.out->rq.stride = r->rq_stride;
		o->qp.out->bf.reg = (r->uar ? r->uar : shared_uar) + FAKE_UAR_DB_OFFSET;
		o->qp.out->bf.size = 256;
		return 0;
	}
	return EINVAL;
}

/* The masks a real QP needs for each transition (IB spec, rdma-core). */
static int required_mask(enum ibv_qp_state from, enum ibv_qp_state to)
{
	if (from == IBV_QPS_RESET && to == IBV_QPS_INIT)
		return IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;
	if (from == IBV_QPS_INIT && to == IBV_QPS_RTR)
		return IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
		       IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
	if (from == IBV_QPS_RTR && to == IBV_QPS_RTS)
		return IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
		       IBV_QP_MAX_QP_RD_ATOMIC;
	if (to == IBV_QPS_ERR || to == IBV_QPS_RESET)
		return IBV_QP_STATE;
	return -1;
}

int ibv_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *a, int mask)
{
	struct fake_qp_rec *r = &fake_rdma.qp[((struct fake_qp *)qp)->rec];
	int need = required_mask(r->state, a->qp_state);

	if (need < 0 || (mask & need) != need) {
		misuse("ibv_modify_qp: an illegal transition or missing attributes");
		return EINVAL;
	}
	if (fake_rdma.fail_errno && a->qp_state == fake_rdma.fail_state) {
		int e = fake_rdma.fail_errno;
		fake_rdma.fail_errno = 0;
		return e;
	}
	/* RoCE: a GRH from a valid GID, an MTU no larger than the port's. */
	if (a->qp_state == IBV_QPS_RTR && (!a->ah_attr.is_global || a->ah_attr.grh.sgid_index > 3 ||
					   a->path_mtu > IBV_MTU_1024 || a->ah_attr.port_num != 1)) {
		misuse("RTR attributes a RoCE port refuses");
		return EINVAL;
	}
	r->modify_mask[a->qp_state] = mask;
	r->to[a->qp_state] = *a;
	r->state = a->qp_state;
	qp->state = a->qp_state;
	return 0;
}

int ibv_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *a, int mask, struct ibv_qp_init_attr *init)
{
	(void)mask;
	(void)init;
	memset(a, 0, sizeof(*a));
	a->qp_state = fake_rdma.qp[((struct fake_qp *)qp)->rec].state;
	return 0;
}

/* The test's way to act as the NIC. */
void fake_rdma_push_event(enum ibv_event_type type, struct ibv_qp *qp, struct ibv_cq *cq)
{
	pthread_mutex_lock(&fake_rdma.lock);
	struct ibv_async_event *e = &fake_rdma.ev[fake_rdma.ev_tail++ % 16];
	e->event_type = type;
	if (qp)
		e->element.qp = qp;
	else
		e->element.cq = cq;
	pthread_mutex_unlock(&fake_rdma.lock);
}
