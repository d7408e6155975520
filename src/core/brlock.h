/*
 * A reader-sharded read-write lock ("big-reader lock", as the Linux kernel
 * had): readers take one shard of their own, writers take every shard.
 * For tables that engine threads read on every batch and the control path
 * rarely changes (the registration table, the registry of local QPs): a
 * single rwlock's counter is one cache line every reader writes, so it
 * bounces between engine threads and caps how far they scale; a shard is
 * only written by the threads that map to it.
 */
#ifndef KINET_CORE_BRLOCK_H
#define KINET_CORE_BRLOCK_H

#include <pthread.h>

#define KINET_BRLOCK_SHARDS 16

struct kinet_brlock {
	struct {
		pthread_rwlock_t lock;
	} __attribute__((aligned(64))) shard[KINET_BRLOCK_SHARDS];
};

/* A static lock: `static struct kinet_brlock l = KINET_BRLOCK_INITIALIZER;` */
#define KINET_BRLOCK_INITIALIZER                                                                             \
	{                                                                                                    \
		.shard = { [0 ... KINET_BRLOCK_SHARDS - 1] = {.lock = PTHREAD_RWLOCK_INITIALIZER} }          \
	}

void kinet_brlock_init(struct kinet_brlock *b);
void kinet_brlock_destroy(struct kinet_brlock *b);
/* Readers: the calling thread's shard (fixed for the thread's life, so the
 * unlock finds the shard the lock took).  A thread may hold the read side
 * of several brlocks at once, not the same one twice. */
void kinet_brlock_rdlock(struct kinet_brlock *b);
void kinet_brlock_rdunlock(struct kinet_brlock *b);
/* Writers: every shard, in order. */
void kinet_brlock_wrlock(struct kinet_brlock *b);
void kinet_brlock_wrunlock(struct kinet_brlock *b);

#endif /* KINET_CORE_BRLOCK_H */
