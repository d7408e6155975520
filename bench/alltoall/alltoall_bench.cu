/*
 * kinet-alltoall-bench: kinet's device all-to-all and MoE dispatch/combine
 * beside NCCL's all-to-all of the same bytes, in the same run.
 *
 *   kinetrun -n 2 -- kinet-alltoall-bench [--tokens 1,8,128,4096] [--hidden 7168] [--topk 8]
 *       [--experts 256] [--iters 50] [--warmup 5] [--blocks B] [--threads N]
 *       [--only alltoall|moe] [--layout index|copy] [--no-nccl] [--no-check]
 *
 * One rank per GPU (KINET_LOCAL_RANK % GPUs), any number of ranks.  Per
 * token count T:
 *  - all-to-all of T * H * 2 bytes per rank pair: kinet_dev_alltoall_block
 *    in a kernel; beside it the floor (the same grid storing the same bytes
 *    into the mapped peers, no signals; only where peers are mapped) and
 *    NCCL's all-to-all (ncclAlltoAll, or grouped ncclSend/ncclRecv);
 *  - MoE dispatch and combine (examples/moe.cuh; k of E experts, E rounded
 *    down to a multiple of the ranks; the per-expert layout as indices of
 *    the received rows, or with --layout copy as copies: rows "kinet_copy_*"),
 *    beside NCCL's grouped send/recv of exactly the bytes each moves
 *    (tokens and their 112-byte records).
 * Each measurement is timed two ways per iteration: "host" = launch to the
 * end of cudaStreamSynchronize (what a program that launches the
 * collective pays), "gpu" = CUDA events around it on the stream.  Reported:
 * median, 10th and 90th percentile, min and max over the iterations (rank
 * 0's), and the largest median of any rank; bandwidth = bytes this rank
 * sends to other ranks / median.  Results are checked once per size (the
 * first round) unless --no-check.  One JSON object per line on stdout
 * (rank 0), a table on stderr.  KINET_P2P=off makes every kinet transfer
 * go through the software NIC.  Built with KINET_HOST_EMU (-emu) it runs
 * on CPU threads without NCCL (CI smoke test).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "moe_check.h"
#include "moe_host.h"

/* ---- kernels ---- */

struct a2a_arg {
	struct kinet_dev_team *team;
	uint32_t slot;
	uint64_t epoch, send_off, recv_off, bytes;
	int copy_only; /* the floor: stores into mapped peers, no signals */
	int *status;
};

KINET_DEV_FN void a2a_block(const struct a2a_arg *a)
{
	const struct kinet_dev_team *t = a->team;
	int st = 0;
	if (a->copy_only) {
		uint64_t part = kinet_dev_block_id(), nparts = kinet_dev_grid_blocks(), off, len;
		kinet_dev_alltoall_slice(a->bytes, part, nparts, &off, &len);
		for (int i = 1; i < t->size && len; i++) {
			int p = (t->rank + i) % t->size;
			void *dst = kinet_dev_team_peer_ptr(t, p,
							    a->recv_off + (uint64_t)t->rank * a->bytes + off);
			if (dst)
				kinet_dev_coll_copy_block(
					dst,
					kinet_dev_team_ptr(t, a->send_off + (uint64_t)p * a->bytes + off),
					len);
		}
	} else {
		st = kinet_dev_alltoall_block(t, a->slot, a->epoch, a->send_off, a->recv_off, a->bytes);
	}
	if (st && MOE_TID == 0)
		a->status[kinet_dev_block_id()] = st;
}

#if defined(KINET_HOST_EMU)
static void a2a_emu(void *p)
{
	a2a_block((const struct a2a_arg *)p);
}
static void empty_emu(void *p)
{
	(void)p;
}
#else
__global__ void a2a_kernel(struct a2a_arg a)
{
	a2a_block(&a);
}
__global__ void empty_kernel(void)
{
}
#endif

/* ---- timing, statistics, output ---- */

static uint64_t bench_now_ns(void)
{
#if defined(KINET_HOST_EMU)
	return kinet_emu_now_ns();
#else
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
#endif
}

static int cmp_u64(const void *x, const void *y)
{
	uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
	return a < b ? -1 : a > b;
}

static void bench_stats_of(struct bench *b, uint64_t *ns, int n, struct bench_stats *s)
{
	qsort(ns, (size_t)n, sizeof(*ns), cmp_u64);
	s->median = (double)ns[n / 2] / 1e3;
	s->p10 = (double)ns[n / 10] / 1e3;
	s->p90 = (double)ns[(n * 9) / 10 < n ? (n * 9) / 10 : n - 1] / 1e3;
	s->min = (double)ns[0] / 1e3;
	s->max = (double)ns[n - 1] / 1e3;
	double *all = (double *)calloc((size_t)b->size, sizeof(double));
	s->median_max_rank = s->median;
	if (all && !kinet_boot_allgather(b->boot, &s->median, all, sizeof(double)))
		for (int r = 0; r < b->size; r++)
			s->median_max_rank = all[r] > s->median_max_rank ? all[r] : s->median_max_rank;
	free(all);
}

static void bench_report(struct bench *b, const char *what, const char *timing, int tokens, uint64_t bytes,
			 const struct bench_stats *s)
{
	if (b->rank)
		return;
	double bw = s->median > 0 ? (double)bytes / (s->median * 1e3) : 0;
	printf("{\"tool\":\"kinet-alltoall-bench\",\"what\":\"%s\",\"timing\":\"%s\",\"ranks\":%d,\"tokens\":"
	       "%d,"
	       "\"hidden\":%d,\"topk\":%d,\"experts\":%d,\"bytes\":%llu,\"path\":\"%s\",\"gpu\":\"%s\","
	       "\"iters\":%d,\"median_us\":%.3f,\"p10_us\":%.3f,\"p90_us\":%.3f,\"min_us\":%.3f,\"max_us\":%."
	       "3f,"
	       "\"median_us_max_rank\":%.3f,\"gb_per_s\":%.3f,\"launch_floor_us\":%.3f}\n",
	       what, timing, b->size, tokens, b->o.hidden, b->o.topk, b->o.experts, (unsigned long long)bytes,
	       b->path, b->gpu, b->o.iters, s->median, s->p10, s->p90, s->min, s->max, s->median_max_rank, bw,
	       b->launch_floor_us);
	fflush(stdout);
	fprintf(stderr,
		"%-24s %-4s T=%-5d %12llu B  median %10.2f us  p10 %10.2f  p90 %10.2f  max-rank %10.2f  "
		"%8.2f GB/s\n",
		what, timing, tokens, (unsigned long long)bytes, s->median, s->p10, s->p90,
		s->median_max_rank, bw);
}

static int bench_fail(struct bench *b, const char *what, int err)
{
	fprintf(stderr, "kinet-alltoall-bench: rank %d: %s: %s\n", b->rank, what, kinet_strerror(err));
	return err ? err : -1;
}

/* ---- device memory and timers ---- */

static void *bench_dev_alloc(size_t n)
{
	return moe_dev_alloc(n);
}
static void bench_dev_free(void *p)
{
	moe_dev_free(p);
}
static int bench_copy(void *dst, const void *src, size_t n, int to_device)
{
	return moe_copy(dst, src, n, to_device);
}

static void bench_timer_start(struct bench *b)
{
#if defined(KINET_HOST_EMU)
	(void)b;
#else
	cudaEventRecord(b->ev[0], b->stream);
#endif
}

static int bench_timer_stop(struct bench *b, uint64_t *gpu_ns)
{
#if defined(KINET_HOST_EMU)
	(void)b;
	*gpu_ns = 0;
	return 0;
#else
	float ms = 0;
	cudaEventRecord(b->ev[1], b->stream);
	if (cudaStreamSynchronize(b->stream) != cudaSuccess || cudaEventElapsedTime(&ms, b->ev[0], b->ev[1]))
		return -EIO;
	*gpu_ns = (uint64_t)((double)ms * 1e6);
	return 0;
#endif
}

/* ---- NCCL ---- */

static int bench_nccl_alltoallv(struct bench *b, const uint8_t *send, const uint64_t *send_bytes,
				const uint64_t *send_displ, uint8_t *recv, const uint64_t *recv_bytes,
				const uint64_t *recv_displ)
{
#if defined(KINET_HOST_EMU)
	(void)b;
	(void)send;
	(void)send_bytes;
	(void)send_displ;
	(void)recv;
	(void)recv_bytes;
	(void)recv_displ;
	return -ENOSYS;
#else
	struct nccl_dl *n = &b->nccl;
	int r = n->group_start();
	for (int p = 0; p < b->size && !r; p++) {
		if (send_bytes[p])
			r = n->send(send + send_displ[p], send_bytes[p], NCCL_DL_UINT8, p, b->comm,
				    b->stream);
		if (!r && recv_bytes[p])
			r = n->recv(recv + recv_displ[p], recv_bytes[p], NCCL_DL_UINT8, p, b->comm,
				    b->stream);
	}
	int e = n->group_end();
	if (r || e) {
		fprintf(stderr, "kinet-alltoall-bench: NCCL: %s\n", n->error_string(r ? r : e));
		return -EIO;
	}
	return 0;
#endif
}

static int nccl_open(struct bench *b)
{
#if defined(KINET_HOST_EMU)
	b->nccl_why = "host emulation";
	return 0;
#else
	struct nccl_dl_id id;
	int rc = 0;
	if (!b->o.nccl) {
		b->nccl_why = "--no-nccl";
		return 0;
	}
	/* Every rank must agree on using NCCL: a rank that cannot load it
	 * sends a zero id. */
	memset(&id, 0, sizeof(id));
	int ok = !nccl_dl_open(&b->nccl, &b->nccl_why), all_ok = ok;
	int *oks = (int *)calloc((size_t)b->size, sizeof(int));
	if (!oks || kinet_boot_allgather(b->boot, &ok, oks, sizeof(int)))
		return -EIO;
	for (int r = 0; r < b->size; r++)
		all_ok &= oks[r];
	free(oks);
	if (!all_ok) {
		if (!b->nccl_why)
			b->nccl_why = "NCCL missing on another rank";
		return 0;
	}
	if (b->rank == 0 && b->nccl.get_unique_id(&id))
		return -EIO;
	if ((rc = kinet_boot_bcast(b->boot, &id, sizeof(id), 0)))
		return rc;
	if (b->nccl.comm_init_rank(&b->comm, b->size, id, b->rank)) {
		b->comm = NULL;
		return -EIO;
	}
	return 0;
#endif
}

/* ---- the plain all-to-all ---- */

static uint8_t a2a_pat(int from, int to, uint64_t i)
{
	return (uint8_t)(i * 13u + (uint64_t)from * 71u + (uint64_t)to * 29u + (i >> 12) + 3u);
}

#include "a2a_bench.h"
#include "moe_bench.h"

/* ---- main ---- */

static int parse(struct bench_opts *o, int argc, char **argv)
{
	static const int dflt[] = {1, 8, 128, 4096};
	memset(o, 0, sizeof(*o));
	memcpy(o->tokens, dflt, sizeof(dflt));
	o->ntokens = 4;
	o->hidden = 7168;
	o->topk = 8;
	o->experts = 256;
	o->iters = 50;
	o->warmup = 5;
	o->alltoall = o->moe = o->nccl = o->check = 1;
	o->layout = MOE_LAYOUT_INDEX;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : "";
		if (!strcmp(a, "--tokens")) {
			o->ntokens = 0;
			for (char *p = (char *)v; *p && o->ntokens < BENCH_MAX_TOKENS;) {
				long t = strtol(p, &p, 0);
				if (t > 0)
					o->tokens[o->ntokens++] = (int)t;
				if (*p == ',')
					p++;
				else
					break;
			}
		} else if (!strcmp(a, "--hidden")) {
			o->hidden = atoi(v);
		} else if (!strcmp(a, "--topk")) {
			o->topk = atoi(v);
		} else if (!strcmp(a, "--experts")) {
			o->experts = atoi(v);
		} else if (!strcmp(a, "--iters")) {
			o->iters = atoi(v);
		} else if (!strcmp(a, "--warmup")) {
			o->warmup = atoi(v);
		} else if (!strcmp(a, "--blocks")) {
			o->blocks = (unsigned)atoi(v);
		} else if (!strcmp(a, "--threads")) {
			o->threads = (unsigned)atoi(v) & ~31u;
		} else if (!strcmp(a, "--layout")) {
			o->layout = !strcmp(v, "copy") ? MOE_LAYOUT_COPY : MOE_LAYOUT_INDEX;
		} else if (!strcmp(a, "--only")) {
			o->alltoall = !strcmp(v, "alltoall");
			o->moe = !strcmp(v, "moe");
		} else if (!strcmp(a, "--no-nccl")) {
			o->nccl = 0;
			continue;
		} else if (!strcmp(a, "--no-check")) {
			o->check = 0;
			continue;
		} else {
			fprintf(stderr,
				"usage: %s [--tokens 1,8,128,4096] [--hidden 7168] [--topk 8] [--experts "
				"256] "
				"[--iters 50] [--warmup 5] [--blocks B] [--threads N] [--only alltoall|moe] "
				"[--no-nccl] [--no-check]\n",
				argv[0]);
			return 1;
		}
		i++;
	}
	if (o->ntokens < 1 || o->hidden < 8 || o->hidden % 8 || o->topk < 1 || o->topk > MOE_KMAX ||
	    o->iters < 1 || o->warmup < 1 || (!o->alltoall && !o->moe)) {
		fprintf(stderr,
			"%s: bad arguments (H a multiple of 8, 1 <= k <= %d, iters and warmup >= 1)\n",
			argv[0], MOE_KMAX);
		return 1;
	}
	return 0;
}

static int setup(struct bench *b)
{
	struct kinet_ctx_attr ca;
	int rc;
	kinet_ctx_attr_init(&ca);
#if defined(KINET_HOST_EMU)
	ca.cuda_device = KINET_CUDA_DEVICE_NONE;
	snprintf(b->gpu, sizeof(b->gpu), "none (host emulation)");
	b->sms = 2;
#else
	int ndev = 0;
	const char *lr = getenv("KINET_LOCAL_RANK");
	struct cudaDeviceProp prop;
	if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0)
		return -ENODEV;
	b->device = (lr ? atoi(lr) : b->rank) % ndev;
	if (cudaSetDevice(b->device) != cudaSuccess ||
	    cudaGetDeviceProperties(&prop, b->device) != cudaSuccess ||
	    cudaStreamCreateWithFlags(&b->stream, cudaStreamNonBlocking) != cudaSuccess ||
	    cudaEventCreate(&b->ev[0]) != cudaSuccess || cudaEventCreate(&b->ev[1]) != cudaSuccess)
		return -ENODEV;
	snprintf(b->gpu, sizeof(b->gpu), "%s", prop.name);
	b->sms = prop.multiProcessorCount;
	ca.cuda_device = b->device;
#endif
	if ((rc = kinet_ctx_open(&ca, &b->ctx)) || (rc = moe_mesh_create(b->ctx, b->boot, &b->mesh)))
		return rc;
	b->samples = (uint64_t *)calloc((size_t)b->o.iters * 2, sizeof(uint64_t));
	if (!b->samples)
		return -ENOMEM;
	if ((rc = nccl_open(b)))
		return rc;
	/* The floor of every host-launched measurement: an empty kernel. */
	for (int i = 0; i < b->o.iters; i++) {
		uint64_t t0 = bench_now_ns();
#if defined(KINET_HOST_EMU)
		kinet_emu_launch(1, empty_emu, NULL);
#else
		empty_kernel<<<1, 32, 0, b->stream>>>();
		cudaStreamSynchronize(b->stream);
#endif
		b->samples[i] = bench_now_ns() - t0;
	}
	qsort(b->samples, (size_t)b->o.iters, sizeof(uint64_t), cmp_u64);
	b->launch_floor_us = (double)b->samples[b->o.iters / 2] / 1e3;
	return 0;
}

int main(int argc, char **argv)
{
	struct bench b;
	int rc;
	memset(&b, 0, sizeof(b));
	if ((rc = kinet_boot_init(NULL, &b.boot)))
		return bench_fail(&b, "kinet_boot_init (run under kinetrun)", rc), 1;
	b.rank = kinet_boot_rank(b.boot);
	b.size = kinet_boot_size(b.boot);
	if (parse(&b.o, argc, argv))
		return 2;
	b.o.experts -= b.o.experts % b.size;
	if (b.o.experts < b.o.topk || b.o.experts > MOE_MAX_EXPERTS || b.size > MOE_MAX_RANKS) {
		fprintf(stderr, "kinet-alltoall-bench: %d ranks cannot hold %d experts\n", b.size,
			b.o.experts);
		return 2;
	}
	if ((rc = setup(&b)))
		return bench_fail(&b, "setup", rc), 1;
	if (b.rank == 0)
		fprintf(stderr,
			"kinet-alltoall-bench: %d ranks, GPU %s, NCCL %s (version %d), launch floor %.2f "
			"us\n",
			b.size, b.gpu, b.comm ? b.nccl.path : b.nccl_why, b.nccl.version, b.launch_floor_us);
	for (int i = 0; i < b.o.ntokens && !rc; i++) {
		if (b.o.alltoall)
			rc = bench_a2a(&b, b.o.tokens[i]);
		if (!rc && b.o.moe)
			rc = bench_moe(&b, b.o.tokens[i]);
	}
	kinet_boot_barrier(b.boot);
#if !defined(KINET_HOST_EMU)
	if (b.comm)
		b.nccl.comm_destroy(b.comm);
	nccl_dl_close(&b.nccl);
#endif
	kinet_mesh_destroy(b.mesh);
	kinet_ctx_close(b.ctx);
	kinet_boot_fini(b.boot);
	free(b.samples);
	return rc ? 1 : 0;
}
