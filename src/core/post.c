/*
 * CPU-side posting: the same mlx5 WQEs device code writes, the same
 * doorbells per mode.  Thread-safe through qp->post_lock.
 */
#include <errno.h>
#include <string.h>

#include "internal.h"
#include "provider.h"

#define WQE_MAX_BBS 16 /* 63 ds of 16 bytes */

/* KINET_EINVAL naming the public function rather than the helper. */
#define SEND_EINVAL(name, why)                                                                               \
	(KINET_ERR("kinet_qp_post_send: invalid argument '%s': %s", name, why), -EINVAL)

static const char *const state_names[] = {"RESET", "INIT", "RTR", "RTS", "ERR"};

/* Rings the doorbell for everything up to qp->sq_pi; last is the first BB of
 * the last WQE written.  post_lock held. */
static void kinet_qp_ring_doorbell(struct kinet_qp *qp, const uint8_t *last)
{
	uint8_t *reg = kinet_qp_db_reg(qp);
	uint64_t db;

	/* A NIC's doorbell register is MMIO, written the NIC's way. */
	if (qp->ctx->ops->ring) {
		qp->ctx->ops->ring(qp, last);
		return;
	}
	switch (qp->db_mode) {
	case KINET_DB_CPU:
		atomic_store_explicit(qp->db_cpu, qp->sq_pi, memory_order_release);
		break;
	case KINET_DB_BF:
		__atomic_store_n(&qp->dbrec[KINET_DBR_SEND], kinet_be32((uint32_t)qp->sq_pi & 0xffff),
				 __ATOMIC_RELEASE);
		/* The WQE and the record are visible before any part of the
		 * BlueFlame copy; its first 8 bytes are the doorbell, so they go
		 * last. */
		atomic_thread_fence(memory_order_release);
		memcpy(reg + 8, last + 8, KINET_WQE_BB_SIZE - 8);
		atomic_thread_fence(memory_order_release);
		memcpy(&db, last, sizeof(db));
		__atomic_store_n((uint64_t *)(void *)reg, db, __ATOMIC_RELEASE);
		break;
	default: /* KINET_DB_GPU */
		__atomic_store_n(&qp->dbrec[KINET_DBR_SEND], kinet_be32((uint32_t)qp->sq_pi & 0xffff),
				 __ATOMIC_RELEASE);
		atomic_thread_fence(memory_order_release);
		memcpy(&db, last, sizeof(db));
		__atomic_store_n((uint64_t *)(void *)reg, db, __ATOMIC_RELEASE);
		break;
	}
}

/* Tells the provider that the send doorbell was rung (post_lock
 * released). */
static void send_rung(struct kinet_qp *qp)
{
	if (qp->ctx->ops->send_rung)
		qp->ctx->ops->send_rung(qp);
	else
		qp->ctx->ops->doorbell(qp);
}

/* Copies a WQE built contiguously into the ring at sq_pi, wrapping at the
 * end, and records it; post_lock held, room checked. */
static uint8_t *sq_put(struct kinet_qp *qp, const uint8_t *wqe, uint32_t nbb, uint64_t wr_id)
{
	uint32_t slot = qp->sq_pi & (qp->sq_bbs - 1);
	uint32_t i;

	for (i = 0; i < nbb; i++)
		memcpy(qp->sq + ((qp->sq_pi + i) & (qp->sq_bbs - 1)) * KINET_WQE_BB_SIZE,
		       wqe + i * KINET_WQE_BB_SIZE, KINET_WQE_BB_SIZE);
	qp->sq_wrid[slot] = wr_id;
	qp->sq_nbb[slot] = (uint8_t)nbb;
	qp->sq_pi += nbb;
	if (((const struct kinet_wqe_ctrl_seg *)wqe)->fm_ce_se & KINET_WQE_CTRL_CQ_UPDATE)
		qp->sq_sig_end = qp->sq_pi;
	return qp->sq + slot * KINET_WQE_BB_SIZE;
}

/* Room for a WQE of nbb blocks; post_lock held.  Slots are freed by
 * polled completions only, as on ConnectX, so a queue filled with
 * unsignaled WQEs would stay full for good: while no signaled WQE is
 * outstanding, the last free block is kept for a signaled one (a signaled
 * NOP will do), whose completion frees everything before it. */
static int sq_room(struct kinet_qp *qp, uint32_t nbb, bool signaled)
{
	uint64_t used = qp->sq_pi + nbb - qp->sq_ci_host;

	if (used > qp->sq_bbs)
		return -ENOMEM;
	if (!signaled && used == qp->sq_bbs && qp->sq_sig_end <= qp->sq_ci_host) {
		KINET_WARN("QP %u: send queue full of unsignaled WQEs; its last slot takes only a signaled "
			   "WQE (post one and poll its completion)",
			   qp->qpn);
		return -ENOMEM;
	}
	return 0;
}

/* 1 when an SGE of wr names registered CUDA memory (one table look-up
 * under one read lock for the whole request). */
static int sges_in_gpu_memory(struct kinet_ctx *ctx, const struct kinet_send_wr *wr)
{
	struct kinet_mr_ref ref;
	int gpu = 0;

	if (ctx->cuda_device < 0)
		return 0;
	kinet_mr_table_rdlock(ctx);
	for (int i = 0; i < wr->num_sge && !gpu; i++) {
		const struct kinet_sge *sge = &wr->sg_list[i];
		gpu = !kinet_mr_lookup(ctx, sge->lkey, sge->addr, sge->length, 0, &ref) &&
		      ref.type == KINET_MEM_CUDA;
	}
	kinet_mr_table_unlock(ctx);
	return gpu;
}

static int send_state_check(struct kinet_qp *qp)
{
	int state = atomic_load(&qp->state);

	if (state != KINET_QPS_RTS && state != KINET_QPS_ERR) {
		KINET_ERR("QP %u is not ready to send (state %s)", qp->qpn, state_names[state]);
		return -EINVAL;
	}
	return 0;
}

static int wqe_opcode(enum kinet_wr_opcode op)
{
	switch (op) {
	case KINET_WR_NOP:
		return KINET_WQE_OP_NOP;
	case KINET_WR_RDMA_WRITE:
		return KINET_WQE_OP_RDMA_WRITE;
	case KINET_WR_RDMA_WRITE_WITH_IMM:
		return KINET_WQE_OP_RDMA_WRITE_IMM;
	case KINET_WR_SEND:
		return KINET_WQE_OP_SEND;
	case KINET_WR_SEND_WITH_IMM:
		return KINET_WQE_OP_SEND_IMM;
	case KINET_WR_RDMA_READ:
		return KINET_WQE_OP_RDMA_READ;
	case KINET_WR_ATOMIC_CMP_AND_SWP:
		return KINET_WQE_OP_ATOMIC_CS;
	case KINET_WR_ATOMIC_FETCH_AND_ADD:
		return KINET_WQE_OP_ATOMIC_FA;
	}
	return -1;
}

static int check_send_wr(struct kinet_qp *qp, const struct kinet_send_wr *wr, int op)
{
	bool atomic = op == KINET_WQE_OP_ATOMIC_CS || op == KINET_WQE_OP_ATOMIC_FA;
	uint64_t total = 0;
	int i;

	if (op < 0)
		return SEND_EINVAL("wr->opcode", "unknown opcode");
	if (wr->send_flags &
	    ~(unsigned)(KINET_SEND_SIGNALED | KINET_SEND_FENCE | KINET_SEND_INLINE | KINET_SEND_SOLICITED))
		return SEND_EINVAL("wr->send_flags", "unknown flags");
	if (wr->num_sge < 0 || wr->num_sge > KINET_MAX_SGE)
		return SEND_EINVAL("wr->num_sge", "must be 0..16");
	if (wr->num_sge && !wr->sg_list)
		return SEND_EINVAL("wr->sg_list", "NULL with num_sge > 0");
	if (op == KINET_WQE_OP_NOP && wr->num_sge)
		return SEND_EINVAL("wr->num_sge", "a NOP carries no data");
	for (i = 0; i < wr->num_sge; i++)
		total += wr->sg_list[i].length;
	if (atomic) {
		if (wr->num_sge != 1 || wr->sg_list[0].length != 8)
			return SEND_EINVAL("wr->sg_list", "an atomic takes exactly one 8-byte SGE");
		if (wr->send_flags & KINET_SEND_INLINE)
			return SEND_EINVAL("wr->send_flags", "an atomic cannot be inline");
	}
	if (wr->send_flags & KINET_SEND_INLINE) {
		if (op != KINET_WQE_OP_RDMA_WRITE && op != KINET_WQE_OP_RDMA_WRITE_IMM &&
		    op != KINET_WQE_OP_SEND && op != KINET_WQE_OP_SEND_IMM)
			return SEND_EINVAL("wr->send_flags", "INLINE only for writes and sends");
		if (total > qp->attr.max_inline)
			return SEND_EINVAL("wr->sg_list", "inline data longer than the QP's max_inline");
		/* Inline data is read here, by this call: from address 0 (or
		 * a range that wraps) it would crash the caller instead of
		 * failing the request. */
		for (i = 0; i < wr->num_sge; i++) {
			uint64_t a = wr->sg_list[i].addr, n = wr->sg_list[i].length;

			if (n && (!a || a > (uint64_t)UINTPTR_MAX - n))
				return SEND_EINVAL("wr->sg_list",
						   "inline data at address 0 or wrapping around");
		}
		/* The CPU copies inline data into the WQE itself, so it must be
		 * able to read it: registered GPU memory is refused (the lkey of
		 * an inline SGE may also be unused, as in verbs; then the data is
		 * taken to be host memory). */
		if (sges_in_gpu_memory(qp->ctx, wr))
			return SEND_EINVAL("wr->sg_list", "inline data in GPU memory (post it by reference)");
	}
	return 0;
}

/* Builds the WQE for wr in buf (zeroed, WQE_MAX_BBS BBs); returns ds. */
static uint32_t build_send_wqe(struct kinet_qp *qp, const struct kinet_send_wr *wr, int op, uint8_t *buf)
{
	struct kinet_wqe_ctrl_seg *ctrl = (struct kinet_wqe_ctrl_seg *)buf;
	uint8_t *seg = buf + sizeof(*ctrl);
	uint8_t fm_ce_se = 0;
	uint32_t imm = 0, len = 0, ds;
	int i;

	if (op == KINET_WQE_OP_RDMA_WRITE || op == KINET_WQE_OP_RDMA_WRITE_IMM ||
	    op == KINET_WQE_OP_RDMA_READ || op == KINET_WQE_OP_ATOMIC_CS || op == KINET_WQE_OP_ATOMIC_FA) {
		kinet_wqe_set_raddr((struct kinet_wqe_raddr_seg *)seg, wr->remote_addr, wr->rkey);
		seg += sizeof(struct kinet_wqe_raddr_seg);
	}
	if (op == KINET_WQE_OP_ATOMIC_CS) {
		kinet_wqe_set_atomic((struct kinet_wqe_atomic_seg *)seg, wr->swap, wr->compare_add);
		seg += sizeof(struct kinet_wqe_atomic_seg);
	} else if (op == KINET_WQE_OP_ATOMIC_FA) {
		kinet_wqe_set_atomic((struct kinet_wqe_atomic_seg *)seg, wr->compare_add, 0);
		seg += sizeof(struct kinet_wqe_atomic_seg);
	}
	if (wr->send_flags & KINET_SEND_INLINE) {
		struct kinet_wqe_inline_seg *inl = (struct kinet_wqe_inline_seg *)seg;
		uint8_t *data = seg + sizeof(*inl);

		for (i = 0; i < wr->num_sge; i++) {
			/* An empty SGE may have address 0, which memcpy must
			 * not be given even for 0 bytes. */
			if (!wr->sg_list[i].length)
				continue;
			memcpy(data + len, (const void *)(uintptr_t)wr->sg_list[i].addr,
			       wr->sg_list[i].length);
			len += wr->sg_list[i].length;
		}
		inl->byte_count = kinet_be32(KINET_INLINE_SEG_FLAG | len);
		seg += kinet_inline_ds(len) * KINET_WQE_DS_SIZE;
	} else {
		for (i = 0; i < wr->num_sge; i++) {
			kinet_wqe_set_data((struct kinet_wqe_data_seg *)seg, wr->sg_list[i].addr,
					   wr->sg_list[i].length, wr->sg_list[i].lkey);
			seg += sizeof(struct kinet_wqe_data_seg);
		}
	}
	ds = (uint32_t)(seg - buf) / KINET_WQE_DS_SIZE;

	if (wr->send_flags & KINET_SEND_SIGNALED)
		fm_ce_se |= KINET_WQE_CTRL_CQ_UPDATE;
	if (wr->send_flags & KINET_SEND_FENCE)
		fm_ce_se |= KINET_WQE_CTRL_FENCE;
	if (wr->send_flags & KINET_SEND_SOLICITED)
		fm_ce_se |= KINET_WQE_CTRL_SOLICITED;
	if (op == KINET_WQE_OP_RDMA_WRITE_IMM || op == KINET_WQE_OP_SEND_IMM)
		imm = kinet_be32(wr->imm_data);
	kinet_wqe_set_ctrl(ctrl, (uint8_t)op, (uint16_t)qp->sq_pi, qp->qpn, ds, fm_ce_se, imm);
	return ds;
}

int kinet_qp_post_send(struct kinet_qp *qp, const struct kinet_send_wr *wr, int count, int *bad)
{
	uint8_t buf[WQE_MAX_BBS * KINET_WQE_BB_SIZE];
	const uint8_t *last = NULL;
	uint32_t nbb;
	int i, op, ret = 0;

	if (bad)
		*bad = 0;
	if (!qp)
		return KINET_EINVAL("qp", "NULL");
	if (count < 0)
		return KINET_EINVAL("count", "negative");
	if (count && !wr)
		return KINET_EINVAL("wr", "NULL");
	ret = send_state_check(qp);
	if (ret)
		return ret;

	pthread_mutex_lock(&qp->post_lock);
	if (qp->exported) {
		KINET_ERR("%s: QP %u is exported, its send queue belongs to device code", __func__, qp->qpn);
		ret = -EBUSY;
		goto out;
	}
	for (i = 0; i < count; i++) {
		op = wqe_opcode(wr[i].opcode);
		ret = check_send_wr(qp, &wr[i], op);
		if (ret)
			break;
		memset(buf, 0, sizeof(buf));
		nbb = kinet_wqe_bbs(build_send_wqe(qp, &wr[i], op, buf));
		if (nbb > qp->sq_bbs) {
			ret = KINET_EINVAL("wr", "WQE larger than the send queue");
			break;
		}
		ret = sq_room(qp, nbb, wr[i].send_flags & KINET_SEND_SIGNALED);
		if (ret)
			break;
		last = sq_put(qp, buf, nbb, wr[i].wr_id);
	}
	if (ret && bad)
		*bad = i;
	if (last)
		kinet_qp_ring_doorbell(qp, last);
out:
	pthread_mutex_unlock(&qp->post_lock);
	if (last)
		send_rung(qp);
	return ret;
}

int kinet_qp_post_wqe(struct kinet_qp *qp, const void *wqe, uint32_t nbb, uint64_t wr_id)
{
	uint8_t buf[4 * KINET_WQE_BB_SIZE];
	struct kinet_wqe_ctrl_seg *ctrl = (struct kinet_wqe_ctrl_seg *)buf;
	const uint8_t *last;
	uint32_t v;
	int ret = 0;

	if (!qp)
		return KINET_EINVAL("qp", "NULL");
	if (!wqe)
		return KINET_EINVAL("wqe", "NULL");
	if (!nbb || nbb > 4)
		return KINET_EINVAL("nbb", "must be 1..4");

	memcpy(buf, wqe, nbb * KINET_WQE_BB_SIZE);
	pthread_mutex_lock(&qp->post_lock);
	if (qp->exported) {
		KINET_ERR("%s: QP %u is exported, its send queue belongs to device code", __func__, qp->qpn);
		ret = -EBUSY;
		goto out;
	}
	ret = nbb > qp->sq_bbs ? -ENOMEM : sq_room(qp, nbb, ctrl->fm_ce_se & KINET_WQE_CTRL_CQ_UPDATE);
	if (ret)
		goto out;
	/* Only the index is ours; anything else, malformed or not, is the
	 * caller's, so the engine's checks can be exercised. */
	v = kinet_be32(ctrl->opmod_idx_opcode);
	v = (v & 0xff0000ffu) | ((uint32_t)(uint16_t)qp->sq_pi << 8);
	ctrl->opmod_idx_opcode = kinet_be32(v);
	last = sq_put(qp, buf, nbb, wr_id);
	kinet_qp_ring_doorbell(qp, last);
out:
	pthread_mutex_unlock(&qp->post_lock);
	if (!ret)
		send_rung(qp);
	return ret;
}

int kinet_qp_post_recv(struct kinet_qp *qp, const struct kinet_recv_wr *wr, int count, int *bad)
{
	struct kinet_wqe_data_seg *seg;
	uint32_t slots;
	int i, j, ret = 0, posted = 0;

	if (bad)
		*bad = 0;
	if (!qp)
		return KINET_EINVAL("qp", "NULL");
	if (!qp->rq)
		return KINET_EINVAL("qp", "has no receive queue (created without recv_cq)");
	if (count < 0)
		return KINET_EINVAL("count", "negative");
	if (count && !wr)
		return KINET_EINVAL("wr", "NULL");

	slots = qp->rq_stride / sizeof(*seg);
	pthread_mutex_lock(&qp->post_lock);
	if (qp->exported) {
		KINET_ERR("%s: QP %u is exported, its receive queue belongs to device code", __func__,
			  qp->qpn);
		ret = -EBUSY;
		goto out;
	}
	for (i = 0; i < count; i++) {
		if (wr[i].num_sge < 0 || (uint32_t)wr[i].num_sge > qp->attr.max_recv_sge) {
			ret = KINET_EINVAL("wr->num_sge", "must be 0..max_recv_sge");
			break;
		}
		if (wr[i].num_sge && !wr[i].sg_list) {
			ret = KINET_EINVAL("wr->sg_list", "NULL with num_sge > 0");
			break;
		}
		if (qp->rq_pi - qp->rq_ci_host >= qp->rq_depth) {
			ret = -ENOMEM;
			break;
		}
		seg = (struct kinet_wqe_data_seg *)(qp->rq +
						    (qp->rq_pi & (qp->rq_depth - 1)) * qp->rq_stride);
		for (j = 0; j < wr[i].num_sge; j++)
			kinet_wqe_set_data(&seg[j], wr[i].sg_list[j].addr, wr[i].sg_list[j].length,
					   wr[i].sg_list[j].lkey);
		if ((uint32_t)j < slots)
			kinet_wqe_set_data(&seg[j], 0, 0, KINET_INVALID_LKEY);
		qp->rq_wrid[qp->rq_pi & (qp->rq_depth - 1)] = wr[i].wr_id;
		qp->rq_pi++;
		posted++;
	}
	if (ret && bad)
		*bad = i;
	if (posted)
		/* Release: the receive WQEs are visible before the head moves. */
		__atomic_store_n(&qp->dbrec[KINET_DBR_RECV], kinet_be32((uint32_t)qp->rq_pi & 0xffff),
				 __ATOMIC_RELEASE);
out:
	pthread_mutex_unlock(&qp->post_lock);
	if (posted && !atomic_load(&qp->ctx->engine_stopped))
		qp->ctx->ops->doorbell(qp);
	return ret;
}
