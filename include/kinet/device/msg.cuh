/*
 * kinet device API: two-sided messages -- send, send_imm, their inline
 * forms, post_recv, recv.
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
#ifndef KINET_DEVICE_MSG_CUH
#define KINET_DEVICE_MSG_CUH

#include "kinet/device/impl/forms.cuh"
#include "kinet/device/impl/msg.cuh"
#include "kinet/device/platform.cuh"
#include "kinet/device/types.h"

/* The forms macros take parameter lists, which clang-format would space as products. */
/* clang-format off */
/* send / send_imm: one message of size <= 1 GiB (-EINVAL above) into
 * the next receive the target posted */
/* What the macro below defines (written out for grep and readers):
 * int kinet_dev_send(struct kinet_dev_qp *qp, const void *laddr, uint32_t lkey, uint64_t size,
 *     uint64_t *ticket);
 * and kinet_dev_send_warp, kinet_dev_send_block with the same parameters. */
KINET_DEVI_FORMS(send, kinet_devi_send_g,
		 (struct kinet_dev_qp *qp, const void *laddr, uint32_t lkey, uint64_t size,
		  uint64_t *ticket),
		 (qp, laddr, lkey, size, 0, 0, ticket))

/* What the macro below defines (written out for grep and readers):
 * int kinet_dev_send_imm(struct kinet_dev_qp *qp, const void *laddr, uint32_t lkey, uint64_t size,
 *     uint32_t imm, uint64_t *ticket);
 * and kinet_dev_send_imm_warp, kinet_dev_send_imm_block with the same parameters. */
KINET_DEVI_FORMS(send_imm, kinet_devi_send_g,
		 (struct kinet_dev_qp *qp, const void *laddr, uint32_t lkey, uint64_t size, uint32_t imm,
		  uint64_t *ticket),
		 (qp, laddr, lkey, size, 1, imm, ticket))

/* send_inline / send_imm_inline: size <= qp->max_inline and <= 44 bytes
 * (KINET_DEV_MAX_SEND_INLINE; else -EINVAL) carried in the WQE itself:
 * data needs no registration and may be reused at return (the calling
 * thread reads it while posting; NULL or unmapped data is the caller's bug) */
/* What the macro below defines (written out for grep and readers):
 * int kinet_dev_send_inline(struct kinet_dev_qp *qp, const void *data, uint32_t size, uint64_t *ticket);
 * and kinet_dev_send_inline_warp, kinet_dev_send_inline_block with the same parameters. */
KINET_DEVI_FORMS(send_inline, kinet_devi_send_inline_g,
		 (struct kinet_dev_qp *qp, const void *data, uint32_t size, uint64_t *ticket),
		 (qp, data, size, 0, 0, ticket))

/* What the macro below defines (written out for grep and readers):
 * int kinet_dev_send_imm_inline(struct kinet_dev_qp *qp, const void *data, uint32_t size, uint32_t imm,
 *     uint64_t *ticket);
 * and kinet_dev_send_imm_inline_warp, kinet_dev_send_imm_inline_block with the same parameters. */
KINET_DEVI_FORMS(send_imm_inline, kinet_devi_send_inline_g,
		 (struct kinet_dev_qp *qp, const void *data, uint32_t size, uint32_t imm, uint64_t *ticket),
		 (qp, data, size, 1, imm, ticket))

/* post_recv: one receive buffer (thread-safe, in-order commit);
 * -EAGAIN when the receive queue is full; *index = its receive index */
/* What the macro below defines (written out for grep and readers):
 * int kinet_dev_post_recv(struct kinet_dev_qp *qp, void *laddr, uint32_t lkey, uint32_t size, uint64_t
 *     *index);
 * and kinet_dev_post_recv_warp, kinet_dev_post_recv_block with the same parameters. */
KINET_DEVI_FORMS_ONE(post_recv, kinet_devi_post_recv_one, kinet_devi_post_recv_g,
		     (struct kinet_dev_qp *qp, void *laddr, uint32_t lkey, uint32_t size, uint64_t *index),
		     (qp, laddr, lkey, size, index))

/* recv: the next receive completion, in order (bounded wait):
 * byte count, immediate (host order; 0 without one) and the receive index
 * (which posted buffer).  -EIO on an error completion. */
/* What the macro below defines (written out for grep and readers):
 * int kinet_dev_recv(struct kinet_dev_qp *qp, uint32_t *byte_len, uint32_t *imm, uint64_t *index);
 * and kinet_dev_recv_warp, kinet_dev_recv_block with the same parameters. */
KINET_DEVI_FORMS_ONE(recv, kinet_devi_recv_one, kinet_devi_recv_g,
		     (struct kinet_dev_qp *qp, uint32_t *byte_len, uint32_t *imm, uint64_t *index),
		     (qp, byte_len, imm, index))

/* clang-format on */

#endif /* KINET_DEVICE_MSG_CUH */
