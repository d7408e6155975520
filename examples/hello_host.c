/*
 * hello_host: the host API from the first call to the last, in one process.
 *
 * Two RC queue pairs connected to each other (both in this process: a
 * loopback), a registered buffer on each side.  QP 0 writes 64 bytes into
 * the other buffer, reads them back, and adds 5 to a counter there.  Every
 * operation asks for a completion and every completion is checked.  No GPU
 * and no NIC needed: the software NIC's engine thread does the work.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <kinet/kinet.h>

#define MSG 64
/* Layout of each registered buffer. */
#define DATA_OFF 0
#define BACK_OFF 64	/* where the read lands */
#define COUNTER_OFF 128 /* the target of the fetch-add */
#define OLD_OFF 136	/* where the fetch-add returns the old value */
#define BUF_BYTES 4096

static int fail(const char *what, int err)
{
	fprintf(stderr, "hello_host: %s: %s\n", what, kinet_strerror(err));
	return 1;
}

/* Waits (at most 5 s) for the next completion of cq and checks it. */
static int wait_completion(struct kinet_cq *cq, uint64_t wr_id)
{
	struct timespec now, end;
	struct kinet_wc wc;

	timespec_get(&end, TIME_UTC);
	end.tv_sec += 5;
	do {
		int n = kinet_cq_poll(cq, 1, &wc);

		if (n < 0)
			return fail("kinet_cq_poll", n);
		if (n == 1 && wc.status) {
			fprintf(stderr, "hello_host: operation %llu failed: %s\n",
				(unsigned long long)wc.wr_id, kinet_wc_status_str(wc.status));
			return 1;
		}
		if (n == 1)
			return wc.wr_id == wr_id ? 0 : fail("unexpected completion", -EPROTO);
		timespec_get(&now, TIME_UTC);
	} while (now.tv_sec < end.tv_sec || (now.tv_sec == end.tv_sec && now.tv_nsec < end.tv_nsec));
	return fail("waiting for a completion", -ETIMEDOUT);
}

/* One work request on qp, signaled, then its completion. */
static int run(struct kinet_qp *qp, struct kinet_cq *cq, struct kinet_send_wr *wr)
{
	int rc = kinet_qp_post_send(qp, wr, 1, NULL);

	return rc ? fail("kinet_qp_post_send", rc) : wait_completion(cq, wr->wr_id);
}

int main(void)
{
	struct kinet_ctx_attr cattr;
	struct kinet_ctx *ctx;
	struct kinet_cq *cq[2];
	struct kinet_qp *qp[2];
	struct kinet_mr *mr[2];
	struct kinet_qp_info qinfo[2];
	struct kinet_mr_info target; /* what the peer would receive out of band */
	uint8_t *buf[2];
	int rc;

	/* 1. A context: the software NIC unless a ConnectX is usable. */
	kinet_ctx_attr_init(&cattr);
	if ((rc = kinet_ctx_open(&cattr, &ctx)))
		return fail("kinet_ctx_open", rc);

	for (int s = 0; s < 2; s++) {
		struct kinet_cq_attr qa = {.depth = 32};
		struct kinet_qp_attr attr;

		/* 2. A completion queue and a queue pair that reports to it
		 * (no receive queue: this program posts no receives). */
		if ((rc = kinet_cq_create(ctx, &qa, &cq[s])))
			return fail("kinet_cq_create", rc);
		kinet_qp_attr_init(&attr);
		attr.send_cq = cq[s];
		attr.recv_cq = NULL;
		attr.sq_depth = 16;
		if ((rc = kinet_qp_create(ctx, &attr, &qp[s])))
			return fail("kinet_qp_create", rc);

		/* 3. Memory the NIC may touch, and what a peer may do to it. */
		buf[s] = calloc(1, BUF_BYTES);
		if (!buf[s])
			return fail("calloc", -ENOMEM);
		rc = kinet_mr_reg(ctx, buf[s], BUF_BYTES,
				  KINET_ACCESS_LOCAL_WRITE | KINET_ACCESS_REMOTE_WRITE |
					  KINET_ACCESS_REMOTE_READ | KINET_ACCESS_REMOTE_ATOMIC,
				  &mr[s]);
		if (rc)
			return fail("kinet_mr_reg", rc);

		/* 4. What a peer needs to connect: exchanged out of band. */
		if ((rc = kinet_qp_pack(qp[s], &qinfo[s])))
			return fail("kinet_qp_pack", rc);
	}
	/* 5. Connect each QP to the other's info (RESET -> RTS). */
	for (int s = 0; s < 2; s++)
		if ((rc = kinet_qp_connect(qp[s], &qinfo[1 - s])))
			return fail("kinet_qp_connect", rc);
	/* The target's address and rkey, as its owner packs them. */
	if ((rc = kinet_mr_pack(mr[1], &target)))
		return fail("kinet_mr_pack", rc);

	/* 6. Write: local bytes (lkey) to the target (remote address, rkey). */
	for (int i = 0; i < MSG; i++)
		buf[0][DATA_OFF + i] = (uint8_t)(i * 7 + 1);
	struct kinet_sge sge = {(uint64_t)(uintptr_t)(buf[0] + DATA_OFF), MSG, kinet_mr_lkey(mr[0])};
	struct kinet_send_wr wr = {.wr_id = 1,
				   .opcode = KINET_WR_RDMA_WRITE,
				   .send_flags = KINET_SEND_SIGNALED,
				   .sg_list = &sge,
				   .num_sge = 1,
				   .remote_addr = target.addr + DATA_OFF,
				   .rkey = target.rkey};
	if (run(qp[0], cq[0], &wr))
		return 1;

	/* 7. Read it back into another part of the local buffer. */
	sge.addr = (uint64_t)(uintptr_t)(buf[0] + BACK_OFF);
	wr.wr_id = 2;
	wr.opcode = KINET_WR_RDMA_READ;
	if (run(qp[0], cq[0], &wr))
		return 1;

	/* 8. Fetch-add on a 64-bit counter of the target; the old value
	 * lands in the local SGE (8 bytes). */
	*(uint64_t *)(void *)(buf[1] + COUNTER_OFF) = 37;
	sge.addr = (uint64_t)(uintptr_t)(buf[0] + OLD_OFF);
	sge.length = 8;
	wr.wr_id = 3;
	wr.opcode = KINET_WR_ATOMIC_FETCH_AND_ADD;
	wr.remote_addr = target.addr + COUNTER_OFF;
	wr.compare_add = 5;
	if (run(qp[0], cq[0], &wr))
		return 1;

	int ok = !memcmp(buf[0] + DATA_OFF, buf[1] + DATA_OFF, MSG) &&
		 !memcmp(buf[0] + DATA_OFF, buf[0] + BACK_OFF, MSG) &&
		 *(uint64_t *)(void *)(buf[1] + COUNTER_OFF) == 42 &&
		 *(uint64_t *)(void *)(buf[0] + OLD_OFF) == 37;
	printf("hello_host: write, read and fetch-add over provider %s: %s\n", kinet_ctx_provider(ctx),
	       ok ? "OK" : "WRONG DATA");

	/* 9. Tear down: QPs before their CQs, then memory, then the context. */
	for (int s = 0; s < 2; s++) {
		kinet_qp_destroy(qp[s]);
		kinet_cq_destroy(cq[s]);
		kinet_mr_dereg(mr[s]);
		free(buf[s]);
	}
	kinet_ctx_close(ctx);
	return ok ? 0 : 1;
}
