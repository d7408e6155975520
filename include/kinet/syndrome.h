/*
 * kinet completion syndromes: why an operation failed.
 *
 * The values are the ConnectX PRM's (mlx5_err_cqe.syndrome), so the same
 * number means the same thing in an error CQE the software NIC wrote, in
 * one a ConnectX wrote, in struct kinet_wc.status, in struct
 * kinet_error.syndrome and in what device code reads from a failed QP.
 * kinet_wc_status_str() (kinet.h) names them.  Usable from C, C++ and CUDA
 * device code.
 */
#ifndef KINET_SYNDROME_H
#define KINET_SYNDROME_H

enum kinet_cqe_syndrome {
	/* The receive buffer is smaller than the message (responder), a
	 * message over 2 GiB, or an atomic's local buffer not 8 bytes. */
	KINET_SYND_LOCAL_LENGTH_ERR = 0x01,
	/* The WQE is malformed (opcode, segments) or the QP cannot execute
	 * it (not RTS); also the CQE that reports a CQ overrun. */
	KINET_SYND_LOCAL_QP_OP_ERR = 0x02,
	/* A local key, range or access right does not allow the access. */
	KINET_SYND_LOCAL_PROT_ERR = 0x04,
	/* Not executed: an earlier operation of the QP failed. */
	KINET_SYND_WR_FLUSH_ERR = 0x05,
	KINET_SYND_MW_BIND_ERR = 0x06,
	/* The target's answer does not match the request. */
	KINET_SYND_BAD_RESP_ERR = 0x10,
	KINET_SYND_LOCAL_ACCESS_ERR = 0x11,
	/* The target rejected the request: a send longer than the receive
	 * buffer posted there. */
	KINET_SYND_REMOTE_INVAL_REQ_ERR = 0x12,
	/* The target's key, range or access right does not allow it. */
	KINET_SYND_REMOTE_ACCESS_ERR = 0x13,
	/* The target could not carry it out (its receive buffer failed the
	 * checks, a copy into its memory failed). */
	KINET_SYND_REMOTE_OP_ERR = 0x14,
	/* The target did not answer within the QP's timeout (dead or
	 * unreachable peer). */
	KINET_SYND_TRANSPORT_RETRY_EXC_ERR = 0x15,
	/* A send found no receive posted at the target within the QP's
	 * rnr_timeout_ms. */
	KINET_SYND_RNR_RETRY_EXC_ERR = 0x16,
	KINET_SYND_REMOTE_ABORTED_ERR = 0x22,
};

#endif /* KINET_SYNDROME_H */
