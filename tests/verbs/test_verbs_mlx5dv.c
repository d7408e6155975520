/*
 * mlx5dv_init_obj hands out the rings the software NIC executes: this
 * program writes its own ConnectX WQEs into a verbs-created QP (a write
 * and a send), posts its own receive WQE and SRQ WQE, rings as rdma-core's
 * mlx5 provider rings (doorbell record, then the WQE's first 8 bytes to
 * the register) and polls the CQ rings itself, as GPUNetIO-style and
 * DeepEP-style code does.  tests/gpu/test_verbs_mlx5dv.cu does the same
 * from a CUDA kernel.
 */
#include <arpa/inet.h>
#include <infiniband/mlx5dv.h>
#include <stdatomic.h>

#include "verbs_pair.h"

struct ring_cq {
	struct mlx5dv_cq dv;
	uint32_t ci;
};

/* The next CQE of a CQ polled by hand, or NULL after 5 s. */
static struct mlx5_cqe64 *cq_next(struct ring_cq *cq)
{
	struct timespec t0, t;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		struct mlx5_cqe64 *cqe = (struct mlx5_cqe64 *)((uint8_t *)cq->dv.buf +
							       (size_t)(cq->ci & (cq->dv.cqe_cnt - 1)) * 64);
		uint8_t op_own = __atomic_load_n(&cqe->op_own, __ATOMIC_ACQUIRE);

		if ((op_own >> 4) != MLX5_CQE_INVALID && (op_own & 1) == ((cq->ci / cq->dv.cqe_cnt) & 1)) {
			cq->ci++;
			/* The consumer index tells the NIC the slot is free. */
			__atomic_store_n(&cq->dv.dbrec[0], htobe32(cq->ci & 0xffffff), __ATOMIC_RELEASE);
			return cqe;
		}
		clock_gettime(CLOCK_MONOTONIC, &t);
		if (t.tv_sec - t0.tv_sec > 5)
			return NULL;
	}
}

static void ring(struct mlx5dv_qp *qp, const void *wqe, uint32_t pi)
{
	uint64_t first;

	atomic_thread_fence(memory_order_release);
	__atomic_store_n(&qp->dbrec[MLX5_SND_DBR], htobe32(pi & 0xffff), __ATOMIC_RELEASE);
	memcpy(&first, wqe, sizeof(first));
	__atomic_store_n((uint64_t *)qp->bf.reg, first, __ATOMIC_RELEASE);
}

KT_TEST(hand_written_wqes)
{
	struct pair p;
	struct mlx5dv_qp dq[2];
	struct ring_cq cq[2];
	struct mlx5dv_obj obj;
	struct mlx5_cqe64 *cqe;
	uint32_t pi = 0;

	KT_OK(pair_open(&p, false, 0));
	KT_CHECK(mlx5dv_is_supported(p.ctx->device));
	memset(&obj, 0, sizeof(obj));
	for (int i = 0; i < 2; i++) {
		obj.qp.in = p.qp[i];
		obj.qp.out = &dq[i];
		obj.cq.in = p.cq[i];
		obj.cq.out = &cq[i].dv;
		KT_OK(mlx5dv_init_obj(&obj, MLX5DV_OBJ_QP | MLX5DV_OBJ_CQ));
		cq[i].ci = 0;
		KT_CHECK(dq[i].sq.buf && dq[i].sq.stride == 64 && dq[i].sq.wqe_cnt >= 64);
		KT_CHECK(dq[i].rq.buf && dq[i].rq.wqe_cnt >= 64 && dq[i].rq.stride >= 16);
		KT_CHECK(dq[i].bf.reg && dq[i].dbrec);
		KT_CHECK_EQ(cq[i].dv.cqe_size, 64);
		KT_CHECK(cq[i].dv.cqe_cnt >= 256);
	}

	/* RDMA write: control, remote address, data segment (ds = 3). */
	for (int i = 0; i < 4096; i++)
		p.buf[0][i] = (uint8_t)(i ^ 0x5a);
	uint8_t *w = (uint8_t *)dq[0].sq.buf + (size_t)(pi & (dq[0].sq.wqe_cnt - 1)) * 64;
	memset(w, 0, 64);
	mlx5dv_set_ctrl_seg((struct mlx5_wqe_ctrl_seg *)w, (uint16_t)pi, MLX5_OPCODE_RDMA_WRITE, 0,
			    p.qp[0]->qp_num, MLX5_WQE_CTRL_CQ_UPDATE, 3, 0, 0);
	struct mlx5_wqe_raddr_seg *ra = (struct mlx5_wqe_raddr_seg *)(w + 16);
	ra->raddr = htobe64((uintptr_t)p.buf[1] + 8192);
	ra->rkey = htobe32(p.mr[1]->rkey);
	mlx5dv_set_data_seg((struct mlx5_wqe_data_seg *)(w + 32), 4096, p.mr[0]->lkey, (uintptr_t)p.buf[0]);
	pi++;
	ring(&dq[0], w, pi);
	cqe = cq_next(&cq[0]);
	KT_CHECK(cqe);
	KT_CHECK_EQ(mlx5dv_get_cqe_opcode(cqe), MLX5_CQE_REQ);
	KT_CHECK_EQ(be16toh(cqe->wqe_counter), 0);
	KT_CHECK(!memcmp(p.buf[1] + 8192, p.buf[0], 4096));

	/* A receive WQE of the target's own RQ, then a send into it. */
	struct mlx5_wqe_data_seg *rw = (struct mlx5_wqe_data_seg *)dq[1].rq.buf;
	mlx5dv_set_data_seg(rw, 256, p.mr[1]->lkey, (uintptr_t)p.buf[1] + 20000);
	/* Fewer entries than the stride holds: an invalid key ends the list,
	 * as rdma-core's mlx5 provider ends it. */
	if (dq[1].rq.stride > sizeof(*rw))
		mlx5dv_set_data_seg(rw + 1, 0, MLX5_INVALID_LKEY, 0);
	atomic_thread_fence(memory_order_release);
	__atomic_store_n(&dq[1].dbrec[MLX5_RCV_DBR], htobe32(1), __ATOMIC_RELEASE);
	w = (uint8_t *)dq[0].sq.buf + (size_t)(pi & (dq[0].sq.wqe_cnt - 1)) * 64;
	memset(w, 0, 64);
	mlx5dv_set_ctrl_seg((struct mlx5_wqe_ctrl_seg *)w, (uint16_t)pi, MLX5_OPCODE_SEND_IMM, 0,
			    p.qp[0]->qp_num, MLX5_WQE_CTRL_CQ_UPDATE, 2, 0, htobe32(0x1234));
	mlx5dv_set_data_seg((struct mlx5_wqe_data_seg *)(w + 16), 100, p.mr[0]->lkey,
			    (uintptr_t)p.buf[0] + 50);
	pi++;
	ring(&dq[0], w, pi);
	cqe = cq_next(&cq[0]);
	KT_CHECK(cqe);
	KT_CHECK_EQ(mlx5dv_get_cqe_opcode(cqe), MLX5_CQE_REQ);
	KT_CHECK_EQ(be16toh(cqe->wqe_counter), 1);
	cqe = cq_next(&cq[1]);
	KT_CHECK(cqe);
	KT_CHECK_EQ(mlx5dv_get_cqe_opcode(cqe), MLX5_CQE_RESP_SEND_IMM);
	KT_CHECK_EQ(be32toh(cqe->byte_cnt), 100);
	KT_CHECK_EQ(be32toh(cqe->imm_inval_pkey), 0x1234);
	KT_CHECK_EQ(be32toh(cqe->sop_drop_qpn) & 0xffffff, p.qp[1]->qp_num);
	KT_CHECK(!memcmp(p.buf[1] + 20000, p.buf[0] + 50, 100));

	/* A bad rkey: an error CQE with the PRM's syndrome. */
	w = (uint8_t *)dq[0].sq.buf + (size_t)(pi & (dq[0].sq.wqe_cnt - 1)) * 64;
	memset(w, 0, 64);
	mlx5dv_set_ctrl_seg((struct mlx5_wqe_ctrl_seg *)w, (uint16_t)pi, MLX5_OPCODE_RDMA_WRITE, 0,
			    p.qp[0]->qp_num, MLX5_WQE_CTRL_CQ_UPDATE, 3, 0, 0);
	ra = (struct mlx5_wqe_raddr_seg *)(w + 16);
	ra->raddr = htobe64((uintptr_t)p.buf[1]);
	ra->rkey = htobe32(p.mr[1]->rkey + 0x4400);
	mlx5dv_set_data_seg((struct mlx5_wqe_data_seg *)(w + 32), 8, p.mr[0]->lkey, (uintptr_t)p.buf[0]);
	pi++;
	ring(&dq[0], w, pi);
	cqe = cq_next(&cq[0]);
	KT_CHECK(cqe);
	KT_CHECK_EQ(mlx5dv_get_cqe_opcode(cqe), MLX5_CQE_REQ_ERR);
	KT_CHECK_EQ(((struct mlx5_err_cqe *)cqe)->syndrome, MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR);
	pair_close(&p);
}

/* The SRQ ring: a hand-posted WQE (next segment + data segment) is taken
 * by a send. */
KT_TEST(srq_ring)
{
	struct pair p;
	struct mlx5dv_srq ds;
	struct mlx5dv_cq dc;
	struct mlx5dv_obj obj;
	struct ibv_wc wc;

	KT_OK(pair_open(&p, true, 0));
	memset(&obj, 0, sizeof(obj));
	obj.srq.in = p.srq;
	obj.srq.out = &ds;
	obj.cq.in = p.cq[1];
	obj.cq.out = &dc;
	KT_OK(mlx5dv_init_obj(&obj, MLX5DV_OBJ_SRQ | MLX5DV_OBJ_CQ));
	KT_CHECK(ds.buf && ds.dbrec && ds.stride >= 32);
	KT_CHECK(ds.comp_mask & MLX5DV_SRQ_MASK_SRQN);
	uint8_t *w = (uint8_t *)ds.buf + (size_t)ds.head * ds.stride;
	mlx5dv_set_data_seg((struct mlx5_wqe_data_seg *)(w + 16), 512, p.mr[1]->lkey,
			    (uintptr_t)p.buf[1] + 4096);
	atomic_thread_fence(memory_order_release);
	__atomic_store_n(&ds.dbrec[0], htobe32(1), __ATOMIC_RELEASE);
	memcpy(p.buf[0], "to the srq", 11);
	struct ibv_sge s = {.addr = (uintptr_t)p.buf[0], .length = 11, .lkey = p.mr[0]->lkey};
	struct ibv_send_wr sw = {.wr_id = 1,
				 .sg_list = &s,
				 .num_sge = 1,
				 .opcode = IBV_WR_SEND,
				 .send_flags = IBV_SEND_SIGNALED},
			   *bad;
	KT_OK(ibv_post_send(p.qp[0], &sw, &bad));
	KT_CHECK(pair_wait(p.cq[0], &wc));
	KT_CHECK_EQ(wc.status, IBV_WC_SUCCESS);
	KT_CHECK(pair_wait(p.cq[1], &wc));
	KT_CHECK_EQ(wc.status, IBV_WC_SUCCESS);
	KT_CHECK_EQ(wc.byte_len, 11);
	KT_CHECK(!memcmp(p.buf[1] + 4096, "to the srq", 11));
	pair_close(&p);
}

KT_TEST(unsupported)
{
	struct pair p;
	struct mlx5dv_context attrs = {0};
	struct mlx5dv_obj obj;

	KT_OK(pair_open(&p, false, 0));
	KT_OK(mlx5dv_query_device(p.ctx, &attrs));
	KT_CHECK(attrs.flags & MLX5DV_CONTEXT_FLAGS_CQE_V1);
	memset(&obj, 0, sizeof(obj));
	KT_CHECK_EQ(mlx5dv_init_obj(&obj, MLX5DV_OBJ_DM), EOPNOTSUPP);
	/* DevX: not served, and said so */
	errno = 0;
	KT_CHECK(!mlx5dv_devx_obj_create(p.ctx, NULL, 0, NULL, 0));
	KT_CHECK_EQ(errno, EOPNOTSUPP);
	pair_close(&p);
}

KT_MAIN(hand_written_wqes, srq_ring, unsupported)
