/*
 * `ofi` carrier: protocol messages between hosts over libfabric RDM
 * endpoints (FI_EP_RDM, FI_MSG: fi_send/fi_recv).  See ofi_internal.h for
 * the message header, ofi_setup.c for the provider choice and memory
 * registration, ofi_rx.c for completions and ordering.
 *
 * Sends are copied into registered bounce buffers (a pool; -EAGAIN when it
 * is empty), small ones bundled per peer (ofi_tx.c); receives land in a
 * pool of pre-posted buffers that is reposted after delivery.  Delivery
 * completion is the protocol's business: the target answers once it
 * placed the data.  A send that completes in error marks its peer gone.
 * Nothing here blocks; one mutex serialises the carrier, and it is not
 * held while a message is delivered, so the deliver callback may send.
 *
 * libfabric is loaded on the first open() (ofi_dl.c); where it is missing,
 * or kinet was built without its headers, open() fails (-ENOSYS).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "carrier.h"

#ifdef KINET_HAVE_OFI

#include "ofi_bundle.h"
#include "ofi_internal.h"

/* Deliveries per progress call, so one engine pass stays short. */
#define OFI_DELIVER_BUDGET 256
/* Longest close() waits for sends in flight. */
#define OFI_CLOSE_LINGER_MS 200

/* ---- peers ---------------------------------------------------------------- */

static uint32_t ofi_hash(uint64_t id)
{
	id ^= id >> 33;
	id *= 0xff51afd7ed558ccdull;
	id ^= id >> 33;
	return (uint32_t)id;
}

struct kinet_carrier_peer *ofi_by_id_get(struct kinet_carrier *c, uint64_t id)
{
	if (!c->by_id_size)
		return NULL;
	for (uint32_t i = ofi_hash(id) & (c->by_id_size - 1);; i = (i + 1) & (c->by_id_size - 1)) {
		struct kinet_carrier_peer *p = c->by_id[i];
		if (!p)
			return NULL;
		if (p->rx_known && p->rx_sender == id)
			return p;
	}
}

/* 1 when a free slot was taken, 0 when p was found on the way. */
static int ofi_by_id_insert(struct kinet_carrier_peer **t, uint32_t size, struct kinet_carrier_peer *p)
{
	uint32_t i = ofi_hash(p->rx_sender) & (size - 1);

	while (t[i] && t[i] != p)
		i = (i + 1) & (size - 1);
	if (t[i])
		return 0;
	t[i] = p;
	return 1;
}

/* Maps p->rx_sender (== id) to p.  Entries of a restarted peer's old id
 * stay until the table is rebuilt; lookups skip them. */
int ofi_by_id_put(struct kinet_carrier *c, uint64_t id, struct kinet_carrier_peer *p)
{
	(void)id;
	if (2u * (c->by_id_used + 1u) > c->by_id_size) {
		uint32_t size = 16, used = 0;
		while (size < 4u * (uint32_t)c->npeers)
			size *= 2;
		struct kinet_carrier_peer **t = calloc(size, sizeof(*t));
		if (!t) {
			KINET_ERR("ofi carrier: out of memory for the peer table");
			return -ENOMEM;
		}
		for (int i = 0; i < c->npeers; i++)
			if (c->peers[i]->rx_known)
				used += (uint32_t)ofi_by_id_insert(t, size, c->peers[i]);
		free(c->by_id);
		c->by_id = t;
		c->by_id_size = size;
		c->by_id_used = used;
	}
	c->by_id_used += (uint32_t)ofi_by_id_insert(c->by_id, c->by_id_size, p);
	return 0;
}

int ofi_peer_lookup(struct kinet_carrier *c, const void *addr, size_t len, struct kinet_carrier_peer **peer)
{
	struct kinet_carrier_peer *p;
	int rc;

	if (!addr || !len || len > KINET_CARRIER_ADDR_MAX)
		return KINET_EINVAL("addr", "empty or longer than KINET_CARRIER_ADDR_MAX");
	for (int i = 0; i < c->npeers; i++) {
		p = c->peers[i];
		if (p->addr_len == len && !memcmp(p->addr, addr, len)) {
			*peer = p;
			return 0;
		}
	}
	if (c->npeers == c->peers_cap) {
		int cap = c->peers_cap ? 2 * c->peers_cap : 16;
		struct kinet_carrier_peer **n = realloc(c->peers, (size_t)cap * sizeof(*n));
		if (!n)
			return -ENOMEM;
		c->peers = n;
		c->peers_cap = cap;
	}
	if (!(p = calloc(1, sizeof(*p))))
		return -ENOMEM;
	memcpy(p->addr, addr, len);
	p->addr_len = len;
	p->alive_ns = kinet_now_ns();
	rc = fi_av_insert(c->av, addr, 1, &p->fi_addr, 0, NULL);
	if (rc != 1) {
		KINET_ERR("ofi carrier: fi_av_insert of a peer address (%zu bytes): %s", len,
			  rc < 0 ? ofi_strerror(-rc) : "address not inserted");
		free(p);
		return -EHOSTUNREACH;
	}
	c->peers[c->npeers++] = p;
	*peer = p;
	return 0;
}

void ofi_peer_fail(struct kinet_carrier *c, struct kinet_carrier_peer *p, int fi_err, const char *why)
{
	char name[128] = "?";
	size_t len = sizeof(name);

	if (p->status)
		return;
	switch (fi_err) {
	case FI_ECONNREFUSED:
	case FI_ECONNRESET:
	case FI_ECONNABORTED:
	case FI_ENOTCONN:
	case EPIPE:
	case ESHUTDOWN:
		p->status = -ECONNRESET;
		break;
	default:
		p->status = -EHOSTUNREACH;
	}
	fi_av_straddr(c->av, p->addr, name, &len);
	KINET_WARN("ofi carrier: peer %s is gone: %s%s%s", name, ofi_strerror(fi_err),
		   why && *why ? ": " : "", why ? why : "");
}

/* A peer is busy while sends to it are in flight or were refused with
 * -FI_EAGAIN in the last second (ofi_rxm, for one, answers -FI_EAGAIN
 * forever when the connection is refused).  A busy peer with no sign of
 * life (a send completed, a message received) for the timeout is gone. */
void ofi_check_peers(struct kinet_carrier *c)
{
	/* The check is due every 100 ms, and it runs on every engine pass: a
	 * clock reading per pass was a large share of an idle one (profiled
	 * over shm), so the clock is read every 64th call. */
	if (!c->peer_timeout_ns || (++c->check_calls & 63))
		return;
	uint64_t now = kinet_now_ns();

	if (now < c->next_check_ns)
		return;
	c->next_check_ns = now + 100000000ull;
	for (int i = 0; i < c->npeers; i++) {
		struct kinet_carrier_peer *p = c->peers[i];
		bool busy = p->tx_inflight || (p->eagain_ns && now - p->eagain_ns < 1000000000ull);
		if (p->status)
			continue;
		if (!busy) {
			p->busy_since = 0;
			continue;
		}
		if (!p->busy_since)
			p->busy_since = now;
		uint64_t since = p->busy_since > p->alive_ns ? p->busy_since : p->alive_ns;
		if (now - since > c->peer_timeout_ns) {
			char why[96];
			snprintf(why, sizeof(why), "no progress for %llu ms (KINET_OFI_PEER_TIMEOUT_MS)",
				 (unsigned long long)((now - since) / 1000000ull));
			ofi_peer_fail(c, p, FI_ETIMEDOUT, why);
		}
	}
}

/* ---- ops -------------------------------------------------------------------- */

/* A send of a peer not known gone is still in flight. */
static bool ofi_tx_busy(struct kinet_carrier *c)
{
	for (int i = 0; i < c->npeers; i++)
		if (c->peers[i]->tx_inflight && !c->peers[i]->status)
			return true;
	return false;
}

static void ofi_close(struct kinet_carrier *c)
{
	if (!c)
		return;
	/* Let sends in flight complete, briefly: providers such as ofi_rxm
	 * leak internal registrations when closed under them. */
	uint64_t end = kinet_now_ns() + OFI_CLOSE_LINGER_MS * 1000000ull;
	while (c->ep && c->bundles && ofi_flush_locked(c) && kinet_now_ns() < end)
		if (ofi_cq_drain(c) < 0)
			break;
	while (c->ep && ofi_tx_busy(c) && kinet_now_ns() < end)
		if (ofi_cq_drain(c) < 0)
			break;
	kinet_fabric_enter(); /* closing may unload providers' verbs objects */
	ofi_teardown(c);      /* endpoint first: nothing completes after this */
	kinet_fabric_leave();
	ofi_msgs_free(c);
	for (int i = 0; i < c->npeers; i++)
		free(c->peers[i]);
	free(c->peers);
	free(c->by_id);
	pthread_mutex_destroy(&c->lock);
	free(c);
}

static int ofi_open(struct kinet_ctx *ctx, struct kinet_carrier **carrier)
{
	struct kinet_carrier *c;
	int rc;

	*carrier = NULL;
	if ((rc = kinet_ofi_load())) /* first use: libfabric is loaded now */
		return rc;
	if (!(c = calloc(1, sizeof(*c))))
		return -ENOMEM;
	c->ctx = ctx;
	pthread_mutex_init(&c->lock, NULL);
	/* Providers start and enumerate devices (verbs ones too) in
	 * fi_getinfo, fi_fabric, fi_domain and fi_endpoint: the front door
	 * must show them none of kinet's own (core/fabric_guard.h).  The data
	 * path (fi_send, fi_cq_read) is not guarded: under the front door no
	 * provider over verbs is chosen (ofi_pick). */
	kinet_fabric_enter();
	rc = ofi_setup(c);
	kinet_fabric_leave();
	if (rc) {
		ofi_close(c);
		return rc;
	}
	*carrier = c;
	return 0;
}

static int ofi_address(struct kinet_carrier *c, void *addr, size_t *len)
{
	if (*len < c->addr_len) {
		*len = c->addr_len;
		return -ENOSPC;
	}
	memcpy(addr, c->addr, c->addr_len);
	*len = c->addr_len;
	return 0;
}

static int ofi_peer_get(struct kinet_carrier *c, const void *addr, size_t len,
			struct kinet_carrier_peer **peer)
{
	pthread_mutex_lock(&c->lock);
	int rc = ofi_peer_lookup(c, addr, len, peer);
	pthread_mutex_unlock(&c->lock);
	return rc;
}

/* Delivers m, or each message of a bundle (checked at receipt to hold
 * whole records). */
static void deliver_msg(struct kinet_carrier *c, const struct ofi_msg *m, kinet_carrier_deliver_fn deliver,
			void *arg)
{
	const uint8_t *rec;
	uint32_t n;
	size_t off = 0;

	if (!(m->flags & OFI_FLAG_BUNDLE)) {
		deliver(c, m->peer, m->data, m->len, arg);
		return;
	}
	while (ofi_bundle_next(m->data, m->len, &off, &rec, &n))
		deliver(c, m->peer, rec, n, arg);
}

static int ofi_progress(struct kinet_carrier *c, kinet_carrier_deliver_fn deliver, void *arg)
{
	int rc, n = 0;

	pthread_mutex_lock(&c->lock);
	if (c->delivering) { /* another thread is delivering: keep the order */
		pthread_mutex_unlock(&c->lock);
		return 0;
	}
	ofi_flush_locked(c); /* what was bundled since the last flush */
	rc = ofi_cq_drain(c);
	if (rc < 0) {
		pthread_mutex_unlock(&c->lock);
		return rc;
	}
	ofi_check_peers(c);
	c->delivering = true;
	while (c->ready_head && n < OFI_DELIVER_BUDGET) {
		struct ofi_msg *m = c->ready_head;
		if (!(c->ready_head = m->next))
			c->ready_tail = NULL;
		pthread_mutex_unlock(&c->lock);
		deliver_msg(c, m, deliver, arg);
		pthread_mutex_lock(&c->lock);
		ofi_msg_release(c, m);
		n++;
	}
	c->delivering = false;
	pthread_mutex_unlock(&c->lock);
	return n;
}

static int ofi_peer_status(struct kinet_carrier *c, struct kinet_carrier_peer *p)
{
	pthread_mutex_lock(&c->lock);
	int st = p->status;
	pthread_mutex_unlock(&c->lock);
	return st;
}

#else /* !KINET_HAVE_OFI */

static int ofi_open(struct kinet_ctx *ctx, struct kinet_carrier **carrier)
{
	(void)ctx;
	*carrier = NULL;
	KINET_ERR("ofi carrier: kinet was built without libfabric (install libfabric-dev and rebuild); "
		  "peers on other hosts cannot be reached");
	return -ENOSYS;
}

static void ofi_close(struct kinet_carrier *c)
{
	(void)c;
}

static int ofi_address(struct kinet_carrier *c, void *addr, size_t *len)
{
	(void)c, (void)addr, (void)len;
	return -ENOSYS;
}

static int ofi_peer_get(struct kinet_carrier *c, const void *addr, size_t len,
			struct kinet_carrier_peer **peer)
{
	(void)c, (void)addr, (void)len, (void)peer;
	return -ENOSYS;
}

static int ofi_send(struct kinet_carrier *c, struct kinet_carrier_peer *p, const struct iovec *iov,
		    int iovcnt)
{
	(void)c, (void)p, (void)iov, (void)iovcnt;
	return -ENOSYS;
}

static int ofi_progress(struct kinet_carrier *c, kinet_carrier_deliver_fn deliver, void *arg)
{
	(void)c, (void)deliver, (void)arg;
	return -ENOSYS;
}

static int ofi_peer_status(struct kinet_carrier *c, struct kinet_carrier_peer *p)
{
	(void)c, (void)p;
	return -ENOSYS;
}

static int ofi_flush(struct kinet_carrier *c)
{
	(void)c;
	return 0;
}

#endif /* KINET_HAVE_OFI */

const struct kinet_carrier_ops kinet_carrier_ofi = {
	.name = "ofi",
	.open = ofi_open,
	.close = ofi_close,
	.address = ofi_address,
	.peer_get = ofi_peer_get,
	.send = ofi_send,
	.progress = ofi_progress,
	.peer_status = ofi_peer_status,
	.flush = ofi_flush,
};
