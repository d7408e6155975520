/*
 * Where the time of one GPU-initiated operation goes: a single thread posts
 * an 8-byte RDMA write through the low-level device API to a loopback QP of
 * the software NIC and stamps %globaltimer between the phases (reserve,
 * build+store, doorbell, CQE visible, consume).  Before that it times the
 * primitives those phases are made of (a load from pinned host memory, the
 * system fences after a store to it, an atomic on it).  A diagnostic, built
 * and run by bench/run.sh; not a test.
 *
 *   latency_breakdown [iterations] [cpu|gpu|bf]
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

enum { PH_RESERVE, PH_BUILD, PH_RING, PH_CQE, PH_CONSUME, PH_N };
enum { PR_LOAD, PR_FENCE_ACQREL, PR_FENCE_SC, PR_ATOMIC_MAX, PR_STORE_ONLY, PR_N };

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
		struct kinet_cqe64 *cqe;
		uint64_t a = now();
		if (kinet_dev_sq_reserve(qp, 1, &idx)) {
			*status = 1;
			return;
		}
		uint64_t b = now();
		kinet_dev_wqe_prep_write(qp, idx, KINET_WQE_CTRL_CQ_UPDATE, src, lkey, dst, rkey, 8);
		uint64_t c = now();
		kinet_dev_sq_commit(qp, idx, 1, NULL);
		uint64_t d = now();
		uint64_t ci = cq->ci;
		if (kinet_dev_cq_wait_at(cq, ci, 1000000000ull, &cqe)) {
			*status = 2;
			return;
		}
		uint64_t e = now();
		if (kinet_dev_cqe_status(cqe)) {
			*status = 3;
			return;
		}
		cq->ci = ci + 1;
		kinet_dev_cq_consume(cq, ci + 1);
		kinet_dev_store_relaxed_u64(&qp->sq_done, idx + 1);
		uint64_t f = now();
		t[PH_RESERVE] += b - a;
		t[PH_BUILD] += c - b;
		t[PH_RING] += d - c;
		t[PH_CQE] += e - d;
		t[PH_CONSUME] += f - e;
	}
	for (int i = 0; i < PH_N; i++)
		out[i] = t[i];
}

int main(int argc, char **argv)
{
	int iters = argc > 1 ? atoi(argv[1]) : 20000;
	const char *mode = argc > 2 ? argv[2] : "gpu";
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
	static const char *pr[PR_N] = {"load from pinned host memory", "fence.acq_rel.sys after a host store",
				       "fence.sc.sys after a host store", "atomicMax on pinned host memory",
				       "store to pinned host memory (issue)"};
	printf("primitives (mean of 2000, one thread):\n");
	for (int i = 0; i < PR_N; i++)
		printf("  %-40s %8.3f us\n", pr[i], out[i] / 2000.0 / 1000.0);

	struct kinet_cq_attr cqa = {1024};
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
		CHECK(kinet_qp_create(ctx, &qa, &qp[s]));
		CHECK(kinet_qp_info(qp[s], &info[s]));
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
	static const char *ph[PH_N] = {"reserve", "build + store WQE", "doorbell (commit + ring)",
				       "until the CQE is visible", "consume CQE"};
	double total = 0;
	printf("8-byte write, doorbell mode %s, mean of %d:\n", mode, iters);
	for (int i = 0; i < PH_N; i++) {
		printf("  %-40s %8.3f us\n", ph[i], out[i] / (double)iters / 1000.0);
		total += out[i] / (double)iters / 1000.0;
	}
	printf("  %-40s %8.3f us\n", "total", total);
	kinet_ctx_close(ctx);
	return 0;
}
