/*
 * The packet carrier's AF_XDP back end (xdp.h).  No libbpf: the XDP
 * program is a dozen instructions assembled below and loaded with the raw
 * bpf(2) system call, the socket's rings are mapped by hand.
 *
 * Layout.  One UMEM (anonymous memory registered with the socket) holds
 * rx_n receive frames then KINET_XDP_TX_FRAMES send frames, each
 * frame_size bytes.  Every receive frame starts in the fill ring; the
 * kernel takes one per frame it redirects to the socket, copies the frame
 * into it and publishes it on the rx ring.  Poll reads the rx ring (and
 * moves its consumer on at once: the frame's memory is ours until we hand
 * its address back), keeps the addresses it handed out in `held_addr`,
 * and release puts the oldest back on the fill ring, in poll order, as the
 * AF_PACKET ring does.  Send copies each frame into a free send frame,
 * puts a descriptor on the tx ring and kicks the kernel with sendto(); the
 * completion ring gives the frames back once the kernel is done with them.
 *
 * The program.  It runs for every frame the interface receives, before
 * the stack: bpf_redirect_map(xskmap, rx_queue_index, XDP_PASS) hands the
 * frame to the socket bound to that queue, or to the stack where none is
 * bound (only queue 0 has one).  Opened for one ethertype, only that
 * ethertype is redirected; opened for all, ARP and ICMPv6 are left to the
 * stack, so that the host keeps answering neighbour look-ups for its
 * addresses (a packet socket is a tap and the stack sees everything; an
 * XDP redirect steals the frame, and a host that stops answering ARP
 * would stop receiving anything at all).
 *
 * Attachment.  A bpf_link (BPF_LINK_CREATE, BPF_XDP, Linux 5.9): the
 * program stays attached exactly as long as the link's descriptor is
 * open, so close, exit and a crash all detach it, and an interface that
 * already has a program (someone else's) is refused with -EBUSY instead
 * of being replaced.
 *
 * A vanished interface: the kernel's xsk notifier sets the socket's
 * sk_err to ENETDOWN and unbinds it on NETDEV_UNREGISTER, and sends fail
 * with ENXIO or ENETDOWN afterwards; an interface that merely goes down is
 * not signalled to the socket at all.  So poll checks, every
 * KINET_PACKET_CHECK_NS, SO_ERROR and whether the ifindex still exists
 * and is up (by ioctl on a socket made with the carrier, so the namespace
 * asked is the carrier's).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/bpf.h>
#include <linux/ethtool.h>
#include <linux/if_ether.h>
#include <linux/if_link.h>
#include <linux/if_xdp.h>
#include <linux/sockios.h>
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
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "soft.h"
#include "xdp.h"

#ifndef AF_XDP
#define AF_XDP 44
#endif
#ifndef SOL_XDP
#define SOL_XDP 283
#endif

/* Room the kernel keeps in front of a received frame in its UMEM frame
 * (copy mode: XDP_PACKET_HEADROOM). */
#define XDP_RX_HEADROOM 256u
/* sendto() kicks per send call at most: the copy-mode transmit takes 32
 * descriptors per kick (-EAGAIN with more left). */
#define XDP_KICKS_MAX 64u
/* How long a busy queue is waited for at open (see xdp_bind). */
#define XDP_BIND_BUSY_NS 1000000000ull

struct xdp_ring {
	uint32_t *producer;
	uint32_t *consumer;
	void *desc;
	uint32_t mask;
	uint32_t head; /* our side's index: producer of fill/tx, consumer of rx/comp */
	void *map;
	size_t map_len;
};

struct kinet_xdp {
	int fd;	    /* the AF_XDP socket */
	int ctl_fd; /* for interface ioctls in the carrier's namespace */
	int map_fd, prog_fd, link_fd;
	uint32_t prog_id;
	int ifindex;
	uint32_t mtu;
	char ifname[IF_NAMESIZE];
	uint8_t *umem;
	size_t umem_len;
	uint32_t frame_size;
	uint32_t rx_n; /* receive frames, a power of two */
	struct xdp_ring fill, comp, rx, tx;
	/* receive side (one thread) */
	uint64_t *held_addr; /* rx_n entries: polled, not released, in order */
	uint32_t held_first, held;
	uint64_t checked_ns;
	/* send side (one thread at a time) */
	uint64_t *tx_free;
	uint32_t tx_nfree;
	/* sticky error: 0, -ENETDOWN or -ENODEV */
	atomic_int err;
	atomic_uint_fast64_t polled, tx_frames;
};

/* ---- bpf(2) ----------------------------------------------------------------- */

static int sys_bpf(int cmd, union bpf_attr *attr)
{
	return (int)syscall(__NR_bpf, cmd, attr, sizeof(*attr));
}

#define INSN(c, d, s, o, i)                                                                                  \
	((struct bpf_insn){.code = (c), .dst_reg = (d), .src_reg = (s), .off = (o), .imm = (i)})
#define LDX(size, d, s, o) INSN(BPF_LDX | BPF_MEM | (size), d, s, o, 0)
#define MOV_REG(d, s) INSN(BPF_ALU64 | BPF_MOV | BPF_X, d, s, 0, 0)
#define MOV_IMM(d, i) INSN(BPF_ALU64 | BPF_MOV | BPF_K, d, 0, 0, i)
#define ADD_IMM(d, i) INSN(BPF_ALU64 | BPF_ADD | BPF_K, d, 0, 0, i)
#define JMP_REG(op, d, s) INSN(BPF_JMP | (op) | BPF_X, d, s, 0, 0)
#define JMP_IMM(op, d, i) INSN(BPF_JMP | (op) | BPF_K, d, 0, 0, i)

enum { XDP_PROG_MAX = 32 };

/* A jump's target, patched once the labels are known. */
enum { TO_PASS = 1, TO_REDIRECT = 2 };

/* The ethertype as a 16-bit load of the frame's two bytes reads it. */
static int32_t wire16(uint16_t host)
{
	uint8_t b[2] = {(uint8_t)(host >> 8), (uint8_t)host};
	uint16_t v;

	memcpy(&v, b, 2);
	return v;
}

/* Assembles the redirect program (see the top of the file): its length. */
static unsigned xdp_program(struct bpf_insn *p, uint8_t *to, int map_fd, uint16_t protocol)
{
	unsigned n = 0, pass, redirect;

	memset(to, 0, XDP_PROG_MAX);
	p[n++] = LDX(BPF_W, BPF_REG_2, BPF_REG_1, offsetof(struct xdp_md, data));
	p[n++] = LDX(BPF_W, BPF_REG_3, BPF_REG_1, offsetof(struct xdp_md, data_end));
	p[n++] = LDX(BPF_W, BPF_REG_4, BPF_REG_1, offsetof(struct xdp_md, rx_queue_index));
	/* A frame shorter than an Ethernet header is the stack's. */
	p[n++] = MOV_REG(BPF_REG_5, BPF_REG_2);
	p[n++] = ADD_IMM(BPF_REG_5, ETH_HLEN);
	to[n] = TO_PASS;
	p[n++] = JMP_REG(BPF_JGT, BPF_REG_5, BPF_REG_3);
	p[n++] = LDX(BPF_H, BPF_REG_5, BPF_REG_2, 12);
	if (protocol) {
		to[n] = TO_PASS;
		p[n++] = JMP_IMM(BPF_JNE, BPF_REG_5, wire16(protocol));
	} else {
		to[n] = TO_PASS;
		p[n++] = JMP_IMM(BPF_JEQ, BPF_REG_5, wire16(ETH_P_ARP));
		to[n] = TO_REDIRECT;
		p[n++] = JMP_IMM(BPF_JNE, BPF_REG_5, wire16(ETH_P_IPV6));
		/* IPv6's next header (byte 6 of its header): ICMPv6 carries
		 * neighbour discovery. */
		p[n++] = MOV_REG(BPF_REG_5, BPF_REG_2);
		p[n++] = ADD_IMM(BPF_REG_5, ETH_HLEN + 7);
		to[n] = TO_REDIRECT;
		p[n++] = JMP_REG(BPF_JGT, BPF_REG_5, BPF_REG_3);
		p[n++] = LDX(BPF_B, BPF_REG_5, BPF_REG_2, ETH_HLEN + 6);
		to[n] = TO_PASS;
		p[n++] = JMP_IMM(BPF_JEQ, BPF_REG_5, 58 /* IPPROTO_ICMPV6 */);
	}
	redirect = n;
	p[n++] = INSN(BPF_LD | BPF_DW | BPF_IMM, BPF_REG_1, BPF_PSEUDO_MAP_FD, 0, map_fd);
	p[n++] = INSN(0, 0, 0, 0, 0);
	p[n++] = MOV_REG(BPF_REG_2, BPF_REG_4);
	p[n++] = MOV_IMM(BPF_REG_3, XDP_PASS); /* the action where the queue has no socket */
	p[n++] = INSN(BPF_JMP | BPF_CALL, 0, 0, 0, BPF_FUNC_redirect_map);
	p[n++] = INSN(BPF_JMP | BPF_EXIT, 0, 0, 0, 0);
	pass = n;
	p[n++] = MOV_IMM(BPF_REG_0, XDP_PASS);
	p[n++] = INSN(BPF_JMP | BPF_EXIT, 0, 0, 0, 0);
	for (unsigned i = 0; i < n; i++)
		if (to[i])
			p[i].off = (int16_t)((to[i] == TO_PASS ? pass : redirect) - i - 1);
	return n;
}

/* ---- opening ---------------------------------------------------------------- */

static uint32_t pow2_at_least(uint32_t x)
{
	uint32_t p = 1;

	while (p < x)
		p <<= 1;
	return p;
}

static int xdp_ifreq(struct kinet_xdp *x, unsigned long req, struct ifreq *ifr)
{
	memset(ifr, 0, sizeof(*ifr));
	memcpy(ifr->ifr_name, x->ifname, sizeof(x->ifname));
	return ioctl(x->ctl_fd, req, ifr) ? -errno : 0;
}

#define WHY(...) snprintf(why, why_len, __VA_ARGS__)

static int xdp_find_iface(struct kinet_xdp *x, char *why, size_t why_len)
{
	struct ifreq ifr;
	int ret;

	ret = xdp_ifreq(x, SIOCGIFINDEX, &ifr);
	if (ret) {
		WHY("no interface %s in this network namespace (%s)", x->ifname, strerror(-ret));
		return ret;
	}
	x->ifindex = ifr.ifr_ifindex;
	ret = xdp_ifreq(x, SIOCGIFHWADDR, &ifr);
	if (!ret && ifr.ifr_hwaddr.sa_family != ARPHRD_ETHER) {
		WHY("%s is not an Ethernet interface (ARPHRD %u): AF_XDP needs one", x->ifname,
		    ifr.ifr_hwaddr.sa_family);
		return -EOPNOTSUPP;
	}
	if (!ret)
		ret = xdp_ifreq(x, SIOCGIFMTU, &ifr);
	if (!ret)
		x->mtu = (uint32_t)ifr.ifr_mtu;
	if (!ret)
		ret = xdp_ifreq(x, SIOCGIFFLAGS, &ifr);
	if (ret) {
		WHY("%s: %s", x->ifname, strerror(-ret));
		return ret;
	}
	if (!(ifr.ifr_flags & IFF_UP)) {
		WHY("interface %s is down (ip link set %s up)", x->ifname, x->ifname);
		return -ENETDOWN;
	}
	return 0;
}

/* The interface's receive queues (ETHTOOL_GCHANNELS), 1 if it cannot say. */
static uint32_t xdp_rx_queues(struct kinet_xdp *x)
{
	struct ethtool_channels ch = {.cmd = ETHTOOL_GCHANNELS};
	struct ifreq ifr;
	uint32_t n;

	memset(&ifr, 0, sizeof(ifr));
	memcpy(ifr.ifr_name, x->ifname, sizeof(x->ifname));
	ifr.ifr_data = (char *)&ch;
	if (ioctl(x->ctl_fd, SIOCETHTOOL, &ifr))
		return 1;
	n = ch.rx_count + ch.combined_count;
	return n ? n : 1;
}

static int xdp_sizes(const struct kinet_packet_attr *attr, struct kinet_xdp *x, char *why, size_t why_len)
{
	uint32_t page = (uint32_t)sysconf(_SC_PAGESIZE);
	/* The longest frame: MTU, header, one VLAN tag. */
	uint32_t need = x->mtu + ETH_HLEN + 4u + XDP_RX_HEADROOM;

	x->frame_size = attr->frame_size;
	if (!x->frame_size) {
		x->frame_size = pow2_at_least(need < 2048u ? 2048u : need);
		if (x->frame_size > page) {
			/* Frames span one UMEM frame unless the socket takes
			 * multi-buffer frames, which this back end does not. */
			WHY("the MTU of %s (%u) is too large for an AF_XDP frame of %u bytes (jumbo frames "
			    "need multi-buffer AF_XDP, not done): use AF_PACKET",
			    x->ifname, x->mtu, page);
			return -EOPNOTSUPP;
		}
	} else if (x->frame_size & (x->frame_size - 1) || x->frame_size < 2048u || x->frame_size > page) {
		WHY("frame_size %u is not a power of two in [2048, %u], which AF_XDP needs", attr->frame_size,
		    page);
		return -EINVAL;
	}
	x->rx_n = attr->rx_frames ? attr->rx_frames : KINET_PACKET_RX_FRAMES_DEFAULT;
	if (x->rx_n < 16u || x->rx_n & (x->rx_n - 1)) {
		WHY("rx_frames %u is not a power of two >= 16", attr->rx_frames);
		return -EINVAL;
	}
	x->umem_len = (size_t)(x->rx_n + KINET_XDP_TX_FRAMES) * x->frame_size;
	return 0;
}

/* Registers the UMEM; a locked-memory limit too small is raised to the
 * hard limit (or beyond, where CAP_SYS_RESOURCE allows) and tried again. */
static int xdp_umem(struct kinet_xdp *x, char *why, size_t why_len)
{
	struct xdp_umem_reg reg = {
		.addr = 0, .len = x->umem_len, .chunk_size = x->frame_size, .headroom = 0, .flags = 0};
	struct rlimit rl;
	int e;

	x->umem = mmap(NULL, x->umem_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE,
		       -1, 0);
	if (x->umem == MAP_FAILED) {
		x->umem = NULL;
		WHY("no memory for a UMEM of %zu KiB", x->umem_len >> 10);
		return -ENOMEM;
	}
	reg.addr = (uint64_t)(uintptr_t)x->umem;
	if (!setsockopt(x->fd, SOL_XDP, XDP_UMEM_REG, &reg, sizeof(reg)))
		return 0;
	e = errno;
	if ((e == ENOBUFS || e == ENOMEM || e == EPERM) && !getrlimit(RLIMIT_MEMLOCK, &rl)) {
		struct rlimit want = {RLIM_INFINITY, RLIM_INFINITY};

		if (setrlimit(RLIMIT_MEMLOCK, &want)) {
			want.rlim_cur = want.rlim_max = rl.rlim_max;
			setrlimit(RLIMIT_MEMLOCK, &want);
		}
		if (!setsockopt(x->fd, SOL_XDP, XDP_UMEM_REG, &reg, sizeof(reg)))
			return 0;
		e = errno;
		getrlimit(RLIMIT_MEMLOCK, &rl);
		if (e == ENOBUFS || e == ENOMEM) {
			WHY("RLIMIT_MEMLOCK (%llu KiB, not raisable) is too small for the AF_XDP UMEM of %zu "
			    "KiB: raise it (ulimit -l, LimitMEMLOCK=), grant CAP_IPC_LOCK, or ask for fewer "
			    "rx_frames",
			    rl.rlim_cur == RLIM_INFINITY ? 0ull : (unsigned long long)rl.rlim_cur >> 10,
			    x->umem_len >> 10);
			return -ENOBUFS;
		}
	}
	WHY("registering the AF_XDP UMEM: %s", strerror(e));
	return -e;
}

static int xdp_map_ring(struct kinet_xdp *x, struct xdp_ring *r, const struct xdp_ring_offset *off,
			uint32_t n, size_t desc_size, off_t pgoff)
{
	r->map_len = off->desc + n * desc_size;
	r->map = mmap(NULL, r->map_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, x->fd, pgoff);
	if (r->map == MAP_FAILED) {
		r->map = NULL;
		return -errno;
	}
	r->producer = (uint32_t *)((uint8_t *)r->map + off->producer);
	r->consumer = (uint32_t *)((uint8_t *)r->map + off->consumer);
	r->desc = (uint8_t *)r->map + off->desc;
	r->mask = n - 1;
	/* Our index starts where the kernel's view of it is (0 on a new
	 * socket; read rather than assumed). */
	return 0;
}

static int xdp_rings(struct kinet_xdp *x, char *why, size_t why_len)
{
	struct xdp_mmap_offsets off;
	socklen_t len = sizeof(off);
	uint32_t txn = KINET_XDP_TX_FRAMES;
	int ret;

	if (setsockopt(x->fd, SOL_XDP, XDP_UMEM_FILL_RING, &x->rx_n, sizeof(x->rx_n)) ||
	    setsockopt(x->fd, SOL_XDP, XDP_UMEM_COMPLETION_RING, &txn, sizeof(txn)) ||
	    setsockopt(x->fd, SOL_XDP, XDP_RX_RING, &x->rx_n, sizeof(x->rx_n)) ||
	    setsockopt(x->fd, SOL_XDP, XDP_TX_RING, &txn, sizeof(txn)) ||
	    getsockopt(x->fd, SOL_XDP, XDP_MMAP_OFFSETS, &off, &len)) {
		ret = -errno;
		WHY("setting up the AF_XDP rings: %s", strerror(-ret));
		return ret;
	}
	ret = xdp_map_ring(x, &x->fill, &off.fr, x->rx_n, sizeof(uint64_t), XDP_UMEM_PGOFF_FILL_RING);
	if (!ret)
		ret = xdp_map_ring(x, &x->comp, &off.cr, txn, sizeof(uint64_t),
				   XDP_UMEM_PGOFF_COMPLETION_RING);
	if (!ret)
		ret = xdp_map_ring(x, &x->rx, &off.rx, x->rx_n, sizeof(struct xdp_desc), XDP_PGOFF_RX_RING);
	if (!ret)
		ret = xdp_map_ring(x, &x->tx, &off.tx, txn, sizeof(struct xdp_desc), XDP_PGOFF_TX_RING);
	if (ret) {
		WHY("mapping the AF_XDP rings: %s", strerror(-ret));
		return ret;
	}
	x->fill.head = *x->fill.producer;
	x->tx.head = *x->tx.producer;
	x->rx.head = *x->rx.consumer;
	x->comp.head = *x->comp.consumer;
	/* Every receive frame to the kernel; the send frames to our stack. */
	for (uint32_t i = 0; i < x->rx_n; i++)
		((uint64_t *)x->fill.desc)[(x->fill.head + i) & x->fill.mask] = (uint64_t)i * x->frame_size;
	x->fill.head += x->rx_n;
	__atomic_store_n(x->fill.producer, x->fill.head, __ATOMIC_RELEASE);
	for (uint32_t i = 0; i < txn; i++)
		x->tx_free[i] = (uint64_t)(x->rx_n + i) * x->frame_size;
	x->tx_nfree = txn;
	return 0;
}

static const char *const xdp_caps_hint =
	"run as root, or grant the program CAP_NET_RAW, CAP_BPF and CAP_NET_ADMIN (setcap "
	"cap_net_raw,cap_bpf,cap_net_admin+ep PROGRAM; CAP_SYS_ADMIN instead of CAP_BPF before Linux 5.8)";

static int xdp_bpf(struct kinet_xdp *x, const struct kinet_packet_attr *attr, uint32_t nq, char *why,
		   size_t why_len)
{
	struct bpf_insn prog[XDP_PROG_MAX];
	uint8_t to[XDP_PROG_MAX];
	static char log[4096];
	struct bpf_prog_info info;
	union bpf_attr a;
	unsigned n;
	int e;

	memset(&a, 0, sizeof(a));
	a.map_type = BPF_MAP_TYPE_XSKMAP;
	a.key_size = 4;
	a.value_size = 4;
	a.max_entries = nq;
	strcpy(a.map_name, "kinet_xsks");
	x->map_fd = sys_bpf(BPF_MAP_CREATE, &a);
	if (x->map_fd < 0) {
		e = errno;
		if (e == EPERM || e == EACCES) {
			WHY("AF_XDP needs CAP_BPF (or CAP_SYS_ADMIN) to make its BPF map and load its XDP "
			    "program "
			    "(bpf(BPF_MAP_CREATE): %s): %s",
			    strerror(e), xdp_caps_hint);
			return -EPERM;
		}
		WHY("bpf(BPF_MAP_CREATE, XSKMAP): %s (a kernel with BPF and AF_XDP, 4.18 or later, is "
		    "needed)",
		    strerror(e));
		return e == EINVAL || e == ENOSYS ? -EOPNOTSUPP : -e;
	}
	n = xdp_program(prog, to, x->map_fd, attr->protocol);
	memset(&a, 0, sizeof(a));
	a.prog_type = BPF_PROG_TYPE_XDP;
	a.expected_attach_type = BPF_XDP;
	a.insns = (uint64_t)(uintptr_t)prog;
	a.insn_cnt = n;
	a.license = (uint64_t)(uintptr_t) "Dual BSD/GPL";
	strcpy(a.prog_name, "kinet_xsk_redir");
	x->prog_fd = sys_bpf(BPF_PROG_LOAD, &a);
	if (x->prog_fd < 0 && errno != EPERM && errno != EACCES) {
		/* Again with the verifier's log, to say why. */
		log[0] = 0;
		a.log_buf = (uint64_t)(uintptr_t)log;
		a.log_size = sizeof(log);
		a.log_level = 1;
		x->prog_fd = sys_bpf(BPF_PROG_LOAD, &a);
	}
	if (x->prog_fd < 0) {
		e = errno;
		if (e == EPERM || e == EACCES) {
			WHY("loading an XDP program needs CAP_BPF and CAP_NET_ADMIN (bpf(BPF_PROG_LOAD): "
			    "%s): %s",
			    strerror(e), xdp_caps_hint);
			return -EPERM;
		}
		for (char *c = log; *c; c++)
			if (*c == '\n')
				*c = ' ';
		WHY("the kernel refused the XDP redirect program (bpf(BPF_PROG_LOAD): %s; verifier: %.300s)",
		    strerror(e), log);
		return -EOPNOTSUPP;
	}
	memset(&info, 0, sizeof(info));
	memset(&a, 0, sizeof(a));
	a.info.bpf_fd = (uint32_t)x->prog_fd;
	a.info.info_len = sizeof(info);
	a.info.info = (uint64_t)(uintptr_t)&info;
	if (!sys_bpf(BPF_OBJ_GET_INFO_BY_FD, &a))
		x->prog_id = info.id;
	return 0;
}

static int xdp_bind(struct kinet_xdp *x, bool native, char *why, size_t why_len)
{
	/* SKB mode's program hands the socket an skb: copy mode.  Native:
	 * zero copy where the driver can, else copy (the kernel decides). */
	struct sockaddr_xdp sxdp = {.sxdp_family = AF_XDP,
				    .sxdp_flags = native ? 0 : XDP_COPY,
				    .sxdp_ifindex = (uint32_t)x->ifindex,
				    .sxdp_queue_id = 0};
	uint32_t key = 0;
	union bpf_attr a;
	int e;

	/* A socket closed on this queue a moment ago still holds it: the
	 * kernel lets go of its UMEM from a work item (xp_release_deferred).
	 * So EBUSY is tried again for a while before it is believed. */
	for (uint64_t until = kinet_now_ns() + XDP_BIND_BUSY_NS;;) {
		struct timespec nap = {.tv_nsec = 2000000};

		e = bind(x->fd, (struct sockaddr *)&sxdp, sizeof(sxdp)) ? errno : 0;
		if (e != EBUSY || kinet_now_ns() > until)
			break;
		nanosleep(&nap, NULL);
	}
	if (e) {
		WHY("binding the AF_XDP socket to %s queue 0: %s", x->ifname, strerror(e));
		return e == EBUSY ? -EBUSY : e == ENETDOWN || e == ENODEV ? -e : -EOPNOTSUPP;
	}
	memset(&a, 0, sizeof(a));
	a.map_fd = (uint32_t)x->map_fd;
	a.key = (uint64_t)(uintptr_t)&key;
	a.value = (uint64_t)(uintptr_t)&x->fd;
	if (sys_bpf(BPF_MAP_UPDATE_ELEM, &a)) {
		e = errno;
		WHY("putting the AF_XDP socket in the XSKMAP: %s", strerror(e));
		return -e;
	}
	memset(&a, 0, sizeof(a));
	a.link_create.prog_fd = (uint32_t)x->prog_fd;
	a.link_create.target_ifindex = (uint32_t)x->ifindex;
	a.link_create.attach_type = BPF_XDP;
	a.link_create.flags = native ? XDP_FLAGS_DRV_MODE : XDP_FLAGS_SKB_MODE;
	x->link_fd = sys_bpf(BPF_LINK_CREATE, &a);
	if (x->link_fd < 0) {
		e = errno;
		if (e == EPERM || e == EACCES) {
			WHY("attaching an XDP program to %s needs CAP_NET_ADMIN (%s): %s", x->ifname,
			    strerror(e), xdp_caps_hint);
			return -EPERM;
		}
		if (e == EBUSY || e == EEXIST) {
			WHY("%s already has an XDP program attached (%s): detach it (ip link set %s xdp off) "
			    "or "
			    "use AF_PACKET",
			    x->ifname, strerror(e), x->ifname);
			return -EBUSY;
		}
		if (native && e == EOPNOTSUPP) {
			WHY("the driver of %s has no native XDP (%s): use the SKB (generic) mode", x->ifname,
			    strerror(e));
			return -EOPNOTSUPP;
		}
		WHY("attaching the XDP program to %s (bpf(BPF_LINK_CREATE, BPF_XDP) needs Linux 5.9 or "
		    "later): "
		    "%s",
		    x->ifname, strerror(e));
		return e == EINVAL ? -EOPNOTSUPP : -e;
	}
	return 0;
}

int kinet_xdp_open(const struct kinet_packet_attr *attr, struct kinet_xdp **out, char *why, size_t why_len)
{
	struct kinet_xdp *x;
	uint32_t nq;
	int ret;

	why[0] = 0;
	if (!attr || !out || !attr->ifname || !attr->ifname[0])
		return -EINVAL;
	if (strlen(attr->ifname) >= IF_NAMESIZE) {
		WHY("no interface %s (names are shorter than %d)", attr->ifname, IF_NAMESIZE);
		return -ENODEV;
	}
	x = calloc(1, sizeof(*x));
	if (!x)
		return -ENOMEM;
	x->fd = x->map_fd = x->prog_fd = x->link_fd = -1;
	strcpy(x->ifname, attr->ifname);
	/* Any socket answers interface ioctls for its namespace; AF_UNIX
	 * needs no privilege and no protocol. */
	x->ctl_fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (x->ctl_fd < 0) {
		ret = -errno;
		WHY("socket(AF_UNIX): %s", strerror(-ret));
		goto fail;
	}
	ret = xdp_find_iface(x, why, why_len);
	if (!ret)
		ret = xdp_sizes(attr, x, why, why_len);
	if (ret)
		goto fail;
	nq = xdp_rx_queues(x);
	x->fd = socket(AF_XDP, SOCK_RAW | SOCK_CLOEXEC, 0);
	if (x->fd < 0) {
		ret = -errno;
		if (ret == -EPERM || ret == -EACCES) {
			WHY("an AF_XDP socket needs CAP_NET_RAW: %s", xdp_caps_hint);
			ret = -EPERM;
		} else if (ret == -EAFNOSUPPORT || ret == -EINVAL) {
			WHY("this kernel has no AF_XDP (socket(AF_XDP): %s; CONFIG_XDP_SOCKETS, Linux 4.18 "
			    "or "
			    "later)",
			    strerror(-ret));
			ret = -EAFNOSUPPORT;
		} else {
			WHY("socket(AF_XDP): %s", strerror(-ret));
		}
		goto fail;
	}
	x->held_addr = calloc(x->rx_n, sizeof(*x->held_addr));
	x->tx_free = calloc(KINET_XDP_TX_FRAMES, sizeof(*x->tx_free));
	if (!x->held_addr || !x->tx_free) {
		ret = -ENOMEM;
		goto fail;
	}
	ret = xdp_umem(x, why, why_len);
	if (!ret)
		ret = xdp_rings(x, why, why_len);
	if (!ret)
		ret = xdp_bpf(x, attr, nq, why, why_len);
	if (!ret)
		ret = xdp_bind(x, attr->backend == KINET_PACKET_BACKEND_XDP_NATIVE, why, why_len);
	if (ret)
		goto fail;
	if (nq > 1)
		KINET_INFO(
			"packet carrier: AF_XDP on %s reads its receive queue 0 only; frames the interface "
			"puts on its other %u queues go to the Linux stack",
			x->ifname, nq - 1);
	x->checked_ns = kinet_now_ns();
	*out = x;
	return 0;
fail:
	kinet_xdp_close(x);
	return ret;
}

void kinet_xdp_close(struct kinet_xdp *x)
{
	if (!x)
		return;
	/* The link first: the interface stops redirecting to the socket
	 * before the socket goes. */
	if (x->link_fd >= 0)
		close(x->link_fd);
	if (x->prog_fd >= 0)
		close(x->prog_fd);
	if (x->map_fd >= 0)
		close(x->map_fd);
	struct xdp_ring *rings[] = {&x->fill, &x->comp, &x->rx, &x->tx};
	for (unsigned i = 0; i < 4; i++)
		if (rings[i]->map)
			munmap(rings[i]->map, rings[i]->map_len);
	if (x->fd >= 0)
		close(x->fd);
	if (x->umem)
		munmap(x->umem, x->umem_len);
	if (x->ctl_fd >= 0)
		close(x->ctl_fd);
	free(x->held_addr);
	free(x->tx_free);
	free(x);
}

int kinet_xdp_ifindex(const struct kinet_xdp *x)
{
	return x->ifindex;
}

uint32_t kinet_xdp_mtu(const struct kinet_xdp *x)
{
	return x->mtu;
}

uint32_t kinet_xdp_prog_id(const struct kinet_xdp *x)
{
	return x->prog_id;
}

/* ---- the link's state ------------------------------------------------------- */

static int xdp_set_error(struct kinet_xdp *x, int err)
{
	int none = 0;

	if (atomic_compare_exchange_strong(&x->err, &none, err)) {
		if (err == -ENODEV)
			KINET_ERR("packet carrier (AF_XDP): interface %s (index %d) is gone", x->ifname,
				  x->ifindex);
		else
			KINET_ERR("packet carrier (AF_XDP): interface %s went down", x->ifname);
	}
	return atomic_load(&x->err);
}

/* Whether the ifindex exists and is up, in the carrier's namespace:
 * 0, -ENODEV or -ENETDOWN (sticky then). */
static int xdp_iface_state(struct kinet_xdp *x)
{
	struct ifreq ifr;

	memset(&ifr, 0, sizeof(ifr));
	ifr.ifr_ifindex = x->ifindex;
	if (ioctl(x->ctl_fd, SIOCGIFNAME, &ifr))
		return errno == ENODEV ? xdp_set_error(x, -ENODEV) : 0;
	if (ioctl(x->ctl_fd, SIOCGIFFLAGS, &ifr))
		return errno == ENODEV ? xdp_set_error(x, -ENODEV) : 0;
	return ifr.ifr_flags & IFF_UP ? 0 : xdp_set_error(x, -ENETDOWN);
}

/* The errno of a failed socket call as the carrier's error when it says
 * the link is gone (then sticky), else as is. */
static int xdp_link_error(struct kinet_xdp *x, int e)
{
	int err;

	if (e != ENXIO && e != ENODEV && e != ENETDOWN)
		return -e;
	err = xdp_iface_state(x);
	/* The socket was unbound (NETDEV_UNREGISTER) though the name looks
	 * fine: the interface went away, whatever has its index now. */
	return err ? err : xdp_set_error(x, e == ENETDOWN ? -ENETDOWN : -ENODEV);
}

static int xdp_check_now(struct kinet_xdp *x)
{
	int e = 0;
	socklen_t len = sizeof(e);

	if (getsockopt(x->fd, SOL_SOCKET, SO_ERROR, &e, &len))
		return -errno;
	if (e)
		return xdp_link_error(x, e);
	return xdp_iface_state(x);
}

static int xdp_check(struct kinet_xdp *x)
{
	uint64_t now;
	int err = atomic_load_explicit(&x->err, memory_order_relaxed);

	if (err)
		return err;
	now = kinet_now_ns();
	if (now - x->checked_ns < KINET_PACKET_CHECK_NS)
		return 0;
	x->checked_ns = now;
	return xdp_check_now(x);
}

/* ---- receive ---------------------------------------------------------------- */

static uint64_t realtime_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int kinet_xdp_poll(struct kinet_xdp *x, struct kinet_packet_rx *rx, unsigned max)
{
	const struct xdp_desc *d = x->rx.desc;
	uint32_t avail, n;
	uint64_t ts;
	int err = xdp_check(x);

	if (err)
		return err;
	/* Acquire: the frames' bytes and descriptors were written before the
	 * producer index. */
	avail = __atomic_load_n(x->rx.producer, __ATOMIC_ACQUIRE) - x->rx.head;
	n = max < x->rx_n - x->held ? max : x->rx_n - x->held;
	if (n > avail)
		n = avail;
	if (!n)
		return 0;
	/* AF_XDP carries no receive time: the poll's is the stamp. */
	ts = realtime_ns();
	for (uint32_t i = 0; i < n; i++) {
		const struct xdp_desc *f = &d[(x->rx.head + i) & x->rx.mask];

		rx[i].data = x->umem + f->addr;
		rx[i].len = rx[i].wire_len = f->len;
		rx[i].ts_ns = ts;
		x->held_addr[(x->held_first + x->held + i) & (x->rx_n - 1)] = f->addr;
	}
	x->held += n;
	x->rx.head += n;
	atomic_fetch_add(&x->polled, n);
	/* The descriptors are copied out: the kernel may reuse their slots
	 * (the frames themselves stay ours until released). */
	__atomic_store_n(x->rx.consumer, x->rx.head, __ATOMIC_RELEASE);
	return (int)n;
}

void kinet_xdp_release(struct kinet_xdp *x, unsigned n)
{
	uint64_t *fill = x->fill.desc;

	if (!n)
		return;
	if (n > x->held)
		n = x->held;
	/* The fill ring has a slot for every receive frame, so a frame we
	 * hold always has one free. */
	for (unsigned i = 0; i < n; i++) {
		fill[(x->fill.head + i) & x->fill.mask] =
			x->held_addr[(x->held_first + i) & (x->rx_n - 1)] & ~(uint64_t)(x->frame_size - 1);
	}
	x->held_first = (x->held_first + n) & (x->rx_n - 1);
	x->held -= n;
	x->fill.head += n;
	/* Release: done with the frames before the kernel may write them. */
	__atomic_store_n(x->fill.producer, x->fill.head, __ATOMIC_RELEASE);
}

static bool xdp_ready(const struct kinet_xdp *x)
{
	return x->held < x->rx_n && __atomic_load_n(x->rx.producer, __ATOMIC_ACQUIRE) != x->rx.head;
}

int kinet_xdp_wait(struct kinet_xdp *x, int timeout_ms)
{
	uint64_t deadline;
	int err;

	if (timeout_ms < 0)
		return -EINVAL;
	deadline = kinet_now_ns() + (uint64_t)timeout_ms * 1000000ull;
	for (;;) {
		struct pollfd pfd = {.fd = x->fd, .events = POLLIN};
		uint64_t now;
		int left;

		err = xdp_check(x);
		if (err)
			return err;
		if (xdp_ready(x))
			return 1;
		now = kinet_now_ns();
		if (now >= deadline)
			return 0;
		left = (int)((deadline - now + 999999ull) / 1000000ull);
		/* Wake every 100 ms at most: the socket reports neither a
		 * downed interface nor (after it unbinds) a deleted one. */
		if (left > 100)
			left = 100;
		/* All frames held: nothing can arrive; sleep rather than spin
		 * on a POLLIN that stays set. */
		if (x->held == x->rx_n) {
			struct timespec nap = {.tv_nsec = 1000000};

			nanosleep(&nap, NULL);
			continue;
		}
		if (poll(&pfd, 1, left) < 0 && errno != EINTR)
			return -errno;
		if (pfd.revents & POLLERR) {
			err = xdp_check_now(x);
			if (err)
				return err;
		}
	}
}

/* ---- send ------------------------------------------------------------------- */

/* Send frames the kernel is done with back to the free stack. */
static void xdp_reclaim(struct kinet_xdp *x)
{
	const uint64_t *c = x->comp.desc;
	uint32_t n = __atomic_load_n(x->comp.producer, __ATOMIC_ACQUIRE) - x->comp.head;

	for (uint32_t i = 0; i < n; i++)
		x->tx_free[x->tx_nfree++] = c[(x->comp.head + i) & x->comp.mask];
	x->comp.head += n;
	if (n)
		__atomic_store_n(x->comp.consumer, x->comp.head, __ATOMIC_RELEASE);
}

/* Has the kernel transmit what the tx ring holds: in copy mode only a
 * sendto() does, 32 descriptors at a time.  0 or the link's error. */
static int xdp_kick(struct kinet_xdp *x)
{
	for (unsigned i = 0; i < XDP_KICKS_MAX; i++) {
		if (__atomic_load_n(x->tx.consumer, __ATOMIC_ACQUIRE) == x->tx.head)
			return 0;
		if (sendto(x->fd, NULL, 0, MSG_DONTWAIT, NULL, 0) >= 0)
			continue;
		if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EBUSY || errno == ENOBUFS ||
		    errno == EINTR)
			continue;
		return xdp_link_error(x, errno);
	}
	/* Still more in the ring (the device pushed back): the next send's
	 * kick takes it on. */
	return 0;
}

/* The longest frame the interface sends, as packet_snd allows: MTU and
 * header, and a VLAN tag's 4 bytes for a tagged frame. */
static uint32_t xdp_max_len(const struct kinet_xdp *x, const struct iovec *f)
{
	const uint8_t *b = f->iov_base;
	uint32_t max = x->mtu + ETH_HLEN;

	if (f->iov_len >= ETH_HLEN && ((b[12] == 0x81 && b[13] == 0x00) || (b[12] == 0x88 && b[13] == 0xa8)))
		max += 4;
	return max;
}

int kinet_xdp_send(struct kinet_xdp *x, const struct iovec *frames, unsigned n)
{
	struct xdp_desc *d = x->tx.desc;
	uint32_t room, k = 0;
	int err = atomic_load_explicit(&x->err, memory_order_relaxed);

	if (err)
		return err;
	xdp_reclaim(x);
	room = KINET_XDP_TX_FRAMES - (x->tx.head - __atomic_load_n(x->tx.consumer, __ATOMIC_ACQUIRE));
	if (room > x->tx_nfree)
		room = x->tx_nfree;
	for (; k < n && k < room; k++) {
		size_t len = frames[k].iov_len;
		uint64_t addr;

		/* A frame that cannot be sent ends the batch before it (or
		 * fails the call when it is the first). */
		if (len < ETH_HLEN) {
			if (!k)
				return -EINVAL;
			break;
		}
		if (len > xdp_max_len(x, &frames[k]) || len > x->frame_size) {
			if (!k)
				return -EMSGSIZE;
			break;
		}
		addr = x->tx_free[--x->tx_nfree];
		memcpy(x->umem + addr, frames[k].iov_base, len);
		d[(x->tx.head + k) & x->tx.mask] = (struct xdp_desc){.addr = addr, .len = (uint32_t)len};
	}
	if (k) {
		x->tx.head += k;
		/* Release: the frames' bytes before their descriptors. */
		__atomic_store_n(x->tx.producer, x->tx.head, __ATOMIC_RELEASE);
		atomic_fetch_add_explicit(&x->tx_frames, k, memory_order_relaxed);
	}
	err = xdp_kick(x);
	if (err < 0 && (err == -ENODEV || err == -ENETDOWN))
		return err;
	if (!k && n)
		return -EAGAIN; /* every send frame in flight: try again */
	return (int)k;
}

int kinet_xdp_stats(struct kinet_xdp *x, struct kinet_packet_stats *stats)
{
	struct xdp_statistics st;
	socklen_t len = sizeof(st);
	uint32_t cons, prod;

	memset(&st, 0, sizeof(st));
	if (getsockopt(x->fd, SOL_XDP, XDP_STATISTICS, &st, &len))
		return -errno;
	cons = __atomic_load_n(x->rx.consumer, __ATOMIC_ACQUIRE);
	stats->polled = atomic_load(&x->polled);
	prod = __atomic_load_n(x->rx.producer, __ATOMIC_ACQUIRE);
	/* Received: polled, plus what waits in the rx ring.  Dropped: the
	 * kernel's counters are totals since the socket was made (no reset
	 * on read); a frame dropped for want of a fill ring entry is in
	 * rx_dropped (and also in rx_fill_ring_empty_descs, not added). */
	stats->rx_frames = stats->polled + (uint32_t)(prod - cons);
	stats->rx_drops = st.rx_dropped + st.rx_ring_full;
	stats->tx_frames = atomic_load_explicit(&x->tx_frames, memory_order_relaxed);
	return 0;
}
