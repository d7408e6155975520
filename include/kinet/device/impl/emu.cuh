/*
 * kinet device API, implementation: the platform under host emulation
 * (plain C11 on CPU threads).  Included by impl/platform.cuh only.
 */
#ifndef KINET_DEVICE_IMPL_EMU_CUH
#define KINET_DEVICE_IMPL_EMU_CUH

#include <sched.h>

/* ===================== host emulation (plain C11) ===================== */

/* kinet_emu_now_ns, kinet_emu_sleep_ns: libkinet's (exported, so declared
 * in a public header). */
#include "kinet/device/emu.h"

#define KINET_DEV_FN static inline
#ifndef __device__
#define __device__
#endif
#ifndef __host__
#define __host__
#endif
#ifndef __global__
#define __global__
#endif
#ifndef __forceinline__
#define __forceinline__ inline
#endif
#ifndef __shared__
#define __shared__ static
#endif

KINET_DEV_FN uint64_t kinet_devi_now_ns(void)
{
	return kinet_emu_now_ns();
}

/* Called in every spin loop with the iteration count: spins briefly, then
 * yields so that engine threads get the CPU on small machines. */
KINET_DEV_FN void kinet_devi_relax(uint32_t iter)
{
	if (iter < 16) {
#if defined(__x86_64__) || defined(__i386__)
		__builtin_ia32_pause();
#endif
	} else if (iter < 4096) {
		sched_yield();
	} else {
		kinet_emu_sleep_ns(20000);
	}
}

/* ThreadSanitizer does not model fences, and the device API publishes with
 * them (WQE stores, fence, relaxed doorbell store; relaxed owner load,
 * fence, CQE data).  Under TSan the relaxed accesses such a fence orders
 * get the ordering the fence gives them, so it sees the same edges. */
#if defined(__SANITIZE_THREAD__)
#define KINET_DEVI_EMU_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define KINET_DEVI_EMU_TSAN 1
#endif
#endif
#if defined(KINET_DEVI_EMU_TSAN)
#define KINET_DEVI_EMU_LOAD_ORDER __ATOMIC_ACQUIRE
#define KINET_DEVI_EMU_STORE_ORDER __ATOMIC_RELEASE
#else
#define KINET_DEVI_EMU_LOAD_ORDER __ATOMIC_RELAXED
#define KINET_DEVI_EMU_STORE_ORDER __ATOMIC_RELAXED
#endif

KINET_DEV_FN void kinet_devi_fence_sys(void)
{
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
}
KINET_DEV_FN void kinet_devi_fence_release_sys(void)
{
	__atomic_thread_fence(__ATOMIC_RELEASE);
}
KINET_DEV_FN void kinet_devi_fence_acquire_sys(void)
{
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
}
KINET_DEV_FN void kinet_devi_fence_gpu(void)
{
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
}
KINET_DEV_FN void kinet_devi_fence_acquire_gpu(void)
{
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
}
KINET_DEV_FN void kinet_devi_fence_cta(void)
{
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
}

/* A word the NIC (the engine) writes, read once without ordering. */
KINET_DEV_FN uint64_t kinet_devi_load_relaxed_u64_sys(const uint64_t *p)
{
	return __atomic_load_n(p, KINET_DEVI_EMU_LOAD_ORDER);
}
KINET_DEV_FN uint64_t kinet_devi_load_acquire_u64_sys(const uint64_t *p)
{
	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}
KINET_DEV_FN uint32_t kinet_devi_load_acquire_u32_sys(const uint32_t *p)
{
	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}
KINET_DEV_FN uint64_t kinet_devi_load_acquire_u64_gpu(const uint64_t *p)
{
	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}
KINET_DEV_FN uint64_t kinet_devi_load_acquire_u64_cta(const uint64_t *p)
{
	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}
KINET_DEV_FN uint32_t kinet_devi_load_acquire_u32_gpu(const uint32_t *p)
{
	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}
KINET_DEV_FN uint32_t kinet_devi_load_acquire_u32_cta(const uint32_t *p)
{
	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}
KINET_DEV_FN uint64_t kinet_devi_load_relaxed_u64(const uint64_t *p)
{
	return __atomic_load_n(p, KINET_DEVI_EMU_LOAD_ORDER);
}
KINET_DEV_FN uint64_t kinet_devi_load_relaxed_u64_gpu(const uint64_t *p)
{
	return __atomic_load_n(p, __ATOMIC_RELAXED);
}
/* Two adjacent 64-bit words (16-byte aligned) in one request. */
KINET_DEV_FN void kinet_devi_load_relaxed_u64x2_gpu(const uint64_t *p, uint64_t v[2])
{
	v[0] = __atomic_load_n(&p[0], __ATOMIC_RELAXED);
	v[1] = __atomic_load_n(&p[1], __ATOMIC_RELAXED);
}
KINET_DEV_FN uint32_t kinet_devi_load_relaxed_u32_gpu(const uint32_t *p)
{
	return __atomic_load_n(p, __ATOMIC_RELAXED);
}
KINET_DEV_FN uint32_t kinet_devi_load_relaxed_u32(const uint32_t *p)
{
	return __atomic_load_n(p, KINET_DEVI_EMU_LOAD_ORDER);
}
KINET_DEV_FN uint8_t kinet_devi_load_volatile_u8(const uint8_t *p)
{
	return __atomic_load_n(p, KINET_DEVI_EMU_LOAD_ORDER);
}
KINET_DEV_FN void kinet_devi_store_release_u64_gpu(uint64_t *p, uint64_t v)
{
	__atomic_store_n(p, v, __ATOMIC_RELEASE);
}
KINET_DEV_FN void kinet_devi_store_release_u64_cta(uint64_t *p, uint64_t v)
{
	__atomic_store_n(p, v, __ATOMIC_RELEASE);
}
KINET_DEV_FN void kinet_devi_store_release_u64_sys(uint64_t *p, uint64_t v)
{
	__atomic_store_n(p, v, __ATOMIC_RELEASE);
}
KINET_DEV_FN void kinet_devi_store_release_u32_sys(uint32_t *p, uint32_t v)
{
	__atomic_store_n(p, v, __ATOMIC_RELEASE);
}
KINET_DEV_FN void kinet_devi_store_relaxed_u64(uint64_t *p, uint64_t v)
{
	__atomic_store_n(p, v, KINET_DEVI_EMU_STORE_ORDER);
}
KINET_DEV_FN void kinet_devi_store_relaxed_u32(uint32_t *p, uint32_t v)
{
	__atomic_store_n(p, v, KINET_DEVI_EMU_STORE_ORDER);
}
KINET_DEV_FN uint64_t kinet_devi_atomic_add_u64(uint64_t *p, uint64_t v)
{
	return __atomic_fetch_add(p, v, __ATOMIC_ACQ_REL);
}
/* Compare-and-swap; returns the old value (as atomicCAS). */
KINET_DEV_FN uint64_t kinet_devi_atomic_cas_u64(uint64_t *p, uint64_t expected, uint64_t desired)
{
	__atomic_compare_exchange_n(p, &expected, desired, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
	return expected;
}
KINET_DEV_FN uint32_t kinet_devi_atomic_cas_u32(uint32_t *p, uint32_t expected, uint32_t desired)
{
	__atomic_compare_exchange_n(p, &expected, desired, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
	return expected;
}
/* Block-scope forms (the same under emulation). */
KINET_DEV_FN uint64_t kinet_devi_atomic_cas_u64_cta(uint64_t *p, uint64_t expected, uint64_t desired)
{
	return kinet_devi_atomic_cas_u64(p, expected, desired);
}
KINET_DEV_FN uint32_t kinet_devi_atomic_cas_u32_cta(uint32_t *p, uint32_t expected, uint32_t desired)
{
	return kinet_devi_atomic_cas_u32(p, expected, desired);
}
KINET_DEV_FN uint32_t kinet_devi_atomic_exch_u32(uint32_t *p, uint32_t v)
{
	return __atomic_exchange_n(p, v, __ATOMIC_ACQ_REL);
}
KINET_DEV_FN uint32_t kinet_devi_atomic_exch_u32_cta(uint32_t *p, uint32_t v)
{
	return kinet_devi_atomic_exch_u32(p, v);
}
KINET_DEV_FN uint64_t kinet_devi_atomic_max_u64(uint64_t *p, uint64_t v)
{
	uint64_t old = __atomic_load_n(p, __ATOMIC_RELAXED);
	while (old < v && !__atomic_compare_exchange_n(p, &old, v, 1, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
		;
	return old;
}

/* Peer path (peer.cuh): coherent reads of window keys, system-scope
 * atomics on peer memory, and bulk copies. */
KINET_DEV_FN void kinet_devi_load_coherent_u32x4(const uint32_t *p, uint32_t v[4])
{
	for (int i = 0; i < 4; i++)
		v[i] = __atomic_load_n(&p[i], __ATOMIC_ACQUIRE);
}
KINET_DEV_FN uint64_t kinet_devi_atomic_add_u64_sys(uint64_t *p, uint64_t v)
{
	return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST);
}
KINET_DEV_FN uint64_t kinet_devi_atomic_cas_u64_sys(uint64_t *p, uint64_t expected, uint64_t desired)
{
	__atomic_compare_exchange_n(p, &expected, desired, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
	return expected;
}
/* Acquire and release at once: a semaphore item changing hands. */
KINET_DEV_FN uint32_t kinet_devi_atomic_cas_u32_sys(uint32_t *p, uint32_t expected, uint32_t desired)
{
	__atomic_compare_exchange_n(p, &expected, desired, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
	return expected;
}
KINET_DEV_FN void kinet_devi_red_add_u64_sys(uint64_t *p, uint64_t v)
{
	__atomic_fetch_add(p, v, __ATOMIC_RELAXED);
}
/* Group copy: one thread does it all under emulation. */
KINET_DEV_FN void kinet_devi_copy_group(int group, void *dst, const void *src, uint64_t n)
{
	(void)group;
	memcpy(dst, src, (size_t)n);
}

/* Groups: under emulation a warp and a block are one thread. */
KINET_DEV_FN uint32_t kinet_devi_group_rank(int group)
{
	(void)group;
	return 0;
}
KINET_DEV_FN uint32_t kinet_devi_group_size(int group)
{
	(void)group;
	return 1;
}
KINET_DEV_FN void kinet_devi_group_sync(int group)
{
	(void)group;
}
/* Makes rank 0's *status and *value every rank's. */
KINET_DEV_FN void kinet_devi_group_bcast(int group, int *status, uint64_t *value)
{
	(void)group;
	(void)status;
	(void)value;
}

#endif /* KINET_DEVICE_IMPL_EMU_CUH */
