/*
 * Export of QPs and CQs as GPUNetIO descriptors (include/kinet/gpunetio.h),
 * filled field by field as GPUNetIO's host library fills them
 * (doca_gpu_verbs_export_qp in the copy NCCL vendors), so GPUNetIO's
 * device code drives kinet's rings and doorbells unchanged.
 */
#include <errno.h>
#include <string.h>

#include "internal.h"
#include "kinet/gpunetio.h"

/* Logs why a QP cannot be exported and yields -EINVAL. */
#define EXPORT_EINVAL(qp, fmt, ...)                                                                          \
	(KINET_ERR("kinet_qp_export_gpunetio: QP %u: " fmt, (qp)->qpn, ##__VA_ARGS__), -EINVAL)

static int cq_fill(struct kinet_cq *cq, uint64_t ci, struct kinet_gpunetio_cq *d)
{
	struct kinet_ctx *ctx = cq->ctx;

	memset(d, 0, sizeof(*d));
	d->cqe_daddr = kinet_host_dev_ptr(ctx, cq->ring);
	d->cq_num = cq->cqn;
	d->cqe_num = cq->depth;
	d->dbrec = kinet_host_dev_ptr(ctx, cq->dbrec);
	d->cqe_ci = ci;
	d->cqe_rsvd = ci;
	d->cqe_mask = cq->depth - 1;
	d->cqe_size = sizeof(struct kinet_cqe64);
	d->mem_type = KINET_GPUNETIO_MEM_TYPE_HOST;
	return d->cqe_daddr && d->dbrec ? 0 : -EIO;
}

int kinet_cq_export_gpunetio(struct kinet_cq *cq, struct kinet_gpunetio_cq **dev_cq)
{
	struct kinet_gpunetio_cq d;
	int ret = 0;

	if (!cq)
		return KINET_EINVAL("cq", "NULL");
	if (!dev_cq)
		return KINET_EINVAL("dev_cq", "NULL");
	/* poll_lock freezes the host poller's index, where device code goes on. */
	pthread_mutex_lock(&cq->poll_lock);
	if (!cq->gpunetio) {
		ret = cq_fill(cq, cq->ci, &d);
		if (!ret)
			ret = kinet_cuda_export_copy(cq->ctx, &d, sizeof(d), (void **)&cq->gpunetio);
	}
	*dev_cq = cq->gpunetio;
	pthread_mutex_unlock(&cq->poll_lock);
	return ret;
}

/* GPUNetIO takes CQE i for WQE i and never writes the consumer index. */
static int check_cqs(struct kinet_qp *qp)
{
	struct kinet_cq *scq = qp->attr.send_cq, *rcq = qp->attr.recv_cq;

	if (!(scq->flags & KINET_CQ_IGNORE_OVERRUN))
		return EXPORT_EINVAL(qp, "its send CQ needs KINET_CQ_IGNORE_OVERRUN (GPUNetIO code never "
					 "publishes a consumer index)");
	if (atomic_load(&scq->users) != 1 || scq == rcq)
		return EXPORT_EINVAL(qp, "its send CQ must be its own (GPUNetIO code takes CQE i for WQE i)");
	if (scq->depth < qp->sq_bbs)
		return EXPORT_EINVAL(qp, "send CQ of %u CQEs, shallower than the send queue (%u)", scq->depth,
				     qp->sq_bbs);
	if (qp->sq_pi || __atomic_load_n(&scq->pi, __ATOMIC_ACQUIRE))
		return EXPORT_EINVAL(qp,
				     "WQEs were posted or completed already (GPUNetIO counts both from 0)");
	return 0;
}

static int qp_fill(struct kinet_qp *qp, struct kinet_gpunetio_qp *d)
{
	struct kinet_ctx *ctx = qp->ctx;
	uint32_t *dbrec = kinet_host_dev_ptr(ctx, qp->dbrec);
	uint8_t *db_reg = qp->db_mode == KINET_DB_CPU ? NULL : kinet_host_dev_ptr(ctx, kinet_qp_db_reg(qp));
	int ret;

	memset(d, 0, sizeof(*d));
	d->sq_num = qp->qpn;
	d->sq_num_shift8 = qp->qpn << 8;
	d->sq_num_shift8_be = kinet_be32(d->sq_num_shift8);
	d->sq_num_shift8_be_1ds = kinet_be32(d->sq_num_shift8 | 1);
	d->sq_num_shift8_be_2ds = kinet_be32(d->sq_num_shift8 | 2);
	d->sq_num_shift8_be_3ds = kinet_be32(d->sq_num_shift8 | 3);
	d->sq_num_shift8_be_4ds = kinet_be32(d->sq_num_shift8 | 4);
	d->sq_wqe_num = (uint16_t)qp->sq_bbs;
	d->sq_wqe_mask = (uint16_t)(qp->sq_bbs - 1);
	d->sq_wqe_daddr = kinet_host_dev_ptr(ctx, qp->sq);
	d->sq_dbrec = dbrec ? dbrec + KINET_DBR_SEND : NULL;
	d->mem_type = KINET_GPUNETIO_MEM_TYPE_HOST;
	if (qp->db_mode == KINET_DB_CPU) {
		d->nic_handler = KINET_GPUNETIO_NIC_HANDLER_CPU_PROXY;
		d->sq_db = kinet_host_dev_ptr(ctx, (void *)qp->db_cpu);
	} else {
		/* BlueFlame too: GPUNetIO's high-level calls ring the doorbell
		 * and its _bf submits copy the WQE, both at sq_db. */
		d->nic_handler = KINET_GPUNETIO_NIC_HANDLER_GPU_SM_DB;
		d->sq_db = (uint64_t *)(void *)db_reg;
	}
	if (!d->sq_wqe_daddr || !d->sq_dbrec || !d->sq_db)
		return -EIO;
	ret = cq_fill(qp->attr.send_cq, 0, &d->cq_sq);
	if (ret || !qp->rq)
		return ret;
	d->rq_num = qp->qpn;
	d->rq_wqe_pi = d->rq_rsvd_index = d->rq_ready_index = qp->rq_pi;
	d->rq_wqe_num = qp->rq_depth;
	d->rq_wqe_mask = qp->rq_depth - 1;
	d->rq_wqe_daddr = kinet_host_dev_ptr(ctx, qp->rq);
	d->rq_dbrec = dbrec + KINET_DBR_RECV;
	d->rcv_wqe_size = qp->rq_stride;
	if (!d->rq_wqe_daddr)
		return -EIO;
	return cq_fill(qp->attr.recv_cq, 0, &d->cq_rq);
}

int kinet_qp_export_gpunetio(struct kinet_qp *qp, struct kinet_gpunetio_qp **dev_qp)
{
	struct kinet_gpunetio_qp d;
	int ret = 0;

	if (!qp)
		return KINET_EINVAL("qp", "NULL");
	if (!dev_qp)
		return KINET_EINVAL("dev_qp", "NULL");
	/* post_lock: no host post slips in, no concurrent export. */
	pthread_mutex_lock(&qp->post_lock);
	if (qp->gpunetio)
		goto out;
	if (qp->dev) {
		KINET_ERR("kinet_qp_export_gpunetio: QP %u is exported for kinet's device API", qp->qpn);
		ret = -EBUSY;
		goto out;
	}
	ret = check_cqs(qp);
	if (!ret)
		ret = qp_fill(qp, &d);
	if (!ret)
		ret = kinet_cuda_export_copy(qp->ctx, &d, sizeof(d), (void **)&qp->gpunetio);
	if (!ret)
		qp->exported = true;
out:
	*dev_qp = qp->gpunetio;
	pthread_mutex_unlock(&qp->post_lock);
	return ret;
}
