/*
 * Two connected RC QPs of one verbs context, for the front door's tests:
 * opened, connected and torn down with the verbs calls a program makes
 * (no kinet call), so what they test is the front door.
 */
#ifndef KINET_TEST_VERBS_PAIR_H
#define KINET_TEST_VERBS_PAIR_H

#include <infiniband/verbs.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kt.h"

#define PAIR_BYTES 65536

struct pair {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq[2];
	struct ibv_qp *qp[2];
	struct ibv_srq *srq; /* when opened with one: both QPs receive from it */
	uint8_t *buf[2];
	struct ibv_mr *mr[2];
};

static inline int pair_modify(struct ibv_qp *qp, uint32_t dest, const union ibv_gid *gid)
{
	struct ibv_qp_attr a;

	/* Field by field (not designated initializers): the GPU test compiles
	 * this header as C++. */
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
	int ret = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);

	if (ret)
		return ret;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = dest;
	a.rq_psn = 0;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 12;
	a.ah_attr.port_num = 1;
	if (gid) {
		a.ah_attr.is_global = 1;
		a.ah_attr.grh.dgid = *gid;
		a.ah_attr.grh.hop_limit = 1;
	}
	ret = ibv_modify_qp(qp, &a,
			    IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
				    IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
	if (ret)
		return ret;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.sq_psn = 0;
	a.max_rd_atomic = 1;
	return ibv_modify_qp(qp, &a,
			     IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
				     IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
}

/* 0, or the step that failed (a check reports it). */
static inline int pair_open(struct pair *p, bool with_srq, uint64_t send_ops)
{
	struct ibv_device **list;
	union ibv_gid gid;

	memset(p, 0, sizeof(*p));
	list = ibv_get_device_list(NULL);
	if (!list || !list[0])
		return 1;
	p->ctx = ibv_open_device(list[0]);
	ibv_free_device_list(list);
	if (!p->ctx)
		return 2;
	p->pd = ibv_alloc_pd(p->ctx);
	if (!p->pd)
		return 3;
	for (int i = 0; i < 2; i++) {
		p->buf[i] = (uint8_t *)aligned_alloc(4096, PAIR_BYTES);
		memset(p->buf[i], 0, PAIR_BYTES);
		p->mr[i] = ibv_reg_mr(p->pd, p->buf[i], PAIR_BYTES,
				      IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
					      IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC);
		if (!p->mr[i])
			return 4;
		p->cq[i] = ibv_create_cq(p->ctx, 256, NULL, NULL, 0);
		if (!p->cq[i])
			return 5;
	}
	if (with_srq) {
		struct ibv_srq_init_attr sa;

		memset(&sa, 0, sizeof(sa));
		sa.attr.max_wr = 64;
		sa.attr.max_sge = 1;
		p->srq = ibv_create_srq(p->pd, &sa);
		if (!p->srq)
			return 6;
	}
	for (int i = 0; i < 2; i++) {
		struct ibv_qp_init_attr_ex a;

		memset(&a, 0, sizeof(a));
		a.send_cq = p->cq[i];
		a.recv_cq = p->cq[i];
		a.srq = p->srq;
		a.cap.max_send_wr = 64;
		a.cap.max_recv_wr = 64;
		a.cap.max_send_sge = 2;
		a.cap.max_recv_sge = 2;
		a.cap.max_inline_data = 64;
		a.qp_type = IBV_QPT_RC;
		a.comp_mask =
			IBV_QP_INIT_ATTR_PD | (send_ops ? (uint32_t)IBV_QP_INIT_ATTR_SEND_OPS_FLAGS : 0u);
		a.pd = p->pd;
		a.send_ops_flags = send_ops;
		p->qp[i] = ibv_create_qp_ex(p->ctx, &a);
		if (!p->qp[i])
			return 7;
	}
	if (ibv_query_gid(p->ctx, 1, 0, &gid))
		return 8;
	if (pair_modify(p->qp[0], p->qp[1]->qp_num, &gid) || pair_modify(p->qp[1], p->qp[0]->qp_num, NULL))
		return 9;
	return 0;
}

static inline void pair_close(struct pair *p)
{
	for (int i = 0; i < 2; i++)
		if (p->qp[i])
			ibv_destroy_qp(p->qp[i]);
	if (p->srq)
		ibv_destroy_srq(p->srq);
	for (int i = 0; i < 2; i++) {
		if (p->cq[i])
			ibv_destroy_cq(p->cq[i]);
		if (p->mr[i])
			ibv_dereg_mr(p->mr[i]);
		free(p->buf[i]);
	}
	if (p->pd)
		ibv_dealloc_pd(p->pd);
	if (p->ctx)
		ibv_close_device(p->ctx);
}

/* Polls one completion within 5 s: 1, or 0 on timeout (a failed check). */
static inline int pair_wait(struct ibv_cq *cq, struct ibv_wc *wc)
{
	struct timespec t0, t;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		int n = ibv_poll_cq(cq, 1, wc);

		if (n)
			return n;
		clock_gettime(CLOCK_MONOTONIC, &t);
		if (t.tv_sec - t0.tv_sec > 5)
			return 0;
	}
}

#endif
