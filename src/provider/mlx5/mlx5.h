/*
 * The ConnectX provider's objects: each begins with core's and adds the
 * verbs objects behind it (core allocates ops->*_size bytes).  Private to
 * src/provider/mlx5; docs/architecture/mlx5.md tells the design.
 */
#ifndef KINET_MLX5_H
#define KINET_MLX5_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#include "driver.h"
#include "mlx5_attr.h"
#include "mlx5_dl.h"

/* A page of a UAR (the NIC's doorbell registers) mapped into the GPU: QPs
 * whose BlueFlame registers share the page share the mapping. */
struct kinet_mlx5_uar_page {
	void *page; /* host (MMIO) address, page-aligned */
	void *dev;  /* its GPU address */
	int refs;
	struct kinet_mlx5_uar_page *next;
};

struct kinet_mlx5_ctx {
	struct kinet_ctx ctx;
	const struct kinet_mlx5_verbs *v;
	struct ibv_context *verbs;
	struct ibv_pd *pd;
	/* CQ rings and doorbell records come from kinet's allocator (ring.c). */
	struct ibv_pd *cq_domain;
	char device[64];
	uint8_t port;
	struct ibv_port_attr port_attr;
	struct ibv_device_attr dev_attr;
	int gid_index; /* -1 on InfiniBand without a GRH */
	union ibv_gid gid;

	/* CPU-assisted doorbells and async events (progress.c) */
	pthread_mutex_t lock; /* cpu_qps, uar_pages */
	struct kinet_mlx5_qp *cpu_qps;
	struct kinet_mlx5_uar_page *uar_pages;
	pthread_t progress;
	bool progress_running;
	atomic_bool stop;
};

struct kinet_mlx5_qp {
	struct kinet_qp qp;
	struct ibv_qp *ibqp;
	struct ibv_td *td;		      /* a BlueFlame register of its own, no lock */
	struct ibv_pd *domain;		      /* parent domain: pd, td, kinet's allocator */
	struct kinet_mlx5_uar_page *uar_page; /* GPU mapping of its UAR, or NULL */
	uint32_t psn;			      /* first packet sequence number it sends */
	/* Doorbells from the CPU (host posting, the CPU-assisted mode). */
	pthread_mutex_t ring_lock;
	uint64_t rung;	      /* producer index last rung */
	uint64_t db_bad;      /* producer indexes that could not be right */
	atomic_bool hw_error; /* the NIC's QP is in the error state */
	bool on_cpu_list;
	struct kinet_mlx5_qp *next_cpu;
};

struct kinet_mlx5_cq {
	struct kinet_cq cq;
	struct ibv_cq_ex *ibcq;
};

struct kinet_mlx5_mr {
	struct kinet_mr mr;
	struct ibv_mr *ibmr;
	const char *how; /* "host", "dma-buf", "peer memory" */
};

static inline struct kinet_mlx5_ctx *kinet_mctx(const struct kinet_ctx *ctx)
{
	return (struct kinet_mlx5_ctx *)((char *)ctx - offsetof(struct kinet_mlx5_ctx, ctx));
}

static inline struct kinet_mlx5_qp *kinet_mqp(const struct kinet_qp *qp)
{
	return (struct kinet_mlx5_qp *)((char *)qp - offsetof(struct kinet_mlx5_qp, qp));
}

static inline struct kinet_mlx5_cq *kinet_mcq(const struct kinet_cq *cq)
{
	return (struct kinet_mlx5_cq *)((char *)cq - offsetof(struct kinet_mlx5_cq, cq));
}

static inline struct kinet_mlx5_mr *kinet_mmr(const struct kinet_mr *mr)
{
	return (struct kinet_mlx5_mr *)((char *)mr - offsetof(struct kinet_mlx5_mr, mr));
}

/* ---- device.c ---- */
/* Enumerates mlx5 ports; fills the chosen device, port and GID of m (not
 * yet opened: m->verbs NULL) or says why none.  gpu: the CUDA device whose
 * PCI distance decides, -1 for none. */
int kinet_mlx5_device_open(struct kinet_mlx5_ctx *m, int gpu, char *why, size_t whylen);
void kinet_mlx5_device_close(struct kinet_mlx5_ctx *m);
/* Whether an mlx5 port is usable here, without opening a context: 0 or
 * -ENODEV with why. */
int kinet_mlx5_device_probe(const struct kinet_mlx5_verbs *v, char *why, size_t whylen);
/* The port's GID table (at most max entries): the count, or a negative errno. */
int kinet_mlx5_gid_table(const struct kinet_mlx5_verbs *v, struct ibv_context *c, const char *device,
			 uint8_t port, int table_len, struct kinet_mlx5_gid *out, int max);

/* ---- ring.c: queue memory and the UAR's GPU mapping ---- */
/* A parent domain of m's protection domain whose queue memory (rings,
 * doorbell records) kinet allocates: page-aligned host memory, pinned
 * and mapped into the GPU when the context has one. */
struct ibv_pd *kinet_mlx5_domain(struct kinet_mlx5_ctx *m, struct ibv_td *td);
/* Maps the UAR page holding reg into the GPU (cudaHostRegister with the
 * I/O-memory flag): 0, or a negative errno with why.  uar_unmap undoes it. */
int kinet_mlx5_uar_map(struct kinet_mlx5_ctx *m, void *reg, struct kinet_mlx5_uar_page **page, char *why,
		       size_t whylen);
void kinet_mlx5_uar_unmap(struct kinet_mlx5_ctx *m, struct kinet_mlx5_uar_page *page);

/* ---- memory.c ---- */
int kinet_mlx5_mr_reg(struct kinet_mr *mr);
void kinet_mlx5_mr_dereg(struct kinet_mr *mr);
/* Each GPU registration path on its own, for kinet-info: 0, or a negative
 * errno with why. */
int kinet_mlx5_try_dmabuf(struct kinet_mlx5_ctx *m, void *addr, size_t len, int cuda_device, char *why,
			  size_t whylen);
int kinet_mlx5_try_peer_memory(struct kinet_mlx5_ctx *m, void *addr, size_t len, char *why, size_t whylen);

/* ---- queue.c ---- */
int kinet_mlx5_cq_create(struct kinet_cq *cq);
void kinet_mlx5_cq_destroy(struct kinet_cq *cq);
int kinet_mlx5_qp_create(struct kinet_qp *qp);
void kinet_mlx5_qp_fini(struct kinet_qp *qp);

/* ---- connect.c ---- */
void kinet_mlx5_qp_info(const struct kinet_qp *qp, struct kinet_qp_info *info);
int kinet_mlx5_qp_connect(struct kinet_qp *qp, const struct kinet_qp_info *remote, const char **how);
/* Moves the NIC's QP to the error state (flushing its work), once. */
void kinet_mlx5_qp_error(struct kinet_qp *qp);
void kinet_mlx5_qp_refresh(struct kinet_qp *qp);

/* ---- progress.c ---- */
int kinet_mlx5_progress_start(struct kinet_mlx5_ctx *m);
void kinet_mlx5_progress_stop(struct kinet_mlx5_ctx *m);
void kinet_mlx5_progress_add(struct kinet_qp *qp);
void kinet_mlx5_progress_remove(struct kinet_qp *qp);
/* Host posting's doorbell (ops->ring). */
void kinet_mlx5_ring(struct kinet_qp *qp, const uint8_t *last);
/* The NIC wrote an error CQE the host poller found (ops->cq_error). */
void kinet_mlx5_cq_error(struct kinet_cq *cq, struct kinet_qp *qp, const struct kinet_cqe64 *cqe);

/* ---- describe.c ---- */
int kinet_mlx5_describe(kinet_describe_fn line, void *arg);

#endif /* KINET_MLX5_H */
