/*
 * Shared receive queues: the ring in ConnectX's SRQ layout (a linked list
 * of WQEs, each a next segment and data segments), posted and recycled the
 * way rdma-core's mlx5 provider does, so that code handed the ring through
 * kinet_srq_rings (mlx5dv_init_obj) can post by itself.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "provider.h"

#define SRQ_MAX_DEPTH 32767 /* the ring's slots, one more, fit 16-bit indices */

static uint32_t pow2_ceil(uint32_t v)
{
	uint32_t p = 1;

	while (p < v)
		p <<= 1;
	return p;
}

void kinet_srq_attr_init(struct kinet_srq_attr *attr)
{
	if (!attr)
		return;
	memset(attr, 0, sizeof(*attr));
	attr->size = sizeof(*attr);
	attr->depth = 255;
	attr->max_sge = 1;
}

/* A number no SRQ of ctx has, never 0: a CQE's srqn 0 means "no SRQ".
 * obj_lock held. */
static uint32_t srq_number(struct kinet_ctx *ctx)
{
	for (;;) {
		uint32_t n = ctx->next_srqn++ & 0xffffff;
		struct kinet_srq *s = ctx->srqs;

		while (s && s->srqn != n)
			s = s->next_in_ctx;
		if (n && !s)
			return n;
	}
}

static void srq_free(struct kinet_srq *srq)
{
	if (srq->buf || srq->dbrec)
		srq->ctx->ops->srq_destroy(srq);
	free(srq->wrid);
	free(srq->host_own);
	pthread_mutex_destroy(&srq->post_lock);
	free(srq);
}

int kinet_srq_create(struct kinet_ctx *ctx, const struct kinet_srq_attr *attr, struct kinet_srq **out)
{
	struct kinet_srq_attr a;
	struct kinet_srq *srq;
	int ret;

	if (!out)
		return KINET_EINVAL("srq", "NULL");
	*out = NULL;
	if (!ctx)
		return KINET_EINVAL("ctx", "NULL");
	if (!attr)
		return KINET_EINVAL("attr", "NULL");
	if ((ret = kinet_attr_read("attr", attr, sizeof(a), &a)))
		return ret;
	if (!a.depth || a.depth > SRQ_MAX_DEPTH)
		return KINET_EINVAL("attr->depth", "must be 1..32767");
	if (!a.max_sge || a.max_sge > KINET_MAX_SGE)
		return KINET_EINVAL("attr->max_sge", "must be 1..16");
	if (!ctx->ops->srq_create) {
		KINET_ERR("%s: provider %s has no shared receive queues (the software NIC has: "
			  "KINET_PROVIDER=soft)",
			  __func__, ctx->provider_name);
		return -EOPNOTSUPP;
	}

	srq = kinet_alloc_lines(ctx->ops->srq_size ? ctx->ops->srq_size : sizeof(*srq));
	if (!srq)
		return -ENOMEM;
	srq->ctx = ctx;
	pthread_mutex_init(&srq->post_lock, NULL);
	/* One slot more than asked for stays free (tail), as mlx5 sizes it. */
	srq->slots = pow2_ceil(a.depth + 1);
	srq->max_sge = a.max_sge;
	srq->stride = pow2_ceil((uint32_t)(sizeof(struct kinet_wqe_srq_next_seg) +
					   a.max_sge * sizeof(struct kinet_wqe_data_seg)));
	ret = ctx->ops->srq_create(srq);
	if (!ret) {
		srq->wrid = calloc(srq->slots, sizeof(*srq->wrid));
		srq->host_own = calloc(srq->slots, sizeof(*srq->host_own));
		if (!srq->wrid || !srq->host_own)
			ret = -ENOMEM;
	}
	if (ret) {
		srq_free(srq);
		return ret;
	}
	for (uint32_t i = 0; i < srq->slots; i++) {
		struct kinet_wqe_srq_next_seg *next = kinet_srq_wqe(srq, i);

		next->next_wqe_index = kinet_be16((uint16_t)((i + 1) & (srq->slots - 1)));
		/* An unposted WQE holds nothing, should one ever be read. */
		kinet_wqe_set_data((struct kinet_wqe_data_seg *)(next + 1), 0, 0, KINET_INVALID_LKEY);
	}
	srq->head = 0;
	srq->tail = srq->slots - 1;

	pthread_mutex_lock(&ctx->obj_lock);
	srq->srqn = srq_number(ctx);
	srq->next_in_ctx = ctx->srqs;
	ctx->srqs = srq;
	pthread_mutex_unlock(&ctx->obj_lock);
	KINET_DBG("srq %u: %u WQEs of %u B (%u SGEs)", srq->srqn, srq->slots, srq->stride, srq->max_sge);
	*out = srq;
	return 0;
}

int kinet_srq_destroy(struct kinet_srq *srq)
{
	struct kinet_ctx *ctx;
	struct kinet_srq **p;

	if (!srq)
		return KINET_EINVAL("srq", "NULL");
	ctx = srq->ctx;
	/* The users count drops only after a QP's destroy has waited for
	 * every engine operation on it (kinet_qp_destroy), so at 0 no engine
	 * thread is consuming from the SRQ. */
	if (atomic_load(&srq->users)) {
		KINET_ERR("%s: SRQ %u still used by %d QP(s)", __func__, srq->srqn, atomic_load(&srq->users));
		return -EBUSY;
	}
	/* Unlinked under obj_lock, which a poller holds while it recycles a
	 * slot of the SRQ (kinet_srq_complete). */
	pthread_mutex_lock(&ctx->obj_lock);
	for (p = &ctx->srqs; *p; p = &(*p)->next_in_ctx) {
		if (*p == srq) {
			*p = srq->next_in_ctx;
			break;
		}
	}
	pthread_mutex_unlock(&ctx->obj_lock);
	srq_free(srq);
	return 0;
}

int kinet_srq_post_recv(struct kinet_srq *srq, const struct kinet_recv_wr *wr, int count, int *bad)
{
	int i, j, ret = 0, posted = 0;

	if (bad)
		*bad = 0;
	if (!srq)
		return KINET_EINVAL("srq", "NULL");
	if (count < 0)
		return KINET_EINVAL("count", "negative");
	if (count && !wr)
		return KINET_EINVAL("wr", "NULL");

	pthread_mutex_lock(&srq->post_lock);
	for (i = 0; i < count; i++) {
		struct kinet_wqe_srq_next_seg *next;
		struct kinet_wqe_data_seg *seg;

		if (wr[i].num_sge < 0 || (uint32_t)wr[i].num_sge > srq->max_sge) {
			ret = KINET_EINVAL("wr->num_sge", "must be 0..max_sge");
			break;
		}
		if (wr[i].num_sge && !wr[i].sg_list) {
			ret = KINET_EINVAL("wr->sg_list", "NULL with num_sge > 0");
			break;
		}
		/* The tail stays free: the NIC reads a WQE's next index when it
		 * consumes it, and the tail's is rewritten by recycling. */
		if (srq->head == srq->tail) {
			ret = -ENOMEM;
			break;
		}
		next = kinet_srq_wqe(srq, srq->head);
		seg = (struct kinet_wqe_data_seg *)(next + 1);
		for (j = 0; j < wr[i].num_sge; j++)
			kinet_wqe_set_data(&seg[j], wr[i].sg_list[j].addr, wr[i].sg_list[j].length,
					   wr[i].sg_list[j].lkey);
		if ((uint32_t)j < srq->max_sge)
			kinet_wqe_set_data(&seg[j], 0, 0, KINET_INVALID_LKEY);
		srq->wrid[srq->head] = wr[i].wr_id;
		srq->host_own[srq->head] = 1;
		srq->head = kinet_be16(next->next_wqe_index) & (srq->slots - 1);
		srq->counter++;
		posted++;
	}
	if (ret && bad)
		*bad = i;
	if (posted)
		/* Release: the WQEs are visible before the count says so. */
		__atomic_store_n(&srq->dbrec[0], kinet_be32(srq->counter), __ATOMIC_RELEASE);
	pthread_mutex_unlock(&srq->post_lock);
	if (posted && srq->ctx->ops->srq_posted && !atomic_load(&srq->ctx->engine_stopped))
		srq->ctx->ops->srq_posted(srq);
	return ret;
}

uint64_t kinet_srq_complete(struct kinet_ctx *ctx, uint32_t srqn, uint16_t index)
{
	struct kinet_srq *srq;
	uint64_t wr_id = 0;

	pthread_mutex_lock(&ctx->obj_lock);
	for (srq = ctx->srqs; srq && srq->srqn != srqn; srq = srq->next_in_ctx)
		;
	if (srq) {
		uint32_t i = index & (srq->slots - 1);

		pthread_mutex_lock(&srq->post_lock);
		/* Only slots kinet_srq_post_recv filled go back: one posted by
		 * hand belongs to whoever posted it. */
		if (srq->host_own[i]) {
			wr_id = srq->wrid[i];
			srq->host_own[i] = 0;
			kinet_srq_wqe(srq, srq->tail)->next_wqe_index = kinet_be16((uint16_t)i);
			srq->tail = i;
		}
		pthread_mutex_unlock(&srq->post_lock);
	}
	pthread_mutex_unlock(&ctx->obj_lock);
	return wr_id;
}

uint32_t kinet_srq_num(const struct kinet_srq *srq)
{
	return srq ? srq->srqn : 0;
}

uint32_t kinet_srq_outstanding(const struct kinet_srq *srq)
{
	uint32_t posted;

	if (!srq)
		return 0;
	posted = kinet_be32(__atomic_load_n(&srq->dbrec[0], __ATOMIC_ACQUIRE));
	return (posted - atomic_load_explicit(&srq->consumed, memory_order_relaxed)) & 0xffff;
}

int kinet_srq_rings(struct kinet_srq *srq, struct kinet_srq_rings *rings)
{
	if (!srq)
		return KINET_EINVAL("srq", "NULL");
	if (!rings)
		return KINET_EINVAL("rings", "NULL");
	pthread_mutex_lock(&srq->post_lock);
	*rings = (struct kinet_srq_rings){
		.buf = srq->buf,
		.dbrec = srq->dbrec,
		.stride = srq->stride,
		.depth = srq->slots,
		.head = srq->head,
		.tail = srq->tail,
	};
	pthread_mutex_unlock(&srq->post_lock);
	return 0;
}
