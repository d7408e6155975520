/*
 * GPUNetIO's device protocol played by CPU threads against exported
 * GPUNetIO descriptors (host-only context: the descriptors, rings and
 * doorbells are host memory), so CI runs the engine side of "GPUNetIO
 * kernels on kinet" without a GPU.  The poster below does what GPUNetIO's
 * device functions do, step for step: reserve slots with an atomic add
 * and wait for slot i - depth's CQE, build WQEs with its field choices
 * (pre-shifted big-endian QPN/ds words, keys already big-endian, FA's
 * compare = add), mark ready in order, submit per nic_handler (CPU proxy:
 * atomic max of the 64-bit PI; DB: ring, record, ring again; BlueFlame:
 * WQE copy, record, ring), and poll CQE i for WQE i looking at the owner
 * bit only (its sm_90 path) on CQs that never get a consumer index.
 * Counters are WAIT + fetch-add on a companion QP, signals and counters
 * zero-based regions addressed by offset, as NCCL's GIN does.  Every byte
 * and every count is checked.  The real headers on a GPU:
 * tests/gpu/test_gpunetio.cu.
 */
#include "kt_host.h"

#include "kinet/gpunetio.h"

#define THREADS 3
#define ITERS 300
#define SLOT 256 /* bytes of each thread's put / get area */
#define ZB (KT_ACC_ALL | KINET_ACCESS_ZERO_BASED)

enum emu_submit { EMU_PROXY, EMU_DB, EMU_BF };

/* ---- the poster: GPUNetIO's device protocol in C ---- */

static void emu_relax(unsigned *n)
{
	if (++*n > 64)
		sched_yield();
}

/* Waits for CQE `index` (owner bit of its pass); 0, or -EIO for an error
 * CQE, -ETIMEDOUT after 10 s (a test must not hang).  Several threads poll
 * the CQ: between this thread's load of cqe_ci and of the slot, others may
 * consume CQE `index` and two more laps may complete, so the slot can hold
 * CQE index + 2 depth, whose owner bit is index's.  Its counter tells, and
 * cqe_ci read again then says `index` was consumed. */
static int emu_poll_cq_at(struct kinet_gpunetio_cq *cq, uint64_t index)
{
	const struct kinet_cqe64 *cqe =
		(const struct kinet_cqe64 *)(void *)cq->cqe_daddr + (index & cq->cqe_mask);
	uint64_t deadline = kt_now_ms() + 10000;
	unsigned spins = 0;
	uint8_t op_own;

	for (;;) {
		uint64_t ci = __atomic_load_n(&cq->cqe_ci, __ATOMIC_ACQUIRE);
		if (index < ci)
			return 0;
		op_own = __atomic_load_n(&cqe->op_own, __ATOMIC_ACQUIRE);
		if (index < ci + cq->cqe_num && (op_own & 1) == !!(index & cq->cqe_num)) {
			/* CQE i is WQE i's: the index in it must agree. */
			if (kinet_be16(cqe->wqe_counter) == (uint16_t)index)
				break;
			return index < __atomic_load_n(&cq->cqe_ci, __ATOMIC_ACQUIRE) ? 0 : -EPROTO;
		}
		if (kt_now_ms() > deadline)
			return -ETIMEDOUT;
		emu_relax(&spins);
	}
	uint64_t old = __atomic_load_n(&cq->cqe_ci, __ATOMIC_RELAXED);
	while (old < index + 1 && !__atomic_compare_exchange_n(&cq->cqe_ci, &old, index + 1, 1,
							       __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
		;
	return (op_own >> 4) == KINET_CQE_REQ_ERR ? -EIO : 0;
}

static uint64_t emu_reserve(struct kinet_gpunetio_qp *qp, uint32_t n, int *err)
{
	uint64_t idx = __atomic_fetch_add(&qp->sq_rsvd_index, n, __ATOMIC_RELAXED);
	uint64_t last = idx + n - 1;

	/* Slot last - depth must have completed before slot last is reused. */
	if (last >= qp->sq_wqe_num) {
		int rc = emu_poll_cq_at(&qp->cq_sq, last - qp->sq_wqe_num);
		if (rc && rc != -EIO)
			*err = rc;
	}
	return idx;
}

static uint8_t *emu_wqe(struct kinet_gpunetio_qp *qp, uint64_t idx)
{
	return qp->sq_wqe_daddr + ((idx & qp->sq_wqe_mask) << 6);
}

static void emu_ctrl(uint8_t *w, uint64_t idx, uint8_t opcode, uint32_t qpn_ds_be)
{
	struct kinet_wqe_ctrl_seg c;

	memset(&c, 0, sizeof(c));
	c.opmod_idx_opcode = kinet_be32((uint32_t)(uint16_t)idx << 8 | opcode);
	c.qpn_ds = qpn_ds_be;
	c.fm_ce_se = KINET_WQE_CTRL_CQ_UPDATE;
	memcpy(w, &c, sizeof(c));
}

/* Keys are big-endian already (GPUNetIO's MKEY_SWAPPED convention). */
static void emu_raddr(uint8_t *w, uint64_t raddr, uint32_t rkey_be)
{
	uint64_t a = kinet_be64(raddr);
	memcpy(w + 16, &a, 8);
	memcpy(w + 24, &rkey_be, 4);
	memset(w + 28, 0, 4);
}

static void emu_dseg(uint8_t *seg, uint64_t addr, uint32_t lkey_be, uint32_t bytes)
{
	uint32_t bc = kinet_be32(bytes);
	uint64_t a = kinet_be64(addr);
	memcpy(seg, &bc, 4);
	memcpy(seg + 4, &lkey_be, 4);
	memcpy(seg + 8, &a, 8);
}

static void emu_prep_rw(struct kinet_gpunetio_qp *qp, uint64_t idx, uint8_t opcode, uint64_t raddr,
			uint32_t rkey_be, uint64_t laddr, uint32_t lkey_be, uint32_t bytes)
{
	uint8_t *w = emu_wqe(qp, idx);
	emu_ctrl(w, idx, opcode, qp->sq_num_shift8_be_3ds);
	emu_raddr(w, raddr, rkey_be);
	emu_dseg(w + 32, laddr, lkey_be, bytes);
}

static void emu_prep_inline(struct kinet_gpunetio_qp *qp, uint64_t idx, uint64_t raddr, uint32_t rkey_be,
			    uint64_t value)
{
	uint8_t *w = emu_wqe(qp, idx);
	uint32_t hdr = kinet_be32(KINET_INLINE_SEG_FLAG | 8);
	emu_ctrl(w, idx, KINET_WQE_OP_RDMA_WRITE, kinet_be32(qp->sq_num_shift8 | 3));
	emu_raddr(w, raddr, rkey_be);
	memcpy(w + 32, &hdr, 4);
	memcpy(w + 36, &value, 8);
}

/* FA: swap_add = add and compare = add, as GPUNetIO writes it; CS: swap,
 * compare. */
static void emu_prep_atomic(struct kinet_gpunetio_qp *qp, uint64_t idx, uint8_t opcode, uint64_t raddr,
			    uint32_t rkey_be, uint64_t laddr, uint32_t lkey_be, uint64_t compare_add,
			    uint64_t swap)
{
	uint8_t *w = emu_wqe(qp, idx);
	uint64_t sa = kinet_be64(opcode == KINET_WQE_OP_ATOMIC_FA ? compare_add : swap);
	uint64_t cmp = kinet_be64(compare_add);
	emu_ctrl(w, idx, opcode, qp->sq_num_shift8_be_4ds);
	emu_raddr(w, raddr, rkey_be);
	memcpy(w + 32, &sa, 8);
	memcpy(w + 40, &cmp, 8);
	emu_dseg(w + 48, laddr, lkey_be, 8);
}

static void emu_prep_wait(struct kinet_gpunetio_qp *qp, uint64_t idx, uint32_t max_index, uint32_t cqn)
{
	uint8_t *w = emu_wqe(qp, idx);
	emu_ctrl(w, idx, KINET_WQE_OP_WAIT, kinet_be32(qp->sq_num_shift8 | 2));
	kinet_wqe_set_wait((struct kinet_wqe_wait_seg *)(void *)(w + 16), cqn, max_index);
}

/* In order: the slots before `from` are ready first. */
static void emu_mark_ready(struct kinet_gpunetio_qp *qp, uint64_t from, uint64_t to)
{
	unsigned spins = 0;

	while (__atomic_load_n(&qp->sq_ready_index, __ATOMIC_ACQUIRE) != from)
		emu_relax(&spins);
	__atomic_store_n(&qp->sq_ready_index, to + 1, __ATOMIC_RELEASE);
}

static uint64_t emu_db_value(const struct kinet_gpunetio_qp *qp, uint64_t pi)
{
	struct kinet_wqe_ctrl_seg c;
	uint64_t v;

	memset(&c, 0, sizeof(c));
	c.opmod_idx_opcode = kinet_be32((uint32_t)pi << 8);
	c.qpn_ds = qp->sq_num_shift8_be;
	memcpy(&v, &c, sizeof(v));
	return v;
}

static void emu_submit(struct kinet_gpunetio_qp *qp, uint64_t pi, enum emu_submit how)
{
	unsigned spins = 0;
	uint64_t old;

	__atomic_thread_fence(__ATOMIC_RELEASE);
	if (how == EMU_PROXY) {
		old = __atomic_load_n(qp->sq_db, __ATOMIC_RELAXED);
		while (old < pi && !__atomic_compare_exchange_n(qp->sq_db, &old, pi, 1, __ATOMIC_RELEASE,
								__ATOMIC_RELAXED))
			;
		return;
	}
	int unlocked = 0;
	while (!__atomic_compare_exchange_n(&qp->sq_lock, &unlocked, 1, 0, __ATOMIC_ACQUIRE,
					    __ATOMIC_RELAXED)) {
		unlocked = 0;
		emu_relax(&spins);
	}
	if (qp->sq_wqe_pi < pi) {
		qp->sq_wqe_pi = pi;
		if (how == EMU_BF) {
			/* The last WQE copied whole to the BlueFlame window. */
			const uint64_t *w = (const uint64_t *)(const void *)emu_wqe(qp, pi - 1);
			/* The control word last, as a release (fence, then the
			 * copy, in GPUNetIO): the engine reads the index there. */
			for (int i = 1; i < 8; i++)
				__atomic_store_n(&qp->sq_db[i], w[i], __ATOMIC_RELAXED);
			__atomic_store_n(&qp->sq_db[0], w[0], __ATOMIC_RELEASE);
		} else {
			__atomic_store_n(qp->sq_db, emu_db_value(qp, pi), __ATOMIC_RELEASE);
		}
		/* A release store where GPUNetIO fences, then stores: the same
		 * order, in a form ThreadSanitizer sees (it does not model
		 * fences), since the engine may take the record as its hint. */
		__atomic_store_n(qp->sq_dbrec, kinet_be32((uint32_t)pi & 0xffff), __ATOMIC_RELEASE);
		__atomic_thread_fence(__ATOMIC_RELEASE);
		__atomic_store_n(qp->sq_db, emu_db_value(qp, pi), __ATOMIC_RELEASE);
	}
	__atomic_store_n(&qp->sq_lock, 0, __ATOMIC_RELEASE);
}

/* ---- the test ---- */

struct emu {
	struct kinet_ctx *ctx;
	struct kinet_cq *cq[4];
	struct kinet_qp *qp[4]; /* 0: main, 1: companion, 2/3: their peers */
	struct kinet_gpunetio_qp *d[2];
	struct kt_buf src, dst, get, sig, ctr, sink, words;
	enum emu_submit how;
	int failed;
};

struct emu_thread {
	struct emu *e;
	int id;
	pthread_t tid;
};

static uint32_t be_key(const struct kt_buf *b)
{
	return kinet_be32(kinet_mr_lkey(b->mr));
}

/* One thread's work: per iteration a put, an inline put, a signal, a
 * put-with-signal, a get of what was put, a compare-swap, and a put with
 * a counter (WAIT on the main CQ + fetch-add on the companion). */
static void *emu_main(void *arg)
{
	struct emu_thread *t = arg;
	struct emu *e = t->e;
	struct kinet_gpunetio_qp *qp = e->d[0], *comp = e->d[1];
	size_t area = (size_t)t->id * SLOT;
	int err = 0;

	for (uint32_t i = 0; i < ITERS && !err; i++) {
		uint8_t *src = e->src.p + area;
		kt_fill_pattern(src, SLOT, (uint32_t)t->id * 100000 + i);

		uint64_t base = emu_reserve(qp, 6, &err);
		emu_prep_rw(qp, base, KINET_WQE_OP_RDMA_WRITE, kt_addr(&e->dst, area), be_key(&e->dst),
			    kt_addr(&e->src, area), be_key(&e->src), SLOT);
		emu_prep_inline(qp, base + 1, kt_addr(&e->dst, THREADS * SLOT + (size_t)t->id * 8),
				be_key(&e->dst), (uint64_t)i << 32 | (uint32_t)t->id);
		emu_prep_atomic(qp, base + 2, KINET_WQE_OP_ATOMIC_FA, 8 * (uint64_t)t->id, be_key(&e->sig), 0,
				be_key(&e->sink), 1, 0);
		emu_prep_rw(qp, base + 3, KINET_WQE_OP_RDMA_WRITE,
			    kt_addr(&e->dst, 4 * THREADS * SLOT + area), be_key(&e->dst),
			    kt_addr(&e->src, area), be_key(&e->src), SLOT);
		emu_prep_atomic(qp, base + 4, KINET_WQE_OP_ATOMIC_FA, 8 * (uint64_t)t->id, be_key(&e->sig), 8,
				be_key(&e->sink), 2, 0);
		emu_prep_rw(qp, base + 5, KINET_WQE_OP_RDMA_READ, kt_addr(&e->dst, area), be_key(&e->dst),
			    kt_addr(&e->get, area), be_key(&e->get), SLOT);
		emu_mark_ready(qp, base, base + 5);
		emu_submit(qp, base + 6, e->how);

		/* compare-swap: this thread's word goes i -> i + 1 */
		uint64_t cs = emu_reserve(qp, 1, &err);
		emu_prep_atomic(qp, cs, KINET_WQE_OP_ATOMIC_CS, kt_addr(&e->words, (size_t)t->id * 8),
				be_key(&e->words), kt_addr(&e->words, 512 + (size_t)t->id * 8),
				be_key(&e->words), i, i + 1);
		emu_mark_ready(qp, cs, cs);
		emu_submit(qp, cs + 1, e->how);

		/* put with counter */
		uint64_t put = emu_reserve(qp, 1, &err);
		emu_prep_rw(qp, put, KINET_WQE_OP_RDMA_WRITE, kt_addr(&e->dst, 8 * THREADS * SLOT + area),
			    be_key(&e->dst), kt_addr(&e->src, area), be_key(&e->src), SLOT);
		emu_mark_ready(qp, put, put);
		uint64_t c = emu_reserve(comp, 2, &err);
		emu_prep_wait(comp, c, (uint32_t)put, qp->cq_sq.cq_num);
		emu_prep_atomic(comp, c + 1, KINET_WQE_OP_ATOMIC_FA, 8 * (uint64_t)t->id, be_key(&e->ctr), 0,
				be_key(&e->sink), 1, 0);
		emu_mark_ready(comp, c, c + 1);
		emu_submit(qp, put + 1, e->how);
		emu_submit(comp, c + 2, e->how);

		/* wait for everything, then check it */
		int rc = emu_poll_cq_at(&qp->cq_sq, put);
		if (!rc)
			rc = emu_poll_cq_at(&comp->cq_sq, c + 1);
		if (rc) {
			fprintf(stderr, "thread %d iteration %u: poll %d\n", t->id, i, rc);
			err = rc;
			break;
		}
		uint64_t inl, word, cnt;
		memcpy(&inl, e->dst.p + THREADS * SLOT + (size_t)t->id * 8, 8);
		word = __atomic_load_n((uint64_t *)(void *)(e->words.p + (size_t)t->id * 8),
				       __ATOMIC_ACQUIRE);
		cnt = __atomic_load_n((uint64_t *)(void *)(e->ctr.p + (size_t)t->id * 8), __ATOMIC_ACQUIRE);
		if (memcmp(e->dst.p + area, src, SLOT) || memcmp(e->get.p + area, src, SLOT) ||
		    memcmp(e->dst.p + 4 * THREADS * SLOT + area, src, SLOT) ||
		    memcmp(e->dst.p + 8 * THREADS * SLOT + area, src, SLOT) ||
		    inl != ((uint64_t)i << 32 | (uint32_t)t->id) || word != i + 1 || cnt != i + 1) {
			fprintf(stderr, "thread %d iteration %u: data, word %llu or counter %llu wrong\n",
				t->id, i, (unsigned long long)word, (unsigned long long)cnt);
			err = -EIO;
		}
	}
	if (err)
		__atomic_store_n(&e->failed, 1, __ATOMIC_RELEASE);
	return NULL;
}

static int emu_open(struct emu *e, enum kinet_db_mode mode)
{
	struct kinet_qp_info info[4];
	int rc;

	memset(e, 0, sizeof(*e));
	e->how = mode == KINET_DB_CPU ? EMU_PROXY : mode == KINET_DB_GPU ? EMU_DB : EMU_BF;
	rc = kt_ctx_open(2, &e->ctx);
	for (int i = 0; i < 4 && !rc; i++) {
		struct kinet_cq_attr ca = {.depth = 64, .flags = KINET_CQ_IGNORE_OVERRUN};
		struct kinet_qp_attr qa;
		rc = kinet_cq_create(e->ctx, &ca, &e->cq[i]);
		if (rc)
			break;
		kinet_qp_attr_init(&qa);
		qa.send_cq = e->cq[i];
		qa.sq_depth = 64;
		qa.db_mode = mode;
		rc = kinet_qp_create(e->ctx, &qa, &e->qp[i]);
		if (!rc)
			rc = kinet_qp_pack(e->qp[i], &info[i]);
	}
	for (int i = 0; i < 4 && !rc; i++)
		rc = kinet_qp_connect(e->qp[i], &info[i ^ 2]);
	for (int i = 0; i < 2 && !rc; i++)
		rc = kinet_qp_export_gpunetio(e->qp[i], &e->d[i]);
	if (!rc)
		rc = kt_buf_alloc(e->ctx, &e->src, THREADS * SLOT, KT_ACC_ALL, 0);
	if (!rc)
		rc = kt_buf_alloc(e->ctx, &e->dst, 12 * THREADS * SLOT, KT_ACC_ALL, 0);
	if (!rc)
		rc = kt_buf_alloc(e->ctx, &e->get, THREADS * SLOT, KT_ACC_ALL, 0);
	if (!rc)
		rc = kt_buf_alloc(e->ctx, &e->words, 1024, KT_ACC_ALL, 0);
	/* NCCL's GIN layout: signal and counter tables and a sink, zero-based. */
	if (!rc)
		rc = kt_buf_alloc(e->ctx, &e->sig, 8 * THREADS, ZB, 0);
	if (!rc)
		rc = kt_buf_alloc(e->ctx, &e->ctr, 8 * THREADS, ZB, 0);
	if (!rc)
		rc = kt_buf_alloc(e->ctx, &e->sink, 64, ZB, 0);
	return rc;
}

static void emu_close(struct emu *e)
{
	kt_buf_free(&e->src);
	kt_buf_free(&e->dst);
	kt_buf_free(&e->get);
	kt_buf_free(&e->words);
	kt_buf_free(&e->sig);
	kt_buf_free(&e->ctr);
	kt_buf_free(&e->sink);
	for (int i = 0; i < 4; i++)
		kinet_qp_destroy(e->qp[i]);
	for (int i = 0; i < 4; i++)
		kinet_cq_destroy(e->cq[i]);
	kinet_ctx_close(e->ctx);
}

static void run(enum kinet_db_mode mode)
{
	struct emu e;
	struct emu_thread t[THREADS];
	struct kinet_error err;

	KT_OK(emu_open(&e, mode));
	for (int i = 0; i < THREADS; i++) {
		t[i].e = &e;
		t[i].id = i;
		KT_OK(pthread_create(&t[i].tid, NULL, emu_main, &t[i]));
	}
	for (int i = 0; i < THREADS; i++)
		pthread_join(t[i].tid, NULL);
	KT_CHECK(!e.failed);
	for (int i = 0; i < THREADS; i++) {
		uint64_t sig, ctr;
		memcpy(&sig, e.sig.p + 8 * i, 8);
		memcpy(&ctr, e.ctr.p + 8 * i, 8);
		KT_CHECK_EQ(sig, 3 * ITERS);
		KT_CHECK_EQ(ctr, ITERS);
	}
	/* The CQs wrapped many times and never reported an overrun. */
	KT_CHECK(e.d[0]->cq_sq.cqe_ci > 20 * e.d[0]->cq_sq.cqe_num);
	KT_OK(kinet_ctx_last_error(e.ctx, &err));
	KT_CHECK_EQ(err.status, 0);
	for (int i = 0; i < 4; i++)
		KT_CHECK_EQ(kinet_qp_get_state(e.qp[i]), KINET_QPS_RTS);
	KT_CHECK(kt_buf_guards_ok(&e.dst));
	emu_close(&e);
}

KT_TEST(cpu_proxy)
{
	run(KINET_DB_CPU);
}

KT_TEST(gpu_doorbell)
{
	run(KINET_DB_GPU);
}

KT_TEST(blueflame)
{
	run(KINET_DB_BF);
}

KT_MAIN(cpu_proxy, gpu_doorbell, blueflame)
