/*
 * kinet device API: what the platform gives every program.
 *
 * The device API is CUDA C written in C style.  The same headers compile
 *  - with nvcc, as device code: every function is KINET_DEV_FN
 *    (static __device__ __forceinline__), and
 *  - as plain C11 with KINET_HOST_EMU defined, for CPU threads that play GPU
 *    threads against the software NIC (tests, the -emu examples):
 *    KINET_DEV_FN is static inline.
 * How each primitive is done on either side is impl/platform.cuh.
 *
 * Statuses: 0 (KINET_DEV_OK) or a negative errno, as on the host
 * (docs/api/kinet_errors.3.md).
 */
#ifndef KINET_DEVICE_PLATFORM_CUH
#define KINET_DEVICE_PLATFORM_CUH

#include "kinet/api.h"
#include <errno.h>
#include <stdint.h>
#include <string.h>

#if defined(KINET_HOST_EMU) && defined(__CUDA_ARCH__)
#error "KINET_HOST_EMU is for host (C) compilation of the device API, not for nvcc device code"
#endif
#if !defined(KINET_HOST_EMU) && !defined(__CUDACC__)
#error "kinet/device.cuh needs nvcc, or KINET_HOST_EMU defined to run the device API on CPU threads"
#endif

/* Statuses: 0 for success, else a negative errno (the host's convention). */
#ifndef EAGAIN
#define EAGAIN 11
#endif
#ifndef EIO
#define EIO 5
#endif
#ifndef EINVAL
#define EINVAL 22
#endif
#ifndef ETIMEDOUT
#define ETIMEDOUT 110
#endif
#ifndef EOPNOTSUPP
#define EOPNOTSUPP 95
#endif
#define KINET_DEV_OK 0
#define KINET_DEV_EAGAIN (-EAGAIN)
#define KINET_DEV_EIO (-EIO)
#define KINET_DEV_EINVAL (-EINVAL)
#define KINET_DEV_ETIMEDOUT (-ETIMEDOUT)
#define KINET_DEV_EOPNOTSUPP (-EOPNOTSUPP)

#include "kinet/device/impl/platform.cuh"

/* Nanoseconds of a clock every thread of the device shares (%globaltimer;
 * CLOCK_MONOTONIC under emulation). */
KINET_DEV_FN uint64_t kinet_dev_now_ns(void)
{
	return kinet_devi_now_ns();
}

/* Backs off in a spin loop, given the iteration count: on the GPU no sleep
 * for the first KINET_DEV_SPIN_ITERS iterations, then short sleeps, then
 * longer ones; under emulation a pause, then a yield, then a sleep. */
KINET_DEV_FN void kinet_dev_relax(uint32_t iter)
{
	kinet_devi_relax(iter);
}

/* Full (sequentially consistent) system-scope fence. */
KINET_DEV_FN void kinet_dev_fence_sys(void)
{
	kinet_devi_fence_sys();
}

/* Orders every earlier store of the thread (and, PTX fences being
 * cumulative, every store it has observed, e.g. through a barrier) before
 * every later store, at system scope: the CPU engine or the NIC sees the WQE
 * bytes before the doorbell that covers them. */
KINET_DEV_FN void kinet_dev_fence_release_sys(void)
{
	kinet_devi_fence_release_sys();
}

/* Orders an earlier load (a CQE owner byte, a signal word) before every
 * later load: data the NIC placed before it wrote the CQE or the signal is
 * then read fresh. */
KINET_DEV_FN void kinet_dev_fence_acquire_sys(void)
{
	kinet_devi_fence_acquire_sys();
}

#endif /* KINET_DEVICE_PLATFORM_CUH */
