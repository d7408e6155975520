/* test_dev_launch's device code, in a file other than the launch's. */
#include "kinet/device/launch.h"

#include "dev_launch_body.h"

void dev_launch_record(void *arg)
{
	struct dev_launch_seen *s = arg;
	unsigned b = kinet_dev_block_id();

	if (b >= DEV_LAUNCH_BLOCKS) {
		__atomic_add_fetch(&s->out_of_range, 1, __ATOMIC_RELAXED);
		return;
	}
	__atomic_add_fetch(&s->count[b], 1, __ATOMIC_RELAXED);
	__atomic_store_n(&s->grid[b], kinet_dev_grid_blocks(), __ATOMIC_RELAXED);
}
