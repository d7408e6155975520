/*
 * Shared receive queues: a kinet SRQ (ConnectX's linked-list layout, the
 * ring mlx5dv_init_obj hands out) and the limit event.  ibv_modify_srq with
 * IBV_SRQ_LIMIT arms it: the notifier raises IBV_EVENT_SRQ_LIMIT_REACHED
 * once fewer WQEs than the limit are left, and disarms it (as ConnectX).
 * Resizing (IBV_SRQ_MAX_WR) is refused as rdma-core's mlx5 refuses it.
 */
#include <errno.h>
#include <stdlib.h>

#include "verbs.h"

struct ibv_srq *kinet_verbs_create_srq_ex(struct ibv_context *context, struct ibv_srq_init_attr_ex *init)
{
	struct kinet_verbs_context *ctx = kinet_verbs_ctx(context);
	struct kinet_srq_attr attr;
	struct kinet_verbs_srq *srq;
	int ret;

	if (!init || !(init->comp_mask & IBV_SRQ_INIT_ATTR_PD) || !init->pd) {
		errno = EINVAL;
		return NULL;
	}
	if ((init->comp_mask & ~(uint32_t)(IBV_SRQ_INIT_ATTR_PD | IBV_SRQ_INIT_ATTR_TYPE)) ||
	    ((init->comp_mask & IBV_SRQ_INIT_ATTR_TYPE) && init->srq_type != IBV_SRQT_BASIC)) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	if (!init->attr.max_wr || init->attr.max_wr > KINET_VERBS_MAX_SRQ_WR - 1 ||
	    init->attr.max_sge > KINET_VERBS_MAX_SGE || init->attr.srq_limit > init->attr.max_wr) {
		errno = EINVAL;
		return NULL;
	}
	srq = calloc(1, sizeof(*srq));
	if (!srq) {
		errno = ENOMEM;
		return NULL;
	}
	kinet_srq_attr_init(&attr);
	attr.depth = init->attr.max_wr;
	attr.max_sge = init->attr.max_sge ? init->attr.max_sge : 1;
	ret = kinet_srq_create(ctx->kctx, &attr, &srq->ksrq);
	if (ret) {
		free(srq);
		errno = kinet_verbs_errno(ret);
		return NULL;
	}
	srq->max_sge = attr.max_sge;
	srq->max_wr = init->attr.max_wr;
	srq->srq.context = context;
	srq->srq.srq_context = init->srq_context;
	srq->srq.pd = init->pd;
	srq->srq.handle = kinet_srq_num(srq->ksrq);
	pthread_mutex_init(&srq->srq.mutex, NULL);
	pthread_cond_init(&srq->srq.cond, NULL);
	init->attr.max_sge = srq->max_sge;
	pthread_mutex_lock(&ctx->lock);
	srq->limit = init->attr.srq_limit;
	srq->next = ctx->srqs;
	ctx->srqs = srq;
	pthread_cond_signal(&ctx->wake);
	pthread_mutex_unlock(&ctx->lock);
	return &srq->srq;
}

KINET_VERBS_EXPORT struct ibv_srq *ibv_create_srq(struct ibv_pd *pd, struct ibv_srq_init_attr *init)
{
	struct ibv_srq_init_attr_ex ex = {0};
	struct ibv_srq *srq;

	if (!pd || !init) {
		errno = EINVAL;
		return NULL;
	}
	ex.srq_context = init->srq_context;
	ex.attr = init->attr;
	ex.comp_mask = IBV_SRQ_INIT_ATTR_PD;
	ex.pd = pd;
	srq = kinet_verbs_create_srq_ex(pd->context, &ex);
	if (srq)
		init->attr = ex.attr;
	return srq;
}

KINET_VERBS_EXPORT int ibv_modify_srq(struct ibv_srq *ibsrq, struct ibv_srq_attr *attr, int mask)
{
	struct kinet_verbs_srq *srq = (struct kinet_verbs_srq *)ibsrq;
	struct kinet_verbs_context *ctx;

	if (!srq || !attr)
		return EINVAL;
	if (mask & IBV_SRQ_MAX_WR)
		return EINVAL;
	if (mask & IBV_SRQ_LIMIT) {
		if (attr->srq_limit > srq->max_wr)
			return EINVAL;
		ctx = kinet_verbs_ctx(ibsrq->context);
		pthread_mutex_lock(&ctx->lock);
		srq->limit = attr->srq_limit;
		pthread_cond_signal(&ctx->wake);
		pthread_mutex_unlock(&ctx->lock);
	}
	return 0;
}

KINET_VERBS_EXPORT int ibv_query_srq(struct ibv_srq *ibsrq, struct ibv_srq_attr *attr)
{
	struct kinet_verbs_srq *srq = (struct kinet_verbs_srq *)ibsrq;
	struct kinet_verbs_context *ctx;

	if (!srq || !attr)
		return EINVAL;
	ctx = kinet_verbs_ctx(ibsrq->context);
	pthread_mutex_lock(&ctx->lock);
	attr->srq_limit = srq->limit;
	pthread_mutex_unlock(&ctx->lock);
	attr->max_wr = srq->max_wr;
	attr->max_sge = srq->max_sge;
	return 0;
}

int kinet_verbs_get_srq_num(struct ibv_srq *ibsrq, uint32_t *srq_num)
{
	if (!ibsrq || !srq_num)
		return EINVAL;
	*srq_num = kinet_srq_num(((struct kinet_verbs_srq *)ibsrq)->ksrq);
	return 0;
}

KINET_VERBS_EXPORT int ibv_destroy_srq(struct ibv_srq *ibsrq)
{
	struct kinet_verbs_srq *srq = (struct kinet_verbs_srq *)ibsrq;
	struct kinet_verbs_context *ctx;
	int ret;

	if (!srq)
		return EINVAL;
	ctx = kinet_verbs_ctx(ibsrq->context);
	pthread_mutex_lock(&ctx->lock);
	/* Under the lock: the notifier reads the SRQ while it is listed. */
	ret = kinet_verbs_errno(kinet_srq_destroy(srq->ksrq));
	if (!ret)
		for (struct kinet_verbs_srq **p = &ctx->srqs; *p; p = &(*p)->next)
			if (*p == srq) {
				*p = srq->next;
				break;
			}
	pthread_mutex_unlock(&ctx->lock);
	if (ret)
		return ret;
	pthread_mutex_destroy(&ibsrq->mutex);
	pthread_cond_destroy(&ibsrq->cond);
	free(srq);
	return 0;
}
