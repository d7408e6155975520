/*
 * The software NIC's Ethernet checksums (src/provider/soft/engine/eth_csum.c):
 * RFC 1071's worked example and a well-known IPv4 header; filled UDP and
 * TCP checksums over IPv4 and IPv6 (with a VLAN tag too) that a receiver's
 * check accepts and that any flipped bit makes it refuse; only what the
 * flags ask for is written; malformed frames are refused, not guessed at.
 * test_packet_carrier's checksums_linux sends such frames to the Linux
 * stack of another namespace, the independent judge.
 */
#include <netinet/in.h>

#include "eth_csum.h"
#include "kinet/wire_eth.h"
#include "kt.h"

/* dst, src, type; IPv4 src 10.0.0.1 dst 10.0.0.2 or IPv6 fd00::1/::2 */
static uint32_t build(uint8_t *f, int vlan, int ipv6, uint8_t proto, uint32_t payload)
{
	uint32_t o = 12, l4_len = (proto == IPPROTO_UDP ? 8u : 20u) + payload, ip_len;

	memset(f, 0, 1600);
	for (int i = 0; i < 6; i++) {
		f[i] = (uint8_t)(0x02 + i);
		f[6 + i] = (uint8_t)(0x12 + i);
	}
	if (vlan) {
		f[o++] = 0x81;
		f[o++] = 0x00;
		f[o++] = 0x00;
		f[o++] = 0x07;
	}
	f[o++] = ipv6 ? 0x86 : 0x08;
	f[o++] = ipv6 ? 0xdd : 0x00;
	uint32_t l3 = o;
	if (ipv6) {
		f[l3] = 0x60;
		f[l3 + 4] = (uint8_t)(l4_len >> 8);
		f[l3 + 5] = (uint8_t)l4_len;
		f[l3 + 6] = proto;
		f[l3 + 7] = 64;
		f[l3 + 8] = 0xfd;
		f[l3 + 23] = 1;
		f[l3 + 24] = 0xfd;
		f[l3 + 39] = 2;
		o = l3 + 40;
	} else {
		ip_len = 20 + l4_len;
		f[l3] = 0x45;
		f[l3 + 2] = (uint8_t)(ip_len >> 8);
		f[l3 + 3] = (uint8_t)ip_len;
		f[l3 + 6] = 0x40; /* DF */
		f[l3 + 8] = 64;
		f[l3 + 9] = proto;
		f[l3 + 12] = 10;
		f[l3 + 15] = 1;
		f[l3 + 16] = 10;
		f[l3 + 19] = 2;
		o = l3 + 20;
	}
	f[o] = 0x30;
	f[o + 1] = 0x39; /* source port 12345 */
	f[o + 2] = 0x73;
	f[o + 3] = 0x41; /* destination port 29505 */
	if (proto == IPPROTO_UDP) {
		f[o + 4] = (uint8_t)(l4_len >> 8);
		f[o + 5] = (uint8_t)l4_len;
		o += 8;
	} else {
		f[o + 12] = 0x50; /* data offset 5 words */
		f[o + 13] = 0x18; /* PSH, ACK */
		o += 20;
	}
	for (uint32_t i = 0; i < payload; i++)
		f[o + i] = (uint8_t)(i * 7 + 3);
	return o + payload;
}

KT_TEST(rfc1071_and_a_known_header)
{
	/* RFC 1071 §3: 00 01 f2 03 f4 f5 f6 f7 sums to 0xddf2 (folded). */
	static const uint8_t rfc[] = {0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7};
	KT_CHECK_EQ(kinet_eth_csum_fold(kinet_eth_csum_add(0, rfc, 8)), (uint16_t)~0xddf2u);
	/* An odd length pads with a zero byte. */
	KT_CHECK_EQ(kinet_eth_csum_fold(kinet_eth_csum_add(0, rfc, 7)),
		    kinet_eth_csum_fold(kinet_eth_csum_add(
			    0, (const uint8_t[]){0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0x00}, 8)));
	/* The IPv4 header of Wikipedia's worked example: checksum 0xb861. */
	uint8_t f[1600] = {0};
	static const uint8_t ip[20] = {0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11,
				       0x00, 0x00, 0xc0, 0xa8, 0x00, 0x01, 0xc0, 0xa8, 0x00, 0xc7};
	f[12] = 0x08;
	memcpy(f + 14, ip, 20);
	f[14 + 9] = 0x11;
	KT_OK(kinet_eth_csum_fill(f, 14 + 0x73, KINET_ETH_WQE_L3_CSUM));
	KT_CHECK_EQ(f[24], 0xb8);
	KT_CHECK_EQ(f[25], 0x61);
}

/* Filled checksums are accepted; any single flipped bit in what they cover
 * is not. */
static void round_trip(int vlan, int ipv6, uint8_t proto, uint32_t payload)
{
	uint8_t f[1600], ok, l3, l4;
	uint32_t len = build(f, vlan, ipv6, proto, payload);
	uint8_t flags = KINET_ETH_WQE_L4_CSUM | (ipv6 ? 0 : KINET_ETH_WQE_L3_CSUM);
	uint32_t l3_off = vlan ? 18 : 14;

	kinet_eth_csum_check(f, len, &ok, &l3, &l4);
	KT_CHECK(!(ok & KINET_CQE_L4_OK) || (proto == IPPROTO_UDP && !ipv6)); /* zero UDP checksum: none */
	KT_OK(kinet_eth_csum_fill(f, len, flags));
	kinet_eth_csum_check(f, len, &ok, &l3, &l4);
	KT_CHECK_EQ(ok, KINET_CQE_L2_OK | KINET_CQE_L3_OK | KINET_CQE_L4_OK);
	KT_CHECK_EQ(l3, ipv6 ? KINET_CQE_L3_HDR_IPV6 : KINET_CQE_L3_HDR_IPV4);
	KT_CHECK_EQ(l4, proto == IPPROTO_UDP ? KINET_CQE_L4_HDR_UDP
			: payload	     ? KINET_CQE_L4_HDR_TCP_ACK_AND_DATA
					     : KINET_CQE_L4_HDR_TCP_ACK_NO_DATA);
	/* a bit flipped anywhere past the addresses' start: caught */
	for (uint32_t i = l3_off + (ipv6 ? 8 : 12); i < len; i += 3) {
		f[i] ^= 0x10;
		kinet_eth_csum_check(f, len, &ok, &l3, &l4);
		f[i] ^= 0x10;
		KT_CHECK((ok & (KINET_CQE_L3_OK | KINET_CQE_L4_OK)) != (KINET_CQE_L3_OK | KINET_CQE_L4_OK));
	}
}

KT_TEST(fill_and_check)
{
	static const uint32_t payloads[] = {0, 1, 18, 1000, 1400};
	for (int vlan = 0; vlan < 2; vlan++)
		for (int ipv6 = 0; ipv6 < 2; ipv6++)
			for (unsigned k = 0; k < sizeof(payloads) / sizeof(payloads[0]); k++) {
				round_trip(vlan, ipv6, IPPROTO_UDP, payloads[k]);
				round_trip(vlan, ipv6, IPPROTO_TCP, payloads[k]);
				if (kt_failed_checks)
					return;
			}
}

KT_TEST(only_what_is_asked)
{
	uint8_t f[1600], before[1600];
	uint32_t len = build(f, 0, 0, IPPROTO_UDP, 32);

	memcpy(before, f, len);
	KT_OK(kinet_eth_csum_fill(f, len, 0));
	KT_CHECK(!memcmp(f, before, len));
	KT_OK(kinet_eth_csum_fill(f, len, KINET_ETH_WQE_L3_CSUM));
	KT_CHECK(memcmp(f + 14 + 10, before + 14 + 10, 2) != 0); /* IP checksum written */
	KT_CHECK(!memcmp(f + 34 + 6, before + 34 + 6, 2));	 /* UDP's untouched */
	memcpy(f, before, len);
	KT_OK(kinet_eth_csum_fill(f, len, KINET_ETH_WQE_L4_CSUM));
	KT_CHECK(!memcmp(f + 14 + 10, before + 14 + 10, 2));
	KT_CHECK(memcmp(f + 34 + 6, before + 34 + 6, 2) != 0);
}

KT_TEST(malformed_refused)
{
	uint8_t f[1600];
	uint32_t len = build(f, 0, 0, IPPROTO_UDP, 32);

	/* truncated: the IP total length runs past the frame */
	KT_CHECK_EQ(kinet_eth_csum_fill(f, len - 1, KINET_ETH_WQE_L4_CSUM), -EINVAL);
	/* header length under 20 */
	f[14] = 0x44;
	KT_CHECK_EQ(kinet_eth_csum_fill(f, len, KINET_ETH_WQE_L3_CSUM), -EINVAL);
	/* L3 asked of IPv6, L4 of ICMP, either of ARP, a frame under 14 bytes */
	len = build(f, 0, 1, IPPROTO_UDP, 8);
	KT_CHECK_EQ(kinet_eth_csum_fill(f, len, KINET_ETH_WQE_L3_CSUM), -EINVAL);
	len = build(f, 0, 0, 1 /* ICMP */, 8);
	KT_CHECK_EQ(kinet_eth_csum_fill(f, len, KINET_ETH_WQE_L4_CSUM), -EINVAL);
	KT_OK(kinet_eth_csum_fill(f, len, KINET_ETH_WQE_L3_CSUM));
	f[12] = 0x08;
	f[13] = 0x06;
	KT_CHECK_EQ(kinet_eth_csum_fill(f, 60, KINET_ETH_WQE_L3_CSUM), -EINVAL);
	KT_CHECK_EQ(kinet_eth_csum_fill(f, 13, 0), -EINVAL);
	/* a UDP header cut short */
	len = build(f, 0, 0, IPPROTO_UDP, 0);
	f[14 + 3] = 20 + 4;
	KT_CHECK_EQ(kinet_eth_csum_fill(f, len, KINET_ETH_WQE_L4_CSUM), -EINVAL);
}

KT_MAIN(rfc1071_and_a_known_header, fill_and_check, only_what_is_asked, malformed_refused)
