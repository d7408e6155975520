/*
 * What the device API needs from the C library under host emulation
 * (KINET_HOST_EMU, kinet/device/platform.cuh).  Its headers compile as ISO
 * C11 and as C++, where POSIX clocks are not declared; the library, built
 * with them, provides these instead.
 */
#include <time.h>

#include "internal.h"

uint64_t kinet_emu_now_ns(void)
{
	return kinet_now_ns();
}

void kinet_emu_sleep_ns(uint64_t ns)
{
	struct timespec ts = {.tv_sec = (time_t)(ns / 1000000000ull), .tv_nsec = (long)(ns % 1000000000ull)};

	nanosleep(&ts, NULL);
}
