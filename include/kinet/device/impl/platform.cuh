/*
 * kinet device API, implementation: the portability layer.
 *
 * The device API is CUDA C written in C style.  The same headers compile
 *  - with nvcc, as device code (static __device__ __forceinline__), and
 *  - as plain C11 with KINET_HOST_EMU defined, for CPU threads that play GPU
 *    threads against the software NIC (tests, the -emu examples).
 *
 * This file maps what differs: function qualifiers, fences, atomics, the
 * global timer, spinning politely, and the "group" of a warp or a block
 * (under emulation every group is one thread: lane 0 of 1).
 *
 * Memory model notes (what each primitive is for):
 *  - kinet_dev_fence_release_sys(): orders every earlier store of the thread
 *    (and, PTX fences being cumulative, every store it has observed, e.g.
 *    through a barrier) before every later store, at system scope: the CPU
 *    engine or the NIC sees the WQE bytes before the doorbell that covers them.
 *  - kinet_dev_fence_acquire_sys(): orders an earlier load (a CQE owner byte,
 *    a signal word) before every later load: data the NIC placed before it
 *    wrote the CQE/signal is then read fresh (L1 is invalidated).
 *  - kinet_dev_fence_sys(): full (sequentially consistent) system fence.
 *  - *_gpu variants order device-state counters (in GPU memory) between GPU
 *    threads; *_cta variants the same between threads of one block (QPs
 *    shared KINET_SHARE_CTA); under emulation they are the same C11 fences.
 *  - kinet_devi_load_cqe_hi/_lo() (CUDA only): 16-byte relaxed
 *    system-scope loads of a CQE's last 32 bytes (kinet_dev_cq_peek_at in
 *    cq.cuh; under emulation it reads op_own with an acquire load).
 */
#ifndef KINET_DEVICE_IMPL_PLATFORM_CUH
#define KINET_DEVICE_IMPL_PLATFORM_CUH

#include <errno.h>
#include <stdint.h>
#include <string.h>

/* Groups of the generic forms (kinet_devi_<verb>_g) behind the thread,
 * _warp and _block forms of the verbs. */
#define KINET_DEVI_GROUP_THREAD 0
#define KINET_DEVI_GROUP_WARP 1
#define KINET_DEVI_GROUP_BLOCK 2

#if defined(KINET_HOST_EMU)
#include "kinet/device/impl/emu.cuh"
#else
#include "kinet/device/impl/cuda.cuh"
#endif

#endif /* KINET_DEVICE_IMPL_PLATFORM_CUH */
