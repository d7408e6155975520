/*
 * error_handling: how kinet reports what went wrong, and what to print.
 *
 *  - A call that fails returns a negative errno: kinet_strerror() names it.
 *  - An operation that fails completes with a status, the syndrome of its
 *    error completion: kinet_wc_status_str() names it.  The QP goes to the
 *    error state and flushes what was posted after it (WR_FLUSH_ERR).
 *  - The first error of a context (from the engine or from device code) is
 *    kept: kinet_ctx_last_error().
 *
 * A loopback pair as in hello_host; the target buffer is registered for
 * reads only, so a write to it fails with REMOTE_ACCESS_ERR.  Exits 0 when
 * each error arrived as described.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <kinet/kinet.h>

static int fail(const char *what, int err)
{
	fprintf(stderr, "error_handling: %s: %s\n", what, kinet_strerror(err));
	return 1;
}

/* The next completion of cq, waited for at most 5 s: 0 or -ETIMEDOUT. */
static int next_completion(struct kinet_cq *cq, struct kinet_wc *wc)
{
	struct timespec now, end;

	timespec_get(&end, TIME_UTC);
	end.tv_sec += 5;
	do {
		int n = kinet_cq_poll(cq, 1, wc);

		if (n)
			return n < 0 ? n : 0;
		timespec_get(&now, TIME_UTC);
	} while (now.tv_sec < end.tv_sec || (now.tv_sec == end.tv_sec && now.tv_nsec < end.tv_nsec));
	return -ETIMEDOUT;
}

int main(void)
{
	struct kinet_ctx_attr cattr;
	struct kinet_ctx *ctx;
	struct kinet_cq *cq[2];
	struct kinet_qp *qp[2];
	struct kinet_qp_info qinfo[2];
	struct kinet_mr *src_mr, *dst_mr;
	struct kinet_error err;
	struct kinet_wc wc;
	static uint8_t src[256], dst[256];
	int rc, seen = 0;

	kinet_ctx_attr_init(&cattr);
	if ((rc = kinet_ctx_open(&cattr, &ctx)))
		return fail("kinet_ctx_open", rc);

	/* A call with a bad argument returns -EINVAL (and logs why). */
	struct kinet_qp_attr attr;
	kinet_qp_attr_init(&attr); /* send_cq left NULL */
	rc = kinet_qp_create(ctx, &attr, &qp[0]);
	printf("kinet_qp_create without a send CQ: %s\n", kinet_strerror(rc));
	seen += rc == -EINVAL;

	for (int s = 0; s < 2; s++) {
		struct kinet_cq_attr qa = {.depth = 32};

		if ((rc = kinet_cq_create(ctx, &qa, &cq[s])))
			return fail("kinet_cq_create", rc);
		kinet_qp_attr_init(&attr);
		attr.send_cq = cq[s];
		attr.sq_depth = 16;
		if ((rc = kinet_qp_create(ctx, &attr, &qp[s])) || (rc = kinet_qp_pack(qp[s], &qinfo[s])))
			return fail("creating a QP", rc);
	}
	for (int s = 0; s < 2; s++)
		if ((rc = kinet_qp_connect(qp[s], &qinfo[1 - s])))
			return fail("kinet_qp_connect", rc);
	if ((rc = kinet_mr_reg(ctx, src, sizeof(src), KINET_ACCESS_LOCAL_WRITE, &src_mr)) ||
	    (rc = kinet_mr_reg(ctx, dst, sizeof(dst), KINET_ACCESS_REMOTE_READ, &dst_mr)))
		return fail("kinet_mr_reg", rc);

	/* A write to memory registered without REMOTE_WRITE, then a read that
	 * would have worked: the first fails, the second is flushed. */
	struct kinet_sge sge = {(uint64_t)(uintptr_t)src, 64, kinet_mr_lkey(src_mr)};
	struct kinet_send_wr wr[2] = {{.wr_id = 1,
				       .opcode = KINET_WR_RDMA_WRITE,
				       .send_flags = KINET_SEND_SIGNALED,
				       .sg_list = &sge,
				       .num_sge = 1,
				       .remote_addr = (uint64_t)(uintptr_t)dst,
				       .rkey = kinet_mr_rkey(dst_mr)}};
	wr[1] = wr[0];
	wr[1].wr_id = 2;
	wr[1].opcode = KINET_WR_RDMA_READ;
	if ((rc = kinet_qp_post_send(qp[0], wr, 2, NULL)))
		return fail("kinet_qp_post_send", rc);
	for (int i = 0; i < 2; i++) {
		if ((rc = next_completion(cq[0], &wc)))
			return fail("kinet_cq_poll", rc);
		printf("operation %llu: %s (syndrome 0x%02x)\n", (unsigned long long)wc.wr_id,
		       kinet_wc_status_str(wc.status), wc.status);
		seen += wc.status == (i == 0 ? KINET_SYND_REMOTE_ACCESS_ERR : KINET_SYND_WR_FLUSH_ERR);
	}
	printf("QP %u is %s\n", kinet_qp_num(qp[0]),
	       kinet_qp_get_state(qp[0]) == KINET_QPS_ERR ? "in error" : "fine");
	seen += kinet_qp_get_state(qp[0]) == KINET_QPS_ERR;

	/* The context kept the first error. */
	if ((rc = kinet_ctx_last_error(ctx, &err)))
		return fail("kinet_ctx_last_error", rc);
	printf("first error of the context: %s on QP %u: %s\n", kinet_strerror(err.status), err.qpn,
	       kinet_wc_status_str(err.syndrome));
	seen += err.qpn == kinet_qp_num(qp[0]) && err.syndrome == KINET_SYND_REMOTE_ACCESS_ERR;

	for (int s = 0; s < 2; s++) {
		kinet_qp_destroy(qp[s]);
		kinet_cq_destroy(cq[s]);
	}
	kinet_mr_dereg(src_mr);
	kinet_mr_dereg(dst_mr);
	kinet_ctx_close(ctx);
	printf("error_handling: %s\n", seen == 5 ? "OK (every error as expected)" : "UNEXPECTED");
	return seen == 5 ? 0 : 1;
}
