/*
 * kinet device collectives, implementation: the team barrier's generic
 * (kinet/device/coll/barrier.cuh has the forms and the semantics).  Not
 * API.
 */
#ifndef KINET_DEVICE_COLL_IMPL_BARRIER_CUH
#define KINET_DEVICE_COLL_IMPL_BARRIER_CUH

#include "kinet/device/coll/impl/team.cuh"

KINET_DEV_FN int kinet_devi_team_barrier_g(int g, const struct kinet_dev_team *team)
{
	uint32_t lane = (uint32_t)(kinet_devi_coll_id_g(g) % team->lanes);
	uint32_t slot = team->slots + lane; /* the lanes' words follow the slots' */
	uint64_t *epoch = &team->barrier_epoch[lane];
	int st = 0;
	uint64_t e = 0;
	/* The group's stores before its leader's signals (their release). */
	kinet_devi_group_sync(g);
	if (kinet_devi_group_rank(g) == 0) {
		e = *epoch + 1;
		for (int i = 1; i < team->size && !st; i++) {
			int p = (team->rank + i) % team->size;
			const struct kinet_dev_team_peer *x = &team->peer[p];
			uint64_t off = ((uint64_t)slot * (uint64_t)team->size + (uint64_t)team->rank) * 8;
			if (x->mapped) {
				kinet_devi_team_red_release((uint64_t *)(void *)(x->mapped + off), 1);
			} else {
				st = kinet_dev_signal(x->qp, x->addr + off, x->rkey, 1, NULL);
			}
		}
		for (int i = 1; i < team->size && !st; i++) {
			int p = (team->rank + i) % team->size;
			st = kinet_dev_signal_wait_until(team->peer[p].qp,
							 (const uint64_t *)(const void *)team->base +
								 (uint64_t)slot * (uint64_t)team->size +
								 (uint64_t)p,
							 KINET_DEV_CMP_GE, e, NULL);
		}
		/* Counted only when passed: a failed barrier leaves the lane
		 * where it was (its peers are ahead; the team is then unusable
		 * on this lane, as after any lost signal). */
		if (!st)
			*epoch = e;
	}
	kinet_devi_group_bcast(g, &st, &e);
	return st;
}

#endif /* KINET_DEVICE_COLL_IMPL_BARRIER_CUH */
