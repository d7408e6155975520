/*
 * The software NIC's Ethernet checksums (issue 29): what a ConnectX does
 * for a send WQE whose Ethernet segment asks for L3/L4 checksum offload
 * (KINET_ETH_WQE_L3_CSUM, _L4_CSUM), and what it reports for a received
 * frame (the CQE's L3/L4 header types and checksum-ok flags).
 *
 * Frames: Ethernet II, at most one 802.1Q/802.1ad tag, then IPv4 (any
 * header length) or IPv6 (no extension headers: a ConnectX also leaves
 * those to software), then UDP or TCP.  Checksums are RFC 1071's
 * one's-complement sums; the L4 sum covers the pseudo-header (RFC 768,
 * 793, 8200 §8.1), and a UDP checksum that comes out 0 is sent as 0xffff.
 */
#ifndef KINET_SOFT_ETH_CSUM_H
#define KINET_SOFT_ETH_CSUM_H

#include <stdint.h>

/* Where a frame's headers are, as found by kinet_eth_parse. */
struct kinet_eth_headers {
	uint32_t l3;	  /* offset of the IP header (0: not IP) */
	uint32_t l4;	  /* offset of the UDP/TCP header (0: neither) */
	uint32_t l4_len;  /* bytes from l4 to the end of the IP payload */
	uint8_t ipv6;	  /* 1: IPv6, 0: IPv4 */
	uint8_t l4_proto; /* IPPROTO_UDP, IPPROTO_TCP or 0 */
};

/* Parses frame; 0, or -EINVAL when an IP header it finds is truncated or
 * inconsistent (a total length beyond the frame, a header length under
 * 20).  A frame that is not IP, or IP with another protocol, is 0 with
 * l3 or l4 zero. */
int kinet_eth_parse(const uint8_t *frame, uint32_t len, struct kinet_eth_headers *h);

/* Fills the checksums flags asks for (KINET_ETH_WQE_L3_CSUM: the IPv4
 * header's; KINET_ETH_WQE_L4_CSUM: UDP's or TCP's) in place.  0, or
 * -EINVAL when a checksum asked for has no header to go in (not IPv4 for
 * L3, neither UDP nor TCP for L4) or the frame is malformed: the engine
 * completes such a send with an error rather than send a wrong frame. */
int kinet_eth_csum_fill(uint8_t *frame, uint32_t len, uint8_t flags);

/* What a receive CQE says of frame: KINET_CQE_L3_OK / _L4_OK for each
 * checksum present and correct, and the L3/L4 header types, as
 * kinet_cqe_eth_rx's l3_l4 fields take them (kinet/wire_eth.h). */
void kinet_eth_csum_check(const uint8_t *frame, uint32_t len, uint8_t *ok_flags, uint8_t *l3_type,
			  uint8_t *l4_type);

/* The one's-complement sum of len bytes added to sum (not folded). */
uint32_t kinet_eth_csum_add(uint32_t sum, const uint8_t *data, uint32_t len);
/* Folds a sum to 16 bits and complements it. */
uint16_t kinet_eth_csum_fold(uint32_t sum);

#endif /* KINET_SOFT_ETH_CSUM_H */
