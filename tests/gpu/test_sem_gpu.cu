/*
 * GPU semaphores with real kernels: producer blocks claim items (FREE or
 * DONE -> HOLD), write a numbered batch's packet info and custom info and
 * mark the item READY; the consumer checks and marks it DONE, and the
 * producers reuse it.
 *  - kernel -> CPU: a host-mapped ring, the CPU consuming through the
 *    host API while the kernel runs; each producer owns its items and
 *    waits for them (a compare-and-set there is refused where the GPU has
 *    no host-native atomics, which is checked first);
 *  - kernel -> kernel: a ring in GPU memory, block 0 of the same launch
 *    consuming through the device API, producers claiming any item by
 *    kinet_dev_sem_cas_status;
 *  - the host API on a GPU-memory ring (the copies; no host address).
 * Checked as tests/host/device/test_dev_sem.c: every batch once, never an
 * older batch's info under a new READY.  Skips (exit 77) without a CUDA
 * device.
 */
#include <cuda_runtime.h>
#include <errno.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "kinet/device.cuh"
#include "kinet/eth.h"
#include "kinet/kinet.h"
#include "kt_dev.h"

#define NITEMS 8
#define CUSTOM 40
#define PRODUCERS 4
#define BATCHES 20000
#define SPIN_LIMIT_NS (20ull * 1000000000ull)

/* Host-mapped: both sides see it. */
struct ctl {
	unsigned long long next_batch; /* producers' counter (GPU atomics only) */
	unsigned int failed;
	unsigned int fail_line;
	unsigned long long consumed;
};

__host__ __device__ static struct kinet_sem_pkt_info batch_info(uint64_t b)
{
	struct kinet_sem_pkt_info i;
	i.first = b * 1000 + 3;
	i.bytes = b * 1514 + 60;
	i.count = (uint32_t)(b % 97) + 1;
	i.reserved = 0;
	return i;
}

__host__ __device__ static uint8_t batch_byte(uint64_t b, int k)
{
	return (uint8_t)(b * 31 + (uint64_t)k);
}

__device__ static void dev_fail(struct ctl *c, unsigned line)
{
	if (atomicCAS(&c->failed, 0u, 1u) == 0u)
		c->fail_line = line;
	__threadfence_system();
}

#define D_CHECK(c, cond)                                                                                     \
	do {                                                                                                 \
		if (!(cond)) {                                                                               \
			dev_fail((c), __LINE__);                                                             \
			return;                                                                              \
		}                                                                                            \
	} while (0)

/* Claims an item: owner (a ring the CPU also writes: GPUNetIO's pattern)
 * waits for one of its own items, id, id + PRODUCERS, ..., to be FREE or
 * DONE; otherwise any item, by compare-and-set (GPU memory). */
__device__ static void producer(const struct kinet_dev_sem *s, struct ctl *c, unsigned id, bool owner)
{
	uint32_t idx = id % NITEMS, iter = 0;
	uint64_t start = kinet_dev_now_ns();

	while (!*(volatile unsigned *)&c->failed) {
		enum kinet_sem_status seen;
		int r;
		if (owner) {
			D_CHECK(c, kinet_dev_sem_get_status(s, idx, &seen) == 0);
			r = seen == KINET_SEM_FREE || seen == KINET_SEM_DONE ? 0 : -EAGAIN;
			if (!r)
				D_CHECK(c, kinet_dev_sem_set_status(s, idx, KINET_SEM_HOLD) == 0);
		} else {
			r = kinet_dev_sem_cas_status(s, idx, KINET_SEM_FREE, KINET_SEM_HOLD, &seen);
			if (r == -EAGAIN && seen == KINET_SEM_DONE)
				r = kinet_dev_sem_cas_status(s, idx, KINET_SEM_DONE, KINET_SEM_HOLD, &seen);
		}
		if (r == -EAGAIN) {
			idx = owner ? (idx + PRODUCERS) % NITEMS : (idx + 1) % NITEMS;
			kinet_dev_relax(iter++);
			D_CHECK(c, kinet_dev_now_ns() - start < SPIN_LIMIT_NS);
			continue;
		}
		D_CHECK(c, r == 0);
		iter = 0;
		uint64_t b = atomicAdd(&c->next_batch, 1ull);
		if (b >= BATCHES) {
			D_CHECK(c, kinet_dev_sem_set_status(s, idx, KINET_SEM_FREE) == 0);
			return;
		}
		struct kinet_sem_pkt_info info = batch_info(b);
		void *cv = NULL;
		D_CHECK(c, kinet_dev_sem_set_pkt_info(s, idx, &info) == 0);
		D_CHECK(c, kinet_dev_sem_custom_info(s, idx, &cv) == 0);
		volatile uint8_t *cu = (volatile uint8_t *)cv;
		*(volatile uint64_t *)cu = b;
		for (int k = 8; k < CUSTOM; k++)
			cu[k] = batch_byte(b, k);
		D_CHECK(c, kinet_dev_sem_set_status(s, idx, KINET_SEM_READY) == 0);
		idx = owner ? (idx + PRODUCERS) % NITEMS : (idx + 1) % NITEMS;
	}
}

/* Block 0 consumes when seen != NULL (kernel -> kernel); seen: BATCHES
 * flags in GPU memory. */
__device__ static void consumer(const struct kinet_dev_sem *s, struct ctl *c, uint8_t *seen)
{
	uint64_t last[NITEMS], start = kinet_dev_now_ns(), consumed = 0;
	uint32_t idx = 0, iter = 0;

	for (int i = 0; i < NITEMS; i++)
		last[i] = ~0ull;
	while (consumed < BATCHES && !*(volatile unsigned *)&c->failed) {
		enum kinet_sem_status st;
		D_CHECK(c, kinet_dev_sem_get_status(s, idx, &st) == 0);
		if (st == KINET_SEM_READY) {
			struct kinet_sem_pkt_info info, want;
			void *cv = NULL;
			D_CHECK(c, kinet_dev_sem_get_pkt_info(s, idx, &info) == 0);
			D_CHECK(c, kinet_dev_sem_custom_info(s, idx, &cv) == 0);
			const volatile uint8_t *cu = (const volatile uint8_t *)cv;
			uint64_t b = *(const volatile uint64_t *)cu;
			D_CHECK(c, b < BATCHES);
			D_CHECK(c, !seen[b]);
			D_CHECK(c, last[idx] == ~0ull || b > last[idx]);
			want = batch_info(b);
			D_CHECK(c, info.first == want.first && info.bytes == want.bytes &&
					   info.count == want.count);
			for (int k = 8; k < CUSTOM; k++)
				D_CHECK(c, cu[k] == batch_byte(b, k));
			seen[b] = 1;
			last[idx] = b;
			consumed++;
			D_CHECK(c, kinet_dev_sem_set_status(s, idx, KINET_SEM_DONE) == 0);
			iter = 0;
		} else {
			kinet_dev_relax(iter++);
		}
		D_CHECK(c, kinet_dev_now_ns() - start < SPIN_LIMIT_NS);
		idx = (idx + 1) % NITEMS;
	}
	c->consumed = consumed;
}

__global__ void ring_kernel(const struct kinet_dev_sem *s, struct ctl *c, uint8_t *seen)
{
	if (threadIdx.x != 0)
		return;
	if (seen && blockIdx.x == 0)
		consumer(s, c, seen);
	else
		producer(s, c, blockIdx.x, seen == NULL);
}

/* One compare-and-set that changes nothing: what it returns. */
__global__ void cas_kernel(const struct kinet_dev_sem *s, int *r)
{
	enum kinet_sem_status seen;
	*r = kinet_dev_sem_cas_status(s, 0, KINET_SEM_FREE, KINET_SEM_FREE, &seen);
}

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static struct kinet_ctx *open_gpu_ctx(void)
{
	struct kinet_ctx_attr attr;
	struct kinet_ctx *ctx = NULL;
	kinet_ctx_attr_init(&attr);
	attr.cuda_device = 0;
	if (kinet_ctx_open(&attr, &ctx))
		return NULL;
	return ctx;
}

static struct kinet_sem *make_sem(struct kinet_ctx *ctx, enum kinet_sem_mem mem)
{
	struct kinet_sem_attr a;
	struct kinet_sem *sem = NULL;
	kinet_sem_attr_init(&a);
	a.nitems = NITEMS;
	a.custom_size = CUSTOM;
	a.mem = mem;
	if (kinet_sem_create(ctx, &a, &sem))
		return NULL;
	return sem;
}

KT_TEST(kernel_to_cpu)
{
	G_NEED_GPU();
	struct kinet_ctx *ctx = open_gpu_ctx();
	KT_CHECK(ctx != NULL);
	struct kinet_sem *sem = make_sem(ctx, KINET_SEM_MEM_HOST_MAPPED);
	KT_CHECK(sem != NULL);
	struct kinet_dev_sem *d = NULL;
	KT_OK(kinet_sem_export(sem, &d));
	/* A compare-and-set on host memory: refused where the GPU's atomics
	 * there are not the CPU's. */
	int native = 0, *r = NULL, *dr = NULL;
	G_CUDA(cudaDeviceGetAttribute(&native, cudaDevAttrHostNativeAtomicSupported, 0));
	G_CUDA(cudaHostAlloc((void **)&r, sizeof(int), cudaHostAllocMapped));
	G_CUDA(cudaHostGetDevicePointer((void **)&dr, r, 0));
	*r = 1;
	cas_kernel<<<1, 1>>>(d, dr);
	G_CUDA(cudaDeviceSynchronize());
	KT_CHECK_EQ(*(volatile int *)r, native ? 0 : -EOPNOTSUPP);
	cudaFreeHost(r);
	struct ctl *c = NULL, *dc = NULL;
	G_CUDA(cudaHostAlloc((void **)&c, sizeof(*c), cudaHostAllocMapped));
	memset(c, 0, sizeof(*c));
	G_CUDA(cudaHostGetDevicePointer((void **)&dc, c, 0));
	static uint8_t seen[BATCHES];
	memset(seen, 0, sizeof(seen));

	ring_kernel<<<PRODUCERS, 32>>>(d, dc, NULL);
	G_CUDA(cudaGetLastError());
	uint64_t last[NITEMS], start = now_ns(), consumed = 0;
	uint32_t idx = 0;
	int bad = 0;
	for (int i = 0; i < NITEMS; i++)
		last[i] = ~0ull;
	while (consumed < BATCHES && !bad && !__atomic_load_n(&c->failed, __ATOMIC_ACQUIRE)) {
		enum kinet_sem_status st;
		KT_OK(kinet_sem_get_status(sem, idx, &st));
		if (st == KINET_SEM_READY) {
			struct kinet_sem_pkt_info info, want;
			uint8_t cu[CUSTOM];
			uint64_t b;
			KT_OK(kinet_sem_get_pkt_info(sem, idx, &info));
			KT_OK(kinet_sem_get_custom_info(sem, idx, cu, sizeof(cu)));
			memcpy(&b, cu, sizeof(b));
			if (b >= BATCHES || seen[b] || (last[idx] != ~0ull && b <= last[idx])) {
				fprintf(stderr, "item %u: batch %llu out of order or seen before\n", idx,
					(unsigned long long)b);
				bad = 1;
				break;
			}
			want = batch_info(b);
			if (info.first != want.first || info.bytes != want.bytes || info.count != want.count)
				bad = 1;
			for (int k = 8; k < CUSTOM; k++)
				if (cu[k] != batch_byte(b, k))
					bad = 1;
			if (bad) {
				fprintf(stderr, "item %u: batch %llu with stale info\n", idx,
					(unsigned long long)b);
				break;
			}
			seen[b] = 1;
			last[idx] = b;
			consumed++;
			KT_OK(kinet_sem_set_status(sem, idx, KINET_SEM_DONE));
		}
		if (now_ns() - start > SPIN_LIMIT_NS) {
			fprintf(stderr, "timed out after %llu batches\n", (unsigned long long)consumed);
			bad = 1;
		}
		idx = (idx + 1) % NITEMS;
	}
	if (bad)
		__atomic_store_n(&c->failed, 1u, __ATOMIC_RELEASE); /* stops the producers */
	G_CUDA(cudaDeviceSynchronize());
	if (c->fail_line)
		fprintf(stderr, "device check failed at line %u\n", c->fail_line);
	KT_CHECK(!bad && !c->failed);
	KT_CHECK_EQ(consumed, BATCHES);
	cudaFreeHost(c);
	KT_OK(kinet_sem_destroy(sem));
	KT_OK(kinet_ctx_close(ctx));
}

KT_TEST(kernel_to_kernel_gpu_memory)
{
	G_NEED_GPU();
	struct kinet_ctx *ctx = open_gpu_ctx();
	KT_CHECK(ctx != NULL);
	struct kinet_sem *sem = make_sem(ctx, KINET_SEM_MEM_GPU);
	KT_CHECK(sem != NULL);
	struct kinet_dev_sem *d = NULL;
	KT_OK(kinet_sem_export(sem, &d));
	struct ctl *c = NULL, *dc = NULL;
	uint8_t *seen = NULL;
	G_CUDA(cudaHostAlloc((void **)&c, sizeof(*c), cudaHostAllocMapped));
	memset(c, 0, sizeof(*c));
	G_CUDA(cudaHostGetDevicePointer((void **)&dc, c, 0));
	G_CUDA(cudaMalloc((void **)&seen, BATCHES));
	G_CUDA(cudaMemset(seen, 0, BATCHES));

	/* 1 + PRODUCERS blocks of one warp: co-resident on any GPU. */
	ring_kernel<<<1 + PRODUCERS, 32>>>(d, dc, seen);
	G_CUDA(cudaGetLastError());
	G_CUDA(cudaDeviceSynchronize());
	if (c->fail_line)
		fprintf(stderr, "device check failed at line %u after %llu batches\n", c->fail_line,
			(unsigned long long)c->consumed);
	KT_CHECK(!c->failed);
	KT_CHECK_EQ(c->consumed, BATCHES);
	static uint8_t host_seen[BATCHES];
	G_CUDA(cudaMemcpy(host_seen, seen, BATCHES, cudaMemcpyDeviceToHost));
	for (int b = 0; b < BATCHES; b++)
		KT_CHECK(host_seen[b]);
	/* The host API reads the GPU ring: nothing READY or HOLD left. */
	for (uint32_t i = 0; i < NITEMS; i++) {
		enum kinet_sem_status st;
		KT_OK(kinet_sem_get_status(sem, i, &st));
		KT_CHECK(st == KINET_SEM_DONE || st == KINET_SEM_FREE);
	}
	cudaFree(seen);
	cudaFreeHost(c);
	KT_OK(kinet_sem_destroy(sem));
	KT_OK(kinet_ctx_close(ctx));
}

/* The host calls on GPU memory go through copies; no host address. */
KT_TEST(host_api_gpu_memory)
{
	G_NEED_GPU();
	struct kinet_ctx *ctx = open_gpu_ctx();
	KT_CHECK(ctx != NULL);
	struct kinet_sem *sem = make_sem(ctx, KINET_SEM_MEM_GPU);
	KT_CHECK(sem != NULL);
	for (uint32_t i = 0; i < NITEMS; i++) {
		enum kinet_sem_status st = KINET_SEM_EXIT;
		KT_OK(kinet_sem_get_status(sem, i, &st));
		KT_CHECK_EQ(st, KINET_SEM_FREE);
		struct kinet_sem_pkt_info in = batch_info(i), out;
		uint8_t cin[CUSTOM], cout[CUSTOM];
		memset(cin, (int)i + 1, sizeof(cin));
		KT_OK(kinet_sem_set_pkt_info(sem, i, &in));
		KT_OK(kinet_sem_set_custom_info(sem, i, cin, sizeof(cin)));
		KT_OK(kinet_sem_set_status(sem, i, KINET_SEM_READY));
		KT_OK(kinet_sem_get_status(sem, i, &st));
		KT_CHECK_EQ(st, KINET_SEM_READY);
		KT_OK(kinet_sem_get_pkt_info(sem, i, &out));
		KT_CHECK(memcmp(&in, &out, sizeof(in)) == 0);
		KT_OK(kinet_sem_get_custom_info(sem, i, cout, sizeof(cout)));
		KT_CHECK(memcmp(cin, cout, sizeof(cin)) == 0);
	}
	void *addr = NULL;
	KT_CHECK_EQ(kinet_sem_custom_info_addr(sem, 0, &addr), -EOPNOTSUPP);
	KT_OK(kinet_ctx_close(ctx)); /* destroys the semaphore */
}

KT_MAIN(kernel_to_cpu, kernel_to_kernel_gpu_memory, host_api_gpu_memory)
