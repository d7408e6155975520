/*
 * transceiver, the "CPU in the path" baseline: the service of server.cuh
 * written as a CPU loop over kinet's host API, one thread serving every
 * QP, with the same protocol, processing step and receive batching.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "host.h"

static uint8_t *ring(const struct cpu_server_qp *s, uint32_t which, uint32_t slot)
{
	return s->buf + ((size_t)which * SLOTS + slot) * MSG_BYTES;
}

/* n <= SLOTS receives from WQE index first on; WQE index -> its buffer:
 * the receive ring, in order. */
static int post_receives(struct cpu_server_qp *s, uint64_t first, uint32_t n)
{
	struct kinet_sge sge[SLOTS];
	struct kinet_recv_wr wr[SLOTS];

	for (uint32_t k = 0; k < n; k++) {
		uint32_t slot = (uint32_t)((first + k) % SLOTS);
		sge[k] = (struct kinet_sge){(uint64_t)(uintptr_t)ring(s, 0, slot), MSG_BYTES,
					    kinet_mr_lkey(s->mr)};
		wr[k] = (struct kinet_recv_wr){first + k, &sge[k], 1};
	}
	return kinet_qp_post_recv(s->qp, wr, (int)n, NULL);
}

int cpu_server_prepare(struct cpu_server_qp *s, int nqps)
{
	for (int i = 0; i < nqps; i++) {
		int rc = post_receives(&s[i], 0, SLOTS);
		if (rc)
			return rc;
	}
	return 0;
}

/* Answers the request of one receive completion; 1 after a STOP. */
static int serve_one(struct cpu_server_qp *s, const struct kinet_wc *wc, struct server_status *st)
{
	const uint8_t *m;
	struct msg_header h;
	uint32_t check = 0;

	st->recv_index = wc->wr_id;
	if (wc->opcode == KINET_WC_RECV_RDMA_WITH_IMM) {
		uint32_t slot = wc->imm_data & ~IMM_SLOT_FLAG;
		if (!(wc->imm_data & IMM_SLOT_FLAG) || slot >= SLOTS)
			return -EINVAL;
		m = ring(s, 1, slot);
	} else {
		m = ring(s, 0, (uint32_t)(wc->wr_id % SLOTS));
	}
	if (wc->byte_len < HEADER_BYTES)
		return -EINVAL;
	memcpy(&h, m, sizeof(h));
	st->seq = h.seq;
	if (h.len > MAX_PAYLOAD || h.len % 4 || HEADER_BYTES + h.len > wc->byte_len ||
	    (h.kind_or_check != KIND_REQUEST && h.kind_or_check != KIND_STOP))
		return -EINVAL;

	uint8_t *a = ring(s, 2, (uint32_t)(h.seq % SLOTS));
	const uint32_t *in = (const uint32_t *)(const void *)(m + HEADER_BYTES);
	uint32_t *out = (uint32_t *)(void *)(a + HEADER_BYTES);
	for (uint32_t i = 0; i < h.len / 4; i++) {
		out[i] = answer_word(in[i], h.seq, i);
		check += check_share(in[i], i);
	}
	int stop = h.kind_or_check == KIND_STOP;
	h.kind_or_check = check;
	memcpy(a, &h, sizeof(h));

	struct kinet_sge sge = {(uint64_t)(uintptr_t)a, HEADER_BYTES + h.len, kinet_mr_lkey(s->mr)};
	struct kinet_send_wr wr;
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = h.seq;
	wr.opcode = KINET_WR_SEND;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	if (sge.length <= 64)
		wr.send_flags |= KINET_SEND_INLINE;
	if (st->served % 16 == 15 || stop)
		wr.send_flags |= KINET_SEND_SIGNALED;
	int rc = post_send_draining(s->qp, s->send_cq, &wr);
	if (rc)
		return rc;
	st->served++;
	return stop;
}

int cpu_server_run(struct cpu_server_qp *s, int nqps, uint64_t idle_ns, struct server_status *status)
{
	uint64_t consumed[MAX_QPS] = {0}, posted[MAX_QPS], last = now_ns();
	int running = nqps;
	struct kinet_wc wc[16];

	for (int i = 0; i < nqps; i++) {
		memset(&status[i], 0, sizeof(status[i]));
		status[i].qp = (uint32_t)i;
		posted[i] = SLOTS;
	}
	while (running) {
		for (int i = 0; i < nqps; i++) {
			struct server_status *st = &status[i];
			if (st->stopped || st->status)
				continue;
			int n = kinet_cq_poll(s[i].recv_cq, 16, wc), rc = 0;
			if (n < 0)
				rc = n;
			for (int k = 0; k < n && !rc; k++) {
				rc = wc[k].status ? -EIO : serve_one(&s[i], &wc[k], st);
				consumed[i]++;
				if (rc == 1) {
					st->stopped = 1;
					rc = 0;
					break;
				}
				/* Repost in batches, as the kernel does. */
				if (!rc && consumed[i] + SLOTS - posted[i] >= REPOST_BATCH) {
					rc = post_receives(&s[i], posted[i], REPOST_BATCH);
					posted[i] += REPOST_BATCH;
				}
			}
			if (n > 0)
				last = now_ns();
			if (rc) {
				st->status = rc;
				fprintf(stderr,
					"transceiver cpu server: QP %d: request %llu (receive %llu): %s\n", i,
					(unsigned long long)st->seq, (unsigned long long)st->recv_index,
					kinet_strerror(rc));
			}
			if (st->stopped || st->status)
				running--;
		}
		if (running && now_ns() - last > idle_ns) {
			for (int i = 0; i < nqps; i++)
				if (!status[i].stopped && !status[i].status)
					status[i].status = -ETIMEDOUT;
			fprintf(stderr, "transceiver cpu server: no request for %llu ms\n",
				(unsigned long long)(idle_ns / 1000000));
			return -ETIMEDOUT;
		}
	}
	return 0;
}
