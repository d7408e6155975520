/*
 * Completion moderation, the completion word and combined doorbells of the
 * high-level device API (device code on CPU threads):
 *  - a batch of puts asks for few CQEs, yet quiet returns only once every
 *    put has landed;
 *  - an error in the middle of a moderated batch is reported with its WQE
 *    index (the engine writes error CQEs whatever the WQE asked for):
 *    earlier tickets complete, later ones fail;
 *  - waits read the completion word, not the CQEs (the test makes the CQE
 *    ring unreadable; a CQE-by-CQE poller would then time out);
 *  - posters of a shared QP ring for each other (every post lands, the
 *    doorbell only grows).
 */
#include "kt_dev.h"

#define MOD 16

static uint32_t cqes_consumed(const struct kinet_dev_qp *d, uint64_t ci0)
{
	return (uint32_t)(d->send_cq->ci - ci0);
}

static void put8(struct kinet_dev_qp *d, const struct kd_buf *dst, int i, uint32_t rkey, uint64_t *tk)
{
	uint64_t v = 1000 + (uint64_t)i;
	KT_OK(kinet_dev_put_inline(d, &v, 8, kd_addr(dst, (size_t)i * 8), rkey, tk));
}

KT_TEST(quiet_covers_unsignaled)
{
	struct kd_opts o;
	struct kd_pair p;
	struct kd_buf a, b;
	uint64_t tk = 0;
	kd_opts_init(&o);
	o.sharing = KINET_SHARE_EXCLUSIVE;
	KT_OK(kd_pair_bufs_create(&p, &o, &a, &b, 64 * 8));
	struct kinet_dev_qp *d = p.s[0].d;
	KT_CHECK_EQ(d->sq_signal_every, (uint32_t)MOD);
	uint64_t ci0 = d->send_cq->ci;

	/* 40 puts, no wait in between: the first finds the queue idle (a
	 * CQE), then only indices 15 and 31 ask; quiet adds one NOP. */
	for (int i = 0; i < 40; i++)
		put8(d, &b, i, b.key, &tk);
	KT_CHECK_EQ(tk, 40u);
	KT_OK(kinet_dev_quiet(d));
	for (int i = 0; i < 40; i++)
		KT_CHECK_EQ(((uint64_t *)(void *)b.p)[i], 1000u + (uint64_t)i);
	KT_CHECK(d->sq_done >= 40);
	KT_CHECK(cqes_consumed(d, ci0) <= 40 / MOD + 2);
	KT_CHECK(cqes_consumed(d, ci0) >= 2);

	/* Waiting on a ticket covered by a later signalled WQE posts
	 * nothing more. */
	uint64_t ready = d->sq_ready, t5 = 0;
	for (int i = 0; i < 20; i++)
		put8(d, &b, i, b.key, i == 5 ? &t5 : &tk);
	KT_OK(kinet_dev_wait(d, t5));
	KT_CHECK_EQ(d->sq_ready, ready + 20); /* index 63 asked: no NOP */
	KT_OK(kinet_dev_quiet(d));
	kd_pair_bufs_destroy(&p, &a, &b);
}

KT_TEST(error_in_moderated_batch)
{
	struct kd_opts o;
	struct kd_pair p;
	struct kd_buf a, b;
	struct kinet_error err;
	uint64_t tk[12];
	kd_opts_init(&o);
	o.sharing = KINET_SHARE_EXCLUSIVE;
	KT_OK(kd_pair_bufs_create(&p, &o, &a, &b, 64 * 8));
	struct kinet_dev_qp *d = p.s[0].d;
	kinet_ctx_clear_error(p.ctx[0]);

	/* Puts 0..11 at WQE indices 0..11; put 7 names a bad rkey.  Only
	 * put 0 (idle queue) and put 7 (error) produce CQEs of their own. */
	for (int i = 0; i < 12; i++)
		put8(d, &b, i, i == 7 ? b.key ^ 0x100u : b.key, &tk[i]);
	KT_CHECK_EQ(kinet_dev_wait(d, tk[11]), -EIO);
	KT_CHECK_EQ(kinet_dev_qp_error(d), (uint32_t)KINET_SYND_REMOTE_ACCESS_ERR);
	KT_CHECK_EQ(d->sq_error_idx, 7u);
	KT_OK(kinet_dev_wait(d, tk[6])); /* before the error: complete */
	KT_CHECK_EQ(kinet_dev_wait(d, tk[7]), -EIO);
	KT_CHECK_EQ(kinet_dev_wait(d, tk[8]), -EIO);
	for (int i = 0; i < 7; i++)
		KT_CHECK_EQ(((uint64_t *)(void *)b.p)[i], 1000u + (uint64_t)i);
	KT_CHECK_EQ(kinet_ctx_last_error(p.ctx[0], &err), 0);
	KT_CHECK_EQ(err.status, -EIO);
	KT_CHECK_EQ(err.wqe_counter, 7);
	KT_CHECK_EQ(err.syndrome, KINET_SYND_REMOTE_ACCESS_ERR);
	kd_pair_bufs_destroy(&p, &a, &b);
}

/* The poller learns of completions from the completion word alone: CQEs
 * the engine wrote are made to look unwritten before the device waits. */
KT_TEST(wait_reads_the_word)
{
	struct kd_opts o;
	struct kd_pair p;
	struct kd_buf a, b;
	uint64_t tk = 0;
	kd_opts_init(&o);
	o.sharing = KINET_SHARE_EXCLUSIVE;
	o.timeout_ms = 300;
	KT_OK(kd_pair_bufs_create(&p, &o, &a, &b, 64 * 8));
	struct kinet_dev_qp *d = p.s[0].d;
	struct kinet_dev_cq *cq = d->send_cq;
	KT_CHECK(cq->comp_word != NULL);
	for (int round = 0; round < 3; round++) {
		uint64_t ci = cq->ci, end = kt_now_ms() + 5000;
		put8(d, &b, round, b.key, &tk); /* idle queue: asks for a CQE */
		while (KINET_COMP_COUNT(__atomic_load_n(cq->comp_word, __ATOMIC_ACQUIRE)) !=
			       (uint32_t)ci + 1 &&
		       kt_now_ms() < end)
			;
		struct kinet_cqe64 *c = &cq->cqes[ci & cq->mask];
		__atomic_store_n(&c->op_own, (uint8_t)(KINET_CQE_INVALID << 4), __ATOMIC_RELAXED);
		KT_OK(kinet_dev_wait(d, tk));
		KT_CHECK_EQ(cq->ci, ci + 1);
		KT_CHECK_EQ(((uint64_t *)(void *)b.p)[round], 1000u + (uint64_t)round);
	}
	kd_pair_bufs_destroy(&p, &a, &b);
}

/* Posters of one shared QP: each puts its own words and waits now and
 * then; doorbells are rung for whole runs of written posts. */
#define POSTERS 4
#define PER_POSTER 300
struct shared_args {
	struct kinet_dev_qp *d;
	struct kd_buf *dst;
	uint32_t failed;
};

static void poster(void *arg)
{
	struct shared_args *s = (struct shared_args *)arg;
	uint32_t me = kinet_dev_block_id();
	uint64_t tk = 0;
	for (int i = 0; i < PER_POSTER; i++) {
		uint64_t v = ((uint64_t)me << 32) | (uint64_t)i;
		size_t slot = (size_t)me * PER_POSTER + (size_t)i;
		if (kinet_dev_put_inline(s->d, &v, 8, kd_addr(s->dst, slot * 8), s->dst->key, &tk) ||
		    (i % 50 == 49 && kinet_dev_wait(s->d, tk)))
			__atomic_store_n(&s->failed, 1u, __ATOMIC_RELAXED);
	}
	if (kinet_dev_wait(s->d, tk))
		__atomic_store_n(&s->failed, 1u, __ATOMIC_RELAXED);
}

static void shared(enum kinet_qp_sharing sharing, enum kinet_db_mode db)
{
	struct kd_opts o;
	struct kd_pair p;
	struct kd_buf a, b;
	struct shared_args s;
	kd_opts_init(&o);
	o.sharing = sharing;
	o.db_mode = db;
	KT_OK(kd_pair_bufs_create(&p, &o, &a, &b, POSTERS * PER_POSTER * 8));
	KT_CHECK(p.s[0].d->sq_marks != NULL);
	s.d = p.s[0].d;
	s.dst = &b;
	s.failed = 0;
	KT_OK(kinet_emu_launch(POSTERS, poster, &s));
	KT_CHECK_EQ(s.failed, 0u);
	KT_OK(kinet_dev_quiet(s.d));
	KT_CHECK_EQ(s.d->sq_ready, s.d->sq_reserved);
	for (uint32_t t = 0; t < POSTERS; t++)
		for (int i = 0; i < PER_POSTER; i++)
			KT_CHECK_EQ(((uint64_t *)(void *)b.p)[t * PER_POSTER + (uint32_t)i],
				    ((uint64_t)t << 32) | (uint64_t)i);
	kd_pair_bufs_destroy(&p, &a, &b);
}

KT_TEST(shared_cta_cpu_doorbell)
{
	shared(KINET_SHARE_CTA, KINET_DB_CPU);
}
KT_TEST(shared_gpu_regular_doorbell)
{
	shared(KINET_SHARE_GPU, KINET_DB_GPU);
}
KT_TEST(shared_gpu_blueflame)
{
	shared(KINET_SHARE_GPU, KINET_DB_BF);
}

/* A peer-path QP drains the engine WQEs before it for a peer operation;
 * the last of them may have asked for no CQE: the drain covers it. */
KT_TEST(peer_drain_covers)
{
	struct kd_opts o;
	struct kd_pair p;
	struct kd_buf a, b;
	uint64_t tk = 0, v = 77;
	KT_OK(setenv("KINET_P2P", "force", 1));
	kd_opts_init(&o);
	o.two_ctx = 1;
	o.timeout_ms = 500;
	o.sharing = KINET_SHARE_EXCLUSIVE;
	KT_OK(kd_pair_bufs_create(&p, &o, &a, &b, 4096));
	KT_OK(setenv("KINET_P2P", "off", 1));
	struct kinet_dev_qp *d = p.s[0].d, *t = p.s[1].d;
	KT_CHECK(d->peer != NULL);
	KT_OK(kinet_dev_post_recv(t, b.p, b.key, 64, NULL));
	KT_OK(kinet_dev_post_recv(t, b.p + 64, b.key, 64, NULL));
	/* Sends go to the engine: the first to an idle queue (a CQE), the
	 * second asks for none. */
	KT_OK(kinet_dev_send(d, a.p, a.key, 8, &tk));
	KT_OK(kinet_dev_send(d, a.p + 8, a.key, 8, &tk));
	KT_CHECK_EQ(tk, 2u);
	KT_OK(kinet_dev_put_inline(d, &v, 8, kd_addr(&b, 256), b.key, &tk));
	KT_OK(kinet_dev_wait(d, tk));
	KT_CHECK_EQ(*(uint64_t *)(void *)(b.p + 256), 77u);
	KT_CHECK(d->sq_done >= 2);
	kd_pair_bufs_destroy(&p, &a, &b);
}

/* First: the engine path whatever the default, and the stride the checks
 * assume (exports read them). */
KT_TEST(environment)
{
	KT_OK(setenv("KINET_P2P", "off", 1));
	KT_OK(setenv("KINET_CQ_MODERATION", "16", 1));
}

KT_MAIN(environment, quiet_covers_unsignaled, error_in_moderated_batch, wait_reads_the_word,
	shared_cta_cpu_doorbell, shared_gpu_regular_doorbell, shared_gpu_blueflame, peer_drain_covers)
