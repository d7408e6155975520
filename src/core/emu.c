/*
 * What the device API calls in libkinet under host emulation
 * (KINET_HOST_EMU): the clock and the sleep (its headers compile as ISO C11
 * and as C++, where POSIX clocks are not declared), and the count of
 * emulated device threads (kinet_emu_launch), which the engine weighs
 * against the cores (pollers.c).
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
