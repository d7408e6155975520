/*
 * Ethernet ports and queues on a real Linux packet path (kinet/eth.h,
 * src/core/eth.c, src/provider/soft/engine/eth.c): two network namespaces
 * made here, joined by a veth pair; a kinet port on side A's veth, and
 * ordinary sockets in side B as the other end.  The queues are driven the
 * way device code drives them, from this thread: receive CQEs read from
 * the exported descriptor's ring (host memory in a context without CUDA),
 * slots handed back by moving the receive doorbell record, send WQEs
 * written into the send queue with kinet_eth_wqe_send and rung with the
 * CPU doorbell.
 *
 * Checked: datagrams of B's UDP sockets reach the queue their rule names,
 * byte-exact, with a CQE's byte count, a stamp near now that does not go
 * back, IPv4/UDP types and checksum flags; unmatched frames (ARP) counted
 * as no-rule drops; RSS over 4 queues: each 5-tuple in one queue, the one
 * its hash names, several queues used; a queue whose slots are not handed
 * back drops (counted) and receives again once they are; sends with
 * L3+L4 checksum offload of a frame whose checksums are zero reach a UDP
 * socket of B (the Linux stack judges; without the offload they do not);
 * a bad lkey is an error CQE and the WQEs after it flush; checksum flags a
 * queue was not made with, and WAIT in a queue made without timed sends,
 * are error CQEs; a WAIT-on-time 50 ms ahead delays the next send by that
 * (B's socket stamps); queues, rules, ports and the context destroyed
 * while frames stream in; the veth deleted under a running port: port
 * status -ENODEV/-ENETDOWN and sends complete with error CQEs, no hang.
 *
 * Needs root (network namespaces, CAP_NET_RAW), else skips saying why
 * (77); the pair comes from tests/harness/kt_netns.h.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/ethtool.h>
#include <linux/sockios.h>
#include <net/if.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>

#include "kinet/eth.h"
#include "kinet/kinet.h"
#include "kinet/wire.h"
#include "kt.h"
#include "kt_host.h"
#include "kt_netns.h"

#define WATCHDOG_S 200
#define UDP_BASE 29700
#define DEADLINE_MS 5000

static struct kt_netns net;
static bool net_tried, net_ok;

static int enter(int side)
{
	return kt_netns_enter(&net, side);
}

static void leave(void)
{
	kt_netns_leave(&net);
}

static bool tx_csum_off; /* B's datagrams carry full checksums */
static bool rx_csum_off; /* B's stack checks the checksums of what it gets */

/* An ethtool flag of side's veth (ETHTOOL_STXCSUM, _SRXCSUM). */
static bool ethtool_set(int side, uint32_t cmd, uint32_t v)
{
	struct ethtool_value ev = {.cmd = cmd, .data = v};
	struct ifreq ifr;
	bool ok;
	int s;

	if (enter(side))
		return false;
	s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", net.veth[side]);
	ifr.ifr_data = (char *)&ev;
	ok = s >= 0 && ioctl(s, SIOCETHTOOL, &ifr) == 0;
	if (s >= 0)
		close(s);
	leave();
	return ok;
}

static bool setup(void)
{
	if (kt_netns_setup(&net, "eq", WATCHDOG_S))
		return false;
	tx_csum_off = ethtool_set(1, ETHTOOL_STXCSUM, 0);
	rx_csum_off = ethtool_set(1, ETHTOOL_SRXCSUM, 0);
	printf("netns: %s (%s %s %s) <-> %s (%s %s %s); B's tx/rx checksum offload off: %d/%d\n", net.ns[0],
	       net.veth[0], net.addr[0], net.mac_str[0], net.ns[1], net.veth[1], net.addr[1], net.mac_str[1],
	       tx_csum_off, rx_csum_off);
	return true;
}

#define NEED_NETNS()                                                                                         \
	do {                                                                                                 \
		if (!net_tried) {                                                                            \
			net_tried = true;                                                                    \
			net_ok = setup();                                                                    \
		}                                                                                            \
		if (!net_ok)                                                                                 \
			KT_SKIP("%s", net.why);                                                              \
		if (net.veth_gone)                                                                           \
			KT_SKIP("the veth pair was deleted by an earlier test");                             \
	} while (0)

static uint64_t realtime_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ---- kinet objects -------------------------------------------------------- */

static int port_open(struct kinet_ctx *ctx, struct kinet_eth_port **port)
{
	struct kinet_eth_port_attr a;
	int ret;

	kinet_eth_port_attr_init(&a);
	a.ifname = net.veth[0];
	ret = enter(0);
	if (ret)
		return ret;
	ret = kinet_eth_port_open(ctx, &a, port);
	leave();
	return ret;
}

struct rxq_h {
	struct kinet_eth_rxq *q;
	struct kinet_dev_eth_rxq *d;
	uint64_t ci;	 /* CQEs read */
	uint64_t handed; /* slots handed back */
};

static int rxq_make(struct kinet_eth_port *port, uint32_t npkts, struct rxq_h *h)
{
	struct kinet_eth_rxq_attr a;
	int ret;

	memset(h, 0, sizeof(*h));
	kinet_eth_rxq_attr_init(&a);
	a.npkts = npkts;
	a.max_pkt_size = 2048;
	ret = kinet_eth_rxq_create(port, &a, &h->q);
	return ret ? ret : kinet_eth_rxq_export(h->q, &h->d);
}

/* The next receive CQE within ms: 1 (rx and the slot's data), or 0. */
static int rxq_next(struct rxq_h *h, struct kinet_cqe_eth_rx *rx, const uint8_t **data, unsigned ms)
{
	const struct kinet_dev_cq *cq = h->d->qp->recv_cq;
	uint64_t deadline = kt_now_ms() + ms;

	for (;;) {
		const struct kinet_cqe64 *cqe = &cq->cqes[h->ci & cq->mask];

		if (kinet_cqe_ready(cqe, h->ci, cq->log_depth)) {
			atomic_thread_fence(memory_order_acquire);
			if (kinet_cqe_opcode(cqe) != KINET_CQE_RESP_SEND)
				printf("rxq %u: CQE %" PRIu64 " has opcode 0x%x\n", h->d->rqn, h->ci,
				       kinet_cqe_opcode(cqe));
			kinet_cqe_eth_rx_decode(cqe, rx);
			*data = h->d->pkt_buf +
				(size_t)(rx->wqe_counter & (h->d->npkts - 1)) * h->d->max_pkt_size;
			h->ci++;
			return kinet_cqe_opcode(cqe) == KINET_CQE_RESP_SEND;
		}
		if (kt_now_ms() >= deadline)
			return 0;
		kt_sleep_ms(1);
	}
}

/* Hands n slots back, as device code does: the receive doorbell record. */
static void rxq_hand_back(struct rxq_h *h, uint32_t n)
{
	h->handed += n;
	__atomic_store_n(&h->d->qp->dbrec[KINET_DBR_RECV],
			 htonl((uint32_t)(h->d->npkts + h->handed) & 0xffff), __ATOMIC_RELEASE);
}

static int flow_make(struct kinet_eth_port *port, uint32_t prio, uint16_t dport, int action,
		     struct kinet_eth_rxq **queues, uint32_t n, struct kinet_eth_flow **f)
{
	struct kinet_eth_flow_attr a;

	kinet_eth_flow_attr_init(&a);
	a.priority = prio;
	a.match = KINET_ETH_MATCH_IP_PROTO | KINET_ETH_MATCH_DST_PORT;
	a.ip_proto = IPPROTO_UDP;
	a.dst_port = dport;
	a.action = action;
	a.nqueues = n;
	a.queues = queues;
	return kinet_eth_flow_create(port, &a, f);
}

struct txq_h {
	struct kinet_eth_txq *q;
	struct kinet_dev_eth_txq *d;
	uint64_t pi; /* WQEs (one BB each) posted */
	uint64_t ci; /* CQEs read */
};

static int txq_make(struct kinet_eth_port *port, uint32_t csum, uint32_t timed, struct txq_h *h)
{
	struct kinet_eth_txq_attr a;
	int ret;

	memset(h, 0, sizeof(*h));
	kinet_eth_txq_attr_init(&a);
	a.depth = 64;
	a.csum = csum;
	a.timed = timed;
	a.db_mode = KINET_DB_CPU;
	ret = kinet_eth_txq_create(port, &a, &h->q);
	return ret ? ret : kinet_eth_txq_export(h->q, &h->d);
}

/* Writes a one-BB WQE at the producer index and rings, as device code
 * does in KINET_DB_CPU mode. */
static void tx_post(struct txq_h *h, const void *wqe)
{
	struct kinet_dev_qp *qp = h->d->qp;

	memcpy(qp->sq + (h->pi & qp->sq_mask) * KINET_WQE_BB_SIZE, wqe, KINET_WQE_BB_SIZE);
	h->pi++;
	__atomic_store_n(&qp->dbrec[KINET_DBR_SEND], htonl((uint32_t)h->pi & 0xffff), __ATOMIC_RELEASE);
	__atomic_store_n(qp->db_cpu_pi, h->pi, __ATOMIC_RELEASE);
}

static void tx_send(struct txq_h *h, uint8_t cs, const void *buf, uint32_t len, uint32_t lkey)
{
	struct kinet_eth_send_wqe w;

	kinet_eth_wqe_send(&w, (uint16_t)h->pi, h->d->sqn, KINET_WQE_CTRL_CQ_UPDATE, cs,
			   (uint64_t)(uintptr_t)buf, len, lkey);
	tx_post(h, &w);
}

static void tx_wait_until(struct txq_h *h, uint64_t ns)
{
	struct kinet_eth_wait_wqe w;

	kinet_eth_wqe_wait_time(&w, (uint16_t)h->pi, h->d->sqn, 0, kinet_eth_rt_from_ns(ns));
	tx_post(h, &w);
}

/* The next send CQE within ms: its opcode (KINET_CQE_REQ, _REQ_ERR), or
 * -1; *syndrome for errors. */
static int tx_cqe(struct txq_h *h, uint8_t *syndrome, uint16_t *wqe_counter, unsigned ms)
{
	const struct kinet_dev_cq *cq = h->d->qp->send_cq;
	uint64_t deadline = kt_now_ms() + ms;

	for (;;) {
		const struct kinet_cqe64 *cqe = &cq->cqes[h->ci & cq->mask];

		if (kinet_cqe_ready(cqe, h->ci, cq->log_depth)) {
			const struct kinet_err_cqe *e = (const void *)cqe;

			atomic_thread_fence(memory_order_acquire);
			h->ci++;
			*syndrome = kinet_cqe_is_error(cqe) ? e->syndrome : 0;
			*wqe_counter = kinet_cqe_wqe_counter(cqe);
			return kinet_cqe_opcode(cqe);
		}
		if (kt_now_ms() >= deadline)
			return -1;
		kt_sleep_ms(1);
	}
}

/* ---- sockets of side B ---------------------------------------------------- */

static int udp_sock(int side, uint16_t port)
{
	struct sockaddr_in me = {.sin_family = AF_INET, .sin_port = htons(port)};
	int s;

	if (enter(side))
		return -1;
	s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	leave();
	inet_pton(AF_INET, net.addr[side], &me.sin_addr);
	if (s >= 0 && bind(s, (struct sockaddr *)&me, sizeof(me))) {
		close(s);
		return -1;
	}
	return s;
}

static bool udp_to(int s, int side, uint16_t port, const char *msg)
{
	struct sockaddr_in to = {.sin_family = AF_INET, .sin_port = htons(port)};

	inet_pton(AF_INET, net.addr[side], &to.sin_addr);
	return sendto(s, msg, strlen(msg), 0, (struct sockaddr *)&to, sizeof(to)) == (ssize_t)strlen(msg);
}

/* A received frame's UDP payload is msg (IPv4 header of 20 bytes). */
static bool payload_is(const uint8_t *data, uint32_t bytes, const char *msg)
{
	size_t n = strlen(msg);

	return bytes == 42 + n && !memcmp(data + 42, msg, n);
}

/* Whether socket s gets exactly want within ms; *stamp_ns its kernel stamp. */
static bool udp_got(int s, const char *want, unsigned ms, uint64_t *stamp_ns)
{
	uint64_t deadline = kt_now_ms() + ms;
	char buf[256], cbuf[256];

	while (kt_now_ms() < deadline) {
		struct iovec iov = {buf, sizeof(buf)};
		struct msghdr mh = {.msg_iov = &iov,
				    .msg_iovlen = 1,
				    .msg_control = cbuf,
				    .msg_controllen = sizeof(cbuf)};
		ssize_t n = recvmsg(s, &mh, MSG_DONTWAIT);

		if (n == (ssize_t)strlen(want) && !memcmp(buf, want, (size_t)n)) {
			for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c && stamp_ns; c = CMSG_NXTHDR(&mh, c)) {
				if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_TIMESTAMPNS) {
					struct timespec ts;
					memcpy(&ts, CMSG_DATA(c), sizeof(ts));
					*stamp_ns =
						(uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
				}
			}
			return true;
		}
		if (n < 0)
			kt_sleep_ms(1);
	}
	return false;
}

/* ---- tests ---------------------------------------------------------------- */

/* Two rules, two queues: each datagram in its queue, byte-exact, with the
 * CQE's fields; what no rule takes (ARP) counted. */
KT_TEST(receive_steered)
{
	struct kinet_ctx *ctx = NULL;
	struct kinet_eth_port *port = NULL;
	struct kinet_eth_flow *f0 = NULL, *f1 = NULL;
	struct kinet_eth_port_stats st;
	struct rxq_h q[2];
	uint8_t mac[6];
	uint64_t t0 = realtime_ns(), last[2] = {0, 0};
	char msg[64];
	int s;

	NEED_NETNS();
	KT_OK(kt_ctx_open(1, &ctx));
	KT_OK(port_open(ctx, &port));
	KT_OK(kinet_eth_port_mac(port, mac));
	KT_CHECK_BYTES("port MAC", mac, net.mac[0], 6);
	KT_CHECK_EQ(kinet_eth_port_mtu(port), 1500);
	KT_OK(kinet_eth_port_status(port));
	KT_OK(rxq_make(port, 64, &q[0]));
	KT_OK(rxq_make(port, 64, &q[1]));
	KT_OK(flow_make(port, 0, UDP_BASE, KINET_ETH_ACTION_QUEUE, &q[0].q, 1, &f0));
	KT_OK(flow_make(port, 0, UDP_BASE + 1, KINET_ETH_ACTION_QUEUE, &q[1].q, 1, &f1));
	s = udp_sock(1, UDP_BASE + 50);
	KT_CHECK(s >= 0);
	for (int i = 0; i < 20; i++) {
		snprintf(msg, sizeof(msg), "to queue %d, datagram %d", i & 1, i);
		KT_CHECK(udp_to(s, 0, (uint16_t)(UDP_BASE + (i & 1)), msg));
	}
	for (int i = 0; i < 20; i++) {
		struct kinet_cqe_eth_rx rx;
		const uint8_t *data;
		int k = i & 1;

		snprintf(msg, sizeof(msg), "to queue %d, datagram %d", k, i);
		if (!rxq_next(&q[k], &rx, &data, DEADLINE_MS)) {
			printf("datagram %d: no CQE in queue %d\n", i, k);
			KT_CHECK(0);
			break;
		}
		KT_CHECK(payload_is(data, rx.byte_cnt, msg));
		KT_CHECK_EQ(rx.wqe_counter, i / 2);
		KT_CHECK_EQ(rx.qpn, q[k].d->rqn);
		KT_CHECK_EQ(rx.l3_hdr_type, KINET_CQE_L3_HDR_IPV4);
		KT_CHECK_EQ(rx.l4_hdr_type, KINET_CQE_L4_HDR_UDP);
		KT_CHECK(rx.csum_ok & KINET_CQE_L3_OK);
		if (tx_csum_off)
			KT_CHECK(rx.csum_ok & KINET_CQE_L4_OK);
		uint64_t ts = kinet_eth_rt_to_ns(rx.timestamp);
		KT_CHECK(ts + 1000000000ull >= t0 && ts <= realtime_ns() + 1000000000ull);
		KT_CHECK(ts >= last[k]);
		last[k] = ts;
		KT_CHECK_BYTES("destination MAC", data, net.mac[0], 6);
	}
	KT_OK(kinet_eth_port_stats(port, &st));
	printf("stats: rx %" PRIu64 " delivered %" PRIu64 " no rule %" PRIu64 " full %" PRIu64 "\n",
	       st.rx_frames, st.rx_delivered, st.rx_drop_no_rule, st.rx_drop_queue_full);
	KT_CHECK_EQ(st.rx_delivered, 20);
	KT_CHECK(st.rx_drop_no_rule >= 1); /* B's ARP request for A */
	KT_CHECK_EQ(st.rx_frames, st.rx_delivered + st.rx_drop_no_rule);
	KT_CHECK_EQ(st.rx_drop_queue_full, 0);
	/* The object rules: a queue with a rule, a port with queues. */
	KT_CHECK_EQ(kinet_eth_rxq_destroy(q[0].q), -EBUSY);
	KT_CHECK_EQ(kinet_eth_port_close(port), -EBUSY);
	KT_OK(kinet_eth_flow_destroy(f0));
	KT_OK(kinet_eth_flow_destroy(f1));
	KT_OK(kinet_eth_rxq_destroy(q[0].q));
	KT_OK(kinet_eth_rxq_destroy(q[1].q));
	KT_OK(kinet_eth_port_close(port));
	close(s);
	KT_OK(kinet_ctx_close(ctx));
}

/* RSS over 4 queues: 16 source ports, 3 datagrams each. */
KT_TEST(receive_rss)
{
	struct kinet_ctx *ctx = NULL;
	struct kinet_eth_port *port = NULL;
	struct kinet_eth_flow *f = NULL;
	struct rxq_h q[4];
	struct kinet_eth_rxq *qs[4];
	int socks[16], where[16], used[4] = {0}, got = 0;
	char msg[64];

	NEED_NETNS();
	KT_OK(kt_ctx_open(1, &ctx));
	KT_OK(port_open(ctx, &port));
	for (int i = 0; i < 4; i++) {
		KT_OK(rxq_make(port, 64, &q[i]));
		qs[i] = q[i].q;
	}
	KT_OK(flow_make(port, 0, UDP_BASE + 2, KINET_ETH_ACTION_RSS, qs, 4, &f));
	for (int i = 0; i < 16; i++) {
		socks[i] = udp_sock(1, (uint16_t)(UDP_BASE + 100 + i));
		KT_CHECK(socks[i] >= 0);
		where[i] = -1;
	}
	for (int j = 0; j < 3; j++)
		for (int i = 0; i < 16; i++) {
			snprintf(msg, sizeof(msg), "rss %d %d", i, j);
			KT_CHECK(udp_to(socks[i], 0, UDP_BASE + 2, msg));
		}
	uint64_t deadline = kt_now_ms() + DEADLINE_MS;
	while (got < 48 && kt_now_ms() < deadline) {
		for (int k = 0; k < 4; k++) {
			struct kinet_cqe_eth_rx rx;
			const uint8_t *data;

			while (rxq_next(&q[k], &rx, &data, 0)) {
				int sport = data[34] << 8 | data[35], i = sport - (UDP_BASE + 100);

				KT_CHECK(i >= 0 && i < 16);
				if (i < 0 || i >= 16)
					continue;
				KT_CHECK(where[i] == -1 || where[i] == k);
				KT_CHECK_EQ(kinet_eth_rss_hash(data, rx.byte_cnt) % 4, (uint32_t)k);
				where[i] = k;
				used[k]++;
				got++;
			}
		}
		kt_sleep_ms(1);
	}
	printf("rss: %d %d %d %d datagrams per queue\n", used[0], used[1], used[2], used[3]);
	KT_CHECK_EQ(got, 48);
	KT_CHECK((used[0] > 0) + (used[1] > 0) + (used[2] > 0) + (used[3] > 0) >= 2);
	for (int i = 0; i < 16; i++)
		close(socks[i]);
	/* Left to kinet_ctx_close: the rule, the queues, the port. */
	KT_OK(kinet_ctx_close(ctx));
}

/* 16 slots never handed back: 16 land, the rest are counted; handed back,
 * receiving resumes in slot order. */
KT_TEST(queue_full_and_handed_back)
{
	struct kinet_ctx *ctx = NULL;
	struct kinet_eth_port *port = NULL;
	struct kinet_eth_flow *f = NULL;
	struct kinet_eth_port_stats st;
	struct kinet_cqe_eth_rx rx;
	const uint8_t *data;
	struct rxq_h q;
	char msg[64];
	int s;

	NEED_NETNS();
	KT_OK(kt_ctx_open(1, &ctx));
	KT_OK(port_open(ctx, &port));
	KT_OK(rxq_make(port, 16, &q));
	KT_OK(flow_make(port, 0, UDP_BASE + 3, KINET_ETH_ACTION_QUEUE, &q.q, 1, &f));
	s = udp_sock(1, 0);
	KT_CHECK(s >= 0);
	for (int i = 0; i < 40; i++) {
		snprintf(msg, sizeof(msg), "full %d", i);
		KT_CHECK(udp_to(s, 0, UDP_BASE + 3, msg));
	}
	uint64_t deadline = kt_now_ms() + DEADLINE_MS;
	do {
		KT_OK(kinet_eth_port_stats(port, &st));
		kt_sleep_ms(1);
	} while (st.rx_delivered + st.rx_drop_queue_full < 40 && kt_now_ms() < deadline);
	printf("full: delivered %" PRIu64 ", dropped (queue full) %" PRIu64 "\n", st.rx_delivered,
	       st.rx_drop_queue_full);
	KT_CHECK_EQ(st.rx_delivered, 16);
	KT_CHECK_EQ(st.rx_drop_queue_full, 24);
	for (int i = 0; i < 16; i++) {
		snprintf(msg, sizeof(msg), "full %d", i);
		KT_CHECK(rxq_next(&q, &rx, &data, DEADLINE_MS));
		KT_CHECK_EQ(rx.wqe_counter, i);
		KT_CHECK(payload_is(data, rx.byte_cnt, msg));
	}
	KT_CHECK(!rxq_next(&q, &rx, &data, 50));
	rxq_hand_back(&q, 16);
	for (int i = 0; i < 5; i++) {
		snprintf(msg, sizeof(msg), "again %d", i);
		KT_CHECK(udp_to(s, 0, UDP_BASE + 3, msg));
	}
	for (int i = 0; i < 5; i++) {
		snprintf(msg, sizeof(msg), "again %d", i);
		KT_CHECK(rxq_next(&q, &rx, &data, DEADLINE_MS));
		KT_CHECK_EQ(rx.wqe_counter, 16 + i);
		KT_CHECK(data == q.d->pkt_buf + (size_t)i * q.d->max_pkt_size);
		KT_CHECK(payload_is(data, rx.byte_cnt, msg));
	}
	close(s);
	KT_OK(kinet_ctx_close(ctx));
}

/* A UDP frame from port A to B's address: checksums zero or garbage. */
static uint32_t udp_frame(uint8_t *f, const uint8_t *src_mac, uint16_t port, const char *payload,
			  uint16_t udp_csum)
{
	uint32_t plen = (uint32_t)strlen(payload), ip_len = 20 + 8 + plen;

	memset(f, 0, 14 + ip_len);
	memcpy(f, net.mac[1], 6);
	memcpy(f + 6, src_mac, 6);
	f[12] = 0x08;
	f[14] = 0x45;
	f[16] = (uint8_t)(ip_len >> 8);
	f[17] = (uint8_t)ip_len;
	f[22] = 64;
	f[23] = IPPROTO_UDP;
	inet_pton(AF_INET, net.addr[0], f + 26);
	inet_pton(AF_INET, net.addr[1], f + 30);
	f[34] = 0x30;
	f[35] = 0x39;
	f[36] = (uint8_t)(port >> 8);
	f[37] = (uint8_t)port;
	f[38] = (uint8_t)((8 + plen) >> 8);
	f[39] = (uint8_t)(8 + plen);
	f[40] = (uint8_t)(udp_csum >> 8);
	f[41] = (uint8_t)udp_csum;
	memcpy(f + 42, payload, plen);
	return 14 + ip_len;
}

static const uint8_t CS_ALL = KINET_ETH_WQE_L3_CSUM | KINET_ETH_WQE_L4_CSUM;

/* Sends with checksum offload reach B's UDP socket; the errors a send
 * queue reports. */
KT_TEST(send_checksums_and_errors)
{
	struct kinet_ctx *ctx = NULL;
	struct kinet_eth_port *port = NULL;
	struct kinet_eth_port_stats st;
	struct kinet_mr *mr = NULL;
	struct txq_h t, t2, t3;
	uint8_t *buf, mac[6], synd;
	uint16_t idx;
	uint32_t n, lkey;
	int s;

	NEED_NETNS();
	KT_OK(kt_ctx_open(1, &ctx));
	KT_OK(port_open(ctx, &port));
	KT_OK(kinet_eth_port_mac(port, mac));
	KT_OK(txq_make(port, 1, 1, &t));
	buf = aligned_alloc(4096, 8192);
	KT_OK(kinet_mr_reg(ctx, buf, 8192, KINET_ACCESS_LOCAL_WRITE, &mr));
	lkey = kinet_mr_lkey(mr);
	s = udp_sock(1, UDP_BASE + 4);
	KT_CHECK(s >= 0);

	/* zero checksums, both filled: delivered */
	n = udp_frame(buf, mac, UDP_BASE + 4, "cs 1", 0);
	tx_send(&t, CS_ALL, buf, n, lkey);
	KT_CHECK_EQ(tx_cqe(&t, &synd, &idx, DEADLINE_MS), KINET_CQE_REQ);
	KT_CHECK(udp_got(s, "cs 1", DEADLINE_MS, NULL));
	/* zero checksums, none asked for: the IPv4 header's is wrong, dropped */
	n = udp_frame(buf + 1024, mac, UDP_BASE + 4, "cs 2", 0);
	tx_send(&t, 0, buf + 1024, n, lkey);
	KT_CHECK_EQ(tx_cqe(&t, &synd, &idx, DEADLINE_MS), KINET_CQE_REQ);
	KT_CHECK(!udp_got(s, "cs 2", 300, NULL));
	/* a garbage UDP checksum filled over: delivered */
	n = udp_frame(buf + 2048, mac, UDP_BASE + 4, "cs 3", 0xdead);
	tx_send(&t, CS_ALL, buf + 2048, n, lkey);
	KT_CHECK_EQ(tx_cqe(&t, &synd, &idx, DEADLINE_MS), KINET_CQE_REQ);
	KT_CHECK(udp_got(s, "cs 3", DEADLINE_MS, NULL));
	if (rx_csum_off) {
		/* ... and left as it is (L3 only): B's UDP drops it */
		n = udp_frame(buf + 3072, mac, UDP_BASE + 4, "cs 4", 0xdead);
		tx_send(&t, KINET_ETH_WQE_L3_CSUM, buf + 3072, n, lkey);
		KT_CHECK_EQ(tx_cqe(&t, &synd, &idx, DEADLINE_MS), KINET_CQE_REQ);
		KT_CHECK(!udp_got(s, "cs 4", 300, NULL));
	}
	/* a frame in two pieces (headers, payload) */
	n = udp_frame(buf + 4096, mac, UDP_BASE + 4, "two pieces", 0);
	{
		struct kinet_eth_send_wqe w;

		kinet_eth_wqe_send2(&w, (uint16_t)t.pi, t.d->sqn, KINET_WQE_CTRL_CQ_UPDATE, CS_ALL,
				    (uint64_t)(uintptr_t)(buf + 4096), 42, lkey,
				    (uint64_t)(uintptr_t)(buf + 4096 + 42), n - 42, lkey);
		tx_post(&t, &w);
	}
	KT_CHECK_EQ(tx_cqe(&t, &synd, &idx, DEADLINE_MS), KINET_CQE_REQ);
	KT_CHECK(udp_got(s, "two pieces", DEADLINE_MS, NULL));

	/* a bad lkey: LOCAL_PROT_ERR, nothing sent, and what follows flushes */
	n = udp_frame(buf, mac, UDP_BASE + 4, "bad key", 0);
	tx_send(&t, CS_ALL, buf, n, lkey ^ 0x100);
	tx_send(&t, CS_ALL, buf, n, lkey);
	KT_CHECK_EQ(tx_cqe(&t, &synd, &idx, DEADLINE_MS), KINET_CQE_REQ_ERR);
	KT_CHECK_EQ(synd, KINET_SYND_LOCAL_PROT_ERR);
	KT_CHECK_EQ(idx, (uint16_t)(t.pi - 2));
	KT_CHECK_EQ(tx_cqe(&t, &synd, &idx, DEADLINE_MS), KINET_CQE_REQ_ERR);
	KT_CHECK_EQ(synd, KINET_SYND_WR_FLUSH_ERR);
	KT_CHECK(!udp_got(s, "bad key", 300, NULL));
	/* a range past the region: LOCAL_PROT_ERR too */
	KT_OK(txq_make(port, 1, 1, &t2));
	tx_send(&t2, CS_ALL, buf + 8192 - 16, 64, lkey);
	KT_CHECK_EQ(tx_cqe(&t2, &synd, &idx, DEADLINE_MS), KINET_CQE_REQ_ERR);
	KT_CHECK_EQ(synd, KINET_SYND_LOCAL_PROT_ERR);
	KT_OK(kinet_eth_txq_destroy(t2.q));

	/* checksums asked of a queue made without them; WAIT of one made
	 * without timed sends: LOCAL_QP_OP_ERR */
	KT_OK(txq_make(port, 0, 1, &t2));
	n = udp_frame(buf, mac, UDP_BASE + 4, "no csum queue", 0);
	tx_send(&t2, CS_ALL, buf, n, lkey);
	KT_CHECK_EQ(tx_cqe(&t2, &synd, &idx, DEADLINE_MS), KINET_CQE_REQ_ERR);
	KT_CHECK_EQ(synd, KINET_SYND_LOCAL_QP_OP_ERR);
	KT_OK(txq_make(port, 1, 0, &t3));
	tx_wait_until(&t3, realtime_ns());
	KT_CHECK_EQ(tx_cqe(&t3, &synd, &idx, DEADLINE_MS), KINET_CQE_REQ_ERR);
	KT_CHECK_EQ(synd, KINET_SYND_LOCAL_QP_OP_ERR);
	/* longer than the MTU: LOCAL_LENGTH_ERR */
	KT_OK(kinet_eth_txq_destroy(t3.q));
	KT_OK(txq_make(port, 0, 0, &t3));
	n = udp_frame(buf, mac, UDP_BASE + 4, "x", 0);
	tx_send(&t3, 0, buf, 1600, lkey);
	KT_CHECK_EQ(tx_cqe(&t3, &synd, &idx, DEADLINE_MS), KINET_CQE_REQ_ERR);
	KT_CHECK_EQ(synd, KINET_SYND_LOCAL_LENGTH_ERR);

	KT_OK(kinet_eth_port_stats(port, &st));
	printf("tx: frames %" PRIu64 ", errors %" PRIu64 "\n", st.tx_frames, st.tx_errors);
	KT_CHECK_EQ(st.tx_frames, rx_csum_off ? 5 : 4);
	KT_CHECK_EQ(st.tx_errors, 6); /* bad key + its flush, range, csum, wait, length */
	close(s);
	KT_OK(kinet_mr_dereg(mr));
	KT_OK(kinet_ctx_close(ctx));
	free(buf);
}

/* Send-queue WQEs a NIC would refuse, each on a queue of its own: an
 * error CQE (LOCAL_QP_OP_ERR, or what the PRM gives a wrong QP number),
 * nothing sent, the engine unharmed (the last queue still sends). */
enum bad_wqe {
	BAD_DS_SHORT,	/* SEND with no data segment (ds 2) */
	BAD_DS_LONG,	/* SEND with ds 5: three data segments */
	BAD_INLINE_HDR, /* an inlined header (not emulated) */
	BAD_TSO,	/* mss set: TSO (not emulated) */
	BAD_OPMOD,	/* SEND with an op_mod */
	BAD_OPCODE,	/* an RDMA write on a raw-packet queue */
	BAD_WAIT_MODE,	/* WAIT on a CQ index (cross-channel), not on time */
	BAD_WAIT_DS,	/* WAIT on time with ds 2 */
	BAD_QPN,	/* another queue's number in the ctrl segment */
	BAD_COUNT
};

static void bad_wqe_make(enum bad_wqe k, struct txq_h *h, void *buf, uint32_t len, uint32_t lkey,
			 uint8_t *out)
{
	struct kinet_eth_send_wqe w;
	struct kinet_eth_wait_wqe wt;
	uint32_t qpn_ds, op;

	kinet_eth_wqe_send(&w, (uint16_t)h->pi, h->d->sqn, KINET_WQE_CTRL_CQ_UPDATE, 0,
			   (uint64_t)(uintptr_t)buf, len, lkey);
	qpn_ds = ntohl(w.ctrl.qpn_ds);
	op = ntohl(w.ctrl.opmod_idx_opcode);
	switch (k) {
	case BAD_DS_SHORT:
		qpn_ds = (qpn_ds & ~0xffu) | 2u;
		break;
	case BAD_DS_LONG:
		qpn_ds = (qpn_ds & ~0xffu) | 5u;
		break;
	case BAD_INLINE_HDR:
		w.eth.inline_hdr_sz = htons(18);
		break;
	case BAD_TSO:
		w.eth.mss = htons(1400);
		break;
	case BAD_OPMOD:
		op |= 1u << 24;
		break;
	case BAD_OPCODE:
		op = (op & ~0xffu) | KINET_WQE_OP_RDMA_WRITE;
		break;
	case BAD_QPN:
		qpn_ds = ((h->d->sqn + 1) << 8) | (qpn_ds & 0xffu);
		break;
	case BAD_WAIT_MODE:
	case BAD_WAIT_DS:
		kinet_eth_wqe_wait_time(&wt, (uint16_t)h->pi, h->d->sqn, 0,
					kinet_eth_rt_from_ns(realtime_ns()));
		qpn_ds = ntohl(wt.ctrl.qpn_ds);
		op = ntohl(wt.ctrl.opmod_idx_opcode);
		if (k == BAD_WAIT_MODE)
			op = (op & 0x00ffffffu) | (KINET_WQE_OPMOD_WAIT_CQ_PI << 24);
		else
			qpn_ds = (qpn_ds & ~0xffu) | 2u;
		wt.ctrl.qpn_ds = htonl(qpn_ds);
		wt.ctrl.opmod_idx_opcode = htonl(op);
		memcpy(out, &wt, sizeof(wt));
		return;
	default:
		break;
	}
	w.ctrl.qpn_ds = htonl(qpn_ds);
	w.ctrl.opmod_idx_opcode = htonl(op);
	memcpy(out, &w, sizeof(w));
}

KT_TEST(malformed_send_wqes)
{
	struct kinet_ctx *ctx = NULL;
	struct kinet_eth_port *port = NULL;
	struct kinet_eth_port_stats before, after;
	struct kinet_mr *mr = NULL;
	struct txq_h t;
	uint8_t *buf, mac[6], synd, wqe[KINET_WQE_BB_SIZE];
	uint16_t idx;
	uint32_t n, lkey;
	int s;

	NEED_NETNS();
	KT_OK(kt_ctx_open(1, &ctx));
	KT_OK(port_open(ctx, &port));
	KT_OK(kinet_eth_port_mac(port, mac));
	buf = aligned_alloc(4096, 4096);
	KT_OK(kinet_mr_reg(ctx, buf, 4096, KINET_ACCESS_LOCAL_WRITE, &mr));
	lkey = kinet_mr_lkey(mr);
	s = udp_sock(1, UDP_BASE + 6);
	KT_CHECK(s >= 0);
	n = udp_frame(buf, mac, UDP_BASE + 6, "malformed", 0);
	KT_OK(kinet_eth_port_stats(port, &before));
	for (int k = 0; k < BAD_COUNT; k++) {
		KT_OK(txq_make(port, 1, 1, &t));
		bad_wqe_make((enum bad_wqe)k, &t, buf, n, lkey, wqe);
		tx_post(&t, wqe);
		KT_CHECK_EQ(tx_cqe(&t, &synd, &idx, DEADLINE_MS), KINET_CQE_REQ_ERR);
		printf("malformed %d: syndrome 0x%02x\n", k, synd);
		KT_CHECK(synd == KINET_SYND_LOCAL_QP_OP_ERR || (k == BAD_QPN && synd != 0));
		KT_CHECK_EQ(idx, (uint16_t)(t.pi - 1));
		KT_OK(kinet_eth_txq_destroy(t.q));
	}
	KT_CHECK(!udp_got(s, "malformed", 300, NULL));
	KT_OK(kinet_eth_port_stats(port, &after));
	KT_CHECK_EQ(after.tx_frames, before.tx_frames);
	KT_CHECK_EQ(after.tx_errors - before.tx_errors, (uint64_t)BAD_COUNT);
	/* The port still sends. */
	KT_OK(txq_make(port, 1, 1, &t));
	n = udp_frame(buf, mac, UDP_BASE + 6, "still fine", 0);
	tx_send(&t, CS_ALL, buf, n, lkey);
	KT_CHECK_EQ(tx_cqe(&t, &synd, &idx, DEADLINE_MS), KINET_CQE_REQ);
	KT_CHECK(udp_got(s, "still fine", DEADLINE_MS, NULL));
	close(s);
	KT_OK(kinet_mr_dereg(mr));
	KT_OK(kinet_ctx_close(ctx));
	free(buf);
}

/* A WAIT 50 ms ahead holds the next send that long (B's socket stamps). */
KT_TEST(send_wait_on_time)
{
	struct kinet_ctx *ctx = NULL;
	struct kinet_eth_port *port = NULL;
	struct kinet_mr *mr = NULL;
	struct txq_h t;
	uint8_t *buf, mac[6], synd;
	uint16_t idx;
	uint64_t at, stamp0 = 0, stamp1 = 0;
	uint32_t n0, n1;
	int s, one = 1;

	NEED_NETNS();
	KT_OK(kt_ctx_open(1, &ctx));
	KT_OK(port_open(ctx, &port));
	KT_OK(kinet_eth_port_mac(port, mac));
	KT_OK(txq_make(port, 1, 1, &t));
	buf = aligned_alloc(4096, 4096);
	KT_OK(kinet_mr_reg(ctx, buf, 4096, 0, &mr));
	s = udp_sock(1, UDP_BASE + 5);
	KT_CHECK(s >= 0);
	KT_OK(setsockopt(s, SOL_SOCKET, SO_TIMESTAMPNS, &one, sizeof(one)));
	n0 = udp_frame(buf, mac, UDP_BASE + 5, "before", 0);
	n1 = udp_frame(buf + 1024, mac, UDP_BASE + 5, "after", 0);
	at = realtime_ns() + 50000000ull;
	tx_send(&t, CS_ALL, buf, n0, kinet_mr_lkey(mr));
	tx_wait_until(&t, at);
	tx_send(&t, CS_ALL, buf + 1024, n1, kinet_mr_lkey(mr));
	KT_CHECK(udp_got(s, "before", DEADLINE_MS, &stamp0));
	KT_CHECK(udp_got(s, "after", DEADLINE_MS, &stamp1));
	printf("wait on time: 'after' %.3f ms after 'before', %.3f ms after the time waited for\n",
	       (double)(stamp1 - stamp0) / 1e6, ((double)stamp1 - (double)at) / 1e6);
	KT_CHECK(stamp0 && stamp1);
	KT_CHECK(stamp1 >= at);
	KT_CHECK(stamp1 - stamp0 >= 45000000ull);
	KT_CHECK(stamp1 - at < 1000000000ull);
	/* Two send CQEs (the WAIT asked for none), no error. */
	KT_CHECK_EQ(tx_cqe(&t, &synd, &idx, DEADLINE_MS), KINET_CQE_REQ);
	KT_CHECK_EQ(tx_cqe(&t, &synd, &idx, DEADLINE_MS), KINET_CQE_REQ);
	KT_CHECK_EQ(idx, 2);
	close(s);
	KT_OK(kinet_mr_dereg(mr));
	KT_OK(kinet_ctx_close(ctx));
	free(buf);
}

static atomic_bool blast_stop;
static atomic_ulong blasted;

/* Side B sends datagrams to UDP_BASE + 6 as fast as it can. */
static void *blast(void *arg)
{
	int s = *(int *)arg;
	char msg[64];

	for (unsigned long i = 0; !atomic_load(&blast_stop); i++) {
		snprintf(msg, sizeof(msg), "stream %lu", i);
		if (udp_to(s, 0, UDP_BASE + 6, msg))
			atomic_fetch_add(&blasted, 1);
		if (!(i & 63))
			sched_yield();
	}
	return NULL;
}

/* Queues, rules, ports and contexts destroyed while frames stream in. */
KT_TEST(teardown_under_load)
{
	struct kinet_ctx *ctx = NULL;
	struct kinet_eth_port *port = NULL;
	struct kinet_eth_flow *f = NULL;
	struct kinet_eth_port_stats st;
	struct txq_h t;
	struct rxq_h q;
	pthread_t th;
	uint64_t delivered = 0;
	int s;

	NEED_NETNS();
	s = udp_sock(1, 0);
	KT_CHECK(s >= 0);
	atomic_store(&blast_stop, false);
	KT_OK(pthread_create(&th, NULL, blast, &s));
	KT_OK(kt_ctx_open(1, &ctx));
	KT_OK(port_open(ctx, &port));
	for (int round = 0; round < 20; round++) {
		struct kinet_cqe_eth_rx rx;
		const uint8_t *data;
		uint32_t got = 0;

		KT_OK(rxq_make(port, 64, &q));
		KT_OK(flow_make(port, (uint32_t)round % 3, UDP_BASE + 6, KINET_ETH_ACTION_QUEUE, &q.q, 1,
				&f));
		kt_sleep_ms(3);
		while (rxq_next(&q, &rx, &data, 0)) {
			KT_CHECK(!memcmp(data + 42, "stream ", 7));
			got++;
		}
		rxq_hand_back(&q, got);
		kt_sleep_ms(2);
		if (round == 0)
			KT_CHECK_EQ(kinet_eth_rxq_destroy(q.q), -EBUSY);
		KT_OK(kinet_eth_flow_destroy(f));
		KT_OK(kinet_eth_rxq_destroy(q.q));
	}
	KT_OK(kinet_eth_port_stats(port, &st));
	delivered = st.rx_delivered;
	printf("teardown: %lu datagrams sent so far, %" PRIu64 " delivered over 20 queue lifetimes, %" PRIu64
	       " full drops, %" PRIu64 " no-rule drops\n",
	       atomic_load(&blasted), delivered, st.rx_drop_queue_full, st.rx_drop_no_rule);
	KT_CHECK(delivered > 0);
	/* A port closed under load, with nothing left on it. */
	KT_OK(kinet_eth_port_close(port));
	/* Everything left to kinet_ctx_close, under load. */
	KT_OK(port_open(ctx, &port));
	KT_OK(rxq_make(port, 64, &q));
	KT_OK(txq_make(port, 1, 1, &t));
	KT_OK(flow_make(port, 0, UDP_BASE + 6, KINET_ETH_ACTION_QUEUE, &q.q, 1, &f));
	kt_sleep_ms(5);
	KT_OK(kinet_ctx_close(ctx));
	/* A context of two ports (the same interface twice) closed at once. */
	struct kinet_eth_port *p2 = NULL;
	KT_OK(kt_ctx_open(2, &ctx));
	KT_OK(port_open(ctx, &port));
	KT_OK(port_open(ctx, &p2));
	KT_OK(rxq_make(port, 16, &q));
	KT_OK(flow_make(port, 0, UDP_BASE + 6, KINET_ETH_ACTION_QUEUE, &q.q, 1, &f));
	KT_OK(rxq_make(p2, 16, &q));
	KT_OK(flow_make(p2, 0, UDP_BASE + 6, KINET_ETH_ACTION_QUEUE, &q.q, 1, &f));
	kt_sleep_ms(5);
	KT_OK(kinet_ctx_close(ctx));
	atomic_store(&blast_stop, true);
	pthread_join(th, NULL);
	close(s);
}

static void *delete_veth(void *arg)
{
	(void)arg;
	kt_sleep_ms(100);
	if (kt_netns_del_veth(&net))
		fprintf(stderr, "kt_netns_del_veth failed\n");
	return NULL;
}

/* The veth deleted under a running port: status says so, sends complete
 * with errors, nothing hangs.  Last: the pair is gone afterwards. */
KT_TEST(vanished_interface)
{
	struct kinet_ctx *ctx = NULL;
	struct kinet_eth_port *port = NULL;
	struct kinet_eth_flow *f = NULL;
	struct kinet_eth_port_stats st;
	struct kinet_mr *mr = NULL;
	struct txq_h t;
	struct rxq_h q;
	uint8_t *buf, mac[6], synd;
	uint16_t idx;
	uint64_t t0;
	pthread_t th;
	int status = 0, op;

	NEED_NETNS();
	KT_OK(kt_ctx_open(1, &ctx));
	KT_OK(port_open(ctx, &port));
	KT_OK(kinet_eth_port_mac(port, mac));
	KT_OK(rxq_make(port, 64, &q));
	KT_OK(flow_make(port, 0, UDP_BASE + 7, KINET_ETH_ACTION_QUEUE, &q.q, 1, &f));
	KT_OK(txq_make(port, 1, 1, &t));
	buf = aligned_alloc(4096, 4096);
	KT_OK(kinet_mr_reg(ctx, buf, 4096, 0, &mr));
	t0 = kt_now_ms();
	KT_OK(pthread_create(&th, NULL, delete_veth, NULL));
	while (kt_now_ms() - t0 < 3000 && !(status = kinet_eth_port_status(port)))
		kt_sleep_ms(1);
	pthread_join(th, NULL);
	printf("vanished: port status %d (%s) %" PRIu64 " ms after the start (deletion at 100 ms)\n", status,
	       status ? strerror(-status) : "-", kt_now_ms() - t0);
	KT_CHECK(status == -ENODEV || status == -ENETDOWN);
	KT_CHECK_EQ(kinet_eth_port_status(port), status);
	uint32_t n = udp_frame(buf, mac, UDP_BASE + 7, "into the void", 0);
	tx_send(&t, CS_ALL, buf, n, kinet_mr_lkey(mr));
	tx_send(&t, CS_ALL, buf, n, kinet_mr_lkey(mr));
	op = tx_cqe(&t, &synd, &idx, DEADLINE_MS);
	KT_CHECK_EQ(op, KINET_CQE_REQ_ERR);
	KT_CHECK_EQ(synd, KINET_SYND_TRANSPORT_RETRY_EXC_ERR);
	KT_CHECK_EQ(tx_cqe(&t, &synd, &idx, DEADLINE_MS), KINET_CQE_REQ_ERR);
	KT_CHECK_EQ(synd, KINET_SYND_WR_FLUSH_ERR);
	KT_OK(kinet_eth_port_stats(port, &st));
	KT_CHECK(st.tx_errors >= 2);
	KT_OK(kinet_eth_flow_destroy(f));
	KT_OK(kinet_eth_rxq_destroy(q.q));
	KT_OK(kinet_eth_txq_destroy(t.q));
	KT_OK(kinet_eth_port_close(port));
	KT_OK(kinet_mr_dereg(mr));
	KT_OK(kinet_ctx_close(ctx));
	free(buf);
	/* And opening it now: no such interface. */
	KT_OK(kt_ctx_open(1, &ctx));
	KT_CHECK_EQ(port_open(ctx, &port), -ENODEV);
	KT_OK(kinet_ctx_close(ctx));
}

KT_MAIN(receive_steered, receive_rss, queue_full_and_handed_back, send_checksums_and_errors,
	malformed_send_wqes, send_wait_on_time, teardown_under_load, vanished_interface)
