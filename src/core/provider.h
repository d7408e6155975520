/*
 * The provider seam, in the style of rdma-core's verbs_context_ops: core
 * (src/core) owns the public objects, checks arguments, logs and reports
 * errors, and reaches the NIC only through one of these tables.  A
 * provider (src/provider/<name>/) registers its table at load time and
 * never appears in core by name, include or symbol.
 */
#ifndef KINET_PROVIDER_H
#define KINET_PROVIDER_H

#include <stdbool.h>
#include <stddef.h>

#include "kinet/kinet.h"
#include "kinet/wire.h"

struct kinet_ctx;
struct kinet_qp;
struct kinet_cq;
struct kinet_mr;
struct kinet_srq;
struct kinet_eth_port;

/* How device code of a connected QP can reach its peer (peer path). */
enum kinet_peer_reach {
	KINET_PEER_REACH_NONE,	  /* only through the provider (network) */
	KINET_PEER_REACH_PROCESS, /* the peer QP is in a context of this process */
	KINET_PEER_REACH_HELLO,	  /* another process of the host: windows come from ops->peer_hello */
};

struct kinet_provider_ops {
	/* Bytes core allocates for a context, QP, MR and CQ: the provider's
	 * objects begin with core's (struct kinet_ctx ctx; ...) and add its
	 * private fields after it.  cq_size 0: core's CQ only. */
	size_t ctx_size;
	size_t qp_size;
	size_t mr_size;
	size_t cq_size;
	size_t srq_size; /* 0: core's SRQ only */
	/* The doorbell mode KINET_DB_AUTO resolves to (qp_create may still
	 * change qp->db_mode, saying why). */
	enum kinet_db_mode db_auto;
	/* The NIC reads GPU memory itself (GPUDirect RDMA).  false: device
	 * code stages small writes from GPU memory into host memory for it
	 * (kinet_qp_attr.stage_bytes, export.c). */
	bool reads_device_memory;

	/* ---- optional (NULL: what the software NIC needs) ---- */
	/* Whether the provider can open a context here: 0, or -ENODEV with
	 * *why a sentence (valid until the next probe).  Logs nothing.  Core
	 * probes before every ctx_open; NULL: always usable. */
	int (*probe)(const char **why);
	/* What the provider finds on this machine, line by line, for
	 * kinet-info: 0, or the probe's error after saying why. */
	int (*describe)(kinet_describe_fn line, void *arg);
	/* Registers mr (core's fields set) with the NIC and sets mr->lkey and
	 * mr->rkey; 0 or a negative errno (logged).  mr_dereg undoes it. */
	int (*mr_reg)(struct kinet_mr *mr);
	void (*mr_dereg)(struct kinet_mr *mr);
	/* Rings the doorbell for host-posted work up to qp->sq_pi (post_lock
	 * held; last: the first BB of the last WQE).  NULL: core writes the
	 * mode's doorbell into the queue's memory. */
	void (*ring)(struct kinet_qp *qp, const uint8_t *last);
	/* Brings qp->state up to date with a NIC that moves QPs to the error
	 * state by itself. */
	void (*qp_refresh)(struct kinet_qp *qp);
	/* The host poller found an error CQE of qp (NULL when the QP is gone)
	 * that the NIC, not the provider, wrote. */
	void (*cq_error)(struct kinet_cq *cq, struct kinet_qp *qp, const struct kinet_cqe64 *cqe);

	/* ---- context ---- */
	/* Starts the NIC for ctx (nthreads: engine threads asked for). */
	int (*ctx_open)(struct kinet_ctx *ctx, int nthreads);
	/* Stops execution: afterwards no WQE runs and QPs and CQs can be torn
	 * down without the provider's help.  Called before ctx_close. */
	void (*ctx_stop)(struct kinet_ctx *ctx);
	/* Frees what ctx_open made, once every QP and CQ is gone. */
	void (*ctx_close)(struct kinet_ctx *ctx);
	/* NULL: the provider cannot pause (kinet_ctx_pause: -EOPNOTSUPP). */
	void (*ctx_pause)(struct kinet_ctx *ctx, bool paused);
	/* Optional: counters of engine thread `index`; the number of
	 * threads, or -EINVAL for an index out of range. */
	int (*ctx_engine_stats)(struct kinet_ctx *ctx, int index, struct kinet_engine_stats *stats);

	/* ---- completion queues ---- */
	/* The ring of cq->depth CQEs (owned by software, invalid) and its
	 * doorbell record; 0 or a negative errno.  The provider may round
	 * cq->depth (and log_depth) up and set cq->cqn (else core numbers the
	 * CQ).  cq_destroy frees them. */
	int (*cq_create)(struct kinet_cq *cq);
	void (*cq_destroy)(struct kinet_cq *cq);

	/* ---- queue pairs ---- */
	/* The queues of a QP core just sized (qp->sq_bbs send BBs; when
	 * qp->rq_depth, that many receive WQEs of qp->rq_stride bytes), its
	 * doorbell record, CPU doorbell and UAR page (doorbell register at
	 * qp->uar + qp->uar_db_offset), all where device code reaches them,
	 * and the provider's part.  The provider may round the sizes up, set
	 * qp->qpn (else core numbers the QP) and change qp->db_mode.  0 or a
	 * negative errno; qp_fini frees whatever was made (also after a
	 * failed qp_create), once every reference is gone. */
	int (*qp_create)(struct kinet_qp *qp);
	void (*qp_fini)(struct kinet_qp *qp);
	/* Hands a new QP (rings allocated, RESET) to the NIC, which runs it
	 * once it reaches RTS or ERR; qp_destroy takes it back (unless
	 * ctx_stop ran), completing or dropping its in-flight work. */
	void (*qp_add)(struct kinet_qp *qp);
	void (*qp_destroy)(struct kinet_qp *qp);
	/* Provider part of kinet_qp_info (info->transport). */
	void (*qp_info)(const struct kinet_qp *qp, struct kinet_qp_info *info);
	/* RESET -> RTS toward remote: 0, -EHOSTUNREACH (nothing reaches it,
	 * logged) or the provider's error.  *how names the path for the log. */
	int (*qp_connect)(struct kinet_qp *qp, const struct kinet_qp_info *remote, const char **how);
	void (*qp_disconnect)(struct kinet_qp *qp);
	/* The host rang qp's doorbell, or its state changed. */
	void (*doorbell)(struct kinet_qp *qp);
	/* The host rang qp's send doorbell (post_lock released), for a
	 * provider that finds send doorbells itself unless it sleeps.  NULL:
	 * doorbell() is called. */
	void (*send_rung)(struct kinet_qp *qp);

	/* ---- shared receive queues (optional: NULL, kinet_srq_create
	 * answers -EOPNOTSUPP) ---- */
	/* The ring of srq->slots WQEs of srq->stride bytes and its doorbell
	 * record, where device code reaches them; core then links the ring.
	 * srq_destroy frees them, once no QP names the SRQ. */
	int (*srq_create)(struct kinet_srq *srq);
	void (*srq_destroy)(struct kinet_srq *srq);
	/* The host posted receive WQEs (the doorbell record moved): senders
	 * waiting for one may go on. */
	void (*srq_posted)(struct kinet_srq *srq);

	/* ---- Ethernet ports and queues (optional: NULL, kinet_eth_port_open
	 * answers -EOPNOTSUPP) ---- */
	/* Opens port->ifname (in the caller's network namespace) with a ring
	 * of port->rx_frames, sets port->prov, port->mac and port->mtu, and
	 * starts receiving for the port's rules.  0 or a negative errno
	 * (logged); eth_port_close undoes it, once no queue of the port is
	 * left. */
	int (*eth_port_open)(struct kinet_eth_port *port);
	void (*eth_port_close)(struct kinet_eth_port *port);
	/* 0, or the interface's sticky -ENETDOWN / -ENODEV. */
	int (*eth_port_status)(struct kinet_eth_port *port);
	/* Frames the kernel dropped before the NIC saw them. */
	uint64_t (*eth_port_rx_dropped)(struct kinet_eth_port *port);
	/* Makes a new QP (RESET, not yet run) a raw-packet QP of port: its
	 * send queue sends frames on the port (send checksums cs_flags
	 * allowed, wait-on-time WQEs when timed), its receive queue takes
	 * what the port's rules steer to it.  Core then moves it to RTS. */
	int (*eth_qp_attach)(struct kinet_qp *qp, struct kinet_eth_port *port, uint8_t cs_flags, bool timed);

	/* ---- peer path (GPU loads and stores instead of WQEs) ---- */
	enum kinet_peer_reach (*peer_reach)(const struct kinet_qp *qp);
	/* KINET_PEER_REACH_HELLO: asks the target for its windows; the
	 * answers come through kinet_peer_remote_*.  0 once asked. */
	int (*peer_hello)(struct kinet_qp *qp);
	/* A region registered (add) or being deregistered, for peers in other
	 * processes holding ctx's windows; waits for their acknowledgement. */
	void (*peer_publish)(struct kinet_mr *mr, bool add);
	/* A target QP destroyed, or ctx closing (qp NULL). */
	void (*peer_withdraw)(struct kinet_ctx *ctx, struct kinet_qp *qp);
};

/* A registered provider.  Name lookup is exact (soft, mlx5). */
struct kinet_provider {
	const char *name;
	const struct kinet_provider_ops *ops;
	struct kinet_provider *next; /* the registry's, set by register */
};

/* Called by a provider at load time (a constructor, as rdma-core's
 * PROVIDER_DRIVER does). */
void kinet_provider_register(struct kinet_provider *prov);
/* The registered provider of that name, or NULL. */
const struct kinet_provider *kinet_provider_find(const char *name);

#endif /* KINET_PROVIDER_H */
