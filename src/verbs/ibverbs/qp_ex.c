/*
 * The ibv_wr_* interface (ibv_qp_ex), perftest's default: between
 * wr_start and wr_complete each builder call appends a kinet work request
 * (its scatter list and inline bytes copied, as the caller may reuse them
 * at once); wr_complete posts them in one call, wr_abort drops them.  A
 * bad call (an opcode not asked for at create, too many requests or
 * entries) is remembered and makes wr_complete fail without posting any.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "verbs.h"

static struct kinet_verbs_qp *from_ex(struct ibv_qp_ex *qpx)
{
	return (struct kinet_verbs_qp *)qpx;
}

static void fail(struct kinet_verbs_batch *b, int err)
{
	if (!b->error)
		b->error = err;
}

/* The request a builder call opens, or NULL (the batch then fails). */
static struct kinet_send_wr *open_wr(struct ibv_qp_ex *qpx, enum kinet_wr_opcode op, uint64_t op_flag)
{
	struct kinet_verbs_qp *qp = from_ex(qpx);
	struct kinet_verbs_batch *b = &qp->batch;
	struct kinet_send_wr *w;
	unsigned f = qpx->wr_flags;

	if (!(qp->send_ops & op_flag)) {
		fail(b, EOPNOTSUPP);
		return NULL;
	}
	if (b->count == b->cap) {
		fail(b, ENOMEM);
		return NULL;
	}
	w = &b->wr[b->count++];
	memset(w, 0, sizeof(*w));
	w->wr_id = qpx->wr_id;
	w->opcode = op;
	w->send_flags = (f & IBV_SEND_SIGNALED || qp->sq_sig_all ? KINET_SEND_SIGNALED : 0) |
			(f & IBV_SEND_FENCE ? KINET_SEND_FENCE : 0) |
			(f & IBV_SEND_SOLICITED ? KINET_SEND_SOLICITED : 0);
	w->sg_list = &b->sge[(size_t)(w - b->wr) * KINET_VERBS_MAX_SGE];
	return w;
}

/* The request the set_* calls fill: the last one opened. */
static struct kinet_send_wr *last_wr(struct kinet_verbs_qp *qp)
{
	struct kinet_verbs_batch *b = &qp->batch;

	if (!b->count) {
		fail(b, EINVAL);
		return NULL;
	}
	return &b->wr[b->count - 1];
}

static void wr_rdma_write(struct ibv_qp_ex *qpx, uint32_t rkey, uint64_t remote_addr)
{
	struct kinet_send_wr *w = open_wr(qpx, KINET_WR_RDMA_WRITE, IBV_QP_EX_WITH_RDMA_WRITE);

	if (w) {
		w->rkey = rkey;
		w->remote_addr = remote_addr;
	}
}

static void wr_rdma_write_imm(struct ibv_qp_ex *qpx, uint32_t rkey, uint64_t remote_addr, __be32 imm)
{
	struct kinet_send_wr *w =
		open_wr(qpx, KINET_WR_RDMA_WRITE_WITH_IMM, IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM);

	if (w) {
		w->rkey = rkey;
		w->remote_addr = remote_addr;
		w->imm_data = be32toh(imm);
	}
}

static void wr_rdma_read(struct ibv_qp_ex *qpx, uint32_t rkey, uint64_t remote_addr)
{
	struct kinet_send_wr *w = open_wr(qpx, KINET_WR_RDMA_READ, IBV_QP_EX_WITH_RDMA_READ);

	if (w) {
		w->rkey = rkey;
		w->remote_addr = remote_addr;
	}
}

static void wr_send(struct ibv_qp_ex *qpx)
{
	(void)open_wr(qpx, KINET_WR_SEND, IBV_QP_EX_WITH_SEND);
}

static void wr_send_imm(struct ibv_qp_ex *qpx, __be32 imm)
{
	struct kinet_send_wr *w = open_wr(qpx, KINET_WR_SEND_WITH_IMM, IBV_QP_EX_WITH_SEND_WITH_IMM);

	if (w)
		w->imm_data = be32toh(imm);
}

static void wr_atomic_cmp_swp(struct ibv_qp_ex *qpx, uint32_t rkey, uint64_t remote_addr, uint64_t compare,
			      uint64_t swap)
{
	struct kinet_send_wr *w =
		open_wr(qpx, KINET_WR_ATOMIC_CMP_AND_SWP, IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP);

	if (w) {
		w->rkey = rkey;
		w->remote_addr = remote_addr;
		w->compare_add = compare;
		w->swap = swap;
	}
}

static void wr_atomic_fetch_add(struct ibv_qp_ex *qpx, uint32_t rkey, uint64_t remote_addr, uint64_t add)
{
	struct kinet_send_wr *w =
		open_wr(qpx, KINET_WR_ATOMIC_FETCH_AND_ADD, IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD);

	if (w) {
		w->rkey = rkey;
		w->remote_addr = remote_addr;
		w->compare_add = add;
	}
}

static void wr_set_sge(struct ibv_qp_ex *qpx, uint32_t lkey, uint64_t addr, uint32_t length)
{
	struct kinet_send_wr *w = last_wr(from_ex(qpx));

	if (!w)
		return;
	struct kinet_sge *s = (struct kinet_sge *)w->sg_list;
	s[0] = (struct kinet_sge){.addr = addr, .length = length, .lkey = lkey};
	w->num_sge = 1;
}

static void wr_set_sge_list(struct ibv_qp_ex *qpx, size_t num, const struct ibv_sge *list)
{
	struct kinet_verbs_qp *qp = from_ex(qpx);
	struct kinet_send_wr *w = last_wr(qp);

	if (!w)
		return;
	if (num > qp->cap.max_send_sge) {
		fail(&qp->batch, EINVAL);
		return;
	}
	struct kinet_sge *s = (struct kinet_sge *)w->sg_list;
	for (size_t i = 0; i < num; i++)
		s[i] = (struct kinet_sge){
			.addr = list[i].addr, .length = list[i].length, .lkey = list[i].lkey};
	w->num_sge = (int)num;
}

static void set_inline(struct kinet_verbs_qp *qp, size_t num, const struct ibv_data_buf *buf)
{
	struct kinet_verbs_batch *b = &qp->batch;
	struct kinet_send_wr *w = last_wr(qp);
	size_t total = 0;

	if (!w)
		return;
	for (size_t i = 0; i < num; i++)
		total += buf[i].length;
	if (total > qp->cap.max_inline_data) {
		fail(b, EINVAL);
		return;
	}
	uint8_t *dst = b->inline_buf + (size_t)(w - b->wr) * KINET_VERBS_MAX_INLINE;
	size_t at = 0;
	for (size_t i = 0; i < num; i++) {
		memcpy(dst + at, buf[i].addr, buf[i].length);
		at += buf[i].length;
	}
	struct kinet_sge *s = (struct kinet_sge *)w->sg_list;
	s[0] = (struct kinet_sge){.addr = (uintptr_t)dst, .length = (uint32_t)total};
	w->num_sge = 1;
	w->send_flags |= KINET_SEND_INLINE;
}

static void wr_set_inline_data(struct ibv_qp_ex *qpx, void *addr, size_t length)
{
	struct ibv_data_buf one = {.addr = addr, .length = length};

	set_inline(from_ex(qpx), 1, &one);
}

static void wr_set_inline_data_list(struct ibv_qp_ex *qpx, size_t num, const struct ibv_data_buf *list)
{
	set_inline(from_ex(qpx), num, list);
}

static void wr_unsupported_rkey(struct ibv_qp_ex *qpx, uint32_t rkey)
{
	(void)rkey;
	fail(&from_ex(qpx)->batch, EOPNOTSUPP);
}

static void wr_bind_mw(struct ibv_qp_ex *qpx, struct ibv_mw *mw, uint32_t rkey,
		       const struct ibv_mw_bind_info *info)
{
	(void)mw, (void)rkey, (void)info;
	fail(&from_ex(qpx)->batch, EOPNOTSUPP);
}

static void wr_send_tso(struct ibv_qp_ex *qpx, void *hdr, uint16_t hdr_sz, uint16_t mss)
{
	(void)hdr, (void)hdr_sz, (void)mss;
	fail(&from_ex(qpx)->batch, EOPNOTSUPP);
}

static void wr_set_ud_addr(struct ibv_qp_ex *qpx, struct ibv_ah *ah, uint32_t qpn, uint32_t qkey)
{
	(void)ah, (void)qpn, (void)qkey;
	fail(&from_ex(qpx)->batch, EINVAL);
}

static void wr_atomic_write(struct ibv_qp_ex *qpx, uint32_t rkey, uint64_t remote_addr, const void *data)
{
	(void)rkey, (void)remote_addr, (void)data;
	fail(&from_ex(qpx)->batch, EOPNOTSUPP);
}

static void wr_start(struct ibv_qp_ex *qpx)
{
	struct kinet_verbs_batch *b = &from_ex(qpx)->batch;

	b->count = 0;
	b->error = 0;
}

static int wr_complete(struct ibv_qp_ex *qpx)
{
	struct kinet_verbs_qp *qp = from_ex(qpx);
	struct kinet_verbs_batch *b = &qp->batch;
	int ret = b->error, bad = -1;

	if (!ret && b->count) {
		ret = kinet_qp_post_send(qp->kqp, b->wr, (int)b->count, &bad);
		ret = kinet_verbs_post_errno(ret);
	}
	b->count = 0;
	b->error = 0;
	return ret;
}

static void wr_abort(struct ibv_qp_ex *qpx)
{
	wr_start(qpx);
}

void kinet_verbs_qp_ex_init(struct kinet_verbs_qp *qp, uint64_t ops)
{
	const uint64_t supported = IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM |
				   IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM |
				   IBV_QP_EX_WITH_RDMA_READ | IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |
				   IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD;
	struct kinet_verbs_batch *b = &qp->batch;
	struct ibv_qp_ex *x = &qp->qpx;

	if (ops & ~supported) {
		b->error = EOPNOTSUPP;
		return;
	}
	b->cap = qp->cap.max_send_wr ? qp->cap.max_send_wr : 1;
	b->wr = calloc(b->cap, sizeof(*b->wr));
	b->sge = calloc((size_t)b->cap * KINET_VERBS_MAX_SGE, sizeof(*b->sge));
	b->inline_buf = calloc(b->cap, KINET_VERBS_MAX_INLINE);
	if (!b->wr || !b->sge || !b->inline_buf) {
		b->error = ENOMEM;
		return;
	}
	/* A builder of an operation not asked for fails the batch (ConnectX
	 * does not even set it up). */
	qp->send_ops = ops;
	x->wr_rdma_write = wr_rdma_write;
	x->wr_rdma_write_imm = wr_rdma_write_imm;
	x->wr_rdma_read = wr_rdma_read;
	x->wr_send = wr_send;
	x->wr_send_imm = wr_send_imm;
	x->wr_atomic_cmp_swp = wr_atomic_cmp_swp;
	x->wr_atomic_fetch_add = wr_atomic_fetch_add;
	x->wr_local_inv = wr_unsupported_rkey;
	x->wr_send_inv = wr_unsupported_rkey;
	x->wr_bind_mw = wr_bind_mw;
	x->wr_send_tso = wr_send_tso;
	x->wr_set_ud_addr = wr_set_ud_addr;
	x->wr_set_xrc_srqn = wr_unsupported_rkey;
	x->wr_set_sge = wr_set_sge;
	x->wr_set_sge_list = wr_set_sge_list;
	x->wr_set_inline_data = wr_set_inline_data;
	x->wr_set_inline_data_list = wr_set_inline_data_list;
	x->wr_atomic_write = wr_atomic_write;
	x->wr_start = wr_start;
	x->wr_complete = wr_complete;
	x->wr_abort = wr_abort;
}

void kinet_verbs_batch_free(struct kinet_verbs_batch *b)
{
	free(b->wr);
	free(b->sge);
	free(b->inline_buf);
	memset(b, 0, sizeof(*b));
}
