/*
 * eth_packet_filter, the device side: one warp per receive queue counts
 * the IPv4 packets it receives by protocol (UDP, TCP, ICMP, other) and
 * hands each batch's counts to the CPU through its queue's semaphore ring
 * (GPUNetIO's gpu_packet_processing pattern).
 *
 * Item i of a ring carries batch i: the packet info (first packet index,
 * bytes, count) and the counts as custom info.  The warp owns each item
 * in turn: it waits until the item is FREE or DONE (the CPU moves READY
 * to DONE once it has read it), fills it and publishes it READY; nobody
 * else writes an item the warp may be filling, so no compare-and-set is
 * needed (docs/ETHERNET.md says why host-memory rings avoid it).  When the
 * warp stops it publishes one more item EXIT.  A UDP datagram whose
 * payload starts with FILTER_STOP stops every warp (it is not counted).
 * Every wait is bounded by idle_ns (0: receives never time out, an item
 * the CPU never hands back still does after FILTER_ITEM_WAIT_NS).
 */
#ifndef ETH_FILTER_CUH
#define ETH_FILTER_CUH

#include <kinet/device.cuh>

#define FILTER_MAX_QUEUES 8
#define FILTER_BATCH 32u
#define FILTER_STOP "KINET-STOP"
#define FILTER_STOP_LEN 10u
#define FILTER_RECV_TIMEOUT_NS 200000ull
#define FILTER_DRAIN_NS 100000000ull
#define FILTER_ITEM_WAIT_NS 5000000000ull

/* The custom info of an item. */
struct filter_counts {
	uint64_t udp, tcp, icmp, other;
};

struct filter_status { /* host-mapped, one per queue, written at the end */
	uint64_t batches;
	int32_t error; /* 0, or the negative errno that ended the warp */
	uint32_t ended;
};

struct filter_args {
	struct kinet_dev_eth_rxq *rxq[FILTER_MAX_QUEUES];
	struct kinet_dev_sem *sem[FILTER_MAX_QUEUES];
	uint64_t idle_ns;
	uint32_t *stop; /* host-mapped: 1 = every warp stops */
	struct filter_status *status;
};

#if defined(KINET_HOST_EMU)
#define FILTER_LANES 1u
KINET_DEV_FN uint32_t filter_lane(void)
{
	return 0;
}
KINET_DEV_FN uint64_t filter_sum(uint64_t v)
{
	return v;
}
KINET_DEV_FN uint32_t filter_load(const uint32_t *p)
{
	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}
KINET_DEV_FN void filter_store(uint32_t *p, uint32_t v)
{
	__atomic_store_n(p, v, __ATOMIC_RELEASE);
}
#else
#define FILTER_LANES 32u
KINET_DEV_FN uint32_t filter_lane(void)
{
	return threadIdx.x & 31u;
}
KINET_DEV_FN uint64_t filter_sum(uint64_t v)
{
	for (int off = 16; off; off >>= 1)
		v += __shfl_xor_sync(0xffffffffu, v, off);
	return v;
}
KINET_DEV_FN uint32_t filter_load(const uint32_t *p)
{
	return *(const volatile uint32_t *)p;
}
KINET_DEV_FN void filter_store(uint32_t *p, uint32_t v)
{
	kinet_dev_fence_release_sys();
	*(volatile uint32_t *)p = v;
}
#endif

enum filter_kind { FILTER_UDP, FILTER_TCP, FILTER_ICMP, FILTER_OTHER, FILTER_STOP_PKT };

/* Classifies frame f (len bytes) from its IPv4 header; the CQE's L4 type
 * would do for UDP and TCP, but ICMP has none. */
KINET_DEV_FN enum filter_kind filter_classify(const uint8_t *f, uint32_t len)
{
	if (len < 14u + 20u || f[12] != 0x08 || f[13] != 0x00 || (f[14] >> 4) != 4)
		return FILTER_OTHER;
	uint32_t ihl = (f[14] & 0xfu) * 4u;
	uint8_t proto = f[14 + 9];
	if (proto == 6)
		return FILTER_TCP;
	if (proto == 1)
		return FILTER_ICMP;
	if (proto != 17)
		return FILTER_OTHER;
	const uint8_t *payload = f + 14 + ihl + 8;
	const char *s = FILTER_STOP;
	if (len < 14u + ihl + 8u + FILTER_STOP_LEN)
		return FILTER_UDP;
	for (uint32_t i = 0; i < FILTER_STOP_LEN; i++)
		if (payload[i] != (uint8_t)s[i])
			return FILTER_UDP;
	return FILTER_STOP_PKT;
}

/* Lane 0: waits until item idx may be filled (FREE or DONE). */
KINET_DEV_FN int filter_claim(const struct kinet_dev_sem *sem, uint32_t idx)
{
	uint64_t start = kinet_dev_now_ns();
	for (uint32_t iter = 0;; iter++) {
		enum kinet_sem_status st;
		int rc = kinet_dev_sem_get_status(sem, idx, &st);
		if (rc)
			return rc;
		if (st == KINET_SEM_FREE || st == KINET_SEM_DONE)
			return 0;
		if (kinet_dev_now_ns() - start > FILTER_ITEM_WAIT_NS)
			return -ETIMEDOUT;
		kinet_dev_relax(iter);
	}
}

/* Lane 0: publishes batch `item` of the queue. */
KINET_DEV_FN int filter_publish(const struct kinet_dev_sem *sem, uint64_t item, enum kinet_sem_status status,
				const struct kinet_sem_pkt_info *info, const struct filter_counts *c)
{
	uint32_t idx = (uint32_t)(item % sem->nitems);
	void *custom;
	int rc = filter_claim(sem, idx);
	if (!rc && c && !(rc = kinet_dev_sem_custom_info(sem, idx, &custom)))
		*(struct filter_counts *)custom = *c;
	if (!rc && info)
		rc = kinet_dev_sem_set_pkt_info(sem, idx, info);
	if (!rc)
		rc = kinet_dev_sem_set_status(sem, idx, status); /* a release: the above first */
	return rc;
}

KINET_DEV_FN void filter_warp(const struct filter_args *a, int q, struct kinet_dev_eth_pkt *pkts)
{
	struct kinet_dev_eth_rxq *rxq = a->rxq[q];
	const struct kinet_dev_sem *sem = a->sem[q];
	uint32_t lane = filter_lane();
	uint64_t item = 0, last_ns = kinet_dev_now_ns();
	int rc = 0;

	for (;;) {
		uint64_t first = 0;
		uint32_t n = 0;
		/* Once told to stop, what is still on its way to this queue
		 * (sent before the stop datagram, which another queue may have
		 * taken first) is counted: the warp ends at the first receive
		 * that waits FILTER_DRAIN_NS in vain. */
		int stopping = filter_load(a->stop) != 0;
		rc = kinet_dev_eth_rxq_recv_warp(rxq, FILTER_BATCH,
						 stopping ? FILTER_DRAIN_NS : FILTER_RECV_TIMEOUT_NS, &first,
						 &n, pkts);
		if (rc || (stopping && !n))
			break;
		uint64_t now = kinet_dev_now_ns();
		if (!n) {
			if (a->idle_ns && now - last_ns > a->idle_ns) {
				rc = -ETIMEDOUT;
				break;
			}
			continue;
		}
		last_ns = now;
		uint64_t k[5] = {0, 0, 0, 0, 0}, bytes = 0;
		for (uint32_t i = lane; i < n; i += FILTER_LANES) {
			const uint8_t *f = (const uint8_t *)kinet_dev_eth_pkt_addr(rxq, first + i);
			k[filter_classify(f, pkts[i].bytes)]++;
			bytes += pkts[i].bytes;
		}
		struct filter_counts c;
		c.udp = filter_sum(k[FILTER_UDP]);
		c.tcp = filter_sum(k[FILTER_TCP]);
		c.icmp = filter_sum(k[FILTER_ICMP]);
		c.other = filter_sum(k[FILTER_OTHER]);
		uint64_t stops = filter_sum(k[FILTER_STOP_PKT]);
		bytes = filter_sum(bytes);
		if (lane == 0) {
			struct kinet_sem_pkt_info info;
			info.first = first;
			info.bytes = bytes;
			info.count = n;
			info.reserved = 0;
			rc = filter_publish(sem, item++, KINET_SEM_READY, &info, &c);
			if (stops)
				filter_store(a->stop, 1);
		}
#if !defined(KINET_HOST_EMU)
		rc = __shfl_sync(0xffffffffu, rc, 0);
#endif
		if (rc)
			break;
	}
	if (lane == 0) {
		int exit_rc = filter_publish(sem, item, KINET_SEM_EXIT, NULL, NULL);
		struct filter_status *st = &a->status[q];
		st->batches = item;
		st->error = rc ? rc : exit_rc;
		filter_store(&st->ended, 1);
	}
}

#endif /* ETH_FILTER_CUH */
