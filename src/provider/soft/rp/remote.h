/*
 * The remote protocol: RC operations between the engines of two processes,
 * carried as messages by a carrier (carrier.h).  Shared by the `node` and
 * `ofi` transports; private to src/provider/soft (core reaches it through provider.c).
 *
 * Requester (remote_req.c, on the QP's engine thread): one request message
 * per operation, or per fragment of RP_FRAG bytes of a larger write/send.
 * Target (remote_tgt.c, on the target context's engine thread 0): checks,
 * places, answers one response per operation (per fragment of read data),
 * except that consecutive writes share one (remote_tgt.c).
 * All state is under rp_state.lock; lock order: the context's MR table read
 * lock, then rp_state.lock, then the carrier's own locks.
 * Over the node carrier, GPU memory of the requester is reached by the
 * target through CUDA IPC instead of being staged (cuda_ipc.c).
 */
#ifndef KINET_REMOTE_H
#define KINET_REMOTE_H

#include "carrier/carrier.h"
#include "engine/sgl.h"
#include "transport.h"

#define RP_MAGIC 0x50524e4bu /* "KNRP" read as little-endian */
#define RP_VERSION 5
#define RP_FRAG (64u * 1024u) /* payload bytes per message */
#define RP_WINDOW 64u	      /* outstanding operations per QP */
/* Writes answered by one response at most (remote_tgt.c, "Acknowledgements"). */
#define RP_ACK_EVERY 16u
/* What a target holds for other processes (requests waiting, answers the
 * carrier had no room for), in bytes: per peer endpoint and in all.  A
 * request beyond them is not held: one for a connected QP fails its
 * channel (the requester's QP gets an error completion), any other is
 * dropped (remote_tgt.c, "Admission and bounds"). */
#define RP_HOLD_PEER_MAX (32u << 20)
#define RP_HOLD_TOTAL_MAX (128u << 20)
/* Answers queued for a peer above which its reads wait (held) instead of
 * producing more data: a peer that does not read its answers stops being
 * served, it does not grow our memory. */
#define RP_OUT_BUSY (1u << 20)

/* RP_IPC_PROBE/RP_IPC_ACK: can the target open the requester's CUDA IPC
 * handle (cuda_ipc.c)?  Outside the order of requests. */
/* RP_PING/RP_PONG: header only.  While an operation waits at the target
 * (for a receive, say) the requester pings now and then and the target
 * answers; a target silent for the QP's timeout is taken for dead, as an
 * RC requester whose retries go unanswered.  Carriers that cannot tell a
 * dead peer otherwise (ofi) rely on it. */
/* RP_PEER_*: the peer path across processes (peer_path.c).  HELLO asks a
 * target QP's context for its windows; WINDOW gives one (header only with
 * RP_FLAG_LAST: the first table is complete, syndrome != 0: refused);
 * REVOKE withdraws one (rkey) or all (rkey 0); every WINDOW and REVOKE
 * carries a token (seq) that the initiator returns in an RP_PEER_ACK once
 * its device table holds the change. */
enum {
	RP_REQ = 1,
	RP_RESP = 2,
	RP_IPC_PROBE = 3,
	RP_IPC_ACK = 4,
	RP_PING = 5,
	RP_PONG = 6,
	RP_PEER_HELLO = 7,
	RP_PEER_WINDOW = 8,
	RP_PEER_REVOKE = 9,
	RP_PEER_ACK = 10,
};
#define RP_FLAG_LAST 0x01u
/* Request: the payload is a struct rp_ipc naming the requester's buffer,
 * which the target reaches through CUDA IPC (data not in the message).
 * Response to such a read: the data was placed there. */
#define RP_FLAG_IPC 0x02u

/* Message header, host byte order (little-endian hosts only: the magic is
 * checked, so a mismatched peer is dropped rather than misread).
 *
 * token is the receiving context's token and src_token the sender's
 * (rp_state.token): a context gives its token to peers in kinet_qp_info
 * (the QP-information exchange a job does at bootstrap) and drops every
 * message that does not carry it; an answer carries back the src_token of
 * what it answers.  Not cryptography: a guard against strays (an endpoint
 * of a finished job that reused the address, a process that only knows
 * the address) and cross-job traffic, which never reach the protocol. */
struct rp_msg {
	uint32_t magic;
	uint8_t version;
	uint8_t type;
	uint8_t opcode; /* WQE opcode of the operation */
	uint8_t flags;
	uint32_t src_qpn;  /* sender's QP */
	uint32_t dst_qpn;  /* receiver's QP */
	uint64_t src_node; /* sender context's node id */
	uint64_t token;	   /* the receiver's */
	uint64_t src_token;
	uint64_t seq; /* per requester QP, from 1, increasing */
	uint64_t raddr;
	uint64_t compare;
	uint64_t swap_add;
	uint32_t rkey;
	uint32_t imm_be;
	uint32_t length;	 /* of the whole operation */
	uint32_t offset;	 /* of this fragment's payload */
	uint32_t frag_len;	 /* payload bytes following the header */
	uint32_t timeout_ms;	 /* requester's QP timeout */
	uint32_t rnr_timeout_ms; /* requester's RNR timeout */
	uint8_t syndrome;	 /* responses: 0 or the requester's error */
	uint8_t pad[3];
};
_Static_assert(sizeof(struct rp_msg) + RP_FRAG <= KINET_CARRIER_MAX_MSG, "fragment too large");

/* Payload of RP_FLAG_IPC requests and of probes and their answers. */
#define RP_IPC_HANDLE_BYTES 64
struct rp_ipc {
	uint8_t handle[RP_IPC_HANDLE_BYTES]; /* cudaIpcMemHandle_t of the allocation */
	uint64_t offset;		     /* requests: the local buffer's offset in it */
	uint64_t size;			     /* the allocation's size */
};

/* Requester: what the target of a QP answered about one allocation. */
enum { RP_IPC_PROBING = 0, RP_IPC_YES = 1, RP_IPC_NO = 2 };
struct rp_ipc_peer {
	struct rp_ipc_peer *next;
	uint8_t handle[RP_IPC_HANDLE_BYTES];
	int state;
};

/* Target: an allocation of a requester process, mapped here. */
struct rp_ipc_map {
	struct rp_ipc_map *next;
	uint64_t src_node; /* the requester context that first named it */
	uint8_t handle[RP_IPC_HANDLE_BYTES];
	uint8_t *base;
	uint64_t size;
};

/* Payload of RP_PEER_WINDOW: a registered region of the target context. */
struct rp_peer_window {
	uint64_t addr; /* in the target's address space */
	uint64_t length;
	uint64_t alloc_base; /* GPU memory: the allocation holding it (target's address) */
	uint64_t alloc_size;
	uint32_t key;
	uint32_t access;
	int32_t type;			     /* enum kinet_mem_type */
	int32_t cuda_device;		     /* the target's ordinal (meaningful in one process) */
	uint8_t handle[RP_IPC_HANDLE_BYTES]; /* GPU memory: cudaIpcMemHandle_t */
};

/* Target: an initiator QP that was given this context's windows. */
struct rp_peer_sub {
	struct rp_peer_sub *next;
	uint64_t node;	     /* initiator context */
	uint32_t qpn;	     /* initiator QP */
	uint32_t target_qpn; /* the QP of this context it is connected to */
	struct rp_carrier *car;
	struct kinet_carrier_peer *peer;
	uint32_t timeout_ms; /* the smaller of the initiator QP's and the target QP's */
	uint64_t token;	     /* the initiator context's (rp_msg.token) */
	uint64_t sent;	     /* last token sent */
	uint64_t acked;	     /* last token acknowledged (they come in order) */
	bool gone;	     /* withdrawn, or its process died */
};

enum rp_kind { RP_NODE = 0, RP_OFI = 1, RP_NKINDS };

struct rp_carrier {
	const struct kinet_carrier_ops *ops;
	struct kinet_carrier *c;
	bool flushes; /* c is open and has a flush op; set with release, read without rs->lock */
	bool tried;
	bool reported; /* its failure was logged as an error */
	int rc;
};

struct rp_slot {
	uint64_t seq; /* 0: free */
	bool done;
	uint8_t syndrome;
	uint8_t opcode;
	uint32_t length;
	uint32_t received; /* read data placed */
	uint32_t limit_ms;
	uint64_t head_since_ns;
	bool ipc;	/* sent as an RP_FLAG_IPC request */
	bool peer_lost; /* the carrier could not reach the peer */
	int nsge;
	struct kinet_sgl_entry sge[KINET_MAX_SGE];
};

/* Per connected QP (kinet_sqp(qp)->transport_priv). */
struct rp_qp {
	struct kinet_qp *qp;
	struct rp_carrier *car;
	struct kinet_carrier_peer *peer;
	uint64_t next_seq;
	uint64_t oldest;	/* lowest seq not yet retired */
	uint64_t last_ping_ns;	/* RP_PING sent while waiting on the peer */
	uint64_t last_heard_ns; /* a response or RP_PONG came from the peer */
	/* A write/send whose later fragments met a full carrier. */
	bool tx_active;
	uint64_t tx_seq;
	uint32_t tx_off;
	struct rp_msg tx_hdr;
	struct rp_slot slots[RP_WINDOW];
	uint8_t stage[RP_FRAG];	 /* GPU data on its way out */
	struct rp_ipc_peer *ipc; /* allocations probed at the target */
	bool peer_windows;	 /* the target gave windows (peer_path.c) */
	uint64_t peer_checked_ns;
	uint64_t peer_token; /* the target context's (rp_msg.token) */
	struct rp_qp *next;
};

struct rp_outq;

/* A message the target keeps: a request waiting (RNR, QP not ready, its
 * peer not reading answers) or a response the carrier had no room for.
 * Charged to the peer it came from or goes to (owner) until freed.  A held
 * request's msg.timeout_ms and rnr_timeout_ms are the target's bounds
 * (the smaller of the sender's and the target QP's). */
struct rp_held {
	struct rp_held *next;
	struct rp_outq *owner;
	uint64_t since_ns;
	size_t len;
	struct rp_msg msg; /* payload follows */
};

/* Target side: requests from one requester QP, in order. */
struct rp_chan {
	uint64_t src_node;
	uint32_t src_qpn;
	uint32_t dst_qpn; /* the QP of this context it addresses */
	struct rp_carrier *car;
	struct kinet_carrier_peer *peer;
	struct rp_held *head, *tail;
	bool failed; /* answered an error: later requests are discarded */
	/* The write or send being assembled from fragments: its length (from
	 * the first fragment, which the checks were made for), the bytes
	 * placed so far, and the receive it consumed, if any. */
	uint64_t cur_seq;
	uint32_t cur_len;
	uint32_t cur_placed;
	uint8_t cur_opcode;
	bool cur_recv;
	uint16_t cur_index;
	/* A read whose answers met a busy peer: the offset to go on from. */
	uint64_t read_seq;
	uint32_t read_off;
	int ndst;
	struct kinet_sgl_entry dst[KINET_MAX_SGE];
	struct rp_outq *owner; /* the peer its memory is charged to */
	struct rp_chan *next;
	/* Writes done and not yet answered: the latest one's request, which
	 * answered answers them all; on rp_state.acks while ack_count > 0. */
	struct rp_msg ack;
	uint32_t ack_count;
	struct rp_chan *ack_next;
};

/* Per peer endpoint: responses waiting for carrier room, and the bytes
 * held for it (those responses and its held requests). */
struct rp_outq {
	struct rp_carrier *car;
	struct kinet_carrier_peer *peer;
	struct rp_held *head, *tail;
	size_t out_bytes;
	size_t held_bytes;
	struct rp_outq *next;
};

/* Why a message was dropped unread (counted in rp_state.drops). */
enum rp_drop {
	RP_DROP_GARBLED, /* not a message of this protocol and version */
	RP_DROP_TOKEN,	 /* not from a member of the job (rp_msg.token) */
	RP_DROP_NO_QP,	 /* for a QP that does not exist here */
	RP_DROP_SENDER,	 /* from a QP the target is not connected to */
	RP_DROP_LIMIT,	 /* over RP_HOLD_PEER_MAX / RP_HOLD_TOTAL_MAX */
	RP_DROP_EXPIRED, /* held past the target's timeout */
	RP_DROP_NOMEM,	 /* no memory to hold it */
	RP_DROP_REASONS,
};

struct rp_state {
	struct kinet_ctx *ctx;
	pthread_mutex_t lock;
	struct rp_carrier car[RP_NKINDS];
	struct rp_qp *qps;
	struct rp_chan *chans;
	struct rp_chan *acks; /* target: channels owing an answer to writes */
	struct rp_outq *outqs;
	struct rp_ipc_map *ipc_maps;   /* target: requesters' allocations opened */
	int ipc_mode;		       /* 0: not read yet, 1: $KINET_NODE_IPC on, -1: off */
	int ipc_logged;		       /* 1: the fallback to staging, 2: the direct path logged */
	struct rp_peer_sub *peer_subs; /* target: initiators given windows */
	bool peer_host_logged;
	uint64_t token;	   /* this context's (rp_msg.token); never 0 */
	size_t held_bytes; /* all rp_outq.held_bytes */
	uint64_t drops[RP_DROP_REASONS];
	uint8_t stage[RP_FRAG]; /* target: GPU data on its way out */
};

/* msg.c: the bottom of the protocol's files, which they all use and which
 * uses none of them. */
struct rp_qp *rp_find_qp(struct rp_state *rs, uint32_t qpn);
/* Whether m comes from the QP p is connected to (its QPN and context). */
static inline bool rp_from_peer(const struct rp_qp *p, const struct rp_msg *m)
{
	return p->qp->remote.qpn == m->src_qpn && p->qp->remote.node_id == m->src_node;
}
/* r: the header of a message of type answering req (addresses swapped,
 * req's sender token as the receiver's); the rest is req's. */
void rp_msg_reply(struct rp_msg *r, const struct rp_state *rs, const struct rp_msg *req, uint8_t type);
/* Counts a dropped message and logs it, the first and then each time the
 * count of that reason doubles (rs->lock held). */
void rp_drop(struct rp_state *rs, enum rp_drop why, const struct rp_msg *m);
/* A new header of type with the tokens and addresses of a message from
 * this context's QP src_qpn to QP dst_qpn of the context whose token is
 * token. */
void rp_msg_init(struct rp_msg *m, const struct rp_state *rs, uint8_t type, uint32_t src_qpn,
		 uint32_t dst_qpn, uint64_t token);
/* Test access (white-box tests): the drop counters and this context's
 * token, under rs->lock; -ENOENT when the context has no remote state. */
int kinet_remote_stats(struct kinet_ctx *ctx, uint64_t drops[RP_DROP_REASONS], uint64_t *token,
		       size_t *held_bytes);
/* A copy of m (and its m->frag_len bytes of payload) charged to q, or NULL
 * with *why (over the bounds, out of memory). */
struct rp_held *rp_hold(struct rp_state *rs, struct rp_outq *q, const struct rp_msg *m,
			const uint8_t *payload, enum rp_drop *why);
void rp_held_free(struct rp_state *rs, struct rp_held *h);
/* The answers' queue of a peer endpoint, made on first use; NULL when out
 * of memory. */
struct rp_outq *rp_outq_of(struct rp_state *rs, struct rp_carrier *car, struct kinet_carrier_peer *peer);
/* Sends a message (header + n bytes of data), or queues it behind earlier
 * ones the carrier had no room for. */
void rp_send_queued(struct rp_state *rs, struct rp_carrier *car, struct kinet_carrier_peer *peer,
		    const struct rp_msg *m, const void *data, uint32_t n);

/* A handler of one kind of message (rs->lock and the MR table read lock
 * held): car and peer say where m came from, payload holds m->frag_len
 * bytes.  remote.c calls them through a table indexed by m->type, so the
 * files that handle messages never call back into the one that receives
 * them. */
typedef void rp_handler_fn(struct rp_state *rs, struct rp_carrier *car, struct kinet_carrier_peer *peer,
			   const struct rp_msg *m, const uint8_t *payload);

/* remote.c: the context's protocol state, its carriers and transports. */
struct rp_state *rp_state_get(struct kinet_ctx *ctx);
/* The carrier of that kind, opened on first use (rs->lock held); NULL when
 * it cannot be opened.  asked: something needs it (a connect, a forced
 * $KINET_TRANSPORT), so failing is an error; else it opens on a guess and
 * its failures are logged at info level. */
struct rp_carrier *rp_carrier_get(struct rp_state *rs, enum rp_kind kind, bool asked);

/* remote_req.c */
void rp_execute(struct kinet_engine_thread *t, struct kinet_qp *qp, struct kinet_op *op,
		struct kinet_exec_result *res);
int rp_op_done(struct kinet_qp *qp, uint64_t token, uint8_t *syndrome);
rp_handler_fn rp_on_response, rp_on_pong;

/* remote_tgt.c */
rp_handler_fn rp_on_request, rp_on_ping;
int rp_target_progress(struct rp_state *rs);
/* Sends the answers owed to writes (remote_tgt.c, "Acknowledgements"). */
void rp_target_flush_acks(struct rp_state *rs);
void rp_target_free(struct rp_state *rs);
/* Forgets the channels addressing QP qpn of this context, which is being
 * destroyed (rs->lock held): a context that outlives many peers' QPs does
 * not keep state for each of them. */
void rp_target_qp_gone(struct rp_state *rs, uint32_t qpn);

/* cuda_ipc.c: GPU memory of the requester reached by the target through
 * CUDA IPC (node carrier only); everything else is staged. */
/* Requester (rs->lock and the MR table read lock held): true when op goes
 * as an RP_FLAG_IPC request, *ipc filled.  May send a probe. */
bool rp_ipc_prepare(struct rp_state *rs, struct rp_qp *p, const struct kinet_op *op, struct rp_ipc *ipc);
rp_handler_fn rp_ipc_on_probe, rp_ipc_on_ack;
/* Target: the requester's buffer of an RP_FLAG_IPC request (m->length
 * bytes) in this process, or NULL when it cannot be reached. */
uint8_t *rp_ipc_source(struct rp_state *rs, const struct rp_carrier *car, const struct rp_msg *m,
		       const uint8_t *payload);
void rp_ipc_qp_free(struct rp_qp *p);
/* The CUDA IPC handle of mr's allocation (mr->ipc_*), made once; false
 * when the memory cannot be exported. */
bool rp_ipc_export(struct kinet_mr *mr);
/* This process's mapping of another process's allocation (opened once per
 * context, closed at context close), or NULL when it cannot be opened. */
struct rp_ipc_map *rp_ipc_map_get(struct rp_state *rs, uint64_t src_node, const struct rp_ipc *ipc);
/* Closes the mappings (context close, engine stopped). */
void rp_ipc_close(struct rp_state *rs);

/* peer_path.c: the peer path's windows across processes (rs->lock held
 * in the handlers, MR table read lock too). */
int rp_peer_hello(struct kinet_qp *qp);
rp_handler_fn rp_peer_on_hello, rp_peer_on_window, rp_peer_on_revoke, rp_peer_on_ack;
/* Initiator: windows of a target whose process died are revoked. */
void rp_peer_progress(struct rp_state *rs);
void rp_peer_free(struct rp_state *rs);

/* Hooks for core (qp.c, ctx.c). */
extern const struct kinet_transport_ops kinet_transport_node;
extern const struct kinet_transport_ops kinet_transport_ofi;
/* Fills info->transport (layout in remote.c); opens carriers as needed. */
void kinet_remote_fill_info(struct kinet_ctx *ctx, struct kinet_qp_info *info);
/* The transport for remote, per $KINET_TRANSPORT; NULL with a logged
 * reason when none can reach it. */
const struct kinet_transport_ops *kinet_remote_choose(struct kinet_ctx *ctx,
						      const struct kinet_qp_info *remote);
/* Closes the carriers (after the engine stopped and the QPs are gone). */
void kinet_remote_close(struct kinet_ctx *ctx);
/* Peer path across processes (peer_path.c), for peer.c: a region of ctx
 * registered (add) or being deregistered is given to / withdrawn from
 * every initiator holding ctx's windows; a target QP destroyed (qp) or the
 * context closing (qp NULL) withdraws all of them.  Each waits until every
 * live initiator acknowledged (its device table changed), bounded by that
 * initiator's QP timeout. */
void kinet_remote_peer_publish(struct kinet_mr *mr, bool add);
void kinet_remote_peer_withdraw(struct kinet_ctx *ctx, struct kinet_qp *qp);

#endif /* KINET_REMOTE_H */
