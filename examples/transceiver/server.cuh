/*
 * transceiver, the GPU side: a persistent kernel, one warp per QP.
 *
 * Each warp posts its QP's SLOTS receives, says it is ready, then loops:
 * lane 0 polls the receive CQ (kinet_dev_rq_poll: no doorbell, no CPU);
 * the warp finds the request (its receive buffer for a SEND, the
 * request-ring slot the immediate names for a write-with-immediate),
 * checks the header, transforms the payload and sums its checksum across
 * the lanes, and answers with one SEND -- inline when header and payload fit
 * one WQE (44 bytes), else from the answer ring by address.  Every
 * REPOST_BATCH requests lane 0 reposts that many receives with one
 * doorbell.  A STOP request is answered, the send queue drained, and the
 * warp ends.  Every wait is bounded: no request for idle_ns ends the warp
 * with -ETIMEDOUT; a bad request (-EINVAL) or an error completion (-EIO)
 * ends it with the request's sequence number and receive index in its
 * status, which the host reads.
 */
#ifndef TRANSCEIVER_SERVER_CUH
#define TRANSCEIVER_SERVER_CUH

#include <kinet/device.cuh>

#include "protocol.h"

#define SERVER_MAX_QPS 32

struct server_args {
	struct kinet_dev_qp *qp[SERVER_MAX_QPS];
	uint8_t *buf[SERVER_MAX_QPS]; /* receive ring, request ring, answer ring */
	uint32_t key[SERVER_MAX_QPS];
	uint64_t idle_ns;
	struct server_status *status; /* host-mapped, one per QP */
	uint64_t *ready;	      /* host-mapped, one per QP */
};

#if defined(KINET_HOST_EMU)
KINET_DEV_FN uint32_t lane_id(void)
{
	return 0;
}
#define LANES 1u
KINET_DEV_FN void warp_sync(void)
{
}
KINET_DEV_FN uint32_t warp_sum(uint32_t v)
{
	return v;
}
KINET_DEV_FN uint64_t warp_bcast(uint64_t v)
{
	return v;
}
#else
KINET_DEV_FN uint32_t lane_id(void)
{
	return threadIdx.x & 31u;
}
#define LANES 32u
KINET_DEV_FN void warp_sync(void)
{
	__syncwarp();
}
KINET_DEV_FN uint32_t warp_sum(uint32_t v)
{
	for (int off = 16; off; off >>= 1)
		v += __shfl_xor_sync(0xffffffffu, v, off);
	return v;
}
KINET_DEV_FN uint64_t warp_bcast(uint64_t v)
{
	return __shfl_sync(0xffffffffu, v, 0);
}
#endif

/* A word the host reads while the kernel runs (host-mapped memory):
 * release orders the stores before it.  Under emulation an atomic, so that
 * ThreadSanitizer sees the ordering the GPU's fence gives. */
KINET_DEV_FN void publish_u64(uint64_t *p, uint64_t v)
{
#if defined(KINET_HOST_EMU)
	__atomic_store_n(p, v, __ATOMIC_RELEASE);
#else
	kinet_dev_fence_release_sys();
	*(volatile uint64_t *)p = v;
#endif
}

KINET_DEV_FN uint8_t *server_slot(uint8_t *buf, uint32_t ring, uint64_t slot)
{
	return buf + ((size_t)ring * SLOTS + (size_t)(slot % SLOTS)) * MSG_BYTES;
}

/* Lane 0: n receives from WQE index first on, one doorbell. */
KINET_DEV_FN int server_post_receives(struct kinet_dev_qp *qp, uint8_t *buf, uint32_t key, uint32_t n)
{
	uint64_t first;
	int st = kinet_dev_rq_reserve(qp, n, &first);
	if (st)
		return st;
	for (uint32_t k = 0; k < n; k++)
		kinet_dev_rq_prep(qp, first + k, server_slot(buf, 0, first + k), key, MSG_BYTES);
	return kinet_dev_rq_commit(qp, first, n);
}

/* Lane 0: the next receive completion, waiting at most idle_ns. */
KINET_DEV_FN int server_wait_request(struct kinet_dev_qp *qp, uint64_t idle_ns, uint32_t *len, uint32_t *imm,
				     uint64_t *index)
{
	uint64_t start = kinet_dev_now_ns();
	for (uint32_t iter = 0;; iter++) {
		int st = kinet_dev_rq_poll(qp, len, imm, index);
		if (st != -EAGAIN)
			return st;
		if ((iter & 255u) == 255u && kinet_dev_now_ns() - start > idle_ns)
			return -ETIMEDOUT;
#if defined(KINET_HOST_EMU)
		/* CPU threads playing the warps share the cores with the engine. */
		kinet_dev_relax(iter);
#else
		/* Spin first: the round trip is what this kernel is for. */
		if (iter > (1u << 20))
			kinet_dev_relax(iter);
#endif
	}
}

KINET_DEV_FN void server_report(struct server_status *s, uint64_t *ready, int st, uint64_t seq,
				uint64_t index, uint64_t served, uint64_t stopped)
{
	volatile struct server_status *v = s;
	v->status = st;
	v->seq = seq;
	v->recv_index = index;
	v->stopped = stopped;
	publish_u64(&s->served, served);
	publish_u64(ready, 2); /* the status, then the word the host waits on */
}

/* One warp serves QP w until STOP, an error or idle_ns without a request. */
KINET_DEV_FN void serve_qp(const struct server_args *a, uint32_t w)
{
	struct kinet_dev_qp *qp = a->qp[w];
	uint8_t *buf = a->buf[w];
	uint32_t key = a->key[w], lane = lane_id(), consumed = 0;
	uint64_t served = 0, seq = 0, index = 0;
	int st = 0;

	if (lane == 0)
		st = server_post_receives(qp, buf, key, SLOTS);
	st = (int)warp_bcast((uint64_t)(uint32_t)st);
	if (!st && lane == 0)
		publish_u64(&a->ready[w], 1);
	while (!st) {
		uint32_t len = 0, imm = 0;
		if (lane == 0)
			st = server_wait_request(qp, a->idle_ns, &len, &imm, &index);
		st = (int)warp_bcast((uint64_t)(uint32_t)st);
		len = (uint32_t)warp_bcast(len);
		imm = (uint32_t)warp_bcast(imm);
		index = warp_bcast(index);
		if (st)
			break;

		const uint8_t *m;
		if (imm & IMM_SLOT_FLAG) {
			if ((imm & ~IMM_SLOT_FLAG) >= SLOTS) {
				st = -EINVAL;
				break;
			}
			m = server_slot(buf, 1, imm & ~IMM_SLOT_FLAG);
		} else {
			m = server_slot(buf, 0, index);
		}
		const struct msg_header *h = (const struct msg_header *)(const void *)m;
		if (len < HEADER_BYTES) {
			st = -EINVAL;
			break;
		}
		seq = h->seq;
		uint32_t plen = h->len, kind = h->kind_or_check;
		if (plen > MAX_PAYLOAD || plen % 4 || HEADER_BYTES + plen > len ||
		    (kind != KIND_REQUEST && kind != KIND_STOP)) {
			st = -EINVAL;
			break;
		}

		/* The processing step, spread over the lanes. */
		uint8_t *ans = server_slot(buf, 2, seq);
		const uint32_t *in = (const uint32_t *)(const void *)(m + HEADER_BYTES);
		uint32_t *out = (uint32_t *)(void *)(ans + HEADER_BYTES), part = 0;
		for (uint32_t i = lane; i < plen / 4; i += LANES) {
			uint32_t x = in[i];
			out[i] = answer_word(x, seq, i);
			part += check_share(x, i);
		}
		uint32_t check = warp_sum(part);
		if (lane == 0) {
			struct msg_header *ah = (struct msg_header *)(void *)ans;
			ah->seq = seq;
			ah->len = plen;
			ah->kind_or_check = check;
		}
		/* Every lane's stores before lane 0 posts (inline: it reads them;
		 * by address: its doorbell's release fence covers what it saw). */
		warp_sync();
		uint64_t ticket;
		if (HEADER_BYTES + plen <= KINET_DEV_MAX_SEND_INLINE)
			st = kinet_dev_send_inline_warp(qp, ans, HEADER_BYTES + plen, &ticket);
		else
			st = kinet_dev_send_warp(qp, ans, key, HEADER_BYTES + plen, &ticket);
		if (st)
			break;
		served++;
		if (kind == KIND_STOP) {
			st = kinet_dev_quiet_warp(qp);
			if (lane == 0)
				server_report(&a->status[w], &a->ready[w], st, seq, index, served, st == 0);
			return;
		}
		if (++consumed == REPOST_BATCH) {
			consumed = 0;
			if (lane == 0) {
				st = server_post_receives(qp, buf, key, REPOST_BATCH);
				publish_u64(&a->status[w].served, served); /* progress the host watches */
			}
			st = (int)warp_bcast((uint64_t)(uint32_t)st);
		}
	}
	if (lane == 0)
		server_report(&a->status[w], &a->ready[w], st, seq, index, served, 0);
}

#endif /* TRANSCEIVER_SERVER_CUH */
