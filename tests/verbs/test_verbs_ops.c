/*
 * The verbs front door, verb by verb: devices and their attributes, every
 * opcode through ibv_post_send and through the ibv_wr_* builders, inline
 * data, both CQ interfaces, completion channels, SRQs and their limit
 * event, and the errors (completion statuses with the syndrome as
 * vendor_err, errnos of bad arguments).  Linked with kinet's
 * libibverbs.so.1, built against rdma-core's headers.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <stdbool.h>

#include "verbs_pair.h"

#define ALL_OPS                                                                                              \
	(IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM | IBV_QP_EX_WITH_SEND |              \
	 IBV_QP_EX_WITH_SEND_WITH_IMM | IBV_QP_EX_WITH_RDMA_READ | IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |       \
	 IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD)

static int post_recv(struct pair *p, int i, uint64_t off, uint32_t len, uint64_t id)
{
	struct ibv_sge s = {.addr = (uintptr_t)p->buf[i] + off, .length = len, .lkey = p->mr[i]->lkey};
	struct ibv_recv_wr w = {.wr_id = id, .sg_list = &s, .num_sge = 1}, *bad;

	if (p->srq)
		return ibv_post_srq_recv(p->srq, &w, &bad);
	return ibv_post_recv(p->qp[i], &w, &bad);
}

static int post(struct pair *p, enum ibv_wr_opcode op, uint64_t off, uint32_t len, uint64_t roff, uint64_t id,
		unsigned flags)
{
	struct ibv_sge s = {.addr = (uintptr_t)p->buf[0] + off, .length = len, .lkey = p->mr[0]->lkey};
	struct ibv_send_wr w = {.wr_id = id,
				.sg_list = &s,
				.num_sge = 1,
				.opcode = op,
				.send_flags = IBV_SEND_SIGNALED | flags},
			   *bad;

	w.imm_data = htonl(0xabcd0000u | (uint32_t)id);
	if (op == IBV_WR_ATOMIC_FETCH_AND_ADD || op == IBV_WR_ATOMIC_CMP_AND_SWP) {
		w.wr.atomic.remote_addr = (uintptr_t)p->buf[1] + roff;
		w.wr.atomic.rkey = p->mr[1]->rkey;
		w.wr.atomic.compare_add = op == IBV_WR_ATOMIC_FETCH_AND_ADD ? 5 : 0x1111;
		w.wr.atomic.swap = 0x2222;
	} else {
		w.wr.rdma.remote_addr = (uintptr_t)p->buf[1] + roff;
		w.wr.rdma.rkey = p->mr[1]->rkey;
	}
	return ibv_post_send(p->qp[0], &w, &bad);
}

KT_TEST(device_attributes)
{
	struct ibv_device **list;
	struct ibv_context *ctx;
	struct ibv_device_attr da;
	struct ibv_device_attr_ex dx;
	struct ibv_port_attr pa;
	union ibv_gid gid;
	struct ibv_gid_entry ge;
	__be16 pkey;
	int n;

	list = ibv_get_device_list(&n);
	KT_CHECK(list);
	KT_CHECK_EQ(n, 1);
	KT_CHECK(!strcmp(ibv_get_device_name(list[0]), "kinet0"));
	ctx = ibv_open_device(list[0]);
	ibv_free_device_list(list);
	KT_CHECK(ctx);
	KT_OK(ibv_query_device(ctx, &da));
	KT_CHECK(da.max_qp_rd_atom > 0 && da.max_qp_init_rd_atom > 0);
	KT_CHECK_EQ(da.atomic_cap, IBV_ATOMIC_HCA);
	KT_CHECK(da.max_sge >= 1 && da.max_srq > 0 && da.max_cqe > 0);
	KT_CHECK_EQ(da.phys_port_cnt, 1);
	KT_OK(ibv_query_device_ex(ctx, NULL, &dx));
	KT_CHECK_EQ(dx.orig_attr.max_qp_wr, da.max_qp_wr);
	KT_OK(ibv_query_port(ctx, 1, &pa));
	KT_CHECK_EQ(pa.state, IBV_PORT_ACTIVE);
	KT_CHECK_EQ(pa.link_layer, IBV_LINK_LAYER_ETHERNET);
	KT_CHECK_EQ(pa.gid_tbl_len, 1);
	KT_CHECK(ibv_query_port(ctx, 2, &pa) != 0);
	KT_OK(ibv_query_gid(ctx, 1, 0, &gid));
	KT_CHECK(gid.raw[10] == 0xff && gid.raw[11] == 0xff && gid.raw[12] != 0);
	KT_CHECK(ibv_query_gid(ctx, 1, 1, &gid) != 0);
	KT_OK(ibv_query_gid_ex(ctx, 1, 0, &ge, 0));
	KT_CHECK_EQ(ge.gid_type, IBV_GID_TYPE_ROCE_V2);
	KT_OK(ibv_query_pkey(ctx, 1, 0, &pkey));
	KT_CHECK_EQ(ntohs(pkey), 0xffff);
	KT_OK(ibv_close_device(ctx));
}

/* Each opcode through ibv_post_send, with data checked at the target. */
KT_TEST(opcodes)
{
	struct pair p;
	struct ibv_wc wc;

	KT_OK(pair_open(&p, false, 0));
	for (int i = 0; i < 4096; i++)
		p.buf[0][i] = (uint8_t)(i * 7 + 1);
	/* send and send with immediate into posted receives */
	KT_OK(post_recv(&p, 1, 8192, 4096, 100));
	KT_OK(post_recv(&p, 1, 16384, 4096, 101));
	KT_OK(post(&p, IBV_WR_SEND, 0, 1000, 0, 1, 0));
	KT_OK(post(&p, IBV_WR_SEND_WITH_IMM, 0, 2000, 0, 2, 0));
	for (uint64_t id = 1; id <= 2; id++) {
		KT_CHECK(pair_wait(p.cq[0], &wc));
		KT_CHECK_EQ(wc.status, IBV_WC_SUCCESS);
		KT_CHECK_EQ(wc.wr_id, id);
		KT_CHECK_EQ(wc.opcode, IBV_WC_SEND);
		KT_CHECK(pair_wait(p.cq[1], &wc));
		KT_CHECK_EQ(wc.status, IBV_WC_SUCCESS);
		KT_CHECK_EQ(wc.wr_id, 99 + id);
		KT_CHECK_EQ(wc.opcode, IBV_WC_RECV);
		KT_CHECK_EQ(wc.byte_len, id * 1000);
		KT_CHECK_EQ(wc.qp_num, p.qp[1]->qp_num);
		KT_CHECK_EQ(!!(wc.wc_flags & IBV_WC_WITH_IMM), id == 2);
		if (id == 2)
			KT_CHECK_EQ(ntohl(wc.imm_data), 0xabcd0002u);
	}
	KT_CHECK(!memcmp(p.buf[1] + 8192, p.buf[0], 1000));
	KT_CHECK(!memcmp(p.buf[1] + 16384, p.buf[0], 2000));
	/* write, then write with immediate (consumes a receive) */
	KT_OK(post(&p, IBV_WR_RDMA_WRITE, 0, 3000, 32768, 3, 0));
	KT_CHECK(pair_wait(p.cq[0], &wc));
	KT_CHECK(wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_RDMA_WRITE && wc.wr_id == 3);
	KT_CHECK(!memcmp(p.buf[1] + 32768, p.buf[0], 3000));
	KT_OK(post_recv(&p, 1, 0, 0, 102));
	KT_OK(post(&p, IBV_WR_RDMA_WRITE_WITH_IMM, 100, 500, 40000, 4, 0));
	KT_CHECK(pair_wait(p.cq[0], &wc));
	KT_CHECK_EQ(wc.status, IBV_WC_SUCCESS);
	KT_CHECK(pair_wait(p.cq[1], &wc));
	KT_CHECK_EQ(wc.opcode, IBV_WC_RECV_RDMA_WITH_IMM);
	KT_CHECK_EQ(wc.wr_id, 102);
	KT_CHECK_EQ(ntohl(wc.imm_data), 0xabcd0004u);
	KT_CHECK(!memcmp(p.buf[1] + 40000, p.buf[0] + 100, 500));
	/* read back what the target holds */
	memset(p.buf[1] + 50000, 0x5a, 777);
	KT_OK(post(&p, IBV_WR_RDMA_READ, 20000, 777, 50000, 5, 0));
	KT_CHECK(pair_wait(p.cq[0], &wc));
	KT_CHECK(wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_RDMA_READ);
	KT_CHECK(p.buf[0][20000] == 0x5a && p.buf[0][20776] == 0x5a);
	/* atomics: old values land locally */
	uint64_t *target = (uint64_t *)(void *)(p.buf[1] + 60000);
	*target = 0x1111;
	KT_OK(post(&p, IBV_WR_ATOMIC_FETCH_AND_ADD, 24000, 8, 60000, 6, 0));
	KT_CHECK(pair_wait(p.cq[0], &wc));
	KT_CHECK(wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_FETCH_ADD);
	KT_CHECK_EQ(*(uint64_t *)(void *)(p.buf[0] + 24000), 0x1111);
	KT_CHECK_EQ(*target, 0x1116);
	*target = 0x1111;
	KT_OK(post(&p, IBV_WR_ATOMIC_CMP_AND_SWP, 24008, 8, 60000, 7, 0));
	KT_CHECK(pair_wait(p.cq[0], &wc));
	KT_CHECK(wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_COMP_SWAP);
	KT_CHECK_EQ(*(uint64_t *)(void *)(p.buf[0] + 24008), 0x1111);
	KT_CHECK_EQ(*target, 0x2222);
	/* inline: the source may change as soon as the post returns */
	memcpy(p.buf[0] + 30000, "inline bytes!", 13);
	KT_OK(post(&p, IBV_WR_RDMA_WRITE, 30000, 13, 45000, 8, IBV_SEND_INLINE));
	memset(p.buf[0] + 30000, 0, 13);
	KT_CHECK(pair_wait(p.cq[0], &wc));
	KT_CHECK_EQ(wc.status, IBV_WC_SUCCESS);
	KT_CHECK(!memcmp(p.buf[1] + 45000, "inline bytes!", 13));
	pair_close(&p);
}

/* The same through ibv_wr_* (perftest's default) and read back through the
 * extended CQ interface. */
KT_TEST(wr_builders_and_cq_ex)
{
	struct pair p;
	struct ibv_qp_ex *x;
	struct ibv_wc wc;
	char msg[] = "built with ibv_wr";

	KT_OK(pair_open(&p, false, ALL_OPS));
	x = ibv_qp_to_qp_ex(p.qp[0]);
	KT_CHECK(x);
	memset(p.buf[0], 0x3c, 4096);
	KT_OK(post_recv(&p, 1, 8192, 64, 50));
	ibv_wr_start(x);
	x->wr_id = 11;
	x->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_rdma_write(x, p.mr[1]->rkey, (uintptr_t)p.buf[1] + 1000);
	ibv_wr_set_sge(x, p.mr[0]->lkey, (uintptr_t)p.buf[0], 4096);
	x->wr_id = 12;
	ibv_wr_send_imm(x, htonl(77));
	ibv_wr_set_inline_data(x, msg, sizeof(msg));
	x->wr_id = 13;
	ibv_wr_atomic_fetch_add(x, p.mr[1]->rkey, (uintptr_t)p.buf[1] + 40000, 9);
	ibv_wr_set_sge(x, p.mr[0]->lkey, (uintptr_t)p.buf[0] + 5000, 8);
	KT_OK(ibv_wr_complete(x));
	for (uint64_t id = 11; id <= 13; id++) {
		KT_CHECK(pair_wait(p.cq[0], &wc));
		KT_CHECK_EQ(wc.status, IBV_WC_SUCCESS);
		KT_CHECK_EQ(wc.wr_id, id);
	}
	KT_CHECK(p.buf[1][1000] == 0x3c && p.buf[1][1000 + 4095] == 0x3c);
	KT_CHECK(pair_wait(p.cq[1], &wc));
	KT_CHECK(wc.wr_id == 50 && wc.byte_len == sizeof(msg) && ntohl(wc.imm_data) == 77);
	KT_CHECK(!strcmp((char *)p.buf[1] + 8192, msg));
	KT_CHECK_EQ(*(uint64_t *)(void *)(p.buf[1] + 40000), 9);
	/* an operation not asked for at create fails the batch */
	pair_close(&p);
	KT_OK(pair_open(&p, false, IBV_QP_EX_WITH_RDMA_WRITE));
	x = ibv_qp_to_qp_ex(p.qp[0]);
	ibv_wr_start(x);
	x->wr_id = 1;
	x->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send(x);
	ibv_wr_set_sge(x, p.mr[0]->lkey, (uintptr_t)p.buf[0], 8);
	KT_CHECK(ibv_wr_complete(x) != 0);
	KT_CHECK_EQ(ibv_poll_cq(p.cq[0], 1, &wc), 0);
	pair_close(&p);

	/* extended CQ */
	KT_OK(pair_open(&p, false, 0));
	struct ibv_cq_init_attr_ex ca = {.cqe = 16, .wc_flags = IBV_WC_STANDARD_FLAGS};
	struct ibv_cq_ex *cqx = ibv_create_cq_ex(p.ctx, &ca);
	KT_CHECK(cqx);
	struct ibv_qp_init_attr qa = {
		.send_cq = ibv_cq_ex_to_cq(cqx),
		.recv_cq = ibv_cq_ex_to_cq(cqx),
		.cap = {.max_send_wr = 8, .max_recv_wr = 8, .max_send_sge = 1, .max_recv_sge = 1},
		.qp_type = IBV_QPT_RC};
	struct ibv_qp *q = ibv_create_qp(p.pd, &qa);
	KT_CHECK(q);
	union ibv_gid gid;
	KT_OK(ibv_query_gid(p.ctx, 1, 0, &gid));
	/* q talks to itself: a loopback QP, as ibv_rc_pingpong can make */
	KT_OK(pair_modify(q, q->qp_num, &gid));
	struct ibv_sge s = {.addr = (uintptr_t)p.buf[0], .length = 16, .lkey = p.mr[0]->lkey};
	struct ibv_recv_wr rw = {.wr_id = 7, .sg_list = &s, .num_sge = 1}, *rbad;
	struct ibv_sge s2 = {.addr = (uintptr_t)p.buf[0] + 100, .length = 16, .lkey = p.mr[0]->lkey};
	struct ibv_send_wr sw = {.wr_id = 8,
				 .sg_list = &s2,
				 .num_sge = 1,
				 .opcode = IBV_WR_SEND_WITH_IMM,
				 .send_flags = IBV_SEND_SIGNALED,
				 .imm_data = htonl(5)},
			   *sbad;
	KT_OK(ibv_post_recv(q, &rw, &rbad));
	KT_OK(ibv_post_send(q, &sw, &sbad));
	int seen = 0, recv_seen = 0;
	for (int tries = 0; seen < 2 && tries < 5000000; tries++) {
		struct ibv_poll_cq_attr pa = {0};
		int ret = ibv_start_poll(cqx, &pa);
		if (ret == ENOENT)
			continue;
		KT_CHECK_EQ(ret, 0);
		do {
			KT_CHECK_EQ(cqx->status, IBV_WC_SUCCESS);
			if (ibv_wc_read_opcode(cqx) == IBV_WC_RECV) {
				KT_CHECK_EQ(cqx->wr_id, 7);
				KT_CHECK_EQ(ibv_wc_read_byte_len(cqx), 16);
				KT_CHECK_EQ(ntohl(ibv_wc_read_imm_data(cqx)), 5);
				KT_CHECK(ibv_wc_read_wc_flags(cqx) & IBV_WC_WITH_IMM);
				KT_CHECK_EQ(ibv_wc_read_qp_num(cqx), q->qp_num);
				recv_seen = 1;
			} else {
				KT_CHECK_EQ(cqx->wr_id, 8);
			}
			seen++;
		} while (!ibv_next_poll(cqx));
		ibv_end_poll(cqx);
	}
	KT_CHECK_EQ(seen, 2);
	KT_CHECK(recv_seen);
	KT_OK(ibv_destroy_qp(q));
	KT_OK(ibv_destroy_cq(ibv_cq_ex_to_cq(cqx)));
	pair_close(&p);
}

/* A completion channel's descriptor wakes poll() and names the CQ. */
KT_TEST(completion_channel)
{
	struct pair p;
	struct ibv_comp_channel *ch;
	struct ibv_cq *cq, *ev_cq;
	void *ev_ctx;
	struct ibv_wc wc;

	KT_OK(pair_open(&p, false, 0));
	ch = ibv_create_comp_channel(p.ctx);
	KT_CHECK(ch);
	cq = ibv_create_cq(p.ctx, 16, (void *)0x1234, ch, 0);
	KT_CHECK(cq);
	KT_CHECK_EQ(ibv_destroy_comp_channel(ch), EBUSY);
	struct ibv_qp_init_attr qa = {
		.send_cq = cq,
		.recv_cq = cq,
		.cap = {.max_send_wr = 8, .max_recv_wr = 8, .max_send_sge = 1, .max_recv_sge = 1},
		.qp_type = IBV_QPT_RC};
	struct ibv_qp *q = ibv_create_qp(p.pd, &qa);
	KT_CHECK(q);
	KT_OK(pair_modify(q, q->qp_num, NULL));
	KT_OK(ibv_req_notify_cq(cq, 0));
	/* nothing yet: no event */
	struct pollfd pf = {.fd = ch->fd, .events = POLLIN};
	KT_CHECK_EQ(poll(&pf, 1, 50), 0);
	struct ibv_sge s = {.addr = (uintptr_t)p.buf[0], .length = 8, .lkey = p.mr[0]->lkey};
	struct ibv_send_wr sw = {.wr_id = 1,
				 .sg_list = &s,
				 .num_sge = 1,
				 .opcode = IBV_WR_RDMA_WRITE,
				 .send_flags = IBV_SEND_SIGNALED},
			   *bad;
	sw.wr.rdma.remote_addr = (uintptr_t)p.buf[0] + 64;
	sw.wr.rdma.rkey = p.mr[0]->rkey;
	KT_OK(ibv_post_send(q, &sw, &bad));
	KT_CHECK_EQ(poll(&pf, 1, 5000), 1);
	KT_OK(ibv_get_cq_event(ch, &ev_cq, &ev_ctx));
	KT_CHECK(ev_cq == cq && ev_ctx == (void *)0x1234);
	ibv_ack_cq_events(cq, 1);
	KT_CHECK_EQ(ibv_poll_cq(cq, 1, &wc), 1);
	KT_CHECK_EQ(wc.status, IBV_WC_SUCCESS);
	/* not re-armed: a second completion raises nothing */
	KT_OK(ibv_post_send(q, &sw, &bad));
	KT_CHECK(pair_wait(cq, &wc));
	KT_CHECK_EQ(poll(&pf, 1, 50), 0);
	KT_OK(ibv_destroy_qp(q));
	KT_OK(ibv_destroy_cq(cq));
	KT_OK(ibv_destroy_comp_channel(ch));
	pair_close(&p);
}

/* Two QPs on one SRQ, and its limit event. */
KT_TEST(shared_receive_queue)
{
	struct pair p;
	struct ibv_wc wc;
	struct ibv_async_event ev;
	struct ibv_srq_attr sa;

	KT_OK(pair_open(&p, true, 0));
	for (int i = 0; i < 8; i++)
		KT_OK(post_recv(&p, 1, 1024 * (uint64_t)i, 1024, 200 + (uint64_t)i));
	sa.srq_limit = 6;
	KT_OK(ibv_modify_srq(p.srq, &sa, IBV_SRQ_LIMIT));
	KT_OK(ibv_query_srq(p.srq, &sa));
	KT_CHECK_EQ(sa.srq_limit, 6);
	/* qp[0] -> qp[1] and qp[1] -> qp[0] both land in the SRQ */
	KT_OK(post(&p, IBV_WR_SEND, 0, 100, 0, 1, 0));
	KT_CHECK(pair_wait(p.cq[0], &wc));
	KT_CHECK_EQ(wc.status, IBV_WC_SUCCESS);
	KT_CHECK(pair_wait(p.cq[1], &wc));
	KT_CHECK(wc.status == IBV_WC_SUCCESS && wc.wr_id == 200 && wc.byte_len == 100);
	struct ibv_sge s = {.addr = (uintptr_t)p.buf[1] + 32768, .length = 50, .lkey = p.mr[1]->lkey};
	struct ibv_send_wr w = {.wr_id = 2,
				.sg_list = &s,
				.num_sge = 1,
				.opcode = IBV_WR_SEND,
				.send_flags = IBV_SEND_SIGNALED},
			   *bad;
	KT_OK(ibv_post_send(p.qp[1], &w, &bad));
	KT_CHECK(pair_wait(p.cq[1], &wc));
	KT_CHECK(wc.status == IBV_WC_SUCCESS && wc.wr_id == 2 && wc.opcode == IBV_WC_SEND);
	KT_CHECK(pair_wait(p.cq[0], &wc));
	KT_CHECK(wc.status == IBV_WC_SUCCESS && wc.wr_id == 201 && wc.qp_num == p.qp[0]->qp_num);
	/* 6 left: not below the limit yet */
	struct pollfd pf = {.fd = p.ctx->async_fd, .events = POLLIN};
	KT_CHECK_EQ(poll(&pf, 1, 50), 0);
	KT_OK(post(&p, IBV_WR_SEND, 0, 10, 0, 3, 0));
	KT_CHECK(pair_wait(p.cq[0], &wc));
	KT_CHECK(pair_wait(p.cq[1], &wc));
	KT_CHECK_EQ(poll(&pf, 1, 5000), 1);
	KT_OK(ibv_get_async_event(p.ctx, &ev));
	KT_CHECK_EQ(ev.event_type, IBV_EVENT_SRQ_LIMIT_REACHED);
	KT_CHECK(ev.element.srq == p.srq);
	ibv_ack_async_event(&ev);
	KT_OK(ibv_query_srq(p.srq, &sa));
	KT_CHECK_EQ(sa.srq_limit, 0); /* disarmed */
	KT_CHECK_EQ(ibv_destroy_srq(p.srq), EBUSY);
	/* a QP of an SRQ takes no receives of its own */
	struct ibv_recv_wr rw = {.wr_id = 1, .sg_list = &s, .num_sge = 1}, *rbad;
	KT_CHECK_EQ(ibv_post_recv(p.qp[0], &rw, &rbad), EINVAL);
	pair_close(&p);
}

/* Errors as a ConnectX reports them: completion statuses with the PRM
 * syndrome in vendor_err, then flushes; errnos for bad arguments. */
KT_TEST(errors)
{
	struct pair p;
	struct ibv_wc wc;
	struct ibv_sge s;
	struct ibv_send_wr w, *bad;

	/* wrong rkey: remote access error, the QP in error, then flushed */
	KT_OK(pair_open(&p, false, 0));
	s = (struct ibv_sge){.addr = (uintptr_t)p.buf[0], .length = 64, .lkey = p.mr[0]->lkey};
	w = (struct ibv_send_wr){.wr_id = 1,
				 .sg_list = &s,
				 .num_sge = 1,
				 .opcode = IBV_WR_RDMA_WRITE,
				 .send_flags = IBV_SEND_SIGNALED};
	w.wr.rdma.remote_addr = (uintptr_t)p.buf[1];
	w.wr.rdma.rkey = p.mr[1]->rkey ^ 0x5500;
	KT_OK(ibv_post_send(p.qp[0], &w, &bad));
	w.wr_id = 2;
	w.wr.rdma.rkey = p.mr[1]->rkey;
	KT_OK(ibv_post_send(p.qp[0], &w, &bad));
	KT_CHECK(pair_wait(p.cq[0], &wc));
	KT_CHECK_EQ(wc.status, IBV_WC_REM_ACCESS_ERR);
	KT_CHECK_EQ(wc.vendor_err, 0x13);
	KT_CHECK_EQ(wc.wr_id, 1);
	KT_CHECK(pair_wait(p.cq[0], &wc));
	KT_CHECK_EQ(wc.status, IBV_WC_WR_FLUSH_ERR);
	KT_CHECK_EQ(wc.wr_id, 2);
	struct ibv_qp_attr qa;
	struct ibv_qp_init_attr qi;
	KT_OK(ibv_query_qp(p.qp[0], &qa, IBV_QP_STATE, &qi));
	KT_CHECK_EQ(qa.qp_state, IBV_QPS_ERR);
	pair_close(&p);

	/* out of range at the target */
	KT_OK(pair_open(&p, false, 0));
	w.wr_id = 3;
	w.wr.rdma.remote_addr = (uintptr_t)p.buf[1] + PAIR_BYTES - 8;
	w.wr.rdma.rkey = p.mr[1]->rkey;
	s = (struct ibv_sge){.addr = (uintptr_t)p.buf[0], .length = 64, .lkey = p.mr[0]->lkey};
	KT_OK(ibv_post_send(p.qp[0], &w, &bad));
	KT_CHECK(pair_wait(p.cq[0], &wc));
	KT_CHECK_EQ(wc.status, IBV_WC_REM_ACCESS_ERR);
	KT_CHECK(p.buf[1][PAIR_BYTES - 8] == 0);
	pair_close(&p);

	/* wrong lkey: local protection error */
	KT_OK(pair_open(&p, false, 0));
	s.lkey = p.mr[0]->lkey + 0x100;
	w.wr.rdma.remote_addr = (uintptr_t)p.buf[1];
	w.wr.rdma.rkey = p.mr[1]->rkey;
	KT_OK(ibv_post_send(p.qp[0], &w, &bad));
	KT_CHECK(pair_wait(p.cq[0], &wc));
	KT_CHECK_EQ(wc.status, IBV_WC_LOC_PROT_ERR);
	KT_CHECK_EQ(wc.vendor_err, 0x04);
	pair_close(&p);

	/* a region registered without remote write refuses a write */
	KT_OK(pair_open(&p, false, 0));
	struct ibv_mr *ro = ibv_reg_mr(p.pd, p.buf[1] + 4096, 4096, IBV_ACCESS_REMOTE_READ);
	KT_CHECK(ro);
	s = (struct ibv_sge){.addr = (uintptr_t)p.buf[0], .length = 64, .lkey = p.mr[0]->lkey};
	w.wr.rdma.remote_addr = (uintptr_t)p.buf[1] + 4096;
	w.wr.rdma.rkey = ro->rkey;
	KT_OK(ibv_post_send(p.qp[0], &w, &bad));
	KT_CHECK(pair_wait(p.cq[0], &wc));
	KT_CHECK_EQ(wc.status, IBV_WC_REM_ACCESS_ERR);
	KT_CHECK(p.buf[1][4096] == 0);
	KT_OK(ibv_dereg_mr(ro));
	pair_close(&p);

	/* bad arguments: errnos as rdma-core gives them */
	KT_OK(pair_open(&p, false, 0));
	errno = 0;
	KT_CHECK(!ibv_reg_mr(p.pd, p.buf[0], 64, IBV_ACCESS_REMOTE_WRITE));
	KT_CHECK_EQ(errno, EINVAL);
	struct ibv_qp_init_attr ud = {
		.send_cq = p.cq[0],
		.recv_cq = p.cq[0],
		.cap = {.max_send_wr = 1, .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1},
		.qp_type = IBV_QPT_UD};
	errno = 0;
	KT_CHECK(!ibv_create_qp(p.pd, &ud));
	KT_CHECK_EQ(errno, EOPNOTSUPP);
	ud.qp_type = IBV_QPT_RC;
	struct ibv_qp *q = ibv_create_qp(p.pd, &ud);
	KT_CHECK(q);
	memset(&qa, 0, sizeof(qa));
	qa.qp_state = IBV_QPS_INIT;
	qa.port_num = 1;
	/* INIT without the access flags: EINVAL (the kernel's table) */
	KT_CHECK_EQ(ibv_modify_qp(q, &qa, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT), EINVAL);
	qa.port_num = 2;
	KT_CHECK_EQ(
		ibv_modify_qp(q, &qa, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS),
		EINVAL);
	qa.port_num = 1;
	KT_OK(ibv_modify_qp(q, &qa, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS));
	/* RTS straight from INIT: EINVAL */
	qa.qp_state = IBV_QPS_RTS;
	KT_CHECK_EQ(ibv_modify_qp(q, &qa, IBV_QP_STATE), EINVAL);
	/* RTR toward a QP nobody has: unreachable, the QP stays in INIT */
	memset(&qa, 0, sizeof(qa));
	qa.qp_state = IBV_QPS_RTR;
	qa.path_mtu = IBV_MTU_1024;
	qa.dest_qp_num = (q->qp_num & 0xff0000) | 0xfff0;
	qa.max_dest_rd_atomic = 1;
	qa.ah_attr.port_num = 1;
	KT_CHECK(ibv_modify_qp(q, &qa,
			       IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
				       IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER) != 0);
	KT_CHECK_EQ(q->state, IBV_QPS_INIT);
	/* an unsupported opcode is refused at post, naming the request */
	s = (struct ibv_sge){.addr = (uintptr_t)p.buf[0], .length = 8, .lkey = p.mr[0]->lkey};
	w = (struct ibv_send_wr){.wr_id = 9, .sg_list = &s, .num_sge = 1, .opcode = IBV_WR_LOCAL_INV};
	bad = NULL;
	KT_CHECK_EQ(ibv_post_send(p.qp[0], &w, &bad), EINVAL);
	KT_CHECK(bad == &w);
	KT_OK(ibv_destroy_qp(q));
	pair_close(&p);
}

/* Teardown with work in flight: QPs, CQs and the context go while writes
 * and sends are outstanding, an armed CQ has a channel, and the directory
 * is being asked for a QP that is going away; nothing may crash or hang. */
KT_TEST(teardown_under_load)
{
	for (int round = 0; round < 5; round++) {
		struct pair p;
		struct ibv_comp_channel *ch;
		struct ibv_cq *cq;

		KT_OK(pair_open(&p, round & 1, 0));
		ch = ibv_create_comp_channel(p.ctx);
		KT_CHECK(ch);
		cq = ibv_create_cq(p.ctx, 16, NULL, ch, 0);
		KT_CHECK(cq);
		KT_OK(ibv_req_notify_cq(cq, 0));
		for (int i = 0; i < 32; i++)
			KT_OK(post_recv(&p, 1, 64 * (uint64_t)i, 64, (uint64_t)i));
		for (int i = 0; i < 48; i++)
			KT_OK(post(&p, i & 1 ? IBV_WR_SEND : IBV_WR_RDMA_WRITE, 64 * (uint64_t)(i % 32), 64,
				   4096 + 64 * (uint64_t)i, (uint64_t)i, 0));
		/* a peer asking for a QP that is being destroyed gets an answer
		 * or an error, never a freed QP */
		uint32_t qpn = p.qp[1]->qp_num;
		if (round == 2) {
			KT_OK(ibv_destroy_qp(p.qp[1]));
			p.qp[1] = NULL;
			struct ibv_qp_init_attr qa;
			memset(&qa, 0, sizeof(qa));
			qa.send_cq = p.cq[0];
			qa.recv_cq = p.cq[0];
			qa.cap.max_send_wr = qa.cap.max_recv_wr = 4;
			qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
			qa.qp_type = IBV_QPT_RC;
			struct ibv_qp *q = ibv_create_qp(p.pd, &qa);
			KT_CHECK(q);
			KT_CHECK(pair_modify(q, qpn, NULL) != 0);
			KT_OK(ibv_destroy_qp(q));
		}
		KT_OK(ibv_destroy_cq(cq));
		KT_OK(ibv_destroy_comp_channel(ch));
		if (round == 4) {
			/* the context closes with its QPs, CQs and SRQ still
			 * there and work in flight (the regions go first: the
			 * buffers are the test's to free) */
			for (int i = 0; i < 2; i++) {
				KT_OK(ibv_dereg_mr(p.mr[i]));
				free(p.buf[i]);
			}
			KT_OK(ibv_dealloc_pd(p.pd));
			KT_OK(ibv_close_device(p.ctx));
			continue;
		}
		pair_close(&p);
	}
}

KT_MAIN(device_attributes, opcodes, wr_builders_and_cq_ex, completion_channel, shared_receive_queue, errors,
	teardown_under_load)
