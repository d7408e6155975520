/*
 * The CPU's part of the ConnectX provider: doorbells the CPU rings (host
 * posting; the CPU-assisted mode, where device code publishes a 64-bit
 * producer index in host memory and a progress thread turns it into the
 * doorbell record and the UAR doorbell, as NVSHMEM's CPU proxy and
 * GPUNetIO's CPU_PROXY handler do), the NIC's asynchronous events, and
 * error CQEs found by the host poller, all surfaced as the software NIC
 * surfaces its own (first error recorded, QP to the error state).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <string.h>
#include <time.h>

#include "mlx5.h"
#include "mlx5_mmio.h"

/* Idle back-off of the progress thread: spin, then yield, then sleep
 * (a CPU-assisted doorbell waits at most one sleep). */
#define SPIN_PASSES 2000
#define YIELD_PASSES 200
#define IDLE_SLEEP_NS 20000

/* Rings QP mq's doorbell for producer index pi (ring_lock held): the
 * doorbell record, then the 8-byte doorbell, each ordered before the
 * next (mlx5_mmio.h). */
static void ring_locked(struct kinet_qp *qp, uint64_t pi)
{
	__atomic_store_n(&qp->dbrec[KINET_DBR_SEND], kinet_be32((uint32_t)pi & 0xffff), __ATOMIC_RELEASE);
	kinet_mlx5_wmb();
	kinet_mlx5_mmio_write64(kinet_qp_db_reg(qp), kinet_mlx5_doorbell(qp->qpn, pi));
	kinet_mlx5_mmio_flush();
	__atomic_store_n(&kinet_mqp(qp)->rung, pi, __ATOMIC_RELAXED);
}

/* CPU-assisted mode: the producer index device code (or the host)
 * published, rung when it moved.  1 when it rang. */
static int ring_cpu(struct kinet_qp *qp)
{
	struct kinet_mlx5_qp *mq = kinet_mqp(qp);
	uint64_t pi = atomic_load_explicit(qp->db_cpu, memory_order_acquire);
	int rang = 0;

	int state = atomic_load(&qp->state);

	/* The common case, nothing new, without the lock.  In the error
	 * state too: the NIC flushes what it is told of, so that device code
	 * sees every WQE complete, as on the software NIC. */
	if (pi == __atomic_load_n(&mq->rung, __ATOMIC_RELAXED) ||
	    (state != KINET_QPS_RTS && state != KINET_QPS_ERR))
		return 0;
	pthread_mutex_lock(&mq->ring_lock);
	if (pi > mq->rung && pi - mq->rung <= qp->sq_bbs) {
		ring_locked(qp, pi);
		rang = 1;
	} else if (pi != mq->rung && !mq->db_bad++) {
		/* As the software NIC: a producer index behind, or more than a
		 * ring ahead, cannot be right; ignored, said once per QP. */
		KINET_WARN("mlx5: qp %u: bad producer index %llu (rung %llu, ring of %u); ignored", qp->qpn,
			   (unsigned long long)pi, (unsigned long long)mq->rung, qp->sq_bbs);
	}
	pthread_mutex_unlock(&mq->ring_lock);
	return rang;
}

void kinet_mlx5_ring(struct kinet_qp *qp, const uint8_t *last)
{
	struct kinet_mlx5_qp *mq = kinet_mqp(qp);

	(void)last;
	/* Host posting uses the plain 8-byte doorbell in every mode (a
	 * BlueFlame copy from the CPU saves nothing worth the WC care). */
	if (qp->db_mode == KINET_DB_CPU) {
		atomic_store_explicit(qp->db_cpu, qp->sq_pi, memory_order_release);
		ring_cpu(qp);
		return;
	}
	pthread_mutex_lock(&mq->ring_lock);
	ring_locked(qp, qp->sq_pi);
	pthread_mutex_unlock(&mq->ring_lock);
}

static void record(struct kinet_qp *qp, int status, uint8_t syndrome, uint8_t opcode, uint16_t counter,
		   const char *why)
{
	kinet_ctx_record_error(qp->ctx, status, qp->qpn, syndrome, opcode, counter);
	atomic_store(&kinet_mqp(qp)->hw_error, true);
	kinet_qp_to_error(qp, why);
}

void kinet_mlx5_cq_error(struct kinet_cq *cq, struct kinet_qp *qp, const struct kinet_cqe64 *cqe)
{
	struct kinet_mlx5_cqe_error e;

	if (!kinet_mlx5_cqe_error_decode(cqe, &e))
		return;
	if (e.first_error) {
		KINET_INFO(
			"QP %u: WQE %u (opcode 0x%02x) failed, syndrome 0x%02x (%s), vendor syndrome 0x%02x",
			e.qpn, e.wqe_counter, e.wqe_opcode, e.syndrome, kinet_wc_status_str(e.syndrome),
			e.vendor_syndrome);
		kinet_ctx_record_error(cq->ctx, -EIO, e.qpn, e.syndrome, e.wqe_opcode, e.wqe_counter);
	}
	if (qp) {
		atomic_store(&kinet_mqp(qp)->hw_error, true);
		kinet_qp_to_error(qp, "error completion");
	}
}

/* A CQ the NIC reports overrun (IBV_EVENT_CQ_ERR): as the software NIC's
 * overrun, fatal to the CQ and to every QP completing to it. */
static void cq_overrun(struct kinet_mlx5_ctx *m, struct ibv_cq *ibcq)
{
	struct kinet_ctx *ctx = &m->ctx;
	struct kinet_cq *cq;

	pthread_mutex_lock(&ctx->obj_lock);
	for (cq = ctx->cqs; cq; cq = cq->next_in_ctx)
		if (kinet_mcq(cq)->ibcq && ibv_cq_ex_to_cq(kinet_mcq(cq)->ibcq) == ibcq)
			break;
	if (cq) {
		KINET_ERR("CQ of depth %u overran: completions are lost", cq->depth);
		kinet_ctx_record_error(ctx, -EOVERFLOW, 0, KINET_SYND_LOCAL_QP_OP_ERR, 0, 0);
		for (struct kinet_qp *qp = ctx->qps; qp; qp = qp->next_in_ctx)
			if (qp->attr.send_cq == cq || qp->attr.recv_cq == cq)
				kinet_qp_to_error(qp, "its completion queue overran");
		/* Last: a poller that sees -EOVERFLOW sees the QPs in error. */
		atomic_store(&cq->overrun, true);
	}
	pthread_mutex_unlock(&ctx->obj_lock);
}

static void async_event(struct kinet_mlx5_ctx *m, struct ibv_async_event *ev)
{
	const char *name = m->v->event_type_str(ev->event_type);
	struct kinet_qp *qp;

	switch (ev->event_type) {
	case IBV_EVENT_QP_FATAL:
	case IBV_EVENT_QP_REQ_ERR:
	case IBV_EVENT_QP_ACCESS_ERR:
		/* The QP stays allocated until this event is acknowledged
		 * (ibv_destroy_qp waits for it), so qp_context is safe. */
		qp = ev->element.qp->qp_context;
		KINET_INFO("mlx5: qp %u: %s", qp->qpn, name);
		record(qp, -EIO, KINET_SYND_LOCAL_QP_OP_ERR, 0, 0, name);
		break;
	case IBV_EVENT_CQ_ERR:
		cq_overrun(m, ev->element.cq);
		break;
	case IBV_EVENT_DEVICE_FATAL:
		KINET_ERR("mlx5: %s: %s: every QP of the context is in error", m->device, name);
		pthread_mutex_lock(&m->ctx.obj_lock);
		for (qp = m->ctx.qps; qp; qp = qp->next_in_ctx)
			kinet_qp_to_error(qp, name);
		pthread_mutex_unlock(&m->ctx.obj_lock);
		kinet_ctx_record_error(&m->ctx, -EIO, 0, 0, 0, 0);
		break;
	case IBV_EVENT_PORT_ERR:
		KINET_WARN("mlx5: %s port %u: %s (work in flight will fail when its retries run out)",
			   m->device, ev->element.port_num, name);
		break;
	default:
		KINET_DBG("mlx5: %s: %s", m->device, name);
		break;
	}
	m->v->ack_async_event(ev);
}

static void *progress_main(void *arg)
{
	struct kinet_mlx5_ctx *m = arg;
	struct ibv_async_event ev;
	unsigned idle = 0;

	while (!atomic_load_explicit(&m->stop, memory_order_acquire)) {
		int work = 0;

		pthread_mutex_lock(&m->lock);
		for (struct kinet_mlx5_qp *mq = m->cpu_qps; mq; mq = mq->next_cpu)
			work |= ring_cpu(&mq->qp);
		pthread_mutex_unlock(&m->lock);
		/* The async fd is non-blocking: no event, no wait. */
		while (!m->v->get_async_event(m->verbs, &ev)) {
			async_event(m, &ev);
			work = 1;
		}
		if (work) {
			idle = 0;
		} else if (++idle > SPIN_PASSES + YIELD_PASSES) {
			struct timespec ts = {0, IDLE_SLEEP_NS};

			nanosleep(&ts, NULL);
		} else if (idle > SPIN_PASSES) {
			sched_yield();
		}
	}
	return NULL;
}

int kinet_mlx5_progress_start(struct kinet_mlx5_ctx *m)
{
	int fl = fcntl(m->verbs->async_fd, F_GETFL);
	int rc;

	if (fl < 0 || fcntl(m->verbs->async_fd, F_SETFL, fl | O_NONBLOCK) < 0) {
		KINET_ERR("mlx5: cannot make the async event fd non-blocking: %s", strerror(errno));
		return -errno;
	}
	atomic_store(&m->stop, false);
	rc = pthread_create(&m->progress, NULL, progress_main, m);
	if (rc) {
		KINET_ERR("mlx5: progress thread: %s", strerror(rc));
		return -rc;
	}
	m->progress_running = true;
	kinet_pollers_add(true, 1);
	return 0;
}

void kinet_mlx5_progress_stop(struct kinet_mlx5_ctx *m)
{
	if (!m->progress_running)
		return;
	atomic_store_explicit(&m->stop, true, memory_order_release);
	pthread_join(m->progress, NULL);
	m->progress_running = false;
	kinet_pollers_add(true, -1);
}

void kinet_mlx5_progress_add(struct kinet_qp *qp)
{
	struct kinet_mlx5_ctx *m = kinet_mctx(qp->ctx);
	struct kinet_mlx5_qp *mq = kinet_mqp(qp);

	if (qp->db_mode != KINET_DB_CPU)
		return;
	pthread_mutex_lock(&m->lock);
	mq->next_cpu = m->cpu_qps;
	m->cpu_qps = mq;
	mq->on_cpu_list = true;
	pthread_mutex_unlock(&m->lock);
}

void kinet_mlx5_progress_remove(struct kinet_qp *qp)
{
	struct kinet_mlx5_ctx *m = kinet_mctx(qp->ctx);
	struct kinet_mlx5_qp *mq = kinet_mqp(qp);

	pthread_mutex_lock(&m->lock);
	for (struct kinet_mlx5_qp **p = &m->cpu_qps; *p && mq->on_cpu_list; p = &(*p)->next_cpu) {
		if (*p == mq) {
			*p = mq->next_cpu;
			mq->on_cpu_list = false;
			break;
		}
	}
	pthread_mutex_unlock(&m->lock);
}
