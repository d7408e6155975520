/*
 * The peer path, host side (docs/PEER_PATH.md): gives an exported, connected
 * QP whose target lives in a context this process can reach with device
 * loads and stores a table of memory windows (struct kinet_dev_peer, next
 * to its descriptor), and keeps the table current as regions come and go.
 * Device code (include/kinet/device/impl/peer.cuh) checks every access against
 * it and hands anything it cannot prove allowed to the engine.
 *
 * Lifetimes.  One link per peer QP, in a process-wide list under peer_lock:
 *  - made at kinet_qp_connect or kinet_qp_export, whichever comes second;
 *  - a region registered in either context gets a window on each link that
 *    involves that context; one deregistered has its windows' keys zeroed
 *    (a coherent write the device sees before kinet_mr_dereg returns) and
 *    its slots are never reused, so a window's fields never change under a
 *    reader;
 *  - closing the target's context revokes every remote window first, so
 *    device code falls back to the engine, which then fails the operations
 *    as for any vanished peer;
 *  - destroying the QP frees its table with the descriptor.
 * Lock order: peer_lock, then a context's MR table lock; a link's remote
 * side filled by a transport is under that transport's lock instead (below).
 *
 * Reachability (KINET_P2P=auto|off|force; auto by default):
 *  - both contexts on CUDA devices of this process: the same device, or
 *    devices with peer access (cudaDeviceCanAccessPeer, enabled here);
 *  - both host-only (host emulation): with KINET_P2P=force only, so the
 *    engine keeps being what host-only programs and their tests exercise;
 *  - a QP over the node transport (a context of another process of this
 *    host, or a forced node transport within this one): the target sends
 *    its windows in messages (the soft provider's node transport), GPU memory of
 *    another process mapped through CUDA IPC; attach waits up to the QP's
 *    timeout for the first table;
 *  - anything else (ofi, a host-only context beside a CUDA one, host
 *    memory of another process) keeps the engine path; force makes a QP
 *    without a link an error.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "provider.h"

enum p2p_mode { P2P_OFF, P2P_AUTO, P2P_FORCE };

struct kinet_peer_link {
	struct kinet_qp *qp;			      /* initiator; the link lives as long as it */
	struct kinet_ctx *target;		      /* in-process: NULL once that context closed */
	bool by_transport;			      /* remote windows come from the node transport */
	atomic_int remote_state;		      /* by_transport: REMOTE_PENDING, _READY or _REFUSED */
	struct kinet_dev_peer *dev;		      /* device copy (qp->ctx memory) */
	uint32_t slot_key[2][KINET_DEV_PEER_WINDOWS]; /* 0: free or revoked */
	uint32_t count[2];
	/* Host copy of the windows for kinet_peer_qp_remote_ptr: fields, then
	 * the key (release), as in the device table; read without the writer's
	 * lock (a transport fills the remote side under its own). */
	struct kinet_dev_window host_win[2][KINET_DEV_PEER_WINDOWS];
	_Atomic uint32_t host_key[2][KINET_DEV_PEER_WINDOWS];
	_Atomic uint32_t host_count[2];
	bool full_logged[2]; /* per side: they have different owners */
	struct kinet_peer_link *next;
};

enum { REMOTE_PENDING = 0, REMOTE_READY = 1, REMOTE_REFUSED = -1 };

enum { SIDE_LOCAL = 0, SIDE_REMOTE = 1 };

static pthread_mutex_t peer_lock = PTHREAD_MUTEX_INITIALIZER;
static struct kinet_peer_link *links;
static struct kinet_ctx **contexts;
static size_t ncontexts, contexts_cap;

static enum p2p_mode p2p_mode(void)
{
	const char *v = kinet_env_str("KINET_P2P"); /* checked by the table */

	if (!strcmp(v, "off") || !strcmp(v, "0"))
		return P2P_OFF;
	if (!strcmp(v, "force") || !strcmp(v, "1"))
		return P2P_FORCE;
	return P2P_AUTO;
}

int kinet_peer_ctx_add(struct kinet_ctx *ctx)
{
	int ret = 0;

	pthread_mutex_lock(&peer_lock);
	if (ncontexts == contexts_cap) {
		size_t cap = contexts_cap ? contexts_cap * 2 : 8;
		struct kinet_ctx **c = realloc(contexts, cap * sizeof(*c));

		if (c) {
			contexts = c;
			contexts_cap = cap;
		} else {
			ret = -ENOMEM;
		}
	}
	if (!ret)
		contexts[ncontexts++] = ctx;
	pthread_mutex_unlock(&peer_lock);
	return ret;
}

bool kinet_peer_process_has_qp(uint32_t qpn)
{
	bool found = false;

	pthread_mutex_lock(&peer_lock);
	for (size_t i = 0; i < ncontexts && !found; i++)
		found = kinet_ctx_find_qp(contexts[i], qpn) != NULL;
	pthread_mutex_unlock(&peer_lock);
	return found;
}

/* ---- device table updates ---- */

/* Writes host bytes into device memory of the link's QP context (its
 * table or the QP's descriptor). */
static int table_write(struct kinet_peer_link *l, void *field, const void *src, size_t len)
{
	return kinet_cuda_copy_in(l->qp->ctx, field, src, len);
}

/* A key or count (in the table or the QP descriptor: both are device
 * memory of the QP's context): on a host-only context device code runs on CPU threads
 * reading with acquire loads, so the store is a release; with CUDA each
 * cudaMemcpy is complete (and ordered after the previous) on return. */
static void table_publish(struct kinet_peer_link *l, uint32_t *field, uint32_t v)
{
	if (l->qp->ctx->cuda_device < 0)
		__atomic_store_n(field, v, __ATOMIC_RELEASE);
	else
		table_write(l, field, &v, sizeof(v));
}

/* A key of slot < KINET_DEV_PEER_HOT_KEYS goes to the QP descriptor's copy
 * too (kinet_dev_qp.peer_key), after the table's: a reader that finds it
 * there finds the record; revocations zero both before returning. */
static void hot_key_publish(struct kinet_peer_link *l, int side, uint32_t slot, uint32_t v)
{
	if (slot < KINET_DEV_PEER_HOT_KEYS)
		table_publish(l, &l->qp->dev->peer_key[side][slot], v);
}

bool kinet_peer_window_in_process(const struct kinet_ctx *viewer, uint64_t addr, uint64_t length,
				  uint32_t access, enum kinet_mem_type type, int cuda_device,
				  struct kinet_dev_window *w)
{
	memset(w, 0, sizeof(*w));
	w->addr = addr;
	w->length = length;
	w->access = access;
	if (viewer->cuda_device < 0)
		return type == KINET_MEM_HOST;
	if (type == KINET_MEM_CUDA)
		return cuda_device == viewer->cuda_device ||
		       kinet_cuda_peer_access(viewer->cuda_device, cuda_device) == 0;
	/* Pinned, mapped host memory only; atomics over PCIe to host memory
	 * are not assumed, so those go to the engine (CPU atomics). */
	if (kinet_cuda_host_mapping((const void *)(uintptr_t)addr, &w->delta))
		return false;
	w->access &= ~(uint32_t)KINET_ACCESS_REMOTE_ATOMIC;
	return true;
}

static bool window_of(const struct kinet_ctx *viewer, const struct kinet_mr *mr, struct kinet_dev_window *w)
{
	/* Windows are by address; a zero-based region's WQEs carry offsets,
	 * so it takes the engine path. */
	if (mr->access & KINET_ACCESS_ZERO_BASED)
		return false;
	return kinet_peer_window_in_process(viewer, mr->addr, mr->length, mr->access, mr->type,
					    mr->cuda_device, w);
}

/* Adds the window keyed key to one side of the link unless a live slot
 * has that key; peer_lock held. */
static void window_put(struct kinet_peer_link *l, int side, uint32_t key, const struct kinet_dev_window *w)
{
	struct kinet_dev_window_table *t = side == SIDE_LOCAL ? &l->dev->local : &l->dev->remote;
	uint32_t slot = l->count[side];

	for (uint32_t i = 0; i < slot; i++)
		if (l->slot_key[side][i] == key)
			return;
	if (slot == KINET_DEV_PEER_WINDOWS) {
		if (!l->full_logged[side])
			KINET_INFO("qp %u: peer window table full (%u per side): region %#x and later ones "
				   "take the engine path",
				   l->qp->qpn, KINET_DEV_PEER_WINDOWS, key);
		l->full_logged[side] = true;
		return;
	}
	/* Fields, then the key, then the count: a reader that finds the key
	 * finds the fields (slots are written once).  Device code may read a
	 * record before its key (to save a round trip); live, in the same
	 * 16 bytes as delta and access, says that half was written. */
	struct kinet_dev_window rec = *w;
	rec.live = 1;
	if (table_write(l, &t->win[slot], &rec, sizeof(rec)))
		return;
	table_publish(l, &t->key[slot], key);
	hot_key_publish(l, side, slot, key);
	l->slot_key[side][slot] = key;
	l->count[side] = slot + 1;
	table_publish(l, &t->count, slot + 1);
	l->host_win[side][slot] = *w;
	atomic_store_explicit(&l->host_key[side][slot], key, memory_order_release);
	atomic_store_explicit(&l->host_count[side], slot + 1, memory_order_release);
}

static void window_add(struct kinet_peer_link *l, int side, struct kinet_mr *mr)
{
	struct kinet_dev_window w;

	if (!atomic_load(&mr->revoked) && window_of(l->qp->ctx, mr, &w))
		window_put(l, side, side == SIDE_LOCAL ? mr->lkey : mr->rkey, &w);
}

static void windows_add_all(struct kinet_peer_link *l, int side, struct kinet_ctx *owner)
{
	kinet_mr_table_rdlock(owner);
	for (uint32_t i = 0; i < owner->mr_table_size; i++)
		if (owner->mr_table[i])
			window_add(l, side, owner->mr_table[i]);
	kinet_mr_table_unlock(owner);
}

/* Zeroes the keys of the side's live windows keyed key (0: all). */
static void windows_revoke(struct kinet_peer_link *l, int side, uint32_t key)
{
	struct kinet_dev_window_table *t = side == SIDE_LOCAL ? &l->dev->local : &l->dev->remote;

	for (uint32_t i = 0; i < l->count[side]; i++) {
		if (!l->slot_key[side][i] || (key && l->slot_key[side][i] != key))
			continue;
		hot_key_publish(l, side, i, 0);
		table_publish(l, &t->key[i], 0);
		atomic_store_explicit(&l->host_key[side][i], 0, memory_order_release);
		l->slot_key[side][i] = 0;
	}
}

/* The target QP or its context is gone: device code loses every remote
 * window and the engine fails the QP's operations. */
static void link_drop_target(struct kinet_peer_link *l)
{
	windows_revoke(l, SIDE_REMOTE, 0);
	l->target = NULL;
}

/* ---- attaching a QP ---- */

/* The context of this process holding the QP qp is connected to. */
static struct kinet_ctx *target_of(const struct kinet_qp *qp)
{
	if (qp->remote.node_id != qp->ctx->node_id)
		return NULL;
	for (size_t i = 0; i < ncontexts; i++)
		if (kinet_ctx_find_qp(contexts[i], qp->remote.qpn))
			return contexts[i];
	return NULL;
}

/* NULL when qp's device code can reach target's memory, else why not. */
static const char *unreachable(const struct kinet_qp *qp, const struct kinet_ctx *target, enum p2p_mode mode)
{
	int a = qp->ctx->cuda_device, b = target->cuda_device;

	if (a < 0 && b < 0)
		return mode == P2P_FORCE ? NULL : "host-only contexts use the engine unless KINET_P2P=force";
	if (a < 0 || b < 0)
		return "one end is a host-only context";
	if (a != b && kinet_cuda_peer_access(a, b))
		return "the GPUs have no peer access to each other";
	return NULL;
}

/* Why qp keeps the engine path, or NULL.  Over the local transport the
 * target context is found here (*target); over a transport that delivers
 * windows (node: another process of this host, or a forced node transport
 * within this one) the remote side is known only from its answers. */
static const char *reach(const struct kinet_qp *qp, enum p2p_mode mode, struct kinet_ctx **target)
{
	*target = NULL;
	enum kinet_peer_reach how = qp->ctx->ops->peer_reach(qp);

	if (how == KINET_PEER_REACH_PROCESS) {
		*target = target_of(qp);
		return *target ? unreachable(qp, *target, mode)
			       : "the peer QP is not in an open context of this process";
	}
	if (how != KINET_PEER_REACH_HELLO)
		return "the peer is reached over the network";
	if (qp->ctx->cuda_device >= 0)
		return NULL;
	if (qp->remote.node_id != qp->ctx->node_id)
		return "host memory of another process cannot be mapped";
	return mode == P2P_FORCE ? NULL : "host-only contexts use the engine unless KINET_P2P=force";
}

static int refuse(const struct kinet_qp *qp, enum p2p_mode mode, const char *why)
{
	if (mode == P2P_FORCE) {
		KINET_ERR("qp %u: KINET_P2P=force but QP %u cannot be reached by device loads and stores: %s",
			  qp->qpn, qp->remote.qpn, why);
		return -EHOSTUNREACH;
	}
	KINET_INFO("qp %u: engine path to QP %u: %s", qp->qpn, qp->remote.qpn, why);
	return 0;
}

/* Asks the transport for the target's windows and waits, up to the QP's
 * timeout, for the first table.  Without it the QP keeps the engine path
 * (windows arriving later still switch it). */
static int attach_by_transport(struct kinet_qp *qp, struct kinet_peer_link *l, enum p2p_mode mode)
{
	uint64_t deadline = kinet_now_ns() + (uint64_t)qp->attr.timeout_ms * 1000000ull;
	int rc = qp->ctx->ops->peer_hello(qp);
	int st = REMOTE_PENDING;

	while (!rc && (st = atomic_load(&l->remote_state)) == REMOTE_PENDING && kinet_now_ns() < deadline) {
		struct timespec ts = {0, 100000};

		nanosleep(&ts, NULL);
	}
	if (st == REMOTE_READY) {
		KINET_INFO("qp %u: peer path to QP %u of process %016llx", qp->qpn, qp->remote.qpn,
			   (unsigned long long)qp->remote.node_id);
		return 0;
	}
	return refuse(qp, mode,
		      rc		     ? "the windows could not be asked for"
		      : st == REMOTE_REFUSED ? "the target refused (no such QP, or its context is closing)"
					     : "the target's windows did not arrive within the QP's timeout");
}

/* The engine's copies between two GPUs of this process (host-posted work,
 * and everything on the engine path) go device to device over NVLink or
 * PCIe only once peer access is enabled; without it the runtime stages
 * them through host memory at a tenth of the bandwidth.  Whatever path the
 * QP's device code takes. */
static void copy_engine_access(const struct kinet_qp *qp)
{
	struct kinet_ctx *target;
	int a = qp->ctx->cuda_device, b;

	if (a < 0 || qp->ctx->ops->peer_reach(qp) != KINET_PEER_REACH_PROCESS)
		return;
	pthread_mutex_lock(&peer_lock);
	target = target_of(qp);
	b = target ? target->cuda_device : -1;
	pthread_mutex_unlock(&peer_lock);
	if (b >= 0 && b != a) {
		kinet_cuda_peer_access(a, b);
		kinet_cuda_peer_access(b, a);
	}
}

int kinet_peer_qp_attach(struct kinet_qp *qp)
{
	enum p2p_mode mode = p2p_mode();
	struct kinet_ctx *target;
	struct kinet_peer_link *l = NULL;
	const char *why;
	int ret = 0;

	if (atomic_load(&qp->state) == KINET_QPS_RTS)
		copy_engine_access(qp);
	if (mode == P2P_OFF || atomic_load(&qp->state) != KINET_QPS_RTS || !qp->dev)
		return 0;
	pthread_mutex_lock(&peer_lock);
	if (qp->peer_link)
		goto out;
	why = reach(qp, mode, &target);
	if (why) {
		ret = refuse(qp, mode, why);
		goto out;
	}
	l = calloc(1, sizeof(*l));
	if (l)
		l->dev = kinet_cuda_alloc(qp->ctx, sizeof(*l->dev));
	if (!l || !l->dev) {
		free(l);
		l = NULL;
		ret = -ENOMEM;
		goto out;
	}
	l->qp = qp;
	l->target = target;
	l->by_transport = !target;
	windows_add_all(l, SIDE_LOCAL, qp->ctx);
	if (target)
		windows_add_all(l, SIDE_REMOTE, target);
	/* The descriptor's pointer last: device code sees a complete table. */
	ret = kinet_cuda_copy_in(qp->ctx, &qp->dev->peer, &l->dev, sizeof(l->dev));
	if (ret) {
		kinet_cuda_free(qp->ctx, l->dev);
		free(l);
		l = NULL;
		goto out;
	}
	l->next = links;
	links = l;
	qp->peer_link = l;
	if (target)
		KINET_INFO("qp %u: peer path to QP %u (%u local, %u remote windows)", qp->qpn, qp->remote.qpn,
			   l->count[SIDE_LOCAL], l->count[SIDE_REMOTE]);
out:
	pthread_mutex_unlock(&peer_lock);
	/* Outside the lock: the answers are applied by this context's engine,
	 * through the functions below. */
	if (!ret && l && l->by_transport)
		ret = attach_by_transport(qp, l, mode);
	return ret;
}

/* Called as qp is destroyed: its own link goes, and links targeting it
 * lose their remote windows (as on RC hardware, a requester whose target
 * QP is gone gets errors, here from the engine). */
void kinet_peer_qp_detach(struct kinet_qp *qp)
{
	pthread_mutex_lock(&peer_lock);
	for (struct kinet_peer_link **p = &links; *p;) {
		struct kinet_peer_link *l = *p;

		if (l->qp == qp) {
			*p = l->next;
			kinet_cuda_free(qp->ctx, l->dev);
			free(l);
			continue;
		}
		if (l->target == qp->ctx && l->qp->remote.qpn == qp->qpn)
			link_drop_target(l);
		p = &l->next;
	}
	qp->peer_link = NULL;
	pthread_mutex_unlock(&peer_lock);
	qp->ctx->ops->peer_withdraw(qp->ctx, qp);
}

enum kinet_qp_path kinet_qp_get_path(const struct kinet_qp *qp)
{
	const struct kinet_peer_link *l = qp ? qp->peer_link : NULL;

	return l && (!l->by_transport || atomic_load(&l->remote_state) == REMOTE_READY)
		       ? KINET_QP_PATH_PEER
		       : KINET_QP_PATH_ENGINE;
}

/* ---- windows delivered by a transport (node_peer.c, engine thread 0) ----
 *
 * Called with the transport's own lock held and the MR table read-locked
 * (its progress hook), so not under peer_lock, which attach holds while it
 * read-locks MR tables.  Nothing else touches a by_transport link's remote
 * side (registrations of this process reach links with a target only), and
 * the link lives until kinet_qp_destroy detaches it, after the transport's
 * disconnect, which waits for that lock. */

void kinet_peer_remote_window_add(struct kinet_qp *qp, uint32_t key, const struct kinet_dev_window *w)
{
	if (qp->peer_link && qp->peer_link->by_transport && key)
		window_put(qp->peer_link, SIDE_REMOTE, key, w);
}

void kinet_peer_remote_window_revoke(struct kinet_qp *qp, uint32_t key)
{
	if (qp->peer_link && qp->peer_link->by_transport) {
		windows_revoke(qp->peer_link, SIDE_REMOTE, key);
		if (!key)
			atomic_store(&qp->peer_link->remote_state, REMOTE_REFUSED);
	}
}

void kinet_peer_remote_ready(struct kinet_qp *qp, bool ok)
{
	if (qp->peer_link && qp->peer_link->by_transport)
		atomic_store(&qp->peer_link->remote_state, ok ? REMOTE_READY : REMOTE_REFUSED);
}

int kinet_peer_qp_remote_ptr(struct kinet_qp *qp, uint64_t addr, uint64_t length, uint32_t rkey,
			     uint32_t access, void **ptr)
{
	const struct kinet_peer_link *l;
	int ret = -ENOENT;

	*ptr = NULL;
	pthread_mutex_lock(&peer_lock);
	l = qp->peer_link;
	if (l && kinet_qp_get_path(qp) == KINET_QP_PATH_PEER) {
		uint32_t n = atomic_load_explicit(&l->host_count[SIDE_REMOTE], memory_order_acquire);

		for (uint32_t i = 0; i < n && ret; i++) {
			const struct kinet_dev_window *w = &l->host_win[SIDE_REMOTE][i];

			if (!rkey ||
			    atomic_load_explicit(&l->host_key[SIDE_REMOTE][i], memory_order_acquire) != rkey)
				continue;
			if (addr < w->addr || length > w->length || addr - w->addr > w->length - length ||
			    (w->access & access) != access)
				break;
			*ptr = (void *)(uintptr_t)(addr + w->delta);
			ret = 0;
		}
	}
	pthread_mutex_unlock(&peer_lock);
	return ret;
}

const char *kinet_qp_path_name(enum kinet_qp_path path)
{
	return path == KINET_QP_PATH_PEER ? "peer" : "engine";
}

/* ---- regions and contexts coming and going ---- */

void kinet_peer_mr_added(struct kinet_mr *mr)
{
	pthread_mutex_lock(&peer_lock);
	for (struct kinet_peer_link *l = links; l; l = l->next) {
		if (l->qp->ctx == mr->ctx)
			window_add(l, SIDE_LOCAL, mr);
		if (l->target == mr->ctx)
			window_add(l, SIDE_REMOTE, mr);
	}
	pthread_mutex_unlock(&peer_lock);
	mr->ctx->ops->peer_publish(mr, true);
}

void kinet_peer_mr_revoke(struct kinet_mr *mr)
{
	atomic_store(&mr->revoked, true);
	pthread_mutex_lock(&peer_lock);
	for (struct kinet_peer_link *l = links; l; l = l->next) {
		if (l->qp->ctx == mr->ctx)
			windows_revoke(l, SIDE_LOCAL, mr->lkey);
		if (l->target == mr->ctx)
			windows_revoke(l, SIDE_REMOTE, mr->rkey);
	}
	pthread_mutex_unlock(&peer_lock);
	mr->ctx->ops->peer_publish(mr, false);
}

void kinet_peer_ctx_remove(struct kinet_ctx *ctx)
{
	ctx->ops->peer_withdraw(ctx, NULL);
	pthread_mutex_lock(&peer_lock);
	for (struct kinet_peer_link *l = links; l; l = l->next)
		if (l->target == ctx)
			link_drop_target(l);
	for (size_t i = 0; i < ncontexts; i++) {
		if (contexts[i] == ctx) {
			contexts[i] = contexts[--ncontexts];
			break;
		}
	}
	pthread_mutex_unlock(&peer_lock);
}
