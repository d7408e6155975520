/*
 * The peer path under host emulation: two host-only contexts of one process
 * with KINET_P2P=force, so device code (CPU threads here) moves data with
 * its own loads, stores and atomics on the target's memory.  Pausing both
 * engines proves an operation took the peer path (the engine could not
 * have done it); the same operations with KINET_P2P=off give the engine's
 * results, which the peer path must match, errors included.
 */
#include "kt_dev.h"

#define BUF (256 * 1024)

struct fx {
	struct kd_pair p;
	struct kd_buf a, b; /* a: initiator's, b: target's */
	struct kinet_dev_qp *d;
};

static int fx_open(struct fx *f, const char *p2p, uint32_t timeout_ms, enum kinet_qp_sharing sharing)
{
	struct kd_opts o;
	int rc;

	setenv("KINET_P2P", p2p, 1);
	kd_opts_init(&o);
	o.two_ctx = 1;
	o.sq_depth = 32;
	o.timeout_ms = timeout_ms;
	o.sharing = sharing;
	memset(f, 0, sizeof(*f));
	/* The buffers are registered after export: their windows come from
	 * registration, not from the table built at attach. */
	rc = kd_pair_bufs_create(&f->p, &o, &f->a, &f->b, BUF);
	f->d = f->p.s[0].d;
	return rc;
}

static void fx_close(struct fx *f)
{
	kd_pair_bufs_destroy(&f->p, &f->a, &f->b);
	unsetenv("KINET_P2P");
}

static void fx_pause(struct fx *f, int pause)
{
	for (int i = 0; i < 2; i++)
		KT_OK(pause ? kinet_ctx_pause(f->p.ctx[i]) : kinet_ctx_resume(f->p.ctx[i]));
}

typedef int (*put_fn)(struct kinet_dev_qp *, const void *, uint32_t, uint64_t, uint32_t, uint64_t,
		      uint64_t *);
static const put_fn puts_[3] = {kinet_dev_put, kinet_dev_put_warp, kinet_dev_put_block};
typedef int (*get_fn)(struct kinet_dev_qp *, void *, uint32_t, uint64_t, uint32_t, uint64_t, uint64_t *);
static const get_fn gets_[3] = {kinet_dev_get, kinet_dev_get_warp, kinet_dev_get_block};
typedef int (*fa_fn)(struct kinet_dev_qp *, uint64_t *, uint32_t, uint64_t, uint32_t, uint64_t, uint64_t *);
static const fa_fn fas_[3] = {kinet_dev_fetch_add, kinet_dev_fetch_add_warp, kinet_dev_fetch_add_block};
typedef int (*ps_fn)(struct kinet_dev_qp *, const void *, uint32_t, uint64_t, uint32_t, uint64_t, uint64_t,
		     uint32_t, uint64_t, uint64_t *);
static const ps_fn pss_[3] = {kinet_dev_put_signal, kinet_dev_put_signal_warp, kinet_dev_put_signal_block};

/* Both QPs took the peer path (force), and with KINET_P2P=off / auto on
 * host-only contexts they keep the engine. */
KT_TEST(path_selection)
{
	KT_NEED_SOFT("the peer path (device loads and stores; a NIC QP has none)");
	struct fx f;
	KT_OK(fx_open(&f, "force", 2000, KINET_SHARE_GPU));
	KT_CHECK_EQ(kinet_qp_get_path(f.p.s[0].qp), KINET_QP_PATH_PEER);
	KT_CHECK_EQ(kinet_qp_get_path(f.p.s[1].qp), KINET_QP_PATH_PEER);
	KT_CHECK(f.d->peer != NULL);
	KT_CHECK(strcmp(kinet_qp_path_name(KINET_QP_PATH_PEER), "peer") == 0);
	fx_close(&f);
	const char *modes[2] = {"off", "auto"};
	for (int i = 0; i < 2; i++) {
		KT_OK(fx_open(&f, modes[i], 2000, KINET_SHARE_GPU));
		KT_CHECK_EQ(kinet_qp_get_path(f.p.s[0].qp), KINET_QP_PATH_ENGINE);
		KT_CHECK(f.d->peer == NULL);
		KT_CHECK(strcmp(kinet_qp_path_name(KINET_QP_PATH_ENGINE), "engine") == 0);
		fx_close(&f);
	}
}

/* Every verb in every form with both engines paused: only the peer path
 * can complete them.  Data checked byte for byte, old values exact. */
KT_TEST(verbs_engines_paused)
{
	KT_NEED_SOFT("the peer path (device loads and stores; a NIC QP has none)");
	enum kinet_qp_sharing shares[3] = {KINET_SHARE_EXCLUSIVE, KINET_SHARE_CTA, KINET_SHARE_GPU};
	for (int s = 0; s < 3; s++) {
		struct fx f;
		uint64_t tk = 0, old = 0;
		KT_OK(fx_open(&f, "force", 2000, shares[s]));
		struct kinet_dev_qp *d = f.d;
		struct kd_buf *a = &f.a, *b = &f.b;
		uint64_t *res = (uint64_t *)(void *)(a->p + 200 * 1024);
		uint64_t *word = (uint64_t *)(void *)(b->p + 200 * 1024);
		fx_pause(&f, 1);
		for (int form = 0; form < 3; form++) {
			size_t sizes[5] = {1, 8, 63, 4097, 100000};
			for (int i = 0; i < 5; i++) {
				memset(b->p, 0, 128 * 1024);
				kd_pattern(a->p, sizes[i], (uint32_t)(i + 10 * form + 100 * s));
				KT_OK(puts_[form](d, a->p, a->key, kd_addr(b, 4096 + i), b->key, sizes[i],
						  &tk));
				KT_OK(kinet_dev_wait(d, tk));
				KT_CHECK(memcmp(a->p, b->p + 4096 + i, sizes[i]) == 0);
				KT_CHECK_EQ(b->p[4096 + i + sizes[i]], 0);
				KT_CHECK_EQ(b->p[4095 + i], 0);
				memset(a->p + 128 * 1024, 0, sizes[i]);
				KT_OK(gets_[form](d, a->p + 128 * 1024, a->key, kd_addr(b, 4096 + i), b->key,
						  sizes[i], &tk));
				KT_OK(kinet_dev_wait(d, tk));
				KT_CHECK(memcmp(a->p + 128 * 1024, a->p, sizes[i]) == 0);
			}
			*word = 40;
			KT_OK(fas_[form](d, res, a->key, kd_addr(b, 200 * 1024), b->key, 2, &tk));
			KT_OK(kinet_dev_wait(d, tk));
			KT_CHECK_EQ(*res, 40);
			KT_CHECK_EQ(*word, 42);
			KT_OK(kinet_dev_compare_swap(d, res, a->key, kd_addr(b, 200 * 1024), b->key, 41, 7,
						     &tk));
			KT_CHECK_EQ(*res, 42); /* failed compare: unchanged, old value back */
			KT_CHECK_EQ(*word, 42);
			KT_OK(kinet_dev_compare_swap_block(d, res, a->key, kd_addr(b, 200 * 1024), b->key, 42,
							   7, &tk));
			KT_CHECK_EQ(*res, 42);
			KT_CHECK_EQ(*word, 7);
			/* put_inline: unregistered data */
			uint64_t v = 0x1122334455667788ull + (uint64_t)form;
			KT_OK(kinet_dev_put_inline(d, &v, 8, kd_addr(b, 64), b->key, &tk));
			KT_OK(kinet_dev_quiet(d));
			KT_CHECK(memcmp(b->p + 64, &v, 8) == 0);
			KT_OK(kinet_dev_put_inline_warp(d, "abc", 3, kd_addr(b, 77), b->key, NULL));
			KT_OK(kinet_dev_quiet_block(d));
			KT_CHECK(memcmp(b->p + 77, "abc", 3) == 0);
			/* put_signal and signal: data, then the signal */
			*word = 0;
			kd_pattern(a->p, 5000, (uint32_t)form + 77);
			KT_OK(pss_[form](d, a->p, a->key, kd_addr(b, 8192), b->key, 5000,
					 kd_addr(b, 200 * 1024), b->key, 3, &tk));
			KT_OK(kinet_dev_signal_wait_until(f.p.s[1].d, word, KINET_DEV_CMP_EQ, 3, &old));
			KT_CHECK(memcmp(b->p + 8192, a->p, 5000) == 0);
			KT_OK(kinet_dev_signal(d, kd_addr(b, 200 * 1024), b->key, 4, NULL));
			KT_CHECK_EQ(*word, 7);
			KT_OK(kinet_dev_fence(d, &tk));
			KT_OK(kinet_dev_wait(d, tk));
		}
		fx_pause(&f, 0);
		fx_close(&f);
	}
}

/* Protection: a wrong key, a range outside the region and a missing right
 * each fail exactly as on the engine path (EIO, same syndrome in the
 * context's record), and nothing outside the region changes. */
static void bad_ops(const char *p2p, uint8_t synd[3], int path)
{
	for (int c = 0; c < 3; c++) {
		struct fx f;
		struct kinet_error err;
		struct kinet_mr *ro = NULL;
		uint64_t tk = 0;
		KT_OK(fx_open(&f, p2p, 1000, KINET_SHARE_GPU));
		KT_CHECK_EQ(kinet_qp_get_path(f.p.s[0].qp), path);
		/* a second target region without REMOTE_WRITE */
		KT_OK(kinet_mr_reg(f.p.ctx[1], f.b.p + 128 * 1024, 4096, KINET_ACCESS_REMOTE_READ, &ro));
		memset(f.b.p, 0x5a, BUF);
		memset(f.a.p, 0xa5, BUF);
		kinet_ctx_clear_error(f.p.ctx[0]);
		if (c == 0)
			KT_OK(kinet_dev_put(f.d, f.a.p, f.a.key, kd_addr(&f.b, 0), f.b.key ^ 0x100, 64, &tk));
		else if (c == 1)
			KT_OK(kinet_dev_put(f.d, f.a.p, f.a.key, kd_addr(&f.b, BUF - 32), f.b.key, 64, &tk));
		else
			KT_OK(kinet_dev_put(f.d, f.a.p, f.a.key, kd_addr(&f.b, 128 * 1024), kinet_mr_rkey(ro),
					    64, &tk));
		KT_CHECK_EQ(kinet_dev_wait(f.d, tk), -EIO);
		KT_OK(kinet_ctx_last_error(f.p.ctx[0], &err));
		KT_CHECK_EQ(err.status, -EIO);
		synd[c] = err.syndrome;
		KT_CHECK(err.syndrome != 0);
		for (size_t i = 0; i < BUF; i++)
			if (f.b.p[i] != 0x5a) {
				KT_CHECK_EQ(f.b.p[i], 0x5a);
				break;
			}
		/* the QP is in error now, on both paths: later work fails */
		KT_CHECK_EQ(kinet_dev_put(f.d, f.a.p, f.a.key, kd_addr(&f.b, 0), f.b.key, 8, &tk), -EIO);
		KT_OK(kinet_mr_dereg(ro));
		fx_close(&f);
	}
}

KT_TEST(protection_same_as_engine)
{
	KT_NEED_SOFT("the peer path (device loads and stores; a NIC QP has none)");
	uint8_t peer[3] = {0}, engine[3] = {0};
	bad_ops("off", engine, KINET_QP_PATH_ENGINE);
	bad_ops("force", peer, KINET_QP_PATH_PEER);
	for (int c = 0; c < 3; c++)
		KT_CHECK_EQ(peer[c], engine[c]);
	KT_CHECK_EQ(engine[0], KINET_SYND_REMOTE_ACCESS_ERR);
}

/* Regions registered after export get windows (paused engines still
 * complete them); deregistered ones lose them: the old key then fails
 * through the engine and the memory stays untouched. */
KT_TEST(windows_follow_registration)
{
	KT_NEED_SOFT("the peer path (device loads and stores; a NIC QP has none)");
	struct fx f;
	struct kinet_mr *late = NULL;
	uint64_t tk = 0, v = 99;
	uint8_t *mem = (uint8_t *)aligned_alloc(64, 4096);
	KT_CHECK(mem != NULL);
	memset(mem, 0, 4096);
	KT_OK(fx_open(&f, "force", 1000, KINET_SHARE_GPU));
	KT_OK(kinet_mr_reg(f.p.ctx[1], mem, 4096, KT_ACC_ALL, &late));
	uint32_t key = kinet_mr_rkey(late);
	fx_pause(&f, 1);
	KT_OK(kinet_dev_put_inline(f.d, &v, 8, (uint64_t)(uintptr_t)(mem + 8), key, &tk));
	KT_OK(kinet_dev_wait(f.d, tk));
	KT_CHECK_EQ(*(uint64_t *)(void *)(mem + 8), 99);
	fx_pause(&f, 0);
	KT_OK(kinet_mr_dereg(late));
	v = 100;
	KT_OK(kinet_dev_put_inline(f.d, &v, 8, (uint64_t)(uintptr_t)(mem + 8), key, &tk));
	KT_CHECK_EQ(kinet_dev_wait(f.d, tk), -EIO);
	KT_CHECK_EQ(*(uint64_t *)(void *)(mem + 8), 99);
	fx_close(&f);
	free(mem);
}

/* Window records as device code reads them: a key in any slot is found,
 * key 0 names nothing, and a record read half-written (live or length
 * still zero: device code reads early slots before their keys) misses. */
KT_TEST(window_records)
{
	static struct kinet_dev_window_table t;
	uint32_t first[4];
	uint8_t *ptr = NULL;
	memset(&t, 0, sizeof(t));
	for (uint32_t i = 0; i < 9; i++) {
		t.win[i].addr = 0x10000 * (i + 1);
		t.win[i].length = 0x1000;
		t.win[i].delta = 0x100;
		t.win[i].access = KINET_ACCESS_REMOTE_WRITE;
		t.win[i].live = 1;
		t.key[i] = 100 + i;
	}
	t.count = 9;
	memcpy(first, t.key, sizeof(first));
	for (uint32_t i = 0; i < 9; i++)
		KT_CHECK_EQ(kinet_devi_window_slot(&t, first, 100 + i), (int)i);
	KT_CHECK_EQ(kinet_devi_window_slot(&t, first, 0), -1);
	KT_CHECK_EQ(kinet_devi_window_slot(&t, first, 109), -1); /* beyond count */
	struct kinet_dev_window w;
	kinet_devi_window_read(&t.win[5], &w);
	KT_CHECK_EQ(kinet_devi_window_check(&w, 0x60010, 16, KINET_ACCESS_REMOTE_WRITE, &ptr), 0);
	KT_CHECK_EQ((uint64_t)(uintptr_t)ptr, 0x60110);
	KT_CHECK_EQ(kinet_devi_window_check(&w, 0x60ff8, 16, KINET_ACCESS_REMOTE_WRITE, &ptr),
		    KINET_DEVI_PEER_MISS);
	KT_CHECK_EQ(kinet_devi_window_check(&w, 0x60010, 16, KINET_ACCESS_REMOTE_READ, &ptr),
		    KINET_DEVI_PEER_MISS);
	w.live = 0; /* second half not yet written */
	KT_CHECK_EQ(kinet_devi_window_check(&w, 0x60010, 16, KINET_ACCESS_REMOTE_WRITE, &ptr),
		    KINET_DEVI_PEER_MISS);
	kinet_devi_window_read(&t.win[5], &w);
	w.addr = w.length = 0; /* first half not yet written */
	KT_CHECK_EQ(kinet_devi_window_check(&w, 0, 8, 0, &ptr), KINET_DEVI_PEER_MISS);
}

/* Regions in every slot of the target's table, so keys are found both in
 * the slots device code reads early and in later ones, for verbs of one,
 * two and three windows; the engines are paused, so each took the peer
 * path. */
KT_TEST(windows_many_slots)
{
	enum { NREG = 7 };
	struct fx f;
	struct kinet_mr *mr[NREG] = {NULL};
	uint8_t *mem[NREG];
	uint64_t tk = 0, sig = 0;
	KT_OK(fx_open(&f, "force", 1000, KINET_SHARE_EXCLUSIVE));
	for (int i = 0; i < NREG; i++) {
		mem[i] = (uint8_t *)aligned_alloc(64, 4096);
		KT_CHECK(mem[i] != NULL);
		memset(mem[i], 0, 4096);
		KT_OK(kinet_mr_reg(f.p.ctx[1], mem[i], 4096, KT_ACC_ALL, &mr[i]));
	}
	fx_pause(&f, 1);
	for (int i = 0; i < NREG; i++) {
		uint64_t v = 0x5000 + (uint64_t)i, *old = (uint64_t *)(void *)(f.a.p + 8192);
		uint32_t key = kinet_mr_rkey(mr[i]);
		KT_OK(kinet_dev_put_inline(f.d, &v, 8, (uint64_t)(uintptr_t)(mem[i] + 8), key, &tk));
		kd_pattern(f.a.p, 256, (uint32_t)i);
		KT_OK(kinet_dev_put(f.d, f.a.p, f.a.key, (uint64_t)(uintptr_t)(mem[i] + 64), key, 256, &tk));
		KT_OK(kinet_dev_put_signal(f.d, f.a.p, f.a.key, (uint64_t)(uintptr_t)(mem[i] + 512), key, 256,
					   (uint64_t)(uintptr_t)(mem[(i + 3) % NREG] + 16),
					   kinet_mr_rkey(mr[(i + 3) % NREG]), 1, &tk));
		*old = 77;
		KT_OK(kinet_dev_fetch_add(f.d, old, f.a.key, (uint64_t)(uintptr_t)(mem[i] + 24), key, 5,
					  &tk));
		KT_OK(kinet_dev_quiet(f.d));
		KT_CHECK_EQ(*(uint64_t *)(void *)(mem[i] + 8), v);
		KT_CHECK(memcmp(mem[i] + 64, f.a.p, 256) == 0);
		KT_CHECK(memcmp(mem[i] + 512, f.a.p, 256) == 0);
		KT_CHECK_EQ(*(uint64_t *)(void *)(mem[i] + 24), 5);
		KT_CHECK_EQ(*old, 0);
	}
	for (int i = 0; i < NREG; i++)
		sig += *(uint64_t *)(void *)(mem[i] + 16);
	KT_CHECK_EQ(sig, NREG);
	fx_pause(&f, 0);
	for (int i = 0; i < NREG; i++) {
		KT_OK(kinet_mr_dereg(mr[i]));
		free(mem[i]);
	}
	fx_close(&f);
}

struct resume_arg {
	struct fx *f;
	int ms;
};

static void *resume_later(void *p)
{
	struct resume_arg *r = (struct resume_arg *)p;
	struct timespec ts = {0, (long)r->ms * 1000000L};
	nanosleep(&ts, NULL);
	for (int i = 0; i < 2; i++)
		kinet_ctx_resume(r->f->p.ctx[i]);
	return NULL;
}

/* One QP, both paths: a WQE posted with the low-level API (engine) and a
 * peer put right after it to the same bytes.  The put waits for the WQE
 * (engines paused for 100 ms meanwhile), so its bytes win. */
KT_TEST(order_engine_then_peer)
{
	KT_NEED_SOFT("the peer path (device loads and stores; a NIC QP has none)");
	struct fx f;
	struct resume_arg r;
	pthread_t t;
	uint64_t idx = 0, tk = 0;
	KT_OK(fx_open(&f, "force", 3000, KINET_SHARE_GPU));
	struct kinet_dev_qp *d = f.d;
	memset(f.a.p, 1, 4096);	       /* what the WQE writes */
	memset(f.a.p + 4096, 2, 4096); /* what the peer put writes */
	fx_pause(&f, 1);
	KT_OK(kinet_dev_sq_reserve(d, 1, &idx));
	kinet_dev_wqe_prep_write(d, idx, KINET_DEV_WQE_SIGNALED, f.a.p, f.a.key, kd_addr(&f.b, 0), f.b.key,
				 4096);
	KT_OK(kinet_dev_sq_commit(d, idx, 1, NULL));
	r.f = &f;
	r.ms = 100;
	KT_OK(pthread_create(&t, NULL, resume_later, &r));
	uint64_t t0 = kt_now_ms();
	KT_OK(kinet_dev_put(d, f.a.p + 4096, f.a.key, kd_addr(&f.b, 0), f.b.key, 4096, &tk));
	KT_CHECK(kt_now_ms() - t0 >= 80);
	KT_CHECK(tk >= idx + 1);
	KT_OK(kinet_dev_quiet(d));
	pthread_join(t, NULL);
	for (int i = 0; i < 4096; i++)
		if (f.b.p[i] != 2) {
			KT_CHECK_EQ(f.b.p[i], 2);
			break;
		}
	fx_close(&f);
}

/* Threads hammering one peer QP with fetch_add: exact sum, every old value
 * seen once. */
#define HAMMER_THREADS 8
#define HAMMER_OPS 2000
struct hammer_arg {
	struct fx *f;
	int id;
	int failed;
};

static void *hammer(void *p)
{
	struct hammer_arg *h = (struct hammer_arg *)p;
	struct fx *f = h->f;
	uint64_t *res = (uint64_t *)(void *)(f->a.p + 8 * HAMMER_OPS * h->id);
	for (int i = 0; i < HAMMER_OPS; i++)
		h->failed |=
			kinet_dev_fetch_add(f->d, &res[i], f->a.key, kd_addr(&f->b, 0), f->b.key, 1, NULL);
	return NULL;
}

KT_TEST(atomics_hammer)
{
	KT_NEED_SOFT("the peer path (device loads and stores; a NIC QP has none)");
	struct fx f;
	pthread_t t[HAMMER_THREADS];
	struct hammer_arg h[HAMMER_THREADS];
	KT_OK(fx_open(&f, "force", 3000, KINET_SHARE_GPU));
	fx_pause(&f, 1);
	for (int i = 0; i < HAMMER_THREADS; i++) {
		h[i] = (struct hammer_arg){&f, i, 0};
		KT_OK(pthread_create(&t[i], NULL, hammer, &h[i]));
	}
	for (int i = 0; i < HAMMER_THREADS; i++) {
		pthread_join(t[i], NULL);
		KT_CHECK_EQ(h[i].failed, 0);
	}
	KT_CHECK_EQ(*(uint64_t *)(void *)f.b.p, (uint64_t)HAMMER_THREADS * HAMMER_OPS);
	uint8_t *seen = (uint8_t *)calloc(HAMMER_THREADS * HAMMER_OPS, 1);
	const uint64_t *res = (const uint64_t *)(void *)f.a.p;
	int dup = 0;
	for (int i = 0; i < HAMMER_THREADS * HAMMER_OPS; i++) {
		if (res[i] >= HAMMER_THREADS * HAMMER_OPS || seen[res[i]]++)
			dup++;
	}
	KT_CHECK_EQ(dup, 0);
	free(seen);
	fx_pause(&f, 0);
	fx_close(&f);
}

/* The target's context closes under a peer QP: its windows are revoked
 * first, so the next put goes to the engine and fails (bounded), never
 * touching freed memory. */
KT_TEST(target_context_closed)
{
	KT_NEED_SOFT("the peer path (device loads and stores; a NIC QP has none)");
	struct fx f;
	uint64_t tk = 0, v = 5;
	KT_OK(fx_open(&f, "force", 300, KINET_SHARE_GPU));
	uint64_t raddr = kd_addr(&f.b, 0);
	uint32_t rkey = f.b.key;
	kd_buf_free(&f.b);
	kinet_qp_destroy(f.p.s[1].qp);
	f.p.s[1].qp = NULL;
	kinet_ctx_close(f.p.ctx[1]);
	f.p.ctx[1] = NULL;
	f.p.nctx = 1;
	int st = kinet_dev_put_inline(f.d, &v, 8, raddr, rkey, &tk);
	if (!st)
		st = kinet_dev_wait(f.d, tk);
	KT_CHECK(st == -EIO || st == -ETIMEDOUT);
	/* f.p.s[1] CQs belonged to the closed context */
	f.p.s[1].scq = f.p.s[1].rcq = NULL;
	fx_close(&f);
}

KT_MAIN(path_selection, verbs_engines_paused, protection_same_as_engine, windows_follow_registration,
	window_records, windows_many_slots, order_engine_then_peer, atomics_hammer, target_context_closed)
