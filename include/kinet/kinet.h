/*
 * kinet host API: the control path of GPU-initiated networking.
 *
 * Objects are opaque handles.  Functions return 0 (or a count) on success and
 * a negative errno on failure; kinet_strerror() turns either into text.  No
 * state lives outside a context.  See docs/ARCHITECTURE.md.
 */
#ifndef KINET_KINET_H
#define KINET_KINET_H

#include <stddef.h>
#include <stdint.h>

#include "kinet/api.h"
#include "kinet/syndrome.h"

#ifdef __cplusplus
extern "C" {
#endif

struct kinet_ctx;
struct kinet_mr;
struct kinet_cq;
struct kinet_qp;
struct kinet_srq;
struct kinet_dev_qp;
struct kinet_dev_cq;

/* ---- context --------------------------------------------------------- */

/* Attribute structs (kinet_ctx_attr, kinet_cq_attr, kinet_qp_attr, and
 * kinet_mesh_attr, kinet_boot_attr, kinet_team_attr) start with their size, so they can gain
 * fields: start from kinet_<object>_attr_init(), which sets it; or zero the
 * struct (size 0 means the layout of this header) and set what you need,
 * knowing what zero means for each field.  Fields the library does not know
 * must be zero.  docs/api/kinet_ctx.3.md, "Attributes". */
struct kinet_ctx_attr {
	uint32_t size;	      /* sizeof(struct kinet_ctx_attr), or 0 */
	const char *provider; /* "auto", "soft", "mlx5"; NULL: $KINET_PROVIDER or auto */
	int engine_threads;   /* software NIC threads; 0: $KINET_ENGINE_THREADS or 1 */
	int cuda_device;      /* CUDA device for GPU memory and export, or: */
};
/* The first CUDA device when the build has CUDA and one is present, else
 * host-only. */
#define KINET_CUDA_DEVICE_AUTO (-1)
/* Host-only: rings and descriptors in plain host memory.  What programs
 * running the device API on CPU threads (KINET_HOST_EMU) need. */
#define KINET_CUDA_DEVICE_NONE (-2)

/* Fills attr with the defaults (its size, provider NULL, 0 engine threads,
 * KINET_CUDA_DEVICE_AUTO).  A zeroed attr differs in one field: cuda_device 0
 * is the first CUDA device, whether or not it is usable. */
KINET_API void kinet_ctx_attr_init(struct kinet_ctx_attr *attr);
KINET_API int kinet_ctx_open(const struct kinet_ctx_attr *attr, struct kinet_ctx **ctx);
/* Stops the engine (also with work in flight) and frees everything the
 * context still owns.  Handles of the context are invalid afterwards. */
KINET_API int kinet_ctx_close(struct kinet_ctx *ctx);
KINET_API const char *kinet_ctx_provider(const struct kinet_ctx *ctx);
/* Whether kinet_ctx_open() could open provider name ("soft", "mlx5") here:
 * 0, or -ENODEV (not usable) or -EINVAL (no such provider) with *why (if
 * not NULL) a sentence saying why, valid until the next probe.  Logs
 * nothing: for tools that list what a machine offers. */
KINET_API int kinet_provider_probe(const char *name, const char **why);
/* What provider name finds on this machine (devices, ports, what works and
 * why not), one line at a time through line(arg, text), for tools such as
 * kinet-info.  0; -ENODEV after lines saying why the provider is not
 * usable; -EINVAL (no such provider); -EOPNOTSUPP (nothing to describe).
 * Logs nothing that was not asked for. */
typedef void (*kinet_describe_fn)(void *arg, const char *line);
KINET_API int kinet_provider_describe(const char *name, kinet_describe_fn line, void *arg);
/* 1 when the build has CUDA and a device is usable, else 0. */
KINET_API int kinet_cuda_available(void);

/* The first error a context saw, from the engine or from device code. */
struct kinet_error {
	int status;	  /* negative errno; 0 when nothing went wrong */
	uint32_t qpn;	  /* queue pair it happened on, 0 if none */
	uint8_t syndrome; /* of the error CQE (kinet_wc_status_str), 0 if none */
	uint8_t opcode;	  /* WQE opcode involved */
	uint16_t wqe_counter;
	uint32_t source; /* KINET_ERROR_SOURCE_* */
};
#define KINET_ERROR_SOURCE_ENGINE 1u
#define KINET_ERROR_SOURCE_DEVICE 2u
#define KINET_ERROR_SOURCE_HOST 3u
KINET_API int kinet_ctx_last_error(struct kinet_ctx *ctx, struct kinet_error *err);
KINET_API void kinet_ctx_clear_error(struct kinet_ctx *ctx);

/* Engine control, for tests and for measuring: a paused engine executes
 * nothing until resumed (doorbells are remembered).  -EOPNOTSUPP where the
 * provider is a NIC, which cannot be paused (mlx5). */
KINET_API int kinet_ctx_pause(struct kinet_ctx *ctx);
KINET_API int kinet_ctx_resume(struct kinet_ctx *ctx);

/* What one engine thread of the software NIC did since the context opened:
 * counters that only grow (subtract two snapshots for an interval).  The
 * time of the thread is split into passes that found work (busy_ns) and
 * its idle policy's three states (spin, yield, sleep), so busy_ns over the
 * interval says how close the thread is to being the limit. */
struct kinet_engine_stats {
	uint64_t passes;      /* looks over its QPs */
	uint64_t busy_passes; /* of them, those that found work */
	uint64_t wqes;	      /* WQEs executed (errors and flushes included) */
	uint64_t busy_ns;     /* in passes that found work */
	uint64_t spin_ns;     /* idle, polling with a pause per look */
	uint64_t yield_ns;    /* idle, polling with sched_yield */
	uint64_t sleep_ns;    /* idle, asleep (a host post or a timeout wakes it) */
	uint32_t qps;	      /* QPs it runs now */
	uint32_t pad;
};
/* Counters of engine thread `thread` (0 .. n-1): returns n, the number of
 * engine threads; -EINVAL for a bad argument, -ENOTSUP for a provider
 * without engine threads. */
KINET_API int kinet_ctx_engine_stats(struct kinet_ctx *ctx, int thread, struct kinet_engine_stats *stats);

/* A negative (or positive) errno as text.  Completion statuses are not
 * errnos: kinet_wc_status_str() names those. */
KINET_API const char *kinet_strerror(int err);

/* Log levels, from $KINET_LOG (error, warn, info, debug, or 0..3). */
enum kinet_log_level {
	KINET_LOG_ERROR = 0,
	KINET_LOG_WARN = 1,
	KINET_LOG_INFO = 2,
	KINET_LOG_DEBUG = 3,
};
KINET_API void kinet_log_set_level(enum kinet_log_level level);

/* The environment variables kinet reads, as its one table declares them
 * (src/core/env_vars.c), with the value set now: entry index (0, 1, ...)
 * into *info; 0, or -ENOENT past the last.  The strings stay valid until
 * the calling thread's next call.  kinet_ctx_open checks every set
 * KINET_* variable against this table: a bad value fails the open with
 * -EINVAL and a line naming the variable, unless the entry falls back
 * (then one warning says what is used instead). */
struct kinet_env_info {
	const char *name;
	const char *allowed; /* "1..64", "auto|soft|mlx5", "0|1", or "text" */
	const char *dflt;    /* NULL: unset means not given */
	const char *value;   /* as set, or NULL */
	const char *invalid; /* why value is not allowed, or NULL */
	int fallback;	     /* 1: a bad value falls back to dflt; 0: it is an error */
	const char *scope;   /* core, soft, ofi, mlx5, boot, verbs, tools, scripts */
	const char *help;
};
KINET_API int kinet_env_info(unsigned index, struct kinet_env_info *info);

/* ---- memory ---------------------------------------------------------- */

enum kinet_access {
	KINET_ACCESS_LOCAL_WRITE = 1u << 0,
	KINET_ACCESS_REMOTE_WRITE = 1u << 1,
	KINET_ACCESS_REMOTE_READ = 1u << 2,
	KINET_ACCESS_REMOTE_ATOMIC = 1u << 3,
	/* Zero-based region (as IBV_ACCESS_ZERO_BASED): every address that
	 * names it in a WQE, through its lkey or its rkey, is an offset from
	 * its start, not a virtual address; kinet_mr_pack gives addr 0.  What
	 * NCCL's GIN registers its windows with. */
	KINET_ACCESS_ZERO_BASED = 1u << 4,
};

enum kinet_mem_type {
	KINET_MEM_HOST = 0,
	KINET_MEM_CUDA = 1,
};

/* Registers [addr, addr+length).  Host or CUDA device memory; the type is
 * found out with the CUDA runtime when the build has it. */
KINET_API int kinet_mr_reg(struct kinet_ctx *ctx, void *addr, size_t length, unsigned access,
			   struct kinet_mr **mr);
KINET_API int kinet_mr_dereg(struct kinet_mr *mr);
KINET_API uint32_t kinet_mr_lkey(const struct kinet_mr *mr);
KINET_API uint32_t kinet_mr_rkey(const struct kinet_mr *mr);
KINET_API enum kinet_mem_type kinet_mr_mem_type(const struct kinet_mr *mr);

/* What a peer needs to target a region: packed by the owner, sent out of
 * band, used as is by the peer (addresses are the owner's; 0 for a
 * zero-based region, whose addresses are offsets). */
#define KINET_MR_INFO_TRANSPORT_BYTES 96
struct kinet_mr_info {
	uint64_t addr;
	uint64_t length;
	uint32_t rkey;
	uint32_t access;
	uint8_t transport[KINET_MR_INFO_TRANSPORT_BYTES];
};
KINET_API int kinet_mr_pack(const struct kinet_mr *mr, struct kinet_mr_info *info);

/* ---- completion queues ----------------------------------------------- */

enum kinet_cq_flags {
	/* Never report an overrun (ConnectX's "overrun ignore", rdma-core's
	 * IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN): CQEs are written whatever the
	 * consumer index in the doorbell record says, over unconsumed ones if
	 * the consumer falls behind.  For consumers that bound their
	 * outstanding completions themselves and never publish a consumer
	 * index, such as GPUNetIO device code (docs/GPUNETIO.md). */
	KINET_CQ_IGNORE_OVERRUN = 1u << 0,
};

struct kinet_cq_attr {
	uint32_t size;	/* sizeof(struct kinet_cq_attr), or 0 */
	uint32_t depth; /* CQEs, rounded up to a power of two */
	uint32_t flags; /* enum kinet_cq_flags */
};
/* Fills attr with the defaults: its size, 512 CQEs (a send CQ for a QP of
 * the default 256 send basic blocks, exported), no flags. */
KINET_API void kinet_cq_attr_init(struct kinet_cq_attr *attr);
KINET_API int kinet_cq_create(struct kinet_ctx *ctx, const struct kinet_cq_attr *attr, struct kinet_cq **cq);
KINET_API int kinet_cq_destroy(struct kinet_cq *cq);
KINET_API uint32_t kinet_cq_depth(const struct kinet_cq *cq);
/* The CQ's number (24 bits, unique among the context's CQs), which WAIT
 * WQEs name (KINET_WQE_OP_WAIT in wire.h). */
KINET_API uint32_t kinet_cq_num(const struct kinet_cq *cq);

enum kinet_wc_opcode {
	KINET_WC_SEND,
	KINET_WC_RDMA_WRITE,
	KINET_WC_RDMA_READ,
	KINET_WC_COMP_SWAP,
	KINET_WC_FETCH_ADD,
	KINET_WC_NOP,
	KINET_WC_RECV,
	KINET_WC_RECV_RDMA_WITH_IMM,
};

enum kinet_wc_flags {
	KINET_WC_WITH_IMM = 1u << 0,
};

/* A completion decoded from a CQE (as struct ibv_wc). */
struct kinet_wc {
	uint64_t wr_id;
	int status; /* 0, or the syndrome (enum kinet_cqe_syndrome, kinet/syndrome.h) */
	uint8_t vendor_err;
	enum kinet_wc_opcode opcode;
	uint32_t byte_len;
	uint32_t imm_data; /* host order */
	uint32_t qp_num;
	uint32_t wc_flags;
	uint16_t wqe_counter;
};

/* Polls up to max completions.  Returns the count (0 when none), or
 * -EOVERFLOW once the CQ overran (completions were lost; the CQ and the QPs
 * feeding it are in error), or another negative errno. */
KINET_API int kinet_cq_poll(struct kinet_cq *cq, int max, struct kinet_wc *wc);
/* A completion status (0 or a KINET_SYND_* syndrome) as text, as
 * ibv_wc_status_str(); also names kinet_error.syndrome.  Static strings. */
KINET_API const char *kinet_wc_status_str(int status);

/* ---- queue pairs ------------------------------------------------------ */

enum kinet_db_mode {
	KINET_DB_AUTO = 0,
	KINET_DB_CPU = 1, /* producer index to a host word; engine/CPU rings */
	KINET_DB_GPU = 2, /* doorbell record, then 8-byte UAR doorbell */
	KINET_DB_BF = 3,  /* doorbell record, then 64-byte BlueFlame copy */
};

enum kinet_qp_sharing {
	KINET_SHARE_EXCLUSIVE = 0, /* one thread (or group) at a time */
	KINET_SHARE_CTA = 1,	   /* threads of one block */
	KINET_SHARE_GPU = 2,	   /* any thread of the GPU */
};

enum kinet_qp_state {
	KINET_QPS_RESET,
	KINET_QPS_INIT,
	KINET_QPS_RTR,
	KINET_QPS_RTS,
	KINET_QPS_ERR,
};

struct kinet_qp_attr {
	uint32_t size; /* sizeof(struct kinet_qp_attr), or 0 */
	struct kinet_cq *send_cq;
	struct kinet_cq *recv_cq; /* may equal send_cq; NULL: no receive queue */
	uint32_t sq_depth;	  /* basic blocks, rounded up to a power of two */
	uint32_t rq_depth;	  /* receive WQEs, rounded up to a power of two */
	uint32_t max_recv_sge;	  /* scatter entries per receive WQE */
	uint32_t max_inline;	  /* largest inline payload of a post (device: <= 44 B send, 28 write) */
	enum kinet_db_mode db_mode;
	enum kinet_qp_sharing sharing;
	uint32_t timeout_ms;	 /* bound on retries and on blocking device waits */
	uint32_t rnr_timeout_ms; /* how long a send waits for a receive WQE */
	/* Staged sources (software NIC, exported QPs): device code copies a
	 * write of at most this many bytes from GPU memory into host memory
	 * beside its WQE, so the engine need not fetch it with the copy engine
	 * (docs/device-api/staged-sources.md).  Rounded up to a multiple of 64,
	 * at most KINET_QP_STAGE_MAX; costs sq_depth x stage_bytes of pinned
	 * host memory per exported QP.  0: $KINET_STAGE_BYTES, else 256
	 * ($KINET_STAGE_BYTES=0 turns staging off). */
	uint32_t stage_bytes;
	/* Shared receive queue (kinet_srq_create): the QP's sends and writes
	 * with immediate consume receive WQEs from it, and the QP has no
	 * receive queue of its own (rq_depth and max_recv_sge are ignored,
	 * kinet_qp_post_recv fails); recv_cq, which must be set, still gets
	 * the responder CQEs.  NULL: the QP's own receive queue (or none). */
	struct kinet_srq *srq;
	uint32_t flags; /* KINET_QP_ATTR_* */
};
#define KINET_QP_STAGE_MAX 4096u
enum {
	/* An operation in flight (or posted) when the transport learns that
	 * the peer is gone (its process exited, its connection was reset)
	 * fails with TRANSPORT_RETRY_EXC only after timeout_ms at the head of
	 * the QP, as on a NIC, which learns of a vanished peer only when its
	 * retries run out.  Without it such an operation fails at once.  The
	 * verbs front door sets it: a verbs program may finish while its peer
	 * still has sends in flight to it (ibv_srq_pingpong does), and it
	 * counts on those failing only after the peer's loop is over. */
	KINET_QP_ATTR_PEER_LOSS_AFTER_TIMEOUT = 1u << 0,
};
KINET_API void kinet_qp_attr_init(struct kinet_qp_attr *attr);

/* What a peer needs to connect to a QP (as exchanged out of band). */
#define KINET_QP_INFO_TRANSPORT_BYTES 96
struct kinet_qp_info {
	uint32_t qpn;
	uint32_t flags;
	uint64_t node_id; /* identifies the process/host the QP lives in */
	uint8_t transport[KINET_QP_INFO_TRANSPORT_BYTES];
};

KINET_API int kinet_qp_create(struct kinet_ctx *ctx, const struct kinet_qp_attr *attr, struct kinet_qp **qp);
KINET_API int kinet_qp_destroy(struct kinet_qp *qp);
KINET_API int kinet_qp_pack(const struct kinet_qp *qp, struct kinet_qp_info *info);
/* RESET -> INIT -> RTR -> RTS against the remote QP. */
KINET_API int kinet_qp_connect(struct kinet_qp *qp, const struct kinet_qp_info *remote);
/* Moves the QP to the error state: outstanding work is flushed. */
KINET_API int kinet_qp_set_error(struct kinet_qp *qp);
KINET_API uint32_t kinet_qp_num(const struct kinet_qp *qp);
/* How device code's high-level verbs reach the peer (docs/PEER_PATH.md):
 * through WQEs the provider executes (engine), or with the GPU's own loads,
 * stores and atomics on the peer's mapped memory (peer).  Decided when a QP
 * is both connected and exported, per $KINET_P2P (auto, off, force). */
#define KINET_QP_PATH_API 1
enum kinet_qp_path {
	KINET_QP_PATH_ENGINE = 0,
	KINET_QP_PATH_PEER = 1,
};
KINET_API enum kinet_qp_path kinet_qp_get_path(const struct kinet_qp *qp);
KINET_API const char *kinet_qp_path_name(enum kinet_qp_path path);
KINET_API enum kinet_qp_state kinet_qp_get_state(const struct kinet_qp *qp);
KINET_API enum kinet_db_mode kinet_qp_db_mode(const struct kinet_qp *qp);

/* ---- CPU-side posting (the same WQEs the GPU writes) ------------------ */

enum kinet_wr_opcode {
	KINET_WR_NOP,
	KINET_WR_RDMA_WRITE,
	KINET_WR_RDMA_WRITE_WITH_IMM,
	KINET_WR_SEND,
	KINET_WR_SEND_WITH_IMM,
	KINET_WR_RDMA_READ,
	KINET_WR_ATOMIC_CMP_AND_SWP,
	KINET_WR_ATOMIC_FETCH_AND_ADD,
};

enum kinet_send_flags {
	KINET_SEND_SIGNALED = 1u << 0,
	KINET_SEND_FENCE = 1u << 1,
	KINET_SEND_INLINE = 1u << 2,
	KINET_SEND_SOLICITED = 1u << 3,
};

struct kinet_sge {
	uint64_t addr;
	uint32_t length;
	uint32_t lkey;
};

struct kinet_send_wr {
	uint64_t wr_id;
	enum kinet_wr_opcode opcode;
	unsigned send_flags;
	const struct kinet_sge *sg_list;
	int num_sge;
	uint32_t imm_data; /* host order */
	uint64_t remote_addr;
	uint32_t rkey;
	uint64_t compare_add; /* compare (CS) or add (FA) */
	uint64_t swap;
};

struct kinet_recv_wr {
	uint64_t wr_id;
	const struct kinet_sge *sg_list;
	int num_sge;
};

/* Writes count WQEs and rings the doorbell once, per the QP's mode.
 * On failure nothing of the failing request is posted and *bad (if not NULL)
 * is its index; the requests before it are posted and rung. */
KINET_API int kinet_qp_post_send(struct kinet_qp *qp, const struct kinet_send_wr *wr, int count, int *bad);
KINET_API int kinet_qp_post_recv(struct kinet_qp *qp, const struct kinet_recv_wr *wr, int count, int *bad);
/* Posts a WQE built by the caller (nbb basic blocks, its index field is
 * overwritten with the slot's) and rings the doorbell.  For custom WQEs and
 * for testing the engine's checks on malformed ones. */
KINET_API int kinet_qp_post_wqe(struct kinet_qp *qp, const void *wqe, uint32_t nbb, uint64_t wr_id);

/* ---- shared receive queues ------------------------------------------- */

/* A receive queue several QPs of one context consume from (as
 * ibv_create_srq): a sent message lands in the SRQ's next receive WQE
 * whichever QP it arrives on; its responder CQE goes to that QP's recv_cq
 * and names the QP, the SRQ (srqn) and the SRQ's WQE index (wqe_counter),
 * and kinet_cq_poll reports the wr_id posted with it.  With no receive
 * WQE posted a sender is answered as by an empty receive queue (RNR
 * retries, then RNR_RETRY_EXC_ERR).  A QP moved to the error state
 * flushes nothing from the SRQ: its WQEs belong to the SRQ, as on
 * ConnectX.
 *
 * Lifetime: create the SRQ before the QPs that name it (kinet_qp_attr.srq);
 * kinet_srq_destroy fails with -EBUSY while any QP still names it, so
 * destroy those first (the engine then touches the SRQ no more).
 * kinet_ctx_close destroys what is left.  The software NIC only: other
 * providers return -EOPNOTSUPP from kinet_srq_create. */
struct kinet_srq_attr {
	uint32_t size; /* sizeof(struct kinet_srq_attr), or 0 */
	/* Receive WQEs it can hold at once: at least this many; rounded up
	 * to a power of two minus one (the ring has a power of two of slots
	 * and one of them always stays free, as rdma-core's mlx5 provider
	 * lays an SRQ out: kinet_srq_rings().depth is the ring's). */
	uint32_t depth;
	uint32_t max_sge; /* scatter entries per receive WQE, 1..16 */
};
/* Fills attr with the defaults: its size, depth 255 (a ring of 256),
 * max_sge 1. */
KINET_API void kinet_srq_attr_init(struct kinet_srq_attr *attr);
/* 0, -EINVAL, -ENOMEM, or -EOPNOTSUPP where the provider has no SRQs. */
KINET_API int kinet_srq_create(struct kinet_ctx *ctx, const struct kinet_srq_attr *attr,
			       struct kinet_srq **srq);
/* 0, or -EBUSY (nothing done) while a QP still uses it. */
KINET_API int kinet_srq_destroy(struct kinet_srq *srq);
/* As kinet_qp_post_recv: count receive WQEs and one doorbell record
 * update; -ENOMEM once the SRQ holds as many as it can (a slot is free
 * again once the completion of its receive is polled with kinet_cq_poll),
 * -EINVAL for a bad request; *bad (if not NULL) is the index of the one
 * not posted, those before it are posted. */
KINET_API int kinet_srq_post_recv(struct kinet_srq *srq, const struct kinet_recv_wr *wr, int count, int *bad);
/* The SRQ's number (24 bits, not 0, unique among the context's SRQs), as
 * the CQEs of its receives carry it. */
KINET_API uint32_t kinet_srq_num(const struct kinet_srq *srq);
/* Receive WQEs posted (per the doorbell record) and not yet consumed by an
 * incoming message: what an SRQ limit event (IBV_EVENT_SRQ_LIMIT_REACHED)
 * is decided on.  A snapshot. */
KINET_API uint32_t kinet_srq_outstanding(const struct kinet_srq *srq);

/* The SRQ's ring as ConnectX lays it out (mlx5dv_srq), for programs that
 * post receive WQEs themselves as rdma-core's mlx5 provider does: depth
 * WQEs of stride bytes (a power of two, >= 32), each a
 * struct kinet_wqe_srq_next_seg (mlx5_wqe_srq_next_seg) then up to max_sge
 * struct kinet_wqe_data_seg, ended by one with KINET_INVALID_LKEY when
 * fewer are used.  The WQEs form a linked list through next_wqe_index,
 * made cyclic at creation (WQE i names (i + 1) % depth); the NIC consumes
 * them in list order from WQE 0 on.  dbrec[0] is the big-endian count of
 * WQEs posted (its low 16 bits count), written after the WQEs.  head and
 * tail are those of the host's free list (mlx5dv_srq's): post at head;
 * the tail slot stays free.  Post through kinet_srq_post_recv or by hand,
 * not both: each keeps its own count, and kinet_cq_poll gives wr_id 0 for
 * (and does not recycle) WQEs it did not post. */
struct kinet_srq_rings {
	void *buf;		  /* host address, mapped for the GPU */
	volatile uint32_t *dbrec; /* host address */
	uint32_t stride;
	uint32_t depth;
	uint32_t head;
	uint32_t tail;
};
KINET_API int kinet_srq_rings(struct kinet_srq *srq, struct kinet_srq_rings *rings);

/* ---- export to the device API ---------------------------------------- */

/* Descriptors in GPU memory (host memory on a build or context without a
 * GPU, for host emulation).  Freed with the QP/CQ. */
KINET_API int kinet_qp_export(struct kinet_qp *qp, struct kinet_dev_qp **dev_qp);
KINET_API int kinet_cq_export(struct kinet_cq *cq, struct kinet_dev_cq **dev_cq);

#ifdef __cplusplus
}
#endif

#endif /* KINET_KINET_H */
