/*
 * Memory regions deregistered while operations on them are in flight, over
 * the transport $KINET_TRANSPORT picks (ctest runs it as local, node and
 * ofi).  Deregistration fences: once kinet_mr_dereg returns, the engine
 * never reads or writes the region again, so the application may unmap
 * it; the operation ends in an error completion (LOCAL_PROT_ERR) or had
 * already completed.  Issue 12, defect 3: over node, a 64 MiB write kept
 * reading its source after the deregistration returned.
 */
#include <sys/mman.h>

#include "kt_host.h"

#define BIG (64u << 20)
#define NW 4
/* 64 MiB writes over a carrier take seconds on a loaded 2-core machine:
 * the QP timeout (a live peer's longest silence) allows for it, and each
 * wait for a completion is bounded by twice that, so a missing one is the
 * library's fault, not the load's. */
#define BIG_TIMEOUT_MS (30000u * kt_time_scale())

static int poll_big(struct kinet_cq *cq, struct kinet_wc *wc)
{
	int rc = kt_poll_n(cq, 1, wc, 2 * BIG_TIMEOUT_MS);
	return rc == 1 ? 0 : rc;
}

static uint8_t *map(size_t len, uint8_t fill)
{
	uint8_t *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return NULL;
	memset(p, fill, len);
	return p;
}

/* The local transport executes a batch of WQEs under the registration
 * tables' read locks, so a deregistration waits for the writes of that
 * batch (they all succeed); remote transports send in fragments, and the
 * deregistration fails the rest. */
static bool remote_transport(void)
{
	const char *t = getenv("KINET_TRANSPORT");

	return t && (!strcmp(t, "node") || !strcmp(t, "ofi"));
}

static bool transport_available(struct kinet_ctx *a, struct kinet_ctx *b)
{
	struct kt_pair p;

	if (kt_pair_create(&p, a, b, NULL))
		return false;
	kt_pair_destroy(&p);
	return true;
}

/* Source deregistered and unmapped while NW big writes from it are in
 * flight: no crash, completions in order (successes, then errors), and
 * the target never receives bytes written into the source after the
 * deregistration (they could not be: the pages are gone). */
static void dereg_source(bool first_lands)
{
	struct kinet_ctx *a, *b;
	struct kt_pair p;
	struct kt_pair_opts o;
	struct kt_buf dst;
	struct kinet_mr *smr;
	struct kinet_wc wc;
	uint8_t *src;

	KT_OK(kt_ctx_open(1, &a));
	KT_OK(kt_ctx_open(1, &b));
	if (!transport_available(a, b)) {
		kinet_ctx_close(a);
		kinet_ctx_close(b);
		KT_SKIP("transport %s cannot connect here", getenv("KINET_TRANSPORT"));
	}
	kt_pair_opts_init(&o);
	o.timeout_ms = BIG_TIMEOUT_MS;
	KT_OK(kt_pair_create(&p, a, b, &o));
	KT_CHECK((src = map(BIG, 0x11)) != NULL);
	KT_OK(kinet_mr_reg(a, src, BIG, KT_ACC_ALL, &smr));
	KT_OK(kt_buf_alloc(b, &dst, BIG, KT_ACC_ALL, 0x22));

	for (int i = 0; i < NW; i++) {
		struct kinet_sge s = {(uint64_t)(uintptr_t)src, BIG, kinet_mr_lkey(smr)};
		struct kinet_send_wr w = kt_wr((uint64_t)i, KINET_WR_RDMA_WRITE, KINET_SEND_SIGNALED, &s, 1,
					       kt_addr(&dst, 0), kt_rkey(&dst));
		KT_OK(kt_post(p.qp[0], &w));
	}
	int first = 0, errors = 0;
	if (first_lands) {
		/* Mid-transfer: the first write is done, the next under way.
		 * (Waiting on the target's bytes instead would race with the
		 * engine writing them.) */
		KT_OK(poll_big(p.cq[0], &wc));
		KT_OK(kt_wc_expect(&wc, 0, 0));
		first = 1;
	}
	KT_OK(kinet_mr_dereg(smr));
	memset(src, 0xee, BIG);
	KT_OK(munmap(src, BIG));

	for (int i = first; i < NW; i++) {
		KT_OK(poll_big(p.cq[0], &wc));
		KT_CHECK_EQ(wc.wr_id, (uint64_t)i);
		if (errors)
			KT_CHECK(wc.status != 0);
		else if (wc.status)
			KT_CHECK_EQ(wc.status, KINET_SYND_LOCAL_PROT_ERR);
		errors += wc.status != 0;
	}
	if (remote_transport())
		KT_CHECK(errors > 0);
	KT_CHECK_EQ(kinet_qp_get_state(p.qp[0]), errors ? KINET_QPS_ERR : KINET_QPS_RTS);
	/* Fragments sent before the deregistration may still be on their way
	 * to the target after the error completion (the operation's target
	 * bytes are undefined, as on ConnectX); destroying the target QP
	 * waits until nothing is placed through it. */
	KT_OK(kinet_qp_destroy(p.qp[1]));
	p.qp[1] = NULL;
	KT_CHECK(!memchr(dst.p, 0xee, BIG));
	KT_CHECK(kt_buf_guards_ok(&dst));
	kt_pair_destroy(&p);
	kt_buf_free(&dst);
	KT_OK(kinet_ctx_close(b));
	KT_OK(kinet_ctx_close(a));
}

KT_TEST(dereg_source_mid_transfer)
{
	dereg_source(true);
}

KT_TEST(dereg_source_before_execution)
{
	dereg_source(false);
}

/* The target's region deregistered while writes into it arrive: the rest
 * fail with REMOTE_ACCESS_ERR, nothing lands after the dereg returned. */
KT_TEST(dereg_target_mid_transfer)
{
	struct kinet_ctx *a, *b;
	struct kt_pair p;
	struct kt_pair_opts o;
	struct kt_buf src;
	struct kinet_mr *dmr;
	struct kinet_wc wc;
	uint8_t *dst;

	KT_OK(kt_ctx_open(1, &a));
	KT_OK(kt_ctx_open(1, &b));
	if (!transport_available(a, b)) {
		kinet_ctx_close(a);
		kinet_ctx_close(b);
		KT_SKIP("transport %s cannot connect here", getenv("KINET_TRANSPORT"));
	}
	kt_pair_opts_init(&o);
	o.timeout_ms = BIG_TIMEOUT_MS;
	KT_OK(kt_pair_create(&p, a, b, &o));
	KT_OK(kt_buf_alloc(a, &src, BIG, KT_ACC_ALL, 0x33));
	KT_CHECK((dst = map(BIG, 0x44)) != NULL);
	KT_OK(kinet_mr_reg(b, dst, BIG, KT_ACC_ALL, &dmr));
	for (int i = 0; i < NW; i++) {
		struct kinet_sge s = kt_sge(&src, 0, BIG);
		struct kinet_send_wr w = kt_wr((uint64_t)i, KINET_WR_RDMA_WRITE, KINET_SEND_SIGNALED, &s, 1,
					       (uint64_t)(uintptr_t)dst, kinet_mr_rkey(dmr));
		KT_OK(kt_post(p.qp[0], &w));
	}
	KT_OK(poll_big(p.cq[0], &wc));
	KT_OK(kt_wc_expect(&wc, 0, 0));
	KT_OK(kinet_mr_dereg(dmr));
	KT_OK(munmap(dst, BIG));
	int errors = 0;
	for (int i = 1; i < NW; i++) {
		KT_OK(poll_big(p.cq[0], &wc));
		KT_CHECK_EQ(wc.wr_id, (uint64_t)i);
		if (errors)
			KT_CHECK(wc.status != 0);
		else if (wc.status)
			KT_CHECK_EQ(wc.status, KINET_SYND_REMOTE_ACCESS_ERR);
		errors += wc.status != 0;
	}
	if (remote_transport())
		KT_CHECK(errors > 0);
	kt_pair_destroy(&p);
	kt_buf_free(&src);
	KT_OK(kinet_ctx_close(b));
	KT_OK(kinet_ctx_close(a));
}

KT_MAIN(dereg_source_mid_transfer, dereg_source_before_execution, dereg_target_mid_transfer)
