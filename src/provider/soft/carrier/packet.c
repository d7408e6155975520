/*
 * The packet carrier (packet.h): one AF_PACKET socket, a TPACKET_V2
 * receive ring, sendmmsg() to send.
 *
 * The receive ring is an array of slots the kernel and the process hand
 * back and forth through each slot's tp_status: the kernel fills the slot
 * at its head when it is TP_STATUS_KERNEL (else it drops the frame and
 * counts it in tp_drops) and publishes TP_STATUS_USER; the process reads
 * slots in the same order and stores TP_STATUS_KERNEL to give one back.
 * Both walk the ring in order, so `head` (next slot to poll) and `held`
 * (slots polled but not released, the ones just behind head) are all the
 * state the process needs.
 *
 * A vanished interface: the kernel's packet notifier unhooks the socket
 * and sets its sk_err to ENETDOWN on NETDEV_DOWN and NETDEV_UNREGISTER
 * (af_packet.c, packet_notifier), and afterwards sends fail with ENXIO (the
 * bound ifindex is gone).  Nothing else tells a ring reader: no frame ever
 * arrives again.  So poll reads SO_ERROR every KINET_PACKET_CHECK_NS, and
 * asks the socket's own namespace whether the ifindex still exists to tell
 * a deleted interface (-ENODEV) from one that went down (-ENETDOWN).
 *
 * The AF_XDP back end (xdp.c) lives behind the same calls: a carrier
 * opened with it holds only its pointer, and each call hands over to it.
 */
#define _GNU_SOURCE /* sendmmsg */
#include <arpa/inet.h>
#include <errno.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <net/if_arp.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "packet.h"
#include "soft.h"
#include "xdp.h"

/* Frames sent per sendmmsg() call. */
#define PACKET_TX_BATCH 64u
/* The default ring's size limit (a 64 KiB-MTU loopback gets fewer slots). */
#define PACKET_RX_RING_MAX_BYTES (64u << 20)
/* Where TPACKET_V2 puts an Ethernet frame in its slot: the header and a
 * sockaddr_ll, aligned, then the MAC header so that the network header
 * is aligned (af_packet.c, tpacket_rcv); plus a VLAN tag's room. */
#define PACKET_SLOT_OVERHEAD (TPACKET_ALIGN(TPACKET2_HDRLEN + ETH_HLEN) + 4u)

struct kinet_packet {
	/* The AF_XDP back end, when it carries: every call goes to it and
	 * nothing below is used. */
	struct kinet_xdp *xdp;
	int backend; /* enum kinet_packet_backend, the one in use */
	int fd;
	int ifindex;
	uint32_t mtu;
	char ifname[IF_NAMESIZE];
	uint8_t *ring;
	size_t ring_bytes;
	uint32_t frame_size;
	uint32_t nframes; /* a power of two */
	/* receive side (one thread) */
	uint32_t head;
	uint32_t held;
	uint64_t checked_ns;
	/* sticky error: 0, -ENETDOWN or -ENODEV; set by either side */
	atomic_int err;
	atomic_uint_fast64_t rx_frames, rx_drops, polled, tx_frames;
};

static struct tpacket2_hdr *packet_slot(const struct kinet_packet *p, uint32_t i)
{
	return (struct tpacket2_hdr *)(p->ring + (size_t)i * p->frame_size);
}

static bool is_pow2(uint32_t x)
{
	return x && !(x & (x - 1));
}

static uint32_t pow2_at_least(uint32_t x)
{
	uint32_t p = 1;

	while (p < x)
		p <<= 1;
	return p;
}

/* The errno of a failed socket call or of sk_err, as the carrier's
 * error when it says the link is gone (then sticky), else as is. */
static int packet_link_error(struct kinet_packet *p, int e)
{
	struct ifreq ifr;
	int err, none = 0;

	if (e == ENXIO || e == ENODEV) {
		err = -ENODEV;
	} else if (e == ENETDOWN) {
		/* Down, or on its way out: the ifindex, in the socket's
		 * namespace, says which. */
		memset(&ifr, 0, sizeof(ifr));
		ifr.ifr_ifindex = p->ifindex;
		err = ioctl(p->fd, SIOCGIFNAME, &ifr) && errno == ENODEV ? -ENODEV : -ENETDOWN;
	} else {
		return -e;
	}
	if (atomic_compare_exchange_strong(&p->err, &none, err)) {
		if (err == -ENODEV)
			KINET_ERR("packet carrier: interface %s (index %d) is gone", p->ifname, p->ifindex);
		else
			KINET_ERR("packet carrier: interface %s went down", p->ifname);
	}
	return atomic_load(&p->err);
}

/* The socket's pending error, if any (reading SO_ERROR clears it). */
static int packet_check_now(struct kinet_packet *p)
{
	int e = 0;
	socklen_t len = sizeof(e);

	if (getsockopt(p->fd, SOL_SOCKET, SO_ERROR, &e, &len))
		return -errno;
	return e ? packet_link_error(p, e) : 0;
}

static int packet_check(struct kinet_packet *p)
{
	uint64_t now;
	int err = atomic_load_explicit(&p->err, memory_order_relaxed);

	if (err)
		return err;
	now = kinet_now_ns();
	if (now - p->checked_ns < KINET_PACKET_CHECK_NS)
		return 0;
	p->checked_ns = now;
	return packet_check_now(p);
}

static int packet_ifreq(int fd, unsigned long req, struct kinet_packet *p, struct ifreq *ifr)
{
	memset(ifr, 0, sizeof(*ifr));
	memcpy(ifr->ifr_name, p->ifname, sizeof(p->ifname));
	return ioctl(fd, req, ifr) ? -errno : 0;
}

/* Index, MTU and state of the interface, looked up through the packet
 * socket so that its namespace is the one asked. */
static int packet_find_iface(struct kinet_packet *p)
{
	struct ifreq ifr;
	int ret;

	ret = packet_ifreq(p->fd, SIOCGIFINDEX, p, &ifr);
	if (ret) {
		if (ret == -ENODEV)
			KINET_ERR("packet carrier: no interface %s in this network namespace", p->ifname);
		return ret;
	}
	p->ifindex = ifr.ifr_ifindex;
	ret = packet_ifreq(p->fd, SIOCGIFHWADDR, p, &ifr);
	if (ret)
		return ret;
	if (ifr.ifr_hwaddr.sa_family != ARPHRD_ETHER && ifr.ifr_hwaddr.sa_family != ARPHRD_LOOPBACK) {
		KINET_ERR("packet carrier: %s is not an Ethernet interface (ARPHRD %u)", p->ifname,
			  ifr.ifr_hwaddr.sa_family);
		return -EOPNOTSUPP;
	}
	ret = packet_ifreq(p->fd, SIOCGIFMTU, p, &ifr);
	if (ret)
		return ret;
	p->mtu = (uint32_t)ifr.ifr_mtu;
	ret = packet_ifreq(p->fd, SIOCGIFFLAGS, p, &ifr);
	if (ret)
		return ret;
	if (!(ifr.ifr_flags & IFF_UP)) {
		KINET_ERR("packet carrier: interface %s is down (ip link set %s up)", p->ifname, p->ifname);
		return -ENETDOWN;
	}
	return 0;
}

static int packet_sizes(const struct kinet_packet_attr *attr, struct kinet_packet *p)
{
	uint32_t page = (uint32_t)sysconf(_SC_PAGESIZE);

	p->frame_size = attr->frame_size;
	if (!p->frame_size) {
		p->frame_size = pow2_at_least(p->mtu + ETH_HLEN + PACKET_SLOT_OVERHEAD);
		if (p->frame_size > 65536u)
			p->frame_size = 65536u;
	} else if (!is_pow2(p->frame_size) || p->frame_size < 256u || p->frame_size > 65536u) {
		KINET_ERR("packet carrier: frame_size %u is not a power of two in [256, 65536]",
			  attr->frame_size);
		return -EINVAL;
	}
	p->nframes = attr->rx_frames;
	if (!p->nframes) {
		p->nframes = KINET_PACKET_RX_FRAMES_DEFAULT;
		while (p->nframes > 16u && (size_t)p->nframes * p->frame_size > PACKET_RX_RING_MAX_BYTES)
			p->nframes >>= 1;
	} else if (!is_pow2(p->nframes) || p->nframes < 16u) {
		KINET_ERR("packet carrier: rx_frames %u is not a power of two >= 16", attr->rx_frames);
		return -EINVAL;
	}
	/* Slots never straddle the ring's blocks (pages or a slot, whichever
	 * is larger), so a ring smaller than one block grows to one. */
	if ((size_t)p->nframes * p->frame_size < page)
		p->nframes = page / p->frame_size;
	p->ring_bytes = (size_t)p->nframes * p->frame_size;
	return 0;
}

static int packet_ring(struct kinet_packet *p)
{
	uint32_t page = (uint32_t)sysconf(_SC_PAGESIZE);
	uint32_t block = p->frame_size > page ? p->frame_size : page;
	struct tpacket_req req = {
		.tp_block_size = block,
		.tp_block_nr = (unsigned)(p->ring_bytes / block),
		.tp_frame_size = p->frame_size,
		.tp_frame_nr = p->nframes,
	};
	int v = TPACKET_V2, one = 1;

	if (setsockopt(p->fd, SOL_PACKET, PACKET_VERSION, &v, sizeof(v)))
		return -errno;
	/* Without it the ring would also get every frame sent on the
	 * interface, by this process or the host's stack: not a receive
	 * queue's business. */
	if (setsockopt(p->fd, SOL_PACKET, PACKET_IGNORE_OUTGOING, &one, sizeof(one))) {
		KINET_ERR("packet carrier: PACKET_IGNORE_OUTGOING: %s (Linux 4.20 or later is needed)",
			  strerror(errno));
		return -EOPNOTSUPP;
	}
	if (setsockopt(p->fd, SOL_PACKET, PACKET_RX_RING, &req, sizeof(req))) {
		int e = errno;

		KINET_ERR("packet carrier: receive ring of %u x %u bytes: %s", p->nframes, p->frame_size,
			  strerror(e));
		return -e;
	}
	p->ring = mmap(NULL, p->ring_bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, p->fd, 0);
	if (p->ring == MAP_FAILED) {
		p->ring = NULL;
		return -errno;
	}
	return 0;
}

/* The back end asked for: attr's, or for AUTO the environment's. */
static int packet_backend_wanted(const struct kinet_packet_attr *attr, bool *explicit)
{
	const char *env;

	*explicit = attr->backend != KINET_PACKET_BACKEND_AUTO;
	if (*explicit)
		return attr->backend;
	env = kinet_env_str("KINET_ETH_BACKEND");
	if (env && !strcmp(env, "xdp"))
		return KINET_PACKET_BACKEND_XDP;
	if (env && !strcmp(env, "xdp-native"))
		return KINET_PACKET_BACKEND_XDP_NATIVE;
	return KINET_PACKET_BACKEND_PACKET;
}

/* Opens the AF_XDP back end into a new carrier: 0, 1 when AF_PACKET is
 * to be tried instead (AUTO: after one warning saying why), or the
 * error (an explicit request, or an interface that cannot be used by
 * either back end). */
static int packet_open_xdp(const struct kinet_packet_attr *attr, int backend, bool explicit,
			   struct kinet_packet **pkt)
{
	struct kinet_packet_attr xa = *attr;
	struct kinet_packet *p;
	char why[512];
	int ret;

	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	xa.backend = backend;
	ret = kinet_xdp_open(&xa, &p->xdp, why, sizeof(why));
	if (!ret) {
		p->fd = -1;
		p->backend = backend;
		KINET_INFO("packet carrier: %s through AF_XDP (%s mode)", attr->ifname,
			   backend == KINET_PACKET_BACKEND_XDP_NATIVE ? "native" : "SKB");
		*pkt = p;
		return 0;
	}
	free(p);
	if (!why[0])
		snprintf(why, sizeof(why), "%s", strerror(-ret));
	if (explicit || ret == -ENODEV || ret == -ENETDOWN || ret == -ENOMEM) {
		KINET_ERR("packet carrier: AF_XDP on %s: %s", attr->ifname, why);
		return ret;
	}
	KINET_WARN(
		"packet carrier: KINET_ETH_BACKEND asks for AF_XDP, but on %s: %s; using AF_PACKET instead",
		attr->ifname, why);
	return 1;
}

int kinet_packet_open(const struct kinet_packet_attr *attr, struct kinet_packet **pkt)
{
	struct kinet_packet *p;
	struct sockaddr_ll sll;
	bool explicit;
	int ret, backend;

	if (!attr || !pkt || !attr->ifname || !attr->ifname[0])
		return -EINVAL;
	if (attr->backend < KINET_PACKET_BACKEND_AUTO || attr->backend > KINET_PACKET_BACKEND_XDP_NATIVE) {
		KINET_ERR("packet carrier: backend %d is not an enum kinet_packet_backend", attr->backend);
		return -EINVAL;
	}
	backend = packet_backend_wanted(attr, &explicit);
	if (backend != KINET_PACKET_BACKEND_PACKET) {
		ret = packet_open_xdp(attr, backend, explicit, pkt);
		if (ret <= 0)
			return ret;
	}
	if (strlen(attr->ifname) >= IF_NAMESIZE) {
		KINET_ERR("packet carrier: no interface %s (names are shorter than %d)", attr->ifname,
			  IF_NAMESIZE);
		return -ENODEV;
	}
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	strcpy(p->ifname, attr->ifname);
	p->backend = KINET_PACKET_BACKEND_PACKET;
	/* Protocol 0: nothing is queued to the socket before the ring
	 * exists; bind() below names the protocol. */
	p->fd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (p->fd < 0) {
		ret = -errno;
		if (ret == -EPERM || ret == -EACCES) {
			KINET_ERR(
				"packet carrier: opening a raw packet socket on %s needs CAP_NET_RAW: run as "
				"root, grant it (setcap cap_net_raw+ep PROGRAM), or run inside a user and "
				"network namespace of your own (unshare -rn)",
				p->ifname);
			ret = -EPERM;
		} else {
			KINET_ERR("packet carrier: socket(AF_PACKET): %s", strerror(-ret));
		}
		free(p);
		return ret;
	}
	ret = packet_find_iface(p);
	if (!ret)
		ret = packet_sizes(attr, p);
	if (!ret)
		ret = packet_ring(p);
	if (!ret) {
		memset(&sll, 0, sizeof(sll));
		sll.sll_family = AF_PACKET;
		sll.sll_protocol = htons(attr->protocol ? attr->protocol : ETH_P_ALL);
		sll.sll_ifindex = p->ifindex;
		if (bind(p->fd, (struct sockaddr *)&sll, sizeof(sll)))
			ret = -errno;
	}
	/* bind() on an interface that went down meanwhile succeeds with
	 * ENETDOWN pending. */
	if (!ret)
		ret = packet_check_now(p);
	if (ret) {
		kinet_packet_close(p);
		return ret;
	}
	p->checked_ns = kinet_now_ns();
	*pkt = p;
	return 0;
}

void kinet_packet_close(struct kinet_packet *pkt)
{
	if (!pkt)
		return;
	if (pkt->xdp) {
		kinet_xdp_close(pkt->xdp);
		free(pkt);
		return;
	}
	if (pkt->ring)
		munmap(pkt->ring, pkt->ring_bytes);
	close(pkt->fd);
	free(pkt);
}

int kinet_packet_backend(const struct kinet_packet *pkt)
{
	return pkt->backend;
}

int kinet_packet_ifindex(const struct kinet_packet *pkt)
{
	return pkt->xdp ? kinet_xdp_ifindex(pkt->xdp) : pkt->ifindex;
}

uint32_t kinet_packet_mtu(const struct kinet_packet *pkt)
{
	return pkt->xdp ? kinet_xdp_mtu(pkt->xdp) : pkt->mtu;
}

int kinet_packet_poll(struct kinet_packet *p, struct kinet_packet_rx *rx, unsigned max)
{
	unsigned n = 0;
	int err;

	if (p->xdp)
		return kinet_xdp_poll(p->xdp, rx, max);
	err = packet_check(p);
	if (err)
		return err;
	if (max > p->nframes - p->held)
		max = p->nframes - p->held;
	while (n < max) {
		struct tpacket2_hdr *h = packet_slot(p, p->head);

		/* Acquire: the frame's bytes were written before its status. */
		if (!(__atomic_load_n(&h->tp_status, __ATOMIC_ACQUIRE) & TP_STATUS_USER))
			break;
		rx[n].data = (const uint8_t *)h + h->tp_mac;
		rx[n].len = h->tp_snaplen;
		rx[n].wire_len = h->tp_len;
		rx[n].ts_ns = (uint64_t)h->tp_sec * 1000000000ull + h->tp_nsec;
		p->head = (p->head + 1) & (p->nframes - 1);
		n++;
	}
	p->held += n;
	atomic_fetch_add_explicit(&p->polled, n, memory_order_relaxed);
	return (int)n;
}

void kinet_packet_release(struct kinet_packet *p, unsigned n)
{
	uint32_t i = (p->head - p->held) & (p->nframes - 1);

	if (p->xdp) {
		kinet_xdp_release(p->xdp, n);
		return;
	}
	if (n > p->held)
		n = p->held;
	p->held -= n;
	for (; n; n--, i = (i + 1) & (p->nframes - 1))
		/* Release: done with the bytes before the kernel may reuse them. */
		__atomic_store_n(&packet_slot(p, i)->tp_status, TP_STATUS_KERNEL, __ATOMIC_RELEASE);
}

static bool packet_ready(const struct kinet_packet *p)
{
	return p->held < p->nframes &&
	       (__atomic_load_n(&packet_slot(p, p->head)->tp_status, __ATOMIC_ACQUIRE) & TP_STATUS_USER);
}

int kinet_packet_wait(struct kinet_packet *p, int timeout_ms)
{
	struct timespec nap = {.tv_nsec = 50000};
	uint64_t deadline;
	int err;

	if (p->xdp)
		return kinet_xdp_wait(p->xdp, timeout_ms);
	if (timeout_ms < 0)
		return -EINVAL;
	deadline = kinet_now_ns() + (uint64_t)timeout_ms * 1000000ull;
	for (;;) {
		struct pollfd pfd = {.fd = p->fd, .events = POLLIN};
		uint64_t now;
		int left;

		err = packet_check(p);
		if (err)
			return err;
		if (packet_ready(p))
			return 1;
		now = kinet_now_ns();
		if (now >= deadline)
			return 0;
		left = (int)((deadline - now + 999999ull) / 1000000ull);
		/* Wake every 100 ms at most, so that an error is seen even
		 * without POLLERR. */
		if (left > 100)
			left = 100;
		if (poll(&pfd, 1, left) < 0 && errno != EINTR)
			return -errno;
		if (pfd.revents & POLLERR) {
			err = packet_check_now(p);
			if (err)
				return err;
		}
		/* The kernel says POLLIN while its last slot is not
		 * TP_STATUS_KERNEL, which is also true of a slot this process
		 * still holds: nap rather than spin. */
		if ((pfd.revents & POLLIN) && !packet_ready(p))
			nanosleep(&nap, NULL);
	}
}

int kinet_packet_send(struct kinet_packet *p, const struct iovec *frames, unsigned n)
{
	struct mmsghdr msg[PACKET_TX_BATCH];
	unsigned total = 0;
	int err;

	if (p->xdp)
		return kinet_xdp_send(p->xdp, frames, n);
	err = atomic_load_explicit(&p->err, memory_order_relaxed);
	if (err)
		return err;
	while (total < n) {
		unsigned k = n - total < PACKET_TX_BATCH ? n - total : PACKET_TX_BATCH;
		unsigned i;
		int r;

		/* A frame without an Ethernet header ends the batch before it
		 * (or fails the call when it is the first). */
		for (i = 0; i < k; i++) {
			if (frames[total + i].iov_len < ETH_HLEN)
				break;
			memset(&msg[i], 0, sizeof(msg[i]));
			msg[i].msg_hdr.msg_iov = (struct iovec *)&frames[total + i];
			msg[i].msg_hdr.msg_iovlen = 1;
		}
		if (!i) {
			if (total)
				break;
			return -EINVAL;
		}
		r = sendmmsg(p->fd, msg, i, MSG_DONTWAIT);
		if (r < 0) {
			int e = errno;

			if (e == EINTR)
				continue;
			if (total)
				break; /* the error comes back on the next call */
			if (e == EAGAIN || e == EWOULDBLOCK || e == ENOBUFS)
				return -EAGAIN;
			return packet_link_error(p, e);
		}
		total += (unsigned)r;
		atomic_fetch_add_explicit(&p->tx_frames, (unsigned)r, memory_order_relaxed);
		if ((unsigned)r < i || i < k)
			break;
	}
	return (int)total;
}

int kinet_packet_stats(struct kinet_packet *p, struct kinet_packet_stats *stats)
{
	struct tpacket_stats st;
	socklen_t len = sizeof(st);

	if (p->xdp)
		return kinet_xdp_stats(p->xdp, stats);
	/* The kernel's counters restart at every read: add them up here.
	 * Its tp_packets includes the drops. */
	if (getsockopt(p->fd, SOL_PACKET, PACKET_STATISTICS, &st, &len))
		return -errno;
	atomic_fetch_add_explicit(&p->rx_frames, st.tp_packets - st.tp_drops, memory_order_relaxed);
	atomic_fetch_add_explicit(&p->rx_drops, st.tp_drops, memory_order_relaxed);
	stats->rx_frames = atomic_load_explicit(&p->rx_frames, memory_order_relaxed);
	stats->rx_drops = atomic_load_explicit(&p->rx_drops, memory_order_relaxed);
	stats->polled = atomic_load_explicit(&p->polled, memory_order_relaxed);
	stats->tx_frames = atomic_load_explicit(&p->tx_frames, memory_order_relaxed);
	return 0;
}
