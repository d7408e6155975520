/*
 * kinet device API, implementation: the peer path (docs/PEER_PATH.md).
 *
 * When kinet_qp_export gave a QP a window table (qp->peer != NULL), device
 * code can reach the target's registered memory with its own loads, stores
 * and system-scope atomics: GPUs of one host (NVLink or PCIe peer access),
 * or host memory under emulation.  The high-level verbs (impl/rma.cuh, ...) try this
 * path first; kinet_devi_peer_* return KINET_DEVI_PEER_MISS when it does not
 * apply, and the verb then posts WQEs as on any QP.
 *
 * Protection: an operation takes the peer path only when its local key and
 * its remote key name live windows that hold the whole range with the
 * rights the engine would check (remote write, read or atomic; local write
 * where data lands locally).  Anything else -- unknown or revoked key,
 * range outside, right missing, misaligned atomic -- is a miss: the WQE
 * goes to the engine, which performs it (a region registered after the
 * table was built) or fails it with the same error CQE, syndrome and
 * kinet_ctx_last_error record as on any QP.  So device code never touches
 * memory the engine would refuse.
 *
 * Ordering and completion (the RC rules, whichever path an operation takes):
 *  - Before a peer operation, the WQEs committed earlier on the QP are
 *    waited for (they complete in order; a peer store must not overtake
 *    them).  Later WQEs are ordered after the peer operation by the
 *    release fence of the doorbell (kinet_dev_sq_ring), after a group
 *    barrier in the group forms.
 *  - Puts are stores, complete once a system-scope fence orders them:
 *    kinet_dev_wait/test/quiet on a peer QP issue one (fence.sc.sys) before
 *    looking at the send queue.  As with NVSHMEM, the fence covers the
 *    calling thread's stores and those it synchronised with (a group
 *    barrier, __syncthreads): quiet the QP from the thread or group that put.
 *  - get, fetch_add, compare_swap are complete on return (the loads and the
 *    atomic are done; results are in the caller's buffer).
 *  - signal and put_signal order the data before the signal with a
 *    system-scope fence, then add atomically: a peer that sees the signal
 *    (acquire) sees the data.
 *  - Tickets: a peer operation returns the send queue's commit index when
 *    it ran (every WQE before it is already complete), so waiting on it
 *    only fences.
 *  - Atomics of the peer path are real atomics on the target word; they are
 *    atomic with kinet atomics that also take the peer path or run on the
 *    CPU, not with atomics the engine applies to GPU memory by copies.
 */
#ifndef KINET_DEVICE_IMPL_PEER_CUH
#define KINET_DEVICE_IMPL_PEER_CUH

#include "kinet/device/impl/post.cuh"
#include "kinet/device/impl/scope.cuh"
#include "kinet/device/platform.cuh"
#include "kinet/device/sq.cuh"
#include "kinet/device/types.h"
#include "kinet/kinet.h"

/* Not a status: the operation does not take the peer path. */
#define KINET_DEVI_PEER_MISS 1

/* Defined 0 before kinet/device.cuh, the verbs never try the peer path:
 * every operation posts WQEs, on QPs with a peer path too (the engine then
 * performs them).  What it saves is the attempt's loads on a QP without a
 * peer path, which a verb cannot skip before it has them: about 0.6 us of
 * an 8-byte put over the software NIC on an H200 (docs/PEER_PATH.md). */
#ifndef KINET_DEV_PEER_PATH
#define KINET_DEV_PEER_PATH 1
#endif

/* Whether operations on qp may take the peer path: it has one, and this
 * code was built with it. */
KINET_DEV_FN int kinet_devi_peer_on(const struct kinet_dev_qp *qp)
{
	return KINET_DEV_PEER_PATH && qp->peer;
}

/* Largest transfer per thread of the group that the peer path takes in the
 * thread and warp forms; larger ones go to the engine, whose copy engine
 * moves them faster than a few threads can: one thread keeps only a few
 * 16-byte loads in flight (a get of 64 KiB by one thread is a thousand
 * NVLink round trips), and its stores issue at tens of M/s.  Block forms
 * always take the peer path.  Under host emulation every transfer does
 * (there is no copy engine to prefer). */
#ifndef KINET_DEV_PEER_PUT_BYTES_PER_THREAD
#define KINET_DEV_PEER_PUT_BYTES_PER_THREAD (16ull * 1024)
#endif
#ifndef KINET_DEV_PEER_GET_BYTES_PER_THREAD
#define KINET_DEV_PEER_GET_BYTES_PER_THREAD (2ull * 1024)
#endif

KINET_DEV_FN int kinet_devi_peer_size_ok(int g, uint64_t size, uint64_t per_thread)
{
#if defined(KINET_HOST_EMU)
	(void)g;
	(void)size;
	(void)per_thread;
	return 1;
#else
	return g == KINET_DEVI_GROUP_BLOCK || size <= per_thread * kinet_devi_group_size(g);
#endif
}

/* A window's record as two 16-byte loads: {addr, length} and {delta,
 * access, live}.  Records may come from any cache: slots are written once,
 * before their key, and never reused; a record read before it was written
 * (or half of it: an L1 may hold one half from before) has length 0 or
 * live 0, which fails the check. */
KINET_DEV_FN void kinet_devi_window_read(const struct kinet_dev_window *w, struct kinet_dev_window *out)
{
#if defined(KINET_HOST_EMU)
	/* The host fills slots while device threads read others. */
	out->addr = __atomic_load_n(&w->addr, __ATOMIC_RELAXED);
	out->length = __atomic_load_n(&w->length, __ATOMIC_RELAXED);
	out->delta = __atomic_load_n(&w->delta, __ATOMIC_RELAXED);
	out->access = __atomic_load_n(&w->access, __ATOMIC_RELAXED);
	out->live = __atomic_load_n(&w->live, __ATOMIC_RELAXED);
#else
	const ulonglong2 *v = (const ulonglong2 *)(const void *)w;
	ulonglong2 a = v[0], b = v[1];
	out->addr = a.x;
	out->length = a.y;
	out->delta = b.x;
	out->access = (uint32_t)b.y;
	out->live = (uint32_t)(b.y >> 32);
#endif
}

/* The slot of t keyed key, or -1.  Keys are read at GPU scope (a revoked
 * key is seen at once), four per load; first[] holds slots 0-3, loaded by
 * the caller with everything else it needs, and usually has the key.  Key
 * 0 names no region (empty and revoked slots hold it). */
KINET_DEV_FN int kinet_devi_window_slot(const struct kinet_dev_window_table *t, const uint32_t first[4],
					uint32_t key)
{
	if (!key)
		return -1;
	for (int j = 0; j < 4; j++)
		if (first[j] == key)
			return j;
#if defined(KINET_HOST_EMU)
	uint32_t n = __atomic_load_n(&t->count, __ATOMIC_RELAXED); /* the host publishes it concurrently */
#else
	uint32_t n = t->count; /* any cached value will do: a stale one only misses */
#endif
	if (n > KINET_DEV_PEER_WINDOWS)
		n = KINET_DEV_PEER_WINDOWS;
	for (uint32_t i = 4; i < n; i += 4) {
		uint32_t k[4];
		kinet_devi_load_coherent_u32x4(&t->key[i], k);
		for (uint32_t j = 0; j < 4 && i + j < n; j++)
			if (k[j] == key)
				return (int)(i + j);
	}
	return -1;
}

/* 0 and *ptr (device-usable) when [addr, addr+len) lies inside the window
 * w with every right in need, else KINET_DEVI_PEER_MISS. */
KINET_DEV_FN int kinet_devi_window_check(const struct kinet_dev_window *w, uint64_t addr, uint64_t len,
					 uint32_t need, uint8_t **ptr)
{
	if (!w->live || addr < w->addr || len > w->length || addr - w->addr > w->length - len ||
	    (w->access & need) != need)
		return KINET_DEVI_PEER_MISS;
	*ptr = (uint8_t *)(uintptr_t)(addr + w->delta);
	return 0;
}

/* 1 when every WQE committed on the QP is complete; *ready: the commit
 * index (a peer operation's ticket). */
KINET_DEV_FN int kinet_devi_peer_sq_idle(struct kinet_dev_qp *qp, uint64_t *ready)
{
	int scope = kinet_devi_qp_scope(qp);
	*ready = kinet_devi_scoped_load_acquire_u64(scope, &qp->sq_ready);
	return kinet_devi_scoped_load_acquire_u64(scope, &qp->sq_done) >= *ready;
}

/* Earlier WQEs of the QP complete (in order) before a peer operation runs:
 * 0 with *ticket = the commit index, or -EIO / -ETIMEDOUT as their wait. */
KINET_DEV_FN int kinet_devi_peer_drain(struct kinet_dev_qp *qp, uint64_t *ticket)
{
	if (kinet_devi_scoped_load_acquire_u32(kinet_devi_qp_scope(qp), &qp->sq_error))
		return -EIO;
	if (kinet_devi_peer_sq_idle(qp, ticket))
		return 0;
	/* Under moderation the last WQEs may have asked for no CQE. */
	if (kinet_devi_sq_cover(qp, ticket) == -ETIMEDOUT)
		return -ETIMEDOUT;
	return kinet_dev_sq_wait(qp, *ticket);
}

/* What a peer verb reads of its QP before it takes any branch, so that all
 * of it comes in one round trip to L2 (a verb's latency is its number of
 * dependent round trips, ~150 ns each on an H200, and after any acquire
 * the L1 holds nothing of the QP): the table pointer, the first keys of
 * both tables (the descriptor's copies, read at GPU scope so a revoked
 * key is seen at once) and the send queue's counters. */
struct kinet_devi_peer_view {
	const struct kinet_dev_peer *pt; /* NULL: not a peer QP */
	uint32_t key[2][4];		 /* local, remote: slots 0-3 */
	uint32_t max_inline, sharing, err;
	uint64_t ready, done;
};

KINET_DEV_FN void kinet_devi_peer_view_load(const struct kinet_dev_qp *qp, struct kinet_devi_peer_view *v)
{
	v->pt = NULL; /* every verb misses on it first */
	if (!KINET_DEV_PEER_PATH)
		return;
	v->pt = qp->peer;
	v->max_inline = qp->max_inline;
	v->sharing = qp->sharing;
	kinet_devi_load_coherent_u32x4(qp->peer_key[0], v->key[0]);
	kinet_devi_load_coherent_u32x4(qp->peer_key[1], v->key[1]);
	/* GPU scope whatever the sharing (no branch before the loads); the
	 * acquire of kinet_devi_peer_resolve orders what they allow. */
	uint64_t rd[2]; /* sq_ready, sq_done: adjacent, one request */
	kinet_devi_load_relaxed_u64x2_gpu(&qp->sq_ready, rd);
	v->err = kinet_devi_load_relaxed_u32_gpu(&qp->sq_error);
	v->ready = rd[0];
	v->done = rd[1];
}

/* One window a peer operation needs: which table, key, range and right. */
struct kinet_devi_peer_need {
	int remote; /* 1: the target's table (rkey), 0: the initiator's (lkey) */
	uint32_t key;
	uint64_t addr;
	uint64_t len;
	uint32_t right;
};

#define KINET_DEVI_PEER_MAX_NEEDS 3

/* Rank 0 looks up each of the n needs and, when all are met, drains the
 * send queue once; the group gets its decision and the device pointers
 * (ptr[i] for need[i]), so a key revoked while the group looks cannot
 * split it.  v: the verb's view of the QP (rank 0's is used).  With keys
 * among the first four, the records of every need are the one further
 * round trip, taken together; the checks branch only after. */
KINET_DEV_FN int kinet_devi_peer_resolve(int g, struct kinet_dev_qp *qp, const struct kinet_devi_peer_view *v,
					 const struct kinet_devi_peer_need *need, int n, uint8_t **ptr,
					 uint64_t *ticket)
{
	int st = 0, unused = 0;
	uint64_t p[KINET_DEVI_PEER_MAX_NEEDS] = {0, 0, 0}, tk = 0;
	if (kinet_devi_group_rank(g) == 0) {
		const struct kinet_dev_window_table *tab[2] = {&v->pt->local, &v->pt->remote};
		int slot[KINET_DEVI_PEER_MAX_NEEDS];
		struct kinet_dev_window rec[KINET_DEVI_PEER_MAX_NEEDS];
		for (int i = 0; i < n; i++)
			slot[i] = kinet_devi_window_slot(tab[need[i].remote], v->key[need[i].remote],
							 need[i].key);
		for (int i = 0; i < n; i++) {
			if (slot[i] < 0)
				st = KINET_DEVI_PEER_MISS;
			else
				kinet_devi_window_read(&tab[need[i].remote]->win[slot[i]], &rec[i]);
		}
		for (int i = 0; i < n && !st; i++) {
			uint8_t *w = NULL;
			st = kinet_devi_window_check(&rec[i], need[i].addr, need[i].len, need[i].right, &w);
			p[i] = (uint64_t)(uintptr_t)w;
		}
		if (!st && !v->err && v->done >= v->ready) {
			if (v->ready) /* those WQEs' effects before ours */
				kinet_devi_scoped_fence_acquire(kinet_devi_sharing_scope(v->sharing));
			tk = v->ready;
		} else if (!st) {
			st = kinet_devi_peer_drain(qp, &tk);
		}
	}
	kinet_devi_group_bcast(g, &st, &tk);
	for (int i = 0; i < n; i++) {
		kinet_devi_group_bcast(g, &unused, &p[i]);
		ptr[i] = (uint8_t *)(uintptr_t)p[i];
	}
	*ticket = tk;
	return st;
}

/* Result of a peer attempt: MISS, or the verb's status with *ticket set. */
KINET_DEV_FN int kinet_devi_peer_done(int st, uint64_t tk, uint64_t *ticket)
{
	if (st != KINET_DEVI_PEER_MISS && ticket)
		*ticket = st ? 0 : tk;
	return st;
}

/* put: the group copies [laddr, laddr+size) to the mapped target. */
KINET_DEV_FN int kinet_devi_peer_put_g(int g, struct kinet_dev_qp *qp, const void *laddr, uint32_t lkey,
				       uint64_t raddr, uint32_t rkey, uint64_t size, uint64_t *ticket)
{
	struct kinet_devi_peer_view v;
	kinet_devi_peer_view_load(qp, &v);
	if (!v.pt || !size || !kinet_devi_peer_size_ok(g, size, KINET_DEV_PEER_PUT_BYTES_PER_THREAD))
		return KINET_DEVI_PEER_MISS;
	const struct kinet_devi_peer_need need[2] = {
		{1, rkey, raddr, size, KINET_ACCESS_REMOTE_WRITE},
		{0, lkey, (uint64_t)(uintptr_t)laddr, size, 0},
	};
	uint8_t *ptr[2];
	uint64_t tk;
	int st = kinet_devi_peer_resolve(g, qp, &v, need, 2, ptr, &tk);
	if (!st)
		kinet_devi_copy_group(g, ptr[0], ptr[1], size);
	return kinet_devi_peer_done(st, tk, ticket);
}

/* put_inline: the data need not be registered (no local key). */
KINET_DEV_FN int kinet_devi_peer_put_inline_g(int g, struct kinet_dev_qp *qp, const void *data, uint32_t size,
					      uint64_t raddr, uint32_t rkey, uint64_t *ticket)
{
	struct kinet_devi_peer_view v;
	kinet_devi_peer_view_load(qp, &v);
	if (!v.pt || !size || size > v.max_inline || size > KINET_DEV_MAX_INLINE)
		return KINET_DEVI_PEER_MISS;
	const struct kinet_devi_peer_need need = {1, rkey, raddr, size, KINET_ACCESS_REMOTE_WRITE};
	uint8_t *dst;
	uint64_t tk;
	int st = kinet_devi_peer_resolve(g, qp, &v, &need, 1, &dst, &tk);
	if (!st && kinet_devi_group_rank(g) == 0) {
		if (size == 8 && ((((uintptr_t)dst | (uintptr_t)data) & 7) == 0))
			*(volatile uint64_t *)dst = *(const uint64_t *)data;
		else
			memcpy(dst, data, size);
	}
	return kinet_devi_peer_done(st, tk, ticket);
}

/* get: the group copies the mapped source into [laddr, laddr+size); the
 * data is in place on return (after the group's barrier). */
KINET_DEV_FN int kinet_devi_peer_get_g(int g, struct kinet_dev_qp *qp, void *laddr, uint32_t lkey,
				       uint64_t raddr, uint32_t rkey, uint64_t size, uint64_t *ticket)
{
	struct kinet_devi_peer_view v;
	kinet_devi_peer_view_load(qp, &v);
	if (!v.pt || !size || !kinet_devi_peer_size_ok(g, size, KINET_DEV_PEER_GET_BYTES_PER_THREAD))
		return KINET_DEVI_PEER_MISS;
	const struct kinet_devi_peer_need need[2] = {
		{1, rkey, raddr, size, KINET_ACCESS_REMOTE_READ},
		{0, lkey, (uint64_t)(uintptr_t)laddr, size, KINET_ACCESS_LOCAL_WRITE},
	};
	uint8_t *ptr[2];
	uint64_t tk;
	int st = kinet_devi_peer_resolve(g, qp, &v, need, 2, ptr, &tk);
	if (!st) {
		kinet_devi_copy_group(g, ptr[1], ptr[0], size);
		kinet_devi_group_sync(g);
	}
	return kinet_devi_peer_done(st, tk, ticket);
}

/* fetch_add (cas = 0) or compare_swap (cas = 1): one system-scope atomic
 * by rank 0, the old value stored to *result, seen by the group after its
 * barrier.  Misaligned targets miss (the engine reports them). */
KINET_DEV_FN int kinet_devi_peer_atomic_g(int g, struct kinet_dev_qp *qp, int cas, uint64_t *result,
					  uint32_t lkey, uint64_t raddr, uint32_t rkey, uint64_t compare_add,
					  uint64_t swap, uint64_t *ticket)
{
	struct kinet_devi_peer_view v;
	kinet_devi_peer_view_load(qp, &v);
	if (!v.pt || (raddr & 7) || ((uintptr_t)result & 7))
		return KINET_DEVI_PEER_MISS;
	const struct kinet_devi_peer_need need[2] = {
		{1, rkey, raddr, 8, KINET_ACCESS_REMOTE_ATOMIC},
		{0, lkey, (uint64_t)(uintptr_t)result, 8, KINET_ACCESS_LOCAL_WRITE},
	};
	uint8_t *ptr[2];
	uint64_t tk;
	int st = kinet_devi_peer_resolve(g, qp, &v, need, 2, ptr, &tk);
	if (!st) {
		if (kinet_devi_group_rank(g) == 0) {
			uint64_t *w = (uint64_t *)(void *)ptr[0];
			uint64_t old = cas ? kinet_devi_atomic_cas_u64_sys(w, compare_add, swap)
					   : kinet_devi_atomic_add_u64_sys(w, compare_add);
			*(uint64_t *)(void *)ptr[1] = old;
		}
		kinet_devi_group_sync(g);
	}
	return kinet_devi_peer_done(st, tk, ticket);
}

/* signal, and put_signal when size != 0: the group copies the data, then
 * after a barrier rank 0 fences at system scope (the data, and every
 * earlier peer store of the group, before the signal) and adds. */
KINET_DEV_FN int kinet_devi_peer_put_signal_g(int g, struct kinet_dev_qp *qp, const void *laddr,
					      uint32_t lkey, uint64_t raddr, uint32_t rkey, uint64_t size,
					      uint64_t sig_raddr, uint32_t sig_rkey, uint64_t add,
					      uint64_t *ticket)
{
	struct kinet_devi_peer_view v;
	kinet_devi_peer_view_load(qp, &v);
	if (!v.pt || (sig_raddr & 7) ||
	    !kinet_devi_peer_size_ok(g, size, KINET_DEV_PEER_PUT_BYTES_PER_THREAD))
		return KINET_DEVI_PEER_MISS;
	const struct kinet_devi_peer_need need[3] = {
		{1, sig_rkey, sig_raddr, 8, KINET_ACCESS_REMOTE_ATOMIC},
		{1, rkey, raddr, size, KINET_ACCESS_REMOTE_WRITE},
		{0, lkey, (uint64_t)(uintptr_t)laddr, size, 0},
	};
	uint8_t *ptr[3];
	uint64_t tk;
	int st = kinet_devi_peer_resolve(g, qp, &v, need, size ? 3 : 1, ptr, &tk);
	if (st)
		return kinet_devi_peer_done(st, tk, ticket);
	if (size)
		kinet_devi_copy_group(g, ptr[1], ptr[2], size);
	kinet_devi_group_sync(g);
	if (kinet_devi_group_rank(g) == 0) {
		/* Release: the data (and the group's, synchronised by the
		 * barrier: fences are cumulative) before the signal. */
		kinet_dev_fence_release_sys();
		kinet_devi_red_add_u64_sys((uint64_t *)(void *)ptr[0], add);
	}
	return kinet_devi_peer_done(0, tk, ticket);
}

/* Completion of peer stores before a wait, test or quiet looks at the send
 * queue (no-op for a QP without the peer path). */
KINET_DEV_FN void kinet_devi_peer_complete(const struct kinet_dev_qp *qp)
{
	if (kinet_devi_peer_on(qp))
		kinet_dev_fence_sys();
}

#endif /* KINET_DEVICE_IMPL_PEER_CUH */
