/*
 * Device code built with KINET_DEV_PEER_PATH 0 (docs/PEER_PATH.md): on QPs
 * that have a peer path (two host-only contexts of one process,
 * KINET_P2P=force, as test_dev_peer.c), every verb posts WQEs.  With both
 * engines paused nothing completes (the peer path would have: see
 * test_dev_peer.c's verbs_engines_paused); resumed, the engine does it all.
 */
#define KINET_DEV_PEER_PATH 0
#include <unistd.h>

#include "kt_dev.h"

#define BUF (64 * 1024)

KT_TEST(verbs_take_the_engine)
{
	KT_NEED_SOFT("the peer path (device loads and stores; a NIC QP has none)");
	struct kd_opts o;
	struct kd_pair p;
	struct kd_buf a, b; /* a: initiator's, b: target's */
	uint64_t tk[5] = {0}, ready = 0, v = 0x1122334455667788ull;

	setenv("KINET_P2P", "force", 1);
	kd_opts_init(&o);
	o.two_ctx = 1;
	o.sq_depth = 32;
	o.timeout_ms = 5000;
	o.sharing = KINET_SHARE_EXCLUSIVE;
	KT_OK(kd_pair_bufs_create(&p, &o, &a, &b, BUF));
	struct kinet_dev_qp *d = p.s[0].d;
	uint64_t *res = (uint64_t *)(void *)(a.p + 32 * 1024);
	uint64_t *word = (uint64_t *)(void *)(b.p + 32 * 1024);
	KT_CHECK_EQ(kinet_qp_get_path(p.s[0].qp), KINET_QP_PATH_PEER);
	KT_CHECK(d->peer != NULL);

	memset(b.p, 0, BUF);
	kd_pattern(a.p, 4097, 7);
	kd_pattern(b.p + 16 * 1024, 100, 9);
	*word = 40;
	*res = 0;
	for (int i = 0; i < 2; i++)
		KT_OK(kinet_ctx_pause(p.ctx[i]));
	KT_OK(kinet_dev_put(d, a.p, a.key, kd_addr(&b, 0), b.key, 4097, &tk[0]));
	KT_OK(kinet_dev_put_inline(d, &v, 8, kd_addr(&b, 8192), b.key, &tk[1]));
	KT_OK(kinet_dev_get(d, a.p + 16 * 1024, a.key, kd_addr(&b, 16 * 1024), b.key, 100, &tk[2]));
	KT_OK(kinet_dev_fetch_add(d, res, a.key, kd_addr(&b, 32 * 1024), b.key, 2, &tk[3]));
	KT_OK(kinet_dev_signal(d, kd_addr(&b, 32 * 1024 + 8), b.key, 5, &tk[4]));
	KT_OK(kinet_dev_fence(d, &ready));
	/* Posted, not done: the peer path would have finished each on return. */
	usleep(20000);
	KT_CHECK_EQ(kinet_dev_test(d, tk[4]), -EAGAIN);
	KT_CHECK(memcmp(b.p, a.p, 4097) != 0);
	KT_CHECK(memcmp(b.p + 8192, &v, 8) != 0);
	KT_CHECK(memcmp(a.p + 16 * 1024, b.p + 16 * 1024, 100) != 0);
	KT_CHECK_EQ(*word, 40);
	KT_CHECK_EQ(*res, 0);
	KT_CHECK_EQ(word[1], 0);

	for (int i = 0; i < 2; i++)
		KT_OK(kinet_ctx_resume(p.ctx[i]));
	for (int i = 0; i < 5; i++)
		KT_OK(kinet_dev_wait(d, tk[i]));
	KT_OK(kinet_dev_wait(d, ready));
	KT_CHECK(memcmp(b.p, a.p, 4097) == 0);
	KT_CHECK_EQ(b.p[4097], 0);
	KT_CHECK(memcmp(b.p + 8192, &v, 8) == 0);
	KT_CHECK(memcmp(a.p + 16 * 1024, b.p + 16 * 1024, 100) == 0);
	KT_CHECK_EQ(*res, 40);
	KT_CHECK_EQ(*word, 42);
	KT_CHECK_EQ(word[1], 5);
	KT_OK(kinet_dev_quiet(d));
	kd_pair_bufs_destroy(&p, &a, &b);
	unsetenv("KINET_P2P");
}

KT_MAIN(verbs_take_the_engine)
