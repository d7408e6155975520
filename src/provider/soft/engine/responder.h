/*
 * The RC responder of the software NIC: what a target QP does with a
 * request, whichever transport brought it (local: the requester's engine
 * thread; the remote protocol: engine thread 0 of the target's context).
 * Key, range and access checks, receive WQE consumption, responder CQEs
 * and atomics (GPU memory included) are written here once; the transports
 * only move the bytes.  The caller holds the target context's
 * registration table read lock.
 *
 * Results: 0, KINET_RESP_RNR (no receive WQE posted: retry), or the
 * syndrome the requester is answered with.
 */
#ifndef KINET_SOFT_RESPONDER_H
#define KINET_SOFT_RESPONDER_H

#include "engine.h"
#include "sgl.h"

#define KINET_RESP_RNR (-1)

/* The next posted receive WQE of qp and its counter, or NULL; consume
 * takes it (rq_lock held across both). */
const struct kinet_wqe_data_seg *kinet_qp_rq_peek(struct kinet_qp *qp, uint16_t *index);
void kinet_qp_rq_consume(struct kinet_qp *qp);

/* Checks the target range of an RDMA write, read or atomic (the access
 * right follows from the opcode; atomics are 8 bytes, 8-byte aligned). */
int kinet_resp_check(struct kinet_ctx *ctx, uint8_t opcode, uint32_t rkey, uint64_t raddr, uint32_t length,
		     struct kinet_mr_ref *ref);

/* The receive side below takes from tq's shared receive queue when it has
 * one (kinet_qp_attr.srq), under the SRQ's lock instead of rq_lock: index
 * is then the SRQ's WQE index, and the responder CQEs name the SRQ. */

/* Write with immediate: consumes the receive WQE the write completes;
 * *index is its counter.  The data and the receive are one message: with
 * KINET_RESP_RNR nothing may be placed. */
int kinet_resp_take_recv_imm(struct kinet_qp *tq, uint16_t *index);

/* A send: the receive WQE it lands in, resolved for a message of len bytes. */
struct kinet_resp_recv {
	uint16_t index;
	uint8_t syndrome; /* the responder's: LOCAL_PROT_ERR, LOCAL_LENGTH_ERR or 0 */
	int ndst;
	struct kinet_sgl_entry dst[KINET_MAX_SGE];
};

/* Peeks and resolves the next receive WQE.  On 0 tq's receive lock is held
 * until kinet_resp_recv_take (consumes it) or kinet_resp_recv_leave
 * (leaves it for a retry). */
int kinet_resp_recv_peek(struct kinet_qp *tq, uint32_t len, struct kinet_resp_recv *rv);
void kinet_resp_recv_leave(struct kinet_qp *tq);
/* Consumes it.  When it could not hold the message, the responder's
 * error CQE is written, tq enters the error state and the requester's
 * syndrome is returned. */
int kinet_resp_recv_take(struct kinet_qp *tq, const struct kinet_resp_recv *rv);
/* A receive that failed while its data was being placed. */
void kinet_resp_recv_fail(struct kinet_qp *tq, uint16_t index, uint8_t syndrome);

/* The responder CQE of tq for a completed send or write with immediate. */
struct kinet_cqe_desc kinet_resp_cqe(const struct kinet_qp *tq, uint8_t cqe_opcode, uint16_t index,
				     uint32_t length, uint32_t imm_be, uint8_t syndrome);

/* Executes an atomic at ref (from kinet_resp_check): *old gets the value
 * before.  GPU memory goes through thread t's copy engine, serialised per
 * target context so kinet atomics on it are atomic with respect to each
 * other.  0 or REMOTE_OP_ERR. */
int kinet_resp_atomic(struct kinet_engine_thread *t, struct kinet_ctx *ctx, const struct kinet_mr_ref *ref,
		      uint8_t opcode, uint64_t swap_add, uint64_t compare, uint64_t *old);

/* A copy complete on return (waits for the thread's copy stream when it
 * went there); 0 or negative errno. */
int kinet_resp_copy_sync(struct kinet_engine_thread *t, void *dst, enum kinet_mem_type dt, const void *src,
			 enum kinet_mem_type st, size_t len);

#endif /* KINET_SOFT_RESPONDER_H */
