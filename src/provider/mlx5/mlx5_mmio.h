/*
 * The CPU's side of a ConnectX doorbell (host posting, the CPU-assisted
 * mode): the doorbell record in host memory, then one 8-byte store to the
 * UAR, a write-combining MMIO page.  The barriers are those rdma-core's
 * util/udma_barrier.h gives each architecture, written here (no code of
 * it copied): stores to memory visible to the device before the MMIO
 * store, and the write-combining buffer flushed after it.
 */
#ifndef KINET_MLX5_MMIO_H
#define KINET_MLX5_MMIO_H

#include <stdint.h>

/* Earlier stores to host memory reach the device before later MMIO. */
static inline void kinet_mlx5_wmb(void)
{
#if defined(__x86_64__) || defined(__i386__)
	/* Stores are ordered on x86, but a write-combining store may pass a
	 * write-back one; sfence orders both. */
	__asm__ volatile("sfence" ::: "memory");
#elif defined(__aarch64__)
	__asm__ volatile("dmb oshst" ::: "memory");
#elif defined(__powerpc64__)
	__asm__ volatile("sync" ::: "memory");
#else
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
#endif
}

/* The write-combining buffer leaves the CPU now (one doorbell, not merged
 * with the next). */
static inline void kinet_mlx5_mmio_flush(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__asm__ volatile("sfence" ::: "memory");
#elif defined(__aarch64__)
	__asm__ volatile("dsb st" ::: "memory");
#elif defined(__powerpc64__)
	__asm__ volatile("sync" ::: "memory");
#else
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
#endif
}

/* One 8-byte store, never split (the NIC takes the doorbell whole): a
 * relaxed atomic store is exactly one store instruction, and tools such as
 * ThreadSanitizer see it as one where the "UAR" is a test's memory. */
static inline void kinet_mlx5_mmio_write64(void *reg, uint64_t v)
{
	__atomic_store_n((volatile uint64_t *)reg, v, __ATOMIC_RELAXED);
}

#endif /* KINET_MLX5_MMIO_H */
