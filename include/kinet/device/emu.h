/*
 * kinet device API under host emulation (KINET_HOST_EMU): the clock and
 * the sleep that the device code's spin loops take from libkinet.  ISO C11
 * (gcc -std=c11) declares no POSIX clock, and these headers compile as
 * strict C11 and as C++, so libkinet provides them.  Public because device
 * code compiled into the program calls them (through
 * kinet/device/impl/emu.cuh); an application has no reason to.
 */
#ifndef KINET_DEVICE_EMU_H
#define KINET_DEVICE_EMU_H

#include <stdint.h>

#include "kinet/api.h"

#ifdef __cplusplus
extern "C" {
#endif
/* CLOCK_MONOTONIC in nanoseconds. */
KINET_API uint64_t kinet_emu_now_ns(void);
/* Sleeps about ns nanoseconds. */
KINET_API void kinet_emu_sleep_ns(uint64_t ns);
#ifdef __cplusplus
}
#endif

#endif /* KINET_DEVICE_EMU_H */
