/*
 * The node carrier's shared-memory inbox (node.c), as another process
 * sees it: the layout every process of one host maps.  Private to the
 * software NIC; the fault suite includes it to write into an inbox as a
 * misbehaving peer would (tests/fault/test_malicious_peer.c).
 */
#ifndef KINET_NODE_LAYOUT_H
#define KINET_NODE_LAYOUT_H

#include <stdint.h>
#include <stdio.h>

#define NODE_MAGIC 0x6b696e65746e6f64ull /* "kinetnod" */
#define NODE_VERSION 1u
#define NODE_SLOTS 32u
#define NODE_RING_BYTES (128u * 1024u) /* two largest messages */
#define NODE_ADDR_LEN 12u	       /* node id (8) + endpoint sequence (4), little-endian */
#define NODE_NAME_MAX 48
#define NODE_REC_WRAP 1u

enum { SLOT_FREE = 0, SLOT_CLAIMED = 1, SLOT_ACTIVE = 2, SLOT_CLOSED = 3 };

struct node_slot {
	_Atomic uint32_t state;
	int32_t sender_pid;
	uint8_t sender_addr[NODE_ADDR_LEN];
	uint8_t pad0[64 - 8 - NODE_ADDR_LEN];
	_Atomic uint64_t head; /* consumer */
	uint8_t pad1[56];
	_Atomic uint64_t tail; /* producer */
	uint8_t pad2[56];
};

struct node_seg {
	uint64_t magic;
	uint32_t version;
	int32_t owner_pid;
	_Atomic uint32_t closed;
	uint32_t nslots;
	uint32_t ring_bytes;
	uint8_t pad[36];
	struct node_slot slots[NODE_SLOTS];
};

#define NODE_SEG_BYTES (sizeof(struct node_seg) + (size_t)NODE_SLOTS * NODE_RING_BYTES)

/* The shared-memory name of the inbox at a carrier address. */
static inline void node_addr_name(const uint8_t *addr, char *name)
{
	uint64_t id = 0;
	uint32_t seq = 0;

	for (int i = 0; i < 8; i++)
		id |= (uint64_t)addr[i] << (8 * i);
	for (int i = 0; i < 4; i++)
		seq |= (uint32_t)addr[8 + i] << (8 * i);
	snprintf(name, NODE_NAME_MAX, "/kinet-%016llx-%u", (unsigned long long)id, seq);
}

#endif /* KINET_NODE_LAYOUT_H */
