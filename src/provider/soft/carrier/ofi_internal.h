/*
 * The `ofi` carrier (libfabric RDM endpoints), private to src/provider/soft/ofi*.c.
 *
 * Files: ofi.c (ops table, send, progress, peers), ofi_setup.c (provider
 * choice, fabric/domain/endpoint/AV/CQ, memory registration), ofi_rx.c
 * (completions, per-peer ordering).
 *
 * Every message starts with a small carrier header: the sender's random
 * 64-bit id and a per-(sender, receiver) sequence number, so that the
 * receiver delivers in order whatever the provider's ordering, and learns
 * who sent a message without FI_SOURCE: message 0 to a peer also carries the
 * sender's endpoint address.
 */
#ifndef KINET_OFI_INTERNAL_H
#define KINET_OFI_INTERNAL_H

#ifdef KINET_HAVE_OFI

#include <pthread.h>
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>

#include "carrier.h"
#include "ofi_dl.h"

#define OFI_MAGIC 0x6b6e6f32u /* "kno2" (1: before bundles) */
#define OFI_DEFAULT_RX_BUFS 64
#define OFI_DEFAULT_TX_BUFS 64
/* A peer that owes us progress and stays silent this long is gone. */
#define OFI_DEFAULT_PEER_TIMEOUT_MS 10000
/* A peer gets a send with a completion at least this often (ofi_send). */
#define OFI_TRACK_NS 1000000ull
/* Bundles (ofi_tx.c): payload bytes of one by default (KINET_OFI_BUNDLE),
 * and a message goes in one only when that many of its size fit. */
#define OFI_DEFAULT_BUNDLE 4096
#define OFI_BUNDLE_ITEMS_MIN 4
/* Header flag: the payload is records of a 32-bit length and its bytes. */
#define OFI_FLAG_BUNDLE 0x1u
/* Messages of senders not known yet, or ahead of a gap, kept as copies:
 * in all, per peer, and from unknown senders (orphans, which also expire:
 * message 0 of a real peer, which names it, is never that far behind). */
#define OFI_MAX_HELD 1024
#define OFI_MAX_HELD_PEER 256
#define OFI_MAX_ORPHANS 64
#define OFI_ORPHAN_NS 2000000000ull

struct ofi_hdr {
	uint32_t magic;
	uint16_t addr_len; /* > 0 only in message 0: the sender's address follows */
	uint16_t flags;	   /* OFI_FLAG_* */
	uint32_t len;	   /* payload bytes, after header and address */
	uint32_t reserved2;
	uint64_t sender; /* the sending carrier's id */
	uint64_t seq;	 /* per (sender, receiver), from 0 */
};

/* Bytes of one send or receive buffer. */
#define OFI_BUF_SIZE                                                                                         \
	((sizeof(struct ofi_hdr) + KINET_CARRIER_ADDR_MAX + KINET_CARRIER_MAX_MSG + 63u) & ~(size_t)63u)

enum ofi_op_kind { OFI_OP_TX = 1, OFI_OP_RX = 2 };

/* A message ready to deliver (or held until its turn). */
struct ofi_msg {
	struct ofi_msg *next;
	struct kinet_carrier_peer *peer;
	uint64_t sender;
	uint64_t seq;
	uint16_t flags; /* the header's */
	const uint8_t *data;
	size_t len;
	struct ofi_op *rx; /* receive buffer to repost after delivery, or NULL
			    * when the message is a heap copy (data follows) */
	uint64_t held_ns;  /* when it was copied aside */
};

/* Context of a posted send or receive; fi_context2 first (FI_CONTEXT(2)
 * modes). */
struct ofi_op {
	struct fi_context2 fictx;
	enum ofi_op_kind kind;
	struct ofi_op *next;
	struct kinet_carrier_peer *peer; /* tx: destination */
	uint8_t *buf;			 /* OFI_BUF_SIZE bytes inside a pool */
	struct ofi_msg msg;		 /* rx: the message while it waits */
};

struct kinet_carrier_peer {
	uint8_t addr[KINET_CARRIER_ADDR_MAX];
	size_t addr_len;
	fi_addr_t fi_addr;
	int status; /* 0, -ECONNRESET, -EHOSTUNREACH */
	/* liveness (see ofi_check_peers) */
	uint64_t alive_ns;   /* last send completed to it or message from it */
	uint64_t eagain_ns;  /* last fi_send to it that said -FI_EAGAIN */
	uint64_t tracked_ns; /* last send to it with a completion (not injected) */
	bool tx_blocked;     /* the last post to it said -FI_EAGAIN */
	uint64_t busy_since;
	/* send side */
	uint64_t tx_seq;
	uint64_t tx_inflight;
	struct ofi_op *bundle; /* open bundle (ofi_tx.c), or NULL */
	size_t bundle_start;   /* where its records start in the buffer */
	size_t bundle_len;     /* bytes of the buffer used */
	/* receive side */
	uint64_t rx_sender; /* id of the carrier sending to us from addr */
	bool rx_known;
	uint64_t rx_next;
	struct ofi_msg *held; /* out of order, sorted by seq */
	int nheld;
};

/* Pool of buffers registered as one region. */
struct ofi_pool {
	uint8_t *mem;
	size_t size;
	struct fid_mr *mr;
	void *desc;
	struct ofi_op *ops;
	int count;
};

struct kinet_carrier {
	struct kinet_ctx *ctx;
	pthread_mutex_t lock;
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_av *av;
	struct fid_cq *cq;
	struct fid_ep *ep;
	enum fi_cq_format cq_format;
	uint64_t id;
	uint8_t addr[KINET_CARRIER_ADDR_MAX];
	size_t addr_len;

	struct ofi_pool txp, rxp;
	struct ofi_op *tx_free;
	int rx_posted;
	struct ofi_op *rx_repost; /* receive buffers that failed to repost */

	struct kinet_carrier_peer **peers;
	int npeers, peers_cap;
	/* sender id -> peer, open addressing, power-of-two size */
	struct kinet_carrier_peer **by_id;
	uint32_t by_id_size;
	uint32_t by_id_used;

	struct ofi_msg *ready_head, *ready_tail; /* in order, to deliver */
	struct ofi_msg *orphans;		 /* from senders not known yet */
	int nheld;				 /* copies in all lists */
	int norphans;
	uint64_t dropped; /* messages not held (logged as the count doubles) */
	bool delivering;
	uint64_t peer_timeout_ns; /* 0: never declare a silent peer gone */
	size_t inject_max;	  /* messages up to this may go with fi_inject (ofi_tx.c) */
	size_t bundle_max;	  /* payload bytes of a bundle; 0: no bundles */
	int bundles;		  /* peers with an open bundle (read without the lock) */
	uint64_t next_check_ns;
	uint32_t check_calls; /* ofi_check_peers reads the clock every 64th */
};

/* ofi_setup.c */
int ofi_setup(struct kinet_carrier *c);
void ofi_teardown(struct kinet_carrier *c);
/* Posts a receive on op's buffer; 0 or a negative errno (logged). */
int ofi_post_recv(struct kinet_carrier *c, struct ofi_op *op);

/* ofi_tx.c (lock held by the _locked ones) */
int ofi_send(struct kinet_carrier *c, struct kinet_carrier_peer *peer, const struct iovec *iov, int iovcnt);
int ofi_flush(struct kinet_carrier *c);
int ofi_flush_locked(struct kinet_carrier *c);

/* ofi.c */
/* Finds or creates the peer at addr (lock held). */
int ofi_peer_lookup(struct kinet_carrier *c, const void *addr, size_t len, struct kinet_carrier_peer **peer);
int ofi_by_id_put(struct kinet_carrier *c, uint64_t id, struct kinet_carrier_peer *peer);
struct kinet_carrier_peer *ofi_by_id_get(struct kinet_carrier *c, uint64_t id);
void ofi_peer_fail(struct kinet_carrier *c, struct kinet_carrier_peer *peer, int fi_err, const char *why);
/* Declares gone the peers that owe us progress and stayed silent longer
 * than $KINET_OFI_PEER_TIMEOUT_MS (lock held). */
void ofi_check_peers(struct kinet_carrier *c);

/* ofi_rx.c */
/* Reads the CQ (lock held, never blocks): frees completed sends, queues
 * received messages in order.  Returns completions seen or a negative
 * errno. */
int ofi_cq_drain(struct kinet_carrier *c);
/* Returns a delivered message's buffer (repost or free; lock held). */
void ofi_msg_release(struct kinet_carrier *c, struct ofi_msg *m);
void ofi_msgs_free(struct kinet_carrier *c);

#endif /* KINET_HAVE_OFI */
#endif /* KINET_OFI_INTERNAL_H */
