/*
 * kinet device API: one-sided RDMA -- put, put_inline, get, write_imm.
 *
 * Tickets: index + 1 of the operation's last WQE; kinet_dev_wait(qp, t)
 * (completion.cuh).  A ticket of 0 means there was nothing to post
 * (zero-length put/get).  On a QP with the peer path (impl/peer.cuh) put,
 * put_inline and get move the data with the GPU's own loads and stores;
 * their ticket is the send queue's commit index at the time, and waiting on
 * it completes the stores.
 *
 * Every verb comes in three forms, generated from one definition
 * (impl/forms.cuh):
 *   kinet_dev_<verb>(...)        one thread
 *   kinet_dev_<verb>_warp(...)   all 32 lanes of a warp, same arguments
 *   kinet_dev_<verb>_block(...)  all threads of the block, same arguments
 * Group forms share the work (transfers are split into chunks written by
 * different lanes), ring once per round, and give every member the same
 * status and ticket.  Under KINET_HOST_EMU a group is one thread.
 * Safe for the QP's sharing mode (CTA and GPU QPs: many threads at once;
 * EXCLUSIVE: one thread or group at a time).  Statuses: 0, -EAGAIN,
 * -ETIMEDOUT, -EIO, -EINVAL (negative errnos).  Reference: docs/DEVICE_API.md.
 */
#ifndef KINET_DEVICE_RMA_CUH
#define KINET_DEVICE_RMA_CUH

#include "kinet/device/impl/forms.cuh"
#include "kinet/device/impl/rma.cuh"
#include "kinet/device/platform.cuh"
#include "kinet/device/types.h"

/* The forms macros take parameter lists, which clang-format would space as products. */
/* clang-format off */
/* put: RDMA write of size bytes (any size; split into WQEs) */
/* What the macro below defines (written out for grep and readers):
 * int kinet_dev_put(struct kinet_dev_qp *qp, const void *laddr, uint32_t lkey, uint64_t raddr,
 *     uint32_t rkey, uint64_t size, uint64_t *ticket);
 * and kinet_dev_put_warp, kinet_dev_put_block with the same parameters. */
KINET_DEVI_FORMS(put, kinet_devi_put_g,
		 (struct kinet_dev_qp *qp, const void *laddr, uint32_t lkey, uint64_t raddr, uint32_t rkey,
		  uint64_t size, uint64_t *ticket),
		 (qp, laddr, lkey, raddr, rkey, size, ticket))

/* put_inline: size <= qp->max_inline (28) bytes carried in the WQE;
 * data need not be registered and may be reused on return */
/* What the macro below defines (written out for grep and readers):
 * int kinet_dev_put_inline(struct kinet_dev_qp *qp, const void *data, uint32_t size, uint64_t raddr,
 *     uint32_t rkey, uint64_t *ticket);
 * and kinet_dev_put_inline_warp, kinet_dev_put_inline_block with the same parameters. */
KINET_DEVI_FORMS(put_inline, kinet_devi_put_inline_g,
		 (struct kinet_dev_qp *qp, const void *data, uint32_t size, uint64_t raddr, uint32_t rkey,
		  uint64_t *ticket),
		 (qp, data, size, raddr, rkey, ticket))

/* get: RDMA read of size bytes into [laddr, lkey] */
/* What the macro below defines (written out for grep and readers):
 * int kinet_dev_get(struct kinet_dev_qp *qp, void *laddr, uint32_t lkey, uint64_t raddr, uint32_t
 *     rkey, uint64_t size, uint64_t *ticket);
 * and kinet_dev_get_warp, kinet_dev_get_block with the same parameters. */
KINET_DEVI_FORMS(get, kinet_devi_get_g,
		 (struct kinet_dev_qp *qp, void *laddr, uint32_t lkey, uint64_t raddr, uint32_t rkey,
		  uint64_t size, uint64_t *ticket),
		 (qp, laddr, lkey, raddr, rkey, size, ticket))

/* write_imm: put whose last WQE carries an immediate (host order);
 * consumes one receive at the target, which gets a completion with it */
/* What the macro below defines (written out for grep and readers):
 * int kinet_dev_write_imm(struct kinet_dev_qp *qp, const void *laddr, uint32_t lkey, uint64_t raddr,
 *     uint32_t rkey, uint64_t size, uint32_t imm, uint64_t *ticket);
 * and kinet_dev_write_imm_warp, kinet_dev_write_imm_block with the same parameters. */
KINET_DEVI_FORMS(write_imm, kinet_devi_write_imm_g,
		 (struct kinet_dev_qp *qp, const void *laddr, uint32_t lkey, uint64_t raddr, uint32_t rkey,
		  uint64_t size, uint32_t imm, uint64_t *ticket),
		 (qp, laddr, lkey, raddr, rkey, size, imm, ticket))

/* clang-format on */

#endif /* KINET_DEVICE_RMA_CUH */
