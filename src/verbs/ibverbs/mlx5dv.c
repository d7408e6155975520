/*
 * mlx5dv_init_obj's answers, in libibverbs because the objects are its
 * (libmlx5.so.1 forwards through the KINET_VERBS_PRIVATE_0 node).  The
 * rings are the kinet objects' own, ConnectX's layouts: a program that
 * writes WQEs into sq.buf, bumps dbrec[1] and writes the WQE's first 8
 * bytes to bf.reg gets them executed by the software NIC, as a ConnectX
 * would (bf.size is 0: the register is one 8-byte doorbell, not two
 * alternating BlueFlame buffers).  A QP driven this way must not also be
 * posted to with ibv_post_send: each keeps its own producer index.
 */
#include <errno.h>
#include <infiniband/mlx5dv.h>
#include <string.h>

#include "front.h"
#include "verbs.h"

static int qp_obj(struct ibv_qp *ibqp, struct mlx5dv_qp *out)
{
	struct kinet_verbs_qp *qp = kinet_verbs_qp(ibqp);
	struct kinet_front_qp_rings r;
	int ret = kinet_front_qp_rings(qp->kqp, &r);

	if (ret)
		return kinet_verbs_errno(ret);
	memset(out, 0, sizeof(*out));
	out->dbrec = (__be32 *)r.dbrec;
	out->sq.buf = r.sq;
	out->sq.wqe_cnt = r.sq_bbs;
	out->sq.stride = 64;
	out->rq.buf = r.rq;
	out->rq.wqe_cnt = r.rq_depth;
	out->rq.stride = r.rq_stride;
	out->bf.reg = r.db_reg;
	out->bf.size = 0;
	out->sqn = ibqp->qp_num;
	out->rqn = ibqp->qp_num;
	return 0;
}

static int cq_obj(struct ibv_cq *ibcq, struct mlx5dv_cq *out)
{
	struct kinet_front_cq_rings r;
	int ret = kinet_front_cq_rings(kinet_verbs_cq(ibcq)->kcq, &r);

	if (ret)
		return kinet_verbs_errno(ret);
	memset(out, 0, sizeof(*out));
	out->buf = r.ring;
	out->dbrec = (__be32 *)r.dbrec;
	out->cqe_cnt = r.depth;
	out->cqe_size = 64;
	out->cq_uar = NULL; /* no arm doorbell: use ibv_req_notify_cq */
	out->cqn = kinet_cq_num(kinet_verbs_cq(ibcq)->kcq);
	return 0;
}

static int srq_obj(struct ibv_srq *ibsrq, struct mlx5dv_srq *out)
{
	struct kinet_verbs_srq *srq = (struct kinet_verbs_srq *)ibsrq;
	struct kinet_srq_rings r;
	int ret = kinet_srq_rings(srq->ksrq, &r);

	if (ret)
		return kinet_verbs_errno(ret);
	memset(out, 0, sizeof(*out));
	out->buf = r.buf;
	out->dbrec = (__be32 *)(uintptr_t)r.dbrec;
	out->stride = r.stride;
	out->head = r.head;
	out->tail = r.tail;
	out->comp_mask = MLX5DV_SRQ_MASK_SRQN;
	out->srqn = kinet_srq_num(srq->ksrq);
	return 0;
}

KINET_VERBS_EXPORT int kinet_verbs_mlx5_init_obj(struct mlx5dv_obj *obj, uint64_t type);
KINET_VERBS_EXPORT int kinet_verbs_mlx5_init_obj(struct mlx5dv_obj *obj, uint64_t type)
{
	const uint64_t known = MLX5DV_OBJ_QP | MLX5DV_OBJ_CQ | MLX5DV_OBJ_SRQ | MLX5DV_OBJ_PD;
	int ret = 0;

	if (!obj)
		return EINVAL;
	if (type & ~known)
		return EOPNOTSUPP;
	if (!ret && (type & MLX5DV_OBJ_QP))
		ret = qp_obj(obj->qp.in, obj->qp.out);
	if (!ret && (type & MLX5DV_OBJ_CQ))
		ret = cq_obj(obj->cq.in, obj->cq.out);
	if (!ret && (type & MLX5DV_OBJ_SRQ))
		ret = srq_obj(obj->srq.in, obj->srq.out);
	if (!ret && (type & MLX5DV_OBJ_PD)) {
		obj->pd.out->pdn = obj->pd.in->handle;
		obj->pd.out->comp_mask = 0;
	}
	return ret;
}

KINET_VERBS_EXPORT int kinet_verbs_mlx5_query_device(struct ibv_context *context,
						     struct mlx5dv_context *attrs);
KINET_VERBS_EXPORT int kinet_verbs_mlx5_query_device(struct ibv_context *context,
						     struct mlx5dv_context *attrs)
{
	if (!context || !attrs)
		return EINVAL;
	/* Nothing beyond the base answers: comp_mask says which of the asked
	 * fields were filled, none. */
	attrs->version = 0;
	attrs->flags = MLX5DV_CONTEXT_FLAGS_CQE_V1;
	attrs->comp_mask = 0;
	return 0;
}

KINET_VERBS_EXPORT bool kinet_verbs_mlx5_is_supported(struct ibv_device *device);
KINET_VERBS_EXPORT bool kinet_verbs_mlx5_is_supported(struct ibv_device *device)
{
	return device && !strcmp(device->name, "kinet0");
}
