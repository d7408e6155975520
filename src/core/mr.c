/*
 * Memory regions and the key table the engine checks every access against.
 *
 * A key is (table index << 8) | tag, the tag a nonzero byte that changes on
 * every registration: a stale key of a deregistered region that reused the
 * slot is rejected, and no key equals KINET_INVALID_LKEY (index 1, tag 0).
 * The tag's top bit is KINET_KEY_TAG_DEVICE for GPU memory, its low seven
 * bits the changing part.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "provider.h"

#define MR_ACCESS_ALL                                                                                        \
	(KINET_ACCESS_LOCAL_WRITE | KINET_ACCESS_REMOTE_WRITE | KINET_ACCESS_REMOTE_READ |                   \
	 KINET_ACCESS_REMOTE_ATOMIC | KINET_ACCESS_ZERO_BASED)
#define MR_TABLE_MAX (1u << 24)

void kinet_mr_table_rdlock(struct kinet_ctx *ctx)
{
	kinet_brlock_rdlock(&ctx->mr_lock);
}

void kinet_mr_table_unlock(struct kinet_ctx *ctx)
{
	kinet_brlock_rdunlock(&ctx->mr_lock);
}

/* A free slot index, growing the table if needed; mr_lock held for write. */
static int mr_slot(struct kinet_ctx *ctx, uint32_t *idx)
{
	struct kinet_mr **t;
	uint32_t i, n;

	for (i = 0; i < ctx->mr_table_size; i++) {
		if (!ctx->mr_table[i]) {
			*idx = i;
			return 0;
		}
	}
	n = ctx->mr_table_size ? ctx->mr_table_size * 2 : 64;
	if (n > MR_TABLE_MAX)
		return -ENOMEM;
	t = realloc(ctx->mr_table, n * sizeof(*t));
	if (!t)
		return -ENOMEM;
	memset(t + ctx->mr_table_size, 0, (n - ctx->mr_table_size) * sizeof(*t));
	*idx = ctx->mr_table_size;
	ctx->mr_table = t;
	ctx->mr_table_size = n;
	return 0;
}

int kinet_mr_reg(struct kinet_ctx *ctx, void *addr, size_t length, unsigned access, struct kinet_mr **out)
{
	enum kinet_mem_type type;
	struct kinet_mr *mr;
	uint32_t idx;
	int dev, ret;

	if (!out)
		return KINET_EINVAL("mr", "NULL");
	*out = NULL;
	if (!ctx)
		return KINET_EINVAL("ctx", "NULL");
	if (!addr)
		return KINET_EINVAL("addr", "NULL");
	if (!length)
		return KINET_EINVAL("length", "0");
	if ((uintptr_t)addr + length < (uintptr_t)addr)
		return KINET_EINVAL("length", "region wraps around the address space");
	if (access & ~MR_ACCESS_ALL)
		return KINET_EINVAL("access", "unknown access bits");
	/* As verbs: a region the peer may write must be locally writable. */
	if ((access & (KINET_ACCESS_REMOTE_WRITE | KINET_ACCESS_REMOTE_ATOMIC)) &&
	    !(access & KINET_ACCESS_LOCAL_WRITE))
		return KINET_EINVAL("access", "REMOTE_WRITE and REMOTE_ATOMIC require LOCAL_WRITE");

	type = kinet_cuda_mem_type(addr, &dev);
	if (type == KINET_MEM_CUDA && ctx->cuda_device < 0)
		return KINET_EINVAL("addr", "CUDA device memory in a host-only context (open it with a "
					    "CUDA device)");
	/* cudaMemcpy from pageable host memory returns once the data is
	 * staged, before it lands; the application then posts an operation
	 * whose copy, on the engine's non-blocking stream (or a NIC's DMA),
	 * may read the memory first.  The attribute makes such copies
	 * complete before they return, for every later registration too:
	 * what GPUDirect RDMA asks of the memory a NIC reads. */
	if (type == KINET_MEM_CUDA)
		kinet_cuda_sync_memops(addr, length, dev);

	mr = calloc(1, ctx->ops->mr_size);
	if (!mr)
		return -ENOMEM;
	mr->ctx = ctx;
	mr->addr = (uintptr_t)addr;
	mr->length = length;
	mr->access = access;
	mr->type = type;
	mr->cuda_device = dev;

	/* The NIC first (it needs none of core's fields but the region's):
	 * look-ups find the region only once both know it. */
	if (ctx->ops->mr_reg) {
		ret = ctx->ops->mr_reg(mr);
		if (ret) {
			free(mr);
			return ret;
		}
	}
	kinet_brlock_wrlock(&ctx->mr_lock);
	ret = mr_slot(ctx, &idx);
	if (ret) {
		kinet_brlock_wrunlock(&ctx->mr_lock);
		if (ctx->ops->mr_dereg)
			ctx->ops->mr_dereg(mr);
		free(mr);
		KINET_ERR("memory region table full");
		return ret;
	}
	/* The tag's top bit says GPU memory: device code stages such sources
	 * (kinet_dev_qp.stage_key) without a look-up of its own. */
	mr->key = (idx << 8) | (ctx->key_salt++ % 127 + 1) |
		  (type == KINET_MEM_CUDA ? KINET_KEY_TAG_DEVICE : 0);
	if (!ctx->ops->mr_reg)
		mr->lkey = mr->rkey = mr->key;
	ctx->mr_table[idx] = mr;
	ctx->mr_count++;
	kinet_brlock_wrunlock(&ctx->mr_lock);

	KINET_DBG("mr %#x: %p+%zu access %#x %s", mr->key, addr, length, access,
		  type == KINET_MEM_CUDA ? "cuda" : "host");
	kinet_peer_mr_added(mr);
	*out = mr;
	return 0;
}

int kinet_mr_dereg(struct kinet_mr *mr)
{
	struct kinet_ctx *ctx;
	uint32_t idx;

	if (!mr)
		return KINET_EINVAL("mr", "NULL");
	ctx = mr->ctx;
	idx = mr->key >> 8;
	/* Device code stops using the region's windows first. */
	kinet_peer_mr_revoke(mr);
	/* The write lock waits for engine lookups that may still use the
	 * region; afterwards no new lookup finds it. */
	kinet_brlock_wrlock(&ctx->mr_lock);
	if (idx < ctx->mr_table_size && ctx->mr_table[idx] == mr) {
		ctx->mr_table[idx] = NULL;
		ctx->mr_count--;
	}
	kinet_brlock_wrunlock(&ctx->mr_lock);
	if (ctx->ops->mr_dereg)
		ctx->ops->mr_dereg(mr);
	free(mr);
	return 0;
}

void kinet_mr_table_free(struct kinet_ctx *ctx)
{
	uint32_t i;

	kinet_brlock_wrlock(&ctx->mr_lock);
	for (i = 0; i < ctx->mr_table_size; i++) {
		if (ctx->mr_table[i] && ctx->ops->mr_dereg)
			ctx->ops->mr_dereg(ctx->mr_table[i]);
		free(ctx->mr_table[i]);
		ctx->mr_table[i] = NULL;
	}
	ctx->mr_count = 0;
	kinet_brlock_wrunlock(&ctx->mr_lock);
}

static struct kinet_mr *mr_find(struct kinet_ctx *ctx, uint32_t key)
{
	uint32_t idx = key >> 8;
	struct kinet_mr *mr;

	/* The NIC's keys (lkey or rkey) say nothing of core's table: a scan,
	 * for the host's few look-ups (inline data, windows). */
	if (ctx->ops->mr_reg) {
		for (idx = 0; idx < ctx->mr_table_size; idx++) {
			mr = ctx->mr_table[idx];
			if (mr && (mr->lkey == key || mr->rkey == key))
				return mr;
		}
		return NULL;
	}
	if (idx >= ctx->mr_table_size)
		return NULL;
	mr = ctx->mr_table[idx];
	return mr && mr->key == key ? mr : NULL;
}

/* off: where the access starts, from the region's start. */
static int mr_check(struct kinet_mr *mr, uint64_t off, uint64_t len, unsigned access,
		    struct kinet_mr_ref *ref)
{
	/* Written so that no sum can overflow; len 0 may sit at the end. */
	if (len > mr->length || off > mr->length - len)
		return -ERANGE;
	if (access & ~mr->access)
		return -EACCES;
	ref->mr = mr;
	ref->ptr = (void *)(uintptr_t)(mr->addr + off);
	ref->type = mr->type;
	return 0;
}

int kinet_mr_lookup(struct kinet_ctx *ctx, uint32_t key, uint64_t addr, uint64_t len, unsigned access,
		    struct kinet_mr_ref *ref)
{
	struct kinet_mr *mr = mr_find(ctx, key);

	if (!mr)
		return -ENOENT;
	/* A zero-based region is named by offsets. */
	if (mr->access & KINET_ACCESS_ZERO_BASED)
		return mr_check(mr, addr, len, access, ref);
	if (addr < mr->addr)
		return -ERANGE;
	return mr_check(mr, addr - mr->addr, len, access, ref);
}

int kinet_mr_lookup_ptr(struct kinet_ctx *ctx, uint32_t key, const void *ptr, uint64_t len, unsigned access,
			struct kinet_mr_ref *ref)
{
	struct kinet_mr *mr = mr_find(ctx, key);

	if (!mr)
		return -ENOENT;
	if ((uintptr_t)ptr < mr->addr)
		return -ERANGE;
	return mr_check(mr, (uintptr_t)ptr - mr->addr, len, access, ref);
}

uint32_t kinet_mr_lkey(const struct kinet_mr *mr)
{
	return mr ? mr->lkey : 0;
}

uint32_t kinet_mr_rkey(const struct kinet_mr *mr)
{
	return mr ? mr->rkey : 0;
}

enum kinet_mem_type kinet_mr_mem_type(const struct kinet_mr *mr)
{
	return mr ? mr->type : KINET_MEM_HOST;
}

int kinet_mr_pack(const struct kinet_mr *mr, struct kinet_mr_info *info)
{
	uint64_t node;
	int i;

	if (!mr)
		return KINET_EINVAL("mr", "NULL");
	if (!info)
		return KINET_EINVAL("info", "NULL");
	memset(info, 0, sizeof(*info));
	info->addr = mr->access & KINET_ACCESS_ZERO_BASED ? 0 : mr->addr;
	info->length = mr->length;
	info->rkey = mr->rkey;
	info->access = mr->access;
	/* transport[0..7]: owner's node id, little-endian; [8]: memory type. */
	node = mr->ctx->node_id;
	for (i = 0; i < 8; i++)
		info->transport[i] = (uint8_t)(node >> (8 * i));
	info->transport[8] = (uint8_t)mr->type;
	return 0;
}
