/*
 * transceiver client: sends requests on every QP (back to back, or at a
 * fixed rate with a window), checks every answer (sequence number, length,
 * checksum, every payload word) and counts what is lost, duplicated or
 * wrong; the round trip of each answered request is its answer's arrival
 * minus its post.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "host.h"

uint64_t now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

int post_send_draining(struct kinet_qp *qp, struct kinet_cq *send_cq, const struct kinet_send_wr *wr)
{
	for (uint64_t start = now_ns();;) {
		struct kinet_wc wc[16];
		int rc = kinet_qp_post_send(qp, wr, 1, NULL), n;

		while ((n = kinet_cq_poll(send_cq, 16, wc)) > 0)
			for (int k = 0; k < n; k++)
				if (wc[k].status) {
					fprintf(stderr, "transceiver: send %llu failed: %s\n",
						(unsigned long long)wc[k].wr_id,
						kinet_wc_status_str(wc[k].status));
					return -EIO;
				}
		if (n < 0)
			return n;
		if (rc != -EAGAIN && rc != -ENOMEM)
			return rc;
		if (now_ns() - start > 5000000000ull)
			return -ETIMEDOUT; /* the send queue never drained */
	}
}

static uint8_t *answer_slot(const struct client_qp *q, uint32_t slot)
{
	return q->buf + (size_t)slot * MSG_BYTES;
}

static uint8_t *request_slot(const struct client_qp *q, uint32_t slot)
{
	return q->buf + (size_t)(SLOTS + slot) * MSG_BYTES;
}

static int post_answer_recv(struct client_qp *q, uint32_t slot)
{
	struct kinet_sge sge = {(uint64_t)(uintptr_t)answer_slot(q, slot), MSG_BYTES, kinet_mr_lkey(q->mr)};
	struct kinet_recv_wr wr = {slot, &sge, 1};

	return kinet_qp_post_recv(q->qp, &wr, 1, NULL);
}

int client_prepare(struct client_qp *q, int nqps)
{
	for (int i = 0; i < nqps; i++)
		for (uint32_t s = 0; s < SLOTS; s++) {
			int rc = post_answer_recv(&q[i], s);
			if (rc)
				return rc;
		}
	return 0;
}

/* Posts request seq (or STOP) of QP qi; every 16th is signaled, and the
 * send CQ is drained as it posts so it never overruns. */
static int post_request(struct client_qp *q, uint32_t qi, uint64_t seq, uint32_t kind, uint32_t size,
			enum request_op op)
{
	uint32_t slot = (uint32_t)(seq % SLOTS);
	uint8_t *m = request_slot(q, slot);
	struct msg_header h = {seq, size, kind};
	uint32_t *words = (uint32_t *)(void *)(m + HEADER_BYTES);
	struct kinet_sge sge = {(uint64_t)(uintptr_t)m, HEADER_BYTES + size, kinet_mr_lkey(q->mr)};
	struct kinet_send_wr wr;

	memcpy(m, &h, sizeof(h));
	for (uint32_t i = 0; i < size / 4; i++)
		words[i] = request_word(qi, seq, i);
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = seq;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	if (seq % 16 == 15 || seq == STOP_SEQ)
		wr.send_flags |= KINET_SEND_SIGNALED;
	if (op == OP_WRITE_IMM || (op == OP_MIXED && seq % 2 == 1)) {
		wr.opcode = KINET_WR_RDMA_WRITE_WITH_IMM;
		wr.remote_addr = q->req_ring + (uint64_t)slot * MSG_BYTES;
		wr.rkey = q->req_rkey;
		wr.imm_data = IMM_SLOT_FLAG | slot;
	} else {
		wr.opcode = KINET_WR_SEND;
		if (sge.length <= 64)
			wr.send_flags |= KINET_SEND_INLINE;
	}
	return post_send_draining(q->qp, q->send_cq, &wr);
}

struct qp_state {
	uint64_t next, answered, in_flight;
	uint64_t t_send[SLOTS];
	uint8_t *seen; /* one byte per request */
	int stopped;
};

/* Checks one answer against the request it names; 0 (counted in r) or a
 * negative errno for a failed repost. */
static int take_answer(struct client_qp *q, uint32_t qi, struct qp_state *s, const struct client_opts *o,
		       const struct kinet_wc *wc, uint64_t now, struct client_result *r)
{
	const uint8_t *m = answer_slot(q, (uint32_t)wc->wr_id);
	struct msg_header h;
	int ok = wc->byte_len >= HEADER_BYTES;

	memcpy(&h, m, sizeof(h));
	if (ok && h.seq == STOP_SEQ) {
		s->stopped = 1;
		r->stop_acks++;
		return post_answer_recv(q, (uint32_t)wc->wr_id);
	}
	if (!ok || h.seq >= s->next) {
		r->wrong++; /* names a request never sent */
	} else if (s->seen[h.seq]) {
		r->duplicated++;
	} else {
		const uint32_t *words = (const uint32_t *)(const void *)(m + HEADER_BYTES);
		uint32_t check = 0;

		for (uint32_t i = 0; i < o->size / 4; i++) {
			uint32_t in = request_word(qi, h.seq, i);
			check += check_share(in, i);
			if (ok && words[i] != answer_word(in, h.seq, i))
				ok = 0;
		}
		ok = ok && h.len == o->size && h.kind_or_check == check &&
		     wc->byte_len == HEADER_BYTES + o->size;
		s->seen[h.seq] = 1;
		s->answered++;
		s->in_flight--;
		r->answered++;
		if (!ok)
			r->wrong++;
		r->rtt_ns[r->answered - 1] = now - s->t_send[h.seq % SLOTS];
	}
	return post_answer_recv(q, (uint32_t)wc->wr_id);
}

static int fail(struct client_result *r, const char *what, int rc)
{
	fprintf(stderr, "transceiver client: %s: %s\n", what, kinet_strerror(rc));
	r->error = rc;
	return rc;
}

int client_run(struct client_qp *q, const struct client_opts *o, struct client_result *r)
{
	struct qp_state *st = calloc((size_t)o->nqps, sizeof(*st));
	uint64_t total = o->requests * (uint64_t)o->nqps, last = 0, t0;
	double period = o->rate > 0 ? 1e9 / o->rate : 0;
	struct kinet_wc wc[16];
	int rc = 0, busy;

	memset(r, 0, sizeof(*r));
	r->rtt_ns = calloc(total ? total : 1, sizeof(uint64_t));
	if (!st || !r->rtt_ns)
		return fail(r, "allocating", -ENOMEM);
	for (int i = 0; i < o->nqps; i++)
		if (!(st[i].seen = calloc(o->requests ? o->requests : 1, 1)))
			return fail(r, "allocating", -ENOMEM);
	t0 = last = now_ns();
	do {
		busy = 0;
		for (int i = 0; i < o->nqps && !rc; i++) {
			struct qp_state *s = &st[i];
			uint64_t now = now_ns();

			while (s->next < o->requests && s->in_flight < o->window &&
			       (period == 0 || (double)(now - t0) >= period * (double)s->next)) {
				if (i == 0 && s->next == o->bad_request) {
					/* no answer expected: not counted */
					if ((rc = post_request(&q[i], 0, s->next, KIND_BAD, o->size, o->op)))
						return fail(r, "posting the bad request", rc);
					s->next = o->requests;
					break;
				}
				s->t_send[s->next % SLOTS] = now_ns();
				if ((rc = post_request(&q[i], (uint32_t)i, s->next, KIND_REQUEST, o->size,
						       o->op)))
					return fail(r, "posting a request", rc);
				s->next++;
				s->in_flight++;
				r->sent++;
			}
			int n = kinet_cq_poll(q[i].recv_cq, 16, wc);
			if (n < 0)
				return fail(r, "polling answers", n);
			now = now_ns();
			for (int k = 0; k < n; k++) {
				if (wc[k].status) {
					fprintf(stderr, "transceiver client: QP %d: receive failed: %s\n", i,
						kinet_wc_status_str(wc[k].status));
					return fail(r, "an answer's receive", -EIO);
				}
				if ((rc = take_answer(&q[i], (uint32_t)i, s, o, &wc[k], now, r)))
					return fail(r, "reposting a receive", rc);
				last = now;
			}
			busy |= s->next < o->requests || s->in_flight > 0;
		}
	} while (busy && now_ns() - last < o->timeout_ns);
	r->seconds = (double)(last - t0) / 1e9;
	r->lost = r->sent - r->answered;

	/* STOP on every QP whose server still runs; each answered, bounded. */
	int first = o->bad_request < o->requests;
	for (int i = first; i < o->nqps; i++)
		if ((rc = post_request(&q[i], (uint32_t)i, STOP_SEQ, KIND_STOP, 0, OP_SEND)))
			return fail(r, "posting STOP", rc);
	for (uint64_t start = now_ns();
	     r->stop_acks < (uint64_t)(o->nqps - first) && now_ns() - start < o->timeout_ns;)
		for (int i = 0; i < o->nqps; i++) {
			int n = kinet_cq_poll(q[i].recv_cq, 16, wc);
			for (int k = 0; k < n; k++)
				if (!wc[k].status &&
				    (rc = take_answer(&q[i], (uint32_t)i, &st[i], o, &wc[k], now_ns(), r)))
					return fail(r, "reposting a receive", rc);
		}
	for (int i = 0; i < o->nqps; i++)
		free(st[i].seen);
	free(st);
	return 0;
}
