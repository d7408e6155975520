/*
 * Export of queue descriptors to device code.  Descriptors live in GPU
 * memory on a CUDA context and in host memory otherwise (host emulation);
 * the rings and doorbells they point to stay in host-mapped memory.
 */
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "internal.h"
#include "provider.h"

/* Device code reads sq_ready and sq_done with one 16-byte load, and the
 * peer keys from a 128-byte line of their own (peer.cuh). */
_Static_assert(offsetof(struct kinet_dev_qp, sq_ready) % 16 == 0 &&
		       offsetof(struct kinet_dev_qp, sq_done) == offsetof(struct kinet_dev_qp, sq_ready) + 8,
	       "sq_ready, sq_done: one aligned 16-byte pair");
_Static_assert(offsetof(struct kinet_dev_qp, peer_key) % 128 == 0, "peer_key: a line of its own");
_Static_assert(offsetof(struct kinet_dev_qp, sq_signal_every) ==
		       offsetof(struct kinet_dev_qp, peer_key) + 128,
	       "moderation state: after peer_key's line");

/* Largest inline payload of a one-BB SEND WQE: ctrl and the 4-byte header. */
#define DEV_MAX_INLINE (KINET_WQE_BB_SIZE - 16 - 4)

int kinet_cuda_export_copy(struct kinet_ctx *ctx, const void *d, size_t len, void **out)
{
	void *dev = kinet_cuda_alloc(ctx, len);
	int ret;

	if (!dev)
		return -ENOMEM;
	ret = kinet_cuda_copy_in(ctx, dev, d, len);
	if (ret) {
		kinet_cuda_free(ctx, dev);
		return ret;
	}
	*out = dev;
	return 0;
}

/* poll_lock serialises exports of a CQ and freezes the host poller's index,
 * where device polling continues. */
static int cq_export(struct kinet_cq *cq)
{
	struct kinet_ctx *ctx = cq->ctx;
	struct kinet_dev_cq d, *dev;
	int ret = 0;

	pthread_mutex_lock(&cq->poll_lock);
	if (cq->dev)
		goto out;
	memset(&d, 0, sizeof(d));
	d.cqes = kinet_host_dev_ptr(ctx, cq->ring);
	d.dbrec = kinet_host_dev_ptr(ctx, cq->dbrec);
	d.log_depth = cq->log_depth;
	d.mask = cq->depth - 1;
	d.cqn = cq->cqn;
	d.ci = cq->ci;
	if (cq->comp_word) {
		uint64_t w = __atomic_load_n(cq->comp_word, __ATOMIC_ACQUIRE);

		/* Under poll_lock the engine may still write: the word is only
		 * a hint, the poller checks its count against ci. */
		d.comp_word = kinet_host_dev_ptr(ctx, cq->comp_word);
		d.comp_data = KINET_COMP_DATA(w);
		if (!d.comp_word)
			ret = -EIO;
	}
	if (!d.cqes || !d.dbrec) {
		ret = -EIO;
		goto out;
	}
	ret = kinet_cuda_export_copy(ctx, &d, sizeof(d), (void **)&dev);
	if (!ret)
		cq->dev = dev;
out:
	pthread_mutex_unlock(&cq->poll_lock);
	return ret;
}

int kinet_cq_export(struct kinet_cq *cq, struct kinet_dev_cq **dev_cq)
{
	int ret;

	if (!cq)
		return KINET_EINVAL("cq", "NULL");
	if (!dev_cq)
		return KINET_EINVAL("dev_cq", "NULL");
	ret = cq_export(cq);
	*dev_cq = ret ? NULL : cq->dev;
	return ret;
}

/* Device code derives send-queue progress from its CQ, so the CQ must carry
 * this QP's completions only. */
static int check_exclusive_cq(struct kinet_qp *qp, struct kinet_cq *cq, const char *which)
{
	int users = atomic_load(&cq->users);

	if (users != 1) {
		KINET_ERR("%s: QP %u: its %s is shared with %d other QP(s); device code tracks progress "
			  "through the CQ, so an exported QP needs CQs of its own",
			  "kinet_qp_export", qp->qpn, which, users - 1);
		return -EINVAL;
	}
	return 0;
}

static int scratch_register(struct kinet_qp *qp)
{
	int ret;

	if (qp->scratch_mr)
		return 0;
	qp->scratch = kinet_host_alloc(qp->ctx, 64);
	if (!qp->scratch)
		return -ENOMEM;
	ret = kinet_mr_reg(qp->ctx, qp->scratch, 64, KINET_ACCESS_LOCAL_WRITE, &qp->scratch_mr);
	if (ret) {
		kinet_host_free(qp->ctx, qp->scratch);
		qp->scratch = NULL;
	}
	return ret;
}

/* Completion moderation of the high-level device API: every Nth WQE asks
 * for a CQE ($KINET_CQ_MODERATION, default 16, 1: every WQE), rounded
 * down to a power of two and to at most a quarter of the send queue, so
 * that a full queue always holds a WQE whose CQE frees room. */
static uint32_t moderation(const struct kinet_qp *qp)
{
	long want = kinet_env_long("KINET_CQ_MODERATION");
	uint32_t n = 1;

	while ((long)n * 2 <= want && n * 2 <= qp->sq_bbs / 4)
		n *= 2;
	return n;
}

/* Staged sources: the slots device code copies small GPU-memory sources
 * into, for a NIC that cannot read GPU memory (post_lock held).  Sources
 * whose key says GPU memory are staged; all of them when
 * $KINET_STAGE_ALL=1 (for tests: a machine without a GPU has none). */
static int stage_fill(struct kinet_qp *qp, struct kinet_dev_qp *d)
{
	struct kinet_ctx *ctx = qp->ctx;
	uint32_t bytes = qp->attr.stage_bytes;

	if (ctx->ops->reads_device_memory || !bytes)
		return 0;
	if (!qp->stage)
		qp->stage = kinet_host_alloc(ctx, (size_t)qp->sq_bbs * bytes);
	d->stage = kinet_host_dev_ptr(ctx, qp->stage);
	if (!d->stage)
		return -ENOMEM;
	d->stage_bytes = bytes;
	d->stage_key = kinet_env_long("KINET_STAGE_ALL") ? 0 : KINET_KEY_TAG_DEVICE;
	return 0;
}

static int qp_fill(struct kinet_qp *qp, struct kinet_dev_qp *d)
{
	struct kinet_ctx *ctx = qp->ctx;
	/* Only the GPU and BlueFlame modes write the register: a CPU-mode QP
	 * needs no mapping of it (a NIC's may have failed, docs/MLX5.md). */
	uint8_t *uar_db =
		qp->db_mode == KINET_DB_CPU ? NULL : (uint8_t *)kinet_host_dev_ptr(ctx, kinet_qp_db_reg(qp));

	memset(d, 0, sizeof(*d));
	d->sq = kinet_host_dev_ptr(ctx, qp->sq);
	d->sq_mask = qp->sq_bbs - 1;
	d->sq_log_depth = qp->sq_log;
	d->qpn = qp->qpn;
	d->db_mode = qp->db_mode;
	d->sharing = qp->attr.sharing;
	/* The QP's own limit, capped at what one basic block carries (an
	 * inline SEND's 44 bytes; an inline write's 28 is checked where it is
	 * built). */
	d->max_inline = qp->attr.max_inline < DEV_MAX_INLINE ? qp->attr.max_inline : DEV_MAX_INLINE;
	d->dbrec = kinet_host_dev_ptr(ctx, qp->dbrec);
	d->db_cpu_pi = kinet_host_dev_ptr(ctx, (void *)qp->db_cpu);
	d->uar_db = (uint64_t *)(void *)uar_db;
	d->bf = d->uar_db;
	d->timeout_ns = (uint64_t)qp->attr.timeout_ms * 1000000ull;
	if (qp->rq) {
		d->rq = kinet_host_dev_ptr(ctx, qp->rq);
		d->rq_mask = qp->rq_depth - 1;
		d->rq_stride = qp->rq_stride;
		d->rq_max_sge = qp->attr.max_recv_sge;
		if (!d->rq)
			return -EIO;
	}
	d->send_cq = qp->attr.send_cq->dev;
	d->recv_cq = qp->attr.recv_cq ? qp->attr.recv_cq->dev : NULL;
	d->err = kinet_host_dev_ptr(ctx, ctx->dev_err);
	d->scratch = (uint64_t)(uintptr_t)qp->scratch;
	d->scratch_lkey = kinet_mr_lkey(qp->scratch_mr);
	/* Work posted from the host before export counts as posted. */
	d->sq_reserved = d->sq_ready = d->sq_done = qp->sq_pi;
	d->sq_signaled = qp->sq_pi;
	d->sq_signal_every = moderation(qp);
	d->rq_reserved = d->rq_ready = d->rq_done = qp->rq_pi;
	if (!d->sq || !d->dbrec || !d->db_cpu_pi || (qp->db_mode != KINET_DB_CPU && !d->uar_db) || !d->err)
		return -EIO;
	return stage_fill(qp, d);
}

int kinet_qp_export(struct kinet_qp *qp, struct kinet_dev_qp **dev_qp)
{
	struct kinet_cq *scq, *rcq;
	struct kinet_dev_qp d, *dev = NULL;
	struct kinet_ctx *ctx;
	int ret;

	if (!qp)
		return KINET_EINVAL("qp", "NULL");
	if (!dev_qp)
		return KINET_EINVAL("dev_qp", "NULL");
	*dev_qp = NULL;
	ctx = qp->ctx;
	scq = qp->attr.send_cq;
	rcq = qp->attr.recv_cq;

	pthread_mutex_lock(&qp->post_lock);
	*dev_qp = qp->dev;
	ret = qp->gpunetio ? -EBUSY : 0;
	pthread_mutex_unlock(&qp->post_lock);
	if (*dev_qp)
		return 0;
	if (ret) {
		KINET_ERR("kinet_qp_export: QP %u is exported for GPUNetIO code (kinet_qp_export_gpunetio)",
			  qp->qpn);
		return ret;
	}
	/* First: such a CQ counts the QP twice among its users. */
	if (rcq == scq) {
		KINET_ERR("kinet_qp_export: QP %u uses one CQ for sends and receives; an exported QP needs "
			  "separate send and receive CQs",
			  qp->qpn);
		return -EINVAL;
	}
	ret = check_exclusive_cq(qp, scq, "send CQ");
	if (ret)
		return ret;
	if (rcq) {
		ret = check_exclusive_cq(qp, rcq, "receive CQ");
		if (ret)
			return ret;
	}
	/* Device code may ask for a CQE on every WQE (KINET_CQ_MODERATION=1,
	 * and low-level posting chooses its own) and reuses a slot only once
	 * the CQE covering it is consumed, so up to sq_depth CQEs can wait in
	 * the CQ, which keeps one slot for reporting an overrun. */
	if (scq->depth <= qp->sq_bbs) {
		KINET_ERR("kinet_qp_export: QP %u: send CQ depth %u must exceed the send queue depth %u "
			  "(use at least twice the send queue depth)",
			  qp->qpn, scq->depth, qp->sq_bbs);
		return -EINVAL;
	}
	if (rcq && rcq->depth <= qp->rq_depth) {
		KINET_ERR(
			"kinet_qp_export: QP %u: receive CQ depth %u must exceed the receive queue depth %u",
			qp->qpn, rcq->depth, qp->rq_depth);
		return -EINVAL;
	}
	ret = scratch_register(qp);
	if (ret)
		return ret;
	/* CQs first, each under its own poll_lock: the host poller takes
	 * poll_lock then post_lock, so they are never nested the other way. */
	ret = cq_export(scq);
	if (!ret && rcq)
		ret = cq_export(rcq);
	if (ret)
		return ret;

	/* post_lock serialises exports of the QP and keeps host posting from
	 * racing with the snapshot of the producer indices. */
	pthread_mutex_lock(&qp->post_lock);
	if (qp->dev)
		goto out;
	if (qp->gpunetio) {
		ret = -EBUSY;
		goto out;
	}
	ret = qp_fill(qp, &d);
	if (ret)
		goto out;
	if (qp->attr.sharing != KINET_SHARE_EXCLUSIVE) {
		/* Posters of a shared QP mark their posts written here and one
		 * of them rings for all (zeroed: no post marked yet). */
		if (!qp->dev_marks)
			qp->dev_marks = kinet_cuda_alloc(ctx, (size_t)qp->sq_bbs * sizeof(uint64_t));
		if (!qp->dev_marks) {
			ret = -ENOMEM;
			goto out;
		}
		d.sq_marks = qp->dev_marks;
	}
	ret = kinet_cuda_export_copy(ctx, &d, sizeof(d), (void **)&dev);
	if (ret)
		goto out;
	qp->dev = dev;
	qp->exported = true;
out:
	*dev_qp = qp->dev;
	pthread_mutex_unlock(&qp->post_lock);
	/* A connected QP gets the peer path now (connected and exported). */
	if (!ret)
		ret = kinet_peer_qp_attach(qp);
	return ret;
}
