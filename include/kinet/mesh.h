/*
 * kinet mesh: queue pairs to every rank of a job in one collective call,
 * the way doca_gpu_verbs_create_qp_hl sets up one QP, for a whole job.
 *
 * Every rank calls the same functions in the same order (they use the
 * bootstrap's collectives, include/kinet/boot.h).  Functions return 0 or a
 * negative errno, as the rest of the host API.
 */
#ifndef KINET_MESH_H
#define KINET_MESH_H

#include "kinet/boot.h"
#include "kinet/kinet.h"

#ifdef __cplusplus
extern "C" {
#endif

struct kinet_mesh;

struct kinet_mesh_attr {
	uint32_t size;		 /* sizeof(struct kinet_mesh_attr), or 0 (kinet_ctx(3), "Attributes") */
	int qps_per_peer;	 /* QPs to each rank (itself included); >= 1 */
	struct kinet_qp_attr qp; /* template; send_cq/recv_cq are ignored */
	uint32_t cq_depth;	 /* CQEs of each CQ; 0: twice sq_depth (send), rq_depth (recv) */
	int with_recv;		 /* give every QP a receive queue and recv CQ */
};

/* Fills attr with the defaults: one QP per peer, kinet_qp_attr_init(),
 * CQ depth from the queue depths, receive queues on. */
KINET_API void kinet_mesh_attr_init(struct kinet_mesh_attr *attr);

/*
 * kinet_mesh_create - connect this rank to every rank of the job
 *
 * ctx:  the context the QPs, CQs and carriers belong to.
 * boot: the job (kinet_boot_init); used for allgather and barrier only, the
 *       mesh does not keep it past the call.
 * attr: NULL for the defaults.
 * mesh: receives the new object; NULL on failure.
 *
 * Creates attr->qps_per_peer QPs for each rank, each with its own send CQ
 * (and recv CQ with attr->with_recv) so they can be exported and driven
 * independently; exchanges kinet_qp_info with one allgather and connects
 * QP i to rank r with rank r's QP i to this rank (the transport follows
 * $KINET_TRANSPORT: local, node or ofi).  A QP to this rank itself is
 * connected to itself (loopback): what it sends lands in its own receive
 * queue, just as a send to rank r lands in rank r's QP to this rank.  Ends
 * with a barrier: on return every QP of the job is RTS.
 *
 * Errors: -EINVAL (bad arguments), -ENOMEM, the errors of QP/CQ creation
 * and connect (-EHOSTUNREACH: no transport reaches a rank), and those of
 * kinet_boot_allgather (-ETIMEDOUT, -ECONNRESET, ...).  On failure nothing
 * is left behind on this rank; the other ranks fail in their collective.
 */
KINET_API int kinet_mesh_create(struct kinet_ctx *ctx, struct kinet_boot *boot,
				const struct kinet_mesh_attr *attr, struct kinet_mesh **mesh);

/* Destroys the QPs and CQs and frees the mesh (not a collective; call
 * kinet_boot_barrier first so that no peer still targets them).  NULL ok. */
KINET_API int kinet_mesh_destroy(struct kinet_mesh *mesh);

KINET_API int kinet_mesh_rank(const struct kinet_mesh *mesh);
KINET_API int kinet_mesh_size(const struct kinet_mesh *mesh);

/* QP number index (0 <= index < qps_per_peer) to rank peer, and its CQs
 * (recv NULL without receive queues).  NULL for bad arguments. */
KINET_API struct kinet_qp *kinet_mesh_qp(const struct kinet_mesh *mesh, int peer, int index);
KINET_API struct kinet_cq *kinet_mesh_send_cq(const struct kinet_mesh *mesh, int peer, int index);
KINET_API struct kinet_cq *kinet_mesh_recv_cq(const struct kinet_mesh *mesh, int peer, int index);

/*
 * kinet_mesh_export - device descriptors of QP index to every rank
 *
 * dev_qps: receives an array of kinet_mesh_size() struct kinet_dev_qp *,
 *          indexed by rank, in GPU memory when the context has a CUDA
 *          device (host memory otherwise, for host emulation), ready to be
 *          passed to a kernel.  Owned by the mesh, freed with it; the same
 *          array on every call with the same index.
 *
 * Exports each QP (kinet_qp_export).  Errors: -EINVAL, -ENOMEM, and those
 * of kinet_qp_export.
 */
KINET_API int kinet_mesh_export(struct kinet_mesh *mesh, int index, struct kinet_dev_qp ***dev_qps);

/*
 * kinet_mesh_exchange_mr - everyone's packed descriptor of a region
 *
 * boot: the job.
 * mr:   this rank's region (kinet_mr_pack'ed here).
 * all:  receives kinet_boot_size() descriptors, indexed by rank.
 *
 * A collective.  Errors: -EINVAL, and those of kinet_mr_pack and
 * kinet_boot_allgather.
 */
KINET_API int kinet_mesh_exchange_mr(struct kinet_boot *boot, const struct kinet_mr *mr,
				     struct kinet_mr_info *all);

#ifdef __cplusplus
}
#endif

#endif /* KINET_MESH_H */
