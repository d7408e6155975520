/*
 * The software NIC's objects: each begins with core's object and adds what
 * only this provider uses (core allocates ops->*_size bytes, as rdma-core
 * providers embed struct verbs_context or struct ibv_qp).  Private to
 * src/provider/soft.
 */
#ifndef KINET_SOFT_H
#define KINET_SOFT_H

#include <stddef.h>

#include "driver.h"

struct kinet_engine;
struct kinet_engine_thread;
struct kinet_pending;
struct kinet_transport_ops;

struct kinet_soft_ctx {
	struct kinet_ctx ctx;
	struct kinet_engine *engine;
	/* Remote protocol state (node/ofi transports), opened on first use;
	 * engine thread 0, which also runs the QPs of remote transports,
	 * calls remote_progress on every pass and remote_flush at its end. */
	void *remote;
	int (*remote_progress)(struct kinet_ctx *ctx);
	void (*remote_flush)(struct kinet_ctx *ctx);
	/* Ethernet ports (engine/eth.c), made when the first port opens;
	 * engine thread 0, which also runs every raw-packet QP, calls
	 * eth_progress on every pass (receive: carrier -> rules -> queues). */
	void *eth;
	int (*eth_progress)(struct kinet_engine_thread *t);
};

struct kinet_soft_qp {
	struct kinet_qp qp;
	/* the path to the peer, and the engine thread that runs the QP (host
	 * posters read it: kinet_engine_send_rung) */
	const struct kinet_transport_ops *transport;
	void *transport_priv;
	struct kinet_engine_thread *owner;
	/* A raw-packet QP of an Ethernet port (engine/eth.c): its send queue
	 * takes Ethernet WQEs, set before it reaches RTS. */
	bool raw;

	/* engine, owned by the thread that runs this QP, written on every WQE:
	 * on lines of their own, so posters reading `owner` do not take them
	 * from the engine's core (nor receive posters, below) */
	_Alignas(KINET_CACHE_LINE) uint64_t sq_ci; /* next BB to execute */
	uint64_t sq_seen_pi;			   /* producer index seen from the doorbell */
	uint64_t db_bad;			   /* doorbells that could not be right (doorbell.c) */
	uint64_t db_bad_value;			   /* the last of them */
	uint64_t retry_start_ns;		   /* head WQE waiting (RNR), 0 if not */
	struct kinet_pending *pending_head, *pending_tail;
	uint32_t npending;
	uint64_t bf_mismatch; /* BlueFlame copies that differed from the ring */

	/* receive WQEs: consumed by the engine, posted by the host */
	_Alignas(KINET_CACHE_LINE) pthread_mutex_t rq_lock;
	uint64_t rq_ci; /* receive WQEs consumed, under rq_lock */
};

struct kinet_soft_srq {
	struct kinet_srq srq;
	/* The consumer: engine threads of any QP naming the SRQ (their
	 * responders), one at a time.  Never held with a QP's rq_lock: a QP
	 * with an SRQ has no receive queue. */
	_Alignas(KINET_CACHE_LINE) pthread_mutex_t lock;
	uint32_t head; /* the next WQE to consume, per the list */
	uint32_t ci;   /* WQEs consumed */
};

struct kinet_soft_mr {
	struct kinet_mr mr;
	/* GPU regions: the CUDA IPC export of the allocation holding the
	 * region, made on first use by the node transport
	 * (rp/cuda_ipc.c) under the context's remote-protocol
	 * lock. */
	int8_t ipc_state;  /* 0: not tried, 1: exported, -1: cannot be */
	uint64_t ipc_base; /* the allocation's base address and size */
	uint64_t ipc_size;
	uint8_t ipc_handle[64]; /* cudaIpcMemHandle_t */
};

static inline struct kinet_soft_ctx *kinet_sctx(const struct kinet_ctx *ctx)
{
	return (struct kinet_soft_ctx *)((char *)ctx - offsetof(struct kinet_soft_ctx, ctx));
}

static inline struct kinet_soft_qp *kinet_sqp(const struct kinet_qp *qp)
{
	return (struct kinet_soft_qp *)((char *)qp - offsetof(struct kinet_soft_qp, qp));
}

static inline struct kinet_soft_srq *kinet_ssrq(const struct kinet_srq *srq)
{
	return (struct kinet_soft_srq *)((char *)srq - offsetof(struct kinet_soft_srq, srq));
}

static inline struct kinet_soft_mr *kinet_smr(const struct kinet_mr *mr)
{
	return (struct kinet_soft_mr *)((char *)mr - offsetof(struct kinet_soft_mr, mr));
}

#endif /* KINET_SOFT_H */
