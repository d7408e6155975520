/*
 * kinet device API, implementation: staged sources.
 *
 * A software NIC's engine reads GPU memory only through the copy engine
 * (an 8-byte cudaMemcpyAsync and its synchronise: ~7 us on an H200), while
 * the posting GPU thread reads it in well under a microsecond.  So on a QP
 * whose export made a staging area (kinet_dev_qp.stage: host memory, one
 * slot of stage_bytes per send-queue BB), a write of 1..stage_bytes from a
 * region whose key says GPU memory is copied by the thread that builds its
 * WQE into the slot of the WQE's first BB, and the WQE says so with opmod
 * KINET_WQE_OPMOD_STAGED.  The WQE still names the source: the engine
 * checks key, range and rights as for any WQE (a wrong key is the same
 * error CQE), then takes the bytes from the slot
 * (docs/device-api/staged-sources.md).
 *
 * Ordering: the slot is written like the WQE itself, before the group
 * barrier and the doorbell's release fence, so the engine sees both.  A
 * slot is written again only when its BB is reserved again, i.e. after the
 * WQE completed -- the same lifetime the source buffer has.
 */
#ifndef KINET_DEVICE_IMPL_STAGE_CUH
#define KINET_DEVICE_IMPL_STAGE_CUH

#include "kinet/device/platform.cuh"
#include "kinet/device/types.h"
#include "kinet/wire.h"

/* Whether a one-WQE write of size bytes from lkey's region is staged. */
KINET_DEV_FN int kinet_devi_stage_wanted(const struct kinet_dev_qp *qp, uint8_t opcode, uint32_t lkey,
					 uint64_t size)
{
	return qp->stage && (opcode == KINET_WQE_OP_RDMA_WRITE || opcode == KINET_WQE_OP_RDMA_WRITE_IMM) &&
	       size && size <= qp->stage_bytes && (lkey & qp->stage_key) == qp->stage_key;
}

/* Copies the source into the slot of BB idx.  On the GPU through L2 (the
 * .cg loads: another SM may have produced the data, and the engine would
 * have read memory, not this SM's L1), in 16-byte pieces when the source
 * allows (slots are 64-byte aligned).  The compiler cannot tell the slot
 * from the source, so a load-store loop waits for each load in turn, an L2
 * round trip per piece (~0.2 us on an H200: 50 us for 4 KiB); loads go in
 * batches of KINET_DEVI_STAGE_BATCH into registers first.  The batch is
 * small because its registers count in every kernel that posts: 16 took a
 * MoE dispatch kernel from 96 to 246 registers per thread (its 512-thread
 * blocks no longer fitted an SM); 4 keeps it at 110. */
#define KINET_DEVI_STAGE_BATCH 4

/* The staging slot of BB idx: the engine reads it back at the same index. */
KINET_DEV_FN uint8_t *kinet_devi_stage_slot(const struct kinet_dev_qp *qp, uint64_t idx)
{
	return qp->stage + (size_t)(idx & qp->sq_mask) * qp->stage_bytes;
}

KINET_DEV_FN void kinet_devi_stage_copy(const struct kinet_dev_qp *qp, uint64_t idx, uint64_t laddr,
					uint32_t size)
{
	uint8_t *dst = kinet_devi_stage_slot(qp, idx);
#if defined(KINET_HOST_EMU)
	memcpy(dst, (const void *)(uintptr_t)laddr, size);
#else
	uint32_t i = 0;
	if ((laddr & 15) == 0) {
		for (; i + 16 * KINET_DEVI_STAGE_BATCH <= size; i += 16 * KINET_DEVI_STAGE_BATCH) {
			uint4 v[KINET_DEVI_STAGE_BATCH];
#pragma unroll
			for (int j = 0; j < KINET_DEVI_STAGE_BATCH; j++)
				v[j] = __ldcg((const uint4 *)(laddr + i) + j);
#pragma unroll
			for (int j = 0; j < KINET_DEVI_STAGE_BATCH; j++)
				((uint4 *)(dst + i))[j] = v[j];
		}
		for (; i + 16 <= size; i += 16)
			*(uint4 *)(dst + i) = __ldcg((const uint4 *)(laddr + i));
	}
	for (; i < size; i++)
		dst[i] = __ldcg((const unsigned char *)(laddr + i));
#endif
}

/* The same by every member of group g (the _warp and _block forms): rank r
 * copies pieces r, r + size, ... of the source, so a block stages 4 KiB in
 * one round of 16-byte loads and stores per thread.  The group barrier
 * before the doorbell orders every member's stores before it. */
KINET_DEV_FN void kinet_devi_stage_copy_group(int g, const struct kinet_dev_qp *qp, uint64_t idx,
					      uint64_t laddr, uint32_t size)
{
#if defined(KINET_HOST_EMU)
	(void)g; /* an emulated group is one thread */
	kinet_devi_stage_copy(qp, idx, laddr, size);
#else
	uint32_t rank = kinet_devi_group_rank(g), gsize = kinet_devi_group_size(g);
	if (gsize <= 1) {
		kinet_devi_stage_copy(qp, idx, laddr, size);
		return;
	}
	uint8_t *dst = kinet_devi_stage_slot(qp, idx);
	uint32_t whole = (laddr & 15) == 0 ? size & ~15u : 0;
	for (uint32_t i = rank * 16; i < whole; i += gsize * 16)
		*(uint4 *)(dst + i) = __ldcg((const uint4 *)(laddr + i));
	for (uint32_t i = whole + rank; i < size; i += gsize)
		dst[i] = __ldcg((const unsigned char *)(laddr + i));
#endif
}

#endif /* KINET_DEVICE_IMPL_STAGE_CUH */
