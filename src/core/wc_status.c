/*
 * Completion syndromes to text.  The wording follows ibv_wc_status_str(), so
 * a message reads the same as on verbs.
 */
#include "internal.h"

const char *kinet_wc_status_str(int status)
{
	switch (status) {
	case 0:
		return "success";
	case KINET_SYND_LOCAL_LENGTH_ERR:
		return "local length error";
	case KINET_SYND_LOCAL_QP_OP_ERR:
		return "local QP operation error";
	case KINET_SYND_LOCAL_PROT_ERR:
		return "local protection error";
	case KINET_SYND_WR_FLUSH_ERR:
		return "work request flushed error";
	case KINET_SYND_MW_BIND_ERR:
		return "memory window bind error";
	case KINET_SYND_BAD_RESP_ERR:
		return "bad response error";
	case KINET_SYND_LOCAL_ACCESS_ERR:
		return "local access error";
	case KINET_SYND_REMOTE_INVAL_REQ_ERR:
		return "remote invalid request error";
	case KINET_SYND_REMOTE_ACCESS_ERR:
		return "remote access error";
	case KINET_SYND_REMOTE_OP_ERR:
		return "remote operation error";
	case KINET_SYND_TRANSPORT_RETRY_EXC_ERR:
		return "transport retry counter exceeded";
	case KINET_SYND_RNR_RETRY_EXC_ERR:
		return "RNR retry counter exceeded";
	case KINET_SYND_REMOTE_ABORTED_ERR:
		return "remote aborted error";
	default:
		return "unknown completion status";
	}
}
