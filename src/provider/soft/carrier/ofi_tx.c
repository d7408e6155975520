/*
 * The ofi carrier's send side.  A message is copied into a bounce buffer
 * of the pool and posted with fi_inject when it is small enough (the
 * buffer is free again at once, no send completion to make and reap) or
 * with fi_send.
 *
 * Bundles: small messages to one peer travel together.  send() appends
 * them, each as a 32-bit length and its bytes (ofi_bundle.h), to the
 * peer's open bundle, one fabric message whose header says
 * OFI_FLAG_BUNDLE, and flush() posts the bundles; engine thread 0 (the
 * remote QPs' thread) calls it at the end of its pass, and progress() at
 * its start.  A pass that runs 64 writes to one peer then
 * sends one fabric message, not 64: over shm a fabric message costs the
 * sender ~400 ns whatever its size up to the inject size, and the
 * receiver a completion.  A message that does not go in a bundle (too
 * large) first posts the open one, so the order per peer is kept; a
 * bundle the provider refuses (-FI_EAGAIN) stays open and is posted by the
 * next flush.  A peer not yet sent to, or whose last post was refused,
 * gets its messages alone until one goes through: a message appended to a
 * bundle is accepted, so its operation's timeout runs, where a refused
 * send is retried by the engine and timed from when it goes out (the
 * first messages to a peer meet the provider's connection set-up).
 */
#ifdef KINET_HAVE_OFI

#include <errno.h>
#include <string.h>

#include "ofi_internal.h"

static struct ofi_op *pool_take(struct kinet_carrier *c)
{
	struct ofi_op *op;

	if (!c->tx_free)
		ofi_cq_drain(c); /* reclaim completed sends */
	if ((op = c->tx_free))
		c->tx_free = op->next;
	return op;
}

static void pool_give(struct kinet_carrier *c, struct ofi_op *op)
{
	op->peer = NULL;
	op->next = c->tx_free;
	c->tx_free = op;
}

/* Writes the header (and, in the first message to p, our address) at the
 * start of buf; returns where the payload starts. */
static size_t put_header(struct kinet_carrier *c, struct kinet_carrier_peer *p, uint8_t *buf, uint16_t flags)
{
	struct ofi_hdr h = {
		.magic = OFI_MAGIC,
		.addr_len = p->tx_seq == 0 ? (uint16_t)c->addr_len : 0,
		.flags = flags,
		.sender = c->id,
		.seq = p->tx_seq,
	};

	memcpy(buf, &h, sizeof(h));
	if (h.addr_len)
		memcpy(buf + sizeof(h), c->addr, h.addr_len);
	return sizeof(h) + h.addr_len;
}

static size_t gather(uint8_t *dst, const struct iovec *iov, int iovcnt)
{
	size_t off = 0;

	for (int i = 0; i < iovcnt; i++) {
		if (iov[i].iov_len)
			memcpy(dst + off, iov[i].iov_base, iov[i].iov_len);
		off += iov[i].iov_len;
	}
	return off;
}

/* Posts the first len bytes of op's buffer (payload bytes from `start`) to
 * p.  0: posted, and op is the pool's again or in flight; -EAGAIN or the
 * peer's status once it failed: op is still the caller's. */
static int post(struct kinet_carrier *c, struct kinet_carrier_peer *p, struct ofi_op *op, size_t start,
		size_t len)
{
	uint32_t payload = (uint32_t)(len - start);
	uint64_t now = kinet_now_ns();
	/* An injected message that cannot be delivered may report nothing
	 * (nor whose it was), so a peer gets a send with a completion at
	 * least every OFI_TRACK_NS: one to a peer that is gone still fails or
	 * stays in flight (ofi_check_peers). */
	bool inject = len <= c->inject_max && now - p->tracked_ns < OFI_TRACK_NS;
	ssize_t rc;

	memcpy(op->buf + offsetof(struct ofi_hdr, len), &payload, sizeof(payload));
	rc = inject ? fi_inject(c->ep, op->buf, len, p->fi_addr)
		    : fi_send(c->ep, op->buf, len, c->txp.desc, p->fi_addr, &op->fictx);
	p->tx_blocked = rc == -FI_EAGAIN;
	if (rc == 0) {
		p->tx_seq++;
		if (inject) {
			pool_give(c, op);
		} else {
			op->peer = p;
			p->tx_inflight++;
			p->tracked_ns = now;
		}
		return 0;
	}
	if (rc == -FI_EAGAIN) {
		p->eagain_ns = now;
		ofi_cq_drain(c); /* the provider needs progress */
		return -EAGAIN;
	}
	KINET_ERR("ofi carrier: fi_send of %zu bytes: %s", len, ofi_strerror((int)-rc));
	ofi_peer_fail(c, p, (int)-rc, "fi_send");
	return p->status;
}

/* Posts p's open bundle: 0, -EAGAIN (it stays open) or the peer's status
 * (what it held is lost with the peer). */
static int bundle_post(struct kinet_carrier *c, struct kinet_carrier_peer *p)
{
	int rc = post(c, p, p->bundle, p->bundle_start, p->bundle_len);

	if (rc == -EAGAIN)
		return rc;
	if (rc)
		pool_give(c, p->bundle);
	p->bundle = NULL;
	__atomic_store_n(&c->bundles, c->bundles - 1, __ATOMIC_RELAXED);
	return rc;
}

static int bundle_add(struct kinet_carrier *c, struct kinet_carrier_peer *p, const struct iovec *iov,
		      int iovcnt, uint32_t total)
{
	if (p->bundle && p->bundle_len + sizeof(total) + total > p->bundle_start + c->bundle_max) {
		int rc = bundle_post(c, p);
		if (rc)
			return rc;
	}
	if (!p->bundle) {
		if (!(p->bundle = pool_take(c)))
			return -EAGAIN;
		p->bundle_start = p->bundle_len = put_header(c, p, p->bundle->buf, OFI_FLAG_BUNDLE);
		__atomic_store_n(&c->bundles, c->bundles + 1, __ATOMIC_RELAXED);
	}
	memcpy(p->bundle->buf + p->bundle_len, &total, sizeof(total));
	p->bundle_len += sizeof(total);
	p->bundle_len += gather(p->bundle->buf + p->bundle_len, iov, iovcnt);
	return 0;
}

static int send_alone(struct kinet_carrier *c, struct kinet_carrier_peer *p, const struct iovec *iov,
		      int iovcnt)
{
	struct ofi_op *op;
	int rc;

	if (p->bundle && (rc = bundle_post(c, p))) /* what was bundled before it goes first */
		return rc;
	if (!(op = pool_take(c)))
		return -EAGAIN;
	size_t start = put_header(c, p, op->buf, 0);
	rc = post(c, p, op, start, start + gather(op->buf + start, iov, iovcnt));
	if (rc)
		pool_give(c, op);
	return rc;
}

int ofi_send(struct kinet_carrier *c, struct kinet_carrier_peer *p, const struct iovec *iov, int iovcnt)
{
	size_t total = 0;
	int rc;

	for (int i = 0; i < iovcnt; i++)
		total += iov[i].iov_len;
	if (total > KINET_CARRIER_MAX_MSG) {
		KINET_ERR("ofi carrier: message of %zu bytes exceeds KINET_CARRIER_MAX_MSG (%u)", total,
			  KINET_CARRIER_MAX_MSG);
		return -EMSGSIZE;
	}
	pthread_mutex_lock(&c->lock);
	if (p->status)
		rc = p->status;
	else if (c->bundle_max && total * OFI_BUNDLE_ITEMS_MIN <= c->bundle_max && p->tx_seq &&
		 !p->tx_blocked)
		rc = bundle_add(c, p, iov, iovcnt, (uint32_t)total);
	else
		rc = send_alone(c, p, iov, iovcnt);
	pthread_mutex_unlock(&c->lock);
	return rc;
}

int ofi_flush_locked(struct kinet_carrier *c)
{
	int rc = 0;

	for (int i = 0; i < c->npeers && c->bundles; i++)
		if (c->peers[i]->bundle && bundle_post(c, c->peers[i]) == -EAGAIN)
			rc = -EAGAIN;
	return rc;
}

int ofi_flush(struct kinet_carrier *c)
{
	int rc;

	/* Most passes have nothing bundled: no lock for them. */
	if (!__atomic_load_n(&c->bundles, __ATOMIC_RELAXED))
		return 0;
	pthread_mutex_lock(&c->lock);
	rc = ofi_flush_locked(c);
	pthread_mutex_unlock(&c->lock);
	return rc;
}

#endif /* KINET_HAVE_OFI */
