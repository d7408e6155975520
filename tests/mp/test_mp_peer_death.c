/*
 * A peer that dies mid-run: this process forks a child, the two connect two
 * QPs over the node transport (descriptors through pipes), check that an
 * operation works, then the child kills itself with SIGKILL while one of
 * our sends waits at it for a receive.  That outstanding send, and an
 * operation posted afterwards on the other QP, must fail with
 * TRANSPORT_RETRY_EXC (vendor syndrome "peer dead") well within bounded
 * time, and this process must shut down cleanly.  Then the same with the
 * child killed while large writes into it are being transferred.
 *
 * Built again with PEER_LOSS_AFTER_TIMEOUT, the parent's QPs carry
 * KINET_QP_ATTR_PEER_LOSS_AFTER_TIMEOUT (as the verbs front door's do):
 * then both failures come no sooner than the QP's timeout after the post,
 * as on a NIC whose retries run out, and still within bounded time.
 */
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kt_mp.h"

/* The QP timeout, from which every bound below is derived: a live peer
 * may be silent this long on a loaded machine (a fixed 500 ms failed the
 * working write under ThreadSanitizer on a loaded 2-core machine), and a
 * dead one is found within a small multiple of it. */
#define TIMEOUT_MS (2000u * kt_time_scale())
#define BUF_LEN (16u << 20)
#define NBIG 48
#ifdef PEER_LOSS_AFTER_TIMEOUT
#define QP_FLAGS KINET_QP_ATTR_PEER_LOSS_AFTER_TIMEOUT
#else
#define QP_FLAGS 0u
#endif

struct side {
	struct kinet_ctx *ctx;
	struct kinet_cq *cq[2];
	struct kinet_qp *qp[2];
	struct kinet_mr *mr;
	uint8_t *buf; /* BUF_LEN bytes */
};

struct hello {
	struct kinet_qp_info qp[2];
	struct kinet_mr_info mr;
};

static int side_open(struct side *s, int with_recv)
{
	struct kinet_ctx_attr ca;
	struct kinet_cq_attr cqa = {.depth = 64};
	struct kinet_qp_attr qa;
	int rc;

	kinet_ctx_attr_init(&ca);
	ca.cuda_device = KINET_CUDA_DEVICE_NONE;
	if (!(s->buf = calloc(1, BUF_LEN)))
		return -ENOMEM;
	if ((rc = kinet_ctx_open(&ca, &s->ctx)) ||
	    (rc = kinet_mr_reg(s->ctx, s->buf, BUF_LEN, KT_ACC_ALL, &s->mr)))
		return rc;
	for (int i = 0; i < 2; i++) {
		if ((rc = kinet_cq_create(s->ctx, &cqa, &s->cq[i])))
			return rc;
		kinet_qp_attr_init(&qa);
		qa.send_cq = s->cq[i];
		qa.recv_cq = with_recv ? s->cq[i] : NULL;
		qa.timeout_ms = TIMEOUT_MS;
		qa.rnr_timeout_ms = 20000; /* the send waits at the target until it dies */
		qa.flags = QP_FLAGS;
		if ((rc = kinet_qp_create(s->ctx, &qa, &s->qp[i])))
			return rc;
	}
	return 0;
}

static int hello_of(struct side *s, struct hello *h)
{
	int rc = kinet_mr_pack(s->mr, &h->mr);

	for (int i = 0; !rc && i < 2; i++)
		rc = kinet_qp_pack(s->qp[i], &h->qp[i]);
	return rc;
}

static int xfer(int fd, void *p, size_t n, int out)
{
	for (size_t done = 0; done < n;) {
		ssize_t r =
			out ? write(fd, (char *)p + done, n - done) : read(fd, (char *)p + done, n - done);
		if (r <= 0)
			return -1;
		done += (size_t)r;
	}
	return 0;
}

static int poll_one(struct kinet_cq *cq, struct kinet_wc *wc, unsigned ms)
{
	return mp_poll(cq, 1, wc, ms) == 1 ? 0 : -1;
}

/* The victim: connects, says so, waits for the word (or, watching, for
 * the first write to land), dies. */
static void child(int rd, int wr, bool watch)
{
	struct side s;
	struct hello mine, peer;
	char c;

	memset(&s, 0, sizeof(s));
	if (side_open(&s, 1) || hello_of(&s, &mine) || xfer(wr, &mine, sizeof(mine), 1) ||
	    xfer(rd, &peer, sizeof(peer), 0))
		_exit(1);
	for (int i = 0; i < 2; i++)
		if (kinet_qp_connect(s.qp[i], &peer.qp[i]))
			_exit(1);
	c = 'r';
	if (!watch && xfer(wr, &c, 1, 1))
		_exit(1);
	if (watch) {
		/* Die once the first write (with immediate) is placed, with the
		 * others on their way. */
		struct kinet_sge sge = {(uint64_t)(uintptr_t)s.buf, 0, kinet_mr_lkey(s.mr)};
		struct kinet_recv_wr rwr = {.wr_id = 1, .sg_list = &sge, .num_sge = 1};
		struct kinet_wc wc;

		if (kinet_qp_post_recv(s.qp[0], &rwr, 1, NULL) || xfer(wr, &c, 1, 1))
			_exit(1);
		/* Dies either way: on a starved machine the requester may have
		 * taken this process for dead (silent for its timeout) and
		 * failed the write before it landed; what the parent checks
		 * holds then too. */
		poll_one(s.cq[0], &wc, 20000);
	} else if (xfer(rd, &c, 1, 0)) {
		_exit(1);
	}
	raise(SIGKILL);
	_exit(1);
}

#ifdef PEER_DEATH_MID_WRITE
/* Forks the victim and connects to it; returns its pid, or -1. */
static pid_t start_child(struct side *s, struct hello *peer, int *to_child, int *from_child, bool watch)
{
	struct hello mine;
	char c;

	if (pipe(to_child) || pipe(from_child))
		return -1;
	pid_t pid = fork();
	if (pid == 0) {
		close(to_child[1]);
		close(from_child[0]);
		child(to_child[0], from_child[1], watch);
	}
	close(to_child[0]);
	close(from_child[1]);
	memset(s, 0, sizeof(*s));
	if (pid < 0 || side_open(s, 0) || hello_of(s, &mine) || xfer(from_child[0], peer, sizeof(*peer), 0) ||
	    xfer(to_child[1], &mine, sizeof(mine), 1))
		return -1;
	for (int i = 0; i < 2; i++)
		if (kinet_qp_connect(s->qp[i], &peer->qp[i]))
			return -1;
	if (xfer(from_child[0], &c, 1, 0))
		return -1;
	return pid;
}

/* The child dies while NBIG writes of BUF_LEN into it are on their way:
 * those it had placed complete, the one in transfer fails with
 * TRANSPORT_RETRY_EXC within the timeout, the rest are flushed. */
KT_TEST(peer_killed_mid_write)
{
	int to_child[2], from_child[2], status = 0;
	struct side s;
	struct hello peer;
	struct kinet_wc wc;
	pid_t pid = start_child(&s, &peer, to_child, from_child, true);
	KT_CHECK(pid > 0);
	for (int i = 0; i < NBIG; i++) {
		struct kinet_sge sge = {(uint64_t)(uintptr_t)s.buf, BUF_LEN, kinet_mr_lkey(s.mr)};
		struct kinet_send_wr wr = {.wr_id = (uint64_t)i,
					   .opcode = i ? KINET_WR_RDMA_WRITE : KINET_WR_RDMA_WRITE_WITH_IMM,
					   .send_flags = KINET_SEND_SIGNALED,
					   .sg_list = &sge,
					   .num_sge = 1,
					   .remote_addr = peer.mr.addr,
					   .rkey = peer.mr.rkey};
		KT_OK(kinet_qp_post_send(s.qp[0], &wr, 1, NULL));
	}
	/* The child kills itself once the first write landed. */
	KT_CHECK_EQ(waitpid(pid, &status, 0), pid);
	KT_CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);

	uint64_t t0 = kt_now_ms();
	int errors = 0;
	for (int i = 0; i < NBIG; i++) {
		KT_OK(poll_one(s.cq[0], &wc, 4 * TIMEOUT_MS));
		KT_CHECK_EQ(wc.wr_id, (uint64_t)i);
		if (errors)
			KT_CHECK_EQ(wc.status, KINET_SYND_WR_FLUSH_ERR);
		else if (wc.status)
			KT_CHECK_EQ(wc.status, KINET_SYND_TRANSPORT_RETRY_EXC_ERR);
		errors += wc.status != 0;
	}
	KT_CHECK(errors > 0);
	KT_CHECK(kt_now_ms() - t0 < 4 * TIMEOUT_MS);
	KT_CHECK_EQ(kinet_qp_get_state(s.qp[0]), KINET_QPS_ERR);
	KT_OK(kinet_ctx_close(s.ctx));
	free(s.buf);
	close(to_child[1]);
	close(from_child[0]);
}

#else
KT_TEST(peer_killed)
{
	int to_child[2], from_child[2], status = 0;
	struct side s;
	struct hello mine, peer;
	struct kinet_wc wc;
	char c;

	KT_OK(pipe(to_child));
	KT_OK(pipe(from_child));
	pid_t pid = fork();
	KT_CHECK(pid >= 0);
	if (pid == 0) {
		close(to_child[1]);
		close(from_child[0]);
		child(to_child[0], from_child[1], false);
	}
	close(to_child[0]);
	close(from_child[1]);
	memset(&s, 0, sizeof(s));
	KT_OK(side_open(&s, 0));
	KT_OK(hello_of(&s, &mine));
	KT_OK(xfer(from_child[0], &peer, sizeof(peer), 0));
	KT_OK(xfer(to_child[1], &mine, sizeof(mine), 1));
	for (int i = 0; i < 2; i++)
		KT_OK(kinet_qp_connect(s.qp[i], &peer.qp[i]));
	KT_OK(xfer(from_child[0], &c, 1, 0));

	/* It works while the child lives. */
	struct kinet_sge sge = {(uint64_t)(uintptr_t)s.buf, 64, kinet_mr_lkey(s.mr)};
	struct kinet_send_wr wr = {.wr_id = 1,
				   .opcode = KINET_WR_RDMA_WRITE,
				   .send_flags = KINET_SEND_SIGNALED,
				   .sg_list = &sge,
				   .num_sge = 1,
				   .remote_addr = peer.mr.addr,
				   .rkey = peer.mr.rkey};
	KT_OK(kinet_qp_post_send(s.qp[0], &wr, 1, NULL));
	KT_OK(poll_one(s.cq[0], &wc, 4 * TIMEOUT_MS));
	KT_CHECK_EQ(wc.status, 0);

	/* A send the child never posts a receive for: outstanding at death. */
	wr.wr_id = 2;
	wr.opcode = KINET_WR_SEND;
	uint64_t posted = kt_now_ms();
	KT_OK(kinet_qp_post_send(s.qp[0], &wr, 1, NULL));
	wr.wr_id = 3;
	wr.opcode = KINET_WR_RDMA_WRITE;
	KT_OK(kinet_qp_post_send(s.qp[0], &wr, 1, NULL));
	usleep(50000);
	KT_OK(xfer(to_child[1], &c, 1, 1));
	KT_CHECK_EQ(waitpid(pid, &status, 0), pid);
	KT_CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);

	uint64_t t0 = kt_now_ms();
	KT_OK(poll_one(s.cq[0], &wc, 4 * TIMEOUT_MS));
	uint64_t dt = kt_now_ms() - t0;
	KT_CHECK_EQ(wc.wr_id, 2);
	KT_CHECK_EQ(wc.status, KINET_SYND_TRANSPORT_RETRY_EXC_ERR);
	KT_CHECK_EQ(wc.vendor_err, 0xf3); /* KINET_VENDOR_SYND_PEER_DEAD */
	KT_CHECK(dt < 2 * TIMEOUT_MS);
	if (QP_FLAGS)
		KT_CHECK(kt_now_ms() - posted >= TIMEOUT_MS);
	KT_OK(poll_one(s.cq[0], &wc, 4 * TIMEOUT_MS));
	KT_CHECK_EQ(wc.wr_id, 3);
	KT_CHECK_EQ(wc.status, KINET_SYND_WR_FLUSH_ERR);

	/* Later operations on the other QP to the dead peer fail too. */
	wr.wr_id = 4;
	t0 = kt_now_ms();
	KT_OK(kinet_qp_post_send(s.qp[1], &wr, 1, NULL));
	KT_OK(poll_one(s.cq[1], &wc, 4 * TIMEOUT_MS));
	KT_CHECK(kt_now_ms() - t0 < 2 * TIMEOUT_MS);
	if (QP_FLAGS)
		KT_CHECK(kt_now_ms() - t0 >= TIMEOUT_MS);
	KT_CHECK_EQ(wc.status, KINET_SYND_TRANSPORT_RETRY_EXC_ERR);

	KT_OK(kinet_ctx_close(s.ctx));
	free(s.buf);
	close(to_child[1]);
	close(from_child[0]);
}

#endif

/* One fork per process: a child forked after the parent used kinet would
 * share its node id (and so its shared-memory names).  The mid-write case
 * is built as its own program (PEER_DEATH_MID_WRITE). */
#ifdef PEER_DEATH_MID_WRITE
KT_MAIN(peer_killed_mid_write)
#else
KT_MAIN(peer_killed)
#endif
