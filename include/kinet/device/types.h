/*
 * Device descriptors: what kinet_qp_export()/kinet_cq_export() place in GPU
 * memory (host memory under host emulation).  Plain C, shared by the host
 * library, CUDA device code and the host-emulated device API.
 *
 * Pointers are device-usable: rings, doorbell records, the CPU doorbell word,
 * the UAR doorbell and the BlueFlame window are host-pinned memory mapped
 * into the GPU for the software NIC (MMIO on ConnectX).  The counters below
 * them live in the descriptor itself and are only touched by device code.
 */
#ifndef KINET_DEVICE_TYPES_H
#define KINET_DEVICE_TYPES_H

#include <stdint.h>

#include "kinet/wire.h"

#ifdef __cplusplus
extern "C" {
#endif

/* First device-side error of a context; host-mapped so the host reads it
 * with kinet_ctx_last_error().  Device code claims it with a CAS on
 * `claimed` (0 -> 1), fills the fields, then sets `valid` with a release. */
struct kinet_dev_error {
	uint32_t claimed;
	uint32_t valid;
	int32_t status; /* negative errno */
	uint32_t qpn;
	uint32_t syndrome;
	uint32_t opcode;
	uint32_t wqe_counter;
	uint32_t pad;
};

struct kinet_dev_peer;

struct kinet_dev_cq {
	struct kinet_cqe64 *cqes; /* ring of 2^log_depth CQEs */
	uint32_t *dbrec;	  /* [KINET_CQ_DBR_CI]: big-endian 24-bit ci */
	uint32_t log_depth;
	uint32_t mask;
	/* device state */
	uint64_t ci;	    /* CQEs consumed */
	uint32_t poll_lock; /* one poller at a time in the high-level API */
	uint32_t cqn;	    /* kinet_cq_num(): what WAIT WQEs name */
	/* Added by the device API (zero at export is right: it only makes the
	 * first publication come early).  The consumer index last written to
	 * dbrec; kinet_dev_cq_consume publishes lazily (docs/device-api/performance.md). */
	uint64_t ci_published;
	/* The NIC's completion word (KINET_COMP_* below; host memory), or
	 * NULL; comp_data is the KINET_COMP_DATA count the high-level poller
	 * last consumed up to (device state). */
	uint64_t *comp_word;
	uint32_t comp_data;
	uint32_t pad;
};

struct kinet_dev_qp {
	/* send queue */
	uint8_t *sq; /* 2^sq_log_depth basic blocks of 64 B */
	uint32_t sq_mask;
	uint32_t sq_log_depth;
	uint32_t qpn;
	uint32_t db_mode;    /* enum kinet_db_mode, never AUTO here */
	uint32_t sharing;    /* enum kinet_qp_sharing */
	uint32_t max_inline; /* the QP's max_inline, at most 44 (one BB; writes: 28) */
	uint32_t *dbrec;     /* [KINET_DBR_RECV], [KINET_DBR_SEND], big-endian */
	uint64_t *db_cpu_pi; /* KINET_DB_CPU: 64-bit producer index, host word */
	uint64_t *uar_db;    /* KINET_DB_GPU: 8-byte doorbell register */
	uint64_t *bf;	     /* KINET_DB_BF: 64-byte BlueFlame window */
	uint64_t timeout_ns; /* bound on every blocking device call */

	/* receive queue (rq == NULL when the QP has none) */
	uint8_t *rq;
	uint32_t rq_mask;
	uint32_t rq_stride; /* bytes per receive WQE, power of two */
	uint32_t rq_max_sge;
	uint32_t pad0;

	struct kinet_dev_cq *send_cq; /* exclusive to this QP */
	struct kinet_dev_cq *recv_cq;
	struct kinet_dev_error *err; /* the context's record */

	/* device state: 64-bit counters of basic blocks / receive WQEs */
	uint64_t sq_reserved; /* handed out to posters */
	uint64_t sq_ready;    /* written and rung, in order */
	uint64_t sq_done;     /* known complete from CQEs */
	uint64_t rq_reserved;
	uint64_t rq_ready;
	uint64_t rq_done;
	uint32_t sq_error; /* sticky: syndrome of the first error CQE, +0x100 */
	uint32_t rq_error;
	uint32_t db_lock; /* serialises doorbells of a shared QP */
	uint32_t pad1;

	/* Added by the device API (zero at export is right for the first two;
	 * the export fills the scratch buffer). */
	uint64_t sq_error_idx; /* BB index of the first error CQE, valid once sq_error != 0 */
	uint64_t rq_error_idx; /* receive WQE index of the first error CQE */
	/* Registered local buffer (>= 8 bytes, LOCAL_WRITE, lkey scratch_lkey)
	 * that takes the unwanted old value of non-fetching atomics (signal,
	 * put_signal).  kinet_qp_export always fills it (a 64-byte host
	 * buffer); 0 when none: then those calls return -EINVAL. */
	uint64_t scratch;
	uint32_t scratch_lkey;
	uint32_t pad2;

	/* Peer path (docs/PEER_PATH.md): the memory windows of this QP's two
	 * ends when device code can reach the peer's memory with its own loads
	 * and stores (GPUs of one host, or host-mapped memory); NULL for a QP
	 * that only posts WQEs.  Set by the host at connect or export. */
	struct kinet_dev_peer *peer;
	/* The first KINET_DEV_PEER_HOT_KEYS keys of the local [0] and remote
	 * [1] tables, kept equal to them by the host: read with the fields
	 * above, in one round trip, they spare a verb the one to the table.
	 * In a 128-byte line of their own (offset 256), not the counters':
	 * every thread posting on a shared QP reads both lines, and one L2
	 * line serves a bounded number of requests per clock. */
	uint8_t pad3[32];
	uint32_t peer_key[2][4];
	/* The rest of peer_key's line: sq_signaled below is written by posters. */
	uint8_t pad4[96];

	/* Completion moderation (high level): a WQE asks for a CQE when its
	 * index + 1 is a multiple of sq_signal_every (a power of two; 1: every
	 * WQE), when it ends a multi-WQE post, when it returns data, or when
	 * the queue was idle as it was posted.  sq_signaled: index + 1 of the
	 * last committed WQE that asked (device state); a wait for a ticket
	 * past it first posts a signalled NOP. */
	uint32_t sq_signal_every;
	uint32_t pad5;
	uint64_t sq_signaled;
	/* Shared QPs (CTA, GPU): sq_marks[i & sq_mask] = end index of the post
	 * that starts at i, set once its WQEs are written (GPU memory, depth
	 * entries, device state); whoever holds db_lock rings once for every
	 * consecutive written post (kinet_dev_sq_commit).  NULL: in-order
	 * commit, each poster ringing for itself. */
	uint64_t *sq_marks;
	/* Staged sources (impl/stage.cuh, software NIC): host memory of
	 * stage_bytes per send-queue BB, or NULL.  A write of 1..stage_bytes
	 * whose lkey has every bit of stage_key set is copied by the poster
	 * into the slot of its WQE's first BB (opmod KINET_WQE_OPMOD_STAGED). */
	uint8_t *stage;
	uint32_t stage_bytes;
	uint32_t stage_key;
};

#define KINET_DEV_PEER_HOT_KEYS 4

/* Windows a peer-path QP may touch directly, up to KINET_DEV_PEER_WINDOWS
 * per side.  A slot is written once (fields, then key with a release) and
 * never reused: deregistration only zeroes its key, which device code reads
 * coherently (L2), while the other fields may come from any cache.  A key
 * that has no slot, a range or right a window lacks: the operation goes to
 * the engine, which performs it or reports the error exactly as it does
 * for any WQE. */
#define KINET_DEV_PEER_WINDOWS 32

struct kinet_dev_window {
	uint64_t addr;	 /* registered start, in the owner's address space */
	uint64_t length; /* registered bytes */
	uint64_t delta;	 /* device-usable pointer = address + delta */
	uint32_t access; /* enum kinet_access bits usable through the window */
	uint32_t live;	 /* 1 in every filled slot: a record read half-written fails */
};

struct kinet_dev_window_table {
	uint32_t count; /* slots ever used (only grows) */
	uint32_t pad[3];
	uint32_t key[KINET_DEV_PEER_WINDOWS]; /* 0: empty or revoked */
	struct kinet_dev_window win[KINET_DEV_PEER_WINDOWS];
};

struct kinet_dev_peer {
	struct kinet_dev_window_table local;  /* the initiator's own regions (lkeys) */
	struct kinet_dev_window_table remote; /* the target's regions (rkeys), mapped */
};

/* The software NIC's completion word of a CQ (kinet_dev_cq.comp_word,
 * host memory, 8-byte aligned): rewritten by the engine after every CQE it
 * writes (release, after the CQE), so one 8-byte read tells device code
 * how far the CQ went and whether it may skip reading the CQEs.
 *   bits  0..31  CQEs written (mod 2^32)
 *   bits 32..47  wqe_counter of the last requester CQE written
 *   bits 48..61  CQEs written that may hand data to the consumer (all but
 *                good requester CQEs of writes and sends), mod 2^14: when
 *                this moved, the consumer takes an acquire fence
 *   bit  63      sticky: an error CQE was written (the consumer then reads
 *                the CQEs themselves to find the first error)
 * NULL on a NIC that has no such word (ConnectX). */
#define KINET_COMP_COUNT(w) ((uint32_t)(w))
#define KINET_COMP_WQE_COUNTER(w) ((uint16_t)((w) >> 32))
#define KINET_COMP_DATA(w) ((uint32_t)((w) >> 48) & 0x3fffu)
#define KINET_COMP_DATA_MASK 0x3fffu
#define KINET_COMP_ERROR (1ull << 63)

/* Offsets in the software NIC's UAR page (as the mlx5 BlueFlame register:
 * the doorbell is the first 8 bytes of the BF buffer at 0x800). */
#define KINET_UAR_DB_OFFSET 0x800u
#define KINET_UAR_BF_SIZE 64u

#ifdef __cplusplus
}
#endif

#endif /* KINET_DEVICE_TYPES_H */
