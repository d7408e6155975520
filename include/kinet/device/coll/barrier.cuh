/*
 * kinet device collectives: the team barrier.
 *
 * kinet_dev_team_barrier[_warp|_block](team) returns once the calling
 * group of every rank of the team has called it: the group's lane is its
 * unit index (global thread, warp or block index)
 * modulo the team's lanes, and lane l of rank r meets lane l of every other
 * rank.  A kernel whose blocks should all be in the barrier synchronises
 * its blocks around it itself (one block calls it).  Groups that share a
 * lane must not be in a barrier at the same time.
 *
 * Ordering: the group's earlier puts and signals to every rank are
 * delivered before that rank leaves the barrier (each rank gets its
 * barrier signal after them, on the same QP or behind a system-scope
 * release).  Every lane counts its own barriers in the team's region
 * (barrier_epoch[lane]); the signal words only grow, so consecutive
 * barriers never race a reset.  Bounded by the QPs' timeouts (-ETIMEDOUT:
 * a rank did not come); -EIO when a signal failed.
 */
#ifndef KINET_DEVICE_COLL_BARRIER_CUH
#define KINET_DEVICE_COLL_BARRIER_CUH

#include "kinet/device/coll/impl/barrier.cuh"
#include "kinet/device/coll/team.cuh"
#include "kinet/device/impl/forms.cuh"

/* clang-format off */
/* What the macro below defines (written out for grep and readers):
 * int kinet_dev_team_barrier(const struct kinet_dev_team *team);
 * and kinet_dev_team_barrier_warp, kinet_dev_team_barrier_block with the same parameters. */
KINET_DEVI_FORMS(team_barrier, kinet_devi_team_barrier_g, (const struct kinet_dev_team *team), (team))
/* clang-format on */

#endif /* KINET_DEVICE_COLL_BARRIER_CUH */
