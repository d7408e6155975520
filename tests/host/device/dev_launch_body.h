/*
 * test_dev_launch: device code compiled in a file of its own
 * (dev_launch_body.c), launched from test_dev_launch.c.
 */
#ifndef KINET_TEST_DEV_LAUNCH_BODY_H
#define KINET_TEST_DEV_LAUNCH_BODY_H

#include "kinet/device/launch.h"

#define DEV_LAUNCH_BLOCKS 8

struct dev_launch_seen {
	unsigned count[DEV_LAUNCH_BLOCKS]; /* threads that saw block index i */
	unsigned grid[DEV_LAUNCH_BLOCKS];  /* the block count block i saw */
	unsigned out_of_range;
};

/* Records what the calling emulated thread sees as its block.  Static
 * inline on purpose: each file that calls it compiles its own copy, and
 * the test is about which file reads the block index. */
static inline void dev_launch_record_inline(struct dev_launch_seen *s)
{
	unsigned b = kinet_dev_block_id();

	if (b >= DEV_LAUNCH_BLOCKS) {
		__atomic_add_fetch(&s->out_of_range, 1, __ATOMIC_RELAXED);
		return;
	}
	__atomic_add_fetch(&s->count[b], 1, __ATOMIC_RELAXED);
	__atomic_store_n(&s->grid[b], kinet_dev_grid_blocks(), __ATOMIC_RELAXED);
}

/* dev_launch_record_inline as compiled in dev_launch_body.c (arg: a struct
 * dev_launch_seen). */
void dev_launch_record(void *arg);

#endif
