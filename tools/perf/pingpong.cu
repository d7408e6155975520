/*
 * kinet-perf --mode pingpong: two sides play ping-pong through a QP pair,
 * each from its own device code (loopback: side A is the initiator's GPU,
 * side B the target's, --peer-gpu or the same GPU on its own stream; under
 * emulation two CPU threads).  A round: A sends (write: an inline 8-byte
 * put of the round number to B's flag; put_signal: `size` bytes and +1 on
 * B's flag), B waits for its flag to reach the round and answers the same
 * way, A waits for its own flag.  Nobody waits for tickets: the answer is
 * the completion, as in the raw store ping-pongs of the peer floors, which
 * these rounds are compared with (write: the bare store round trip;
 * put_signal: store + fence + store).  A's time per round is the sample.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kinet/device.cuh"
#include "perf.h"

#if !defined(KINET_HOST_EMU)
#include <cuda_runtime.h>
#endif

/* Per side: its QP, the memory it waits on, what it sends and where. */
struct pp_side {
	struct kinet_dev_qp *qp;
	uint64_t *flag; /* in this side's buffer */
	uint8_t *src;	/* put_signal data, this side's buffer */
	uint32_t lkey;
	uint64_t rdata, rflag; /* in the other side's buffer */
	uint32_t rkey;
};

/* A's samples: written by device code, in its GPU's memory. */
#if defined(KINET_HOST_EMU)
#define PP_SAMPLES_MEM PERF_MEM_HOST
#else
#define PP_SAMPLES_MEM PERF_MEM_GPU
#endif

struct pp_args {
	struct pp_side side[2];
	int op;
	uint64_t size;
	uint64_t warmup, iters;
	uint64_t *samples; /* side A, per timed round, ns */
	uint32_t *status;  /* first failure (errno), either side */
	uint64_t *fail_at;
};

KINET_DEV_FN int pp_send(int op, uint64_t size, const struct pp_side *s, uint64_t round)
{
	if (op == PERF_OP_PUT_SIGNAL)
		return kinet_dev_put_signal(s->qp, s->src, s->lkey, s->rdata, s->rkey, size, s->rflag,
					    s->rkey, 1, NULL);
	return kinet_dev_put_inline(s->qp, &round, 8, s->rflag, s->rkey, NULL);
}

/* The arguments by value and the side picked with a select: device code
 * keeps them in registers (indexing the kernel's parameters with b would
 * put them on the stack, and every round would then reload them from L2
 * after the wait's acquire, a cost of the benchmark, not of kinet). */
KINET_DEV_FN void pp_body(struct pp_args a, int b)
{
	const struct pp_side s = b ? a.side[1] : a.side[0];
	uint64_t n = a.warmup + a.iters, old = 0;
	for (uint64_t i = 1; i <= n; i++) {
		uint64_t t0 = kinet_dev_now_ns();
		int st = 0;
		if (b)
			st = kinet_dev_signal_wait_until(s.qp, s.flag, KINET_DEV_CMP_GE, i, &old);
		if (!st)
			st = pp_send(a.op, a.size, &s, i);
		if (!st && !b)
			st = kinet_dev_signal_wait_until(s.qp, s.flag, KINET_DEV_CMP_GE, i, &old);
		if (st) {
			if (kinet_devi_atomic_cas_u32(a.status, 0, (uint32_t)-st) == 0) /* its errno */
				kinet_devi_store_relaxed_u64(a.fail_at, i);
			return;
		}
		if (!b && i > a.warmup)
			a.samples[i - 1 - a.warmup] = kinet_dev_now_ns() - t0;
	}
	/* The last sends complete before the kernel ends (the engine path
	 * still holds their WQEs). */
	kinet_dev_quiet(s.qp);
}

#if defined(KINET_HOST_EMU)
static void pp_emu(void *p)
{
	pp_body(*(struct pp_args *)p, (int)kinet_dev_block_id());
}
#else
__global__ void pp_kernel(struct pp_args a, int b)
{
	pp_body(a, b);
}
#endif

/* One side's buffer: put_signal data at 0, what the other side sends at
 * `size` (rounded to 64), the flag after it. */
struct pp_buf {
	int dev;
	enum perf_mem mem;
	uint8_t *p;
	size_t len;
	struct kinet_mr *mr;
};

static int pp_buf_open(struct pp_buf *b, struct kinet_ctx *ctx, int dev, enum perf_mem mem, uint64_t size)
{
	uint64_t at = (size + 63) & ~63ull;
	b->dev = dev;
	b->mem = mem;
	b->len = (size_t)(2 * at + 64);
	b->p = (uint8_t *)perf_alloc_on(dev, mem, b->len);
	if (!b->p || perf_fill(mem, b->p, 0, b->len))
		return -ENOMEM;
	return kinet_mr_reg(ctx, b->p, b->len,
			    KINET_ACCESS_LOCAL_WRITE | KINET_ACCESS_REMOTE_WRITE | KINET_ACCESS_REMOTE_ATOMIC,
			    &b->mr);
}

static void pp_buf_close(struct pp_buf *b)
{
	if (b->mr)
		kinet_mr_dereg(b->mr);
	if (b->p)
		perf_free_on(b->dev, b->mem, b->p);
	memset(b, 0, sizeof(*b));
}

static void pp_side_init(struct pp_side *s, struct kinet_dev_qp *qp, const struct pp_buf *mine,
			 const struct pp_buf *other, uint64_t size)
{
	uint64_t at = (size + 63) & ~63ull;
	s->qp = qp;
	s->flag = (uint64_t *)(void *)(mine->p + 2 * at);
	s->src = mine->p;
	s->lkey = kinet_mr_lkey(mine->mr);
	s->rdata = (uint64_t)(uintptr_t)(other->p + at);
	s->rflag = (uint64_t)(uintptr_t)(other->p + 2 * at);
	s->rkey = kinet_mr_rkey(other->mr);
}

#if !defined(KINET_HOST_EMU)
/* B on its device first (it waits), then A; both on streams of their own. */
static int pp_launch(const struct pp_args *a, int dev_a, int dev_b, char *err, size_t errlen)
{
	cudaStream_t s[2] = {NULL, NULL};
	int dev[2] = {dev_a, dev_b}, rc = 0;
	for (int b = 1; b >= 0 && !rc; b--) {
		perf_gpu_use(dev[b]);
		rc = perf_cuda_check(cudaStreamCreateWithFlags(&s[b], cudaStreamNonBlocking), "stream", err,
				     errlen);
		if (!rc) {
			pp_kernel<<<1, 1, 0, s[b]>>>(*a, b);
			rc = perf_cuda_check(cudaGetLastError(), "launch", err, errlen);
		}
	}
	for (int b = 0; b < 2; b++) {
		if (!s[b])
			continue;
		perf_gpu_use(dev[b]);
		if (!rc)
			rc = perf_cuda_check(cudaStreamSynchronize(s[b]), "ping-pong kernel", err, errlen);
		cudaStreamDestroy(s[b]);
	}
	perf_gpu_use(dev_a);
	return rc;
}
#endif

int perf_pingpong(struct perf_env *e, long warmup, long iters, uint64_t *samples, char *err, size_t errlen)
{
	const struct perf_opts *o = e->o;
	int dev_a = o->gpu, dev_b = o->peer_gpu >= 0 ? o->peer_gpu : o->gpu;
	struct kinet_dev_qp *qb = NULL;
	struct pp_buf buf[2];
	struct pp_args a;
	uint32_t st = 0;
	uint64_t at = 0;
	int rc;

	memset(buf, 0, sizeof(buf));
	memset(&a, 0, sizeof(a));
	/* B's QP is exported here: setup exports only the initiator's. */
	rc = kinet_qp_export(e->tgt[0].qp, &qb);
	if (!rc)
		rc = pp_buf_open(&buf[0], e->ctx, dev_a, o->src_mem, e->size);
	if (!rc)
		rc = pp_buf_open(&buf[1], e->tgt_ctx, dev_b, o->dst_mem, e->size);
	perf_gpu_use(dev_a);
	if (rc) {
		snprintf(err, errlen, "ping-pong setup: %s", kinet_strerror(rc));
		goto out;
	}
	pp_side_init(&a.side[0], e->ini[0].dev, &buf[0], &buf[1], e->size);
	pp_side_init(&a.side[1], qb, &buf[1], &buf[0], e->size);
	a.op = o->op;
	a.size = e->size;
	a.warmup = (uint64_t)warmup;
	a.iters = (uint64_t)iters;
	a.samples = (uint64_t *)perf_alloc_on(dev_a, PP_SAMPLES_MEM, (size_t)iters * 8);
	a.status = (uint32_t *)perf_alloc(PERF_MEM_HOST, 8);
	a.fail_at = (uint64_t *)perf_alloc(PERF_MEM_HOST, 8);
	if (!a.samples || !a.status || !a.fail_at) {
		snprintf(err, errlen, "out of memory");
		rc = -ENOMEM;
		goto out;
	}
	*a.status = 0;
#if defined(KINET_HOST_EMU)
	rc = kinet_emu_launch(2, pp_emu, &a);
#else
	rc = pp_launch(&a, dev_a, dev_b, err, errlen);
#endif
	if (!rc) {
		perf_copy_from(&st, a.status, sizeof(st));
		perf_copy_from(&at, a.fail_at, sizeof(at));
		if (st) {
			snprintf(err, errlen, "device status %u (%s) in round %llu", st,
				 kinet_strerror(-(int)st), (unsigned long long)at);
			rc = -(int)st;
		}
	}
	if (!rc)
		perf_copy_from(samples, a.samples, (size_t)iters * 8);
out:
	if (a.samples)
		perf_free_on(dev_a, PP_SAMPLES_MEM, a.samples);
	perf_free(PERF_MEM_HOST, a.status);
	perf_free(PERF_MEM_HOST, a.fail_at);
	pp_buf_close(&buf[0]);
	pp_buf_close(&buf[1]);
	perf_gpu_use(dev_a);
	return rc;
}
