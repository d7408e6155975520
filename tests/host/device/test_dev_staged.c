/*
 * Device API under host emulation: staged sources (impl/stage.cuh).  A
 * machine without a GPU has no GPU memory, so $KINET_STAGE_ALL=1 makes the
 * export stage every source.  Staged writes deliver the bytes the source
 * held when the write was posted (the probe that tells a staged write from
 * one the engine read at execution), larger ones the bytes it holds when
 * the engine runs; a wrong key, a range outside the region and a malformed
 * staged WQE end in an error CQE with nothing written; staging off leaves
 * the QP without a staging area.
 */
#include "kt_dev.h"

#define GUARD 64

static int open_pair(struct kd_pair *p, enum kinet_db_mode mode, const char *stage_bytes)
{
	struct kd_opts o;
	kd_opts_init(&o);
	o.db_mode = mode;
	o.sq_depth = 16;
	o.timeout_ms = 2000;
	o.two_ctx = 1;
	setenv("KINET_STAGE_ALL", "1", 1);
	setenv("KINET_STAGE_BYTES", stage_bytes, 1);
	int rc = kd_pair_create(p, &o);
	unsetenv("KINET_STAGE_BYTES");
	unsetenv("KINET_STAGE_ALL");
	return rc;
}

/* Pauses (or resumes) both contexts' engines: 0 or the first error. */
static int pause_both(struct kd_pair *p, int pause)
{
	int rc = 0;
	for (int i = 0; i < 2 && !rc; i++)
		rc = pause ? kinet_ctx_pause(p->ctx[i]) : kinet_ctx_resume(p->ctx[i]);
	return rc;
}

/* Every size and source alignment, in every doorbell mode: the staged
 * ones (<= 4096) carry the bytes of posting time, the others those of
 * execution time, and nothing lands past the destination's range. */
KT_TEST(staged_put_delivers_posted_bytes)
{
	static const uint32_t sizes[] = {1, 3, 8, 28, 29, 64, 100, 1000, 4095, 4096, 4097, 9000};
	static const uint32_t offs[] = {0, 1, 4, 8};

	for (int m = 0; m < 3; m++) {
		struct kd_pair p;
		struct kd_buf a, b;
		KT_OK(open_pair(&p, kt_db_modes[m], "4096"));
		struct kinet_dev_qp *d = p.s[0].d;
		KT_CHECK(d->stage != NULL);
		KT_CHECK_EQ(d->stage_bytes, 4096);
		KT_CHECK_EQ(d->stage_key, 0);
		KT_OK(kd_buf_alloc(p.ctx[0], &a, 16384));
		KT_OK(kd_buf_alloc(p.ctx[1], &b, 16384));
		for (size_t si = 0; si < sizeof(sizes) / sizeof(sizes[0]); si++) {
			for (size_t oi = 0; oi < sizeof(offs) / sizeof(offs[0]); oi++) {
				uint32_t n = sizes[si], off = offs[oi];
				uint64_t tk = 0;
				kt_fill_pattern(a.p + off, n, n * 7 + off);
				memset(b.p, 0, n + GUARD);
				KT_OK(pause_both(&p, 1));
				KT_OK(kinet_dev_put(d, a.p + off, a.key, kd_addr(&b, 0), b.key, n, &tk));
				/* Changed after posting, before the engine runs. */
				kt_fill_pattern(a.p + off, n, n * 13 + off + 1);
				KT_OK(pause_both(&p, 0));
				KT_OK(kinet_dev_wait(d, tk));
				uint8_t want[9000];
				kt_fill_pattern(want, n, n <= 4096 ? n * 7 + off : n * 13 + off + 1);
				if (memcmp(b.p, want, n) != 0 || !kt_mem_is(b.p + n, 0, GUARD)) {
					fprintf(stderr, "mode %s size %u offset %u: wrong bytes\n",
						kt_db_names[kt_db_modes[m]], n, off);
					KT_CHECK(0);
				}
			}
		}
		KT_CHECK_EQ(kinet_dev_qp_error(d), 0);
		kd_buf_free(&a);
		kd_buf_free(&b);
		kd_pair_destroy(&p);
	}
}

/* write_imm and put_signal stage their write too. */
KT_TEST(staged_write_imm_and_put_signal)
{
	struct kd_pair p;
	struct kd_buf a, b, rbuf;
	uint64_t tk = 0;
	KT_OK(open_pair(&p, KINET_DB_CPU, "256"));
	struct kinet_dev_qp *d = p.s[0].d, *r = p.s[1].d;
	KT_OK(kd_buf_alloc(p.ctx[0], &a, 4096));
	KT_OK(kd_buf_alloc(p.ctx[1], &b, 4096));
	KT_OK(kd_buf_alloc(p.ctx[1], &rbuf, 64));
	KT_OK(kinet_dev_post_recv(r, rbuf.p, rbuf.key, 64, NULL));

	kt_fill_pattern(a.p, 200, 1);
	KT_OK(pause_both(&p, 1));
	KT_OK(kinet_dev_write_imm(d, a.p, a.key, kd_addr(&b, 0), b.key, 200, 0xabcd, &tk));
	kt_fill_pattern(a.p, 200, 2);
	KT_OK(pause_both(&p, 0));
	KT_OK(kinet_dev_wait(d, tk));
	uint32_t len = 0, imm = 0;
	KT_OK(kinet_dev_recv(r, &len, &imm, NULL));
	KT_CHECK_EQ(imm, 0xabcd);
	uint8_t want[256];
	kt_fill_pattern(want, 200, 1);
	KT_CHECK(memcmp(b.p, want, 200) == 0);

	kt_fill_pattern(a.p, 100, 3);
	KT_OK(pause_both(&p, 1));
	KT_OK(kinet_dev_put_signal(d, a.p, a.key, kd_addr(&b, 1024), b.key, 100, kd_addr(&b, 2048), b.key, 5,
				   &tk));
	kt_fill_pattern(a.p, 100, 4);
	KT_OK(pause_both(&p, 0));
	KT_OK(kinet_dev_wait(d, tk));
	kt_fill_pattern(want, 100, 3);
	KT_CHECK(memcmp(b.p + 1024, want, 100) == 0);
	uint64_t sig;
	memcpy(&sig, b.p + 2048, 8);
	KT_CHECK_EQ(sig, 5);
	kd_buf_free(&a);
	kd_buf_free(&b);
	kd_buf_free(&rbuf);
	kd_pair_destroy(&p);
}

/* A staged write is checked like any: a wrong key, or a source range past
 * its region (the bytes the poster copied exist, the region does not cover
 * them), is LOCAL_PROT_ERR with nothing written. */
KT_TEST(staged_put_checks_the_source)
{
	for (int bad = 0; bad < 2; bad++) {
		struct kd_pair p;
		struct kd_buf b;
		struct kinet_error err;
		struct kinet_mr *mr = NULL;
		uint64_t tk = 0;
		uint8_t *src = aligned_alloc(64, 4096);
		KT_CHECK(src != NULL);
		memset(src, 0x5a, 4096);
		KT_OK(open_pair(&p, KINET_DB_CPU, "256"));
		struct kinet_dev_qp *d = p.s[0].d;
		KT_OK(kinet_mr_reg(p.ctx[0], src, 64, KT_ACC_ALL, &mr));
		KT_OK(kd_buf_alloc(p.ctx[1], &b, 4096));
		uint32_t key = kinet_mr_lkey(mr);
		kinet_ctx_clear_error(p.ctx[0]);
		if (bad == 0)
			KT_OK(kinet_dev_put(d, src, key ^ 0x5500, kd_addr(&b, 0), b.key, 32, &tk));
		else
			KT_OK(kinet_dev_put(d, src + 32, key, kd_addr(&b, 0), b.key, 100, &tk));
		KT_CHECK_EQ(kinet_dev_wait(d, tk), -EIO);
		KT_OK(kinet_ctx_last_error(p.ctx[0], &err));
		KT_CHECK_EQ(err.syndrome, KINET_SYND_LOCAL_PROT_ERR);
		KT_CHECK(kt_mem_is(b.p, 0, 4096));
		kd_buf_free(&b);
		kinet_mr_dereg(mr);
		free(src);
		kd_pair_destroy(&p);
	}
}

/* Staged WQEs the engine must refuse: opmod STAGED on a QP without a
 * staging area (staging off), an opmod it does not know, and a staged
 * write longer than a slot.  Each is LOCAL_QP_OP_ERR, nothing written. */
KT_TEST(staged_wqe_malformed)
{
	struct {
		const char *stage_bytes;
		uint8_t opmod;
		uint32_t size;
	} cases[] = {
		{"0", KINET_WQE_OPMOD_STAGED, 8}, {"256", 0x02, 8}, {"256", KINET_WQE_OPMOD_STAGED, 300}};

	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		struct kd_pair p;
		struct kd_buf a, b;
		struct kinet_error err;
		union kinet_dev_wqe w;
		uint64_t start = 0, q[8];
		KT_OK(open_pair(&p, KINET_DB_CPU, cases[c].stage_bytes));
		struct kinet_dev_qp *d = p.s[0].d;
		KT_CHECK_EQ(d->stage == NULL, cases[c].stage_bytes[0] == '0');
		KT_OK(kd_buf_alloc(p.ctx[0], &a, 4096));
		KT_OK(kd_buf_alloc(p.ctx[1], &b, 4096));
		memset(a.p, 0x77, 4096);
		kinet_ctx_clear_error(p.ctx[0]);
		KT_OK(kinet_dev_sq_reserve(d, 1, &start));
		kinet_dev_wqe_build_rdma(&w, d->qpn, start, KINET_WQE_OP_RDMA_WRITE, KINET_DEV_WQE_SIGNALED,
					 (uint64_t)(uintptr_t)a.p, a.key, kd_addr(&b, 0), b.key,
					 cases[c].size, 0);
		kinet_wqe_set_opmod(&w.rdma.ctrl, cases[c].opmod);
		kinet_dev_wqe_store(d, start, &w);
		kinet_dev_wqe_words(&w, q);
		KT_OK(kinet_dev_sq_commit(d, start, 1, q));
		uint64_t ci = d->send_cq->ci;
		struct kinet_dev_cqe cqe;
		KT_OK(kinet_dev_cq_wait_at(d->send_cq, ci, 5000000000ull, &cqe));
		KT_CHECK(kinet_dev_cqe_is_error(&cqe));
		KT_CHECK_EQ(cqe.syndrome, KINET_SYND_LOCAL_QP_OP_ERR);
		KT_OK(kinet_ctx_last_error(p.ctx[0], &err));
		KT_CHECK_EQ(err.syndrome, KINET_SYND_LOCAL_QP_OP_ERR);
		KT_CHECK(kt_mem_is(b.p, 0, 4096));
		kd_buf_free(&a);
		kd_buf_free(&b);
		kd_pair_destroy(&p);
	}
}

/* The key of GPU memory is what device code looks at; host memory's keys
 * never have the bit, and a zeroed attribute struct of the older layout
 * (no stage_bytes) still creates a QP. */
KT_TEST(staged_key_bit_and_old_layout)
{
	struct kd_pair p;
	struct kd_buf a;
	KT_OK(open_pair(&p, KINET_DB_CPU, "256"));
	for (int i = 0; i < 300; i++) {
		KT_OK(kd_buf_alloc(p.ctx[0], &a, 64));
		KT_CHECK_EQ(a.key & 0x80u, 0);
		KT_CHECK(a.key & 0x7fu);
		kd_buf_free(&a);
	}
	struct kinet_qp_attr qa;
	struct kinet_qp *qp = NULL;
	kinet_qp_attr_init(&qa);
	qa.send_cq = p.s[0].scq;
	qa.size = (uint32_t)offsetof(struct kinet_qp_attr, stage_bytes);
	KT_OK(kinet_qp_create(p.ctx[0], &qa, &qp));
	KT_OK(kinet_qp_destroy(qp));
	qa.size = sizeof(qa);
	qa.stage_bytes = KINET_QP_STAGE_MAX + 1;
	KT_CHECK_EQ(kinet_qp_create(p.ctx[0], &qa, &qp), -EINVAL);
	kd_pair_destroy(&p);
}

KT_MAIN(staged_put_delivers_posted_bytes, staged_write_imm_and_put_signal, staged_put_checks_the_source,
	staged_wqe_malformed, staged_key_bit_and_old_layout)
