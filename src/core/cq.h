/*
 * Completion queues (cq.c): the ring, its producer state and the host
 * poller.  The software NIC writes CQEs (src/provider/soft/engine/cqe_writer.c).
 */
#ifndef KINET_CORE_CQ_H
#define KINET_CORE_CQ_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kinet/device/types.h"
#include "kinet/kinet.h"
#include "kinet/wire.h"

#include "base.h"

struct kinet_ctx;
struct kinet_qp;
struct kinet_cq;
struct kinet_mr;
struct kinet_gpunetio_cq;

/* ---- completion queues (cq.c) ---- */
struct kinet_cq {
	struct kinet_ctx *ctx;
	uint32_t cqn;
	uint32_t flags; /* enum kinet_cq_flags */
	uint32_t depth;
	uint32_t log_depth;
	struct kinet_cqe64 *ring; /* host pointer */
	uint32_t *dbrec;	  /* host pointer; [0] = consumer index */
	/* The completion word (kinet/device/types.h, KINET_COMP_*): host
	 * pointer from the provider, or NULL; comp is its value, under lock. */
	uint64_t *comp_word;
	atomic_int users;		    /* QPs using it */
	struct kinet_dev_cq *dev;	    /* exported descriptor, or NULL */
	struct kinet_gpunetio_cq *gpunetio; /* kinet_cq_export_gpunetio's, or NULL */
	struct kinet_cq *next_in_ctx;	    /* under ctx->obj_lock */
	atomic_bool overrun;		    /* read by every empty poll: not beside lock */

	/* The writers' and the host poller's state on lines of their own: a
	 * poller spinning on an empty CQ only reads lines the engine does not
	 * write for the next CQE (kinet_cq_create aligns). */
	_Alignas(KINET_CACHE_LINE) pthread_mutex_t lock; /* writers (engine threads of any context) */
	uint64_t pi; /* CQEs written; written under lock, read atomically */
	uint64_t comp;
	uint32_t ci_seen; /* consumer index last read from the doorbell record, under lock */
	_Alignas(KINET_CACHE_LINE) pthread_mutex_t poll_lock;
	uint64_t ci; /* host poller; written under poll_lock, read atomically */
};

/* Vendor syndrome kinet puts in the CQE that reports a CQ overrun. */
#define KINET_VENDOR_SYND_CQ_OVERRUN 0xf1
#define KINET_VENDOR_SYND_NOT_RTS 0xf2
#define KINET_VENDOR_SYND_PEER_DEAD 0xf3

/* CQEs the context's CQ number cqn has produced (WAIT WQEs): 0, -ENOENT (no
 * such CQ) or -EOVERFLOW (it overran: *produced is set but will not move
 * again). */
int kinet_cq_produced(struct kinet_ctx *ctx, uint32_t cqn, uint64_t *produced);

#endif /* KINET_CORE_CQ_H */
