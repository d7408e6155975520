/*
 * Completions as verbs reports them: kinet's syndromes are the PRM's, and
 * map to ibv_wc_status as rdma-core's mlx5 provider maps a ConnectX's;
 * vendor_err carries the syndrome itself.
 */
#include <arpa/inet.h>

#include "kinet/syndrome.h"
#include "verbs.h"

enum ibv_wc_status kinet_verbs_wc_status(int syndrome)
{
	switch (syndrome) {
	case 0:
		return IBV_WC_SUCCESS;
	case KINET_SYND_LOCAL_LENGTH_ERR:
		return IBV_WC_LOC_LEN_ERR;
	case KINET_SYND_LOCAL_QP_OP_ERR:
		return IBV_WC_LOC_QP_OP_ERR;
	case KINET_SYND_LOCAL_PROT_ERR:
		return IBV_WC_LOC_PROT_ERR;
	case KINET_SYND_WR_FLUSH_ERR:
		return IBV_WC_WR_FLUSH_ERR;
	case KINET_SYND_MW_BIND_ERR:
		return IBV_WC_MW_BIND_ERR;
	case KINET_SYND_BAD_RESP_ERR:
		return IBV_WC_BAD_RESP_ERR;
	case KINET_SYND_LOCAL_ACCESS_ERR:
		return IBV_WC_LOC_ACCESS_ERR;
	case KINET_SYND_REMOTE_INVAL_REQ_ERR:
		return IBV_WC_REM_INV_REQ_ERR;
	case KINET_SYND_REMOTE_ACCESS_ERR:
		return IBV_WC_REM_ACCESS_ERR;
	case KINET_SYND_REMOTE_OP_ERR:
		return IBV_WC_REM_OP_ERR;
	case KINET_SYND_TRANSPORT_RETRY_EXC_ERR:
		return IBV_WC_RETRY_EXC_ERR;
	case KINET_SYND_RNR_RETRY_EXC_ERR:
		return IBV_WC_RNR_RETRY_EXC_ERR;
	case KINET_SYND_REMOTE_ABORTED_ERR:
		return IBV_WC_REM_ABORT_ERR;
	default:
		return IBV_WC_GENERAL_ERR;
	}
}

enum ibv_wc_opcode kinet_verbs_wc_opcode(const struct kinet_wc *wc)
{
	switch (wc->opcode) {
	case KINET_WC_SEND:
		return IBV_WC_SEND;
	case KINET_WC_RDMA_WRITE:
		return IBV_WC_RDMA_WRITE;
	case KINET_WC_RDMA_READ:
		return IBV_WC_RDMA_READ;
	case KINET_WC_COMP_SWAP:
		return IBV_WC_COMP_SWAP;
	case KINET_WC_FETCH_ADD:
		return IBV_WC_FETCH_ADD;
	case KINET_WC_RECV_RDMA_WITH_IMM:
		return IBV_WC_RECV_RDMA_WITH_IMM;
	case KINET_WC_RECV:
		return IBV_WC_RECV;
	case KINET_WC_NOP:
	default:
		return IBV_WC_DRIVER1;
	}
}

void kinet_verbs_wc(const struct kinet_wc *in, struct ibv_wc *out)
{
	out->wr_id = in->wr_id;
	out->status = kinet_verbs_wc_status(in->status);
	out->opcode = kinet_verbs_wc_opcode(in);
	out->vendor_err = (uint32_t)in->status;
	out->byte_len = in->byte_len;
	out->imm_data = htonl(in->imm_data);
	out->qp_num = in->qp_num;
	out->src_qp = 0;
	out->wc_flags = (in->wc_flags & KINET_WC_WITH_IMM) ? IBV_WC_WITH_IMM : 0;
	out->pkey_index = 0;
	out->slid = 0;
	out->sl = 0;
	out->dlid_path_bits = 0;
}
