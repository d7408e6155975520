/*
 * Carriers move the messages of the remote protocol (remote.c)
 * between the engines of two processes: `node` over shared memory on one
 * host, `ofi` over libfabric RDM endpoints between hosts.  A carrier is
 * reliable and keeps order per pair of endpoints; it knows nothing of QPs,
 * keys or opcodes.
 *
 * One carrier endpoint per context and kind, opened on first use.  Its
 * progress is driven by the context's engine thread 0 on every pass, and
 * the same thread, which runs the QPs of remote transports, flushes it at
 * the end of its pass.
 */
#ifndef KINET_CARRIER_H
#define KINET_CARRIER_H

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "soft.h"

/* Largest message a carrier must carry (protocol header included); the
 * protocol splits larger transfers. */
#define KINET_CARRIER_MAX_MSG (64u * 1024u + 256u)
/* Bytes of kinet_qp_info.transport a carrier address may use. */
#define KINET_CARRIER_ADDR_MAX 80u

struct kinet_carrier;
struct kinet_carrier_peer;

/* Called by progress() for each message received, in order per peer.  The
 * message is only valid during the call. */
typedef void (*kinet_carrier_deliver_fn)(struct kinet_carrier *carrier, struct kinet_carrier_peer *peer,
					 const void *msg, size_t len, void *arg);

struct kinet_carrier_ops {
	const char *name;
	int (*open)(struct kinet_ctx *ctx, struct kinet_carrier **carrier);
	void (*close)(struct kinet_carrier *carrier);
	/* This endpoint's address, as a peer passes it to peer_get. */
	int (*address)(struct kinet_carrier *carrier, void *addr, size_t *len);
	/* The peer at addr (same pointer for the same address).  Peers live
	 * as long as the carrier. */
	int (*peer_get)(struct kinet_carrier *carrier, const void *addr, size_t len,
			struct kinet_carrier_peer **peer);
	/* Queues one message of at most KINET_CARRIER_MAX_MSG bytes, gathered
	 * from iov.  0, -EAGAIN (full; try again after progress), or
	 * -ECONNRESET/-EHOSTUNREACH (the peer is gone: it will never be
	 * delivered). */
	int (*send)(struct kinet_carrier *carrier, struct kinet_carrier_peer *peer, const struct iovec *iov,
		    int iovcnt);
	/* Receives and delivers what has arrived; returns the number of
	 * messages delivered, or a negative errno. */
	int (*progress)(struct kinet_carrier *carrier, kinet_carrier_deliver_fn deliver, void *arg);
	/* 0 while the peer is believed alive, else -ECONNRESET or
	 * -EHOSTUNREACH (a process that died, an unreachable host). */
	int (*peer_status)(struct kinet_carrier *carrier, struct kinet_carrier_peer *peer);
	/* Sends what send() held back to put several messages in one (NULL:
	 * it holds nothing back; progress() flushes too).  Every engine
	 * thread calls it at the end of its pass, from any thread: 0, or
	 * -EAGAIN when something is left for the next call. */
	int (*flush)(struct kinet_carrier *carrier);
};

extern const struct kinet_carrier_ops kinet_carrier_node;
extern const struct kinet_carrier_ops kinet_carrier_ofi;

#endif /* KINET_CARRIER_H */
