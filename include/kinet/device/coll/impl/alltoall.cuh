/*
 * kinet device collectives, implementation: all-to-all(v)'s generics
 * (kinet/device/coll/alltoall.cuh has the forms and the semantics).  Not
 * API.
 */
#ifndef KINET_DEVICE_COLL_IMPL_ALLTOALL_CUH
#define KINET_DEVICE_COLL_IMPL_ALLTOALL_CUH

#include "kinet/device/coll/impl/team.cuh"

#ifndef KINET_DEV_ALLTOALL_MIN_SLICE
#define KINET_DEV_ALLTOALL_MIN_SLICE 4096ull
#endif

/* Slice `part` of `nparts` of n bytes: slices of at least the minimum,
 * 16-byte multiples, so the first parts take them all and the others none;
 * *off and *len (0: this part has no data). */
KINET_DEV_FN void kinet_devi_alltoall_slice(uint64_t n, uint64_t part, uint64_t nparts, uint64_t *off,
					    uint64_t *len)
{
	uint64_t chunk = nparts ? (n + nparts - 1) / nparts : n;
	if (chunk < KINET_DEV_ALLTOALL_MIN_SLICE)
		chunk = KINET_DEV_ALLTOALL_MIN_SLICE;
	chunk = (chunk + 15) & ~(uint64_t)15;
	*off = part * chunk < n ? part * chunk : n;
	*len = n - *off < chunk ? n - *off : chunk;
}

/* The send half.  send_displ/send_bytes/recv_displ NULL: uniform blocks of
 * `bytes` (send_off + p * bytes -> recv_off + rank * bytes). */
KINET_DEV_FN int kinet_devi_alltoall_send_any_g(int g, const struct kinet_dev_team *team, uint32_t slot,
						uint64_t part, uint64_t nparts, uint64_t send_off,
						const uint64_t *send_displ, const uint64_t *send_bytes,
						uint64_t recv_off, const uint64_t *recv_displ, uint64_t bytes)
{
	int size = team->size, st = 0;
	if (slot >= team->slots || part >= nparts)
		return -EINVAL;
	for (int i = 0; i < size && !st; i++) {
		int p = (int)(((uint64_t)team->rank + 1 + part + (uint64_t)i) % (uint64_t)size);
		uint64_t n = send_bytes ? send_bytes[p] : bytes;
		uint64_t sd = send_displ ? send_displ[p] : (uint64_t)p * bytes;
		uint64_t rd = recv_displ ? recv_displ[p] : (uint64_t)team->rank * bytes;
		uint64_t off, len;
		kinet_devi_alltoall_slice(n, part, nparts, &off, &len);
		/* Every part signals every peer, data or not: a round then
		 * completes only once every unit of the sender is past its
		 * previous one (and has read it), which is what lets receive
		 * buffers be reused. */
		st = kinet_devi_team_put_signal_g(g, team, p, recv_off + rd + off, send_off + sd + off, len,
						  slot, kinet_devi_team_share(part, nparts));
	}
	return st;
}

KINET_DEV_FN int kinet_devi_alltoall_wait_g(int g, const struct kinet_dev_team *team, uint32_t slot,
					    uint64_t epoch)
{
	int st = 0;
	if (epoch == 0 || epoch >= KINET_DEV_TEAM_EPOCH)
		return -EINVAL;
	for (int i = 0; i < team->size && !st; i++)
		st = kinet_devi_team_wait_until_g(g, team, slot, (team->rank + i) % team->size,
						  epoch * KINET_DEV_TEAM_EPOCH, NULL);
	return st;
}
/* Send, wait for every source, then complete this unit's sends through
 * QPs (mapped stores were released by their signals). */
KINET_DEV_FN int kinet_devi_alltoall_any_g(int g, const struct kinet_dev_team *team, uint32_t slot,
					   uint64_t epoch, uint64_t send_off, const uint64_t *send_displ,
					   const uint64_t *send_bytes, uint64_t recv_off,
					   const uint64_t *recv_displ, uint64_t bytes)
{
	if (epoch == 0 || epoch >= KINET_DEV_TEAM_EPOCH)
		return -EINVAL;
	int st = kinet_devi_alltoall_send_any_g(g, team, slot, kinet_devi_coll_id_g(g),
						kinet_devi_coll_count_g(g), send_off, send_displ, send_bytes,
						recv_off, recv_displ, bytes);
	if (!st)
		st = kinet_devi_alltoall_wait_g(g, team, slot, epoch);
	for (int p = 0; p < team->size && !st; p++)
		if (!team->peer[p].mapped)
			st = kinet_devi_team_quiet_g(g, team, p);
	return st;
}

/* The explicit-part send half needs every table. */
KINET_DEV_FN int kinet_devi_alltoallv_send_g(int g, const struct kinet_dev_team *team, uint32_t slot,
					     uint64_t part, uint64_t nparts, uint64_t send_off,
					     const uint64_t *send_displ, const uint64_t *send_bytes,
					     uint64_t recv_off, const uint64_t *recv_displ)
{
	if (!send_displ || !send_bytes || !recv_displ)
		return -EINVAL;
	return kinet_devi_alltoall_send_any_g(g, team, slot, part, nparts, send_off, send_displ, send_bytes,
					      recv_off, recv_displ, 0);
}

#endif /* KINET_DEVICE_COLL_IMPL_ALLTOALL_CUH */
