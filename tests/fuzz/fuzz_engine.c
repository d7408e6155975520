/*
 * libFuzzer entry: one input drives a requester QP A against a target QP B
 * (fuzz.h says what an input is).  Input layout, byte by byte (missing
 * bytes are zero; tests/fuzz/corpus/ has seeds):
 *   cfg      bit 0: node transport (else local; FZ_NODE=1 makes every
 *            input use node); bits 1-2: doorbell mode
 *            (CPU, GPU, BlueFlame); bits 3-4: send queue depth 8 << n
 *   teardown kind % 16 (0-9 none, 10 destroy B, 11 destroy A, 12
 *            deregister A's region, 13 B's region, 14 set A to error, 15
 *            close B's context), then the record index it happens before
 *   access   low nibble A's region, high nibble B's (LOCAL_WRITE added
 *            where a remote right needs it)
 *   fill     seed of the regions' contents
 *   recvs    count % 9, then per receive: offset (2), length (2), key (1)
 *   records  kind % 8 then its fields: 0-3, 7 template WQE, 4 raw WQE,
 *            5 garbage doorbell, 6 garbage CQ consumer index
 */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "fuzz.h"
#include "internal.h"

#define PAGE 4096u
#define CQ_DEPTH 512u
#define WAIT_NS (10 * 1000000000ull)

struct region {
	uint8_t *base; /* FZ_REGION bytes between two inaccessible pages */
	struct fz_mr mr;
	struct kinet_mr *kmr;
};

static struct kinet_ctx *ctx_local[2], *ctx_node[2];
static bool node_only; /* $FZ_NODE: a campaign over the node carrier */
static struct region ra, rb;
static uint8_t inline_src[64];
static bool trace; /* $FZ_TRACE: print what each input posts (reproducing a finding) */

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void die(const char *what, int rc)
{
	fprintf(stderr, "fuzz: %s: %s\n", what, kinet_strerror(rc));
	abort();
}

static int ctx_open(struct kinet_ctx **ctx)
{
	struct kinet_ctx_attr a;

	kinet_ctx_attr_init(&a);
	a.provider = "soft";
	a.cuda_device = KINET_CUDA_DEVICE_NONE;
	return kinet_ctx_open(&a, ctx);
}

static void region_map(struct region *r)
{
	uint8_t *p = mmap(NULL, FZ_REGION + 2 * PAGE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED || mprotect(p + PAGE, FZ_REGION, PROT_READ | PROT_WRITE))
		die("mmap", -errno);
	r->base = p + PAGE;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	kinet_log_set_level(KINET_LOG_ERROR);
	trace = getenv("FZ_TRACE") != NULL;
	node_only = getenv("FZ_NODE") && !strcmp(getenv("FZ_NODE"), "1");
	for (int i = 0; i < 2; i++) {
		int rc = ctx_open(&ctx_local[i]);
		if (rc)
			die("kinet_ctx_open", rc);
		if (ctx_open(&ctx_node[i]))
			ctx_node[i] = NULL;
	}
	region_map(&ra);
	region_map(&rb);
	return 0;
}

static unsigned norm_access(unsigned a)
{
	a &= KINET_ACCESS_LOCAL_WRITE | KINET_ACCESS_REMOTE_WRITE | KINET_ACCESS_REMOTE_READ |
	     KINET_ACCESS_REMOTE_ATOMIC;
	if (a & (KINET_ACCESS_REMOTE_WRITE | KINET_ACCESS_REMOTE_ATOMIC))
		a |= KINET_ACCESS_LOCAL_WRITE;
	return a;
}

static void region_reg(struct region *r, struct kinet_ctx *ctx, unsigned access)
{
	int rc = kinet_mr_reg(ctx, r->base, FZ_REGION, access, &r->kmr);

	if (rc)
		die("kinet_mr_reg", rc);
	r->mr = (struct fz_mr){r->base, kinet_mr_lkey(r->kmr), access, true};
}

static void region_dereg(struct region *r)
{
	if (r->mr.live)
		kinet_mr_dereg(r->kmr);
	r->mr.live = false;
}

/* One run: the objects of the input and what the harness saw. */
struct run {
	struct kinet_ctx *ctx[2];
	bool own_target_ctx; /* ctx[1] opened for this input */
	struct kinet_cq *cq[2];
	struct kinet_qp *qp[2];
	struct fz_model m;
	struct kinet_wc wc[4 * FZ_MAX_OPS + 64];
	int nwc;
	uint32_t qpn_a;
};

static struct kinet_qp *qp_make(struct kinet_ctx *ctx, struct kinet_cq *cq, enum kinet_db_mode db,
				uint32_t sq_depth, uint32_t timeout_ms)
{
	struct kinet_qp_attr a;
	struct kinet_qp *qp;
	int rc;

	kinet_qp_attr_init(&a);
	a.send_cq = cq;
	a.recv_cq = cq;
	a.sq_depth = sq_depth;
	a.rq_depth = FZ_MAX_RECVS;
	a.max_recv_sge = 1;
	a.db_mode = db;
	a.timeout_ms = timeout_ms;
	a.rnr_timeout_ms = 0;
	rc = kinet_qp_create(ctx, &a, &qp);
	if (rc)
		die("kinet_qp_create", rc);
	return qp;
}

static int connect_pair(struct run *r, bool node)
{
	struct kinet_qp_info info[2];
	int rc = 0;

	/* Forced, so a local pair opens no carrier in a fresh context. */
	setenv("KINET_TRANSPORT", node ? "node" : "local", 1);
	for (int i = 0; i < 2 && !rc; i++)
		rc = kinet_qp_pack(r->qp[i], &info[i]);
	for (int i = 0; i < 2 && !rc; i++)
		rc = kinet_qp_connect(r->qp[i], &info[1 - i]);
	unsetenv("KINET_TRANSPORT");
	return rc;
}

/* Collects what A's send CQ holds. */
static void drain_a(struct run *r)
{
	int cap = (int)(sizeof(r->wc) / sizeof(r->wc[0]));

	for (;;) {
		int n = kinet_cq_poll(r->cq[0], cap - r->nwc, r->wc + r->nwc);
		if (n == -EOVERFLOW && r->m.chaos)
			return;
		if (n < 0)
			die("kinet_cq_poll", n);
		if (!n)
			return;
		/* B's receive completions share the CQ only when B is A (never):
		 * each side has its own CQ, so all of these are A's. */
		r->nwc += n;
		if (r->nwc == cap)
			die("completions", -EOVERFLOW);
	}
}

/* Picks an address for a WQE field: near a region (in or out of range), or
 * anywhere. */
static uint64_t pick_addr(struct fz_in *in, const struct region *near)
{
	uint8_t how = fz_u8(in);
	uint16_t v = fz_u16(in);

	if (how < 224)
		return (uintptr_t)near->base + (uint64_t)(v % (FZ_REGION + 256)) - 128;
	return fz_u64(in);
}

static uint32_t pick_key(uint8_t sel, struct fz_in *in, const struct region *own, const struct region *other)
{
	switch (sel & 3) {
	case 0:
	case 1:
		return own->mr.key;
	case 2:
		return other->mr.key;
	default:
		return (uint32_t)fz_u16(in) << 8 | fz_u8(in);
	}
}

static const enum kinet_wr_opcode template_ops[8] = {
	KINET_WR_RDMA_WRITE,
	KINET_WR_RDMA_WRITE_WITH_IMM,
	KINET_WR_SEND,
	KINET_WR_SEND_WITH_IMM,
	KINET_WR_RDMA_READ,
	KINET_WR_ATOMIC_CMP_AND_SWP,
	KINET_WR_ATOMIC_FETCH_AND_ADD,
	KINET_WR_NOP,
};

static void post_template(struct run *r, struct fz_in *in)
{
	struct fz_wr wr = {.opcode = template_ops[fz_u8(in) % 8]};
	uint8_t flags = fz_u8(in), keys = fz_u8(in);
	bool atomic = wr.opcode == KINET_WR_ATOMIC_CMP_AND_SWP || wr.opcode == KINET_WR_ATOMIC_FETCH_AND_ADD;
	struct kinet_send_wr sw;
	struct kinet_sge sge;
	struct kinet_qp *qp = r->qp[0];

	wr.signaled = !(flags & 1) || (flags & 2);
	wr.fence = flags & 4;
	wr.lkey = pick_key(keys, in, &ra, &rb);
	wr.rkey = pick_key(keys >> 2, in, &rb, &ra);
	wr.laddr = pick_addr(in, &ra);
	wr.raddr = pick_addr(in, &rb);
	wr.len = fz_u16(in) % (FZ_REGION + 1);
	wr.swap = fz_u64(in);
	wr.compare_add = fz_u64(in);
	if (atomic) {
		wr.len = 8;
		if (!(flags & 0x10))
			wr.raddr &= ~7ull;
	}
	if ((flags & 8) && !atomic && wr.opcode != KINET_WR_RDMA_READ && wr.opcode != KINET_WR_NOP) {
		/* Inline: the CPU copies the payload at post time from memory
		 * of the harness (the model knows it). */
		wr.inline_data = true;
		wr.len %= sizeof(inline_src) + 1;
		memset(inline_src, fz_u8(in), sizeof(inline_src));
		wr.inline_src = inline_src;
		wr.laddr = (uintptr_t)inline_src;
	}
	sge = (struct kinet_sge){.addr = wr.laddr, .length = wr.len, .lkey = wr.lkey};
	memset(&sw, 0, sizeof(sw));
	sw.opcode = wr.opcode;
	sw.send_flags = (wr.signaled ? KINET_SEND_SIGNALED : 0) | (wr.fence ? KINET_SEND_FENCE : 0) |
			(wr.inline_data ? KINET_SEND_INLINE : 0);
	sw.sg_list = &sge;
	sw.num_sge = wr.opcode == KINET_WR_NOP ? 0 : 1;
	sw.remote_addr = wr.raddr;
	sw.rkey = wr.rkey;
	sw.swap = wr.swap;
	sw.compare_add = wr.compare_add;
	sw.imm_data = (uint32_t)wr.swap;

	uint64_t pi = qp->sq_pi; /* the harness is the only poster */
	sw.wr_id = (uint16_t)pi;
	if (kinet_qp_post_send(qp, &sw, 1, NULL))
		return; /* refused (full queue, bad arguments): nothing posted */
	fz_model_post(&r->m, &wr, (uint16_t)pi, (uint16_t)(qp->sq_pi - pi));
	if (trace)
		fprintf(stderr,
			"WQE %u: opcode %d%s local %+lld remote %+lld len %u -> expect %d syndrome 0x%x\n",
			(unsigned)pi, wr.opcode, wr.inline_data ? " inline" : "",
			(long long)(wr.laddr - (uintptr_t)ra.base),
			(long long)(wr.raddr - (uintptr_t)rb.base), wr.len, r->m.ops[r->m.nops - 1].expect,
			r->m.ops[r->m.nops - 1].syndrome);
}

/* A WQE built field by field from the input: any opcode, ds, flags and
 * segment contents, addresses and keys near the regions or anywhere. */
static void post_raw(struct run *r, struct fz_in *in)
{
	uint8_t wqe[2 * KINET_WQE_BB_SIZE];
	uint32_t nbb = 1 + fz_u8(in) % 2;
	uint8_t opcode = fz_u8(in), dsb = fz_u8(in), fm = fz_u8(in);
	uint32_t ds = dsb & 0x80 ? dsb & 63 : 1 + dsb % (nbb * 4);
	uint32_t qpn = fz_u8(in) < 240 ? r->qpn_a : fz_u16(in);
	struct kinet_qp *qp = r->qp[0];

	memset(wqe, 0, sizeof(wqe));
	kinet_wqe_set_ctrl((struct kinet_wqe_ctrl_seg *)wqe, opcode % 0x14, 0, qpn, ds, fm, fz_u8(in));
	for (uint32_t u = 1; u < nbb * 4; u++) {
		uint8_t *seg = wqe + u * KINET_WQE_DS_SIZE;
		uint8_t kind = fz_u8(in) % 4;

		if (kind == 0)
			kinet_wqe_set_raddr((void *)seg, pick_addr(in, &rb),
					    pick_key(fz_u8(in), in, &rb, &ra));
		else if (kind == 1)
			kinet_wqe_set_data((void *)seg, pick_addr(in, &ra), fz_u16(in),
					   pick_key(fz_u8(in), in, &ra, &rb));
		else if (kind == 2)
			kinet_wqe_set_atomic((void *)seg, fz_u64(in), fz_u64(in));
		else
			for (uint32_t i = 0; i < KINET_WQE_DS_SIZE; i++)
				seg[i] = fz_u8(in);
	}
	uint64_t pi = qp->sq_pi;
	if (kinet_qp_post_wqe(qp, wqe, nbb, (uint16_t)pi))
		return;
	if (!ds || kinet_wqe_bbs(ds) != nbb)
		r->m.chaos = true; /* the engine's WQE boundaries differ from ours */
	fz_model_post_unknown(&r->m, (uint16_t)pi, (uint16_t)nbb, fm & KINET_WQE_CTRL_CQ_UPDATE);
}

/* Garbage in a doorbell: behind, a little or far ahead, or anything. */
static void garbage_doorbell(struct run *r, struct fz_in *in)
{
	struct kinet_qp *qp = r->qp[0];
	uint8_t how = fz_u8(in);
	uint64_t v = how < 128 ? qp->sq_pi + (uint64_t)(int8_t)fz_u8(in) : fz_u64(in);

	if (qp->db_mode == KINET_DB_CPU) {
		atomic_store(qp->db_cpu, v);
	} else {
		__atomic_store_n(&qp->dbrec[KINET_DBR_SEND], kinet_be32((uint32_t)v & 0xffff),
				 __ATOMIC_RELEASE);
		__atomic_store_n((uint64_t *)(void *)(qp->uar + KINET_UAR_DB_OFFSET), fz_u64(in),
				 __ATOMIC_RELEASE);
	}
	fz_model_teardown(&r->m);
	r->m.chaos = true;
}

static void garbage_cq_ci(struct run *r, struct fz_in *in)
{
	__atomic_store_n(&r->cq[0]->dbrec[KINET_CQ_DBR_CI], (uint32_t)fz_u64(in), __ATOMIC_RELEASE);
	fz_model_teardown(&r->m);
	r->m.chaos = true;
}

/* Returns false once A is gone (nothing more can be posted). */
static bool teardown(struct run *r, int kind)
{
	fz_model_teardown(&r->m);
	switch (kind) {
	case 3:
		kinet_qp_destroy(r->qp[1]);
		r->qp[1] = NULL;
		return true;
	case 4:
		kinet_qp_destroy(r->qp[0]);
		r->qp[0] = NULL;
		return false;
	case 5:
		region_dereg(&ra);
		return true;
	case 6:
		region_dereg(&rb);
		return true;
	case 7:
		kinet_qp_set_error(r->qp[0]);
		return true;
	default: /* 8: the target's whole context */
		if (!r->own_target_ctx)
			return teardown(r, 3);
		kinet_ctx_close(r->ctx[1]);
		r->ctx[1] = NULL;
		r->qp[1] = NULL;
		r->cq[1] = NULL;
		rb.mr.live = false; /* freed with the context */
		return true;
	}
}

/* Waits for every completion the model expects, ending with that of a
 * signaled NOP posted last (completions come in order, so everything
 * before it has executed, unsignaled WQEs too); a missing one after
 * WAIT_NS is a finding. */
static void wait_exact(struct run *r)
{
	struct fz_wr nop = {.opcode = KINET_WR_NOP, .signaled = true};
	struct kinet_send_wr sw = {.opcode = KINET_WR_NOP, .send_flags = KINET_SEND_SIGNALED};
	uint64_t end = now_ns() + WAIT_NS, pi = r->qp[0]->sq_pi;
	int rc;

	sw.wr_id = (uint16_t)pi;
	while ((rc = kinet_qp_post_send(r->qp[0], &sw, 1, NULL)) == -ENOMEM && now_ns() < end) {
		drain_a(r); /* frees slots of completed WQEs */
		sched_yield();
	}
	if (rc)
		die("the final NOP", rc);
	fz_model_post(&r->m, &nop, (uint16_t)pi, 1);

	int want = fz_model_expected(&r->m);

	while (r->nwc < want) {
		drain_a(r);
		if (now_ns() > end) {
			fprintf(stderr, "fuzz: %d of %d completions after 10 s\n", r->nwc, want);
			abort();
		}
		sched_yield();
	}
	drain_a(r);
	fz_model_check(&r->m, r->wc, r->nwc, r->nwc, r->qpn_a, true);
	fz_model_check_memory(&r->m);
}

static void finish(struct run *r)
{
	/* Teardown with whatever is still in flight: destroy waits or fails
	 * it; what reached the CQ before is checked by the RC rules. */
	int named = 0;
	if (r->qp[0]) {
		drain_a(r);
		named = r->nwc;
	}
	for (int i = 0; i < 2; i++)
		if (r->qp[i])
			kinet_qp_destroy(r->qp[i]);
	if (r->cq[0]) {
		drain_a(r);
		fz_model_check(&r->m, r->wc, r->nwc, named, r->qpn_a, false);
	}
	if (r->cq[1]) {
		struct kinet_wc wc[16];
		while (kinet_cq_poll(r->cq[1], 16, wc) > 0)
			;
	}
	for (int i = 0; i < 2; i++)
		if (r->cq[i] && kinet_cq_destroy(r->cq[i]))
			die("kinet_cq_destroy", -EBUSY);
	if (r->ctx[1] && r->own_target_ctx) {
		rb.mr.live = false;
		kinet_ctx_close(r->ctx[1]);
	}
	region_dereg(&ra);
	region_dereg(&rb);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz_in in = {data, size};
	static struct run r;
	uint8_t cfg = fz_u8(&in), td = fz_u8(&in) % 16, tpos = fz_u8(&in), acc = fz_u8(&in);
	bool node = (node_only || (cfg & 1)) && ctx_node[0];
	enum kinet_db_mode db =
		(enum kinet_db_mode[]){KINET_DB_CPU, KINET_DB_GPU, KINET_DB_BF}[(cfg >> 1) % 3];
	uint32_t sq_depth = 8u << ((cfg >> 3) & 3);
	struct kinet_cq_attr ca = {.depth = CQ_DEPTH};
	int rc;

	memset(&r, 0, offsetof(struct run, m));
	r.nwc = 0;
	r.ctx[0] = node ? ctx_node[0] : ctx_local[0];
	r.ctx[1] = node ? ctx_node[1] : ctx_local[1];
	td = td < 10 ? 0 : td - 7; /* 3..8: a teardown */
	if (td == 8 && !node) {
		if ((rc = ctx_open(&r.ctx[1])))
			die("kinet_ctx_open", rc);
		r.own_target_ctx = true;
	}
	for (int i = 0; i < 2; i++)
		if ((rc = kinet_cq_create(r.ctx[i], &ca, &r.cq[i])))
			die("kinet_cq_create", rc);
	/* Teardown runs get a short timeout (5 ms), so a vanished target fails
	 * operations soon; that also makes timeouts of a loaded machine
	 * possible, so their outcomes are not predicted. */
	r.qp[0] = qp_make(r.ctx[0], r.cq[0], db, sq_depth, td ? 5 : 5000);
	r.qp[1] = qp_make(r.ctx[1], r.cq[1], db, sq_depth, td ? 5 : 5000);
	r.qpn_a = kinet_qp_num(r.qp[0]);
	if ((rc = connect_pair(&r, node)))
		die("kinet_qp_connect", rc);

	uint8_t fill = fz_u8(&in);
	for (uint32_t i = 0; i < FZ_REGION; i++) {
		ra.base[i] = (uint8_t)(i * 7 + fill);
		rb.base[i] = (uint8_t)(i * 13 + fill + 1);
	}
	region_reg(&ra, r.ctx[0], norm_access(acc));
	region_reg(&rb, r.ctx[1], norm_access(acc >> 4));
	fz_model_reset(&r.m, &ra.mr, &rb.mr);
	r.m.pipelined = node;
	if (td)
		fz_model_teardown(&r.m);

	/* Receives first, so which send takes which is known. */
	int nrecv = fz_u8(&in) % (FZ_MAX_RECVS + 1);
	for (int i = 0; i < nrecv; i++) {
		uint32_t off = fz_u16(&in) % FZ_REGION, len = fz_u16(&in) % (FZ_REGION + 1);
		uint32_t key = pick_key(fz_u8(&in), &in, &rb, &ra);
		struct kinet_sge sge = {(uintptr_t)rb.base + off, len, key};
		struct kinet_recv_wr wr = {.wr_id = (uint64_t)i, .sg_list = &sge, .num_sge = 1};

		if (kinet_qp_post_recv(r.qp[1], &wr, 1, NULL))
			continue;
		if (trace)
			fprintf(stderr, "recv %d: offset %u len %u key %s\n", i, off, len,
				key == rb.mr.key ? "valid" : "other");
		r.m.recv[r.m.nrecv].off = off;
		r.m.recv[r.m.nrecv].len = len;
		r.m.recv[r.m.nrecv].valid = rb.mr.live && key == rb.mr.key &&
					    (rb.mr.access & KINET_ACCESS_LOCAL_WRITE) &&
					    len <= FZ_REGION - off;
		if (key == KINET_INVALID_LKEY) {
			/* Ends the scatter list: a receive of no bytes. */
			r.m.recv[r.m.nrecv].len = 0;
			r.m.recv[r.m.nrecv].valid = true;
		}
		r.m.nrecv++;
	}

	bool alive = true;
	int nrec = 0, max = (int)sq_depth - 1 < FZ_MAX_OPS ? (int)sq_depth - 1 : FZ_MAX_OPS;
	tpos %= (uint8_t)(max + 1);
	while (alive && in.n && r.m.nops < max) {
		if (td && nrec == tpos) {
			alive = teardown(&r, td);
			if (!alive)
				break;
		}
		nrec++;
		switch (fz_u8(&in) % 8) {
		case 4:
			post_raw(&r, &in);
			break;
		case 5:
			garbage_doorbell(&r, &in);
			break;
		case 6:
			garbage_cq_ci(&r, &in);
			break;
		default:
			post_template(&r, &in);
		}
	}
	if (alive && !r.m.lenient && !r.m.chaos)
		wait_exact(&r);
	finish(&r);
	return 0;
}
