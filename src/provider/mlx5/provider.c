/*
 * The ConnectX provider: its ops table, registered at load time as
 * "mlx5".  A context opens one port of one mlx5 device (device.c) through
 * rdma-core loaded at run time (dl.c); the NIC executes the WQEs device
 * code and the host write, a progress thread rings the CPU-assisted
 * doorbells and watches the NIC's events (progress.c).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "mlx5.h"

static pthread_mutex_t probe_lock = PTHREAD_MUTEX_INITIALIZER;
static char probe_why[512];

static int mlx5_probe(const char **why)
{
	const struct kinet_mlx5_verbs *v;
	int ret;

	v = kinet_mlx5_verbs_load(why);
	if (!v)
		return -ENODEV;
	pthread_mutex_lock(&probe_lock);
	ret = kinet_mlx5_device_probe(v, probe_why, sizeof(probe_why));
	*why = ret ? probe_why : NULL;
	pthread_mutex_unlock(&probe_lock);
	return ret ? -ENODEV : 0;
}

static int mlx5_ctx_open(struct kinet_ctx *ctx, int nthreads)
{
	struct kinet_mlx5_ctx *m = kinet_mctx(ctx);
	char why[512];
	const char *w;
	int ret;

	(void)nthreads; /* the NIC executes; one progress thread rings */
	pthread_mutex_init(&m->lock, NULL);
	m->v = kinet_mlx5_verbs_load(&w);
	if (!m->v) {
		KINET_ERR("provider mlx5: %s", w);
		return -ENODEV;
	}
	ret = kinet_mlx5_device_open(m, ctx->cuda_device, why, sizeof(why));
	if (ret) {
		KINET_ERR("provider mlx5: %s", why);
		return ret == -ENOMEM ? ret : -ENODEV;
	}
	m->cq_domain = kinet_mlx5_domain(m, NULL);
	ret = m->cq_domain ? kinet_mlx5_progress_start(m) : -ENOMEM;
	if (ret) {
		if (m->cq_domain)
			m->v->dealloc_pd(m->cq_domain);
		m->cq_domain = NULL;
		kinet_mlx5_device_close(m);
		return ret;
	}
	{
		char gid[64];

		kinet_mlx5_gid_format(m->gid.raw, gid, sizeof(gid));
		KINET_INFO("mlx5: %s port %u, %s, active MTU %u, GID %d (%s), LID %u, firmware %s", m->device,
			   m->port, kinet_mlx5_link_layer_name(m->port_attr.link_layer),
			   kinet_mlx5_mtu_bytes(m->port_attr.active_mtu), m->gid_index, gid, m->port_attr.lid,
			   m->dev_attr.fw_ver);
	}
	return 0;
}

static void mlx5_ctx_stop(struct kinet_ctx *ctx)
{
	kinet_mlx5_progress_stop(kinet_mctx(ctx));
}

static void mlx5_ctx_close(struct kinet_ctx *ctx)
{
	struct kinet_mlx5_ctx *m = kinet_mctx(ctx);

	if (m->cq_domain)
		m->v->dealloc_pd(m->cq_domain);
	m->cq_domain = NULL;
	kinet_mlx5_device_close(m);
	pthread_mutex_destroy(&m->lock);
}

static void mlx5_qp_destroy(struct kinet_qp *qp)
{
	kinet_mlx5_progress_remove(qp);
}

static void mlx5_qp_disconnect(struct kinet_qp *qp)
{
	(void)qp;
}

/* After a host doorbell, a state change: the host moved the QP to the
 * error state (kinet_qp_set_error), so the NIC flushes its work too. */
static void mlx5_doorbell(struct kinet_qp *qp)
{
	if (atomic_load(&qp->state) == KINET_QPS_ERR)
		kinet_mlx5_qp_error(qp);
}

/* Every byte goes through the NIC: no peer path. */
static enum kinet_peer_reach mlx5_peer_reach(const struct kinet_qp *qp)
{
	(void)qp;
	return KINET_PEER_REACH_NONE;
}

static int mlx5_peer_hello(struct kinet_qp *qp)
{
	(void)qp;
	return -EOPNOTSUPP;
}

static void mlx5_peer_publish(struct kinet_mr *mr, bool add)
{
	(void)mr;
	(void)add;
}

static void mlx5_peer_withdraw(struct kinet_ctx *ctx, struct kinet_qp *qp)
{
	(void)ctx;
	(void)qp;
}

/* Ethernet queues need raw-packet QPs (IBV_QPT_RAW_PACKET), flow steering
 * and the NIC's clock: not done for ConnectX yet. */
static int mlx5_eth_port_open(struct kinet_eth_port *port)
{
	KINET_ERR("kinet_eth_port_open(%s): raw-packet QPs are not implemented for ConnectX (mlx5) yet; "
		  "use the software NIC (KINET_PROVIDER=soft)",
		  port->ifname);
	return -EOPNOTSUPP;
}

static const struct kinet_provider_ops mlx5_ops = {
	.ctx_size = sizeof(struct kinet_mlx5_ctx),
	.qp_size = sizeof(struct kinet_mlx5_qp),
	.mr_size = sizeof(struct kinet_mlx5_mr),
	.cq_size = sizeof(struct kinet_mlx5_cq),
	/* The GPU writes the doorbell record and the UAR itself: no CPU on
	 * the path.  A QP whose UAR page the GPU cannot map falls back to
	 * CPU-assisted (queue.c). */
	.db_auto = KINET_DB_GPU,
	.reads_device_memory = true,
	.probe = mlx5_probe,
	.describe = kinet_mlx5_describe,
	.mr_reg = kinet_mlx5_mr_reg,
	.mr_dereg = kinet_mlx5_mr_dereg,
	.ring = kinet_mlx5_ring,
	.qp_refresh = kinet_mlx5_qp_refresh,
	.cq_error = kinet_mlx5_cq_error,
	.ctx_open = mlx5_ctx_open,
	.ctx_stop = mlx5_ctx_stop,
	.ctx_close = mlx5_ctx_close,
	.ctx_pause = NULL, /* a NIC cannot be paused */
	.cq_create = kinet_mlx5_cq_create,
	.cq_destroy = kinet_mlx5_cq_destroy,
	.qp_create = kinet_mlx5_qp_create,
	.qp_fini = kinet_mlx5_qp_fini,
	.qp_add = kinet_mlx5_progress_add,
	.qp_destroy = mlx5_qp_destroy,
	.qp_info = kinet_mlx5_qp_info,
	.qp_connect = kinet_mlx5_qp_connect,
	.qp_disconnect = mlx5_qp_disconnect,
	.doorbell = mlx5_doorbell,
	.eth_port_open = mlx5_eth_port_open,
	.peer_reach = mlx5_peer_reach,
	.peer_hello = mlx5_peer_hello,
	.peer_publish = mlx5_peer_publish,
	.peer_withdraw = mlx5_peer_withdraw,
};

static struct kinet_provider mlx5_provider = {.name = "mlx5", .ops = &mlx5_ops};

__attribute__((constructor)) static void mlx5_register(void)
{
	kinet_provider_register(&mlx5_provider);
}
