/*
 * kinet device API: WQE builders (one 64-byte basic block each).
 *
 * A WQE is built in registers (union kinet_dev_wqe) with the wire.h
 * encoders, then stored to the send queue with 16-byte stores.  Every WQE
 * the device API builds is ONE basic block:
 *
 *   NOP            ctrl                                ds 1
 *   WRITE/READ     ctrl raddr data                     ds 3 (2 when 0 bytes)
 *   WRITE_IMM      ctrl raddr data                     ds 3 (2 when 0 bytes)
 *   WRITE inline   ctrl raddr inline(4 B hdr + <=28 B) ds 2 + kinet_inline_ds(len)
 *   SEND/SEND_IMM  ctrl data                           ds 2 (1 when 0 bytes)
 *   SEND inline    ctrl inline(4 B hdr + <=44 B)       ds 1 + kinet_inline_ds(len)
 *   FETCH_ADD/CS   ctrl raddr atomic data(8 B)         ds 4
 *   WAIT           ctrl wait                           ds 2
 *
 * A zero-length transfer carries no data segment (mlx5 reads a zero
 * byte_count as 2 GiB).
 */
#ifndef KINET_DEVICE_WQE_CUH
#define KINET_DEVICE_WQE_CUH

#include "kinet/device/platform.cuh"
#include "kinet/device/types.h"
#include "kinet/wire.h"

/* Largest inline payload of a one-BB inline write: 64 - 16 (ctrl)
 * - 16 (raddr) - 4 (inline header). */
#define KINET_DEV_MAX_INLINE 28u

/* Largest inline payload of a one-BB inline SEND / SEND_IMM: 64 - 16
 * (ctrl) - 4 (inline header); no remote address segment. */
#define KINET_DEV_MAX_SEND_INLINE 44u

/* Flags for the low-level builders (ctrl.fm_ce_se). */
#define KINET_DEV_WQE_SIGNALED KINET_WQE_CTRL_CQ_UPDATE /* write a CQE */
#define KINET_DEV_WQE_FENCE KINET_WQE_CTRL_FENCE	/* wait for earlier reads/atomics */
#define KINET_DEV_WQE_SOLICITED KINET_WQE_CTRL_SOLICITED

/* One basic block, in registers.  Fill through the typed views, read the
 * words with kinet_dev_wqe_words() (memcpy: no type punning). */
union __attribute__((aligned(16))) kinet_dev_wqe {
	uint64_t q[8];
	struct {
		struct kinet_wqe_ctrl_seg ctrl;
		struct kinet_wqe_raddr_seg raddr;
		struct kinet_wqe_data_seg data;
		uint64_t pad[2];
	} rdma;
	struct {
		struct kinet_wqe_ctrl_seg ctrl;
		struct kinet_wqe_raddr_seg raddr;
		struct kinet_wqe_atomic_seg atomic;
		struct kinet_wqe_data_seg data;
	} atomic;
	struct {
		struct kinet_wqe_ctrl_seg ctrl;
		struct kinet_wqe_data_seg data;
		uint64_t pad[4];
	} send;
	struct {
		struct kinet_wqe_ctrl_seg ctrl;
		struct kinet_wqe_raddr_seg raddr;
		uint32_t byte_count;
		uint8_t data[KINET_DEV_MAX_INLINE];
	} inl;
	struct {
		struct kinet_wqe_ctrl_seg ctrl;
		uint32_t byte_count;
		uint8_t data[KINET_DEV_MAX_SEND_INLINE];
	} send_inl;
	struct {
		struct kinet_wqe_ctrl_seg ctrl;
		struct kinet_wqe_wait_seg wait;
		uint64_t pad[4];
	} wait;
};

KINET_DEV_FN void kinet_devi_wqe_zero(union kinet_dev_wqe *w)
{
	for (int i = 0; i < 8; i++)
		w->q[i] = 0;
}

KINET_DEV_FN void kinet_dev_wqe_words(const union kinet_dev_wqe *w, uint64_t q[8])
{
	memcpy(q, w, 64);
}

/* ---- builders (registers only) ---- */

KINET_DEV_FN void kinet_dev_wqe_build_nop(union kinet_dev_wqe *w, uint32_t qpn, uint64_t idx, uint8_t flags)
{
	kinet_devi_wqe_zero(w);
	kinet_wqe_set_ctrl(&w->rdma.ctrl, KINET_WQE_OP_NOP, (uint16_t)idx, qpn, 1, flags, 0);
}

/* RDMA_WRITE, RDMA_WRITE_IMM (imm_be: immediate in network order) or
 * RDMA_READ of size bytes between local [laddr, lkey] and remote
 * [raddr, rkey]. */
KINET_DEV_FN void kinet_dev_wqe_build_rdma(union kinet_dev_wqe *w, uint32_t qpn, uint64_t idx, uint8_t opcode,
					   uint8_t flags, uint64_t laddr, uint32_t lkey, uint64_t raddr,
					   uint32_t rkey, uint32_t size, uint32_t imm_be)
{
	kinet_devi_wqe_zero(w);
	kinet_wqe_set_ctrl(&w->rdma.ctrl, opcode, (uint16_t)idx, qpn, size ? 3 : 2, flags, imm_be);
	kinet_wqe_set_raddr(&w->rdma.raddr, raddr, rkey);
	if (size)
		kinet_wqe_set_data(&w->rdma.data, laddr, size, lkey);
}

/* Inline RDMA_WRITE; the caller checks size <= KINET_DEV_MAX_INLINE. */
KINET_DEV_FN void kinet_dev_wqe_build_write_inline(union kinet_dev_wqe *w, uint32_t qpn, uint64_t idx,
						   uint8_t flags, const void *data, uint32_t size,
						   uint64_t raddr, uint32_t rkey)
{
	if (size > KINET_DEV_MAX_INLINE)
		size = KINET_DEV_MAX_INLINE; /* callers check; never write past the block */
	kinet_devi_wqe_zero(w);
	kinet_wqe_set_ctrl(&w->inl.ctrl, KINET_WQE_OP_RDMA_WRITE, (uint16_t)idx, qpn,
			   2 + kinet_inline_ds(size), flags, 0);
	kinet_wqe_set_raddr(&w->inl.raddr, raddr, rkey);
	w->inl.byte_count = kinet_be32(KINET_INLINE_SEG_FLAG | size);
	const uint8_t *src = (const uint8_t *)data;
	for (uint32_t i = 0; i < size; i++)
		w->inl.data[i] = src[i];
}

/* SEND or SEND_IMM of size bytes from [laddr, lkey]. */
KINET_DEV_FN void kinet_dev_wqe_build_send(union kinet_dev_wqe *w, uint32_t qpn, uint64_t idx, uint8_t opcode,
					   uint8_t flags, uint64_t laddr, uint32_t lkey, uint32_t size,
					   uint32_t imm_be)
{
	kinet_devi_wqe_zero(w);
	kinet_wqe_set_ctrl(&w->send.ctrl, opcode, (uint16_t)idx, qpn, size ? 2 : 1, flags, imm_be);
	if (size)
		kinet_wqe_set_data(&w->send.data, laddr, size, lkey);
}

/* Inline SEND or SEND_IMM: the data travels in the WQE; the caller checks
 * size <= KINET_DEV_MAX_SEND_INLINE. */
KINET_DEV_FN void kinet_dev_wqe_build_send_inline(union kinet_dev_wqe *w, uint32_t qpn, uint64_t idx,
						  uint8_t opcode, uint8_t flags, const void *data,
						  uint32_t size, uint32_t imm_be)
{
	if (size > KINET_DEV_MAX_SEND_INLINE)
		size = KINET_DEV_MAX_SEND_INLINE; /* callers check; never write past the block */
	kinet_devi_wqe_zero(w);
	kinet_wqe_set_ctrl(&w->send_inl.ctrl, opcode, (uint16_t)idx, qpn, 1 + kinet_inline_ds(size), flags,
			   imm_be);
	w->send_inl.byte_count = kinet_be32(KINET_INLINE_SEG_FLAG | size);
	const uint8_t *src = (const uint8_t *)data;
	for (uint32_t i = 0; i < size; i++)
		w->send_inl.data[i] = src[i];
}

/* ATOMIC_FA (swap_add = addend, compare unused) or ATOMIC_CS; the old
 * 64-bit value lands at [result, lkey]. */
KINET_DEV_FN void kinet_dev_wqe_build_atomic(union kinet_dev_wqe *w, uint32_t qpn, uint64_t idx,
					     uint8_t opcode, uint8_t flags, uint64_t result, uint32_t lkey,
					     uint64_t raddr, uint32_t rkey, uint64_t swap_add,
					     uint64_t compare)
{
	kinet_devi_wqe_zero(w);
	kinet_wqe_set_ctrl(&w->atomic.ctrl, opcode, (uint16_t)idx, qpn, 4, flags, 0);
	kinet_wqe_set_raddr(&w->atomic.raddr, raddr, rkey);
	kinet_wqe_set_atomic(&w->atomic.atomic, swap_add, compare);
	kinet_wqe_set_data(&w->atomic.data, result, 8, lkey);
}

/* WAIT (cross-channel): the send queue goes no further until CQ number cqn
 * (kinet_cq_num, struct kinet_dev_cq's cqn) of the same context holds its
 * CQE of index max_index (24-bit serial comparison, kinet_wait_reached). */
KINET_DEV_FN void kinet_dev_wqe_build_wait(union kinet_dev_wqe *w, uint32_t qpn, uint64_t idx, uint8_t flags,
					   uint32_t cqn, uint32_t max_index)
{
	kinet_devi_wqe_zero(w);
	kinet_wqe_set_ctrl(&w->wait.ctrl, KINET_WQE_OP_WAIT, (uint16_t)idx, qpn, 2, flags, 0);
	kinet_wqe_set_wait(&w->wait.wait, cqn, max_index);
}

/* ---- the send queue in memory ---- */

/* Address of basic block idx (any 64-bit index; wraps with the mask). */
KINET_DEV_FN void *kinet_dev_sq_wqe(const struct kinet_dev_qp *qp, uint64_t idx)
{
	return qp->sq + (size_t)(idx & qp->sq_mask) * KINET_WQE_BB_SIZE;
}

/* Stores a built WQE into slot idx (plain stores; the doorbell's release
 * fence publishes them). */
KINET_DEV_FN void kinet_dev_wqe_store(const struct kinet_dev_qp *qp, uint64_t idx,
				      const union kinet_dev_wqe *w)
{
#if defined(KINET_HOST_EMU)
	memcpy(kinet_dev_sq_wqe(qp, idx), w, KINET_WQE_BB_SIZE); /* no type punning on the ring */
#else
	uint64_t q[8];
	kinet_dev_wqe_words(w, q);
	uint64_t *dst = (uint64_t *)kinet_dev_sq_wqe(qp, idx);
	for (int i = 0; i < 8; i += 2)
		asm volatile("st.v2.u64 [%0], {%1, %2};" ::"l"(dst + i), "l"(q[i]), "l"(q[i + 1]) : "memory");
#endif
}

/* Reads slot idx back (for BlueFlame copies of a WQE another thread of the
 * group wrote; the group barrier before makes it visible). */
KINET_DEV_FN void kinet_devi_wqe_load(const struct kinet_dev_qp *qp, uint64_t idx, uint64_t q[8])
{
	const volatile uint64_t *src = (const volatile uint64_t *)kinet_dev_sq_wqe(qp, idx);
	for (int i = 0; i < 8; i++)
		q[i] = src[i];
}

/* ---- low-level prepare: build and store at slot idx ---- */

KINET_DEV_FN void kinet_dev_wqe_prep_nop(struct kinet_dev_qp *qp, uint64_t idx, uint8_t flags)
{
	union kinet_dev_wqe w;
	kinet_dev_wqe_build_nop(&w, qp->qpn, idx, flags);
	kinet_dev_wqe_store(qp, idx, &w);
}

KINET_DEV_FN void kinet_dev_wqe_prep_write(struct kinet_dev_qp *qp, uint64_t idx, uint8_t flags,
					   const void *laddr, uint32_t lkey, uint64_t raddr, uint32_t rkey,
					   uint32_t size)
{
	union kinet_dev_wqe w;
	kinet_dev_wqe_build_rdma(&w, qp->qpn, idx, KINET_WQE_OP_RDMA_WRITE, flags, (uint64_t)(uintptr_t)laddr,
				 lkey, raddr, rkey, size, 0);
	kinet_dev_wqe_store(qp, idx, &w);
}

/* -EINVAL when size > qp->max_inline (at most 28: one basic block). */
KINET_DEV_FN int kinet_dev_wqe_prep_write_inline(struct kinet_dev_qp *qp, uint64_t idx, uint8_t flags,
						 const void *data, uint32_t size, uint64_t raddr,
						 uint32_t rkey)
{
	uint32_t max = qp->max_inline < KINET_DEV_MAX_INLINE ? qp->max_inline : KINET_DEV_MAX_INLINE;
	if (size > max)
		return -EINVAL;
	union kinet_dev_wqe w;
	kinet_dev_wqe_build_write_inline(&w, qp->qpn, idx, flags, data, size, raddr, rkey);
	kinet_dev_wqe_store(qp, idx, &w);
	return 0;
}

/* imm: host order (stored big-endian). */
KINET_DEV_FN void kinet_dev_wqe_prep_write_imm(struct kinet_dev_qp *qp, uint64_t idx, uint8_t flags,
					       const void *laddr, uint32_t lkey, uint64_t raddr,
					       uint32_t rkey, uint32_t size, uint32_t imm)
{
	union kinet_dev_wqe w;
	kinet_dev_wqe_build_rdma(&w, qp->qpn, idx, KINET_WQE_OP_RDMA_WRITE_IMM, flags,
				 (uint64_t)(uintptr_t)laddr, lkey, raddr, rkey, size, kinet_be32(imm));
	kinet_dev_wqe_store(qp, idx, &w);
}

KINET_DEV_FN void kinet_dev_wqe_prep_send(struct kinet_dev_qp *qp, uint64_t idx, uint8_t flags,
					  const void *laddr, uint32_t lkey, uint32_t size)
{
	union kinet_dev_wqe w;
	kinet_dev_wqe_build_send(&w, qp->qpn, idx, KINET_WQE_OP_SEND, flags, (uint64_t)(uintptr_t)laddr, lkey,
				 size, 0);
	kinet_dev_wqe_store(qp, idx, &w);
}

/* -EINVAL when size > qp->max_inline or KINET_DEV_MAX_SEND_INLINE (44). */
KINET_DEV_FN int kinet_dev_wqe_prep_send_inline(struct kinet_dev_qp *qp, uint64_t idx, uint8_t flags,
						const void *data, uint32_t size)
{
	uint32_t max =
		qp->max_inline < KINET_DEV_MAX_SEND_INLINE ? qp->max_inline : KINET_DEV_MAX_SEND_INLINE;
	if (size > max)
		return -EINVAL;
	union kinet_dev_wqe w;
	kinet_dev_wqe_build_send_inline(&w, qp->qpn, idx, KINET_WQE_OP_SEND, flags, data, size, 0);
	kinet_dev_wqe_store(qp, idx, &w);
	return 0;
}

KINET_DEV_FN void kinet_dev_wqe_prep_send_imm(struct kinet_dev_qp *qp, uint64_t idx, uint8_t flags,
					      const void *laddr, uint32_t lkey, uint32_t size, uint32_t imm)
{
	union kinet_dev_wqe w;
	kinet_dev_wqe_build_send(&w, qp->qpn, idx, KINET_WQE_OP_SEND_IMM, flags, (uint64_t)(uintptr_t)laddr,
				 lkey, size, kinet_be32(imm));
	kinet_dev_wqe_store(qp, idx, &w);
}

KINET_DEV_FN void kinet_dev_wqe_prep_read(struct kinet_dev_qp *qp, uint64_t idx, uint8_t flags, void *laddr,
					  uint32_t lkey, uint64_t raddr, uint32_t rkey, uint32_t size)
{
	union kinet_dev_wqe w;
	kinet_dev_wqe_build_rdma(&w, qp->qpn, idx, KINET_WQE_OP_RDMA_READ, flags, (uint64_t)(uintptr_t)laddr,
				 lkey, raddr, rkey, size, 0);
	kinet_dev_wqe_store(qp, idx, &w);
}

KINET_DEV_FN void kinet_dev_wqe_prep_fetch_add(struct kinet_dev_qp *qp, uint64_t idx, uint8_t flags,
					       uint64_t *result, uint32_t lkey, uint64_t raddr, uint32_t rkey,
					       uint64_t add)
{
	union kinet_dev_wqe w;
	kinet_dev_wqe_build_atomic(&w, qp->qpn, idx, KINET_WQE_OP_ATOMIC_FA, flags,
				   (uint64_t)(uintptr_t)result, lkey, raddr, rkey, add, 0);
	kinet_dev_wqe_store(qp, idx, &w);
}

KINET_DEV_FN void kinet_dev_wqe_prep_wait(struct kinet_dev_qp *qp, uint64_t idx, uint8_t flags, uint32_t cqn,
					  uint32_t max_index)
{
	union kinet_dev_wqe w;
	kinet_dev_wqe_build_wait(&w, qp->qpn, idx, flags, cqn, max_index);
	kinet_dev_wqe_store(qp, idx, &w);
}

KINET_DEV_FN void kinet_dev_wqe_prep_compare_swap(struct kinet_dev_qp *qp, uint64_t idx, uint8_t flags,
						  uint64_t *result, uint32_t lkey, uint64_t raddr,
						  uint32_t rkey, uint64_t compare, uint64_t swap)
{
	union kinet_dev_wqe w;
	kinet_dev_wqe_build_atomic(&w, qp->qpn, idx, KINET_WQE_OP_ATOMIC_CS, flags,
				   (uint64_t)(uintptr_t)result, lkey, raddr, rkey, swap, compare);
	kinet_dev_wqe_store(qp, idx, &w);
}

#endif /* KINET_DEVICE_WQE_CUH */
