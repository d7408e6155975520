/*
 * kinet wire format, Ethernet half: the ConnectX (mlx5) raw-packet send WQE
 * (control + Ethernet + data segments), the WAIT-on-time WQE of timed sends,
 * receive WQEs of cyclic and multi-packet (striding) receive queues, and the
 * fields of a receive CQE a packet queue reads.  Byte for byte as rdma-core's
 * mlx5dv.h where it spells them out (tests/host/core/test_wire_eth_mlx5dv.c
 * checks), as DPDK's mlx5 PMD, the Linux mlx5e driver and GPUNetIO's device
 * headers use them where it does not (said at each such place).  All
 * multi-byte fields are big-endian in memory.  Usable from C11 and CUDA
 * device code; included by kinet/wire.h.  Model: docs/ETHERNET.md.
 */
#ifndef KINET_WIRE_ETH_H
#define KINET_WIRE_ETH_H

#include <stdint.h>

#include "kinet/wire.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- send ------------------------------------------------------------ */

/* A raw Ethernet send is KINET_WQE_OP_SEND (0x0a) on a raw-packet send
 * queue: ctrl + Ethernet segment + data segments, the frame (headers
 * included) taken from the data segments.  No header is inlined (what
 * GPUNetIO does): the queue is created with minimal inline mode "none".
 * One data segment: ds 3; two: ds 4; either fits one 64-byte basic block. */
#define KINET_ETH_SEND_DS_1 3u
#define KINET_ETH_SEND_DS_2 4u

/* Enhanced multi-packet send (DPDK's and GPUNetIO's MLX5_OPCODE_ENHANCED_MPSW;
 * not in mlx5dv.h).  Named for completeness; kinet has no encoder for it. */
#define KINET_WQE_OP_ENHANCED_MPSW 0x29u

/* Ethernet segment cs_flags (mlx5dv.h MLX5_ETH_WQE_L3_CSUM / L4_CSUM): the
 * NIC computes the IPv4 header checksum / the TCP or UDP checksum. */
#define KINET_ETH_WQE_L3_CSUM 0x40u
#define KINET_ETH_WQE_L4_CSUM 0x80u

/* Ethernet segment, 16 bytes: the first 16 bytes of mlx5dv.h's struct
 * mlx5_wqe_eth_seg (whose inline_hdr[16] is the continuation of an inlined
 * header, present only when a header is inlined; kinet never inlines).
 * Field names as GPUNetIO's doca_gpu_dev_eth_txq_wqe_eth_seg (mlx5dv.h calls
 * swp_offs, swp_flags and metadata rsvd0, rsvd1, rsvd2). */
struct kinet_wqe_eth_seg {
	uint32_t swp_offs; /* software parser offsets: 0 */
	uint8_t cs_flags;  /* KINET_ETH_WQE_L3_CSUM | KINET_ETH_WQE_L4_CSUM */
	uint8_t swp_flags; /* 0 */
	uint16_t mss;	   /* TSO only: 0 */
	uint32_t metadata; /* flow metadata: 0 */
	uint16_t inline_hdr_sz;
	uint8_t inline_hdr_start[2];
};

/* A WAIT WQE of op_mod WAIT_TIME (opcode KINET_WQE_OP_WAIT, 0x0f) holds the
 * send queue until the NIC's real-time clock reaches a time; the send after
 * it then leaves ("wait-on-time", GPUNetIO's NATIVE wait-on-time mode).
 * mlx5dv.h has neither the op_mod values nor the segment: they are spelled
 * here as DPDK's mlx5 PMD (drivers/common/mlx5: MLX5_OPC_MOD_WAIT_*,
 * struct mlx5_wqe_wseg, mlx5_tx_wseg_init) and GPUNetIO's device header
 * (doca_gpu_dev_eth_txq_wqe_wait_seg, wqe_prepare_wait_time) write them;
 * the PRM itself is not public.  The ctrl segment's op_mod (bits 31:24). */
#define KINET_WQE_OPMOD_WAIT_CQ_PI 0x0u /* cross-channel: struct kinet_wqe_wait_seg */
#define KINET_WQE_OPMOD_WAIT_DATA 0x1u	/* wait on a memory word (not used by kinet) */
#define KINET_WQE_OPMOD_WAIT_TIME 0x2u	/* wait on the real-time clock */
/* ctrl + 32-byte wait-on-time segment. */
#define KINET_ETH_WAIT_TIME_DS 3u

/* Wait conditions of the segment's operation word (DPDK's
 * MLX5_WAIT_COND_*; INVERT negates).  For wait-on-time DPDK writes
 * CYCLIC_SMALLER; GPUNetIO writes a per-queue constant its headers do not
 * show, taken to be the same. */
#define KINET_WAIT_COND_ALWAYS_TRUE 0x0u
#define KINET_WAIT_COND_EQUAL 0x1u
#define KINET_WAIT_COND_BIGGER 0x2u
#define KINET_WAIT_COND_SMALLER 0x3u
#define KINET_WAIT_COND_CYCLIC_BIGGER 0x4u
#define KINET_WAIT_COND_CYCLIC_SMALLER 0x5u
#define KINET_WAIT_COND_INVERT 0x10u

/* Wait-on-time segment, 32 bytes (two ds units) after the ctrl segment. */
struct kinet_wqe_wait_time_seg {
	uint32_t operation; /* KINET_WAIT_COND_* */
	uint32_t lkey;	    /* 0: no memory word */
	uint32_t va_high;   /* 0 */
	uint32_t va_low;    /* 0 */
	uint64_t value;	    /* the time, real-time format (sec << 32 | ns) */
	uint64_t mask;	    /* bits of value compared: all (GPUNetIO) */
};

/* A whole Ethernet send WQE (one basic block). */
struct kinet_eth_send_wqe {
	struct kinet_wqe_ctrl_seg ctrl;
	struct kinet_wqe_eth_seg eth;
	struct kinet_wqe_data_seg data[2]; /* data[1] only with ds 4 */
};

/* A whole WAIT-on-time WQE (one basic block; the last 16 bytes unused). */
struct kinet_eth_wait_wqe {
	struct kinet_wqe_ctrl_seg ctrl;
	struct kinet_wqe_wait_time_seg wait;
	uint8_t rsvd[16];
};

/* ---- receive --------------------------------------------------------- */

/* A cyclic receive queue's WQE is one struct kinet_wqe_data_seg (16-byte
 * stride): one packet buffer of max packet size each (kinet_wqe_set_data).
 * A multi-packet (striding) receive queue's WQE is mlx5dv.h's
 * struct mlx5_mprq_wqe: a next segment (unused outside SRQs: zero) and
 * one data segment covering 2^log_strides strides of 2^log_stride_size
 * bytes; each packet takes one or more consecutive strides. */
struct kinet_wqe_mprq {
	struct kinet_wqe_srq_next_seg next;
	struct kinet_wqe_data_seg data;
};

/* Receive CQE fields (struct kinet_cqe64), as mlx5dv.h names them.
 * opcode: KINET_CQE_RESP_SEND for a received packet.
 * hds_ip_ext: the checksum-ok flags below (mlx5dv.h MLX5_CQE_L2_OK ...). */
#define KINET_CQE_L2_OK 0x01u
#define KINET_CQE_L3_OK 0x02u /* IPv4 header checksum verified */
#define KINET_CQE_L4_OK 0x04u /* TCP/UDP checksum verified */
/* l4_hdr_type_etc: L3 header type in bits 3:2 (mlx5dv.h
 * MLX5_CQE_L3_HDR_TYPE_*), L4 header type in bits 6:4 (the Linux mlx5e
 * driver's CQE_L4_HDR_TYPE_*, DPDK's MLX5_CQE_L4_HDR_TYPE_*; mlx5dv.h
 * has no L4 names). */
#define KINET_CQE_L3_HDR_SHIFT 2
#define KINET_CQE_L3_HDR_MASK 0x3u
#define KINET_CQE_L3_HDR_NONE 0x0u
#define KINET_CQE_L3_HDR_IPV6 0x1u
#define KINET_CQE_L3_HDR_IPV4 0x2u
#define KINET_CQE_L4_HDR_SHIFT 4
#define KINET_CQE_L4_HDR_MASK 0x7u
#define KINET_CQE_L4_HDR_NONE 0x0u
#define KINET_CQE_L4_HDR_TCP_NO_ACK 0x1u
#define KINET_CQE_L4_HDR_UDP 0x2u
#define KINET_CQE_L4_HDR_TCP_ACK_NO_DATA 0x3u
#define KINET_CQE_L4_HDR_TCP_ACK_AND_DATA 0x4u
/* byte_cnt of a striding queue's CQE: bits 15:0 the packet's bytes, bits
 * 30:16 the strides it consumed, bit 31 a filler CQE (strides skipped at
 * the end of a WQE, no packet).  The Linux driver reads 15 bits of strides
 * (MPWRQ_CQE_CONSUMED_STRIDES_MASK), DPDK 14 (MLX5_MPRQ_STRIDE_NUM_MASK);
 * kinet reads 15 and never writes a count past 14 bits. */
#define KINET_CQE_MPRQ_FILLER 0x80000000u
#define KINET_CQE_MPRQ_STRIDES_SHIFT 16
#define KINET_CQE_MPRQ_STRIDES_MASK 0x7fffu
#define KINET_CQE_MPRQ_BYTES_MASK 0xffffu
/* Striding queues: wqe_id (big-endian, offset 2) is the receive WQE the
 * packet landed in, wqe_counter (offset 60) the index of its first stride
 * in that WQE.  Cyclic queues: wqe_counter is the receive WQE's index. */

/* What a receive CQE says about one packet, decoded. */
struct kinet_cqe_eth_rx {
	uint32_t byte_cnt;    /* raw word: bytes (cyclic), or the striding layout above */
	uint16_t wqe_counter; /* receive WQE (cyclic) or first stride (striding) */
	uint16_t wqe_id;      /* striding: receive WQE */
	uint64_t timestamp;   /* real-time format: sec << 32 | ns */
	uint32_t qpn;	      /* sop_drop_qpn bits 23:0: the receive queue */
	uint8_t l3_hdr_type;  /* KINET_CQE_L3_HDR_* */
	uint8_t l4_hdr_type;  /* KINET_CQE_L4_HDR_* */
	uint8_t csum_ok;      /* KINET_CQE_L2_OK | L3_OK | L4_OK */
	uint8_t rsvd;
};

KINET_WIRE_STATIC_ASSERT(sizeof(struct kinet_wqe_eth_seg) == 16, "eth seg");
KINET_WIRE_STATIC_ASSERT(sizeof(struct kinet_wqe_wait_time_seg) == 32, "wait time seg");
KINET_WIRE_STATIC_ASSERT(sizeof(struct kinet_eth_send_wqe) == 64, "eth send wqe");
KINET_WIRE_STATIC_ASSERT(sizeof(struct kinet_eth_wait_wqe) == 64, "eth wait wqe");
KINET_WIRE_STATIC_ASSERT(sizeof(struct kinet_wqe_mprq) == 32, "mprq wqe");

/* ---- real-time clock format ------------------------------------------ */

#define KINET_ETH_NS_PER_S 1000000000ull

/* Nanoseconds since the epoch to the NIC's real-time format (seconds in
 * bits 63:32, nanoseconds in 31:0): what receive CQEs carry and what a
 * wait-on-time segment compares with. */
KINET_WIRE_FN uint64_t kinet_eth_rt_from_ns(uint64_t ns)
{
	return ((ns / KINET_ETH_NS_PER_S) << 32) | (ns % KINET_ETH_NS_PER_S);
}

KINET_WIRE_FN uint64_t kinet_eth_rt_to_ns(uint64_t rt)
{
	return (rt >> 32) * KINET_ETH_NS_PER_S + (rt & 0xffffffffu);
}

/* ---- send encoders --------------------------------------------------- */

KINET_WIRE_FN void kinet_wqe_set_eth(struct kinet_wqe_eth_seg *seg, uint8_t cs_flags)
{
	seg->swp_offs = 0;
	seg->cs_flags = cs_flags;
	seg->swp_flags = 0;
	seg->mss = 0;
	seg->metadata = 0;
	seg->inline_hdr_sz = 0;
	seg->inline_hdr_start[0] = 0;
	seg->inline_hdr_start[1] = 0;
}

/* A send of one frame from one buffer (ds 3).  sqn: the send queue's
 * number; fm_ce_se: KINET_WQE_CTRL_CQ_UPDATE for a CQE on success (else
 * the NIC reports errors only); cs_flags: KINET_ETH_WQE_L3_CSUM/L4_CSUM. */
KINET_WIRE_FN void kinet_eth_wqe_send(struct kinet_eth_send_wqe *wqe, uint16_t wqe_index, uint32_t sqn,
				      uint8_t fm_ce_se, uint8_t cs_flags, uint64_t addr, uint32_t length,
				      uint32_t lkey)
{
	kinet_wqe_set_ctrl(&wqe->ctrl, KINET_WQE_OP_SEND, wqe_index, sqn, KINET_ETH_SEND_DS_1, fm_ce_se, 0);
	kinet_wqe_set_eth(&wqe->eth, cs_flags);
	kinet_wqe_set_data(&wqe->data[0], addr, length, lkey);
}

/* The same with the frame in two buffers (headers and payload, ds 4). */
KINET_WIRE_FN void kinet_eth_wqe_send2(struct kinet_eth_send_wqe *wqe, uint16_t wqe_index, uint32_t sqn,
				       uint8_t fm_ce_se, uint8_t cs_flags, uint64_t addr0, uint32_t length0,
				       uint32_t lkey0, uint64_t addr1, uint32_t length1, uint32_t lkey1)
{
	kinet_wqe_set_ctrl(&wqe->ctrl, KINET_WQE_OP_SEND, wqe_index, sqn, KINET_ETH_SEND_DS_2, fm_ce_se, 0);
	kinet_wqe_set_eth(&wqe->eth, cs_flags);
	kinet_wqe_set_data(&wqe->data[0], addr0, length0, lkey0);
	kinet_wqe_set_data(&wqe->data[1], addr1, length1, lkey1);
}

/* rt_value: real-time format (kinet_eth_rt_from_ns); mask: bits compared. */
KINET_WIRE_FN void kinet_wqe_set_wait_time(struct kinet_wqe_wait_time_seg *seg, uint64_t rt_value,
					   uint64_t mask)
{
	seg->operation = kinet_be32(KINET_WAIT_COND_CYCLIC_SMALLER);
	seg->lkey = 0;
	seg->va_high = 0;
	seg->va_low = 0;
	seg->value = kinet_be64(rt_value);
	seg->mask = kinet_be64(mask);
}

/* A WAIT-on-time WQE: the send queue goes on once the NIC clock reaches
 * rt_value (real-time format), all 64 bits compared as GPUNetIO does. */
KINET_WIRE_FN void kinet_eth_wqe_wait_time(struct kinet_eth_wait_wqe *wqe, uint16_t wqe_index, uint32_t sqn,
					   uint8_t fm_ce_se, uint64_t rt_value)
{
	kinet_wqe_set_ctrl(&wqe->ctrl, KINET_WQE_OP_WAIT, wqe_index, sqn, KINET_ETH_WAIT_TIME_DS, fm_ce_se,
			   0);
	kinet_wqe_set_opmod(&wqe->ctrl, KINET_WQE_OPMOD_WAIT_TIME);
	kinet_wqe_set_wait_time(&wqe->wait, rt_value, ~0ull);
}

/* The time a wait-on-time segment waits for (real-time format). */
KINET_WIRE_FN uint64_t kinet_wqe_wait_time_value(const struct kinet_wqe_wait_time_seg *seg)
{
	return kinet_be64(seg->value);
}

KINET_WIRE_FN uint64_t kinet_wqe_wait_time_mask(const struct kinet_wqe_wait_time_seg *seg)
{
	return kinet_be64(seg->mask);
}

KINET_WIRE_FN uint8_t kinet_wqe_eth_cs_flags(const struct kinet_wqe_eth_seg *seg)
{
	return seg->cs_flags;
}

/* ---- receive encoders and decoders ----------------------------------- */

/* A striding receive WQE: one buffer of strides * stride_size bytes. */
KINET_WIRE_FN void kinet_wqe_set_mprq(struct kinet_wqe_mprq *wqe, uint64_t addr, uint32_t length,
				      uint32_t lkey)
{
	uint8_t *n = (uint8_t *)&wqe->next;
	for (unsigned i = 0; i < sizeof(wqe->next); i++)
		n[i] = 0;
	kinet_wqe_set_data(&wqe->data, addr, length, lkey);
}

/* A striding queue's byte_cnt word. */
KINET_WIRE_FN uint32_t kinet_cqe_mprq_byte_cnt(uint32_t bytes, uint32_t strides, int filler)
{
	return (filler ? KINET_CQE_MPRQ_FILLER : 0u) |
	       ((strides & KINET_CQE_MPRQ_STRIDES_MASK) << KINET_CQE_MPRQ_STRIDES_SHIFT) |
	       (bytes & KINET_CQE_MPRQ_BYTES_MASK);
}

KINET_WIRE_FN uint32_t kinet_cqe_mprq_bytes(uint32_t byte_cnt)
{
	return byte_cnt & KINET_CQE_MPRQ_BYTES_MASK;
}

KINET_WIRE_FN uint32_t kinet_cqe_mprq_strides(uint32_t byte_cnt)
{
	return (byte_cnt >> KINET_CQE_MPRQ_STRIDES_SHIFT) & KINET_CQE_MPRQ_STRIDES_MASK;
}

KINET_WIRE_FN int kinet_cqe_mprq_filler(uint32_t byte_cnt)
{
	return (byte_cnt & KINET_CQE_MPRQ_FILLER) != 0;
}

/* The packet's index in a striding queue's buffer, counted in strides:
 * receive WQE (wqe_id modulo the ring of 2^n WQEs) times strides per WQE,
 * plus its first stride (what GPUNetIO's receive computes). */
KINET_WIRE_FN uint64_t kinet_mprq_stride_index(uint16_t wqe_id, uint32_t wqe_mask, uint32_t strides_per_wqe,
					       uint16_t first_stride)
{
	return (uint64_t)(wqe_id & wqe_mask) * strides_per_wqe + first_stride;
}

/* Writes every field of a receive CQE but op_own, zeroing the rest: the
 * writer publishes op_own (opcode KINET_CQE_RESP_SEND, owner bit) last,
 * with the ordering its side needs. */
KINET_WIRE_FN void kinet_cqe_eth_rx_encode(struct kinet_cqe64 *cqe, const struct kinet_cqe_eth_rx *rx)
{
	uint8_t *b = (uint8_t *)cqe;
	for (unsigned i = 0; i < 63; i++)
		b[i] = 0;
	cqe->wqe_id = kinet_be16(rx->wqe_id);
	cqe->hds_ip_ext = (uint8_t)(rx->csum_ok & (KINET_CQE_L2_OK | KINET_CQE_L3_OK | KINET_CQE_L4_OK));
	cqe->l4_hdr_type_etc =
		(uint8_t)(((rx->l4_hdr_type & KINET_CQE_L4_HDR_MASK) << KINET_CQE_L4_HDR_SHIFT) |
			  ((rx->l3_hdr_type & KINET_CQE_L3_HDR_MASK) << KINET_CQE_L3_HDR_SHIFT));
	cqe->byte_cnt = kinet_be32(rx->byte_cnt);
	cqe->timestamp = kinet_be64(rx->timestamp);
	cqe->sop_drop_qpn = kinet_be32(rx->qpn & 0xffffffu);
	cqe->wqe_counter = kinet_be16(rx->wqe_counter);
}

/* op_own of a receive CQE: RESP_SEND, owner bit as the pass requires. */
KINET_WIRE_FN uint8_t kinet_cqe_eth_rx_op_own(uint8_t owner)
{
	return (uint8_t)(KINET_CQE_RESP_SEND << 4 | (owner & 1));
}

KINET_WIRE_FN void kinet_cqe_eth_rx_decode(const struct kinet_cqe64 *cqe, struct kinet_cqe_eth_rx *rx)
{
	rx->byte_cnt = kinet_be32(cqe->byte_cnt);
	rx->wqe_counter = kinet_be16(cqe->wqe_counter);
	rx->wqe_id = kinet_be16(cqe->wqe_id);
	rx->timestamp = kinet_be64(cqe->timestamp);
	rx->qpn = kinet_be32(cqe->sop_drop_qpn) & 0xffffffu;
	rx->l3_hdr_type = (uint8_t)((cqe->l4_hdr_type_etc >> KINET_CQE_L3_HDR_SHIFT) & KINET_CQE_L3_HDR_MASK);
	rx->l4_hdr_type = (uint8_t)((cqe->l4_hdr_type_etc >> KINET_CQE_L4_HDR_SHIFT) & KINET_CQE_L4_HDR_MASK);
	rx->csum_ok = (uint8_t)(cqe->hds_ip_ext & (KINET_CQE_L2_OK | KINET_CQE_L3_OK | KINET_CQE_L4_OK));
	rx->rsvd = 0;
}

/* Single fields, for pollers that want one. */
KINET_WIRE_FN uint32_t kinet_cqe_byte_cnt(const struct kinet_cqe64 *cqe)
{
	return kinet_be32(cqe->byte_cnt);
}

KINET_WIRE_FN uint64_t kinet_cqe_timestamp(const struct kinet_cqe64 *cqe)
{
	return kinet_be64(cqe->timestamp);
}

KINET_WIRE_FN uint16_t kinet_cqe_wqe_counter(const struct kinet_cqe64 *cqe)
{
	return kinet_be16(cqe->wqe_counter);
}

KINET_WIRE_FN uint16_t kinet_cqe_wqe_id(const struct kinet_cqe64 *cqe)
{
	return kinet_be16(cqe->wqe_id);
}

/* 1 when the NIC verified the checksums flags asks for (KINET_CQE_*_OK). */
KINET_WIRE_FN int kinet_cqe_csum_ok(const struct kinet_cqe64 *cqe, uint8_t flags)
{
	return (cqe->hds_ip_ext & flags) == flags;
}

#ifdef __cplusplus
}
#endif

#endif /* KINET_WIRE_ETH_H */
