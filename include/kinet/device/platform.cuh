/*
 * kinet device API: portability layer.
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
 *  - kinet_dev_load_cqe_hi/_lo() (CUDA only): 16-byte relaxed
 *    system-scope loads of a CQE's last 32 bytes (kinet_dev_cq_peek_at in
 *    queue.cuh; under emulation it reads op_own with an acquire load).
 */
#ifndef KINET_DEVICE_PLATFORM_CUH
#define KINET_DEVICE_PLATFORM_CUH

#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "kinet/api.h"

#if defined(KINET_HOST_EMU) && defined(__CUDA_ARCH__)
#error "KINET_HOST_EMU is for host (C) compilation of the device API, not for nvcc device code"
#endif
#if !defined(KINET_HOST_EMU) && !defined(__CUDACC__)
#error "kinet/device.cuh needs nvcc, or KINET_HOST_EMU defined to run the device API on CPU threads"
#endif

/* Statuses: positive errno values, 0 for success. */
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
#define KINET_DEV_OK 0
#define KINET_DEV_EAGAIN EAGAIN
#define KINET_DEV_EIO EIO
#define KINET_DEV_EINVAL EINVAL
#define KINET_DEV_ETIMEDOUT ETIMEDOUT

/* Groups of the _warp and _block forms. */
#define KINET_DEV_GROUP_THREAD 0
#define KINET_DEV_GROUP_WARP 1
#define KINET_DEV_GROUP_BLOCK 2

#if defined(KINET_HOST_EMU)
/* ===================== host emulation (plain C11) ===================== */
#include <sched.h>

/* The clock and the sleep come from libkinet: ISO C11 (gcc -std=c11) does
 * not declare POSIX clocks, and these headers compile as strict C11 and as
 * C++. */
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

KINET_DEV_FN uint64_t kinet_dev_now_ns(void)
{
	return kinet_emu_now_ns();
}

/* Called in every spin loop with the iteration count: spins briefly, then
 * yields so that engine threads get the CPU on small machines. */
KINET_DEV_FN void kinet_dev_relax(uint32_t iter)
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
#define KINET_EMU_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define KINET_EMU_TSAN 1
#endif
#endif
#if defined(KINET_EMU_TSAN)
#define KINET_EMU_LOAD_ORDER __ATOMIC_ACQUIRE
#define KINET_EMU_STORE_ORDER __ATOMIC_RELEASE
#else
#define KINET_EMU_LOAD_ORDER __ATOMIC_RELAXED
#define KINET_EMU_STORE_ORDER __ATOMIC_RELAXED
#endif

KINET_DEV_FN void kinet_dev_fence_sys(void)
{
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
}
KINET_DEV_FN void kinet_dev_fence_release_sys(void)
{
	__atomic_thread_fence(__ATOMIC_RELEASE);
}
KINET_DEV_FN void kinet_dev_fence_acquire_sys(void)
{
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
}
KINET_DEV_FN void kinet_dev_fence_gpu(void)
{
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
}
KINET_DEV_FN void kinet_dev_fence_acquire_gpu(void)
{
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
}
KINET_DEV_FN void kinet_dev_fence_cta(void)
{
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
}

KINET_DEV_FN uint64_t kinet_dev_load_acquire_u64_sys(const uint64_t *p)
{
	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}
KINET_DEV_FN uint64_t kinet_dev_load_acquire_u64_gpu(const uint64_t *p)
{
	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}
KINET_DEV_FN uint64_t kinet_dev_load_acquire_u64_cta(const uint64_t *p)
{
	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}
KINET_DEV_FN uint32_t kinet_dev_load_acquire_u32_gpu(const uint32_t *p)
{
	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}
KINET_DEV_FN uint32_t kinet_dev_load_acquire_u32_cta(const uint32_t *p)
{
	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}
KINET_DEV_FN uint64_t kinet_dev_load_relaxed_u64(const uint64_t *p)
{
	return __atomic_load_n(p, KINET_EMU_LOAD_ORDER);
}
KINET_DEV_FN uint64_t kinet_dev_load_relaxed_u64_gpu(const uint64_t *p)
{
	return __atomic_load_n(p, __ATOMIC_RELAXED);
}
KINET_DEV_FN uint32_t kinet_dev_load_relaxed_u32_gpu(const uint32_t *p)
{
	return __atomic_load_n(p, __ATOMIC_RELAXED);
}
KINET_DEV_FN uint32_t kinet_dev_load_relaxed_u32(const uint32_t *p)
{
	return __atomic_load_n(p, KINET_EMU_LOAD_ORDER);
}
KINET_DEV_FN uint8_t kinet_dev_load_volatile_u8(const uint8_t *p)
{
	return __atomic_load_n(p, KINET_EMU_LOAD_ORDER);
}
KINET_DEV_FN void kinet_dev_store_release_u64_gpu(uint64_t *p, uint64_t v)
{
	__atomic_store_n(p, v, __ATOMIC_RELEASE);
}
KINET_DEV_FN void kinet_dev_store_release_u64_cta(uint64_t *p, uint64_t v)
{
	__atomic_store_n(p, v, __ATOMIC_RELEASE);
}
KINET_DEV_FN void kinet_dev_store_release_u64_sys(uint64_t *p, uint64_t v)
{
	__atomic_store_n(p, v, __ATOMIC_RELEASE);
}
KINET_DEV_FN void kinet_dev_store_release_u32_sys(uint32_t *p, uint32_t v)
{
	__atomic_store_n(p, v, __ATOMIC_RELEASE);
}
KINET_DEV_FN void kinet_dev_store_relaxed_u64(uint64_t *p, uint64_t v)
{
	__atomic_store_n(p, v, KINET_EMU_STORE_ORDER);
}
KINET_DEV_FN void kinet_dev_store_relaxed_u32(uint32_t *p, uint32_t v)
{
	__atomic_store_n(p, v, KINET_EMU_STORE_ORDER);
}
KINET_DEV_FN uint64_t kinet_dev_atomic_add_u64(uint64_t *p, uint64_t v)
{
	return __atomic_fetch_add(p, v, __ATOMIC_ACQ_REL);
}
/* Compare-and-swap; returns the old value (as atomicCAS). */
KINET_DEV_FN uint64_t kinet_dev_atomic_cas_u64(uint64_t *p, uint64_t expected, uint64_t desired)
{
	__atomic_compare_exchange_n(p, &expected, desired, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
	return expected;
}
KINET_DEV_FN uint32_t kinet_dev_atomic_cas_u32(uint32_t *p, uint32_t expected, uint32_t desired)
{
	__atomic_compare_exchange_n(p, &expected, desired, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
	return expected;
}
/* Block-scope forms (the same under emulation). */
KINET_DEV_FN uint64_t kinet_dev_atomic_cas_u64_cta(uint64_t *p, uint64_t expected, uint64_t desired)
{
	return kinet_dev_atomic_cas_u64(p, expected, desired);
}
KINET_DEV_FN uint32_t kinet_dev_atomic_cas_u32_cta(uint32_t *p, uint32_t expected, uint32_t desired)
{
	return kinet_dev_atomic_cas_u32(p, expected, desired);
}
KINET_DEV_FN uint32_t kinet_dev_atomic_exch_u32(uint32_t *p, uint32_t v)
{
	return __atomic_exchange_n(p, v, __ATOMIC_ACQ_REL);
}
KINET_DEV_FN uint32_t kinet_dev_atomic_exch_u32_cta(uint32_t *p, uint32_t v)
{
	return kinet_dev_atomic_exch_u32(p, v);
}
KINET_DEV_FN uint64_t kinet_dev_atomic_max_u64(uint64_t *p, uint64_t v)
{
	uint64_t old = __atomic_load_n(p, __ATOMIC_RELAXED);
	while (old < v && !__atomic_compare_exchange_n(p, &old, v, 1, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
		;
	return old;
}

/* Peer path (peer.cuh): coherent reads of window keys, system-scope
 * atomics on peer memory, and bulk copies. */
KINET_DEV_FN void kinet_dev_load_coherent_u32x4(const uint32_t *p, uint32_t v[4])
{
	for (int i = 0; i < 4; i++)
		v[i] = __atomic_load_n(&p[i], __ATOMIC_ACQUIRE);
}
KINET_DEV_FN uint64_t kinet_dev_atomic_add_u64_sys(uint64_t *p, uint64_t v)
{
	return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST);
}
KINET_DEV_FN uint64_t kinet_dev_atomic_cas_u64_sys(uint64_t *p, uint64_t expected, uint64_t desired)
{
	__atomic_compare_exchange_n(p, &expected, desired, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
	return expected;
}
KINET_DEV_FN void kinet_dev_red_add_u64_sys(uint64_t *p, uint64_t v)
{
	__atomic_fetch_add(p, v, __ATOMIC_RELAXED);
}
/* Group copy: one thread does it all under emulation. */
KINET_DEV_FN void kinet_dev_copy_group(int group, void *dst, const void *src, uint64_t n)
{
	(void)group;
	memcpy(dst, src, (size_t)n);
}

/* Groups: under emulation a warp and a block are one thread. */
KINET_DEV_FN uint32_t kinet_dev_group_rank(int group)
{
	(void)group;
	return 0;
}
KINET_DEV_FN uint32_t kinet_dev_group_size(int group)
{
	(void)group;
	return 1;
}
KINET_DEV_FN void kinet_dev_group_sync(int group)
{
	(void)group;
}
/* Makes rank 0's *status and *value every rank's. */
KINET_DEV_FN void kinet_dev_group_bcast(int group, int *status, uint64_t *value)
{
	(void)group;
	(void)status;
	(void)value;
}

#else
/* ===================== CUDA (nvcc) ===================== */

#define KINET_DEV_FN static __device__ __forceinline__

/* %globaltimer: nanoseconds (updated every ~32 ns to 1 us by the GPU). */
KINET_DEV_FN uint64_t kinet_dev_now_ns(void)
{
	uint64_t t;
	asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
	return t;
}

/* Every iteration of a device wait loop already costs a PCIe read (~2 us)
 * of a CQE or a signal word, so the first KINET_DEV_SPIN_ITERS iterations
 * do not sleep at all (no added latency when the answer is near); then
 * short sleeps, then longer ones, to leave the memory system to others. */
#ifndef KINET_DEV_SPIN_ITERS
#define KINET_DEV_SPIN_ITERS 64u
#endif
KINET_DEV_FN void kinet_dev_relax(uint32_t iter)
{
	if (iter >= KINET_DEV_SPIN_ITERS)
		__nanosleep(iter < 4u * KINET_DEV_SPIN_ITERS ? 32 : 256);
}

/* fence.sc.sys */
KINET_DEV_FN void kinet_dev_fence_sys(void)
{
	__threadfence_system();
}
/* fence.acq_rel.sys: release half for "stores, then the doorbell". */
KINET_DEV_FN void kinet_dev_fence_release_sys(void)
{
	asm volatile("fence.acq_rel.sys;" ::: "memory");
}
/* fence.acq_rel.sys: acquire half for "owner/signal check, then the data". */
KINET_DEV_FN void kinet_dev_fence_acquire_sys(void)
{
	asm volatile("fence.acq_rel.sys;" ::: "memory");
}
/* fence.sc.gpu, between GPU threads sharing a QP's counters. */
KINET_DEV_FN void kinet_dev_fence_gpu(void)
{
	__threadfence();
}
/* fence.acq_rel.gpu: relaxed loads of a QP's counters, then what they allow. */
KINET_DEV_FN void kinet_dev_fence_acquire_gpu(void)
{
	asm volatile("fence.acq_rel.gpu;" ::: "memory");
}
/* fence.acq_rel.cta, between threads of one block sharing a QP's counters. */
KINET_DEV_FN void kinet_dev_fence_cta(void)
{
	asm volatile("fence.acq_rel.cta;" ::: "memory");
}

KINET_DEV_FN uint64_t kinet_dev_load_acquire_u64_sys(const uint64_t *p)
{
	uint64_t v;
	asm volatile("ld.acquire.sys.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
	return v;
}
KINET_DEV_FN uint64_t kinet_dev_load_acquire_u64_gpu(const uint64_t *p)
{
	uint64_t v;
	asm volatile("ld.acquire.gpu.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
	return v;
}
KINET_DEV_FN uint32_t kinet_dev_load_acquire_u32_gpu(const uint32_t *p)
{
	uint32_t v;
	asm volatile("ld.acquire.gpu.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
	return v;
}
KINET_DEV_FN uint64_t kinet_dev_load_acquire_u64_cta(const uint64_t *p)
{
	uint64_t v;
	asm volatile("ld.acquire.cta.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
	return v;
}
KINET_DEV_FN uint32_t kinet_dev_load_acquire_u32_cta(const uint32_t *p)
{
	uint32_t v;
	asm volatile("ld.acquire.cta.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
	return v;
}
KINET_DEV_FN uint64_t kinet_dev_load_relaxed_u64(const uint64_t *p)
{
	return *(const volatile uint64_t *)p;
}
/* ld.relaxed.gpu: coherent like a volatile load, but free to overlap with
 * the loads around it (several in one round trip). */
KINET_DEV_FN uint64_t kinet_dev_load_relaxed_u64_gpu(const uint64_t *p)
{
	uint64_t v;
	asm volatile("ld.relaxed.gpu.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
	return v;
}
KINET_DEV_FN uint32_t kinet_dev_load_relaxed_u32_gpu(const uint32_t *p)
{
	uint32_t v;
	asm volatile("ld.relaxed.gpu.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
	return v;
}
KINET_DEV_FN uint32_t kinet_dev_load_relaxed_u32(const uint32_t *p)
{
	return *(const volatile uint32_t *)p;
}
KINET_DEV_FN uint8_t kinet_dev_load_volatile_u8(const uint8_t *p)
{
	return *(const volatile uint8_t *)p;
}
KINET_DEV_FN void kinet_dev_store_release_u64_gpu(uint64_t *p, uint64_t v)
{
	asm volatile("st.release.gpu.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}
KINET_DEV_FN void kinet_dev_store_release_u64_cta(uint64_t *p, uint64_t v)
{
	asm volatile("st.release.cta.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}
KINET_DEV_FN void kinet_dev_store_release_u64_sys(uint64_t *p, uint64_t v)
{
	asm volatile("st.release.sys.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}
KINET_DEV_FN void kinet_dev_store_release_u32_sys(uint32_t *p, uint32_t v)
{
	asm volatile("st.release.sys.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}
KINET_DEV_FN void kinet_dev_store_relaxed_u64(uint64_t *p, uint64_t v)
{
	*(volatile uint64_t *)p = v;
}
KINET_DEV_FN void kinet_dev_store_relaxed_u32(uint32_t *p, uint32_t v)
{
	*(volatile uint32_t *)p = v;
}
/* Device-scope atomics (also on host-mapped words, where they are atomic
 * among GPU threads, which is all the protocol needs). */
KINET_DEV_FN uint64_t kinet_dev_atomic_add_u64(uint64_t *p, uint64_t v)
{
	return (uint64_t)atomicAdd((unsigned long long *)p, (unsigned long long)v);
}
KINET_DEV_FN uint64_t kinet_dev_atomic_cas_u64(uint64_t *p, uint64_t expected, uint64_t desired)
{
	return (uint64_t)atomicCAS((unsigned long long *)p, (unsigned long long)expected,
				   (unsigned long long)desired);
}
KINET_DEV_FN uint32_t kinet_dev_atomic_cas_u32(uint32_t *p, uint32_t expected, uint32_t desired)
{
	return (uint32_t)atomicCAS((unsigned int *)p, expected, desired);
}
KINET_DEV_FN uint32_t kinet_dev_atomic_exch_u32(uint32_t *p, uint32_t v)
{
	return (uint32_t)atomicExch((unsigned int *)p, v);
}
/* Block-scope atomics (atom.cta): QPs shared by the threads of one block. */
KINET_DEV_FN uint64_t kinet_dev_atomic_cas_u64_cta(uint64_t *p, uint64_t expected, uint64_t desired)
{
	return (uint64_t)atomicCAS_block((unsigned long long *)p, (unsigned long long)expected,
					 (unsigned long long)desired);
}
KINET_DEV_FN uint32_t kinet_dev_atomic_cas_u32_cta(uint32_t *p, uint32_t expected, uint32_t desired)
{
	return (uint32_t)atomicCAS_block((unsigned int *)p, expected, desired);
}
KINET_DEV_FN uint32_t kinet_dev_atomic_exch_u32_cta(uint32_t *p, uint32_t v)
{
	return (uint32_t)atomicExch_block((unsigned int *)p, v);
}
KINET_DEV_FN uint64_t kinet_dev_atomic_max_u64(uint64_t *p, uint64_t v)
{
	return (uint64_t)atomicMax((unsigned long long *)p, (unsigned long long)v);
}

/* CQE loads: relaxed system-scope 16-byte vector loads of pinned host
 * memory (one PCIe read request each).  _hi: bytes 48..63 of the 64-byte
 * CQE c into q[0..1] (op_own is the top byte of q[1]); _lo: bytes 32..47
 * into q[0..1]. */
KINET_DEV_FN void kinet_dev_load_cqe_hi(const void *c, uint64_t q[2])
{
	const uint8_t *p = (const uint8_t *)c;
	asm volatile("ld.relaxed.sys.v2.u64 {%0, %1}, [%2];"
		     : "=l"(q[0]), "=l"(q[1])
		     : "l"(p + 48)
		     : "memory");
}
KINET_DEV_FN void kinet_dev_load_cqe_lo(const void *c, uint64_t q[2])
{
	const uint8_t *p = (const uint8_t *)c;
	asm volatile("ld.relaxed.sys.v2.u64 {%0, %1}, [%2];"
		     : "=l"(q[0]), "=l"(q[1])
		     : "l"(p + 32)
		     : "memory");
}

/* Peer path (peer.cuh).  Window keys are read at GPU scope (from L2, not
 * a stale L1 line), so a revoked key is seen at once; 16 bytes per load. */
KINET_DEV_FN void kinet_dev_load_coherent_u32x4(const uint32_t *p, uint32_t v[4])
{
	asm volatile("ld.relaxed.gpu.v4.u32 {%0, %1, %2, %3}, [%4];"
		     : "=r"(v[0]), "=r"(v[1]), "=r"(v[2]), "=r"(v[3])
		     : "l"(p)
		     : "memory");
}
/* atom.add.sys / atom.cas.sys: atomic with respect to every GPU and the
 * CPU that can reach the word (peer GPU memory over NVLink or PCIe). */
KINET_DEV_FN uint64_t kinet_dev_atomic_add_u64_sys(uint64_t *p, uint64_t v)
{
	return (uint64_t)atomicAdd_system((unsigned long long *)p, (unsigned long long)v);
}
KINET_DEV_FN uint64_t kinet_dev_atomic_cas_u64_sys(uint64_t *p, uint64_t expected, uint64_t desired)
{
	return (uint64_t)atomicCAS_system((unsigned long long *)p, (unsigned long long)expected,
					  (unsigned long long)desired);
}

KINET_DEV_FN uint32_t kinet_dev_lane_id(void)
{
	uint32_t lane;
	asm volatile("mov.u32 %0, %%laneid;" : "=r"(lane));
	return lane;
}

/* Rank in the group: lane in the warp, linear thread index in the block. */
KINET_DEV_FN uint32_t kinet_dev_group_rank(int group)
{
	if (group == KINET_DEV_GROUP_WARP)
		return kinet_dev_lane_id();
	if (group == KINET_DEV_GROUP_BLOCK)
		return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
	return 0;
}
KINET_DEV_FN uint32_t kinet_dev_group_size(int group)
{
	if (group == KINET_DEV_GROUP_WARP)
		return 32;
	if (group == KINET_DEV_GROUP_BLOCK)
		return blockDim.x * blockDim.y * blockDim.z;
	return 1;
}
/* Barrier with memory ordering among the group (bar.sync / bar.warp.sync). */
KINET_DEV_FN void kinet_dev_group_sync(int group)
{
	if (group == KINET_DEV_GROUP_WARP)
		__syncwarp();
	else if (group == KINET_DEV_GROUP_BLOCK)
		__syncthreads();
}
/* red.relaxed.sys: an add that returns nothing, so the thread does not
 * wait a round trip to the peer for the old value (signals). */
KINET_DEV_FN void kinet_dev_red_add_u64_sys(uint64_t *p, uint64_t v)
{
	asm volatile("red.relaxed.sys.global.add.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}

/* Copies n bytes with the threads of the group, rank r taking elements r,
 * r + size, ...: consecutive lanes touch consecutive 16-byte words
 * (coalesced).  Four loads are issued before their stores so each thread
 * keeps several peer transactions in flight.  16-byte words when both
 * pointers allow, else 8, else bytes; the tail in bytes. */
KINET_DEV_FN void kinet_dev_copy_group(int group, void *dst, const void *src, uint64_t n)
{
	uint64_t r = kinet_dev_group_rank(group), gs = kinet_dev_group_size(group);
	uint8_t *d = (uint8_t *)dst;
	const uint8_t *s = (const uint8_t *)src;
	uint64_t done = 0;
	uintptr_t align = (uintptr_t)d | (uintptr_t)s;
	if ((align & 15) == 0) {
		uint64_t w = n >> 4, i = r;
		int4 *dw = (int4 *)d;
		const int4 *sw = (const int4 *)s;
		for (; i + 3 * gs < w; i += 4 * gs) {
			int4 a = sw[i], b = sw[i + gs], c = sw[i + 2 * gs], e = sw[i + 3 * gs];
			dw[i] = a;
			dw[i + gs] = b;
			dw[i + 2 * gs] = c;
			dw[i + 3 * gs] = e;
		}
		for (; i < w; i += gs)
			dw[i] = sw[i];
		done = w << 4;
	} else if ((align & 7) == 0) {
		uint64_t w = n >> 3;
		for (uint64_t i = r; i < w; i += gs)
			((uint64_t *)d)[i] = ((const uint64_t *)s)[i];
		done = w << 3;
	}
	for (uint64_t i = done + r; i < n; i += gs)
		d[i] = s[i];
}

KINET_DEV_FN void kinet_dev_group_bcast(int group, int *status, uint64_t *value)
{
	if (group == KINET_DEV_GROUP_WARP) {
		*status = __shfl_sync(0xffffffffu, *status, 0);
		*value = (uint64_t)__shfl_sync(0xffffffffu, (unsigned long long)*value, 0);
	} else if (group == KINET_DEV_GROUP_BLOCK) {
		__shared__ unsigned long long kinet_dev_bcast_buf[2];
		__syncthreads(); /* earlier readers of the buffer are done */
		if (kinet_dev_group_rank(group) == 0) {
			kinet_dev_bcast_buf[0] = (unsigned long long)(long long)*status;
			kinet_dev_bcast_buf[1] = (unsigned long long)*value;
		}
		__syncthreads();
		*status = (int)(long long)kinet_dev_bcast_buf[0];
		*value = (uint64_t)kinet_dev_bcast_buf[1];
	}
}

#endif /* KINET_HOST_EMU */

#endif /* KINET_DEVICE_PLATFORM_CUH */
