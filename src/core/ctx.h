/*
 * Contexts (ctx.c): provider, CUDA device, objects, first-error record.
 */
#ifndef KINET_CORE_CTX_H
#define KINET_CORE_CTX_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base.h"
#include "brlock.h"
#include "kinet/device/types.h"
#include "kinet/kinet.h"
#include "kinet/wire.h"

struct kinet_ctx;
struct kinet_qp;
struct kinet_cq;
struct kinet_srq;
struct kinet_mr;
struct kinet_provider_ops;

struct kinet_sem;      /* sem.c */
struct kinet_eth_port; /* eth.c */

/* ---- context (ctx.c) ---- */
struct kinet_ctx {
	struct kinet_ctx_attr attr;
	const char *provider_name;
	const struct kinet_provider_ops *ops; /* the provider's (src/core/provider.h) */
	uint64_t node_id;
	int cuda_device; /* -1 without CUDA */

	struct kinet_brlock mr_lock; /* the table below; read by every engine batch */
	struct kinet_mr **mr_table;  /* index = key >> 8 */
	uint32_t mr_table_size;
	uint32_t mr_count;
	uint32_t key_salt;

	/* QP/CQ lists; on a line of its own: a host poller takes it for
	 * every CQE it decodes, and the table fields above are read by the
	 * engine for every WQE (kinet_ctx_open aligns) */
	_Alignas(KINET_CACHE_LINE) pthread_mutex_t obj_lock;
	struct kinet_qp *qps;
	struct kinet_cq *cqs;
	struct kinet_srq *srqs;
	struct kinet_sem *sems;
	struct kinet_eth_port *eth_ports;
	uint32_t next_qpn;
	uint32_t next_cqn;
	uint32_t next_srqn;

	pthread_mutex_t atomic_lock; /* GPU-memory atomics targeting this ctx */

	atomic_bool engine_stopped;	 /* set by kinet_ctx_close once the engine is gone */
	struct kinet_dev_error *dev_err; /* host pointer, host-mapped */
	pthread_mutex_t err_lock;
	struct kinet_error host_err;
};

void kinet_ctx_record_error(struct kinet_ctx *ctx, int status, uint32_t qpn, uint8_t syndrome, uint8_t opcode,
			    uint16_t wqe_counter);
/* Allocates the next queue pair number of the context. */
uint32_t kinet_ctx_alloc_qpn(struct kinet_ctx *ctx);

#endif /* KINET_CORE_CTX_H */
