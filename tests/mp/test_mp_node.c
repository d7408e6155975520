/*
 * Every opcode between every pair of ranks of a kinetrun job (2 or 4 ranks
 * on one host: the node transport, and local for a rank to itself), posted
 * from the host, with the data checked byte for byte; writes and sends are
 * larger than one protocol fragment.  Ends with a protection error.
 */
#include "kt_mp.h"

#define SLOT 160000u /* > 2 fragments of 64 KiB */
#define SEND_LEN 100000u
#define IMM_LEN 5000u
#define NFA 3

/* Buffer layout (each rank, one MR): regions of size * SLOT bytes, then the
 * atomic words: [0] fetch-add target, [1] compare-swap target, [2..] old
 * values fetched. */
enum { R_DATA, R_SRC, R_READ, R_RECV, R_NREG };

static struct mp m;

static size_t reg(int r, int peer)
{
	return ((size_t)r * (size_t)m.size + (size_t)peer) * SLOT;
}

static uint64_t *atom(void)
{
	return (uint64_t *)(m.buf + (size_t)R_NREG * m.size * SLOT);
}

static size_t atom_off(int i)
{
	return (size_t)R_NREG * m.size * SLOT + (size_t)i * 8;
}

static uint64_t laddr(size_t off)
{
	return (uint64_t)(uintptr_t)(m.buf + off);
}

static struct kinet_send_wr wr_of(int p, uint64_t id, enum kinet_wr_opcode op, struct kinet_sge *sge,
				  size_t local, uint32_t len, size_t remote, uint32_t rkey)
{
	*sge = (struct kinet_sge){laddr(local), len, kinet_mr_lkey(m.mr)};
	return (struct kinet_send_wr){
		.wr_id = id,
		.opcode = op,
		.send_flags = KINET_SEND_SIGNALED,
		.sg_list = sge,
		.num_sge = 1,
		.imm_data = (uint32_t)(m.rank << 8 | p),
		.remote_addr = m.peer[p].addr + remote,
		.rkey = rkey,
	};
}

static int post(int p, struct kinet_send_wr *wr)
{
	return kinet_qp_post_send(kinet_mesh_qp(m.mesh, p, 0), wr, 1, NULL);
}

static int post_recv(int p)
{
	struct kinet_sge sge = {laddr(reg(R_RECV, p)), SLOT, kinet_mr_lkey(m.mr)};
	struct kinet_recv_wr wr = {.wr_id = (uint64_t)p, .sg_list = &sge, .num_sge = 1};
	return kinet_qp_post_recv(kinet_mesh_qp(m.mesh, p, 0), &wr, 1, NULL);
}

/* n completions on the send CQ of the QP to p, all successful but the last
 * with `status`. */
static int expect_send(int p, int n, int status)
{
	struct kinet_wc wc[16];
	int got = mp_poll(kinet_mesh_send_cq(m.mesh, p, 0), n, wc, 10000);

	if (got != n) {
		fprintf(stderr, "rank %d: %d of %d completions from the QP to %d\n", m.rank, got, n, p);
		return -1;
	}
	for (int i = 0; i < n; i++) {
		if (wc[i].status != (i == n - 1 ? status : 0) || wc[i].wr_id != (uint64_t)i) {
			fprintf(stderr, "rank %d: QP to %d: completion %d: wr_id %llu status 0x%x\n", m.rank,
				p, i, (unsigned long long)wc[i].wr_id, wc[i].status);
			return -1;
		}
	}
	return 0;
}

static int expect_recv(int p, enum kinet_wc_opcode op, uint32_t len)
{
	struct kinet_wc wc;

	if (mp_poll(kinet_mesh_recv_cq(m.mesh, p, 0), 1, &wc, 10000) != 1) {
		fprintf(stderr, "rank %d: no receive completion from %d\n", m.rank, p);
		return -1;
	}
	if (wc.status || wc.opcode != op || wc.byte_len != len || !(wc.wc_flags & KINET_WC_WITH_IMM) ||
	    wc.imm_data != (uint32_t)(p << 8 | m.rank)) {
		fprintf(stderr, "rank %d: receive from %d: status 0x%x opcode %d len %u imm %#x\n", m.rank, p,
			wc.status, wc.opcode, wc.byte_len, wc.imm_data);
		return -1;
	}
	return 0;
}

KT_TEST(all_opcodes)
{
	struct kinet_mesh_attr ma;
	struct kinet_sge sge[8];
	struct kinet_send_wr wr;

	if (!mp_launched())
		KT_SKIP("needs a kinetrun job (KINET_RANK, KINET_NRANKS); ctest runs it through kinetrun");
	kinet_mesh_attr_init(&ma);
	KT_OK(mp_open(&m, (size_t)R_NREG * SLOT, 4096, &ma));
	int n = m.size;

	/* Receives first, then a barrier: no send meets an empty queue. */
	for (int p = 0; p < n; p++) {
		KT_OK(post_recv(p));
		KT_OK(post_recv(p));
		mp_fill(m.buf + reg(R_SRC, p), SLOT, m.rank, p, 0);
	}
	KT_OK(kinet_boot_barrier(m.boot));

	for (int p = 0; p < n; p++) {
		uint32_t rk = m.peer[p].rkey;
		int id = 0;

		wr = wr_of(p, id++, KINET_WR_RDMA_WRITE, &sge[0], reg(R_SRC, p), SLOT, reg(R_DATA, m.rank),
			   rk);
		KT_OK(post(p, &wr));
		wr = wr_of(p, id++, KINET_WR_SEND_WITH_IMM, &sge[1], reg(R_SRC, p), SEND_LEN, 0, 0);
		KT_OK(post(p, &wr));
		for (int i = 0; i < NFA; i++) {
			wr = wr_of(p, id++, KINET_WR_ATOMIC_FETCH_AND_ADD, &sge[2 + i],
				   atom_off(2 + p * 8 + i), 8, atom_off(0), rk);
			wr.remote_addr = m.peer[p].addr + atom_off(0);
			wr.compare_add = 1;
			KT_OK(post(p, &wr));
		}
		wr = wr_of(p, id++, KINET_WR_ATOMIC_CMP_AND_SWP, &sge[6], atom_off(2 + p * 8 + 5), 8,
			   atom_off(1), rk);
		wr.compare_add = 0;
		wr.swap = (uint64_t)m.rank + 1;
		KT_OK(post(p, &wr));
		KT_OK(expect_send(p, id, 0));
		for (int i = 1; i < NFA; i++)
			KT_CHECK(atom()[2 + p * 8 + i] > atom()[2 + p * 8 + i - 1]);
	}
	for (int p = 0; p < n; p++) {
		KT_OK(expect_recv(p, KINET_WC_RECV, SEND_LEN));
		KT_OK(mp_check(m.buf + reg(R_RECV, p), SEND_LEN, p, m.rank, 0));
	}
	KT_OK(kinet_boot_barrier(m.boot));
	for (int s = 0; s < n; s++)
		KT_OK(mp_check(m.buf + reg(R_DATA, s), SLOT, s, m.rank, 0));
	KT_CHECK_EQ(atom()[0], (uint64_t)NFA * n);
	KT_CHECK(atom()[1] >= 1 && atom()[1] <= (uint64_t)n);

	/* Exactly one rank won each compare-swap. */
	uint8_t won[64] = {0}, all[64 * 64];
	for (int p = 0; p < n; p++)
		won[p] = atom()[2 + p * 8 + 5] == 0;
	KT_OK(kinet_boot_allgather(m.boot, won, all, sizeof(won)));
	for (int p = 0; p < n; p++) {
		int winners = 0;
		for (int r = 0; r < n; r++)
			winners += all[r * 64 + p];
		KT_CHECK_EQ(winners, 1);
	}

	/* Reads bring back what this rank wrote; write-with-immediate. */
	for (int p = 0; p < n; p++) {
		wr = wr_of(p, 0, KINET_WR_RDMA_READ, &sge[0], reg(R_READ, p), SLOT, reg(R_DATA, m.rank),
			   m.peer[p].rkey);
		KT_OK(post(p, &wr));
		mp_fill(m.buf + reg(R_SRC, p), IMM_LEN, m.rank, p, 1);
		wr = wr_of(p, 1, KINET_WR_RDMA_WRITE_WITH_IMM, &sge[1], reg(R_SRC, p), IMM_LEN,
			   reg(R_DATA, m.rank), m.peer[p].rkey);
		KT_OK(post(p, &wr));
		KT_OK(expect_send(p, 2, 0));
		KT_OK(mp_check(m.buf + reg(R_READ, p), SLOT, m.rank, p, 0));
	}
	for (int p = 0; p < n; p++) {
		KT_OK(expect_recv(p, KINET_WC_RECV_RDMA_WITH_IMM, IMM_LEN));
		KT_OK(mp_check(m.buf + reg(R_DATA, p), IMM_LEN, p, m.rank, 1));
	}
	KT_OK(kinet_boot_barrier(m.boot));

	/* A wrong rkey: remote access error, the QP to the next rank fails.
	 * With two ranks only rank 0 does it: both ends of one connection
	 * failing at once would leave the second request facing a responder
	 * in the error state, which (rightly) never answers. */
	int p = (m.rank + 1) % n;
	if (n > 2 || m.rank == 0) {
		wr = wr_of(p, 0, KINET_WR_RDMA_WRITE, &sge[0], reg(R_SRC, p), 64, reg(R_DATA, m.rank),
			   m.peer[p].rkey ^ 0x80);
		KT_OK(post(p, &wr));
		KT_OK(expect_send(p, 1, KINET_SYND_REMOTE_ACCESS_ERR));
		KT_CHECK_EQ(kinet_qp_get_state(kinet_mesh_qp(m.mesh, p, 0)), KINET_QPS_ERR);
	}
	/* Nobody leaves before every rank has its answer: a peer that has
	 * gone is (rightly) a transport error. */
	KT_OK(kinet_boot_barrier(m.boot));
	mp_close(&m);
}

KT_MAIN(all_opcodes)
