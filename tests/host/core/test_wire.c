/*
 * wire.h on its own: byte order helpers, byte-exact WQE encodings against
 * hand-written PRM bytes, CQE decoding and the owner-bit rule, and the
 * segment/basic-block arithmetic.  Needs nothing but the header.
 */
#include "kt.h"

#include <kinet/wire.h>

#include <stddef.h>
#include <stdint.h>
#include <string.h>

KT_TEST(be_round_trips)
{
	static const uint16_t v16[] = {0, 1, 0x00ff, 0xff00, 0x1234, 0xffff};
	static const uint32_t v32[] = {0, 1, 0xff, 0x12345678, 0x80000000u, 0xffffffffu, 0xdeadbeefu};
	static const uint64_t v64[] = {
		0, 1, 0x0102030405060708ull, 0x8000000000000000ull, ~0ull, 0xfedcba9876543210ull};

	KT_CHECK_EQ(kinet_be16(0x1234), 0x3412);
	KT_CHECK_EQ(kinet_be32(0x12345678u), 0x78563412u);
	KT_CHECK(kinet_be64(0x0102030405060708ull) == 0x0807060504030201ull);

	for (size_t i = 0; i < sizeof(v16) / sizeof(v16[0]); i++)
		KT_CHECK_EQ(kinet_be16(kinet_be16(v16[i])), v16[i]);
	for (size_t i = 0; i < sizeof(v32) / sizeof(v32[0]); i++)
		KT_CHECK_EQ(kinet_be32(kinet_be32(v32[i])), v32[i]);
	for (size_t i = 0; i < sizeof(v64) / sizeof(v64[0]); i++)
		KT_CHECK(kinet_be64(kinet_be64(v64[i])) == v64[i]);

	/* In memory, a big-endian field starts with its most significant byte. */
	uint32_t w = kinet_be32(0xa1b2c3d4u);
	uint8_t b[4];
	memcpy(b, &w, 4);
	KT_CHECK(b[0] == 0xa1 && b[1] == 0xb2 && b[2] == 0xc3 && b[3] == 0xd4);
	uint64_t q = kinet_be64(0x0102030405060708ull);
	uint8_t bq[8];
	memcpy(bq, &q, 8);
	for (int i = 0; i < 8; i++)
		KT_CHECK_EQ(bq[i], i + 1);
}

KT_TEST(layouts)
{
	KT_CHECK_EQ(sizeof(struct kinet_wqe_ctrl_seg), 16);
	KT_CHECK_EQ(sizeof(struct kinet_wqe_raddr_seg), 16);
	KT_CHECK_EQ(sizeof(struct kinet_wqe_data_seg), 16);
	KT_CHECK_EQ(sizeof(struct kinet_wqe_inline_seg), 4);
	KT_CHECK_EQ(sizeof(struct kinet_wqe_atomic_seg), 16);
	KT_CHECK_EQ(sizeof(struct kinet_cqe64), 64);
	KT_CHECK_EQ(sizeof(struct kinet_err_cqe), 64);

	KT_CHECK_EQ(offsetof(struct kinet_wqe_ctrl_seg, qpn_ds), 4);
	KT_CHECK_EQ(offsetof(struct kinet_wqe_ctrl_seg, fm_ce_se), 11);
	KT_CHECK_EQ(offsetof(struct kinet_wqe_ctrl_seg, imm), 12);
	KT_CHECK_EQ(offsetof(struct kinet_cqe64, wqe_id), 2);
	KT_CHECK_EQ(offsetof(struct kinet_cqe64, srqn_uidx), 32);
	KT_CHECK_EQ(offsetof(struct kinet_cqe64, imm_inval_pkey), 36);
	KT_CHECK_EQ(offsetof(struct kinet_cqe64, byte_cnt), 44);
	KT_CHECK_EQ(offsetof(struct kinet_cqe64, timestamp), 48);
	KT_CHECK_EQ(offsetof(struct kinet_cqe64, sop_drop_qpn), 56);
	KT_CHECK_EQ(offsetof(struct kinet_cqe64, wqe_counter), 60);
	KT_CHECK_EQ(offsetof(struct kinet_cqe64, signature), 62);
	KT_CHECK_EQ(offsetof(struct kinet_cqe64, op_own), 63);
	KT_CHECK_EQ(offsetof(struct kinet_err_cqe, srqn), 32);
	KT_CHECK_EQ(offsetof(struct kinet_err_cqe, vendor_err_synd), 54);
	KT_CHECK_EQ(offsetof(struct kinet_err_cqe, syndrome), 55);
	KT_CHECK_EQ(offsetof(struct kinet_err_cqe, s_wqe_opcode_qpn), 56);
	KT_CHECK_EQ(offsetof(struct kinet_err_cqe, wqe_counter), 60);
	KT_CHECK_EQ(offsetof(struct kinet_err_cqe, op_own), 63);
}

/* RDMA write, signalled and fenced, 3 DS: ctrl + raddr + data. */
KT_TEST(write_wqe_bytes)
{
	/* clang-format off */
	static const uint8_t want[48] = {
		/* ctrl: opmod 0, wqe_index 0x1234, opcode 0x08 */
		0x00, 0x12, 0x34, 0x08,
		/* qpn 0xabcdef, ds 3 */
		0xab, 0xcd, 0xef, 0x03,
		/* signature, rsvd[2], fm_ce_se = FENCE | CQ_UPDATE */
		0x00, 0x00, 0x00, 0x48,
		/* imm */
		0x00, 0x00, 0x00, 0x00,
		/* raddr 0x0102030405060708, rkey 0x11223344, reserved */
		0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08,
		0x11, 0x22, 0x33, 0x44, 0x00, 0x00, 0x00, 0x00,
		/* data: byte_count 0x1000, lkey 0x55667788, addr 0x00007f0012345678 */
		0x00, 0x00, 0x10, 0x00, 0x55, 0x66, 0x77, 0x88,
		0x00, 0x00, 0x7f, 0x00, 0x12, 0x34, 0x56, 0x78
	};
	/* clang-format on */
	uint8_t wqe[KINET_WQE_BB_SIZE];
	memset(wqe, 0xee, sizeof(wqe));

	struct kinet_wqe_ctrl_seg *ctrl = (struct kinet_wqe_ctrl_seg *)(void *)wqe;
	struct kinet_wqe_raddr_seg *raddr = (struct kinet_wqe_raddr_seg *)(void *)(wqe + 16);
	struct kinet_wqe_data_seg *data = (struct kinet_wqe_data_seg *)(void *)(wqe + 32);
	kinet_wqe_set_ctrl(ctrl, KINET_WQE_OP_RDMA_WRITE, 0x1234, 0xabcdef, 3,
			   KINET_WQE_CTRL_FENCE | KINET_WQE_CTRL_CQ_UPDATE, 0);
	kinet_wqe_set_raddr(raddr, 0x0102030405060708ull, 0x11223344u);
	kinet_wqe_set_data(data, 0x00007f0012345678ull, 0x1000, 0x55667788u);
	KT_CHECK_BYTES("rdma write", wqe, want, sizeof(want));
	/* The encoders touch nothing past their segments. */
	for (size_t i = sizeof(want); i < sizeof(wqe); i++)
		KT_CHECK_EQ(wqe[i], 0xee);

	KT_CHECK_EQ(kinet_wqe_ctrl_opcode(ctrl), KINET_WQE_OP_RDMA_WRITE);
	KT_CHECK_EQ(kinet_wqe_ctrl_index(ctrl), 0x1234);
	KT_CHECK_EQ(kinet_wqe_ctrl_qpn(ctrl), 0xabcdef);
	KT_CHECK_EQ(kinet_wqe_ctrl_ds(ctrl), 3);
}

/* Write with immediate: the immediate is stored as given (already
 * big-endian), exactly as mlx5dv_set_ctrl_seg does. */
KT_TEST(write_imm_ctrl_bytes)
{
	static const uint8_t want[16] = {0x00, 0xff, 0xff, 0x09, 0x00, 0x00, 0x01, 0x04,
					 0x00, 0x00, 0x00, 0x0a, 0xca, 0xfe, 0xf0, 0x0d};
	struct kinet_wqe_ctrl_seg ctrl;
	kinet_wqe_set_ctrl(&ctrl, KINET_WQE_OP_RDMA_WRITE_IMM, 0xffff, 1, 4,
			   KINET_WQE_CTRL_CQ_UPDATE | KINET_WQE_CTRL_SOLICITED, kinet_be32(0xcafef00du));
	KT_CHECK_BYTES("write imm ctrl", &ctrl, want, sizeof(want));

	/* ds keeps 6 bits; the qpn is 24 bits. */
	kinet_wqe_set_ctrl(&ctrl, KINET_WQE_OP_NOP, 0, 0xffffff, 0x3f, 0, 0);
	KT_CHECK_EQ(kinet_wqe_ctrl_ds(&ctrl), 0x3f);
	KT_CHECK_EQ(kinet_wqe_ctrl_qpn(&ctrl), 0xffffff);
	KT_CHECK_EQ(kinet_wqe_ctrl_opcode(&ctrl), KINET_WQE_OP_NOP);
}

/* Atomic fetch-add, 4 DS: ctrl + raddr + atomic + data (one basic block). */
KT_TEST(atomic_fa_wqe_bytes)
{
	/* clang-format off */
	static const uint8_t want[64] = {
		/* ctrl: wqe_index 7, ATOMIC_FA; qpn 0x42, ds 4; CQ_UPDATE */
		0x00, 0x00, 0x07, 0x12, 0x00, 0x00, 0x42, 0x04,
		0x00, 0x00, 0x00, 0x08, 0x00, 0x00, 0x00, 0x00,
		/* raddr 0x1000, rkey 0x0a0b0c0d */
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x10, 0x00,
		0x0a, 0x0b, 0x0c, 0x0d, 0x00, 0x00, 0x00, 0x00,
		/* swap_add 1, compare 0xffeeddccbbaa9988 */
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01,
		0xff, 0xee, 0xdd, 0xcc, 0xbb, 0xaa, 0x99, 0x88,
		/* data: 8 bytes, lkey 0x100 (KINET_INVALID_LKEY value), addr 0x2000 */
		0x00, 0x00, 0x00, 0x08, 0x00, 0x00, 0x01, 0x00,
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x20, 0x00
	};
	/* clang-format on */
	uint8_t wqe[KINET_WQE_BB_SIZE];
	memset(wqe, 0xee, sizeof(wqe));
	kinet_wqe_set_ctrl((struct kinet_wqe_ctrl_seg *)(void *)wqe, KINET_WQE_OP_ATOMIC_FA, 7, 0x42, 4,
			   KINET_WQE_CTRL_CQ_UPDATE, 0);
	kinet_wqe_set_raddr((struct kinet_wqe_raddr_seg *)(void *)(wqe + 16), 0x1000, 0x0a0b0c0du);
	kinet_wqe_set_atomic((struct kinet_wqe_atomic_seg *)(void *)(wqe + 32), 1, 0xffeeddccbbaa9988ull);
	kinet_wqe_set_data((struct kinet_wqe_data_seg *)(void *)(wqe + 48), 0x2000, 8, KINET_INVALID_LKEY);
	KT_CHECK_BYTES("atomic fa", wqe, want, sizeof(want));
}

/* WAIT (cross-channel), 2 DS: ctrl + wait segment naming a CQ and the
 * index of the CQE to wait for. */
KT_TEST(wait_wqe_bytes)
{
	/* clang-format off */
	static const uint8_t want[32] = {
		/* ctrl: wqe_index 0x0102, WAIT; qpn 0x000123, ds 2; CQ_UPDATE */
		0x00, 0x01, 0x02, 0x0f, 0x00, 0x01, 0x23, 0x02,
		0x00, 0x00, 0x00, 0x08, 0x00, 0x00, 0x00, 0x00,
		/* reserved, max_index 0x00abcdef, cqn 0x00456789 (24 bits kept) */
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
		0x00, 0xab, 0xcd, 0xef, 0x00, 0x45, 0x67, 0x89
	};
	/* clang-format on */
	uint8_t wqe[KINET_WQE_BB_SIZE];
	memset(wqe, 0xee, sizeof(wqe));
	kinet_wqe_set_ctrl((struct kinet_wqe_ctrl_seg *)(void *)wqe, KINET_WQE_OP_WAIT, 0x0102, 0x123, 2,
			   KINET_WQE_CTRL_CQ_UPDATE, 0);
	kinet_wqe_set_wait((struct kinet_wqe_wait_seg *)(void *)(wqe + 16), 0xff456789u, 0xabcdef);
	KT_CHECK_BYTES("wait", wqe, want, sizeof(want));
	for (size_t i = sizeof(want); i < sizeof(wqe); i++)
		KT_CHECK_EQ(wqe[i], 0xee);
	KT_CHECK_EQ(sizeof(struct kinet_wqe_wait_seg), 16);
	KT_CHECK_EQ(offsetof(struct kinet_wqe_wait_seg, max_index), 8);
	KT_CHECK_EQ(offsetof(struct kinet_wqe_wait_seg, cqn), 12);

	/* CQE i exists once i + 1 have been produced, over 24-bit wraps. */
	KT_CHECK(!kinet_wait_reached(0, 0));
	KT_CHECK(kinet_wait_reached(1, 0));
	KT_CHECK(!kinet_wait_reached(5, 5));
	KT_CHECK(kinet_wait_reached(6, 5));
	KT_CHECK(kinet_wait_reached(1000, 3));
	KT_CHECK(!kinet_wait_reached(0x1000000, 0x1000000));
	KT_CHECK(kinet_wait_reached(0x1000001, 0x1000000));
	KT_CHECK(kinet_wait_reached(0x1000001, 0xffffff));
	KT_CHECK(!kinet_wait_reached(0xffffff, 0xffffff));
	KT_CHECK(kinet_wait_reached(0x2000000, 0xffffff));
	/* Up to 2^23 - 1 ahead is still to come. */
	KT_CHECK(!kinet_wait_reached(10, 10 + 0x7ffffe));
}

/* Inline segment header: 0x80000000 | length, big-endian. */
KT_TEST(inline_header_bytes)
{
	static const uint8_t want[4] = {0x80, 0x00, 0x00, 0x0c};
	struct kinet_wqe_inline_seg seg;
	seg.byte_count = kinet_be32(KINET_INLINE_SEG_FLAG | 12u);
	KT_CHECK_BYTES("inline header", &seg, want, sizeof(want));
}

KT_TEST(inline_ds_and_bbs)
{
	/* ceil((len + 4) / 16) */
	KT_CHECK_EQ(kinet_inline_ds(0), 1);
	KT_CHECK_EQ(kinet_inline_ds(1), 1);
	KT_CHECK_EQ(kinet_inline_ds(12), 1);
	KT_CHECK_EQ(kinet_inline_ds(13), 2);
	KT_CHECK_EQ(kinet_inline_ds(28), 2);
	KT_CHECK_EQ(kinet_inline_ds(29), 3);
	KT_CHECK_EQ(kinet_inline_ds(64), 5);
	KT_CHECK_EQ(kinet_inline_ds(1000), 63);
	/* ceil(ds * 16 / 64) */
	KT_CHECK_EQ(kinet_wqe_bbs(1), 1);
	KT_CHECK_EQ(kinet_wqe_bbs(2), 1);
	KT_CHECK_EQ(kinet_wqe_bbs(4), 1);
	KT_CHECK_EQ(kinet_wqe_bbs(5), 2);
	KT_CHECK_EQ(kinet_wqe_bbs(8), 2);
	KT_CHECK_EQ(kinet_wqe_bbs(9), 3);
	KT_CHECK_EQ(kinet_wqe_bbs(KINET_WQE_MAX_DS), 16);
	/* ctrl + raddr + 8-byte inline payload fits one basic block. */
	KT_CHECK_EQ(kinet_wqe_bbs(2 + kinet_inline_ds(8)), 1);
	KT_CHECK_EQ(KINET_WQE_BB_SIZE / KINET_WQE_DS_SIZE, 4);
}

static void make_cqe(struct kinet_cqe64 *cqe, uint8_t opcode, uint8_t owner)
{
	memset(cqe, 0, sizeof(*cqe));
	cqe->op_own = (uint8_t)(opcode << 4 | (owner & 1));
}

KT_TEST(cqe_owner_passes)
{
	enum { LOG = 2, N = 1 << LOG };
	struct kinet_cqe64 ring[N];

	/* A fresh ring is all INVALID: never ready, whatever the owner bit. */
	KT_CHECK_EQ(KINET_CQE_OP_OWN_INIT, 0xf1);
	for (int i = 0; i < N; i++) {
		make_cqe(&ring[i], KINET_CQE_INVALID, 0);
		KT_CHECK(!kinet_cqe_ready(&ring[i], (uint64_t)i, LOG));
		make_cqe(&ring[i], KINET_CQE_INVALID, 1);
		KT_CHECK(!kinet_cqe_ready(&ring[i], (uint64_t)i, LOG));
	}

	/* Walk five passes; on pass p hardware writes owner p & 1. */
	for (uint64_t ci = 0; ci < 5 * N; ci++) {
		struct kinet_cqe64 *cqe = &ring[ci & (N - 1)];
		uint8_t pass_owner = (uint8_t)((ci / N) & 1);
		KT_CHECK_EQ(kinet_cqe_sw_owner(ci, LOG), pass_owner);
		/* Before this pass's CQE lands the slot holds the previous pass's
		 * entry (or INVALID on pass 0): not ready. */
		if (ci >= N)
			KT_CHECK(!kinet_cqe_ready(cqe, ci, LOG));
		make_cqe(cqe, KINET_CQE_REQ, pass_owner);
		KT_CHECK(kinet_cqe_ready(cqe, ci, LOG));
		KT_CHECK_EQ(kinet_cqe_owner(cqe), pass_owner);
		KT_CHECK_EQ(kinet_cqe_opcode(cqe), KINET_CQE_REQ);
		/* The same entry is stale for the next pass's index. */
		KT_CHECK(!kinet_cqe_ready(cqe, ci + N, LOG));
	}

	/* Indices wrap at 2^log_size on every ring size. */
	KT_CHECK_EQ(kinet_cqe_sw_owner(0, 10), 0);
	KT_CHECK_EQ(kinet_cqe_sw_owner(1023, 10), 0);
	KT_CHECK_EQ(kinet_cqe_sw_owner(1024, 10), 1);
	KT_CHECK_EQ(kinet_cqe_sw_owner(2048, 10), 0);
	KT_CHECK_EQ(kinet_cqe_sw_owner((1ull << 40) + (1ull << 10), 10), 1);
}

KT_TEST(cqe_fields)
{
	struct kinet_cqe64 cqe;
	uint8_t *b = (uint8_t *)&cqe;

	/* Responder CQE of a write with immediate, built byte by byte. */
	memset(&cqe, 0, sizeof(cqe));
	b[36] = 0xca, b[37] = 0xfe, b[38] = 0xf0, b[39] = 0x0d; /* imm */
	b[44] = 0x00, b[45] = 0x01, b[46] = 0x00, b[47] = 0x00; /* byte_cnt 65536 */
	b[56] = 0x0a, b[57] = 0x12, b[58] = 0x34, b[59] = 0x56; /* opcode 0x0a, qpn 0x123456 */
	b[60] = 0xbe, b[61] = 0xef;				/* wqe_counter */
	b[63] = (uint8_t)(KINET_CQE_RESP_WR_IMM << 4 | 1);
	KT_CHECK_EQ(kinet_be32(cqe.imm_inval_pkey), 0xcafef00du);
	KT_CHECK_EQ(kinet_be32(cqe.byte_cnt), 65536);
	KT_CHECK_EQ(kinet_be16(cqe.wqe_counter), 0xbeef);
	KT_CHECK_EQ(kinet_cqe_qpn(&cqe), 0x123456);
	KT_CHECK_EQ(kinet_be32(cqe.sop_drop_qpn) >> 24, 0x0a);
	KT_CHECK_EQ(kinet_cqe_opcode(&cqe), KINET_CQE_RESP_WR_IMM);
	KT_CHECK_EQ(kinet_cqe_owner(&cqe), 1);
	KT_CHECK(!kinet_cqe_is_error(&cqe));

	/* Requester error CQE: syndrome at byte 55, vendor syndrome at 54. */
	memset(&cqe, 0, sizeof(cqe));
	b[54] = 0x88;
	b[55] = KINET_SYND_REMOTE_ACCESS_ERR;
	b[56] = KINET_WQE_OP_RDMA_WRITE, b[57] = 0x00, b[58] = 0x00, b[59] = 0x07;
	b[63] = (uint8_t)(KINET_CQE_REQ_ERR << 4);
	KT_CHECK(kinet_cqe_is_error(&cqe));
	KT_CHECK_EQ(kinet_cqe_syndrome(&cqe), KINET_SYND_REMOTE_ACCESS_ERR);
	KT_CHECK_EQ(kinet_cqe_qpn(&cqe), 7);
	const struct kinet_err_cqe *err = (const struct kinet_err_cqe *)(const void *)&cqe;
	KT_CHECK_EQ(err->vendor_err_synd, 0x88);
	KT_CHECK_EQ(kinet_be32(err->s_wqe_opcode_qpn) >> 24, KINET_WQE_OP_RDMA_WRITE);

	b[63] = (uint8_t)(KINET_CQE_RESP_ERR << 4);
	KT_CHECK(kinet_cqe_is_error(&cqe));
	b[63] = (uint8_t)(KINET_CQE_REQ << 4);
	KT_CHECK(!kinet_cqe_is_error(&cqe));
	b[63] = (uint8_t)(KINET_CQE_INVALID << 4);
	KT_CHECK(!kinet_cqe_is_error(&cqe));
}

KT_TEST(constants)
{
	KT_CHECK_EQ(KINET_WQE_OP_NOP, 0x00);
	KT_CHECK_EQ(KINET_WQE_OP_RDMA_WRITE, 0x08);
	KT_CHECK_EQ(KINET_WQE_OP_RDMA_WRITE_IMM, 0x09);
	KT_CHECK_EQ(KINET_WQE_OP_SEND, 0x0a);
	KT_CHECK_EQ(KINET_WQE_OP_SEND_IMM, 0x0b);
	KT_CHECK_EQ(KINET_WQE_OP_RDMA_READ, 0x10);
	KT_CHECK_EQ(KINET_WQE_OP_ATOMIC_CS, 0x11);
	KT_CHECK_EQ(KINET_WQE_OP_ATOMIC_FA, 0x12);
	KT_CHECK_EQ(KINET_WQE_OP_WAIT, 0x0f);
	KT_CHECK_EQ(KINET_WQE_CTRL_CQ_UPDATE, 0x08);
	KT_CHECK_EQ(KINET_WQE_CTRL_FENCE, 0x40);
	KT_CHECK_EQ(KINET_WQE_CTRL_SOLICITED, 0x02);
	KT_CHECK_EQ(KINET_CQE_REQ_ERR, 0xd);
	KT_CHECK_EQ(KINET_CQE_RESP_ERR, 0xe);
	KT_CHECK_EQ(KINET_CQE_INVALID, 0xf);
	KT_CHECK_EQ(KINET_INLINE_SEG_FLAG, 0x80000000u);
	KT_CHECK_EQ(KINET_INVALID_LKEY, 0x100);
	KT_CHECK_EQ(KINET_WQE_MAX_DS, 63);
}

KT_MAIN(be_round_trips, layouts, write_wqe_bytes, write_imm_ctrl_bytes, atomic_fa_wqe_bytes, wait_wqe_bytes,
	inline_header_bytes, inline_ds_and_bbs, cqe_owner_passes, cqe_fields, constants)
