/*
 * Host emulation's launch (kinet/device/launch.h): every emulated thread
 * sees its own block index and the block count, also in device code
 * compiled in another file than the one that launches it
 * (dev_launch_body.c).  The index was a thread-local defined in the
 * header, one copy per file: device code elsewhere read a copy never set,
 * and every thread was block 0 (kinet-perf's units, since its device code
 * left launch.cu, all posted as unit 0).
 */
#include "kt.h"

#include "dev_launch_body.h"

/* The same recording, compiled in the launching file. */
static void record_here(void *arg)
{
	dev_launch_record_inline(arg);
}

static void check_each_block_once(const struct dev_launch_seen *s)
{
	KT_CHECK_EQ(s->out_of_range, 0);
	for (int i = 0; i < DEV_LAUNCH_BLOCKS; i++) {
		KT_CHECK_EQ(s->count[i], 1);
		KT_CHECK_EQ(s->grid[i], DEV_LAUNCH_BLOCKS);
	}
}

KT_TEST(block_ids_in_another_file)
{
	struct dev_launch_seen s = {{0}, {0}, 0};

	KT_OK(kinet_emu_launch(DEV_LAUNCH_BLOCKS, dev_launch_record, &s));
	check_each_block_once(&s);
}

KT_TEST(block_ids_in_this_file)
{
	struct dev_launch_seen s = {{0}, {0}, 0};

	KT_OK(kinet_emu_launch(DEV_LAUNCH_BLOCKS, record_here, &s));
	check_each_block_once(&s);
}

KT_MAIN(block_ids_in_another_file, block_ids_in_this_file)
