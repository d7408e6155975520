/*
 * Carrier `node`: messages between processes of one host over POSIX shared
 * memory.
 *
 * Every endpoint owns one inbox segment, "/kinet-<node id hex>-<seq>",
 * split into NODE_SLOTS single-producer single-consumer rings.  A sender
 * claims a free slot of the receiver's inbox on its first peer_get (compare
 * and swap on the slot state, then it writes its own address there so the
 * receiver can answer) and is the only producer of that ring; the owner is
 * its only consumer.  So no lock is shared between processes, and a process
 * that dies in the middle of a send leaves an unpublished record behind,
 * never a held lock: nobody hangs on it.
 *
 * A ring holds variable-size records {u32 len, u32 flags} + payload padded
 * to 8 bytes; a record that does not fit before the end is preceded by a
 * wrap marker.  head (consumer) and tail (producer) count bytes and sit on
 * their own cache lines; the producer publishes with a release store of
 * tail after writing the record, the consumer frees with a release store of
 * head after the deliver callback returned (the message is read in place).
 *
 * Liveness: the segment carries the owner's pid and a `closed` flag set at
 * close; peer_status reports -ECONNRESET once the flag is set or kill(pid,
 * 0) says ESRCH (checked at most every NODE_LIVENESS_NS per peer).  A
 * sender that closes marks its slot SLOT_CLOSED; the owner drains it and
 * frees the slot.  The slot of a sender that died is not reclaimed (the
 * inbox has NODE_SLOTS of them; a receiver's endpoint lives as long as its
 * context).
 *
 * Names do not outlive their processes: an exit without kinet_ctx_close
 * unlinks them (atexit), and opening an inbox unlinks the inboxes of
 * processes that died (SIGKILL) - this assumes /dev/shm is not shared
 * across pid namespaces, as host ids (remote.c) already do.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "carrier.h"
#include "node_layout.h"

#define NODE_LIVENESS_NS 10000000ull

struct kinet_carrier_peer {
	uint8_t addr[NODE_ADDR_LEN];
	struct node_seg *seg; /* the peer's inbox, mapped */
	uint32_t slot;	      /* ours in it */
	uint64_t checked_ns;
	int status;
	struct kinet_carrier_peer *next;
};

struct kinet_carrier {
	struct kinet_ctx *ctx;
	pthread_mutex_t lock; /* peers list, producers */
	char name[NODE_NAME_MAX];
	uint8_t addr[NODE_ADDR_LEN];
	struct node_seg *seg; /* our inbox */
	struct kinet_carrier_peer *peers;
	struct kinet_carrier_peer *from[NODE_SLOTS]; /* reply path of each inbox slot */
	bool from_failed[NODE_SLOTS];
};

static atomic_uint node_seq;
/* The edge from a sender's tail store to the receiver's load, which TSan
 * cannot see (the ring is mapped at another address on each side). */
static char tsan_edge;

/* Inboxes of this process, for the exit handler. */
static pthread_mutex_t live_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t live_once = PTHREAD_ONCE_INIT;
static struct kinet_carrier *live[64];

static void live_atexit(void)
{
	pthread_mutex_lock(&live_lock);
	for (int i = 0; i < 64; i++)
		if (live[i])
			shm_unlink(live[i]->name);
	pthread_mutex_unlock(&live_lock);
}

static void live_init(void)
{
	atexit(live_atexit);
}

static void live_set(struct kinet_carrier *c, struct kinet_carrier *with)
{
	pthread_mutex_lock(&live_lock);
	for (int i = 0; i < 64; i++) {
		if (live[i] == c) {
			live[i] = with;
			break;
		}
	}
	pthread_mutex_unlock(&live_lock);
}

/* Unlinks the inboxes whose owner died without closing them. */
static void gc_dead_inboxes(void)
{
	DIR *d = opendir("/dev/shm");
	struct dirent *e;

	if (!d)
		return;
	while ((e = readdir(d))) {
		char name[NODE_NAME_MAX + 8];
		struct node_seg *seg;
		int fd;

		if (strncmp(e->d_name, "kinet-", 6) || strlen(e->d_name) >= NODE_NAME_MAX)
			continue;
		snprintf(name, sizeof(name), "/%s", e->d_name);
		fd = shm_open(name, O_RDONLY, 0);
		if (fd < 0)
			continue;
		/* An inbox another process is creating right now may still be
		 * empty: reading it through a mapping would raise SIGBUS. */
		struct stat st;
		if (fstat(fd, &st) || (size_t)st.st_size < sizeof(*seg)) {
			close(fd);
			continue;
		}
		seg = mmap(NULL, sizeof(*seg), PROT_READ, MAP_SHARED, fd, 0);
		close(fd);
		if (seg == MAP_FAILED)
			continue;
		if (__atomic_load_n(&seg->magic, __ATOMIC_ACQUIRE) == NODE_MAGIC && seg->owner_pid > 0 &&
		    kill(seg->owner_pid, 0) && errno == ESRCH) {
			KINET_DBG("node carrier: removing %s of dead process %d", name, seg->owner_pid);
			shm_unlink(name);
		}
		munmap(seg, sizeof(*seg));
	}
	closedir(d);
}

static uint8_t *ring_of(struct node_seg *seg, uint32_t slot)
{
	return (uint8_t *)(seg + 1) + (size_t)slot * NODE_RING_BYTES;
}

static int node_open(struct kinet_ctx *ctx, struct kinet_carrier **out)
{
	struct kinet_carrier *c = calloc(1, sizeof(*c));
	uint32_t seq = atomic_fetch_add(&node_seq, 1);
	int fd;

	if (!c)
		return -ENOMEM;
	if (seq == 0)
		gc_dead_inboxes();
	c->ctx = ctx;
	pthread_mutex_init(&c->lock, NULL);
	for (int i = 0; i < 8; i++)
		c->addr[i] = (uint8_t)(ctx->node_id >> (8 * i));
	for (int i = 0; i < 4; i++)
		c->addr[8 + i] = (uint8_t)(seq >> (8 * i));
	node_addr_name(c->addr, c->name);
	fd = shm_open(c->name, O_RDWR | O_CREAT | O_EXCL, 0600);
	if (fd < 0) {
		int err = -errno;

		KINET_ERR("node carrier: shm_open(%s): %s", c->name, strerror(errno));
		free(c);
		return err;
	}
	/* Allocated up front: a sparse file on a full /dev/shm would turn the
	 * first touch of a ring into SIGBUS instead of an error here. */
	int rc = posix_fallocate(fd, 0, (off_t)NODE_SEG_BYTES);
	if (rc ||
	    (c->seg = mmap(NULL, NODE_SEG_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)) == MAP_FAILED) {
		int err = rc ? -rc : -errno;

		errno = rc ? rc : errno;

		KINET_ERR("node carrier: cannot size or map %s (%zu bytes): %s", c->name, NODE_SEG_BYTES,
			  strerror(errno));
		close(fd);
		shm_unlink(c->name);
		free(c);
		return err;
	}
	close(fd);
	c->seg->version = NODE_VERSION;
	c->seg->owner_pid = getpid();
	c->seg->nslots = NODE_SLOTS;
	c->seg->ring_bytes = NODE_RING_BYTES;
	/* Release: a sender that sees the magic sees the rest. */
	__atomic_store_n(&c->seg->magic, NODE_MAGIC, __ATOMIC_RELEASE);
	KINET_DBG("node carrier: inbox %s", c->name);
	pthread_once(&live_once, live_init);
	live_set(NULL, c);
	*out = c;
	return 0;
}

static void node_close(struct kinet_carrier *c)
{
	struct kinet_carrier_peer *p, *n;

	atomic_store(&c->seg->closed, 1);
	shm_unlink(c->name);
	live_set(c, NULL);
	for (p = c->peers; p; p = n) {
		n = p->next;
		atomic_store_explicit(&p->seg->slots[p->slot].state, SLOT_CLOSED, memory_order_release);
		munmap(p->seg, NODE_SEG_BYTES);
		free(p);
	}
	munmap(c->seg, NODE_SEG_BYTES);
	pthread_mutex_destroy(&c->lock);
	free(c);
}

static int node_address(struct kinet_carrier *c, void *addr, size_t *len)
{
	if (*len < NODE_ADDR_LEN)
		return -ENOSPC;
	memcpy(addr, c->addr, NODE_ADDR_LEN);
	*len = NODE_ADDR_LEN;
	return 0;
}

/* Maps the inbox at addr and claims a ring in it; c->lock held. */
static int peer_attach(struct kinet_carrier *c, const uint8_t *addr, struct kinet_carrier_peer **out)
{
	char name[NODE_NAME_MAX];
	struct kinet_carrier_peer *p;
	struct node_seg *seg;
	int fd;

	node_addr_name(addr, name);
	fd = shm_open(name, O_RDWR, 0);
	if (fd < 0) {
		KINET_WARN("node carrier: peer inbox %s: %s", name, strerror(errno));
		return errno == ENOENT ? -ECONNRESET : -errno;
	}
	struct stat st;
	if (fstat(fd, &st) || (size_t)st.st_size < NODE_SEG_BYTES) {
		KINET_ERR("node carrier: peer inbox %s is not a complete kinet inbox", name);
		close(fd);
		return -EPROTO;
	}
	seg = mmap(NULL, NODE_SEG_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (seg == MAP_FAILED)
		return -errno;
	if (__atomic_load_n(&seg->magic, __ATOMIC_ACQUIRE) != NODE_MAGIC || seg->version != NODE_VERSION ||
	    seg->nslots != NODE_SLOTS || seg->ring_bytes != NODE_RING_BYTES) {
		KINET_ERR("node carrier: %s is not a kinet inbox of this version", name);
		munmap(seg, NODE_SEG_BYTES);
		return -EPROTO;
	}
	p = calloc(1, sizeof(*p));
	if (!p) {
		munmap(seg, NODE_SEG_BYTES);
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < NODE_SLOTS; i++) {
		struct node_slot *s = &seg->slots[i];
		uint32_t expect = SLOT_FREE;

		if (!atomic_compare_exchange_strong(&s->state, &expect, SLOT_CLAIMED))
			continue;
		s->sender_pid = getpid();
		memcpy(s->sender_addr, c->addr, NODE_ADDR_LEN);
		atomic_store_explicit(&s->head, 0, memory_order_relaxed);
		atomic_store_explicit(&s->tail, 0, memory_order_relaxed);
		atomic_store_explicit(&s->state, SLOT_ACTIVE, memory_order_release);
		memcpy(p->addr, addr, NODE_ADDR_LEN);
		p->seg = seg;
		p->slot = i;
		p->next = c->peers;
		c->peers = p;
		*out = p;
		return 0;
	}
	KINET_ERR("node carrier: inbox %s has no free ring (%u senders)", name, NODE_SLOTS);
	munmap(seg, NODE_SEG_BYTES);
	free(p);
	return -EBUSY;
}

static int node_peer_get(struct kinet_carrier *c, const void *addr, size_t len,
			 struct kinet_carrier_peer **out)
{
	struct kinet_carrier_peer *p;
	int ret = 0;

	if (len != NODE_ADDR_LEN)
		return -EINVAL;
	pthread_mutex_lock(&c->lock);
	for (p = c->peers; p; p = p->next)
		if (!memcmp(p->addr, addr, NODE_ADDR_LEN))
			break;
	if (p)
		*out = p;
	else
		ret = peer_attach(c, addr, out);
	pthread_mutex_unlock(&c->lock);
	return ret;
}

static int node_peer_status(struct kinet_carrier *c, struct kinet_carrier_peer *p)
{
	uint64_t now = kinet_now_ns();

	(void)c;
	if (p->status)
		return p->status;
	if (atomic_load_explicit(&p->seg->closed, memory_order_acquire)) {
		p->status = -ECONNRESET;
	} else if (now - p->checked_ns > NODE_LIVENESS_NS) {
		p->checked_ns = now;
		if (kill(p->seg->owner_pid, 0) && errno == ESRCH)
			p->status = -ECONNRESET;
	}
	return p->status;
}

static int node_send(struct kinet_carrier *c, struct kinet_carrier_peer *p, const struct iovec *iov,
		     int iovcnt)
{
	size_t len = 0;
	int ret;

	for (int i = 0; i < iovcnt; i++)
		len += iov[i].iov_len;
	if (len > KINET_CARRIER_MAX_MSG)
		return -EMSGSIZE;
	ret = node_peer_status(c, p);
	if (ret)
		return ret;

	pthread_mutex_lock(&c->lock);
	struct node_slot *s = &p->seg->slots[p->slot];
	uint8_t *ring = ring_of(p->seg, p->slot);
	uint64_t tail = atomic_load_explicit(&s->tail, memory_order_relaxed);
	uint64_t head = atomic_load_explicit(&s->head, memory_order_acquire);
	uint64_t need = 8 + ((len + 7) & ~(size_t)7);
	uint64_t pos = tail % NODE_RING_BYTES;
	uint64_t skip = pos + need > NODE_RING_BYTES ? NODE_RING_BYTES - pos : 0;

	if (NODE_RING_BYTES - (tail - head) < skip + need) {
		pthread_mutex_unlock(&c->lock);
		return -EAGAIN;
	}
	if (skip) {
		uint32_t hdr[2] = {0, NODE_REC_WRAP};

		memcpy(ring + pos, hdr, sizeof(hdr));
		tail += skip;
		pos = 0;
	}
	uint32_t hdr[2] = {(uint32_t)len, 0};
	memcpy(ring + pos, hdr, sizeof(hdr));
	size_t off = pos + 8;
	for (int i = 0; i < iovcnt; i++) {
		memcpy(ring + off, iov[i].iov_base, iov[i].iov_len);
		off += iov[i].iov_len;
	}
	/* Release: the record is complete before the consumer can see it. */
	atomic_store_explicit(&s->tail, tail + need, memory_order_release);
	KINET_TSAN_RELEASE(&tsan_edge);
	pthread_mutex_unlock(&c->lock);
	return 0;
}

/* The reply path of inbox slot i: the sender's own inbox. */
static struct kinet_carrier_peer *slot_peer(struct kinet_carrier *c, uint32_t i)
{
	struct node_slot *s = &c->seg->slots[i];

	if (!c->from[i] && !c->from_failed[i] &&
	    node_peer_get(c, s->sender_addr, NODE_ADDR_LEN, &c->from[i]) != 0)
		c->from_failed[i] = true;
	return c->from[i];
}

/* A ring whose producer broke the format: logged the first time and then
 * each time the count doubles (a peer cannot flood the log). */
static void garbled(struct kinet_carrier *c, uint32_t i, const char *what)
{
	static atomic_ulong count;
	unsigned long n = atomic_fetch_add(&count, 1) + 1;

	if (!(n & (n - 1)))
		KINET_WARN("node carrier: ring %u of %s: %s; its content is dropped (%lu such rings so far)",
			   i, c->name, what, n);
}

/* Delivers what ring i holds; returns the number of messages.  Everything
 * in the ring, head and tail included, is written by another process and
 * checked before use: a record must lie between head and tail and inside
 * the ring, so the loop ends whatever the producer wrote. */
static int drain_slot(struct kinet_carrier *c, uint32_t i, kinet_carrier_deliver_fn deliver, void *arg)
{
	struct node_slot *s = &c->seg->slots[i];
	uint8_t *ring = ring_of(c->seg, i);
	uint64_t head = atomic_load_explicit(&s->head, memory_order_relaxed);
	uint64_t tail = atomic_load_explicit(&s->tail, memory_order_acquire);
	int n = 0;

	KINET_TSAN_ACQUIRE(&tsan_edge);
	while (head != tail) {
		uint64_t pos = head % NODE_RING_BYTES, avail = tail - head, need = 0;
		const char *bad = NULL;
		uint32_t hdr[2];

		if (avail > NODE_RING_BYTES || avail < 8 || (pos & 7) || (avail & 7)) {
			bad = "head and tail are not a record apart";
		} else {
			memcpy(hdr, ring + pos, sizeof(hdr));
			if (hdr[1] & NODE_REC_WRAP)
				need = NODE_RING_BYTES - pos; /* the rest of the ring */
			else if (hdr[0] > KINET_CARRIER_MAX_MSG)
				bad = "a record longer than any message";
			else
				need = 8 + ((hdr[0] + 7ull) & ~7ull);
			if (!bad && (need > NODE_RING_BYTES - pos || need > avail))
				bad = "a record or wrap marker reaches past the tail or the ring's end";
		}
		if (bad) {
			garbled(c, i, bad);
			head = tail;
		} else if (hdr[1] & NODE_REC_WRAP) {
			head += need;
		} else {
			struct kinet_carrier_peer *p = slot_peer(c, i);

			if (p)
				deliver(c, p, ring + pos + 8, hdr[0], arg);
			head += need;
			n++;
		}
		atomic_store_explicit(&s->head, head, memory_order_release);
	}
	return n;
}

static int node_progress(struct kinet_carrier *c, kinet_carrier_deliver_fn deliver, void *arg)
{
	int n = 0;

	for (uint32_t i = 0; i < NODE_SLOTS; i++) {
		struct node_slot *s = &c->seg->slots[i];
		uint32_t st = atomic_load_explicit(&s->state, memory_order_acquire);

		if (st == SLOT_ACTIVE) {
			n += drain_slot(c, i, deliver, arg);
		} else if (st == SLOT_CLOSED) {
			/* The sender left: deliver its last words, free the ring. */
			n += drain_slot(c, i, deliver, arg);
			c->from[i] = NULL;
			c->from_failed[i] = false;
			atomic_store_explicit(&s->state, SLOT_FREE, memory_order_release);
		}
	}
	return n;
}

const struct kinet_carrier_ops kinet_carrier_node = {
	.name = "node",
	.open = node_open,
	.close = node_close,
	.address = node_address,
	.peer_get = node_peer_get,
	.send = node_send,
	.progress = node_progress,
	.peer_status = node_peer_status,
};
