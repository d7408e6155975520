/*
 * Shared receive queues (srq.c): an mlx5 SRQ ring several QPs of one
 * context consume receive WQEs from.
 */
#ifndef KINET_CORE_SRQ_H
#define KINET_CORE_SRQ_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "kinet/kinet.h"
#include "kinet/wire.h"

#include "base.h"

struct kinet_ctx;

struct kinet_srq {
	struct kinet_ctx *ctx;
	uint32_t srqn;
	uint32_t slots;	 /* WQEs in the ring, a power of two */
	uint32_t stride; /* bytes per WQE: next segment, then max_sge data segments */
	uint32_t max_sge;
	uint8_t *buf;	  /* the ring (provider's, host pointer) */
	uint32_t *dbrec;  /* [0]: big-endian count of WQEs posted (provider's) */
	atomic_int users; /* QPs naming it (kinet_qp_attr.srq) */
	/* Receive WQEs the NIC consumed; written by the provider's consumer,
	 * read by kinet_srq_outstanding. */
	_Atomic uint32_t consumed;
	struct kinet_srq *next_in_ctx; /* under ctx->obj_lock */

	/* Host posting and recycling (mlx5's free list): post_lock.  head is
	 * the next slot to post, tail the last free one, which stays free:
	 * its next_wqe_index is rewritten when a slot is recycled, and the
	 * NIC must never have consumed (read the next index of) it. */
	_Alignas(KINET_CACHE_LINE) pthread_mutex_t post_lock;
	uint32_t head, tail;
	uint32_t counter;  /* WQEs posted through kinet_srq_post_recv */
	uint64_t *wrid;	   /* per slot */
	uint8_t *host_own; /* per slot: posted by kinet_srq_post_recv, completion not polled */
};

/* A responder CQE of srqn polled for slot index: its wr_id, and the slot
 * goes back to the free list (kinet_cq_poll). */
uint64_t kinet_srq_complete(struct kinet_ctx *ctx, uint32_t srqn, uint16_t index);

static inline struct kinet_wqe_srq_next_seg *kinet_srq_wqe(const struct kinet_srq *srq, uint32_t index)
{
	return (struct kinet_wqe_srq_next_seg *)(void *)(srq->buf +
							 (size_t)(index & (srq->slots - 1)) * srq->stride);
}

#endif /* KINET_CORE_SRQ_H */
