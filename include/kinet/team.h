/*
 * kinet team: the job-wide descriptor that device collectives run on
 * (include/kinet/coll.cuh): rank, size, one QP of a mesh per rank, the
 * peers' memory mapped where device code can reach it with its own stores
 * (GPUs of one host), and one symmetric region per rank (signal words and
 * a heap of the same size everywhere).  docs/architecture/collectives.md.
 *
 * Lifetime: kinet_team_create and kinet_team_destroy are collectives (every
 * rank calls them, in the same order as the other collectives of the
 * bootstrap).  The mesh, its context and the bootstrap must outlive the
 * team.  The device descriptor (kinet_team_export) and the heap are valid
 * from creation until kinet_team_destroy, which every rank calls only once
 * its own kernels using the team have finished: destroy waits (barrier)
 * until every rank is there before the region goes, so no peer still
 * writes into it.
 */
#ifndef KINET_TEAM_H
#define KINET_TEAM_H

#include <stddef.h>
#include <stdint.h>

#include "kinet/boot.h"
#include "kinet/kinet.h"
#include "kinet/mesh.h"

#ifdef __cplusplus
extern "C" {
#endif

struct kinet_team;
struct kinet_dev_team;

struct kinet_team_attr {
	uint32_t size;	   /* sizeof(struct kinet_team_attr), or 0 (kinet_ctx(3), "Attributes") */
	size_t heap_bytes; /* symmetric heap of every rank, > 0 */
	uint32_t slots;	   /* signal slots (words per peer); 0: 16 */
	uint32_t lanes;	   /* barrier lanes (groups that may be in barriers at once); 0: 8 */
	int qp_index;	   /* which of the mesh's QPs to each rank: 0 .. qps_per_peer - 1 */
	int map_peers;	   /* 1 (default): reach mapped peers with stores; 0: always the QPs */
};

/* Fills attr with the defaults: its size, heap_bytes 0 (must be set), 16 slots, 8
 * lanes, QP index 0, mapped peers on. */
KINET_API void kinet_team_attr_init(struct kinet_team_attr *attr);

/*
 * kinet_team_create - the team of a job's ranks over a mesh
 *
 * boot: the job; mesh: connected to every rank (kinet_mesh_create) with
 * QPs shared by the whole GPU (attr.qp.sharing = KINET_SHARE_GPU), since
 * every block of a kernel may use them.  A collective.
 *
 * Allocates this rank's region (GPU memory of the mesh's context, host
 * memory for a host-only context), registers it with every remote right,
 * exports the mesh's QPs (kinet_mesh_export), exchanges the regions'
 * descriptors and, for each rank whose QP took the peer path, the pointer
 * through which this rank's device code stores into that rank's region
 * directly.  Ends with a barrier.
 *
 * Errors: -EINVAL (NULL, heap_bytes 0, too many slots or lanes, QP index
 * out of range, a QP not shared KINET_SHARE_GPU), -ENOMEM, and those of
 * kinet_mr_reg, kinet_mesh_export and the bootstrap.  On failure nothing
 * is left behind on this rank.
 */
KINET_API int kinet_team_create(struct kinet_boot *boot, struct kinet_mesh *mesh,
				const struct kinet_team_attr *attr, struct kinet_team **team);

/* A barrier (every rank's kernels using the team are done: each rank
 * calls it after its own have finished), then frees the region and the
 * descriptor.  A collective; NULL is a no-op.  Returns the barrier's error
 * (the team is freed anyway). */
KINET_API int kinet_team_destroy(struct kinet_team *team);

/* The device descriptor (GPU memory; host memory for a host-only context)
 * to pass to kernels; owned by the team, the same on every call. */
KINET_API int kinet_team_export(struct kinet_team *team, struct kinet_dev_team **dev_team);

KINET_API int kinet_team_rank(const struct kinet_team *team);
KINET_API int kinet_team_size(const struct kinet_team *team);
/* This rank's heap (device-usable pointer: GPU memory, or host memory for
 * a host-only context) and its size; heap offsets are the same on every
 * rank. */
KINET_API void *kinet_team_heap(const struct kinet_team *team);
KINET_API size_t kinet_team_heap_bytes(const struct kinet_team *team);
/* 1 when device code reaches rank peer's region with its own stores, 0
 * when it goes through the QP (the software NIC), -EINVAL for a bad
 * argument.  A rank always reaches itself with stores. */
KINET_API int kinet_team_peer_mapped(const struct kinet_team *team, int peer);

#ifdef __cplusplus
}
#endif

#endif /* KINET_TEAM_H */
