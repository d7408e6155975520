/*
 * GPU semaphores from the host (kinet/eth.h), in a host-only context:
 * attribute defaults and every bad size or argument (-EINVAL), GPU memory
 * without a CUDA device (-ENODEV), fresh items FREE with zeroed info,
 * every status and the packet info round trip, custom info (16-byte
 * aligned, items not overlapping, the copies and the address agreeing),
 * the exported descriptor (fields, same pointer each time), and rings
 * left to kinet_ctx_close.  Both host memory types.
 */
#include "kt.h"
#include "kt_host.h"

#include <kinet/eth.h>
#include <kinet/kinet.h>

#include <stdint.h>
#include <string.h>

static struct kinet_ctx *open_ctx(void)
{
	struct kinet_ctx *ctx = NULL;
	if (kt_ctx_open(1, &ctx))
		return NULL;
	return ctx;
}

static struct kinet_sem_attr attr_of(uint32_t nitems, uint32_t custom, int mem)
{
	struct kinet_sem_attr a;
	kinet_sem_attr_init(&a);
	a.nitems = nitems;
	a.custom_size = custom;
	a.mem = mem;
	return a;
}

KT_TEST(attr_defaults)
{
	struct kinet_sem_attr a;
	memset(&a, 0xff, sizeof(a));
	kinet_sem_attr_init(&a);
	KT_CHECK_EQ(a.size, sizeof(a));
	KT_CHECK_EQ(a.nitems, 1024);
	KT_CHECK_EQ(a.custom_size, 0);
	KT_CHECK_EQ(a.mem, KINET_SEM_MEM_HOST_MAPPED);
	/* GPUNetIO's status values. */
	KT_CHECK_EQ(KINET_SEM_FREE, 0);
	KT_CHECK_EQ(KINET_SEM_READY, 1);
	KT_CHECK_EQ(KINET_SEM_DONE, 2);
	KT_CHECK_EQ(KINET_SEM_HOLD, 3);
	KT_CHECK_EQ(KINET_SEM_ERROR, 4);
	KT_CHECK_EQ(KINET_SEM_EXIT, 5);
	KT_CHECK_EQ(sizeof(struct kinet_sem_item), 32);
	KT_CHECK_EQ(sizeof(struct kinet_sem_pkt_info), 24);
}

KT_TEST(bad_arguments)
{
	struct kinet_ctx *ctx = open_ctx();
	struct kinet_sem *sem = (struct kinet_sem *)(uintptr_t)1;
	struct kinet_sem_attr a;
	KT_CHECK(ctx != NULL);

	a = attr_of(0, 0, KINET_SEM_MEM_HOST_MAPPED);
	KT_CHECK_EQ(kinet_sem_create(ctx, &a, &sem), -EINVAL);
	KT_CHECK(sem == NULL);
	a = attr_of(KINET_SEM_MAX_ITEMS + 1, 0, KINET_SEM_MEM_HOST_MAPPED);
	KT_CHECK_EQ(kinet_sem_create(ctx, &a, &sem), -EINVAL);
	a = attr_of(4, KINET_SEM_MAX_CUSTOM + 1, KINET_SEM_MEM_HOST_MAPPED);
	KT_CHECK_EQ(kinet_sem_create(ctx, &a, &sem), -EINVAL);
	a = attr_of(4, 0, 7);
	KT_CHECK_EQ(kinet_sem_create(ctx, &a, &sem), -EINVAL);
	a = attr_of(4, 0, -1);
	KT_CHECK_EQ(kinet_sem_create(ctx, &a, &sem), -EINVAL);
	a = attr_of(4, 0, KINET_SEM_MEM_HOST);
	a.size = 3; /* not a layout */
	KT_CHECK_EQ(kinet_sem_create(ctx, &a, &sem), -EINVAL);
	a = attr_of(4, 0, KINET_SEM_MEM_HOST);
	KT_CHECK_EQ(kinet_sem_create(NULL, &a, &sem), -EINVAL);
	KT_CHECK_EQ(kinet_sem_create(ctx, NULL, &sem), -EINVAL);
	KT_CHECK_EQ(kinet_sem_create(ctx, &a, NULL), -EINVAL);
	KT_CHECK_EQ(kinet_sem_destroy(NULL), -EINVAL);

	/* A zeroed attr with size 0 is this header's layout. */
	memset(&a, 0, sizeof(a));
	a.nitems = 2;
	KT_OK(kinet_sem_create(ctx, &a, &sem));
	KT_CHECK_EQ(kinet_sem_nitems(sem), 2);

	enum kinet_sem_status st;
	struct kinet_sem_pkt_info info;
	void *addr;
	uint8_t buf[16];
	KT_CHECK_EQ(kinet_sem_get_status(sem, 2, &st), -EINVAL);
	KT_CHECK_EQ(kinet_sem_get_status(sem, 0, NULL), -EINVAL);
	KT_CHECK_EQ(kinet_sem_get_status(NULL, 0, &st), -EINVAL);
	KT_CHECK_EQ(kinet_sem_set_status(sem, 2, KINET_SEM_READY), -EINVAL);
	KT_CHECK_EQ(kinet_sem_set_status(sem, 0, (enum kinet_sem_status)6), -EINVAL);
	KT_CHECK_EQ(kinet_sem_get_pkt_info(sem, 5, &info), -EINVAL);
	KT_CHECK_EQ(kinet_sem_set_pkt_info(sem, 0, NULL), -EINVAL);
	/* No custom info in this ring. */
	KT_CHECK_EQ(kinet_sem_custom_info_addr(sem, 0, &addr), -EINVAL);
	KT_CHECK_EQ(kinet_sem_get_custom_info(sem, 0, buf, 1), -EINVAL);
	KT_CHECK_EQ(kinet_sem_export(sem, NULL), -EINVAL);
	KT_CHECK_EQ(kinet_sem_export(NULL, NULL), -EINVAL);
	KT_OK(kinet_sem_destroy(sem));
	KT_OK(kinet_ctx_close(ctx));
}

/* GPU memory in a context without a CUDA device: -ENODEV, logged. */
KT_TEST(gpu_memory_needs_cuda)
{
	struct kinet_ctx *ctx = open_ctx();
	struct kinet_sem *sem = NULL;
	struct kinet_sem_attr a = attr_of(8, 16, KINET_SEM_MEM_GPU);
	KT_CHECK(ctx != NULL);
	KT_CHECK_EQ(kinet_sem_create(ctx, &a, &sem), -ENODEV);
	KT_CHECK(sem == NULL);
	KT_OK(kinet_ctx_close(ctx));
}

static void ring_checks(int mem)
{
	enum { N = 37, CUSTOM = 20 };
	struct kinet_ctx *ctx = open_ctx();
	struct kinet_sem *sem = NULL;
	struct kinet_sem_attr a = attr_of(N, CUSTOM, mem);
	struct kinet_dev_sem *d = NULL, *d2 = NULL;
	KT_CHECK(ctx != NULL);
	KT_OK(kinet_sem_create(ctx, &a, &sem));

	for (uint32_t i = 0; i < N; i++) {
		enum kinet_sem_status st = KINET_SEM_EXIT;
		struct kinet_sem_pkt_info info;
		memset(&info, 0xff, sizeof(info));
		KT_OK(kinet_sem_get_status(sem, i, &st));
		KT_CHECK_EQ(st, KINET_SEM_FREE);
		KT_OK(kinet_sem_get_pkt_info(sem, i, &info));
		KT_CHECK(info.first == 0 && info.bytes == 0 && info.count == 0 && info.reserved == 0);
	}
	/* Every status, on every item. */
	for (uint32_t i = 0; i < N; i++)
		for (int s = KINET_SEM_FREE; s <= KINET_SEM_EXIT; s++) {
			enum kinet_sem_status st;
			KT_OK(kinet_sem_set_status(sem, i, (enum kinet_sem_status)s));
			KT_OK(kinet_sem_get_status(sem, i, &st));
			KT_CHECK_EQ(st, s);
		}
	/* Packet info: each item its own, reserved cleared. */
	for (uint32_t i = 0; i < N; i++) {
		struct kinet_sem_pkt_info in = {0x100000000ull * i + 7, 1514ull * i, i * 3 + 1, 0xdead};
		KT_OK(kinet_sem_set_pkt_info(sem, i, &in));
	}
	for (uint32_t i = 0; i < N; i++) {
		struct kinet_sem_pkt_info out;
		KT_OK(kinet_sem_get_pkt_info(sem, i, &out));
		KT_CHECK(out.first == 0x100000000ull * i + 7);
		KT_CHECK(out.bytes == 1514ull * i);
		KT_CHECK_EQ(out.count, i * 3 + 1);
		KT_CHECK_EQ(out.reserved, 0);
	}
	/* Custom info: aligned, CUSTOM bytes each, no overlap. */
	uint8_t *prev = NULL;
	for (uint32_t i = 0; i < N; i++) {
		void *addr = NULL;
		uint8_t pat[CUSTOM];
		KT_OK(kinet_sem_custom_info_addr(sem, i, &addr));
		KT_CHECK(((uintptr_t)addr & 15) == 0);
		if (prev)
			KT_CHECK((uint8_t *)addr >= prev + CUSTOM);
		prev = (uint8_t *)addr;
		memset(pat, (int)(i + 1), sizeof(pat));
		KT_OK(kinet_sem_set_custom_info(sem, i, pat, sizeof(pat)));
	}
	for (uint32_t i = 0; i < N; i++) {
		void *addr = NULL;
		uint8_t got[CUSTOM];
		KT_OK(kinet_sem_get_custom_info(sem, i, got, sizeof(got)));
		KT_CHECK(kt_mem_is(got, (uint8_t)(i + 1), sizeof(got)));
		KT_OK(kinet_sem_custom_info_addr(sem, i, &addr));
		KT_CHECK(memcmp(addr, got, sizeof(got)) == 0);
	}
	uint8_t big[CUSTOM + 1];
	KT_CHECK_EQ(kinet_sem_get_custom_info(sem, 0, big, sizeof(big)), -EINVAL);
	KT_CHECK_EQ(kinet_sem_set_custom_info(sem, N, big, 1), -EINVAL);
	KT_OK(kinet_sem_set_custom_info(sem, 0, NULL, 0));

	/* The descriptor: host memory here, so readable; the same each call. */
	KT_OK(kinet_sem_export(sem, &d));
	KT_OK(kinet_sem_export(sem, &d2));
	KT_CHECK(d != NULL && d == d2);
	KT_CHECK_EQ(d->nitems, N);
	KT_CHECK_EQ(d->custom_size, CUSTOM);
	KT_CHECK_EQ(d->custom_stride, 32);
	KT_CHECK_EQ(d->mem, (uint32_t)mem);
	void *c0 = NULL;
	KT_OK(kinet_sem_custom_info_addr(sem, 0, &c0));
	KT_CHECK(d->custom == (uint8_t *)c0);
	KT_CHECK_EQ(d->items[3].info.count, 10);
	/* The ring itself is the one the host calls use. */
	d->items[4].status = KINET_SEM_HOLD;
	enum kinet_sem_status st;
	KT_OK(kinet_sem_get_status(sem, 4, &st));
	KT_CHECK_EQ(st, KINET_SEM_HOLD);

	/* One ring destroyed, one left for kinet_ctx_close. */
	struct kinet_sem *other = NULL;
	KT_OK(kinet_sem_create(ctx, &a, &other));
	KT_OK(kinet_sem_export(other, &d));
	KT_OK(kinet_sem_destroy(sem));
	KT_OK(kinet_ctx_close(ctx));
}

KT_TEST(host_mapped_ring)
{
	ring_checks(KINET_SEM_MEM_HOST_MAPPED);
}

KT_TEST(host_ring)
{
	ring_checks(KINET_SEM_MEM_HOST);
}

KT_MAIN(attr_defaults, bad_arguments, gpu_memory_needs_cuda, host_mapped_ring, host_ring)
