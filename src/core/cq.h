/*
 * Completion queues (cq.c): the ring and the CQE writer providers use.
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

/* A completion the engine wants written. */
struct kinet_cqe_desc {
	uint8_t cqe_opcode; /* enum kinet_cqe_opcode */
	uint8_t wqe_opcode; /* requester: the WQE opcode */
	uint8_t syndrome;   /* error CQEs */
	uint8_t vendor_syndrome;
	uint16_t wqe_counter;
	uint32_t qpn;
	uint32_t byte_cnt;
	uint32_t imm_be; /* as carried in the WQE */
	uint32_t srqn;	 /* responder: the SRQ the receive WQE came from, or 0 */
};

/* Vendor syndrome kinet puts in the CQE that reports a CQ overrun. */
#define KINET_VENDOR_SYND_CQ_OVERRUN 0xf1
#define KINET_VENDOR_SYND_NOT_RTS 0xf2
#define KINET_VENDOR_SYND_PEER_DEAD 0xf3

/* Writes one CQE with the right owner bit.  When the CQ has room for only
 * the reserved last entry, that entry reports the overrun instead
 * (LOCAL_QP_OP_ERR, vendor KINET_VENDOR_SYND_CQ_OVERRUN) and the CQ is
 * marked overrun; later CQEs are dropped.  Returns 0, -EAGAIN when
 * `may_wait` and the CQ is full (nothing written), -EOVERFLOW on overrun. */
int kinet_cq_write(struct kinet_cq *cq, const struct kinet_cqe_desc *desc, bool may_wait);
/* CQEs the context's CQ number cqn has produced (WAIT WQEs): 0, -ENOENT (no
 * such CQ) or -EOVERFLOW (it overran: *produced is set but will not move
 * again). */
int kinet_cq_produced(struct kinet_ctx *ctx, uint32_t cqn, uint64_t *produced);

#endif /* KINET_CORE_CQ_H */
