/*
 * Internal objects of the host library, shared by core, engine and
 * transports.  Not installed.
 */
#ifndef KINET_INTERNAL_H
#define KINET_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "kinet/device/types.h"
#include "kinet/kinet.h"
#include "kinet/wire.h"

struct kinet_engine;
struct kinet_engine_thread;
struct kinet_gpunetio_qp;
struct kinet_gpunetio_cq;
struct kinet_transport_ops;
struct kinet_provider_ops;

/* ---- log (log.c) ---- */
void kinet_log(enum kinet_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Per call site budget of log lines: bad input (garbage doorbells, WQEs,
 * messages) can repeat a message on every engine pass, so each call site
 * prints at most KINET_LOG_BURST lines per KINET_LOG_WINDOW_NS, then says
 * how many it dropped. */
struct kinet_log_limit {
	_Atomic uint64_t window_start;
	atomic_uint printed;
	atomic_uint dropped;
};
#define KINET_LOG_BURST 10u
#define KINET_LOG_WINDOW_NS (5 * 1000000000ull)
void kinet_log_limited(struct kinet_log_limit *rl, enum kinet_log_level level, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
#define KINET_LOG_RL(level, ...)                                                                             \
	({                                                                                                   \
		static struct kinet_log_limit kinet_rl_;                                                     \
		kinet_log_limited(&kinet_rl_, level, __VA_ARGS__);                                           \
	})
#define KINET_ERR(...) KINET_LOG_RL(KINET_LOG_ERROR, __VA_ARGS__)
#define KINET_WARN(...) KINET_LOG_RL(KINET_LOG_WARN, __VA_ARGS__)
#define KINET_INFO(...) KINET_LOG_RL(KINET_LOG_INFO, __VA_ARGS__)
/* Debug output is asked for explicitly and kept whole. */
#define KINET_DBG(...) kinet_log(KINET_LOG_DEBUG, __VA_ARGS__)
/* Logs "<func>: invalid argument '<name>': <why>" and yields -EINVAL. */
#define KINET_EINVAL(name, why) (KINET_ERR("%s: invalid argument '%s': %s", __func__, name, why), -EINVAL)

/* While on (this thread), error and warning lines are logged at info
 * level: for what the library tries without being asked (a carrier opened
 * in case a peer needs it).  Returns the previous setting. */
bool kinet_log_demote(bool on);

/* ---- the job (boot/job.c) ---- */
/* Ranks of the job and of them on this host: 1 each when nothing (launcher
 * variables, a kinet_boot joined) says more. */
void kinet_job_size(int *nranks, int *local);
void kinet_job_joined(int nranks);

/* ---- pollers (engine/pollers.c) ---- */
/* Counts polling threads of this process: engine threads, or emulated
 * device threads. */
void kinet_pollers_add(bool engine, int delta);
/* Whether the polling threads of the ranks on this host outnumber the
 * cores (says so once, at warn level). */
bool kinet_pollers_oversubscribed(void);

/* ---- ThreadSanitizer ----
 * A happens-before edge TSan cannot see on its own: shared memory that two
 * parties map at different addresses (the node carrier's rings, also
 * within one process).  The publisher releases `key` after its release
 * store, the consumer acquires it after its acquire load.  No-ops in
 * other builds. */
#if defined(__SANITIZE_THREAD__)
#define KINET_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define KINET_TSAN 1
#endif
#endif
#if defined(KINET_TSAN)
void __tsan_acquire(void *addr);
void __tsan_release(void *addr);
#define KINET_TSAN_RELEASE(key) __tsan_release(key)
#define KINET_TSAN_ACQUIRE(key) __tsan_acquire(key)
#else
#define KINET_TSAN_RELEASE(key) ((void)(key))
#define KINET_TSAN_ACQUIRE(key) ((void)(key))
#endif

/* ---- env (env.c) ---- */
long kinet_env_long(const char *name, long dflt);
const char *kinet_env_str(const char *name, const char *dflt);

/* ---- 16-bit hardware counters ---- */
/* The 64-bit count whose low 16 bits are v, at or after base (producer
 * indexes in doorbell records, wqe_counter in CQEs). */
static inline uint64_t kinet_extend16(uint64_t base, uint16_t v)
{
	return base + (uint16_t)(v - (uint16_t)base);
}

/* ---- time ---- */
uint64_t kinet_now_ns(void);

/* ---- memory shared with the GPU (memory.c) ----
 * Pinned host memory mapped into the GPU when the context has CUDA, plain
 * aligned memory otherwise.  Zeroed. */
void *kinet_host_alloc(struct kinet_ctx *ctx, size_t size);
void kinet_host_free(struct kinet_ctx *ctx, void *ptr);
/* Device-usable address of host memory from kinet_host_alloc. */
void *kinet_host_dev_ptr(struct kinet_ctx *ctx, void *ptr);

/* ---- memory regions (mr.c) ---- */
struct kinet_mr {
	struct kinet_ctx *ctx;
	uint64_t addr;
	uint64_t length;
	uint32_t key; /* lkey == rkey, as on ConnectX */
	unsigned access;
	enum kinet_mem_type type;
	int cuda_device;
	/* GPU regions: the CUDA IPC export of the allocation holding the
	 * region, made on first use by the node transport
	 * (src/transport/node_ipc.c) under the context's remote-protocol
	 * lock. */
	int8_t ipc_state;  /* 0: not tried, 1: exported, -1: cannot be */
	uint64_t ipc_base; /* the allocation's base address and size */
	uint64_t ipc_size;
	uint8_t ipc_handle[64]; /* cudaIpcMemHandle_t */
	/* Set as deregistration starts: no new peer-path window (peer.c). */
	atomic_bool revoked;
};

/* Result of a key/range/access check. */
struct kinet_mr_ref {
	struct kinet_mr *mr;
	void *ptr; /* address inside the region */
	enum kinet_mem_type type;
};

/* Looks up key in ctx's table and checks [addr, addr+len) and access (for
 * a zero-based region addr is an offset).  Returns 0, -ENOENT (no such
 * key), -ERANGE (outside), -EACCES (right missing).  The table read lock
 * must be held (kinet_mr_table_rdlock). */
int kinet_mr_lookup(struct kinet_ctx *ctx, uint32_t key, uint64_t addr, uint64_t len, unsigned access,
		    struct kinet_mr_ref *ref);
/* The same for a pointer a look-up gave before (ref->ptr, which is a
 * virtual address also for zero-based regions, whose WQEs use offsets). */
int kinet_mr_lookup_ptr(struct kinet_ctx *ctx, uint32_t key, const void *ptr, uint64_t len, unsigned access,
			struct kinet_mr_ref *ref);
void kinet_mr_table_rdlock(struct kinet_ctx *ctx);
void kinet_mr_table_unlock(struct kinet_ctx *ctx);

/* ---- completion queues (cq.c) ---- */
struct kinet_cq {
	struct kinet_ctx *ctx;
	uint32_t cqn;
	uint32_t flags; /* enum kinet_cq_flags */
	uint32_t depth;
	uint32_t log_depth;
	struct kinet_cqe64 *ring; /* host pointer */
	uint32_t *dbrec;	  /* host pointer; [0] = consumer index */
	pthread_mutex_t lock;	  /* writers (engine threads of any context) */
	uint64_t pi;		  /* CQEs written; written under lock, read atomically */
	atomic_bool overrun;
	pthread_mutex_t poll_lock;
	uint64_t ci;			    /* host poller */
	atomic_int users;		    /* QPs using it */
	struct kinet_dev_cq *dev;	    /* exported descriptor, or NULL */
	struct kinet_gpunetio_cq *gpunetio; /* kinet_cq_export_gpunetio's, or NULL */
	struct kinet_cq *next_in_ctx;	    /* under ctx->obj_lock */
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

/* ---- queue pairs (qp.c) ---- */
struct kinet_pending; /* engine-private in-flight operation */

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
	uint8_t *uar;		  /* one page; doorbell/BF at KINET_UAR_DB_OFFSET */

	/* host posting (post.c), under post_lock */
	pthread_mutex_t post_lock;
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
	struct kinet_qp_info remote;
	const struct kinet_transport_ops *transport;
	void *transport_priv;

	/* engine, owned by the thread that runs this QP */
	struct kinet_engine_thread *owner;
	uint64_t sq_ci;	       /* next BB to execute */
	uint64_t sq_seen_pi;   /* producer index seen from the doorbell */
	uint64_t db_bad;       /* doorbells that could not be right (src/engine/doorbell.c) */
	uint64_t db_bad_value; /* the last of them */
	uint64_t rq_ci;	       /* receive WQEs consumed, under rq_lock */
	pthread_mutex_t rq_lock;
	uint64_t retry_start_ns; /* head WQE waiting (RNR), 0 if not */
	struct kinet_pending *pending_head, *pending_tail;
	uint32_t npending;
	uint64_t bf_mismatch; /* BlueFlame copies that differed from the ring */
	/* References of those that reach the QP without owning it: a local
	 * requester's batch (the QP as its target), responder completions
	 * in flight, pollers decoding its CQEs.  Destroy unlinks the QP
	 * (nobody takes a new one), then waits for the count to reach 0
	 * (docs/LIFETIMES.md). */
	atomic_int refs;

	struct kinet_dev_qp *dev; /* exported descriptor, or NULL */
	/* Exported for GPUNetIO code instead (gpunetio.c), or NULL. */
	struct kinet_gpunetio_qp *gpunetio;
	/* Landing place of the old value of device signals (remote adds the
	 * caller does not read), registered at export. */
	uint64_t *scratch;
	struct kinet_mr *scratch_mr;
	struct kinet_qp *next_in_ctx;
	/* Peer path (peer.c): the QP's window table, under peer.c's lock. */
	struct kinet_peer_link *peer_link;
};

void kinet_qp_to_error(struct kinet_qp *qp, const char *why);
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

/* ---- context (ctx.c) ---- */
struct kinet_ctx {
	struct kinet_ctx_attr attr;
	const char *provider_name;
	const struct kinet_provider_ops *ops; /* the provider's (src/core/provider.h) */
	uint64_t node_id;
	int cuda_device; /* -1 without CUDA */

	pthread_rwlock_t mr_lock;
	struct kinet_mr **mr_table; /* index = key >> 8 */
	uint32_t mr_table_size;
	uint32_t mr_count;
	uint32_t key_salt;

	pthread_mutex_t obj_lock; /* QP/CQ lists */
	struct kinet_qp *qps;
	struct kinet_cq *cqs;
	uint32_t next_qpn;
	uint32_t next_cqn;

	pthread_mutex_t atomic_lock; /* GPU-memory atomics targeting this ctx */

	struct kinet_engine *engine;
	/* Remote protocol state (node/ofi transports), opened on first use;
	 * engine thread 0 calls remote_progress on every pass. */
	void *remote;
	int (*remote_progress)(struct kinet_ctx *ctx);
	atomic_bool engine_stopped;	 /* set by kinet_ctx_close once the engine is gone */
	struct kinet_dev_error *dev_err; /* host pointer, host-mapped */
	pthread_mutex_t err_lock;
	struct kinet_error host_err;
};

void kinet_ctx_record_error(struct kinet_ctx *ctx, int status, uint32_t qpn, uint8_t syndrome, uint8_t opcode,
			    uint16_t wqe_counter);

/* ---- core helpers (src/core), not used outside core ---- */
/* CUDA runtime, compiled out without KINET_HAVE_CUDA (cuda.c). */
int kinet_cuda_select(int device); /* cudaSetDevice + context init; 0 or -ENODEV */
/* Memory type of ptr; *device is the CUDA device owning GPU memory. */
enum kinet_mem_type kinet_cuda_mem_type(const void *ptr, int *device);
/* Descriptor memory for export: GPU memory with CUDA, else kinet_host_alloc. */
void *kinet_dev_alloc(struct kinet_ctx *ctx, size_t size);
int kinet_dev_copy_in(struct kinet_ctx *ctx, void *dev, const void *src, size_t size);
/* A descriptor filled on the host, copied to new descriptor memory (export.c). */
int kinet_dev_export_copy(struct kinet_ctx *ctx, const void *d, size_t len, void **out);
void kinet_dev_free(struct kinet_ctx *ctx, void *dev);
/* Frees every MR still registered (ctx close); ctx_free frees the table. */
void kinet_mr_table_free(struct kinet_ctx *ctx);
/* Allocates the next queue pair number of the context. */
uint32_t kinet_ctx_alloc_qpn(struct kinet_ctx *ctx);

/* ---- peer path (peer.c) ---- */
struct kinet_peer_link;
/* Process-wide list of open contexts, where peer QPs find their target. */
int kinet_peer_ctx_add(struct kinet_ctx *ctx);
/* Revokes the windows of links into ctx and forgets it (ctx close). */
void kinet_peer_ctx_remove(struct kinet_ctx *ctx);
/* Gives a connected, exported QP its window table when the peer is
 * reachable; 0, or -EHOSTUNREACH under KINET_P2P=force when it is not. */
int kinet_peer_qp_attach(struct kinet_qp *qp);
void kinet_peer_qp_detach(struct kinet_qp *qp);
void kinet_peer_mr_added(struct kinet_mr *mr);
/* Zeroes mr's window keys everywhere before deregistration completes. */
void kinet_peer_mr_revoke(struct kinet_mr *mr);
/* The window through which viewer's device code reaches a region of this
 * process, or false when it cannot. */
bool kinet_peer_window_in_process(const struct kinet_ctx *viewer, uint64_t addr, uint64_t length,
				  uint32_t access, enum kinet_mem_type type, int cuda_device,
				  struct kinet_dev_window *w);
/* Remote windows of a QP whose transport delivers them (peer_hello): added
 * by key, revoked by key (0: all, and the QP leaves the peer path), and the
 * first table complete (ok) or refused. */
void kinet_peer_remote_window_add(struct kinet_qp *qp, uint32_t key, const struct kinet_dev_window *w);
void kinet_peer_remote_window_revoke(struct kinet_qp *qp, uint32_t key);
void kinet_peer_remote_ready(struct kinet_qp *qp, bool ok);
/* 0 once device `from` can access device `to`'s memory (peer access
 * enabled), else -ENODEV (cuda.c). */
int kinet_cuda_peer_access(int from, int to);
/* 0 and the device address minus the host address of pinned, mapped host
 * memory; -ENOENT for memory the GPU cannot reach (cuda.c). */
int kinet_cuda_host_mapping(const void *ptr, uint64_t *delta);

/* ---- engine (src/engine) ---- */
int kinet_engine_start(struct kinet_ctx *ctx, int nthreads);
void kinet_engine_stop(struct kinet_ctx *ctx);
/* Hands a QP to one engine thread / takes it back (waits for a pass to
 * finish, then completes or drops its in-flight work). */
void kinet_engine_add_qp(struct kinet_ctx *ctx, struct kinet_qp *qp);
void kinet_engine_remove_qp(struct kinet_ctx *ctx, struct kinet_qp *qp);
/* Wakes the thread owning qp (a host post just rang). */
void kinet_engine_kick(struct kinet_qp *qp);
void kinet_engine_pause(struct kinet_ctx *ctx, bool paused);

/* ---- transports (src/transport) ---- */

/* A decoded WQE, ready to execute.  Local SGEs are checked by the engine
 * before the transport sees them. */
#define KINET_MAX_SGE 16
struct kinet_op {
	uint8_t opcode;
	uint8_t fm_ce_se;
	uint16_t wqe_counter;
	uint32_t imm_be;
	uint64_t raddr;
	uint32_t rkey;
	uint64_t swap_add;
	uint64_t compare;
	uint32_t wait_cqn; /* WAIT: the CQ number and CQE index awaited */
	uint32_t wait_index;
	uint32_t length;	    /* total bytes */
	bool after_pending;	    /* earlier operations of the QP are still in flight:
				     * anything that would complete synchronously must
				     * answer KINET_EXEC_BUSY, without side effects */
	const uint8_t *inline_data; /* non-NULL for inline writes/sends */
	int nsge;
	struct kinet_mr_ref sge[KINET_MAX_SGE];
	uint32_t sge_len[KINET_MAX_SGE];
};

/* What executing an operation gave. */
enum kinet_exec_status {
	KINET_EXEC_DONE = 0, /* complete at the target */
	KINET_EXEC_PENDING,  /* issued; the transport completes it later */
	KINET_EXEC_RETRY,    /* peer not ready (RNR, unreachable): retry until
			      * the deadline, then fail with res->syndrome */
	KINET_EXEC_BUSY,     /* must wait for the QP's in-flight operations */
	KINET_EXEC_ERROR,    /* *syndrome set */
};

struct kinet_exec_result {
	enum kinet_exec_status status;
	uint8_t syndrome;
	uint32_t byte_cnt; /* for the requester CQE (reads, atomics) */
	/* Responder completion (send, write-with-immediate), written by the
	 * engine once the data is placed; resp_qp holds a reference. */
	struct kinet_qp *resp_qp;
	struct kinet_cq *resp_cq;
	struct kinet_cqe_desc resp_cqe;
	/* KINET_EXEC_PENDING without copies on the engine stream: the
	 * transport tracks the operation; op_done(token) reports its end. */
	uint64_t token;
	bool tracked_by_transport;
};

/* Moves len bytes.  Host to host: memcpy, returns 0.  Either side in GPU
 * memory: issued on the engine thread's copy stream, returns 1 (the engine
 * then tracks the operation with an event); negative errno on failure. */
int kinet_engine_copy(struct kinet_engine_thread *thread, void *dst, enum kinet_mem_type dst_type,
		      const void *src, enum kinet_mem_type src_type, size_t len);
/* Waits for the copies issued so far by the thread (GPU-memory atomics). */
int kinet_engine_copy_sync(struct kinet_engine_thread *thread);

struct kinet_transport_ops {
	const char *name;
	int (*connect)(struct kinet_qp *qp, const struct kinet_qp_info *remote);
	void (*disconnect)(struct kinet_qp *qp);
	/* Executes op (from qp's send queue) against the peer. */
	void (*execute)(struct kinet_engine_thread *thread, struct kinet_qp *qp, struct kinet_op *op,
			struct kinet_exec_result *res);
	/* For operations the transport tracks (res->tracked_by_transport):
	 * 1 once complete, with *syndrome 0 or the error, else 0.  Every
	 * operation completes within the QP's timeout (a dead peer gives
	 * TRANSPORT_RETRY_EXC), and no data lands after it completed. */
	int (*op_done)(struct kinet_qp *qp, uint64_t token, uint8_t *syndrome);
	/* Optional: called after each batch of execute() calls on qp (with the
	 * QP's registration table read-locked throughout the batch), so a
	 * transport may keep per-batch state such as a looked-up target. */
	void (*batch_end)(struct kinet_qp *qp);
	/* Optional: asks the target for its memory windows (peer path across
	 * processes of one host); the answers come through
	 * kinet_peer_remote_*.  0 once asked. */
	int (*peer_hello)(struct kinet_qp *qp);
};

extern const struct kinet_transport_ops kinet_transport_local;

#endif /* KINET_INTERNAL_H */
