/*
 * A CUDA kernel drives a verbs-created QP through mlx5dv_init_obj, as
 * GPUNetIO- and DeepEP-style code does: the rings, doorbell record and
 * doorbell register are host memory kinet's libibverbs handed out,
 * mapped for the GPU (see mapped()); the kernel writes
 * ConnectX WQEs (RDMA write GPU -> GPU memory, then a fetch-add), rings,
 * and polls the CQ ring itself.  The GPU memory is registered once with
 * ibv_reg_mr and once through a dma-buf (ibv_reg_dmabuf_mr), as NCCL and
 * perftest's --use_cuda_dmabuf do.  Skips (77) without a CUDA device.
 */
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <infiniband/mlx5dv.h>
#include <stdio.h>

#include "verbs_pair.h"

#define N 65536

/* Host memory the GPU reaches: its device address.  kinet's rings are
 * already mapped for the GPU when the library has a CUDA device (they come
 * from cudaHostAlloc), so the device pointer is asked for first; memory
 * that is not yet is registered a page at a time, which also works where
 * a range starts or ends in a page an earlier call registered. */
static void *mapped(void *host, size_t len)
{
	const uintptr_t page = 4096;
	void *dev = NULL;
	cudaError_t e;

	if (cudaHostGetDevicePointer(&dev, host, 0) == cudaSuccess)
		return dev;
	(void)cudaGetLastError();
	for (uintptr_t p = (uintptr_t)host & ~(page - 1); p < (uintptr_t)host + len; p += page) {
		if (cudaHostGetDevicePointer(&dev, (void *)p, 0) == cudaSuccess)
			continue;
		(void)cudaGetLastError();
		e = cudaHostRegister((void *)p, page, cudaHostRegisterMapped | cudaHostRegisterPortable);
		if (e != cudaSuccess && e != cudaErrorHostMemoryAlreadyRegistered) {
			fprintf(stderr, "cudaHostRegister(%#lx): %s\n", (unsigned long)p,
				cudaGetErrorString(e));
			return NULL;
		}
		(void)cudaGetLastError();
	}
	e = cudaHostGetDevicePointer(&dev, host, 0);
	if (e != cudaSuccess) {
		fprintf(stderr, "cudaHostGetDevicePointer(%p): %s\n", host, cudaGetErrorString(e));
		return NULL;
	}
	return dev;
}

struct dev_ring {
	uint8_t *sq;
	uint32_t sq_cnt;
	__be32 *dbrec;
	uint64_t *db;
	uint8_t *cq;
	uint32_t cq_cnt;
	__be32 *cq_dbrec;
	uint32_t qpn;
};

__device__ static uint32_t be32(uint32_t v)
{
	return __byte_perm(v, 0, 0x0123);
}

__device__ static uint64_t be64(uint64_t v)
{
	return ((uint64_t)be32((uint32_t)v) << 32) | be32((uint32_t)(v >> 32));
}

/* Posts one WQE (ds 16-byte segments after the control segment are filled
 * by fill), rings, waits for its CQE; the CQE's opcode, or 0xff on
 * timeout. */
__device__ static uint8_t post_and_wait(struct dev_ring *r, uint32_t pi, uint32_t ci, uint8_t opcode,
					uint8_t ds, const uint64_t *segs)
{
	uint64_t *w = (uint64_t *)(r->sq + (size_t)(pi & (r->sq_cnt - 1)) * 64);

	w[0] = (uint64_t)be32((pi & 0xffff) << 8 | opcode) | (uint64_t)be32(r->qpn << 8 | ds) << 32;
	/* signature, reserved, fm_ce_se (byte 11: ask for a CQE), immediate */
	w[1] = (uint64_t)MLX5_WQE_CTRL_CQ_UPDATE << 24;
	for (int i = 0; i < (ds - 1) * 2; i++)
		w[2 + i] = segs[i];
	__threadfence_system();
	*(volatile __be32 *)&r->dbrec[MLX5_SND_DBR] = be32((pi + 1) & 0xffff);
	__threadfence_system();
	*(volatile uint64_t *)r->db = w[0];
	__threadfence_system();
	volatile uint8_t *cqe = r->cq + (size_t)(ci & (r->cq_cnt - 1)) * 64;
	for (long long spin = 0; spin < 2000000000LL; spin++) {
		uint8_t op_own = cqe[63];
		if ((op_own >> 4) != MLX5_CQE_INVALID && (op_own & 1) == ((ci / r->cq_cnt) & 1)) {
			*(volatile __be32 *)r->cq_dbrec = be32((ci + 1) & 0xffffff);
			__threadfence_system();
			return op_own >> 4;
		}
	}
	return 0xff;
}

__global__ void drive(struct dev_ring r, uint64_t src, uint32_t lkey, uint64_t dst, uint32_t rkey,
		      uint64_t old, uint8_t *result)
{
	uint64_t segs[4];

	/* RDMA write of N bytes: remote address segment, data segment. */
	segs[0] = be64(dst);
	segs[1] = (uint64_t)be32(rkey);
	segs[2] = (uint64_t)be32(N) | (uint64_t)be32(lkey) << 32;
	segs[3] = be64(src);
	result[0] = post_and_wait(&r, 0, 0, MLX5_OPCODE_RDMA_WRITE, 3, segs);
	/* Fetch-add 7 on the first word of dst; the old value to old. */
	uint64_t fa[6];
	fa[0] = be64(dst);
	fa[1] = (uint64_t)be32(rkey);
	fa[2] = be64(7);
	fa[3] = 0;
	fa[4] = (uint64_t)be32(8) | (uint64_t)be32(lkey) << 32;
	fa[5] = be64(old);
	result[1] = post_and_wait(&r, 1, 1, MLX5_OPCODE_ATOMIC_FA, 4, fa);
}

typedef int (*get_handle_fn)(int *, uintptr_t, size_t, int, unsigned long long);

static void run(bool dmabuf)
{
	struct pair p;
	struct mlx5dv_qp dq;
	struct mlx5dv_cq dc;
	struct mlx5dv_obj obj;
	uint8_t *src, *dst, *result;
	struct ibv_mr *mr;
	int fd = -1;

	KT_OK(pair_open(&p, false, 0));
	KT_OK(cudaMalloc((void **)&src, 2 * N) == cudaSuccess ? 0 : 1);
	dst = src + N;
	KT_OK(cudaMemset(dst, 0, N) == cudaSuccess ? 0 : 1);
	uint8_t *pattern = (uint8_t *)malloc(N);
	for (int i = 0; i < N; i++)
		pattern[i] = (uint8_t)(i * 13 + 5);
	KT_OK(cudaMemcpy(src, pattern, N, cudaMemcpyHostToDevice) == cudaSuccess ? 0 : 1);
	int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC;
	if (dmabuf) {
		void *cuda = dlopen("libcuda.so.1", RTLD_NOW);
		get_handle_fn get = cuda ? (get_handle_fn)dlsym(cuda, "cuMemGetHandleForAddressRange") : NULL;
		/* CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD = 1 */
		if (!get || get(&fd, (uintptr_t)src, 2 * N, 1, 0)) {
			printf("SKIP: no dma-buf export for GPU memory here\n");
			kt_skipped = 1;
			pair_close(&p);
			return;
		}
		mr = ibv_reg_dmabuf_mr(p.pd, 0, 2 * N, (uintptr_t)src, fd, access);
	} else {
		mr = ibv_reg_mr(p.pd, src, 2 * N, access);
	}
	KT_CHECK(mr);
	memset(&obj, 0, sizeof(obj));
	obj.qp.in = p.qp[0];
	obj.qp.out = &dq;
	obj.cq.in = p.cq[0];
	obj.cq.out = &dc;
	KT_OK(mlx5dv_init_obj(&obj, MLX5DV_OBJ_QP | MLX5DV_OBJ_CQ));
	struct dev_ring r;
	r.sq = (uint8_t *)mapped(dq.sq.buf, (size_t)dq.sq.wqe_cnt * 64);
	r.sq_cnt = dq.sq.wqe_cnt;
	r.dbrec = (__be32 *)mapped(dq.dbrec, 8);
	r.db = (uint64_t *)mapped(dq.bf.reg, 8);
	r.cq = (uint8_t *)mapped(dc.buf, (size_t)dc.cqe_cnt * 64);
	r.cq_cnt = dc.cqe_cnt;
	r.cq_dbrec = (__be32 *)mapped(dc.dbrec, 4);
	r.qpn = p.qp[0]->qp_num;
	KT_CHECK(r.sq && r.dbrec && r.db && r.cq && r.cq_dbrec);
	KT_OK(cudaMallocManaged((void **)&result, 2) == cudaSuccess ? 0 : 1);
	/* The fetch-add's old value lands in src's first word. */
	drive<<<1, 1>>>(r, (uintptr_t)src, mr->lkey, (uintptr_t)dst, mr->rkey, (uintptr_t)src, result);
	KT_OK(cudaDeviceSynchronize() == cudaSuccess ? 0 : 1);
	KT_CHECK_EQ(result[0], MLX5_CQE_REQ);
	KT_CHECK_EQ(result[1], MLX5_CQE_REQ);
	uint8_t *back = (uint8_t *)malloc(N);
	KT_OK(cudaMemcpy(back, dst, N, cudaMemcpyDeviceToHost) == cudaSuccess ? 0 : 1);
	uint64_t first;
	memcpy(&first, pattern, 8);
	uint64_t got;
	memcpy(&got, back, 8);
	KT_CHECK_EQ(got, first + 7);
	KT_CHECK(!memcmp(back + 8, pattern + 8, N - 8));
	KT_OK(ibv_dereg_mr(mr));
	cudaFree(src);
	cudaFree(result);
	free(pattern);
	free(back);
	pair_close(&p);
}

KT_TEST(kernel_drives_verbs_qp)
{
	int n = 0;

	if (cudaGetDeviceCount(&n) != cudaSuccess || n < 1)
		KT_SKIP("no CUDA device");
	run(false);
}

KT_TEST(kernel_drives_verbs_qp_dmabuf)
{
	int n = 0;

	if (cudaGetDeviceCount(&n) != cudaSuccess || n < 1)
		KT_SKIP("no CUDA device");
	run(true);
}

KT_MAIN(kernel_drives_verbs_qp, kernel_drives_verbs_qp_dmabuf)
