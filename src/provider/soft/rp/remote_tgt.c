/*
 * Target side of the remote protocol, on engine thread 0 of the target's
 * context, with the MR table read lock and rp_state.lock held.
 *
 * Requests of one requester QP form a channel and are handled in order.
 * A request that cannot be handled yet stays at the head of its channel
 * (copied), and everything after it waits behind it:
 *   - no receive WQE posted for a send or write-with-immediate: retried
 *     every pass for the requester's RNR timeout, then answered
 *     RNR_RETRY_EXC;
 *   - the target QP is not there or not yet RTS (the peer is still
 *     connecting): retried for the requester's QP timeout, then dropped
 *     (the requester times out, as with a responder that never answers).
 * Checks and syndromes are the responder's (responder.c), as for the
 * local transport.  After
 * an error answer the channel discards what follows: the requester QP is
 * in the error state and flushes it.  A target QP in the error state
 * answers nothing.  An RP_FLAG_IPC request (cuda_ipc.c) carries no data:
 * after the same checks, the data moves between this context's memory and
 * the requester's GPU buffer, mapped here through CUDA IPC, in one copy.
 *
 * Admission and bounds: what a peer sends is looked at before anything of
 * it is kept.  A request is for a QP of this context connected to its
 * sender, or for one not connected yet (its peer connected first); any
 * other is dropped and counted (rp_drop).  Everything kept for a peer
 * (held requests, answers waiting for carrier room) is charged to it and
 * bounded per peer (RP_HOLD_PEER_MAX) and in all (RP_HOLD_TOTAL_MAX):
 * beyond that, a request for a connected QP fails its channel with an
 * error answer, any other is dropped.  A held request waits at most the
 * smaller of the sender's timeouts and the target QP's own.  A peer with
 * more than RP_OUT_BUSY of answers queued gets no new read data (its
 * reads wait, held, counted against it), and a read is answered fragment by
 * fragment as the carrier takes them, so a peer that does not read its
 * answers stops being served instead of growing this process.
 *
 * Fragments: the first fragment of a write or send is checked (keys,
 * range, the receive it lands in) for the length it gives; every later
 * one must continue it (same operation, same length, next offset), and the
 * completion's byte count is what was placed.  A later fragment that is
 * refused fails the receive the operation consumed, with an error CQE,
 * and moves the QP to the error state, as ConnectX does.
 *
 * Acknowledgements: as an RC responder coalesces ACKs, writes (with or
 * without immediate) are answered together.  A write done is owed an
 * answer; the answer to the latest write owed on a channel answers every
 * earlier one (requests are handled in order, so all of them are done).
 * It goes out before any other answer on the channel (a read's data, an
 * atomic's value, an error: the requester sees completions in order),
 * after RP_ACK_EVERY writes (the requester's window keeps moving), and at
 * the end of each engine pass over the carriers, so a write waits for its
 * answer no longer than the pass that placed it.  Half the messages per
 * write: the requester's engine reads one response per batch, not one per
 * operation.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "engine/responder.h"
#include "remote.h"

/* H_BUSY: the peer is not reading its answers (or a read is half
 * answered); retried when the carrier took them. */
enum { H_DONE, H_RNR, H_NOT_READY, H_BUSY };

static struct kinet_engine_thread *thread0(struct rp_state *rs)
{
	return &kinet_sctx(rs->ctx)->engine->threads[0];
}

/* Sends the response to req, or queues it behind earlier ones. */
static void answer(struct rp_state *rs, struct rp_chan *ch, const struct rp_msg *req, uint8_t syndrome,
		   uint32_t off, const void *data, uint32_t n, bool last)
{
	struct rp_msg m;

	rp_msg_reply(&m, rs, req, RP_RESP);
	m.syndrome = syndrome;
	m.offset = off;
	m.frag_len = n;
	m.flags = (last ? RP_FLAG_LAST : 0) | (req->flags & RP_FLAG_IPC);
	rp_send_queued(rs, ch->car, ch->peer, &m, data, n);
}

/* Answers the writes owed on ch, if any. */
static void ack_flush(struct rp_state *rs, struct rp_chan *ch)
{
	if (!ch->ack_count)
		return;
	ch->ack_count = 0;
	for (struct rp_chan **pp = &rs->acks; *pp; pp = &(*pp)->ack_next) {
		if (*pp == ch) {
			*pp = ch->ack_next;
			break;
		}
	}
	ch->ack_next = NULL;
	answer(rs, ch, &ch->ack, 0, 0, NULL, 0, true);
}

/* Write m is done: owed an answer, sent with the next ones. */
static void ack_defer(struct rp_state *rs, struct rp_chan *ch, const struct rp_msg *m)
{
	if (!ch->ack_count++) {
		ch->ack_next = rs->acks;
		rs->acks = ch;
	}
	ch->ack = *m;
	if (ch->ack_count >= RP_ACK_EVERY)
		ack_flush(rs, ch);
}

void rp_target_flush_acks(struct rp_state *rs)
{
	while (rs->acks)
		ack_flush(rs, rs->acks);
}

/* Answers req after the writes owed on ch. */
static void respond(struct rp_state *rs, struct rp_chan *ch, const struct rp_msg *req, uint8_t syndrome,
		    uint32_t off, const void *data, uint32_t n, bool last)
{
	ack_flush(rs, ch);
	answer(rs, ch, req, syndrome, off, data, n, last);
}

/* The write or send being assembled on ch will not complete: the receive
 * it consumed fails (error CQE, QP to error) instead of vanishing. */
static void abandon(struct rp_state *rs, struct rp_chan *ch)
{
	if (ch->cur_seq && ch->cur_recv) {
		struct rp_qp *p = rp_find_qp(rs, ch->dst_qpn);

		if (p && atomic_load_explicit(&p->qp->state, memory_order_acquire) != KINET_QPS_ERR)
			kinet_resp_recv_fail(p->qp, ch->cur_index, KINET_SYND_LOCAL_QP_OP_ERR);
	}
	ch->cur_seq = 0;
	ch->cur_recv = false;
}

static void refuse(struct rp_state *rs, struct rp_chan *ch, const struct rp_msg *m, uint8_t syndrome)
{
	abandon(rs, ch);
	KINET_INFO("remote: QP %u refuses operation %llu (opcode 0x%02x) of QP %u: syndrome 0x%02x",
		   m->dst_qpn, (unsigned long long)m->seq, m->opcode, m->src_qpn, syndrome);
	respond(rs, ch, m, syndrome, 0, NULL, 0, true);
	ch->failed = true;
}

static void responder_cqe(struct kinet_qp *tq, uint8_t opcode, uint16_t index, uint32_t len, uint32_t imm_be)
{
	struct kinet_cqe_desc d = kinet_resp_cqe(tq, opcode, index, len, imm_be, 0);

	kinet_engine_complete(tq, tq->attr.recv_cq, &d);
}

/* Takes the next receive WQE for m (first fragment of a send): 0,
 * KINET_RESP_RNR, or a requester syndrome (the responder's error CQE is
 * written). */
static int take_receive(struct rp_chan *ch, struct kinet_qp *tq, const struct rp_msg *m)
{
	struct kinet_resp_recv rv;
	int rc = kinet_resp_recv_peek(tq, m->length, &rv);

	if (rc)
		return rc;
	ch->cur_index = rv.index;
	ch->ndst = rv.ndst;
	memcpy(ch->dst, rv.dst, (size_t)rv.ndst * sizeof(rv.dst[0]));
	return kinet_resp_recv_take(tq, &rv);
}

/* Places a send fragment (or, through CUDA IPC, the whole message) into
 * the receive WQE taken for it, looking each entry up again. */
static int scatter_recv(struct rp_state *rs, struct rp_chan *ch, uint32_t off, const uint8_t *data,
			enum kinet_mem_type data_type, uint32_t n)
{
	const struct kinet_sgl_entry *g;
	struct kinet_sgl_iter it;
	uint32_t in, take;

	kinet_sgl_iter_init(&it, ch->dst, ch->ndst, off, n);
	while (kinet_sgl_iter_next(&it, &g, &in, &take)) {
		struct kinet_mr_ref ref;

		if (kinet_mr_lookup_ptr(rs->ctx, g->key, g->ptr + in, take, KINET_ACCESS_LOCAL_WRITE, &ref) ||
		    kinet_resp_copy_sync(thread0(rs), ref.ptr, ref.type, data, data_type, take))
			return -EIO;
		data += take;
	}
	return it.left ? -EIO : 0;
}

/* The data of a request: its payload, or the requester's GPU buffer
 * mapped through CUDA IPC (all m->length bytes at once). */
struct data {
	const uint8_t *p;
	enum kinet_mem_type type;
	uint32_t len;
};

/* Whether fragment m continues the operation being assembled on ch (the
 * first one starts it): same operation and length, the next bytes, and
 * no more than the length.  Else the requester is not following the
 * protocol. */
static bool continues(const struct rp_chan *ch, const struct rp_msg *m, const struct data *d)
{
	uint32_t placed = ch->cur_seq == m->seq ? ch->cur_placed : 0;

	if (ch->cur_seq == m->seq && (m->length != ch->cur_len || m->opcode != ch->cur_opcode))
		return false;
	if (ch->cur_seq != m->seq && ch->cur_seq)
		return false; /* the previous one never ended */
	return m->offset == placed && d->len <= m->length - placed &&
	       ((m->flags & RP_FLAG_LAST) != 0) == (placed + d->len == m->length);
}

static void assembly_start(struct rp_chan *ch, const struct rp_msg *m, bool consumes_receive)
{
	ch->cur_seq = m->seq;
	ch->cur_len = m->length;
	ch->cur_opcode = m->opcode;
	ch->cur_placed = 0;
	ch->cur_recv = consumes_receive;
}

static int do_write(struct rp_state *rs, struct rp_chan *ch, struct kinet_qp *tq, const struct rp_msg *m,
		    const struct data *d)
{
	struct kinet_mr_ref ref;
	bool imm = m->opcode == KINET_WQE_OP_RDMA_WRITE_IMM;
	bool first = ch->cur_seq != m->seq;
	int synd;

	if (!continues(ch, m, d))
		return refuse(rs, ch, m, KINET_SYND_REMOTE_INVAL_REQ_ERR), H_DONE;
	if ((synd = kinet_resp_check(rs->ctx, m->opcode, m->rkey, m->raddr, m->length, &ref)))
		return refuse(rs, ch, m, (uint8_t)synd), H_DONE;
	if (first) {
		if (imm && (synd = kinet_resp_take_recv_imm(tq, &ch->cur_index)))
			return synd == KINET_RESP_RNR ? H_RNR : (refuse(rs, ch, m, (uint8_t)synd), H_DONE);
		assembly_start(ch, m, imm);
	}
	if (kinet_resp_copy_sync(thread0(rs), (uint8_t *)ref.ptr + m->offset, ref.type, d->p, d->type,
				 d->len))
		return refuse(rs, ch, m, KINET_SYND_REMOTE_OP_ERR), H_DONE;
	ch->cur_placed += d->len;
	if (m->flags & RP_FLAG_LAST) {
		if (imm)
			responder_cqe(tq, KINET_CQE_RESP_WR_IMM, ch->cur_index, ch->cur_placed, m->imm_be);
		ack_defer(rs, ch, m);
		ch->cur_seq = 0;
		ch->cur_recv = false;
	}
	return H_DONE;
}

static int do_send(struct rp_state *rs, struct rp_chan *ch, struct kinet_qp *tq, const struct rp_msg *m,
		   const struct data *d)
{
	if (!continues(ch, m, d))
		return refuse(rs, ch, m, KINET_SYND_REMOTE_INVAL_REQ_ERR), H_DONE;
	if (ch->cur_seq != m->seq) {
		int rc = take_receive(ch, tq, m);

		if (rc == KINET_RESP_RNR)
			return H_RNR;
		if (rc)
			return refuse(rs, ch, m, (uint8_t)rc), H_DONE;
		assembly_start(ch, m, true);
	}
	if (scatter_recv(rs, ch, m->offset, d->p, d->type, d->len)) {
		kinet_resp_recv_fail(tq, ch->cur_index, KINET_SYND_LOCAL_PROT_ERR);
		ch->cur_recv = false; /* failed just now */
		return refuse(rs, ch, m, KINET_SYND_REMOTE_OP_ERR), H_DONE;
	}
	ch->cur_placed += d->len;
	if (m->flags & RP_FLAG_LAST) {
		bool imm = m->opcode == KINET_WQE_OP_SEND_IMM;

		responder_cqe(tq, imm ? KINET_CQE_RESP_SEND_IMM : KINET_CQE_RESP_SEND, ch->cur_index,
			      ch->cur_placed, m->imm_be);
		respond(rs, ch, m, 0, 0, NULL, 0, true);
		ch->cur_seq = 0;
		ch->cur_recv = false;
	}
	return H_DONE;
}

/* ipc_dst: the requester's buffer through CUDA IPC, or NULL: the data goes
 * back in the responses. */
static int do_read(struct rp_state *rs, struct rp_chan *ch, struct rp_outq *q, const struct rp_msg *m,
		   uint8_t *ipc_dst)
{
	struct kinet_mr_ref ref;
	uint32_t off = ch->read_seq == m->seq ? ch->read_off : 0;
	int synd = kinet_resp_check(rs->ctx, m->opcode, m->rkey, m->raddr, m->length, &ref);

	if (synd)
		return refuse(rs, ch, m, (uint8_t)synd), H_DONE;
	if (ipc_dst) {
		if (kinet_resp_copy_sync(thread0(rs), ipc_dst, KINET_MEM_CUDA, ref.ptr, ref.type, m->length))
			return refuse(rs, ch, m, KINET_SYND_REMOTE_OP_ERR), H_DONE;
		respond(rs, ch, m, 0, 0, NULL, 0, true);
		return H_DONE;
	}
	do {
		uint32_t n = m->length - off < RP_FRAG ? m->length - off : RP_FRAG;
		const uint8_t *src = (const uint8_t *)ref.ptr + off;

		if (q->head) {
			/* The carrier is full: go on when it took the rest
			 * (a read's answers are never all queued at once). */
			ch->read_seq = m->seq;
			ch->read_off = off;
			return H_BUSY;
		}
		if (ref.type != KINET_MEM_HOST) {
			if (kinet_resp_copy_sync(thread0(rs), rs->stage, KINET_MEM_HOST, src, ref.type, n))
				return refuse(rs, ch, m, KINET_SYND_REMOTE_OP_ERR), H_DONE;
			src = rs->stage;
		}
		respond(rs, ch, m, 0, off, src, n, off + n == m->length);
		off += n;
	} while (off < m->length);
	ch->read_seq = 0;
	return H_DONE;
}

static int do_atomic(struct rp_state *rs, struct rp_chan *ch, const struct rp_msg *m)
{
	struct kinet_mr_ref ref;
	uint64_t old;
	int synd = kinet_resp_check(rs->ctx, m->opcode, m->rkey, m->raddr, 8, &ref);

	if (!synd)
		synd = kinet_resp_atomic(thread0(rs), rs->ctx, &ref, m->opcode, m->swap_add, m->compare,
					 &old);
	if (synd)
		return refuse(rs, ch, m, (uint8_t)synd), H_DONE;
	respond(rs, ch, m, 0, 0, &old, 8, true);
	return H_DONE;
}

/* Whether requests of m's sender may be held for m's target QP: 0, or the
 * reason to drop them.  *timeout_ms and *rnr_ms get the target QP's own
 * bounds. */
static int admit(struct rp_state *rs, const struct rp_msg *m, uint32_t *timeout_ms, uint32_t *rnr_ms)
{
	struct rp_qp *p = rp_find_qp(rs, m->dst_qpn);
	struct kinet_qp *qp;
	int state;

	if (p) {
		if (!rp_from_peer(p, m))
			return RP_DROP_SENDER;
		*timeout_ms = p->qp->attr.timeout_ms;
		*rnr_ms = p->qp->attr.rnr_timeout_ms;
		return 0;
	}
	/* Not connected over a carrier: a QP still connecting (RESET to RTR,
	 * its peer was faster) may get requests; one connected another way
	 * (the local transport) may not.  Looked up with a reference: no
	 * lock of this layer keeps an unconnected QP. */
	if (!(qp = kinet_ctx_get_qp(rs->ctx, m->dst_qpn)))
		return RP_DROP_NO_QP;
	state = atomic_load_explicit(&qp->state, memory_order_acquire);
	*timeout_ms = qp->attr.timeout_ms;
	*rnr_ms = qp->attr.rnr_timeout_ms;
	kinet_qp_put(qp);
	return state == KINET_QPS_RESET || state == KINET_QPS_INIT || state == KINET_QPS_RTR ? 0
											     : RP_DROP_SENDER;
}

/* The target QP of m, when it is connected to the sender. */
static struct kinet_qp *target_of(struct rp_state *rs, const struct rp_msg *m)
{
	struct rp_qp *p = rp_find_qp(rs, m->dst_qpn);

	if (!p || !rp_from_peer(p, m))
		return NULL;
	return p->qp;
}

/* q: the answers' queue of ch's peer (rp_outq_of(ch->car, ch->peer)). */
static int handle(struct rp_state *rs, struct rp_chan *ch, struct rp_outq *q, const struct rp_msg *m,
		  const uint8_t *payload)
{
	struct kinet_qp *tq;
	int state;

	if (ch->failed)
		return H_DONE;
	tq = target_of(rs, m);
	state = tq ? atomic_load_explicit(&tq->state, memory_order_acquire) : KINET_QPS_RESET;
	if (state == KINET_QPS_ERR)
		return H_DONE;
	if (state != KINET_QPS_RTS)
		return H_NOT_READY;
	/* A peer not reading its answers gets no more read data (a read
	 * under way goes on by itself, fragment by fragment).  Reads are what
	 * turns a small request into a large answer; the other answers are a
	 * header each, and a stream of writes must not wait on them. */
	if (m->opcode == KINET_WQE_OP_RDMA_READ && q->out_bytes > RP_OUT_BUSY && ch->read_seq != m->seq)
		return H_BUSY;
	struct data d = {payload, KINET_MEM_HOST, m->frag_len};
	if (m->flags & RP_FLAG_IPC) {
		/* The requester's buffer, mapped here: the target's own keys
		 * are checked below as for any request. */
		if (!(d.p = rp_ipc_source(rs, ch->car, m, payload)))
			return refuse(rs, ch, m, KINET_SYND_REMOTE_OP_ERR), H_DONE;
		d.type = KINET_MEM_CUDA;
		d.len = m->length;
	}
	switch (m->opcode) {
	case KINET_WQE_OP_RDMA_WRITE:
	case KINET_WQE_OP_RDMA_WRITE_IMM:
		return do_write(rs, ch, tq, m, &d);
	case KINET_WQE_OP_SEND:
	case KINET_WQE_OP_SEND_IMM:
		return do_send(rs, ch, tq, m, &d);
	case KINET_WQE_OP_RDMA_READ:
		return do_read(rs, ch, q, m, m->flags & RP_FLAG_IPC ? (uint8_t *)d.p : NULL);
	case KINET_WQE_OP_ATOMIC_CS:
	case KINET_WQE_OP_ATOMIC_FA:
		return do_atomic(rs, ch, m);
	default:
		refuse(rs, ch, m, KINET_SYND_REMOTE_INVAL_REQ_ERR);
		return H_DONE;
	}
}

/* The channel of m's sender, made on its first request and charged to q
 * (a peer inventing senders for a QP not connected yet makes channels
 * within its bound); NULL and *why when it cannot be. */
static struct rp_chan *chan_of(struct rp_state *rs, struct rp_carrier *car, struct kinet_carrier_peer *peer,
			       struct rp_outq *q, const struct rp_msg *m, enum rp_drop *why)
{
	struct rp_chan *ch;

	for (ch = rs->chans; ch; ch = ch->next)
		if (ch->src_node == m->src_node && ch->src_qpn == m->src_qpn && ch->dst_qpn == m->dst_qpn)
			break;
	if (!ch && (q->held_bytes + sizeof(*ch) > RP_HOLD_PEER_MAX ||
		    rs->held_bytes + sizeof(*ch) > RP_HOLD_TOTAL_MAX)) {
		*why = RP_DROP_LIMIT;
		return NULL;
	}
	if (!ch && !(ch = calloc(1, sizeof(*ch)))) {
		*why = RP_DROP_NOMEM;
		return NULL;
	}
	if (!ch->owner) {
		ch->owner = q;
		q->held_bytes += sizeof(*ch);
		rs->held_bytes += sizeof(*ch);
		ch->src_node = m->src_node;
		ch->src_qpn = m->src_qpn;
		ch->dst_qpn = m->dst_qpn;
		ch->next = rs->chans;
		rs->chans = ch;
	}
	/* Answers go back the way the latest request came. */
	ch->car = car;
	ch->peer = peer;
	return ch;
}

static void chan_free(struct rp_state *rs, struct rp_chan *ch)
{
	ch->owner->held_bytes -= sizeof(*ch);
	rs->held_bytes -= sizeof(*ch);
	free(ch);
}

/* Held requests of ch can never be handled: they go, and so does
 * everything after them (answered with syndrome when there is one: the
 * requester's QP sees an error, in order, instead of a gap). */
static void chan_fail(struct rp_state *rs, struct rp_chan *ch, const struct rp_msg *m, uint8_t syndrome)
{
	if (syndrome && !ch->failed)
		refuse(rs, ch, m, syndrome);
	abandon(rs, ch);
	ch->failed = true;
	ch->read_seq = 0;
	while (ch->head) {
		struct rp_held *h = ch->head;

		ch->head = h->next;
		rp_held_free(rs, h);
	}
	ch->tail = NULL;
}

void rp_on_request(struct rp_state *rs, struct rp_carrier *car, struct kinet_carrier_peer *peer,
		   const struct rp_msg *m, const uint8_t *payload)
{
	struct rp_msg kept = *m;
	struct rp_outq *q;
	struct rp_chan *ch;
	enum rp_drop why;
	uint32_t timeout_ms, rnr_ms;
	int r;

	if (!car || !peer) {
		rp_drop(rs, RP_DROP_GARBLED, m);
		return;
	}
	/* Nothing is kept for a sender that may not send here. */
	if ((r = admit(rs, m, &timeout_ms, &rnr_ms))) {
		rp_drop(rs, (enum rp_drop)r, m);
		return;
	}
	if (!(q = rp_outq_of(rs, car, peer))) {
		rp_drop(rs, RP_DROP_NOMEM, m);
		return;
	}
	if (!(ch = chan_of(rs, car, peer, q, m, &why))) {
		rp_drop(rs, why, m);
		return;
	}
	if (!ch->head && handle(rs, ch, q, m, payload) == H_DONE)
		return;
	if (kept.timeout_ms > timeout_ms)
		kept.timeout_ms = timeout_ms;
	if (kept.rnr_timeout_ms > rnr_ms)
		kept.rnr_timeout_ms = rnr_ms;
	struct rp_held *h = rp_hold(rs, q, &kept, payload, &why);
	if (!h) {
		rp_drop(rs, why, m);
		/* A channel that lost a request must not go on with the next
		 * ones: the requester gets an error for the first instead.
		 * Its QP may still be connecting; then it times out. */
		if (target_of(rs, m))
			chan_fail(rs, ch, ch->head ? &ch->head->msg : m, KINET_SYND_REMOTE_OP_ERR);
		return;
	}
	if (ch->tail)
		ch->tail->next = h;
	else
		ch->head = h;
	ch->tail = h;
}

/* Retries the requests held in ch; returns how many were handled. */
static int chan_progress(struct rp_state *rs, struct rp_chan *ch)
{
	struct rp_outq *q = rp_outq_of(rs, ch->car, ch->peer);
	struct rp_held *h;
	int n = 0;

	if (!q)
		return 0; /* no memory now: tried again next pass */

	while ((h = ch->head)) {
		uint32_t timeout_ms, rnr_ms;
		int r = admit(rs, &h->msg, &timeout_ms, &rnr_ms);

		if (r) {
			/* Its QP went, or connected to another peer. */
			rp_drop(rs, (enum rp_drop)r, &h->msg);
			chan_fail(rs, ch, &h->msg, 0);
			return n + 1;
		}
		r = handle(rs, ch, q, &h->msg, (const uint8_t *)(h + 1));
		uint64_t waited = kinet_now_ns() - h->since_ns;

		if (r == H_RNR && waited > (uint64_t)h->msg.rnr_timeout_ms * 1000000ull) {
			refuse(rs, ch, &h->msg, KINET_SYND_RNR_RETRY_EXC_ERR);
		} else if ((r == H_NOT_READY || r == H_BUSY) &&
			   waited > (uint64_t)h->msg.timeout_ms * 1000000ull) {
			/* Its QP never got ready, or its peer does not read:
			 * the requester times out, as with a responder that
			 * never answers, and nothing after it executes. */
			rp_drop(rs, RP_DROP_EXPIRED, &h->msg);
			chan_fail(rs, ch, &h->msg, 0);
			return n + 1;
		} else if (r != H_DONE) {
			break;
		}
		ch->head = h->next;
		if (!ch->head)
			ch->tail = NULL;
		rp_held_free(rs, h);
		n++;
	}
	return n;
}

static int outq_progress(struct rp_state *rs, struct rp_outq *q)
{
	struct rp_held *h;
	int n = 0;

	while ((h = q->head)) {
		struct iovec iov[2] = {{&h->msg, sizeof(h->msg)}, {h + 1, h->msg.frag_len}};
		int rc = q->car->ops->send(q->car->c, q->peer, iov, h->msg.frag_len ? 2 : 1);

		if (rc == -EAGAIN)
			break;
		q->head = h->next;
		if (!q->head)
			q->tail = NULL;
		q->out_bytes -= h->len;
		rp_held_free(rs, h);
		n++;
	}
	return n;
}

int rp_target_progress(struct rp_state *rs)
{
	int n = 0;

	for (struct rp_outq *q = rs->outqs; q; q = q->next)
		if (q->head)
			n += outq_progress(rs, q);
	for (struct rp_chan **pp = &rs->chans; *pp;) {
		struct rp_chan *ch = *pp;

		if (ch->head)
			n += chan_progress(rs, ch);
		if (!ch->head && !rp_find_qp(rs, ch->dst_qpn)) {
			/* Nothing held for a QP that is not (or no longer)
			 * here, such as what came after it was destroyed. */
			*pp = ch->next;
			ack_flush(rs, ch); /* those writes were done */
			chan_free(rs, ch);
			continue;
		}
		pp = &ch->next;
	}
	/* The writes this pass placed (over the carriers, and held ones). */
	rp_target_flush_acks(rs);
	return n;
}

static void free_list(struct rp_state *rs, struct rp_held *h)
{
	while (h) {
		struct rp_held *n = h->next;

		rp_held_free(rs, h);
		h = n;
	}
}

void rp_target_qp_gone(struct rp_state *rs, uint32_t qpn)
{
	for (struct rp_chan **pp = &rs->chans; *pp;) {
		struct rp_chan *ch = *pp;

		if (ch->dst_qpn != qpn) {
			pp = &ch->next;
			continue;
		}
		*pp = ch->next;
		ack_flush(rs, ch); /* those writes were done */
		free_list(rs, ch->head);
		chan_free(rs, ch);
	}
}

void rp_target_free(struct rp_state *rs)
{
	rs->acks = NULL; /* the context is closing: nobody waits for answers */
	while (rs->chans) {
		struct rp_chan *ch = rs->chans;

		rs->chans = ch->next;
		free_list(rs, ch->head);
		chan_free(rs, ch);
	}
	while (rs->outqs) {
		struct rp_outq *q = rs->outqs;

		rs->outqs = q->next;
		free_list(rs, q->head);
		free(q);
	}
}

/* A requester waiting on us checks that we are alive. */
void rp_on_ping(struct rp_state *rs, struct rp_carrier *car, struct kinet_carrier_peer *peer,
		const struct rp_msg *m, const uint8_t *payload)
{
	(void)payload;
	uint32_t timeout_ms, rnr_ms;

	if (!car || !peer)
		return;
	/* Only the QP's peer learns that it is alive. */
	if (!target_of(rs, m) && admit(rs, m, &timeout_ms, &rnr_ms)) {
		rp_drop(rs, RP_DROP_SENDER, m);
		return;
	}
	struct rp_msg r;
	rp_msg_reply(&r, rs, m, RP_PONG);
	struct iovec iov = {&r, sizeof(r)};
	car->ops->send(car->c, peer, &iov, 1); /* full: the next ping gets one */
}
