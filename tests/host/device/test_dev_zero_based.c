/*
 * Zero-based regions through the device API under host emulation, on QPs
 * that took the peer path (KINET_P2P=force): the peer path's windows are by
 * address, so operations naming a zero-based region by offset go to the
 * engine, which places them at base + offset.  Results are checked byte
 * for byte; an offset past the end fails as on the engine path.
 */
#include "kt_dev.h"

#define LEN 8192

KT_TEST(device_offsets)
{
	struct kd_opts o;
	struct kd_pair p;
	struct kd_buf a, b;
	uint64_t tk;

	setenv("KINET_P2P", "force", 1);
	kd_opts_init(&o);
	o.two_ctx = 1;
	o.timeout_ms = 2000;
	KT_OK(kd_pair_create(&p, &o));
	KT_CHECK_EQ(kinet_qp_get_path(p.s[0].qp), KINET_QP_PATH_PEER);
	struct kinet_dev_qp *d = p.s[0].d;
	/* a: the initiator's plain buffer; b: the target's, zero-based. */
	KT_OK(kd_buf_alloc(p.ctx[0], &a, LEN));
	b.p = (uint8_t *)aligned_alloc(64, LEN);
	KT_CHECK(b.p != NULL);
	memset(b.p, 0, LEN);
	KT_OK(kinet_mr_reg(p.ctx[1], b.p, LEN, KT_ACC_ALL | KINET_ACCESS_ZERO_BASED, &b.mr));
	b.key = kinet_mr_rkey(b.mr);

	kd_pattern(a.p, 3000, 9);
	KT_OK(kinet_dev_put(d, a.p, a.key, 100, b.key, 3000, &tk));
	KT_OK(kinet_dev_wait(d, tk));
	KT_CHECK(memcmp(b.p + 100, a.p, 3000) == 0);
	KT_CHECK_EQ(b.p[99], 0);
	KT_CHECK_EQ(b.p[3100], 0);
	KT_OK(kinet_dev_get(d, a.p + 4096, a.key, 100, b.key, 3000, &tk));
	KT_OK(kinet_dev_wait(d, tk));
	KT_CHECK(memcmp(a.p + 4096, a.p, 3000) == 0);
	uint64_t *res = (uint64_t *)(void *)(a.p + 8000);
	uint64_t *word = (uint64_t *)(void *)(b.p + 8 * 5);
	*word = 10;
	KT_OK(kinet_dev_fetch_add(d, res, a.key, 8 * 5, b.key, 5, &tk));
	KT_OK(kinet_dev_wait(d, tk));
	KT_CHECK_EQ(*res, 10);
	KT_CHECK_EQ(*word, 15);
	KT_OK(kinet_dev_put_signal(d, a.p, a.key, 4000, b.key, 16, 8 * 5, b.key, 1, &tk));
	KT_OK(kinet_dev_wait(d, tk));
	KT_CHECK(memcmp(b.p + 4000, a.p, 16) == 0);
	KT_CHECK_EQ(*word, 16);
	/* Past the end: the remote access error of the engine path. */
	KT_CHECK_EQ(kinet_dev_put(d, a.p, a.key, LEN - 8, b.key, 16, &tk), 0);
	KT_CHECK_EQ(kinet_dev_wait(d, tk), -EIO);
	KT_CHECK_EQ(kinet_dev_qp_error(d), KINET_SYND_REMOTE_ACCESS_ERR);

	kinet_mr_dereg(b.mr);
	free(b.p);
	kd_buf_free(&a);
	kd_pair_destroy(&p);
	unsetenv("KINET_P2P");
}

KT_MAIN(device_offsets)
