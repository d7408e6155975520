/*
 * Software NIC internals: engine threads, their QP sets, in-flight
 * operations.  Private to src/provider/soft.
 */
#ifndef KINET_ENGINE_H
#define KINET_ENGINE_H

#include "transport.h"

/* An operation issued on a copy stream and not yet complete. */
struct kinet_pending {
	struct kinet_pending *next;
	/* by_copy: the operation's copies are on the thread's stream; one
	 * event, recorded when the pass over the QP ends (kinet_pending_seal),
	 * covers every copy of that pass and sits on its last operation. */
	bool by_copy;
	bool sealed;	/* by_copy: an event at or after this one covers it */
	void *event;	/* cudaEvent_t, on the last by_copy operation of a pass */
	uint64_t token; /* !by_copy: the transport tracks it (op_done) */
	uint16_t wqe_counter;
	uint8_t wqe_opcode;
	bool signaled;
	uint32_t byte_cnt;
	struct kinet_qp *resp_qp; /* holds a reference */
	struct kinet_cq *resp_cq;
	struct kinet_cqe_desc resp_cqe;
};

struct kinet_engine_thread {
	struct kinet_ctx *ctx;
	struct kinet_engine *engine;
	int index;
	pthread_t tid;
	bool started;

	pthread_mutex_t lock; /* the QP set; held for a whole pass */
	struct kinet_qp **qps;
	int nqps;
	int cap;

	pthread_mutex_t sleep_lock;
	pthread_cond_t sleep_cond;
	atomic_bool sleeping;
	atomic_uint kicks;

	/* What the thread did (kinet_ctx_engine_stats): written by the
	 * thread alone, read by anyone (relaxed). */
	struct kinet_engine_stats stats;

	void *stream;	   /* cudaStream_t, NULL without CUDA */
	void **event_pool; /* idle cudaEvent_t */
	int nevents;
	int event_cap;

	/* Scratch for inline payloads, which may wrap around the ring. */
	uint8_t inline_buf[KINET_WQE_MAX_DS * KINET_WQE_DS_SIZE];
};

struct kinet_engine {
	struct kinet_ctx *ctx;
	int nthreads;
	struct kinet_engine_thread *threads;
	atomic_uint next_thread;
	atomic_bool stop;
	atomic_bool paused;
	uint64_t spin_ns;  /* busy-poll this long after the last work */
	bool spin_set;	   /* from $KINET_ENGINE_SPIN_US: kept when cores are short */
	uint64_t yield_ns; /* then sched_yield this long */
	uint64_t sleep_max_ns;
};

/* ---- the engine as the provider ops use it (provider.c) ---- */
int kinet_engine_start(struct kinet_ctx *ctx, int nthreads);
void kinet_engine_stop(struct kinet_ctx *ctx);
/* Hands a QP to one engine thread / takes it back (waits for a pass to
 * finish, then completes or drops its in-flight work). */
void kinet_engine_add_qp(struct kinet_ctx *ctx, struct kinet_qp *qp);
void kinet_engine_remove_qp(struct kinet_ctx *ctx, struct kinet_qp *qp);
/* A QP connecting over a remote transport moves to thread 0, the thread of
 * the remote pass (engine.c says why). */
void kinet_engine_move_to_remote_thread(struct kinet_qp *qp);
/* Wakes the thread owning qp (a host post just rang). */
void kinet_engine_kick(struct kinet_qp *qp);
/* Wakes every engine thread of ctx (receives posted to an SRQ, resume). */
void kinet_engine_kick_all(struct kinet_ctx *ctx);
/* The host rang qp's send doorbell: wakes the owner only if it sleeps
 * (engine.c says why and how no doorbell is missed). */
void kinet_engine_send_rung(struct kinet_qp *qp);
void kinet_engine_pause(struct kinet_ctx *ctx, bool paused);
/* Counters of engine thread `index`; the number of threads, or -EINVAL. */
int kinet_engine_stats(struct kinet_ctx *ctx, int index, struct kinet_engine_stats *stats);

/* Moves len bytes.  Host to host: memcpy, returns 0.  Either side in GPU
 * memory: issued on the engine thread's copy stream, returns 1 (the engine
 * then tracks the operation with an event); negative errno on failure. */
int kinet_engine_copy(struct kinet_engine_thread *thread, void *dst, enum kinet_mem_type dst_type,
		      const void *src, enum kinet_mem_type src_type, size_t len);
/* Waits for the copies issued so far by the thread (GPU-memory atomics). */
int kinet_engine_copy_sync(struct kinet_engine_thread *thread);

/* doorbell.c: producer index the QP's doorbell currently shows. */
uint64_t kinet_engine_read_pi(struct kinet_qp *qp);
/* Whether a doorbell of qp was rung that the engine has not taken (read
 * once more before an engine thread sleeps). */
bool kinet_engine_db_pending(struct kinet_qp *qp);

/* execute.c: one pass over one QP; returns how much work was done. */
int kinet_engine_progress_qp(struct kinet_engine_thread *thread, struct kinet_qp *qp);
/* Drops in-flight operations after waiting for their copies (shutdown). */
void kinet_engine_drain_qp(struct kinet_engine_thread *thread, struct kinet_qp *qp);

/* pending.c */
int kinet_pending_push(struct kinet_engine_thread *thread, struct kinet_qp *qp, struct kinet_pending *proto,
		       bool tracked_by_transport);
/* Records the event that covers the copies issued since the last seal
 * (end of a pass over qp); waits for them when it cannot. */
void kinet_pending_seal(struct kinet_engine_thread *thread, struct kinet_qp *qp);
/* Completes finished operations at the head of qp's list, in order. */
int kinet_pending_reap(struct kinet_engine_thread *thread, struct kinet_qp *qp);
void kinet_pending_drop_all(struct kinet_engine_thread *thread, struct kinet_qp *qp);
int kinet_engine_thread_cuda_init(struct kinet_engine_thread *thread);
void kinet_engine_thread_cuda_fini(struct kinet_engine_thread *thread);

/* cqe_writer.c */
/* Writes one CQE with the right owner bit.  When the CQ has room for only
 * the reserved last entry, that entry reports the overrun instead
 * (LOCAL_QP_OP_ERR, vendor KINET_VENDOR_SYND_CQ_OVERRUN) and the CQ is
 * marked overrun; later CQEs are dropped.  Returns 0, -EAGAIN when
 * `may_wait` and the CQ is full (nothing written), -EOVERFLOW on overrun. */
int kinet_cq_write(struct kinet_cq *cq, const struct kinet_cqe_desc *desc, bool may_wait);

/* execute.c: writes a CQE and handles overrun (QP to error). */
void kinet_engine_complete(struct kinet_qp *qp, struct kinet_cq *cq, const struct kinet_cqe_desc *desc);
void kinet_engine_qp_fail(struct kinet_qp *qp, uint8_t syndrome, uint8_t vendor, uint8_t wqe_opcode,
			  uint16_t wqe_counter);

/* eth.c: n WQEs of raw-packet QP qp completed with an error CQE (counted
 * as the port's tx_errors). */
void kinet_eth_tx_failed(struct kinet_qp *qp, uint32_t n);
/* eth.c: the provider's Ethernet ops (provider.h), and the context's
 * Ethernet state freed at close (engine stopped, ports closed). */
int kinet_soft_eth_port_open(struct kinet_eth_port *port);
void kinet_soft_eth_port_close(struct kinet_eth_port *port);
int kinet_soft_eth_port_status(struct kinet_eth_port *port);
uint64_t kinet_soft_eth_port_rx_dropped(struct kinet_eth_port *port);
int kinet_soft_eth_qp_attach(struct kinet_qp *qp, struct kinet_eth_port *port, uint8_t cs_flags, bool timed);
void kinet_soft_eth_qp_fini(struct kinet_qp *qp);
void kinet_soft_eth_close(struct kinet_ctx *ctx);

#endif /* KINET_ENGINE_H */
