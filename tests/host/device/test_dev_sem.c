/*
 * GPU semaphores under host emulation: producer "kernels" (CPU threads
 * running kinet/device/sem.cuh) claim items with cas_status (FREE or DONE
 * -> HOLD), write the packet info and the custom info of a batch numbered
 * from a shared counter, and mark the item READY; a consumer takes READY
 * items, checks them and marks them DONE, and the producers reuse them.
 * The consumer is the CPU through the host API (a GPU -> CPU ring) or
 * another emulated block through the device API (kernel -> kernel).  An
 * 8-item ring and thousands of batches: every item goes round hundreds of
 * times.  Checked: every batch arrives exactly once, an item's info and
 * custom info always belong to the batch its READY published (never an
 * older one: no batch is seen twice, and an item's batches only grow), and
 * the ring ends with no item READY or HOLD.  The same on a GPU:
 * tests/gpu/test_sem_gpu.cu.
 */
#include "kt.h"
#include "kt_host.h"

#include <kinet/device.cuh>
#include <kinet/eth.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#define NITEMS 8
#define CUSTOM 40 /* bytes: the batch number, then a pattern of it */
#define PRODUCERS 3
#define BATCHES 6000
#define SPIN_LIMIT_NS (30ull * 1000000000ull)

struct ring_test {
	struct kinet_sem *sem;
	struct kinet_dev_sem *dsem;
	uint64_t next_batch; /* shared counter of the producers */
	int device_consumer; /* block 0 consumes through the device API */
	atomic_int failed;
	int fail_line;
	uint8_t *seen; /* BATCHES flags, the consumer's */
	uint64_t consumed;
};

static void fail_at(struct ring_test *t, int line)
{
	if (!atomic_exchange(&t->failed, 1))
		t->fail_line = line;
}

#define R_CHECK(t, cond)                                                                                     \
	do {                                                                                                 \
		if (!(cond)) {                                                                               \
			fail_at((t), __LINE__);                                                              \
			return;                                                                              \
		}                                                                                            \
	} while (0)

/* What batch b's item says. */
static struct kinet_sem_pkt_info batch_info(uint64_t b)
{
	struct kinet_sem_pkt_info i;
	i.first = b * 1000 + 3;
	i.bytes = b * 1514 + 60;
	i.count = (uint32_t)(b % 97) + 1;
	i.reserved = 0;
	return i;
}

static void batch_custom(uint64_t b, uint8_t *c)
{
	memcpy(c, &b, sizeof(b));
	for (int k = 8; k < CUSTOM; k++)
		c[k] = (uint8_t)(b * 31 + (uint64_t)k);
}

/* A producer block: the device API only. */
static void producer(struct ring_test *t)
{
	const struct kinet_dev_sem *s = t->dsem;
	uint32_t idx = kinet_dev_block_id() % NITEMS, iter = 0;
	uint64_t start = kinet_dev_now_ns();

	while (!atomic_load(&t->failed)) {
		enum kinet_sem_status seen;
		int r = kinet_dev_sem_cas_status(s, idx, KINET_SEM_FREE, KINET_SEM_HOLD, &seen);
		if (r == -EAGAIN && seen == KINET_SEM_DONE)
			r = kinet_dev_sem_cas_status(s, idx, KINET_SEM_DONE, KINET_SEM_HOLD, &seen);
		if (r == -EAGAIN) {
			idx = (idx + 1) % NITEMS;
			kinet_dev_relax(iter++);
			R_CHECK(t, kinet_dev_now_ns() - start < SPIN_LIMIT_NS);
			continue;
		}
		R_CHECK(t, r == 0);
		iter = 0;
		/* The item is ours: number the batch only now, so an item's
		 * batches grow. */
		uint64_t b = kinet_devi_atomic_add_u64(&t->next_batch, 1);
		if (b >= BATCHES) {
			R_CHECK(t, kinet_dev_sem_set_status(s, idx, KINET_SEM_FREE) == 0);
			return;
		}
		struct kinet_sem_pkt_info info = batch_info(b);
		void *c = NULL;
		R_CHECK(t, kinet_dev_sem_set_pkt_info(s, idx, &info) == 0);
		R_CHECK(t, kinet_dev_sem_custom_info(s, idx, &c) == 0);
		batch_custom(b, (uint8_t *)c);
		R_CHECK(t, kinet_dev_sem_set_status(s, idx, KINET_SEM_READY) == 0);
		idx = (idx + 1) % NITEMS;
	}
}

/* Checks one READY item's contents; 0 or the failing line. */
static int check_batch(struct ring_test *t, uint64_t *last, uint32_t idx,
		       const struct kinet_sem_pkt_info *info, const uint8_t *c)
{
	uint64_t b;
	uint8_t want[CUSTOM];
	struct kinet_sem_pkt_info wi;

	memcpy(&b, c, sizeof(b));
	if (b >= BATCHES)
		return __LINE__;
	if (t->seen[b]) /* an older batch's contents under a new READY */
		return __LINE__;
	if (last[idx] != UINT64_MAX && b <= last[idx])
		return __LINE__;
	wi = batch_info(b);
	if (memcmp(info, &wi, sizeof(wi)) != 0)
		return __LINE__;
	batch_custom(b, want);
	if (memcmp(c, want, CUSTOM) != 0)
		return __LINE__;
	t->seen[b] = 1;
	last[idx] = b;
	t->consumed++;
	return 0;
}

/* The consumer through the device API (block 0 of the launch). */
static void device_consumer(struct ring_test *t)
{
	const struct kinet_dev_sem *s = t->dsem;
	uint64_t last[NITEMS], start = kinet_dev_now_ns();
	uint32_t idx = 0, iter = 0;

	for (int i = 0; i < NITEMS; i++)
		last[i] = UINT64_MAX;
	while (t->consumed < BATCHES && !atomic_load(&t->failed)) {
		enum kinet_sem_status st;
		R_CHECK(t, kinet_dev_sem_get_status(s, idx, &st) == 0);
		if (st == KINET_SEM_READY) {
			struct kinet_sem_pkt_info info;
			void *c = NULL;
			int line;
			R_CHECK(t, kinet_dev_sem_get_pkt_info(s, idx, &info) == 0);
			R_CHECK(t, kinet_dev_sem_custom_info(s, idx, &c) == 0);
			if ((line = check_batch(t, last, idx, &info, (const uint8_t *)c))) {
				fail_at(t, line);
				return;
			}
			R_CHECK(t, kinet_dev_sem_set_status(s, idx, KINET_SEM_DONE) == 0);
			iter = 0;
		} else {
			kinet_dev_relax(iter++);
		}
		R_CHECK(t, kinet_dev_now_ns() - start < SPIN_LIMIT_NS);
		idx = (idx + 1) % NITEMS;
	}
}

static void block_main(void *arg)
{
	struct ring_test *t = (struct ring_test *)arg;
	if (t->device_consumer && kinet_dev_block_id() == 0)
		device_consumer(t);
	else
		producer(t);
}

static void *launch_main(void *arg)
{
	struct ring_test *t = (struct ring_test *)arg;
	unsigned blocks = PRODUCERS + (t->device_consumer ? 1u : 0u);
	if (kinet_emu_launch(blocks, block_main, t))
		fail_at(t, __LINE__);
	return NULL;
}

/* The consumer through the host API, on the calling thread. */
static void host_consumer(struct ring_test *t)
{
	uint64_t last[NITEMS], start = kt_now_ns();
	uint32_t idx = 0;
	unsigned iter = 0;

	for (int i = 0; i < NITEMS; i++)
		last[i] = UINT64_MAX;
	while (t->consumed < BATCHES && !atomic_load(&t->failed)) {
		enum kinet_sem_status st;
		R_CHECK(t, kinet_sem_get_status(t->sem, idx, &st) == 0);
		if (st == KINET_SEM_READY) {
			struct kinet_sem_pkt_info info;
			uint8_t c[CUSTOM];
			int line;
			R_CHECK(t, kinet_sem_get_pkt_info(t->sem, idx, &info) == 0);
			R_CHECK(t, kinet_sem_get_custom_info(t->sem, idx, c, sizeof(c)) == 0);
			if ((line = check_batch(t, last, idx, &info, c))) {
				fail_at(t, line);
				return;
			}
			R_CHECK(t, kinet_sem_set_status(t->sem, idx, KINET_SEM_DONE) == 0);
			iter = 0;
		} else if (++iter > 64) {
			sched_yield();
		}
		R_CHECK(t, kt_now_ns() - start < SPIN_LIMIT_NS);
		idx = (idx + 1) % NITEMS;
	}
}

static void run_ring(int mem, int device_consumer)
{
	struct kinet_ctx *ctx = NULL;
	struct kinet_sem_attr a;
	struct ring_test t;
	pthread_t launcher;

	memset(&t, 0, sizeof(t));
	t.device_consumer = device_consumer;
	t.seen = (uint8_t *)calloc(BATCHES, 1);
	KT_CHECK(t.seen != NULL);
	KT_OK(kt_ctx_open(1, &ctx));
	kinet_sem_attr_init(&a);
	a.nitems = NITEMS;
	a.custom_size = CUSTOM;
	a.mem = mem;
	KT_OK(kinet_sem_create(ctx, &a, &t.sem));
	KT_OK(kinet_sem_export(t.sem, &t.dsem));

	KT_OK(pthread_create(&launcher, NULL, launch_main, &t));
	if (!device_consumer)
		host_consumer(&t);
	pthread_join(launcher, NULL);
	if (atomic_load(&t.failed))
		fprintf(stderr, "failed at line %d after %llu batches\n", t.fail_line,
			(unsigned long long)t.consumed);
	KT_CHECK(!atomic_load(&t.failed));
	KT_CHECK_EQ(t.consumed, BATCHES);
	for (uint64_t b = 0; b < BATCHES; b++)
		KT_CHECK(t.seen[b]);
	for (uint32_t i = 0; i < NITEMS; i++) {
		enum kinet_sem_status st;
		KT_OK(kinet_sem_get_status(t.sem, i, &st));
		KT_CHECK(st == KINET_SEM_DONE || st == KINET_SEM_FREE);
	}
	KT_OK(kinet_sem_destroy(t.sem));
	KT_OK(kinet_ctx_close(ctx));
	free(t.seen);
}

KT_TEST(kernel_to_cpu_host_mapped)
{
	run_ring(KINET_SEM_MEM_HOST_MAPPED, 0);
}

KT_TEST(kernel_to_cpu_host)
{
	run_ring(KINET_SEM_MEM_HOST, 0);
}

KT_TEST(kernel_to_kernel)
{
	run_ring(KINET_SEM_MEM_HOST_MAPPED, 1);
}

/* The device calls' argument checks. */
KT_TEST(device_errors)
{
	struct kinet_ctx *ctx = NULL;
	struct kinet_sem *sem = NULL;
	struct kinet_dev_sem *d = NULL;
	struct kinet_sem_attr a;
	enum kinet_sem_status st;
	struct kinet_sem_pkt_info info;
	void *c;

	KT_OK(kt_ctx_open(1, &ctx));
	kinet_sem_attr_init(&a);
	a.nitems = 4;
	KT_OK(kinet_sem_create(ctx, &a, &sem));
	KT_OK(kinet_sem_export(sem, &d));
	KT_CHECK_EQ(kinet_dev_sem_get_status(d, 4, &st), -EINVAL);
	KT_CHECK_EQ(kinet_dev_sem_set_status(d, 0, (enum kinet_sem_status)6), -EINVAL);
	KT_CHECK_EQ(kinet_dev_sem_cas_status(d, 9, KINET_SEM_FREE, KINET_SEM_HOLD, &st), -EINVAL);
	KT_CHECK_EQ(kinet_dev_sem_get_pkt_info(d, 4, &info), -EINVAL);
	KT_CHECK_EQ(kinet_dev_sem_custom_info(d, 0, &c), -EINVAL); /* no custom info */
	/* cas: -EAGAIN with what was there; 0 when it was expected. */
	KT_CHECK_EQ(kinet_dev_sem_cas_status(d, 1, KINET_SEM_READY, KINET_SEM_DONE, &st), -EAGAIN);
	KT_CHECK_EQ(st, KINET_SEM_FREE);
	KT_OK(kinet_dev_sem_cas_status(d, 1, KINET_SEM_FREE, KINET_SEM_EXIT, NULL));
	KT_OK(kinet_sem_get_status(sem, 1, &st));
	KT_CHECK_EQ(st, KINET_SEM_EXIT);
	/* Host writes, device reads, and back. */
	info = batch_info(42);
	KT_OK(kinet_sem_set_pkt_info(sem, 2, &info));
	KT_OK(kinet_sem_set_status(sem, 2, KINET_SEM_READY));
	struct kinet_sem_pkt_info got;
	KT_OK(kinet_dev_sem_get_status(d, 2, &st));
	KT_CHECK_EQ(st, KINET_SEM_READY);
	KT_OK(kinet_dev_sem_get_pkt_info(d, 2, &got));
	KT_CHECK(memcmp(&got, &info, sizeof(got)) == 0);
	info = batch_info(43);
	KT_OK(kinet_dev_sem_set_pkt_info(d, 3, &info));
	KT_OK(kinet_dev_sem_set_status(d, 3, KINET_SEM_ERROR));
	KT_OK(kinet_sem_get_status(sem, 3, &st));
	KT_CHECK_EQ(st, KINET_SEM_ERROR);
	KT_OK(kinet_sem_get_pkt_info(sem, 3, &got));
	KT_CHECK(memcmp(&got, &info, sizeof(got)) == 0);
	KT_OK(kinet_ctx_close(ctx)); /* destroys the semaphore */
}

KT_MAIN(kernel_to_cpu_host_mapped, kernel_to_cpu_host, kernel_to_kernel, device_errors)
