/*
 * The peer path across processes of one host (docs/PEER_PATH.md): a QP
 * connected over the node transport gets the target context's memory
 * windows in messages, so its device code reaches the target's GPU memory
 * through CUDA IPC mappings with its own loads, stores and atomics.
 *
 * Initiator (kinet_qp_connect/export, then engine thread 0):
 *  - rp_peer_hello sends RP_PEER_HELLO to the target QP; peer.c waits (up
 *    to the QP's timeout) for the first table;
 *  - each RP_PEER_WINDOW is mapped here (CUDA IPC handle opened once per
 *    allocation, rp_ipc_map_get; the region of this very process as is)
 *    and added to the QP's device table; host memory of another process
 *    cannot be mapped and is left to the engine;
 *  - RP_PEER_REVOKE zeroes keys; both are acknowledged (RP_PEER_ACK) only
 *    after the device table changed, even for a QP that is gone;
 *  - a target process found dead (the carrier's peer_status, checked every
 *    PEER_CHECK_NS) has all its windows revoked: device code falls back to
 *    the engine, which fails the operations as for any dead peer.
 * Target (engine thread 0 for HELLO and ACK; the application thread for
 * registration, deregistration, QP destroy and context close):
 *  - HELLO to an existing QP makes a subscription and sends every region
 *    with a remote right, then the end of the table;
 *  - kinet_mr_reg / kinet_mr_dereg send the change to every live
 *    subscriber and return once each acknowledged or its process died or
 *    its QP timeout passed (logged): after kinet_mr_dereg returns, no
 *    initiator starts an access through the region's window;
 *  - destroying the target QP or closing the context withdraws all
 *    windows of its subscribers the same way.
 * Mappings stay open until the initiator's context closes: a kernel that
 * resolved a window before its revocation may still be using it, and
 * closing the mapping under it would be a fatal fault of its CUDA context.
 * Subscriptions are freed at context close.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine/engine.h"
#include "remote.h"

#define PEER_CHECK_NS (20ull * 1000000ull)

static void msg_init(struct rp_msg *m, const struct rp_state *rs, uint8_t type, uint32_t src_qpn,
		     uint32_t dst_qpn, uint64_t token)
{
	rp_msg_init(m, rs, type, src_qpn, dst_qpn, token);
	m->flags = RP_FLAG_LAST;
}

/* ---- initiator ---- */

int rp_peer_hello(struct kinet_qp *qp)
{
	struct rp_state *rs = kinet_sctx(qp->ctx)->remote;
	struct rp_qp *p = kinet_sqp(qp)->transport_priv;
	struct rp_msg m;

	if (!rs || !p)
		return -ENOTCONN;
	pthread_mutex_lock(&rs->lock);
	msg_init(&m, rs, RP_PEER_HELLO, qp->qpn, qp->remote.qpn, p->peer_token);
	m.timeout_ms = qp->attr.timeout_ms;
	rp_send_queued(rs, p->car, p->peer, &m, NULL, 0);
	pthread_mutex_unlock(&rs->lock);
	return 0;
}

static void ack(struct rp_state *rs, struct rp_carrier *car, struct kinet_carrier_peer *peer,
		const struct rp_msg *m)
{
	struct rp_msg a;

	msg_init(&a, rs, RP_PEER_ACK, m->dst_qpn, m->src_qpn, m->src_token);
	a.seq = m->seq;
	rp_send_queued(rs, car, peer, &a, NULL, 0);
}

/* The QP a target's message is for, or NULL when it is gone or is not
 * connected to the sender. */
static struct rp_qp *initiator_of(struct rp_state *rs, const struct rp_msg *m)
{
	struct rp_qp *p = rp_find_qp(rs, m->dst_qpn);

	if (!p || !rp_from_peer(p, m))
		return NULL;
	return p;
}

/* The device-usable form of a target's region, or false (logged once). */
static bool window_map(struct rp_state *rs, const struct rp_msg *m, const struct rp_peer_window *pw,
		       struct kinet_dev_window *w)
{
	struct rp_ipc ipc;
	struct rp_ipc_map *map;

	if (m->src_node == rs->ctx->node_id)
		return kinet_peer_window_in_process(rs->ctx, pw->addr, pw->length, pw->access,
						    (enum kinet_mem_type)pw->type, pw->cuda_device, w);
	if (pw->type != KINET_MEM_CUDA) {
		if (!rs->peer_host_logged)
			KINET_INFO("peer path: host memory of process %016llx cannot be mapped here (region "
				   "%#x and the like take the engine path)",
				   (unsigned long long)m->src_node, pw->key);
		rs->peer_host_logged = true;
		return false;
	}
	memset(&ipc, 0, sizeof(ipc));
	memcpy(ipc.handle, pw->handle, sizeof(ipc.handle));
	ipc.size = pw->alloc_size;
	map = rp_ipc_map_get(rs, m->src_node, &ipc);
	if (!map || pw->addr < pw->alloc_base || pw->addr - pw->alloc_base > map->size ||
	    pw->length > map->size - (pw->addr - pw->alloc_base))
		return false;
	memset(w, 0, sizeof(*w));
	w->addr = pw->addr;
	w->length = pw->length;
	w->access = pw->access;
	w->delta = (uint64_t)(uintptr_t)map->base - pw->alloc_base;
	return true;
}

void rp_peer_on_window(struct rp_state *rs, struct rp_carrier *car, struct kinet_carrier_peer *peer,
		       const struct rp_msg *m, const uint8_t *payload)
{
	struct rp_qp *p = initiator_of(rs, m);
	struct rp_peer_window pw;
	struct kinet_dev_window w;

	if (!m->frag_len) { /* the end of the first table */
		if (p)
			kinet_peer_remote_ready(p->qp, m->syndrome == 0);
		return;
	}
	if (m->frag_len != sizeof(pw)) {
		KINET_WARN("peer path: dropping a malformed window message for QP %u", m->dst_qpn);
		return;
	}
	memcpy(&pw, payload, sizeof(pw));
	if (p && pw.key && window_map(rs, m, &pw, &w)) {
		kinet_peer_remote_window_add(p->qp, pw.key, &w);
		p->peer_windows = true;
	}
	ack(rs, car, peer, m);
}

void rp_peer_on_revoke(struct rp_state *rs, struct rp_carrier *car, struct kinet_carrier_peer *peer,
		       const struct rp_msg *m, const uint8_t *payload)
{
	(void)payload;
	struct rp_qp *p = initiator_of(rs, m);

	if (p)
		kinet_peer_remote_window_revoke(p->qp, m->rkey);
	ack(rs, car, peer, m);
}

void rp_peer_progress(struct rp_state *rs)
{
	uint64_t now = 0;

	for (struct rp_qp *p = rs->qps; p; p = p->next) {
		if (!p->peer_windows)
			continue;
		if (!now)
			now = kinet_now_ns();
		if (now - p->peer_checked_ns < PEER_CHECK_NS)
			continue;
		p->peer_checked_ns = now;
		if (!p->car->ops->peer_status(p->car->c, p->peer))
			continue;
		KINET_INFO("qp %u: the process of QP %u is gone: its windows are revoked, operations go to "
			   "the engine (and fail there)",
			   p->qp->qpn, p->qp->remote.qpn);
		kinet_peer_remote_window_revoke(p->qp, 0);
		p->peer_windows = false;
	}
}

/* ---- target ---- */

static void window_of(const struct kinet_mr *mr, struct rp_peer_window *pw)
{
	memset(pw, 0, sizeof(*pw));
	pw->addr = mr->addr;
	pw->length = mr->length;
	pw->key = mr->key;
	pw->access = mr->access;
	pw->type = (int32_t)mr->type;
	pw->cuda_device = mr->cuda_device;
	if (mr->type == KINET_MEM_CUDA && kinet_smr(mr)->ipc_state > 0) {
		memcpy(pw->handle, kinet_smr(mr)->ipc_handle, sizeof(pw->handle));
		pw->alloc_base = kinet_smr(mr)->ipc_base;
		pw->alloc_size = kinet_smr(mr)->ipc_size;
	}
}

static bool exposed(struct kinet_mr *mr)
{
	const unsigned remote =
		KINET_ACCESS_REMOTE_WRITE | KINET_ACCESS_REMOTE_READ | KINET_ACCESS_REMOTE_ATOMIC;

	/* Windows are by address: a zero-based region takes the engine path. */
	if (!(mr->access & remote) || (mr->access & KINET_ACCESS_ZERO_BASED) || atomic_load(&mr->revoked))
		return false;
	if (mr->type == KINET_MEM_CUDA)
		rp_ipc_export(mr); /* without a handle the window serves this process only */
	return true;
}

/* rs->lock held. */
static void send_window(struct rp_state *rs, struct rp_peer_sub *s, struct kinet_mr *mr)
{
	struct rp_peer_window pw;
	struct rp_msg m;

	window_of(mr, &pw);
	msg_init(&m, rs, RP_PEER_WINDOW, s->target_qpn, s->qpn, s->token);
	m.seq = ++s->sent;
	m.frag_len = sizeof(pw);
	rp_send_queued(rs, s->car, s->peer, &m, &pw, sizeof(pw));
}

static void send_revoke(struct rp_state *rs, struct rp_peer_sub *s, uint32_t key)
{
	struct rp_msg m;

	msg_init(&m, rs, RP_PEER_REVOKE, s->target_qpn, s->qpn, s->token);
	m.seq = ++s->sent;
	m.rkey = key;
	rp_send_queued(rs, s->car, s->peer, &m, NULL, 0);
}

void rp_peer_on_hello(struct rp_state *rs, struct rp_carrier *car, struct kinet_carrier_peer *peer,
		      const struct rp_msg *m, const uint8_t *payload)
{
	(void)payload;
	struct kinet_ctx *ctx = rs->ctx;
	struct rp_qp *conn = rp_find_qp(rs, m->dst_qpn);
	struct kinet_qp *tq = NULL;
	uint32_t timeout_ms = 0;
	struct rp_peer_sub *s;
	struct rp_msg end;

	msg_init(&end, rs, RP_PEER_WINDOW, m->dst_qpn, m->src_qpn, m->src_token);
	if (conn && !rp_from_peer(conn, m)) {
		/* Windows are for the QP's peer only. */
		rp_drop(rs, RP_DROP_SENDER, m);
		return;
	}
	/* A QP not connected yet may be asked by its peer-to-be, which is
	 * faster to connect; it is looked up with a reference, since nothing
	 * of this context's locks keeps it. */
	if (car && peer && (tq = kinet_ctx_get_qp(ctx, m->dst_qpn))) {
		timeout_ms = tq->attr.timeout_ms;
		kinet_qp_put(tq);
	}
	if (!car || !peer || !tq) {
		end.syndrome = 1;
		if (car && peer)
			rp_send_queued(rs, car, peer, &end, NULL, 0);
		return;
	}
	for (s = rs->peer_subs; s; s = s->next)
		if (s->node == m->src_node && s->qpn == m->src_qpn && !s->gone)
			break;
	if (!s) {
		s = calloc(1, sizeof(*s));
		if (!s) {
			end.syndrome = 1;
			rp_send_queued(rs, car, peer, &end, NULL, 0);
			return;
		}
		s->node = m->src_node;
		s->qpn = m->src_qpn;
		s->next = rs->peer_subs;
		rs->peer_subs = s;
	}
	s->target_qpn = m->dst_qpn;
	s->car = car;
	s->peer = peer;
	/* How long a registration waits for this initiator: the target's
	 * own bound, whatever the initiator asks for. */
	s->timeout_ms = m->timeout_ms < timeout_ms ? m->timeout_ms : timeout_ms;
	s->token = m->src_token;
	/* The MR table is read-locked by the caller (remote_progress): a
	 * region registered later is published to s by kinet_mr_reg. */
	for (uint32_t i = 0; i < ctx->mr_table_size; i++)
		if (ctx->mr_table[i] && exposed(ctx->mr_table[i]))
			send_window(rs, s, ctx->mr_table[i]);
	rp_send_queued(rs, car, peer, &end, NULL, 0);
}

void rp_peer_on_ack(struct rp_state *rs, struct rp_carrier *car, struct kinet_carrier_peer *peer,
		    const struct rp_msg *m, const uint8_t *payload)
{
	(void)car;
	(void)peer;
	(void)payload;
	for (struct rp_peer_sub *s = rs->peer_subs; s; s = s->next)
		if (s->node == m->src_node && s->qpn == m->src_qpn && m->seq > s->acked && m->seq <= s->sent)
			s->acked = m->seq;
}

struct pending {
	struct rp_peer_sub *sub;
	uint64_t token;
};

/* Waits until each sub acknowledged its token, died, or its timeout
 * passed; rs->lock not held. */
static void wait_acks(struct rp_state *rs, struct pending *w, size_t n, const char *what)
{
	uint64_t start = kinet_now_ns();

	for (;;) {
		size_t left = 0;

		pthread_mutex_lock(&rs->lock);
		for (size_t i = 0; i < n; i++) {
			struct rp_peer_sub *s = w[i].sub;

			if (!s || s->acked >= w[i].token)
				w[i].sub = NULL;
			else if (s->car->ops->peer_status(s->car->c, s->peer))
				w[i].sub = NULL; /* a dead process accesses nothing */
			else if (kinet_now_ns() - start > (uint64_t)s->timeout_ms * 1000000ull) {
				KINET_WARN(
					"peer path: QP %u of process %016llx did not acknowledge %s within "
					"%u ms; going on",
					s->qpn, (unsigned long long)s->node, what, s->timeout_ms);
				w[i].sub = NULL;
			} else {
				left++;
			}
		}
		pthread_mutex_unlock(&rs->lock);
		if (!left)
			return;
		struct timespec ts = {0, 50000};
		nanosleep(&ts, NULL);
	}
}

/* Sends the change to the matching live subscribers and waits for them. */
static void publish(struct kinet_ctx *ctx, struct kinet_mr *mr, bool add, struct kinet_qp *qp)
{
	struct rp_state *rs = kinet_sctx(ctx)->remote;
	struct pending *w = NULL;
	size_t n = 0, cap = 0;

	if (!rs)
		return;
	pthread_mutex_lock(&rs->lock);
	if (add && !exposed(mr)) {
		pthread_mutex_unlock(&rs->lock);
		return;
	}
	for (struct rp_peer_sub *s = rs->peer_subs; s; s = s->next) {
		if (s->gone || (qp && s->target_qpn != qp->qpn))
			continue;
		if (n == cap) {
			struct pending *g = realloc(w, (cap = cap ? 2 * cap : 8) * sizeof(*w));

			if (!g)
				break;
			w = g;
		}
		if (add)
			send_window(rs, s, mr);
		else
			send_revoke(rs, s, mr ? mr->key : 0);
		if (!mr)
			s->gone = true; /* withdrawn: no later change goes to it */
		w[n++] = (struct pending){s, s->sent};
	}
	pthread_mutex_unlock(&rs->lock);
	if (n)
		wait_acks(rs, w, n,
			  add  ? "a new region"
			  : mr ? "a deregistration"
			       : "the withdrawal of its windows");
	free(w);
}

void kinet_remote_peer_publish(struct kinet_mr *mr, bool add)
{
	publish(mr->ctx, mr, add, NULL);
}

void kinet_remote_peer_withdraw(struct kinet_ctx *ctx, struct kinet_qp *qp)
{
	publish(ctx, NULL, false, qp);
}

void rp_peer_free(struct rp_state *rs)
{
	while (rs->peer_subs) {
		struct rp_peer_sub *s = rs->peer_subs;

		rs->peer_subs = s->next;
		free(s);
	}
}
