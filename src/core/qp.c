/*
 * Queue pairs: queues and doorbells in host memory mapped for the GPU, the
 * RESET -> INIT -> RTR -> RTS walk.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "internal.h"
#include "provider.h"

#define QP_MAX_DEPTH 32768
#define QP_MIN_SQ_BBS 8
#define QP_MAX_INLINE 512
#define QP_DESTROY_WARN_NS (1000000000ull)

/* KINET_EINVAL naming the public function rather than the helper. */
#define CREATE_EINVAL(name, why) (KINET_ERR("kinet_qp_create: invalid argument '%s': %s", name, why), -EINVAL)

static const char *const state_names[] = {"RESET", "INIT", "RTR", "RTS", "ERR"};

static const char *state_name(int s)
{
	return s >= 0 && s <= KINET_QPS_ERR ? state_names[s] : "?";
}

static uint32_t pow2_ceil(uint32_t v)
{
	uint32_t p = 1;

	while (p < v)
		p <<= 1;
	return p;
}

static uint32_t log2_u32(uint32_t v)
{
	uint32_t l = 0;

	while ((1u << l) < v)
		l++;
	return l;
}

void kinet_qp_attr_init(struct kinet_qp_attr *attr)
{
	if (!attr)
		return;
	memset(attr, 0, sizeof(*attr));
	attr->size = sizeof(*attr);
	attr->sq_depth = 256;
	attr->rq_depth = 256;
	attr->max_recv_sge = 1;
	attr->max_inline = 64;
	attr->db_mode = KINET_DB_AUTO;
	attr->sharing = KINET_SHARE_EXCLUSIVE;
	attr->timeout_ms = 5000;
	attr->rnr_timeout_ms = 1000;
}

static int qp_check_attr(struct kinet_ctx *ctx, const struct kinet_qp_attr *a)
{
	if (!a->send_cq)
		return CREATE_EINVAL("attr->send_cq", "NULL");
	if (a->send_cq->ctx != ctx)
		return CREATE_EINVAL("attr->send_cq", "belongs to another context");
	if (a->recv_cq && a->recv_cq->ctx != ctx)
		return CREATE_EINVAL("attr->recv_cq", "belongs to another context");
	if (atomic_load(&a->send_cq->overrun) || (a->recv_cq && atomic_load(&a->recv_cq->overrun)))
		return CREATE_EINVAL("attr->send_cq/recv_cq", "overran (destroy it and create another)");
	if (!a->sq_depth || a->sq_depth > QP_MAX_DEPTH)
		return CREATE_EINVAL("attr->sq_depth", "must be 1..32768");
	if (a->srq) {
		if (!a->recv_cq)
			return CREATE_EINVAL("attr->recv_cq",
					     "NULL with an SRQ (its receives complete there)");
		if (a->srq->ctx != ctx)
			return CREATE_EINVAL("attr->srq", "belongs to another context");
	} else if (a->recv_cq) {
		if (!a->rq_depth || a->rq_depth > QP_MAX_DEPTH)
			return CREATE_EINVAL("attr->rq_depth", "must be 1..32768");
		if (!a->max_recv_sge || a->max_recv_sge > KINET_MAX_SGE)
			return CREATE_EINVAL("attr->max_recv_sge", "must be 1..16");
	}
	if (a->max_inline > QP_MAX_INLINE)
		return CREATE_EINVAL("attr->max_inline", "must be <= 512");
	if ((unsigned)a->db_mode > KINET_DB_BF)
		return CREATE_EINVAL("attr->db_mode", "unknown doorbell mode");
	if ((unsigned)a->sharing > KINET_SHARE_GPU)
		return CREATE_EINVAL("attr->sharing", "unknown sharing mode");
	if (!a->timeout_ms)
		return CREATE_EINVAL("attr->timeout_ms", "must be >= 1");
	if (a->flags & ~(uint32_t)KINET_QP_ATTR_PEER_LOSS_AFTER_TIMEOUT)
		return CREATE_EINVAL("attr->flags", "unknown flag");
	if (a->stage_bytes > KINET_QP_STAGE_MAX)
		return CREATE_EINVAL("attr->stage_bytes", "must be <= 4096 (KINET_QP_STAGE_MAX)");
	return 0;
}

/* attr->stage_bytes resolved: 0 (off) or a multiple of 64 up to the max. */
static uint32_t stage_bytes(const struct kinet_qp_attr *a)
{
	long n = a->stage_bytes ? (long)a->stage_bytes : kinet_env_long("KINET_STAGE_BYTES");

	if (n <= 0)
		return 0;
	if (n > (long)KINET_QP_STAGE_MAX)
		n = KINET_QP_STAGE_MAX;
	return ((uint32_t)n + 63u) & ~63u;
}

static void qp_free(struct kinet_qp *qp)
{
	struct kinet_ctx *ctx = qp->ctx;

	kinet_cuda_free(ctx, qp->dev);
	kinet_cuda_free(ctx, qp->dev_marks);
	kinet_cuda_free(ctx, qp->gpunetio);
	if (qp->scratch_mr)
		kinet_mr_dereg(qp->scratch_mr);
	kinet_host_free(ctx, qp->scratch);
	kinet_host_free(ctx, qp->stage);
	free(qp->sq_wrid);
	free(qp->sq_nbb);
	free(qp->rq_wrid);
	pthread_mutex_destroy(&qp->post_lock);
	ctx->ops->qp_fini(qp);
	free(qp);
}

int kinet_qp_create(struct kinet_ctx *ctx, const struct kinet_qp_attr *attr, struct kinet_qp **out)
{
	struct kinet_qp_attr a;
	struct kinet_qp *qp;
	int ret;

	if (!out)
		return KINET_EINVAL("qp", "NULL");
	*out = NULL;
	if (!ctx)
		return KINET_EINVAL("ctx", "NULL");
	if (!attr)
		return KINET_EINVAL("attr", "NULL");
	/* The layouts before stage_bytes, before srq and before flags are
	 * still taken (those fields 0). */
	if ((ret = kinet_attr_read_since("attr", attr, offsetof(struct kinet_qp_attr, stage_bytes), sizeof(a),
					 &a)))
		return ret;
	attr = &a;
	ret = qp_check_attr(ctx, attr);
	if (ret)
		return ret;

	qp = kinet_alloc_lines(ctx->ops->qp_size); /* qp.h: the posting lines */
	if (!qp)
		return -ENOMEM;
	qp->ctx = ctx;
	qp->attr = *attr;
	qp->db_mode = attr->db_mode == KINET_DB_AUTO ? ctx->ops->db_auto : attr->db_mode;
	qp->attr.stage_bytes = stage_bytes(attr);
	pthread_mutex_init(&qp->post_lock, NULL);

	qp->sq_bbs = pow2_ceil(attr->sq_depth < QP_MIN_SQ_BBS ? QP_MIN_SQ_BBS : attr->sq_depth);
	if (attr->recv_cq && !attr->srq) {
		qp->rq_depth = pow2_ceil(attr->rq_depth);
		qp->rq_stride = pow2_ceil(attr->max_recv_sge * (uint32_t)sizeof(struct kinet_wqe_data_seg));
	} else {
		qp->attr.rq_depth = 0;
		qp->attr.max_recv_sge = 0;
	}
	qp->uar_db_offset = KINET_UAR_DB_OFFSET;
	/* The provider may round the queues up (a NIC has its own rules), so
	 * the host's per-slot records are sized after it. */
	ret = ctx->ops->qp_create(qp);
	if (ret)
		goto fail;
	qp->sq_log = log2_u32(qp->sq_bbs);
	qp->sq_wrid = calloc(qp->sq_bbs, sizeof(*qp->sq_wrid));
	qp->sq_nbb = calloc(qp->sq_bbs, sizeof(*qp->sq_nbb));
	if (qp->rq_depth)
		qp->rq_wrid = calloc(qp->rq_depth, sizeof(*qp->rq_wrid));
	if (!qp->sq_wrid || !qp->sq_nbb || (qp->rq_depth && !qp->rq_wrid)) {
		ret = -ENOMEM;
		goto fail;
	}
	if (!qp->qpn)
		qp->qpn = kinet_ctx_alloc_qpn(ctx);
	atomic_store(&qp->state, KINET_QPS_RESET);

	atomic_fetch_add(&attr->send_cq->users, 1);
	if (attr->recv_cq)
		atomic_fetch_add(&attr->recv_cq->users, 1);
	if (attr->srq)
		atomic_fetch_add(&attr->srq->users, 1);
	pthread_mutex_lock(&ctx->obj_lock);
	qp->next_in_ctx = ctx->qps;
	ctx->qps = qp;
	pthread_mutex_unlock(&ctx->obj_lock);

	/* The engine looks at it only once it reaches RTS (or ERR). */
	ctx->ops->qp_add(qp);
	KINET_DBG("qp %u: %u BBs, rq %u x %u B, srq %u, doorbell mode %d", qp->qpn, qp->sq_bbs, qp->rq_depth,
		  qp->rq_stride, kinet_srq_num(attr->srq), qp->db_mode);
	*out = qp;
	return 0;
fail:
	qp_free(qp);
	return ret;
}

int kinet_qp_destroy(struct kinet_qp *qp)
{
	struct kinet_ctx *ctx;
	struct kinet_qp **p;
	uint64_t start;
	bool told = false;

	if (!qp)
		return KINET_EINVAL("qp", "NULL");
	ctx = qp->ctx;
	ctx->ops->qp_destroy(qp);
	/* Disconnect first: a transport that delivers peer windows updates
	 * the QP's link under its own lock until then (peer.c). */
	ctx->ops->qp_disconnect(qp);
	kinet_peer_qp_detach(qp);

	pthread_mutex_lock(&ctx->obj_lock);
	for (p = &ctx->qps; *p; p = &(*p)->next_in_ctx) {
		if (*p == qp) {
			*p = qp->next_in_ctx;
			break;
		}
	}
	pthread_mutex_unlock(&ctx->obj_lock);

	/* Nobody takes a new reference now (the QP is in no list); those
	 * held are dropped within one operation: a peer's engine checks the
	 * state before each WQE it executes against this QP, and fails it
	 * as a responder that went away. */
	atomic_store_explicit(&qp->state, KINET_QPS_ERR, memory_order_release);
	start = kinet_now_ns();
	while (atomic_load_explicit(&qp->refs, memory_order_acquire) > 0) {
		struct timespec ts = {0, 200000};

		if (!told && kinet_now_ns() - start > QP_DESTROY_WARN_NS) {
			KINET_INFO("qp %u: destroy waits for %d operation(s) of peers in flight", qp->qpn,
				   atomic_load(&qp->refs));
			told = true;
		}
		nanosleep(&ts, NULL);
	}
	/* Only now: a peer's responder completion may still have been
	 * writing to these CQs, or consuming from the SRQ. */
	atomic_fetch_sub(&qp->attr.send_cq->users, 1);
	if (qp->attr.recv_cq)
		atomic_fetch_sub(&qp->attr.recv_cq->users, 1);
	if (qp->attr.srq)
		atomic_fetch_sub(&qp->attr.srq->users, 1);
	qp_free(qp);
	return 0;
}

int kinet_qp_pack(const struct kinet_qp *qp, struct kinet_qp_info *info)
{
	if (!qp)
		return KINET_EINVAL("qp", "NULL");
	if (!info)
		return KINET_EINVAL("info", "NULL");
	memset(info, 0, sizeof(*info));
	info->qpn = qp->qpn;
	info->node_id = qp->ctx->node_id;
	/* What peers in other processes need to reach it (the provider's). */
	qp->ctx->ops->qp_info(qp, info);
	return 0;
}

int kinet_qp_connect(struct kinet_qp *qp, const struct kinet_qp_info *remote)
{
	const char *how = NULL;
	int state, ret;

	if (!qp)
		return KINET_EINVAL("qp", "NULL");
	if (!remote)
		return KINET_EINVAL("remote", "NULL");
	state = atomic_load(&qp->state);
	if (state != KINET_QPS_RESET) {
		KINET_ERR("%s: QP %u is in state %s, not RESET", __func__, qp->qpn, state_name(state));
		return -EINVAL;
	}
	/* A peer in this process can be checked, unlike one elsewhere (which
	 * RC connects to blindly, as hardware does): a destroyed or made-up
	 * QP number would otherwise show only as work that times out. */
	if (remote->node_id == qp->ctx->node_id && !kinet_peer_process_has_qp(remote->qpn)) {
		KINET_ERR("%s: QP %u: the peer QP %u is of this process, and no open context has it "
			  "(destroyed, or a number that never was a QP's)",
			  __func__, qp->qpn, remote->qpn);
		return -ENOENT;
	}
	atomic_store(&qp->state, KINET_QPS_INIT);
	qp->remote = *remote;
	atomic_store(&qp->state, KINET_QPS_RTR);
	/* The provider picks the path and logs why none reaches the peer. */
	ret = qp->ctx->ops->qp_connect(qp, remote, &how);
	if (ret) {
		memset(&qp->remote, 0, sizeof(qp->remote));
		atomic_store(&qp->state, KINET_QPS_RESET);
		return ret;
	}
	/* Release: the provider that sees RTS sees its path and the peer too. */
	atomic_store_explicit(&qp->state, KINET_QPS_RTS, memory_order_release);
	qp->ctx->ops->doorbell(qp);
	KINET_DBG("qp %u: connected to QP %u over %s", qp->qpn, remote->qpn, how);
	/* An exported QP gets the peer path now (connected and exported). */
	return kinet_peer_qp_attach(qp);
}

void kinet_qp_to_error(struct kinet_qp *qp, const char *why)
{
	int old = atomic_exchange(&qp->state, KINET_QPS_ERR);

	if (old != KINET_QPS_ERR)
		KINET_INFO("qp %u: %s -> ERR: %s", qp->qpn, state_name(old), why);
}

int kinet_qp_set_error(struct kinet_qp *qp)
{
	if (!qp)
		return KINET_EINVAL("qp", "NULL");
	kinet_qp_to_error(qp, "set by user");
	if (!atomic_load(&qp->ctx->engine_stopped))
		qp->ctx->ops->doorbell(qp);
	return 0;
}

uint32_t kinet_qp_num(const struct kinet_qp *qp)
{
	return qp ? qp->qpn : 0;
}

enum kinet_qp_state kinet_qp_get_state(const struct kinet_qp *qp)
{
	if (!qp)
		return KINET_QPS_ERR;
	/* A NIC moves a QP to the error state by itself (error CQE, async
	 * event): ask it.  The cast: the state is a cache of the NIC's. */
	if (qp->ctx->ops->qp_refresh)
		qp->ctx->ops->qp_refresh((struct kinet_qp *)(uintptr_t)qp);
	return (enum kinet_qp_state)atomic_load(&qp->state);
}

enum kinet_db_mode kinet_qp_db_mode(const struct kinet_qp *qp)
{
	return qp ? qp->db_mode : KINET_DB_AUTO;
}
