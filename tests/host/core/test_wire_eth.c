/*
 * wire_eth.h on its own: the Ethernet send WQE, the WAIT-on-time WQE and a
 * striding receive WQE against hand-written PRM bytes; the receive CQE's
 * fields at their offsets and bit positions; encode/decode round trips of
 * receive CQEs, striding byte counts and the real-time clock format.
 * Needs nothing but the header (test_wire_eth_mlx5dv.c checks against
 * rdma-core).
 */
#include "kt.h"

#include <kinet/wire.h>

#include <stddef.h>
#include <stdint.h>
#include <string.h>

KT_TEST(layouts)
{
	KT_CHECK_EQ(sizeof(struct kinet_wqe_eth_seg), 16);
	KT_CHECK_EQ(offsetof(struct kinet_wqe_eth_seg, cs_flags), 4);
	KT_CHECK_EQ(offsetof(struct kinet_wqe_eth_seg, mss), 6);
	KT_CHECK_EQ(offsetof(struct kinet_wqe_eth_seg, metadata), 8);
	KT_CHECK_EQ(offsetof(struct kinet_wqe_eth_seg, inline_hdr_sz), 12);
	KT_CHECK_EQ(offsetof(struct kinet_wqe_eth_seg, inline_hdr_start), 14);

	KT_CHECK_EQ(sizeof(struct kinet_wqe_wait_time_seg), 32);
	KT_CHECK_EQ(offsetof(struct kinet_wqe_wait_time_seg, lkey), 4);
	KT_CHECK_EQ(offsetof(struct kinet_wqe_wait_time_seg, va_high), 8);
	KT_CHECK_EQ(offsetof(struct kinet_wqe_wait_time_seg, va_low), 12);
	KT_CHECK_EQ(offsetof(struct kinet_wqe_wait_time_seg, value), 16);
	KT_CHECK_EQ(offsetof(struct kinet_wqe_wait_time_seg, mask), 24);

	KT_CHECK_EQ(sizeof(struct kinet_eth_send_wqe), KINET_WQE_BB_SIZE);
	KT_CHECK_EQ(offsetof(struct kinet_eth_send_wqe, eth), 16);
	KT_CHECK_EQ(offsetof(struct kinet_eth_send_wqe, data), 32);
	KT_CHECK_EQ(sizeof(struct kinet_eth_wait_wqe), KINET_WQE_BB_SIZE);
	KT_CHECK_EQ(offsetof(struct kinet_eth_wait_wqe, wait), 16);
	KT_CHECK_EQ(sizeof(struct kinet_wqe_mprq), 32);
	KT_CHECK_EQ(offsetof(struct kinet_wqe_mprq, data), 16);

	/* ds counts: 16-byte units, ctrl included, within one basic block. */
	KT_CHECK_EQ(KINET_ETH_SEND_DS_1 * KINET_WQE_DS_SIZE, offsetof(struct kinet_eth_send_wqe, data[1]));
	KT_CHECK_EQ(KINET_ETH_SEND_DS_2 * KINET_WQE_DS_SIZE, sizeof(struct kinet_eth_send_wqe));
	KT_CHECK_EQ(KINET_ETH_WAIT_TIME_DS * KINET_WQE_DS_SIZE, offsetof(struct kinet_eth_wait_wqe, rsvd));
	KT_CHECK_EQ(kinet_wqe_bbs(KINET_ETH_SEND_DS_2), 1);
	KT_CHECK_EQ(kinet_wqe_bbs(KINET_ETH_WAIT_TIME_DS), 1);

	/* Receive CQE fields a packet queue reads. */
	KT_CHECK_EQ(offsetof(struct kinet_cqe64, wqe_id), 2);
	KT_CHECK_EQ(offsetof(struct kinet_cqe64, hds_ip_ext), 28);
	KT_CHECK_EQ(offsetof(struct kinet_cqe64, l4_hdr_type_etc), 29);
	KT_CHECK_EQ(offsetof(struct kinet_cqe64, byte_cnt), 44);
	KT_CHECK_EQ(offsetof(struct kinet_cqe64, timestamp), 48);
	KT_CHECK_EQ(offsetof(struct kinet_cqe64, wqe_counter), 60);
}

/* Send of 1514 bytes from one buffer, CQE requested, L3+L4 checksums. */
KT_TEST(send_wqe_bytes)
{
	/* clang-format off */
	static const uint8_t want[48] = {
		/* ctrl: opmod 0, wqe_index 0xbeef, opcode SEND 0x0a */
		0x00, 0xbe, 0xef, 0x0a,
		/* sqn 0x001234, ds 3 */
		0x00, 0x12, 0x34, 0x03,
		/* signature, rsvd[2], fm_ce_se = CQ_UPDATE; imm 0 */
		0x00, 0x00, 0x00, 0x08, 0x00, 0x00, 0x00, 0x00,
		/* eth: swp_offs 0, cs_flags L3|L4 = 0xc0, swp_flags 0, mss 0 */
		0x00, 0x00, 0x00, 0x00, 0xc0, 0x00, 0x00, 0x00,
		/* metadata 0, inline_hdr_sz 0, inline_hdr_start 0 */
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
		/* data: byte_count 1514, lkey 0x0a0b0c0d, addr 0x00007f00deadbe00 */
		0x00, 0x00, 0x05, 0xea, 0x0a, 0x0b, 0x0c, 0x0d,
		0x00, 0x00, 0x7f, 0x00, 0xde, 0xad, 0xbe, 0x00
	};
	/* clang-format on */
	struct kinet_eth_send_wqe wqe;
	memset(&wqe, 0xee, sizeof(wqe));
	kinet_eth_wqe_send(&wqe, 0xbeef, 0x1234, KINET_WQE_CTRL_CQ_UPDATE,
			   KINET_ETH_WQE_L3_CSUM | KINET_ETH_WQE_L4_CSUM, 0x00007f00deadbe00ull, 1514,
			   0x0a0b0c0du);
	KT_CHECK_BYTES("eth send", &wqe, want, sizeof(want));
	/* data[1] untouched with one segment. */
	for (size_t i = sizeof(want); i < sizeof(wqe); i++)
		KT_CHECK_EQ(((const uint8_t *)&wqe)[i], 0xee);
	KT_CHECK_EQ(kinet_wqe_ctrl_opcode(&wqe.ctrl), KINET_WQE_OP_SEND);
	KT_CHECK_EQ(kinet_wqe_ctrl_ds(&wqe.ctrl), KINET_ETH_SEND_DS_1);
	KT_CHECK_EQ(kinet_wqe_ctrl_qpn(&wqe.ctrl), 0x1234);
	KT_CHECK_EQ(kinet_wqe_ctrl_index(&wqe.ctrl), 0xbeef);
	KT_CHECK_EQ(kinet_wqe_eth_cs_flags(&wqe.eth), 0xc0);
}

/* Two buffers (header, payload), errors only, no checksum offload. */
KT_TEST(send2_wqe_bytes)
{
	/* clang-format off */
	static const uint8_t want[64] = {
		0x00, 0x00, 0x01, 0x0a, 0x00, 0x00, 0x07, 0x04,
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
		/* 42-byte header at 0x1000, lkey 0x11 */
		0x00, 0x00, 0x00, 0x2a, 0x00, 0x00, 0x00, 0x11,
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x10, 0x00,
		/* 1024-byte payload at 0x0000000200000000, lkey 0x22 */
		0x00, 0x00, 0x04, 0x00, 0x00, 0x00, 0x00, 0x22,
		0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x00
	};
	/* clang-format on */
	struct kinet_eth_send_wqe wqe;
	memset(&wqe, 0xee, sizeof(wqe));
	kinet_eth_wqe_send2(&wqe, 1, 7, 0, 0, 0x1000, 42, 0x11, 0x200000000ull, 1024, 0x22);
	KT_CHECK_BYTES("eth send2", &wqe, want, sizeof(want));
	KT_CHECK_EQ(kinet_wqe_ctrl_ds(&wqe.ctrl), KINET_ETH_SEND_DS_2);
}

/* WAIT on time: opcode 0x0f with op_mod 2, ds 3, CYCLIC_SMALLER, the time
 * in real-time format, mask all ones. */
KT_TEST(wait_time_wqe_bytes)
{
	/* 1700000000.123456789 s */
	uint64_t ns = 1700000000ull * KINET_ETH_NS_PER_S + 123456789ull;
	/* clang-format off */
	static const uint8_t want[48] = {
		/* ctrl: opmod 2, wqe_index 0x0102, opcode WAIT 0x0f */
		0x02, 0x01, 0x02, 0x0f,
		/* sqn 0x00abcd, ds 3; fm_ce_se CQ_UPDATE; imm 0 */
		0x00, 0xab, 0xcd, 0x03, 0x00, 0x00, 0x00, 0x08, 0x00, 0x00, 0x00, 0x00,
		/* operation CYCLIC_SMALLER (5), lkey 0, va 0 */
		0x00, 0x00, 0x00, 0x05, 0x00, 0x00, 0x00, 0x00,
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
		/* value: seconds 1700000000 = 0x6553f100, ns 123456789 = 0x075bcd15 */
		0x65, 0x53, 0xf1, 0x00, 0x07, 0x5b, 0xcd, 0x15,
		/* mask */
		0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff
	};
	/* clang-format on */
	struct kinet_eth_wait_wqe wqe;
	memset(&wqe, 0xee, sizeof(wqe));
	kinet_eth_wqe_wait_time(&wqe, 0x0102, 0xabcd, KINET_WQE_CTRL_CQ_UPDATE, kinet_eth_rt_from_ns(ns));
	KT_CHECK_BYTES("wait time", &wqe, want, sizeof(want));
	for (size_t i = sizeof(want); i < sizeof(wqe); i++)
		KT_CHECK_EQ(((const uint8_t *)&wqe)[i], 0xee);
	KT_CHECK_EQ(kinet_wqe_ctrl_opcode(&wqe.ctrl), KINET_WQE_OP_WAIT);
	KT_CHECK_EQ(kinet_wqe_ctrl_opmod(&wqe.ctrl), KINET_WQE_OPMOD_WAIT_TIME);
	KT_CHECK_EQ(kinet_wqe_ctrl_index(&wqe.ctrl), 0x0102);
	KT_CHECK(kinet_eth_rt_to_ns(kinet_wqe_wait_time_value(&wqe.wait)) == ns);
	KT_CHECK(kinet_wqe_wait_time_mask(&wqe.wait) == ~0ull);
}

KT_TEST(mprq_wqe_bytes)
{
	/* clang-format off */
	static const uint8_t want[32] = {
		/* next segment: all zero outside SRQs */
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
		/* data: 512 strides of 64 B = 0x8000 bytes, lkey 0x1234, addr 0x7f0000100000 */
		0x00, 0x00, 0x80, 0x00, 0x00, 0x00, 0x12, 0x34,
		0x00, 0x00, 0x7f, 0x00, 0x00, 0x10, 0x00, 0x00
	};
	/* clang-format on */
	struct kinet_wqe_mprq wqe;
	memset(&wqe, 0xee, sizeof(wqe));
	kinet_wqe_set_mprq(&wqe, 0x7f0000100000ull, 512 * 64, 0x1234);
	KT_CHECK_BYTES("mprq", &wqe, want, sizeof(want));
}

/* A receive CQE by hand: fields at their bytes and bits, then decoded. */
KT_TEST(rx_cqe_fields)
{
	uint8_t b[64];
	struct kinet_cqe64 *cqe = (struct kinet_cqe64 *)(void *)b;
	struct kinet_cqe_eth_rx rx;

	memset(b, 0, sizeof(b));
	b[2] = 0x01; /* wqe_id 0x0102 */
	b[3] = 0x02;
	b[28] = KINET_CQE_L3_OK | KINET_CQE_L4_OK;
	/* l4 UDP (2) in bits 6:4, l3 IPv4 (2) in bits 3:2 */
	b[29] = 0x28;
	/* byte_cnt: 3 strides, 130 bytes */
	b[44] = 0x00;
	b[45] = 0x03;
	b[46] = 0x00;
	b[47] = 0x82;
	/* timestamp: 5 s + 6 ns */
	b[51] = 5;
	b[55] = 6;
	/* rqn 0x000abc */
	b[58] = 0x0a;
	b[59] = 0xbc;
	/* wqe_counter (first stride) 17 */
	b[61] = 17;
	b[63] = kinet_cqe_eth_rx_op_own(1);

	kinet_cqe_eth_rx_decode(cqe, &rx);
	KT_CHECK_EQ(rx.wqe_id, 0x0102);
	KT_CHECK_EQ(rx.wqe_counter, 17);
	KT_CHECK_EQ(rx.l3_hdr_type, KINET_CQE_L3_HDR_IPV4);
	KT_CHECK_EQ(rx.l4_hdr_type, KINET_CQE_L4_HDR_UDP);
	KT_CHECK_EQ(rx.csum_ok, KINET_CQE_L3_OK | KINET_CQE_L4_OK);
	KT_CHECK_EQ(rx.qpn, 0xabc);
	KT_CHECK_EQ(kinet_cqe_mprq_strides(rx.byte_cnt), 3);
	KT_CHECK_EQ(kinet_cqe_mprq_bytes(rx.byte_cnt), 130);
	KT_CHECK(!kinet_cqe_mprq_filler(rx.byte_cnt));
	KT_CHECK(rx.timestamp == ((5ull << 32) | 6));
	KT_CHECK(kinet_eth_rt_to_ns(kinet_cqe_timestamp(cqe)) == 5 * KINET_ETH_NS_PER_S + 6);
	KT_CHECK_EQ(kinet_cqe_opcode(cqe), KINET_CQE_RESP_SEND);
	KT_CHECK_EQ(kinet_cqe_owner(cqe), 1);
	KT_CHECK(kinet_cqe_csum_ok(cqe, KINET_CQE_L3_OK | KINET_CQE_L4_OK));
	KT_CHECK(!kinet_cqe_csum_ok(cqe, KINET_CQE_L2_OK));
	KT_CHECK_EQ(kinet_cqe_wqe_id(cqe), 0x0102);
	KT_CHECK_EQ(kinet_cqe_wqe_counter(cqe), 17);
	KT_CHECK_EQ(kinet_cqe_byte_cnt(cqe), 0x00030082);

	/* Encoding what was decoded gives the same 63 bytes. */
	uint8_t again[64];
	memset(again, 0xee, sizeof(again));
	kinet_cqe_eth_rx_encode((struct kinet_cqe64 *)(void *)again, &rx);
	KT_CHECK_BYTES("rx cqe", again, b, 63);
	KT_CHECK_EQ(again[63], 0xee); /* op_own left to the writer */
}

/* encode -> decode over field values, including every bit pattern of the
 * header types and flags (out-of-range bits dropped). */
KT_TEST(rx_cqe_round_trip)
{
	static const uint32_t bcs[] = {0, 60, 1514, 0xffff, 0x80000000u, 0x7fffffffu, 0xffffffffu};
	static const uint64_t tss[] = {0, 1, (1700000000ull << 32) | 999999999ull, ~0ull};
	static const uint16_t ctrs[] = {0, 1, 0x8000, 0xffff};

	for (size_t i = 0; i < sizeof(bcs) / sizeof(bcs[0]); i++)
		for (size_t t = 0; t < sizeof(tss) / sizeof(tss[0]); t++)
			for (size_t c = 0; c < sizeof(ctrs) / sizeof(ctrs[0]); c++)
				for (unsigned bits = 0; bits < 256; bits += 7) {
					struct kinet_cqe_eth_rx in, out;
					struct kinet_cqe64 cqe;
					memset(&in, 0, sizeof(in));
					in.byte_cnt = bcs[i];
					in.timestamp = tss[t];
					in.wqe_counter = ctrs[c];
					in.wqe_id = (uint16_t)~ctrs[c];
					in.qpn = 0x01000000u | (bits * 0x10101u);
					in.l3_hdr_type = (uint8_t)(bits & 7);
					in.l4_hdr_type = (uint8_t)(bits >> 3);
					in.csum_ok = (uint8_t)bits;
					kinet_cqe_eth_rx_encode(&cqe, &in);
					cqe.op_own = kinet_cqe_eth_rx_op_own((uint8_t)bits);
					kinet_cqe_eth_rx_decode(&cqe, &out);
					KT_CHECK(out.byte_cnt == in.byte_cnt);
					KT_CHECK(out.timestamp == in.timestamp);
					KT_CHECK_EQ(out.wqe_counter, in.wqe_counter);
					KT_CHECK_EQ(out.wqe_id, in.wqe_id);
					KT_CHECK_EQ(out.qpn, in.qpn & 0xffffff);
					KT_CHECK_EQ(out.l3_hdr_type, in.l3_hdr_type & 3);
					KT_CHECK_EQ(out.l4_hdr_type, in.l4_hdr_type & 7);
					KT_CHECK_EQ(out.csum_ok, in.csum_ok & 7);
					KT_CHECK_EQ(kinet_cqe_opcode(&cqe), KINET_CQE_RESP_SEND);
					KT_CHECK_EQ(kinet_cqe_owner(&cqe), bits & 1);
					/* Reserved bits of the flag bytes stay clear. */
					KT_CHECK_EQ(cqe.hds_ip_ext & ~7u, 0);
					KT_CHECK_EQ(cqe.l4_hdr_type_etc & 0x83u, 0);
				}
}

KT_TEST(mprq_byte_cnt)
{
	for (uint32_t strides = 0; strides < 0x8000; strides += 0x111)
		for (uint32_t bytes = 0; bytes < 0x10000; bytes += 0x1111)
			for (int filler = 0; filler < 2; filler++) {
				uint32_t w = kinet_cqe_mprq_byte_cnt(bytes, strides, filler);
				KT_CHECK_EQ(kinet_cqe_mprq_bytes(w), bytes);
				KT_CHECK_EQ(kinet_cqe_mprq_strides(w), strides);
				KT_CHECK_EQ(kinet_cqe_mprq_filler(w), filler);
			}
	KT_CHECK_EQ(kinet_cqe_mprq_byte_cnt(64, 1, 0), 0x00010040u);
	KT_CHECK_EQ(kinet_cqe_mprq_byte_cnt(0, 5, 1), 0x80050000u);
	/* Packet index: WQE 0x10003 of a ring of 4 (mask 3), 512 strides, stride 9. */
	KT_CHECK(kinet_mprq_stride_index(0x0003, 3, 512, 9) == 3 * 512 + 9);
	KT_CHECK(kinet_mprq_stride_index(0xffff, 0xff, 8192, 8191) == 255ull * 8192 + 8191);
}

KT_TEST(rt_format)
{
	static const uint64_t nss[] = {0,
				       1,
				       999999999ull,
				       1000000000ull,
				       1700000000ull * 1000000000ull + 123456789ull,
				       4294967295ull * 1000000000ull + 999999999ull};
	for (size_t i = 0; i < sizeof(nss) / sizeof(nss[0]); i++) {
		uint64_t rt = kinet_eth_rt_from_ns(nss[i]);
		KT_CHECK((rt & 0xffffffffu) < KINET_ETH_NS_PER_S);
		KT_CHECK(rt >> 32 == nss[i] / KINET_ETH_NS_PER_S);
		KT_CHECK(kinet_eth_rt_to_ns(rt) == nss[i]);
	}
	KT_CHECK(kinet_eth_rt_from_ns(2500000001ull) == ((2ull << 32) | 500000001ull));
}

KT_TEST(constants)
{
	KT_CHECK_EQ(KINET_WQE_OP_SEND, 0x0a);
	KT_CHECK_EQ(KINET_WQE_OP_WAIT, 0x0f);
	KT_CHECK_EQ(KINET_ETH_WQE_L3_CSUM, 1u << 6);
	KT_CHECK_EQ(KINET_ETH_WQE_L4_CSUM, 1u << 7);
	KT_CHECK_EQ(KINET_CQE_L2_OK, 1u << 0);
	KT_CHECK_EQ(KINET_CQE_L3_OK, 1u << 1);
	KT_CHECK_EQ(KINET_CQE_L4_OK, 1u << 2);
	KT_CHECK_EQ(KINET_CQE_RESP_SEND, 2);
}

KT_MAIN(layouts, send_wqe_bytes, send2_wqe_bytes, wait_time_wqe_bytes, mprq_wqe_bytes, rx_cqe_fields,
	rx_cqe_round_trip, mprq_byte_cnt, rt_format, constants)
