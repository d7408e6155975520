/*
 * Mesh: QPs to every rank of a job in one collective call (kinet/mesh.h).
 *
 * Slot (peer, i) of the mesh is QP i to rank peer.  Rank r publishes, with
 * one allgather, the infos of all its QPs ordered [peer][i]; it connects
 * its QP (p, i) to entry [r][i] of rank p's block.  A QP to the rank itself
 * is connected to itself (loopback, as an RC QP may be): sends on it land
 * in its own receive queue, as they would in rank p's QP (p, i) for any
 * other p, so code addressing "peer p" needs no special case.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "driver.h"
#include "kinet/mesh.h"

struct mesh_qp {
	struct kinet_qp *qp;
	struct kinet_cq *scq, *rcq;
};

struct kinet_mesh {
	struct kinet_ctx *ctx;
	int rank, size, qpp;
	struct mesh_qp *q;	       /* [peer * qpp + i] */
	struct kinet_dev_qp ***export; /* [i]: device arrays */
};

void kinet_mesh_attr_init(struct kinet_mesh_attr *attr)
{
	if (!attr)
		return;
	memset(attr, 0, sizeof(*attr));
	attr->size = sizeof(*attr);
	attr->qps_per_peer = 1;
	kinet_qp_attr_init(&attr->qp);
	attr->with_recv = 1;
}

static void mq_destroy(struct mesh_qp *m)
{
	if (m->qp)
		kinet_qp_destroy(m->qp);
	if (m->scq)
		kinet_cq_destroy(m->scq);
	if (m->rcq)
		kinet_cq_destroy(m->rcq);
	memset(m, 0, sizeof(*m));
}

static int mq_create(struct kinet_ctx *ctx, const struct kinet_mesh_attr *a, struct mesh_qp *m)
{
	struct kinet_qp_attr qa = a->qp;
	/* Exported QPs need CQs deeper than their queues (kinet_qp_export). */
	struct kinet_cq_attr ca = {.depth = a->cq_depth ? a->cq_depth : 2 * qa.sq_depth};
	int ret = kinet_cq_create(ctx, &ca, &m->scq);

	if (!ret && a->with_recv) {
		ca.depth = a->cq_depth ? a->cq_depth : 2 * qa.rq_depth;
		ret = kinet_cq_create(ctx, &ca, &m->rcq);
	}
	if (!ret) {
		qa.send_cq = m->scq;
		qa.recv_cq = m->rcq;
		ret = kinet_qp_create(ctx, &qa, &m->qp);
	}
	if (ret)
		mq_destroy(m);
	return ret;
}

int kinet_mesh_destroy(struct kinet_mesh *mesh)
{
	if (!mesh)
		return 0;
	for (int i = 0; i < mesh->size * mesh->qpp; i++)
		mq_destroy(&mesh->q[i]);
	for (int i = 0; i < mesh->qpp; i++)
		if (mesh->export[i])
			kinet_cuda_free(mesh->ctx, mesh->export[i]);
	free(mesh->q);
	free(mesh->export);
	free(mesh);
	return 0;
}

static int mesh_connect(struct kinet_mesh *m, const struct kinet_mesh_attr *a, struct kinet_boot *boot)
{
	size_t per_rank = (size_t)m->size * (size_t)m->qpp;
	struct kinet_qp_info *mine = calloc(per_rank, sizeof(*mine));
	struct kinet_qp_info *all = calloc(per_rank * (size_t)m->size, sizeof(*all));
	int ret = mine && all ? 0 : -ENOMEM;

	for (size_t k = 0; !ret && k < per_rank; k++)
		ret = mq_create(m->ctx, a, &m->q[k]);
	for (size_t k = 0; !ret && k < per_rank; k++)
		ret = kinet_qp_pack(m->q[k].qp, &mine[k]);
	if (!ret)
		ret = kinet_boot_allgather(boot, mine, all, per_rank * sizeof(*mine));
	for (int p = 0; !ret && p < m->size; p++) {
		for (int i = 0; !ret && i < m->qpp; i++) {
			struct kinet_qp *qp = m->q[(size_t)p * m->qpp + i].qp;

			ret = kinet_qp_connect(qp, &all[(size_t)p * per_rank + (size_t)m->rank * m->qpp + i]);
		}
	}
	free(mine);
	free(all);
	return ret;
}

int kinet_mesh_create(struct kinet_ctx *ctx, struct kinet_boot *boot, const struct kinet_mesh_attr *attr,
		      struct kinet_mesh **out)
{
	struct kinet_mesh_attr a;
	struct kinet_mesh *m;
	int ret;

	if (!out)
		return KINET_EINVAL("mesh", "NULL");
	*out = NULL;
	if (!ctx)
		return KINET_EINVAL("ctx", "NULL");
	if (!boot)
		return KINET_EINVAL("boot", "NULL");
	if (!attr)
		kinet_mesh_attr_init(&a);
	else if ((ret = kinet_attr_read("attr", attr, sizeof(a), &a)))
		return ret;
	attr = &a;
	if (attr->qps_per_peer < 1 || attr->qps_per_peer > 1024)
		return KINET_EINVAL("attr->qps_per_peer", "must be 1..1024");
	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	m->ctx = ctx;
	m->rank = kinet_boot_rank(boot);
	m->size = kinet_boot_size(boot);
	m->qpp = attr->qps_per_peer;
	m->q = calloc((size_t)m->size * (size_t)m->qpp, sizeof(*m->q));
	m->export = calloc((size_t)m->qpp, sizeof(*m->export));
	ret = m->q && m->export ? mesh_connect(m, attr, boot) : -ENOMEM;
	/* Everyone RTS before anyone posts; a failed rank fails it too. */
	if (!ret)
		ret = kinet_boot_barrier(boot);
	if (ret) {
		KINET_ERR("kinet_mesh_create: rank %d: %s", m->rank, kinet_strerror(ret));
		kinet_mesh_destroy(m);
		return ret;
	}
	*out = m;
	return 0;
}

int kinet_mesh_rank(const struct kinet_mesh *mesh)
{
	return mesh ? mesh->rank : -1;
}

int kinet_mesh_size(const struct kinet_mesh *mesh)
{
	return mesh ? mesh->size : 0;
}

static const struct mesh_qp *slot(const struct kinet_mesh *m, int peer, int index)
{
	if (!m || peer < 0 || peer >= m->size || index < 0 || index >= m->qpp)
		return NULL;
	return &m->q[(size_t)peer * m->qpp + index];
}

struct kinet_qp *kinet_mesh_qp(const struct kinet_mesh *mesh, int peer, int index)
{
	const struct mesh_qp *s = slot(mesh, peer, index);

	return s ? s->qp : NULL;
}

struct kinet_cq *kinet_mesh_send_cq(const struct kinet_mesh *mesh, int peer, int index)
{
	const struct mesh_qp *s = slot(mesh, peer, index);

	return s ? s->scq : NULL;
}

struct kinet_cq *kinet_mesh_recv_cq(const struct kinet_mesh *mesh, int peer, int index)
{
	const struct mesh_qp *s = slot(mesh, peer, index);

	return s ? s->rcq : NULL;
}

int kinet_mesh_export(struct kinet_mesh *mesh, int index, struct kinet_dev_qp ***dev_qps)
{
	struct kinet_dev_qp **host, **dev;
	int ret = 0;

	if (!mesh)
		return KINET_EINVAL("mesh", "NULL");
	if (!dev_qps)
		return KINET_EINVAL("dev_qps", "NULL");
	if (index < 0 || index >= mesh->qpp)
		return KINET_EINVAL("index", "out of range");
	if (mesh->export[index]) {
		*dev_qps = mesh->export[index];
		return 0;
	}
	host = calloc((size_t)mesh->size, sizeof(*host));
	if (!host)
		return -ENOMEM;
	for (int p = 0; !ret && p < mesh->size; p++)
		ret = kinet_qp_export(kinet_mesh_qp(mesh, p, index), &host[p]);
	dev = ret ? NULL : kinet_cuda_alloc(mesh->ctx, (size_t)mesh->size * sizeof(*dev));
	if (!ret && !dev)
		ret = -ENOMEM;
	if (!ret && (ret = kinet_cuda_copy_in(mesh->ctx, dev, host, (size_t)mesh->size * sizeof(*dev))))
		kinet_cuda_free(mesh->ctx, dev);
	free(host);
	if (ret)
		return ret;
	mesh->export[index] = dev;
	*dev_qps = dev;
	return 0;
}

int kinet_mesh_exchange_mr(struct kinet_boot *boot, const struct kinet_mr *mr, struct kinet_mr_info *all)
{
	struct kinet_mr_info mine;
	int ret;

	if (!boot)
		return KINET_EINVAL("boot", "NULL");
	if (!all)
		return KINET_EINVAL("all", "NULL");
	ret = kinet_mr_pack(mr, &mine);
	if (ret)
		return ret;
	return kinet_boot_allgather(boot, &mine, all, sizeof(mine));
}
