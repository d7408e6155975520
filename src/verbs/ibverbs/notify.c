/*
 * Completion channels and asynchronous events.  ConnectX raises an event
 * when a CQE lands in an armed CQ; the software NIC writes CQEs from its
 * engine threads, which must not block on a program's file descriptors, so
 * a notifier thread per context watches the armed CQs (and the SRQs with a
 * limit) and writes to the channels' descriptors.  They are pipes: a
 * program can read, poll or epoll them as it would a uverbs descriptor.
 * Each event on a channel is the CQ's address (8 bytes, one write below
 * PIPE_BUF, so never torn).
 *
 * Arming (ibv_req_notify_cq) and the notifier's test are under the
 * context's lock; a CQ that holds an untaken CQE when it is armed gets its
 * event at once, which programs tolerate (they poll after arming), where a
 * missed event would be a hang.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "front.h"
#include "verbs.h"

struct kinet_verbs_channel {
	struct ibv_comp_channel ch;
	int write_fd;
};

KINET_VERBS_EXPORT struct ibv_comp_channel *ibv_create_comp_channel(struct ibv_context *context)
{
	struct kinet_verbs_channel *c;
	int fd[2];

	if (!context) {
		errno = EINVAL;
		return NULL;
	}
	c = calloc(1, sizeof(*c));
	if (!c) {
		errno = ENOMEM;
		return NULL;
	}
	if (pipe2(fd, O_CLOEXEC)) {
		free(c);
		return NULL;
	}
	/* The notifier never blocks on a reader: an event that does not fit
	 * finds the reader with 8192 events not taken, and the CQ stays
	 * armed for the next pass. */
	fcntl(fd[1], F_SETFL, O_NONBLOCK);
	c->ch.context = context;
	c->ch.fd = fd[0];
	c->ch.refcnt = 0; /* CQs using it, under the context's lock */
	c->write_fd = fd[1];
	return &c->ch;
}

KINET_VERBS_EXPORT int ibv_destroy_comp_channel(struct ibv_comp_channel *channel)
{
	struct kinet_verbs_channel *c = (struct kinet_verbs_channel *)channel;
	struct kinet_verbs_context *ctx;
	int busy;

	if (!channel)
		return EINVAL;
	ctx = kinet_verbs_ctx(channel->context);
	pthread_mutex_lock(&ctx->lock);
	busy = channel->refcnt;
	pthread_mutex_unlock(&ctx->lock);
	if (busy)
		return EBUSY;
	close(c->ch.fd);
	close(c->write_fd);
	free(c);
	return 0;
}

KINET_VERBS_EXPORT int ibv_get_cq_event(struct ibv_comp_channel *channel, struct ibv_cq **cq,
					void **cq_context)
{
	uint64_t v;
	ssize_t n;

	if (!channel || !cq) {
		errno = EINVAL;
		return -1;
	}
	do
		n = read(channel->fd, &v, sizeof(v));
	while (n < 0 && errno == EINTR);
	if (n != sizeof(v)) {
		if (n >= 0)
			errno = EIO;
		return -1;
	}
	*cq = (struct ibv_cq *)(uintptr_t)v;
	if (cq_context)
		*cq_context = (*cq)->cq_context;
	return 0;
}

KINET_VERBS_EXPORT void ibv_ack_cq_events(struct ibv_cq *cq, unsigned int nevents)
{
	if (!cq)
		return;
	pthread_mutex_lock(&cq->mutex);
	cq->comp_events_completed += nevents;
	pthread_cond_signal(&cq->cond);
	pthread_mutex_unlock(&cq->mutex);
}

int kinet_verbs_req_notify_cq(struct ibv_cq *ibcq, int solicited_only)
{
	struct kinet_verbs_cq *cq = kinet_verbs_cq(ibcq);
	struct kinet_verbs_context *ctx = kinet_verbs_ctx(ibcq->context);

	/* Solicited-only arms for any completion: an event more is allowed,
	 * a missed one is not. */
	(void)solicited_only;
	if (!ibcq->channel)
		return EINVAL;
	pthread_mutex_lock(&ctx->lock);
	cq->armed = true;
	pthread_cond_signal(&ctx->wake);
	pthread_mutex_unlock(&ctx->lock);
	return 0;
}

static void async_event(struct kinet_verbs_context *ctx, const struct ibv_async_event *event)
{
	/* The async pipe is the program's to drain; an event it never reads
	 * must not stop the notifier. */
	if (write(ctx->async_pipe[1], event, sizeof(*event)) != sizeof(*event))
		fprintf(stderr, "kinet verbs: async event %s lost (%s)\n",
			ibv_event_type_str(event->event_type), strerror(errno));
}

KINET_VERBS_EXPORT int ibv_get_async_event(struct ibv_context *context, struct ibv_async_event *event)
{
	ssize_t n;

	if (!context || !event) {
		errno = EINVAL;
		return -1;
	}
	do
		n = read(context->async_fd, event, sizeof(*event));
	while (n < 0 && errno == EINTR);
	if (n != sizeof(*event)) {
		if (n >= 0)
			errno = EIO;
		return -1;
	}
	return 0;
}

KINET_VERBS_EXPORT void ibv_ack_async_event(struct ibv_async_event *event)
{
	/* Events carry no reference here: destroy does not wait for acks. */
	(void)event;
}

/* One pass over the armed objects: 2 while a CQ or SRQ is armed (watched
 * closely), 1 while only QPs on SRQs are watched (for their last WQE
 * event, every 10 ms), 0 when nothing is. */
static int scan(struct kinet_verbs_context *ctx)
{
	bool armed = false, watched = false;

	for (struct kinet_verbs_cq *cq = ctx->cqs; cq; cq = cq->next) {
		if (!cq->armed)
			continue;
		if (kinet_front_cq_pending(cq->kcq)) {
			struct kinet_verbs_channel *c = (struct kinet_verbs_channel *)cq->cq.channel;
			uint64_t v = (uintptr_t)&cq->cq;

			if (write(c->write_fd, &v, sizeof(v)) == sizeof(v)) {
				cq->armed = false;
				continue;
			}
		}
		armed = true;
	}
	for (struct kinet_verbs_srq *srq = ctx->srqs; srq; srq = srq->next) {
		if (!srq->limit)
			continue;
		if (kinet_srq_outstanding(srq->ksrq) < srq->limit) {
			struct ibv_async_event e = {.element.srq = &srq->srq,
						    .event_type = IBV_EVENT_SRQ_LIMIT_REACHED};

			srq->limit = 0; /* one event per arming, as on ConnectX */
			async_event(ctx, &e);
			continue;
		}
		armed = true;
	}
	for (struct kinet_verbs_qp *qp = ctx->qps; qp; qp = qp->next) {
		/* A QP on an SRQ that went to error: the last WQE event tells
		 * the program it may destroy it (no more SRQ WQEs taken). */
		if (!qp->qpx.qp_base.srq || qp->last_wqe_sent)
			continue;
		if (kinet_qp_get_state(qp->kqp) == KINET_QPS_ERR) {
			struct ibv_async_event e = {.element.qp = &qp->qpx.qp_base,
						    .event_type = IBV_EVENT_QP_LAST_WQE_REACHED};

			qp->last_wqe_sent = true;
			async_event(ctx, &e);
			continue;
		}
		watched = true;
	}
	return armed ? 2 : watched ? 1 : 0;
}

static void *notifier(void *arg)
{
	struct kinet_verbs_context *ctx = arg;
	unsigned idle = 0;

	pthread_mutex_lock(&ctx->lock);
	while (!ctx->stopping) {
		int what = scan(ctx);

		if (what < 2) {
			struct timespec t;

			idle = 0;
			if (!what) {
				pthread_cond_wait(&ctx->wake, &ctx->lock);
				continue;
			}
			clock_gettime(CLOCK_REALTIME, &t);
			t.tv_nsec += 10000000;
			if (t.tv_nsec >= 1000000000) {
				t.tv_sec++;
				t.tv_nsec -= 1000000000;
			}
			pthread_cond_timedwait(&ctx->wake, &ctx->lock, &t);
			continue;
		}
		pthread_mutex_unlock(&ctx->lock);
		/* Armed and waiting: yield for a while (an event wants the
		 * latency of a poll), then sleep in 50 us steps (a program
		 * blocked on a channel for long should not cost a core). */
		if (idle++ < 2000)
			sched_yield();
		else
			nanosleep(&(struct timespec){.tv_nsec = 50000}, NULL);
		pthread_mutex_lock(&ctx->lock);
	}
	pthread_mutex_unlock(&ctx->lock);
	return NULL;
}

int kinet_verbs_notifier_start(struct kinet_verbs_context *ctx)
{
	return pthread_create(&ctx->notifier, NULL, notifier, ctx);
}

void kinet_verbs_notifier_stop(struct kinet_verbs_context *ctx)
{
	pthread_mutex_lock(&ctx->lock);
	ctx->stopping = true;
	pthread_cond_signal(&ctx->wake);
	pthread_mutex_unlock(&ctx->lock);
	pthread_join(ctx->notifier, NULL);
}
