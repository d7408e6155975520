/*
 * eth_udp_echo, the device side: one warp per receive queue, each with a
 * send queue of its own (no sharing, no lock).
 *
 * A warp receives up to ECHO_BATCH packets (the lanes read the CQEs
 * together), turns each around in its slot -- Ethernet addresses, IPv4
 * addresses and UDP ports swapped, both checksums zeroed and left to the
 * NIC's offload -- and sends it back from the same slot, one lane per
 * packet and one doorbell per round.  A slot is handed back to the NIC at
 * the next receive, so the warp waits for the round's last send before it
 * receives again: the NIC must not write a packet over one still being
 * sent.  A datagram whose payload starts with ECHO_STOP is echoed, then
 * every warp stops (a host-mapped word they all read).  Every wait is
 * bounded: idle_ns without a packet ends the warp with -ETIMEDOUT (0:
 * never), and a failing call ends it with that call's error.
 */
#ifndef ETH_ECHO_CUH
#define ETH_ECHO_CUH

#include <kinet/device.cuh>

#define ECHO_MAX_QUEUES 16
#define ECHO_BATCH 32u
#define ECHO_STOP "KINET-STOP"
#define ECHO_STOP_LEN 10u
/* A receive takes what has arrived and returns at once (timeout 0): a
 * receive waits for ECHO_BATCH packets or its timeout, and an echo that
 * waited for a full batch would hold a lone datagram for the whole
 * timeout (measured: 200 us of a 410 us round trip in host emulation). */
#define ECHO_RECV_TIMEOUT_NS 0ull

struct echo_status {	  /* host-mapped, one per queue, written at the end */
	uint64_t echoed;  /* packets sent back */
	uint64_t ignored; /* not IPv4/UDP to our port: left alone */
	int32_t error;	  /* 0, or the negative errno that ended the warp */
	uint32_t ended;	  /* 1 once the warp is done */
};

struct echo_args {
	struct kinet_dev_eth_rxq *rxq[ECHO_MAX_QUEUES];
	struct kinet_dev_eth_txq *txq[ECHO_MAX_QUEUES];
	uint16_t port;
	uint64_t idle_ns;
	uint32_t *stop;		    /* host-mapped: 1 = every warp stops */
	struct echo_status *status; /* host-mapped, one per queue */
};

#if defined(KINET_HOST_EMU)
#define ECHO_LANES 1u
KINET_DEV_FN uint32_t echo_lane(void)
{
	return 0;
}
KINET_DEV_FN uint32_t echo_any(uint32_t v)
{
	return v;
}
KINET_DEV_FN uint64_t echo_sum(uint64_t v)
{
	return v;
}
#else
#define ECHO_LANES 32u
KINET_DEV_FN uint32_t echo_lane(void)
{
	return threadIdx.x & 31u;
}
KINET_DEV_FN uint32_t echo_any(uint32_t v)
{
	return __any_sync(0xffffffffu, v != 0);
}
KINET_DEV_FN uint64_t echo_sum(uint64_t v)
{
	for (int off = 16; off; off >>= 1)
		v += __shfl_xor_sync(0xffffffffu, v, off);
	return v;
}
#endif

/* Words the host reads while the kernel runs, and the stop word every warp
 * reads: system scope, since the other side is the CPU or another SM. */
KINET_DEV_FN uint32_t echo_load(const uint32_t *p)
{
#if defined(KINET_HOST_EMU)
	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
#else
	return *(const volatile uint32_t *)p;
#endif
}

KINET_DEV_FN void echo_store(uint32_t *p, uint32_t v)
{
	kinet_dev_fence_release_sys();
#if defined(KINET_HOST_EMU)
	__atomic_store_n(p, v, __ATOMIC_RELEASE);
#else
	*(volatile uint32_t *)p = v;
#endif
}

KINET_DEV_FN void echo_swap(uint8_t *a, uint8_t *b, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		uint8_t t = a[i];
		a[i] = b[i];
		b[i] = t;
	}
}

/* Turns frame f (len bytes) around in place when it is IPv4/UDP to port:
 * returns its length (0: not ours), *stop when its payload is ECHO_STOP. */
KINET_DEV_FN uint32_t echo_turn(uint8_t *f, uint32_t len, uint16_t port, int *stop)
{
	if (len < 14u + 20u + 8u || f[12] != 0x08 || f[13] != 0x00)
		return 0;
	uint8_t *ip = f + 14;
	uint32_t ihl = (ip[0] & 0xfu) * 4u;
	if ((ip[0] >> 4) != 4 || ihl < 20 || len < 14u + ihl + 8u || ip[9] != 17)
		return 0;
	uint8_t *udp = ip + ihl;
	if ((uint16_t)((udp[2] << 8) | udp[3]) != port)
		return 0;
	uint32_t ulen = (uint32_t)((udp[4] << 8) | udp[5]);
	echo_swap(f, f + 6, 6);
	echo_swap(ip + 12, ip + 16, 4);
	echo_swap(udp, udp + 2, 2);
	ip[10] = ip[11] = 0; /* the NIC's offload fills both checksums */
	udp[6] = udp[7] = 0;
	const char *s = ECHO_STOP;
	*stop = ulen >= 8u + ECHO_STOP_LEN && len >= 14u + ihl + 8u + ECHO_STOP_LEN;
	for (uint32_t i = 0; *stop && i < ECHO_STOP_LEN; i++)
		*stop = udp[8 + i] == (uint8_t)s[i];
	return len;
}

/* The warp serving queue q.  pkts: ECHO_BATCH entries the warp shares
 * (shared memory on the GPU). */
KINET_DEV_FN void echo_warp(const struct echo_args *a, int q, struct kinet_dev_eth_pkt *pkts)
{
	struct kinet_dev_eth_rxq *rxq = a->rxq[q];
	struct kinet_dev_eth_txq *txq = a->txq[q];
	struct echo_status *st = &a->status[q];
	uint32_t lane = echo_lane();
	uint64_t echoed = 0, ignored = 0, last_ns = kinet_dev_now_ns();
	uint32_t idle_iter = 0;
	int rc = 0;

	while (!echo_load(a->stop)) {
		uint64_t first = 0, ticket = 0;
		uint32_t n = 0;

		rc = kinet_dev_eth_rxq_recv_warp(rxq, ECHO_BATCH, ECHO_RECV_TIMEOUT_NS, &first, &n, pkts);
		if (rc)
			break;
		uint64_t now = kinet_dev_now_ns();
		if (!n) {
			if (a->idle_ns && now - last_ns > a->idle_ns) {
				rc = -ETIMEDOUT;
				break;
			}
			/* Spins, then backs off (on CPU threads: yields, so
			 * the engine thread that brings the packets runs). */
			kinet_dev_relax(idle_iter++);
			continue;
		}
		last_ns = now;
		idle_iter = 0;
		int stop = 0;
		for (uint32_t base = 0; base < n && !rc; base += ECHO_LANES) {
			uint32_t i = base + lane, len = 0;
			int mine = 0;
			uint8_t *f = NULL;
			if (i < n) {
				f = (uint8_t *)kinet_dev_eth_pkt_addr(rxq, first + i);
				len = echo_turn(f, pkts[i].bytes, a->port, &mine);
				if (len)
					echoed++;
				else
					ignored++;
			}
			stop |= (int)echo_any((uint32_t)mine);
			/* The round's last send asks for a completion: the wait
			 * below covers every send before it. */
			rc = kinet_dev_eth_txq_send_warp(txq, f, rxq->pkt_lkey, len,
							 KINET_DEV_ETH_L3_CSUM | KINET_DEV_ETH_L4_CSUM |
								 KINET_DEV_ETH_NOTIFY,
							 &ticket);
		}
		if (!rc)
			rc = kinet_dev_eth_txq_wait(txq, ticket);
		if (rc)
			break;
		if (stop && lane == 0)
			echo_store(a->stop, 1);
	}
	echoed = echo_sum(echoed);
	ignored = echo_sum(ignored);
	if (lane == 0) {
		st->echoed = echoed;
		st->ignored = ignored;
		st->error = rc;
		echo_store(&st->ended, 1);
	}
}

#endif /* ETH_ECHO_CUH */
