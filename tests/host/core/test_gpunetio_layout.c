/*
 * kinet's GPUNetIO descriptors (include/kinet/gpunetio.h) against the real
 * GPUNetIO header where the CUDA toolkit ships it (NCCL's copy under
 * nccl_device/gin/gdaki/doca_gpunetio/): every field at the same offset
 * with the same size, the same enum values, and the wire constants and
 * segments GPUNetIO's device code uses equal to kinet's.  Skipped when the
 * header is not installed.
 */
#include "kt_host.h"

#include "kinet/gpunetio.h"

#ifdef KINET_HAVE_GPUNETIO_HEADERS
#include "doca_gpunetio/common/doca_gpunetio_verbs_dev.h"

#define SAME_FIELD(ks, ds, f)                                                                                \
	do {                                                                                                 \
		KT_CHECK_EQ(offsetof(struct ks, f), offsetof(struct ds, f));                                 \
		KT_CHECK_EQ(sizeof(((struct ks *)0)->f), sizeof(((struct ds *)0)->f));                       \
	} while (0)

#define CQ_FIELDS(X)                                                                                         \
	X(cqe_daddr) X(cq_num) X(cqe_num) X(dbrec) X(cqe_ci) X(cqe_mask) X(cqe_size) X(cqe_rsvd) X(mem_type)

#define QP_FIELDS(X)                                                                                         \
	X(sq_rsvd_index)                                                                                     \
	X(sq_ready_index)                                                                                    \
	X(sq_wqe_pi)                                                                                         \
	X(sq_num)                                                                                            \
	X(sq_num_shift8)                                                                                     \
	X(sq_num_shift8_be)                                                                                  \
	X(sq_num_shift8_be_1ds)                                                                              \
	X(sq_num_shift8_be_2ds)                                                                              \
	X(sq_num_shift8_be_3ds)                                                                              \
	X(sq_num_shift8_be_4ds)                                                                              \
	X(sq_lock)                                                                                           \
	X(sq_wqe_num)                                                                                        \
	X(sq_wqe_mask)                                                                                       \
	X(sq_wqe_daddr)                                                                                      \
	X(sq_dbrec)                                                                                          \
	X(sq_db)                                                                                             \
	X(rq_num)                                                                                            \
	X(rq_wqe_pi)                                                                                         \
	X(rq_wqe_num)                                                                                        \
	X(rq_wqe_mask)                                                                                       \
	X(rq_wqe_daddr)                                                                                      \
	X(rq_dbrec)                                                                                          \
	X(rcv_wqe_size)                                                                                      \
	X(rq_rsvd_index)                                                                                     \
	X(rq_ready_index)                                                                                    \
	X(rq_lock)                                                                                           \
	X(cq_sq)                                                                                             \
	X(cq_rq)                                                                                             \
	X(nic_handler)                                                                                       \
	X(mem_type)

KT_TEST(descriptors)
{
#define CQ_SAME(f) SAME_FIELD(kinet_gpunetio_cq, doca_gpu_dev_verbs_cq, f);
#define QP_SAME(f) SAME_FIELD(kinet_gpunetio_qp, doca_gpu_dev_verbs_qp, f);
	CQ_FIELDS(CQ_SAME)
	QP_FIELDS(QP_SAME)
	KT_CHECK_EQ(sizeof(struct kinet_gpunetio_cq), sizeof(struct doca_gpu_dev_verbs_cq));
	KT_CHECK_EQ(sizeof(struct kinet_gpunetio_qp), sizeof(struct doca_gpu_dev_verbs_qp));
	KT_CHECK_EQ(_Alignof(struct kinet_gpunetio_qp), _Alignof(struct doca_gpu_dev_verbs_qp));
	KT_CHECK_EQ(_Alignof(struct kinet_gpunetio_cq), _Alignof(struct doca_gpu_dev_verbs_cq));
	/* The enums GPUNetIO stores in int-sized fields. */
	KT_CHECK_EQ(sizeof(enum doca_gpu_dev_verbs_nic_handler), sizeof(int32_t));
	KT_CHECK_EQ(sizeof(enum doca_gpu_dev_verbs_mem_type), sizeof(int32_t));
}

KT_TEST(enums)
{
	KT_CHECK_EQ(KINET_GPUNETIO_NIC_HANDLER_AUTO, DOCA_GPUNETIO_VERBS_NIC_HANDLER_AUTO);
	KT_CHECK_EQ(KINET_GPUNETIO_NIC_HANDLER_CPU_PROXY, DOCA_GPUNETIO_VERBS_NIC_HANDLER_CPU_PROXY);
	KT_CHECK_EQ(KINET_GPUNETIO_NIC_HANDLER_GPU_SM_DB, DOCA_GPUNETIO_VERBS_NIC_HANDLER_GPU_SM_DB);
	KT_CHECK_EQ(KINET_GPUNETIO_NIC_HANDLER_GPU_SM_BF, DOCA_GPUNETIO_VERBS_NIC_HANDLER_GPU_SM_BF);
	KT_CHECK_EQ(KINET_GPUNETIO_MEM_TYPE_AUTO, DOCA_GPUNETIO_VERBS_MEM_TYPE_AUTO);
	KT_CHECK_EQ(KINET_GPUNETIO_MEM_TYPE_HOST, DOCA_GPUNETIO_VERBS_MEM_TYPE_HOST);
	KT_CHECK_EQ(KINET_GPUNETIO_MEM_TYPE_GPU, DOCA_GPUNETIO_VERBS_MEM_TYPE_GPU);
}

/* What GPUNetIO's device code writes and reads, in kinet's wire terms. */
KT_TEST(wire)
{
	KT_CHECK_EQ(KINET_WQE_OP_NOP, DOCA_GPUNETIO_IB_MLX5_OPCODE_NOP);
	KT_CHECK_EQ(KINET_WQE_OP_RDMA_WRITE, DOCA_GPUNETIO_IB_MLX5_OPCODE_RDMA_WRITE);
	KT_CHECK_EQ(KINET_WQE_OP_RDMA_WRITE_IMM, DOCA_GPUNETIO_IB_MLX5_OPCODE_RDMA_WRITE_IMM);
	KT_CHECK_EQ(KINET_WQE_OP_SEND, DOCA_GPUNETIO_IB_MLX5_OPCODE_SEND);
	KT_CHECK_EQ(KINET_WQE_OP_SEND_IMM, DOCA_GPUNETIO_IB_MLX5_OPCODE_SEND_IMM);
	KT_CHECK_EQ(KINET_WQE_OP_RDMA_READ, DOCA_GPUNETIO_IB_MLX5_OPCODE_RDMA_READ);
	KT_CHECK_EQ(KINET_WQE_OP_ATOMIC_CS, DOCA_GPUNETIO_IB_MLX5_OPCODE_ATOMIC_CS);
	KT_CHECK_EQ(KINET_WQE_OP_ATOMIC_FA, DOCA_GPUNETIO_IB_MLX5_OPCODE_ATOMIC_FA);
	KT_CHECK_EQ(KINET_WQE_OP_WAIT, DOCA_GPUNETIO_IB_MLX5_OPCODE_WAIT);
	KT_CHECK_EQ(KINET_WQE_CTRL_CQ_UPDATE, DOCA_GPUNETIO_IB_MLX5_WQE_CTRL_CQ_UPDATE);
	KT_CHECK_EQ(KINET_WQE_CTRL_SOLICITED, DOCA_GPUNETIO_IB_MLX5_WQE_CTRL_SOLICITED);
	/* GPUNetIO's fence is mode 4 (0x80), kinet's mode 2 (0x40): the
	 * software NIC honours both (KINET_WQE_CTRL_FENCE_MASK). */
	KT_CHECK(DOCA_GPUNETIO_IB_MLX5_WQE_CTRL_FENCE & KINET_WQE_CTRL_FENCE_MASK);
	KT_CHECK_EQ(KINET_INLINE_SEG_FLAG, DOCA_GPUNETIO_IB_MLX5_INLINE_SEG);
	KT_CHECK_EQ(KINET_DBR_RECV, DOCA_GPUNETIO_IB_MLX5_RCV_DBR);
	KT_CHECK_EQ(KINET_DBR_SEND, DOCA_GPUNETIO_IB_MLX5_SND_DBR);
	KT_CHECK_EQ(KINET_CQ_CI_MASK, DOCA_GPUNETIO_VERBS_CQE_CI_MASK);
	KT_CHECK_EQ(KINET_CQE_REQ, DOCA_GPUNETIO_IB_MLX5_CQE_REQ);
	KT_CHECK_EQ(KINET_CQE_REQ_ERR, DOCA_GPUNETIO_IB_MLX5_CQE_REQ_ERR);
	KT_CHECK_EQ(KINET_CQE_RESP_ERR, DOCA_GPUNETIO_IB_MLX5_CQE_RESP_ERR);
	KT_CHECK_EQ(KINET_CQE_INVALID, DOCA_GPUNETIO_IB_MLX5_CQE_INVALID);
	KT_CHECK_EQ(KINET_CQE_OP_OWN_INIT,
		    DOCA_GPUNETIO_IB_MLX5_CQE_INVALID << DOCA_GPUNETIO_VERBS_MLX5_CQE_OPCODE_SHIFT |
			    DOCA_GPUNETIO_IB_MLX5_CQE_OWNER_MASK);
	KT_CHECK_EQ(KINET_WQE_BB_SIZE, 1u << DOCA_GPUNETIO_IB_MLX5_WQE_SQ_SHIFT);
	KT_CHECK_EQ(sizeof(struct kinet_cqe64), DOCA_GPUNETIO_VERBS_CQE_SIZE);
	KT_CHECK_EQ(sizeof(struct kinet_cqe64), sizeof(struct doca_gpunetio_ib_mlx5_cqe64));
	KT_CHECK_EQ(sizeof(struct kinet_wqe_wait_seg), sizeof(struct doca_gpu_dev_verbs_wqe_wait_seg));
	SAME_FIELD(kinet_wqe_wait_seg, doca_gpu_dev_verbs_wqe_wait_seg, max_index);
	SAME_FIELD(kinet_wqe_ctrl_seg, doca_gpu_dev_verbs_wqe_ctrl_seg, opmod_idx_opcode);
	SAME_FIELD(kinet_wqe_ctrl_seg, doca_gpu_dev_verbs_wqe_ctrl_seg, qpn_ds);
	SAME_FIELD(kinet_wqe_ctrl_seg, doca_gpu_dev_verbs_wqe_ctrl_seg, fm_ce_se);
	SAME_FIELD(kinet_wqe_ctrl_seg, doca_gpu_dev_verbs_wqe_ctrl_seg, imm);
	SAME_FIELD(kinet_wqe_raddr_seg, doca_gpunetio_ib_mlx5_wqe_raddr_seg, rkey);
	SAME_FIELD(kinet_wqe_atomic_seg, doca_gpunetio_ib_mlx5_wqe_atomic_seg, compare);
	SAME_FIELD(kinet_wqe_data_seg, doca_gpunetio_ib_mlx5_wqe_data_seg, addr);
	SAME_FIELD(kinet_cqe64, doca_gpunetio_ib_mlx5_cqe64, wqe_counter);
	SAME_FIELD(kinet_cqe64, doca_gpunetio_ib_mlx5_cqe64, sop_drop_qpn);
	SAME_FIELD(kinet_cqe64, doca_gpunetio_ib_mlx5_cqe64, op_own);
	KT_CHECK_EQ(offsetof(struct kinet_wqe_wait_seg, cqn),
		    offsetof(struct doca_gpu_dev_verbs_wqe_wait_seg, qpn_cqn));
}

#else

KT_TEST(descriptors)
{
	KT_SKIP("GPUNetIO's header (nccl_device/gin/gdaki/doca_gpunetio/common/doca_gpunetio_verbs_dev.h of "
		"the "
		"CUDA toolkit) is not installed");
}

KT_TEST(enums)
{
	KT_SKIP("no GPUNetIO header");
}

KT_TEST(wire)
{
	KT_SKIP("no GPUNetIO header");
}

#endif

KT_MAIN(descriptors, enums, wire)
