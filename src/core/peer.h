/*
 * The peer path (peer.c): windows GPUs of one host use to reach each
 * other's memory without the provider.
 */
#ifndef KINET_CORE_PEER_H
#define KINET_CORE_PEER_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kinet/device/types.h"
#include "kinet/kinet.h"
#include "kinet/wire.h"

struct kinet_ctx;
struct kinet_qp;
struct kinet_cq;
struct kinet_mr;

/* ---- peer path (peer.c) ---- */
struct kinet_peer_link;
/* Process-wide list of open contexts, where peer QPs find their target. */
int kinet_peer_ctx_add(struct kinet_ctx *ctx);
/* Revokes the windows of links into ctx and forgets it (ctx close). */
void kinet_peer_ctx_remove(struct kinet_ctx *ctx);
/* Whether a QP numbered qpn exists in an open context of this process. */
bool kinet_peer_process_has_qp(uint32_t qpn);
/* Gives a connected, exported QP its window table when the peer is
 * reachable; 0, or -EHOSTUNREACH under KINET_P2P=force when it is not. */
int kinet_peer_qp_attach(struct kinet_qp *qp);
void kinet_peer_qp_detach(struct kinet_qp *qp);
void kinet_peer_mr_added(struct kinet_mr *mr);
/* Zeroes mr's window keys everywhere before deregistration completes. */
void kinet_peer_mr_revoke(struct kinet_mr *mr);
/* The window through which viewer's device code reaches a region of this
 * process, or false when it cannot. */
bool kinet_peer_window_in_process(const struct kinet_ctx *viewer, uint64_t addr, uint64_t length,
				  uint32_t access, enum kinet_mem_type type, int cuda_device,
				  struct kinet_dev_window *w);
/* Remote windows of a QP whose transport delivers them (peer_hello): added
 * by key, revoked by key (0: all, and the QP leaves the peer path), and the
 * first table complete (ok) or refused. */
void kinet_peer_remote_window_add(struct kinet_qp *qp, uint32_t key, const struct kinet_dev_window *w);
void kinet_peer_remote_window_revoke(struct kinet_qp *qp, uint32_t key);
void kinet_peer_remote_ready(struct kinet_qp *qp, bool ok);
/* A device-usable pointer to [addr, addr+length) of qp's target, whose
 * device code may use it as long as the region stays registered (what
 * nvshmem_ptr gives): 0, or -ENOENT when qp has no peer path or no live
 * window keyed rkey holds the range with every right in access. */
int kinet_peer_qp_remote_ptr(struct kinet_qp *qp, uint64_t addr, uint64_t length, uint32_t rkey,
			     uint32_t access, void **ptr);

#endif /* KINET_CORE_PEER_H */
