/*
 * libFuzzer entry: the software NIC's Ethernet send queue.  One input is a
 * short sequence of send-queue WQEs (one 64-byte basic block per record)
 * written into one send queue of a port on the loopback interface "lo"
 * (checksum offload and timed sends on, KINET_DB_CPU doorbells) the way
 * device code writes them, then rung; a signalled NOP follows at the next
 * WQE boundary, so the end is observable.  Frames come from a registered
 * region between two inaccessible pages: a stray read past it crashes.
 *
 * Checked, per input, within 2 s: every WQE accounted for by CQEs in
 * order (a success CQE only for a signalled WQE, a signalled WQE never
 * without one; after the first error CQE every later WQE has a flush
 * CQE), a WQE that must fail (another queue's number, ds or op_mod wrong,
 * an inlined header, TSO, an unknown opcode, a key or range outside the
 * region, a frame shorter than 14 bytes or longer than the port takes)
 * never succeeds -- the structural refusals with LOCAL_QP_OP_ERR -- and a
 * well-formed NOP or WAIT-on-time never fails.  A missing CQE is a hang:
 * abort().
 *
 * Input layout (missing bytes are zero; seeds in tests/fuzz/corpus_eth/):
 *   cfg      bit 0: ring the doorbell once at the end (else after each
 *            WQE); bits 1-7: seed of the region's contents
 *   records  up to FE_MAX_RECORDS, kind % 6 then its fields:
 *            0 send (ds 3), 1 send2 (ds 4), 2 WAIT on time, 3 NOP,
 *            4 64 raw bytes (qpn forced right unless asked), 5 a send
 *            with one byte changed
 * WAIT times are clamped to at most FE_WAIT_MAX_NS ahead, so the queue
 * never waits long.  Without root / CAP_NET_RAW / "lo" the target says
 * "SKIP: ..." and exits 0 (scripts/fuzz.sh reports it skipped).
 * $FZ_TRACE=1 prints each input's WQEs and CQEs.
 */
#include <errno.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "fuzz.h"
#include "kinet/eth.h"
#include "kinet/kinet.h"
#include "kinet/wire.h"

#define PAGE 4096u
#define FE_REGION 16384u
#define FE_DEPTH 128u /* send queue BBs: records + the longest WQE + the NOP fit */
#define FE_MAX_RECORDS 32
#define FE_WAIT_MAX_NS 3000000ull    /* a WAIT waits at most 3 ms */
#define FE_DEADLINE_NS 2000000000ull /* every CQE of an input within 2 s */

static struct kinet_ctx *ctx;
static struct kinet_eth_port *port;
static struct kinet_eth_txq *txq;
static struct kinet_dev_eth_txq *d;
static uint64_t pi, ci; /* BBs posted, CQEs read, of the current txq */
static uint8_t *region;
static struct kinet_mr *mr;
static uint32_t lkey, room;
static bool trace;

static uint64_t clock_ns(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void die(const char *what, int rc)
{
	fprintf(stderr, "fuzz_eth: %s: %s\n", what, kinet_strerror(rc));
	abort();
}

static void txq_make(void)
{
	struct kinet_eth_txq_attr a;
	int rc;

	kinet_eth_txq_attr_init(&a);
	a.depth = FE_DEPTH;
	a.csum = 1;
	a.timed = 1;
	a.db_mode = KINET_DB_CPU;
	if ((rc = kinet_eth_txq_create(port, &a, &txq)) || (rc = kinet_eth_txq_export(txq, &d)))
		die("kinet_eth_txq_create", rc);
	pi = ci = 0;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	struct kinet_ctx_attr ca;
	struct kinet_eth_port_attr pa;
	int rc;

	(void)argc;
	(void)argv;
	kinet_log_set_level(KINET_LOG_ERROR);
	trace = getenv("FZ_TRACE") != NULL;
	kinet_ctx_attr_init(&ca);
	ca.provider = "soft";
	ca.cuda_device = KINET_CUDA_DEVICE_NONE;
	if ((rc = kinet_ctx_open(&ca, &ctx)))
		die("kinet_ctx_open", rc);
	kinet_eth_port_attr_init(&pa);
	pa.ifname = "lo";
	pa.backend = KINET_ETH_BACKEND_PACKET;
	rc = kinet_eth_port_open(ctx, &pa, &port);
	if (rc) {
		printf("SKIP: fuzz_eth: no port on \"lo\" (%s%s)\n", kinet_strerror(rc),
		       rc == -EPERM ? ": needs root or CAP_NET_RAW" : "");
		fflush(stdout);
		exit(0);
	}
	room = kinet_eth_port_mtu(port) + 18;
	txq_make();

	uint8_t *p = mmap(NULL, FE_REGION + 2 * PAGE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED || mprotect(p + PAGE, FE_REGION, PROT_READ | PROT_WRITE))
		die("mmap", -errno);
	region = p + PAGE;
	if ((rc = kinet_mr_reg(ctx, region, FE_REGION, KINET_ACCESS_LOCAL_WRITE, &mr)))
		die("kinet_mr_reg", rc);
	lkey = kinet_mr_lkey(mr);
	return 0;
}

/* The region: a pattern, and at offset 0 and 4096 an Ethernet + IPv4 + UDP
 * header (to 127.0.0.1, the discard port) whose checksums the offload can
 * fill.  Frames go out on lo and come back to the port, whose no rules
 * drop them. */
static void region_fill(uint8_t seed)
{
	static const uint8_t hdr[42] = {
		0,    0, 0, 0,	0,   0, 0,    0, 0,    0,    0, 0, 0x08, 0x00,	     /* Ethernet, IPv4 */
		0x45, 0, 0, 28, 0,   0, 0x40, 0, 64,   17,   0, 0,		     /* IPv4, UDP */
		127,  0, 0, 1,	127, 0, 0,    1, 0x30, 0x39, 0, 9, 0,	 8,    0, 0, /* UDP to port 9 */
	};

	for (uint32_t i = 0; i < FE_REGION; i++)
		region[i] = (uint8_t)(i * 7 + seed);
	memcpy(region, hdr, sizeof(hdr));
	memcpy(region + 4096, hdr, sizeof(hdr));
}

/* What the harness knows of one WQE (at a boundary the engine sees). */
struct fe_wqe {
	uint64_t start;
	uint32_t nbb;
	bool signalled;
	bool must_fail;	   /* never a success CQE */
	bool structural;   /* refused before its data: LOCAL_QP_OP_ERR */
	bool must_succeed; /* never an error CQE of its own */
	uint8_t kind;	   /* record kind, for traces */
};

static uint8_t *bb(uint64_t i)
{
	return d->qp->sq + (i & d->qp->sq_mask) * KINET_WQE_BB_SIZE;
}

/* A data segment: an address near the region (in or out of range), or
 * anywhere; a length; the region's key or another. */
static void pick_data(struct fz_in *in, struct kinet_wqe_data_seg *seg)
{
	uint8_t how = fz_u8(in), ksel = fz_u8(in);
	uint64_t addr;
	uint32_t len, key;

	if (how < 240)
		addr = (uintptr_t)region + (uint64_t)(fz_u16(in) % (FE_REGION + 512)) - 256;
	else
		addr = fz_u64(in);
	len = fz_u16(in);
	if (how & 1)
		len %= 1600;
	else if (how & 2)
		len |= (uint32_t)fz_u8(in) << 16;
	key = ksel < 224 ? lkey : ksel < 240 ? lkey ^ (1u + fz_u8(in)) : (uint32_t)fz_u64(in);
	kinet_wqe_set_data(seg, addr, len, key);
}

static uint8_t pick_fm(uint8_t f)
{
	/* Mostly signalled; the fence bits now and then. */
	return (uint8_t)(((f & 3) != 1 ? KINET_WQE_CTRL_CQ_UPDATE : 0) | (f & 0x10 ? f & 0xe0 : 0));
}

/* Writes one record's BB at pi (not rung). */
static uint8_t write_record(struct fz_in *in)
{
	uint8_t *w = bb(pi), kind = fz_u8(in) % 6;
	uint32_t sqn = d->sqn;

	memset(w, 0, KINET_WQE_BB_SIZE);
	switch (kind) {
	case 0:
	case 1:
	case 5: {
		struct kinet_eth_send_wqe s;
		uint8_t f = fz_u8(in), cs = fz_u8(in);

		cs = cs < 192 ? cs & (KINET_ETH_WQE_L3_CSUM | KINET_ETH_WQE_L4_CSUM) : cs;
		memset(&s, 0, sizeof(s));
		kinet_eth_wqe_send(&s, (uint16_t)pi, sqn, pick_fm(f), cs, 0, 0, 0);
		pick_data(in, &s.data[0]);
		if (kind == 1) {
			kinet_wqe_set_ctrl(&s.ctrl, KINET_WQE_OP_SEND, (uint16_t)pi, sqn, KINET_ETH_SEND_DS_2,
					   pick_fm(f), 0);
			pick_data(in, &s.data[1]);
		}
		memcpy(w, &s, sizeof(s));
		if (kind == 5) {
			uint8_t at = fz_u8(in) % KINET_WQE_BB_SIZE;
			w[at] = fz_u8(in);
		}
		break;
	}
	case 2: {
		struct kinet_eth_wait_wqe ww;
		uint8_t f = fz_u8(in), how = fz_u8(in);
		uint64_t now = clock_ns(CLOCK_REALTIME), t;

		if (how < 128) /* ahead: up to 3 ms */
			t = now + (uint64_t)fz_u16(in) * (FE_WAIT_MAX_NS / 65535);
		else if (how < 224) /* behind */
			t = now - (uint64_t)fz_u16(in) * 1000000ull;
		else /* any value (clamped below) */
			t = kinet_eth_rt_to_ns(fz_u64(in));
		kinet_eth_wqe_wait_time(&ww, (uint16_t)pi, sqn, pick_fm(f), kinet_eth_rt_from_ns(t));
		if (how >= 240)
			ww.wait.value = kinet_be64(fz_u64(in)); /* raw, e.g. ns >= 10^9 */
		memcpy(w, &ww, sizeof(ww));
		break;
	}
	case 3: {
		uint8_t f = fz_u8(in), ds = fz_u8(in);
		kinet_wqe_set_ctrl((void *)w, KINET_WQE_OP_NOP, (uint16_t)pi, sqn, ds < 200 ? 1 : ds & 63,
				   pick_fm(f), 0);
		break;
	}
	default: {
		uint8_t op = fz_u8(in), q = fz_u8(in);

		for (uint32_t i = 0; i < KINET_WQE_BB_SIZE; i++)
			w[i] = fz_u8(in);
		/* opcode: NOP, SEND, WAIT or the raw byte */
		if (op < 192)
			w[3] = (uint8_t[]){KINET_WQE_OP_NOP, KINET_WQE_OP_SEND, KINET_WQE_OP_WAIT}[op % 3];
		struct kinet_wqe_ctrl_seg *c = (void *)w;
		uint32_t qpn_ds = kinet_be32(c->qpn_ds);
		if (q < 224)
			c->qpn_ds = kinet_be32(sqn << 8 | (qpn_ds & 0xff));
	}
	}
	pi++;
	return kind;
}

/* The engine waits on a WAIT's time: clamp it to the near future. */
static void clamp_wait(uint8_t *w)
{
	struct kinet_wqe_wait_time_seg seg;
	uint64_t now = clock_ns(CLOCK_REALTIME), t;

	memcpy(&seg, w + KINET_WQE_DS_SIZE, sizeof(seg));
	t = kinet_eth_rt_to_ns(kinet_wqe_wait_time_value(&seg));
	if (t > now + FE_WAIT_MAX_NS) {
		seg.value = kinet_be64(kinet_eth_rt_from_ns(now + t % FE_WAIT_MAX_NS));
		memcpy(w + KINET_WQE_DS_SIZE, &seg, sizeof(seg));
	}
}

/* Whether a data segment must fail the look-up or the length checks. */
static bool data_bad(const uint8_t *unit, uint64_t *total)
{
	struct kinet_wqe_data_seg s;
	uint32_t len, key;
	uint64_t addr, base = (uintptr_t)region;

	memcpy(&s, unit, sizeof(s));
	len = kinet_be32(s.byte_count);
	key = kinet_be32(s.lkey);
	addr = kinet_be64(s.addr);
	*total += len;
	/* The context has one region: any other key names nothing. */
	return (len & KINET_INLINE_SEG_FLAG) || key != lkey || addr < base || addr - base > FE_REGION ||
	       len > FE_REGION - (addr - base);
}

/* Classifies the WQE at w->start (its BBs all written, nbb set). */
static void classify(struct fe_wqe *w, uint64_t end)
{
	const uint8_t *p = bb(w->start);
	const struct kinet_wqe_ctrl_seg *c = (const void *)p;
	uint32_t ds = kinet_wqe_ctrl_ds(c), opcode = kinet_wqe_ctrl_opcode(c),
		 opmod = kinet_wqe_ctrl_opmod(c);
	bool clamped = ds && kinet_wqe_bbs(ds) > end - w->start;

	w->signalled = c->fm_ce_se & KINET_WQE_CTRL_CQ_UPDATE;
	w->structural = kinet_wqe_ctrl_qpn(c) != d->sqn || !ds || clamped;
	w->must_succeed = false;
	if (w->structural) {
		w->must_fail = true;
		return;
	}
	switch (opcode) {
	case KINET_WQE_OP_NOP:
		w->must_fail = false;
		w->must_succeed = true;
		return;
	case KINET_WQE_OP_WAIT:
		w->structural = opmod != KINET_WQE_OPMOD_WAIT_TIME || ds != KINET_ETH_WAIT_TIME_DS;
		w->must_fail = w->structural;
		w->must_succeed = !w->structural;
		return;
	case KINET_WQE_OP_SEND: {
		struct kinet_wqe_eth_seg eth;
		uint64_t total = 0;
		bool bad = false;

		memcpy(&eth, p + KINET_WQE_DS_SIZE, sizeof(eth));
		w->structural = ds < KINET_ETH_SEND_DS_1 || ds > KINET_ETH_SEND_DS_2 || opmod ||
				eth.inline_hdr_sz || eth.mss;
		if (w->structural) {
			w->must_fail = true;
			return;
		}
		for (uint32_t u = 2; u < ds; u++)
			bad |= data_bad(p + u * KINET_WQE_DS_SIZE, &total);
		w->must_fail = bad || total < 14 || total > room ||
			       (eth.cs_flags & ~(KINET_ETH_WQE_L3_CSUM | KINET_ETH_WQE_L4_CSUM));
		return;
	}
	default:
		w->structural = w->must_fail = true;
	}
}

static void ring(void)
{
	struct kinet_dev_qp *q = d->qp;

	__atomic_store_n(&q->dbrec[KINET_DBR_SEND], kinet_be32((uint32_t)pi & 0xffff), __ATOMIC_RELEASE);
	__atomic_store_n(q->db_cpu_pi, pi, __ATOMIC_RELEASE);
}

static void finding(const char *fmt, const struct fe_wqe *w, int nw, int i, uint8_t op, uint8_t synd)
{
	fprintf(stderr, "fuzz_eth: ");
	fprintf(stderr, fmt, i);
	fprintf(stderr, " (CQE opcode 0x%x syndrome 0x%02x)\n", op, synd);
	for (int k = 0; k < nw; k++)
		fprintf(stderr,
			"  WQE %d: BB %llu+%u kind %u signalled %d must_fail %d structural %d "
			"must_succeed %d\n",
			k, (unsigned long long)w[k].start, w[k].nbb, w[k].kind, w[k].signalled,
			w[k].must_fail, w[k].structural, w[k].must_succeed);
	abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz_in in = {data, size};
	struct fe_wqe w[FE_MAX_RECORDS + 2];
	uint8_t cfg = fz_u8(&in);
	bool ring_each = !(cfg & 1);
	uint64_t first = pi, next = pi; /* next: where the next WQE starts */
	int nw = 0, nrec = 0;

	region_fill(cfg >> 1);
	/* Records; a WQE rung once all its BBs are written. */
	while (in.n && nrec < FE_MAX_RECORDS) {
		uint8_t kind = write_record(&in);

		nrec++;
		if (pi - 1 != next)
			continue; /* inside the WQE that starts at next */
		const struct kinet_wqe_ctrl_seg *c = (const void *)bb(next);
		uint32_t ds = kinet_wqe_ctrl_ds(c);

		if (kinet_wqe_ctrl_opcode(c) == KINET_WQE_OP_WAIT)
			clamp_wait(bb(next));
		w[nw] = (struct fe_wqe){.start = next, .nbb = ds ? kinet_wqe_bbs(ds) : 1, .kind = kind};
		next += w[nw].nbb;
		nw++;
		if (ring_each && next == pi)
			ring();
	}
	/* The last WQE may reach past the records: fill, and rung whole it is
	 * clamped to what is posted only if it reaches past the end. */
	while (pi < next) {
		memset(bb(pi), 0, KINET_WQE_BB_SIZE);
		pi++;
	}
	/* The final signalled NOP, at the boundary. */
	kinet_wqe_set_ctrl((void *)bb(pi), KINET_WQE_OP_NOP, (uint16_t)pi, d->sqn, 1,
			   KINET_WQE_CTRL_CQ_UPDATE, 0);
	w[nw++] = (struct fe_wqe){.start = pi, .nbb = 1, .kind = 3};
	pi++;
	for (int k = 0; k < nw; k++)
		classify(&w[k], pi);
	if (trace)
		for (int k = 0; k < nw; k++)
			fprintf(stderr, "WQE BB %llu+%u kind %u signalled %d must_fail %d structural %d\n",
				(unsigned long long)(w[k].start - first), w[k].nbb, w[k].kind, w[k].signalled,
				w[k].must_fail, w[k].structural);
	ring();

	/* CQEs, in WQE order, until the final NOP's. */
	const struct kinet_dev_cq *cq = d->qp->send_cq;
	uint64_t deadline = clock_ns(CLOCK_MONOTONIC) + FE_DEADLINE_NS;
	bool failed = false;
	int k = 0;

	while (k < nw) {
		const struct kinet_cqe64 *cqe = &cq->cqes[ci & cq->mask];

		if (!kinet_cqe_ready(cqe, ci, cq->log_depth)) {
			if (clock_ns(CLOCK_MONOTONIC) > deadline)
				finding("no CQE for WQE %d within 2 s", w, nw, k, 0, 0);
			sched_yield();
			continue;
		}
		atomic_thread_fence(memory_order_acquire);
		uint8_t op = kinet_cqe_opcode(cqe);
		uint8_t synd = kinet_cqe_is_error(cqe)
				       ? ((const struct kinet_err_cqe *)(const void *)cqe)->syndrome
				       : 0;
		uint16_t counter = kinet_cqe_wqe_counter(cqe);

		ci++;
		__atomic_store_n(&cq->dbrec[KINET_CQ_DBR_CI], kinet_be32((uint32_t)ci & KINET_CQ_CI_MASK),
				 __ATOMIC_RELEASE);
		if (trace)
			fprintf(stderr, "CQE BB %llu opcode 0x%x syndrome 0x%02x\n",
				(unsigned long long)(uint16_t)(counter - (uint16_t)first), op, synd);
		/* WQEs before the one it names completed unsignalled. */
		while (k < nw && (uint16_t)w[k].start != counter) {
			if (failed)
				finding("WQE %d flushed without a CQE", w, nw, k, op, synd);
			if (w[k].signalled)
				finding("signalled WQE %d without a CQE", w, nw, k, op, synd);
			if (w[k].must_fail)
				finding("WQE %d must fail, yet no error CQE", w, nw, k, op, synd);
			k++;
		}
		if (k == nw)
			finding("a CQE names no WQE (after %d)", w, nw, k, op, synd);
		if (!kinet_cqe_is_error(cqe)) {
			if (op != KINET_CQE_REQ)
				finding("WQE %d: CQE of an unknown opcode", w, nw, k, op, synd);
			if (failed)
				finding("WQE %d succeeded after an error", w, nw, k, op, synd);
			if (!w[k].signalled)
				finding("unsignalled WQE %d has a success CQE", w, nw, k, op, synd);
			if (w[k].must_fail)
				finding("WQE %d must fail, yet succeeded", w, nw, k, op, synd);
		} else if (failed) {
			if (synd != KINET_SYND_WR_FLUSH_ERR)
				finding("WQE %d after an error is no flush", w, nw, k, op, synd);
		} else {
			failed = true;
			if (synd == KINET_SYND_WR_FLUSH_ERR)
				finding("WQE %d: a flush before any error", w, nw, k, op, synd);
			if (w[k].must_succeed)
				finding("well-formed WQE %d failed", w, nw, k, op, synd);
			if (w[k].structural && synd != KINET_SYND_LOCAL_QP_OP_ERR)
				finding("malformed WQE %d: not LOCAL_QP_OP_ERR", w, nw, k, op, synd);
		}
		k++;
	}
	/* Nothing after the final NOP's CQE. */
	if (kinet_cqe_ready(&cq->cqes[ci & cq->mask], ci, cq->log_depth))
		finding("a CQE past the last WQE (%d)", w, nw, nw, 0, 0);
	if (failed) {
		/* The queue is in the error state: a new one. */
		int rc = kinet_eth_txq_destroy(txq);
		if (rc)
			die("kinet_eth_txq_destroy", rc);
		txq_make();
	}
	return 0;
}
