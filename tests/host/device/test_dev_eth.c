/*
 * The Ethernet device API (kinet/device/eth.cuh) under host emulation,
 * against a NIC the test plays itself: queue descriptors built by hand
 * over host memory (a raw-packet QP each, as kinet_eth_*_export makes
 * them), receive CQEs written with kinet_cqe_eth_rx_encode and the owner
 * bit, WQEs the API wrote compared byte for byte with kinet_eth_wqe_send /
 * kinet_eth_wqe_wait_time, send CQEs written back.  Checked: recv's
 * first_idx / count / attributes, max_pkts, the timeout (bounded, returns
 * with what arrived), slots handed back only at the next call (the receive
 * doorbell record), a full queue dropping, 16-bit wrap of the counters, an
 * error CQE -EIO and sticky, the lock; send's exact WQEs and checksum
 * flags, refused flags, timed sends, tickets, poll and wait, completion
 * moderation, a send error CQE -EIO; the _warp and _block forms (groups
 * of one here); the low level; the clock.  Real kernels:
 * tests/gpu/test_eth_gpu.cu.
 */
#include "kt.h"

#include <kinet/device.cuh>

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NPKTS 16u
#define PKT_SIZE 256u
#define SQ_DEPTH 64u
#define RQN 0x123u
#define SQN 0x456u
#define PKT_LKEY 0x1111u

/* ---- the rig: two raw-packet QPs (receive, send) over host memory ------ */

struct rig {
	struct kinet_dev_error err;
	/* receive side */
	struct kinet_dev_qp rqp;
	struct kinet_dev_cq rcq;
	struct kinet_dev_eth_rxq rxq;
	uint32_t rdbrec[2], rcq_dbrec[2];
	struct kinet_cqe64 *rcqes;
	uint8_t *rq;
	uint8_t *pkt_buf;
	uint64_t nic_rx; /* packets the NIC placed (its WQE counter) */
	uint64_t nic_rx_drops;
	uint64_t nic_rcq_pi; /* receive CQEs written */
	/* send side */
	struct kinet_dev_qp sqp;
	struct kinet_dev_cq scq;
	struct kinet_dev_eth_txq txq;
	uint32_t sdbrec[2], scq_dbrec[2];
	uint64_t db_cpu_pi;
	struct kinet_cqe64 *scqes;
	uint8_t *sq;
	uint64_t *marks;
	uint64_t nic_sq_ci;  /* WQEs the NIC read */
	uint64_t nic_scq_pi; /* send CQEs written */
};

static void *zalloc(size_t n)
{
	void *p = NULL;
	if (posix_memalign(&p, 64, n))
		abort();
	memset(p, 0, n);
	return p;
}

static void cq_init(struct kinet_dev_cq *cq, struct kinet_cqe64 **cqes, uint32_t *dbrec, uint32_t log_depth)
{
	uint32_t depth = 1u << log_depth;
	*cqes = zalloc(depth * sizeof(struct kinet_cqe64));
	for (uint32_t i = 0; i < depth; i++)
		(*cqes)[i].op_own = KINET_CQE_OP_OWN_INIT;
	memset(cq, 0, sizeof(*cq));
	cq->cqes = *cqes;
	cq->dbrec = dbrec;
	cq->log_depth = log_depth;
	cq->mask = depth - 1;
}

/* sharing: enum kinet_qp_sharing of the send QP; every: sq_signal_every. */
static struct rig *rig_new(uint32_t sharing, uint32_t every)
{
	struct rig *r = zalloc(sizeof(*r));

	/* receive QP: NPKTS WQEs, one data segment over slot i each, all
	 * posted (doorbell record = NPKTS), as kinet_eth_rxq_create does */
	r->pkt_buf = zalloc(NPKTS * PKT_SIZE);
	r->rq = zalloc(NPKTS * 16);
	for (uint32_t i = 0; i < NPKTS; i++)
		kinet_wqe_set_data((struct kinet_wqe_data_seg *)(r->rq + 16 * i),
				   (uint64_t)(uintptr_t)(r->pkt_buf + i * PKT_SIZE), PKT_SIZE, PKT_LKEY);
	cq_init(&r->rcq, &r->rcqes, r->rcq_dbrec, 5); /* 32 CQEs > NPKTS */
	r->rqp.qpn = RQN;
	r->rqp.rq = r->rq;
	r->rqp.rq_mask = NPKTS - 1;
	r->rqp.rq_stride = 16;
	r->rqp.rq_max_sge = 1;
	r->rqp.recv_cq = &r->rcq;
	r->rqp.err = &r->err;
	r->rqp.dbrec = r->rdbrec;
	r->rqp.timeout_ns = 2000000000ull;
	r->rqp.rq_reserved = r->rqp.rq_ready = NPKTS;
	r->rdbrec[KINET_DBR_RECV] = kinet_be32(NPKTS);
	r->rxq.qp = &r->rqp;
	r->rxq.pkt_buf = r->pkt_buf;
	r->rxq.max_pkt_size = PKT_SIZE;
	r->rxq.npkts = NPKTS;
	r->rxq.pkt_lkey = PKT_LKEY;
	r->rxq.rqn = RQN;

	/* send QP, CPU doorbell mode */
	r->sq = zalloc(SQ_DEPTH * 64);
	cq_init(&r->scq, &r->scqes, r->scq_dbrec, 7); /* 128 > SQ_DEPTH */
	r->sqp.sq = r->sq;
	r->sqp.sq_mask = SQ_DEPTH - 1;
	r->sqp.sq_log_depth = 6;
	r->sqp.qpn = SQN;
	r->sqp.db_mode = KINET_DB_CPU;
	r->sqp.sharing = sharing;
	r->sqp.dbrec = r->sdbrec;
	r->sqp.db_cpu_pi = &r->db_cpu_pi;
	r->sqp.timeout_ns = 2000000000ull;
	r->sqp.send_cq = &r->scq;
	r->sqp.err = &r->err;
	r->sqp.sq_signal_every = every;
	if (sharing != KINET_SHARE_EXCLUSIVE) {
		r->marks = zalloc(SQ_DEPTH * sizeof(uint64_t));
		r->sqp.sq_marks = r->marks;
	}
	r->txq.qp = &r->sqp;
	r->txq.sqn = SQN;
	r->txq.cs_flags = KINET_ETH_WQE_L3_CSUM | KINET_ETH_WQE_L4_CSUM;
	r->txq.timed = 1;
	return r;
}

static void rig_free(struct rig *r)
{
	free(r->pkt_buf);
	free(r->rq);
	free(r->rcqes);
	free(r->sq);
	free(r->scqes);
	free(r->marks);
	free(r);
}

/* The owner bit of the CQE a NIC writes at index pi (what a consumer at
 * ci == pi expects). */
static uint8_t hw_owner(uint64_t pi, uint32_t log_depth)
{
	return kinet_cqe_sw_owner(pi, log_depth);
}

/* What packet number n carries. */
static uint32_t pkt_len(uint64_t n)
{
	return 60 + (uint32_t)(n * 7 % (PKT_SIZE - 60));
}
static uint64_t pkt_time(uint64_t n)
{
	return 1700000000ull * 1000000000ull + n * 1000003ull;
}

/* The NIC receives packet number nic_rx: into the next posted WQE's slot,
 * or dropped when the device code has handed back none.  1 placed, 0
 * dropped. */
static int nic_rx_packet(struct rig *r)
{
	uint64_t n = r->nic_rx;
	uint16_t posted = (uint16_t)kinet_be32(__atomic_load_n(&r->rdbrec[KINET_DBR_RECV], __ATOMIC_ACQUIRE));
	if ((uint16_t)(posted - (uint16_t)n) == 0) {
		r->nic_rx_drops++;
		return 0;
	}
	struct kinet_wqe_data_seg *wqe = (struct kinet_wqe_data_seg *)(r->rq + 16 * (n & (NPKTS - 1)));
	uint8_t *dst = (uint8_t *)(uintptr_t)kinet_be64(wqe->addr);
	uint32_t len = pkt_len(n);
	for (uint32_t i = 0; i < len; i++)
		dst[i] = (uint8_t)(n + i);
	struct kinet_cqe_eth_rx rx;
	memset(&rx, 0, sizeof(rx));
	rx.byte_cnt = len;
	rx.wqe_counter = (uint16_t)n;
	rx.timestamp = kinet_eth_rt_from_ns(pkt_time(n));
	rx.qpn = RQN;
	rx.l3_hdr_type = n & 1 ? KINET_CQE_L3_HDR_IPV4 : KINET_CQE_L3_HDR_IPV6;
	rx.l4_hdr_type = n % 3 == 0 ? KINET_CQE_L4_HDR_UDP : KINET_CQE_L4_HDR_TCP_ACK_AND_DATA;
	rx.csum_ok = (uint8_t)(KINET_CQE_L2_OK | (n & 2 ? KINET_CQE_L3_OK : 0) | KINET_CQE_L4_OK);
	uint64_t ci = r->nic_rcq_pi++;
	struct kinet_cqe64 *c = &r->rcqes[ci & r->rcq.mask];
	kinet_cqe_eth_rx_encode(c, &rx);
	__atomic_store_n(&c->op_own, kinet_cqe_eth_rx_op_own(hw_owner(ci, r->rcq.log_depth)),
			 __ATOMIC_RELEASE);
	r->nic_rx = n + 1;
	return 1;
}

/* An error CQE on the receive CQ (at the next index). */
static void nic_rx_error(struct rig *r, uint8_t syndrome)
{
	uint64_t n = r->nic_rx;
	uint64_t ci = r->nic_rcq_pi++;
	struct kinet_cqe64 *c = &r->rcqes[ci & r->rcq.mask];
	struct kinet_err_cqe *e = (struct kinet_err_cqe *)c;
	memset(c, 0, 63);
	e->syndrome = syndrome;
	e->wqe_counter = kinet_be16((uint16_t)n);
	e->s_wqe_opcode_qpn = kinet_be32(RQN);
	__atomic_store_n(&c->op_own, (uint8_t)(KINET_CQE_RESP_ERR << 4 | hw_owner(ci, r->rcq.log_depth)),
			 __ATOMIC_RELEASE);
	r->nic_rx = n + 1;
}

static uint32_t rq_doorbell(struct rig *r)
{
	return kinet_be32(__atomic_load_n(&r->rdbrec[KINET_DBR_RECV], __ATOMIC_ACQUIRE));
}

/* Checks packet first + k against what the NIC put there. */
static int pkt_ok(struct rig *r, uint64_t idx, const struct kinet_dev_eth_pkt *p)
{
	const uint8_t *d = kinet_dev_eth_pkt_addr(&r->rxq, idx);
	if (d != r->pkt_buf + (idx % NPKTS) * PKT_SIZE)
		return 0;
	if (p->bytes != pkt_len(idx) || p->timestamp_ns != pkt_time(idx))
		return 0;
	if (p->l3_type != (idx & 1 ? KINET_CQE_L3_HDR_IPV4 : KINET_CQE_L3_HDR_IPV6))
		return 0;
	if (p->l4_type != (idx % 3 == 0 ? KINET_CQE_L4_HDR_UDP : KINET_CQE_L4_HDR_TCP_ACK_AND_DATA))
		return 0;
	if (p->csum_ok != (KINET_CQE_L2_OK | (idx & 2 ? KINET_CQE_L3_OK : 0) | KINET_CQE_L4_OK))
		return 0;
	for (uint32_t i = 0; i < p->bytes; i++)
		if (d[i] != (uint8_t)(idx + i))
			return 0;
	return 1;
}

enum form { F_THREAD, F_WARP, F_BLOCK };

static int recv_form(enum form f, struct rig *r, uint32_t max, uint64_t timeout, uint64_t *first,
		     uint32_t *count, struct kinet_dev_eth_pkt *pkts)
{
	if (f == F_WARP)
		return kinet_dev_eth_rxq_recv_warp(&r->rxq, max, timeout, first, count, pkts);
	if (f == F_BLOCK)
		return kinet_dev_eth_rxq_recv_block(&r->rxq, max, timeout, first, count, pkts);
	return kinet_dev_eth_rxq_recv(&r->rxq, max, timeout, first, count, pkts);
}

/* ---- receive ------------------------------------------------------------ */

static void recv_basic_form(enum form f)
{
	struct rig *r = rig_new(KINET_SHARE_EXCLUSIVE, 1);
	struct kinet_dev_eth_pkt pkts[NPKTS];
	uint64_t first = 99;
	uint32_t count = 99;

	/* nothing yet: at once, count 0 */
	KT_OK(recv_form(f, r, 0, 0, &first, &count, pkts));
	KT_CHECK_EQ(first, 0);
	KT_CHECK_EQ(count, 0);
	KT_CHECK_EQ(rq_doorbell(r), NPKTS);
	for (int i = 0; i < 3; i++)
		KT_CHECK(nic_rx_packet(r));
	KT_OK(recv_form(f, r, 0, 0, &first, &count, pkts));
	KT_CHECK_EQ(first, 0);
	KT_CHECK_EQ(count, 3);
	for (uint32_t k = 0; k < count; k++)
		KT_CHECK(pkt_ok(r, first + k, &pkts[k]));
	/* not handed back yet: the packets are the caller's */
	KT_CHECK_EQ(rq_doorbell(r), NPKTS);
	KT_CHECK_EQ(r->rxq.received, 3);
	KT_CHECK_EQ(r->rxq.retired, 0);
	/* the next call hands them back, then finds nothing */
	KT_OK(recv_form(f, r, 0, 0, &first, &count, NULL));
	KT_CHECK_EQ(first, 3);
	KT_CHECK_EQ(count, 0);
	KT_CHECK_EQ(rq_doorbell(r), NPKTS + 3);
	KT_CHECK_EQ(r->rxq.retired, 3);
	/* max_pkts */
	for (int i = 0; i < 10; i++)
		KT_CHECK(nic_rx_packet(r));
	KT_OK(recv_form(f, r, 4, 0, &first, &count, pkts));
	KT_CHECK_EQ(first, 3);
	KT_CHECK_EQ(count, 4);
	for (uint32_t k = 0; k < count; k++)
		KT_CHECK(pkt_ok(r, first + k, &pkts[k]));
	KT_OK(recv_form(f, r, 4, 0, &first, NULL, pkts));
	KT_CHECK_EQ(first, 7);
	KT_CHECK_EQ(rq_doorbell(r), NPKTS + 7);
	KT_OK(recv_form(f, r, 0, 0, NULL, &count, pkts));
	KT_CHECK_EQ(count, 2);
	KT_CHECK(pkt_ok(r, 11, &pkts[0]) && pkt_ok(r, 12, &pkts[1]));
	KT_CHECK_EQ(rq_doorbell(r), NPKTS + 11);
	/* the CQ consumer index went on too */
	KT_CHECK_EQ(r->rcq.ci, 13);
	rig_free(r);
}

KT_TEST(recv_basic)
{
	recv_basic_form(F_THREAD);
}

KT_TEST(recv_basic_warp)
{
	recv_basic_form(F_WARP);
}

KT_TEST(recv_basic_block)
{
	recv_basic_form(F_BLOCK);
}

/* A full queue drops; a slot is only reused once handed back; thousands of
 * packets through 16 slots wrap the 16-bit WQE counter and doorbell. */
KT_TEST(recv_full_and_wrap)
{
	struct rig *r = rig_new(KINET_SHARE_EXCLUSIVE, 1);
	struct kinet_dev_eth_pkt pkts[NPKTS];
	uint64_t first, expect = 0;
	uint32_t count;

	for (uint32_t i = 0; i < NPKTS; i++)
		KT_CHECK(nic_rx_packet(r));
	KT_CHECK(!nic_rx_packet(r)); /* no slot: dropped */
	KT_OK(kinet_dev_eth_rxq_recv(&r->rxq, 0, 0, &first, &count, pkts));
	KT_CHECK_EQ(count, NPKTS);
	KT_CHECK(!nic_rx_packet(r)); /* still the caller's */
	KT_CHECK_EQ(r->nic_rx_drops, 2);
	expect = NPKTS;
	srand(7);
	for (int iter = 0; expect < 70000; iter++) {
		KT_CHECK(iter < 1000000); /* a queue that stopped moving */
		uint32_t arrive = (uint32_t)rand() % (NPKTS + 1), max = (uint32_t)rand() % (NPKTS + 2);
		KT_OK(kinet_dev_eth_rxq_recv(&r->rxq, max, 0, &first, &count, pkts));
		KT_CHECK_EQ(first, expect);
		for (uint32_t k = 0; k < count; k++)
			KT_CHECK(pkt_ok(r, first + k, &pkts[k]));
		expect += count;
		for (uint32_t i = 0; i < arrive; i++)
			nic_rx_packet(r);
		KT_CHECK(r->nic_rx - expect <= NPKTS);
	}
	KT_CHECK(r->nic_rx_drops > 2);
	rig_free(r);
}

struct nic_thread {
	struct rig *r;
	uint64_t delay_ns;
	int npkts;
	pthread_t th;
};

static void *nic_later(void *p)
{
	struct nic_thread *t = p;
	struct timespec ts = {.tv_sec = 0, .tv_nsec = (long)t->delay_ns};
	nanosleep(&ts, NULL);
	for (int i = 0; i < t->npkts; i++)
		nic_rx_packet(t->r);
	return NULL;
}

static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The timeout: nothing arrives (bounded); some arrive (returns with them
 * at the timeout); max_pkts arrive (returns then, long before it). */
KT_TEST(recv_timeout)
{
	struct rig *r = rig_new(KINET_SHARE_EXCLUSIVE, 1);
	struct kinet_dev_eth_pkt pkts[NPKTS];
	uint64_t first, t0, dt;
	uint32_t count;
	struct nic_thread nt = {.r = r, .delay_ns = 10000000, .npkts = 2};

	t0 = mono_ns();
	KT_OK(kinet_dev_eth_rxq_recv(&r->rxq, 4, 30000000, &first, &count, pkts));
	dt = mono_ns() - t0;
	KT_CHECK_EQ(count, 0);
	KT_CHECK(dt >= 30000000 && dt < 2000000000);

	KT_CHECK_EQ(pthread_create(&nt.th, NULL, nic_later, &nt), 0);
	t0 = mono_ns();
	KT_OK(kinet_dev_eth_rxq_recv_block(&r->rxq, 4, 100000000, &first, &count, pkts));
	dt = mono_ns() - t0;
	pthread_join(nt.th, NULL);
	KT_CHECK_EQ(count, 2);
	KT_CHECK(pkt_ok(r, 0, &pkts[0]) && pkt_ok(r, 1, &pkts[1]));
	KT_CHECK(dt >= 100000000 && dt < 3000000000ull);

	nt.npkts = 4;
	KT_CHECK_EQ(pthread_create(&nt.th, NULL, nic_later, &nt), 0);
	t0 = mono_ns();
	KT_OK(kinet_dev_eth_rxq_recv_warp(&r->rxq, 4, 20000000000ull, &first, &count, pkts));
	dt = mono_ns() - t0;
	pthread_join(nt.th, NULL);
	KT_CHECK_EQ(first, 2);
	KT_CHECK_EQ(count, 4);
	for (uint32_t k = 0; k < 4; k++)
		KT_CHECK(pkt_ok(r, 2 + k, &pkts[k]));
	KT_CHECK(dt < 5000000000ull);
	rig_free(r);
}

/* An error CQE: -EIO with the packets before it, then -EIO at once, the
 * context's record filled; never taken for "not yet". */
KT_TEST(recv_error)
{
	struct rig *r = rig_new(KINET_SHARE_EXCLUSIVE, 1);
	struct kinet_dev_eth_pkt pkts[NPKTS];
	uint64_t first, t0;
	uint32_t count;

	KT_CHECK(nic_rx_packet(r));
	KT_CHECK(nic_rx_packet(r));
	nic_rx_error(r, 0x13);
	t0 = mono_ns();
	KT_CHECK_EQ(kinet_dev_eth_rxq_recv(&r->rxq, 0, 5000000000ull, &first, &count, pkts), -EIO);
	KT_CHECK(mono_ns() - t0 < 1000000000ull); /* not waited out as "nothing yet" */
	KT_CHECK_EQ(first, 0);
	KT_CHECK_EQ(count, 2);
	KT_CHECK(pkt_ok(r, 0, &pkts[0]) && pkt_ok(r, 1, &pkts[1]));
	KT_CHECK_EQ(kinet_dev_qp_recv_error(&r->rqp), 0x13);
	KT_CHECK_EQ(r->err.valid, 1);
	KT_CHECK_EQ(r->err.status, -EIO);
	KT_CHECK_EQ(r->err.qpn, RQN);
	KT_CHECK_EQ(r->err.syndrome, 0x13);
	KT_CHECK_EQ(kinet_dev_eth_rxq_recv(&r->rxq, 0, 0, &first, &count, pkts), -EIO);
	KT_CHECK_EQ(count, 0);
	KT_CHECK_EQ(kinet_dev_eth_rxq_recv_warp(&r->rxq, 0, 0, &first, &count, pkts), -EIO);
	KT_CHECK_EQ(kinet_dev_eth_rxq_recv_block(&r->rxq, 0, 0, &first, &count, pkts), -EIO);
	KT_CHECK_EQ(r->rxq.lock, 0);
	rig_free(r);

	/* a CQE for another slot than the queue expects: out of step, -EIO */
	r = rig_new(KINET_SHARE_EXCLUSIVE, 1);
	r->nic_rx = 5; /* the NIC skipped WQEs */
	r->rdbrec[KINET_DBR_RECV] = kinet_be32(NPKTS + 5);
	KT_CHECK(nic_rx_packet(r));
	KT_CHECK_EQ(kinet_dev_eth_rxq_recv(&r->rxq, 0, 0, &first, &count, pkts), -EIO);
	KT_CHECK_EQ(count, 0);
	KT_CHECK(kinet_dev_qp_recv_error(&r->rqp) == 0 && r->rqp.rq_error != 0);
	rig_free(r);
}

/* One receiving group at a time. */
KT_TEST(recv_busy)
{
	struct rig *r = rig_new(KINET_SHARE_EXCLUSIVE, 1);
	uint64_t first = 5;
	uint32_t count = 5;

	KT_CHECK(nic_rx_packet(r));
	r->rxq.lock = 1; /* another group inside */
	KT_CHECK_EQ(kinet_dev_eth_rxq_recv(&r->rxq, 0, 1000000, &first, &count, NULL), -EBUSY);
	KT_CHECK_EQ(count, 0);
	KT_CHECK_EQ(r->rxq.received, 0);
	KT_CHECK_EQ(r->rcq.ci, 0);
	r->rxq.lock = 0;
	KT_OK(kinet_dev_eth_rxq_recv(&r->rxq, 0, 0, &first, &count, NULL));
	KT_CHECK_EQ(count, 1);
	rig_free(r);
}

/* ---- send --------------------------------------------------------------- */

/* The NIC reads the WQEs rung so far; writes a good CQE for each that
 * asked for one (error: an error CQE for the first instead, and flush
 * errors are not needed: completions are cumulative).  Returns the WQEs
 * read. */
static uint32_t nic_tx(struct rig *r, uint8_t error_syndrome)
{
	uint64_t pi = __atomic_load_n(&r->db_cpu_pi, __ATOMIC_ACQUIRE);
	uint32_t n = (uint32_t)(pi - r->nic_sq_ci);
	while (r->nic_sq_ci < pi) {
		uint64_t i = r->nic_sq_ci++;
		const struct kinet_wqe_ctrl_seg *ctrl = (const void *)(r->sq + (i % SQ_DEPTH) * 64);
		if (!(ctrl->fm_ce_se & KINET_WQE_CTRL_CQ_UPDATE) && !error_syndrome)
			continue;
		uint64_t ci = r->nic_scq_pi++;
		struct kinet_cqe64 *c = &r->scqes[ci & r->scq.mask];
		memset(c, 0, 63);
		c->wqe_counter = kinet_be16((uint16_t)i);
		c->sop_drop_qpn = kinet_be32((uint32_t)kinet_wqe_ctrl_opcode(ctrl) << 24 | SQN);
		uint8_t op = KINET_CQE_REQ;
		if (error_syndrome) {
			((struct kinet_err_cqe *)c)->syndrome = error_syndrome;
			op = KINET_CQE_REQ_ERR;
			error_syndrome = 0;
			r->nic_sq_ci = pi; /* the rest: flushed, covered by this CQE */
		}
		__atomic_store_n(&c->op_own, (uint8_t)(op << 4 | hw_owner(ci, r->scq.log_depth)),
				 __ATOMIC_RELEASE);
	}
	return n;
}

static const uint8_t *sq_slot(struct rig *r, uint64_t idx)
{
	return r->sq + (idx % SQ_DEPTH) * 64;
}

static void want_send(struct kinet_eth_send_wqe *w, uint64_t idx, uint8_t sig, uint8_t cs, const void *addr,
		      uint32_t len, uint32_t lkey)
{
	memset(w, 0, sizeof(*w));
	kinet_eth_wqe_send(w, (uint16_t)idx, SQN, sig, cs, (uint64_t)(uintptr_t)addr, len, lkey);
}

static void want_wait(struct kinet_eth_wait_wqe *w, uint64_t idx, uint8_t sig, uint64_t t)
{
	memset(w, 0, sizeof(*w));
	kinet_eth_wqe_wait_time(w, (uint16_t)idx, SQN, sig, kinet_eth_rt_from_ns(t));
}

static int send_form(enum form f, struct rig *r, const void *a, uint32_t lkey, uint32_t len, uint32_t flags,
		     uint64_t *tk)
{
	if (f == F_WARP)
		return kinet_dev_eth_txq_send_warp(&r->txq, a, lkey, len, flags, tk);
	if (f == F_BLOCK)
		return kinet_dev_eth_txq_send_block(&r->txq, a, lkey, len, flags, tk);
	return kinet_dev_eth_txq_send(&r->txq, a, lkey, len, flags, tk);
}

static int send_at_form(enum form f, struct rig *r, uint64_t t, const void *a, uint32_t lkey, uint32_t len,
			uint32_t flags, uint64_t *tk)
{
	if (f == F_WARP)
		return kinet_dev_eth_txq_send_at_warp(&r->txq, t, a, lkey, len, flags, tk);
	if (f == F_BLOCK)
		return kinet_dev_eth_txq_send_at_block(&r->txq, t, a, lkey, len, flags, tk);
	return kinet_dev_eth_txq_send_at(&r->txq, t, a, lkey, len, flags, tk);
}

static uint8_t frame[2048];

static void send_form_test(enum form f, uint32_t sharing)
{
	struct rig *r = rig_new(sharing, 1);
	struct kinet_eth_send_wqe ws;
	struct kinet_eth_wait_wqe ww;
	uint64_t tk = 0, t;

	/* both checksums; every WQE signalled (signal_every 1) */
	KT_OK(send_form(f, r, frame, 0x77, 1514, KINET_DEV_ETH_L3_CSUM | KINET_DEV_ETH_L4_CSUM, &tk));
	KT_CHECK_EQ(tk, 1);
	KT_CHECK_EQ(r->db_cpu_pi, 1);
	want_send(&ws, 0, KINET_WQE_CTRL_CQ_UPDATE, KINET_ETH_WQE_L3_CSUM | KINET_ETH_WQE_L4_CSUM, frame,
		  1514, 0x77);
	KT_CHECK_BYTES("send wqe", sq_slot(r, 0), &ws, 64);
	KT_CHECK_EQ(kinet_dev_eth_txq_poll(&r->txq, tk), -EAGAIN);
	KT_CHECK_EQ(nic_tx(r, 0), 1);
	KT_OK(kinet_dev_eth_txq_poll(&r->txq, tk));
	KT_OK(kinet_dev_eth_txq_wait(&r->txq, tk));

	/* L4 only, then none */
	KT_OK(send_form(f, r, frame + 64, 0x78, 60, KINET_DEV_ETH_L4_CSUM, &tk));
	want_send(&ws, 1, KINET_WQE_CTRL_CQ_UPDATE, KINET_ETH_WQE_L4_CSUM, frame + 64, 60, 0x78);
	KT_CHECK_BYTES("send wqe l4", sq_slot(r, 1), &ws, 64);
	KT_OK(send_form(f, r, frame + 128, 0x79, 61, 0, &tk));
	want_send(&ws, 2, KINET_WQE_CTRL_CQ_UPDATE, 0, frame + 128, 61, 0x79);
	KT_CHECK_BYTES("send wqe none", sq_slot(r, 2), &ws, 64);
	KT_CHECK_EQ(tk, 3);
	KT_CHECK_EQ(r->db_cpu_pi, 3);

	/* timed */
	t = kinet_dev_eth_now_ns() + 1000000;
	KT_OK(send_at_form(f, r, t, frame, 0x7a, 100, KINET_DEV_ETH_L3_CSUM, &tk));
	KT_CHECK_EQ(tk, 5);
	KT_CHECK_EQ(r->db_cpu_pi, 5);
	want_wait(&ww, 3, KINET_WQE_CTRL_CQ_UPDATE, t);
	KT_CHECK_BYTES("wait wqe", sq_slot(r, 3), &ww, 64);
	want_send(&ws, 4, KINET_WQE_CTRL_CQ_UPDATE, KINET_ETH_WQE_L3_CSUM, frame, 100, 0x7a);
	KT_CHECK_BYTES("timed send wqe", sq_slot(r, 4), &ws, 64);
	KT_CHECK_EQ(nic_tx(r, 0), 4);
	KT_OK(kinet_dev_eth_txq_wait(&r->txq, tk));

	/* refused: flags beyond the queue's, unknown flags, not timed */
	r->txq.cs_flags = KINET_ETH_WQE_L3_CSUM;
	KT_CHECK_EQ(send_form(f, r, frame, 1, 64, KINET_DEV_ETH_L4_CSUM, &tk), -EINVAL);
	KT_CHECK_EQ(tk, 0);
	KT_CHECK_EQ(send_form(f, r, frame, 1, 64, 0x80, &tk), -EINVAL);
	r->txq.cs_flags = 0;
	KT_CHECK_EQ(send_form(f, r, frame, 1, 64, KINET_DEV_ETH_L3_CSUM, &tk), -EINVAL);
	KT_OK(send_form(f, r, frame, 1, 64, KINET_DEV_ETH_NOTIFY, &tk));
	KT_CHECK_EQ(tk, 6);
	r->txq.timed = 0;
	KT_CHECK_EQ(send_at_form(f, r, t, frame, 1, 64, 0, &tk), -EOPNOTSUPP);
	KT_CHECK_EQ(r->sqp.sq_reserved, 6); /* nothing reserved by a refused call */
	KT_CHECK_EQ(r->db_cpu_pi, 6);
	/* len 0: the thread form refuses it, a group member sends nothing */
	if (f == F_THREAD) {
		KT_CHECK_EQ(send_form(f, r, frame, 1, 0, 0, &tk), -EINVAL);
	} else {
		tk = 9;
		KT_OK(send_form(f, r, frame, 1, 0, 0, &tk));
		KT_CHECK_EQ(tk, 0);
		KT_OK(send_at_form(f, r, t, frame, 1, 0, 0, &tk)); /* nothing to send: not refused */
	}
	KT_CHECK_EQ(r->sqp.sq_reserved, 6);
	KT_CHECK_EQ(nic_tx(r, 0), 1);
	KT_OK(kinet_dev_eth_txq_wait(&r->txq, 6));

	/* many sends: slots reused round the ring */
	r->txq.timed = 1;
	for (uint64_t i = 0; i < 5 * SQ_DEPTH; i++) {
		KT_OK(send_form(f, r, frame + i, 0x100 + (uint32_t)i, 60 + (uint32_t)(i % 100), 0, &tk));
		want_send(&ws, tk - 1, KINET_WQE_CTRL_CQ_UPDATE, 0, frame + i, 60 + (uint32_t)(i % 100),
			  0x100 + (uint32_t)i);
		KT_CHECK_BYTES("ring send", sq_slot(r, tk - 1), &ws, 64);
		if (i % 7 == 0)
			nic_tx(r, 0);
		if (i % 5 == 0 && kinet_dev_eth_txq_poll(&r->txq, tk) == -EAGAIN) {
			nic_tx(r, 0);
			KT_OK(kinet_dev_eth_txq_poll(&r->txq, tk));
		}
	}
	nic_tx(r, 0);
	KT_OK(kinet_dev_eth_txq_wait(&r->txq, tk));
	KT_CHECK_EQ(r->sqp.sq_done, r->sqp.sq_reserved);
	KT_CHECK_EQ(r->err.valid, 0);
	rig_free(r);
}

KT_TEST(send_thread)
{
	send_form_test(F_THREAD, KINET_SHARE_EXCLUSIVE);
}

KT_TEST(send_warp)
{
	send_form_test(F_WARP, KINET_SHARE_EXCLUSIVE);
}

KT_TEST(send_block)
{
	send_form_test(F_BLOCK, KINET_SHARE_EXCLUSIVE);
}

/* A shared queue (combined doorbells through sq_marks). */
KT_TEST(send_shared_gpu)
{
	send_form_test(F_THREAD, KINET_SHARE_GPU);
}

KT_TEST(send_shared_cta_block)
{
	send_form_test(F_BLOCK, KINET_SHARE_CTA);
}

/* Completion moderation: unsignalled sends but every 4th; NOTIFY asks;
 * poll of an uncovered ticket posts a signalled NOP. */
KT_TEST(send_moderation)
{
	struct rig *r = rig_new(KINET_SHARE_EXCLUSIVE, 4);
	struct kinet_eth_send_wqe ws;
	uint64_t tk;

	/* the queue is idle: the first send asks (the caller likely waits) */
	KT_OK(kinet_dev_eth_txq_send(&r->txq, frame, 1, 64, 0, &tk));
	want_send(&ws, 0, KINET_WQE_CTRL_CQ_UPDATE, 0, frame, 64, 1);
	KT_CHECK_BYTES("idle send", sq_slot(r, 0), &ws, 64);
	/* not idle any more (no CQE consumed): index 1 does not ask, 3 does */
	KT_OK(kinet_dev_eth_txq_send(&r->txq, frame, 1, 64, 0, &tk));
	want_send(&ws, 1, 0, 0, frame, 64, 1);
	KT_CHECK_BYTES("moderated send", sq_slot(r, 1), &ws, 64);
	KT_OK(kinet_dev_eth_txq_send(&r->txq, frame, 1, 64, KINET_DEV_ETH_NOTIFY, &tk));
	want_send(&ws, 2, KINET_WQE_CTRL_CQ_UPDATE, 0, frame, 64, 1);
	KT_CHECK_BYTES("notify send", sq_slot(r, 2), &ws, 64);
	KT_OK(kinet_dev_eth_txq_send(&r->txq, frame, 1, 64, 0, &tk));
	want_send(&ws, 3, KINET_WQE_CTRL_CQ_UPDATE, 0, frame, 64, 1);
	KT_CHECK_BYTES("every 4th", sq_slot(r, 3), &ws, 64);
	KT_OK(kinet_dev_eth_txq_send(&r->txq, frame, 1, 64, 0, &tk));
	KT_CHECK_EQ(tk, 5);
	want_send(&ws, 4, 0, 0, frame, 64, 1);
	KT_CHECK_BYTES("moderated send 2", sq_slot(r, 4), &ws, 64);
	KT_CHECK_EQ(nic_tx(r, 0), 5);
	/* ticket 5: no CQE covers it; poll posts a signalled NOP (index 5) */
	KT_CHECK_EQ(kinet_dev_eth_txq_poll(&r->txq, tk), -EAGAIN);
	KT_CHECK_EQ(r->db_cpu_pi, 6);
	KT_CHECK_EQ(kinet_wqe_ctrl_opcode((const void *)sq_slot(r, 5)), KINET_WQE_OP_NOP);
	KT_CHECK(((const struct kinet_wqe_ctrl_seg *)sq_slot(r, 5))->fm_ce_se & KINET_WQE_CTRL_CQ_UPDATE);
	KT_CHECK_EQ(nic_tx(r, 0), 1);
	KT_OK(kinet_dev_eth_txq_poll(&r->txq, tk));
	KT_OK(kinet_dev_eth_txq_wait(&r->txq, tk));
	KT_CHECK_EQ(r->sqp.sq_done, 6);
	rig_free(r);
}

/* A send's error CQE: poll and wait -EIO, later sends -EIO, the record. */
KT_TEST(send_error)
{
	struct rig *r = rig_new(KINET_SHARE_EXCLUSIVE, 1);
	uint64_t tk, tk2;

	KT_OK(kinet_dev_eth_txq_send(&r->txq, frame, 1, 64, 0, &tk));
	KT_OK(kinet_dev_eth_txq_send(&r->txq, frame, 1, 64, 0, &tk2));
	KT_CHECK_EQ(nic_tx(r, 0x02), 2);
	KT_CHECK_EQ(kinet_dev_eth_txq_poll(&r->txq, tk), -EIO);
	KT_CHECK_EQ(kinet_dev_eth_txq_wait(&r->txq, tk2), -EIO);
	KT_CHECK_EQ(kinet_dev_qp_error(&r->sqp), 0x02);
	KT_CHECK_EQ(kinet_dev_eth_txq_send(&r->txq, frame, 1, 64, 0, &tk), -EIO);
	KT_CHECK_EQ(kinet_dev_eth_txq_send_at_block(&r->txq, 1, frame, 1, 64, 0, &tk), -EIO);
	KT_CHECK_EQ(r->err.valid, 1);
	KT_CHECK_EQ(r->err.status, -EIO);
	KT_CHECK_EQ(r->err.qpn, SQN);
	KT_CHECK_EQ(r->err.syndrome, 0x02);
	KT_CHECK_EQ(r->err.opcode, KINET_WQE_OP_SEND);
	rig_free(r);
}

/* wait is bounded by the QP's timeout, recorded. */
KT_TEST(send_wait_timeout)
{
	struct rig *r = rig_new(KINET_SHARE_EXCLUSIVE, 1);
	uint64_t tk, t0, dt;

	r->sqp.timeout_ns = 50000000;
	KT_OK(kinet_dev_eth_txq_send(&r->txq, frame, 1, 64, 0, &tk));
	t0 = mono_ns();
	KT_CHECK_EQ(kinet_dev_eth_txq_wait(&r->txq, tk), -ETIMEDOUT);
	dt = mono_ns() - t0;
	KT_CHECK(dt >= 50000000 && dt < 3000000000ull);
	KT_CHECK_EQ(r->err.status, -ETIMEDOUT);
	rig_free(r);
}

/* The low level: reserve, prepare, submit. */
KT_TEST(send_low_level)
{
	struct rig *r = rig_new(KINET_SHARE_EXCLUSIVE, 1);
	struct kinet_eth_send_wqe ws;
	struct kinet_eth_wait_wqe ww;
	uint64_t idx, t = 1800000000ull * 1000000000ull + 123456789ull;

	KT_OK(kinet_dev_eth_txq_reserve(&r->txq, 3, &idx));
	KT_CHECK_EQ(idx, 0);
	KT_OK(kinet_dev_eth_wqe_prep_wait_time(&r->txq, idx, t));
	KT_OK(kinet_dev_eth_wqe_prep_send(&r->txq, idx + 1, KINET_DEV_ETH_L3_CSUM, frame, 5, 128));
	KT_OK(kinet_dev_eth_wqe_prep_send(&r->txq, idx + 2, KINET_DEV_ETH_NOTIFY | KINET_DEV_ETH_L4_CSUM,
					  frame + 8, 6, 256));
	KT_CHECK_EQ(r->db_cpu_pi, 0); /* nothing rung before submit */
	KT_OK(kinet_dev_eth_txq_submit(&r->txq, idx, 3));
	KT_CHECK_EQ(r->db_cpu_pi, 3);
	want_wait(&ww, 0, 0, t);
	KT_CHECK_BYTES("ll wait", sq_slot(r, 0), &ww, 64);
	KT_CHECK(kinet_wqe_wait_time_value(&((const struct kinet_eth_wait_wqe *)sq_slot(r, 0))->wait) ==
		 (1800000000ull << 32 | 123456789ull));
	want_send(&ws, 1, 0, KINET_ETH_WQE_L3_CSUM, frame, 128, 5);
	KT_CHECK_BYTES("ll send", sq_slot(r, 1), &ws, 64);
	want_send(&ws, 2, KINET_WQE_CTRL_CQ_UPDATE, KINET_ETH_WQE_L4_CSUM, frame + 8, 256, 6);
	KT_CHECK_BYTES("ll send notify", sq_slot(r, 2), &ws, 64);
	KT_CHECK_EQ(nic_tx(r, 0), 3);
	KT_OK(kinet_dev_eth_txq_wait(&r->txq, idx + 3));
	/* refused: nothing written */
	memset(r->sq + 3 * 64, 0xab, 64);
	r->txq.cs_flags = 0;
	KT_CHECK_EQ(kinet_dev_eth_wqe_prep_send(&r->txq, 3, KINET_DEV_ETH_L3_CSUM, frame, 1, 64), -EINVAL);
	KT_CHECK_EQ(kinet_dev_eth_wqe_prep_send(&r->txq, 3, 0, frame, 1, 0), -EINVAL);
	KT_CHECK_EQ(kinet_dev_eth_wqe_prep_send(&r->txq, 3, 0x100, frame, 1, 64), -EINVAL);
	r->txq.timed = 0;
	KT_CHECK_EQ(kinet_dev_eth_wqe_prep_wait_time(&r->txq, 3, t), -EOPNOTSUPP);
	KT_CHECK_EQ(sq_slot(r, 3)[0], 0xab);
	KT_CHECK_EQ(sq_slot(r, 3)[63], 0xab);
	KT_CHECK_EQ(kinet_dev_eth_txq_reserve(&r->txq, 0, &idx), -EINVAL);
	KT_CHECK_EQ(kinet_dev_eth_txq_reserve(&r->txq, SQ_DEPTH + 1, &idx), -EINVAL);
	rig_free(r);
}

/* The clock: CLOCK_REALTIME. */
KT_TEST(clock_realtime)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	uint64_t host = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	uint64_t dev = kinet_dev_eth_now_ns();
	KT_CHECK(dev >= host && dev - host < 1000000000ull);
}

KT_MAIN(recv_basic, recv_basic_warp, recv_basic_block, recv_full_and_wrap, recv_timeout, recv_error,
	recv_busy, send_thread, send_warp, send_block, send_shared_gpu, send_shared_cta_block,
	send_moderation, send_error, send_wait_timeout, send_low_level, clock_realtime)
