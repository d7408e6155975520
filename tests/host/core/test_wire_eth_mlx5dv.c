/*
 * wire_eth.h against rdma-core's <infiniband/mlx5dv.h>: the Ethernet
 * segment, the striding receive WQE and the receive CQE fields (offsets,
 * sizes, flag bits and constants), and the encoders against mlx5dv's
 * mlx5dv_set_ctrl_seg / mlx5dv_set_eth_seg / mlx5dv_set_data_seg.
 * mlx5dv.h has no wait-on-time segment, no WAIT op_mods and no L4 header
 * type names: those are checked against hand-written bytes in
 * test_wire_eth.c only.  Built with KINET_HAVE_MLX5DV where
 * tests/CMakeLists.txt finds the header; skipped with a reason otherwise.
 */
#include "kt.h"

#include <kinet/wire.h>

#ifdef KINET_HAVE_MLX5DV

#include <endian.h>
#include <infiniband/mlx5dv.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define SAME_FIELD_AS(k, kf, m, mf)                                                                          \
	do {                                                                                                 \
		KT_CHECK_EQ(offsetof(struct k, kf), offsetof(struct m, mf));                                 \
		KT_CHECK_EQ(sizeof(((struct k *)0)->kf), sizeof(((struct m *)0)->mf));                       \
	} while (0)

KT_TEST(eth_seg_layout)
{
	SAME_FIELD_AS(kinet_wqe_eth_seg, swp_offs, mlx5_wqe_eth_seg, rsvd0);
	SAME_FIELD_AS(kinet_wqe_eth_seg, cs_flags, mlx5_wqe_eth_seg, cs_flags);
	SAME_FIELD_AS(kinet_wqe_eth_seg, swp_flags, mlx5_wqe_eth_seg, rsvd1);
	SAME_FIELD_AS(kinet_wqe_eth_seg, mss, mlx5_wqe_eth_seg, mss);
	SAME_FIELD_AS(kinet_wqe_eth_seg, metadata, mlx5_wqe_eth_seg, rsvd2);
	SAME_FIELD_AS(kinet_wqe_eth_seg, inline_hdr_sz, mlx5_wqe_eth_seg, inline_hdr_sz);
	SAME_FIELD_AS(kinet_wqe_eth_seg, inline_hdr_start, mlx5_wqe_eth_seg, inline_hdr_start);
	/* mlx5dv's struct goes on with 16 bytes of inlined header; without one
	 * the segment is one ds unit and the data segment follows. */
	KT_CHECK_EQ(offsetof(struct mlx5_wqe_eth_seg, inline_hdr), sizeof(struct kinet_wqe_eth_seg));
	KT_CHECK_EQ(sizeof(struct kinet_wqe_eth_seg), sizeof(struct mlx5_wqe_data_seg));

	/* The send WQE: ctrl, eth, data, data. */
	KT_CHECK_EQ(offsetof(struct kinet_eth_send_wqe, eth), sizeof(struct mlx5_wqe_ctrl_seg));
	KT_CHECK_EQ(offsetof(struct kinet_eth_send_wqe, data),
		    sizeof(struct mlx5_wqe_ctrl_seg) + offsetof(struct mlx5_wqe_eth_seg, inline_hdr));
	KT_CHECK_EQ(sizeof(struct kinet_eth_send_wqe), MLX5_SEND_WQE_BB);
	KT_CHECK_EQ(sizeof(struct kinet_eth_wait_wqe), MLX5_SEND_WQE_BB);
}

KT_TEST(mprq_wqe_layout)
{
	KT_CHECK_EQ(sizeof(struct kinet_wqe_mprq), sizeof(struct mlx5_mprq_wqe));
	SAME_FIELD_AS(kinet_wqe_mprq, next, mlx5_mprq_wqe, nseg);
	SAME_FIELD_AS(kinet_wqe_mprq, data, mlx5_mprq_wqe, dseg);
}

KT_TEST(rx_cqe_layout)
{
	SAME_FIELD_AS(kinet_cqe64, wqe_id, mlx5_cqe64, wqe_id);
	SAME_FIELD_AS(kinet_cqe64, hds_ip_ext, mlx5_cqe64, hds_ip_ext);
	SAME_FIELD_AS(kinet_cqe64, l4_hdr_type_etc, mlx5_cqe64, l4_hdr_type_etc);
	SAME_FIELD_AS(kinet_cqe64, byte_cnt, mlx5_cqe64, byte_cnt);
	SAME_FIELD_AS(kinet_cqe64, timestamp, mlx5_cqe64, timestamp);
	SAME_FIELD_AS(kinet_cqe64, sop_drop_qpn, mlx5_cqe64, sop_drop_qpn);
	SAME_FIELD_AS(kinet_cqe64, wqe_counter, mlx5_cqe64, wqe_counter);
	SAME_FIELD_AS(kinet_cqe64, op_own, mlx5_cqe64, op_own);
}

KT_TEST(constants)
{
	KT_CHECK_EQ(KINET_WQE_OP_SEND, MLX5_OPCODE_SEND);
	KT_CHECK_EQ(KINET_ETH_WQE_L3_CSUM, MLX5_ETH_WQE_L3_CSUM);
	KT_CHECK_EQ(KINET_ETH_WQE_L4_CSUM, MLX5_ETH_WQE_L4_CSUM);
	KT_CHECK_EQ(KINET_CQE_L2_OK, MLX5_CQE_L2_OK);
	KT_CHECK_EQ(KINET_CQE_L3_OK, MLX5_CQE_L3_OK);
	KT_CHECK_EQ(KINET_CQE_L4_OK, MLX5_CQE_L4_OK);
	KT_CHECK_EQ(KINET_CQE_L3_HDR_NONE, MLX5_CQE_L3_HDR_TYPE_NONE);
	KT_CHECK_EQ(KINET_CQE_L3_HDR_IPV6, MLX5_CQE_L3_HDR_TYPE_IPV6);
	KT_CHECK_EQ(KINET_CQE_L3_HDR_IPV4, MLX5_CQE_L3_HDR_TYPE_IPV4);
	KT_CHECK_EQ(KINET_CQE_RESP_SEND, MLX5_CQE_RESP_SEND);
#ifdef MLX5_OPCODE_WAIT
	KT_CHECK_EQ(KINET_WQE_OP_WAIT, MLX5_OPCODE_WAIT);
#endif
}

/* The send WQE's ctrl and data against mlx5dv's setters, and its Ethernet
 * segment against mlx5dv_set_eth_seg (no inline header, no TSO) after the
 * zeroing rdma-core's raw-packet post_send does first. */
KT_TEST(send_encoder)
{
	static const uint8_t flags[] = {0, MLX5_ETH_WQE_L3_CSUM, MLX5_ETH_WQE_L4_CSUM,
					MLX5_ETH_WQE_L3_CSUM | MLX5_ETH_WQE_L4_CSUM};
	static const uint16_t idx[] = {0, 1, 0x7fff, 0xffff};
	static const uint32_t sqns[] = {0, 0x1234, 0xffffff};
	static const uint8_t ce[] = {0, MLX5_WQE_CTRL_CQ_UPDATE};

	for (size_t f = 0; f < sizeof(flags); f++)
		for (size_t i = 0; i < sizeof(idx) / sizeof(idx[0]); i++)
			for (size_t q = 0; q < sizeof(sqns) / sizeof(sqns[0]); q++)
				for (size_t c = 0; c < sizeof(ce); c++) {
					uint8_t ref[64], got[64], none[2] = {0, 0};
					struct kinet_eth_send_wqe *w =
						(struct kinet_eth_send_wqe *)(void *)got;

					memset(ref, 0, sizeof(ref));
					memset(got, 0xa5, sizeof(got));
					mlx5dv_set_ctrl_seg((struct mlx5_wqe_ctrl_seg *)(void *)ref, idx[i],
							    MLX5_OPCODE_SEND, 0, sqns[q], ce[c], 4, 0, 0);
					mlx5dv_set_eth_seg((struct mlx5_wqe_eth_seg *)(void *)(ref + 16),
							   flags[f], 0, 0, none);
					mlx5dv_set_data_seg((struct mlx5_wqe_data_seg *)(void *)(ref + 32),
							    1514, 0x1234567u, 0x7f0000001000ull + i);
					mlx5dv_set_data_seg((struct mlx5_wqe_data_seg *)(void *)(ref + 48),
							    9000, 0xfedcbau, 0x200000000ull + q);
					kinet_eth_wqe_send2(w, idx[i], sqns[q], ce[c], flags[f],
							    0x7f0000001000ull + i, 1514, 0x1234567u,
							    0x200000000ull + q, 9000, 0xfedcbau);
					KT_CHECK(memcmp(ref, got, sizeof(ref)) == 0);

					/* One segment: ds 3, the first 48 bytes. */
					mlx5dv_set_ctrl_seg((struct mlx5_wqe_ctrl_seg *)(void *)ref, idx[i],
							    MLX5_OPCODE_SEND, 0, sqns[q], ce[c], 3, 0, 0);
					kinet_eth_wqe_send(w, idx[i], sqns[q], ce[c], flags[f],
							   0x7f0000001000ull + i, 1514, 0x1234567u);
					KT_CHECK(memcmp(ref, got, 48) == 0);
				}
}

/* The WAIT-on-time ctrl segment: opcode 0x0f, op_mod 2 in bits 31:24, as
 * mlx5dv_set_ctrl_seg encodes an op_mod. */
KT_TEST(wait_time_ctrl)
{
	static const uint16_t idx[] = {0, 1, 0x1234, 0xffff};
	for (size_t i = 0; i < sizeof(idx) / sizeof(idx[0]); i++) {
		struct mlx5_wqe_ctrl_seg ref;
		struct kinet_eth_wait_wqe got;
		memset(&ref, 0, sizeof(ref));
		mlx5dv_set_ctrl_seg(&ref, idx[i], KINET_WQE_OP_WAIT, KINET_WQE_OPMOD_WAIT_TIME, 0xabcdef,
				    MLX5_WQE_CTRL_CQ_UPDATE, KINET_ETH_WAIT_TIME_DS, 0, 0);
		kinet_eth_wqe_wait_time(&got, idx[i], 0xabcdef, MLX5_WQE_CTRL_CQ_UPDATE,
					0x0000000100000002ull);
		KT_CHECK(memcmp(&ref, &got.ctrl, sizeof(ref)) == 0);
	}
}

/* Receive CQE decoding against mlx5dv's struct read the way rdma-core's
 * cq.c reads it (l3 type = (l4_hdr_type_etc >> 2) & 3, flags in hds_ip_ext)
 * and the way the Linux mlx5e driver reads a striding CQE. */
KT_TEST(rx_cqe_decoder)
{
	for (unsigned seed = 0; seed < 512; seed++) {
		union {
			struct mlx5_cqe64 m;
			struct kinet_cqe64 k;
			uint8_t b[64];
		} u;
		struct kinet_cqe_eth_rx rx;

		for (int i = 0; i < 64; i++)
			u.b[i] = (uint8_t)(seed * 131u + (unsigned)i * 29u + (seed >> 3));
		kinet_cqe_eth_rx_decode(&u.k, &rx);
		KT_CHECK_EQ(rx.byte_cnt, be32toh(u.m.byte_cnt));
		KT_CHECK(rx.timestamp == be64toh(u.m.timestamp));
		KT_CHECK_EQ(rx.wqe_counter, be16toh(u.m.wqe_counter));
		KT_CHECK_EQ(rx.wqe_id, be16toh(u.m.wqe_id));
		KT_CHECK_EQ(rx.qpn, be32toh(u.m.sop_drop_qpn) & 0xffffff);
		KT_CHECK_EQ(rx.l3_hdr_type, (u.m.l4_hdr_type_etc >> 2) & 0x3);
		KT_CHECK_EQ(rx.l4_hdr_type, (u.m.l4_hdr_type_etc >> 4) & 0x7);
		KT_CHECK_EQ(!!(rx.csum_ok & KINET_CQE_L3_OK), !!(u.m.hds_ip_ext & MLX5_CQE_L3_OK));
		KT_CHECK_EQ(!!(rx.csum_ok & KINET_CQE_L4_OK), !!(u.m.hds_ip_ext & MLX5_CQE_L4_OK));
		KT_CHECK_EQ(!!(rx.csum_ok & KINET_CQE_L2_OK), !!(u.m.hds_ip_ext & MLX5_CQE_L2_OK));
		/* mlx5e: stride count in the high be16 of byte_cnt (15 bits),
		 * bytes in the low be16. */
		const uint16_t *bc = (const uint16_t *)(const void *)&u.m.byte_cnt;
		KT_CHECK_EQ(kinet_cqe_mprq_strides(rx.byte_cnt), be16toh(bc[0]) & 0x7fff);
		KT_CHECK_EQ(kinet_cqe_mprq_bytes(rx.byte_cnt), be16toh(bc[1]));
		KT_CHECK_EQ(kinet_cqe_mprq_filler(rx.byte_cnt), !!(be16toh(bc[0]) & 0x8000));
		KT_CHECK_EQ(kinet_cqe_opcode(&u.k), mlx5dv_get_cqe_opcode(&u.m));
	}
}

KT_MAIN(eth_seg_layout, mprq_wqe_layout, rx_cqe_layout, constants, send_encoder, wait_time_ctrl,
	rx_cqe_decoder)

#else /* !KINET_HAVE_MLX5DV */

KT_TEST(mlx5dv)
{
	KT_SKIP("rdma-core's infiniband/mlx5dv.h not installed (apt-get install libibverbs-dev)");
}

KT_MAIN(mlx5dv)

#endif
