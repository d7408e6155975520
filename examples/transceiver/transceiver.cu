/*
 * transceiver: receive, process and answer from one persistent kernel
 * (NVQLink's GPU RoCE transceiver, on kinet), beside the same service as a
 * CPU loop.  server.cuh is the kernel, client.c the requester, cpu_server.c
 * the CPU loop, protocol.h what they agree on.
 *
 *   transceiver [options]                  one process: the kernel and the
 *                                          client share a context (the floor)
 *   kinetrun -n 2 -- transceiver [options] rank 0 serves, rank 1 is the client
 *   tests/netns/run.sh transceiver ...     the same across two namespaces (ofi)
 *
 * Options:
 *   --service gpu|cpu|both  which server runs (both: the kernel, then the
 *                           CPU loop on QPs of the same kind; default both)
 *   --qps N                 QPs, one warp each (default 2, at most 32)
 *   --requests N            requests per QP (default 10000)
 *   --size B                payload bytes, a multiple of 4 (default 16:
 *                           answer and request fit one inline WQE)
 *   --op send|write_imm|mixed  how requests travel (default mixed)
 *   --rate R                requests per second per QP (default 0: back to back)
 *   --window W              requests in flight per QP (default 1, at most 48)
 *   --rx-mem gpu|host       the kernel's request, receive and answer rings in
 *                           GPU memory (default, as a NIC would write them) or
 *                           in pinned host memory the kernel maps (the
 *                           software NIC then writes them without the copy
 *                           engine)
 *   --bad-request N         the error path: QP 0's request N carries an unknown
 *                           kind; its server must stop with -EINVAL naming N
 *                           (then, and only then, the run succeeds)
 *   --idle-ms MS            a server with no request this long stops with an
 *                           error; the client's answer timeout (default 10000)
 *   --client                with two ranks: this rank is the client whatever
 *                           its number (the other serves)
 *   --require-gpu           exit 77 (skipped) where there is no CUDA device
 *                           instead of running the host-emulated build
 *
 * Built with nvcc (the kernel on GPU 0, its rings in GPU memory; without a
 * GPU it runs transceiver-emu instead) and as C with KINET_HOST_EMU
 * (transceiver-emu: the warps are CPU threads).  Prints a line per service;
 * exit status 0 only if no answer was lost, duplicated or wrong and every
 * server stopped cleanly.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <kinet/boot.h>
#include <kinet/device.cuh>
#include <kinet/kinet.h>

#if !defined(KINET_HOST_EMU)
#include <cuda_runtime.h>
#endif

#include "host.h"
#include "server.cuh"

#if defined(KINET_HOST_EMU)
static void serve_block(void *arg)
{
	serve_qp((const struct server_args *)arg, kinet_dev_block_id());
}
#else
__global__ void serve_kernel(struct server_args a)
{
	serve_qp(&a, blockIdx.x);
}
#endif

/* Where a ring lives: plain host memory (the CPU's side), GPU memory, or
 * pinned host memory mapped for the kernel (same address on both sides:
 * unified addressing). */
enum buf_mem { MEM_HOST, MEM_GPU, MEM_MAPPED };

struct options {
	int gpu, cpu, nqps, force_client, require_gpu;
	enum buf_mem server_mem; /* the kernel's rings */
	struct client_opts c;
	uint64_t idle_ns;
};

/* ---- memory: the kernel's (GPU memory on the GPU) and host-mapped words ---- */

static void *dev_alloc(size_t n)
{
#if defined(KINET_HOST_EMU)
	void *p = aligned_alloc(4096, (n + 4095) & ~(size_t)4095);
	if (p)
		memset(p, 0, n);
	return p;
#else
	void *p = NULL;
	if (cudaMalloc(&p, n) != cudaSuccess)
		return NULL;
	cudaMemset(p, 0, n);
	return p;
#endif
}

static void dev_free(void *p)
{
#if defined(KINET_HOST_EMU)
	free(p);
#else
	cudaFree(p);
#endif
}

/* Host memory the kernel writes and the host reads while it runs: *host for
 * the CPU, the return value for the kernel. */
static void *mapped_alloc(size_t n, void **host)
{
#if defined(KINET_HOST_EMU)
	*host = calloc(1, n);
	return *host;
#else
	void *d = NULL;
	if (cudaHostAlloc(host, n, cudaHostAllocMapped) != cudaSuccess)
		return NULL;
	memset(*host, 0, n);
	return cudaHostGetDevicePointer(&d, *host, 0) == cudaSuccess ? d : NULL;
#endif
}

static void mapped_free(void *host)
{
#if defined(KINET_HOST_EMU)
	free(host);
#else
	cudaFreeHost(host);
#endif
}

static void *host_alloc(size_t n)
{
	void *p = aligned_alloc(4096, (n + 4095) & ~(size_t)4095);
	if (p)
		memset(p, 0, n);
	return p;
}

/* Pinned host memory mapped for the kernel: with unified addressing the
 * kernel's address of it is the host's, so one pointer serves the MR, the
 * client and the kernel. */
static void *pinned_alloc(size_t n)
{
	void *host = NULL;
	return mapped_alloc(n, &host) ? host : NULL;
}

/* ---- objects ---- */

#define CHECK(call)                                                                                          \
	do {                                                                                                 \
		int rc_ = (call);                                                                            \
		if (rc_) {                                                                                   \
			fprintf(stderr, "transceiver: %s: %s\n", #call, kinet_strerror(rc_));                \
			return rc_ < 0 ? rc_ : -EIO;                                                         \
		}                                                                                            \
	} while (0)

struct endpoint {
	struct kinet_qp *qp;
	struct kinet_cq *send_cq, *recv_cq;
	struct kinet_mr *mr;
	uint8_t *buf;
	size_t bytes;
	enum buf_mem mem;
};

static int endpoint_open(struct kinet_ctx *ctx, struct endpoint *e, size_t bytes, enum buf_mem mem)
{
	struct kinet_cq_attr ca;
	struct kinet_qp_attr qa;

	memset(e, 0, sizeof(*e));
	kinet_cq_attr_init(&ca);
	ca.depth = 1024;
	CHECK(kinet_cq_create(ctx, &ca, &e->send_cq));
	CHECK(kinet_cq_create(ctx, &ca, &e->recv_cq));
	kinet_qp_attr_init(&qa);
	qa.send_cq = e->send_cq;
	qa.recv_cq = e->recv_cq;
	qa.sq_depth = 256;
	qa.rq_depth = SLOTS;
	qa.max_recv_sge = 1;
	qa.sharing = KINET_SHARE_EXCLUSIVE;
	qa.timeout_ms = 5000;
	CHECK(kinet_qp_create(ctx, &qa, &e->qp));
	e->bytes = bytes;
	e->mem = mem;
	e->buf = (uint8_t *)(mem == MEM_GPU	 ? dev_alloc(bytes)
			     : mem == MEM_MAPPED ? pinned_alloc(bytes)
						 : host_alloc(bytes));
	if (!e->buf)
		return -ENOMEM;
	CHECK(kinet_mr_reg(ctx, e->buf, bytes, KINET_ACCESS_LOCAL_WRITE | KINET_ACCESS_REMOTE_WRITE, &e->mr));
	return 0;
}

static void endpoint_close(struct endpoint *e)
{
	if (e->qp)
		kinet_qp_destroy(e->qp);
	if (e->mr)
		kinet_mr_dereg(e->mr);
	if (e->send_cq)
		kinet_cq_destroy(e->send_cq);
	if (e->recv_cq)
		kinet_cq_destroy(e->recv_cq);
	if (e->buf)
		e->mem == MEM_GPU      ? dev_free(e->buf)
		: e->mem == MEM_MAPPED ? mapped_free(e->buf)
				       : free(e->buf);
}

/* What a rank tells the other about one of its endpoints. */
struct endpoint_info {
	struct kinet_qp_info qp;
	uint64_t req_ring; /* server: its request ring */
	uint32_t rkey;
	uint32_t pad;
};

static void endpoint_info(const struct endpoint *e, int server, struct endpoint_info *info)
{
	memset(info, 0, sizeof(*info));
	kinet_qp_pack(e->qp, &info->qp);
	if (server) {
		info->req_ring = (uint64_t)(uintptr_t)(e->buf + (size_t)SLOTS * MSG_BYTES);
		info->rkey = kinet_mr_rkey(e->mr);
	}
}

/* ---- one service: set up, serve, check ---- */

struct job {
	struct kinet_boot *boot; /* NULL: one process */
	int serves, asks;	 /* this process's roles */
	struct kinet_ctx *ctx;
};

/* Gives theirs the other rank's n entries (one process: its own). */
static int exchange(struct job *j, struct endpoint_info *mine, struct endpoint_info *theirs, int n)
{
	if (!j->boot) {
		memcpy(theirs, mine, sizeof(*mine) * (size_t)n);
		return 0;
	}
	struct endpoint_info *all = (struct endpoint_info *)calloc((size_t)n * 2, sizeof(*all));
	if (!all)
		return -ENOMEM;
	int rc = kinet_boot_allgather(j->boot, mine, all, sizeof(*mine) * (size_t)n);
	/* rank r's n entries at all + r * n; the peer is the other rank */
	if (!rc)
		memcpy(theirs, all + (size_t)(1 - kinet_boot_rank(j->boot)) * (size_t)n,
		       sizeof(*mine) * (size_t)n);
	free(all);
	return rc;
}

static int barrier(struct job *j)
{
	return j->boot ? kinet_boot_barrier(j->boot) : 0;
}

struct cpu_thread_arg {
	struct cpu_server_qp *s;
	int nqps;
	uint64_t idle_ns;
	struct server_status *status;
	int rc;
};

static void *cpu_thread_main(void *p)
{
	struct cpu_thread_arg *a = (struct cpu_thread_arg *)p;
	a->rc = cpu_server_run(a->s, a->nqps, a->idle_ns, a->status);
	return NULL;
}

#if defined(KINET_HOST_EMU)
struct emu_launch_arg {
	struct server_args *args;
	unsigned nqps;
	int rc;
};

static void *emu_launch_main(void *p)
{
	struct emu_launch_arg *a = (struct emu_launch_arg *)p;
	a->rc = kinet_emu_launch(a->nqps, serve_block, a->args);
	return NULL;
}
#endif

static int cmp_u64(const void *x, const void *y)
{
	uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
	return a < b ? -1 : a > b;
}

static void print_client(const char *service, const struct options *o, struct client_result *r)
{
	uint64_t n = r->answered;
	double us[4] = {0, 0, 0, 0};

	if (n) {
		qsort(r->rtt_ns, n, sizeof(uint64_t), cmp_u64);
		us[0] = (double)r->rtt_ns[0] / 1e3;
		us[1] = (double)r->rtt_ns[n / 2] / 1e3;
		us[2] = (double)r->rtt_ns[n * 99 / 100] / 1e3;
		us[3] = (double)r->rtt_ns[n * 999 / 1000] / 1e3;
	}
	printf("%-8s %5d %10llu %6llu %6llu %6llu %9.3f %9.3f %9.3f %9.3f %12.0f\n", service, o->nqps,
	       (unsigned long long)r->sent, (unsigned long long)r->lost, (unsigned long long)r->duplicated,
	       (unsigned long long)r->wrong, us[0], us[1], us[2], us[3],
	       r->seconds > 0 ? (double)n / r->seconds : 0.0);
	fflush(stdout);
}

/* Every server stopped cleanly, but QP 0's after a bad request: that one
 * must have failed with -EINVAL naming it. */
static int server_ok(const char *service, const struct server_status *st, int nqps, uint64_t bad)
{
	int ok = 1;
	for (int i = 0; i < nqps; i++) {
		if (i == 0 && bad != NO_BAD_REQUEST) {
			if (st[0].status == -EINVAL && st[0].seq == bad && !st[0].stopped) {
				printf("%s server, QP 0: refused bad request %llu as expected (%s)\n",
				       service, (unsigned long long)bad, kinet_strerror(st[0].status));
				continue;
			}
			fprintf(stderr,
				"transceiver: %s server, QP 0: status %d at request %llu, not -EINVAL at "
				"%llu\n",
				service, st[0].status, (unsigned long long)st[0].seq,
				(unsigned long long)bad);
			ok = 0;
			continue;
		}
		if (st[i].status || !st[i].stopped) {
			ok = 0;
			fprintf(stderr,
				"transceiver: %s server, QP %d: %s at request %llu (receive %llu), %llu "
				"served%s\n",
				service, i, st[i].status ? kinet_strerror(st[i].status) : "not stopped",
				(unsigned long long)st[i].seq, (unsigned long long)st[i].recv_index,
				(unsigned long long)st[i].served, st[i].stopped ? "" : ", no STOP");
		}
	}
	return ok;
}

/* Waits until every ready word is at least want, or fails once the
 * warps' served counts (status, may be NULL) stood still for ns. */
static int wait_ready(uint64_t *ready, struct server_status *status, int n, uint64_t want, uint64_t ns)
{
	uint64_t progress = 0;
	for (uint64_t start = now_ns();;) {
		int all = 1;
		uint64_t served = 0;
		for (int i = 0; i < n; i++) {
			all &= __atomic_load_n(&ready[i], __ATOMIC_ACQUIRE) >= want;
			served += status ? __atomic_load_n(&status[i].served, __ATOMIC_RELAXED) : 0;
		}
		if (all)
			return 0;
		if (served != progress) {
			progress = served;
			start = now_ns();
		}
		if (now_ns() - start > ns)
			return -ETIMEDOUT;
		struct timespec pause = {0, 50000};
		nanosleep(&pause, NULL);
	}
}

static int run_service(struct job *j, const struct options *o, int gpu)
{
	const char *name = gpu ? "gpu" : "cpu";
	int n = o->nqps, rc = 0, ok = 1;
	struct endpoint srv[MAX_QPS], cli[MAX_QPS];
	struct endpoint_info mine[2 * MAX_QPS], theirs[2 * MAX_QPS];
	struct client_qp cq[MAX_QPS];
	struct cpu_server_qp cs[MAX_QPS];
	struct server_status *status = NULL, *status_dev = NULL;
	uint64_t *ready = NULL, *ready_dev = NULL;
	struct client_result res;

	memset(srv, 0, sizeof(srv));
	memset(cli, 0, sizeof(cli));
	memset(&res, 0, sizeof(res));
	/* Server endpoints first, then client endpoints, in this process's
	 * entries: [0, n) serve, [n, 2n) ask (one process: both). */
	for (int i = 0; i < n; i++) {
		if (j->serves && (rc = endpoint_open(j->ctx, &srv[i], (size_t)3 * SLOTS * MSG_BYTES,
						     gpu ? o->server_mem : MEM_HOST)))
			return rc;
		if (j->asks && (rc = endpoint_open(j->ctx, &cli[i], (size_t)2 * SLOTS * MSG_BYTES, MEM_HOST)))
			return rc;
	}
	memset(mine, 0, sizeof(mine));
	for (int i = 0; i < n; i++) {
		if (j->serves)
			endpoint_info(&srv[i], 1, &mine[i]);
		if (j->asks)
			endpoint_info(&cli[i], 0, &mine[n + i]);
	}
	if ((rc = exchange(j, mine, theirs, 2 * n)))
		return rc;
	for (int i = 0; i < n; i++) {
		if (j->serves)
			CHECK(kinet_qp_connect(srv[i].qp, &theirs[n + i].qp));
		if (j->asks) {
			CHECK(kinet_qp_connect(cli[i].qp, &theirs[i].qp));
			cq[i] = (struct client_qp){cli[i].qp, cli[i].send_cq,	  cli[i].recv_cq, cli[i].buf,
						   cli[i].mr, theirs[i].req_ring, theirs[i].rkey};
		}
	}

	struct server_args args;
	struct cpu_thread_arg cpu_arg;
	pthread_t thread;
	int thread_started = 0;
#if defined(KINET_HOST_EMU)
	struct emu_launch_arg emu_arg;
#endif
	memset(&args, 0, sizeof(args));
	if (j->serves) {
		status_dev =
			(struct server_status *)mapped_alloc(sizeof(*status) * (size_t)n, (void **)&status);
		ready_dev = (uint64_t *)mapped_alloc(sizeof(*ready) * (size_t)n, (void **)&ready);
		if (!status_dev || !ready_dev)
			return -ENOMEM;
	}
	if (j->serves && gpu) {
		for (int i = 0; i < n; i++) {
			CHECK(kinet_qp_export(srv[i].qp, &args.qp[i]));
			args.buf[i] = srv[i].buf;
			args.key[i] = kinet_mr_lkey(srv[i].mr);
		}
		args.idle_ns = o->idle_ns;
		args.status = status_dev;
		args.ready = ready_dev;
#if defined(KINET_HOST_EMU)
		emu_arg = (struct emu_launch_arg){&args, (unsigned)n, 0};
		if (pthread_create(&thread, NULL, emu_launch_main, &emu_arg))
			return -EAGAIN;
		thread_started = 1;
#else
		serve_kernel<<<n, 32>>>(args);
		if (cudaGetLastError() != cudaSuccess)
			return -EIO;
#endif
		/* The receives are posted by the kernel: no request before. */
		if ((rc = wait_ready(ready, NULL, n, 1, 10000000000ull))) {
			fprintf(stderr, "transceiver: the kernel did not post its receives within 10 s\n");
			return rc;
		}
	} else if (j->serves) {
		for (int i = 0; i < n; i++)
			cs[i] = (struct cpu_server_qp){srv[i].qp, srv[i].send_cq, srv[i].recv_cq, srv[i].buf,
						       srv[i].mr};
		CHECK(cpu_server_prepare(cs, n));
		cpu_arg = (struct cpu_thread_arg){cs, n, o->idle_ns, status, 0};
		if (j->asks) { /* one process: the loop on a thread of its own */
			if (pthread_create(&thread, NULL, cpu_thread_main, &cpu_arg))
				return -EAGAIN;
			thread_started = 1;
		}
	}
	if (j->asks)
		CHECK(client_prepare(cq, n));
	CHECK(barrier(j));

	if (j->asks) {
		rc = client_run(cq, &o->c, &res);
		print_client(name, o, &res);
		uint64_t stops = (uint64_t)n - (o->c.bad_request != NO_BAD_REQUEST);
		ok = !rc && !res.lost && !res.duplicated && !res.wrong && res.stop_acks == stops;
		if (!ok)
			fprintf(stderr,
				"transceiver: %s: %llu lost, %llu duplicated, %llu wrong, %llu of %d STOPs "
				"answered\n",
				name, (unsigned long long)res.lost, (unsigned long long)res.duplicated,
				(unsigned long long)res.wrong, (unsigned long long)res.stop_acks, (int)stops);
		free(res.rtt_ns);
	}
	if (j->serves) {
		if (!gpu && !j->asks)
			cpu_thread_main(&cpu_arg);
		/* The warps end on STOP or after idle_ns without a request: a
		 * kernel whose counts stand still longer than that is stuck. */
		if (gpu && wait_ready(ready, status, n, 2, o->idle_ns + 10000000000ull)) {
			fprintf(stderr, "transceiver: the kernel's warps did not all end\n");
			exit(1); /* a kernel that never ends ends with the process */
		}
		if (thread_started)
			pthread_join(thread, NULL);
#if !defined(KINET_HOST_EMU)
		if (gpu && cudaDeviceSynchronize() != cudaSuccess)
			return -EIO;
#endif
		ok &= server_ok(name, status, n, o->c.bad_request);
	}
	CHECK(barrier(j));
	for (int i = 0; i < n; i++) {
		endpoint_close(&srv[i]);
		endpoint_close(&cli[i]);
	}
	if (status)
		mapped_free(status);
	if (ready)
		mapped_free(ready);
	return ok ? 0 : 1;
}

static int parse(int argc, char **argv, struct options *o)
{
	memset(o, 0, sizeof(*o));
	o->gpu = o->cpu = 1;
	o->server_mem = MEM_GPU;
	o->c.bad_request = NO_BAD_REQUEST;
	o->nqps = 2;
	o->c.requests = 10000;
	o->c.size = 16;
	o->c.op = OP_MIXED;
	o->c.window = 1;
	o->idle_ns = 10000000000ull;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!strcmp(a, "--client")) {
			o->force_client = 1;
			continue;
		}
		if (!strcmp(a, "--require-gpu")) {
			o->require_gpu = 1;
			continue;
		}
		if (!v)
			return -EINVAL;
		i++;
		if (!strcmp(a, "--service")) {
			o->gpu = !strcmp(v, "gpu") || !strcmp(v, "both");
			o->cpu = !strcmp(v, "cpu") || !strcmp(v, "both");
			if (!o->gpu && !o->cpu)
				return -EINVAL;
		} else if (!strcmp(a, "--qps")) {
			o->nqps = atoi(v);
		} else if (!strcmp(a, "--requests")) {
			o->c.requests = strtoull(v, NULL, 0);
		} else if (!strcmp(a, "--size")) {
			o->c.size = (uint32_t)strtoul(v, NULL, 0);
		} else if (!strcmp(a, "--op")) {
			o->c.op = !strcmp(v, "send")	    ? OP_SEND
				  : !strcmp(v, "write_imm") ? OP_WRITE_IMM
							    : OP_MIXED;
			if (strcmp(v, "send") && strcmp(v, "write_imm") && strcmp(v, "mixed"))
				return -EINVAL;
		} else if (!strcmp(a, "--rx-mem")) {
			if (strcmp(v, "gpu") && strcmp(v, "host"))
				return -EINVAL;
			o->server_mem = !strcmp(v, "gpu") ? MEM_GPU : MEM_MAPPED;
		} else if (!strcmp(a, "--rate")) {
			o->c.rate = atof(v);
		} else if (!strcmp(a, "--window")) {
			o->c.window = (uint32_t)strtoul(v, NULL, 0);
		} else if (!strcmp(a, "--bad-request")) {
			o->c.bad_request = strtoull(v, NULL, 0);
		} else if (!strcmp(a, "--idle-ms")) {
			o->idle_ns = strtoull(v, NULL, 0) * 1000000ull;
		} else {
			return -EINVAL;
		}
	}
	o->c.nqps = o->nqps;
	o->c.timeout_ns = o->idle_ns;
	if (o->nqps < 1 || o->nqps > MAX_QPS || o->c.size % 4 || o->c.size > MAX_PAYLOAD || o->c.window < 1 ||
	    o->c.window > SLOTS - REPOST_BATCH || o->c.rate < 0 || !o->idle_ns ||
	    (o->c.bad_request != NO_BAD_REQUEST && o->c.bad_request >= o->c.requests))
		return -EINVAL;
	return 0;
}

int main(int argc, char **argv)
{
	struct options o;
	struct kinet_ctx_attr attr;
	struct job j;
	const char *where = "CPU threads (host emulation)";
	int rc, failed = 0;

	if (parse(argc, argv, &o)) {
		fprintf(stderr, "usage: see the comment at the top of examples/transceiver/transceiver.cu\n");
		return 2;
	}
	memset(&j, 0, sizeof(j));
	kinet_ctx_attr_init(&attr);
#if !defined(KINET_HOST_EMU)
	int ndev = 0;
	if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
		char emu[4096];
		if (o.require_gpu) {
			printf("SKIP: no CUDA device (--require-gpu)\n");
			return 77;
		}
		fprintf(stderr, "transceiver: no CUDA device; running the host-emulated build instead\n");
		snprintf(emu, sizeof(emu), "%s-emu", argv[0]);
		execv(emu, argv);
		fprintf(stderr, "transceiver: cannot run %s\n", emu);
		return 77;
	}
	attr.cuda_device = 0;
	where = "GPU 0";
#else
	attr.cuda_device = KINET_CUDA_DEVICE_NONE;
	if (o.require_gpu) {
		printf("SKIP: host-emulated build (--require-gpu)\n");
		return 77;
	}
#endif
	if (getenv("KINET_NRANKS") || getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMI_SIZE") ||
	    getenv("SLURM_NTASKS")) {
		if ((rc = kinet_boot_init(NULL, &j.boot))) {
			fprintf(stderr, "transceiver: kinet_boot_init: %s\n", kinet_strerror(rc));
			return 1;
		}
		if (kinet_boot_size(j.boot) != 2) {
			fprintf(stderr, "transceiver: needs 1 or 2 ranks\n");
			return 2;
		}
		/* One client: --client on a rank makes it the client, else rank 1. */
		int flags[2], mine = o.force_client;
		if ((rc = kinet_boot_allgather(j.boot, &mine, flags, sizeof(mine))))
			return 1;
		int client = flags[0] ? 0 : 1;
		j.asks = kinet_boot_rank(j.boot) == client;
		j.serves = !j.asks;
	} else {
		j.serves = j.asks = 1;
	}
	if ((rc = kinet_ctx_open(&attr, &j.ctx))) {
		fprintf(stderr, "transceiver: kinet_ctx_open: %s\n", kinet_strerror(rc));
		return 1;
	}
	if (j.asks) {
		printf("transceiver: server kernel on %s; %s; %d QPs, %llu requests each, %u-byte payloads, "
		       "%s, %s\n",
		       where, j.boot ? "client in another process" : "client in this process", o.nqps,
		       (unsigned long long)o.c.requests, o.c.size,
		       o.c.op == OP_SEND	? "SEND"
		       : o.c.op == OP_WRITE_IMM ? "write-with-immediate"
						: "SEND and write-with-immediate alternating",
		       o.c.rate > 0 ? "fixed rate" : "back to back");
		printf("%-8s %5s %10s %6s %6s %6s %9s %9s %9s %9s %12s\n", "service", "qps", "requests",
		       "lost", "dup", "wrong", "min_us", "median_us", "p99_us", "p99.9_us", "answers/s");
	}
	if (o.gpu)
		failed |= run_service(&j, &o, 1) != 0;
	if (o.cpu)
		failed |= run_service(&j, &o, 0) != 0;
	kinet_ctx_close(j.ctx);
	if (j.boot)
		kinet_boot_fini(j.boot);
	if (!failed)
		printf("OK\n");
	return failed;
}
