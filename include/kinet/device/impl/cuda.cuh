/*
 * kinet device API, implementation: the platform under nvcc (PTX fences,
 * atomics, loads and stores at a scope, the global timer, warp and block
 * groups).  Included by impl/platform.cuh only.
 */
#ifndef KINET_DEVICE_IMPL_CUDA_CUH
#define KINET_DEVICE_IMPL_CUDA_CUH

/* ===================== CUDA (nvcc) ===================== */

#define KINET_DEV_FN static __device__ __forceinline__

/* %globaltimer: nanoseconds (updated every ~32 ns to 1 us by the GPU). */
KINET_DEV_FN uint64_t kinet_devi_now_ns(void)
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
KINET_DEV_FN void kinet_devi_relax(uint32_t iter)
{
	if (iter >= KINET_DEV_SPIN_ITERS)
		__nanosleep(iter < 4u * KINET_DEV_SPIN_ITERS ? 32 : 256);
}

/* fence.sc.sys */
KINET_DEV_FN void kinet_devi_fence_sys(void)
{
	__threadfence_system();
}
/* One-sided system fences (PTX ISA 8.6, CUDA 12.8 on; before that the
 * two-sided fence.acq_rel.sys).  They are not only cheaper than the
 * two-sided fence: on sm_90 fence.acq_rel.sys is MEMBAR.SYS followed by an
 * L1 invalidation (CCTL.IVALL), which every later load of the SM's blocks
 * pays for (kinet-perf iter: the block's next compute step re-reads its
 * 64 KiB working set from L2, ~10 us, after each doorbell).
 * fence.release.sys is the MEMBAR alone; fence.acquire.sys the
 * invalidation alone (docs/architecture/device-fences.md). */
#if defined(__CUDACC_VER_MAJOR__) &&                                                                         \
	(__CUDACC_VER_MAJOR__ > 12 || (__CUDACC_VER_MAJOR__ == 12 && __CUDACC_VER_MINOR__ >= 8))
#define KINET_DEVI_ONE_SIDED_FENCES 1
#endif
/* Release: "stores, then the doorbell" (or the flag that publishes them). */
KINET_DEV_FN void kinet_devi_fence_release_sys(void)
{
#if defined(KINET_DEVI_ONE_SIDED_FENCES)
	asm volatile("fence.release.sys;" ::: "memory");
#else
	asm volatile("fence.acq_rel.sys;" ::: "memory");
#endif
}
/* Acquire: "owner bit, completion word or signal seen, then the data". */
KINET_DEV_FN void kinet_devi_fence_acquire_sys(void)
{
#if defined(KINET_DEVI_ONE_SIDED_FENCES)
	asm volatile("fence.acquire.sys;" ::: "memory");
#else
	asm volatile("fence.acq_rel.sys;" ::: "memory");
#endif
}
/* fence.sc.gpu, between GPU threads sharing a QP's counters. */
KINET_DEV_FN void kinet_devi_fence_gpu(void)
{
	__threadfence();
}
/* fence.acq_rel.gpu: relaxed loads of a QP's counters, then what they allow. */
KINET_DEV_FN void kinet_devi_fence_acquire_gpu(void)
{
	asm volatile("fence.acq_rel.gpu;" ::: "memory");
}
/* fence.acq_rel.cta, between threads of one block sharing a QP's counters. */
KINET_DEV_FN void kinet_devi_fence_cta(void)
{
	asm volatile("fence.acq_rel.cta;" ::: "memory");
}

/* A word the NIC writes in host memory (the completion word): one 8-byte
 * PCIe read, no fence. */
KINET_DEV_FN uint64_t kinet_devi_load_relaxed_u64_sys(const uint64_t *p)
{
	uint64_t v;
	asm volatile("ld.relaxed.sys.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
	return v;
}
KINET_DEV_FN uint64_t kinet_devi_load_acquire_u64_sys(const uint64_t *p)
{
	uint64_t v;
	asm volatile("ld.acquire.sys.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
	return v;
}
KINET_DEV_FN uint32_t kinet_devi_load_acquire_u32_sys(const uint32_t *p)
{
	uint32_t v;
	asm volatile("ld.acquire.sys.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
	return v;
}
KINET_DEV_FN uint64_t kinet_devi_load_acquire_u64_gpu(const uint64_t *p)
{
	uint64_t v;
	asm volatile("ld.acquire.gpu.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
	return v;
}
KINET_DEV_FN uint32_t kinet_devi_load_acquire_u32_gpu(const uint32_t *p)
{
	uint32_t v;
	asm volatile("ld.acquire.gpu.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
	return v;
}
KINET_DEV_FN uint64_t kinet_devi_load_acquire_u64_cta(const uint64_t *p)
{
	uint64_t v;
	asm volatile("ld.acquire.cta.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
	return v;
}
KINET_DEV_FN uint32_t kinet_devi_load_acquire_u32_cta(const uint32_t *p)
{
	uint32_t v;
	asm volatile("ld.acquire.cta.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
	return v;
}
KINET_DEV_FN uint64_t kinet_devi_load_relaxed_u64(const uint64_t *p)
{
	return *(const volatile uint64_t *)p;
}
/* ld.relaxed.gpu: coherent like a volatile load, but free to overlap with
 * the loads around it (several in one round trip). */
KINET_DEV_FN uint64_t kinet_devi_load_relaxed_u64_gpu(const uint64_t *p)
{
	uint64_t v;
	asm volatile("ld.relaxed.gpu.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
	return v;
}
/* Two adjacent 64-bit words (16-byte aligned) in one request. */
KINET_DEV_FN void kinet_devi_load_relaxed_u64x2_gpu(const uint64_t *p, uint64_t v[2])
{
	asm volatile("ld.relaxed.gpu.v2.u64 {%0, %1}, [%2];" : "=l"(v[0]), "=l"(v[1]) : "l"(p) : "memory");
}
KINET_DEV_FN uint32_t kinet_devi_load_relaxed_u32_gpu(const uint32_t *p)
{
	uint32_t v;
	asm volatile("ld.relaxed.gpu.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
	return v;
}
KINET_DEV_FN uint32_t kinet_devi_load_relaxed_u32(const uint32_t *p)
{
	return *(const volatile uint32_t *)p;
}
KINET_DEV_FN uint8_t kinet_devi_load_volatile_u8(const uint8_t *p)
{
	return *(const volatile uint8_t *)p;
}
KINET_DEV_FN void kinet_devi_store_release_u64_gpu(uint64_t *p, uint64_t v)
{
	asm volatile("st.release.gpu.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}
KINET_DEV_FN void kinet_devi_store_release_u64_cta(uint64_t *p, uint64_t v)
{
	asm volatile("st.release.cta.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}
KINET_DEV_FN void kinet_devi_store_release_u64_sys(uint64_t *p, uint64_t v)
{
	asm volatile("st.release.sys.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}
KINET_DEV_FN void kinet_devi_store_release_u32_sys(uint32_t *p, uint32_t v)
{
	asm volatile("st.release.sys.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}
KINET_DEV_FN void kinet_devi_store_relaxed_u64(uint64_t *p, uint64_t v)
{
	*(volatile uint64_t *)p = v;
}
KINET_DEV_FN void kinet_devi_store_relaxed_u32(uint32_t *p, uint32_t v)
{
	*(volatile uint32_t *)p = v;
}
/* Device-scope atomics (also on host-mapped words, where they are atomic
 * among GPU threads, which is all the protocol needs). */
KINET_DEV_FN uint64_t kinet_devi_atomic_add_u64(uint64_t *p, uint64_t v)
{
	return (uint64_t)atomicAdd((unsigned long long *)p, (unsigned long long)v);
}
KINET_DEV_FN uint64_t kinet_devi_atomic_cas_u64(uint64_t *p, uint64_t expected, uint64_t desired)
{
	return (uint64_t)atomicCAS((unsigned long long *)p, (unsigned long long)expected,
				   (unsigned long long)desired);
}
KINET_DEV_FN uint32_t kinet_devi_atomic_cas_u32(uint32_t *p, uint32_t expected, uint32_t desired)
{
	return (uint32_t)atomicCAS((unsigned int *)p, expected, desired);
}
KINET_DEV_FN uint32_t kinet_devi_atomic_exch_u32(uint32_t *p, uint32_t v)
{
	return (uint32_t)atomicExch((unsigned int *)p, v);
}
/* Block-scope atomics (atom.cta): QPs shared by the threads of one block. */
KINET_DEV_FN uint64_t kinet_devi_atomic_cas_u64_cta(uint64_t *p, uint64_t expected, uint64_t desired)
{
	return (uint64_t)atomicCAS_block((unsigned long long *)p, (unsigned long long)expected,
					 (unsigned long long)desired);
}
KINET_DEV_FN uint32_t kinet_devi_atomic_cas_u32_cta(uint32_t *p, uint32_t expected, uint32_t desired)
{
	return (uint32_t)atomicCAS_block((unsigned int *)p, expected, desired);
}
KINET_DEV_FN uint32_t kinet_devi_atomic_exch_u32_cta(uint32_t *p, uint32_t v)
{
	return (uint32_t)atomicExch_block((unsigned int *)p, v);
}
KINET_DEV_FN uint64_t kinet_devi_atomic_max_u64(uint64_t *p, uint64_t v)
{
	return (uint64_t)atomicMax((unsigned long long *)p, (unsigned long long)v);
}

/* CQE loads: relaxed system-scope 16-byte vector loads of pinned host
 * memory (one PCIe read request each).  _hi: bytes 48..63 of the 64-byte
 * CQE c into q[0..1] (op_own is the top byte of q[1]); _lo: bytes 32..47
 * into q[0..1]. */
KINET_DEV_FN void kinet_devi_load_cqe_hi(const void *c, uint64_t q[2])
{
	const uint8_t *p = (const uint8_t *)c;
	asm volatile("ld.relaxed.sys.v2.u64 {%0, %1}, [%2];"
		     : "=l"(q[0]), "=l"(q[1])
		     : "l"(p + 48)
		     : "memory");
}
KINET_DEV_FN void kinet_devi_load_cqe_lo(const void *c, uint64_t q[2])
{
	const uint8_t *p = (const uint8_t *)c;
	asm volatile("ld.relaxed.sys.v2.u64 {%0, %1}, [%2];"
		     : "=l"(q[0]), "=l"(q[1])
		     : "l"(p + 32)
		     : "memory");
}

/* Peer path (peer.cuh).  Window keys are read at GPU scope (from L2, not
 * a stale L1 line), so a revoked key is seen at once; 16 bytes per load. */
KINET_DEV_FN void kinet_devi_load_coherent_u32x4(const uint32_t *p, uint32_t v[4])
{
	asm volatile("ld.relaxed.gpu.v4.u32 {%0, %1, %2, %3}, [%4];"
		     : "=r"(v[0]), "=r"(v[1]), "=r"(v[2]), "=r"(v[3])
		     : "l"(p)
		     : "memory");
}
/* atom.add.sys / atom.cas.sys: atomic with respect to every GPU and the
 * CPU that can reach the word (peer GPU memory over NVLink or PCIe). */
KINET_DEV_FN uint64_t kinet_devi_atomic_add_u64_sys(uint64_t *p, uint64_t v)
{
	return (uint64_t)atomicAdd_system((unsigned long long *)p, (unsigned long long)v);
}
KINET_DEV_FN uint64_t kinet_devi_atomic_cas_u64_sys(uint64_t *p, uint64_t expected, uint64_t desired)
{
	return (uint64_t)atomicCAS_system((unsigned long long *)p, (unsigned long long)expected,
					  (unsigned long long)desired);
}
/* atom.acq_rel.sys.cas: a semaphore item changing hands (what the winner
 * reads after it is what the last owner wrote before its release, and
 * what it wrote before is released with it).  Atomic among GPU threads on
 * any memory; with the CPU only where the platform makes system atomics
 * on that memory atomic (docs/ETHERNET.md). */
KINET_DEV_FN uint32_t kinet_devi_atomic_cas_u32_sys(uint32_t *p, uint32_t expected, uint32_t desired)
{
	uint32_t old;
	asm volatile("atom.acq_rel.sys.cas.b32 %0, [%1], %2, %3;"
		     : "=r"(old)
		     : "l"(p), "r"(expected), "r"(desired)
		     : "memory");
	return old;
}

KINET_DEV_FN uint32_t kinet_devi_lane_id(void)
{
	uint32_t lane;
	asm volatile("mov.u32 %0, %%laneid;" : "=r"(lane));
	return lane;
}

/* Rank in the group: lane in the warp, linear thread index in the block. */
KINET_DEV_FN uint32_t kinet_devi_group_rank(int group)
{
	if (group == KINET_DEVI_GROUP_WARP)
		return kinet_devi_lane_id();
	if (group == KINET_DEVI_GROUP_BLOCK)
		return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
	return 0;
}
KINET_DEV_FN uint32_t kinet_devi_group_size(int group)
{
	if (group == KINET_DEVI_GROUP_WARP)
		return 32;
	if (group == KINET_DEVI_GROUP_BLOCK)
		return blockDim.x * blockDim.y * blockDim.z;
	return 1;
}
/* Barrier with memory ordering among the group (bar.sync / bar.warp.sync). */
KINET_DEV_FN void kinet_devi_group_sync(int group)
{
	if (group == KINET_DEVI_GROUP_WARP)
		__syncwarp();
	else if (group == KINET_DEVI_GROUP_BLOCK)
		__syncthreads();
}
/* red.relaxed.sys: an add that returns nothing, so the thread does not
 * wait a round trip to the peer for the old value (signals). */
KINET_DEV_FN void kinet_devi_red_add_u64_sys(uint64_t *p, uint64_t v)
{
	asm volatile("red.relaxed.sys.global.add.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}

/* Copies n bytes with the threads of the group, rank r taking elements r,
 * r + size, ...: consecutive lanes touch consecutive 16-byte words
 * (coalesced).  Four loads are issued before their stores so each thread
 * keeps several peer transactions in flight.  16-byte words when both
 * pointers allow, else 8, else bytes; the tail in bytes. */
KINET_DEV_FN void kinet_devi_copy_group(int group, void *dst, const void *src, uint64_t n)
{
	uint64_t r = kinet_devi_group_rank(group), gs = kinet_devi_group_size(group);
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

KINET_DEV_FN void kinet_devi_group_bcast(int group, int *status, uint64_t *value)
{
	if (group == KINET_DEVI_GROUP_WARP) {
		*status = __shfl_sync(0xffffffffu, *status, 0);
		*value = (uint64_t)__shfl_sync(0xffffffffu, (unsigned long long)*value, 0);
	} else if (group == KINET_DEVI_GROUP_BLOCK) {
		__shared__ unsigned long long kinet_devi_bcast_buf[2];
		__syncthreads(); /* earlier readers of the buffer are done */
		if (kinet_devi_group_rank(group) == 0) {
			kinet_devi_bcast_buf[0] = (unsigned long long)(long long)*status;
			kinet_devi_bcast_buf[1] = (unsigned long long)*value;
		}
		__syncthreads();
		*status = (int)(long long)kinet_devi_bcast_buf[0];
		*value = (uint64_t)kinet_devi_bcast_buf[1];
	}
}

#endif /* KINET_DEVICE_IMPL_CUDA_CUH */
