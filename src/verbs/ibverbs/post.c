/*
 * ibv_post_send / ibv_post_recv / ibv_post_srq_recv: verbs work requests
 * become kinet's (the same WQEs, written by kinet's host posting) in
 * batches of up to 32, one doorbell per batch.  A request kinet refuses
 * stops the chain there: *bad names it, those before it are posted, as
 * the verbs contract says.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <string.h>

#include "verbs.h"

#define BATCH 32

/* A full queue is ENOMEM, as on mlx5; the rest are kinet's errnos. */
int kinet_verbs_post_errno(int kinet_ret)
{
	return kinet_ret == -EAGAIN || kinet_ret == -ENOSPC ? ENOMEM : kinet_verbs_errno(kinet_ret);
}

static void copy_sges(struct kinet_sge *dst, const struct ibv_sge *src, int n)
{
	for (int i = 0; i < n; i++) {
		dst[i].addr = src[i].addr;
		dst[i].length = src[i].length;
		dst[i].lkey = src[i].lkey;
	}
}

static int send_wr(struct kinet_verbs_qp *qp, const struct ibv_send_wr *in, struct kinet_send_wr *out,
		   struct kinet_sge *sge)
{
	if (in->num_sge < 0 || in->num_sge > KINET_VERBS_MAX_SGE ||
	    ((unsigned)in->num_sge > qp->cap.max_send_sge && !(in->send_flags & IBV_SEND_INLINE)))
		return EINVAL;
	memset(out, 0, sizeof(*out));
	switch (in->opcode) {
	case IBV_WR_RDMA_WRITE:
		out->opcode = KINET_WR_RDMA_WRITE;
		break;
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		out->opcode = KINET_WR_RDMA_WRITE_WITH_IMM;
		break;
	case IBV_WR_SEND:
		out->opcode = KINET_WR_SEND;
		break;
	case IBV_WR_SEND_WITH_IMM:
		out->opcode = KINET_WR_SEND_WITH_IMM;
		break;
	case IBV_WR_RDMA_READ:
		out->opcode = KINET_WR_RDMA_READ;
		break;
	case IBV_WR_ATOMIC_CMP_AND_SWP:
		out->opcode = KINET_WR_ATOMIC_CMP_AND_SWP;
		break;
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		out->opcode = KINET_WR_ATOMIC_FETCH_AND_ADD;
		break;
	default:
		/* Memory windows, invalidation, TSO: not in the software NIC. */
		return EINVAL;
	}
	out->wr_id = in->wr_id;
	out->send_flags = (in->send_flags & IBV_SEND_SIGNALED || qp->sq_sig_all ? KINET_SEND_SIGNALED : 0) |
			  (in->send_flags & IBV_SEND_FENCE ? KINET_SEND_FENCE : 0) |
			  (in->send_flags & IBV_SEND_INLINE ? KINET_SEND_INLINE : 0) |
			  (in->send_flags & IBV_SEND_SOLICITED ? KINET_SEND_SOLICITED : 0);
	copy_sges(sge, in->sg_list, in->num_sge);
	out->sg_list = sge;
	out->num_sge = in->num_sge;
	out->imm_data = ntohl(in->imm_data);
	if (in->opcode == IBV_WR_ATOMIC_CMP_AND_SWP || in->opcode == IBV_WR_ATOMIC_FETCH_AND_ADD) {
		out->remote_addr = in->wr.atomic.remote_addr;
		out->rkey = in->wr.atomic.rkey;
		out->compare_add = in->wr.atomic.compare_add;
		out->swap = in->wr.atomic.swap;
	} else if (in->opcode != IBV_WR_SEND && in->opcode != IBV_WR_SEND_WITH_IMM) {
		out->remote_addr = in->wr.rdma.remote_addr;
		out->rkey = in->wr.rdma.rkey;
	}
	return 0;
}

int kinet_verbs_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
	struct kinet_verbs_qp *qp = kinet_verbs_qp(ibqp);
	struct kinet_send_wr kwr[BATCH];
	struct kinet_sge sge[BATCH][KINET_VERBS_MAX_SGE];
	struct ibv_send_wr *first = wr;

	while (first) {
		struct ibv_send_wr *w = first;
		int n = 0, ret = 0, at = -1;

		for (; w && n < BATCH; w = w->next, n++) {
			ret = send_wr(qp, w, &kwr[n], sge[n]);
			if (ret)
				break;
		}
		if (n) {
			int kret = kinet_qp_post_send(qp->kqp, kwr, n, &at);

			if (kret) {
				struct ibv_send_wr *b = first;

				for (int i = 0; i < at && b; i++)
					b = b->next;
				if (bad)
					*bad = b;
				return kinet_verbs_post_errno(kret);
			}
		}
		if (ret) {
			if (bad)
				*bad = w;
			return ret;
		}
		first = w;
	}
	return 0;
}

static int recv_wr(const struct ibv_recv_wr *in, uint32_t max_sge, struct kinet_recv_wr *out,
		   struct kinet_sge *sge)
{
	if (in->num_sge < 0 || (uint32_t)in->num_sge > max_sge)
		return EINVAL;
	copy_sges(sge, in->sg_list, in->num_sge);
	out->wr_id = in->wr_id;
	out->sg_list = sge;
	out->num_sge = in->num_sge;
	return 0;
}

/* Posts a receive chain through post (a QP's or an SRQ's). */
static int post_recv_chain(void *q, int (*post)(void *, const struct kinet_recv_wr *, int, int *),
			   uint32_t max_sge, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	struct kinet_recv_wr kwr[BATCH];
	struct kinet_sge sge[BATCH][KINET_VERBS_MAX_SGE];
	struct ibv_recv_wr *first = wr;

	while (first) {
		struct ibv_recv_wr *w = first;
		int n = 0, ret = 0, at = -1;

		for (; w && n < BATCH; w = w->next, n++) {
			ret = recv_wr(w, max_sge, &kwr[n], sge[n]);
			if (ret)
				break;
		}
		if (n) {
			int kret = post(q, kwr, n, &at);

			if (kret) {
				struct ibv_recv_wr *b = first;

				for (int i = 0; i < at && b; i++)
					b = b->next;
				if (bad)
					*bad = b;
				return kinet_verbs_post_errno(kret);
			}
		}
		if (ret) {
			if (bad)
				*bad = w;
			return ret;
		}
		first = w;
	}
	return 0;
}

static int qp_post(void *q, const struct kinet_recv_wr *wr, int n, int *bad)
{
	return kinet_qp_post_recv(q, wr, n, bad);
}

static int srq_post(void *q, const struct kinet_recv_wr *wr, int n, int *bad)
{
	return kinet_srq_post_recv(q, wr, n, bad);
}

int kinet_verbs_post_recv(struct ibv_qp *ibqp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	struct kinet_verbs_qp *qp = kinet_verbs_qp(ibqp);

	if (ibqp->srq) {
		if (bad)
			*bad = wr;
		return EINVAL;
	}
	return post_recv_chain(qp->kqp, qp_post, qp->cap.max_recv_sge, wr, bad);
}

int kinet_verbs_post_srq_recv(struct ibv_srq *ibsrq, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	struct kinet_verbs_srq *srq = (struct kinet_verbs_srq *)ibsrq;

	return post_recv_chain(srq->ksrq, srq_post, srq->max_sge, wr, bad);
}
