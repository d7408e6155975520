/*
 * Connecting an mlx5 QP: the provider's part of kinet_qp_info (port, LID or
 * GID, active MTU, first PSN; info_blob.c) goes through the same
 * out-of-band exchange and job-wide mesh as the software NIC's, and
 * kinet_qp_connect walks RESET -> INIT -> RTR -> RTS with what a real
 * fabric needs (attr.c computes the values).  And the QP's error state,
 * which the NIC enters by itself.
 */
#include <errno.h>
#include <string.h>

#include "mlx5.h"

#define ROCE_HOP_LIMIT 255 /* RoCE v2 packets are routed: do not cut the path short */

void kinet_mlx5_qp_info(const struct kinet_qp *qp, struct kinet_qp_info *info)
{
	struct kinet_mlx5_ctx *m = kinet_mctx(qp->ctx);
	struct kinet_mlx5_peer_info p;

	memset(&p, 0, sizeof(p));
	p.link_layer = m->port_attr.link_layer;
	p.port = m->port;
	p.mtu = (uint8_t)m->port_attr.active_mtu;
	p.lid = m->port_attr.lid;
	p.psn = kinet_mqp(qp)->psn;
	memcpy(p.gid, m->gid.raw, 16);
	kinet_mlx5_info_pack(&p, info->transport);
}

static int modify(struct kinet_qp *qp, struct ibv_qp_attr *a, int mask, const char *step)
{
	struct kinet_mlx5_ctx *m = kinet_mctx(qp->ctx);
	int rc = m->v->modify_qp(kinet_mqp(qp)->ibqp, a, mask);

	if (rc) {
		KINET_ERR("mlx5: qp %u: %s: ibv_modify_qp: %s%s", qp->qpn, step, strerror(rc),
			  rc == EINVAL && !strcmp(step, "INIT -> RTR") &&
					  m->port_attr.link_layer == IBV_LINK_LAYER_ETHERNET
				  ? " (on RoCE often the GID: see KINET_MLX5_GID_INDEX in docs/MLX5.md)"
				  : "");
		return -rc;
	}
	return 0;
}

static void fill_ah(struct kinet_mlx5_ctx *m, const struct kinet_mlx5_peer_info *r, struct ibv_ah_attr *ah)
{
	bool roce = m->port_attr.link_layer == IBV_LINK_LAYER_ETHERNET;

	memset(ah, 0, sizeof(*ah));
	ah->port_num = m->port;
	ah->sl = (uint8_t)kinet_env_long("KINET_MLX5_SL");
	ah->dlid = roce ? 0 : r->lid;
	/* RoCE always carries a GRH; InfiniBand only toward another subnet
	 * (the GIDs' 64-bit prefixes differ). */
	if (roce || memcmp(r->gid, m->gid.raw, 8)) {
		ah->is_global = 1;
		memcpy(ah->grh.dgid.raw, r->gid, 16);
		ah->grh.sgid_index = (uint8_t)m->gid_index;
		ah->grh.hop_limit = ROCE_HOP_LIMIT;
		ah->grh.traffic_class = (uint8_t)kinet_env_long("KINET_MLX5_TRAFFIC_CLASS");
	}
}

int kinet_mlx5_qp_connect(struct kinet_qp *qp, const struct kinet_qp_info *remote, const char **how)
{
	struct kinet_mlx5_ctx *m = kinet_mctx(qp->ctx);
	struct kinet_mlx5_qp *mq = kinet_mqp(qp);
	struct kinet_mlx5_path_in in;
	struct kinet_mlx5_path path;
	struct kinet_mlx5_peer_info r;
	struct ibv_qp_attr a;
	const char *why;
	int ret;

	if (kinet_mlx5_info_unpack(remote->transport, &r)) {
		KINET_ERR("mlx5: qp %u: peer QP %u's info is not the mlx5 provider's (both ends need "
			  "KINET_PROVIDER=mlx5)",
			  qp->qpn, remote->qpn);
		return -EPROTO;
	}
	if (r.link_layer != m->port_attr.link_layer) {
		KINET_ERR("mlx5: qp %u: peer QP %u is on %s, this QP on %s", qp->qpn, remote->qpn,
			  kinet_mlx5_link_layer_name(r.link_layer),
			  kinet_mlx5_link_layer_name(m->port_attr.link_layer));
		return -EPROTO;
	}
	memset(&in, 0, sizeof(in));
	in.timeout_ms = qp->attr.timeout_ms;
	in.rnr_timeout_ms = qp->attr.rnr_timeout_ms;
	in.local_mtu = m->port_attr.active_mtu;
	in.remote_mtu = r.mtu;
	in.mtu_cap = kinet_env_valid("KINET_MLX5_MTU")
			     ? -1
			     : kinet_mlx5_mtu_parse(kinet_env_str("KINET_MLX5_MTU"));
	in.max_init_rd_atomic = (uint32_t)m->dev_attr.max_qp_init_rd_atom;
	in.max_dest_rd_atomic = (uint32_t)m->dev_attr.max_qp_rd_atom;
	in.timeout_override = (int)kinet_env_long("KINET_MLX5_TIMEOUT");
	in.retry_override = (int)kinet_env_long("KINET_MLX5_RETRY_CNT");
	if (in.mtu_cap < 0) {
		KINET_ERR("mlx5: KINET_MLX5_MTU must be 256, 512, 1024, 2048 or 4096");
		return -EINVAL;
	}
	if (kinet_mlx5_path_compute(&in, &path, &why)) {
		KINET_ERR("mlx5: qp %u: %s", qp->qpn, why);
		return -EINVAL;
	}

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.pkey_index = 0;
	a.port_num = m->port;
	/* The QP lets peers do everything; each region's own rights decide. */
	a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
	ret = modify(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS,
		     "RESET -> INIT");
	if (ret)
		goto reset;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = (enum ibv_mtu)path.path_mtu;
	a.dest_qp_num = remote->qpn;
	a.rq_psn = r.psn;
	a.max_dest_rd_atomic = path.max_dest_rd_atomic;
	a.min_rnr_timer = path.min_rnr_timer;
	fill_ah(m, &r, &a.ah_attr);
	ret = modify(qp, &a,
		     IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
			     IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER,
		     "INIT -> RTR");
	if (ret)
		goto reset;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = mq->psn;
	a.timeout = path.timeout;
	a.retry_cnt = path.retry_cnt;
	a.rnr_retry = path.rnr_retry;
	a.max_rd_atomic = path.max_rd_atomic;
	ret = modify(qp, &a,
		     IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			     IBV_QP_MAX_QP_RD_ATOMIC,
		     "RTR -> RTS");
	if (ret)
		goto reset;
	KINET_INFO("mlx5: qp %u -> QP %u: MTU %u, ACK timeout %u (%llu us x %u tries), RNR %u x %u us",
		   qp->qpn, remote->qpn, kinet_mlx5_mtu_bytes(path.path_mtu), path.timeout,
		   (unsigned long long)kinet_mlx5_ack_timeout_us(path.timeout), path.retry_cnt + 1u,
		   path.rnr_retry, kinet_mlx5_rnr_timer_us(path.min_rnr_timer));
	*how = m->port_attr.link_layer == IBV_LINK_LAYER_ETHERNET ? "mlx5 (RoCE)" : "mlx5 (InfiniBand)";
	return 0;
reset:
	/* Back to RESET, as core leaves the QP, so that a later connect can
	 * try again. */
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RESET;
	m->v->modify_qp(mq->ibqp, &a, IBV_QP_STATE);
	return ret;
}

void kinet_mlx5_qp_error(struct kinet_qp *qp)
{
	struct kinet_mlx5_qp *mq = kinet_mqp(qp);
	struct ibv_qp_attr a;
	int rc;

	if (!mq->ibqp || atomic_exchange(&mq->hw_error, true))
		return;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_ERR;
	rc = kinet_mctx(qp->ctx)->v->modify_qp(mq->ibqp, &a, IBV_QP_STATE);
	if (rc)
		KINET_WARN("mlx5: qp %u: to the error state: ibv_modify_qp: %s", qp->qpn, strerror(rc));
}

void kinet_mlx5_qp_refresh(struct kinet_qp *qp)
{
	struct kinet_mlx5_qp *mq = kinet_mqp(qp);
	struct ibv_qp_init_attr init;
	struct ibv_qp_attr a;
	int state = atomic_load(&qp->state);

	/* Only a connected QP can have been moved by the NIC. */
	if (!mq->ibqp || state == KINET_QPS_ERR || state == KINET_QPS_RESET)
		return;
	if (kinet_mctx(qp->ctx)->v->query_qp(mq->ibqp, &a, IBV_QP_STATE, &init))
		return;
	if (a.qp_state == IBV_QPS_ERR || a.qp_state == IBV_QPS_SQE) {
		atomic_store(&mq->hw_error, true);
		kinet_qp_to_error(qp, "the NIC moved it to the error state");
	}
}
