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

/* Pieces loaded into registers before any is stored: the compiler cannot
 * tell the slot from the source, so a load-store loop waits for each load
 * in turn (an L2 round trip per piece: 50 us for 4 KiB in 16-byte pieces
 * on an H200); 16 loads in flight make it 16 times fewer waits. */
#define KINET_DEVI_STAGE_BATCH 16

#if !defined(KINET_HOST_EMU)
/* clang-format off */
#define KINET_DEVI_STAGE_PIECES(T)                                                   \
	while (i + sizeof(T) <= size) {                                              \
		T v_[KINET_DEVI_STAGE_BATCH];                                        \
		uint32_t n_ = (size - i) / (uint32_t)sizeof(T);                      \
		if (n_ > KINET_DEVI_STAGE_BATCH)                                     \
			n_ = KINET_DEVI_STAGE_BATCH;                                 \
		_Pragma("unroll")                                                    \
		for (uint32_t j_ = 0; j_ < KINET_DEVI_STAGE_BATCH; j_++) {           \
			if (j_ < n_)                                                 \
				v_[j_] = __ldcg((const T *)(laddr + i) + j_);        \
		}                                                                    \
		_Pragma("unroll")                                                    \
		for (uint32_t j_ = 0; j_ < KINET_DEVI_STAGE_BATCH; j_++) {           \
			if (j_ < n_)                                                 \
				((T *)(dst + i))[j_] = v_[j_];                       \
		}                                                                    \
		i += n_ * (uint32_t)sizeof(T);                                       \
	}
/* clang-format on */
#endif

/* Copies the source into the slot of BB idx.  On the GPU through L2 (the
 * .cg loads: another SM may have produced the data, and the engine would
 * have read memory, not this SM's L1), in the widest pieces the source's
 * alignment allows (slots are 64-byte aligned). */
KINET_DEV_FN void kinet_devi_stage_copy(const struct kinet_dev_qp *qp, uint64_t idx, uint64_t laddr,
					uint32_t size)
{
	uint8_t *dst = qp->stage + (size_t)(idx & qp->sq_mask) * qp->stage_bytes;
#if defined(KINET_HOST_EMU)
	memcpy(dst, (const void *)(uintptr_t)laddr, size);
#else
	uint32_t i = 0;
	if ((laddr & 15) == 0) {
		KINET_DEVI_STAGE_PIECES(uint4)
	} else if ((laddr & 7) == 0) {
		KINET_DEVI_STAGE_PIECES(uint2)
	} else if ((laddr & 3) == 0) {
		KINET_DEVI_STAGE_PIECES(unsigned int)
	}
	KINET_DEVI_STAGE_PIECES(unsigned char)
#endif
}

#endif /* KINET_DEVICE_IMPL_STAGE_CUH */
