/*
 * kinet-perf: perftest-grade benchmark of kinet (ib_write_lat/ib_write_bw
 * for GPU-initiated RDMA).  See tools/perf/perf.h for the parts and
 * docs/benchmarks/ for the standard sweep.
 *
 *   kinet-perf <write|read|fetch_add|compare_swap|put_signal|send|iter>
 *              [--lat|--bw|--rate|--mode iter] [-s SIZE]... [--initiator gpu|cpu|both] [--json] ...
 *   kinet-perf eth --peer ADDR ...   the Ethernet echo client (perf/eth.c)
 *
 * Each measured point is run by device code (GPU-initiated: a kernel posts
 * and waits) and/or by the host (CPU-initiated: kinet_qp_post_send and
 * kinet_cq_poll on the same kind of QP), beside the floors of the same run.
 * Built with CUDA it runs kernels; built as C under KINET_HOST_EMU (or
 * started without a GPU, when it hands over to kinet-perf-emu) the device
 * code runs on CPU threads and the output says so.
 *
 * Topology: loopback in one process (initiator and target QPs side by
 * side), or two ranks when KINET_RANK/KINET_NRANKS say so with
 * KINET_NRANKS=2 (`kinetrun -n 2 -- kinet-perf write --lat -s 8`, or any
 * launcher that sets them and KINET_ROOT): rank 0 initiates (GPU kernel or
 * CPU posts, as in loopback), measures the floors and prints the report
 * ("topology": "two ranks (kinetrun)"); rank 1 is the target (destination
 * buffer, receives for send) and prints only errors.  Per point both ranks
 * set up together (QP and MR descriptors swapped with the bootstrap's
 * allgather) and rank 1 waits at a barrier while rank 0 measures; a final
 * allgather of the status makes both exit alike.  A point that fails on
 * rank 0 ends the run there (exit 1 without waiting for rank 1, which
 * may be the cause), and rank 1 follows when the bootstrap closes.  With
 * several GPUs each rank takes GPU KINET_LOCAL_RANK % count.
 * KINET_NRANKS > 2 is an error.
 *
 * Two GPUs in one process: --peer-gpu D (loopback only) opens the target
 * side's context on GPU D and puts the destination there, the initiator
 * staying on GPU 0; the peer floors (GPU 0 <-> D) are measured beside the
 * others, and the results are compared with them.
 */
#include <errno.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kinet/boot.h"
#include "kinet/kinet.h"
#include "perf/perf.h"

/* Bound of the collectives between the two ranks unless
 * $KINET_BOOT_TIMEOUT_MS says otherwise: rank 1 waits at a barrier for
 * the whole of a point (and rank 0's floors). */
#define PERF_COLL_TIMEOUT_MS 600000

static char emu_note[256];

#if !defined(KINET_HOST_EMU)
/* The CUDA build without a usable GPU runs its emulated twin instead. */
static void handover_to_emu(char **argv)
{
	char self[4096], path[4096 + 32];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0)
		return;
	self[n] = 0;
	snprintf(path, sizeof(path), "%s/kinet-perf-emu", dirname(self));
	if (access(path, X_OK))
		return;
	setenv("KINET_PERF_EMU_REASON", "no usable GPU: the CUDA build handed over to kinet-perf-emu", 1);
	execv(path, argv);
}
#endif

static void join_args(char *buf, size_t len, int argc, char **argv)
{
	size_t used = 0;
	buf[0] = 0;
	for (int i = 0; i < argc && used + 1 < len; i++) {
		const char *a = i == 0 ? "kinet-perf" : argv[i];
		int w = snprintf(buf + used, len - used, "%s%s", i ? " " : "", a);
		if (w < 0)
			break;
		used += (size_t)w;
	}
}

/* Units that post at a point (the buffers get a slot per unit): GPU
 * threads, warps or blocks in bw/rate, a host thread per QP for the
 * CPU-initiated bw/rate, one in lat and iter.  Both ranks size alike. */
static size_t point_posters(const struct perf_opts *o, int initiator)
{
	if (o->mode != PERF_MODE_BW && o->mode != PERF_MODE_RATE)
		return 1;
	return initiator == PERF_INIT_GPU ? (size_t)perf_units(o) : (size_t)o->qps;
}

static void fill_common(struct perf_result *x, const struct perf_env *e, int initiator, uint64_t size,
			long warmup, long iters)
{
	const struct perf_opts *o = e->o;
	x->op = o->op;
	x->mode = o->mode;
	x->initiator = initiator;
	x->size = size;
	x->threads = o->threads;
	x->blocks = o->blocks;
	x->qps = o->qps;
	x->engine_threads = o->engine_threads;
	x->group = initiator == PERF_INIT_GPU ? o->group : PERF_GROUP_THREAD;
	/* The mode the QPs got (AUTO resolved by the provider). */
	x->db_mode = e->ini && e->ini[0].qp ? kinet_qp_db_mode(e->ini[0].qp) : o->db_mode;
	x->sharing = perf_env_sharing(o);
	x->src_mem = o->src_mem;
	x->dst_mem = o->dst_mem;
	x->inl = e->inl;
	x->path = perf_env_path(e);
	x->iters = iters;
	x->warmup = warmup;
	x->window = o->mode == PERF_MODE_BW || o->mode == PERF_MODE_RATE ? o->window : 1;
	if (o->emulated && o->mode == PERF_MODE_ITER)
		x->threads = 1; /* an emulated block is one CPU thread */
}

/* Set when a run of two ranks cannot go on: the rest of the sweep and the
 * final status exchange are skipped. */
static int abandoned;

/* End of a point that was set up: the barrier with rank 1 (two ranks),
 * then the QPs and buffers go.  A point that failed on rank 0 ends the
 * run instead: the failure may be rank 1's (stopped, hung, unreachable),
 * and then the barrier and every collective after it would each wait out
 * PERF_COLL_TIMEOUT_MS.  Rank 0's exit closes the bootstrap, which fails
 * rank 1's collective at once. */
static int finish_point(struct perf_env *e, int rc, char *err, size_t errlen)
{
	int br = 0;
	if (rc && e->boot)
		abandoned = 1;
	else
		br = perf_env_done(e);
	perf_env_teardown(e);
	if (!rc && br) {
		snprintf(err, errlen, "barrier with rank 1: %s", kinet_strerror(br));
		rc = br;
		abandoned = 1; /* the bootstrap answers nothing after this */
	}
	return rc;
}

/* Engine counters of ctx's threads (at most PERF_MAX_ENGINES); 0 when the
 * provider has no engine threads. */
#define PERF_MAX_ENGINES 256
static int engine_snapshot(struct kinet_ctx *ctx, struct kinet_engine_stats *s)
{
	int n = kinet_ctx_engine_stats(ctx, 0, &s[0]);
	if (n <= 0)
		return 0;
	if (n > PERF_MAX_ENGINES)
		n = PERF_MAX_ENGINES;
	for (int i = 1; i < n; i++)
		if (kinet_ctx_engine_stats(ctx, i, &s[i]) < 0)
			return 0;
	return n;
}

/* Where the limit is: how busy the engine threads were over wall_ns. */
static void engine_usage(struct perf_result *x, int n, const struct kinet_engine_stats *a,
			 const struct kinet_engine_stats *b, uint64_t wall_ns)
{
	double busy = 0, wqes = 0, max = 0, spin = 0, yield = 0, sleep = 0;
	if (n <= 0 || !wall_ns)
		return;
	for (int i = 0; i < n; i++) {
		double f = (double)(b[i].busy_ns - a[i].busy_ns) / (double)wall_ns;
		busy += (double)(b[i].busy_ns - a[i].busy_ns);
		wqes += (double)(b[i].wqes - a[i].wqes);
		spin += (double)(b[i].spin_ns - a[i].spin_ns);
		yield += (double)(b[i].yield_ns - a[i].yield_ns);
		sleep += (double)(b[i].sleep_ns - a[i].sleep_ns);
		if (f > max)
			max = f;
	}
	/* The idle policy's states, as shares of the threads' time. */
	x->eng_spin = spin / ((double)wall_ns * n);
	x->eng_yield = yield / ((double)wall_ns * n);
	x->eng_sleep = sleep / ((double)wall_ns * n);
	x->have_engine = 1;
	x->eng_busy_max = max;
	x->eng_busy_mean = busy / ((double)wall_ns * n);
	x->eng_wqes = wqes;
	x->eng_ns_per_wqe = wqes > 0 ? busy / wqes : 0;
}

static int run_lat(struct perf_report *rep, struct perf_env *e, uint64_t size, int initiator)
{
	const struct perf_opts *o = e->o;
	long iters = perf_iters_for(o, size), warmup = perf_warmup_for(o, size);
	struct perf_result *x = perf_report_add(rep);
	uint64_t *samples = (uint64_t *)calloc((size_t)iters, 8);
	double total_us = 0;
	int rc;
	if (!x || !samples) {
		free(samples);
		return -ENOMEM;
	}
	rc = perf_env_setup(e, size, initiator == PERF_INIT_GPU, 1, x->error, sizeof(x->error));
	fill_common(x, e, initiator, size, warmup, iters);
	if (!rc) {
		static struct kinet_engine_stats before[PERF_MAX_ENGINES], after[PERF_MAX_ENGINES];
		int neng = engine_snapshot(e->ctx, before);
		uint64_t t0 = perf_now_ns();
		if (o->mode == PERF_MODE_PINGPONG)
			rc = perf_pingpong(e, warmup, iters, samples, x->error, sizeof(x->error));
		else if (initiator == PERF_INIT_GPU)
			rc = perf_gpu_lat(e, warmup, iters, samples, &total_us, x->error, sizeof(x->error));
		else
			rc = perf_cpu_lat(e, warmup, iters, samples, x->error, sizeof(x->error));
		if (initiator == PERF_INIT_CPU || o->mode == PERF_MODE_PINGPONG)
			total_us = (double)(perf_now_ns() - t0) / 1000.0;
		/* Latency: how the engine spent the run (busy, or its idle
		 * policy between operations). */
		if (!rc && neng && engine_snapshot(e->ctx, after) == neng)
			engine_usage(x, neng, before, after, perf_now_ns() - t0);
		rc = finish_point(e, rc, x->error, sizeof(x->error));
	}
	x->status = -rc;
	if (!rc) {
		perf_stats_ns(samples, (uint64_t)iters, &x->lat);
		x->have_lat = 1;
		x->elapsed_us = total_us;
		x->ops = (double)iters;
		x->bytes = (double)iters * (double)size;
		x->mops = x->lat.mean > 0 ? 1.0 / x->lat.mean : 0;
		x->bw_gbs = x->lat.mean > 0 ? (double)size / (x->lat.mean * 1e3) : 0;
	}
	free(samples);
	return rc;
}

static int run_bw(struct perf_report *rep, struct perf_env *e, uint64_t size, int initiator)
{
	const struct perf_opts *o = e->o;
	long iters = perf_iters_for(o, size), warmup = perf_warmup_for(o, size);
	struct perf_result *x = perf_report_add(rep);
	size_t posters = point_posters(o, initiator);
	double elapsed = 0;
	int rc;
	if (!x)
		return -ENOMEM;
	rc = perf_env_setup(e, size, initiator == PERF_INIT_GPU, posters, x->error, sizeof(x->error));
	fill_common(x, e, initiator, size, warmup, iters);
	if (initiator == PERF_INIT_CPU) {
		/* One host thread per QP posts. */
		x->threads = o->qps;
		x->blocks = 1;
		x->sharing = KINET_SHARE_EXCLUSIVE;
	}
	if (!rc) {
		static struct kinet_engine_stats before[PERF_MAX_ENGINES], after[PERF_MAX_ENGINES];
		int neng = engine_snapshot(e->ctx, before);
		uint64_t t0 = perf_now_ns();
		if (initiator == PERF_INIT_GPU)
			rc = perf_gpu_bw(e, warmup, iters, o->window, &elapsed, x->error, sizeof(x->error));
		else
			rc = perf_cpu_bw(e, warmup, iters, o->window, &elapsed, x->error, sizeof(x->error));
		uint64_t t1 = perf_now_ns();
		if (!rc && neng && engine_snapshot(e->ctx, after) == neng)
			engine_usage(x, neng, before, after, t1 - t0);
		rc = finish_point(e, rc, x->error, sizeof(x->error));
	}
	x->status = -rc;
	if (!rc && elapsed > 0) {
		x->elapsed_us = elapsed;
		x->ops = (double)posters * (double)iters;
		x->bytes = x->ops * (double)size;
		x->bw_gbs = x->bytes / (elapsed * 1e3);
		x->mops = x->ops / elapsed;
	}
	return rc;
}

/* iter mode: the three ways of the comparison, then what explains them:
 * the put + wait part of the persistent iteration (timed inside it), and
 * the compute step after a fence.acq_rel.sys (an L1 invalidation). */
#define PERF_ITER_VARIANTS 4
static int run_iter(struct perf_report *rep, struct perf_env *e, uint64_t size)
{
	static const char *const names[] = {"gpu-persistent", "cpu-kernel-boundary", "compute-only",
					    "compute+acq_rel.sys"};
	const struct perf_opts *o = e->o;
	long iters = perf_iters_for(o, size), warmup = perf_warmup_for(o, size);
	uint64_t *samples = (uint64_t *)calloc((size_t)iters, 8);
	uint64_t *phase = (uint64_t *)calloc((size_t)iters, 8);
	int worst = 0;
	if (!samples || !phase) {
		free(samples);
		free(phase);
		return -ENOMEM;
	}
	for (int v = 0; v < PERF_ITER_VARIANTS && !abandoned; v++) {
		struct perf_result *x = perf_report_add(rep);
		int init = v == 1 ? PERF_INIT_CPU : PERF_INIT_GPU;
		int rc;
		if (!x) {
			worst = -ENOMEM;
			break;
		}
		rc = perf_env_setup(e, size, v != 1, 1, x->error, sizeof(x->error));
		fill_common(x, e, init, size, warmup, iters);
		x->variant = names[v];
		x->inl = 0;
		if (!rc) {
			rc = perf_iter(e, v, warmup, iters, samples, v == 0 ? phase : NULL, x->error,
				       sizeof(x->error));
			rc = finish_point(e, rc, x->error, sizeof(x->error));
		}
		x->status = -rc;
		if (!rc) {
			perf_stats_ns(samples, (uint64_t)iters, &x->lat);
			x->have_lat = 1;
			x->ops = (double)iters;
			x->elapsed_us = x->lat.mean * (double)iters;
			x->mops = x->lat.mean > 0 ? 1.0 / x->lat.mean : 0;
		} else {
			worst = rc;
		}
		if (v == 0 && !rc) {
			/* The put + wait part of the same iterations (adding may
			 * move the results: x by index). */
			int xi = (int)(x - rep->res);
			struct perf_result *y = perf_report_add(rep);
			if (!y) {
				worst = -ENOMEM;
				break;
			}
			*y = rep->res[xi];
			y->variant = "gpu-put+wait";
			perf_stats_ns(phase, (uint64_t)iters, &y->lat);
			y->mops = y->lat.mean > 0 ? 1.0 / y->lat.mean : 0;
			y->elapsed_us = y->lat.mean * (double)iters;
		}
	}
	free(samples);
	free(phase);
	return worst;
}

/* Rank 1 of two: the target side of one point, in step with rank 0. */
static int serve_point(struct perf_env *e, uint64_t size, size_t posters)
{
	char err[256];
	int rc = perf_env_setup(e, size, 0, posters, err, sizeof(err));
	if (rc) {
		/* A failure of rank 0's is in rank 0's report. */
		if (!e->peer_failed)
			fprintf(stderr, "kinet-perf: rank 1, %llu B: %s\n", (unsigned long long)size, err);
		return rc;
	}
	rc = finish_point(e, 0, err, sizeof(err));
	if (rc)
		fprintf(stderr, "kinet-perf: rank 1, %llu B: %s\n", (unsigned long long)size, err);
	return rc;
}

/* KINET_RANK/KINET_NRANKS: 0 (loopback, or two ranks noted in o), or 2
 * for a usage error (printed). */
static int two_rank_env(struct perf_opts *o)
{
	const char *vr = getenv("KINET_RANK"), *vn = getenv("KINET_NRANKS"), *vl = getenv("KINET_LOCAL_RANK");
	char *end;
	long n, r;
	if (!vr || !vn)
		return 0;
	n = strtol(vn, &end, 10);
	if (*vn == 0 || *end || n < 1) {
		fprintf(stderr, "kinet-perf: bad KINET_NRANKS '%s'\n", vn);
		return 2;
	}
	if (n == 1)
		return 0; /* one rank: loopback */
	if (n > 2) {
		fprintf(stderr,
			"kinet-perf: KINET_NRANKS=%ld: kinet-perf runs in one process (loopback) or between "
			"two "
			"ranks (kinetrun -n 2), not %ld\n",
			n, n);
		return 2;
	}
	r = strtol(vr, &end, 10);
	if (*vr == 0 || *end || r < 0 || r > 1) {
		fprintf(stderr, "kinet-perf: bad KINET_RANK '%s' for KINET_NRANKS=2\n", vr);
		return 2;
	}
	o->nranks = 2;
	o->rank = (int)r;
	o->local_rank = vl && atoi(vl) >= 0 ? atoi(vl) : o->rank;
	return 0;
}

/* --peer-gpu: 0 when usable here, else 2 (printed). */
static int check_peer_gpu(const struct perf_opts *o)
{
	int n = perf_gpu_count();
	if (o->peer_gpu < 0)
		return 0;
	if (o->nranks == 2) {
		fprintf(stderr, "kinet-perf: --peer-gpu is for loopback (one process); with two ranks each "
				"rank takes GPU KINET_LOCAL_RANK %% (GPU count)\n");
		return 2;
	}
	if (o->emulated) {
		fprintf(stderr, "kinet-perf: --peer-gpu %d: no GPUs under host emulation (%s)\n", o->peer_gpu,
			o->emu_reason);
		return 2;
	}
	if (o->peer_gpu >= n) {
		fprintf(stderr,
			"kinet-perf: --peer-gpu %d: out of range, this machine has %d GPU%s (0..%d)\n",
			o->peer_gpu, n, n == 1 ? "" : "s", n - 1);
		return 2;
	}
	if (o->peer_gpu == o->gpu)
		fprintf(stderr,
			"kinet-perf: --peer-gpu %d is the initiator's GPU: the target gets a context of its "
			"own "
			"there and the floors measure the GPU against itself\n",
			o->peer_gpu);
	return 0;
}

/* Every size of the run, on the context env holds; 1 when a point failed. */
static int run_sizes(struct perf_report *rep, struct perf_env *env, const struct perf_opts *po, int target)
{
	const struct perf_opts *o = po;
	int failed = 0, rc;
	for (int i = 0; i < o->nsizes && !abandoned; i++) {
		uint64_t size = o->sizes[i];
		if (target) {
			/* The same points as rank 0, in the same order (and
			 * the same buffer layout). */
			if (o->mode == PERF_MODE_ITER) {
				for (int p = 0; p < PERF_ITER_VARIANTS && !abandoned; p++)
					failed |= serve_point(env, size, 1) != 0;
				continue;
			}
			for (int init = PERF_INIT_GPU; init <= PERF_INIT_CPU && !abandoned; init <<= 1)
				if (o->initiator & init)
					failed |= serve_point(env, size, point_posters(o, init)) != 0;
			continue;
		}
		if (o->mode == PERF_MODE_ITER) {
			failed |= run_iter(rep, env, size) != 0;
			continue;
		}
		for (int init = PERF_INIT_GPU; init <= PERF_INIT_CPU && !abandoned; init <<= 1) {
			if (!(o->initiator & init))
				continue;
			if (o->mode == PERF_MODE_LAT || o->mode == PERF_MODE_PINGPONG)
				rc = run_lat(rep, env, size, init);
			else
				rc = run_bw(rep, env, size, init);
			failed |= rc != 0;
		}
	}
	return failed;
}

int main(int argc, char **argv)
{
	struct perf_opts o;
	struct perf_report rep;
	struct perf_env env;
	struct kinet_boot *boot = NULL;
	char cmd[2048], gpu[256], peer_gpu[256];
	int rc, failed = 0, target;

	perf_opts_defaults(&o);
	join_args(cmd, sizeof(cmd), argc, argv);
	o.command = cmd;
#if defined(KINET_HOST_EMU)
	o.emulated = 1;
	o.emu_reason = getenv("KINET_PERF_EMU_REASON");
	if (!o.emu_reason)
		o.emu_reason = "built without CUDA (kinet-perf-emu / KINET_CUDA=OFF)";
	snprintf(gpu, sizeof(gpu), "host emulation (device code on CPU threads)");
#else
	if (!perf_gpu_present(gpu, sizeof(gpu))) {
		handover_to_emu(argv);
		fprintf(stderr, "kinet-perf: no usable GPU, and no kinet-perf-emu next to this program\n");
		return 2;
	}
#endif
	/* The Ethernet echo client: after the hand-over above, so that its
	 * floor is the GPU's where there is one, the CPU threads' otherwise. */
	if (argc > 1 && !strcmp(argv[1], "eth"))
		return perf_eth_main(argc - 1, argv + 1);
	rc = perf_opts_parse(&o, argc, argv);
	if (rc)
		return rc > 0 ? 0 : 2;
	if (two_rank_env(&o))
		return 2;
	target = o.nranks == 2 && o.rank == 1;
#if !defined(KINET_HOST_EMU)
	if (o.nranks == 2) {
		/* One GPU per local rank where there are several. */
		o.gpu = perf_gpu_select(o.local_rank);
		perf_gpu_present(gpu, sizeof(gpu));
	}
#endif
	if (check_peer_gpu(&o))
		return 2;
	if (o.emulated && (o.src_mem == PERF_MEM_GPU || o.dst_mem == PERF_MEM_GPU)) {
		snprintf(emu_note, sizeof(emu_note), "%s; GPU memory requested but absent: host memory used",
			 o.emu_reason);
		o.emu_reason = emu_note;
		o.src_mem = o.dst_mem = PERF_MEM_HOST;
	}
	if (o.engine_threads <= 0) {
		const char *v = getenv("KINET_ENGINE_THREADS");
		o.engine_threads = v && atoi(v) > 0 ? atoi(v) : 1;
	}

	memset(&rep, 0, sizeof(rep));
	rep.o = &o;
	rep.device = gpu;
	if (o.peer_gpu >= 0) {
		perf_gpu_name(o.peer_gpu, peer_gpu, sizeof(peer_gpu));
		rep.peer_device = peer_gpu;
	}
	if (o.nranks == 2) {
		rc = kinet_boot_init(NULL, &boot);
		if (rc) {
			fprintf(stderr, "kinet-perf: rank %d: kinet_boot_init: %s\n", o.rank,
				kinet_strerror(rc));
			return 1;
		}
		if (!getenv("KINET_BOOT_TIMEOUT_MS"))
			kinet_boot_set_timeout(boot, PERF_COLL_TIMEOUT_MS);
	}
	/* Floors first, while the engine threads do not exist yet (rank 1
	 * starts its own once rank 0 has measured them). */
	if (o.floors && !target) {
		perf_floors_measure(&o, &rep.floors);
		if (o.peer_gpu >= 0)
			perf_peer_floors_measure(&o, &rep.floors.peer);
	}
	if (o.floors && boot)
		perf_rank_floors_measure(&o, boot, &rep.floors.ranks);
	if (boot && (rc = kinet_boot_barrier(boot))) {
		fprintf(stderr, "kinet-perf: rank %d: barrier: %s\n", o.rank, kinet_strerror(rc));
		kinet_boot_fini(boot);
		return 1;
	}

	/* One run per engine-thread count of the sweep (a context each). */
	for (int ei = 0; ei < (o.nengines ? o.nengines : 1) && !abandoned; ei++) {
		if (o.nengines)
			o.engine_threads = o.engine_list[ei];
		rc = perf_env_open_ctx(&env, &o);
		if (rc) {
			fprintf(stderr, "kinet-perf: rank %d: kinet_ctx_open: %s\n", o.rank,
				kinet_strerror(rc));
			kinet_boot_fini(boot);
			return 1;
		}
		env.boot = boot;
		rep.provider = kinet_ctx_provider(env.ctx);
		failed |= run_sizes(&rep, &env, &o, target);
		if (ei + 1 < (o.nengines ? o.nengines : 1) && !abandoned)
			perf_env_close(&env);
	}

	if (!target) {
		perf_report_table(&rep, o.json ? stderr : stdout);
		if (o.json)
			perf_report_json(&rep, stdout);
		fflush(stdout);
	}
	if (boot && abandoned) {
		fprintf(stderr,
			"kinet-perf: rank %d: run abandoned after a failure (see above); not waiting for "
			"rank %d\n",
			o.rank, 1 - o.rank);
		failed = 1;
	} else if (boot) {
		/* Both ranks exit alike: a failure of either fails both. */
		int32_t mine = failed, all[2] = {0, 0};
		rc = kinet_boot_allgather(boot, &mine, all, sizeof(mine));
		if (rc) {
			fprintf(stderr, "kinet-perf: rank %d: final status exchange: %s\n", o.rank,
				kinet_strerror(rc));
			failed = 1;
		} else if (all[0] || all[1]) {
			failed = 1;
		}
	}
	perf_env_close(&env);
	kinet_boot_fini(boot);
	perf_report_free(&rep);
	return failed ? 1 : 0;
}
