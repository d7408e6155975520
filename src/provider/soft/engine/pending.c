/*
 * Operations on GPU memory go through the CUDA copy engine: the engine
 * thread issues cudaMemcpyAsync on its own stream, and when its pass over
 * the QP ends records one event behind all the copies of the pass; each of
 * those operations completes (CQEs written, in order) once that event has
 * fired.  An event per pass rather than per WQE keeps the copy engine fed
 * at full peer bandwidth with host-posted batches (cudaEventRecord costs
 * about as much CPU time as the copy it follows).  One stream per thread
 * keeps a QP's copies in posting order; operations that would complete
 * synchronously wait until the QP has nothing in flight.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"

#ifdef KINET_HAVE_CUDA
#include <cuda_runtime_api.h>

int kinet_engine_thread_cuda_init(struct kinet_engine_thread *t)
{
	cudaStream_t stream;

	if (t->ctx->cuda_device < 0)
		return 0;
	if (cudaSetDevice(t->ctx->cuda_device) != cudaSuccess ||
	    cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) != cudaSuccess) {
		cudaGetLastError();
		return -ENODEV;
	}
	t->stream = stream;
	return 0;
}

void kinet_engine_thread_cuda_fini(struct kinet_engine_thread *t)
{
	for (int i = 0; i < t->nevents; i++)
		cudaEventDestroy((cudaEvent_t)t->event_pool[i]);
	free(t->event_pool);
	t->event_pool = NULL;
	t->nevents = 0;
	if (t->stream)
		cudaStreamDestroy((cudaStream_t)t->stream);
	t->stream = NULL;
}

int kinet_engine_copy(struct kinet_engine_thread *t, void *dst, enum kinet_mem_type dst_type, const void *src,
		      enum kinet_mem_type src_type, size_t len)
{
	if (dst_type == KINET_MEM_HOST && src_type == KINET_MEM_HOST) {
		/* A write or read whose local and remote ranges overlap (one
		 * buffer registered twice, or one QP connected to itself) is
		 * legal; memmove gives it a defined result. */
		memmove(dst, src, len);
		return 0;
	}
	if (!t->stream)
		return -ENODEV;
	if (!len)
		return 0;
	if (cudaMemcpyAsync(dst, src, len, cudaMemcpyDefault, (cudaStream_t)t->stream) != cudaSuccess) {
		KINET_ERR("engine: cudaMemcpyAsync of %zu bytes failed: %s", len,
			  cudaGetErrorString(cudaGetLastError()));
		return -EIO;
	}
	return 1;
}

int kinet_engine_copy_sync(struct kinet_engine_thread *t)
{
	if (!t->stream)
		return 0;
	if (cudaStreamSynchronize((cudaStream_t)t->stream) != cudaSuccess) {
		cudaGetLastError();
		return -EIO;
	}
	return 0;
}

static void *event_get(struct kinet_engine_thread *t)
{
	cudaEvent_t ev;

	if (t->nevents)
		return t->event_pool[--t->nevents];
	if (cudaEventCreateWithFlags(&ev, cudaEventDisableTiming) != cudaSuccess) {
		cudaGetLastError();
		return NULL;
	}
	return ev;
}

static void event_put(struct kinet_engine_thread *t, void *ev)
{
	if (t->nevents == t->event_cap) {
		int cap = t->event_cap ? t->event_cap * 2 : 64;
		void **pool = realloc(t->event_pool, (size_t)cap * sizeof(*pool));

		if (!pool) {
			cudaEventDestroy((cudaEvent_t)ev);
			return;
		}
		t->event_pool = pool;
		t->event_cap = cap;
	}
	t->event_pool[t->nevents++] = ev;
}

static bool event_done(void *ev)
{
	cudaError_t rc = cudaEventQuery((cudaEvent_t)ev);

	if (rc == cudaErrorNotReady)
		return false;
	if (rc != cudaSuccess)
		cudaGetLastError();
	return true;
}

static int event_record(struct kinet_engine_thread *t, void *ev)
{
	return cudaEventRecord((cudaEvent_t)ev, (cudaStream_t)t->stream) == cudaSuccess ? 0 : -EIO;
}

#else /* !KINET_HAVE_CUDA */

int kinet_engine_thread_cuda_init(struct kinet_engine_thread *t)
{
	(void)t;
	return 0;
}

void kinet_engine_thread_cuda_fini(struct kinet_engine_thread *t)
{
	(void)t;
}

int kinet_engine_copy(struct kinet_engine_thread *t, void *dst, enum kinet_mem_type dst_type, const void *src,
		      enum kinet_mem_type src_type, size_t len)
{
	(void)t;
	if (dst_type != KINET_MEM_HOST || src_type != KINET_MEM_HOST)
		return -ENODEV;
	memmove(dst, src, len); /* overlapping ranges: see above */
	return 0;
}

int kinet_engine_copy_sync(struct kinet_engine_thread *t)
{
	(void)t;
	return 0;
}

static void *event_get(struct kinet_engine_thread *t)
{
	(void)t;
	return NULL;
}

static void event_put(struct kinet_engine_thread *t, void *ev)
{
	(void)t;
	(void)ev;
}

static bool event_done(void *ev)
{
	(void)ev;
	return true;
}

static int event_record(struct kinet_engine_thread *t, void *ev)
{
	(void)t;
	(void)ev;
	return -ENODEV;
}

#endif

int kinet_pending_push(struct kinet_engine_thread *t, struct kinet_qp *qp, struct kinet_pending *proto,
		       bool tracked_by_transport)
{
	struct kinet_pending *p = malloc(sizeof(*p));

	(void)t;
	if (!p)
		return -ENOMEM;
	*p = *proto;
	p->by_copy = !tracked_by_transport;
	p->sealed = false;
	p->event = NULL;
	p->next = NULL;
	if (kinet_sqp(qp)->pending_tail)
		kinet_sqp(qp)->pending_tail->next = p;
	else
		kinet_sqp(qp)->pending_head = p;
	kinet_sqp(qp)->pending_tail = p;
	kinet_sqp(qp)->npending++;
	return 0;
}

void kinet_pending_seal(struct kinet_engine_thread *t, struct kinet_qp *qp)
{
	struct kinet_pending *last = NULL;
	void *ev;

	for (struct kinet_pending *p = kinet_sqp(qp)->pending_head; p; p = p->next)
		if (p->by_copy && !p->sealed)
			last = p;
	if (!last)
		return;
	ev = event_get(t);
	if (ev && event_record(t, ev)) {
		event_put(t, ev);
		ev = NULL;
	}
	if (!ev)
		kinet_engine_copy_sync(t); /* no event: the copies are done now */
	last->event = ev;
	for (struct kinet_pending *p = kinet_sqp(qp)->pending_head; p; p = p->next)
		if (p->by_copy)
			p->sealed = true;
}

/* A by_copy operation is done once the event covering it fired.  *fired:
 * the event this reap already saw fire.  The operations of one pass share
 * its event, and a query is a driver call (1.6-2 us of CPU time on the H200
 * host, where cudaMemcpyAsync takes 5-6 us): asked once per operation, it
 * had added a query to every GPU-memory write the engine completes. */
static bool copies_done(const struct kinet_pending *p, void **fired)
{
	if (!p->sealed)
		return false;
	for (; p; p = p->next) {
		if (!p->by_copy || !p->event)
			continue;
		if (p->event == *fired)
			return true;
		if (!event_done(p->event))
			return false;
		*fired = p->event;
		return true;
	}
	return true; /* sealed without an event: waited for at the seal */
}

static void pending_pop(struct kinet_engine_thread *t, struct kinet_qp *qp, struct kinet_pending *p)
{
	kinet_sqp(qp)->pending_head = p->next;
	if (!kinet_sqp(qp)->pending_head)
		kinet_sqp(qp)->pending_tail = NULL;
	kinet_sqp(qp)->npending--;
	if (p->event)
		event_put(t, p->event);
	free(p);
}

int kinet_pending_reap(struct kinet_engine_thread *t, struct kinet_qp *qp)
{
	int done = 0;
	struct kinet_pending *p;
	/* Events go back to the pool as their holders are popped, but are
	 * taken again only by a seal: within this reap an event is one pass's. */
	void *fired = NULL;

	while ((p = kinet_sqp(qp)->pending_head)) {
		uint8_t syndrome = 0;

		if (p->by_copy ? !copies_done(p, &fired)
			       : !kinet_sqp(qp)->transport->op_done(qp, p->token, &syndrome))
			break;
		if (syndrome || atomic_load(&qp->state) == KINET_QPS_ERR) {
			/* The first failure is reported with its syndrome;
			 * what was in flight behind it is flushed. */
			if (atomic_load(&qp->state) == KINET_QPS_ERR)
				syndrome = KINET_SYND_WR_FLUSH_ERR;
			kinet_engine_qp_fail(qp, syndrome,
					     syndrome == KINET_SYND_TRANSPORT_RETRY_EXC_ERR
						     ? KINET_VENDOR_SYND_PEER_DEAD
						     : 0,
					     p->wqe_opcode, p->wqe_counter);
		} else if (p->signaled) {
			struct kinet_cqe_desc d = {
				.cqe_opcode = KINET_CQE_REQ,
				.wqe_opcode = p->wqe_opcode,
				.wqe_counter = p->wqe_counter,
				.qpn = qp->qpn,
				.byte_cnt = p->byte_cnt,
			};
			kinet_engine_complete(qp, qp->attr.send_cq, &d);
		}
		if (p->resp_qp) {
			kinet_engine_complete(p->resp_qp, p->resp_cq, &p->resp_cqe);
			kinet_qp_put(p->resp_qp);
		}
		pending_pop(t, qp, p);
		done++;
	}
	return done;
}

void kinet_pending_drop_all(struct kinet_engine_thread *t, struct kinet_qp *qp)
{
	struct kinet_pending *p;

	while ((p = kinet_sqp(qp)->pending_head)) {
		if (p->resp_qp)
			kinet_qp_put(p->resp_qp);
		pending_pop(t, qp, p);
	}
}
