/*
 * What the device API calls in libkinet under host emulation
 * (KINET_HOST_EMU): the clock and the sleep (its headers compile as ISO C11
 * and as C++, where POSIX clocks are not declared), and the count of
 * emulated device threads (kinet_emu_launch), which the engine weighs
 * against the cores (pollers.c); and each emulated thread's block index,
 * kept here once: a thread-local defined in the header would be a copy per
 * translation unit, and device code in a file other than the one that
 * launches it would read a block index never set.
 */
#include <time.h>

#include "internal.h"

KINET_API uint64_t kinet_emu_now_ns(void)
{
	return kinet_now_ns();
}

KINET_API void kinet_emu_sleep_ns(uint64_t ns)
{
	struct timespec ts = {.tv_sec = (time_t)(ns / 1000000000ull), .tv_nsec = (long)(ns % 1000000000ull)};

	nanosleep(&ts, NULL);
}

KINET_API void kinet_emu_threads_add(int delta)
{
	kinet_pollers_add(false, delta);
}

static _Thread_local unsigned emu_block, emu_grid_blocks = 1;

KINET_API void kinet_emu_block_enter(unsigned block, unsigned nblocks)
{
	emu_block = block;
	emu_grid_blocks = nblocks;
}

KINET_API unsigned kinet_emu_block_id(void)
{
	return emu_block;
}

KINET_API unsigned kinet_emu_grid_blocks(void)
{
	return emu_grid_blocks;
}
