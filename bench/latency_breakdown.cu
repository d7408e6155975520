/*
 * Where the time of one GPU-initiated operation goes: a single thread posts
 * an 8-byte RDMA write through the low-level device API to a loopback QP of
 * the software NIC and stamps %globaltimer between the phases (reserve,
 * build+store, doorbell, CQE visible, acquire fence, consume).  Before that
 * it times the primitives those phases are made of (a load from pinned host
 * memory, one 16-byte load of it, and two ordered by a fence, the system fences
 * after a store to it, an atomic on it).  Then the high-level path the
 * same way kinet-perf write --lat times it: put_inline (8 bytes) + wait.
 * A diagnostic, built and run by bench/run.sh; not a test.
 *
 *   latency_breakdown [iterations] [cpu|gpu|bf] [exclusive|cta|gpu]
 */
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kinet/device.cuh"
#include "kinet/kinet.h"

#define CHECK(x)                                                                                             \
	do {                                                                                                 \
		int rc_ = (x);                                                                               \
		if (rc_) {                                                                                   \
			fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, kinet_strerror(rc_));     \
			exit(1);                                                                             \
		}                                                                                            \
	} while (0)

enum { PH_RESERVE, PH_BUILD, PH_RING, PH_CQE, PH_ACQUIRE, PH_CONSUME, PH_N };
enum { PR_LOAD, PR_FENCE_ACQREL, PR_FENCE_SC, PR_ATOMIC_MAX, PR_STORE_ONLY, PR_LOAD_V2, PR_LOAD_2V2, PR_N };

__device__ uint64_t now(void)
{
	return kinet_dev_now_ns();
}

__global__ void primitives(uint64_t *host_word, int iters, uint64_t *out)
{
	uint64_t t[PR_N] = {0};
	volatile uint64_t *w = host_word;
	for (int i = 0; i < iters; i++) {
		uint64_t a = now();
		uint64_t v = w[0];
		uint64_t b = now();
		w[1] = v + i;
		uint64_t c = now();
		asm volatile("fence.acq_rel.sys;" ::: "memory");
		uint64_t d = now();
		w[2] = v + i;
		uint64_t e = now();
		__threadfence_system();
		uint64_t f = now();
		atomicMax((unsigned long long *)&host_word[3], (unsigned long long)(v + i));
		uint64_t g = now();
		t[PR_LOAD] += b - a;
		t[PR_STORE_ONLY] += c - b;
		t[PR_FENCE_ACQREL] += d - c;
		t[PR_FENCE_SC] += f - e;
		t[PR_ATOMIC_MAX] += g - f;
		/* a CQE read: one 16-byte load, then a second after a fence */
		uint64_t q[4];
		uint64_t h = now();
		kinet_devi_load_cqe_hi(host_word + 8, q);
		uint64_t k = now() + (q[0] & 1); /* uses the result */
		kinet_devi_load_cqe_hi(host_word + 8, q);
		kinet_dev_fence_acquire_sys();
		kinet_devi_load_cqe_lo(host_word + 8, &q[2]);
		uint64_t l = now() + ((q[0] ^ q[2]) & 1);
		t[PR_LOAD_V2] += k - h;
		t[PR_LOAD_2V2] += l - k;
	}
	for (int i = 0; i < PR_N; i++)
		out[i] = t[i];
}

__global__ void phases(struct kinet_dev_qp *qp, const uint64_t *src, uint32_t lkey, uint64_t dst,
		       uint32_t rkey, int iters, uint64_t *out, int *status)
{
	uint64_t t[PH_N] = {0};
	struct kinet_dev_cq *cq = qp->send_cq;
	for (int i = 0; i < iters; i++) {
		uint64_t idx;
		struct kinet_dev_cqe cqe;
		union kinet_dev_wqe w;
		uint64_t last[8];
		uint64_t a = now();
		if (kinet_dev_sq_reserve(qp, 1, &idx)) {
			*status = 1;
			return;
		}
		uint64_t b = now();
		kinet_dev_wqe_build_rdma(&w, qp->qpn, idx, KINET_WQE_OP_RDMA_WRITE, KINET_DEV_WQE_SIGNALED,
					 (uint64_t)(uintptr_t)src, lkey, dst, rkey, 8, 0);
		kinet_dev_wqe_store(qp, idx, &w);
		kinet_dev_wqe_words(&w, last);
		uint64_t c = now();
		kinet_dev_sq_commit(qp, idx, 1, last);
		uint64_t d = now();
		uint64_t ci = cq->ci;
		struct kinet_devi_deadline dl;
		kinet_devi_deadline_init(&dl, 1000000000ull);
		while (kinet_dev_cq_peek_at(cq, ci, 0, &cqe) != 0) {
			if (kinet_devi_deadline_expired(&dl)) {
				*status = 2;
				return;
			}
		}
		uint64_t e = now();
		kinet_dev_fence_acquire_sys(); /* what kinet_dev_cq_poll_at adds */
		uint64_t f = now();
		if (cqe.syndrome || cqe.wqe_counter != (uint16_t)idx) {
			*status = 3;
			return;
		}
		kinet_dev_cq_consume(cq, ci + 1);
		qp->sq_done = idx + 1;
		uint64_t g = now();
		t[PH_RESERVE] += b - a;
		t[PH_BUILD] += c - b;
		t[PH_RING] += d - c;
		t[PH_CQE] += e - d;
		t[PH_ACQUIRE] += f - e;
		t[PH_CONSUME] += g - f;
	}
	for (int i = 0; i < PH_N; i++)
		out[i] = t[i];
}

/* The high-level path: put_inline of 8 bytes + wait, per operation (as
 * kinet-perf write --lat -s 8); out[0] total ns, out[1] post ns. */
__global__ void highlevel(struct kinet_dev_qp *qp, uint64_t dst, uint32_t rkey, int iters, uint64_t *out,
			  int *status)
{
	uint64_t tot = 0, post = 0;
	for (int i = 0; i < iters; i++) {
		uint64_t v = (uint64_t)i, tk = 0;
		uint64_t a = now();
		int st = kinet_dev_put_inline(qp, &v, 8, dst, rkey, &tk);
		uint64_t b = now();
		if (!st)
			st = kinet_dev_wait(qp, tk);
		uint64_t c = now();
		if (st) {
			*status = 10 + st;
			return;
		}
		tot += c - a;
		post += b - a;
	}
	out[0] = tot;
	out[1] = post;
}

int main(int argc, char **argv)
{
	int iters = argc > 1 ? atoi(argv[1]) : 20000;
	const char *mode = argc > 2 ? argv[2] : "gpu";
	const char *share = argc > 3 ? argv[3] : "exclusive";
	int ndev = 0;

	if (cudaGetDeviceCount(&ndev) != cudaSuccess || !ndev) {
		printf("SKIP: no CUDA device\n");
		return 77;
	}
	struct kinet_ctx_attr ca;
	kinet_ctx_attr_init(&ca);
	ca.cuda_device = 0;
	struct kinet_ctx *ctx;
	CHECK(kinet_ctx_open(&ca, &ctx));

	uint64_t *host, *dout, out[8];
	int *dstatus, status = 0;
	cudaHostAlloc((void **)&host, 4096, cudaHostAllocMapped);
	memset(host, 0, 4096);
	cudaMalloc((void **)&dout, sizeof(out));
	cudaMalloc((void **)&dstatus, sizeof(int));
	cudaMemset(dstatus, 0, sizeof(int));

	primitives<<<1, 1>>>(host, 2000, dout);
	cudaDeviceSynchronize();
	cudaMemcpy(out, dout, sizeof(out), cudaMemcpyDeviceToHost);
	static const char *pr[PR_N] = {
		"load from pinned host memory",	       "fence.acq_rel.sys after a host store",
		"fence.sc.sys after a host store",     "atomicMax on pinned host memory",
		"store to pinned host memory (issue)", "16-byte load from pinned host memory",
		"16-byte load, fence, 16-byte load"};
	printf("primitives (mean of 2000, one thread):\n");
	for (int i = 0; i < PR_N; i++)
		printf("  %-40s %8.3f us\n", pr[i], out[i] / 2000.0 / 1000.0);

	struct kinet_cq_attr cqa = {.size = sizeof(struct kinet_cq_attr), .depth = 1024, .flags = 0};
	struct kinet_cq *cq[2];
	struct kinet_qp *qp[2];
	struct kinet_qp_attr qa;
	struct kinet_qp_info info[2];
	for (int s = 0; s < 2; s++) {
		CHECK(kinet_cq_create(ctx, &cqa, &cq[s]));
		kinet_qp_attr_init(&qa);
		qa.send_cq = cq[s];
		qa.sq_depth = 256;
		qa.db_mode = !strcmp(mode, "cpu")  ? KINET_DB_CPU
			     : !strcmp(mode, "bf") ? KINET_DB_BF
						   : KINET_DB_GPU;
		qa.sharing = !strcmp(share, "gpu")   ? KINET_SHARE_GPU
			     : !strcmp(share, "cta") ? KINET_SHARE_CTA
						     : KINET_SHARE_EXCLUSIVE;
		CHECK(kinet_qp_create(ctx, &qa, &qp[s]));
		CHECK(kinet_qp_pack(qp[s], &info[s]));
	}
	CHECK(kinet_qp_connect(qp[0], &info[1]));
	CHECK(kinet_qp_connect(qp[1], &info[0]));
	struct kinet_mr *mr;
	CHECK(kinet_mr_reg(ctx, host, 4096, KINET_ACCESS_LOCAL_WRITE | KINET_ACCESS_REMOTE_WRITE, &mr));
	struct kinet_dev_qp *dqp;
	CHECK(kinet_qp_export(qp[0], &dqp));

	phases<<<1, 1>>>(dqp, host + 64, kinet_mr_lkey(mr), (uint64_t)(uintptr_t)(host + 128),
			 kinet_mr_rkey(mr), iters, dout, dstatus);
	if (cudaDeviceSynchronize() != cudaSuccess) {
		fprintf(stderr, "kernel failed\n");
		return 1;
	}
	cudaMemcpy(out, dout, sizeof(out), cudaMemcpyDeviceToHost);
	cudaMemcpy(&status, dstatus, sizeof(int), cudaMemcpyDeviceToHost);
	if (status) {
		fprintf(stderr, "phase kernel failed at step %d\n", status);
		return 1;
	}
	static const char *ph[PH_N] = {
		"reserve",	 "build + store WQE", "doorbell (commit + ring)", "until the CQE is visible",
		"acquire fence", "consume CQE"};
	double total = 0;
	printf("8-byte write, doorbell mode %s, sharing %s, mean of %d:\n", mode, share, iters);
	for (int i = 0; i < PH_N; i++) {
		printf("  %-40s %8.3f us\n", ph[i], out[i] / (double)iters / 1000.0);
		total += out[i] / (double)iters / 1000.0;
	}
	printf("  %-40s %8.3f us\n", "total", total);

	highlevel<<<1, 1>>>(dqp, (uint64_t)(uintptr_t)(host + 192), kinet_mr_rkey(mr), iters, dout, dstatus);
	if (cudaDeviceSynchronize() != cudaSuccess) {
		fprintf(stderr, "kernel failed\n");
		return 1;
	}
	cudaMemcpy(out, dout, sizeof(out), cudaMemcpyDeviceToHost);
	cudaMemcpy(&status, dstatus, sizeof(int), cudaMemcpyDeviceToHost);
	if (status) {
		fprintf(stderr, "high-level kernel failed: %d\n", status);
		return 1;
	}
	printf("high level, kinet_dev_put_inline (8 B) + kinet_dev_wait, mean of %d:\n", iters);
	printf("  %-40s %8.3f us\n", "post (reserve, build, store, ring)", out[1] / (double)iters / 1000.0);
	printf("  %-40s %8.3f us\n", "post + wait", out[0] / (double)iters / 1000.0);
	kinet_ctx_close(ctx);
	return 0;
}
