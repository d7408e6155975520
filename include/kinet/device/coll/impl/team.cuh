/*
 * kinet device collectives, implementation: the team's verbs, each one
 * generic kinet_devi_team_<verb>_g(group, ...) behind its thread, _warp
 * and _block forms (kinet/device/coll/team.cuh), and the grid's units.
 * Not API.
 */
#ifndef KINET_DEVICE_COLL_IMPL_TEAM_CUH
#define KINET_DEVICE_COLL_IMPL_TEAM_CUH

#include "kinet/device.cuh"
#include "kinet/device/coll/types.h"
#include "kinet/device/impl/completion.cuh"
#include "kinet/device/impl/rma.cuh"
#include "kinet/device/impl/signal.cuh"

/* The index of the calling thread, warp or block in the grid and how many
 * there are (under emulation every unit is a block). */
KINET_DEV_FN uint64_t kinet_devi_coll_id_g(int g)
{
#if defined(KINET_HOST_EMU)
	(void)g;
	return kinet_dev_block_id();
#else
	uint64_t b = kinet_dev_block_id(), n = kinet_devi_group_size(KINET_DEVI_GROUP_BLOCK);
	uint64_t t = kinet_devi_group_rank(KINET_DEVI_GROUP_BLOCK);
	if (g == KINET_DEVI_GROUP_BLOCK)
		return b;
	if (g == KINET_DEVI_GROUP_WARP)
		return b * ((n + 31) / 32) + t / 32;
	return b * n + t;
#endif
}

KINET_DEV_FN uint64_t kinet_devi_coll_count_g(int g)
{
#if defined(KINET_HOST_EMU)
	(void)g;
	return kinet_dev_grid_blocks();
#else
	uint64_t b = kinet_dev_grid_blocks(), n = kinet_devi_group_size(KINET_DEVI_GROUP_BLOCK);
	if (g == KINET_DEVI_GROUP_BLOCK)
		return b;
	if (g == KINET_DEVI_GROUP_WARP)
		return b * ((n + 31) / 32);
	return b * n;
#endif
}

/* n bytes by the group: 16-byte words when both pointers are 16-byte
 * aligned (eight loads in flight per thread before their stores,
 * consecutive lanes on consecutive words), else the peer path's copy. */
KINET_DEV_FN void kinet_devi_coll_copy_g(int g, void *dst, const void *src, uint64_t n)
{
#if defined(KINET_HOST_EMU)
	(void)g;
	if (n)
		memcpy(dst, src, (size_t)n);
#else
	uint64_t r = kinet_devi_group_rank(g), gs = kinet_devi_group_size(g);
	if ((((uintptr_t)dst | (uintptr_t)src) & 15) == 0) {
		const int4 *s = (const int4 *)src;
		int4 *d = (int4 *)dst;
		uint64_t w = n >> 4, i = r;
		for (; i + 7 * gs < w; i += 8 * gs) {
			int4 v[8];
#pragma unroll
			for (int k = 0; k < 8; k++)
				v[k] = s[i + (uint64_t)k * gs];
#pragma unroll
			for (int k = 0; k < 8; k++)
				d[i + (uint64_t)k * gs] = v[k];
		}
		for (; i < w; i += gs)
			d[i] = s[i];
		for (uint64_t b = (w << 4) + r; b < n; b += gs)
			((uint8_t *)dst)[b] = ((const uint8_t *)src)[b];
	} else {
		kinet_devi_copy_group(g, dst, src, n);
	}
#endif
}

/* A signal to a mapped rank: the group's earlier stores (synchronised by
 * the caller's barrier), then the add, at system scope.  On the GPU a
 * cumulative release fence and a reduction (no round trip for the old
 * value); under emulation a release add, which is the same in C11 and
 * which ThreadSanitizer, modelling no fences, sees as the edge it is. */
KINET_DEV_FN void kinet_devi_team_red_release(uint64_t *word, uint64_t value)
{
#if defined(KINET_HOST_EMU)
	__atomic_fetch_add(word, value, __ATOMIC_RELEASE);
#else
	kinet_dev_fence_release_sys();
	kinet_devi_red_add_u64_sys(word, value);
#endif
}

KINET_DEV_FN uint64_t kinet_devi_team_share(uint64_t part, uint64_t nparts)
{
	return part + 1 < nparts ? 1 : KINET_DEV_TEAM_EPOCH - (nparts - 1);
}

KINET_DEV_FN int kinet_devi_team_range_ok(const struct kinet_dev_team *team, uint64_t off, uint64_t bytes)
{
	return off <= team->heap_bytes && bytes <= team->heap_bytes - off;
}

KINET_DEV_FN int kinet_devi_team_put_g(int g, const struct kinet_dev_team *team, int peer, uint64_t dst_off,
				       uint64_t src_off, uint64_t bytes)
{
	if (peer < 0 || peer >= team->size || !kinet_devi_team_range_ok(team, dst_off, bytes) ||
	    !kinet_devi_team_range_ok(team, src_off, bytes))
		return -EINVAL;
	if (!bytes)
		return 0;
	const struct kinet_dev_team_peer *p = &team->peer[peer];
	const uint8_t *src = team->base + team->heap_offset + src_off;
	if (p->mapped) {
		kinet_devi_coll_copy_g(g, p->mapped + team->heap_offset + dst_off, src, bytes);
		return 0;
	}
	return kinet_devi_put_g(g, p->qp, src, team->lkey, p->addr + team->heap_offset + dst_off, p->rkey,
				bytes, NULL);
}

KINET_DEV_FN int kinet_devi_team_signal_g(int g, const struct kinet_dev_team *team, int peer, uint32_t slot,
					  uint64_t value)
{
	if (peer < 0 || peer >= team->size || slot >= team->slots)
		return -EINVAL;
	const struct kinet_dev_team_peer *p = &team->peer[peer];
	uint64_t off = ((uint64_t)slot * (uint64_t)team->size + (uint64_t)team->rank) * 8;
	/* Every member's stores before the leader's release (fences are
	 * cumulative), or before its doorbell's release on the QP path. */
	kinet_devi_group_sync(g);
	if (!p->mapped)
		return kinet_devi_signal_g(g, p->qp, p->addr + off, p->rkey, value, NULL);
	if (kinet_devi_group_rank(g) == 0)
		kinet_devi_team_red_release((uint64_t *)(void *)(p->mapped + off), value);
	return 0;
}

KINET_DEV_FN int kinet_devi_team_put_signal_g(int g, const struct kinet_dev_team *team, int peer,
					      uint64_t dst_off, uint64_t src_off, uint64_t bytes,
					      uint32_t slot, uint64_t value)
{
	if (slot >= team->slots)
		return -EINVAL;
	int st = kinet_devi_team_put_g(g, team, peer, dst_off, src_off, bytes);
	return st ? st : kinet_devi_team_signal_g(g, team, peer, slot, value);
}

KINET_DEV_FN int kinet_devi_team_wait_until_g(int g, const struct kinet_dev_team *team, uint32_t slot,
					      int src, uint64_t value, uint64_t *seen)
{
	if (src < 0 || src >= team->size || slot >= team->slots)
		return -EINVAL;
	const uint64_t *word = (const uint64_t *)(const void *)team->base +
			       (uint64_t)slot * (uint64_t)team->size + (uint64_t)src;
	return kinet_devi_signal_wait_until_g(g, team->peer[src].qp, word, KINET_DEV_CMP_GE, value, seen);
}

KINET_DEV_FN int kinet_devi_team_quiet_g(int g, const struct kinet_dev_team *team, int peer)
{
	if (peer < 0 || peer >= team->size)
		return -EINVAL;
	const struct kinet_dev_team_peer *p = &team->peer[peer];
	if (!p->mapped)
		return kinet_devi_quiet_g(g, p->qp);
	kinet_devi_group_sync(g);
	if (kinet_devi_group_rank(g) == 0)
		kinet_dev_fence_sys();
	return 0;
}

#endif /* KINET_DEVICE_COLL_IMPL_TEAM_CUH */
