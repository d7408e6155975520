/*
 * eth_timed_send, the device side.
 *
 * Sender: one thread sends `bursts` bursts of `burst` frames (prepared by
 * the host in one registered buffer); burst b's first frame goes with a
 * timed send (a WAIT-on-time WQE: the NIC holds the queue until its clock
 * reads the time) at t0 + b * interval, the rest of the burst right after
 * it.  The thread does not wait between bursts: the queue does.
 *
 * Receiver: one thread receives until it has every frame of the run (or
 * idles out) and writes each frame's burst, index and receive timestamp
 * into host-mapped records the host checks.
 */
#ifndef ETH_TIMED_CUH
#define ETH_TIMED_CUH

#include <kinet/device.cuh>

#define TIMED_MAGIC 0x6b696e6574u /* "kinet" */
#define TIMED_HEADERS 42u	  /* Ethernet + IPv4 + UDP */
#define TIMED_MAX_FRAMES 4096u

/* The UDP payload's start. */
struct timed_payload {
	uint64_t magic;
	uint32_t burst, index;
	uint64_t planned_ns; /* when the burst was to leave, CLOCK_REALTIME */
};

struct timed_record { /* host-mapped, one per frame received */
	uint32_t burst, index;
	uint64_t planned_ns, rx_ns;
};

struct timed_args {
	struct kinet_dev_eth_txq *txq; /* sender */
	struct kinet_dev_eth_rxq *rxq; /* receiver */
	uint8_t *frames;	       /* sender: bursts * burst frames of frame_bytes */
	uint32_t lkey, frame_bytes, bursts, burst;
	uint64_t t0_ns, interval_ns, idle_ns;
	struct timed_record *records; /* receiver: bursts * burst */
	uint32_t *count;	      /* receiver: records written (host-mapped) */
	int32_t *status;	      /* host-mapped: 0, or the negative errno */
	uint32_t *ended;	      /* host-mapped */
};

KINET_DEV_FN void timed_end(const struct timed_args *a, int rc)
{
	*a->status = rc;
	kinet_dev_fence_release_sys();
	*(volatile uint32_t *)a->ended = 1;
}

KINET_DEV_FN void timed_send_all(const struct timed_args *a)
{
	uint64_t ticket = 0;
	int rc = 0;
	const uint32_t flags = KINET_DEV_ETH_L3_CSUM | KINET_DEV_ETH_L4_CSUM;

	for (uint32_t b = 0; b < a->bursts && !rc; b++) {
		for (uint32_t i = 0; i < a->burst && !rc; i++) {
			uint8_t *f = a->frames + (uint64_t)(b * a->burst + i) * a->frame_bytes;
			/* A completion per burst: the queue never holds more than
			 * one burst's worth unreported. */
			uint32_t fl = flags | (i + 1 == a->burst ? KINET_DEV_ETH_NOTIFY : 0u);
			if (i == 0)
				rc = kinet_dev_eth_txq_send_at(a->txq, a->t0_ns + b * a->interval_ns, f,
							       a->lkey, a->frame_bytes, fl, &ticket);
			else
				rc = kinet_dev_eth_txq_send(a->txq, f, a->lkey, a->frame_bytes, fl, &ticket);
			/* A full queue: wait for what is in it, then go on. */
			if (rc == -EAGAIN) {
				rc = kinet_dev_eth_txq_wait(a->txq, ticket);
				if (!rc)
					i--;
			}
		}
	}
	if (!rc)
		rc = kinet_dev_eth_txq_wait(a->txq, ticket);
	timed_end(a, rc);
}

KINET_DEV_FN void timed_receive_all(const struct timed_args *a, struct kinet_dev_eth_pkt *pkts,
				    uint32_t batch)
{
	uint32_t want = a->bursts * a->burst, got = 0;
	uint64_t last = kinet_dev_now_ns();
	int rc = 0;

	while (got < want) {
		uint64_t first;
		uint32_t n;
		if ((rc = kinet_dev_eth_rxq_recv(a->rxq, batch, 1000000ull, &first, &n, pkts)))
			break;
		uint64_t now = kinet_dev_now_ns();
		if (!n && now - last > a->idle_ns) {
			rc = -ETIMEDOUT;
			break;
		}
		if (n)
			last = now;
		for (uint32_t i = 0; i < n && got < want; i++) {
			const uint8_t *f = (const uint8_t *)kinet_dev_eth_pkt_addr(a->rxq, first + i);
			struct timed_payload p;
			if (pkts[i].bytes < TIMED_HEADERS + sizeof(p))
				continue;
			memcpy(&p, f + TIMED_HEADERS, sizeof(p));
			if (p.magic != TIMED_MAGIC)
				continue;
			struct timed_record *r = &a->records[got++];
			r->burst = p.burst;
			r->index = p.index;
			r->planned_ns = p.planned_ns;
			r->rx_ns = pkts[i].timestamp_ns;
		}
	}
	*a->count = got;
	timed_end(a, rc);
}

#endif /* ETH_TIMED_CUH */
