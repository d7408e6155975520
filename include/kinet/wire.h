/*
 * kinet wire format: ConnectX (mlx5) send/receive WQE segments and 64-byte
 * CQEs, byte for byte as in the PRM and rdma-core's mlx5dv.h.  All multi-byte
 * fields are big-endian in memory.  Usable from C11 and from CUDA device code.
 * The Ethernet queues' formats are in kinet/wire_eth.h, included at the end.
 */
#ifndef KINET_WIRE_H
#define KINET_WIRE_H

#include <stddef.h>
#include <stdint.h>

#include "kinet/syndrome.h"

#if defined(__CUDACC__)
#define KINET_WIRE_FN static __host__ __device__ __forceinline__
#else
#define KINET_WIRE_FN static inline
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* Send queue geometry. */
#define KINET_WQE_BB_SIZE 64u /* one basic block */
#define KINET_WQE_DS_SIZE 16u /* one data segment unit (the "ds" count) */
#define KINET_WQE_MAX_DS 63u  /* qpn_ds carries 6 bits of ds */
#define KINET_INVALID_LKEY 0x100u
#define KINET_INLINE_SEG_FLAG 0x80000000u

/* WQE opcodes (ctrl.opmod_idx_opcode bits 7:0). */
enum kinet_wqe_opcode {
	KINET_WQE_OP_NOP = 0x00,
	KINET_WQE_OP_RDMA_WRITE = 0x08,
	KINET_WQE_OP_RDMA_WRITE_IMM = 0x09,
	KINET_WQE_OP_SEND = 0x0a,
	KINET_WQE_OP_SEND_IMM = 0x0b,
	KINET_WQE_OP_RDMA_READ = 0x10,
	KINET_WQE_OP_ATOMIC_CS = 0x11,
	KINET_WQE_OP_ATOMIC_FA = 0x12,
	/* Cross-channel WAIT: stalls the send queue until a CQ has produced
	 * the CQE of a given index (ctrl + struct kinet_wqe_wait_seg, ds 2). */
	KINET_WQE_OP_WAIT = 0x0f,
};

/* ctrl.opmod_idx_opcode bits 31:24 of an RDMA_WRITE(_IMM), a software NIC
 * extension (ConnectX wants 0 there, and kinet posts it only to QPs of the
 * software NIC): the WQE's one data segment names the source as usual, and
 * its bytes are also in the QP's staging slot of the WQE's first BB, where
 * the engine takes them after checking the segment (staged sources,
 * kinet_dev_qp.stage). */
#define KINET_WQE_OPMOD_STAGED 0x01u

/* ctrl.fm_ce_se flags. */
#define KINET_WQE_CTRL_SOLICITED 0x02u
#define KINET_WQE_CTRL_CQ_UPDATE 0x08u
#define KINET_WQE_CTRL_FENCE 0x40u
/* fm_ce_se bits 7:5 are the fence mode; the Linux driver writes 2 (0x40),
 * libmlx5 writes 4 (0x80, strong), 1 is the initiator small fence.  The
 * software NIC treats every non-zero mode as a full fence. */
#define KINET_WQE_CTRL_FENCE_MASK 0xe0u

/* CQE opcodes (op_own bits 7:4). */
enum kinet_cqe_opcode {
	KINET_CQE_REQ = 0x0,
	KINET_CQE_RESP_WR_IMM = 0x1,
	KINET_CQE_RESP_SEND = 0x2,
	KINET_CQE_RESP_SEND_IMM = 0x3,
	KINET_CQE_REQ_ERR = 0xd,
	KINET_CQE_RESP_ERR = 0xe,
	KINET_CQE_INVALID = 0xf,
};

/* The op_own byte of a CQE nobody has written: opcode INVALID, owner 1
 * (what ConnectX drivers initialise rings with).  Pollers that check only
 * the owner bit then see no completion in a fresh ring's first pass. */
#define KINET_CQE_OP_OWN_INIT ((uint8_t)(KINET_CQE_INVALID << 4 | 1))

/* Doorbell record word indices (mlx5: MLX5_RCV_DBR, MLX5_SND_DBR). */
#define KINET_DBR_RECV 0
#define KINET_DBR_SEND 1
/* CQ doorbell record: word 0 holds the 24-bit consumer index. */
#define KINET_CQ_DBR_CI 0
#define KINET_CQ_DBR_ARM 1
#define KINET_CQ_CI_MASK 0xffffffu

/* Control segment, 16 bytes (mlx5_wqe_ctrl_seg). */
struct kinet_wqe_ctrl_seg {
	uint32_t opmod_idx_opcode; /* opmod<<24 | wqe_index<<8 | opcode */
	uint32_t qpn_ds;	   /* qpn<<8 | ds (16-byte units, ctrl included) */
	uint8_t signature;
	uint8_t rsvd[2];
	uint8_t fm_ce_se;
	uint32_t imm; /* immediate data, network order as given */
};

/* Remote address segment, 16 bytes (mlx5_wqe_raddr_seg). */
struct kinet_wqe_raddr_seg {
	uint64_t raddr;
	uint32_t rkey;
	uint32_t reserved;
};

/* Data (scatter/gather) segment, 16 bytes (mlx5_wqe_data_seg). */
struct kinet_wqe_data_seg {
	uint32_t byte_count;
	uint32_t lkey;
	uint64_t addr;
};

/* First segment of a shared receive queue's WQE, 16 bytes
 * (mlx5_wqe_srq_next_seg): the index of the WQE after it in the SRQ's
 * list (big-endian); data segments follow. */
struct kinet_wqe_srq_next_seg {
	uint8_t rsvd0[2];
	uint16_t next_wqe_index;
	uint8_t signature;
	uint8_t rsvd1[11];
};

/* Inline data header, 4 bytes, followed by the data (mlx5_wqe_inl_data_seg). */
struct kinet_wqe_inline_seg {
	uint32_t byte_count; /* KINET_INLINE_SEG_FLAG | length */
};

/* Atomic segment, 16 bytes (mlx5_wqe_atomic_seg). */
struct kinet_wqe_atomic_seg {
	uint64_t swap_add;
	uint64_t compare;
};

/* WAIT segment, 16 bytes, after the control segment of a WAIT WQE
 * (mlx5_wqe_wait_en_seg): wait until CQ `cqn` has produced its CQE of index
 * max_index (24-bit serial comparison), then go on. */
struct kinet_wqe_wait_seg {
	uint8_t rsvd[8];
	uint32_t max_index; /* index of the awaited CQE (CQEs produced - 1) */
	uint32_t cqn;	    /* CQ number (24 bits) */
};

/* 64-byte completion queue entry (mlx5_cqe64). */
struct kinet_cqe64 {
	uint8_t rsvd0[2];
	uint16_t wqe_id;
	uint8_t rsvd4[13];
	uint8_t ml_path;
	uint8_t rsvd20[4];
	uint16_t slid;
	uint32_t flags_rqpn;
	uint8_t hds_ip_ext;
	uint8_t l4_hdr_type_etc;
	uint16_t vlan_info;
	uint32_t srqn_uidx;
	uint32_t imm_inval_pkey;
	uint8_t app;
	uint8_t app_op;
	uint16_t app_info;
	uint32_t byte_cnt;
	uint64_t timestamp;
	uint32_t sop_drop_qpn; /* requester: wqe opcode<<24 | qpn */
	uint16_t wqe_counter;
	uint8_t signature;
	uint8_t op_own; /* opcode<<4 | se<<1 | owner */
};

/* Error CQE, same 64 bytes seen through mlx5_err_cqe. */
struct kinet_err_cqe {
	uint8_t rsvd0[32];
	uint32_t srqn;
	uint8_t rsvd1[18];
	uint8_t vendor_err_synd;
	uint8_t syndrome;
	uint32_t s_wqe_opcode_qpn;
	uint16_t wqe_counter;
	uint8_t signature;
	uint8_t op_own;
};

#ifdef __cplusplus
#define KINET_WIRE_STATIC_ASSERT static_assert
#else
#define KINET_WIRE_STATIC_ASSERT _Static_assert
#endif
KINET_WIRE_STATIC_ASSERT(sizeof(struct kinet_wqe_ctrl_seg) == 16, "ctrl seg");
KINET_WIRE_STATIC_ASSERT(sizeof(struct kinet_wqe_raddr_seg) == 16, "raddr seg");
KINET_WIRE_STATIC_ASSERT(sizeof(struct kinet_wqe_data_seg) == 16, "data seg");
KINET_WIRE_STATIC_ASSERT(sizeof(struct kinet_wqe_atomic_seg) == 16, "atomic seg");
KINET_WIRE_STATIC_ASSERT(sizeof(struct kinet_wqe_wait_seg) == 16, "wait seg");
KINET_WIRE_STATIC_ASSERT(sizeof(struct kinet_cqe64) == 64, "cqe64");
KINET_WIRE_STATIC_ASSERT(sizeof(struct kinet_err_cqe) == 64, "err cqe");
KINET_WIRE_STATIC_ASSERT(sizeof(struct kinet_wqe_srq_next_seg) == 16, "srq next seg");
KINET_WIRE_STATIC_ASSERT(offsetof(struct kinet_cqe64, op_own) == 63, "op_own");

/* Byte order.  The wire is big-endian; every supported host and GPU is
 * little-endian, so these are unconditional swaps. */
KINET_WIRE_FN uint16_t kinet_be16(uint16_t v)
{
	return (uint16_t)((v >> 8) | (v << 8));
}

KINET_WIRE_FN uint32_t kinet_be32(uint32_t v)
{
#if defined(__CUDA_ARCH__)
	return __byte_perm(v, 0, 0x0123);
#else
	return __builtin_bswap32(v);
#endif
}

KINET_WIRE_FN uint64_t kinet_be64(uint64_t v)
{
#if defined(__CUDA_ARCH__)
	return ((uint64_t)kinet_be32((uint32_t)v) << 32) | kinet_be32((uint32_t)(v >> 32));
#else
	return __builtin_bswap64(v);
#endif
}

/* Number of 16-byte units an inline segment of len bytes occupies. */
KINET_WIRE_FN uint32_t kinet_inline_ds(uint32_t len)
{
	return (len + (uint32_t)sizeof(struct kinet_wqe_inline_seg) + KINET_WQE_DS_SIZE - 1) /
	       KINET_WQE_DS_SIZE;
}

/* Basic blocks a WQE of ds units spans. */
KINET_WIRE_FN uint32_t kinet_wqe_bbs(uint32_t ds)
{
	return (ds * KINET_WQE_DS_SIZE + KINET_WQE_BB_SIZE - 1) / KINET_WQE_BB_SIZE;
}

KINET_WIRE_FN void kinet_wqe_set_ctrl(struct kinet_wqe_ctrl_seg *ctrl, uint8_t opcode, uint16_t wqe_index,
				      uint32_t qpn, uint32_t ds, uint8_t fm_ce_se, uint32_t imm_be)
{
	ctrl->opmod_idx_opcode = kinet_be32(((uint32_t)wqe_index << 8) | opcode);
	ctrl->qpn_ds = kinet_be32((qpn << 8) | (ds & 0x3f));
	ctrl->signature = 0;
	ctrl->rsvd[0] = 0;
	ctrl->rsvd[1] = 0;
	ctrl->fm_ce_se = fm_ce_se;
	ctrl->imm = imm_be;
}

KINET_WIRE_FN uint8_t kinet_wqe_ctrl_opcode(const struct kinet_wqe_ctrl_seg *ctrl)
{
	return (uint8_t)(kinet_be32(ctrl->opmod_idx_opcode) & 0xff);
}

KINET_WIRE_FN uint8_t kinet_wqe_ctrl_opmod(const struct kinet_wqe_ctrl_seg *ctrl)
{
	return (uint8_t)(kinet_be32(ctrl->opmod_idx_opcode) >> 24);
}

KINET_WIRE_FN void kinet_wqe_set_opmod(struct kinet_wqe_ctrl_seg *ctrl, uint8_t opmod)
{
	ctrl->opmod_idx_opcode =
		kinet_be32((kinet_be32(ctrl->opmod_idx_opcode) & 0xffffffu) | ((uint32_t)opmod << 24));
}

KINET_WIRE_FN uint16_t kinet_wqe_ctrl_index(const struct kinet_wqe_ctrl_seg *ctrl)
{
	return (uint16_t)(kinet_be32(ctrl->opmod_idx_opcode) >> 8);
}

KINET_WIRE_FN uint32_t kinet_wqe_ctrl_qpn(const struct kinet_wqe_ctrl_seg *ctrl)
{
	return kinet_be32(ctrl->qpn_ds) >> 8;
}

KINET_WIRE_FN uint32_t kinet_wqe_ctrl_ds(const struct kinet_wqe_ctrl_seg *ctrl)
{
	return kinet_be32(ctrl->qpn_ds) & 0x3f;
}

KINET_WIRE_FN void kinet_wqe_set_raddr(struct kinet_wqe_raddr_seg *seg, uint64_t raddr, uint32_t rkey)
{
	seg->raddr = kinet_be64(raddr);
	seg->rkey = kinet_be32(rkey);
	seg->reserved = 0;
}

KINET_WIRE_FN void kinet_wqe_set_data(struct kinet_wqe_data_seg *seg, uint64_t addr, uint32_t length,
				      uint32_t lkey)
{
	seg->byte_count = kinet_be32(length);
	seg->lkey = kinet_be32(lkey);
	seg->addr = kinet_be64(addr);
}

KINET_WIRE_FN void kinet_wqe_set_atomic(struct kinet_wqe_atomic_seg *seg, uint64_t swap_add, uint64_t compare)
{
	seg->swap_add = kinet_be64(swap_add);
	seg->compare = kinet_be64(compare);
}

KINET_WIRE_FN void kinet_wqe_set_wait(struct kinet_wqe_wait_seg *seg, uint32_t cqn, uint32_t max_index)
{
	for (int i = 0; i < 8; i++)
		seg->rsvd[i] = 0;
	seg->max_index = kinet_be32(max_index);
	seg->cqn = kinet_be32(cqn & 0xffffff);
}

/* 1 once a CQ that has produced `produced` CQEs holds the one of index
 * max_index, which a WAIT naming it waits for.  CQ counters are 24 bits,
 * so the comparison is serial over 24 bits: an index less than 2^23 ahead
 * of the last CQE produced is still to come. */
KINET_WIRE_FN int kinet_wait_reached(uint32_t produced, uint32_t max_index)
{
	return ((produced - 1u - max_index) & 0xffffffu) < 0x800000u;
}

KINET_WIRE_FN uint8_t kinet_cqe_opcode(const struct kinet_cqe64 *cqe)
{
	return (uint8_t)(cqe->op_own >> 4);
}

KINET_WIRE_FN uint8_t kinet_cqe_owner(const struct kinet_cqe64 *cqe)
{
	return (uint8_t)(cqe->op_own & 1);
}

/* Owner bit software expects for the CQE at consumer index ci of a ring of
 * 2^log_size entries: 0 on the first pass, flipping every pass.  Rings start
 * filled with KINET_CQE_OP_OWN_INIT: INVALID opcodes, never taken as valid
 * (as libmlx5), with owner 1, not the first pass's. */
KINET_WIRE_FN uint8_t kinet_cqe_sw_owner(uint64_t ci, uint32_t log_size)
{
	return (uint8_t)((ci >> log_size) & 1);
}

/* 1 when the CQE at consumer index ci belongs to software. */
KINET_WIRE_FN int kinet_cqe_ready(const struct kinet_cqe64 *cqe, uint64_t ci, uint32_t log_size)
{
	uint8_t op_own = cqe->op_own;
	return (op_own >> 4) != KINET_CQE_INVALID && (op_own & 1) == kinet_cqe_sw_owner(ci, log_size);
}

KINET_WIRE_FN int kinet_cqe_is_error(const struct kinet_cqe64 *cqe)
{
	uint8_t op = kinet_cqe_opcode(cqe);
	return op == KINET_CQE_REQ_ERR || op == KINET_CQE_RESP_ERR;
}

KINET_WIRE_FN uint8_t kinet_cqe_syndrome(const struct kinet_cqe64 *cqe)
{
	return ((const struct kinet_err_cqe *)(const void *)cqe)->syndrome;
}

KINET_WIRE_FN uint32_t kinet_cqe_qpn(const struct kinet_cqe64 *cqe)
{
	return kinet_be32(cqe->sop_drop_qpn) & 0xffffff;
}

#ifdef __cplusplus
}
#endif

/* The Ethernet half: raw-packet send and receive queues. */
#include "kinet/wire_eth.h"

#endif /* KINET_WIRE_H */
