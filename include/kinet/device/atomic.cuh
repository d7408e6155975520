/*
 * kinet device API: remote atomics -- fetch_add, compare_swap.
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
#ifndef KINET_DEVICE_ATOMIC_CUH
#define KINET_DEVICE_ATOMIC_CUH

#include "kinet/device/impl/atomic.cuh"
#include "kinet/device/impl/forms.cuh"
#include "kinet/device/platform.cuh"
#include "kinet/device/types.h"

/* The forms macros take parameter lists, which clang-format would space as products. */
/* clang-format off */
/* fetch_add / compare_swap: 64-bit remote atomics; the old value is
 * written to [result, lkey] (8 bytes, registered) and valid once the
 * ticket completes */
/* What the macro below defines (written out for grep and readers):
 * int kinet_dev_fetch_add(struct kinet_dev_qp *qp, uint64_t *result, uint32_t lkey, uint64_t raddr,
 *     uint32_t rkey, uint64_t add, uint64_t *ticket);
 * and kinet_dev_fetch_add_warp, kinet_dev_fetch_add_block with the same parameters. */
KINET_DEVI_FORMS(fetch_add, kinet_devi_fetch_add_g,
		 (struct kinet_dev_qp *qp, uint64_t *result, uint32_t lkey, uint64_t raddr, uint32_t rkey,
		  uint64_t add, uint64_t *ticket),
		 (qp, result, lkey, raddr, rkey, add, ticket))

/* What the macro below defines (written out for grep and readers):
 * int kinet_dev_compare_swap(struct kinet_dev_qp *qp, uint64_t *result, uint32_t lkey, uint64_t raddr,
 *     uint32_t rkey, uint64_t compare, uint64_t swap, uint64_t *ticket);
 * and kinet_dev_compare_swap_warp, kinet_dev_compare_swap_block with the same parameters. */
KINET_DEVI_FORMS(compare_swap, kinet_devi_compare_swap_g,
		 (struct kinet_dev_qp *qp, uint64_t *result, uint32_t lkey, uint64_t raddr, uint32_t rkey,
		  uint64_t compare, uint64_t swap, uint64_t *ticket),
		 (qp, result, lkey, raddr, rkey, compare, swap, ticket))

/* clang-format on */

#endif /* KINET_DEVICE_ATOMIC_CUH */
