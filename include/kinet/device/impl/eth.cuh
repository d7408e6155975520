/*
 * kinet device API, implementation: Ethernet queues (kinet/device/eth.cuh).
 *
 * Receive: a group reads the receive CQEs of a batch at once, rank r the
 * CQE at ci + r (one PCIe round trip for up to a warp's or a block's
 * worth), then agrees on the number of consecutive ready ones (a ballot in
 * a warp, a shared-memory minimum in a block) and each rank fills the
 * packet attributes of its own CQE.  Send: every thread of the group that
 * has a packet takes a position (lane order in a warp, rank order in a
 * block), rank 0 reserves the group's basic blocks, each sender writes its
 * WQEs and the writer of the last one hands its 64 bytes to rank 0, which
 * commits with one doorbell.  Under KINET_HOST_EMU a group is one thread.
 */
#ifndef KINET_DEVICE_IMPL_ETH_CUH
#define KINET_DEVICE_IMPL_ETH_CUH

#include "kinet/device/cq.cuh"
#include "kinet/device/doorbell.cuh"
#include "kinet/device/error.cuh"
#include "kinet/device/eth_types.h"
#include "kinet/device/impl/post.cuh"
#include "kinet/device/impl/scope.cuh"
#include "kinet/device/platform.cuh"
#include "kinet/device/sq.cuh"
#include "kinet/device/types.h"
#include "kinet/device/wqe.cuh"
#include "kinet/wire.h"

#if defined(KINET_HOST_EMU)
#include <time.h>
#endif

#ifndef EBUSY
#define EBUSY 16
#endif

/* kinet_dev_eth_txq_send flags (the public names are in eth.cuh). */
#define KINET_DEVI_ETH_L3_CSUM 0x1u
#define KINET_DEVI_ETH_L4_CSUM 0x2u
#define KINET_DEVI_ETH_NOTIFY 0x4u
#define KINET_DEVI_ETH_FLAGS 0x7u

/* ---- the clock -------------------------------------------------------- */

KINET_DEV_FN uint64_t kinet_devi_eth_now_ns(void)
{
#if defined(KINET_HOST_EMU)
	/* C11's timespec_get(TIME_UTC) is CLOCK_REALTIME on Linux (and needs
	 * no POSIX declarations, which ISO C11 and C++ builds lack). */
	struct timespec ts;
	if (timespec_get(&ts, TIME_UTC) != TIME_UTC)
		return 0;
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
#else
	return kinet_devi_now_ns(); /* %globaltimer */
#endif
}

/* ---- receive ---------------------------------------------------------- */

/* What one rank found at a CQE slot. */
#define KINET_DEVI_ETH_NONE 0	/* not written yet */
#define KINET_DEVI_ETH_PACKET 1 /* a packet: *pkt filled */
#define KINET_DEVI_ETH_ERROR 2	/* an error CQE, or one out of step with the queue */

/* Bytes 16..63 of the CQE at consumer index ci, read once: on the GPU the
 * last 16 bytes (op_own) in one relaxed system-scope load, then, once the
 * owner says software, an acquire fence and bytes 16..47 (two loads; see
 * kinet_dev_cq_peek_at for why not all at once).  q[0..5] = bytes 16..63.
 * 1 when the CQE is software's, else 0. */
KINET_DEV_FN int kinet_devi_eth_cqe_load(const struct kinet_dev_cq *cq, uint64_t ci, uint64_t q[6])
{
	const struct kinet_cqe64 *c = &cq->cqes[ci & cq->mask];
	uint8_t op_own;
#if defined(KINET_HOST_EMU)
	op_own = __atomic_load_n(&c->op_own, __ATOMIC_ACQUIRE);
	if ((op_own >> 4) == KINET_CQE_INVALID || (op_own & 1) != kinet_cqe_sw_owner(ci, cq->log_depth))
		return 0;
	memcpy(q, (const uint8_t *)c + 16, 48);
#else
	kinet_devi_load_cqe_hi(c, &q[4]);
	op_own = (uint8_t)(q[5] >> 56);
	if ((op_own >> 4) == KINET_CQE_INVALID || (op_own & 1) != kinet_cqe_sw_owner(ci, cq->log_depth))
		return 0;
	kinet_dev_fence_acquire_sys(); /* op_own, then the rest of the CQE and the packet */
	kinet_devi_load_cqe_lo(c, &q[2]);
	const uint8_t *p = (const uint8_t *)c;
	asm volatile("ld.relaxed.sys.v2.u64 {%0, %1}, [%2];"
		     : "=l"(q[0]), "=l"(q[1])
		     : "l"(p + 16)
		     : "memory");
#endif
	return 1;
}

/* Records the receive side's first error (receive lock held): sticky
 * rq_error (syndrome | flag), rq_error_idx, the context's record. */
KINET_DEV_FN void kinet_devi_eth_rx_note_error(struct kinet_dev_qp *qp, uint64_t idx, uint8_t syndrome,
					       uint16_t wqe_counter)
{
	if (kinet_devi_load_relaxed_u32(&qp->rq_error))
		return;
	kinet_devi_store_relaxed_u64(&qp->rq_error_idx, idx);
	kinet_devi_fence_gpu(); /* index before the flag */
	kinet_devi_store_relaxed_u32(&qp->rq_error, syndrome | KINET_DEVI_ERROR_FLAG);
	kinet_dev_record_error(qp->err, -EIO, qp->qpn, syndrome, 0, wqe_counter);
}

/* Peeks the receive CQE of packet idx (running index) at consumer index
 * ci: KINET_DEVI_ETH_NONE, _PACKET (pkt filled) or _ERROR (error CQE, or a
 * CQE naming another slot than the queue expects: the NIC and the queue
 * are out of step; recorded here). */
KINET_DEV_FN int kinet_devi_eth_rx_peek(const struct kinet_dev_eth_rxq *rxq, uint64_t ci, uint64_t idx,
					struct kinet_dev_eth_pkt *pkt)
{
	struct kinet_dev_qp *qp = rxq->qp;
	uint64_t q[6];
	if (!kinet_devi_eth_cqe_load(qp->recv_cq, ci, q))
		return KINET_DEVI_ETH_NONE;
	struct kinet_dev_cqe e;
	uint64_t hi[4] = {q[4], q[5], q[2], q[3]};
	kinet_devi_cqe_decode(hi, 1, &e);
	uint32_t slot_mask = rxq->npkts - 1;
	if (kinet_dev_cqe_is_error(&e) || (e.wqe_counter & slot_mask) != (idx & slot_mask & 0xffffu)) {
		kinet_devi_eth_rx_note_error(qp, idx, e.syndrome, e.wqe_counter);
		return KINET_DEVI_ETH_ERROR;
	}
	struct kinet_cqe64 c;
	struct kinet_cqe_eth_rx rx;
	memset(&c, 0, 16);
	memcpy((uint8_t *)&c + 16, q, 48);
	kinet_cqe_eth_rx_decode(&c, &rx);
	pkt->timestamp_ns = kinet_eth_rt_to_ns(rx.timestamp);
	pkt->bytes = rx.byte_cnt;
	pkt->l3_type = rx.l3_hdr_type;
	pkt->l4_type = rx.l4_hdr_type;
	pkt->csum_ok = rx.csum_ok;
	pkt->pad = 0;
	return KINET_DEVI_ETH_PACKET;
}

/* Every rank's peek result in, uniform answer out: *n = ranks 0, 1, ...
 * that found a packet before the first that did not, *err = 1 when that
 * first one found an error. */
KINET_DEV_FN void kinet_devi_eth_rx_scan(int g, int found, uint32_t *n, int *err)
{
#if !defined(KINET_HOST_EMU)
	if (g == KINET_DEVI_GROUP_WARP) {
		uint32_t pk = __ballot_sync(0xffffffffu, found == KINET_DEVI_ETH_PACKET);
		uint32_t er = __ballot_sync(0xffffffffu, found == KINET_DEVI_ETH_ERROR);
		uint32_t k = pk == 0xffffffffu ? 32u : (uint32_t)(__ffs(~pk) - 1);
		*n = k;
		*err = k < 32 && ((er >> k) & 1u);
		return;
	}
	if (g == KINET_DEVI_GROUP_BLOCK) {
		/* key = rank << 1 | error of the first rank without a packet */
		__shared__ unsigned int kinet_devi_eth_scan_key;
		uint32_t rank = kinet_devi_group_rank(g), size = kinet_devi_group_size(g);
		__syncthreads(); /* earlier readers of the key are done */
		if (rank == 0)
			kinet_devi_eth_scan_key = size << 1;
		__syncthreads();
		if (found != KINET_DEVI_ETH_PACKET)
			atomicMin_block(&kinet_devi_eth_scan_key,
					rank << 1 | (found == KINET_DEVI_ETH_ERROR ? 1u : 0u));
		__syncthreads();
		unsigned int key = kinet_devi_eth_scan_key;
		*n = key >> 1;
		*err = key < (size << 1) && (key & 1u);
		return;
	}
#endif
	(void)g;
	*n = found == KINET_DEVI_ETH_PACKET ? 1u : 0u;
	*err = found == KINET_DEVI_ETH_ERROR;
}

/* Receive lock, error check and hand back (rank 0): 0 with *base = the
 * running index of the next packet, -EBUSY (another group is receiving:
 * nothing touched) or -EIO (sticky error; lock released). */
KINET_DEV_FN int kinet_devi_eth_rx_begin(struct kinet_dev_eth_rxq *rxq, uint64_t *base)
{
	struct kinet_dev_qp *qp = rxq->qp;
	if (kinet_devi_load_relaxed_u32(&rxq->lock) != 0 || kinet_devi_atomic_cas_u32(&rxq->lock, 0, 1) != 0)
		return -EBUSY;
	kinet_devi_fence_acquire_gpu(); /* the lock, then the last holder's state */
	uint64_t received = kinet_devi_load_relaxed_u64(&rxq->received);
	uint64_t retired = kinet_devi_load_relaxed_u64(&rxq->retired);
	*base = received;
	if (received != retired) {
		/* Hand back the slots the previous call returned: the receive
		 * WQEs never change, so moving the doorbell record on posts
		 * them again (npkts were posted at creation).  The release fence
		 * inside orders the group's reads of those packets (the group
		 * synchronised before this) before the NIC may overwrite them. */
		uint64_t posted = received + rxq->npkts;
		kinet_dev_rq_ring(qp, posted);
		kinet_devi_store_relaxed_u64(&qp->rq_ready, posted);
		kinet_devi_store_relaxed_u64(&qp->rq_reserved, posted);
		kinet_devi_store_relaxed_u64(&rxq->retired, received);
	}
	if (kinet_devi_load_relaxed_u32(&qp->rq_error)) {
		kinet_devi_fence_gpu();
		kinet_devi_atomic_exch_u32(&rxq->lock, 0);
		return -EIO;
	}
	return 0;
}

/* Rank 0 at the end: consumes the CQEs taken, publishes the count and
 * releases the lock. */
KINET_DEV_FN void kinet_devi_eth_rx_end(struct kinet_dev_eth_rxq *rxq, uint64_t ci, uint64_t base,
					uint32_t got)
{
	struct kinet_dev_qp *qp = rxq->qp;
	struct kinet_dev_cq *cq = qp->recv_cq;
	if (got) {
		uint64_t pub = kinet_devi_load_relaxed_u64(&cq->ci_published);
		kinet_devi_cq_consume_scoped(KINET_DEVI_SCOPE_GPU, cq, pub, ci + got);
		kinet_devi_store_relaxed_u64(&rxq->received, base + got);
		kinet_devi_store_relaxed_u64(&qp->rq_done, base + got);
	}
	kinet_devi_fence_gpu(); /* the state, then the unlock */
	kinet_devi_atomic_exch_u32(&rxq->lock, 0);
}

/* The receive, as group g (all ranks, same arguments). */
KINET_DEV_FN int kinet_devi_eth_rxq_recv_g(int g, struct kinet_dev_eth_rxq *rxq, uint32_t max_pkts,
					   uint64_t timeout_ns, uint64_t *first_idx, uint32_t *count,
					   struct kinet_dev_eth_pkt *pkts)
{
	uint32_t rank = kinet_devi_group_rank(g), size = kinet_devi_group_size(g);
	uint32_t max = max_pkts && max_pkts < rxq->npkts ? max_pkts : rxq->npkts;
	uint64_t base = 0, start = 0, ci;
	uint32_t got = 0, iter = 0;
	int st = 0, err = 0;

	/* Every member's reads of the packets the last call returned happen
	 * before rank 0 hands their slots back. */
	kinet_devi_group_sync(g);
	if (rank == 0) {
		start = kinet_devi_eth_now_ns();
		st = kinet_devi_eth_rx_begin(rxq, &base);
	}
	kinet_devi_group_bcast(g, &st, &base);
	if (st) {
		if (first_idx)
			*first_idx = st == -EBUSY ? 0 : base;
		if (count)
			*count = 0;
		return st;
	}
	ci = kinet_devi_load_relaxed_u64(&rxq->qp->recv_cq->ci); /* rank 0 holds the lock: stable */
	for (;;) {
		struct kinet_dev_eth_pkt p;
		int found = KINET_DEVI_ETH_NONE;
		uint32_t n, batch = max - got < size ? max - got : size;
		if (rank < batch)
			found = kinet_devi_eth_rx_peek(rxq, ci + got + rank, base + got + rank, &p);
		kinet_devi_eth_rx_scan(g, found, &n, &err);
		if (pkts && rank < n)
			pkts[got + rank] = p;
		got += n;
		if (err || got >= max)
			break;
		if (n == batch)
			continue; /* every CQE read was ready: read on (got < max <= npkts) */
		/* Caught up with the NIC: the time decides. */
		int stop = 0;
		uint64_t unused = 0;
		if (rank == 0) {
			stop = timeout_ns == 0 || kinet_devi_eth_now_ns() - start >= timeout_ns;
			if (!stop && !n)
				kinet_devi_relax(iter++);
		}
		kinet_devi_group_bcast(g, &stop, &unused);
		if (stop)
			break;
	}
	if (rank == 0)
		kinet_devi_eth_rx_end(rxq, ci, base, got);
	st = err ? -EIO : 0;
	/* Every member's pkts[] stores before anyone returns. */
	kinet_devi_group_sync(g);
	if (first_idx)
		*first_idx = base;
	if (count)
		*count = got;
	return st;
}

/* ---- send ------------------------------------------------------------- */

/* A send's flags to the Ethernet segment's cs_flags: 0, or -EINVAL for
 * unknown flags or a checksum the queue does not offer. */
KINET_DEV_FN int kinet_devi_eth_cs_flags(const struct kinet_dev_eth_txq *txq, uint32_t flags, uint8_t *cs)
{
	uint8_t c = 0;
	if (flags & ~KINET_DEVI_ETH_FLAGS)
		return -EINVAL;
	if (flags & KINET_DEVI_ETH_L3_CSUM)
		c |= KINET_ETH_WQE_L3_CSUM;
	if (flags & KINET_DEVI_ETH_L4_CSUM)
		c |= KINET_ETH_WQE_L4_CSUM;
	if (c & ~txq->cs_flags)
		return -EINVAL;
	*cs = c;
	return 0;
}

KINET_DEV_FN void kinet_devi_eth_build_send(union kinet_dev_wqe *w, const struct kinet_dev_eth_txq *txq,
					    uint64_t idx, uint8_t fm_ce_se, uint8_t cs, uint64_t addr,
					    uint32_t lkey, uint32_t len)
{
	struct kinet_eth_send_wqe e;
	memset(&e, 0, sizeof(e));
	kinet_eth_wqe_send(&e, (uint16_t)idx, txq->sqn, fm_ce_se, cs, addr, len, lkey);
	memcpy(w, &e, sizeof(e));
}

KINET_DEV_FN void kinet_devi_eth_build_wait(union kinet_dev_wqe *w, const struct kinet_dev_eth_txq *txq,
					    uint64_t idx, uint8_t fm_ce_se, uint64_t time_ns)
{
	struct kinet_eth_wait_wqe e;
	memset(&e, 0, sizeof(e));
	kinet_eth_wqe_wait_time(&e, (uint16_t)idx, txq->sqn, fm_ce_se, kinet_eth_rt_from_ns(time_ns));
	memcpy(w, &e, sizeof(e));
}

/* Senders of a group: *pos = this rank's position among the ranks with
 * active != 0 (rank order), *n = their number, *bad = the OR of every
 * rank's bad bits.  Uniform outputs but *pos. */
KINET_DEV_FN void kinet_devi_eth_tx_count(int g, int active, uint32_t bad_in, uint32_t *pos, uint32_t *n,
					  uint32_t *bad)
{
#if !defined(KINET_HOST_EMU)
	if (g == KINET_DEVI_GROUP_WARP) {
		uint32_t m = __ballot_sync(0xffffffffu, active);
		uint32_t lane = kinet_devi_lane_id();
		*pos = (uint32_t)__popc(m & ((1u << lane) - 1u));
		*n = (uint32_t)__popc(m);
		*bad = (__ballot_sync(0xffffffffu, bad_in & 1u) ? 1u : 0u) |
		       (__ballot_sync(0xffffffffu, bad_in & 2u) ? 2u : 0u);
		return;
	}
	if (g == KINET_DEVI_GROUP_BLOCK) {
		__shared__ unsigned int kinet_devi_eth_warp_n[32];
		__shared__ unsigned int kinet_devi_eth_bad;
		uint32_t rank = kinet_devi_group_rank(g), size = kinet_devi_group_size(g);
		uint32_t lane = rank & 31u, warp = rank >> 5, nwarps = (size + 31u) >> 5;
		uint32_t in_warp = size - (warp << 5) < 32u ? size - (warp << 5) : 32u;
		uint32_t mask = in_warp == 32u ? 0xffffffffu : (1u << in_warp) - 1u;
		uint32_t m = __ballot_sync(mask, active);
		__syncthreads(); /* earlier readers of the counts are done */
		if (rank == 0)
			kinet_devi_eth_bad = 0;
		if (lane == 0)
			kinet_devi_eth_warp_n[warp] = (unsigned int)__popc(m);
		__syncthreads();
		if (bad_in)
			atomicOr_block(&kinet_devi_eth_bad, bad_in);
		uint32_t before = 0, total = 0;
		for (uint32_t w = 0; w < nwarps; w++) {
			if (w < warp)
				before += kinet_devi_eth_warp_n[w];
			total += kinet_devi_eth_warp_n[w];
		}
		__syncthreads();
		*pos = before + (uint32_t)__popc(m & ((1u << lane) - 1u));
		*n = total;
		*bad = kinet_devi_eth_bad;
		return;
	}
#endif
	(void)g;
	*pos = 0;
	*n = active ? 1u : 0u;
	*bad = bad_in;
}

/* The 64 bytes of the round's last WQE, from the rank that wrote it
 * (mine != 0) to rank 0 (q); a barrier of the group.  writer: that rank. */
KINET_DEV_FN void kinet_devi_eth_tx_last(int g, int mine, uint32_t writer, uint64_t q[8])
{
#if !defined(KINET_HOST_EMU)
	if (g == KINET_DEVI_GROUP_WARP) {
		(void)mine;
		for (int i = 0; i < 8; i++)
			q[i] = (uint64_t)__shfl_sync(0xffffffffu, (unsigned long long)q[i], (int)writer);
		return;
	}
	if (g == KINET_DEVI_GROUP_BLOCK) {
		__shared__ unsigned long long kinet_devi_eth_last[8];
		(void)writer;
		__syncthreads(); /* earlier readers of the buffer are done */
		if (mine)
			for (int i = 0; i < 8; i++)
				kinet_devi_eth_last[i] = q[i];
		__syncthreads();
		for (int i = 0; i < 8; i++)
			q[i] = kinet_devi_eth_last[i];
		return;
	}
#endif
	(void)g;
	(void)mine;
	(void)writer;
	(void)q;
}

/* The rank holding position pos among the senders: needed by the warp
 * shuffle (a lane index).  Warp: the lane whose popcount prefix is pos. */
KINET_DEV_FN uint32_t kinet_devi_eth_tx_writer(int g, int active, uint32_t my_pos, uint32_t pos)
{
#if !defined(KINET_HOST_EMU)
	if (g == KINET_DEVI_GROUP_WARP) {
		uint32_t m = __ballot_sync(0xffffffffu, active && my_pos == pos);
		return m ? (uint32_t)(__ffs(m) - 1) : 0u;
	}
#endif
	(void)g;
	(void)active;
	(void)my_pos;
	(void)pos;
	return 0;
}

/* Sends (timed: WAIT-on-time then send) as group g: every rank its own
 * packet, len 0 for none (the thread form refuses len 0).  Rounds of at
 * most half the queue, one doorbell each. */
KINET_DEV_FN int kinet_devi_eth_send_g(int g, struct kinet_dev_eth_txq *txq, int timed, uint64_t time_ns,
				       const void *addr, uint32_t lkey, uint32_t len, uint32_t flags,
				       uint64_t *ticket)
{
	struct kinet_dev_qp *qp = txq->qp;
	uint32_t rank = kinet_devi_group_rank(g);
	uint8_t cs = 0;
	uint32_t bad = 0, pos, n;
	int active = len != 0;
	/* Bad bits: 1 -EINVAL, 2 -EOPNOTSUPP.  A rank of a group that sends
	 * nothing has nothing wrong; the thread form must send something. */
	if (active || g == KINET_DEVI_GROUP_THREAD) {
		if (kinet_devi_eth_cs_flags(txq, flags, &cs) || !active)
			bad |= 1u;
		if (timed && !txq->timed)
			bad |= 2u;
	}
	kinet_devi_eth_tx_count(g, active, bad, &pos, &n, &bad);
	if (bad || n == 0) {
		if (ticket)
			*ticket = 0;
		return (bad & 2u) ? -EOPNOTSUPP : bad ? -EINVAL : 0;
	}
	uint32_t per = timed ? 2u : 1u;
	uint32_t round = kinet_dev_sq_depth(qp) / 2 / per;
	if (round == 0)
		round = 1;
	uint64_t tk = 0;
	int st = 0;
	for (uint32_t done = 0; done < n;) {
		uint32_t r = n - done < round ? n - done : round, bbs = r * per;
		uint64_t start = 0;
		if (rank == 0) {
			st = kinet_dev_sq_reserve(qp, bbs, &start);
			/* An idle queue: the caller most likely waits next
			 * (impl/post.cuh); told in the top bit of start. */
			if (!st && kinet_devi_scoped_load_relaxed_u64(kinet_devi_qp_scope(qp),
								      &qp->sq_done) == start)
				start |= 1ull << 63;
		}
		kinet_devi_group_bcast(g, &st, &start);
		if (st)
			break;
		int lsig = bbs > 1 || (int)(start >> 63);
		start &= ~(1ull << 63);
		uint64_t q[8] = {0, 0, 0, 0, 0, 0, 0, 0};
		int mine = 0;
		if (active && pos >= done && pos < done + r) {
			uint32_t k = (pos - done) * per;
			union kinet_dev_wqe w;
			if (timed) {
				kinet_devi_eth_build_wait(&w, txq, start + k,
							  kinet_devi_post_sig(qp, start + k, k, bbs, lsig),
							  time_ns);
				kinet_dev_wqe_store(qp, start + k, &w);
				k++;
			}
			uint8_t sig = (flags & KINET_DEVI_ETH_NOTIFY)
					      ? KINET_DEV_WQE_SIGNALED
					      : kinet_devi_post_sig(qp, start + k, k, bbs, lsig);
			kinet_devi_eth_build_send(&w, txq, start + k, sig, cs, (uint64_t)(uintptr_t)addr,
						  lkey, len);
			kinet_dev_wqe_store(qp, start + k, &w);
			if (k == bbs - 1) {
				kinet_dev_wqe_words(&w, q);
				mine = 1;
			}
		}
		/* The last WQE's words to rank 0; a barrier: every member's WQE
		 * stores happen before rank 0's release fence (cumulative). */
		uint32_t writer = kinet_devi_eth_tx_writer(g, active, pos, done + r - 1);
		kinet_devi_eth_tx_last(g, mine, writer, q);
		kinet_devi_group_sync(g);
		if (rank == 0) {
			st = kinet_dev_sq_commit(qp, start, bbs, q);
			if (!st) {
				/* The last WQE asked for a CQE (multi-WQE round,
				 * NOTIFY, idle queue): it covers the round; else
				 * whatever moderation signalled. */
				uint8_t fm_ce_se = (uint8_t)(q[1] >> 24);
				uint64_t sig_end =
					(fm_ce_se & KINET_WQE_CTRL_CQ_UPDATE)
						? start + bbs
						: kinet_devi_post_sig_end(qp, start, bbs, 0, bbs, 0);
				kinet_devi_sq_note_signaled(qp, sig_end);
			}
		}
		tk = start + bbs;
		kinet_devi_group_bcast(g, &st, &tk);
		if (st)
			break;
		done += r;
	}
	if (ticket)
		*ticket = st ? 0 : tk;
	return st;
}

/* poll / wait of a ticket: under completion moderation a ticket no CQE
 * covers gets a signalled NOP after it first (impl/post.cuh). */
KINET_DEV_FN int kinet_devi_eth_txq_poll(struct kinet_dev_eth_txq *txq, uint64_t ticket)
{
	struct kinet_dev_qp *qp = txq->qp;
	int st = kinet_devi_sq_cover(qp, &ticket);
	if (st == -ETIMEDOUT)
		return st;
	return kinet_dev_sq_test(qp, ticket);
}

KINET_DEV_FN int kinet_devi_eth_txq_wait(struct kinet_dev_eth_txq *txq, uint64_t ticket)
{
	struct kinet_dev_qp *qp = txq->qp;
	int st = kinet_devi_sq_cover(qp, &ticket);
	if (st == -ETIMEDOUT)
		return st;
	return kinet_dev_sq_wait(qp, ticket);
}

#endif /* KINET_DEVICE_IMPL_ETH_CUH */
