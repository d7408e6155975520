/*
 * verbs_gpu_bench: RDMA write latency and bandwidth of a plain verbs
 * program, with its buffers in host memory (malloc, ibv_reg_mr) or in GPU
 * memory registered through a dma-buf (cudaMalloc,
 * cuMemGetHandleForAddressRange, ibv_reg_dmabuf_mr with the address as
 * iova, as perftest's --use_cuda_dmabuf does).  Debian's perftest has no
 * CUDA support; this is the GPU-memory counterpart of bench/verbs_compare.sh's
 * ib_write_lat / ib_write_bw, and bench/verbs_gpu_compare.sh runs it beside
 * kinet-perf's CPU-initiated write over the same memory.
 *
 *   verbs_gpu_bench [--mem host|gpu] [-s SIZES] [-n ITERS] [--wait spin|yield|auto]
 *
 * Nothing of kinet is called: ibv_get_device_list, ibv_open_device (the
 * first device), a PD, one CQ per QP, two RC QPs of one process connected
 * to each other (QPN and GID 0 exchanged in memory, RESET -> INIT -> RTR ->
 * RTS).  Built against kinet's libibverbs.so.1 (lib/verbs of the build,
 * found through the RUNPATH, as the front door's tests are); the same source
 * runs on any libibverbs.
 *
 * Per size, QP 0 writes SIZE bytes of its source buffer to the start of
 * the destination buffer (QP 1's side), as kinet-perf write --initiator cpu
 * does:
 *  - latency: one signaled write at a time, from ibv_post_send to its
 *    completion polled by the CPU (kinet-perf write --lat --initiator cpu);
 *    median, p5 and p95 (nearest rank) in microseconds;
 *  - bandwidth: signaled writes, 64 outstanding, one work request per
 *    ibv_post_send, completions reaped 64 at a time (kinet-perf write --bw
 *    --initiator cpu, window 64); GB/s = 1e9 bytes/s, as kinet-perf prints;
 *  - each preceded by ITERS/10 (at least 8) warm-up writes, as kinet-perf's
 *    default warm-up; writes of at most 28 bytes from host memory are
 *    inline, as kinet-perf's are;
 *  - then the destination is checked against the source (copied back with
 *    cudaMemcpy for GPU memory).
 * A waiting poll spins (--wait spin), or after 1 us of empty polls yields
 * the core between polls (--wait yield); --wait auto (default) decides as
 * kinet-perf's CPU-initiated wait does in loopback: spin where the process
 * has a core for the poller and each engine thread ($KINET_ENGINE_THREADS,
 * default 1), else yield.
 *
 * Exit status: 0; 1 on a data mismatch, an error completion or a failed
 * verb; 2 on bad usage; 77 (skipped) for --mem gpu without a CUDA device
 * or dma-buf export.
 */
#define _GNU_SOURCE
#include <cuda.h>
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <errno.h>
#include <infiniband/verbs.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define SKIP 77
#define WINDOW 64
#define SQ_DEPTH 256
#define INLINE_MAX 28
#define WAIT_NS (10ull * 1000000000ull)
#define YIELD_NS 1000ull
#define MAX_SIZES 64

enum wait_mode { WAIT_AUTO, WAIT_SPIN, WAIT_YIELD };

struct stats {
	double median, p5, p95, min, max;
};

struct bench {
	bool gpu;
	bool yield;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq[2];
	struct ibv_qp *qp[2];
	uint8_t *buf[2]; /* 0: source (QP 0), 1: destination (QP 1) */
	size_t len;
	int fd[2];
	struct ibv_mr *mr[2];
	uint8_t *host; /* pattern / copy-back staging */
};

static void die(const char *what)
{
	fprintf(stderr, "verbs_gpu_bench: %s\n", what);
	exit(1);
}

static void die_errno(const char *verb, int err)
{
	fprintf(stderr, "verbs_gpu_bench: %s: %s\n", verb, strerror(err));
	exit(1);
}

static void cuda_check(cudaError_t e, const char *what)
{
	if (e != cudaSuccess) {
		fprintf(stderr, "verbs_gpu_bench: %s: %s\n", what, cudaGetErrorString(e));
		exit(1);
	}
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int parse_size(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v = strtoull(s, &end, 10);

	if (end == s)
		return -1;
	switch (*end) {
	case 'k':
	case 'K':
		v <<= 10;
		end++;
		break;
	case 'm':
	case 'M':
		v <<= 20;
		end++;
		break;
	case 'g':
	case 'G':
		v <<= 30;
		end++;
		break;
	default:
		break;
	}
	if (*end || !v || v > (1ull << 31))
		return -1;
	*out = v;
	return 0;
}

/* A comma list of sizes appended to sizes[*n]. */
static int parse_sizes(const char *arg, uint64_t *sizes, int *n)
{
	char *copy = strdup(arg), *save = NULL;
	int rc = 0;

	if (!copy)
		return -1;
	for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		if (*n >= MAX_SIZES || parse_size(t, &sizes[*n])) {
			rc = -1;
			break;
		}
		(*n)++;
	}
	free(copy);
	return rc;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Nearest rank, as kinet-perf's statistics. */
static double pct(const uint64_t *v, long n, double p)
{
	long i = (long)(p * (double)(n - 1) + 0.5);

	return (double)v[i < n ? i : n - 1] / 1000.0;
}

static void stats_of(uint64_t *ns, long n, struct stats *s)
{
	qsort(ns, (size_t)n, sizeof(*ns), cmp_u64);
	s->min = (double)ns[0] / 1000.0;
	s->max = (double)ns[n - 1] / 1000.0;
	s->p5 = pct(ns, n, 0.05);
	s->median = pct(ns, n, 0.5);
	s->p95 = pct(ns, n, 0.95);
}

/* ---- memory ---- */

typedef CUresult (*get_handle_fn)(void *, CUdeviceptr, size_t, CUmemRangeHandleType, unsigned long long);

static get_handle_fn get_handle;

/* The CUDA device and the driver's dma-buf export, or exits 77 saying why. */
static void gpu_init(void)
{
	int count = 0;
	cudaError_t e = cudaGetDeviceCount(&count);

	if (e != cudaSuccess || count == 0) {
		printf("SKIP: --mem gpu needs a CUDA device (%s)\n",
		       e != cudaSuccess ? cudaGetErrorString(e) : "none found");
		exit(SKIP);
	}
	cuda_check(cudaSetDevice(0), "cudaSetDevice");
	/* The runtime has loaded the driver; this is the same library. */
	void *cuda = dlopen("libcuda.so.1", RTLD_NOW);
	get_handle = cuda ? (get_handle_fn)dlsym(cuda, "cuMemGetHandleForAddressRange") : NULL;
	if (!get_handle) {
		printf("SKIP: the CUDA driver has no cuMemGetHandleForAddressRange (dma-buf export)\n");
		exit(SKIP);
	}
}

static void mem_alloc(struct bench *b, size_t max)
{
	int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;

	/* dma-buf export wants a page-aligned range: whole 2 MiB granules. */
	b->len = (max + (2u << 20) - 1) & ~(size_t)((2u << 20) - 1);
	b->host = malloc(b->len);
	if (!b->host)
		die("out of host memory");
	for (int i = 0; i < 2; i++) {
		b->fd[i] = -1;
		if (!b->gpu) {
			b->buf[i] = aligned_alloc(4096, b->len);
			if (!b->buf[i])
				die("out of host memory");
			memset(b->buf[i], 0, b->len);
			b->mr[i] = ibv_reg_mr(b->pd, b->buf[i], b->len, access);
			if (!b->mr[i])
				die_errno("ibv_reg_mr", errno);
			continue;
		}
		cuda_check(cudaMalloc((void **)&b->buf[i], b->len), "cudaMalloc");
		cuda_check(cudaMemset(b->buf[i], 0, b->len), "cudaMemset");
		CUresult r = get_handle(&b->fd[i], (CUdeviceptr)(uintptr_t)b->buf[i], b->len,
					CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, 0);
		if (r != CUDA_SUCCESS || b->fd[i] < 0) {
			printf("SKIP: cuMemGetHandleForAddressRange(DMA_BUF_FD) failed (CUresult %d): no "
			       "dma-buf export for GPU memory here\n",
			       (int)r);
			exit(SKIP);
		}
		b->mr[i] =
			ibv_reg_dmabuf_mr(b->pd, 0, b->len, (uint64_t)(uintptr_t)b->buf[i], b->fd[i], access);
		if (!b->mr[i])
			die_errno("ibv_reg_dmabuf_mr", errno);
	}
}

static void mem_free(struct bench *b)
{
	for (int i = 0; i < 2; i++) {
		if (b->mr[i] && ibv_dereg_mr(b->mr[i]))
			die("ibv_dereg_mr failed");
		if (b->gpu) {
			if (b->fd[i] >= 0)
				close(b->fd[i]);
			cudaFree(b->buf[i]);
		} else {
			free(b->buf[i]);
		}
	}
	free(b->host);
}

/* Source: a pattern of this size; destination: zeros. */
static void mem_prepare(struct bench *b, uint64_t size)
{
	for (uint64_t i = 0; i < size; i++)
		b->host[i] = (uint8_t)(i * 13 + size * 7 + 5);
	if (b->gpu) {
		cuda_check(cudaMemcpy(b->buf[0], b->host, size, cudaMemcpyHostToDevice), "cudaMemcpy");
		cuda_check(cudaMemset(b->buf[1], 0, size), "cudaMemset");
		cuda_check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
	} else {
		memcpy(b->buf[0], b->host, size);
		memset(b->buf[1], 0, size);
	}
}

/* 0 when the destination holds the source's pattern; else the first bad
 * byte's offset + 1. */
static uint64_t mem_check(struct bench *b, uint64_t size)
{
	const uint8_t *dst = b->buf[1];
	uint8_t *copy = NULL;

	if (b->gpu) {
		copy = malloc(size);
		if (!copy)
			die("out of host memory");
		cuda_check(cudaMemcpy(copy, b->buf[1], size, cudaMemcpyDeviceToHost), "cudaMemcpy");
		dst = copy;
	}
	uint64_t bad = 0;
	for (uint64_t i = 0; i < size && !bad; i++)
		if (dst[i] != (uint8_t)(i * 13 + size * 7 + 5))
			bad = i + 1;
	free(copy);
	return bad;
}

/* ---- verbs ---- */

static int to_rts(struct ibv_qp *qp, uint32_t dest_qpn, const union ibv_gid *gid)
{
	struct ibv_qp_attr a;
	int ret;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.pkey_index = 0;
	a.port_num = 1;
	a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
	ret = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
	if (ret)
		return ret;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_4096;
	a.dest_qp_num = dest_qpn;
	a.rq_psn = 0;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 12;
	a.ah_attr.port_num = 1;
	a.ah_attr.is_global = 1;
	a.ah_attr.grh.dgid = *gid;
	a.ah_attr.grh.sgid_index = 0;
	a.ah_attr.grh.hop_limit = 1;
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

/* The device, PD, CQs and the connected pair. */
static void verbs_open(struct bench *b)
{
	int n = 0;
	struct ibv_device **list = ibv_get_device_list(&n);
	struct ibv_port_attr port;
	union ibv_gid gid[2];
	int ret;

	if (!list || n == 0)
		die("no verbs device (ibv_get_device_list)");
	b->ctx = ibv_open_device(list[0]);
	if (!b->ctx)
		die_errno("ibv_open_device", errno);
	printf("# device: %s\n", ibv_get_device_name(list[0]));
	ibv_free_device_list(list);
	ret = ibv_query_port(b->ctx, 1, &port);
	if (ret)
		die_errno("ibv_query_port", ret);
	if (port.state != IBV_PORT_ACTIVE)
		die("port 1 is not active");
	b->pd = ibv_alloc_pd(b->ctx);
	if (!b->pd)
		die_errno("ibv_alloc_pd", errno);
	for (int i = 0; i < 2; i++) {
		struct ibv_qp_init_attr a;

		b->cq[i] = ibv_create_cq(b->ctx, SQ_DEPTH, NULL, NULL, 0);
		if (!b->cq[i])
			die_errno("ibv_create_cq", errno);
		memset(&a, 0, sizeof(a));
		a.send_cq = b->cq[i];
		a.recv_cq = b->cq[i];
		a.qp_type = IBV_QPT_RC;
		a.sq_sig_all = 0;
		a.cap.max_send_wr = SQ_DEPTH;
		a.cap.max_recv_wr = 1;
		a.cap.max_send_sge = 1;
		a.cap.max_recv_sge = 1;
		a.cap.max_inline_data = INLINE_MAX;
		b->qp[i] = ibv_create_qp(b->pd, &a);
		if (!b->qp[i])
			die_errno("ibv_create_qp", errno);
		/* What each side would send the other: its QPN and GID 0. */
		ret = ibv_query_gid(b->ctx, 1, 0, &gid[i]);
		if (ret)
			die_errno("ibv_query_gid", ret);
	}
	for (int i = 0; i < 2; i++) {
		ret = to_rts(b->qp[i], b->qp[1 - i]->qp_num, &gid[1 - i]);
		if (ret)
			die_errno("ibv_modify_qp", ret);
	}
}

static void verbs_close(struct bench *b)
{
	for (int i = 0; i < 2; i++)
		if (ibv_destroy_qp(b->qp[i]) || ibv_destroy_cq(b->cq[i]))
			die("ibv_destroy_qp/cq failed");
	if (ibv_dealloc_pd(b->pd) || ibv_close_device(b->ctx))
		die("ibv_dealloc_pd/ibv_close_device failed");
}

static void post_write(struct bench *b, uint64_t size, uint64_t id)
{
	struct ibv_sge sge;
	struct ibv_send_wr wr, *bad = NULL;
	int ret;

	sge.addr = (uint64_t)(uintptr_t)b->buf[0];
	sge.length = (uint32_t)size;
	sge.lkey = b->mr[0]->lkey;
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = id;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_RDMA_WRITE;
	wr.send_flags = IBV_SEND_SIGNALED;
	if (!b->gpu && size <= INLINE_MAX) /* the CPU reads inline data */
		wr.send_flags |= IBV_SEND_INLINE;
	wr.wr.rdma.remote_addr = (uint64_t)(uintptr_t)b->buf[1];
	wr.wr.rdma.rkey = b->mr[1]->rkey;
	ret = ibv_post_send(b->qp[0], &wr, &bad);
	if (ret)
		die_errno("ibv_post_send", ret);
}

/* Up to max completions of QP 0 (any error completion ends the run). */
static int reap(struct bench *b, int max)
{
	struct ibv_wc wc[WINDOW];
	int n = ibv_poll_cq(b->cq[0], max < WINDOW ? max : WINDOW, wc);

	if (n < 0)
		die("ibv_poll_cq failed");
	for (int i = 0; i < n; i++) {
		if (wc[i].status != IBV_WC_SUCCESS) {
			fprintf(stderr,
				"verbs_gpu_bench: error completion: %s (status %d, vendor 0x%x, wr_id "
				"%llu)\n",
				ibv_wc_status_str(wc[i].status), wc[i].status, wc[i].vendor_err,
				(unsigned long long)wc[i].wr_id);
			exit(1);
		}
		if (wc[i].opcode != IBV_WC_RDMA_WRITE) {
			fprintf(stderr, "verbs_gpu_bench: completion opcode %d, not IBV_WC_RDMA_WRITE\n",
				wc[i].opcode);
			exit(1);
		}
	}
	return n;
}

/* An empty poll since *since (0: the first of a run of them). */
static void idle_poll(struct bench *b, uint64_t *since)
{
	uint64_t now = now_ns();

	if (!*since) {
		*since = now;
		return;
	}
	if (b->yield && now - *since > YIELD_NS)
		sched_yield();
	if (now - *since > WAIT_NS)
		die("timed out waiting for completions (10 s)");
}

static void lat_run(struct bench *b, uint64_t size, long warmup, long iters, uint64_t *samples)
{
	for (long i = 0; i < warmup + iters; i++) {
		uint64_t since = 0, t0 = now_ns();

		post_write(b, size, (uint64_t)i);
		while (!reap(b, 1))
			idle_poll(b, &since);
		uint64_t t1 = now_ns();
		if (i >= warmup)
			samples[i - warmup] = t1 - t0;
	}
}

static void window_run(struct bench *b, uint64_t size, long n)
{
	long posted = 0, done = 0;
	uint64_t since = 0;

	while (done < n) {
		while (posted < n && posted - done < WINDOW)
			post_write(b, size, (uint64_t)posted++);
		int got = reap(b, WINDOW);
		done += got;
		if (got)
			since = 0;
		else
			idle_poll(b, &since);
	}
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: verbs_gpu_bench [--mem host|gpu] [-s SIZES] [-n ITERS] [--wait spin|yield|auto]\n"
		"  --mem host|gpu  source and destination in malloc'd memory (ibv_reg_mr) or in\n"
		"                  cudaMalloc'd memory through a dma-buf (ibv_reg_dmabuf_mr); default host\n"
		"  -s SIZES        comma list, K/M/G suffixes (default 8,64,4K,64K,1M,4M); may repeat\n"
		"  -n ITERS        measured writes per size and test (default 1000; warm-up ITERS/10)\n"
		"  --wait MODE     empty polls spin, or yield after 1 us; auto (default): spin with a\n"
		"                  core per engine thread and one for the poller (kinet-perf's rule)\n"
		"exit: 0; 1 data mismatch / error completion / failed verb; 2 usage; 77 no GPU (--mem "
		"gpu)\n");
}

int main(int argc, char **argv)
{
	struct bench b;
	uint64_t sizes[MAX_SIZES];
	int nsizes = 0, failed = 0;
	long iters = 1000;
	enum wait_mode wait = WAIT_AUTO;

	memset(&b, 0, sizeof(b));
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			usage(stdout);
			return 0;
		} else if (!strcmp(a, "--mem") && v) {
			if (strcmp(v, "host") && strcmp(v, "gpu")) {
				usage(stderr);
				return 2;
			}
			b.gpu = !strcmp(v, "gpu");
			i++;
		} else if ((!strcmp(a, "-s") || !strcmp(a, "--size")) && v) {
			if (parse_sizes(v, sizes, &nsizes)) {
				fprintf(stderr, "verbs_gpu_bench: bad size list '%s'\n", v);
				return 2;
			}
			i++;
		} else if ((!strcmp(a, "-n") || !strcmp(a, "--iters")) && v) {
			char *end;
			iters = strtol(v, &end, 10);
			if (*end || iters <= 0) {
				fprintf(stderr, "verbs_gpu_bench: bad iteration count '%s'\n", v);
				return 2;
			}
			i++;
		} else if (!strcmp(a, "--wait") && v) {
			if (!strcmp(v, "spin"))
				wait = WAIT_SPIN;
			else if (!strcmp(v, "yield"))
				wait = WAIT_YIELD;
			else if (!strcmp(v, "auto"))
				wait = WAIT_AUTO;
			else {
				usage(stderr);
				return 2;
			}
			i++;
		} else {
			usage(stderr);
			return 2;
		}
	}
	if (!nsizes)
		parse_sizes("8,64,4K,64K,1M,4M", sizes, &nsizes);
	uint64_t max = 0;
	for (int i = 0; i < nsizes; i++)
		max = sizes[i] > max ? sizes[i] : max;

	cpu_set_t set;
	int cores = sched_getaffinity(0, sizeof(set), &set) == 0 ? CPU_COUNT(&set) : 1;
	const char *ev = getenv("KINET_ENGINE_THREADS");
	int engines = ev && atoi(ev) > 0 ? atoi(ev) : 1;
	b.yield = wait == WAIT_YIELD || (wait == WAIT_AUTO && cores < engines + 1);
	char gpu_name[256] = "";
	if (b.gpu) {
		struct cudaDeviceProp prop;

		gpu_init();
		if (cudaGetDeviceProperties(&prop, 0) == cudaSuccess)
			snprintf(gpu_name, sizeof(gpu_name), "%s", prop.name);
	}

	printf("# verbs_gpu_bench: RDMA write, 2 RC QPs of one process (loopback), CPU posts and polls\n");
	Dl_info dl;
	if (dladdr((void *)ibv_open_device, &dl) && dl.dli_fname)
		printf("# libibverbs: %s\n", dl.dli_fname);
	verbs_open(&b);
	mem_alloc(&b, max);
	if (b.gpu)
		printf("# memory: gpu (GPU 0 %s, cudaMalloc, dma-buf fd, ibv_reg_dmabuf_mr)\n", gpu_name);
	else
		printf("# memory: host (malloc, ibv_reg_mr)\n");
	printf("# cpu: %d cores; waits %s; lat: one signaled write, post to polled completion; "
	       "bw: window %d; GB/s = 1e9 B/s\n",
	       cores, b.yield ? "yield after 1 us" : "spin", WINDOW);
	printf("%-4s %-4s %10s %10s %10s %10s %10s %10s %10s %s\n", "mode", "mem", "bytes", "iters",
	       "median_us", "p5_us", "p95_us", "GB/s", "Mops/s", "data");

	long warmup = iters / 10 < 8 ? 8 : iters / 10;
	uint64_t *samples = calloc((size_t)iters, sizeof(*samples));
	if (!samples)
		die("out of memory");
	const char *mem = b.gpu ? "gpu" : "host";
	for (int s = 0; s < nsizes; s++) {
		uint64_t size = sizes[s];
		struct stats st;

		mem_prepare(&b, size);
		lat_run(&b, size, warmup, iters, samples);
		stats_of(samples, iters, &st);
		double mean = 0;
		for (long i = 0; i < iters; i++)
			mean += (double)samples[i] / 1000.0;
		mean /= (double)iters;
		uint64_t bad = mem_check(&b, size);
		printf("%-4s %-4s %10llu %10ld %10.3f %10.3f %10.3f %10.3f %10.3f %s\n", "lat", mem,
		       (unsigned long long)size, iters, st.median, st.p5, st.p95, (double)size / (mean * 1e3),
		       1.0 / mean, bad ? "BAD" : "ok");
		if (bad) {
			fprintf(stderr, "verbs_gpu_bench: lat %llu B: destination differs at byte %llu\n",
				(unsigned long long)size, (unsigned long long)(bad - 1));
			failed = 1;
		}
		fflush(stdout);

		mem_prepare(&b, size);
		window_run(&b, size, warmup);
		uint64_t t0 = now_ns();
		window_run(&b, size, iters);
		double us = (double)(now_ns() - t0) / 1000.0;
		bad = mem_check(&b, size);
		printf("%-4s %-4s %10llu %10ld %10s %10s %10s %10.3f %10.3f %s\n", "bw", mem,
		       (unsigned long long)size, iters, "-", "-", "-",
		       (double)iters * (double)size / (us * 1e3), (double)iters / us, bad ? "BAD" : "ok");
		if (bad) {
			fprintf(stderr, "verbs_gpu_bench: bw %llu B: destination differs at byte %llu\n",
				(unsigned long long)size, (unsigned long long)(bad - 1));
			failed = 1;
		}
		fflush(stdout);
	}
	free(samples);
	mem_free(&b);
	verbs_close(&b);
	return failed;
}
