/*
 * What the verbs front door (src/verbs/) uses of core beyond the public API
 * (front.c).  Layers above core include this and kinet/kinet.h only; the
 * layer check holds them to it.
 */
#ifndef KINET_CORE_FRONT_H
#define KINET_CORE_FRONT_H

#include <stdbool.h>
#include <stdint.h>

#include "env.h"
#include "kinet/kinet.h"

/* The QPN the context gives its next QP (24 bits, not 0).  Verbs peers find
 * a QP by its number alone, so the front door puts its directory's slot in
 * the top byte; call it before the first QP is created. */
void kinet_ctx_set_qpn_base(struct kinet_ctx *ctx, uint32_t base);

/* A QP's queues as the host sees them, ConnectX's layouts: what
 * mlx5dv_init_obj hands a program that writes its own WQEs. */
struct kinet_front_qp_rings {
	void *sq; /* sq_bbs basic blocks of 64 bytes */
	uint32_t sq_bbs;
	void *rq; /* rq_depth WQEs of rq_stride bytes, or NULL */
	uint32_t rq_depth;
	uint32_t rq_stride;
	uint32_t *dbrec; /* [0] receive counter, [1] send counter (big-endian) */
	void *db_reg;	 /* 8-byte doorbell register the engine watches */
};
int kinet_front_qp_rings(struct kinet_qp *qp, struct kinet_front_qp_rings *rings);

struct kinet_front_cq_rings {
	void *ring; /* depth CQEs of 64 bytes */
	uint32_t depth;
	uint32_t *dbrec; /* [0] big-endian 24-bit consumer index */
};
int kinet_front_cq_rings(struct kinet_cq *cq, struct kinet_front_cq_rings *rings);

/* Whether the CQ holds a CQE its consumer has not taken (by the consumer
 * index in the doorbell record, which kinet_cq_poll and mlx5 pollers both
 * write): the completion channel's test. */
bool kinet_front_cq_pending(struct kinet_cq *cq);

/* Which carriers the next kinet_qp_pack of this thread opens, where
 * $KINET_TRANSPORT leaves it to kinet (auto): the front door packs a QP
 * when a peer asks for it and knows from where the peer asks (this host:
 * node; another address: ofi), which kinet's own guess (ranks of a
 * launched job) cannot know.  kinet_front_pack_carriers_take() is the
 * soft provider's side: true (and the wish, then cleared) when one was
 * set. */
void kinet_front_pack_carriers(bool node, bool ofi);
bool kinet_front_pack_carriers_take(bool *node, bool *ofi);

/* Above 0 while this thread is inside kinet's calls into libfabric
 * (fabric_guard.c): the front door lists no device then. */
int kinet_fabric_call_depth(void);

#endif /* KINET_CORE_FRONT_H */
