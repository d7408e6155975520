/*
 * device_put: the device API, from the host setup to the kernel.
 *
 * A loopback pair as in hello_host, but QP 0 is exported and driven by a
 * kernel: one thread puts 64 bytes into the other buffer, adds 5 to a
 * counter there, and waits until both are done (kinet_dev_quiet).  The host
 * checks the result.
 *
 * Built twice from this file: with nvcc (a kernel on GPU 0, buffers in GPU
 * memory), and as C with KINET_HOST_EMU defined (device_put-emu: the
 * "kernel" is a CPU thread, buffers in host memory), which runs anywhere.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <kinet/device.cuh>
#include <kinet/kinet.h>

#if !defined(KINET_HOST_EMU)
#include <cuda_runtime.h>
#endif

#define MSG 64
#define COUNTER_OFF 128
#define OLD_OFF 136
#define BUF_BYTES 4096

struct job {
	struct kinet_dev_qp *qp; /* from kinet_qp_export */
	uint8_t *mine, *peer;	 /* device-usable addresses of the two buffers */
	uint32_t lkey, rkey;
	int status; /* written by the kernel: 0 or a negative errno */
};

/* The device code: the same source for the GPU and for CPU threads. */
KINET_DEV_FN void put_and_add(struct job *j)
{
	int st = kinet_dev_put(j->qp, j->mine, j->lkey, (uint64_t)(uintptr_t)j->peer, j->rkey, MSG, NULL);

	if (!st)
		st = kinet_dev_fetch_add(j->qp, (uint64_t *)(void *)(j->mine + OLD_OFF), j->lkey,
					 (uint64_t)(uintptr_t)(j->peer + COUNTER_OFF), j->rkey, 5, NULL);
	if (!st)
		st = kinet_dev_quiet(j->qp); /* both complete at the target */
	j->status = st;
}

#if defined(KINET_HOST_EMU)
static void block_main(void *arg)
{
	put_and_add((struct job *)arg);
}
/* Host memory stands in for GPU memory. */
static void *dev_alloc(size_t n)
{
	return calloc(1, n);
}
static void dev_free(void *p)
{
	free(p);
}
static int copy(void *dst, const void *src, size_t n)
{
	memcpy(dst, src, n);
	return 0;
}
#else
__global__ void put_and_add_kernel(struct job *j)
{
	put_and_add(j);
}
static void *dev_alloc(size_t n)
{
	void *p = NULL;
	return cudaMalloc(&p, n) == cudaSuccess && cudaMemset(p, 0, n) == cudaSuccess ? p : NULL;
}
static void dev_free(void *p)
{
	cudaFree(p);
}
static int copy(void *dst, const void *src, size_t n)
{
	return cudaMemcpy(dst, src, n, cudaMemcpyDefault) == cudaSuccess ? 0 : -EIO;
}
#endif

static int fail(const char *what, int err)
{
	fprintf(stderr, "device_put: %s: %s\n", what, kinet_strerror(err));
	return 1;
}

int main(void)
{
	struct kinet_ctx_attr cattr;
	struct kinet_ctx *ctx;
	struct kinet_cq *cq[2];
	struct kinet_qp *qp[2];
	struct kinet_mr *mr[2];
	struct kinet_qp_info info[2];
	uint8_t *buf[2];
	struct job host_job, *job;
	int rc;

	kinet_ctx_attr_init(&cattr);
#if defined(KINET_HOST_EMU)
	cattr.cuda_device = KINET_CUDA_DEVICE_NONE; /* CPU threads read the descriptors */
#else
	int ndev = 0;
	if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
		fprintf(stderr, "device_put: no CUDA device here; device_put-emu runs on CPU threads\n");
		return 77;
	}
	cattr.cuda_device = 0; /* descriptors go to this GPU's memory */
#endif
	if ((rc = kinet_ctx_open(&cattr, &ctx)))
		return fail("kinet_ctx_open", rc);
	for (int s = 0; s < 2; s++) {
		/* An exported QP needs its own send CQ, deeper than its send
		 * queue (with KINET_CQ_MODERATION=1 every WQE asks for a CQE;
		 * by default every 16th). */
		struct kinet_cq_attr qa = {.size = sizeof(struct kinet_cq_attr), .depth = 64, .flags = 0};
		struct kinet_qp_attr attr;

		if ((rc = kinet_cq_create(ctx, &qa, &cq[s])))
			return fail("kinet_cq_create", rc);
		kinet_qp_attr_init(&attr);
		attr.send_cq = cq[s];
		attr.sq_depth = 32;
		if ((rc = kinet_qp_create(ctx, &attr, &qp[s])) || (rc = kinet_qp_pack(qp[s], &info[s])))
			return fail("creating a QP", rc);
		buf[s] = (uint8_t *)dev_alloc(BUF_BYTES);
		if (!buf[s])
			return fail("allocating a buffer", -ENOMEM);
		rc = kinet_mr_reg(ctx, buf[s], BUF_BYTES,
				  KINET_ACCESS_LOCAL_WRITE | KINET_ACCESS_REMOTE_WRITE |
					  KINET_ACCESS_REMOTE_ATOMIC,
				  &mr[s]);
		if (rc)
			return fail("kinet_mr_reg", rc);
	}
	for (int s = 0; s < 2; s++)
		if ((rc = kinet_qp_connect(qp[s], &info[1 - s])))
			return fail("kinet_qp_connect", rc);

	/* The source bytes and the counter, then the job for the kernel. */
	uint8_t pattern[MSG];
	uint64_t counter = 37;
	for (int i = 0; i < MSG; i++)
		pattern[i] = (uint8_t)(i * 3 + 1);
	if (copy(buf[0], pattern, MSG) || copy(buf[1] + COUNTER_OFF, &counter, 8))
		return fail("copying to the buffers", -EIO);
	memset(&host_job, 0, sizeof(host_job));
	if ((rc = kinet_qp_export(qp[0], &host_job.qp)))
		return fail("kinet_qp_export", rc);
	host_job.mine = buf[0];
	host_job.peer = buf[1];
	host_job.lkey = kinet_mr_lkey(mr[0]);
	host_job.rkey = kinet_mr_rkey(mr[1]);
	job = (struct job *)dev_alloc(sizeof(*job));
	if (!job || copy(job, &host_job, sizeof(host_job)))
		return fail("copying the job", -EIO);

#if defined(KINET_HOST_EMU)
	if ((rc = kinet_emu_launch(1, block_main, job)))
		return fail("kinet_emu_launch", rc);
#else
	put_and_add_kernel<<<1, 1>>>(job);
	if (cudaDeviceSynchronize() != cudaSuccess)
		return fail("the kernel", -EIO);
#endif

	uint8_t got[MSG];
	uint64_t old = 0;
	if (copy(&host_job, job, sizeof(host_job)) || copy(got, buf[1], MSG) ||
	    copy(&counter, buf[1] + COUNTER_OFF, 8) || copy(&old, buf[0] + OLD_OFF, 8))
		return fail("copying the results", -EIO);
	if (host_job.status) {
		struct kinet_error err;

		/* Device statuses are negative errnos; -EIO means an error
		 * completion, whose syndrome the context kept. */
		fprintf(stderr, "device_put: the kernel failed: %s\n", kinet_strerror(host_job.status));
		if (!kinet_ctx_last_error(ctx, &err) && err.status)
			fprintf(stderr, "device_put: QP %u: %s\n", err.qpn,
				kinet_wc_status_str(err.syndrome));
	}
	int ok = !host_job.status && !memcmp(got, pattern, MSG) && counter == 42 && old == 37;
	printf("device_put: put and fetch-add from device code: %s\n", ok ? "OK" : "FAILED");

	for (int s = 0; s < 2; s++) {
		kinet_qp_destroy(qp[s]);
		kinet_cq_destroy(cq[s]);
		kinet_mr_dereg(mr[s]);
		dev_free(buf[s]);
	}
	dev_free(job);
	kinet_ctx_close(ctx);
	return ok ? 0 : 1;
}
