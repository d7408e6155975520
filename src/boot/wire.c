/*
 * Frame headers, big-endian fields and deadlines of the bootstrap.
 */
#include "boot_internal.h"

void boot_put32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (24 - 8 * i));
}

void boot_put64(uint8_t *p, uint64_t v)
{
	boot_put32(p, (uint32_t)(v >> 32));
	boot_put32(p + 4, (uint32_t)v);
}

uint32_t boot_get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

uint64_t boot_get64(const uint8_t *p)
{
	return (uint64_t)boot_get32(p) << 32 | boot_get32(p + 4);
}

void boot_hdr_encode(uint8_t *buf, const struct boot_hdr *h)
{
	boot_put64(buf, h->len);
	boot_put32(buf + 8, h->op);
	boot_put32(buf + 12, h->seq);
}

void boot_hdr_decode(const uint8_t *buf, struct boot_hdr *h)
{
	h->len = boot_get64(buf);
	h->op = boot_get32(buf + 8);
	h->seq = boot_get32(buf + 12);
}

const char *boot_op_name(uint32_t op)
{
	switch (op) {
	case BOOT_OP_HELLO:
		return "handshake";
	case BOOT_OP_WELCOME:
		return "handshake reply";
	case BOOT_OP_ABORT:
		return "abort";
	case BOOT_OP_ALLGATHER:
		return "allgather";
	case BOOT_OP_BARRIER:
		return "barrier";
	case BOOT_OP_BCAST:
		return "bcast";
	}
	return "unknown message";
}

uint64_t boot_deadline(int timeout_ms)
{
	return kinet_now_ns() + (uint64_t)timeout_ms * 1000000ull;
}

int boot_ms_left(uint64_t deadline)
{
	uint64_t now = kinet_now_ns();

	if (now >= deadline)
		return 0;
	return (int)((deadline - now + 999999) / 1000000);
}
