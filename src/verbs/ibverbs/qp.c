/*
 * RC queue pairs.  A verbs QP is a kinet QP plus the state machine verbs
 * programs walk: kinet connects in one step (kinet_qp_connect), which the
 * front door takes at INIT -> RTR, once the address vector names the peer
 * (directory.c finds its blob from QPN and GID).  The attribute masks of
 * each transition are checked as the kernel checks them for RC
 * (ib_modify_qp_is_ok): a missing required or a foreign optional
 * attribute is EINVAL.  UD, UC, XRC and raw QPs are EOPNOTSUPP.
 *
 * Timeouts: the verbs timeout, retry and RNR attributes are kept and
 * reported back; the software NIC bounds retries with the kinet QP's own
 * timeouts (docs/VERBS.md).  A connected QP cannot go back to RESET: the
 * front door moves it to the error state instead, and it must be
 * destroyed (EOPNOTSUPP on a later INIT).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "verbs.h"

static uint32_t pow2(uint32_t v)
{
	uint32_t p = 1;

	while (p < v)
		p <<= 1;
	return p;
}

/* Basic blocks one WQE of this QP may take: control, remote address,
 * atomic segment and the larger of its scatter list and its inline data. */
static uint32_t wqe_bbs(const struct ibv_qp_cap *cap)
{
	uint32_t data = cap->max_send_sge * 16, in = (4 + cap->max_inline_data + 15) / 16 * 16;

	return (48 + (data > in ? data : in) + 63) / 64;
}

static void qp_link(struct kinet_verbs_context *ctx, struct kinet_verbs_qp *qp)
{
	pthread_mutex_lock(&ctx->lock);
	qp->next = ctx->qps;
	ctx->qps = qp;
	pthread_mutex_unlock(&ctx->lock);
}

static void qp_unlink(struct kinet_verbs_context *ctx, struct kinet_verbs_qp *qp)
{
	pthread_mutex_lock(&ctx->lock);
	for (struct kinet_verbs_qp **p = &ctx->qps; *p; p = &(*p)->next)
		if (*p == qp) {
			*p = qp->next;
			break;
		}
	pthread_mutex_unlock(&ctx->lock);
}

struct ibv_qp *kinet_verbs_create_qp_ex(struct ibv_context *context, struct ibv_qp_init_attr_ex *init)
{
	struct kinet_verbs_context *ctx = kinet_verbs_ctx(context);
	const uint32_t known =
		IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS | IBV_QP_INIT_ATTR_CREATE_FLAGS;
	struct kinet_qp_attr attr;
	struct kinet_verbs_qp *qp;
	struct ibv_qp_cap cap;
	int ret;

	if (!init || !(init->comp_mask & IBV_QP_INIT_ATTR_PD) || !init->pd || !init->send_cq ||
	    !init->recv_cq) {
		errno = EINVAL;
		return NULL;
	}
	if (init->qp_type != IBV_QPT_RC) {
		fprintf(stderr,
			"kinet verbs: only RC queue pairs are supported (type %d asked; docs/VERBS.md)\n",
			init->qp_type);
		errno = EOPNOTSUPP;
		return NULL;
	}
	if ((init->comp_mask & ~known) ||
	    ((init->comp_mask & IBV_QP_INIT_ATTR_CREATE_FLAGS) && init->create_flags)) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	cap = init->cap;
	if (cap.max_send_wr > KINET_VERBS_MAX_QP_WR || cap.max_recv_wr > KINET_VERBS_MAX_QP_WR ||
	    cap.max_send_sge > KINET_VERBS_MAX_SGE || cap.max_recv_sge > KINET_VERBS_MAX_SGE ||
	    cap.max_inline_data > KINET_VERBS_MAX_INLINE) {
		errno = EINVAL;
		return NULL;
	}
	if (!cap.max_send_sge)
		cap.max_send_sge = 1;
	if (!cap.max_recv_sge)
		cap.max_recv_sge = 1;
	qp = calloc(1, sizeof(*qp));
	if (!qp) {
		errno = ENOMEM;
		return NULL;
	}
	kinet_qp_attr_init(&attr);
	attr.send_cq = kinet_verbs_cq(init->send_cq)->kcq;
	attr.recv_cq = kinet_verbs_cq(init->recv_cq)->kcq;
	attr.sq_depth = pow2((cap.max_send_wr ? cap.max_send_wr : 1) * wqe_bbs(&cap));
	if (attr.sq_depth < 64)
		attr.sq_depth = 64;
	attr.rq_depth = pow2(cap.max_recv_wr ? cap.max_recv_wr : 1);
	attr.max_recv_sge = cap.max_recv_sge;
	attr.max_inline = cap.max_inline_data;
	/* The doorbell as rdma-core's mlx5 provider rings it (a BlueFlame
	 * copy of the WQE's first bytes), which is also what a program that
	 * drives the rings through mlx5dv does. */
	attr.db_mode = KINET_DB_BF;
	/* A NIC learns of a vanished peer only when its retries run out, and
	 * verbs programs count on that taking a while (kinet.h). */
	attr.flags = KINET_QP_ATTR_PEER_LOSS_AFTER_TIMEOUT;
	if (init->srq)
		attr.srq = ((struct kinet_verbs_srq *)init->srq)->ksrq;
	ret = kinet_qp_create(ctx->kctx, &attr, &qp->kqp);
	if (ret) {
		free(qp);
		errno = kinet_verbs_errno(ret);
		return NULL;
	}
	cap.max_send_wr = attr.sq_depth / wqe_bbs(&cap);
	if (cap.max_send_wr > KINET_VERBS_MAX_QP_WR)
		cap.max_send_wr = KINET_VERBS_MAX_QP_WR;
	if (!init->srq)
		cap.max_recv_wr = pow2(cap.max_recv_wr ? cap.max_recv_wr : 1);
	else
		cap.max_recv_wr = cap.max_recv_sge = 0;
	init->cap = cap;
	qp->cap = cap;
	qp->sq_sig_all = init->sq_sig_all != 0;

	struct ibv_qp *b = &qp->qpx.qp_base;
	b->context = context;
	b->qp_context = init->qp_context;
	b->pd = init->pd;
	b->send_cq = init->send_cq;
	b->recv_cq = init->recv_cq;
	b->srq = init->srq;
	b->handle = kinet_qp_num(qp->kqp);
	b->qp_num = kinet_qp_num(qp->kqp);
	b->state = IBV_QPS_RESET;
	b->qp_type = IBV_QPT_RC;
	pthread_mutex_init(&b->mutex, NULL);
	pthread_cond_init(&b->cond, NULL);
	if (init->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) {
		kinet_verbs_qp_ex_init(qp, init->send_ops_flags);
		if (qp->batch.error) {
			ret = qp->batch.error;
			kinet_qp_destroy(qp->kqp);
			kinet_verbs_batch_free(&qp->batch);
			free(qp);
			errno = ret;
			return NULL;
		}
	}
	qp_link(ctx, qp);
	return b;
}

KINET_VERBS_EXPORT struct ibv_qp *ibv_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *init)
{
	struct ibv_qp_init_attr_ex ex;
	struct ibv_qp *qp;

	if (!pd || !init) {
		errno = EINVAL;
		return NULL;
	}
	memset(&ex, 0, sizeof(ex));
	memcpy(&ex, init, sizeof(*init));
	ex.comp_mask = IBV_QP_INIT_ATTR_PD;
	ex.pd = pd;
	qp = kinet_verbs_create_qp_ex(pd->context, &ex);
	if (qp)
		init->cap = ex.cap;
	return qp;
}

KINET_VERBS_EXPORT struct ibv_qp_ex *ibv_qp_to_qp_ex(struct ibv_qp *ibqp)
{
	struct kinet_verbs_qp *qp = kinet_verbs_qp(ibqp);

	/* As rdma-core: only a QP created with send_ops_flags has one. */
	return qp && qp->qpx.wr_start ? &qp->qpx : NULL;
}

/* Required and allowed attributes of each RC transition (the kernel's
 * table, ib_modify_qp_is_ok). */
static int check_mask(enum ibv_qp_state cur, enum ibv_qp_state next, int mask)
{
	int req = IBV_QP_STATE, opt = 0;

	if (next == IBV_QPS_RESET || next == IBV_QPS_ERR) {
		opt = 0;
	} else if (cur == IBV_QPS_RESET && next == IBV_QPS_INIT) {
		req |= IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;
	} else if (cur == IBV_QPS_INIT && next == IBV_QPS_INIT) {
		opt = IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;
	} else if (cur == IBV_QPS_INIT && next == IBV_QPS_RTR) {
		req |= IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
		       IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
		opt = IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX;
	} else if (cur == IBV_QPS_RTR && next == IBV_QPS_RTS) {
		req |= IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
		       IBV_QP_MAX_QP_RD_ATOMIC;
		opt = IBV_QP_CUR_STATE | IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS | IBV_QP_MIN_RNR_TIMER |
		      IBV_QP_PATH_MIG_STATE;
	} else if (cur == IBV_QPS_RTS && next == IBV_QPS_RTS) {
		opt = IBV_QP_CUR_STATE | IBV_QP_ACCESS_FLAGS | IBV_QP_ALT_PATH | IBV_QP_PATH_MIG_STATE |
		      IBV_QP_MIN_RNR_TIMER;
	} else {
		return EINVAL;
	}
	if ((mask & req) != req || (mask & ~(req | opt | IBV_QP_CUR_STATE)))
		return EINVAL;
	return 0;
}

static int check_values(const struct kinet_verbs_qp *qp, const struct ibv_qp_attr *a, int mask)
{
	if ((mask & IBV_QP_PORT) && a->port_num != 1)
		return EINVAL;
	if ((mask & IBV_QP_PKEY_INDEX) && a->pkey_index != 0)
		return EINVAL;
	if ((mask & IBV_QP_PATH_MTU) && (a->path_mtu < IBV_MTU_256 || a->path_mtu > IBV_MTU_4096))
		return EINVAL;
	if ((mask & IBV_QP_MAX_DEST_RD_ATOMIC) && a->max_dest_rd_atomic > KINET_VERBS_MAX_RD_ATOM)
		return EINVAL;
	if ((mask & IBV_QP_MAX_QP_RD_ATOMIC) && a->max_rd_atomic > KINET_VERBS_MAX_RD_ATOM)
		return EINVAL;
	if ((mask & IBV_QP_AV) && a->ah_attr.port_num && a->ah_attr.port_num != 1)
		return EINVAL;
	if ((mask & IBV_QP_CUR_STATE) && a->cur_qp_state != qp->qpx.qp_base.state)
		return EINVAL;
	if ((mask & IBV_QP_RETRY_CNT) && a->retry_cnt > 7)
		return EINVAL;
	if ((mask & IBV_QP_RNR_RETRY) && a->rnr_retry > 7)
		return EINVAL;
	return 0;
}

/* Where the peer is: the GID's IPv4 address (RoCE v2, v4-mapped), or this
 * host when the address vector has no GRH. */
static int peer_address(const struct ibv_ah_attr *ah, uint32_t *ipv4)
{
	static const uint8_t mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

	if (!ah->is_global) {
		*ipv4 = htonl(INADDR_LOOPBACK);
		return 0;
	}
	if (memcmp(ah->grh.dgid.raw, mapped, sizeof(mapped))) {
		fprintf(stderr, "kinet verbs: the destination GID is not an IPv4-mapped RoCE v2 GID\n");
		return EINVAL;
	}
	memcpy(ipv4, &ah->grh.dgid.raw[12], 4);
	return 0;
}

static int connect_peer(struct kinet_verbs_qp *qp, const struct ibv_qp_attr *a)
{
	struct kinet_verbs_context *ctx = kinet_verbs_ctx(qp->qpx.qp_base.context);
	struct kinet_qp_info info;
	uint32_t ipv4;
	int ret = peer_address(&a->ah_attr, &ipv4);

	if (ret)
		return ret;
	ret = kinet_verbs_directory_lookup(ctx, ipv4, a->dest_qp_num, &info);
	if (ret)
		return ret == ENOENT || ret == ECONNREFUSED || ret == ETIMEDOUT ? EHOSTUNREACH : ret;
	return kinet_verbs_errno(kinet_qp_connect(qp->kqp, &info));
}

KINET_VERBS_EXPORT int ibv_modify_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *a, int mask)
{
	struct kinet_verbs_qp *qp = kinet_verbs_qp(ibqp);
	enum ibv_qp_state cur, next;
	int ret;

	if (!qp || !a)
		return EINVAL;
	pthread_mutex_lock(&ibqp->mutex);
	cur = ibqp->state;
	if (cur == IBV_QPS_RTS && kinet_qp_get_state(qp->kqp) == KINET_QPS_ERR)
		cur = IBV_QPS_ERR; /* the NIC moved it on an error completion */
	next = (mask & IBV_QP_STATE) ? a->qp_state : cur;
	ret = check_mask(cur, next, mask);
	if (!ret)
		ret = check_values(qp, a, mask);
	if (ret)
		goto out;
	if (next == IBV_QPS_INIT && cur == IBV_QPS_RESET && kinet_qp_get_state(qp->kqp) != KINET_QPS_RESET) {
		fprintf(stderr, "kinet verbs: QP 0x%06x was connected; a reset QP cannot be used again\n",
			ibqp->qp_num);
		ret = EOPNOTSUPP;
		goto out;
	}
	if (cur == IBV_QPS_INIT && next == IBV_QPS_RTR) {
		ret = connect_peer(qp, a);
		if (ret)
			goto out;
	}
	if ((next == IBV_QPS_ERR || (next == IBV_QPS_RESET && cur != IBV_QPS_RESET && cur != IBV_QPS_INIT)) &&
	    kinet_qp_get_state(qp->kqp) != KINET_QPS_RESET)
		(void)kinet_qp_set_error(qp->kqp);
	/* What query_qp reports: the attributes as last set. */
	if (mask & IBV_QP_STATE)
		qp->attr.qp_state = a->qp_state;
	if (mask & IBV_QP_ACCESS_FLAGS)
		qp->attr.qp_access_flags = a->qp_access_flags;
	if (mask & IBV_QP_PKEY_INDEX)
		qp->attr.pkey_index = a->pkey_index;
	if (mask & IBV_QP_PORT)
		qp->attr.port_num = a->port_num;
	if (mask & IBV_QP_AV)
		qp->attr.ah_attr = a->ah_attr;
	if (mask & IBV_QP_PATH_MTU)
		qp->attr.path_mtu = a->path_mtu;
	if (mask & IBV_QP_DEST_QPN)
		qp->attr.dest_qp_num = a->dest_qp_num;
	if (mask & IBV_QP_RQ_PSN)
		qp->attr.rq_psn = a->rq_psn;
	if (mask & IBV_QP_SQ_PSN)
		qp->attr.sq_psn = a->sq_psn;
	if (mask & IBV_QP_MAX_DEST_RD_ATOMIC)
		qp->attr.max_dest_rd_atomic = a->max_dest_rd_atomic;
	if (mask & IBV_QP_MAX_QP_RD_ATOMIC)
		qp->attr.max_rd_atomic = a->max_rd_atomic;
	if (mask & IBV_QP_MIN_RNR_TIMER)
		qp->attr.min_rnr_timer = a->min_rnr_timer;
	if (mask & IBV_QP_TIMEOUT)
		qp->attr.timeout = a->timeout;
	if (mask & IBV_QP_RETRY_CNT)
		qp->attr.retry_cnt = a->retry_cnt;
	if (mask & IBV_QP_RNR_RETRY)
		qp->attr.rnr_retry = a->rnr_retry;
	if (mask & IBV_QP_PATH_MIG_STATE)
		qp->attr.path_mig_state = a->path_mig_state;
	qp->attr_mask |= mask;
	ibqp->state = next;
out:
	pthread_mutex_unlock(&ibqp->mutex);
	return ret;
}

KINET_VERBS_EXPORT int ibv_query_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *a, int mask,
				    struct ibv_qp_init_attr *init)
{
	struct kinet_verbs_qp *qp = kinet_verbs_qp(ibqp);

	(void)mask;
	if (!qp || !a || !init)
		return EINVAL;
	pthread_mutex_lock(&ibqp->mutex);
	if (ibqp->state != IBV_QPS_RESET && kinet_qp_get_state(qp->kqp) == KINET_QPS_ERR)
		ibqp->state = IBV_QPS_ERR;
	*a = qp->attr;
	a->qp_state = ibqp->state;
	a->cur_qp_state = ibqp->state;
	a->cap = qp->cap;
	a->sq_draining = 0;
	memset(init, 0, sizeof(*init));
	init->qp_context = ibqp->qp_context;
	init->send_cq = ibqp->send_cq;
	init->recv_cq = ibqp->recv_cq;
	init->srq = ibqp->srq;
	init->cap = qp->cap;
	init->qp_type = IBV_QPT_RC;
	init->sq_sig_all = qp->sq_sig_all;
	pthread_mutex_unlock(&ibqp->mutex);
	return 0;
}

KINET_VERBS_EXPORT int ibv_destroy_qp(struct ibv_qp *ibqp)
{
	struct kinet_verbs_qp *qp = kinet_verbs_qp(ibqp);
	struct kinet_verbs_context *ctx;
	int ret;

	if (!qp)
		return EINVAL;
	ctx = kinet_verbs_ctx(ibqp->context);
	/* Off the list first: the directory and the notifier stop seeing
	 * it before it goes. */
	qp_unlink(ctx, qp);
	ret = kinet_qp_destroy(qp->kqp);
	if (ret) {
		qp_link(ctx, qp);
		return kinet_verbs_errno(ret);
	}
	kinet_verbs_batch_free(&qp->batch);
	pthread_mutex_destroy(&ibqp->mutex);
	pthread_cond_destroy(&ibqp->cond);
	free(qp);
	return 0;
}
