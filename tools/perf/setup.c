/*
 * kinet-perf setup: one context for the run; per measured point a fresh set
 * of connected QP pairs (initiator i <-> target i), registered
 * source/target buffers, and for sends a host thread that keeps receives
 * posted at the targets (as perftest's server side).
 *
 * Loopback: both sides in this process, in one context, or with --peer-gpu
 * D in two: the target's on GPU D (its buffers there too), the QPs
 * connected across them as between any two contexts of the process.  Two
 * ranks (perf_opts.nranks 2):
 * rank 0 holds the initiator QPs and the sources, rank 1 the target QPs,
 * the destination buffer and the responder; the ranks swap their
 * kinet_qp_info and the destination's kinet_mr_info with the bootstrap's
 * allgather (not kinet_mesh: its QPs to every rank, itself included, share
 * one template, and perf wants nqps initiator QPs on one side only).
 *
 * Fresh QPs per point because a QP is driven either by device code
 * (exported) or by the host (kinet_qp_post_send), never both.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kinet/boot.h"
#include "kinet/device/types.h"
#include "perf.h"

#define PERF_ACC_ALL                                                                                         \
	(KINET_ACCESS_LOCAL_WRITE | KINET_ACCESS_REMOTE_WRITE | KINET_ACCESS_REMOTE_READ |                   \
	 KINET_ACCESS_REMOTE_ATOMIC)
#define PERF_RQ_DEPTH 512
#define PERF_TIMEOUT_MS 10000
/* Bound of each of the source and target buffers (QPs x units per QP x
 * slot): 2 GiB, or 16 GiB when both are GPU memory (132 blocks x 64 MiB
 * of --group block is 8.25 GiB). */
#define PERF_BUF_MAX_HOST (2ull << 30)
#define PERF_BUF_MAX_GPU (16ull << 30)

/* The library makes a context's device current for its CUDA calls and
 * leaves it so: after target-side calls on GPU D, kernels and allocations
 * of the initiator would otherwise land on D. */
static void back_to_initiator(const struct perf_env *e)
{
	if (e->tgt_ctx && e->tgt_ctx != e->ctx)
		perf_gpu_use(e->o->gpu);
}

int perf_env_open_ctx(struct perf_env *e, const struct perf_opts *o)
{
	struct kinet_ctx_attr attr;
	int rc;
	memset(e, 0, sizeof(*e));
	e->o = o;
	kinet_ctx_attr_init(&attr);
	attr.engine_threads = o->engine_threads;
	/* Two ranks on a machine with several GPUs: one GPU per local rank
	 * (perf_gpu_select made it current). */
	attr.cuda_device = o->emulated ? KINET_CUDA_DEVICE_NONE
				       : (o->nranks == 2 ? perf_gpu_select(o->local_rank) : o->gpu);
	rc = kinet_ctx_open(&attr, &e->ctx);
	if (rc || o->peer_gpu < 0 || o->emulated) {
		e->tgt_ctx = e->ctx;
		return rc;
	}
	/* The same attributes (engine threads) on the other GPU. */
	attr.cuda_device = o->peer_gpu;
	rc = kinet_ctx_open(&attr, &e->tgt_ctx);
	if (rc) {
		kinet_ctx_close(e->ctx);
		e->ctx = e->tgt_ctx = NULL;
		perf_gpu_use(o->gpu);
		return rc;
	}
	back_to_initiator(e);
	return 0;
}

void perf_env_close(struct perf_env *e)
{
	if (e->tgt_ctx && e->tgt_ctx != e->ctx)
		kinet_ctx_close(e->tgt_ctx);
	if (e->ctx)
		kinet_ctx_close(e->ctx);
	e->ctx = e->tgt_ctx = NULL;
}

/* GPU of the target's buffers: -1 for the current (the initiator's). */
static int tgt_gpu(const struct perf_env *e)
{
	return e->tgt_ctx && e->tgt_ctx != e->ctx ? e->o->peer_gpu : -1;
}

const char *perf_env_path(const struct perf_env *e)
{
#ifdef KINET_QP_PATH_API
	const char *path = NULL;
	for (int q = 0; e->ini && q < e->nqps; q++) {
		const char *p;
		if (!e->ini[q].qp)
			return NULL;
		p = kinet_qp_path_name(kinet_qp_get_path(e->ini[q].qp));
		if (path && strcmp(path, p))
			return "mixed";
		path = p;
	}
	return path;
#else
	(void)e;
	return NULL;
#endif
}

int perf_env_sharing(const struct perf_opts *o)
{
	int total = o->threads * o->blocks;
	if (o->sharing >= 0)
		return o->sharing;
	/* iter: the block computes, its thread 0 alone posts. */
	if (o->mode == PERF_MODE_ITER || total <= o->qps)
		return KINET_SHARE_EXCLUSIVE;
	/* Posting thread g uses QP g * qps / total: a block keeps to its own
	 * QPs exactly when the QPs divide evenly among the blocks. */
	if (o->qps % o->blocks == 0)
		return KINET_SHARE_CTA;
	return KINET_SHARE_GPU;
}

/* ---- send responder ---- */

struct responder {
	struct perf_env *e;
	pthread_t thread;
	int stop; /* atomic: set by the thread tearing down */
	int status;
};

static int post_recvs(struct perf_env *e, int q, int n)
{
	struct kinet_sge sge;
	struct kinet_recv_wr wr;
	sge.addr = (uint64_t)(uintptr_t)(e->dst + (size_t)q * e->dst_stride);
	sge.length = (uint32_t)e->size;
	sge.lkey = kinet_mr_lkey(e->dst_mr);
	wr.wr_id = (uint64_t)q;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	for (int i = 0; i < n; i++) {
		int rc = kinet_qp_post_recv(e->tgt[q].qp, &wr, 1, NULL);
		if (rc)
			return rc;
	}
	return 0;
}

/* Reposts one receive per receive completion until stopped. */
static void *responder_main(void *p)
{
	struct responder *r = (struct responder *)p;
	struct perf_env *e = r->e;
	struct kinet_wc wc[32];
	unsigned idle = 0;
	while (!__atomic_load_n(&r->stop, __ATOMIC_ACQUIRE)) {
		int got = 0;
		for (int q = 0; q < e->nqps; q++) {
			int n = kinet_cq_poll(e->tgt[q].rcq, 32, wc);
			if (n < 0) {
				r->status = n;
				return NULL;
			}
			for (int i = 0; i < n; i++) {
				if (wc[i].status) {
					r->status = -EIO;
					return NULL;
				}
			}
			if (n > 0) {
				int rc = post_recvs(e, q, n);
				if (rc) {
					r->status = rc;
					return NULL;
				}
			}
			got += n;
		}
		/* Share the CPU with the engine and the posters on small machines. */
		if (got)
			idle = 0;
		else if (++idle > 64)
			sched_yield();
	}
	return NULL;
}

/* ---- per point ---- */

static int make_side(struct perf_env *e, struct kinet_ctx *ctx, struct perf_side *s, int initiator,
		     int with_rq)
{
	const struct perf_opts *o = e->o;
	struct kinet_cq_attr ca = {.depth = 0};
	struct kinet_qp_attr qa;
	int rc;
	/* In pingpong the target side posts too (its device code answers). */
	int posts = initiator || o->mode == PERF_MODE_PINGPONG;
	/* Every WQE is signalled (the device API does so): room for a full SQ. */
	ca.depth = posts ? o->sq_depth * 2 : 16;
	rc = kinet_cq_create(ctx, &ca, &s->scq);
	if (rc)
		return rc;
	if (with_rq) {
		ca.depth = PERF_RQ_DEPTH * 2;
		rc = kinet_cq_create(ctx, &ca, &s->rcq);
		if (rc)
			return rc;
	}
	kinet_qp_attr_init(&qa);
	qa.send_cq = s->scq;
	qa.recv_cq = s->rcq;
	qa.sq_depth = posts ? o->sq_depth : 16;
	qa.stage_bytes = o->stage_bytes;
	qa.rq_depth = with_rq ? PERF_RQ_DEPTH : 0;
	qa.max_recv_sge = 1;
	qa.max_inline = 28;
	qa.db_mode = o->db_mode;
	qa.sharing = (enum kinet_qp_sharing)perf_env_sharing(o);
	qa.timeout_ms = PERF_TIMEOUT_MS;
	qa.rnr_timeout_ms = PERF_TIMEOUT_MS; /* a slow responder is retried, not an error */
	return kinet_qp_create(ctx, &qa, &s->qp);
}

static size_t align_up(size_t v, size_t a)
{
	return (v + a - 1) / a * a;
}

/* ---- two ranks ---- */

/* What a rank contributes to the exchange of a point: its status, rank 1's
 * destination, then its nqps QP descriptors. */
struct xchg_hdr {
	int32_t status; /* 0 or a negative errno */
	uint32_t nqps;
	struct kinet_mr_info dst;
};

/* The peer failed: both ranks give up the point. */
static int peer_failed(struct perf_env *e, int32_t status, char *err, size_t errlen)
{
	e->peer_failed = 1;
	snprintf(err, errlen, "rank %d failed to set up: %s", 1 - e->o->rank, kinet_strerror(status));
	return status < 0 ? status : -ECANCELED;
}

/* Swaps QP and MR descriptors with the other rank and connects this rank's
 * QPs.  rc: this rank's status so far (sent, so the peer fails too).
 * Returns a failure both ranks know of (then no further collective for the
 * point); a failure to connect, known here only, goes to *local_rc. */
static int exchange_connect(struct perf_env *e, int rc, int *local_rc, const char **what, char *err,
			    size_t errlen)
{
	int me = e->o->rank, nq = e->nqps;
	size_t len = sizeof(struct xchg_hdr) + (size_t)nq * sizeof(struct kinet_qp_info);
	uint8_t *all = (uint8_t *)calloc(2, len), *mb;
	struct xchg_hdr *mine, *peer;
	struct kinet_qp_info *mine_qps, *peer_qps;
	struct perf_side *side = me == 0 ? e->ini : e->tgt;
	if (!all) {
		/* A few hundred bytes: the peer then fails in the collective. */
		*what = "exchange with the other rank";
		return rc ? rc : -ENOMEM;
	}
	mb = all + (size_t)me * len;
	mine = (struct xchg_hdr *)mb;
	mine_qps = (struct kinet_qp_info *)(mb + sizeof(*mine));
	for (int q = 0; q < nq && !rc; q++) {
		*what = "describe QPs";
		rc = kinet_qp_pack(side[q].qp, &mine_qps[q]);
	}
	if (!rc && me == 1) {
		*what = "describe the destination";
		rc = kinet_mr_pack(e->dst_mr, &mine->dst);
	}
	mine->status = rc;
	mine->nqps = (uint32_t)nq;
	int xr = kinet_boot_allgather(e->boot, mb, all, len);
	if (xr) {
		if (!rc)
			*what = "exchange with the other rank";
		rc = rc ? rc : xr;
		goto out;
	}
	if (rc)
		goto out;
	peer = (struct xchg_hdr *)(all + (size_t)(1 - me) * len);
	peer_qps = (struct kinet_qp_info *)((uint8_t *)peer + sizeof(*peer));
	if (peer->status) {
		rc = peer_failed(e, peer->status, err, errlen);
		goto out;
	}
	*what = "connect to the other rank";
	for (int q = 0; q < nq && !*local_rc; q++)
		*local_rc = kinet_qp_connect(side[q].qp, &peer_qps[q]);
	if (me == 0) {
		e->rdst = peer->dst.addr;
		e->rkey = peer->dst.rkey;
	}
out:
	free(all);
	return rc;
}

/* Every rank's status at the end of the setup; a failure anywhere fails it
 * on both ranks. */
static int agree(struct perf_env *e, int rc, const char **what, char *err, size_t errlen)
{
	int32_t mine = rc, all[2] = {0, 0};
	int xr = kinet_boot_allgather(e->boot, &mine, all, sizeof(mine));
	if (xr) {
		if (!rc)
			*what = "exchange with the other rank";
		return rc ? rc : xr;
	}
	if (!rc && all[1 - e->o->rank])
		return peer_failed(e, all[1 - e->o->rank], err, errlen);
	return rc;
}

int perf_env_done(struct perf_env *e)
{
	return e->boot ? kinet_boot_barrier(e->boot) : 0;
}

/* ---- setup ---- */

int perf_env_setup(struct perf_env *e, uint64_t size, int gpu_init, size_t nposters, char *err, size_t errlen)
{
	const struct perf_opts *o = e->o;
	int rc = 0, is_send = o->op == PERF_OP_SEND;
	int two = e->boot != NULL;
	int ini_here = !two || o->rank == 0, tgt_here = !two || o->rank == 1;
	struct kinet_qp_info info;
	const char *what = "";
	int msg = 0; /* err already says what failed */

	e->peer_failed = 0;
	e->nqps = o->qps;
	e->size = size;
	e->gpu_init = gpu_init && ini_here;
	e->nposters = nposters ? nposters : 1;
	e->inl = o->op == PERF_OP_WRITE && size <= 28 && o->inline_mode != 0;
	e->ini = (struct perf_side *)calloc((size_t)e->nqps, sizeof(*e->ini));
	e->tgt = (struct perf_side *)calloc((size_t)e->nqps, sizeof(*e->tgt));
	if (!e->ini || !e->tgt) {
		what = "allocate";
		rc = -ENOMEM;
	}
	/* Initiators first: QPs are dealt to engine threads round robin in
	 * creation order, so the posting QPs spread over all of them. */
	if (!rc && ini_here) {
		what = "create initiator QPs";
		for (int q = 0; q < e->nqps && !rc; q++)
			rc = make_side(e, e->ctx, &e->ini[q], 1, 0);
	}
	if (!rc && tgt_here) {
		what = "create target QPs";
		for (int q = 0; q < e->nqps && !rc; q++)
			rc = make_side(e, e->tgt_ctx, &e->tgt[q], 0, is_send);
		back_to_initiator(e);
	}

	/* Buffers: the sources on the initiator's side, the destination on
	 * the target's (both here in loopback).  The layout is computed on
	 * both ranks alike. */
	/* Per QP, a slot for each unit that posts on it (units are dealt to
	 * QPs in contiguous runs, at most ceil(posters / QPs) a QP): no two
	 * units read or write the same bytes at once. */
	e->slot = align_up(size, 64);
	e->slots_per_qp = (e->nposters + (size_t)e->nqps - 1) / (size_t)e->nqps;
	e->src_stride = e->dst_stride = e->slot * e->slots_per_qp;
	size_t data = e->dst_stride * (size_t)e->nqps;
	uint64_t cap = o->src_mem == PERF_MEM_GPU && o->dst_mem == PERF_MEM_GPU ? PERF_BUF_MAX_GPU
										: PERF_BUF_MAX_HOST;
	e->src_len = data;
	e->sig_off = data; /* signal words after the data, one per QP */
	e->dst_len = data + (size_t)e->nqps * 8 + 64;
	if (!rc && (uint64_t)data > cap) {
		snprintf(
			err, errlen,
			"buffers %d QPs x %zu units x %zu B = %.2f GiB > %.0f GiB cap (%s memory): use fewer "
			"units or QPs, or a smaller size",
			e->nqps, e->slots_per_qp, e->slot, (double)data / (1u << 30),
			(double)cap / (1u << 30), cap == PERF_BUF_MAX_GPU ? "GPU" : "host");
		msg = 1;
		rc = -E2BIG;
	}
	if (!rc) {
		what = "allocate buffers";
		if (ini_here) {
			e->src = (uint8_t *)perf_alloc(o->src_mem, e->src_len);
			e->results = (uint64_t *)perf_alloc(PERF_MEM_HOST, e->nposters * 8);
			e->scratch = (uint64_t *)perf_alloc(PERF_MEM_HOST, (size_t)e->nqps * 8);
			if (!e->src || !e->results || !e->scratch)
				rc = -ENOMEM;
			else
				perf_fill(o->src_mem, e->src, 0x5a, e->src_len);
		}
		if (!rc && tgt_here) {
			e->dst = (uint8_t *)perf_alloc_on(tgt_gpu(e), o->dst_mem, e->dst_len);
			if (!e->dst)
				rc = -ENOMEM;
		}
	}
	if (!rc) {
		what = "register memory";
		if (ini_here) {
			rc = kinet_mr_reg(e->ctx, e->src, e->src_len, PERF_ACC_ALL, &e->src_mr);
			if (!rc)
				rc = kinet_mr_reg(e->ctx, e->results, e->nposters * 8, PERF_ACC_ALL,
						  &e->res_mr);
			if (!rc)
				rc = kinet_mr_reg(e->ctx, e->scratch, (size_t)e->nqps * 8, PERF_ACC_ALL,
						  &e->scratch_mr);
		}
		if (!rc && tgt_here) {
			rc = kinet_mr_reg(e->tgt_ctx, e->dst, e->dst_len, PERF_ACC_ALL, &e->dst_mr);
			back_to_initiator(e);
		}
	}

	if (two) {
		/* Reached by both ranks whatever happened so far; on a failure
		 * both know of, both stop here. */
		int local_rc = 0;
		rc = exchange_connect(e, rc, &local_rc, &what, err, errlen);
		if (rc)
			goto fail;
		rc = local_rc;
	} else if (!rc) {
		what = "connect";
		for (int q = 0; q < e->nqps && !rc; q++) {
			rc = kinet_qp_pack(e->tgt[q].qp, &info);
			if (!rc)
				rc = kinet_qp_connect(e->ini[q].qp, &info);
			if (!rc)
				rc = kinet_qp_pack(e->ini[q].qp, &info);
			if (!rc)
				rc = kinet_qp_connect(e->tgt[q].qp, &info);
		}
		back_to_initiator(e);
		e->rdst = (uint64_t)(uintptr_t)e->dst;
		e->rkey = e->dst_mr ? kinet_mr_rkey(e->dst_mr) : 0;
		if (rc)
			goto fail;
	}

	if (!rc && e->gpu_init) {
		struct kinet_dev_qp **tmp = (struct kinet_dev_qp **)calloc((size_t)e->nqps, sizeof(*tmp));
		what = "export QPs";
		if (!tmp)
			rc = -ENOMEM;
		for (int q = 0; q < e->nqps && !rc; q++) {
			struct kinet_dev_cq *dcq;
			rc = kinet_cq_export(e->ini[q].scq, &dcq);
			if (!rc)
				rc = kinet_qp_export(e->ini[q].qp, &e->ini[q].dev);
			if (rc)
				break;
			/* The export also fills the scratch buffer for the old
			 * value put_signal's add does not want. */
			tmp[q] = e->ini[q].dev;
		}
		if (!rc) {
			e->dev_qps = (struct kinet_dev_qp **)perf_alloc(PERF_MEM_HOST,
									(size_t)e->nqps * sizeof(*tmp));
			if (!e->dev_qps)
				rc = -ENOMEM;
			else
				memcpy(e->dev_qps, tmp, (size_t)e->nqps * sizeof(*tmp));
		}
		free(tmp);
	}

	if (!rc && is_send && tgt_here) {
		struct responder *r = (struct responder *)calloc(1, sizeof(*r));
		what = "post receives";
		if (!r)
			rc = -ENOMEM;
		if (r) {
			r->e = e;
			for (int q = 0; q < e->nqps && !rc; q++)
				rc = post_recvs(e, q, PERF_RQ_DEPTH);
			/* Owned by the env (stopped at teardown) once it runs. */
			if (!rc && pthread_create(&r->thread, NULL, responder_main, r))
				rc = -EAGAIN;
			if (!rc)
				e->responder = r;
			else
				free(r);
		}
	}
	/* Both ranks ready (receives posted) before rank 0 starts. */
	if (two)
		rc = agree(e, rc, &what, err, errlen);
	back_to_initiator(e);
	if (rc)
		goto fail;
	return 0;
fail:
	if (!e->peer_failed && !msg)
		snprintf(err, errlen, "%s: %s", what, kinet_strerror(rc));
	perf_env_teardown(e);
	return rc ? rc : -EIO;
}

void perf_env_teardown(struct perf_env *e)
{
	const struct perf_opts *o = e->o;
	if (e->responder) {
		struct responder *r = (struct responder *)e->responder;
		__atomic_store_n(&r->stop, 1, __ATOMIC_RELEASE);
		pthread_join(r->thread, NULL);
		free(r);
		e->responder = NULL;
	}
	for (int q = 0; e->ini && q < e->nqps; q++) {
		if (e->ini[q].qp)
			kinet_qp_destroy(e->ini[q].qp);
		if (e->tgt && e->tgt[q].qp)
			kinet_qp_destroy(e->tgt[q].qp);
	}
	for (int q = 0; e->ini && q < e->nqps; q++) {
		struct perf_side *s[2] = {&e->ini[q], e->tgt ? &e->tgt[q] : NULL};
		for (int k = 0; k < 2; k++) {
			if (!s[k])
				continue;
			if (s[k]->scq)
				kinet_cq_destroy(s[k]->scq);
			if (s[k]->rcq)
				kinet_cq_destroy(s[k]->rcq);
		}
	}
	free(e->ini);
	free(e->tgt);
	e->ini = e->tgt = NULL;
	if (e->src_mr)
		kinet_mr_dereg(e->src_mr);
	if (e->dst_mr)
		kinet_mr_dereg(e->dst_mr);
	if (e->res_mr)
		kinet_mr_dereg(e->res_mr);
	if (e->scratch_mr)
		kinet_mr_dereg(e->scratch_mr);
	e->src_mr = e->dst_mr = e->res_mr = e->scratch_mr = NULL;
	back_to_initiator(e);
	perf_free(o->src_mem, e->src);
	perf_free_on(tgt_gpu(e), o->dst_mem, e->dst);
	perf_free(PERF_MEM_HOST, e->results);
	perf_free(PERF_MEM_HOST, e->scratch);
	perf_free(PERF_MEM_HOST, e->dev_qps);
	e->src = e->dst = NULL;
	e->results = e->scratch = NULL;
	e->dev_qps = NULL;
	back_to_initiator(e);
}
