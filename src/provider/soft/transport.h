/*
 * What the engine and a transport of the software NIC exchange: a decoded
 * WQE, the result of executing it, and the transport's ops (local, node,
 * ofi).  Private to src/provider/soft.
 */
#ifndef KINET_SOFT_TRANSPORT_H
#define KINET_SOFT_TRANSPORT_H

#include "soft.h"

/* A decoded WQE, ready to execute.  Local SGEs are checked by the engine
 * before the transport sees them. */
struct kinet_op {
	uint8_t opcode;
	uint8_t opmod; /* ctrl bits 31:24; writes: 0 or KINET_WQE_OPMOD_STAGED */
	uint8_t fm_ce_se;
	uint16_t wqe_counter;
	uint32_t imm_be;
	uint64_t raddr;
	uint32_t rkey;
	uint64_t swap_add;
	uint64_t compare;
	uint32_t wait_cqn; /* WAIT: the CQ number and CQE index awaited */
	uint32_t wait_index;
	uint32_t length;	    /* total bytes */
	uint8_t cs_flags;	    /* raw-packet SEND: the Ethernet segment's checksum flags */
	uint64_t wait_ns;	    /* raw-packet WAIT on time: CLOCK_REALTIME ns awaited */
	bool after_pending;	    /* earlier operations of the QP are still in flight:
				     * anything that would complete synchronously must
				     * answer KINET_EXEC_BUSY, without side effects */
	const uint8_t *inline_data; /* non-NULL for inline writes/sends */
	int nsge;
	struct kinet_mr_ref sge[KINET_MAX_SGE];
	uint32_t sge_len[KINET_MAX_SGE];
};

/* A completion the engine wants written (engine/cqe_writer.c). */
struct kinet_cqe_desc {
	uint8_t cqe_opcode; /* enum kinet_cqe_opcode */
	uint8_t wqe_opcode; /* requester: the WQE opcode */
	uint8_t syndrome;   /* error CQEs */
	uint8_t vendor_syndrome;
	uint16_t wqe_counter;
	uint32_t qpn;
	uint32_t byte_cnt;
	uint32_t imm_be; /* as carried in the WQE */
	uint32_t srqn;	 /* responder: the SRQ the receive WQE came from, or 0 */
	/* A received Ethernet frame (cqe_opcode RESP_SEND): the CQE carries
	 * the fields below (kinet_cqe_eth_rx_encode) instead of imm and srqn. */
	bool eth;
	uint8_t l3_type;    /* KINET_CQE_L3_HDR_* */
	uint8_t l4_type;    /* KINET_CQE_L4_HDR_* */
	uint8_t csum_ok;    /* KINET_CQE_L2_OK | L3_OK | L4_OK */
	uint64_t timestamp; /* real-time format */
};

/* What executing an operation gave. */
enum kinet_exec_status {
	KINET_EXEC_DONE = 0, /* complete at the target */
	KINET_EXEC_PENDING,  /* issued; the transport completes it later */
	KINET_EXEC_RETRY,    /* peer not ready (RNR, unreachable): retry until
			      * the deadline, then fail with res->syndrome */
	KINET_EXEC_BUSY,     /* must wait for the QP's in-flight operations */
	KINET_EXEC_ERROR,    /* *syndrome set */
};

struct kinet_exec_result {
	enum kinet_exec_status status;
	uint8_t syndrome;
	uint32_t byte_cnt; /* for the requester CQE (reads, atomics) */
	/* Responder completion (send, write-with-immediate), written by the
	 * engine once the data is placed; resp_qp holds a reference. */
	struct kinet_qp *resp_qp;
	struct kinet_cq *resp_cq;
	struct kinet_cqe_desc resp_cqe;
	/* KINET_EXEC_PENDING without copies on the engine stream: the
	 * transport tracks the operation; op_done(token) reports its end. */
	uint64_t token;
	bool tracked_by_transport;
};

struct kinet_transport_ops {
	const char *name;
	int (*connect)(struct kinet_qp *qp, const struct kinet_qp_info *remote);
	void (*disconnect)(struct kinet_qp *qp);
	/* Executes op (from qp's send queue) against the peer. */
	void (*execute)(struct kinet_engine_thread *thread, struct kinet_qp *qp, struct kinet_op *op,
			struct kinet_exec_result *res);
	/* For operations the transport tracks (res->tracked_by_transport):
	 * 1 once complete, with *syndrome 0 or the error, else 0.  Every
	 * operation completes within the QP's timeout (a dead peer gives
	 * TRANSPORT_RETRY_EXC), and no data lands after it completed. */
	int (*op_done)(struct kinet_qp *qp, uint64_t token, uint8_t *syndrome);
	/* Optional: called after each batch of execute() calls on qp (with the
	 * QP's registration table read-locked throughout the batch), so a
	 * transport may keep per-batch state such as a looked-up target. */
	void (*batch_end)(struct kinet_qp *qp);
	/* Optional: asks the target for its memory windows (peer path across
	 * processes of one host); the answers come through
	 * kinet_peer_remote_*.  0 once asked. */
	int (*peer_hello)(struct kinet_qp *qp);
};

extern const struct kinet_transport_ops kinet_transport_local;
/* Raw-packet QPs of an Ethernet port (engine/eth.c). */
extern const struct kinet_transport_ops kinet_transport_packet;

#endif /* KINET_SOFT_TRANSPORT_H */
