/*
 * Device API, high level, one thread, under host emulation: every verb in
 * thread, _warp and _block form (groups of one here), in every doorbell
 * mode, with data checked byte for byte.
 */
#include "kt_dev.h"

#define BUF (256 * 1024)

struct fx {
	struct kd_pair p;
	struct kd_buf a, b; /* a: initiator's, b: target's */
	struct kinet_dev_qp *d, *t;
};

static int fx_open(struct fx *f, enum kinet_db_mode mode)
{
	struct kd_opts o;
	kd_opts_init(&o);
	o.db_mode = mode;
	o.sq_depth = 32;
	int rc = kd_pair_bufs_create(&f->p, &o, &f->a, &f->b, BUF);
	f->d = f->p.s[0].d;
	f->t = f->p.s[1].d;
	return rc;
}

static void fx_close(struct fx *f)
{
	kd_pair_bufs_destroy(&f->p, &f->a, &f->b);
}

/* The forms as function pointers, to run each case three times. */
typedef int (*put_fn)(struct kinet_dev_qp *, const void *, uint32_t, uint64_t, uint32_t, uint64_t,
		      uint64_t *);
static const put_fn puts_[3] = {kinet_dev_put, kinet_dev_put_warp, kinet_dev_put_block};
typedef int (*get_fn)(struct kinet_dev_qp *, void *, uint32_t, uint64_t, uint32_t, uint64_t, uint64_t *);
static const get_fn gets_[3] = {kinet_dev_get, kinet_dev_get_warp, kinet_dev_get_block};

static void verbs(enum kinet_db_mode mode)
{
	struct fx f;
	uint64_t tk = 0, tk2 = 0;
	KT_OK(fx_open(&f, mode));
	struct kinet_dev_qp *d = f.d, *t = f.t;
	struct kd_buf *a = &f.a, *b = &f.b;

	for (int form = 0; form < 3; form++) {
		/* put, several sizes (1 B .. 100 KiB), then get them back */
		size_t sizes[4] = {1, 63, 4097, 100000};
		memset(b->p, 0, BUF);
		for (int i = 0; i < 4; i++) {
			kd_pattern(a->p, sizes[i], (uint32_t)(i + 10 * form));
			KT_OK(puts_[form](d, a->p, a->key, kd_addr(b, 4096), b->key, sizes[i], &tk));
			KT_CHECK(tk != 0);
			KT_OK(kinet_dev_wait(d, tk));
			KT_CHECK(memcmp(a->p, b->p + 4096, sizes[i]) == 0);
			KT_CHECK(b->p[4096 + sizes[i]] == 0 || i < 3);
			memset(a->p + 128 * 1024, 0, sizes[i]);
			KT_OK(gets_[form](d, a->p + 128 * 1024, a->key, kd_addr(b, 4096), b->key, sizes[i],
					  &tk));
			KT_OK(kinet_dev_wait(d, tk));
			KT_CHECK(memcmp(a->p + 128 * 1024, a->p, sizes[i]) == 0);
		}
		/* zero bytes: nothing posted, ticket 0, already complete */
		KT_OK(puts_[form](d, a->p, a->key, kd_addr(b, 0), b->key, 0, &tk));
		KT_CHECK_EQ(tk, 0);
		KT_OK(kinet_dev_wait(d, 0));
	}

	/* put_inline: up to 28 bytes; data need not be registered */
	{
		uint8_t local[28];
		for (int i = 0; i < 28; i++)
			local[i] = (uint8_t)(0xc0 + i);
		KT_OK(kinet_dev_put_inline(d, local, 28, kd_addr(b, 64), b->key, &tk));
		KT_OK(kinet_dev_put_inline_warp(d, local, 5, kd_addr(b, 128), b->key, &tk2));
		KT_OK(kinet_dev_put_inline_block(d, local + 10, 3, kd_addr(b, 192), b->key, &tk2));
		KT_CHECK(tk2 > tk);
		KT_OK(kinet_dev_wait(d, tk2));
		KT_CHECK(memcmp(b->p + 64, local, 28) == 0);
		KT_CHECK(memcmp(b->p + 128, local, 5) == 0);
		KT_CHECK(memcmp(b->p + 192, local + 10, 3) == 0);
		KT_CHECK_EQ(kinet_dev_put_inline(d, local, 29, kd_addr(b, 64), b->key, &tk), -EINVAL);
	}

	/* fetch_add / compare_swap in the three forms */
	{
		uint64_t *tgt = (uint64_t *)(void *)(b->p + 8192);
		uint64_t *res = (uint64_t *)(void *)(a->p + 8192);
		*tgt = 1000;
		KT_OK(kinet_dev_fetch_add(d, &res[0], a->key, kd_addr(b, 8192), b->key, 1, &tk));
		KT_OK(kinet_dev_fetch_add_warp(d, &res[1], a->key, kd_addr(b, 8192), b->key, 10, &tk));
		KT_OK(kinet_dev_fetch_add_block(d, &res[2], a->key, kd_addr(b, 8192), b->key, 100, &tk));
		KT_OK(kinet_dev_compare_swap(d, &res[3], a->key, kd_addr(b, 8192), b->key, 1111, 7, &tk));
		KT_OK(kinet_dev_compare_swap_warp(d, &res[4], a->key, kd_addr(b, 8192), b->key, 1111, 8,
						  &tk));
		KT_OK(kinet_dev_compare_swap_block(d, &res[5], a->key, kd_addr(b, 8192), b->key, 7, 9, &tk));
		KT_OK(kinet_dev_wait(d, tk));
		KT_CHECK_EQ(res[0], 1000);
		KT_CHECK_EQ(res[1], 1001);
		KT_CHECK_EQ(res[2], 1011);
		KT_CHECK_EQ(res[3], 1111); /* hit: 1111 -> 7 */
		KT_CHECK_EQ(res[4], 7);	   /* miss */
		KT_CHECK_EQ(res[5], 7);	   /* hit: 7 -> 9 */
		KT_CHECK_EQ(*tgt, 9);
	}

	/* signal and put_signal, with signal_wait_until on the target word */
	{
		uint64_t *sig = (uint64_t *)(void *)(b->p + 16384);
		uint64_t seen = 0;
		*sig = 0;
		KT_OK(kinet_dev_signal(d, kd_addr(b, 16384), b->key, 1, &tk));
		KT_OK(kinet_dev_signal_warp(d, kd_addr(b, 16384), b->key, 2, &tk));
		KT_OK(kinet_dev_signal_block(d, kd_addr(b, 16384), b->key, 3, &tk));
		KT_OK(kinet_dev_signal_wait_until(t, sig, KINET_DEV_CMP_EQ, 6, &seen));
		KT_CHECK_EQ(seen, 6);
		KT_OK(kinet_dev_wait(d, tk));
		for (int form = 0; form < 3; form++) {
			size_t n = 50000 + (size_t)form * 7;
			kd_pattern(a->p, n, (uint32_t)(99 + form));
			if (form == 0)
				KT_OK(kinet_dev_put_signal(d, a->p, a->key, kd_addr(b, 32768), b->key, n,
							   kd_addr(b, 16384), b->key, 10, &tk));
			else if (form == 1)
				KT_OK(kinet_dev_put_signal_warp(d, a->p, a->key, kd_addr(b, 32768), b->key, n,
								kd_addr(b, 16384), b->key, 10, &tk));
			else
				KT_OK(kinet_dev_put_signal_block(d, a->p, a->key, kd_addr(b, 32768), b->key,
								 n, kd_addr(b, 16384), b->key, 10, &tk));
			uint64_t want = 16 + 10 * (uint64_t)form;
			if (form == 0)
				KT_OK(kinet_dev_signal_wait_until(t, sig, KINET_DEV_CMP_GE, want, &seen));
			else if (form == 1)
				KT_OK(kinet_dev_signal_wait_until_warp(t, sig, KINET_DEV_CMP_GE, want,
								       &seen));
			else
				KT_OK(kinet_dev_signal_wait_until_block(t, sig, KINET_DEV_CMP_GE, want,
									&seen));
			KT_CHECK_EQ(seen, want);
			/* the data is there once the signal is */
			KT_CHECK(memcmp(a->p, b->p + 32768, n) == 0);
			KT_OK(kinet_dev_wait(d, tk));
		}
		/* every comparison */
		KT_OK(kinet_dev_signal_wait_until(t, sig, KINET_DEV_CMP_NE, 0, NULL));
		KT_OK(kinet_dev_signal_wait_until(t, sig, KINET_DEV_CMP_GT, 35, NULL));
		KT_OK(kinet_dev_signal_wait_until(t, sig, KINET_DEV_CMP_LT, 37, NULL));
		KT_OK(kinet_dev_signal_wait_until(t, sig, KINET_DEV_CMP_LE, 36, NULL));
		KT_OK(kinet_dev_signal_wait_until(NULL, sig, KINET_DEV_CMP_EQ, 36, NULL));
		KT_CHECK_EQ(kinet_dev_signal_wait_until(t, sig, 17, 36, NULL), -EINVAL);
	}

	/* send / send_imm / write_imm against posted receives; recv forms */
	{
		uint64_t ridx[6];
		for (int i = 0; i < 6; i++) {
			if (i % 3 == 0)
				KT_OK(kinet_dev_post_recv(t, b->p + 65536 + 4096 * (size_t)i, b->key, 4096,
							  &ridx[i]));
			else if (i % 3 == 1)
				KT_OK(kinet_dev_post_recv_warp(t, b->p + 65536 + 4096 * (size_t)i, b->key,
							       4096, &ridx[i]));
			else
				KT_OK(kinet_dev_post_recv_block(t, b->p + 65536 + 4096 * (size_t)i, b->key,
								4096, &ridx[i]));
			if (i)
				KT_CHECK_EQ(ridx[i], ridx[i - 1] + 1);
		}
		kd_pattern(a->p, 4096, 5);
		KT_OK(kinet_dev_send(d, a->p, a->key, 1000, &tk));
		KT_OK(kinet_dev_send_warp(d, a->p + 1, a->key, 0, &tk));
		KT_OK(kinet_dev_send_imm(d, a->p + 2, a->key, 4096, 0x11223344, &tk));
		KT_OK(kinet_dev_send_imm_block(d, a->p + 3, a->key, 17, 0x55, &tk));
		KT_OK(kinet_dev_write_imm(d, a->p + 4, a->key, kd_addr(b, 200000), b->key, 3000, 0x77, &tk));
		KT_OK(kinet_dev_write_imm_warp(d, a->p, a->key, kd_addr(b, 210000), b->key, 0, 0x78, &tk));
		KT_OK(kinet_dev_quiet(d));
		uint32_t len, imm;
		uint64_t idx;
		KT_OK(kinet_dev_recv(t, &len, &imm, &idx));
		KT_CHECK_EQ(len, 1000);
		KT_CHECK_EQ(imm, 0);
		KT_CHECK_EQ(idx, ridx[0]);
		KT_CHECK(memcmp(b->p + 65536, a->p, 1000) == 0);
		KT_OK(kinet_dev_recv_warp(t, &len, &imm, &idx));
		KT_CHECK_EQ(len, 0);
		KT_CHECK_EQ(idx, ridx[1]);
		KT_OK(kinet_dev_recv_block(t, &len, &imm, &idx));
		KT_CHECK_EQ(len, 4096);
		KT_CHECK_EQ(imm, 0x11223344);
		KT_CHECK(memcmp(b->p + 65536 + 2 * 4096, a->p + 2, 4096) == 0);
		KT_OK(kinet_dev_recv(t, &len, &imm, &idx));
		KT_CHECK_EQ(len, 17);
		KT_CHECK_EQ(imm, 0x55);
		KT_CHECK_EQ(idx, ridx[3]);
		KT_OK(kinet_dev_recv(t, &len, &imm, NULL));
		KT_CHECK_EQ(len, 3000);
		KT_CHECK_EQ(imm, 0x77);
		KT_CHECK(memcmp(b->p + 200000, a->p + 4, 3000) == 0);
		KT_OK(kinet_dev_recv(t, NULL, &imm, &idx));
		KT_CHECK_EQ(imm, 0x78);
		KT_CHECK_EQ(idx, ridx[5]);
		KT_CHECK_EQ(kinet_dev_rq_poll(t, &len, &imm, &idx), -EAGAIN);

		/* inline sends: 0, 1, 28 and 44 bytes from an unregistered
		 * stack buffer overwritten at once; 45 is refused */
		uint8_t src[48];
		static const uint32_t sizes[4] = {0, 1, 28, KINET_DEV_MAX_SEND_INLINE};
		for (int i = 0; i < 4; i++)
			KT_OK(kinet_dev_post_recv(t, b->p + 65536 + 4096 * (size_t)i, b->key, 4096,
						  &ridx[i]));
		for (int i = 0; i < 4; i++) {
			for (int k = 0; k < 48; k++)
				src[k] = (uint8_t)(i * 40 + k);
			if (i == 1)
				KT_OK(kinet_dev_send_inline_warp(d, src, sizes[i], &tk));
			else if (i == 3)
				KT_OK(kinet_dev_send_imm_inline_block(d, src, sizes[i], 0xabc, &tk));
			else
				KT_OK(kinet_dev_send_imm_inline(d, src, sizes[i], 0x100u + (uint32_t)i, &tk));
			memset(src, 0xee, sizeof(src));
		}
		KT_CHECK_EQ(kinet_dev_send_inline(d, src, KINET_DEV_MAX_SEND_INLINE + 1, &tk), -EINVAL);
		KT_OK(kinet_dev_quiet(d));
		for (int i = 0; i < 4; i++) {
			KT_OK(kinet_dev_recv(t, &len, &imm, &idx));
			KT_CHECK_EQ(len, sizes[i]);
			KT_CHECK_EQ(idx, ridx[i]);
			KT_CHECK_EQ(imm, i == 1 ? 0 : i == 3 ? 0xabc : 0x100u + (uint32_t)i);
			for (uint32_t k = 0; k < sizes[i]; k++)
				KT_CHECK_EQ(b->p[65536 + 4096 * (size_t)i + k], (uint8_t)(i * 40 + (int)k));
		}
	}

	/* fence, wait/quiet forms, test */
	{
		uint64_t *res = (uint64_t *)(void *)(a->p + 9000 - 9000 % 8);
		KT_OK(kinet_dev_fetch_add(d, res, a->key, kd_addr(b, 8192), b->key, 1, &tk));
		KT_OK(kinet_dev_fence(d, &tk2));
		KT_CHECK_EQ(tk2, tk + 1);
		KT_OK(kinet_dev_fence_warp(d, &tk2));
		KT_OK(kinet_dev_fence_block(d, NULL));
		KT_OK(kinet_dev_wait_warp(d, tk2));
		KT_OK(kinet_dev_wait_block(d, tk2));
		KT_OK(kinet_dev_quiet_warp(d));
		KT_OK(kinet_dev_quiet_block(d));
		KT_OK(kinet_dev_test(d, tk2));
		KT_CHECK_EQ(*res, 9);
		KT_CHECK_EQ(d->sq_done, d->sq_ready);
		KT_CHECK_EQ(d->sq_ready, d->sq_reserved);
		KT_CHECK_EQ(kinet_dev_qp_error(d), 0);
	}
	fx_close(&f);
}

KT_TEST(verbs_db_cpu)
{
	verbs(KINET_DB_CPU);
}

KT_TEST(verbs_db_gpu)
{
	verbs(KINET_DB_GPU);
}

KT_TEST(verbs_db_bf)
{
	verbs(KINET_DB_BF);
}

/* Many tickets in flight on a small queue: posting blocks for room, making
 * progress itself, and no ticket is lost. */
KT_TEST(tickets_small_queue)
{
	struct kd_opts o;
	struct kd_pair p;
	struct kd_buf a, b;
	uint64_t tk[200];
	kd_opts_init(&o);
	o.sq_depth = 4;
	KT_OK(kd_pair_create(&p, &o));
	KT_OK(kd_buf_alloc(p.ctx[0], &a, 200 * 8));
	KT_OK(kd_buf_alloc(p.ctx[0], &b, 8));
	struct kinet_dev_qp *d = p.s[0].d;
	for (int i = 0; i < 200; i++) {
		KT_OK(kinet_dev_fetch_add(d, (uint64_t *)(void *)(a.p + 8 * i), a.key, kd_addr(&b, 0), b.key,
					  1, &tk[i]));
		if (i)
			KT_CHECK_EQ(tk[i], tk[i - 1] + 1);
	}
	for (int i = 0; i < 200; i++)
		KT_OK(kinet_dev_wait(d, tk[i]));
	for (int i = 0; i < 200; i++)
		KT_CHECK_EQ(((uint64_t *)(void *)a.p)[i], (uint64_t)i);
	kd_buf_free(&a);
	kd_buf_free(&b);
	kd_pair_destroy(&p);
}

KT_MAIN(verbs_db_cpu, verbs_db_gpu, verbs_db_bf, tickets_small_queue)
