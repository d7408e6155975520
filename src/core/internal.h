/*
 * Core's internal objects and helpers (src/core), which providers build on.
 * Not installed.  What only one provider uses is in that provider's folder
 * (src/provider/soft/soft.h); the ops between core and a provider are in
 * provider.h.
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

struct kinet_gpunetio_qp;
struct kinet_gpunetio_cq;
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

/* ---- the job (job.c; boot and launchers fill it in) ---- */
/* Ranks of the job and of them on this host: 1 each when nothing (launcher
 * variables, a kinet_boot joined) says more. */
void kinet_job_size(int *nranks, int *local);
void kinet_job_joined(int nranks);

/* ---- pollers (pollers.c) ---- */
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

#endif /* KINET_INTERNAL_H */
