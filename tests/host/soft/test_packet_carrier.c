/*
 * The packet carrier (src/provider/soft/carrier/packet.c) on a real Linux
 * packet path: two network namespaces made here, joined by a veth pair,
 * one carrier in each (sockets keep the namespace of the thread that made
 * them, so one thread switches with setns to open both).
 *
 * Checked: frames of every length from 64 to 1514 bytes sent by one
 * carrier arrive byte-exact and in order at the other; an ordinary UDP
 * socket's datagram arrives with its payload and a CLOCK_REALTIME stamp
 * taken between the send and the poll; a burst of 10,000 frames into a
 * 256-slot ring polled only now and then is all received or counted as
 * dropped; frames whose checksums the software NIC filled (eth_csum.c)
 * reach a UDP socket of the other namespace, and with either checksum
 * off by one they do not; an unknown interface is -ENODEV; without CAP_NET_RAW open is
 * -EPERM; deleting the veth while a carrier polls is an error within a
 * bounded time, and send and wait report it too.
 *
 * Needs root (no iproute2: tests/harness/kt_netns.c makes the namespaces
 * through rtnetlink); else it skips saying why (77).  Names carry this
 * process's id (kinet-pc-a-<pid>, veth kpca<pid>), so parallel runs never
 * collide; the namespaces are deleted at exit, on SIGTERM/SIGINT, and by a
 * watchdog alarm.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <linux/capability.h>
#include <linux/ethtool.h>
#include <linux/sockios.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netinet/ip.h>
#include <netinet/udp.h>
#include <stdatomic.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "eth_csum.h"
#include "kinet/wire_eth.h"
#include "kt_host.h"
#include "kt_netns.h"
#include "packet.h"

#define TEST_ETHERTYPE 0x88b5 /* IEEE local experimental */
#define BURST_FRAMES 10000u
#define BURST_RING 256u
#define UDP_PORT 29601
#define WATCHDOG_S 150
#define VANISH_DEADLINE_MS 3000

/* The two namespaces and their veth pair (tests/harness/kt_netns.h). */
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

static bool setup(void)
{
	if (kt_netns_setup(&net, "pc", WATCHDOG_S))
		return false;
	printf("netns: %s (%s %s %s) <-> %s (%s %s %s)\n", net.ns[0], net.veth[0], net.addr[0],
	       net.mac_str[0], net.ns[1], net.veth[1], net.addr[1], net.mac_str[1]);
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

/* Opens a carrier on side's veth, from inside its namespace. */
static int open_on(int side, uint16_t protocol, uint32_t rx_frames, struct kinet_packet **p)
{
	struct kinet_packet_attr attr = {
		.ifname = net.veth[side], .protocol = protocol, .rx_frames = rx_frames};
	int ret = enter(side);

	if (ret)
		return ret;
	ret = kinet_packet_open(&attr, p);
	leave();
	return ret;
}

/* A test frame: to the other side's MAC, ethertype, then seq (4 bytes)
 * and a pattern of seq and offset. */
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

/* Sends all n frames, retrying -EAGAIN until the deadline: the number sent. */
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

/* ---- tests --------------------------------------------------------------- */

KT_TEST(unknown_interface)
{
	struct kinet_packet_attr attr = {.ifname = "kinet-nosuch0"};
	struct kinet_packet *p = NULL;

	if (geteuid() != 0)
		KT_SKIP("needs root (CAP_NET_RAW): not root");
	KT_CHECK_EQ(kinet_packet_open(&attr, &p), -ENODEV);
	attr.ifname = "an-interface-name-far-too-long";
	KT_CHECK_EQ(kinet_packet_open(&attr, &p), -ENODEV);
	attr.ifname = "lo";
	attr.rx_frames = 100; /* not a power of two */
	KT_CHECK_EQ(kinet_packet_open(&attr, &p), -EINVAL);
	attr.rx_frames = 0;
	attr.frame_size = 3000;
	KT_CHECK_EQ(kinet_packet_open(&attr, &p), -EINVAL);
	KT_CHECK(p == NULL);
}

/* A child that drops CAP_NET_RAW from its effective set gets -EPERM. */
KT_TEST(no_cap_net_raw)
{
	pid_t pid;
	int st;

	if (geteuid() != 0)
		KT_SKIP("needs root to drop CAP_NET_RAW: not root");
	pid = fork();
	KT_CHECK(pid >= 0);
	if (pid == 0) {
		struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3};
		struct __user_cap_data_struct data[2];
		struct kinet_packet_attr attr = {.ifname = "lo"};
		struct kinet_packet *p;

		if (syscall(SYS_capget, &hdr, data))
			_exit(2);
		data[CAP_NET_RAW / 32].effective &= ~(1u << (CAP_NET_RAW % 32));
		if (syscall(SYS_capset, &hdr, data))
			_exit(3);
		_exit(kinet_packet_open(&attr, &p) == -EPERM ? 0 : 1);
	}
	KT_CHECK(waitpid(pid, &st, 0) == pid);
	KT_CHECK(WIFEXITED(st));
	KT_CHECK_EQ(WEXITSTATUS(st), 0);
}

/* Every length from 64 to 1514 bytes, a to b, byte-exact and in order. */
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

	NEED_NETNS();
	KT_OK(open_on(0, TEST_ETHERTYPE, 0, &tx));
	KT_OK(open_on(1, TEST_ETHERTYPE, 0, &rx));
	KT_CHECK_EQ(kinet_packet_mtu(rx), 1500);
	for (unsigned i = 0; i < N; i++) {
		make_frame(frames[i], LO + i, 0, TEST_ETHERTYPE, i);
		iov[i].iov_base = frames[i];
		iov[i].iov_len = LO + i;
	}
	/* A frame shorter than an Ethernet header is refused, not sent. */
	struct iovec runt = {.iov_base = frames[0], .iov_len = 10};
	KT_CHECK_EQ(kinet_packet_send(tx, &runt, 1), -EINVAL);
	KT_CHECK_EQ(send_all(tx, iov, N), N);
	deadline = kt_now_ms() + KT_DEADLINE_MS;
	while (seen < N && kt_now_ms() < deadline) {
		int n = kinet_packet_poll(rx, got, 64);

		KT_CHECK(n >= 0);
		if (!n) {
			KT_CHECK(kinet_packet_wait(rx, 100) >= 0);
			continue;
		}
		for (int j = 0; j < n; j++, seen++) {
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
	KT_OK(kinet_packet_stats(tx, &st));
	KT_CHECK_EQ(st.tx_frames, N);
	kinet_packet_close(tx);
	kinet_packet_close(rx);
}

static uint64_t realtime_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Whether f is the IPv4 UDP datagram to dst:port with payload want. */
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

/* An ordinary UDP socket in a sends; the carrier in b (all ethertypes)
 * sees the datagram, ARP and all, stamped between send and poll. */
KT_TEST(udp_datagram_timestamp)
{
	struct kinet_packet *rx = NULL;
	struct kinet_packet_rx got[16];
	struct sockaddr_in to = {.sin_family = AF_INET, .sin_port = htons(UDP_PORT)};
	char payload[64];
	uint64_t t0, t1 = 0, ts = 0, deadline;
	bool found = false;
	int s;

	NEED_NETNS();
	KT_OK(open_on(1, 0, 0, &rx));
	snprintf(payload, sizeof(payload), "kinet packet carrier %d %u", (int)getpid(), (unsigned)rand());
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
		for (int j = 0; j < n && !found; j++)
			if (is_our_udp(&got[j], to.sin_addr.s_addr, payload, strlen(payload))) {
				found = true;
				ts = got[j].ts_ns;
			}
		kinet_packet_release(rx, (unsigned)n);
		if (!n && kinet_packet_wait(rx, 100) < 0)
			break;
	}
	close(s);
	kinet_packet_close(rx);
	KT_CHECK(found);
	printf("udp: stamped %.1f us after the send, %.1f us before the poll saw it\n", (ts - t0) / 1e3,
	       (t1 - ts) / 1e3);
	/* CLOCK_REALTIME, taken in between (1 ms of slack for a step of the
	 * clock would still fail a stamp from another clock by decades). */
	KT_CHECK(ts + 1000000ull >= t0);
	KT_CHECK(ts <= t1 + 1000000ull);
}

/* A UDP/IPv4 frame from side 0 to side 1's address and port, checksums
 * by the software NIC's code (eth_csum.c); its length. */
static uint32_t csum_frame(uint8_t *f, uint16_t port, const char *payload)
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

/* Whether the socket receives exactly want within ms. */
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

/* The Linux stack of the other namespace judges the software NIC's
 * checksums: a frame they fill is delivered to a UDP socket; with the UDP
 * or the IPv4 header checksum off by one it is not (the receiving veth's
 * rx checksum offload is turned off, else veth vouches for every frame and
 * UDP checks nothing). */
KT_TEST(checksums_linux)
{
	struct kinet_packet *tx = NULL;
	struct sockaddr_in me = {.sin_family = AF_INET, .sin_port = htons(UDP_PORT + 1)};
	struct ethtool_value ev = {.cmd = ETHTOOL_SRXCSUM, .data = 0};
	struct ifreq ifr;
	uint8_t f[256];
	struct iovec iov = {f, 0};
	bool rx_off;
	int s;

	NEED_NETNS();
	KT_OK(open_on(0, TEST_ETHERTYPE + 2, 0, &tx));
	KT_OK(enter(1));
	s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", net.veth[1]);
	ifr.ifr_data = (char *)&ev;
	rx_off = s >= 0 && ioctl(s, SIOCETHTOOL, &ifr) == 0;
	leave();
	KT_CHECK(s >= 0);
	inet_pton(AF_INET, net.addr[1], &me.sin_addr);
	KT_CHECK(bind(s, (struct sockaddr *)&me, sizeof(me)) == 0);

	iov.iov_len = csum_frame(f, UDP_PORT + 1, "checksums 1");
	KT_CHECK_EQ(send_all(tx, &iov, 1), 1);
	KT_CHECK(udp_got(s, "checksums 1", KT_DEADLINE_MS));

	/* The IPv4 header checksum off by one: ip_rcv always checks it. */
	iov.iov_len = csum_frame(f, UDP_PORT + 1, "checksums 2");
	f[25] ^= 1;
	KT_CHECK_EQ(send_all(tx, &iov, 1), 1);
	KT_CHECK(!udp_got(s, "checksums 2", 300));

	if (rx_off) {
		iov.iov_len = csum_frame(f, UDP_PORT + 1, "checksums 3");
		f[41] ^= 1; /* UDP checksum */
		KT_CHECK_EQ(send_all(tx, &iov, 1), 1);
		KT_CHECK(!udp_got(s, "checksums 3", 300));
	} else {
		printf("checksums_linux: cannot turn the veth's rx checksum offload off (%s): the UDP "
		       "checksum's refusal is not checked\n",
		       strerror(errno));
	}
	/* And a good one still passes after the refused ones. */
	iov.iov_len = csum_frame(f, UDP_PORT + 1, "checksums 4");
	KT_CHECK_EQ(send_all(tx, &iov, 1), 1);
	KT_CHECK(udp_got(s, "checksums 4", KT_DEADLINE_MS));
	close(s);
	kinet_packet_close(tx);
}

/* 10,000 frames at a 256-slot ring drained only every 512 frames: what
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

	NEED_NETNS();
	KT_OK(open_on(0, TEST_ETHERTYPE + 1, 0, &tx));
	KT_OK(open_on(1, TEST_ETHERTYPE + 1, BURST_RING, &rx));
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
	/* What may still be on its way: drain until 200 ms pass quietly. */
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
	printf("burst: sent %u, received %" PRIu64 ", dropped %" PRIu64 " (ring of %u)\n", sent, received,
	       st.rx_drops, BURST_RING);
	KT_CHECK(ordered);
	KT_CHECK_EQ(st.polled, received);
	KT_CHECK_EQ(st.rx_frames, received);
	KT_CHECK_EQ(received + st.rx_drops, sent);
	kinet_packet_close(tx);
	kinet_packet_close(rx);
}

/* When the deletion returned (kt_now_ms), 0 before: the deletion itself
 * took over 3 s on a loaded machine, so the bound counts from its end. */
static _Atomic uint64_t veth_deleted_at;

static void *delete_veth(void *arg)
{
	(void)arg;
	kt_sleep_ms(100);
	kt_netns_del_veth(&net);
	atomic_store(&veth_deleted_at, kt_now_ms());
	return NULL;
}

/* The veth deleted under a polling carrier: an error, not a hang; and the
 * carrier stays in it. */
KT_TEST(vanished_interface)
{
	struct kinet_packet *rx = NULL;
	struct kinet_packet_rx got[16];
	uint8_t frame[64];
	struct iovec iov = {.iov_base = frame, .iov_len = sizeof(frame)};
	pthread_t th;
	uint64_t t0, took = 0;
	int n = 0;

	NEED_NETNS();
	KT_OK(open_on(1, 0, 0, &rx));
	make_frame(frame, sizeof(frame), 1, TEST_ETHERTYPE, 0);
	t0 = kt_now_ms();
	KT_OK(pthread_create(&th, NULL, delete_veth, NULL));
	for (;;) {
		uint64_t now = kt_now_ms(), del = atomic_load(&veth_deleted_at);
		if ((del && now - del > VANISH_DEADLINE_MS) || now - t0 > 60000)
			break;
		n = kinet_packet_poll(rx, got, 16);
		if (n < 0)
			break;
		kinet_packet_release(rx, (unsigned)n);
	}
	took = kt_now_ms() - t0;
	pthread_join(th, NULL);
	uint64_t deleted_after = atomic_load(&veth_deleted_at) - t0;
	net.veth_gone = true;
	printf("vanished: poll returned %d (%s) %" PRIu64
	       " ms after the start (deletion from 100 ms to %" PRIu64 " ms)\n",
	       n, n < 0 ? strerror(-n) : "-", took, deleted_after);
	KT_CHECK(n == -ENODEV || n == -ENETDOWN);
	KT_CHECK(took < deleted_after + VANISH_DEADLINE_MS);
	/* Sticky, on every call. */
	KT_CHECK_EQ(kinet_packet_poll(rx, got, 16), n);
	KT_CHECK_EQ(kinet_packet_wait(rx, 1000), n);
	KT_CHECK_EQ(kinet_packet_send(rx, &iov, 1), n);
	kinet_packet_close(rx);
	/* And opening it now: no such interface. */
	KT_CHECK_EQ(open_on(1, 0, 0, &rx), -ENODEV);
}

KT_MAIN(unknown_interface, no_cap_net_raw, frames_byte_exact, udp_datagram_timestamp,
	burst_received_or_dropped, checksums_linux, vanished_interface)
