/*
 * Ethernet checksums for the software NIC's packet queues (eth_csum.h).
 * Byte-wise big-endian reads throughout: frames come from rings and
 * sockets at any alignment.
 */
#include <errno.h>
#include <netinet/in.h>
#include <string.h>

#include "eth_csum.h"
#include "kinet/wire_eth.h"

#define ETH_HLEN 14u
#define ETHERTYPE_IPV4 0x0800u
#define ETHERTYPE_IPV6 0x86ddu
#define ETHERTYPE_VLAN 0x8100u
#define ETHERTYPE_QINQ 0x88a8u
#define IPV6_HLEN 40u
#define UDP_HLEN 8u
#define TCP_HLEN_MIN 20u
#define UDP_CSUM_OFF 6u
#define TCP_CSUM_OFF 16u
#define TCP_FLAG_ACK 0x10u

static uint16_t get16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

uint32_t kinet_eth_csum_add(uint32_t sum, const uint8_t *data, uint32_t len)
{
	uint64_t s = sum;
	uint32_t i = 0;

	for (; i + 1 < len; i += 2)
		s += get16(data + i);
	if (i < len)
		s += (uint32_t)data[i] << 8; /* an odd last byte is padded with zero */
	while (s >> 32)
		s = (s & 0xffffffffu) + (s >> 32);
	return (uint32_t)s;
}

uint16_t kinet_eth_csum_fold(uint32_t sum)
{
	while (sum >> 16)
		sum = (sum & 0xffffu) + (sum >> 16);
	return (uint16_t)~sum;
}

int kinet_eth_parse(const uint8_t *frame, uint32_t len, struct kinet_eth_headers *h)
{
	uint32_t off = ETH_HLEN, ip_len;
	uint16_t type;

	memset(h, 0, sizeof(*h));
	if (len < ETH_HLEN)
		return -EINVAL;
	type = get16(frame + 12);
	if (type == ETHERTYPE_VLAN || type == ETHERTYPE_QINQ) {
		if (len < ETH_HLEN + 4)
			return -EINVAL;
		type = get16(frame + 16);
		off += 4;
	}
	if (type == ETHERTYPE_IPV4) {
		uint32_t ihl;

		if (len < off + 20 || frame[off] >> 4 != 4)
			return -EINVAL;
		ihl = (frame[off] & 0xfu) * 4u;
		ip_len = get16(frame + off + 2);
		if (ihl < 20 || ip_len < ihl || off + ip_len > len)
			return -EINVAL;
		h->l3 = off;
		/* A fragment past the first has no L4 header of its own. */
		if (get16(frame + off + 6) & 0x1fffu)
			return 0;
		h->l4_proto = frame[off + 9];
		h->l4 = off + ihl;
		h->l4_len = ip_len - ihl;
	} else if (type == ETHERTYPE_IPV6) {
		if (len < off + IPV6_HLEN || frame[off] >> 4 != 6)
			return -EINVAL;
		ip_len = get16(frame + off + 4);
		if (off + IPV6_HLEN + ip_len > len)
			return -EINVAL;
		h->l3 = off;
		h->ipv6 = 1;
		h->l4_proto = frame[off + 6];
		h->l4 = off + IPV6_HLEN;
		h->l4_len = ip_len;
	} else {
		return 0;
	}
	if (h->l4_proto != IPPROTO_UDP && h->l4_proto != IPPROTO_TCP) {
		h->l4 = 0;
		h->l4_len = 0;
		h->l4_proto = 0;
		return 0;
	}
	if (h->l4_len < (h->l4_proto == IPPROTO_UDP ? UDP_HLEN : TCP_HLEN_MIN))
		return -EINVAL;
	return 0;
}

/* The pseudo-header's sum plus the L4 segment's (checksum field included). */
static uint32_t l4_sum(const uint8_t *frame, const struct kinet_eth_headers *h)
{
	uint32_t sum;

	if (h->ipv6)
		sum = kinet_eth_csum_add(0, frame + h->l3 + 8, 32); /* source, destination */
	else
		sum = kinet_eth_csum_add(0, frame + h->l3 + 12, 8);
	sum += h->l4_proto;
	sum += h->l4_len & 0xffffu;
	sum += h->l4_len >> 16;
	return kinet_eth_csum_add(sum, frame + h->l4, h->l4_len);
}

int kinet_eth_csum_fill(uint8_t *frame, uint32_t len, uint8_t flags)
{
	struct kinet_eth_headers h;
	int ret = kinet_eth_parse(frame, len, &h);

	if (ret)
		return ret;
	if (flags & KINET_ETH_WQE_L3_CSUM) {
		uint32_t ihl;

		if (!h.l3 || h.ipv6)
			return -EINVAL; /* IPv6 has no header checksum */
		ihl = (frame[h.l3] & 0xfu) * 4u;
		put16(frame + h.l3 + 10, 0);
		put16(frame + h.l3 + 10, kinet_eth_csum_fold(kinet_eth_csum_add(0, frame + h.l3, ihl)));
	}
	if (flags & KINET_ETH_WQE_L4_CSUM) {
		uint32_t at;
		uint16_t c;

		if (!h.l4)
			return -EINVAL;
		at = h.l4 + (h.l4_proto == IPPROTO_UDP ? UDP_CSUM_OFF : TCP_CSUM_OFF);
		put16(frame + at, 0);
		c = kinet_eth_csum_fold(l4_sum(frame, &h));
		if (c == 0 && h.l4_proto == IPPROTO_UDP)
			c = 0xffff; /* 0 means "no checksum" for UDP */
		put16(frame + at, c);
	}
	return 0;
}

void kinet_eth_csum_check(const uint8_t *frame, uint32_t len, uint8_t *ok_flags, uint8_t *l3_type,
			  uint8_t *l4_type)
{
	struct kinet_eth_headers h;

	*ok_flags = 0;
	*l3_type = KINET_CQE_L3_HDR_NONE;
	*l4_type = KINET_CQE_L4_HDR_NONE;
	if (len >= ETH_HLEN)
		*ok_flags |= KINET_CQE_L2_OK;
	if (kinet_eth_parse(frame, len, &h) || !h.l3)
		return;
	*l3_type = h.ipv6 ? KINET_CQE_L3_HDR_IPV6 : KINET_CQE_L3_HDR_IPV4;
	if (h.ipv6 ||
	    kinet_eth_csum_fold(kinet_eth_csum_add(0, frame + h.l3, (frame[h.l3] & 0xfu) * 4u)) == 0)
		*ok_flags |= KINET_CQE_L3_OK;
	if (!h.l4)
		return;
	if (h.l4_proto == IPPROTO_UDP) {
		*l4_type = KINET_CQE_L4_HDR_UDP;
		/* IPv4 UDP may carry no checksum (0): nothing to verify. */
		if ((!h.ipv6 && get16(frame + h.l4 + UDP_CSUM_OFF) == 0) ||
		    kinet_eth_csum_fold(l4_sum(frame, &h)) == 0)
			*ok_flags |= KINET_CQE_L4_OK;
	} else {
		uint32_t data_off = (frame[h.l4 + 12] >> 4) * 4u;
		int ack = frame[h.l4 + 13] & TCP_FLAG_ACK;

		*l4_type = !ack			 ? KINET_CQE_L4_HDR_TCP_NO_ACK
			   : h.l4_len > data_off ? KINET_CQE_L4_HDR_TCP_ACK_AND_DATA
						 : KINET_CQE_L4_HDR_TCP_ACK_NO_DATA;
		if (kinet_eth_csum_fold(l4_sum(frame, &h)) == 0)
			*ok_flags |= KINET_CQE_L4_OK;
	}
}
