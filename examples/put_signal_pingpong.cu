/*
 * put_signal ping-pong: kinet's main demo.
 *
 * Two RC queue pairs connected to each other in one process.  One kernel
 * with two blocks (one thread each): block 0 puts a message into block 1's
 * inbox and adds 1 to block 1's signal word with kinet_dev_put_signal(),
 * then waits for the answer with kinet_dev_signal_wait_until(); block 1
 * waits for the message and answers the same way.  Prints the median round
 * trip in microseconds.
 *
 * Built twice: with nvcc (runs on the GPU, buffers in GPU memory; without a
 * GPU it hands over to the -emu build next to it), and as C with
 * KINET_HOST_EMU (put_signal_pingpong-emu: the two "blocks" are CPU
 * threads, buffers in host memory).  No arguments; optional: iterations.
 * Exit status 0 on success.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <kinet/device.cuh>
#include <kinet/kinet.h>

#if !defined(KINET_HOST_EMU)
#include <cuda_runtime.h>
#endif

#define WARMUP 100
#define DEFAULT_ITERS 2000
#define MSG_BYTES 8
/* Layout of each side's registered buffer. */
#define OUT_OFF 0   /* message being sent */
#define IN_OFF 64   /* message received */
#define SIG_OFF 128 /* signal word the peer adds to */
#define BUF_BYTES 4096

struct pingpong_args {
	struct kinet_dev_qp *qp[2];
	uint8_t *buf[2]; /* each side's buffer (device-usable address) */
	uint32_t key[2];
	int iters;
	uint64_t *rtt_ns; /* iters entries, written by side 0 */
	int *status;	  /* per side: 0, a kinet_dev status (negative errno), or 1 for bad data */
};

KINET_DEV_FN void pingpong_side(const struct pingpong_args *a, unsigned side)
{
	struct kinet_dev_qp *qp = a->qp[side];
	uint8_t *mine = a->buf[side], *peer = a->buf[1 - side];
	volatile uint64_t *out = (volatile uint64_t *)(void *)(mine + OUT_OFF);
	const volatile uint64_t *in = (const volatile uint64_t *)(const void *)(mine + IN_OFF);
	const uint64_t *sig = (const uint64_t *)(const void *)(mine + SIG_OFF);
	uint64_t peer_in = (uint64_t)(uintptr_t)(peer + IN_OFF),
		 peer_sig = (uint64_t)(uintptr_t)(peer + SIG_OFF);
	int st = 0;

	for (int i = 0; i < a->iters && !st; i++) {
		uint64_t t0 = kinet_dev_now_ns();
		uint64_t msg = 0x1000000ull * (side + 1) + (uint64_t)i;
		if (side == 1) {
			/* wait for ping i, check it, answer */
			st = kinet_dev_signal_wait_until(qp, sig, KINET_DEV_CMP_GE, (uint64_t)i + 1, NULL);
			if (!st && *in != 0x1000000ull + (uint64_t)i)
				st = 1;
		}
		if (!st) {
			/* The message store, then put_signal: its doorbell's release
			 * fence makes the store visible to the NIC first. */
			*out = msg;
			st = kinet_dev_put_signal(qp, mine + OUT_OFF, a->key[side], peer_in, a->key[1 - side],
						  MSG_BYTES, peer_sig, a->key[1 - side], 1, NULL);
		}
		if (!st && side == 0) {
			/* wait for pong i */
			st = kinet_dev_signal_wait_until(qp, sig, KINET_DEV_CMP_GE, (uint64_t)i + 1, NULL);
			if (!st && *in != 0x2000000ull + (uint64_t)i)
				st = 1;
			a->rtt_ns[i] = kinet_dev_now_ns() - t0;
		}
	}
	if (!st)
		st = kinet_dev_quiet(qp);
	a->status[side] = st;
}

#if defined(KINET_HOST_EMU)
static void pingpong_block(void *arg)
{
	pingpong_side((const struct pingpong_args *)arg, kinet_dev_block_id());
}
#else
__global__ void pingpong_kernel(struct pingpong_args a)
{
	if (threadIdx.x == 0)
		pingpong_side(&a, kinet_dev_block_id());
}
#endif

static int cmp_u64(const void *x, const void *y)
{
	uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
	return a < b ? -1 : a > b;
}

#define CHECK(call)                                                                                          \
	do {                                                                                                 \
		int rc_ = (call);                                                                            \
		if (rc_) {                                                                                   \
			fprintf(stderr, "put_signal_pingpong: %s: %s\n", #call, kinet_strerror(rc_));        \
			return 1;                                                                            \
		}                                                                                            \
	} while (0)

#if !defined(KINET_HOST_EMU)
#define CUDA_CHECK(call)                                                                                     \
	do {                                                                                                 \
		cudaError_t e_ = (call);                                                                     \
		if (e_ != cudaSuccess) {                                                                     \
			fprintf(stderr, "put_signal_pingpong: %s: %s\n", #call, cudaGetErrorString(e_));     \
			return 1;                                                                            \
		}                                                                                            \
	} while (0)
#endif

/* Memory the device code can use: GPU memory on the GPU, host memory under
 * emulation.  Zeroed. */
static void *dev_alloc(size_t n)
{
#if defined(KINET_HOST_EMU)
	/* aligned_alloc wants a size that is a multiple of the alignment. */
	void *p = aligned_alloc(64, (n + 63) & ~(size_t)63);
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

static int copy_out(void *dst, const void *src, size_t n)
{
#if defined(KINET_HOST_EMU)
	memcpy(dst, src, n);
	return 0;
#else
	return cudaMemcpy(dst, src, n, cudaMemcpyDeviceToHost) == cudaSuccess ? 0 : -EIO;
#endif
}

int main(int argc, char **argv)
{
	const char *where = "CPU threads (host emulation, software NIC)";
	int iters = argc > 1 ? atoi(argv[1]) : DEFAULT_ITERS;
	struct kinet_ctx_attr cattr;
	struct kinet_ctx *ctx = NULL;
	struct kinet_cq *cq[2];
	struct kinet_qp *qp[2];
	struct kinet_dev_qp *dqp[2];
	struct kinet_mr *mr[2];
	struct kinet_qp_info info[2];
	struct pingpong_args a;
	uint8_t *buf[2];
	static const char *db_names[4] = {"auto", "cpu", "gpu", "bf"};

	if (iters <= 0)
		iters = DEFAULT_ITERS;
	kinet_ctx_attr_init(&cattr);
#if !defined(KINET_HOST_EMU)
	int ndev = 0;
	if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
		char emu[4096];
		fprintf(stderr,
			"put_signal_pingpong: no CUDA device; running the host-emulated build instead\n");
		snprintf(emu, sizeof(emu), "%s-emu", argv[0]);
		execv(emu, argv);
		fprintf(stderr, "put_signal_pingpong: cannot run %s; run put_signal_pingpong-emu\n", emu);
		return 77;
	}
	static char gpu_name[320];
	struct cudaDeviceProp prop;
	CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
	snprintf(gpu_name, sizeof(gpu_name), "GPU 0 (%s), buffers in GPU memory", prop.name);
	where = gpu_name;
	cattr.cuda_device = 0;
#else
	cattr.cuda_device = KINET_CUDA_DEVICE_NONE; /* CPU threads read the descriptors */
#endif
	CHECK(kinet_ctx_open(&cattr, &ctx));

	for (int s = 0; s < 2; s++) {
		struct kinet_cq_attr qa = {.size = sizeof(struct kinet_cq_attr), .depth = 0, .flags = 0};
		struct kinet_qp_attr attr;
		qa.depth = 256;
		CHECK(kinet_cq_create(ctx, &qa, &cq[s]));
		kinet_qp_attr_init(&attr);
		attr.send_cq = cq[s];
		attr.recv_cq = NULL;
		attr.sq_depth = 64;
		attr.db_mode = KINET_DB_AUTO;
		attr.sharing = KINET_SHARE_EXCLUSIVE;
		attr.timeout_ms = 5000;
		CHECK(kinet_qp_create(ctx, &attr, &qp[s]));
		buf[s] = (uint8_t *)dev_alloc(BUF_BYTES);
		if (!buf[s]) {
			fprintf(stderr, "put_signal_pingpong: out of memory\n");
			return 1;
		}
		CHECK(kinet_mr_reg(ctx, buf[s], BUF_BYTES,
				   KINET_ACCESS_LOCAL_WRITE | KINET_ACCESS_REMOTE_WRITE |
					   KINET_ACCESS_REMOTE_ATOMIC,
				   &mr[s]));
		CHECK(kinet_qp_pack(qp[s], &info[s]));
	}
	for (int s = 0; s < 2; s++) {
		CHECK(kinet_qp_connect(qp[s], &info[1 - s]));
		/* The export also gives the descriptor the scratch buffer that
		 * takes put_signal's unused old value. */
		CHECK(kinet_qp_export(qp[s], &dqp[s]));
	}

	memset(&a, 0, sizeof(a));
	for (int s = 0; s < 2; s++) {
		a.qp[s] = dqp[s];
		a.buf[s] = buf[s];
		a.key[s] = kinet_mr_rkey(mr[s]); /* lkey == rkey */
	}
	a.iters = WARMUP + iters;
	a.rtt_ns = (uint64_t *)dev_alloc(sizeof(uint64_t) * (size_t)a.iters);
	a.status = (int *)dev_alloc(2 * sizeof(int));
	if (!a.rtt_ns || !a.status)
		return 1;

	printf("put_signal ping-pong on %s\n", where);
	printf("  provider %s, doorbell mode %s, %d-byte messages, %d iterations (+%d warm-up)\n",
	       kinet_ctx_provider(ctx), db_names[kinet_qp_db_mode(qp[0]) & 3], MSG_BYTES, iters, WARMUP);
	fflush(stdout);

#if defined(KINET_HOST_EMU)
	int lrc = kinet_emu_launch(2, pingpong_block, &a);
	if (lrc) {
		fprintf(stderr, "put_signal_pingpong: cannot start threads: %s\n", strerror(lrc));
		return 1;
	}
#else
	pingpong_kernel<<<2, 1>>>(a);
	CUDA_CHECK(cudaGetLastError());
	CUDA_CHECK(cudaDeviceSynchronize());
#endif

	int status[2];
	uint64_t *rtt = (uint64_t *)malloc(sizeof(uint64_t) * (size_t)a.iters);
	if (!rtt || copy_out(status, a.status, sizeof(status)) ||
	    copy_out(rtt, a.rtt_ns, sizeof(uint64_t) * (size_t)a.iters))
		return 1;
	int ok = 1;
	for (int s = 0; s < 2; s++) {
		if (status[s]) {
			struct kinet_error err;
			ok = 0;
			fprintf(stderr, "put_signal_pingpong: side %d failed: %s\n", s,
				status[s] == 1 ? "wrong data" : kinet_strerror(status[s]));
			if (!kinet_ctx_last_error(ctx, &err) && err.status)
				fprintf(stderr, "  context error: %s, QP %u: %s\n",
					kinet_strerror(err.status), err.qpn,
					kinet_wc_status_str(err.syndrome));
		}
	}
	if (ok) {
		uint64_t *m = rtt + WARMUP;
		qsort(m, (size_t)iters, sizeof(uint64_t), cmp_u64);
		printf("  round trip: median %.2f us, min %.2f us, p99 %.2f us\n",
		       (double)m[iters / 2] / 1000.0, (double)m[0] / 1000.0,
		       (double)m[(size_t)iters * 99 / 100] / 1000.0);
		printf("OK\n");
	}

	for (int s = 0; s < 2; s++) {
		kinet_qp_destroy(qp[s]);
		kinet_cq_destroy(cq[s]);
		kinet_mr_dereg(mr[s]);
		dev_free(buf[s]);
	}
	dev_free(a.rtt_ns);
	dev_free(a.status);
	free(rtt);
	kinet_ctx_close(ctx);
	return ok ? 0 : 1;
}
