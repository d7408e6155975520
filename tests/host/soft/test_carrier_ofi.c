/*
 * The `ofi` carrier (libfabric RDM endpoints) on its own, below the remote
 * protocol.
 *
 * In one process (default): two carriers over tcp;ofi_rxm on 127.0.0.1
 * ($KINET_OFI_PROVIDER / KINET_OFI_ADDR / KINET_OFI_IFACE override) exchange
 * messages of many sizes in both directions, in order, contents checked;
 * send back-pressure (-EAGAIN) is handled; a send from the deliver callback
 * works; small messages wait in a bundle until a flush and keep their
 * order with large ones, and the bundle format rejects what is not whole
 * records; a peer whose endpoint closed is reported gone
 * within a bounded time.
 *
 * Across processes (tests/netns/run.sh sets KINET_RANK, KINET_NRANKS=2,
 * KINET_ROOT=ip:port, KINET_OFI_IFACE): ranks 0 and 1 swap carrier
 * addresses over a TCP socket at KINET_ROOT, then exchange messages both
 * ways over the carrier.  The in-process tests skip in that mode and the
 * cross-process one skips without it.
 *
 * Skips with a reason when kinet was built without libfabric or the
 * provider is missing.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include "carrier.h"
#include "kt_host.h"
#include "ofi_bundle.h"

#define NMSGS 2000
#define DEADLINE_MS 60000
#define GONE_DEADLINE_MS 20000

struct side {
	struct kinet_ctx *ctx;
	struct kinet_carrier *c;
	struct kinet_carrier_peer *peer; /* the other side, as peer_get gave it */
	struct kinet_carrier_peer *from; /* as deliver gave it */
	uint8_t dir;			 /* what this side sends: 0 or 1 */
	uint32_t sent, received, nmsgs;
	int bad;
	int eagain;
	/* echo mode: send each message back from the deliver callback */
	bool echo;
	uint32_t echo_backlog;
};

static bool in_netns_mode(void)
{
	return getenv("KINET_RANK") && getenv("KINET_NRANKS");
}

static size_t msg_size(uint32_t i)
{
	size_t n;

	if (i % 7 == 0)
		n = KINET_CARRIER_MAX_MSG;
	else if (i % 7 == 1)
		n = 8;
	else if (i % 7 == 2)
		n = 8 + i % 64;
	else
		n = ((size_t)i * 7919u) % KINET_CARRIER_MAX_MSG;
	return n < 8 ? 8 : n;
}

static uint8_t pattern(uint8_t dir, uint32_t i, size_t off)
{
	return (uint8_t)(i * 31u + off * 7u + dir * 101u + (off >> 8));
}

static uint8_t g_buf[KINET_CARRIER_MAX_MSG];

/* Sends message i of s; 0, -EAGAIN or the error. */
static int send_one(struct side *s, uint32_t i)
{
	size_t len = msg_size(i);
	uint32_t head[2] = {s->dir, i};
	struct iovec iov[3];

	memcpy(g_buf, head, sizeof(head));
	for (size_t off = 8; off < len; off++)
		g_buf[off] = pattern(s->dir, i, off);
	/* gather from three pieces */
	iov[0] = (struct iovec){g_buf, 4};
	iov[1] = (struct iovec){g_buf + 4, len > 100 ? 96 : len - 4};
	iov[2] = (struct iovec){g_buf + 4 + iov[1].iov_len, len - 4 - iov[1].iov_len};
	return kinet_carrier_ofi.send(s->c, s->peer, iov, 3);
}

static void on_msg(struct kinet_carrier *c, struct kinet_carrier_peer *peer, const void *msg, size_t len,
		   void *arg)
{
	struct side *s = arg;
	const uint8_t *b = msg;
	uint32_t head[2];

	(void)c;
	s->from = peer;
	if (len < 8) {
		fprintf(stderr, "message of %zu bytes\n", len);
		s->bad++;
		return;
	}
	memcpy(head, b, sizeof(head));
	if (head[0] != (uint32_t)(s->dir ^ 1) || head[1] != s->received || len != msg_size(head[1])) {
		if (s->bad++ < 5)
			fprintf(stderr, "got dir %u msg %u of %zu bytes, expected msg %u of %zu\n", head[0],
				head[1], len, s->received, msg_size(s->received));
		s->received++;
		return;
	}
	for (size_t off = 8; off < len; off++) {
		if (b[off] != pattern((uint8_t)head[0], head[1], off)) {
			if (s->bad++ < 5)
				fprintf(stderr, "msg %u: byte %zu differs\n", head[1], off);
			break;
		}
	}
	s->received++;
	if (s->echo) {
		struct iovec iov = {(void *)msg, len};
		if (s->echo_backlog || kinet_carrier_ofi.send(s->c, s->peer, &iov, 1))
			s->echo_backlog++; /* resent from the main loop */
	}
}

static void loopback_env(void)
{
	setenv("KINET_OFI_PROVIDER", "tcp;ofi_rxm", 0);
	if (strstr(getenv("KINET_OFI_PROVIDER"), "tcp") && !getenv("KINET_OFI_ADDR") &&
	    !getenv("KINET_OFI_IFACE"))
		setenv("KINET_OFI_ADDR", "127.0.0.1", 1);
}

/* 1 opened, 0 skip (reason printed into why), -1 failure. */
static int side_open(struct side *s, uint8_t dir, char *why, size_t whylen)
{
	memset(s, 0, sizeof(*s));
	s->dir = dir;
	if (kt_ctx_open(1, &s->ctx))
		return -1;
	int rc = kinet_carrier_ofi.open(s->ctx, &s->c);
	if (rc == -ENOSYS || rc == -ENODEV) {
		snprintf(why, whylen, "%s",
			 rc == -ENOSYS ? "kinet was built without libfabric"
				       : "libfabric provider (KINET_OFI_PROVIDER, default tcp;ofi_rxm) not "
					 "available");
		kinet_ctx_close(s->ctx);
		s->ctx = NULL;
		return 0;
	}
	if (rc) {
		fprintf(stderr, "ofi carrier open: %d\n", rc);
		kinet_ctx_close(s->ctx);
		s->ctx = NULL;
		return -1;
	}
	return 1;
}

static void side_close(struct side *s)
{
	if (s->c)
		kinet_carrier_ofi.close(s->c);
	if (s->ctx)
		kinet_ctx_close(s->ctx);
	s->c = NULL;
	s->ctx = NULL;
}

static int peer_of(struct side *s, struct side *other, struct kinet_carrier_peer **p)
{
	uint8_t addr[KINET_CARRIER_ADDR_MAX];
	size_t len = sizeof(addr);
	int rc = kinet_carrier_ofi.address(other->c, addr, &len);

	return rc ? rc : kinet_carrier_ofi.peer_get(s->c, addr, len, p);
}

/* Opens a (direction 0) and b (1) in this process, each knowing the
 * other: 1, 0 to skip (the reason in why) or -1. */
static int pair_open(struct side *a, struct side *b, char *why, size_t whylen)
{
	int rc;

	if (in_netns_mode()) {
		snprintf(why, whylen, "in-process tests do not run under tests/netns/run.sh");
		return 0;
	}
	loopback_env();
	if ((rc = side_open(a, 0, why, whylen)) != 1)
		return rc;
	if (side_open(b, 1, why, whylen) != 1 || peer_of(a, b, &a->peer) || peer_of(b, a, &b->peer)) {
		side_close(a);
		side_close(b);
		return -1;
	}
	return 1;
}

/* Sends what s still has to send, as far as the carrier takes it. */
static int pump(struct side *s)
{
	while (s->sent < s->nmsgs) {
		int rc = send_one(s, s->sent);
		if (rc == -EAGAIN) {
			s->eagain++;
			return 0;
		}
		if (rc)
			return rc;
		s->sent++;
	}
	return 0;
}

/* Both directions until everything arrived; 0 or -1. */
static int exchange(struct side *a, struct side *b, uint32_t n)
{
	uint64_t end = kt_now_ms() + DEADLINE_MS;

	a->nmsgs = b->nmsgs = n;
	while (a->received < n || b->received < n) {
		if (pump(a) || pump(b))
			return -1;
		if (kinet_carrier_ofi.progress(a->c, on_msg, a) < 0 ||
		    kinet_carrier_ofi.progress(b->c, on_msg, b) < 0)
			return -1;
		if (kt_now_ms() > end) {
			fprintf(stderr, "timeout: a sent %u got %u, b sent %u got %u\n", a->sent, a->received,
				b->sent, b->received);
			return -1;
		}
	}
	return 0;
}

KT_TEST(both_directions_in_order)
{
	struct side a, b;
	char why[128];
	int rc;

	if (in_netns_mode())
		KT_SKIP("in-process tests do not run under tests/netns/run.sh");
	loopback_env();
	if ((rc = side_open(&a, 0, why, sizeof(why))) == 0)
		KT_SKIP("%s", why);
	KT_CHECK(rc == 1);
	if ((rc = side_open(&b, 1, why, sizeof(why))) != 1) {
		side_close(&a);
		KT_CHECK(rc == 1);
	}
	/* Only a knows b: b learns a from a's first message. */
	KT_OK(peer_of(&a, &b, &a.peer));
	a.nmsgs = 1;
	uint64_t end = kt_now_ms() + DEADLINE_MS;
	while (b.received < 1 && kt_now_ms() < end) {
		KT_OK(pump(&a));
		kinet_carrier_ofi.progress(a.c, on_msg, &a);
		kinet_carrier_ofi.progress(b.c, on_msg, &b);
	}
	KT_CHECK_EQ(b.received, 1);
	KT_OK(peer_of(&b, &a, &b.peer));
	KT_CHECK(b.peer == b.from); /* same peer for the same address */
	struct kinet_carrier_peer *again = NULL;
	KT_OK(peer_of(&b, &a, &again));
	KT_CHECK(again == b.peer);
	/* The test's numbering starts again (the carrier's does not). */
	b.received = 0;
	a.sent = 0;
	rc = exchange(&a, &b, NMSGS);
	KT_CHECK_EQ(rc, 0);
	KT_CHECK_EQ(a.bad, 0);
	KT_CHECK_EQ(b.bad, 0);
	KT_CHECK(a.from == a.peer);
	KT_CHECK(b.from == b.peer);
	KT_CHECK_EQ(kinet_carrier_ofi.peer_status(a.c, a.peer), 0);
	KT_CHECK_EQ(kinet_carrier_ofi.peer_status(b.c, b.peer), 0);
	printf("  %u messages each way, -EAGAIN seen %d/%d times\n", NMSGS, a.eagain, b.eagain);
	side_close(&a);
	side_close(&b);
}

KT_TEST(back_pressure)
{
	struct side a, b;
	char why[128];
	int rc, eagain = 0;

	if (in_netns_mode())
		KT_SKIP("in-process tests do not run under tests/netns/run.sh");
	loopback_env();
	setenv("KINET_OFI_TX_BUFS", "8", 1);
	rc = side_open(&a, 0, why, sizeof(why));
	unsetenv("KINET_OFI_TX_BUFS");
	if (rc == 0)
		KT_SKIP("%s", why);
	KT_CHECK(rc == 1);
	KT_CHECK_EQ(side_open(&b, 1, why, sizeof(why)), 1);
	KT_OK(peer_of(&a, &b, &a.peer));
	KT_OK(peer_of(&b, &a, &b.peer));
	KT_OK(exchange(&a, &b, 4)); /* connected */
	a.sent = b.received = 0;
	/* b stops progressing: a's pool of 8 buffers must run out (large
	 * messages wait for the receiver). */
	for (uint32_t i = 0; i < 10000 && !eagain; i++) {
		rc = send_one(&a, a.sent);
		if (rc == -EAGAIN)
			eagain = 1;
		else
			KT_OK(rc);
		if (!rc)
			a.sent++;
		kinet_carrier_ofi.progress(a.c, on_msg, &a);
	}
	KT_CHECK(eagain);
	printf("  -EAGAIN after %u sends\n", a.sent);
	/* Then everything drains, in order. */
	a.nmsgs = a.sent + 200;
	uint64_t end = kt_now_ms() + DEADLINE_MS;
	while (b.received < a.nmsgs && kt_now_ms() < end) {
		KT_OK(pump(&a));
		kinet_carrier_ofi.progress(a.c, on_msg, &a);
		kinet_carrier_ofi.progress(b.c, on_msg, &b);
	}
	KT_CHECK_EQ(b.received, a.nmsgs);
	KT_CHECK_EQ(b.bad, 0);
	side_close(&a);
	side_close(&b);
}

KT_TEST(send_from_deliver)
{
	struct side a, b;
	char why[128];
	int rc;

	if ((rc = pair_open(&a, &b, why, sizeof(why))) == 0)
		KT_SKIP("%s", why);
	KT_CHECK_EQ(rc, 1);
	/* b echoes every message from its deliver callback.  Messages say
	 * "dir 0" (a.dir); the echoes come back as they are, so the side that
	 * checks them at a expects dir 0 too (its own dir 1, flipped). */
	b.echo = true;
	a.nmsgs = 500;
	uint64_t end = kt_now_ms() + DEADLINE_MS;
	struct side echo_check = {.dir = 1};
	while (echo_check.received < a.nmsgs && kt_now_ms() < end) {
		KT_OK(pump(&a));
		kinet_carrier_ofi.progress(b.c, on_msg, &b);
		while (b.echo_backlog) { /* echoes the callback could not send */
			uint32_t i = b.received - b.echo_backlog;
			struct side tmp = b;
			tmp.dir = 0;
			if (send_one(&tmp, i))
				break;
			b.echo_backlog--;
		}
		kinet_carrier_ofi.progress(a.c, on_msg, &echo_check);
	}
	KT_CHECK_EQ(b.received, a.nmsgs);
	KT_CHECK_EQ(echo_check.received, a.nmsgs);
	KT_CHECK_EQ(b.bad, 0);
	KT_CHECK_EQ(echo_check.bad, 0);
	side_close(&a);
	side_close(&b);
}

/* Bundles: messages of an explicit size, numbered from 0. */
struct bundle_rx {
	uint32_t n;
	int bad;
	size_t len[16];
};

static void on_bundled(struct kinet_carrier *c, struct kinet_carrier_peer *peer, const void *msg, size_t len,
		       void *arg)
{
	struct bundle_rx *r = arg;
	const uint8_t *b = msg;
	uint32_t id;

	(void)c, (void)peer;
	memcpy(&id, b, sizeof(id));
	bool ok = len >= sizeof(id) && id == r->n && r->n < 16 && len == r->len[r->n];
	for (size_t off = sizeof(id); ok && off < len; off++)
		ok = b[off] == pattern(2, id, off);
	if (!ok && r->bad++ < 5)
		fprintf(stderr, "bundled message %u of %zu bytes is not message %u\n", id, len, r->n);
	r->n++;
}

static int send_sized(struct side *s, uint32_t id, size_t len)
{
	struct iovec iov = {g_buf, len};

	memcpy(g_buf, &id, sizeof(id));
	for (size_t off = sizeof(id); off < len; off++)
		g_buf[off] = pattern(2, id, off);
	return kinet_carrier_ofi.send(s->c, s->peer, &iov, 1);
}

/* The bundle format on its own (no libfabric): whole records walk in
 * order; a cut length, a record past the end or bytes after the last
 * record make a bundle malformed (the receiver drops it), without reading
 * past the payload. */
static size_t put_record(uint8_t *b, size_t off, const char *s)
{
	uint32_t n = (uint32_t)strlen(s);

	memcpy(b + off, &n, sizeof(n));
	memcpy(b + off + sizeof(n), s, n);
	return off + sizeof(n) + n;
}

KT_TEST(bundle_format)
{
	static const char *const recs[] = {"first", "", "third record"};
	uint8_t b[64];
	size_t len = 0, off = 0;
	const uint8_t *rec;
	uint32_t n;

	for (int i = 0; i < 3; i++)
		len = put_record(b, len, recs[i]);
	KT_CHECK(ofi_bundle_valid(b, len));
	KT_CHECK(ofi_bundle_valid(b, 0)); /* no records */
	for (int i = 0; i < 3; i++) {
		KT_CHECK(ofi_bundle_next(b, len, &off, &rec, &n));
		KT_CHECK_EQ(n, (uint32_t)strlen(recs[i]));
		KT_CHECK(memcmp(rec, recs[i], n) == 0);
	}
	KT_CHECK(!ofi_bundle_next(b, len, &off, &rec, &n));
	KT_CHECK_EQ(off, len);

	KT_CHECK(!ofi_bundle_valid(b, len - 1)); /* the last record cut */
	KT_CHECK(!ofi_bundle_valid(b, len + 2)); /* two bytes after it */
	KT_CHECK(!ofi_bundle_valid(b, 3));	 /* a cut length */
	uint32_t huge = 0xffffffffu;
	memcpy(b + len, &huge, sizeof(huge)); /* a length past the end, no overflow */
	KT_CHECK(!ofi_bundle_valid(b, len + sizeof(huge) + 8));
	off = len;
	KT_CHECK(!ofi_bundle_next(b, len + sizeof(huge) + 8, &off, &rec, &n));
	KT_CHECK_EQ(off, len);
}

/* Small messages wait in the peer's bundle until a flush (or progress)
 * posts it; a message too large for one posts the open bundle first, so
 * the order holds. */
KT_TEST(bundles)
{
	static const size_t sizes[13] = {4, 100, 1024, 16, 8, 300, 64, 200, 8, 9, 40, 3000, 12};
	struct bundle_rx r = {0};
	struct side a, b;
	char why[128];
	int rc;

	if ((rc = pair_open(&a, &b, why, sizeof(why))) == 0)
		KT_SKIP("%s", why);
	KT_CHECK_EQ(rc, 1);
	KT_OK(exchange(&a, &b, 4)); /* connected */
	memcpy(r.len, sizes, sizeof(sizes));

	/* Ten small ones, never flushed: nothing reaches b. */
	for (uint32_t i = 0; i < 10; i++)
		KT_OK(send_sized(&a, i, sizes[i]));
	uint64_t until = kt_now_ms() + 200;
	while (kt_now_ms() < until)
		KT_CHECK(kinet_carrier_ofi.progress(b.c, on_bundled, &r) >= 0);
	KT_CHECK_EQ(r.n, 0);

	/* The flush posts them, in order. */
	uint64_t end = kt_now_ms() + DEADLINE_MS;
	while (kinet_carrier_ofi.flush(a.c) == -EAGAIN && kt_now_ms() < end)
		kinet_carrier_ofi.progress(b.c, on_bundled, &r);
	while (r.n < 10 && kt_now_ms() < end)
		KT_CHECK(kinet_carrier_ofi.progress(b.c, on_bundled, &r) >= 0);
	KT_CHECK_EQ(r.n, 10);

	/* Small, large (alone), small: still in order; progress flushes. */
	for (uint32_t i = 10; i < 13; i++) {
		while ((rc = send_sized(&a, i, sizes[i])) == -EAGAIN && kt_now_ms() < end)
			kinet_carrier_ofi.progress(a.c, on_bundled, &r);
		KT_OK(rc);
	}
	while (r.n < 13 && kt_now_ms() < end) {
		KT_CHECK(kinet_carrier_ofi.progress(a.c, on_bundled, &r) >= 0);
		KT_CHECK(kinet_carrier_ofi.progress(b.c, on_bundled, &r) >= 0);
	}
	KT_CHECK_EQ(r.n, 13);
	KT_CHECK_EQ(r.bad, 0);
	side_close(&a);
	side_close(&b);
}

KT_TEST(peer_gone)
{
	struct side a, b;
	char why[128];
	int rc = 0, st = 0;

	if (in_netns_mode())
		KT_SKIP("in-process tests do not run under tests/netns/run.sh");
	loopback_env();
	if (!strcmp(getenv("KINET_OFI_PROVIDER"), "shm"))
		KT_SKIP("libfabric's shm provider crashes sending to an endpoint closed in the same process");
	if ((rc = side_open(&a, 0, why, sizeof(why))) == 0)
		KT_SKIP("%s", why);
	KT_CHECK(rc == 1);
	KT_CHECK_EQ(side_open(&b, 1, why, sizeof(why)), 1);
	KT_OK(peer_of(&a, &b, &a.peer));
	KT_OK(peer_of(&b, &a, &b.peer));
	KT_OK(exchange(&a, &b, 20));
	side_close(&b);

	uint64_t start = kt_now_ms(), end = start + GONE_DEADLINE_MS;
	rc = 0;
	while (kt_now_ms() < end) {
		rc = send_one(&a, a.sent);
		if (rc == 0)
			a.sent++;
		else if (rc != -EAGAIN)
			break;
		kinet_carrier_ofi.progress(a.c, on_msg, &a);
		if ((st = kinet_carrier_ofi.peer_status(a.c, a.peer)))
			break;
		kt_sleep_ms(1);
	}
	printf("  gone after %llu ms: send %d, peer_status %d\n", (unsigned long long)(kt_now_ms() - start),
	       rc, st);
	KT_CHECK(st != 0 || (rc != 0 && rc != -EAGAIN));
	st = kinet_carrier_ofi.peer_status(a.c, a.peer);
	KT_CHECK(st == -ECONNRESET || st == -EHOSTUNREACH);
	/* and it stays gone: sends fail at once */
	KT_CHECK_EQ(send_one(&a, a.sent), st);

	/* A peer that closed before it was ever contacted: ofi_rxm retries the
	 * refused connection forever (-FI_EAGAIN), so the carrier's silence
	 * timeout decides. */
	side_close(&a);
	setenv("KINET_OFI_PEER_TIMEOUT_MS", "1000", 1);
	rc = side_open(&a, 0, why, sizeof(why));
	unsetenv("KINET_OFI_PEER_TIMEOUT_MS");
	KT_CHECK_EQ(rc, 1);
	struct side c;
	KT_CHECK_EQ(side_open(&c, 1, why, sizeof(why)), 1);
	KT_OK(peer_of(&a, &c, &a.peer));
	side_close(&c);
	start = kt_now_ms(), end = start + GONE_DEADLINE_MS;
	a.sent = 0;
	st = rc = 0;
	while (kt_now_ms() < end) {
		rc = send_one(&a, a.sent);
		if (rc == 0)
			a.sent++;
		else if (rc != -EAGAIN)
			break;
		kinet_carrier_ofi.progress(a.c, on_msg, &a);
		if ((st = kinet_carrier_ofi.peer_status(a.c, a.peer)))
			break;
		kt_sleep_ms(1);
	}
	printf("  never-contacted peer gone after %llu ms: send %d, peer_status %d\n",
	       (unsigned long long)(kt_now_ms() - start), rc, st);
	KT_CHECK(st != 0 || (rc != 0 && rc != -EAGAIN));
	side_close(&a);
}

KT_TEST(registered_buffers)
{
	struct side a, b;
	char why[128];
	int rc;

	if (in_netns_mode())
		KT_SKIP("in-process tests do not run under tests/netns/run.sh");
	loopback_env();
	/* register the bounce buffers even where the provider does not need
	 * it (FI_MR_LOCAL), and pass their descriptors */
	setenv("KINET_OFI_MR_REG", "1", 1);
	rc = side_open(&a, 0, why, sizeof(why));
	if (rc == 1 && side_open(&b, 1, why, sizeof(why)) != 1) {
		side_close(&a);
		rc = -1;
	}
	unsetenv("KINET_OFI_MR_REG");
	if (rc == 0)
		KT_SKIP("%s", why);
	KT_CHECK(rc == 1);
	KT_OK(peer_of(&a, &b, &a.peer));
	KT_OK(peer_of(&b, &a, &b.peer));
	KT_OK(exchange(&a, &b, 300));
	KT_CHECK_EQ(a.bad + b.bad, 0);
	side_close(&a);
	side_close(&b);
}

static void *sender_thread(void *arg)
{
	struct side *s = arg;
	uint64_t end = kt_now_ms() + DEADLINE_MS;

	while (s->sent < s->nmsgs && kt_now_ms() < end) {
		int rc = send_one(s, s->sent);
		if (rc == 0)
			s->sent++;
		else if (rc == -EAGAIN)
			sched_yield();
		else
			break;
	}
	return NULL;
}

KT_TEST(send_while_progressing)
{
	struct side a, b;
	char why[128];
	pthread_t t;
	int rc;

	if ((rc = pair_open(&a, &b, why, sizeof(why))) == 0)
		KT_SKIP("%s", why);
	KT_CHECK_EQ(rc, 1);
	/* one thread sends on a while this one drives a's and b's progress */
	a.nmsgs = 1000;
	KT_OK(pthread_create(&t, NULL, sender_thread, &a));
	uint64_t end = kt_now_ms() + DEADLINE_MS;
	while (b.received < a.nmsgs && kt_now_ms() < end) {
		kinet_carrier_ofi.progress(a.c, on_msg, &a);
		kinet_carrier_ofi.progress(b.c, on_msg, &b);
	}
	pthread_join(t, NULL);
	KT_CHECK_EQ(a.sent, a.nmsgs);
	KT_CHECK_EQ(b.received, a.nmsgs);
	KT_CHECK_EQ(b.bad, 0);
	side_close(&a);
	side_close(&b);
}

/* ---- across processes (tests/netns/run.sh) -------------------------------- */

static int sock_wait(int fd, short ev, uint64_t end)
{
	struct pollfd p = {.fd = fd, .events = ev};
	int left = (int)(end > kt_now_ms() ? end - kt_now_ms() : 0);

	return poll(&p, 1, left) == 1 ? 0 : -1;
}

static int sock_xfer(int fd, void *buf, size_t len, bool out, uint64_t end)
{
	size_t done = 0;

	while (done < len) {
		if (sock_wait(fd, out ? POLLOUT : POLLIN, end))
			return -1;
		ssize_t n = out ? send(fd, (char *)buf + done, len - done, MSG_NOSIGNAL)
				: recv(fd, (char *)buf + done, len - done, 0);
		if (n <= 0)
			return -1;
		done += (size_t)n;
	}
	return 0;
}

/* Rank 0 listens at root, rank 1 connects (retrying until end). */
static int root_socket(int rank, const char *root, uint64_t end)
{
	char host[64];
	const char *colon = strrchr(root, ':');
	struct sockaddr_in sa = {.sin_family = AF_INET};
	int fd, one = 1;

	if (!colon || (size_t)(colon - root) >= sizeof(host))
		return -1;
	memcpy(host, root, (size_t)(colon - root));
	host[colon - root] = 0;
	sa.sin_port = htons((uint16_t)atoi(colon + 1));
	if (inet_pton(AF_INET, host, &sa.sin_addr) != 1)
		return -1;
	if (rank == 0) {
		int lfd = socket(AF_INET, SOCK_STREAM, 0);
		setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) || listen(lfd, 1) ||
		    sock_wait(lfd, POLLIN, end)) {
			perror("root listen");
			close(lfd);
			return -1;
		}
		fd = accept(lfd, NULL, NULL);
		close(lfd);
		return fd;
	}
	while (kt_now_ms() < end) {
		fd = socket(AF_INET, SOCK_STREAM, 0);
		if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0)
			return fd;
		close(fd);
		kt_sleep_ms(50);
	}
	return -1;
}

KT_TEST(two_ranks)
{
	struct side s;
	char why[128];
	uint8_t addr[KINET_CARRIER_ADDR_MAX], paddr[KINET_CARRIER_ADDR_MAX];
	uint32_t len = sizeof(addr), plen = 0;
	size_t alen = sizeof(addr);
	const char *root = getenv("KINET_ROOT");
	uint64_t end = kt_now_ms() + DEADLINE_MS;
	int rc, fd;

	if (!in_netns_mode())
		KT_SKIP("needs KINET_RANK/KINET_NRANKS/KINET_ROOT (tests/netns/run.sh)");
	int rank = atoi(getenv("KINET_RANK"));
	KT_CHECK(atoi(getenv("KINET_NRANKS")) == 2 && (rank == 0 || rank == 1) && root);
	if ((rc = side_open(&s, (uint8_t)rank, why, sizeof(why))) == 0)
		KT_SKIP("%s", why);
	KT_CHECK(rc == 1);
	KT_OK(kinet_carrier_ofi.address(s.c, addr, &alen));
	len = (uint32_t)alen;
	fd = root_socket(rank, root, end);
	KT_CHECK(fd >= 0);
	KT_OK(sock_xfer(fd, &len, sizeof(len), true, end));
	KT_OK(sock_xfer(fd, addr, len, true, end));
	KT_OK(sock_xfer(fd, &plen, sizeof(plen), false, end));
	KT_CHECK(plen > 0 && plen <= sizeof(paddr));
	KT_OK(sock_xfer(fd, paddr, plen, false, end));
	KT_OK(kinet_carrier_ofi.peer_get(s.c, paddr, plen, &s.peer));

	s.nmsgs = NMSGS;
	while (s.received < s.nmsgs && kt_now_ms() < end) {
		KT_OK(pump(&s));
		KT_CHECK(kinet_carrier_ofi.progress(s.c, on_msg, &s) >= 0);
		KT_OK(kinet_carrier_ofi.peer_status(s.c, s.peer));
	}
	printf("  rank %d: sent %u, received %u, bad %d, -EAGAIN %d\n", rank, s.sent, s.received, s.bad,
	       s.eagain);
	KT_CHECK_EQ(s.received, s.nmsgs);
	KT_CHECK_EQ(s.bad, 0);
	KT_CHECK(s.from == s.peer);

	/* Say done, and keep progressing until the peer is done too. */
	uint8_t byte = 1;
	KT_OK(sock_xfer(fd, &byte, 1, true, end));
	while (kt_now_ms() < end) {
		kinet_carrier_ofi.progress(s.c, on_msg, &s);
		if (sock_wait(fd, POLLIN, kt_now_ms() + 1) == 0)
			break;
	}
	KT_OK(sock_xfer(fd, &byte, 1, false, end));
	close(fd);
	side_close(&s);
}

KT_MAIN(both_directions_in_order, back_pressure, send_from_deliver, registered_buffers,
	send_while_progressing, bundle_format, bundles, peer_gone, two_ranks)
