/*
 * kinet device API: completion -- test and wait (one ticket), quiet (all
 * posted work of the QP), fence (later operations after earlier reads and
 * atomics).
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
#ifndef KINET_DEVICE_COMPLETION_CUH
#define KINET_DEVICE_COMPLETION_CUH

#include "kinet/device/impl/completion.cuh"
#include "kinet/device/impl/forms.cuh"
#include "kinet/device/impl/peer.cuh"
#include "kinet/device/platform.cuh"
#include "kinet/device/sq.cuh"
#include "kinet/device/types.h"

/* The forms macros take parameter lists, which clang-format would space as products. */
/* clang-format off */
/* test / wait: one ticket (kinet_dev_sq_test / kinet_dev_sq_wait in
 * sq.cuh), after completing the caller's peer-path stores; under
 * completion moderation a ticket no CQE covers yet gets a signalled NOP
 * after it first */

KINET_DEV_FN int kinet_dev_test(struct kinet_dev_qp *qp, uint64_t ticket)
{
	return kinet_devi_test_one(qp, ticket);
}

/* What the macro below defines (written out for grep and readers):
 * int kinet_dev_wait(struct kinet_dev_qp *qp, uint64_t ticket);
 * and kinet_dev_wait_warp, kinet_dev_wait_block with the same parameters. */
KINET_DEVI_FORMS_ONE(wait, kinet_devi_wait_one, kinet_devi_wait_g,
		     (struct kinet_dev_qp *qp, uint64_t ticket), (qp, ticket))

/* quiet: everything committed on the QP so far is complete */
/* What the macro below defines (written out for grep and readers):
 * int kinet_dev_quiet(struct kinet_dev_qp *qp);
 * and kinet_dev_quiet_warp, kinet_dev_quiet_block with the same parameters. */
KINET_DEVI_FORMS_ONE(quiet, kinet_devi_quiet_one, kinet_devi_quiet_g, (struct kinet_dev_qp *qp), (qp))

/* fence: operations posted after it start only once the reads and
 * atomics posted before it are complete (a NOP with the fence flag; writes
 * are already ordered on one QP).  ticket: that NOP's */
/* What the macro below defines (written out for grep and readers):
 * int kinet_dev_fence(struct kinet_dev_qp *qp, uint64_t *ticket);
 * and kinet_dev_fence_warp, kinet_dev_fence_block with the same parameters. */
KINET_DEVI_FORMS(fence, kinet_devi_fence_g, (struct kinet_dev_qp *qp, uint64_t *ticket), (qp, ticket))

/* clang-format on */

#endif /* KINET_DEVICE_COMPLETION_CUH */
