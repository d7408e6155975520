/*
 * What a provider (src/provider/<name>) and the bootstrap (src/boot) may use of
 * core: the one core header they include (scripts/check-layers.py fails
 * on any other), as rdma-core's driver.h is for its providers.  internal.h
 * is core's own.
 *
 * The types come from core's smaller headers (a provider embeds core's
 * objects: struct kinet_ctx, kinet_qp, kinet_cq, kinet_srq, kinet_mr, and
 * registers a struct kinet_provider).  The functions below are exactly the
 * non-public core functions providers and boot call: check-layers.py
 * compares this list with the symbols their objects take from core's, so a
 * new use is added here on purpose, and one no longer made is removed.
 */
#ifndef KINET_CORE_DRIVER_H
#define KINET_CORE_DRIVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base.h"
#include "brlock.h"
#include "cq.h"
#include "ctx.h"
#include "cuda_rt.h"
#include "eth.h"
#include "log.h"
#include "mr.h"
#include "peer.h"
#include "provider.h"
#include "qp.h"
#include "srq.h"

/* Registration (provider.h): a provider's constructor. */
void kinet_provider_register(struct kinet_provider *prov);

/* Environment, time, memory, logging (base.h, log.h). */
const char *kinet_env_str(const char *name);
long kinet_env_long(const char *name);
bool kinet_env_is_set(const char *name);
int kinet_env_valid(const char *name);
int kinet_attr_read(const char *name, const void *attr, size_t ours, void *out);
uint64_t kinet_now_ns(void);
void *kinet_host_alloc(struct kinet_ctx *ctx, size_t size);
void kinet_host_free(struct kinet_ctx *ctx, void *ptr);
void kinet_log(enum kinet_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void kinet_log_limited(struct kinet_log_limit *rl, enum kinet_log_level level, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
bool kinet_log_demote(bool on);

/* The job and the machine's cores (base.h). */
void kinet_job_joined(int nranks);
void kinet_job_size(int *nranks, int *local);
void kinet_pollers_add(bool engine, int delta);
bool kinet_pollers_oversubscribed(void);

/* Objects of a context (ctx.h, qp.h, cq.h, mr.h, brlock.h). */
void kinet_ctx_record_error(struct kinet_ctx *ctx, int status, uint32_t qpn, uint8_t syndrome, uint8_t opcode,
			    uint16_t wqe_counter);
struct kinet_qp *kinet_ctx_get_qp(struct kinet_ctx *ctx, uint32_t qpn);
void kinet_qp_to_error(struct kinet_qp *qp, const char *why);
int kinet_cq_produced(struct kinet_ctx *ctx, uint32_t cqn, uint64_t *produced);
void kinet_mr_table_rdlock(struct kinet_ctx *ctx);
void kinet_mr_table_unlock(struct kinet_ctx *ctx);
int kinet_mr_lookup(struct kinet_ctx *ctx, uint32_t key, uint64_t addr, uint64_t len, unsigned access,
		    struct kinet_mr_ref *ref);
int kinet_mr_lookup_ptr(struct kinet_ctx *ctx, uint32_t key, const void *ptr, uint64_t len, unsigned access,
			struct kinet_mr_ref *ref);
void kinet_brlock_rdlock(struct kinet_brlock *b);
void kinet_brlock_rdunlock(struct kinet_brlock *b);
void kinet_brlock_wrlock(struct kinet_brlock *b);
void kinet_brlock_wrunlock(struct kinet_brlock *b);

/* Ethernet ports (eth.h): the queue a received frame goes to. */
struct kinet_eth_rxq *kinet_eth_port_steer(struct kinet_eth_port *port, const uint8_t *frame, uint32_t len);

/* GPU memory of a context (cuda_rt.h): the bootstrap's device buffers. */
void *kinet_cuda_alloc(struct kinet_ctx *ctx, size_t size);
int kinet_cuda_copy_in(struct kinet_ctx *ctx, void *dev, const void *src, size_t size);
void kinet_cuda_free(struct kinet_ctx *ctx, void *dev);

/* The peer path (peer.h): windows a provider learns across processes. */
bool kinet_peer_window_in_process(const struct kinet_ctx *viewer, uint64_t addr, uint64_t length,
				  uint32_t access, enum kinet_mem_type type, int cuda_device,
				  struct kinet_dev_window *w);
void kinet_peer_remote_window_add(struct kinet_qp *qp, uint32_t key, const struct kinet_dev_window *w);
void kinet_peer_remote_window_revoke(struct kinet_qp *qp, uint32_t key);
void kinet_peer_remote_ready(struct kinet_qp *qp, bool ok);
int kinet_peer_qp_remote_ptr(struct kinet_qp *qp, uint64_t addr, uint64_t length, uint32_t rkey,
			     uint32_t access, void **ptr);

/* libfabric calls (fabric_guard.h): every fi_* call of the ofi carrier is
 * bracketed, so the verbs front door can tell libfabric's own calls into
 * libibverbs from an application's. */
void kinet_fabric_enter(void);
void kinet_fabric_leave(void);

/* The verbs front door's wish for the carriers of the next kinet_qp_pack
 * (front.h): the soft provider's side. */
bool kinet_front_pack_carriers_take(bool *node, bool *ofi);

#endif /* KINET_CORE_DRIVER_H */
