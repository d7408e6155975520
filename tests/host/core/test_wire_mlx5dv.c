/*
 * wire.h against rdma-core's <infiniband/mlx5dv.h>: every struct size, field
 * offset and constant kinet relies on, and the encoders against mlx5dv's own
 * helpers.  Built with KINET_HAVE_MLX5DV when tests/CMakeLists.txt finds the
 * header; skipped with a reason otherwise.  Only static inline parts of
 * mlx5dv.h are used, so nothing links against libibverbs.
 */
#include "kt.h"

#include <kinet/wire.h>

#ifdef KINET_HAVE_MLX5DV

#include <endian.h>
#include <infiniband/mlx5dv.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define SAME_SIZE(k, m) KT_CHECK_EQ(sizeof(struct k), sizeof(struct m))
#define SAME_FIELD(k, m, f)                                                                                  \
	do {                                                                                                 \
		KT_CHECK_EQ(offsetof(struct k, f), offsetof(struct m, f));                                   \
		KT_CHECK_EQ(sizeof(((struct k *)0)->f), sizeof(((struct m *)0)->f));                         \
	} while (0)

KT_TEST(segment_layouts)
{
	SAME_SIZE(kinet_wqe_ctrl_seg, mlx5_wqe_ctrl_seg);
	SAME_FIELD(kinet_wqe_ctrl_seg, mlx5_wqe_ctrl_seg, opmod_idx_opcode);
	SAME_FIELD(kinet_wqe_ctrl_seg, mlx5_wqe_ctrl_seg, qpn_ds);
	SAME_FIELD(kinet_wqe_ctrl_seg, mlx5_wqe_ctrl_seg, signature);
	SAME_FIELD(kinet_wqe_ctrl_seg, mlx5_wqe_ctrl_seg, fm_ce_se);
	SAME_FIELD(kinet_wqe_ctrl_seg, mlx5_wqe_ctrl_seg, imm);
	/* kinet's rsvd[2] is mlx5dv's dci_stream_channel_id. */
	KT_CHECK_EQ(offsetof(struct kinet_wqe_ctrl_seg, rsvd),
		    offsetof(struct mlx5_wqe_ctrl_seg, dci_stream_channel_id));
	KT_CHECK_EQ(sizeof(((struct kinet_wqe_ctrl_seg *)0)->rsvd),
		    sizeof(((struct mlx5_wqe_ctrl_seg *)0)->dci_stream_channel_id));

	SAME_SIZE(kinet_wqe_raddr_seg, mlx5_wqe_raddr_seg);
	SAME_FIELD(kinet_wqe_raddr_seg, mlx5_wqe_raddr_seg, raddr);
	SAME_FIELD(kinet_wqe_raddr_seg, mlx5_wqe_raddr_seg, rkey);
	SAME_FIELD(kinet_wqe_raddr_seg, mlx5_wqe_raddr_seg, reserved);

	SAME_SIZE(kinet_wqe_data_seg, mlx5_wqe_data_seg);
	SAME_FIELD(kinet_wqe_data_seg, mlx5_wqe_data_seg, byte_count);
	SAME_FIELD(kinet_wqe_data_seg, mlx5_wqe_data_seg, lkey);
	SAME_FIELD(kinet_wqe_data_seg, mlx5_wqe_data_seg, addr);

	SAME_SIZE(kinet_wqe_srq_next_seg, mlx5_wqe_srq_next_seg);
	SAME_FIELD(kinet_wqe_srq_next_seg, mlx5_wqe_srq_next_seg, rsvd0);
	SAME_FIELD(kinet_wqe_srq_next_seg, mlx5_wqe_srq_next_seg, next_wqe_index);
	SAME_FIELD(kinet_wqe_srq_next_seg, mlx5_wqe_srq_next_seg, signature);
	SAME_FIELD(kinet_wqe_srq_next_seg, mlx5_wqe_srq_next_seg, rsvd1);

	SAME_SIZE(kinet_wqe_inline_seg, mlx5_wqe_inl_data_seg);
	SAME_FIELD(kinet_wqe_inline_seg, mlx5_wqe_inl_data_seg, byte_count);

	SAME_SIZE(kinet_wqe_atomic_seg, mlx5_wqe_atomic_seg);
	SAME_FIELD(kinet_wqe_atomic_seg, mlx5_wqe_atomic_seg, swap_add);
	SAME_FIELD(kinet_wqe_atomic_seg, mlx5_wqe_atomic_seg, compare);
}

KT_TEST(cqe_layouts)
{
	SAME_SIZE(kinet_cqe64, mlx5_cqe64);
	SAME_FIELD(kinet_cqe64, mlx5_cqe64, wqe_id);
	SAME_FIELD(kinet_cqe64, mlx5_cqe64, ml_path);
	SAME_FIELD(kinet_cqe64, mlx5_cqe64, slid);
	SAME_FIELD(kinet_cqe64, mlx5_cqe64, flags_rqpn);
	SAME_FIELD(kinet_cqe64, mlx5_cqe64, hds_ip_ext);
	SAME_FIELD(kinet_cqe64, mlx5_cqe64, l4_hdr_type_etc);
	SAME_FIELD(kinet_cqe64, mlx5_cqe64, vlan_info);
	SAME_FIELD(kinet_cqe64, mlx5_cqe64, srqn_uidx);
	SAME_FIELD(kinet_cqe64, mlx5_cqe64, imm_inval_pkey);
	SAME_FIELD(kinet_cqe64, mlx5_cqe64, app);
	SAME_FIELD(kinet_cqe64, mlx5_cqe64, app_op);
	SAME_FIELD(kinet_cqe64, mlx5_cqe64, app_info);
	SAME_FIELD(kinet_cqe64, mlx5_cqe64, byte_cnt);
	SAME_FIELD(kinet_cqe64, mlx5_cqe64, timestamp);
	SAME_FIELD(kinet_cqe64, mlx5_cqe64, sop_drop_qpn);
	SAME_FIELD(kinet_cqe64, mlx5_cqe64, wqe_counter);
	SAME_FIELD(kinet_cqe64, mlx5_cqe64, signature);
	SAME_FIELD(kinet_cqe64, mlx5_cqe64, op_own);
	KT_CHECK_EQ(offsetof(struct mlx5_cqe64, op_own), 63);

	SAME_SIZE(kinet_err_cqe, mlx5_err_cqe);
	SAME_FIELD(kinet_err_cqe, mlx5_err_cqe, srqn);
	SAME_FIELD(kinet_err_cqe, mlx5_err_cqe, vendor_err_synd);
	SAME_FIELD(kinet_err_cqe, mlx5_err_cqe, syndrome);
	SAME_FIELD(kinet_err_cqe, mlx5_err_cqe, s_wqe_opcode_qpn);
	SAME_FIELD(kinet_err_cqe, mlx5_err_cqe, wqe_counter);
	SAME_FIELD(kinet_err_cqe, mlx5_err_cqe, signature);
	SAME_FIELD(kinet_err_cqe, mlx5_err_cqe, op_own);
}

KT_TEST(constants)
{
	KT_CHECK_EQ(KINET_WQE_OP_NOP, MLX5_OPCODE_NOP);
	KT_CHECK_EQ(KINET_WQE_OP_RDMA_WRITE, MLX5_OPCODE_RDMA_WRITE);
	KT_CHECK_EQ(KINET_WQE_OP_RDMA_WRITE_IMM, MLX5_OPCODE_RDMA_WRITE_IMM);
	KT_CHECK_EQ(KINET_WQE_OP_SEND, MLX5_OPCODE_SEND);
	KT_CHECK_EQ(KINET_WQE_OP_SEND_IMM, MLX5_OPCODE_SEND_IMM);
	KT_CHECK_EQ(KINET_WQE_OP_RDMA_READ, MLX5_OPCODE_RDMA_READ);
	KT_CHECK_EQ(KINET_WQE_OP_ATOMIC_CS, MLX5_OPCODE_ATOMIC_CS);
	KT_CHECK_EQ(KINET_WQE_OP_ATOMIC_FA, MLX5_OPCODE_ATOMIC_FA);

	KT_CHECK_EQ(KINET_CQE_REQ, MLX5_CQE_REQ);
	KT_CHECK_EQ(KINET_CQE_RESP_WR_IMM, MLX5_CQE_RESP_WR_IMM);
	KT_CHECK_EQ(KINET_CQE_RESP_SEND, MLX5_CQE_RESP_SEND);
	KT_CHECK_EQ(KINET_CQE_RESP_SEND_IMM, MLX5_CQE_RESP_SEND_IMM);
	KT_CHECK_EQ(KINET_CQE_REQ_ERR, MLX5_CQE_REQ_ERR);
	KT_CHECK_EQ(KINET_CQE_RESP_ERR, MLX5_CQE_RESP_ERR);
	KT_CHECK_EQ(KINET_CQE_INVALID, MLX5_CQE_INVALID);

	KT_CHECK_EQ(KINET_SYND_LOCAL_LENGTH_ERR, MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR);
	KT_CHECK_EQ(KINET_SYND_LOCAL_QP_OP_ERR, MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR);
	KT_CHECK_EQ(KINET_SYND_LOCAL_PROT_ERR, MLX5_CQE_SYNDROME_LOCAL_PROT_ERR);
	KT_CHECK_EQ(KINET_SYND_WR_FLUSH_ERR, MLX5_CQE_SYNDROME_WR_FLUSH_ERR);
	KT_CHECK_EQ(KINET_SYND_MW_BIND_ERR, MLX5_CQE_SYNDROME_MW_BIND_ERR);
	KT_CHECK_EQ(KINET_SYND_BAD_RESP_ERR, MLX5_CQE_SYNDROME_BAD_RESP_ERR);
	KT_CHECK_EQ(KINET_SYND_LOCAL_ACCESS_ERR, MLX5_CQE_SYNDROME_LOCAL_ACCESS_ERR);
	KT_CHECK_EQ(KINET_SYND_REMOTE_INVAL_REQ_ERR, MLX5_CQE_SYNDROME_REMOTE_INVAL_REQ_ERR);
	KT_CHECK_EQ(KINET_SYND_REMOTE_ACCESS_ERR, MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR);
	KT_CHECK_EQ(KINET_SYND_REMOTE_OP_ERR, MLX5_CQE_SYNDROME_REMOTE_OP_ERR);
	KT_CHECK_EQ(KINET_SYND_TRANSPORT_RETRY_EXC_ERR, MLX5_CQE_SYNDROME_TRANSPORT_RETRY_EXC_ERR);
	KT_CHECK_EQ(KINET_SYND_RNR_RETRY_EXC_ERR, MLX5_CQE_SYNDROME_RNR_RETRY_EXC_ERR);
	KT_CHECK_EQ(KINET_SYND_REMOTE_ABORTED_ERR, MLX5_CQE_SYNDROME_REMOTE_ABORTED_ERR);

	KT_CHECK_EQ(KINET_WQE_CTRL_CQ_UPDATE, MLX5_WQE_CTRL_CQ_UPDATE);
	/* Fence mode, fm_ce_se bits 7:5.  The PRM has 2 = fence (what the kernel's
	 * mlx5_ib writes for IB_SEND_FENCE, MLX5_FENCE_MODE_FENCE = 0x40) and
	 * 4 = initiator small fence + fence (what libmlx5 writes for
	 * IBV_SEND_FENCE, mlx5dv.h's MLX5_WQE_CTRL_FENCE = 0x80).  kinet may use
	 * either; both order the WQE after earlier reads and atomics. */
	if (KINET_WQE_CTRL_FENCE != MLX5_WQE_CTRL_FENCE)
		printf("note: KINET_WQE_CTRL_FENCE 0x%02x is PRM fence mode 2 (as the kernel's mlx5_ib); "
		       "mlx5dv.h's MLX5_WQE_CTRL_FENCE is 0x%02x (mode 4)\n",
		       (unsigned)KINET_WQE_CTRL_FENCE, (unsigned)MLX5_WQE_CTRL_FENCE);
	KT_CHECK(KINET_WQE_CTRL_FENCE == MLX5_WQE_CTRL_FENCE || KINET_WQE_CTRL_FENCE == (2u << 5));
	KT_CHECK_EQ(KINET_WQE_CTRL_FENCE & 0x1fu, 0);
	KT_CHECK_EQ(KINET_WQE_CTRL_SOLICITED, MLX5_WQE_CTRL_SOLICITED);
	KT_CHECK_EQ(KINET_INLINE_SEG_FLAG, MLX5_INLINE_SEG);
	KT_CHECK_EQ(KINET_WQE_BB_SIZE, MLX5_SEND_WQE_BB);
	KT_CHECK_EQ(KINET_WQE_BB_SIZE, 1u << MLX5_SEND_WQE_SHIFT);
	/* MLX5_SEND_WQE_DS (16) lives in libmlx5's private wqe.h, not in
	 * mlx5dv.h: the ds unit is the size of one data segment. */
#ifdef MLX5_SEND_WQE_DS
	KT_CHECK_EQ(KINET_WQE_DS_SIZE, MLX5_SEND_WQE_DS);
#endif
	KT_CHECK_EQ(KINET_WQE_DS_SIZE, sizeof(struct mlx5_wqe_data_seg));
	KT_CHECK_EQ(KINET_INVALID_LKEY, MLX5_INVALID_LKEY);
	KT_CHECK_EQ(KINET_DBR_RECV, MLX5_RCV_DBR);
	KT_CHECK_EQ(KINET_DBR_SEND, MLX5_SND_DBR);
	KT_CHECK_EQ(1u, MLX5_CQE_OWNER_MASK);
}

/* kinet_wqe_set_ctrl against mlx5dv_set_ctrl_seg, over opcodes, indices,
 * QP numbers, ds counts, flags and immediates. */
static int ctrl_matches(uint8_t op, uint16_t idx, uint32_t qpn, uint8_t ds, uint8_t flags, uint32_t imm)
{
	struct mlx5_wqe_ctrl_seg ref;
	struct kinet_wqe_ctrl_seg got;

	memset(&ref, 0, sizeof(ref));
	memset(&got, 0xa5, sizeof(got));
	mlx5dv_set_ctrl_seg(&ref, idx, op, 0, qpn, flags, ds, 0, imm);
	kinet_wqe_set_ctrl(&got, op, idx, qpn, ds, flags, imm);
	if (memcmp(&ref, &got, sizeof(ref)) != 0) {
		fprintf(stderr, "ctrl differs: op 0x%x idx 0x%x qpn 0x%x ds %u flags 0x%x imm 0x%x\n", op,
			idx, qpn, ds, flags, imm);
		return 0;
	}
	return kinet_wqe_ctrl_opcode(&got) == op && kinet_wqe_ctrl_index(&got) == idx &&
	       kinet_wqe_ctrl_qpn(&got) == qpn && kinet_wqe_ctrl_ds(&got) == ds;
}

KT_TEST(ctrl_encoder)
{
	static const uint8_t ops[] = {
		MLX5_OPCODE_NOP,       MLX5_OPCODE_RDMA_WRITE, MLX5_OPCODE_RDMA_WRITE_IMM,
		MLX5_OPCODE_SEND,      MLX5_OPCODE_SEND_IMM,   MLX5_OPCODE_RDMA_READ,
		MLX5_OPCODE_ATOMIC_CS, MLX5_OPCODE_ATOMIC_FA};
	static const uint16_t idx[] = {0, 1, 0x00ff, 0x1234, 0xfffe, 0xffff};
	static const uint32_t qpns[] = {0, 1, 0x42, 0xabcdef, 0xffffff};
	static const uint8_t dss[] = {1, 2, 3, 4, 17, 63};
	static const uint8_t flags[] = {
		0, MLX5_WQE_CTRL_CQ_UPDATE, MLX5_WQE_CTRL_FENCE, MLX5_WQE_CTRL_SOLICITED,
		MLX5_WQE_CTRL_CQ_UPDATE | MLX5_WQE_CTRL_FENCE | MLX5_WQE_CTRL_SOLICITED};
	static const uint32_t imms[] = {0, 0x01020304u, 0xffffffffu};
#define KT_N(a) (sizeof(a) / sizeof((a)[0]))
	size_t total = KT_N(ops) * KT_N(idx) * KT_N(qpns) * KT_N(dss) * KT_N(flags) * KT_N(imms);

	for (size_t n = 0; n < total; n++) {
		size_t r = n;
		uint8_t op = ops[r % KT_N(ops)];
		r /= KT_N(ops);
		uint16_t i = idx[r % KT_N(idx)];
		r /= KT_N(idx);
		uint32_t q = qpns[r % KT_N(qpns)];
		r /= KT_N(qpns);
		uint8_t d = dss[r % KT_N(dss)];
		r /= KT_N(dss);
		uint8_t f = flags[r % KT_N(flags)];
		r /= KT_N(flags);
		uint32_t imm = htobe32(imms[r % KT_N(imms)]);
		KT_CHECK(ctrl_matches(op, i, q, d, f, imm));
	}
#undef KT_N
}

KT_TEST(data_encoder)
{
	static const uint64_t addrs[] = {0, 1, 0x00007f0012345678ull, 0xffff800000000000ull, ~0ull};
	static const uint32_t lens[] = {0, 1, 8, 4096, 0x7fffffffu, 0xffffffffu};
	static const uint32_t lkeys[] = {0, MLX5_INVALID_LKEY, 0x12345678u, 0xffffffffu};

	for (size_t a = 0; a < sizeof(addrs) / sizeof(addrs[0]); a++)
		for (size_t l = 0; l < sizeof(lens) / sizeof(lens[0]); l++)
			for (size_t k = 0; k < sizeof(lkeys) / sizeof(lkeys[0]); k++) {
				struct mlx5_wqe_data_seg ref;
				struct kinet_wqe_data_seg got;
				memset(&ref, 0, sizeof(ref));
				memset(&got, 0xa5, sizeof(got));
				mlx5dv_set_data_seg(&ref, lens[l], lkeys[k], (uintptr_t)addrs[a]);
				kinet_wqe_set_data(&got, addrs[a], lens[l], lkeys[k]);
				KT_CHECK(memcmp(&ref, &got, sizeof(ref)) == 0);
			}
}

/* rdma-core has no mlx5dv_set_remote_addr_seg / mlx5dv_set_atomic_seg (its
 * provider fills them inline in post_send, in mlx5dv's structs); the
 * reference here is that fill, field by field with htobe*. */
KT_TEST(raddr_and_atomic_encoders)
{
	static const uint64_t vals[] = {0, 1, 0x0102030405060708ull, 0x8000000000000000ull, ~0ull};
	static const uint32_t keys[] = {0, 1, 0xa0b0c0d0u, 0xffffffffu};

	for (size_t v = 0; v < sizeof(vals) / sizeof(vals[0]); v++)
		for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++) {
			struct mlx5_wqe_raddr_seg ref;
			struct kinet_wqe_raddr_seg got;
			memset(&ref, 0, sizeof(ref));
			memset(&got, 0xa5, sizeof(got));
			ref.raddr = htobe64(vals[v]);
			ref.rkey = htobe32(keys[k]);
			ref.reserved = 0;
			kinet_wqe_set_raddr(&got, vals[v], keys[k]);
			KT_CHECK(memcmp(&ref, &got, sizeof(ref)) == 0);
		}

	for (size_t s = 0; s < sizeof(vals) / sizeof(vals[0]); s++)
		for (size_t c = 0; c < sizeof(vals) / sizeof(vals[0]); c++) {
			struct mlx5_wqe_atomic_seg ref;
			struct kinet_wqe_atomic_seg got;
			memset(&ref, 0, sizeof(ref));
			memset(&got, 0xa5, sizeof(got));
			ref.swap_add = htobe64(vals[s]);
			ref.compare = htobe64(vals[c]);
			kinet_wqe_set_atomic(&got, vals[s], vals[c]);
			KT_CHECK(memcmp(&ref, &got, sizeof(ref)) == 0);
		}

	struct mlx5_wqe_inl_data_seg ref;
	struct kinet_wqe_inline_seg got;
	ref.byte_count = htobe32(MLX5_INLINE_SEG | 60u);
	got.byte_count = kinet_be32(KINET_INLINE_SEG_FLAG | 60u);
	KT_CHECK(memcmp(&ref, &got, sizeof(ref)) == 0);
}

/* CQE decoding against mlx5dv_get_cqe_opcode/owner and the be fields. */
KT_TEST(cqe_decoders)
{
	for (unsigned op_own = 0; op_own < 256; op_own++) {
		union {
			struct mlx5_cqe64 m;
			struct kinet_cqe64 k;
			uint8_t b[64];
		} u;
		for (int i = 0; i < 64; i++)
			u.b[i] = (uint8_t)(i * 37 + op_own);
		u.b[63] = (uint8_t)op_own;
		KT_CHECK_EQ(kinet_cqe_opcode(&u.k), mlx5dv_get_cqe_opcode(&u.m));
		KT_CHECK_EQ(kinet_cqe_owner(&u.k), mlx5dv_get_cqe_owner(&u.m));
		KT_CHECK_EQ(kinet_cqe_qpn(&u.k), be32toh(u.m.sop_drop_qpn) & 0xffffff);
		KT_CHECK_EQ(kinet_be16(u.k.wqe_counter), be16toh(u.m.wqe_counter));
		KT_CHECK_EQ(kinet_be32(u.k.byte_cnt), be32toh(u.m.byte_cnt));
		KT_CHECK_EQ(kinet_be32(u.k.imm_inval_pkey), be32toh(u.m.imm_inval_pkey));
		KT_CHECK_EQ(kinet_cqe_syndrome(&u.k), ((struct mlx5_err_cqe *)(void *)&u.m)->syndrome);
		int err = mlx5dv_get_cqe_opcode(&u.m) == MLX5_CQE_REQ_ERR ||
			  mlx5dv_get_cqe_opcode(&u.m) == MLX5_CQE_RESP_ERR;
		KT_CHECK_EQ(kinet_cqe_is_error(&u.k), err);
	}
}

KT_MAIN(segment_layouts, cqe_layouts, constants, ctrl_encoder, data_encoder, raddr_and_atomic_encoders,
	cqe_decoders)

#else /* !KINET_HAVE_MLX5DV */

KT_TEST(mlx5dv)
{
	KT_SKIP("rdma-core's infiniband/mlx5dv.h not installed (apt-get install libibverbs-dev)");
}

KT_MAIN(mlx5dv)

#endif
