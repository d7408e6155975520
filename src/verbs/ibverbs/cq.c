/*
 * Completion queues: a kinet CQ (ConnectX CQEs, the ring mlx5dv_init_obj
 * hands out) polled through ibv_poll_cq or the extended ibv_start_poll
 * interface.  A CQ is on its context's list while it exists (the notifier
 * reads it there); destroy unlinks it first.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "verbs.h"

static void cq_link(struct kinet_verbs_context *ctx, struct kinet_verbs_cq *cq)
{
	pthread_mutex_lock(&ctx->lock);
	cq->next = ctx->cqs;
	ctx->cqs = cq;
	if (cq->cq.channel)
		cq->cq.channel->refcnt++;
	pthread_mutex_unlock(&ctx->lock);
}

static void cq_unlink(struct kinet_verbs_context *ctx, struct kinet_verbs_cq *cq)
{
	pthread_mutex_lock(&ctx->lock);
	for (struct kinet_verbs_cq **p = &ctx->cqs; *p; p = &(*p)->next)
		if (*p == cq) {
			*p = cq->next;
			break;
		}
	if (cq->cq.channel)
		cq->cq.channel->refcnt--;
	pthread_mutex_unlock(&ctx->lock);
}

int kinet_verbs_poll_cq(struct ibv_cq *ibcq, int num_entries, struct ibv_wc *wc)
{
	struct kinet_verbs_cq *cq = kinet_verbs_cq(ibcq);
	struct kinet_wc kwc[32];
	int done = 0;

	while (done < num_entries) {
		int want = num_entries - done < 32 ? num_entries - done : 32;
		int n = kinet_cq_poll(cq->kcq, want, kwc);

		if (n < 0)
			return done ? done : n;
		for (int i = 0; i < n; i++)
			kinet_verbs_wc(&kwc[i], &wc[done + i]);
		done += n;
		if (n < want)
			break;
	}
	return done;
}

/* ---- the extended interface (ibv_start_poll / ibv_next_poll) ---- */

static struct kinet_verbs_cq *from_ex(struct ibv_cq_ex *cq)
{
	return (struct kinet_verbs_cq *)cq;
}

static int take(struct kinet_verbs_cq *cq)
{
	int n = kinet_cq_poll(cq->kcq, 1, &cq->cur);

	if (n < 0)
		return kinet_verbs_errno(n);
	if (!n)
		return ENOENT;
	cq->cq.wr_id = cq->cur.wr_id;
	cq->cq.status = kinet_verbs_wc_status(cq->cur.status);
	return 0;
}

static int start_poll(struct ibv_cq_ex *cq, struct ibv_poll_cq_attr *attr)
{
	if (attr && attr->comp_mask)
		return EINVAL;
	return take(from_ex(cq));
}

static int next_poll(struct ibv_cq_ex *cq)
{
	return take(from_ex(cq));
}

static void end_poll(struct ibv_cq_ex *cq)
{
	(void)cq;
}

static enum ibv_wc_opcode read_opcode(struct ibv_cq_ex *cq)
{
	return kinet_verbs_wc_opcode(&from_ex(cq)->cur);
}

static uint32_t read_vendor_err(struct ibv_cq_ex *cq)
{
	return (uint32_t)from_ex(cq)->cur.status;
}

static uint32_t read_byte_len(struct ibv_cq_ex *cq)
{
	return from_ex(cq)->cur.byte_len;
}

static __be32 read_imm_data(struct ibv_cq_ex *cq)
{
	return htobe32(from_ex(cq)->cur.imm_data);
}

static uint32_t read_qp_num(struct ibv_cq_ex *cq)
{
	return from_ex(cq)->cur.qp_num;
}

static uint32_t read_zero32(struct ibv_cq_ex *cq)
{
	(void)cq;
	return 0;
}

static unsigned int read_wc_flags(struct ibv_cq_ex *cq)
{
	return (from_ex(cq)->cur.wc_flags & KINET_WC_WITH_IMM) ? IBV_WC_WITH_IMM : 0;
}

static uint8_t read_zero8(struct ibv_cq_ex *cq)
{
	(void)cq;
	return 0;
}

static struct ibv_cq_ex *create(struct ibv_context *context, uint32_t cqe, void *cq_context,
				struct ibv_comp_channel *channel, uint32_t comp_vector, uint64_t wc_flags)
{
	struct kinet_verbs_context *ctx = kinet_verbs_ctx(context);
	struct kinet_cq_attr attr;
	struct kinet_verbs_cq *cq;
	int ret;

	if (!cqe || cqe > KINET_VERBS_MAX_CQE - 1 || comp_vector >= (uint32_t)context->num_comp_vectors ||
	    (channel && channel->context != context)) {
		errno = EINVAL;
		return NULL;
	}
	if (wc_flags & ~(uint64_t)IBV_WC_STANDARD_FLAGS) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	cq = calloc(1, sizeof(*cq));
	if (!cq) {
		errno = ENOMEM;
		return NULL;
	}
	kinet_cq_attr_init(&attr);
	/* ConnectX's rounding: one entry more than asked, to a power of two. */
	attr.depth = cqe + 1;
	ret = kinet_cq_create(ctx->kctx, &attr, &cq->kcq);
	if (ret) {
		free(cq);
		errno = kinet_verbs_errno(ret);
		return NULL;
	}
	cq->wc_flags = wc_flags;
	cq->cq.context = context;
	cq->cq.channel = channel;
	cq->cq.cq_context = cq_context;
	cq->cq.cqe = (int)kinet_cq_depth(cq->kcq) - 1;
	pthread_mutex_init(&cq->cq.mutex, NULL);
	pthread_cond_init(&cq->cq.cond, NULL);
	cq->cq.start_poll = start_poll;
	cq->cq.next_poll = next_poll;
	cq->cq.end_poll = end_poll;
	cq->cq.read_opcode = read_opcode;
	cq->cq.read_vendor_err = read_vendor_err;
	cq->cq.read_byte_len = read_byte_len;
	cq->cq.read_imm_data = read_imm_data;
	cq->cq.read_qp_num = read_qp_num;
	cq->cq.read_src_qp = read_zero32;
	cq->cq.read_wc_flags = read_wc_flags;
	cq->cq.read_slid = read_zero32;
	cq->cq.read_sl = read_zero8;
	cq->cq.read_dlid_path_bits = read_zero8;
	cq_link(ctx, cq);
	return &cq->cq;
}

KINET_VERBS_EXPORT struct ibv_cq *ibv_create_cq(struct ibv_context *context, int cqe, void *cq_context,
						struct ibv_comp_channel *channel, int comp_vector)
{
	if (!context || cqe < 1 || comp_vector < 0) {
		errno = EINVAL;
		return NULL;
	}
	return ibv_cq_ex_to_cq(create(context, (uint32_t)cqe, cq_context, channel, (uint32_t)comp_vector, 0));
}

struct ibv_cq_ex *kinet_verbs_create_cq_ex(struct ibv_context *context, struct ibv_cq_init_attr_ex *attr)
{
	if (!attr) {
		errno = EINVAL;
		return NULL;
	}
	/* Flags kinet cannot honour are refused rather than ignored. */
	if (attr->comp_mask & ~(uint32_t)(IBV_CQ_INIT_ATTR_MASK_FLAGS | IBV_CQ_INIT_ATTR_MASK_PD)) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	if ((attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_FLAGS) &&
	    (attr->flags & ~(uint32_t)IBV_CREATE_CQ_ATTR_SINGLE_THREADED)) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	return create(context, attr->cqe, attr->cq_context, attr->channel, attr->comp_vector, attr->wc_flags);
}

KINET_VERBS_EXPORT int ibv_destroy_cq(struct ibv_cq *ibcq)
{
	struct kinet_verbs_cq *cq = kinet_verbs_cq(ibcq);
	struct kinet_verbs_context *ctx;
	int ret;

	if (!cq)
		return EINVAL;
	ctx = kinet_verbs_ctx(ibcq->context);
	cq_unlink(ctx, cq);
	ret = kinet_cq_destroy(cq->kcq);
	if (ret) {
		/* Still used by a QP: it stays. */
		cq_link(ctx, cq);
		return kinet_verbs_errno(ret);
	}
	pthread_mutex_destroy(&cq->cq.mutex);
	pthread_cond_destroy(&cq->cq.cond);
	free(cq);
	return 0;
}
