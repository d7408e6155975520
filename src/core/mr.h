/*
 * Memory regions (mr.c): the registration table and its look-ups.
 */
#ifndef KINET_CORE_MR_H
#define KINET_CORE_MR_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kinet/device/types.h"
#include "kinet/kinet.h"
#include "kinet/wire.h"

struct kinet_ctx;
struct kinet_qp;
struct kinet_cq;
struct kinet_mr;

/* ---- memory regions (mr.c) ---- */
struct kinet_mr {
	struct kinet_ctx *ctx;
	uint64_t addr;
	uint64_t length;
	uint32_t key; /* core's table key (index << 8 | tag) */
	/* The keys WQEs carry: key for the software NIC; the NIC's keys where
	 * the provider registers memory (ops->mr_reg). */
	uint32_t lkey;
	uint32_t rkey;
	unsigned access;
	enum kinet_mem_type type;
	int cuda_device;
	/* Set as deregistration starts: no new peer-path window (peer.c). */
	atomic_bool revoked;
};

/* Set in the keys core makes (software NIC) for regions of GPU memory. */
#define KINET_KEY_TAG_DEVICE 0x80u

/* Result of a key/range/access check. */
struct kinet_mr_ref {
	struct kinet_mr *mr;
	void *ptr; /* address inside the region */
	enum kinet_mem_type type;
};

/* Looks up key in ctx's table and checks [addr, addr+len) and access (for
 * a zero-based region addr is an offset).  Returns 0, -ENOENT (no such
 * key), -ERANGE (outside), -EACCES (right missing).  The table read lock
 * must be held (kinet_mr_table_rdlock). */
int kinet_mr_lookup(struct kinet_ctx *ctx, uint32_t key, uint64_t addr, uint64_t len, unsigned access,
		    struct kinet_mr_ref *ref);
/* The same for a pointer a look-up gave before (ref->ptr, which is a
 * virtual address also for zero-based regions, whose WQEs use offsets). */
int kinet_mr_lookup_ptr(struct kinet_ctx *ctx, uint32_t key, const void *ptr, uint64_t len, unsigned access,
			struct kinet_mr_ref *ref);
void kinet_mr_table_rdlock(struct kinet_ctx *ctx);
void kinet_mr_table_unlock(struct kinet_ctx *ctx);
/* Frees every MR still registered (ctx close); ctx_free frees the table. */
void kinet_mr_table_free(struct kinet_ctx *ctx);

#endif /* KINET_CORE_MR_H */
