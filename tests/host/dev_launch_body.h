/*
 * test_dev_launch: device code compiled in a file of its own
 * (dev_launch_body.c), launched from test_dev_launch.c.
 */
#ifndef KINET_TEST_DEV_LAUNCH_BODY_H
#define KINET_TEST_DEV_LAUNCH_BODY_H

#define DEV_LAUNCH_BLOCKS 8

struct dev_launch_seen {
	unsigned count[DEV_LAUNCH_BLOCKS]; /* threads that saw block index i */
	unsigned grid[DEV_LAUNCH_BLOCKS];  /* the block count block i saw */
	unsigned out_of_range;
};

/* Records what the calling emulated thread sees as its block (arg: a
 * struct dev_launch_seen). */
void dev_launch_record(void *arg);

#endif
