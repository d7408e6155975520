/*
 * Queue pairs (qp.c): queues, doorbells, host posting state, peer.
 */
#ifndef KINET_CORE_QP_H
#define KINET_CORE_QP_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kinet/device/types.h"
#include "kinet/kinet.h"
#include "kinet/wire.h"

#include "base.h"
#include "mr.h"

struct kinet_ctx;
struct kinet_qp;
struct kinet_cq;
struct kinet_mr;
struct kinet_gpunetio_qp;
struct kinet_peer_link;

/* ---- queue pairs (qp.c) ---- */
/* Scatter/gather entries a work request or receive WQE may have. */
#define KINET_MAX_SGE 16

struct kinet_qp {
	struct kinet_ctx *ctx;
	uint32_t qpn;
	_Atomic int state; /* enum kinet_qp_state */
	struct kinet_qp_attr attr;
	enum kinet_db_mode db_mode; /* resolved, never AUTO */

	/* send queue: 2^sq_log BBs */
	uint8_t *sq;
	uint32_t sq_bbs;
	uint32_t sq_log;
	/* receive queue */
	uint8_t *rq;
	uint32_t rq_depth;
	uint32_t rq_stride;
	/* doorbells (host pointers) */
	uint32_t *dbrec;	  /* [0] recv head, [1] send pi (16 bits) */
	_Atomic uint64_t *db_cpu; /* CPU mode: 64-bit producer index */
	uint8_t *uar;		  /* one page, the doorbell/BF register at uar_db_offset */
	uint32_t uar_db_offset;	  /* KINET_UAR_DB_OFFSET unless the provider says */

	/* host posting (post.c), under post_lock, on lines of their own: the
	 * engine reads the doorbell pointers above on every pass, and a lock
	 * beside them made each post take their line from the engine's core
	 * (kinet_qp_create aligns). */
	_Alignas(KINET_CACHE_LINE) pthread_mutex_t post_lock;
	uint64_t sq_pi;	     /* BBs posted */
	uint64_t sq_ci_host; /* BBs known complete from polled CQEs */
	uint64_t sq_sig_end; /* BB after the last signaled WQE posted */
	uint64_t *sq_wrid;   /* per BB slot: wr_id of the WQE starting there */
	uint8_t *sq_nbb;     /* per BB slot: BBs of the WQE starting there */
	uint64_t rq_pi;
	uint64_t rq_ci_host;
	uint64_t *rq_wrid;
	bool exported;

	/* peer */
	_Alignas(KINET_CACHE_LINE) struct kinet_qp_info remote;

	/* References of those that reach the QP without owning it: a local
	 * requester's batch (the QP as its target), responder completions
	 * in flight, pollers decoding its CQEs.  Destroy unlinks the QP
	 * (nobody takes a new one), then waits for the count to reach 0
	 * (docs/LIFETIMES.md). */
	atomic_int refs;

	struct kinet_dev_qp *dev; /* exported descriptor, or NULL */
	uint64_t *dev_marks;	  /* its sq_marks (shared QPs), device memory, or NULL */
	/* Exported for GPUNetIO code instead (gpunetio.c), or NULL. */
	struct kinet_gpunetio_qp *gpunetio;
	/* Landing place of the old value of device signals (remote adds the
	 * caller does not read), registered at export. */
	uint64_t *scratch;
	struct kinet_mr *scratch_mr;
	/* Staged sources (export.c): attr.stage_bytes per send-queue BB, host
	 * memory device code writes, or NULL.  Made at export, freed with the
	 * QP: the engine reads a slot only while executing the WQE of its BB. */
	uint8_t *stage;
	struct kinet_qp *next_in_ctx;
	/* Peer path (peer.c): the QP's window table, under peer.c's lock. */
	struct kinet_peer_link *peer_link;
};

void kinet_qp_to_error(struct kinet_qp *qp, const char *why);
/* Host address of the QP's doorbell register (8-byte doorbell, start of
 * the BlueFlame window). */
static inline uint8_t *kinet_qp_db_reg(const struct kinet_qp *qp)
{
	return qp->uar + qp->uar_db_offset;
}
/* Whether ctx has a QP numbered qpn (the pointer must not be used). */
struct kinet_qp *kinet_ctx_find_qp(struct kinet_ctx *ctx, uint32_t qpn);
/* The QP numbered qpn with a reference (kinet_qp_put), or NULL. */
struct kinet_qp *kinet_ctx_get_qp(struct kinet_ctx *ctx, uint32_t qpn);
static inline void kinet_qp_get(struct kinet_qp *qp)
{
	atomic_fetch_add_explicit(&qp->refs, 1, memory_order_relaxed);
}
/* Release: what the holder did to the QP happens before destroy frees it. */
static inline void kinet_qp_put(struct kinet_qp *qp)
{
	atomic_fetch_sub_explicit(&qp->refs, 1, memory_order_release);
}

#endif /* KINET_CORE_QP_H */
