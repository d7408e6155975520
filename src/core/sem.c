/*
 * GPU semaphores (kinet/eth.h, kinet_sem(3)): a ring of items, each a
 * status, a packet info and custom info, in host-mapped, GPU or plain host
 * memory; the device side is kinet/device/sem.cuh.  The host side keeps the
 * device side's ordering: the status is stored with release and loaded
 * with acquire, the info around it plainly (docs/ETHERNET.md).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "kinet/eth.h"

#define SEM_CUSTOM_ALIGN 16u /* custom info holds 16-byte vectors */

struct kinet_sem {
	struct kinet_ctx *ctx;
	struct kinet_sem *next_in_ctx;
	enum kinet_sem_mem mem;
	uint32_t nitems;
	uint32_t custom_size;
	uint32_t custom_stride;
	size_t bytes;		   /* items, then custom info, one allocation */
	uint8_t *base;		   /* host pointer; for GPU memory the device pointer */
	uint8_t *dbase;		   /* device-usable pointer to the same */
	struct kinet_dev_sem *dev; /* exported descriptor, or NULL */
	uint32_t dev_flags;	   /* KINET_DEV_SEM_* */
	pthread_mutex_t export_lock;
};

void kinet_sem_attr_init(struct kinet_sem_attr *attr)
{
	if (!attr)
		return;
	memset(attr, 0, sizeof(*attr));
	attr->size = sizeof(*attr);
	attr->nitems = 1024;
	attr->custom_size = 0;
	attr->mem = KINET_SEM_MEM_HOST_MAPPED;
}

static const char *mem_name(enum kinet_sem_mem mem)
{
	switch (mem) {
	case KINET_SEM_MEM_HOST_MAPPED:
		return "host-mapped";
	case KINET_SEM_MEM_GPU:
		return "GPU";
	case KINET_SEM_MEM_HOST:
		return "host";
	}
	return "?";
}

static void sem_free_memory(struct kinet_sem *sem)
{
	if (sem->dev)
		kinet_cuda_free(sem->ctx, sem->dev);
	if (!sem->base)
		return;
	switch (sem->mem) {
	case KINET_SEM_MEM_HOST_MAPPED:
		kinet_host_free(sem->ctx, sem->base);
		break;
	case KINET_SEM_MEM_GPU:
		kinet_cuda_free(sem->ctx, sem->base);
		break;
	case KINET_SEM_MEM_HOST:
		free(sem->base);
		break;
	}
}

int kinet_sem_create(struct kinet_ctx *ctx, const struct kinet_sem_attr *attr, struct kinet_sem **out)
{
	struct kinet_sem_attr a;
	struct kinet_sem *sem;
	size_t items_bytes;
	int ret;

	if (!out)
		return KINET_EINVAL("sem", "NULL");
	*out = NULL;
	if (!ctx)
		return KINET_EINVAL("ctx", "NULL");
	if (!attr)
		return KINET_EINVAL("attr", "NULL");
	if ((ret = kinet_attr_read("attr", attr, sizeof(a), &a)))
		return ret;
	if (!a.nitems || a.nitems > KINET_SEM_MAX_ITEMS)
		return KINET_EINVAL("attr->nitems", "must be 1..KINET_SEM_MAX_ITEMS (2^24)");
	if (a.custom_size > KINET_SEM_MAX_CUSTOM)
		return KINET_EINVAL("attr->custom_size", "must be 0..KINET_SEM_MAX_CUSTOM (65536)");
	if (a.mem != KINET_SEM_MEM_HOST_MAPPED && a.mem != KINET_SEM_MEM_GPU && a.mem != KINET_SEM_MEM_HOST)
		return KINET_EINVAL("attr->mem", "not an enum kinet_sem_mem");
	if (a.mem == KINET_SEM_MEM_GPU && ctx->cuda_device < 0) {
		KINET_ERR("%s: GPU memory asked for (KINET_SEM_MEM_GPU), but the context has no CUDA device "
			  "(%s): use KINET_SEM_MEM_HOST_MAPPED or KINET_SEM_MEM_HOST",
			  __func__,
#ifdef KINET_HAVE_CUDA
			  "opened host-only, or no device found"
#else
			  "libkinet is built without CUDA"
#endif
		);
		return -ENODEV;
	}

	sem = calloc(1, sizeof(*sem));
	if (!sem)
		return -ENOMEM;
	sem->ctx = ctx;
	sem->mem = (enum kinet_sem_mem)a.mem;
	sem->nitems = a.nitems;
	sem->custom_size = a.custom_size;
	sem->custom_stride = (a.custom_size + SEM_CUSTOM_ALIGN - 1) & ~(SEM_CUSTOM_ALIGN - 1);
	items_bytes = (size_t)a.nitems * sizeof(struct kinet_sem_item);
	/* At most 2^24 * (32 + 65536) bytes: no overflow in size_t. */
	sem->bytes = items_bytes + (size_t)a.nitems * sem->custom_stride;
	pthread_mutex_init(&sem->export_lock, NULL);

	/* Every allocator zeroes: each item starts KINET_SEM_FREE (0). */
	switch (sem->mem) {
	case KINET_SEM_MEM_HOST_MAPPED:
		sem->base = kinet_host_alloc(ctx, sem->bytes);
		sem->dbase = sem->base ? kinet_host_dev_ptr(ctx, sem->base) : NULL;
		if (sem->base && !sem->dbase) {
			KINET_ERR("%s: no device address for %zu bytes of mapped host memory", __func__,
				  sem->bytes);
			ret = -EIO;
		}
		break;
	case KINET_SEM_MEM_GPU:
		sem->base = kinet_cuda_alloc(ctx, sem->bytes);
		sem->dbase = sem->base;
		break;
	case KINET_SEM_MEM_HOST:
		if (posix_memalign((void **)&sem->base, 4096, sem->bytes))
			sem->base = NULL;
		else
			memset(sem->base, 0, sem->bytes);
		sem->dbase = sem->base;
		break;
	}
	if (!sem->base)
		ret = -ENOMEM;
	if (ret) {
		sem_free_memory(sem);
		pthread_mutex_destroy(&sem->export_lock);
		free(sem);
		return ret;
	}

	/* Seen on the H200 (PCIe): a kernel's compare-and-set on a host-memory
	 * status, failing or not, undid a status the CPU had stored
	 * (tests/gpu/test_sem_gpu.cu): refuse it there rather than lose an
	 * item. */
	if (sem->mem != KINET_SEM_MEM_GPU && ctx->cuda_device >= 0 &&
	    !kinet_cuda_host_native_atomics(ctx->cuda_device)) {
		sem->dev_flags |= KINET_DEV_SEM_NO_HOST_CAS;
		KINET_DBG(
			"sem: host memory without host-native GPU atomics: kinet_dev_sem_cas_status refuses");
	}

	pthread_mutex_lock(&ctx->obj_lock);
	sem->next_in_ctx = ctx->sems;
	ctx->sems = sem;
	pthread_mutex_unlock(&ctx->obj_lock);
	KINET_DBG("sem: %u items, %u B custom info each, %s memory", sem->nitems, sem->custom_size,
		  mem_name(sem->mem));
	*out = sem;
	return 0;
}

int kinet_sem_destroy(struct kinet_sem *sem)
{
	struct kinet_ctx *ctx;
	struct kinet_sem **p;

	if (!sem)
		return KINET_EINVAL("sem", "NULL");
	ctx = sem->ctx;
	pthread_mutex_lock(&ctx->obj_lock);
	for (p = &ctx->sems; *p && *p != sem; p = &(*p)->next_in_ctx)
		;
	if (*p)
		*p = sem->next_in_ctx;
	pthread_mutex_unlock(&ctx->obj_lock);
	sem_free_memory(sem);
	pthread_mutex_destroy(&sem->export_lock);
	free(sem);
	return 0;
}

uint32_t kinet_sem_nitems(const struct kinet_sem *sem)
{
	return sem ? sem->nitems : 0;
}

static int item_check(const struct kinet_sem *sem, uint32_t idx, const char *func)
{
	if (!sem) {
		KINET_ERR("%s: invalid argument 'sem': NULL", func);
		return -EINVAL;
	}
	if (idx >= sem->nitems) {
		KINET_ERR("%s: invalid argument 'idx': %u, the ring has %u items", func, idx, sem->nitems);
		return -EINVAL;
	}
	return 0;
}

/* Item idx in the host's view (for GPU memory: its device address, for
 * the copies). */
static struct kinet_sem_item *item_at(const struct kinet_sem *sem, uint32_t idx)
{
	return (struct kinet_sem_item *)(void *)(sem->base + (size_t)idx * sizeof(struct kinet_sem_item));
}

static uint8_t *custom_at(const struct kinet_sem *sem, uint32_t idx)
{
	return sem->base + (size_t)sem->nitems * sizeof(struct kinet_sem_item) +
	       (size_t)idx * sem->custom_stride;
}

int kinet_sem_get_status(struct kinet_sem *sem, uint32_t idx, enum kinet_sem_status *status)
{
	uint32_t v;
	int ret;

	if ((ret = item_check(sem, idx, __func__)))
		return ret;
	if (!status)
		return KINET_EINVAL("status", "NULL");
	if (sem->mem == KINET_SEM_MEM_GPU) {
		/* One aligned 4-byte word: the copy engine reads it whole.  The
		 * copy's completion orders it before the caller's next copy. */
		if ((ret = kinet_cuda_copy_out(sem->ctx, &v, &item_at(sem, idx)->status, sizeof(v))))
			return ret;
	} else {
		v = __atomic_load_n(&item_at(sem, idx)->status, __ATOMIC_ACQUIRE);
	}
	*status = (enum kinet_sem_status)v;
	return 0;
}

int kinet_sem_set_status(struct kinet_sem *sem, uint32_t idx, enum kinet_sem_status status)
{
	uint32_t v = (uint32_t)status;
	int ret;

	if ((ret = item_check(sem, idx, __func__)))
		return ret;
	if (v > KINET_SEM_STATUS_MAX)
		return KINET_EINVAL("status", "not an enum kinet_sem_status");
	if (sem->mem == KINET_SEM_MEM_GPU)
		/* Copies into GPU memory complete in order, each before the
		 * call returns: info copied in earlier lands first. */
		return kinet_cuda_copy_in(sem->ctx, &item_at(sem, idx)->status, &v, sizeof(v));
	__atomic_store_n(&item_at(sem, idx)->status, v, __ATOMIC_RELEASE);
	return 0;
}

int kinet_sem_get_pkt_info(struct kinet_sem *sem, uint32_t idx, struct kinet_sem_pkt_info *info)
{
	int ret;

	if ((ret = item_check(sem, idx, __func__)))
		return ret;
	if (!info)
		return KINET_EINVAL("info", "NULL");
	if (sem->mem == KINET_SEM_MEM_GPU)
		return kinet_cuda_copy_out(sem->ctx, info, &item_at(sem, idx)->info, sizeof(*info));
	memcpy(info, &item_at(sem, idx)->info, sizeof(*info));
	return 0;
}

int kinet_sem_set_pkt_info(struct kinet_sem *sem, uint32_t idx, const struct kinet_sem_pkt_info *info)
{
	struct kinet_sem_pkt_info v;
	int ret;

	if ((ret = item_check(sem, idx, __func__)))
		return ret;
	if (!info)
		return KINET_EINVAL("info", "NULL");
	v = *info;
	v.reserved = 0;
	if (sem->mem == KINET_SEM_MEM_GPU)
		return kinet_cuda_copy_in(sem->ctx, &item_at(sem, idx)->info, &v, sizeof(v));
	memcpy(&item_at(sem, idx)->info, &v, sizeof(v));
	return 0;
}

static int custom_check(const struct kinet_sem *sem, uint32_t idx, size_t len, const char *func)
{
	int ret = item_check(sem, idx, func);

	if (ret)
		return ret;
	if (!sem->custom_size) {
		KINET_ERR("%s: the semaphore has no custom info (attr.custom_size 0)", func);
		return -EINVAL;
	}
	if (len > sem->custom_size) {
		KINET_ERR("%s: invalid argument 'len': %zu, the custom info has %u bytes", func, len,
			  sem->custom_size);
		return -EINVAL;
	}
	return 0;
}

int kinet_sem_custom_info_addr(struct kinet_sem *sem, uint32_t idx, void **addr)
{
	int ret;

	if ((ret = custom_check(sem, idx, 0, __func__)))
		return ret;
	if (!addr)
		return KINET_EINVAL("addr", "NULL");
	if (sem->mem == KINET_SEM_MEM_GPU) {
		KINET_ERR("%s: the custom info is in GPU memory, which the CPU cannot address: "
			  "kinet_sem_get_custom_info / kinet_sem_set_custom_info copy it",
			  __func__);
		return -EOPNOTSUPP;
	}
	*addr = custom_at(sem, idx);
	return 0;
}

int kinet_sem_get_custom_info(struct kinet_sem *sem, uint32_t idx, void *dst, size_t len)
{
	int ret;

	if ((ret = custom_check(sem, idx, len, __func__)))
		return ret;
	if (!dst && len)
		return KINET_EINVAL("dst", "NULL");
	if (sem->mem == KINET_SEM_MEM_GPU)
		return len ? kinet_cuda_copy_out(sem->ctx, dst, custom_at(sem, idx), len) : 0;
	if (len)
		memcpy(dst, custom_at(sem, idx), len);
	return 0;
}

int kinet_sem_set_custom_info(struct kinet_sem *sem, uint32_t idx, const void *src, size_t len)
{
	int ret;

	if ((ret = custom_check(sem, idx, len, __func__)))
		return ret;
	if (!src && len)
		return KINET_EINVAL("src", "NULL");
	if (sem->mem == KINET_SEM_MEM_GPU)
		return len ? kinet_cuda_copy_in(sem->ctx, custom_at(sem, idx), src, len) : 0;
	if (len)
		memcpy(custom_at(sem, idx), src, len);
	return 0;
}

int kinet_sem_export(struct kinet_sem *sem, struct kinet_dev_sem **dsem)
{
	struct kinet_dev_sem d;
	int ret = 0;

	if (!sem)
		return KINET_EINVAL("sem", "NULL");
	if (!dsem)
		return KINET_EINVAL("dsem", "NULL");
	pthread_mutex_lock(&sem->export_lock);
	if (!sem->dev) {
		memset(&d, 0, sizeof(d));
		d.items = (struct kinet_sem_item *)(void *)sem->dbase;
		d.custom = sem->custom_size ? sem->dbase + (size_t)sem->nitems * sizeof(struct kinet_sem_item)
					    : NULL;
		d.nitems = sem->nitems;
		d.custom_size = sem->custom_size;
		d.custom_stride = sem->custom_stride;
		d.mem = (uint32_t)sem->mem;
		d.flags = sem->dev_flags;
		ret = kinet_cuda_export_copy(sem->ctx, &d, sizeof(d), (void **)&sem->dev);
	}
	if (!ret)
		*dsem = sem->dev;
	pthread_mutex_unlock(&sem->export_lock);
	return ret;
}
