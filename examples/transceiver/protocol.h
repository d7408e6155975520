/*
 * transceiver: what the client and the server agree on.
 *
 * A request reaches the server in one of two ways, as a sensor or an FPGA
 * would send it:
 *   - SEND: the message lands in the server's next posted receive buffer
 *     (the receive ring, one slot per receive WQE: slot = index % SLOTS);
 *   - RDMA write-with-immediate: the client writes the message into slot s
 *     of the server's request ring and the immediate, IMM_SLOT_FLAG | s,
 *     names the slot (the write consumes a receive, whose buffer is unused).
 * Every message starts with a 16-byte header.  The server answers each
 * request with a SEND to the client: the same header (sequence number,
 * payload length) with the checksum of the request's payload, and the
 * transformed payload.  A STOP request is answered with a STOP answer, after
 * which that QP's server stops.
 *
 * Windows: the client keeps at most `window` requests in flight per QP and
 * window <= SLOTS - REPOST_BATCH, so a request always finds a receive (the
 * server reposts in batches of REPOST_BATCH) and a request-ring or
 * answer-ring slot is reused only after the answer of its last user came
 * back, which is after the server's SEND of it was executed.
 *
 * Plain C, used by host code and by device code (kinet/device.cuh's
 * KINET_DEV_FN is static inline, __device__ too under nvcc).
 */
#ifndef TRANSCEIVER_PROTOCOL_H
#define TRANSCEIVER_PROTOCOL_H

#include <stdint.h>

#define SLOTS 64u	 /* receive WQEs, request-ring and answer-ring slots per QP */
#define REPOST_BATCH 16u /* receives reposted at a time */
#define MSG_BYTES 4096u	 /* a slot: header + payload */
#define HEADER_BYTES 16u /* struct msg_header */
#define IMM_SLOT_FLAG 0x80000000u
#define KIND_REQUEST 1u
#define KIND_STOP 2u
#define KIND_BAD 0x77u	    /* no such kind: the error path's request */
#define STOP_SEQ UINT64_MAX /* the STOP request's sequence number, echoed */
#define MAX_PAYLOAD (MSG_BYTES - HEADER_BYTES)

struct msg_header {
	uint64_t seq;		/* per QP, from 0 */
	uint32_t len;		/* payload bytes, a multiple of 4 */
	uint32_t kind_or_check; /* request: KIND_*; answer: the request payload's checksum */
};

/* What a failing server warp reports to the host. */
struct server_status {
	int32_t status;	     /* 0, or a negative errno */
	uint32_t qp;	     /* which QP */
	uint64_t seq;	     /* the request that failed (or the last one served) */
	uint64_t recv_index; /* its receive WQE index */
	uint64_t served;     /* requests answered */
	uint64_t stopped;    /* 1 after a clean STOP */
};

#if defined(__CUDACC__)
#define PROTO_FN static __host__ __device__ __forceinline__
#else
#define PROTO_FN static inline
#endif

/* Word i of the payload of request seq on a QP, as the client fills it. */
PROTO_FN uint32_t request_word(uint32_t qp, uint64_t seq, uint32_t i)
{
	uint64_t x = (seq * 0x9e3779b97f4a7c15ull) ^ ((uint64_t)qp << 48) ^ (i * 0xbf58476d1ce4e5b9ull);
	x ^= x >> 31;
	return (uint32_t)(x * 0x94d049bb133111ebull >> 32);
}

/* The processing step: word i of the answer from word i of the request. */
PROTO_FN uint32_t answer_word(uint32_t in, uint64_t seq, uint32_t i)
{
	return (in ^ 0xa5a5a5a5u) + (uint32_t)seq + i;
}

/* One word's share of the checksum (the checksum is the 32-bit sum of the
 * shares, so a warp can add its lanes' partial sums in any order). */
PROTO_FN uint32_t check_share(uint32_t in, uint32_t i)
{
	return in * (2u * i + 1u);
}

#endif /* TRANSCEIVER_PROTOCOL_H */
