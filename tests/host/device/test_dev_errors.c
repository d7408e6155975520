/*
 * Device API under host emulation: failures.  Bounded waits (a paused
 * engine gives ETIMEDOUT within the QP timeout, recorded in the context),
 * error CQEs surfacing as EIO with the right syndrome (never as "not yet"),
 * flushes after an error, receive errors, and argument errors.
 */
#include "kt_dev.h"

static int open_pair(struct kd_pair *p, uint32_t timeout_ms, uint32_t sq_depth, enum kinet_db_mode mode)
{
	struct kd_opts o;
	kd_opts_init(&o);
	o.timeout_ms = timeout_ms;
	o.sq_depth = sq_depth;
	o.db_mode = mode;
	o.two_ctx = 1;
	return kd_pair_create(p, &o);
}

/* A paused engine: wait returns ETIMEDOUT after ~timeout, not a hang; the
 * context records it; after resume the same ticket completes. */
KT_TEST(timeout_paused_engine)
{
	for (int m = 0; m < 3; m++) {
		struct kd_pair p;
		struct kd_buf a, b;
		struct kinet_error err;
		uint64_t tk = 0;
		KT_OK(open_pair(&p, 200, 16, kt_db_modes[m]));
		struct kinet_dev_qp *d = p.s[0].d;
		KT_OK(kd_buf_alloc(p.ctx[0], &a, 64));
		KT_OK(kd_buf_alloc(p.ctx[1], &b, 64));
		/* the local transport executes on the initiator's engine */
		KT_PAUSE(p.ctx[0]);
		KT_PAUSE(p.ctx[1]);
		kinet_ctx_clear_error(p.ctx[0]);
		memset(a.p, 7, 64);
		KT_OK(kinet_dev_put(d, a.p, a.key, kd_addr(&b, 0), b.key, 64, &tk));
		uint64_t t0 = kt_now_ms();
		KT_CHECK_EQ(kinet_dev_wait(d, tk), -ETIMEDOUT);
		uint64_t ms = kt_now_ms() - t0;
		KT_CHECK(ms >= 150 && ms < 2000);
		KT_CHECK_EQ(kinet_dev_test(d, tk), -EAGAIN);
		KT_OK(kinet_ctx_last_error(p.ctx[0], &err));
		KT_CHECK_EQ(err.status, -ETIMEDOUT);
		KT_CHECK_EQ(err.source, KINET_ERROR_SOURCE_DEVICE);
		KT_CHECK_EQ(err.qpn, d->qpn);

		/* signal_wait_until is bounded the same way */
		t0 = kt_now_ms();
		KT_CHECK_EQ(kinet_dev_signal_wait_until(d, (uint64_t *)(void *)b.p, KINET_DEV_CMP_EQ, 12345,
							NULL),
			    -ETIMEDOUT);
		ms = kt_now_ms() - t0;
		KT_CHECK(ms >= 150 && ms < 2000);

		/* a full queue: reserve gives up after the timeout holding nothing */
		uint64_t ok = 1;
		for (int i = 1; i < 16; i++)
			ok &= kinet_dev_put_inline(d, &ok, 8, kd_addr(&b, 8), b.key, NULL) == 0;
		KT_CHECK(ok);
		uint64_t reserved = d->sq_reserved;
		t0 = kt_now_ms();
		KT_CHECK_EQ(kinet_dev_put_inline(d, &ok, 8, kd_addr(&b, 8), b.key, &tk), -ETIMEDOUT);
		ms = kt_now_ms() - t0;
		KT_CHECK(ms >= 150 && ms < 2000);
		KT_CHECK_EQ(d->sq_reserved, reserved);

		/* resume: everything completes, the QP is usable again */
		KT_OK(kinet_ctx_resume(p.ctx[0]));
		KT_OK(kinet_ctx_resume(p.ctx[1]));
		KT_OK(kinet_dev_quiet(d));
		KT_CHECK(b.p[0] == 7 && b.p[63] == 7);
		KT_OK(kinet_dev_put_inline(d, &ok, 8, kd_addr(&b, 8), b.key, &tk));
		KT_OK(kinet_dev_wait(d, tk));
		KT_CHECK_EQ(kinet_dev_qp_error(d), 0);
		printf("  %s: ok\n", kt_db_names[kt_db_modes[m]]);
		kd_buf_free(&a);
		kd_buf_free(&b);
		kd_pair_destroy(&p);
	}
}

/* A put with a wrong rkey: EIO with REMOTE_ACCESS_ERR (0x13); earlier work
 * still completes; later work is flushed (EIO) and new posts fail fast. */
KT_TEST(remote_access_error)
{
	struct kd_pair p;
	struct kd_buf a, b;
	struct kinet_error err;
	uint64_t tk_good = 0, tk_bad = 0, tk_after = 0;
	KT_OK(open_pair(&p, 2000, 32, KINET_DB_GPU));
	struct kinet_dev_qp *d = p.s[0].d;
	KT_OK(kd_buf_alloc(p.ctx[0], &a, 4096));
	KT_OK(kd_buf_alloc(p.ctx[1], &b, 4096));
	kinet_ctx_clear_error(p.ctx[0]);
	KT_PAUSE(p.ctx[0]); /* queue all three before anything runs */
	KT_OK(kinet_dev_put(d, a.p, a.key, kd_addr(&b, 0), b.key, 100, &tk_good));
	KT_OK(kinet_dev_put(d, a.p, a.key, kd_addr(&b, 0), b.key ^ 0x5500, 100, &tk_bad));
	KT_OK(kinet_dev_put(d, a.p, a.key, kd_addr(&b, 0), b.key, 100, &tk_after));
	KT_OK(kinet_ctx_resume(p.ctx[0]));
	KT_CHECK_EQ(kinet_dev_wait(d, tk_after), -EIO);
	KT_CHECK_EQ(kinet_dev_wait(d, tk_bad), -EIO);
	KT_OK(kinet_dev_wait(d, tk_good)); /* before the error: fine */
	KT_CHECK_EQ(kinet_dev_qp_error(d), KINET_SYND_REMOTE_ACCESS_ERR);
	KT_CHECK_EQ(d->sq_error_idx, tk_bad - 1);
	/* the device's own record */
	KT_CHECK_EQ(d->err->valid, 1);
	KT_CHECK_EQ(d->err->status, -EIO);
	KT_CHECK_EQ(d->err->syndrome, KINET_SYND_REMOTE_ACCESS_ERR);
	KT_CHECK_EQ(d->err->qpn, d->qpn);
	KT_CHECK_EQ(d->err->opcode, KINET_WQE_OP_RDMA_WRITE);
	KT_CHECK_EQ(d->err->wqe_counter, (tk_bad - 1) & 0xffff);
	/* what the host reads (the engine or the device may have recorded first) */
	KT_OK(kinet_ctx_last_error(p.ctx[0], &err));
	KT_CHECK(err.status != 0);
	KT_CHECK_EQ(err.syndrome, KINET_SYND_REMOTE_ACCESS_ERR);
	/* new posts: EIO at once, nothing reserved */
	uint64_t r = d->sq_reserved;
	KT_CHECK_EQ(kinet_dev_put(d, a.p, a.key, kd_addr(&b, 0), b.key, 8, &tk_after), -EIO);
	KT_CHECK_EQ(kinet_dev_signal(d, kd_addr(&b, 0), b.key, 1, NULL), -EIO);
	KT_CHECK_EQ(d->sq_reserved, r);
	KT_CHECK_EQ(kinet_dev_quiet(d), -EIO);
	kd_buf_free(&a);
	kd_buf_free(&b);
	kd_pair_destroy(&p);
}

/* Local protection (bad lkey) on an atomic in BF mode: syndrome 0x04. */
KT_TEST(local_protection_error)
{
	struct kd_pair p;
	struct kd_buf a, b;
	uint64_t tk = 0;
	KT_OK(open_pair(&p, 2000, 16, KINET_DB_BF));
	struct kinet_dev_qp *d = p.s[0].d;
	KT_OK(kd_buf_alloc(p.ctx[0], &a, 64));
	KT_OK(kd_buf_alloc(p.ctx[1], &b, 64));
	KT_OK(kinet_dev_fetch_add(d, (uint64_t *)(void *)a.p, a.key + 0x100, kd_addr(&b, 0), b.key, 1, &tk));
	KT_CHECK_EQ(kinet_dev_wait(d, tk), -EIO);
	KT_CHECK_EQ(kinet_dev_qp_error(d), KINET_SYND_LOCAL_PROT_ERR);
	kd_buf_free(&a);
	kd_buf_free(&b);
	kd_pair_destroy(&p);
}

/* Send without a posted receive: RNR retries run out (RNR_RETRY_EXC 0x16). */
KT_TEST(rnr_error)
{
	struct kd_pair p;
	struct kd_buf a;
	uint64_t tk = 0;
	KT_OK(open_pair(&p, 3000, 16, KINET_DB_CPU));
	struct kinet_dev_qp *d = p.s[0].d;
	KT_OK(kd_buf_alloc(p.ctx[0], &a, 64));
	KT_OK(kinet_dev_send(d, a.p, a.key, 64, &tk));
	KT_CHECK_EQ(kinet_dev_wait(d, tk), -EIO);
	KT_CHECK_EQ(kinet_dev_qp_error(d), KINET_SYND_RNR_RETRY_EXC_ERR);
	kd_buf_free(&a);
	kd_pair_destroy(&p);
}

/* A message larger than the receive buffer: the receiver gets EIO from
 * recv (an error completion), the sender EIO from wait. */
KT_TEST(receive_too_small)
{
	struct kd_pair p;
	struct kd_buf a, b;
	uint64_t tk = 0;
	uint32_t len = 0, imm = 0;
	KT_OK(open_pair(&p, 2000, 16, KINET_DB_GPU));
	struct kinet_dev_qp *d = p.s[0].d, *t = p.s[1].d;
	KT_OK(kd_buf_alloc(p.ctx[0], &a, 256));
	KT_OK(kd_buf_alloc(p.ctx[1], &b, 256));
	KT_OK(kinet_dev_post_recv(t, b.p, b.key, 16, NULL));
	KT_OK(kinet_dev_post_recv(t, b.p + 64, b.key, 16, NULL));
	KT_OK(kinet_dev_send(d, a.p, a.key, 200, &tk));
	KT_CHECK_EQ(kinet_dev_wait(d, tk), -EIO);
	KT_CHECK(kinet_dev_qp_error(d) != 0);
	KT_CHECK_EQ(kinet_dev_recv(t, &len, &imm, NULL), -EIO);
	KT_CHECK(kinet_dev_qp_recv_error(t) != 0);
	printf("  sender syndrome 0x%x, receiver syndrome 0x%x\n", kinet_dev_qp_error(d),
	       kinet_dev_qp_recv_error(t));
	/* from then on: EIO, never a hang */
	KT_CHECK_EQ(kinet_dev_recv(t, &len, &imm, NULL), -EIO);
	KT_CHECK_EQ(kinet_dev_post_recv(t, b.p, b.key, 16, NULL), -EIO);
	kd_buf_free(&a);
	kd_buf_free(&b);
	kd_pair_destroy(&p);
}

/* The host moves the QP to error: outstanding and new work give EIO with
 * WR_FLUSH_ERR. */
KT_TEST(flush_on_host_error)
{
	struct kd_pair p;
	struct kd_buf a, b;
	uint64_t tk = 0;
	KT_OK(open_pair(&p, 2000, 16, KINET_DB_CPU));
	struct kinet_dev_qp *d = p.s[0].d;
	KT_OK(kd_buf_alloc(p.ctx[0], &a, 64));
	KT_OK(kd_buf_alloc(p.ctx[1], &b, 64));
	KT_PAUSE(p.ctx[0]);
	KT_OK(kinet_dev_put(d, a.p, a.key, kd_addr(&b, 0), b.key, 64, &tk));
	KT_OK(kinet_qp_set_error(p.s[0].qp));
	KT_OK(kinet_ctx_resume(p.ctx[0]));
	KT_CHECK_EQ(kinet_dev_wait(d, tk), -EIO);
	KT_CHECK_EQ(kinet_dev_qp_error(d), KINET_SYND_WR_FLUSH_ERR);
	kd_buf_free(&a);
	kd_buf_free(&b);
	kd_pair_destroy(&p);
}

KT_TEST(invalid_arguments)
{
	struct kd_pair p;
	struct kd_buf a;
	struct kd_opts o;
	uint64_t tk = 0, idx;
	uint8_t big[64] = {0};
	kd_opts_init(&o);
	o.rq_depth = 0;
	KT_OK(kd_pair_create(&p, &o));
	struct kinet_dev_qp *d = p.s[0].d;
	KT_OK(kd_buf_alloc(p.ctx[0], &a, 64));
	KT_CHECK_EQ(kinet_dev_put_inline(d, big, 29, kd_addr(&a, 0), a.key, &tk), -EINVAL);
	KT_CHECK_EQ(kinet_dev_put_inline_warp(d, big, 64, kd_addr(&a, 0), a.key, &tk), -EINVAL);
	KT_CHECK_EQ(kinet_dev_sq_reserve(d, 0, &idx), -EINVAL);
	KT_CHECK_EQ(kinet_dev_sq_reserve(d, kinet_dev_sq_depth(d) + 1, &idx), -EINVAL);
	KT_CHECK_EQ(kinet_dev_post_recv(d, a.p, a.key, 8, NULL), -EINVAL); /* no receive queue */
	KT_CHECK_EQ(kinet_dev_recv(d, NULL, NULL, NULL), -EINVAL);
	KT_CHECK_EQ(kinet_dev_signal_wait_until(d, (uint64_t *)(void *)a.p, 99, 0, NULL), -EINVAL);
	uint64_t scratch = d->scratch;
	d->scratch = 0; /* no scratch buffer: signals cannot be posted */
	KT_CHECK_EQ(kinet_dev_signal(d, kd_addr(&a, 0), a.key, 1, &tk), -EINVAL);
	KT_CHECK_EQ(
		kinet_dev_put_signal(d, a.p, a.key, kd_addr(&a, 8), a.key, 8, kd_addr(&a, 0), a.key, 1, &tk),
		-EINVAL);
	d->scratch = scratch;
	KT_CHECK_EQ(d->sq_reserved, 0);
	KT_CHECK_EQ(kinet_dev_qp_error(d), 0);
	kd_buf_free(&a);
	kd_pair_destroy(&p);
}

KT_MAIN(timeout_paused_engine, remote_access_error, local_protection_error, rnr_error, receive_too_small,
	flush_on_host_error, invalid_arguments)
