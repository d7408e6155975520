/*
 * The remote protocol's messages: headers, drops, and the queue of what a
 * peer's carrier had no room for.  The bottom of src/provider/soft/rp/:
 * the requester (remote_req.c), the target (remote_tgt.c), the CUDA IPC
 * exchange (cuda_ipc.c) and the peer path's windows (peer_path.c) all
 * send and drop through it, and it calls none of them, so the protocol's
 * files call one way (remote.c, which dispatches by message kind, above
 * them all).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "remote.h"

static const char *const drop_why[RP_DROP_REASONS] = {
	[RP_DROP_GARBLED] = "garbled or of another protocol version",
	[RP_DROP_TOKEN] = "wrong token: not from a member of this job",
	[RP_DROP_NO_QP] = "for a QP that does not exist here",
	[RP_DROP_SENDER] = "from a QP its target is not connected to",
	[RP_DROP_LIMIT] = "over the bound on what is held for other processes",
	[RP_DROP_EXPIRED] = "held past the target's timeout",
	[RP_DROP_NOMEM] = "out of memory",
};

void rp_drop(struct rp_state *rs, enum rp_drop why, const struct rp_msg *m)
{
	uint64_t n = ++rs->drops[why];

	if (n & (n - 1))
		return;
	if (m)
		KINET_WARN("remote: dropped a message (type %u, QP %u -> %u, operation %llu): %s; "
			   "%llu dropped so far for this reason",
			   m->type, m->src_qpn, m->dst_qpn, (unsigned long long)m->seq, drop_why[why],
			   (unsigned long long)n);
	else
		KINET_WARN("remote: dropped a message: %s; %llu dropped so far for this reason",
			   drop_why[why], (unsigned long long)n);
}

void rp_msg_init(struct rp_msg *m, const struct rp_state *rs, uint8_t type, uint32_t src_qpn,
		 uint32_t dst_qpn, uint64_t token)
{
	memset(m, 0, sizeof(*m));
	m->magic = RP_MAGIC;
	m->version = RP_VERSION;
	m->type = type;
	m->src_qpn = src_qpn;
	m->dst_qpn = dst_qpn;
	m->src_node = rs->ctx->node_id;
	m->token = token;
	m->src_token = rs->token;
}

void rp_msg_reply(struct rp_msg *r, const struct rp_state *rs, const struct rp_msg *req, uint8_t type)
{
	*r = *req;
	r->type = type;
	r->src_qpn = req->dst_qpn;
	r->dst_qpn = req->src_qpn;
	r->src_node = rs->ctx->node_id;
	r->token = req->src_token;
	r->src_token = rs->token;
}

int kinet_remote_stats(struct kinet_ctx *ctx, uint64_t drops[RP_DROP_REASONS], uint64_t *token,
		       size_t *held_bytes)
{
	struct rp_state *rs = kinet_sctx(ctx)->remote;

	if (!rs)
		return -ENOENT;
	pthread_mutex_lock(&rs->lock);
	if (drops)
		memcpy(drops, rs->drops, sizeof(rs->drops));
	if (token)
		*token = rs->token;
	if (held_bytes)
		*held_bytes = rs->held_bytes;
	pthread_mutex_unlock(&rs->lock);
	return 0;
}

struct rp_qp *rp_find_qp(struct rp_state *rs, uint32_t qpn)
{
	for (struct rp_qp *p = rs->qps; p; p = p->next)
		if (p->qp->qpn == qpn)
			return p;
	return NULL;
}

/* A copy of m charged to q, or NULL (*why says why: over the bounds, or
 * out of memory). */
struct rp_held *rp_hold(struct rp_state *rs, struct rp_outq *q, const struct rp_msg *m,
			const uint8_t *payload, enum rp_drop *why)
{
	size_t len = sizeof(struct rp_held) + m->frag_len;
	struct rp_held *h;

	if (q->held_bytes + len > RP_HOLD_PEER_MAX || rs->held_bytes + len > RP_HOLD_TOTAL_MAX) {
		*why = RP_DROP_LIMIT;
		return NULL;
	}
	if (!(h = malloc(len))) {
		*why = RP_DROP_NOMEM;
		return NULL;
	}
	h->next = NULL;
	h->owner = q;
	h->since_ns = kinet_now_ns();
	h->len = len;
	h->msg = *m;
	if (m->frag_len)
		memcpy(h + 1, payload, m->frag_len);
	q->held_bytes += len;
	rs->held_bytes += len;
	return h;
}

void rp_held_free(struct rp_state *rs, struct rp_held *h)
{
	h->owner->held_bytes -= h->len;
	rs->held_bytes -= h->len;
	free(h);
}

struct rp_outq *rp_outq_of(struct rp_state *rs, struct rp_carrier *car, struct kinet_carrier_peer *peer)
{
	struct rp_outq *q;

	for (q = rs->outqs; q; q = q->next)
		if (q->peer == peer && q->car == car)
			return q;
	q = calloc(1, sizeof(*q));
	if (q) {
		q->car = car;
		q->peer = peer;
		q->next = rs->outqs;
		rs->outqs = q;
	}
	return q;
}

/* A peer that is gone gets nothing. */
void rp_send_queued(struct rp_state *rs, struct rp_carrier *car, struct kinet_carrier_peer *peer,
		    const struct rp_msg *m, const void *data, uint32_t n)
{
	struct rp_outq *q = rp_outq_of(rs, car, peer);
	struct iovec iov[2] = {{(void *)m, sizeof(*m)}, {(void *)data, n}};
	struct rp_msg copy = *m;
	enum rp_drop why;
	int rc = -EAGAIN;

	if (!q || !q->head)
		rc = car->ops->send(car->c, peer, iov, n ? 2 : 1);
	if (rc != -EAGAIN || !q)
		return;
	copy.frag_len = n;
	struct rp_held *h = rp_hold(rs, q, &copy, data, &why);
	if (!h) {
		/* A peer this far behind is not reading: it loses answers
		 * (and its operations time out), we lose no memory. */
		rp_drop(rs, why, m);
		return;
	}
	q->out_bytes += h->len;
	if (q->tail)
		q->tail->next = h;
	else
		q->head = h;
	q->tail = h;
}
