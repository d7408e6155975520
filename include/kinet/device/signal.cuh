/*
 * kinet device API: signals -- signal (remote add), put_signal (data, then
 * the add, ordered), signal_wait_until (on a local word).
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
#ifndef KINET_DEVICE_SIGNAL_CUH
#define KINET_DEVICE_SIGNAL_CUH

#include "kinet/device/impl/forms.cuh"
#include "kinet/device/platform.cuh"
#include "kinet/device/types.h"

/* The forms macros take parameter lists, which clang-format would space as products. */
/* clang-format off */
/* Comparisons of kinet_dev_signal_wait_until. */
#define KINET_DEV_CMP_EQ 0
#define KINET_DEV_CMP_NE 1
#define KINET_DEV_CMP_GT 2
#define KINET_DEV_CMP_GE 3
#define KINET_DEV_CMP_LT 4
#define KINET_DEV_CMP_LE 5

#include "kinet/device/impl/signal.cuh"

/* signal: remote 64-bit add (non-fetching: the old value goes to the
 * QP's scratch buffer; -EINVAL when the descriptor has none) */
/* What the macro below defines (written out for grep and readers):
 * int kinet_dev_signal(struct kinet_dev_qp *qp, uint64_t sig_raddr, uint32_t sig_rkey, uint64_t add,
 *     uint64_t *ticket);
 * and kinet_dev_signal_warp, kinet_dev_signal_block with the same parameters. */
KINET_DEVI_FORMS(signal, kinet_devi_signal_g,
		 (struct kinet_dev_qp *qp, uint64_t sig_raddr, uint32_t sig_rkey, uint64_t add,
		  uint64_t *ticket),
		 (qp, sig_raddr, sig_rkey, add, ticket))

/* put_signal: put, then add to the remote signal word.  The QP
 * executes in order, so the target sees the data before the signal. */
/* What the macro below defines (written out for grep and readers):
 * int kinet_dev_put_signal(struct kinet_dev_qp *qp, const void *laddr, uint32_t lkey, uint64_t raddr,
 *     uint32_t rkey, uint64_t size, uint64_t sig_raddr, uint32_t sig_rkey, uint64_t add, uint64_t
 *     *ticket);
 * and kinet_dev_put_signal_warp, kinet_dev_put_signal_block with the same parameters. */
KINET_DEVI_FORMS(put_signal, kinet_devi_put_signal_g,
		 (struct kinet_dev_qp *qp, const void *laddr, uint32_t lkey, uint64_t raddr, uint32_t rkey,
		  uint64_t size, uint64_t sig_raddr, uint32_t sig_rkey, uint64_t add, uint64_t *ticket),
		 (qp, laddr, lkey, raddr, rkey, size, sig_raddr, sig_rkey, add, ticket))

/* signal_wait_until: waits until *sig <cmp> value on a local word
 * (written by the NIC: acquire load at system scope; data placed before
 * the signal is visible once it returns).  Bounded by qp's timeout (qp may
 * be NULL: the default); 0, -ETIMEDOUT, -EINVAL (bad cmp).  *seen: the value
 * that satisfied it (may be NULL). */
/* What the macro below defines (written out for grep and readers):
 * int kinet_dev_signal_wait_until(struct kinet_dev_qp *qp, const uint64_t *sig, int cmp, uint64_t
 *     value, uint64_t *seen);
 * and kinet_dev_signal_wait_until_warp, kinet_dev_signal_wait_until_block with the same parameters. */
KINET_DEVI_FORMS_ONE(signal_wait_until, kinet_devi_signal_wait_until_one, kinet_devi_signal_wait_until_g,
		     (struct kinet_dev_qp *qp, const uint64_t *sig, int cmp, uint64_t value, uint64_t *seen),
		     (qp, sig, cmp, value, seen))

/* clang-format on */

#endif /* KINET_DEVICE_SIGNAL_CUH */
