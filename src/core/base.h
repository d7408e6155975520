/*
 * Process-wide services of core: the job, polling threads, ThreadSanitizer
 * annotations, environment, time, 16-bit counters, host memory the GPU
 * maps.
 */
#ifndef KINET_CORE_BASE_H
#define KINET_CORE_BASE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kinet/device/types.h"
#include "kinet/kinet.h"
#include "kinet/wire.h"

#include "env.h"
#include "log.h"

/* Fields written by different threads go on lines of their own
 * (_Alignas(KINET_CACHE_LINE)); objects holding such fields come from
 * kinet_alloc_lines: zeroed, aligned, whole lines.  Freed with free(). */
#define KINET_CACHE_LINE 64

static inline void *kinet_alloc_lines(size_t size)
{
	void *p;

	size = (size + KINET_CACHE_LINE - 1) & ~(size_t)(KINET_CACHE_LINE - 1);
	if ((p = aligned_alloc(KINET_CACHE_LINE, size)))
		memset(p, 0, size);
	return p;
}

struct kinet_ctx;
struct kinet_qp;
struct kinet_cq;
struct kinet_mr;

/* ---- the job (job.c; boot and launchers fill it in) ---- */
/* Ranks of the job and of them on this host: 1 each when nothing (launcher
 * variables, a kinet_boot joined) says more. */
void kinet_job_size(int *nranks, int *local);
void kinet_job_joined(int nranks);

/* ---- pollers (pollers.c) ---- */
/* Counts polling threads of this process: engine threads, or emulated
 * device threads. */
void kinet_pollers_add(bool engine, int delta);
/* Whether the polling threads of the ranks on this host outnumber the
 * cores (says so once, at warn level). */
bool kinet_pollers_oversubscribed(void);
/* Whether this process runs engine threads (of any context). */
bool kinet_pollers_engines(void);

/* ---- attribute structs that can grow (attr.c) ---- */
/* Copies the caller's attribute struct attr (name: for the log) into out,
 * this library's layout of ours bytes, after checking its size field (the
 * first, uint32_t): 0 (the caller's header has this layout), or a size of
 * at least ours whose bytes past ours are zero (a newer header's fields
 * left at their defaults).  0 or -EINVAL. */
int kinet_attr_read(const char *name, const void *attr, size_t ours, void *out);
/* The same, also accepting the sizes of older layouts down to `oldest`. */
int kinet_attr_read_since(const char *name, const void *attr, size_t oldest, size_t ours, void *out);

/* ---- ThreadSanitizer ----
 * A happens-before edge TSan cannot see on its own: shared memory that two
 * parties map at different addresses (the node carrier's rings, also
 * within one process).  The publisher releases `key` after its release
 * store, the consumer acquires it after its acquire load.  No-ops in
 * other builds. */
#if defined(__SANITIZE_THREAD__)
#define KINET_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define KINET_TSAN 1
#endif
#endif
#if defined(KINET_TSAN)
void __tsan_acquire(void *addr);
void __tsan_release(void *addr);
#define KINET_TSAN_RELEASE(key) __tsan_release(key)
#define KINET_TSAN_ACQUIRE(key) __tsan_acquire(key)
#else
#define KINET_TSAN_RELEASE(key) ((void)(key))
#define KINET_TSAN_ACQUIRE(key) ((void)(key))
#endif

/* ---- env (env.c) ---- */

/* ---- 16-bit hardware counters ---- */
/* The 64-bit count whose low 16 bits are v, at or after base (producer
 * indexes in doorbell records, wqe_counter in CQEs). */
static inline uint64_t kinet_extend16(uint64_t base, uint16_t v)
{
	return base + (uint16_t)(v - (uint16_t)base);
}

/* ---- time ---- */
uint64_t kinet_now_ns(void);

/* ---- memory shared with the GPU (memory.c) ----
 * Pinned host memory mapped into the GPU when the context has CUDA, plain
 * aligned memory otherwise.  Zeroed. */
void *kinet_host_alloc(struct kinet_ctx *ctx, size_t size);
void kinet_host_free(struct kinet_ctx *ctx, void *ptr);
/* Device-usable address of host memory from kinet_host_alloc. */
void *kinet_host_dev_ptr(struct kinet_ctx *ctx, void *ptr);

#endif /* KINET_CORE_BASE_H */
