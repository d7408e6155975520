/*
 * A malicious or broken peer (issue 32): messages of the remote protocol
 * crafted field by field and sent through a carrier endpoint of another
 * context (as a process that knows the target's address would), and
 * records written straight into the target's shared-memory inbox.  Each
 * case asserts what the target keeps (bounded, measured), that nothing
 * hangs (an alarm turns a hang into a failure), and the completions.
 *
 * Runs over the carrier $KINET_TRANSPORT names (node when unset; the ofi
 * run sets ofi): the inbox cases need node and skip otherwise.
 * White-box: links the library's objects for the carrier and the
 * protocol's structures.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <malloc.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include "internal.h"
#include "kt_host.h"
#include "node_layout.h"
#include "remote.h"

#define INFO_NODE_OFF 8
#define INFO_OFI_LEN_OFF 20
#define INFO_OFI_OFF 21
#define INFO_TOKEN_OFF (KINET_QP_INFO_TRANSPORT_BYTES - 8)
#define NEVER_MS 0xffffffffu /* the sender's timeout: 49 days */

static bool over_ofi(void)
{
	const char *t = getenv("KINET_TRANSPORT");
	return t && !strcmp(t, "ofi");
}

static uint64_t get64(const uint8_t *p)
{
	uint64_t v = 0;
	for (int i = 0; i < 8; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

/* The target: a context whose QP `qp` is connected to `peer_qp` of the
 * attacker's context, which also sends the crafted messages (its engine
 * reads the answers unless paused). */
struct scene {
	struct kinet_ctx *target, *attacker;
	struct kt_pair pair; /* qp[0] in attacker, qp[1] in target */
	struct kt_buf tbuf;  /* in the target, remotely writable */
	struct kinet_qp_info tinfo;
	struct rp_carrier *car;
	struct kinet_carrier_peer *to_target;
	uint64_t token; /* the target's */
	uint64_t next_seq;
};

static int scene_open(struct scene *s, uint32_t timeout_ms)
{
	struct kt_pair_opts o;
	struct rp_state *rs;
	int rc;

	memset(s, 0, sizeof(*s));
	if (!getenv("KINET_TRANSPORT"))
		setenv("KINET_TRANSPORT", "node", 1);
	if ((rc = kt_ctx_open(1, &s->attacker)) || (rc = kt_ctx_open(1, &s->target)))
		return rc;
	kt_pair_opts_init(&o);
	o.timeout_ms = timeout_ms;
	if ((rc = kt_pair_create(&s->pair, s->attacker, s->target, &o)))
		return rc;
	if ((rc = kt_buf_alloc(s->target, &s->tbuf, 1 << 20, KT_ACC_ALL, 0)))
		return rc;
	if ((rc = kinet_qp_pack(s->pair.qp[1], &s->tinfo)))
		return rc;
	s->token = get64(s->tinfo.transport + INFO_TOKEN_OFF);
	rs = rp_state_get(s->attacker);
	pthread_mutex_lock(&rs->lock);
	s->car = rp_carrier_get(rs, over_ofi() ? RP_OFI : RP_NODE, true);
	pthread_mutex_unlock(&rs->lock);
	if (!s->car)
		return -ENODEV;
	if (over_ofi())
		rc = s->car->ops->peer_get(s->car->c, s->tinfo.transport + INFO_OFI_OFF,
					   s->tinfo.transport[INFO_OFI_LEN_OFF], &s->to_target);
	else
		rc = s->car->ops->peer_get(s->car->c, s->tinfo.transport + INFO_NODE_OFF, NODE_ADDR_LEN,
					   &s->to_target);
	s->next_seq = 1;
	return rc;
}

static void scene_close(struct scene *s);

/* Opens the scene, or skips the test where that carrier cannot open. */
#define SCENE_OPEN(s, timeout_ms)                                                                            \
	do {                                                                                                 \
		int rc_ = scene_open((s), (timeout_ms));                                                     \
		if (rc_) {                                                                                   \
			scene_close(s);                                                                      \
			KT_SKIP("no %s carrier here (%s)", over_ofi() ? "ofi" : "node",                      \
				kinet_strerror(rc_));                                                        \
		}                                                                                            \
	} while (0)

static void scene_close(struct scene *s)
{
	kt_pair_destroy(&s->pair);
	kt_buf_free(&s->tbuf);
	if (s->target)
		KT_OK(kinet_ctx_close(s->target));
	if (s->attacker)
		KT_OK(kinet_ctx_close(s->attacker));
}

/* A request as the attacker's connected QP would send it (the caller
 * changes what it lies about). */
static struct rp_msg request(struct scene *s, uint8_t opcode, uint32_t length)
{
	struct rp_msg m;

	memset(&m, 0, sizeof(m));
	m.magic = RP_MAGIC;
	m.version = RP_VERSION;
	m.type = RP_REQ;
	m.opcode = opcode;
	m.flags = RP_FLAG_LAST;
	m.src_qpn = kinet_qp_num(s->pair.qp[0]);
	m.dst_qpn = kinet_qp_num(s->pair.qp[1]);
	m.src_node = s->attacker->node_id;
	m.token = s->token;
	m.src_token = rp_state_get(s->attacker)->token;
	m.seq = s->next_seq++;
	m.raddr = kt_addr(&s->tbuf, 0);
	m.rkey = kt_rkey(&s->tbuf);
	m.length = length;
	m.timeout_ms = NEVER_MS;
	m.rnr_timeout_ms = NEVER_MS;
	return m;
}

/* Sends m with n bytes of payload, waiting for carrier room (the target
 * drains it); 0 or the carrier's error. */
static int send_raw(struct scene *s, const struct rp_msg *m, const void *payload, uint32_t n)
{
	static const uint8_t zero[RP_FRAG];
	struct rp_msg copy = *m;
	struct iovec iov[2] = {{&copy, sizeof(copy)}, {(void *)(payload ? payload : zero), n}};
	uint64_t end = kt_now_ms() + 20000;
	int rc;

	copy.frag_len = n;
	while ((rc = s->car->ops->send(s->car->c, s->to_target, iov, n ? 2 : 1)) == -EAGAIN &&
	       kt_now_ms() < end)
		sched_yield();
	return rc;
}

/* m's 16 bytes as two fragments of 8; the second says length last_length
 * and key last_rkey (what a lying or broken sender changes). */
static int send_halves(struct scene *s, struct rp_msg m, uint32_t last_length, uint32_t last_rkey)
{
	static const uint8_t part[8] = {1, 2, 3, 4, 5, 6, 7, 8};
	int rc;

	m.flags = 0;
	if ((rc = send_raw(s, &m, part, 8)))
		return rc;
	m.offset = 8;
	m.flags = RP_FLAG_LAST;
	m.length = last_length;
	m.rkey = last_rkey;
	return send_raw(s, &m, part, 8);
}

struct stats {
	uint64_t drops[RP_DROP_REASONS];
	size_t held;
};

static struct stats target_stats(struct scene *s)
{
	struct stats st;

	memset(&st, 0, sizeof(st));
	if (kinet_remote_stats(s->target, st.drops, NULL, &st.held)) {
		st.held = SIZE_MAX; /* fails every check that reads it */
		memset(st.drops, 0xff, sizeof(st.drops));
	}
	return st;
}

/* Waits until the target counted `want` drops of reason `why` (or the
 * deadline); returns the count seen. */
static uint64_t wait_drops(struct scene *s, enum rp_drop why, uint64_t want)
{
	uint64_t end = kt_now_ms() + 10000 * kt_time_scale();
	struct stats st;

	do {
		st = target_stats(s);
		if (st.drops[why] >= want)
			break;
		kt_sleep_ms(2);
	} while (kt_now_ms() < end);
	return st.drops[why];
}

/* Heap in use, or 0 where the allocator is not glibc's (sanitizers). */
static size_t heap_in_use(void)
{
	return mallinfo2().uordblks;
}

static bool heap_measured(size_t before)
{
	return before && heap_in_use() != before;
}

#define FLOOD 2000
#define FLOOD_LEN (64u * 1024u)

/* A stray (wrong token), a request for a QP that does not exist, and one
 * from a QP the target is not connected to: none is held, each counted. */
KT_TEST(strays_dropped_unheld)
{
	struct scene s;
	SCENE_OPEN(&s, 2000 * kt_time_scale());
	size_t heap0 = heap_in_use();
	struct stats st0 = target_stats(&s);
	for (int i = 0; i < FLOOD; i++) {
		struct rp_msg m = request(&s, KINET_WQE_OP_RDMA_WRITE, FLOOD_LEN);

		if (i % 3 == 0)
			m.token ^= 0x5a5a;
		else if (i % 3 == 1)
			m.dst_qpn = 0xabcde;
		else
			m.src_qpn = 0x100000 + (uint32_t)i; /* a new sender each time */
		KT_OK(send_raw(&s, &m, NULL, FLOOD_LEN));
	}
	KT_CHECK_EQ(wait_drops(&s, RP_DROP_TOKEN, st0.drops[RP_DROP_TOKEN] + FLOOD / 3 + 1),
		    st0.drops[RP_DROP_TOKEN] + FLOOD / 3 + 1);
	KT_CHECK_EQ(wait_drops(&s, RP_DROP_NO_QP, st0.drops[RP_DROP_NO_QP] + FLOOD / 3 + 1),
		    st0.drops[RP_DROP_NO_QP] + FLOOD / 3 + 1);
	KT_CHECK_EQ(wait_drops(&s, RP_DROP_SENDER, st0.drops[RP_DROP_SENDER] + FLOOD / 3),
		    st0.drops[RP_DROP_SENDER] + FLOOD / 3);
	struct stats st = target_stats(&s);
	KT_CHECK_EQ(st.held, 0);
	if (heap_measured(heap0)) {
		printf("heap in use before %zu, after %d x %u B of strays %zu\n", heap0, FLOOD, FLOOD_LEN,
		       heap_in_use());
		KT_CHECK(heap_in_use() < heap0 + (8u << 20));
	}
	KT_CHECK(kt_mem_is(s.tbuf.p, 0, s.tbuf.len)); /* nothing was written */
	/* The connection itself is unharmed. */
	struct kt_buf src;
	struct kinet_wc wc;
	KT_OK(kt_buf_alloc(s.attacker, &src, 64, KT_ACC_ALL, 7));
	struct kinet_sge g = kt_sge(&src, 0, 64);
	struct kinet_send_wr w = kt_wr(9, KINET_WR_RDMA_WRITE, KINET_SEND_SIGNALED, &g, 1,
				       kt_addr(&s.tbuf, 0), kt_rkey(&s.tbuf));
	KT_OK(kt_post(s.pair.qp[0], &w));
	KT_OK(kt_poll1(s.pair.cq[0], &wc));
	KT_OK(kt_wc_expect(&wc, 9, 0));
	kt_buf_free(&src);
	scene_close(&s);
}

/* An unconnected QP of the target, with timeout t. */
static struct kinet_qp *idle_qp(struct scene *s, uint32_t timeout_ms)
{
	struct kinet_qp_attr a;
	struct kinet_qp *qp = NULL;

	kinet_qp_attr_init(&a);
	a.send_cq = s->pair.cq[1];
	a.timeout_ms = timeout_ms;
	if (kinet_qp_create(s->target, &a, &qp))
		return NULL;
	return qp;
}

/* n 64 KiB writes to qp from invented senders, each asking to be held for
 * 49 days; returns the most held seen while sending. */
static size_t flood_holds(struct scene *s, struct kinet_qp *qp, int n, uint32_t first_sender)
{
	size_t peak = 0;

	for (int i = 0; i < n; i++) {
		struct rp_msg m = request(s, KINET_WQE_OP_RDMA_WRITE, FLOOD_LEN);

		m.dst_qpn = kinet_qp_num(qp);
		m.src_qpn = first_sender + (uint32_t)i;
		if (send_raw(s, &m, NULL, FLOOD_LEN))
			return SIZE_MAX; /* fails the caller's bound */
		if (i % 64 == 0 || i == n - 1) {
			size_t h = target_stats(s).held;
			peak = h > peak ? h : peak;
		}
	}
	return peak;
}

/* Requests for a QP that is not connected yet (its peer may be faster) are
 * held, but within the per-peer bound; those of a QP that went are let go;
 * and a held request waits for the target QP's own timeout, not the 49
 * days the sender asks for. */
KT_TEST(held_requests_bounded_and_expire)
{
	struct scene s;
	struct kinet_qp *idle;
	SCENE_OPEN(&s, 2000 * kt_time_scale());
	/* A timeout the flood cannot outlast, however loaded the machine. */
	KT_CHECK((idle = idle_qp(&s, 600000)) != NULL);
	size_t heap0 = heap_in_use();
	size_t peak = flood_holds(&s, idle, FLOOD, 0x200000);
	struct stats st = target_stats(&s);
	printf("held at most %zu bytes for %d x %u B sent; %llu over the bound\n", peak, FLOOD, FLOOD_LEN,
	       (unsigned long long)st.drops[RP_DROP_LIMIT]);
	KT_CHECK(peak <= RP_HOLD_PEER_MAX);
	KT_CHECK(st.drops[RP_DROP_LIMIT] > 0);
	if (heap_measured(heap0)) {
		printf("heap in use before %zu, after %zu\n", heap0, heap_in_use());
		/* Over ofi the heap also holds libfabric's own queues of this
		 * process, which plays both sides here: what the target keeps is
		 * the held bytes checked above. */
		if (!over_ofi())
			KT_CHECK(heap_in_use() < heap0 + RP_HOLD_PEER_MAX + (8u << 20));
	}
	/* The QP goes: what was held for it goes too. */
	KT_OK(kinet_qp_destroy(idle));
	uint64_t end = kt_now_ms() + 10000 * kt_time_scale();
	while (target_stats(&s).held && kt_now_ms() < end)
		kt_sleep_ms(5);
	KT_CHECK_EQ(target_stats(&s).held, 0);

	/* A QP of 300 ms: its held requests expire. */
	uint32_t t = 300 * kt_time_scale();
	uint64_t expired = target_stats(&s).drops[RP_DROP_EXPIRED];
	KT_CHECK((idle = idle_qp(&s, t)) != NULL);
	flood_holds(&s, idle, 16, 0x300000);
	/* Until they arrived (over ofi, behind the first flood's backlog),
	 * were held and expired: long before the sender's 49 days. */
	end = kt_now_ms() + 20000 * kt_time_scale();
	while (((st = target_stats(&s)).held || st.drops[RP_DROP_EXPIRED] == expired) && kt_now_ms() < end)
		kt_sleep_ms(5);
	KT_CHECK_EQ(st.held, 0);
	KT_CHECK(st.drops[RP_DROP_EXPIRED] > expired);
	KT_CHECK(kt_mem_is(s.tbuf.p, 0, s.tbuf.len));
	KT_OK(kinet_qp_destroy(idle));
	scene_close(&s);
}

#define READS 4000
#define READ_LEN (16u * 1024u)

/* Reads whose answers the requester never collects (its engine paused):
 * the target stops answering past RP_OUT_BUSY instead of queueing 64 MB. */
KT_TEST(unread_answers_bounded)
{
	struct scene s;

	/* The attacker's own endpoint must keep sending while its engine does
	 * not progress, which the node carrier allows and ofi does not. */
	if (over_ofi())
		KT_SKIP("unread answers are played over the node carrier");
	SCENE_OPEN(&s, 1000 * kt_time_scale());
	size_t heap0 = heap_in_use(), peak = 0;
	KT_OK(kinet_ctx_pause(s.attacker));
	for (int i = 0; i < READS; i++) {
		struct rp_msg m = request(&s, KINET_WQE_OP_RDMA_READ, READ_LEN);

		KT_OK(send_raw(&s, &m, NULL, 0));
		if (i % 64 == 0) {
			size_t h = target_stats(&s).held;
			peak = h > peak ? h : peak;
		}
	}
	kt_sleep_ms(200);
	size_t h = target_stats(&s).held;
	peak = h > peak ? h : peak;
	size_t heap1 = heap_in_use();
	printf("held at most %zu bytes for %d unread %u B answers\n", peak, READS, READ_LEN);
	/* The answers queued (RP_OUT_BUSY and one fragment), the requests
	 * waiting behind them (headers). */
	KT_CHECK(peak <= RP_OUT_BUSY + RP_FRAG + (size_t)READS * 256);
	if (heap_measured(heap0)) {
		printf("heap in use before %zu, with the answers unread %zu\n", heap0, heap1);
		KT_CHECK(heap1 < heap0 + (8u << 20));
	}
	KT_OK(kinet_ctx_resume(s.attacker));
	scene_close(&s);
}

/* The target's receive wr_id completes with an error, in *wc, and its QP
 * moves to the error state. */
static void receive_failed(struct scene *s, uint64_t wr_id, struct kinet_wc *wc)
{
	KT_OK(kt_poll1(s->pair.cq[1], wc));
	KT_CHECK_EQ(wc->wr_id, wr_id);
	KT_CHECK(wc->status != 0);
	KT_CHECK(kt_wait_state(s->pair.qp[1], KINET_QPS_ERR, 5000 * kt_time_scale()));
}

/* A send whose last fragment names another length: the completion must
 * not report it (it reported 2147483647).  And a well-formed send of two
 * fragments completes with the bytes placed. */
KT_TEST(lying_fragment_length)
{
	struct scene s;
	struct kinet_wc wc;
	SCENE_OPEN(&s, 2000 * kt_time_scale());
	struct kinet_sge rg = kt_sge(&s.tbuf, 0, 64);

	/* Well-formed: 16 bytes in two fragments. */
	KT_OK(kt_post_recv(s.pair.qp[1], 1, &rg, 1));
	struct rp_msg m = request(&s, KINET_WQE_OP_SEND, 16);
	KT_OK(send_halves(&s, m, 16, m.rkey));
	KT_OK(kt_poll1(s.pair.cq[1], &wc));
	KT_OK(kt_wc_expect(&wc, 1, 0));
	KT_CHECK_EQ(wc.byte_len, 16);

	/* The last fragment lies about the length. */
	KT_OK(kt_post_recv(s.pair.qp[1], 2, &rg, 1));
	m = request(&s, KINET_WQE_OP_SEND, 16);
	KT_OK(send_halves(&s, m, 2147483647u, m.rkey));
	receive_failed(&s, 2, &wc);
	KT_CHECK(wc.byte_len != 2147483647u);
	scene_close(&s);
}

/* A write with immediate consumes its receive at the first fragment; a
 * later fragment that is refused (bad key) must fail that receive and the
 * QP, not leave it consumed and silent. */
KT_TEST(refused_later_fragment)
{
	struct scene s;
	struct kinet_wc wc;
	SCENE_OPEN(&s, 2000 * kt_time_scale());
	struct kinet_sge rg = kt_sge(&s.tbuf, 0, 64);

	KT_OK(kt_post_recv(s.pair.qp[1], 5, &rg, 1));
	struct rp_msg m = request(&s, KINET_WQE_OP_RDMA_WRITE_IMM, 16);
	KT_OK(send_halves(&s, m, 16, m.rkey ^ 0x00ff0000u)); /* not a key of the target */
	receive_failed(&s, 5, &wc);
	scene_close(&s);
}

/* ---- records written into the target's inbox (node carrier only) ---- */

struct inbox {
	struct node_seg *seg;
	struct node_slot *slot;
	uint8_t *ring;
};

/* Maps the target's inbox and claims a ring in it, as node.c does, with
 * the attacker's inbox as the reply address. */
static int inbox_claim(struct scene *s, struct inbox *in)
{
	char name[NODE_NAME_MAX];
	uint8_t reply[NODE_ADDR_LEN];
	struct kinet_qp_info ai;
	int fd;

	int rc = kinet_qp_pack(s->pair.qp[0], &ai);

	if (rc)
		return rc;
	memcpy(reply, ai.transport + INFO_NODE_OFF, NODE_ADDR_LEN);
	node_addr_name(s->tinfo.transport + INFO_NODE_OFF, name);
	if ((fd = shm_open(name, O_RDWR, 0)) < 0)
		return -errno;
	in->seg = mmap(NULL, NODE_SEG_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (in->seg == MAP_FAILED)
		return -errno;
	for (uint32_t i = 0; i < NODE_SLOTS; i++) {
		uint32_t expect = SLOT_FREE;

		if (!atomic_compare_exchange_strong(&in->seg->slots[i].state, &expect, SLOT_CLAIMED))
			continue;
		in->slot = &in->seg->slots[i];
		in->ring = (uint8_t *)(in->seg + 1) + (size_t)i * NODE_RING_BYTES;
		memcpy(in->slot->sender_addr, reply, NODE_ADDR_LEN);
		in->slot->sender_pid = getpid();
		atomic_store(&in->slot->head, 0);
		atomic_store(&in->slot->tail, 0);
		atomic_store(&in->slot->state, SLOT_ACTIVE);
		return 0;
	}
	return -EBUSY;
}

static void inbox_release(struct inbox *in)
{
	atomic_store(&in->slot->state, SLOT_CLOSED);
	munmap(in->seg, NODE_SEG_BYTES);
}

/* Writes a record header at the consumer's position and publishes tail. */
static void inbox_publish(struct inbox *in, uint32_t len, uint32_t flags, uint64_t tail_ahead)
{
	uint64_t head = atomic_load(&in->slot->head);
	uint32_t hdr[2] = {len, flags};

	memcpy(in->ring + head % NODE_RING_BYTES, hdr, sizeof(hdr));
	atomic_store(&in->slot->tail, head + tail_ahead);
}

/* The consumer caught up with what was published, within 5 s. */
static bool inbox_drained(struct inbox *in)
{
	uint64_t end = kt_now_ms() + 5000 * kt_time_scale();

	while (atomic_load(&in->slot->head) != atomic_load(&in->slot->tail))
		if (kt_now_ms() > end)
			return false;
		else
			kt_sleep_ms(1);
	return true;
}

/* A wrap marker with the tail 8 bytes further (it spun engine thread 0 at
 * 100 % for good), a record longer than what was published, a tail more
 * than a ring ahead and a tail between records: each is dropped, and the
 * target's engine goes on serving its QPs and closes. */
KT_TEST(inbox_records_checked)
{
	struct scene s;
	struct inbox in;
	struct kt_buf src;
	struct kinet_wc wc;

	if (over_ofi())
		KT_SKIP("the inbox cases are for the node carrier");
	SCENE_OPEN(&s, 2000 * kt_time_scale());
	KT_OK(inbox_claim(&s, &in));
	/* A hang is a failure, not a stuck test. */
	alarm(60 * kt_time_scale());
	inbox_publish(&in, 0, NODE_REC_WRAP, 8);
	KT_CHECK(inbox_drained(&in));
	inbox_publish(&in, 4096, 0, 64);
	KT_CHECK(inbox_drained(&in));
	inbox_publish(&in, 16, 0, 3 * (uint64_t)NODE_RING_BYTES);
	KT_CHECK(inbox_drained(&in));
	inbox_publish(&in, 16, 0, 13);
	KT_CHECK(inbox_drained(&in));

	KT_OK(kt_buf_alloc(s.attacker, &src, 64, KT_ACC_ALL, 3));
	struct kinet_sge g = kt_sge(&src, 0, 64);
	struct kinet_send_wr w = kt_wr(4, KINET_WR_RDMA_WRITE, KINET_SEND_SIGNALED, &g, 1,
				       kt_addr(&s.tbuf, 0), kt_rkey(&s.tbuf));
	KT_OK(kt_post(s.pair.qp[0], &w));
	KT_OK(kt_poll1(s.pair.cq[0], &wc));
	KT_OK(kt_wc_expect(&wc, 4, 0));
	kt_buf_free(&src);
	inbox_release(&in);
	scene_close(&s); /* closing the target returns */
	alarm(0);
}

KT_MAIN(strays_dropped_unheld, held_requests_bounded_and_expire, unread_answers_bounded,
	lying_fragment_length, refused_later_fragment, inbox_records_checked)
