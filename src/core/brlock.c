/*
 * Reader-sharded read-write lock (brlock.h).
 */
#include <stdatomic.h>

#include "brlock.h"

/* Threads get shards round-robin on first use, so the first sixteen
 * threads that read (engine threads start early) never share one. */
static atomic_uint next_shard;
static _Thread_local int my_shard = -1;

static int shard_of_thread(void)
{
	if (my_shard < 0)
		my_shard = (int)(atomic_fetch_add_explicit(&next_shard, 1, memory_order_relaxed) %
				 KINET_BRLOCK_SHARDS);
	return my_shard;
}

void kinet_brlock_init(struct kinet_brlock *b)
{
	for (int i = 0; i < KINET_BRLOCK_SHARDS; i++)
		pthread_rwlock_init(&b->shard[i].lock, NULL);
}

void kinet_brlock_destroy(struct kinet_brlock *b)
{
	for (int i = 0; i < KINET_BRLOCK_SHARDS; i++)
		pthread_rwlock_destroy(&b->shard[i].lock);
}

void kinet_brlock_rdlock(struct kinet_brlock *b)
{
	pthread_rwlock_rdlock(&b->shard[shard_of_thread()].lock);
}

void kinet_brlock_rdunlock(struct kinet_brlock *b)
{
	pthread_rwlock_unlock(&b->shard[shard_of_thread()].lock);
}

void kinet_brlock_wrlock(struct kinet_brlock *b)
{
	for (int i = 0; i < KINET_BRLOCK_SHARDS; i++)
		pthread_rwlock_wrlock(&b->shard[i].lock);
}

void kinet_brlock_wrunlock(struct kinet_brlock *b)
{
	for (int i = KINET_BRLOCK_SHARDS - 1; i >= 0; i--)
		pthread_rwlock_unlock(&b->shard[i].lock);
}
