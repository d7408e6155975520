/*
 * kinet device collectives: all-to-all(v) over a team, from inside a
 * kernel.
 *
 * Every rank sends block p of its send buffer to rank p.  The calling
 * groups of the grid share the work: each group (a unit: thread, warp or
 * block) moves its own slice of every block -- slices of at least
 * KINET_DEV_ALLTOALL_MIN_SLICE bytes, 16-byte multiples, so small blocks
 * take few units -- to the peer's receive buffer and signals that peer with
 * its share of the round (kinet_dev_team_share), data or not, so a
 * receiver knows a source is complete when its word of the slot reaches
 * epoch * KINET_DEV_TEAM_EPOCH, whatever the sender's grid.  Group u starts with peer rank + 1 + u, so the
 * groups spread over the links at once.
 *
 *   kinet_dev_alltoall[_warp|_block](team, slot, epoch, send_off, recv_off, bytes)
 *     send_off + p * bytes  ->  rank p's recv_off + rank * bytes
 *   kinet_dev_alltoallv[_warp|_block](team, slot, epoch, send_off, send_displ, send_bytes,
 *                                     recv_off, recv_displ)
 *     send_off + send_displ[p], send_bytes[p] bytes  ->  rank p's recv_off + recv_displ[p]
 *     (recv_displ[p]: where this rank's block goes in rank p's buffer)
 *
 * Every unit of the grid calls them with the same arguments; each returns
 * once its own slices are sent, every source's block has arrived (the
 * whole receive buffer is in place) and its sends through QPs are complete
 * (the send buffer may be reused).  The halves are there too, for kernels
 * that overlap other work with the exchange or wait per source:
 *
 *   kinet_dev_alltoallv_send[_warp|_block](team, slot, part, nparts, ...): slice `part` of
 *     `nparts`, sent and signalled (any partition of the grid, the same on the whole grid);
 *   kinet_dev_alltoall_wait[_warp|_block](team, slot, epoch): every source of the round in;
 *   kinet_dev_team_wait_until (team.cuh): one source.
 *
 * Rounds: epoch = 1, 2, ... per slot (< 2^32).  A slot and its receive
 * buffer take round e + 1 once every rank has consumed round e (see
 * team.cuh); alternating two slots and two buffers, round e + 2 cannot
 * overtake the consumption of round e when each unit reads its round-e
 * data before it sends round e + 1 (every unit signals every round, so a
 * round completes only once every unit of every rank is past the last).  Statuses as the team's verbs, and
 * -EINVAL for epoch 0 or >= 2^32, a slot or range outside the team.
 */
#ifndef KINET_DEVICE_COLL_ALLTOALL_CUH
#define KINET_DEVICE_COLL_ALLTOALL_CUH

#include "kinet/device/coll/impl/alltoall.cuh"
#include "kinet/device/coll/team.cuh"
#include "kinet/device/impl/forms.cuh"

/* Slice `part` of `nparts` of n bytes (slices of at least
 * KINET_DEV_ALLTOALL_MIN_SLICE, 16-byte multiples, so the first parts take
 * them all and the others none): *off and *len (0: this part has no data). */
KINET_DEV_FN void kinet_dev_alltoall_slice(uint64_t n, uint64_t part, uint64_t nparts, uint64_t *off,
					   uint64_t *len)
{
	kinet_devi_alltoall_slice(n, part, nparts, off, len);
}

/* clang-format off */

/* Uniform blocks: send_off + p * bytes -> rank p's recv_off + rank * bytes. */
/* What the macro below defines (written out for grep and readers):
 * int kinet_dev_alltoall(const struct kinet_dev_team *team, uint32_t slot, uint64_t epoch, uint64_t
 *     send_off, uint64_t recv_off, uint64_t bytes);
 * and kinet_dev_alltoall_warp, kinet_dev_alltoall_block with the same parameters. */
KINET_DEVI_FORMS(alltoall, kinet_devi_alltoall_any_g,
		 (const struct kinet_dev_team *team, uint32_t slot, uint64_t epoch, uint64_t send_off,
		  uint64_t recv_off, uint64_t bytes),
		 (team, slot, epoch, send_off, NULL, NULL, recv_off, NULL, bytes))

/* Per-peer blocks (arrays of size entries in device-readable memory). */
/* What the macro below defines (written out for grep and readers):
 * int kinet_dev_alltoallv(const struct kinet_dev_team *team, uint32_t slot, uint64_t epoch, uint64_t
 *     send_off, const uint64_t *send_displ, const uint64_t *send_bytes, uint64_t recv_off, const
 *     uint64_t *recv_displ);
 * and kinet_dev_alltoallv_warp, kinet_dev_alltoallv_block with the same parameters. */
KINET_DEVI_FORMS(alltoallv, kinet_devi_alltoall_any_g,
		 (const struct kinet_dev_team *team, uint32_t slot, uint64_t epoch, uint64_t send_off,
		  const uint64_t *send_displ, const uint64_t *send_bytes, uint64_t recv_off,
		  const uint64_t *recv_displ),
		 (team, slot, epoch, send_off, send_displ, send_bytes, recv_off, recv_displ, 0))

/* The send half of slice `part` of `nparts` (-EINVAL without the tables). */
/* What the macro below defines (written out for grep and readers):
 * int kinet_dev_alltoallv_send(const struct kinet_dev_team *team, uint32_t slot, uint64_t part,
 *     uint64_t nparts, uint64_t send_off, const uint64_t *send_displ, const uint64_t *send_bytes,
 *     uint64_t recv_off, const uint64_t *recv_displ);
 * and kinet_dev_alltoallv_send_warp, kinet_dev_alltoallv_send_block with the same parameters. */
KINET_DEVI_FORMS(alltoallv_send, kinet_devi_alltoallv_send_g,
		 (const struct kinet_dev_team *team, uint32_t slot, uint64_t part, uint64_t nparts,
		  uint64_t send_off, const uint64_t *send_displ, const uint64_t *send_bytes, uint64_t recv_off,
		  const uint64_t *recv_displ),
		 (team, slot, part, nparts, send_off, send_displ, send_bytes, recv_off, recv_displ))

/* The wait half: every source's block of round epoch has arrived. */
/* What the macro below defines (written out for grep and readers):
 * int kinet_dev_alltoall_wait(const struct kinet_dev_team *team, uint32_t slot, uint64_t epoch);
 * and kinet_dev_alltoall_wait_warp, kinet_dev_alltoall_wait_block with the same parameters. */
KINET_DEVI_FORMS(alltoall_wait, kinet_devi_alltoall_wait_g,
		 (const struct kinet_dev_team *team, uint32_t slot, uint64_t epoch), (team, slot, epoch))

/* clang-format on */

#endif /* KINET_DEVICE_COLL_ALLTOALL_CUH */
