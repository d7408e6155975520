/*
 * kinet device collectives: the team's point-to-point building blocks
 * (docs/architecture/collectives.md).  The descriptor comes from
 * kinet_team_export() (kinet/team.h); offsets are heap offsets, the same on
 * every rank.
 *
 * Each operation reaches rank `peer` one of two ways, chosen per peer when
 * the team was made: a peer whose memory device code can map (GPUs of one
 * host; always this rank itself) is written with the group's own 16-byte
 * stores and signalled with a system-scope release and atomic add; any
 * other goes through the mesh's QP to it, as WQEs the software NIC (or a
 * NIC) executes.  Either way a signal is ordered after the group's earlier
 * puts to the same peer: a rank that sees the signal (team wait) sees the
 * data.
 *
 * Signal words only grow.  A round ("epoch" e = 1, 2, ...) of a slot is
 * complete when the word reaches e * KINET_DEV_TEAM_EPOCH: senders that
 * split their part of a round into n pieces add kinet_dev_team_share(i, n)
 * for piece i, and the n shares sum to KINET_DEV_TEAM_EPOCH.  No word is
 * ever reset, so no round races the clearing of the previous one; a slot
 * and its buffer are reused for round e + 1 once every rank has consumed
 * round e (a barrier, or the causality of the algorithm: a reply that could
 * only be sent after the data was read).
 *
 * Forms, as in the rest of the device API (generated from one definition,
 * kinet/device/coll/impl/team.cuh): kinet_dev_team_<verb>(...) for one
 * thread, _warp for the 32 lanes of a warp, _block for the whole block
 * (same arguments; all members get the same status).  Statuses: 0, -EINVAL
 * (rank, slot or range outside the team), and those of the verbs (-EIO,
 * -ETIMEDOUT).  Waits are bounded by the QP's timeout.
 */
#ifndef KINET_DEVICE_COLL_TEAM_CUH
#define KINET_DEVICE_COLL_TEAM_CUH

#include "kinet/device.cuh"
#include "kinet/device/coll/impl/team.cuh"
#include "kinet/device/coll/types.h"
#include "kinet/device/impl/forms.cuh"

/* ---- the team ---- */

KINET_DEV_FN int kinet_dev_team_rank(const struct kinet_dev_team *team)
{
	return team->rank;
}

KINET_DEV_FN int kinet_dev_team_size(const struct kinet_dev_team *team)
{
	return team->size;
}

/* This rank's heap at offset off. */
KINET_DEV_FN void *kinet_dev_team_ptr(const struct kinet_dev_team *team, uint64_t off)
{
	return team->base + team->heap_offset + off;
}

/* Rank peer's heap at offset off as this rank's device code may store to
 * it, or NULL when that rank is reached through its QP only. */
KINET_DEV_FN void *kinet_dev_team_peer_ptr(const struct kinet_dev_team *team, int peer, uint64_t off)
{
	uint8_t *m = team->peer[peer].mapped;
	return m ? m + team->heap_offset + off : NULL;
}

/* This rank's signal word of slot from rank src (to read or wait on). */
KINET_DEV_FN uint64_t *kinet_dev_team_signal_ptr(const struct kinet_dev_team *team, uint32_t slot, int src)
{
	return (uint64_t *)(void *)team->base + (uint64_t)slot * (uint64_t)team->size + (uint64_t)src;
}

/* The amount piece `part` of `nparts` (>= 1) adds: 1 for all but the last,
 * which adds the rest of KINET_DEV_TEAM_EPOCH.  Every share is positive, so
 * the word reaches the round's mark only once every piece has arrived. */
KINET_DEV_FN uint64_t kinet_dev_team_share(uint64_t part, uint64_t nparts)
{
	return kinet_devi_team_share(part, nparts);
}

/* ---- copy: n bytes by the group with 16-byte loads and stores where both
 * pointers allow; what the team's puts to mapped ranks do.  Any memory the
 * device code can reach. ---- */

KINET_DEV_FN void kinet_dev_coll_copy(void *dst, const void *src, uint64_t n)
{
	kinet_devi_coll_copy_g(KINET_DEVI_GROUP_THREAD, dst, src, n);
}
KINET_DEV_FN void kinet_dev_coll_copy_warp(void *dst, const void *src, uint64_t n)
{
	kinet_devi_coll_copy_g(KINET_DEVI_GROUP_WARP, dst, src, n);
}
KINET_DEV_FN void kinet_dev_coll_copy_block(void *dst, const void *src, uint64_t n)
{
	kinet_devi_coll_copy_g(KINET_DEVI_GROUP_BLOCK, dst, src, n);
}

/* The forms macros take parameter lists, which clang-format would space as products. */
/* clang-format off */

/* put: heap [src_off, +bytes) of this rank to heap [dst_off, ...) of rank
 * peer.  Mapped: complete (as stores are) once a signal, quiet or barrier
 * of the group orders it; through the QP: the source may change only after
 * kinet_dev_team_quiet (or once the peer has seen a later signal). */
/* What the macro below defines (written out for grep and readers):
 * int kinet_dev_team_put(const struct kinet_dev_team *team, int peer, uint64_t dst_off, uint64_t
 *     src_off, uint64_t bytes);
 * and kinet_dev_team_put_warp, kinet_dev_team_put_block with the same parameters. */
KINET_DEVI_FORMS(team_put, kinet_devi_team_put_g,
		 (const struct kinet_dev_team *team, int peer, uint64_t dst_off, uint64_t src_off, uint64_t bytes),
		 (team, peer, dst_off, src_off, bytes))

/* signal: add value to rank peer's word of slot from this rank, after the
 * group's earlier puts to peer (and, on a mapped peer, after every store
 * the group made before the call: a system-scope release). */
/* What the macro below defines (written out for grep and readers):
 * int kinet_dev_team_signal(const struct kinet_dev_team *team, int peer, uint32_t slot, uint64_t
 *     value);
 * and kinet_dev_team_signal_warp, kinet_dev_team_signal_block with the same parameters. */
KINET_DEVI_FORMS(team_signal, kinet_devi_team_signal_g,
		 (const struct kinet_dev_team *team, int peer, uint32_t slot, uint64_t value),
		 (team, peer, slot, value))

/* put_signal: put, then signal (one call). */
/* What the macro below defines (written out for grep and readers):
 * int kinet_dev_team_put_signal(const struct kinet_dev_team *team, int peer, uint64_t dst_off,
 *     uint64_t src_off, uint64_t bytes, uint32_t slot, uint64_t value);
 * and kinet_dev_team_put_signal_warp, kinet_dev_team_put_signal_block with the same parameters. */
KINET_DEVI_FORMS(team_put_signal, kinet_devi_team_put_signal_g,
		 (const struct kinet_dev_team *team, int peer, uint64_t dst_off, uint64_t src_off, uint64_t bytes,
		  uint32_t slot, uint64_t value),
		 (team, peer, dst_off, src_off, bytes, slot, value))

/* wait_until: this rank's word of slot from src >= value (acquire: the data
 * signalled before it is visible), bounded by src's QP timeout.  *seen may
 * be NULL. */
/* What the macro below defines (written out for grep and readers):
 * int kinet_dev_team_wait_until(const struct kinet_dev_team *team, uint32_t slot, int src, uint64_t
 *     value, uint64_t *seen);
 * and kinet_dev_team_wait_until_warp, kinet_dev_team_wait_until_block with the same parameters. */
KINET_DEVI_FORMS(team_wait_until, kinet_devi_team_wait_until_g,
		 (const struct kinet_dev_team *team, uint32_t slot, int src, uint64_t value, uint64_t *seen),
		 (team, slot, src, value, seen))

/* quiet: the group's puts and signals to peer are complete (stores fenced
 * at system scope; WQEs completed, -EIO if one failed) and their sources may
 * be reused. */
/* What the macro below defines (written out for grep and readers):
 * int kinet_dev_team_quiet(const struct kinet_dev_team *team, int peer);
 * and kinet_dev_team_quiet_warp, kinet_dev_team_quiet_block with the same parameters. */
KINET_DEVI_FORMS(team_quiet, kinet_devi_team_quiet_g, (const struct kinet_dev_team *team, int peer), (team, peer))

/* clang-format on */

#endif /* KINET_DEVICE_COLL_TEAM_CUH */
