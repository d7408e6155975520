/*
 * Requester side of the remote protocol, on the QP's engine thread.
 *
 * Each operation gets a slot of the QP's window (RP_WINDOW outstanding,
 * else KINET_EXEC_BUSY) and a sequence number, the token the engine gives
 * back to op_done.  Writes and sends go out in fragments of RP_FRAG bytes.
 * When the carrier is full at the first fragment nothing was sent and the
 * engine is told BUSY; when it fills up after that, the operation is issued
 * (PENDING) and its remaining fragments are sent from op_done and execute
 * on later passes, before anything else of the QP (order is kept).  So a
 * fragment is gathered from the user's buffers when it is sent, which is
 * fine: the buffers belong to the operation until its completion.
 *
 * An operation completes when its response arrived, or with
 * TRANSPORT_RETRY_EXC once it has been at the head of the QP for the QP's
 * timeout (plus the RNR timeout for operations that consume a receive) or
 * the carrier says the peer is gone: at once, or, with
 * KINET_QP_ATTR_PEER_LOSS_AFTER_TIMEOUT, once it has been at the head for
 * the QP's timeout, as a NIC's retries would run out.  A response for a
 * completed operation is dropped, so no data lands after the completion
 * was reported.
 *
 * Over the node carrier, an operation on one SGE of GPU memory goes as one
 * RP_FLAG_IPC request once the target said it can open that allocation's
 * CUDA IPC handle (cuda_ipc.c): no fragments, no staging; the target moves
 * the data (and places read data) itself.
 */
#include <errno.h>
#include <string.h>

#include "engine/responder.h"
#include "remote.h"

static struct rp_slot *slot_of(struct rp_qp *p, uint64_t seq)
{
	struct rp_slot *s = &p->slots[seq % RP_WINDOW];

	return seq >= p->oldest && seq < p->next_seq && s->seq == seq ? s : NULL;
}

static void slot_fail(struct rp_slot *s, uint8_t syndrome)
{
	s->done = true;
	s->syndrome = syndrome;
}

/* The iovecs of payload [off, off+n) of slot s: host memory in place, GPU
 * memory staged through p->stage.  Each piece is looked up again (the MR
 * table read lock is held): a region deregistered while the operation was
 * being sent fails it with LOCAL_PROT_ERR instead of being read. */
static int gather(struct kinet_engine_thread *t, struct rp_qp *p, const struct rp_slot *s, uint32_t off,
		  uint32_t n, struct iovec *iov, int *iovcnt)
{
	const struct kinet_sgl_entry *g;
	struct kinet_sgl_iter it;
	uint32_t in, take, staged = 0;

	kinet_sgl_iter_init(&it, s->sge, s->nsge, off, n);
	while (kinet_sgl_iter_next(&it, &g, &in, &take)) {
		struct kinet_mr_ref ref;

		if (kinet_mr_lookup_ptr(p->qp->ctx, g->key, g->ptr + in, take, 0, &ref))
			return -EACCES;
		void *src = ref.ptr;
		if (g->type != KINET_MEM_HOST) {
			if (kinet_resp_copy_sync(t, p->stage + staged, KINET_MEM_HOST, src, g->type, take))
				return -EIO;
			src = p->stage + staged;
			staged += take;
		}
		iov[*iovcnt].iov_base = src;
		iov[*iovcnt].iov_len = take;
		(*iovcnt)++;
	}
	return 0;
}

/* The peer cannot be reached: slot s fails now, or, when the QP says so,
 * in rp_op_done once it has waited at the head for the QP's timeout. */
static void slot_lost(struct rp_qp *p, struct rp_slot *s)
{
	if (p->qp->attr.flags & KINET_QP_ATTR_PEER_LOSS_AFTER_TIMEOUT)
		s->peer_lost = true;
	else
		slot_fail(s, KINET_SYND_TRANSPORT_RETRY_EXC_ERR);
}

/* One message of slot s's operation to the peer: 0, -EAGAIN (the carrier
 * is full, nothing sent), or the carrier's error once the peer cannot be
 * reached (slot_lost). */
static int slot_send(struct rp_qp *p, struct rp_slot *s, struct iovec *iov, int iovcnt)
{
	int rc = p->car->ops->send(p->car->c, p->peer, iov, iovcnt);

	if (rc && rc != -EAGAIN) {
		KINET_INFO("QP %u: peer unreachable (%s)", p->qp->qpn, kinet_strerror(rc));
		slot_lost(p, s);
	}
	return rc;
}

/* Sends the fragments of slot s from p->tx_off on.  0 when all are out,
 * -EAGAIN when the carrier filled up (resumed later), <0 when they never
 * will be (the slot has failed or lost its peer). */
static int send_frags(struct kinet_engine_thread *t, struct rp_qp *p, struct rp_slot *s, const uint8_t *inl)
{
	struct rp_msg m = p->tx_hdr;

	do {
		struct iovec iov[KINET_MAX_SGE + 1];
		int iovcnt = 1;
		uint32_t n = s->length - p->tx_off < RP_FRAG ? s->length - p->tx_off : RP_FRAG;
		int rc;

		if (m.opcode == KINET_WQE_OP_RDMA_READ || m.opcode == KINET_WQE_OP_ATOMIC_CS ||
		    m.opcode == KINET_WQE_OP_ATOMIC_FA)
			n = 0; /* the data comes back in the response */
		m.offset = p->tx_off;
		m.frag_len = n;
		m.flags = p->tx_off + n >= s->length || !n ? RP_FLAG_LAST : 0;
		iov[0].iov_base = &m;
		iov[0].iov_len = sizeof(m);
		if (inl && n) {
			iov[1].iov_base = (void *)inl;
			iov[1].iov_len = n;
			iovcnt = 2;
		} else if (n && gather(t, p, s, p->tx_off, n, iov, &iovcnt)) {
			slot_fail(s, KINET_SYND_LOCAL_PROT_ERR);
			return -EIO;
		}
		rc = slot_send(p, s, iov, iovcnt);
		if (rc)
			return rc;
		p->tx_off += n;
	} while (!(m.flags & RP_FLAG_LAST));
	return 0;
}

/* Sends an operation whose local buffer the target reaches through CUDA
 * IPC: one message, its payload naming the buffer.  0, -EAGAIN (nothing
 * sent), or <0 when it never will be (the slot has failed or lost its peer). */
static int send_ipc(struct rp_qp *p, struct rp_slot *s, const struct rp_ipc *ipc)
{
	struct rp_msg m = p->tx_hdr;
	struct iovec iov[2] = {{&m, sizeof(m)}, {(void *)ipc, sizeof(*ipc)}};
	int rc;

	m.flags = RP_FLAG_LAST | RP_FLAG_IPC;
	m.offset = 0;
	m.frag_len = sizeof(*ipc);
	rc = slot_send(p, s, iov, 2);
	if (rc)
		return rc;
	p->tx_off = s->length;
	return 0;
}

/* Sends what is left of a partly sent operation; true when nothing is. */
static bool tx_pump(struct kinet_engine_thread *t, struct rp_qp *p)
{
	struct rp_slot *s;

	if (!p->tx_active)
		return true;
	s = slot_of(p, p->tx_seq);
	if (!s || s->done || !t || send_frags(t, p, s, NULL) != -EAGAIN)
		p->tx_active = false;
	return !p->tx_active;
}

/* Writes are answered together (remote_tgt.c, "Acknowledgements"). */
static bool is_write(uint8_t opcode)
{
	return opcode == KINET_WQE_OP_RDMA_WRITE || opcode == KINET_WQE_OP_RDMA_WRITE_IMM;
}

static bool needs_receive(uint8_t opcode)
{
	return opcode == KINET_WQE_OP_SEND || opcode == KINET_WQE_OP_SEND_IMM ||
	       opcode == KINET_WQE_OP_RDMA_WRITE_IMM;
}

void rp_execute(struct kinet_engine_thread *t, struct kinet_qp *qp, struct kinet_op *op,
		struct kinet_exec_result *res)
{
	struct rp_qp *p = kinet_sqp(qp)->transport_priv;
	struct rp_state *rs = kinet_sctx(qp->ctx)->remote;
	struct rp_slot *s;
	struct rp_ipc ipc;
	uint64_t seq;
	int rc;

	pthread_mutex_lock(&rs->lock);
	if (!tx_pump(t, p) || p->next_seq - p->oldest >= RP_WINDOW) {
		res->status = KINET_EXEC_BUSY;
		goto out;
	}
	bool by_ipc = rp_ipc_prepare(rs, p, op, &ipc);
	seq = p->next_seq;
	s = &p->slots[seq % RP_WINDOW];
	memset(s, 0, offsetof(struct rp_slot, sge));
	s->seq = seq;
	s->opcode = op->opcode;
	s->length = op->length;
	s->ipc = by_ipc;
	s->limit_ms = qp->attr.timeout_ms + (needs_receive(op->opcode) ? qp->attr.rnr_timeout_ms : 0);
	s->nsge = op->inline_data ? 0 : op->nsge;
	for (int i = 0; i < s->nsge; i++)
		s->sge[i] = (struct kinet_sgl_entry){op->sge[i].ptr, op->sge_len[i], op->sge[i].mr->key,
						     op->sge[i].type};

	p->tx_hdr = (struct rp_msg){
		.magic = RP_MAGIC,
		.version = RP_VERSION,
		.type = RP_REQ,
		.opcode = op->opcode,
		.src_qpn = qp->qpn,
		.dst_qpn = qp->remote.qpn,
		.src_node = qp->ctx->node_id,
		.token = p->peer_token,
		.src_token = rs->token,
		.seq = seq,
		.raddr = op->raddr,
		.compare = op->compare,
		.swap_add = op->swap_add,
		.rkey = op->rkey,
		.imm_be = op->imm_be,
		.length = op->length,
		.timeout_ms = qp->attr.timeout_ms,
		.rnr_timeout_ms = qp->attr.rnr_timeout_ms,
	};
	p->tx_off = 0;
	p->next_seq++;
	if (p->car->ops->peer_status(p->car->c, p->peer)) {
		/* Known dead: nothing is sent; it fails through the in-order
		 * completion path. */
		slot_lost(p, s);
	} else {
		rc = by_ipc ? send_ipc(p, s, &ipc) : send_frags(t, p, s, op->inline_data);
		if (rc == -EAGAIN && p->tx_off == 0) {
			/* Nothing went out.  A carrier that stays full is a
			 * peer that does not take our messages: retried until
			 * the QP's timeout, then TRANSPORT_RETRY_EXC. */
			p->next_seq--;
			s->seq = 0;
			res->status = KINET_EXEC_RETRY;
			res->syndrome = KINET_SYND_TRANSPORT_RETRY_EXC_ERR;
			goto out;
		}
		if (rc == -EAGAIN) {
			p->tx_active = true;
			p->tx_seq = seq;
		}
	}
	res->status = KINET_EXEC_PENDING;
	res->tracked_by_transport = true;
	res->token = seq;
	if (op->opcode == KINET_WQE_OP_RDMA_READ)
		res->byte_cnt = op->length;
	else if (op->opcode == KINET_WQE_OP_ATOMIC_CS || op->opcode == KINET_WQE_OP_ATOMIC_FA)
		res->byte_cnt = 8;
out:
	pthread_mutex_unlock(&rs->lock);
}

/* Nothing heard from the peer (responses, pongs) for the QP's timeout
 * since this operation reached the head: it is not answering. */
static bool peer_silent(struct kinet_qp *qp, struct rp_qp *p, struct rp_slot *s, uint64_t now)
{
	uint64_t since = p->last_heard_ns > s->head_since_ns ? p->last_heard_ns : s->head_since_ns;

	return now - since > (uint64_t)qp->attr.timeout_ms * 1000000ull;
}

/* The carrier cannot reach the peer (slot_lost): the operation fails now,
 * or after the QP's timeout at the head (KINET_QP_ATTR_PEER_LOSS_AFTER_TIMEOUT). */
static bool peer_lost(struct kinet_qp *qp, struct rp_qp *p, struct rp_slot *s, uint64_t now)
{
	if (!s->peer_lost && !p->car->ops->peer_status(p->car->c, p->peer))
		return false;
	return !(qp->attr.flags & KINET_QP_ATTR_PEER_LOSS_AFTER_TIMEOUT) ||
	       now - s->head_since_ns > (uint64_t)qp->attr.timeout_ms * 1000000ull;
}

/* While an operation waits at the peer, sends it a ping now and then (a
 * tenth of the QP's timeout, at least every 10 ms): a dead peer then fails
 * a send, which is how carriers without another way (ofi) learn of it. */
static void ping(struct kinet_qp *qp, struct rp_qp *p, uint64_t now)
{
	uint64_t every = (uint64_t)qp->attr.timeout_ms * 100000ull;

	if (every < 10000000ull)
		every = 10000000ull;
	if (now - p->last_ping_ns < every)
		return;
	p->last_ping_ns = now;
	struct rp_msg m;
	rp_msg_init(&m, kinet_sctx(qp->ctx)->remote, RP_PING, qp->qpn, qp->remote.qpn, p->peer_token);
	struct iovec iov = {&m, sizeof(m)};
	p->car->ops->send(p->car->c, p->peer, &iov, 1); /* full: the next ping will do */
}

int rp_op_done(struct kinet_qp *qp, uint64_t token, uint8_t *syndrome)
{
	struct rp_qp *p = kinet_sqp(qp)->transport_priv;
	struct rp_state *rs = kinet_sctx(qp->ctx)->remote;
	struct rp_slot *s;
	int done = 0;

	/* Sending the rest of an operation gathers from registered memory:
	 * under the MR table read lock, taken before rs->lock. */
	bool pump = p->tx_active;
	if (pump)
		kinet_mr_table_rdlock(qp->ctx);
	pthread_mutex_lock(&rs->lock);
	tx_pump(kinet_sqp(qp)->owner, p);
	if (pump)
		kinet_mr_table_unlock(qp->ctx);
	s = slot_of(p, token);
	if (!s) {
		*syndrome = KINET_SYND_LOCAL_QP_OP_ERR; /* cannot happen: tokens are ours */
		pthread_mutex_unlock(&rs->lock);
		return 1;
	}
	if (!s->done) {
		uint64_t now = kinet_now_ns();

		if (!s->head_since_ns)
			s->head_since_ns = now;
		ping(qp, p, now);
		if (atomic_load(&qp->state) == KINET_QPS_ERR)
			slot_fail(s, 0); /* the engine flushes it */
		else if (peer_lost(qp, p, s, now) ||
			 now - s->head_since_ns > (uint64_t)s->limit_ms * 1000000ull ||
			 peer_silent(qp, p, s, now))
			slot_fail(s, KINET_SYND_TRANSPORT_RETRY_EXC_ERR);
	}
	if (s->done) {
		*syndrome = s->syndrome;
		s->seq = 0;
		p->oldest = token + 1;
		if (p->tx_active && p->tx_seq == token)
			p->tx_active = false;
		done = 1;
	}
	pthread_mutex_unlock(&rs->lock);
	return done;
}

/* Scatters response payload at offset off into the slot's local SGEs,
 * looking each one up again (the MR table read lock is held). */
static uint8_t scatter(struct rp_state *rs, struct rp_slot *s, uint32_t off, const uint8_t *data, uint32_t n)
{
	struct kinet_engine_thread *t = &kinet_sctx(rs->ctx)->engine->threads[0];
	const struct kinet_sgl_entry *g;
	struct kinet_sgl_iter it;
	uint32_t in, take;

	kinet_sgl_iter_init(&it, s->sge, s->nsge, off, n);
	while (kinet_sgl_iter_next(&it, &g, &in, &take)) {
		struct kinet_mr_ref ref;

		if (kinet_mr_lookup_ptr(rs->ctx, g->key, g->ptr + in, take, KINET_ACCESS_LOCAL_WRITE, &ref))
			return KINET_SYND_LOCAL_PROT_ERR;
		if (kinet_resp_copy_sync(t, ref.ptr, ref.type, data, KINET_MEM_HOST, take))
			return KINET_SYND_LOCAL_QP_OP_ERR;
		data += take;
	}
	return it.left ? KINET_SYND_LOCAL_LENGTH_ERR : 0;
}

void rp_on_pong(struct rp_state *rs, struct rp_carrier *car, struct kinet_carrier_peer *peer,
		const struct rp_msg *m, const uint8_t *payload)
{
	(void)car;
	(void)peer;
	(void)payload;
	struct rp_qp *p = rp_find_qp(rs, m->dst_qpn);

	if (p && rp_from_peer(p, m))
		p->last_heard_ns = kinet_now_ns();
}

void rp_on_response(struct rp_state *rs, struct rp_carrier *car, struct kinet_carrier_peer *peer,
		    const struct rp_msg *m, const uint8_t *payload)
{
	(void)car;
	(void)peer;
	struct rp_qp *p = rp_find_qp(rs, m->dst_qpn);
	struct rp_slot *s;

	if (!p || !rp_from_peer(p, m)) {
		rp_drop(rs, p ? RP_DROP_SENDER : RP_DROP_NO_QP, m);
		return;
	}
	p->last_heard_ns = kinet_now_ns();
	s = slot_of(p, m->seq);
	if (!s || s->done) {
		KINET_DBG("QP %u: late response for operation %llu dropped", p->qp->qpn,
			  (unsigned long long)m->seq);
		return;
	}
	if (m->syndrome) {
		slot_fail(s, m->syndrome);
		return;
	}
	if (s->opcode == KINET_WQE_OP_RDMA_READ && s->ipc) {
		/* The target placed the data through CUDA IPC. */
		if (!(m->flags & RP_FLAG_IPC) || m->frag_len || s->received) {
			slot_fail(s, KINET_SYND_BAD_RESP_ERR);
			return;
		}
		s->received = s->length;
		s->done = true;
	} else if (s->opcode == KINET_WQE_OP_RDMA_READ) {
		if (m->offset != s->received || m->frag_len > s->length - s->received) {
			slot_fail(s, KINET_SYND_BAD_RESP_ERR);
			return;
		}
		uint8_t synd = scatter(rs, s, m->offset, payload, m->frag_len);
		s->received += m->frag_len;
		if (synd)
			slot_fail(s, synd);
		else if (s->received == s->length)
			s->done = true;
	} else if (s->opcode == KINET_WQE_OP_ATOMIC_CS || s->opcode == KINET_WQE_OP_ATOMIC_FA) {
		uint8_t synd = m->frag_len == 8 ? scatter(rs, s, 0, payload, 8) : KINET_SYND_BAD_RESP_ERR;

		if (synd)
			slot_fail(s, synd);
		s->done = true;
	} else if (is_write(s->opcode)) {
		/* One answer for the writes up to this one (the target answers
		 * every other operation, and errors, as they come, in order). */
		for (uint64_t seq = p->oldest; seq <= m->seq; seq++) {
			struct rp_slot *w = slot_of(p, seq);

			if (w && !w->done && is_write(w->opcode))
				w->done = true;
		}
	} else {
		s->done = true;
	}
}
