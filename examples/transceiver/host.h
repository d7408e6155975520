/*
 * transceiver: the CPU sides -- the client (the sensor or FPGA that sends
 * requests and checks every answer) and the same service as a CPU loop
 * (the "CPU in the path" baseline).  Both use kinet's host API only.
 */
#ifndef TRANSCEIVER_HOST_H
#define TRANSCEIVER_HOST_H

#include <stdint.h>

#include <kinet/kinet.h>

#include "protocol.h"

#define MAX_QPS 32

#ifdef __cplusplus
extern "C" {
#endif

enum request_op {
	OP_SEND,      /* every request a SEND */
	OP_WRITE_IMM, /* every request an RDMA write with immediate */
	OP_MIXED,     /* alternating, starting with a SEND */
};

/* One client QP: its answer receives and request staging in buf
 * (2 x SLOTS x MSG_BYTES, host memory, registered as mr), and where its
 * server's request ring is. */
struct client_qp {
	struct kinet_qp *qp;
	struct kinet_cq *send_cq, *recv_cq;
	uint8_t *buf;
	struct kinet_mr *mr;
	uint64_t req_ring; /* server's request ring (address in its MR) */
	uint32_t req_rkey;
};

struct client_opts {
	int nqps;
	uint64_t requests; /* per QP */
	uint32_t size;	   /* payload bytes, a multiple of 4, <= MAX_PAYLOAD */
	enum request_op op;
	double rate;	     /* requests per second per QP; 0: back to back */
	uint32_t window;     /* requests in flight per QP, 1 .. SLOTS - REPOST_BATCH */
	uint64_t timeout_ns; /* no answer for this long: the rest count as lost */
	/* The error path: QP 0's request with this number carries an unknown
	 * kind, and QP 0 sends nothing after it (its server must stop with
	 * -EINVAL naming it).  NO_BAD_REQUEST: none. */
	uint64_t bad_request;
};
#define NO_BAD_REQUEST UINT64_MAX

struct client_result {
	uint64_t sent, answered, lost, duplicated, wrong;
	uint64_t stop_acks; /* QPs whose STOP was answered */
	uint64_t *rtt_ns;   /* answered entries */
	double seconds;	    /* first send to last answer */
	int error;	    /* a failed call or an error completion (negative errno), or 0 */
};

/* Posts the answer receives; call before the server can answer. */
int client_prepare(struct client_qp *q, int nqps);
/* Sends the requests, checks every answer, then sends STOP on every QP (but
 * QP 0 after a bad request) and waits for its answer.  r->rtt_ns is allocated here (free it). */
int client_run(struct client_qp *q, const struct client_opts *o, struct client_result *r);

/* One QP of the CPU loop: its receive ring, request ring and answer ring
 * in buf (3 x SLOTS x MSG_BYTES, registered as mr). */
struct cpu_server_qp {
	struct kinet_qp *qp;
	struct kinet_cq *send_cq, *recv_cq;
	uint8_t *buf;
	struct kinet_mr *mr;
};

/* Posts the first SLOTS receives of every QP. */
int cpu_server_prepare(struct cpu_server_qp *s, int nqps);
/* Serves every QP from this thread until each got its STOP, or until no
 * request came for idle_ns; status[i] as the GPU server reports it. */
int cpu_server_run(struct cpu_server_qp *s, int nqps, uint64_t idle_ns, struct server_status *status);

uint64_t now_ns(void);
/* Posts one send, draining send_cq (its error completions fail the call)
 * and retrying while the send queue is full, for at most 5 s. */
int post_send_draining(struct kinet_qp *qp, struct kinet_cq *send_cq, const struct kinet_send_wr *wr);

#ifdef __cplusplus
}
#endif

#endif /* TRANSCEIVER_HOST_H */
