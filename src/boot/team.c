/*
 * Team: the descriptor device collectives run on (kinet/team.h,
 * kinet/device/coll/types.h, docs/architecture/collectives.md).
 *
 * One region per rank, the same size on every rank: signal words, the
 * barrier epochs, then the heap.  Created, registered and exchanged in one
 * collective call over a mesh; a rank whose mesh QP took the peer path
 * (docs/PEER_PATH.md) is reached through the pointer its window gives
 * (kinet_peer_qp_remote_ptr), every other through its QP.  The pointers
 * stay valid for the team's life: the regions are the team's own and go
 * only after the barrier of kinet_team_destroy.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "driver.h"
#include "kinet/device/coll/types.h"
#include "kinet/team.h"

#define TEAM_MAX_SLOTS 4096u
#define TEAM_MAX_LANES 1024u
#define TEAM_ACCESS                                                                                          \
	(KINET_ACCESS_LOCAL_WRITE | KINET_ACCESS_REMOTE_WRITE | KINET_ACCESS_REMOTE_READ |                   \
	 KINET_ACCESS_REMOTE_ATOMIC)

struct kinet_team {
	struct kinet_ctx *ctx;
	struct kinet_boot *boot;
	int rank, size;
	uint8_t *region; /* device-usable (GPU memory, or host memory) */
	size_t region_bytes;
	struct kinet_mr *mr;
	struct kinet_dev_team host;	   /* what the device descriptor holds */
	struct kinet_dev_team_peer *peers; /* host copy of host.peer */
	struct kinet_dev_team *dev;
	struct kinet_dev_team_peer *dev_peers;
};

void kinet_team_attr_init(struct kinet_team_attr *attr)
{
	if (!attr)
		return;
	memset(attr, 0, sizeof(*attr));
	attr->size = sizeof(*attr);
	attr->slots = 16;
	attr->lanes = 8;
	attr->map_peers = 1;
}

static void team_free(struct kinet_team *t)
{
	if (t->dev)
		kinet_cuda_free(t->ctx, t->dev);
	if (t->dev_peers)
		kinet_cuda_free(t->ctx, t->dev_peers);
	if (t->mr)
		kinet_mr_dereg(t->mr);
	if (t->region)
		kinet_cuda_free(t->ctx, t->region);
	free(t->peers);
	free(t);
}

static int check_attr(const struct kinet_mesh *mesh, const struct kinet_team_attr *a)
{
	if (!a->heap_bytes)
		return KINET_EINVAL("attr->heap_bytes", "0");
	if (a->slots < 1 || a->slots > TEAM_MAX_SLOTS)
		return KINET_EINVAL("attr->slots", "must be 1..4096");
	if (a->lanes < 1 || a->lanes > TEAM_MAX_LANES)
		return KINET_EINVAL("attr->lanes", "must be 1..1024");
	for (int p = 0; p < kinet_mesh_size(mesh); p++) {
		struct kinet_qp *qp = kinet_mesh_qp(mesh, p, a->qp_index);

		if (!qp)
			return KINET_EINVAL("attr->qp_index", "out of the mesh's range");
		/* Every block of a kernel may post to a peer's QP at once. */
		if (qp->attr.sharing != KINET_SHARE_GPU)
			return KINET_EINVAL("mesh", "its QPs must be shared KINET_SHARE_GPU");
	}
	return 0;
}

/* Region layout (kinet/device/coll/types.h); sizes checked for overflow. */
static int layout(struct kinet_team *t, const struct kinet_team_attr *a)
{
	uint64_t words = ((uint64_t)a->slots + a->lanes) * (uint64_t)t->size + a->lanes;
	uint64_t heap_off =
		(words * 8 + KINET_DEV_TEAM_HEAP_ALIGN - 1) & ~(uint64_t)(KINET_DEV_TEAM_HEAP_ALIGN - 1);

	if (a->heap_bytes > SIZE_MAX - heap_off - KINET_DEV_TEAM_HEAP_ALIGN)
		return KINET_EINVAL("attr->heap_bytes", "too large");
	t->region_bytes = (size_t)heap_off + ((a->heap_bytes + 255) & ~(size_t)255);
	t->host.rank = t->rank;
	t->host.size = t->size;
	t->host.slots = a->slots;
	t->host.lanes = a->lanes;
	t->host.heap_offset = heap_off;
	t->host.heap_bytes = a->heap_bytes;
	return 0;
}

/* Each rank's region descriptor; the QP and, where its peer path has a
 * window on the whole region, the pointer to it. */
static int peers_fill(struct kinet_team *t, struct kinet_mesh *mesh, const struct kinet_team_attr *a)
{
	struct kinet_mr_info *all = calloc((size_t)t->size, sizeof(*all));
	struct kinet_dev_qp **dev_qps = NULL;
	struct kinet_dev_qp **host_qps = calloc((size_t)t->size, sizeof(*host_qps));
	int ret = all && host_qps ? 0 : -ENOMEM;

	if (!ret)
		ret = kinet_mesh_export(mesh, a->qp_index, &dev_qps);
	/* The device array holds the descriptors kinet_qp_export returned
	 * (the same pointer on a second call). */
	for (int p = 0; !ret && p < t->size; p++)
		ret = kinet_qp_export(kinet_mesh_qp(mesh, p, a->qp_index), &host_qps[p]);
	if (!ret)
		ret = kinet_mesh_exchange_mr(t->boot, t->mr, all);
	/* Every rank registered its region before anyone looks for windows:
	 * over the node transport a registration returns once its window
	 * reached every subscriber. */
	if (!ret)
		ret = kinet_boot_barrier(t->boot);
	for (int p = 0; !ret && p < t->size; p++) {
		struct kinet_dev_team_peer *x = &t->peers[p];
		void *ptr = NULL;

		x->qp = host_qps[p];
		x->addr = all[p].addr;
		x->rkey = all[p].rkey;
		if (all[p].length != t->region_bytes) {
			ret = KINET_EINVAL("kinet_team_create", "ranks disagree on the team's attributes");
			break;
		}
		if (p == t->rank)
			x->mapped = t->region; /* this rank's own memory */
		else if (a->map_peers &&
			 !kinet_peer_qp_remote_ptr(
				 kinet_mesh_qp(mesh, p, a->qp_index), all[p].addr, all[p].length, all[p].rkey,
				 KINET_ACCESS_REMOTE_WRITE | KINET_ACCESS_REMOTE_ATOMIC, &ptr))
			x->mapped = ptr;
		KINET_INFO("team rank %d: rank %d %s", t->rank, p,
			   x->mapped ? "mapped (stores)" : "through its QP (software NIC)");
	}
	free(all);
	free(host_qps);
	return ret;
}

static int team_export_dev(struct kinet_team *t)
{
	size_t pbytes = (size_t)t->size * sizeof(*t->peers);
	int ret;

	t->dev_peers = kinet_cuda_alloc(t->ctx, pbytes);
	t->dev = kinet_cuda_alloc(t->ctx, sizeof(*t->dev));
	if (!t->dev_peers || !t->dev)
		return -ENOMEM;
	t->host.base = t->region;
	t->host.lkey = kinet_mr_lkey(t->mr);
	t->host.barrier_epoch = (uint64_t *)(void *)(t->region + ((uint64_t)t->host.slots + t->host.lanes) *
									 (uint64_t)t->size * 8);
	t->host.peer = t->dev_peers;
	ret = kinet_cuda_copy_in(t->ctx, t->dev_peers, t->peers, pbytes);
	if (!ret)
		ret = kinet_cuda_copy_in(t->ctx, t->dev, &t->host, sizeof(t->host));
	return ret;
}

int kinet_team_create(struct kinet_boot *boot, struct kinet_mesh *mesh, const struct kinet_team_attr *attr,
		      struct kinet_team **out)
{
	struct kinet_team_attr a;
	struct kinet_team *t;
	int ret;

	if (!out)
		return KINET_EINVAL("team", "NULL");
	*out = NULL;
	if (!boot || !mesh || !attr)
		return KINET_EINVAL(!boot ? "boot" : !mesh ? "mesh" : "attr", "NULL");
	if ((ret = kinet_attr_read("attr", attr, sizeof(a), &a)))
		return ret;
	attr = &a;
	ret = check_attr(mesh, attr);
	if (ret)
		return ret;
	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->ctx = kinet_mesh_qp(mesh, 0, attr->qp_index)->ctx;
	t->boot = boot;
	t->rank = kinet_mesh_rank(mesh);
	t->size = kinet_mesh_size(mesh);
	if (t->rank != kinet_boot_rank(boot) || t->size != kinet_boot_size(boot))
		ret = KINET_EINVAL("mesh", "not made with this bootstrap");
	if (!ret)
		ret = layout(t, attr);
	if (!ret) {
		t->peers = calloc((size_t)t->size, sizeof(*t->peers));
		/* Zeroed: signal words and epochs start at 0. */
		t->region = kinet_cuda_alloc(t->ctx, t->region_bytes);
		ret = t->peers && t->region ? 0 : -ENOMEM;
	}
	if (!ret)
		ret = kinet_mr_reg(t->ctx, t->region, t->region_bytes, TEAM_ACCESS, &t->mr);
	if (!ret)
		ret = peers_fill(t, mesh, attr);
	if (!ret)
		ret = team_export_dev(t);
	/* Everyone's descriptor is ready before anyone's kernel signals. */
	if (!ret)
		ret = kinet_boot_barrier(boot);
	if (ret) {
		KINET_ERR("kinet_team_create: rank %d: %s", t->rank, kinet_strerror(ret));
		team_free(t);
		return ret;
	}
	*out = t;
	return 0;
}

int kinet_team_destroy(struct kinet_team *team)
{
	int ret;

	if (!team)
		return 0;
	ret = kinet_boot_barrier(team->boot);
	team_free(team);
	return ret;
}

int kinet_team_export(struct kinet_team *team, struct kinet_dev_team **dev_team)
{
	if (!team)
		return KINET_EINVAL("team", "NULL");
	if (!dev_team)
		return KINET_EINVAL("dev_team", "NULL");
	*dev_team = team->dev;
	return 0;
}

int kinet_team_rank(const struct kinet_team *team)
{
	return team ? team->rank : -1;
}

int kinet_team_size(const struct kinet_team *team)
{
	return team ? team->size : 0;
}

void *kinet_team_heap(const struct kinet_team *team)
{
	return team ? team->region + team->host.heap_offset : NULL;
}

size_t kinet_team_heap_bytes(const struct kinet_team *team)
{
	return team ? (size_t)team->host.heap_bytes : 0;
}

int kinet_team_peer_mapped(const struct kinet_team *team, int peer)
{
	if (!team || peer < 0 || peer >= team->size)
		return -EINVAL;
	return team->peers[peer].mapped != NULL;
}
