/*
 * A fake rdma-core for CI (fake_rdma.c, built as a shared library that
 * test_mlx5_fake points $KINET_MLX5_LIBIBVERBS and $KINET_MLX5_LIBMLX5 at):
 * the libibverbs and libmlx5 functions kinet's ConnectX provider loads,
 * over two devices that exist only in memory.  It executes no WQE; it
 * checks what the provider asks of it (the verbs sequence, attributes,
 * legal order), records it here for the test to assert on, and hands out
 * queue memory through the parent domain's allocator as libmlx5 does.
 */
#ifndef KINET_TEST_FAKE_RDMA_H
#define KINET_TEST_FAKE_RDMA_H

#include <pthread.h>
#include <stdint.h>

#include <infiniband/mlx5dv.h>
#include <infiniband/verbs.h>

#define FAKE_MAX 32
#define FAKE_UAR_DB_OFFSET 0x900 /* not the software NIC's 0x800: the provider must take it from mlx5dv */

struct fake_qp_rec {
	int live;
	uint32_t qpn;
	enum ibv_qp_state state;
	struct ibv_qp_init_attr_ex attr;
	struct mlx5dv_qp_init_attr dv;
	int has_td;
	int modify_mask[IBV_QPS_ERR + 1]; /* per state reached: the mask that took it there */
	struct ibv_qp_attr to[IBV_QPS_ERR + 1];
	uint8_t *sq, *rq;
	uint32_t sq_cnt, rq_cnt, rq_stride;
	uint32_t *dbrec;
	uint8_t *uar; /* the page; the register is at FAKE_UAR_DB_OFFSET */
	struct ibv_qp *ibqp;
	struct ibv_pd *pd; /* the protection domain under its parent domain */
};

struct fake_cq_rec {
	int live;
	uint32_t cqn;
	uint32_t ncqe;
	uint32_t flags;
	struct mlx5dv_cq_init_attr dv;
	void *buf;
	uint32_t *dbrec;
	struct ibv_cq *ibcq;
};

struct fake_mr_rec {
	int live;
	void *addr;
	size_t len;
	uint64_t iova;
	unsigned access;
	uint32_t key;
	struct ibv_pd *pd;
};

struct fake_rdma {
	pthread_mutex_t lock;
	int loaded;	   /* set when the provider first listed devices */
	int open_devices;  /* contexts open now */
	int pds;	   /* protection domains (not parent domains) live */
	int domains;	   /* parent domains live */
	int tds;	   /* thread domains live */
	int allocs, frees; /* through a parent domain's allocator */
	int alloc_cq, alloc_qp, alloc_dbr;
	int misuse; /* calls out of order (busy objects freed, ...) */
	char misuse_what[256];
	int nqp, ncq, nmr;
	struct fake_qp_rec qp[FAKE_MAX];
	struct fake_cq_rec cq[FAKE_MAX];
	struct fake_mr_rec mr[FAKE_MAX];
	/* Injection: the next modify to this state fails with this errno. */
	enum ibv_qp_state fail_state;
	int fail_errno;
	/* Async events, pushed by the test, taken by the provider. */
	struct ibv_async_event ev[16];
	int ev_head, ev_tail, ev_acked;
};

/* The test acting as the NIC: an async event for qp (or cq). */
void fake_rdma_push_event(enum ibv_event_type type, struct ibv_qp *qp, struct ibv_cq *cq);

#endif /* KINET_TEST_FAKE_RDMA_H */
