/*
 * Every fixture at once, for a test that wants them all.  A test includes
 * the one it needs instead: kt_host.h (the host API), kt_mp.h (a rank of a
 * kinetrun job), kt_dev.h (the device API, under host emulation or on a
 * GPU).
 */
#ifndef KINET_TEST_FIXTURE_H
#define KINET_TEST_FIXTURE_H

#include "kt_host.h"
#include "kt_mp.h"
#if defined(KINET_HOST_EMU) || defined(__CUDACC__)
#include "kt_dev.h"
#endif

#endif /* KINET_TEST_FIXTURE_H */
