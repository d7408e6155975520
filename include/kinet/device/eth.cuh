/*
 * kinet device API: Ethernet queues -- receive packets from a receive
 * queue, send packets (and timed packets) on a send queue, from CUDA
 * kernels.  GPUNetIO's Ethernet device API (doca_gpu_dev_eth_*), in C
 * style.  Descriptors come from kinet_eth_rxq_export() /
 * kinet_eth_txq_export() (kinet/eth.h); their layout is
 * kinet/device/eth_types.h; the model is docs/ETHERNET.md.
 *
 * Each queue is a raw-packet QP (rxq->qp, txq->qp), driven with the same
 * steps as an RC QP: receive CQEs on its receive CQ; send WQEs through
 * the send queue's reserve / commit / doorbell / progress machinery
 * (sq.cuh), so the queue's sharing mode (EXCLUSIVE, CTA, GPU) and
 * doorbell mode work as for RC QPs.
 *
 * Forms: recv, send and send_at come as kinet_dev_eth_<verb> (one thread),
 * _warp (all 32 lanes of a warp) and _block (all threads of the block);
 * under KINET_HOST_EMU a group is one thread.  Statuses: 0 or a negative
 * errno (-EAGAIN, -EBUSY, -EINVAL, -EIO, -EOPNOTSUPP, -ETIMEDOUT); the
 * first error is also recorded in the context's error record
 * (kinet_ctx_last_error).  Reference: docs/DEVICE_API.md, "Ethernet".
 */
#ifndef KINET_DEVICE_ETH_CUH
#define KINET_DEVICE_ETH_CUH

#include "kinet/device/eth_types.h"
#include "kinet/device/impl/eth.cuh"
#include "kinet/device/impl/forms.cuh"
#include "kinet/device/platform.cuh"
#include "kinet/device/sq.cuh"
#include "kinet/device/wqe.cuh"

/* kinet_dev_eth_txq_send flags. */
#define KINET_DEV_ETH_L3_CSUM KINET_DEVI_ETH_L3_CSUM /* the NIC fills the IPv4 header checksum */
#define KINET_DEV_ETH_L4_CSUM KINET_DEVI_ETH_L4_CSUM /* the NIC fills the UDP / TCP checksum */
#define KINET_DEV_ETH_NOTIFY KINET_DEVI_ETH_NOTIFY   /* a CQE for this send (else moderation) */

/* ---- time ---------------------------------------------------------------
 * Nanoseconds of CLOCK_REALTIME, the clock of receive timestamps and of
 * timed sends.  On the GPU, %globaltimer: the driver sets it from the
 * host's system clock when it attaches to the device (libcu++ documents
 * it as its std::chrono::system_clock), and it then runs on its own, so it
 * is Unix-epoch nanoseconds but differs from the host's CLOCK_REALTIME by
 * whatever the host clock was stepped or slewed since (NTP), and it
 * ticks at the GPU's timer resolution (32 ns to 1 us).  Where that matters
 * (a send_at a few microseconds ahead), measure the offset on the host --
 * a kernel's kinet_dev_eth_now_ns() against clock_gettime(CLOCK_REALTIME)
 * around the launch -- and pass it to the kernel to add.  Under host
 * emulation: CLOCK_REALTIME itself (timespec_get(TIME_UTC)). */
KINET_DEV_FN uint64_t kinet_dev_eth_now_ns(void)
{
	return kinet_devi_eth_now_ns();
}

/* ---- receive ------------------------------------------------------------ */

/* Address of packet idx (a running index from recv; the slot is
 * idx & (npkts - 1)): pkt_buf + slot * max_pkt_size. */
KINET_DEV_FN void *kinet_dev_eth_pkt_addr(const struct kinet_dev_eth_rxq *rxq, uint64_t idx)
{
	return rxq->pkt_buf + (size_t)(idx & (rxq->npkts - 1)) * rxq->max_pkt_size;
}

/* The forms macros take parameter lists, which clang-format would space as products. */
/* clang-format off */

/* kinet_dev_eth_rxq_recv: receives up to max_pkts packets (0, or more than
 * npkts: up to npkts), returning once max_pkts have arrived or timeout_ns
 * has passed since the call (0: at once, with what had already arrived).
 * Outputs (any may be NULL): *first_idx the running index of the first
 * packet (packet k of the call is first_idx + k: kinet_dev_eth_pkt_addr),
 * *count how many (may be 0), pkts[0..count) their attributes (bytes,
 * timestamp_ns, l3/l4 type, checksum-ok flags).
 *
 * Packets stay valid until the next receive call on the queue: that call
 * first hands their slots back to the NIC (moves the receive doorbell
 * record on), so every thread reading them must be done before it (the
 * group forms synchronise their group on entry; other readers need their
 * own barrier).  Packets the NIC finds no slot for are dropped and counted
 * by the port (kinet_eth_port_stats: rx_drop_queue_full).
 *
 * One receiving group at a time per queue: a call while another thread or
 * group is inside one returns -EBUSY and touches nothing (rxq->lock).
 *
 * Errors: -EIO for an error CQE (or a CQE naming another slot than the
 * queue expects): sticky, every later call returns it at once; *count and
 * pkts[] still describe the packets before it in this call.  -EBUSY as
 * above.  The data of returned packets may be read on return (the CQE
 * was read, then a system-scope acquire fence).
 *
 * Group forms: every thread calls with the same arguments and gets the
 * same results; rank r reads the CQE of packet first + got + r (one round
 * trip for a batch) and fills pkts[] for it; rank 0 rings. */
/* What the macro below defines (written out for grep and readers):
 * int kinet_dev_eth_rxq_recv(struct kinet_dev_eth_rxq *rxq, uint32_t max_pkts, uint64_t timeout_ns,
 *                            uint64_t *first_idx, uint32_t *count, struct kinet_dev_eth_pkt *pkts);
 * and kinet_dev_eth_rxq_recv_warp, kinet_dev_eth_rxq_recv_block with the same parameters. */
KINET_DEVI_FORMS(eth_rxq_recv, kinet_devi_eth_rxq_recv_g,
		 (struct kinet_dev_eth_rxq *rxq, uint32_t max_pkts, uint64_t timeout_ns, uint64_t *first_idx,
		  uint32_t *count, struct kinet_dev_eth_pkt *pkts),
		 (rxq, max_pkts, timeout_ns, first_idx, count, pkts))

/* ---- send --------------------------------------------------------------- */

/* kinet_dev_eth_txq_send: sends the frame [addr, addr + len) (headers
 * included; lkey of its registration, e.g. rxq->pkt_lkey for a received
 * slot) as one Ethernet send WQE.  flags: KINET_DEV_ETH_L3_CSUM /
 * _L4_CSUM (checksums the NIC fills; more than the queue was created with
 * -- txq->cs_flags -- is -EINVAL) and KINET_DEV_ETH_NOTIFY (a CQE for this
 * send; otherwise completion moderation decides, as in the RC high level:
 * poll / wait cover an unsignalled ticket).  *ticket: what poll and wait
 * take; the frame's memory may be reused once the ticket is done.
 * -EINVAL also for len 0 (thread form) and unknown flags; -EIO once the
 * queue saw an error CQE; -ETIMEDOUT when no slot freed within the QP's
 * timeout.
 *
 * Group forms: every thread sends its own frame (its own addr, lkey, len,
 * flags; len 0: nothing), in lane order in a warp and thread order in a
 * block, with one doorbell for the group (per round of half the queue);
 * every thread gets the same status and the ticket of the group's last
 * WQE.  Any member's bad flags fail the whole group's call (nothing is
 * sent). */
/* What the macro below defines (written out for grep and readers):
 * int kinet_dev_eth_txq_send(struct kinet_dev_eth_txq *txq, const void *addr, uint32_t lkey,
 *                            uint32_t len, uint32_t flags, uint64_t *ticket);
 * and kinet_dev_eth_txq_send_warp, kinet_dev_eth_txq_send_block with the same parameters. */
KINET_DEVI_FORMS(eth_txq_send, kinet_devi_eth_send_g,
		 (struct kinet_dev_eth_txq *txq, const void *addr, uint32_t lkey, uint32_t len, uint32_t flags,
		  uint64_t *ticket),
		 (txq, 0, 0, addr, lkey, len, flags, ticket))

/* kinet_dev_eth_txq_send_at: a timed send, the frame leaving once the
 * NIC's real-time clock reaches time_ns (CLOCK_REALTIME nanoseconds,
 * kinet_dev_eth_now_ns): a WAIT-on-time WQE then the send WQE.  The wait
 * holds the whole send queue (later sends leave after it).  The send asks
 * for a CQE (a two-WQE post).  -EOPNOTSUPP when the queue was not created
 * timed (txq->timed); the rest as kinet_dev_eth_txq_send, group forms
 * included (every thread its own time). */
/* What the macro below defines (written out for grep and readers):
 * int kinet_dev_eth_txq_send_at(struct kinet_dev_eth_txq *txq, uint64_t time_ns, const void *addr,
 *                               uint32_t lkey, uint32_t len, uint32_t flags, uint64_t *ticket);
 * and kinet_dev_eth_txq_send_at_warp, kinet_dev_eth_txq_send_at_block with the same parameters. */
KINET_DEVI_FORMS(eth_txq_send_at, kinet_devi_eth_send_g,
		 (struct kinet_dev_eth_txq *txq, uint64_t time_ns, const void *addr, uint32_t lkey, uint32_t len,
		  uint32_t flags, uint64_t *ticket),
		 (txq, 1, time_ns, addr, lkey, len, flags, ticket))

/* clang-format on */

/* 0 once the send of ticket (and everything before it) is complete, -EAGAIN
 * not yet, -EIO when it or an earlier WQE failed (sticky; also recorded in
 * the context).  Never waits; makes progress on the send CQ.  A ticket no
 * CQE will cover (moderation) gets a signalled NOP after it first. */
KINET_DEV_FN int kinet_dev_eth_txq_poll(struct kinet_dev_eth_txq *txq, uint64_t ticket)
{
	return kinet_devi_eth_txq_poll(txq, ticket);
}

/* Waits for ticket, bounded by the QP's timeout: 0, -EIO, -ETIMEDOUT
 * (recorded in the context). */
KINET_DEV_FN int kinet_dev_eth_txq_wait(struct kinet_dev_eth_txq *txq, uint64_t ticket)
{
	return kinet_devi_eth_txq_wait(txq, ticket);
}

/* ---- send, low level (the caller orders; sq.cuh's rules) ---------------
 * reserve n basic blocks, prepare each (a send or a wait-on-time takes
 * one), submit them in order.  The ticket of a WQE at idx is idx + 1.
 * Nothing asks for a CQE unless its flags say KINET_DEV_ETH_NOTIFY: ask
 * for one on the last WQE you will wait for (poll and wait also cover an
 * unsignalled ticket with a NOP when the queue moderates completions). */

/* kinet_dev_sq_reserve: 0, -EINVAL (n 0 or past the depth), -EIO,
 * -ETIMEDOUT. */
KINET_DEV_FN int kinet_dev_eth_txq_reserve(struct kinet_dev_eth_txq *txq, uint32_t n, uint64_t *idx)
{
	return kinet_dev_sq_reserve(txq->qp, n, idx);
}

/* Writes an Ethernet send WQE at slot idx.  -EINVAL (nothing written) for
 * len 0, unknown flags or checksums the queue does not offer. */
KINET_DEV_FN int kinet_dev_eth_wqe_prep_send(struct kinet_dev_eth_txq *txq, uint64_t idx, uint32_t flags,
					     const void *addr, uint32_t lkey, uint32_t len)
{
	uint8_t cs = 0;
	if (len == 0 || kinet_devi_eth_cs_flags(txq, flags, &cs))
		return -EINVAL;
	union kinet_dev_wqe w;
	kinet_devi_eth_build_send(&w, txq, idx, (flags & KINET_DEV_ETH_NOTIFY) ? KINET_DEV_WQE_SIGNALED : 0,
				  cs, (uint64_t)(uintptr_t)addr, lkey, len);
	kinet_dev_wqe_store(txq->qp, idx, &w);
	return 0;
}

/* Writes a WAIT-on-time WQE at slot idx: the queue goes on once the NIC's
 * real-time clock reaches time_ns (CLOCK_REALTIME ns).  -EOPNOTSUPP when
 * the queue is not timed. */
KINET_DEV_FN int kinet_dev_eth_wqe_prep_wait_time(struct kinet_dev_eth_txq *txq, uint64_t idx,
						  uint64_t time_ns)
{
	if (!txq->timed)
		return -EOPNOTSUPP;
	union kinet_dev_wqe w;
	kinet_devi_eth_build_wait(&w, txq, idx, 0, time_ns);
	kinet_dev_wqe_store(txq->qp, idx, &w);
	return 0;
}

/* Commits slots [idx, idx + n), written, in order (kinet_dev_sq_commit: in
 * GPU and BlueFlame doorbell modes the last WQE is read back from the
 * ring).  0 or -ETIMEDOUT. */
KINET_DEV_FN int kinet_dev_eth_txq_submit(struct kinet_dev_eth_txq *txq, uint64_t idx, uint32_t n)
{
	return kinet_dev_sq_commit(txq->qp, idx, n, NULL);
}

#endif /* KINET_DEVICE_ETH_CUH */
