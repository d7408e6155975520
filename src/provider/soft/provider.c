/*
 * The software NIC as a provider: its ops table, registered at load time.
 * Engine threads execute the WQEs; a transport (local, node or ofi) per
 * connected QP moves the bytes.
 */
#include <errno.h>

#include "engine/engine.h"
#include "rp/remote.h"
#include "soft.h"

static int soft_qp_connect(struct kinet_qp *qp, const struct kinet_qp_info *remote, const char **how)
{
	/* local, node or ofi, per $KINET_TRANSPORT (remote.c). */
	const struct kinet_transport_ops *tr = kinet_remote_choose(qp->ctx, remote);
	int ret;

	if (!tr) {
		KINET_ERR("qp %u: no transport reaches peer QP %u (node %016llx)", qp->qpn, remote->qpn,
			  (unsigned long long)remote->node_id);
		return -EHOSTUNREACH;
	}
	kinet_sqp(qp)->transport = tr;
	ret = tr->connect ? tr->connect(qp, remote) : 0;
	if (ret) {
		KINET_ERR("qp %u: %s transport cannot connect to QP %u: %s", qp->qpn, tr->name, remote->qpn,
			  kinet_strerror(ret));
		kinet_sqp(qp)->transport = NULL;
		return ret;
	}
	if (tr != &kinet_transport_local)
		kinet_engine_move_to_remote_thread(qp);
	*how = tr->name;
	return 0;
}

static void soft_qp_disconnect(struct kinet_qp *qp)
{
	if (kinet_sqp(qp)->transport && kinet_sqp(qp)->transport->disconnect)
		kinet_sqp(qp)->transport->disconnect(qp);
}

static enum kinet_peer_reach soft_peer_reach(const struct kinet_qp *qp)
{
	if (kinet_sqp(qp)->transport == &kinet_transport_local)
		return KINET_PEER_REACH_PROCESS;
	if (kinet_sqp(qp)->transport && kinet_sqp(qp)->transport->peer_hello)
		return KINET_PEER_REACH_HELLO;
	return KINET_PEER_REACH_NONE;
}

static int soft_peer_hello(struct kinet_qp *qp)
{
	return kinet_sqp(qp)->transport->peer_hello(qp);
}

static void soft_qp_info(const struct kinet_qp *qp, struct kinet_qp_info *info)
{
	kinet_remote_fill_info(qp->ctx, info);
}

static void soft_qp_add(struct kinet_qp *qp)
{
	kinet_engine_add_qp(qp->ctx, qp);
}

/* Rings in host memory mapped for the GPU: the engine (a CPU thread) and
 * device code both reach them.  Every QP gets a UAR page, so the regular
 * doorbell always works. */
static int soft_qp_create(struct kinet_qp *qp)
{
	struct kinet_ctx *ctx = qp->ctx;

	pthread_mutex_init(&kinet_sqp(qp)->rq_lock, NULL);
	qp->sq = kinet_host_alloc(ctx, (size_t)qp->sq_bbs * KINET_WQE_BB_SIZE);
	qp->dbrec = kinet_host_alloc(ctx, 64);
	qp->db_cpu = kinet_host_alloc(ctx, 64);
	qp->uar = kinet_host_alloc(ctx, 4096);
	if (qp->rq_depth)
		qp->rq = kinet_host_alloc(ctx, (size_t)qp->rq_depth * qp->rq_stride);
	return qp->sq && qp->dbrec && qp->db_cpu && qp->uar && (!qp->rq_depth || qp->rq) ? 0 : -ENOMEM;
}

static void soft_qp_fini(struct kinet_qp *qp)
{
	struct kinet_ctx *ctx = qp->ctx;

	kinet_host_free(ctx, qp->sq);
	kinet_host_free(ctx, qp->rq);
	kinet_host_free(ctx, qp->dbrec);
	kinet_host_free(ctx, (void *)qp->db_cpu);
	kinet_host_free(ctx, qp->uar);
	pthread_mutex_destroy(&kinet_sqp(qp)->rq_lock);
	kinet_soft_eth_qp_fini(qp);
}

/* The completion word gets a line of its own: device code polls it, the
 * engine rewrites it per CQE, and device code writes the doorbell record. */
static int soft_cq_create(struct kinet_cq *cq)
{
	cq->ring = kinet_host_alloc(cq->ctx, (size_t)cq->depth * sizeof(*cq->ring));
	cq->dbrec = kinet_host_alloc(cq->ctx, 64);
	cq->comp_word = kinet_host_alloc(cq->ctx, 64);
	if (!cq->ring || !cq->dbrec || !cq->comp_word) {
		kinet_host_free(cq->ctx, cq->ring);
		kinet_host_free(cq->ctx, cq->dbrec);
		kinet_host_free(cq->ctx, cq->comp_word);
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < cq->depth; i++)
		cq->ring[i].op_own = KINET_CQE_OP_OWN_INIT;
	return 0;
}

static void soft_cq_destroy(struct kinet_cq *cq)
{
	kinet_host_free(cq->ctx, cq->ring);
	kinet_host_free(cq->ctx, cq->dbrec);
	kinet_host_free(cq->ctx, cq->comp_word);
}

/* The ring and its doorbell record where device code reaches them, as a
 * QP's receive queue. */
static int soft_srq_create(struct kinet_srq *srq)
{
	pthread_mutex_init(&kinet_ssrq(srq)->lock, NULL);
	srq->buf = kinet_host_alloc(srq->ctx, (size_t)srq->slots * srq->stride);
	srq->dbrec = kinet_host_alloc(srq->ctx, 64);
	return srq->buf && srq->dbrec ? 0 : -ENOMEM;
}

static void soft_srq_destroy(struct kinet_srq *srq)
{
	kinet_host_free(srq->ctx, srq->buf);
	kinet_host_free(srq->ctx, srq->dbrec);
	pthread_mutex_destroy(&kinet_ssrq(srq)->lock);
}

/* Any engine thread may run a QP naming the SRQ (and thread 0 holds
 * remote sends waiting for a receive): each is told. */
static void soft_srq_posted(struct kinet_srq *srq)
{
	kinet_engine_kick_all(srq->ctx);
}

static void soft_qp_destroy(struct kinet_qp *qp)
{
	struct kinet_soft_qp *s = kinet_sqp(qp);

	if (!atomic_load(&qp->ctx->engine_stopped))
		kinet_engine_remove_qp(qp->ctx, qp);
	if (s->bf_mismatch)
		KINET_INFO("qp %u: %llu BlueFlame copies differed from the send queue", qp->qpn,
			   (unsigned long long)s->bf_mismatch);
	if (s->db_bad > 1)
		KINET_INFO("qp %u: %llu bad doorbells ignored (the first was logged)", qp->qpn,
			   (unsigned long long)s->db_bad);
}

/* Carriers last (core's ctx_close says why): the Ethernet ports' are
 * closed by then, with the ports. */
static void soft_ctx_close(struct kinet_ctx *ctx)
{
	kinet_soft_eth_close(ctx);
	kinet_remote_close(ctx);
}

static const struct kinet_provider_ops soft_ops = {
	.ctx_size = sizeof(struct kinet_soft_ctx),
	.qp_size = sizeof(struct kinet_soft_qp),
	.mr_size = sizeof(struct kinet_soft_mr),
	.srq_size = sizeof(struct kinet_soft_srq),
	/* The software NIC is a CPU thread: a producer index in host memory is
	 * the cheapest doorbell for it (one system fence and a posted atomic
	 * on the GPU side; no doorbell record, no UAR write behind a fence). */
	.db_auto = KINET_DB_CPU,
	.cq_create = soft_cq_create,
	.cq_destroy = soft_cq_destroy,
	.ctx_open = kinet_engine_start,
	.ctx_stop = kinet_engine_stop,
	.ctx_close = soft_ctx_close,
	.ctx_pause = kinet_engine_pause,
	.ctx_engine_stats = kinet_engine_stats,
	.qp_create = soft_qp_create,
	.qp_fini = soft_qp_fini,
	.qp_add = soft_qp_add,
	.qp_destroy = soft_qp_destroy,
	.qp_info = soft_qp_info,
	.qp_connect = soft_qp_connect,
	.qp_disconnect = soft_qp_disconnect,
	.doorbell = kinet_engine_kick,
	.send_rung = kinet_engine_send_rung,
	.srq_create = soft_srq_create,
	.srq_destroy = soft_srq_destroy,
	.srq_posted = soft_srq_posted,
	.eth_port_open = kinet_soft_eth_port_open,
	.eth_port_close = kinet_soft_eth_port_close,
	.eth_port_status = kinet_soft_eth_port_status,
	.eth_port_rx_dropped = kinet_soft_eth_port_rx_dropped,
	.eth_qp_attach = kinet_soft_eth_qp_attach,
	.peer_reach = soft_peer_reach,
	.peer_hello = soft_peer_hello,
	.peer_publish = kinet_remote_peer_publish,
	.peer_withdraw = kinet_remote_peer_withdraw,
};

static struct kinet_provider soft_provider = {.name = "soft", .ops = &soft_ops};

__attribute__((constructor)) static void soft_register(void)
{
	kinet_provider_register(&soft_provider);
}
