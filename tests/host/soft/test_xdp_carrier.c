/*
 * The packet carrier's AF_XDP back end (src/provider/soft/carrier/xdp.c)
 * on a real packet path: two network namespaces made here, joined by a
 * veth pair (tests/harness/kt_netns.c), carriers opened with
 * KINET_PACKET_BACKEND_XDP (SKB mode) in each.
 *
 * Checked: every frame length from 64 to 1514 bytes, AF_XDP to AF_XDP,
 * arrives byte-exact and in order; a burst of 10,000 frames into a
 * 256-frame UMEM polled only now and then is all received or counted as
 * dropped; an ordinary UDP socket's datagram from the other namespace
 * arrives (ARP left to the stack, so the sender resolves the address),
 * stamped between the send and the poll; a frame the carrier sends is
 * delivered to a UDP socket of the other namespace; the program is
 * attached (IFLA_XDP, by rtnetlink) while the carrier is open and gone
 * after close, and after a process that opened one dies without closing
 * it; without CAP_BPF/CAP_SYS_ADMIN/CAP_NET_ADMIN an explicit request is
 * -EPERM and KINET_ETH_BACKEND=xdp falls back to AF_PACKET; deleting the
 * veth under a polling carrier is -ENODEV within a bounded time, sticky;
 * a port opened with attr->backend XDP says so (kinet_eth_port_backend),
 * AUTO and PACKET are AF_PACKET, a bad value is -EINVAL.
 *
 * Needs root and a kernel that loads the program; else it skips (77)
 * saying why.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <linux/capability.h>
#include <linux/if_link.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netinet/ip.h>
#include <netinet/udp.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "eth_csum.h"
#include "kinet/eth.h"
#include "kinet/wire_eth.h"
#include "kt_host.h"
#include "kt_netns.h"
#include "packet.h"

#define TEST_ETHERTYPE 0x88b5
#define BURST_FRAMES 10000u
#define BURST_RING 256u
#define UDP_PORT 29611
#define WATCHDOG_S 150
#define VANISH_DEADLINE_MS 3000

static struct kt_netns net;
static bool net_tried, net_ok, xdp_ok;
static char xdp_why[256];

static int enter(int side)
{
	return kt_netns_enter(&net, side);
}

static void leave(void)
{
	kt_netns_leave(&net);
}

/* Carriers the tests opened and have not closed: a test that fails half
 * way leaves its carriers open, and their programs would make every later
 * open on the same veth -EBUSY; the next test closes them first. */
static struct kinet_packet *opened[8];

static void forget(struct kinet_packet *p)
{
	for (unsigned i = 0; i < 8; i++)
		if (opened[i] == p)
			opened[i] = NULL;
}

static void carrier_close(struct kinet_packet *p)
{
	forget(p);
	kinet_packet_close(p);
}

static void close_leftovers(void)
{
	for (unsigned i = 0; i < 8; i++)
		if (opened[i])
			carrier_close(opened[i]);
}

static int open_on(int side, int backend, uint16_t protocol, uint32_t rx_frames, struct kinet_packet **p)
{
	struct kinet_packet_attr attr = {
		.ifname = net.veth[side], .protocol = protocol, .rx_frames = rx_frames, .backend = backend};
	int ret = enter(side);

	if (ret)
		return ret;
	ret = kinet_packet_open(&attr, p);
	leave();
	for (unsigned i = 0; !ret && i < 8; i++)
		if (!opened[i]) {
			opened[i] = *p;
			break;
		}
	return ret;
}

static bool setup(void)
{
	struct kinet_packet *p = NULL;
	int ret;

	if (kt_netns_setup(&net, "xd", WATCHDOG_S))
		return false;
	printf("netns: %s (%s %s) <-> %s (%s %s)\n", net.ns[0], net.veth[0], net.addr[0], net.ns[1],
	       net.veth[1], net.addr[1]);
	/* Whether AF_XDP works here at all: else every test skips. */
	ret = open_on(1, KINET_PACKET_BACKEND_XDP, 0, 0, &p);
	if (ret) {
		snprintf(xdp_why, sizeof(xdp_why),
			 "AF_XDP cannot be opened here (%s; the log line above says why)", strerror(-ret));
		return true;
	}
	xdp_ok = kinet_packet_backend(p) == KINET_PACKET_BACKEND_XDP;
	carrier_close(p);
	return true;
}

#define NEED_XDP()                                                                                           \
	do {                                                                                                 \
		if (!net_tried) {                                                                            \
			net_tried = true;                                                                    \
			net_ok = setup();                                                                    \
		}                                                                                            \
		close_leftovers();                                                                           \
		if (!net_ok)                                                                                 \
			KT_SKIP("%s", net.why);                                                              \
		if (!xdp_ok)                                                                                 \
			KT_SKIP("%s", xdp_why);                                                              \
		if (net.veth_gone)                                                                           \
			KT_SKIP("the veth pair was deleted by an earlier test");                             \
	} while (0)

static void make_frame(uint8_t *f, size_t len, int from, uint16_t type, uint32_t seq)
{
	memcpy(f, net.mac[!from], 6);
	memcpy(f + 6, net.mac[from], 6);
	f[12] = (uint8_t)(type >> 8);
	f[13] = (uint8_t)type;
	memcpy(f + 14, &seq, 4);
	for (size_t i = 18; i < len; i++)
		f[i] = (uint8_t)(seq * 31u + i);
}

static int send_all(struct kinet_packet *p, const struct iovec *iov, unsigned n)
{
	unsigned done = 0;
	uint64_t deadline = kt_now_ms() + KT_DEADLINE_MS;

	while (done < n) {
		int r = kinet_packet_send(p, iov + done, n - done);

		if (r == -EAGAIN) {
			if (kt_now_ms() > deadline)
				break;
			kt_sleep_ms(1);
			continue;
		}
		if (r < 0)
			return r;
		done += (unsigned)r;
	}
	return (int)done;
}

/* IFLA_XDP of side's veth, by rtnetlink from inside its namespace: the
 * attach mode (XDP_ATTACHED_NONE 0, ...) and the program's id, or -errno. */
static int xdp_attached(int side, uint32_t *prog_id)
{
	struct {
		struct nlmsghdr nh;
		struct ifinfomsg ifm;
	} req = {.nh = {.nlmsg_len = sizeof(req), .nlmsg_type = RTM_GETLINK, .nlmsg_flags = NLM_F_REQUEST},
		 .ifm = {.ifi_family = AF_UNSPEC, .ifi_index = net.ifindex[side]}};
	static char buf[32768];
	struct nlmsghdr *nh = (struct nlmsghdr *)buf;
	int fd, mode = 0;
	ssize_t n;

	*prog_id = 0;
	if (enter(side))
		return -EIO;
	fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
	leave();
	if (fd < 0)
		return -errno;
	if (send(fd, &req, sizeof(req), 0) < 0 || (n = recv(fd, buf, sizeof(buf), 0)) < 0) {
		close(fd);
		return -errno;
	}
	close(fd);
	if (!NLMSG_OK(nh, (size_t)n))
		return -EIO;
	if (nh->nlmsg_type == NLMSG_ERROR)
		return ((struct nlmsgerr *)NLMSG_DATA(nh))->error;
	struct ifinfomsg *ifm = NLMSG_DATA(nh);
	int len = (int)IFLA_PAYLOAD(nh);
	for (struct rtattr *a = IFLA_RTA(ifm); RTA_OK(a, len); a = RTA_NEXT(a, len)) {
		if ((a->rta_type & ~NLA_F_NESTED) != IFLA_XDP)
			continue;
		int l2 = (int)RTA_PAYLOAD(a);
		for (struct rtattr *b = RTA_DATA(a); RTA_OK(b, l2); b = RTA_NEXT(b, l2)) {
			if (b->rta_type == IFLA_XDP_ATTACHED)
				mode = *(uint8_t *)RTA_DATA(b);
			else if (b->rta_type == IFLA_XDP_PROG_ID)
				*prog_id = *(uint32_t *)RTA_DATA(b);
		}
	}
	return mode;
}

/* ---- tests --------------------------------------------------------------- */

/* Every length from 64 to 1514 bytes, AF_XDP a to AF_XDP b, byte-exact and
 * in order. */
KT_TEST(frames_byte_exact)
{
	enum { LO = 64, HI = 1514, N = HI - LO + 1 };
	static uint8_t frames[N][HI];
	static struct iovec iov[N];
	struct kinet_packet *tx = NULL, *rx = NULL;
	struct kinet_packet_rx got[64];
	struct kinet_packet_stats st;
	unsigned seen = 0;
	uint64_t deadline;

	NEED_XDP();
	KT_OK(open_on(0, KINET_PACKET_BACKEND_XDP, TEST_ETHERTYPE, 0, &tx));
	KT_OK(open_on(1, KINET_PACKET_BACKEND_XDP, TEST_ETHERTYPE, 0, &rx));
	KT_CHECK_EQ(kinet_packet_backend(rx), KINET_PACKET_BACKEND_XDP);
	KT_CHECK_EQ(kinet_packet_mtu(rx), 1500);
	KT_CHECK_EQ(kinet_packet_ifindex(rx), net.ifindex[1]);
	for (unsigned i = 0; i < N; i++) {
		make_frame(frames[i], LO + i, 0, TEST_ETHERTYPE, i);
		iov[i].iov_base = frames[i];
		iov[i].iov_len = LO + i;
	}
	struct iovec runt = {.iov_base = frames[0], .iov_len = 10};
	KT_CHECK_EQ(kinet_packet_send(tx, &runt, 1), -EINVAL);
	struct iovec big = {.iov_base = frames[0], .iov_len = 1515};
	KT_CHECK_EQ(kinet_packet_send(tx, &big, 1), -EMSGSIZE);
	KT_CHECK_EQ(send_all(tx, iov, N), N);
	deadline = kt_now_ms() + KT_DEADLINE_MS;
	while (seen < N && kt_now_ms() < deadline) {
		int n = kinet_packet_poll(rx, got, 64);

		KT_CHECK(n >= 0);
		if (!n) {
			KT_CHECK(kinet_packet_wait(rx, 100) >= 0);
			continue;
		}
		for (int j = 0; j < n && seen < N; j++, seen++) {
			KT_CHECK_EQ(got[j].len, LO + seen);
			KT_CHECK_EQ(got[j].wire_len, LO + seen);
			KT_CHECK_BYTES("frame", got[j].data, frames[seen], got[j].len);
		}
		kinet_packet_release(rx, (unsigned)n);
	}
	KT_CHECK_EQ(seen, N);
	KT_OK(kinet_packet_stats(rx, &st));
	KT_CHECK_EQ(st.rx_drops, 0);
	KT_CHECK_EQ(st.polled, N);
	KT_CHECK_EQ(st.rx_frames, N);
	KT_OK(kinet_packet_stats(tx, &st));
	KT_CHECK_EQ(st.tx_frames, N);
	carrier_close(tx);
	carrier_close(rx);
}

/* 10,000 frames at a 256-frame UMEM drained only every 512 frames: what
 * the carrier did not receive, the kernel counted as dropped. */
KT_TEST(burst_received_or_dropped)
{
	enum { LEN = 64, BATCH = 32, DRAIN_EVERY = 512 };
	static uint8_t frames[BATCH][LEN];
	struct iovec iov[BATCH];
	struct kinet_packet *tx = NULL, *rx = NULL;
	struct kinet_packet_rx got[64];
	struct kinet_packet_stats st;
	uint64_t received = 0, quiet_since;
	uint32_t sent = 0, last_seq = 0;
	bool any = false, ordered = true;
	int n;

	NEED_XDP();
	KT_OK(open_on(0, KINET_PACKET_BACKEND_XDP, TEST_ETHERTYPE + 1, 0, &tx));
	KT_OK(open_on(1, KINET_PACKET_BACKEND_XDP, TEST_ETHERTYPE + 1, BURST_RING, &rx));
	while (sent < BURST_FRAMES) {
		unsigned k = BURST_FRAMES - sent < BATCH ? BURST_FRAMES - sent : BATCH;

		for (unsigned i = 0; i < k; i++) {
			make_frame(frames[i], LEN, 0, TEST_ETHERTYPE + 1, sent + i);
			iov[i].iov_base = frames[i];
			iov[i].iov_len = LEN;
		}
		n = send_all(tx, iov, k);
		KT_CHECK_EQ(n, (int)k);
		sent += k;
		if (sent % DRAIN_EVERY && sent != BURST_FRAMES)
			continue;
		while ((n = kinet_packet_poll(rx, got, 64)) > 0) {
			for (int j = 0; j < n; j++) {
				uint32_t seq;

				memcpy(&seq, got[j].data + 14, 4);
				if (any && seq <= last_seq)
					ordered = false;
				any = true;
				last_seq = seq;
			}
			received += (unsigned)n;
			kinet_packet_release(rx, (unsigned)n);
		}
		KT_CHECK(n == 0);
	}
	quiet_since = kt_now_ms();
	while (kt_now_ms() - quiet_since < 200) {
		n = kinet_packet_poll(rx, got, 64);
		KT_CHECK(n >= 0);
		if (n) {
			received += (unsigned)n;
			kinet_packet_release(rx, (unsigned)n);
			quiet_since = kt_now_ms();
		} else {
			kinet_packet_wait(rx, 20);
		}
	}
	KT_OK(kinet_packet_stats(rx, &st));
	printf("burst: sent %u, received %" PRIu64 ", dropped %" PRIu64 " (UMEM of %u receive frames)\n",
	       sent, received, st.rx_drops, BURST_RING);
	KT_CHECK(ordered);
	KT_CHECK_EQ(st.polled, received);
	KT_CHECK_EQ(st.rx_frames, received);
	KT_CHECK_EQ(received + st.rx_drops, sent);
	carrier_close(tx);
	carrier_close(rx);
}

static uint64_t realtime_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static bool is_our_udp(const struct kinet_packet_rx *f, uint32_t dst, const char *want, size_t wlen)
{
	const struct iphdr *ip = (const struct iphdr *)(f->data + 14);
	const struct udphdr *udp;

	if (f->len < 14 + sizeof(*ip) || f->data[12] != 0x08 || f->data[13] != 0x00)
		return false;
	if (ip->protocol != IPPROTO_UDP || ip->daddr != dst || f->len < 14 + ip->ihl * 4u + sizeof(*udp))
		return false;
	udp = (const struct udphdr *)((const uint8_t *)ip + ip->ihl * 4u);
	if (ntohs(udp->dest) != UDP_PORT)
		return false;
	return ntohs(udp->len) == sizeof(*udp) + wlen && f->len >= 14 + ip->ihl * 4u + sizeof(*udp) + wlen &&
	       !memcmp(udp + 1, want, wlen);
}

/* An ordinary UDP socket in a sends to b's address; the AF_XDP carrier in
 * b (all ethertypes) receives it: the sender's ARP was answered by b's
 * stack, which the program leaves ARP to. */
KT_TEST(udp_datagram_arrives)
{
	struct kinet_packet *rx = NULL;
	struct kinet_packet_rx got[16];
	struct sockaddr_in to = {.sin_family = AF_INET, .sin_port = htons(UDP_PORT)};
	char payload[64];
	uint64_t t0, t1 = 0, ts = 0, deadline;
	bool found = false, arp_seen = false;
	int s;

	NEED_XDP();
	KT_OK(open_on(1, KINET_PACKET_BACKEND_XDP, 0, 0, &rx));
	snprintf(payload, sizeof(payload), "kinet xdp carrier %d %u", (int)getpid(), (unsigned)rand());
	inet_pton(AF_INET, net.addr[1], &to.sin_addr);
	KT_OK(enter(0));
	s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	leave();
	KT_CHECK(s >= 0);
	t0 = realtime_ns();
	KT_CHECK(sendto(s, payload, strlen(payload), 0, (struct sockaddr *)&to, sizeof(to)) ==
		 (ssize_t)strlen(payload));
	deadline = kt_now_ms() + KT_DEADLINE_MS;
	while (!found && kt_now_ms() < deadline) {
		int n = kinet_packet_poll(rx, got, 16);

		KT_CHECK(n >= 0);
		t1 = realtime_ns();
		for (int j = 0; j < n && !found; j++) {
			if (got[j].len >= 14 && got[j].data[12] == 0x08 && got[j].data[13] == 0x06)
				arp_seen = true;
			if (is_our_udp(&got[j], to.sin_addr.s_addr, payload, strlen(payload))) {
				found = true;
				ts = got[j].ts_ns;
			}
		}
		kinet_packet_release(rx, (unsigned)n);
		if (!n && kinet_packet_wait(rx, 100) < 0)
			break;
	}
	close(s);
	carrier_close(rx);
	KT_CHECK(found);
	KT_CHECK(!arp_seen);
	printf("udp: stamped %.1f us after the send (the poll's time)\n", (ts - t0) / 1e3);
	KT_CHECK(ts >= t0);
	KT_CHECK(ts <= t1);
}

/* A UDP/IPv4 frame from side 0 to side 1, checksums by the software
 * NIC's code; its length. */
static uint32_t udp_frame(uint8_t *f, uint16_t port, const char *payload)
{
	uint32_t plen = (uint32_t)strlen(payload), ip_len = 20 + 8 + plen;

	memset(f, 0, 14 + ip_len);
	memcpy(f, net.mac[1], 6);
	memcpy(f + 6, net.mac[0], 6);
	f[12] = 0x08;
	f[14] = 0x45;
	f[16] = (uint8_t)(ip_len >> 8);
	f[17] = (uint8_t)ip_len;
	f[20] = 0x40;
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
	memcpy(f + 42, payload, plen);
	kinet_eth_csum_fill(f, 14 + ip_len, KINET_ETH_WQE_L3_CSUM | KINET_ETH_WQE_L4_CSUM);
	return 14 + ip_len;
}

static bool udp_got(int s, const char *want, int ms)
{
	char buf[256];
	uint64_t deadline = kt_now_ms() + (uint64_t)ms;

	while (kt_now_ms() < deadline) {
		ssize_t n = recv(s, buf, sizeof(buf), MSG_DONTWAIT);
		if (n == (ssize_t)strlen(want) && !memcmp(buf, want, (size_t)n))
			return true;
		kt_sleep_ms(1);
	}
	return false;
}

/* Frames the AF_XDP carrier sends reach a UDP socket of the other
 * namespace, one after the other (the send frames are reclaimed). */
KT_TEST(sent_frames_reach_socket)
{
	enum { N = 2000 };
	struct kinet_packet *tx = NULL;
	struct sockaddr_in me = {.sin_family = AF_INET, .sin_port = htons(UDP_PORT + 1)};
	uint8_t f[256];
	struct iovec iov = {f, 0};
	char msg[64];
	int s, got = 0;

	NEED_XDP();
	KT_OK(open_on(0, KINET_PACKET_BACKEND_XDP, TEST_ETHERTYPE + 2, 0, &tx));
	KT_OK(enter(1));
	s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	leave();
	KT_CHECK(s >= 0);
	inet_pton(AF_INET, net.addr[1], &me.sin_addr);
	KT_CHECK(bind(s, (struct sockaddr *)&me, sizeof(me)) == 0);
	/* More than the 512 send frames: each comes back through the
	 * completion ring before it is used again. */
	for (int i = 0; i < N; i++) {
		snprintf(msg, sizeof(msg), "xdp send %d", i);
		iov.iov_len = udp_frame(f, UDP_PORT + 1, msg);
		KT_CHECK_EQ(send_all(tx, &iov, 1), 1);
		if (udp_got(s, msg, KT_DEADLINE_MS))
			got++;
		else
			break;
	}
	KT_CHECK_EQ(got, N);
	close(s);
	carrier_close(tx);
}

/* The program is attached (SKB mode) while the carrier is open, and gone
 * after close, and after a process that had one open dies without
 * closing it. */
KT_TEST(detached_after_close)
{
	struct kinet_packet *p = NULL;
	uint32_t id = 0;
	pid_t pid;
	int st;

	NEED_XDP();
	KT_CHECK_EQ(xdp_attached(1, &id), XDP_ATTACHED_NONE);
	KT_OK(open_on(1, KINET_PACKET_BACKEND_XDP, 0, 0, &p));
	KT_CHECK_EQ(xdp_attached(1, &id), XDP_ATTACHED_SKB);
	KT_CHECK(id != 0);
	printf("attached: program id %u in SKB mode\n", id);
	/* A second carrier on the same interface: the link refuses to
	 * replace the first one's program. */
	struct kinet_packet *q = NULL;
	KT_CHECK_EQ(open_on(1, KINET_PACKET_BACKEND_XDP, 0, 0, &q), -EBUSY);
	carrier_close(p);
	KT_CHECK_EQ(xdp_attached(1, &id), XDP_ATTACHED_NONE);
	KT_CHECK_EQ(id, 0);

	pid = fork();
	KT_CHECK(pid >= 0);
	if (pid == 0) {
		/* Opens and dies by a signal, closing nothing. */
		if (open_on(1, KINET_PACKET_BACKEND_XDP, 0, 0, &p) ||
		    xdp_attached(1, &id) != XDP_ATTACHED_SKB)
			_exit(1);
		signal(SIGKILL, SIG_DFL);
		kill(getpid(), SIGKILL);
		_exit(2);
	}
	KT_CHECK(waitpid(pid, &st, 0) == pid);
	KT_CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
	/* The link's descriptor closes with the process; its release may
	 * lag the reaping by a moment. */
	for (int i = 0; i < 100 && xdp_attached(1, &id) != XDP_ATTACHED_NONE; i++)
		kt_sleep_ms(10);
	KT_CHECK_EQ(xdp_attached(1, &id), XDP_ATTACHED_NONE);
}

/* Without CAP_BPF, CAP_SYS_ADMIN and CAP_NET_ADMIN (a child drops them
 * from its effective set): an explicit request is -EPERM;
 * KINET_ETH_BACKEND=xdp with AUTO warns and opens AF_PACKET. */
KT_TEST(no_caps_fallback)
{
	pid_t pid;
	int st;

	NEED_XDP();
	pid = fork();
	KT_CHECK(pid >= 0);
	if (pid == 0) {
		struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3};
		struct __user_cap_data_struct data[2];
		struct kinet_packet_attr attr = {.ifname = net.veth[1], .backend = KINET_PACKET_BACKEND_XDP};
		struct kinet_packet *p = NULL;
		const int drop[] = {CAP_SYS_ADMIN, CAP_NET_ADMIN, 39 /* CAP_BPF */};

		/* Into the namespace first: setns needs CAP_SYS_ADMIN. */
		if (enter(1) || syscall(SYS_capget, &hdr, data))
			_exit(2);
		for (unsigned i = 0; i < 3; i++)
			data[drop[i] / 32].effective &= ~(1u << (drop[i] % 32));
		if (syscall(SYS_capset, &hdr, data))
			_exit(3);
		if (kinet_packet_open(&attr, &p) != -EPERM)
			_exit(4);
		setenv("KINET_ETH_BACKEND", "xdp", 1);
		attr.backend = KINET_PACKET_BACKEND_AUTO;
		if (kinet_packet_open(&attr, &p))
			_exit(5);
		if (kinet_packet_backend(p) != KINET_PACKET_BACKEND_PACKET)
			_exit(6);
		carrier_close(p);
		_exit(0);
	}
	KT_CHECK(waitpid(pid, &st, 0) == pid);
	KT_CHECK(WIFEXITED(st));
	KT_CHECK_EQ(WEXITSTATUS(st), 0);
}

/* The port API: attr->backend picks the carrier's back end, and
 * kinet_eth_port_backend says which one a port uses. */
KT_TEST(port_backend)
{
	struct kinet_ctx *ctx = NULL;
	struct kinet_eth_port *port = NULL;
	struct kinet_eth_port_attr a;
	const int want[][2] = {{KINET_ETH_BACKEND_AUTO, KINET_ETH_BACKEND_PACKET},
			       {KINET_ETH_BACKEND_PACKET, KINET_ETH_BACKEND_PACKET},
			       {KINET_ETH_BACKEND_XDP, KINET_ETH_BACKEND_XDP}};
	uint32_t id;

	NEED_XDP();
	KT_OK(kt_ctx_open(1, &ctx));
	kinet_eth_port_attr_init(&a);
	KT_CHECK_EQ(a.backend, KINET_ETH_BACKEND_AUTO);
	a.ifname = net.veth[1];
	a.backend = 7;
	KT_CHECK_EQ(kinet_eth_port_open(ctx, &a, &port), -EINVAL);
	KT_CHECK_EQ(kinet_eth_port_backend(NULL), -EINVAL);
	for (unsigned i = 0; i < 3; i++) {
		a.backend = want[i][0];
		KT_OK(enter(1));
		int ret = kinet_eth_port_open(ctx, &a, &port);
		leave();
		KT_OK(ret);
		KT_CHECK_EQ(kinet_eth_port_backend(port), want[i][1]);
		KT_CHECK_EQ(xdp_attached(1, &id),
			    want[i][1] == KINET_ETH_BACKEND_XDP ? XDP_ATTACHED_SKB : XDP_ATTACHED_NONE);
		KT_OK(kinet_eth_port_close(port));
	}
	KT_CHECK_EQ(xdp_attached(1, &id), XDP_ATTACHED_NONE);
	KT_OK(kinet_ctx_close(ctx));
}

/* When the deletion returned (kt_now_ms), 0 before. */
static _Atomic uint64_t deleted_at;

static void *delete_veth(void *arg)
{
	(void)arg;
	kt_sleep_ms(100);
	kt_netns_del_veth(&net);
	deleted_at = kt_now_ms();
	return NULL;
}

/* The veth deleted under a polling AF_XDP carrier: -ENODEV, not a hang;
 * sticky on every call. */
KT_TEST(vanished_interface)
{
	struct kinet_packet *rx = NULL;
	struct kinet_packet_rx got[16];
	uint8_t frame[64];
	struct iovec iov = {.iov_base = frame, .iov_len = sizeof(frame)};
	pthread_t th;
	uint64_t t0, took = 0;
	int n = 0;

	NEED_XDP();
	KT_OK(open_on(1, KINET_PACKET_BACKEND_XDP, 0, 0, &rx));
	make_frame(frame, sizeof(frame), 1, TEST_ETHERTYPE, 0);
	t0 = kt_now_ms();
	deleted_at = 0;
	KT_OK(pthread_create(&th, NULL, delete_veth, NULL));
	/* The bound counts from the deletion's return: on a busy machine
	 * the deletion itself waits for the RTNL lock (other namespaces being
	 * torn down hold it), for seconds at times. */
	for (;;) {
		uint64_t del = deleted_at, now;

		n = kinet_packet_poll(rx, got, 16);
		if (n < 0)
			break;
		kinet_packet_release(rx, (unsigned)n);
		now = kt_now_ms();
		if ((del && now - del > VANISH_DEADLINE_MS) || now - t0 > 60000)
			break;
	}
	took = kt_now_ms() - t0;
	pthread_join(th, NULL);
	net.veth_gone = true;
	printf("vanished: poll returned %d (%s) %" PRIu64 " ms after the start; the deletion (begun at 100 "
	       "ms) returned at %" PRIu64 " ms\n",
	       n, n < 0 ? strerror(-n) : "-", took, deleted_at - t0);
	KT_CHECK_EQ(n, -ENODEV);
	KT_CHECK(took < deleted_at - t0 + VANISH_DEADLINE_MS);
	KT_CHECK_EQ(kinet_packet_poll(rx, got, 16), n);
	KT_CHECK_EQ(kinet_packet_wait(rx, 1000), n);
	KT_CHECK_EQ(kinet_packet_send(rx, &iov, 1), n);
	carrier_close(rx);
	KT_CHECK_EQ(open_on(1, KINET_PACKET_BACKEND_XDP, 0, 0, &rx), -ENODEV);
}

KT_MAIN(frames_byte_exact, burst_received_or_dropped, udp_datagram_arrives, sent_frames_reach_socket,
	detached_after_close, no_caps_fallback, port_backend, vanished_interface)
