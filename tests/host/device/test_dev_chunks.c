/*
 * Device API under host emulation: transfers split into many WQEs and
 * posted in rounds when they need more WQEs than the send queue holds.
 * The per-WQE limit is lowered to 4 KiB so this takes megabytes, not GiBs.
 */
#define KINET_DEV_MAX_WQE_BYTES 4096ull
#include "kt_dev.h"

#define MB (1024 * 1024)

KT_TEST(split_in_rounds)
{
	for (int m = 0; m < 3; m++) {
		struct kd_opts o;
		struct kd_pair p;
		struct kd_buf a, b;
		uint64_t tk = 0;
		kd_opts_init(&o);
		o.sq_depth = 16; /* rounds of 8 WQEs */
		o.db_mode = kt_db_modes[m];
		KT_OK(kd_pair_create(&p, &o));
		struct kinet_dev_qp *d = p.s[0].d, *t = p.s[1].d;
		KT_OK(kd_buf_alloc(p.ctx[0], &a, 2 * MB));
		KT_OK(kd_buf_alloc(p.ctx[1], &b, 2 * MB + 64));

		/* put of 1 MiB + 3 bytes: 257 WQEs */
		size_t n = MB + 3;
		kd_pattern(a.p, n, 3);
		uint64_t before = d->sq_reserved;
		KT_OK(kinet_dev_put(d, a.p, a.key, kd_addr(&b, 0), b.key, n, &tk));
		KT_CHECK_EQ(tk - before, 257);
		int st = kinet_dev_wait(d, tk);
		if (st)
			fprintf(stderr, "put: status %d syndrome 0x%x at WQE %llu\n", st,
				kinet_dev_qp_error(d), (unsigned long long)d->sq_error_idx);
		KT_OK(st);
		KT_CHECK(memcmp(a.p, b.p, n) == 0);
		KT_CHECK_EQ(b.p[n], 0);

		/* get it back */
		memset(a.p + MB, 0, MB);
		KT_OK(kinet_dev_get_block(d, a.p + MB, a.key, kd_addr(&b, 4095), b.key, MB - 1, &tk));
		KT_OK(kinet_dev_wait(d, tk));
		KT_CHECK(memcmp(a.p + MB, b.p + 4095, MB - 1) == 0);

		/* put_signal: the signal comes after the last chunk */
		uint64_t *sig = (uint64_t *)(void *)(b.p + 2 * MB);
		kd_pattern(a.p, 300000, 4);
		KT_OK(kinet_dev_put_signal_warp(d, a.p, a.key, kd_addr(&b, 0), b.key, 300000,
						kd_addr(&b, 2 * MB), b.key, 1, &tk));
		KT_OK(kinet_dev_signal_wait_until(t, sig, KINET_DEV_CMP_EQ, 1, NULL));
		KT_CHECK(memcmp(a.p, b.p, 300000) == 0);
		KT_OK(kinet_dev_wait(d, tk));

		/* write_imm: one receive consumed, by the last chunk */
		uint64_t ridx;
		uint32_t len = 0, imm = 0;
		KT_OK(kinet_dev_post_recv(t, b.p, b.key, 16, &ridx));
		kd_pattern(a.p, 10000, 5);
		KT_OK(kinet_dev_write_imm(d, a.p, a.key, kd_addr(&b, 64), b.key, 10000, 0xfeed, &tk));
		KT_OK(kinet_dev_recv(t, &len, &imm, NULL));
		KT_CHECK_EQ(imm, 0xfeed);
		KT_CHECK_EQ(len, 10000 - 2 * 4096); /* the byte count of the WQE that carried it */
		KT_CHECK(memcmp(a.p, b.p + 64, 10000) == 0);
		KT_CHECK_EQ(kinet_dev_rq_poll(t, &len, &imm, NULL), -EAGAIN);

		KT_OK(kinet_dev_quiet(d));
		printf("  %s: ok\n", kt_db_names[o.db_mode]);
		kd_buf_free(&a);
		kd_buf_free(&b);
		kd_pair_destroy(&p);
	}
}

/* send is one message: larger than the per-WQE limit is EINVAL */
KT_TEST(send_too_large)
{
	struct kd_pair p;
	struct kd_buf a;
	uint64_t tk;
	KT_OK(kd_pair_create(&p, NULL));
	KT_OK(kd_buf_alloc(p.ctx[0], &a, 8192));
	KT_CHECK_EQ(kinet_dev_send(p.s[0].d, a.p, a.key, 4097, &tk), -EINVAL);
	KT_CHECK_EQ(p.s[0].d->sq_reserved, 0);
	kd_buf_free(&a);
	kd_pair_destroy(&p);
}

KT_MAIN(split_in_rounds, send_too_large)
