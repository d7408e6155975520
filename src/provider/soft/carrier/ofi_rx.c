/*
 * `ofi` carrier completions and receive ordering.
 *
 * ofi_cq_drain reads the CQ without blocking: a completed send frees its
 * buffer, a failed one marks its peer gone; a received message is matched to
 * its peer by the sender id in its header (message 0 carries the sender's
 * address) and queued for delivery when its sequence number is the next
 * expected, else copied aside (so the receive buffer is reposted at once and
 * a gap can always be filled) until the gap closes.
 */
#ifdef KINET_HAVE_OFI

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ofi_bundle.h"
#include "ofi_internal.h"

#define OFI_CQ_BATCH 16
#define OFI_CQ_MAX_BATCHES 8

static struct ofi_msg *ofi_msg_copy(const struct ofi_msg *m)
{
	struct ofi_msg *copy = malloc(sizeof(*copy) + m->len);

	if (!copy)
		return NULL;
	*copy = *m;
	memcpy(copy + 1, m->data, m->len);
	copy->data = (const uint8_t *)(copy + 1);
	copy->rx = NULL;
	copy->next = NULL;
	return copy;
}

void ofi_msg_release(struct kinet_carrier *c, struct ofi_msg *m)
{
	if (m->rx)
		ofi_post_recv(c, m->rx); /* kept on rx_repost when it fails */
	else
		free(m);
}

static void ofi_ready_push(struct kinet_carrier *c, struct ofi_msg *m)
{
	m->next = NULL;
	if (c->ready_tail)
		c->ready_tail->next = m;
	else
		c->ready_head = m;
	c->ready_tail = m;
}

/* Holds m on list, whose length is *count, at most max (a copy is made of
 * a receive buffer, which is reposted). */
static void ofi_hold(struct kinet_carrier *c, struct ofi_msg **list, int *count, int max, struct ofi_msg *m,
		     bool sorted)
{
	struct ofi_msg *h = m;
	bool full = c->nheld >= OFI_MAX_HELD || *count >= max;

	if (full || (m->rx && !(h = ofi_msg_copy(m)))) {
		uint64_t n = ++c->dropped;

		if (!(n & (n - 1)))
			KINET_ERR("ofi carrier: dropping a message (sender %016llx, seq %llu): %s; %llu "
				  "dropped so far",
				  (unsigned long long)m->sender, (unsigned long long)m->seq,
				  !full			? "out of memory"
				  : list == &c->orphans ? "too many from unknown senders"
							: "too many out-of-order messages",
				  (unsigned long long)n);
		ofi_msg_release(c, m);
		return;
	}
	if (m->rx)
		ofi_msg_release(c, m);
	h->held_ns = kinet_now_ns();
	while (sorted && *list && (*list)->seq < h->seq)
		list = &(*list)->next;
	h->next = *list;
	*list = h;
	(*count)++;
	c->nheld++;
}

/* m comes from peer's current sender: deliver in order. */
static void ofi_accept(struct kinet_carrier *c, struct kinet_carrier_peer *p, struct ofi_msg *m)
{
	m->peer = p;
	p->alive_ns = kinet_now_ns();
	if (m->seq < p->rx_next) {
		KINET_WARN("ofi carrier: duplicate message (seq %llu < %llu) dropped",
			   (unsigned long long)m->seq, (unsigned long long)p->rx_next);
		ofi_msg_release(c, m);
		return;
	}
	if (m->seq > p->rx_next) {
		ofi_hold(c, &p->held, &p->nheld, OFI_MAX_HELD_PEER, m, true);
		return;
	}
	ofi_ready_push(c, m);
	p->rx_next++;
	while (p->held && p->held->seq == p->rx_next) {
		struct ofi_msg *h = p->held;
		p->held = h->next;
		p->nheld--;
		c->nheld--;
		ofi_ready_push(c, h);
		p->rx_next++;
	}
}

static void ofi_free_list(struct kinet_carrier *c, struct ofi_msg **list, int *count)
{
	while (*list) {
		struct ofi_msg *m = *list;
		*list = m->next;
		(*count)--;
		c->nheld--;
		free(m);
	}
}

/* Orphans whose sender never said who it is within OFI_ORPHAN_NS. */
static void ofi_expire_orphans(struct kinet_carrier *c)
{
	uint64_t now = kinet_now_ns();

	for (struct ofi_msg **pp = &c->orphans; *pp;) {
		struct ofi_msg *m = *pp;

		if (now - m->held_ns < OFI_ORPHAN_NS) {
			pp = &m->next;
			continue;
		}
		*pp = m->next;
		c->norphans--;
		c->nheld--;
		free(m);
	}
}

/* Message 0 from sender: bind it to the peer at addr. */
static struct kinet_carrier_peer *ofi_hello(struct kinet_carrier *c, uint64_t sender, const void *addr,
					    size_t addr_len)
{
	struct kinet_carrier_peer *p;

	if (ofi_peer_lookup(c, addr, addr_len, &p))
		return NULL;
	if (p->rx_known && p->rx_sender != sender) {
		KINET_INFO("ofi carrier: peer restarted (sender %016llx -> %016llx)",
			   (unsigned long long)p->rx_sender, (unsigned long long)sender);
		ofi_free_list(c, &p->held, &p->nheld);
	}
	p->rx_sender = sender;
	p->rx_known = true;
	p->rx_next = 0;
	if (ofi_by_id_put(c, sender, p))
		return NULL;
	return p;
}

static void ofi_adopt_orphans(struct kinet_carrier *c, struct kinet_carrier_peer *p)
{
	struct ofi_msg **pp = &c->orphans;

	while (*pp) {
		struct ofi_msg *m = *pp;
		if (m->sender != p->rx_sender) {
			pp = &m->next;
			continue;
		}
		*pp = m->next;
		c->norphans--;
		c->nheld--;
		ofi_accept(c, p, m);
	}
}

/* A message with no flag but OFI_FLAG_BUNDLE, and if it is a bundle,
 * whole records (what deliver_msg in ofi.c walks). */
static bool records_whole(const struct ofi_msg *m)
{
	if (m->flags & ~OFI_FLAG_BUNDLE)
		return false;
	return !(m->flags & OFI_FLAG_BUNDLE) || ofi_bundle_valid(m->data, m->len);
}

static void ofi_on_recv(struct kinet_carrier *c, struct ofi_op *op, size_t cq_len)
{
	const struct ofi_hdr *h = (const struct ofi_hdr *)op->buf;
	struct ofi_msg *m = &op->msg;
	struct kinet_carrier_peer *p;
	size_t need;

	c->rx_posted--;
	need = sizeof(*h) + (cq_len >= sizeof(*h) ? h->addr_len + (size_t)h->len : 0);
	if (cq_len < sizeof(*h) || h->magic != OFI_MAGIC || h->addr_len > KINET_CARRIER_ADDR_MAX ||
	    h->len > KINET_CARRIER_MAX_MSG || (cq_len != SIZE_MAX && cq_len < need)) {
		KINET_WARN("ofi carrier: dropping a malformed message of %zu bytes", cq_len);
		ofi_post_recv(c, op);
		return;
	}
	m->rx = op;
	m->sender = h->sender;
	m->seq = h->seq;
	m->flags = h->flags;
	m->data = op->buf + sizeof(*h) + h->addr_len;
	m->len = h->len;
	if (!records_whole(m)) {
		KINET_WARN("ofi carrier: dropping a malformed bundle of %zu bytes", m->len);
		ofi_post_recv(c, op);
		return;
	}
	m->peer = NULL;
	if (h->addr_len) {
		if (!(p = ofi_hello(c, h->sender, op->buf + sizeof(*h), h->addr_len))) {
			ofi_post_recv(c, op);
			return;
		}
		ofi_accept(c, p, m);
		ofi_adopt_orphans(c, p);
		return;
	}
	if ((p = ofi_by_id_get(c, h->sender)))
		ofi_accept(c, p, m);
	else
		ofi_hold(c, &c->orphans, &c->norphans, OFI_MAX_ORPHANS, m, false);
}

static void ofi_on_send(struct kinet_carrier *c, struct ofi_op *op, bool ok)
{
	if (op->peer) {
		op->peer->tx_inflight--;
		if (ok)
			op->peer->alive_ns = kinet_now_ns();
	}
	op->peer = NULL;
	op->next = c->tx_free;
	c->tx_free = op;
}

static void ofi_on_error(struct kinet_carrier *c)
{
	struct fi_cq_err_entry err = {0};
	char buf[256];
	ssize_t rc = fi_cq_readerr(c->cq, &err, 0);
	struct ofi_op *op;

	if (rc < 0) {
		if (rc != -FI_EAGAIN)
			KINET_ERR("ofi carrier: fi_cq_readerr: %s", ofi_strerror((int)-rc));
		return;
	}
	op = err.op_context;
	if (!op) {
		KINET_ERR("ofi carrier: completion error without context: %s", ofi_strerror(err.err));
		return;
	}
	const char *detail = fi_cq_strerror(c->cq, err.prov_errno, err.err_data, buf, sizeof(buf));
	if (op->kind == OFI_OP_TX) {
		struct kinet_carrier_peer *p = op->peer;
		if (p)
			ofi_peer_fail(c, p, err.err, detail ? detail : "");
		ofi_on_send(c, op, false);
		return;
	}
	c->rx_posted--;
	if (err.err != FI_ECANCELED)
		KINET_WARN("ofi carrier: receive failed: %s (%s)", ofi_strerror(err.err),
			   detail ? detail : "");
	ofi_post_recv(c, op);
}

static void ofi_on_entry(struct kinet_carrier *c, void *context, size_t len)
{
	struct ofi_op *op = context;

	if (!op)
		return;
	if (op->kind == OFI_OP_TX)
		ofi_on_send(c, op, true);
	else
		ofi_on_recv(c, op, len);
}

int ofi_cq_drain(struct kinet_carrier *c)
{
	int total = 0;

	/* receive buffers whose repost failed earlier */
	struct ofi_op *retry = c->rx_repost;
	c->rx_repost = NULL;
	while (retry) {
		struct ofi_op *op = retry;
		retry = op->next;
		ofi_post_recv(c, op);
	}

	for (int b = 0; b < OFI_CQ_MAX_BATCHES; b++) {
		struct fi_cq_data_entry de[OFI_CQ_BATCH];
		struct fi_cq_entry ce[OFI_CQ_BATCH];
		bool data = c->cq_format == FI_CQ_FORMAT_DATA;
		ssize_t n = fi_cq_read(c->cq, data ? (void *)de : (void *)ce, OFI_CQ_BATCH);

		if (n == -FI_EAGAIN)
			break;
		if (n == -FI_EAVAIL) {
			ofi_on_error(c);
			total++;
			continue;
		}
		if (n < 0) {
			KINET_ERR("ofi carrier: fi_cq_read: %s", ofi_strerror((int)-n));
			return -EIO;
		}
		for (ssize_t i = 0; i < n; i++) {
			if (data)
				ofi_on_entry(c, de[i].op_context, de[i].len);
			else
				ofi_on_entry(c, ce[i].op_context, SIZE_MAX);
		}
		total += (int)n;
		if (n < OFI_CQ_BATCH)
			break;
	}
	if (c->orphans)
		ofi_expire_orphans(c);
	return total;
}

void ofi_msgs_free(struct kinet_carrier *c)
{
	while (c->ready_head) {
		struct ofi_msg *m = c->ready_head;
		c->ready_head = m->next;
		if (!m->rx)
			free(m);
	}
	c->ready_tail = NULL;
	ofi_free_list(c, &c->orphans, &c->norphans);
	for (int i = 0; i < c->npeers; i++)
		ofi_free_list(c, &c->peers[i]->held, &c->peers[i]->nheld);
}

#endif /* KINET_HAVE_OFI */
