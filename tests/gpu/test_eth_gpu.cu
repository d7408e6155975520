/*
 * The Ethernet device API (kinet/device/eth.cuh) in real kernels, against
 * a NIC a host thread plays over pinned, mapped host memory (as
 * tests/host/device/test_dev_eth.c does under emulation): queue
 * descriptors in GPU memory, rings, doorbell records, CQEs and packet
 * buffers in host memory.  One block of 64 threads (two warps) runs every
 * form: kinet_dev_eth_rxq_recv, _warp, _block (the running index, every
 * packet's bytes and attributes), kinet_dev_eth_txq_send, send_at and their
 * _warp / _block forms (a lane sending nothing among them), poll, wait,
 * and the low level (reserve, prep_send, prep_wait_time, submit); the NIC
 * thread checks every WQE it reads (opcode, ds, queue number, checksum
 * flags, wait-on-time value, the frame's bytes) and counts the frames per
 * length.  Skips (exit 77) without a CUDA device.  The end-to-end test
 * with the software NIC's real queues is the examples' (examples/eth).
 */
#include <cuda_runtime.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kinet/device.cuh"

#define NPKTS 64u
#define PKT_SIZE 512u
#define SQ_DEPTH 128u
#define RQN 0x321u
#define SQN 0x654u
#define PKT_LKEY 0x42u
#define FRAME_LKEY 0x43u
#define THREADS 64u
#define RX_TOTAL 3000u /* packets the NIC delivers */
#define FRAMES 4096u   /* frame buffer: frame of length L at L * 4 (L < 1024) */
#define TIMEOUT_NS (20ull * 1000000000ull)

struct ctl {
	unsigned int failed;
	unsigned int fail_line;
	unsigned int stop;     /* the kernel is done */
	unsigned int nic_fail; /* the NIC saw a bad WQE */
	unsigned int nic_line;
	unsigned int pad;
	unsigned long long rx_delivered;
	unsigned long long tx_frames;
	unsigned long long tx_waits;
	unsigned long long tx_len[1024]; /* frames sent per length */
	unsigned long long rx_seen;	 /* packets the kernel received */
};

struct rig {
	struct kinet_dev_qp *rqp, *sqp; /* GPU memory */
	struct kinet_dev_cq *rcq, *scq;
	struct kinet_dev_eth_rxq *rxq;
	struct kinet_dev_eth_txq *txq;
	struct kinet_dev_error *err; /* mapped */
	/* host memory (mapped) */
	uint32_t *rdbrec, *rcq_dbrec, *sdbrec, *scq_dbrec;
	unsigned long long *db_cpu_pi;
	struct kinet_cqe64 *rcqes, *scqes;
	uint8_t *rq, *pkt_buf, *sq, *frames;
	struct ctl *ctl;
};

static void *mapped(size_t n)
{
	void *p = NULL;
	if (cudaHostAlloc(&p, n, cudaHostAllocMapped) != cudaSuccess) {
		fprintf(stderr, "cudaHostAlloc failed\n");
		exit(1);
	}
	memset(p, 0, n);
	return p;
}

/* ---- the NIC (a host thread) --------------------------------------------- */

__host__ __device__ static uint32_t rx_len(uint64_t n)
{
	return 60 + (uint32_t)(n * 13 % (PKT_SIZE - 60));
}

__host__ __device__ static uint64_t rx_time(uint64_t n)
{
	return 1700000000ull * 1000000000ull + n * 777ull;
}

/* Checksums a frame of length len asks for (both forms agree). */
__host__ __device__ static uint32_t tx_flags(uint32_t len)
{
	return len % 3 == 0   ? 0u
	       : len % 3 == 1 ? KINET_DEV_ETH_L3_CSUM
			      : KINET_DEV_ETH_L3_CSUM | KINET_DEV_ETH_L4_CSUM;
}

__host__ __device__ static uint8_t tx_cs(uint32_t len)
{
	uint32_t f = tx_flags(len);
	return (uint8_t)((f & KINET_DEV_ETH_L3_CSUM ? KINET_ETH_WQE_L3_CSUM : 0) |
			 (f & KINET_DEV_ETH_L4_CSUM ? KINET_ETH_WQE_L4_CSUM : 0));
}

#define NIC_CHECK(r, cond)                                                                                   \
	do {                                                                                                 \
		if (!(cond) && !(r)->ctl->nic_fail) {                                                        \
			(r)->ctl->nic_line = __LINE__;                                                       \
			__atomic_store_n(&(r)->ctl->nic_fail, 1u, __ATOMIC_RELEASE);                         \
		}                                                                                            \
	} while (0)

static void *nic_main(void *p)
{
	struct rig *r = (struct rig *)p;
	uint64_t rx = 0, rcq_pi = 0, sq_ci = 0, scq_pi = 0;
	const uint32_t rlog = 7, slog = 8; /* CQ depths 128 > NPKTS, 256 > SQ_DEPTH */

	while (!__atomic_load_n(&r->ctl->stop, __ATOMIC_ACQUIRE)) {
		/* receive: as far as the posted WQEs allow */
		uint16_t posted =
			(uint16_t)kinet_be32(__atomic_load_n(&r->rdbrec[KINET_DBR_RECV], __ATOMIC_ACQUIRE));
		while (rx < RX_TOTAL && (uint16_t)(posted - (uint16_t)rx) != 0) {
			uint8_t *dst = r->pkt_buf + (rx % NPKTS) * PKT_SIZE;
			uint32_t len = rx_len(rx);
			for (uint32_t i = 0; i < len; i++)
				dst[i] = (uint8_t)(rx * 7 + i);
			struct kinet_cqe_eth_rx e;
			memset(&e, 0, sizeof(e));
			e.byte_cnt = len;
			e.wqe_counter = (uint16_t)rx;
			e.timestamp = kinet_eth_rt_from_ns(rx_time(rx));
			e.qpn = RQN;
			e.l3_hdr_type = KINET_CQE_L3_HDR_IPV4;
			e.l4_hdr_type = (uint8_t)(rx % 5);
			e.csum_ok = (uint8_t)(rx & 7);
			struct kinet_cqe64 *c = &r->rcqes[rcq_pi & ((1u << rlog) - 1)];
			kinet_cqe_eth_rx_encode(c, &e);
			__atomic_store_n(&c->op_own,
					 kinet_cqe_eth_rx_op_own(kinet_cqe_sw_owner(rcq_pi, rlog)),
					 __ATOMIC_RELEASE);
			rcq_pi++;
			rx++;
			__atomic_store_n(&r->ctl->rx_delivered, (unsigned long long)rx, __ATOMIC_RELEASE);
		}
		/* send: every WQE rung */
		uint64_t pi = __atomic_load_n(r->db_cpu_pi, __ATOMIC_ACQUIRE);
		while (sq_ci < pi) {
			const uint8_t *w = r->sq + (sq_ci % SQ_DEPTH) * 64;
			const struct kinet_wqe_ctrl_seg *ctrl = (const struct kinet_wqe_ctrl_seg *)w;
			uint8_t op = kinet_wqe_ctrl_opcode(ctrl);
			NIC_CHECK(r, kinet_wqe_ctrl_index(ctrl) == (uint16_t)sq_ci);
			NIC_CHECK(r, kinet_wqe_ctrl_qpn(ctrl) == SQN);
			if (op == KINET_WQE_OP_SEND) {
				const struct kinet_eth_send_wqe *s = (const struct kinet_eth_send_wqe *)w;
				uint32_t len = kinet_be32(s->data[0].byte_count);
				const uint8_t *f = (const uint8_t *)(uintptr_t)kinet_be64(s->data[0].addr);
				NIC_CHECK(r, kinet_wqe_ctrl_ds(ctrl) == KINET_ETH_SEND_DS_1);
				NIC_CHECK(r, len > 0 && len < 1024);
				NIC_CHECK(r, kinet_be32(s->data[0].lkey) == FRAME_LKEY);
				NIC_CHECK(r, f == r->frames + (size_t)len * 4);
				NIC_CHECK(r, kinet_wqe_eth_cs_flags(&s->eth) == tx_cs(len));
				if (len < 1024 && f == r->frames + (size_t)len * 4) {
					for (uint32_t i = 0; i < len; i++)
						NIC_CHECK(r, f[i] == (uint8_t)(len + i));
					r->ctl->tx_len[len]++;
				}
				r->ctl->tx_frames++;
			} else if (op == KINET_WQE_OP_WAIT) {
				const struct kinet_eth_wait_wqe *ww = (const struct kinet_eth_wait_wqe *)w;
				NIC_CHECK(r, kinet_wqe_ctrl_opmod(ctrl) == KINET_WQE_OPMOD_WAIT_TIME);
				NIC_CHECK(r, kinet_wqe_ctrl_ds(ctrl) == KINET_ETH_WAIT_TIME_DS);
				/* the kernel asks for 1 ms after its now: within 10 s of ours */
				struct timespec ts;
				clock_gettime(CLOCK_REALTIME, &ts);
				uint64_t now = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
				uint64_t t = kinet_eth_rt_to_ns(kinet_wqe_wait_time_value(&ww->wait));
				NIC_CHECK(r, t + 10000000000ull > now && t < now + 10000000000ull);
				r->ctl->tx_waits++;
			} else {
				NIC_CHECK(r, op == KINET_WQE_OP_NOP);
			}
			if (ctrl->fm_ce_se & KINET_WQE_CTRL_CQ_UPDATE) {
				struct kinet_cqe64 *c = &r->scqes[scq_pi & ((1u << slog) - 1)];
				memset(c, 0, 63);
				c->wqe_counter = kinet_be16((uint16_t)sq_ci);
				c->sop_drop_qpn = kinet_be32((uint32_t)op << 24 | SQN);
				__atomic_store_n(
					&c->op_own,
					(uint8_t)(KINET_CQE_REQ << 4 | kinet_cqe_sw_owner(scq_pi, slog)),
					__ATOMIC_RELEASE);
				scq_pi++;
			}
			sq_ci++;
		}
		sched_yield();
	}
	return NULL;
}

/* ---- the kernel ------------------------------------------------------------ */

__device__ static void dev_fail(struct ctl *c, unsigned line)
{
	if (atomicCAS(&c->failed, 0u, 1u) == 0u)
		c->fail_line = line;
	__threadfence_system();
}

/* Every thread of the block evaluates it; any failure ends the kernel (the
 * failed flag is checked at each phase's barrier). */
#define D_CHECK(c, cond)                                                                                     \
	do {                                                                                                 \
		if (!(cond))                                                                                 \
			dev_fail((c), __LINE__);                                                             \
	} while (0)

__device__ static bool pkt_ok(const struct kinet_dev_eth_rxq *rxq, uint64_t idx,
			      const struct kinet_dev_eth_pkt *p)
{
	if (p->bytes != rx_len(idx) || p->timestamp_ns != rx_time(idx) ||
	    p->l3_type != KINET_CQE_L3_HDR_IPV4 || p->l4_type != idx % 5 || p->csum_ok != (idx & 7))
		return false;
	const uint8_t *d = (const uint8_t *)kinet_dev_eth_pkt_addr(rxq, idx);
	for (uint32_t i = 0; i < p->bytes; i += 37)
		if (d[i] != (uint8_t)(idx * 7 + i))
			return false;
	return true;
}

/* Receives until `until` packets in all, in form f (0 thread by thread 0,
 * 1 warp 0, 2 block); *next: the running index expected. */
__device__ static void rx_phase(struct kinet_dev_eth_rxq *rxq, struct ctl *c, int f, uint64_t until,
				uint64_t *next, struct kinet_dev_eth_pkt *pkts)
{
	uint64_t start = kinet_dev_now_ns();
	bool mine = f == 2 || (f == 1 && threadIdx.x < 32) || (f == 0 && threadIdx.x == 0);
	while (*next < until) {
		uint64_t first = 0;
		uint32_t count = 0;
		int st = 0;
		if (mine) {
			uint32_t max = (uint32_t)(*next % 40) + 1; /* 1..40 */
			if (f == 0)
				st = kinet_dev_eth_rxq_recv(rxq, max, 200000, &first, &count, pkts);
			else if (f == 1)
				st = kinet_dev_eth_rxq_recv_warp(rxq, max, 200000, &first, &count, pkts);
			else
				st = kinet_dev_eth_rxq_recv_block(rxq, max, 200000, &first, &count, pkts);
			D_CHECK(c, st == 0);
			D_CHECK(c, first == *next);
			D_CHECK(c, count <= max);
			for (uint32_t k = threadIdx.x % 32; k < count; k += 32)
				D_CHECK(c, pkt_ok(rxq, first + k, &pkts[k]));
		}
		__syncthreads(); /* pkts[] read by all before the next call fills it */
		__shared__ unsigned long long s_next;
		if (threadIdx.x == 0)
			s_next = first + count;
		__syncthreads();
		*next = s_next;
		if (*(volatile unsigned *)&c->failed || kinet_dev_now_ns() - start > TIMEOUT_NS) {
			D_CHECK(c, *next >= until);
			return;
		}
	}
}

__global__ void eth_kernel(struct kinet_dev_eth_rxq *rxq, struct kinet_dev_eth_txq *txq, struct ctl *c,
			   uint8_t *frames, unsigned long long *expect_len)
{
	__shared__ struct kinet_dev_eth_pkt pkts[NPKTS];
	uint64_t next = 0, tk = 0;
	uint32_t lane = threadIdx.x % 32;
	int st;

	/* ---- receive, every form ---- */
	rx_phase(rxq, c, 0, 1000, &next, pkts);
	rx_phase(rxq, c, 1, 2000, &next, pkts);
	rx_phase(rxq, c, 2, RX_TOTAL, &next, pkts);
	if (threadIdx.x == 0) {
		/* nothing more: at once with none, or after the timeout */
		uint64_t first;
		uint32_t count = 9;
		uint64_t t0 = kinet_dev_now_ns();
		D_CHECK(c, kinet_dev_eth_rxq_recv(rxq, 0, 0, &first, &count, NULL) == 0 && count == 0);
		D_CHECK(c, kinet_dev_eth_rxq_recv(rxq, 4, 2000000, &first, &count, NULL) == 0 && count == 0);
		D_CHECK(c, kinet_dev_now_ns() - t0 >= 2000000);
		c->rx_seen = next;
	}
	__syncthreads();

	/* ---- send: thread, warp, block; lengths 100 + rank (some 0) ---- */
	uint32_t len;
	if (threadIdx.x == 0) {
		len = 64;
		D_CHECK(c, kinet_dev_eth_txq_send(txq, frames + len * 4, FRAME_LKEY, len, tx_flags(len),
						  &tk) == 0);
		D_CHECK(c, kinet_dev_eth_txq_wait(txq, tk) == 0);
		len = 65;
		D_CHECK(c, kinet_dev_eth_txq_send(txq, frames + len * 4, FRAME_LKEY, len,
						  tx_flags(len) | KINET_DEV_ETH_NOTIFY, &tk) == 0);
		uint64_t t0 = kinet_dev_now_ns();
		while ((st = kinet_dev_eth_txq_poll(txq, tk)) == -EAGAIN &&
		       kinet_dev_now_ns() - t0 < TIMEOUT_NS)
			;
		D_CHECK(c, st == 0);
		len = 66;
		D_CHECK(c, kinet_dev_eth_txq_send_at(txq, kinet_dev_eth_now_ns() + 1000000, frames + len * 4,
						     FRAME_LKEY, len, tx_flags(len), &tk) == 0);
		D_CHECK(c, kinet_dev_eth_txq_wait(txq, tk) == 0);
	}
	__syncthreads();
	if (threadIdx.x < 32) {
		len = lane == 3 ? 0 : 100 + lane; /* lane 3 sends nothing */
		uint64_t t;
		D_CHECK(c, kinet_dev_eth_txq_send_warp(txq, frames + len * 4, FRAME_LKEY, len, tx_flags(len),
						       &t) == 0);
		D_CHECK(c, t == __shfl_sync(0xffffffffu, t, 0));
		D_CHECK(c, kinet_dev_eth_txq_wait(txq, t) == 0);
		len = lane == 5 ? 0 : 200 + lane;
		D_CHECK(c, kinet_dev_eth_txq_send_at_warp(txq, kinet_dev_eth_now_ns() + 1000000,
							  frames + len * 4, FRAME_LKEY, len, tx_flags(len),
							  &t) == 0);
		D_CHECK(c, kinet_dev_eth_txq_wait(txq, t) == 0);
	}
	__syncthreads();
	{
		uint64_t t;
		len = threadIdx.x == 40 ? 0 : 300 + threadIdx.x;
		D_CHECK(c, kinet_dev_eth_txq_send_block(txq, frames + len * 4, FRAME_LKEY, len, tx_flags(len),
							&t) == 0);
		if (threadIdx.x == 0)
			D_CHECK(c, kinet_dev_eth_txq_wait(txq, t) == 0);
		__syncthreads();
		len = threadIdx.x == 7 ? 0 : 400 + threadIdx.x;
		D_CHECK(c, kinet_dev_eth_txq_send_at_block(txq, kinet_dev_eth_now_ns() + 1000000,
							   frames + len * 4, FRAME_LKEY, len, tx_flags(len),
							   &t) == 0);
		if (threadIdx.x == 0)
			D_CHECK(c, kinet_dev_eth_txq_wait(txq, t) == 0);
		/* refused for the whole block: one thread asks for a bad flag */
		len = 500 + threadIdx.x;
		D_CHECK(c, kinet_dev_eth_txq_send_block(txq, frames + len * 4, FRAME_LKEY, len,
							threadIdx.x == 9 ? 0x80u : tx_flags(len),
							&t) == -EINVAL);
		D_CHECK(c, t == 0);
	}
	__syncthreads();
	/* ---- low level ---- */
	if (threadIdx.x == 0) {
		uint64_t idx;
		D_CHECK(c, kinet_dev_eth_txq_reserve(txq, 3, &idx) == 0);
		D_CHECK(c, kinet_dev_eth_wqe_prep_wait_time(txq, idx, kinet_dev_eth_now_ns() + 1000000) == 0);
		len = 600;
		D_CHECK(c, kinet_dev_eth_wqe_prep_send(txq, idx + 1, tx_flags(len), frames + len * 4,
						       FRAME_LKEY, len) == 0);
		len = 601;
		D_CHECK(c, kinet_dev_eth_wqe_prep_send(txq, idx + 2, tx_flags(len) | KINET_DEV_ETH_NOTIFY,
						       frames + len * 4, FRAME_LKEY, len) == 0);
		D_CHECK(c, kinet_dev_eth_txq_submit(txq, idx, 3) == 0);
		D_CHECK(c, kinet_dev_eth_txq_wait(txq, idx + 3) == 0);
		D_CHECK(c,
			kinet_dev_eth_wqe_prep_send(txq, idx + 3, 0x80u, frames, FRAME_LKEY, 64) == -EINVAL);
	}
	(void)expect_len;
}

/* ---- host ------------------------------------------------------------------ */

static void add_expect(unsigned long long *e, uint32_t len)
{
	if (len)
		e[len]++;
}

int main(void)
{
	int ndev = 0;
	if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
		printf("SKIP: no CUDA device\n");
		return 77;
	}
	struct rig r;
	memset(&r, 0, sizeof(r));
	r.ctl = (struct ctl *)mapped(sizeof(struct ctl));
	r.err = (struct kinet_dev_error *)mapped(sizeof(struct kinet_dev_error));
	r.rdbrec = (uint32_t *)mapped(64);
	r.rcq_dbrec = (uint32_t *)mapped(64);
	r.sdbrec = (uint32_t *)mapped(64);
	r.scq_dbrec = (uint32_t *)mapped(64);
	r.db_cpu_pi = (unsigned long long *)mapped(64);
	r.rcqes = (struct kinet_cqe64 *)mapped(128 * 64);
	r.scqes = (struct kinet_cqe64 *)mapped(256 * 64);
	r.rq = (uint8_t *)mapped(NPKTS * 16);
	r.pkt_buf = (uint8_t *)mapped(NPKTS * PKT_SIZE);
	r.sq = (uint8_t *)mapped(SQ_DEPTH * 64);
	r.frames = (uint8_t *)mapped(FRAMES * 4 + 4096);
	for (int i = 0; i < 128; i++)
		r.rcqes[i].op_own = KINET_CQE_OP_OWN_INIT;
	for (int i = 0; i < 256; i++)
		r.scqes[i].op_own = KINET_CQE_OP_OWN_INIT;
	for (uint32_t i = 0; i < NPKTS; i++)
		kinet_wqe_set_data((struct kinet_wqe_data_seg *)(r.rq + 16 * i),
				   (uint64_t)(uintptr_t)(r.pkt_buf + i * PKT_SIZE), PKT_SIZE, PKT_LKEY);
	r.rdbrec[KINET_DBR_RECV] = kinet_be32(NPKTS);
	for (uint32_t l = 0; l < 1024; l++)
		for (uint32_t i = 0; i < l; i++)
			r.frames[l * 4 + i] = (uint8_t)(l + i);

	/* descriptors, built here, copied to GPU memory */
	struct kinet_dev_cq rcq, scq;
	struct kinet_dev_qp rqp, sqp;
	struct kinet_dev_eth_rxq rxq;
	struct kinet_dev_eth_txq txq;
	memset(&rcq, 0, sizeof(rcq));
	memset(&scq, 0, sizeof(scq));
	memset(&rqp, 0, sizeof(rqp));
	memset(&sqp, 0, sizeof(sqp));
	memset(&rxq, 0, sizeof(rxq));
	memset(&txq, 0, sizeof(txq));
	cudaMalloc((void **)&r.rcq, sizeof(rcq));
	cudaMalloc((void **)&r.scq, sizeof(scq));
	cudaMalloc((void **)&r.rqp, sizeof(rqp));
	cudaMalloc((void **)&r.sqp, sizeof(sqp));
	cudaMalloc((void **)&r.rxq, sizeof(rxq));
	cudaMalloc((void **)&r.txq, sizeof(txq));
	rcq.cqes = r.rcqes;
	rcq.dbrec = r.rcq_dbrec;
	rcq.log_depth = 7;
	rcq.mask = 127;
	scq.cqes = r.scqes;
	scq.dbrec = r.scq_dbrec;
	scq.log_depth = 8;
	scq.mask = 255;
	rqp.qpn = RQN;
	rqp.rq = r.rq;
	rqp.rq_mask = NPKTS - 1;
	rqp.rq_stride = 16;
	rqp.rq_max_sge = 1;
	rqp.recv_cq = r.rcq;
	rqp.err = r.err;
	rqp.dbrec = r.rdbrec;
	rqp.timeout_ns = TIMEOUT_NS;
	rqp.rq_reserved = rqp.rq_ready = NPKTS;
	sqp.sq = r.sq;
	sqp.sq_mask = SQ_DEPTH - 1;
	sqp.sq_log_depth = 7;
	sqp.qpn = SQN;
	sqp.db_mode = KINET_DB_CPU;
	sqp.sharing = KINET_SHARE_EXCLUSIVE;
	sqp.dbrec = r.sdbrec;
	sqp.db_cpu_pi = (uint64_t *)r.db_cpu_pi;
	sqp.timeout_ns = TIMEOUT_NS;
	sqp.send_cq = r.scq;
	sqp.err = r.err;
	sqp.sq_signal_every = 8;
	rxq.qp = r.rqp;
	rxq.pkt_buf = r.pkt_buf;
	rxq.max_pkt_size = PKT_SIZE;
	rxq.npkts = NPKTS;
	rxq.pkt_lkey = PKT_LKEY;
	rxq.rqn = RQN;
	txq.qp = r.sqp;
	txq.sqn = SQN;
	txq.cs_flags = KINET_ETH_WQE_L3_CSUM | KINET_ETH_WQE_L4_CSUM;
	txq.timed = 1;
	cudaMemcpy(r.rcq, &rcq, sizeof(rcq), cudaMemcpyHostToDevice);
	cudaMemcpy(r.scq, &scq, sizeof(scq), cudaMemcpyHostToDevice);
	cudaMemcpy(r.rqp, &rqp, sizeof(rqp), cudaMemcpyHostToDevice);
	cudaMemcpy(r.sqp, &sqp, sizeof(sqp), cudaMemcpyHostToDevice);
	cudaMemcpy(r.rxq, &rxq, sizeof(rxq), cudaMemcpyHostToDevice);
	if (cudaMemcpy(r.txq, &txq, sizeof(txq), cudaMemcpyHostToDevice) != cudaSuccess) {
		fprintf(stderr, "setup failed\n");
		return 1;
	}

	pthread_t nic;
	pthread_create(&nic, NULL, nic_main, &r);
	eth_kernel<<<1, THREADS>>>(r.rxq, r.txq, r.ctl, r.frames, NULL);
	cudaError_t ce = cudaDeviceSynchronize();
	__atomic_store_n(&r.ctl->stop, 1u, __ATOMIC_RELEASE);
	pthread_join(nic, NULL);

	int bad = 0;
	if (ce != cudaSuccess) {
		fprintf(stderr, "kernel: %s\n", cudaGetErrorString(ce));
		bad = 1;
	}
	if (r.ctl->failed) {
		fprintf(stderr, "device check failed at line %u\n", r.ctl->fail_line);
		bad = 1;
	}
	if (r.ctl->nic_fail) {
		fprintf(stderr, "NIC check failed at line %u\n", r.ctl->nic_line);
		bad = 1;
	}
	if (r.ctl->rx_seen != RX_TOTAL || r.ctl->rx_delivered != RX_TOTAL) {
		fprintf(stderr, "received %llu, delivered %llu, want %u\n", r.ctl->rx_seen,
			r.ctl->rx_delivered, RX_TOTAL);
		bad = 1;
	}
	static unsigned long long expect[1024];
	add_expect(expect, 64);
	add_expect(expect, 65);
	add_expect(expect, 66);
	for (uint32_t l = 0; l < 32; l++) {
		add_expect(expect, l == 3 ? 0 : 100 + l);
		add_expect(expect, l == 5 ? 0 : 200 + l);
	}
	for (uint32_t t = 0; t < THREADS; t++) {
		add_expect(expect, t == 40 ? 0 : 300 + t);
		add_expect(expect, t == 7 ? 0 : 400 + t);
	}
	add_expect(expect, 600);
	add_expect(expect, 601);
	for (uint32_t l = 0; l < 1024; l++)
		if (expect[l] != r.ctl->tx_len[l]) {
			fprintf(stderr, "frames of %u bytes: %llu sent, want %llu\n", l, r.ctl->tx_len[l],
				expect[l]);
			bad = 1;
		}
	/* timed: 1 + 31 + 63 + 1 WAIT WQEs */
	if (r.ctl->tx_waits != 1 + 31 + 63 + 1) {
		fprintf(stderr, "wait-on-time WQEs: %llu\n", r.ctl->tx_waits);
		bad = 1;
	}
	if (r.err->valid) {
		fprintf(stderr, "device error recorded: %d\n", r.err->status);
		bad = 1;
	}
	printf("%s: %llu packets received, %llu frames sent (%llu timed)\n", bad ? "FAIL" : "OK",
	       r.ctl->rx_seen, r.ctl->tx_frames, r.ctl->tx_waits);
	return bad;
}
