/*
 * The team descriptor device collectives run on: what kinet_team_export()
 * places in GPU memory (host memory under host emulation).  Plain C, shared
 * by the host library (src/boot/team.c) and device code.
 *
 * Each rank's region (the same size everywhere):
 *
 *   [0, KINET_DEV_TEAM_HEAP_ALIGN-rounded)   signal words, then device state
 *     word (s * size + src)                  slot s (< slots) from rank src
 *     word ((slots + l) * size + src)        barrier lane l (< lanes) from src
 *     then lanes words                       barrier epochs of this rank
 *   [heap_offset, heap_offset + heap_bytes)  the heap (offsets are symmetric)
 *
 * Signal words only grow (64 bits, never reset), so a round never races the
 * clearing of the previous one: docs/architecture/collectives.md.
 */
#ifndef KINET_DEVICE_COLL_TYPES_H
#define KINET_DEVICE_COLL_TYPES_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct kinet_dev_qp;

/* What the signals of one round of one slot from one rank add up to
 * (kinet_dev_team_share). */
#define KINET_DEV_TEAM_EPOCH (1ull << 32)

/* The heap starts at a multiple of this in the region. */
#define KINET_DEV_TEAM_HEAP_ALIGN 4096u

struct kinet_dev_team_peer {
	struct kinet_dev_qp *qp; /* the mesh's QP to this rank (loopback for this rank) */
	uint8_t *mapped;	 /* device-usable pointer to its region, or NULL: use qp */
	uint64_t addr;		 /* its region's address, as WQEs name it */
	uint32_t rkey;		 /* its region's rkey */
	uint32_t pad;
};

struct kinet_dev_team {
	int32_t rank;
	int32_t size;
	uint32_t slots;	      /* signal slots per source rank */
	uint32_t lanes;	      /* barrier lanes */
	uint8_t *base;	      /* this rank's region (device-usable) */
	uint64_t heap_offset; /* where the heap starts in every region */
	uint64_t heap_bytes;
	uint32_t lkey; /* this rank's region */
	uint32_t pad;
	uint64_t *barrier_epoch;	  /* [lanes] in the region: barriers passed per lane */
	struct kinet_dev_team_peer *peer; /* [size], by rank */
};

#ifdef __cplusplus
}
#endif

#endif /* KINET_DEVICE_COLL_TYPES_H */
