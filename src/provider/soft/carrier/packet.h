/*
 * The packet carrier: the software NIC's way onto a Linux network
 * interface for Ethernet queues (issue 29).  One raw AF_PACKET socket bound
 * to one interface, a TPACKET_V2 receive ring mapped into the process, and
 * sendmmsg() for sending (docs/ETHERNET.md, "The packet carrier", says why
 * these and not TPACKET_V3 or a send ring).
 *
 * Unlike node and ofi (carrier.h) it carries raw Ethernet frames, not the
 * remote protocol's messages: nothing is reliable or ordered beyond what
 * the wire gives, and a full ring drops (counted, kinet_packet_stats).
 *
 * Built for an engine thread's pass: poll, release and send never block
 * (they return what is there, or -EAGAIN), and the one call that waits,
 * kinet_packet_wait, takes a bounded timeout.  Threads: poll, release and
 * wait belong to one thread (the receive side); send may be called from
 * another (one thread at a time); stats from any.
 *
 * Two back ends sit behind these calls (attr.backend): AF_PACKET, the
 * default, described above, and AF_XDP (xdp.h), which differs where
 * noted: no kernel stamp (the poll's time), no truncation (a frame longer
 * than a UMEM frame is dropped and counted), and, opened for all
 * ethertypes, ARP and ICMPv6 are left to the Linux stack and not received.
 *
 * Errors are negative errnos.  Once the interface goes down (-ENETDOWN) or
 * vanishes (-ENODEV: deleted, or moved to another namespace) the carrier
 * stays in that error: every later poll, send and wait returns it, within
 * KINET_PACKET_CHECK_NS of the event, never a hang.  Close and open again
 * to resume.
 */
#ifndef KINET_CARRIER_PACKET_H
#define KINET_CARRIER_PACKET_H

#include <stdint.h>
#include <sys/uio.h>

struct kinet_packet;

/* How often poll asks the socket whether its interface went away: a
 * getsockopt per interval, so a spinning engine pays one system call per
 * millisecond, and a vanished interface is seen within about that. */
#define KINET_PACKET_CHECK_NS 1000000ull

#define KINET_PACKET_RX_FRAMES_DEFAULT 4096u

/* Which socket carries the frames (docs/ETHERNET.md, "AF_XDP"). */
enum kinet_packet_backend {
	/* AF_PACKET, unless KINET_ETH_BACKEND says xdp or xdp-native: then
	 * AF_XDP when it can be opened, else one warning and AF_PACKET. */
	KINET_PACKET_BACKEND_AUTO = 0,
	KINET_PACKET_BACKEND_PACKET = 1,
	/* AF_XDP, its program attached in SKB (generic) mode, or in the
	 * driver (native); asked for explicitly, its failure is the error. */
	KINET_PACKET_BACKEND_XDP = 2,
	KINET_PACKET_BACKEND_XDP_NATIVE = 3,
};

struct kinet_packet_attr {
	const char *ifname; /* the interface, in the caller's network namespace */
	/* Ethertype (host order) to receive; 0: all (ETH_P_ALL).  Frames this
	 * process sends are never received back. */
	uint16_t protocol;
	/* Receive ring slots, a power of two >= 16; 0: the default. */
	uint32_t rx_frames;
	/* Bytes of one slot, header included: a power of two in
	 * [256, 65536]; 0: the smallest that holds a frame of the
	 * interface's MTU (2048 at 1500).  Longer frames arrive truncated
	 * (kinet_packet_rx.len < wire_len).  AF_XDP: a UMEM frame, a power of
	 * two in [2048, page size]; 0: 2048 up to an MTU of 1774. */
	uint32_t frame_size;
	int32_t backend; /* enum kinet_packet_backend */
};

/* One received frame, valid until released. */
struct kinet_packet_rx {
	const uint8_t *data; /* from the Ethernet header on */
	uint32_t len;	     /* bytes at data */
	uint32_t wire_len;   /* the frame's length on the wire (> len: truncated) */
	/* CLOCK_REALTIME, nanoseconds, a software stamp: the skb's receive
	 * time where the stack took one (some socket asked for stamps), else
	 * when the kernel copied the frame into the ring (tpacket_rcv). */
	uint64_t ts_ns;
};

struct kinet_packet_stats {
	uint64_t rx_frames; /* put in the ring by the kernel */
	uint64_t rx_drops;  /* dropped by the kernel: the ring was full */
	uint64_t polled;    /* returned by kinet_packet_poll */
	uint64_t tx_frames; /* accepted by the kernel for sending */
};

/* Opens the carrier on attr->ifname.  0, or -EINVAL (bad attr),
 * -ENODEV (no such interface), -ENETDOWN (it is down), -EPERM (no
 * CAP_NET_RAW; logged with what to do), -ENOMEM, or another errno of the
 * socket calls. */
int kinet_packet_open(const struct kinet_packet_attr *attr, struct kinet_packet **pkt);
void kinet_packet_close(struct kinet_packet *pkt);

/* The back end in use: KINET_PACKET_BACKEND_PACKET, _XDP or _XDP_NATIVE. */
int kinet_packet_backend(const struct kinet_packet *pkt);

/* The interface's index and MTU, as found at open. */
int kinet_packet_ifindex(const struct kinet_packet *pkt);
uint32_t kinet_packet_mtu(const struct kinet_packet *pkt);

/* Returns up to max received frames in rx[], oldest first, without
 * waiting: their number (0: none), or a negative errno (see above).
 * Frames stay in the ring, owned by the caller, until released; poll
 * returns each frame once, and at most as many as the ring has slots are
 * held at a time. */
int kinet_packet_poll(struct kinet_packet *pkt, struct kinet_packet_rx *rx, unsigned max);

/* Gives the n oldest frames still held back to the kernel (n <= held). */
void kinet_packet_release(struct kinet_packet *pkt, unsigned n);

/* Waits up to timeout_ms (>= 0) for a frame to poll: 1 when one is there,
 * 0 on timeout (also when every slot is held: release first), or a
 * negative errno. */
int kinet_packet_wait(struct kinet_packet *pkt, int timeout_ms);

/* Sends n frames, each one iovec from its Ethernet header on, without
 * waiting: the number the kernel took (in order, from the first), or
 * -EAGAIN when it took none for now (socket buffer full), -EMSGSIZE or
 * -EINVAL when frames[0] cannot be sent (longer than the MTU allows, or
 * shorter than an Ethernet header), or the carrier's error. */
int kinet_packet_send(struct kinet_packet *pkt, const struct iovec *frames, unsigned n);

/* The counters since open (PACKET_STATISTICS read and accumulated). */
int kinet_packet_stats(struct kinet_packet *pkt, struct kinet_packet_stats *stats);

#endif /* KINET_CARRIER_PACKET_H */
