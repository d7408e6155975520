/*
 * Device API on the GPU: every verb in thread, warp and block form, in all
 * three doorbell modes, with sources and targets in GPU memory and in
 * pinned host memory; data checked byte for byte on the host.
 * Skips (exit 77) without a CUDA device.
 */
#include "kt_dev.h"

#define NT 128		   /* threads of the block: 4 warps */
#define A_BYTES 256	   /* per thread, thread-form put */
#define B_BYTES (1u << 20) /* per warp, warp-form put */
#define C_BYTES (4u << 20) /* block-form put and get */
#define OFF_A 0
#define OFF_B (64u << 10)
#define OFF_C (OFF_B + 4 * B_BYTES)
#define OFF_D (OFF_C + C_BYTES)		/* get target (in src) */
#define OFF_INL (OFF_D + C_BYTES)	/* put_inline slots: 16 B per thread */
#define OFF_RES (OFF_INL + NT * 16)	/* fetch-add results (src side) */
#define OFF_CNT (OFF_RES + NT * 8 + 64) /* counter (dst side) */
#define OFF_SIG (OFF_CNT + 64)		/* signal word (dst side) */
#define OFF_CAS (OFF_SIG + 64)
#define OFF_MSG (OFF_CAS + 64)	     /* receive buffers (dst side): 5 x 4 KiB */
#define OFF_IMM (OFF_MSG + 8 * 4096) /* write_imm target */
#define TOTAL (OFF_IMM + 65536)

struct vargs {
	struct kinet_dev_qp *d, *t;
	uint8_t *src, *dst;
	uint32_t skey, dkey;
	int *err; /* [0] first failing check, [1] its status */
};

__device__ void vfail(int *err, int code, int st)
{
	if (atomicCAS(&err[0], 0, code) == 0)
		err[1] = st;
}

#define V(code, call)                                                                                        \
	do {                                                                                                 \
		int st_ = (call);                                                                            \
		if (st_) {                                                                                   \
			vfail(a.err, code, st_);                                                             \
			return;                                                                              \
		}                                                                                            \
	} while (0)

__global__ void verbs_kernel(struct vargs a)
{
	unsigned tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
	uint64_t tk = 0;
	struct kinet_dev_qp *d = a.d;
	uint64_t dst = (uint64_t)(uintptr_t)a.dst;

	/* A: thread form, one put each */
	for (unsigned i = 0; i < A_BYTES; i++)
		a.src[OFF_A + tid * A_BYTES + i] = kd_pat(tid * A_BYTES + i, 1);
	V(1, kinet_dev_put(d, a.src + OFF_A + tid * A_BYTES, a.skey, dst + OFF_A + tid * A_BYTES, a.dkey,
			   A_BYTES, &tk));
	V(2, kinet_dev_wait(d, tk));

	/* B: warp form, 1 MiB per warp split across lanes */
	for (unsigned i = lane; i < B_BYTES; i += 32)
		a.src[OFF_B + warp * B_BYTES + i] = kd_pat(i, 10 + warp);
	__syncwarp();
	V(3, kinet_dev_put_warp(d, a.src + OFF_B + warp * B_BYTES, a.skey, dst + OFF_B + warp * B_BYTES,
				a.dkey, B_BYTES, &tk));
	V(4, kinet_dev_wait_warp(d, tk));

	/* C: block form, 4 MiB; D: read it back with get_block */
	for (unsigned i = tid; i < C_BYTES; i += NT)
		a.src[OFF_C + i] = kd_pat(i, 20);
	__syncthreads();
	V(5, kinet_dev_put_block(d, a.src + OFF_C, a.skey, dst + OFF_C, a.dkey, C_BYTES, &tk));
	V(6, kinet_dev_wait_block(d, tk));
	V(7, kinet_dev_get_block(d, a.src + OFF_D, a.skey, dst + OFF_C, a.dkey, C_BYTES, &tk));
	V(8, kinet_dev_wait_block(d, tk));

	/* put_inline from registers: 16 bytes per thread, then the warp form */
	uint8_t v[16];
	for (int i = 0; i < 16; i++)
		v[i] = kd_pat(tid * 16 + i, 30);
	V(9, kinet_dev_put_inline(d, v, 16, dst + OFF_INL + tid * 16, a.dkey, &tk));
	V(10, kinet_dev_quiet_block(d));

	/* atomics: every thread adds 1 (thread form), each warp adds 1000
	 * (warp form), the block adds 1000000 (block form) */
	uint64_t *res = (uint64_t *)(void *)(a.src + OFF_RES);
	V(11, kinet_dev_fetch_add(d, &res[tid], a.skey, dst + OFF_CNT, a.dkey, 1, &tk));
	V(12, kinet_dev_wait(d, tk));
	V(13, kinet_dev_fetch_add_warp(d, &res[NT + warp], a.skey, dst + OFF_CNT, a.dkey, 1000, &tk));
	V(14, kinet_dev_fetch_add_block(d, &res[NT + 4], a.skey, dst + OFF_CNT, a.dkey, 1000000, &tk));
	V(15, kinet_dev_quiet_block(d));
	/* compare-swap: exactly one thread wins 0 -> tid + 1 */
	V(16, kinet_dev_compare_swap(d, &res[tid], a.skey, dst + OFF_CAS, a.dkey, 0, tid + 1, &tk));
	V(17, kinet_dev_wait(d, tk));
	V(18, kinet_dev_compare_swap_block(d, &res[NT + 5], a.skey, dst + OFF_CAS, a.dkey, 999999, 1, &tk));
	V(19, kinet_dev_quiet_block(d));

	/* signals: thread form from every thread, then warp and block forms,
	 * then put_signal_block; the kernel waits on the target word itself */
	const uint64_t *sig = (const uint64_t *)(const void *)(a.dst + OFF_SIG);
	V(20, kinet_dev_signal(d, dst + OFF_SIG, a.dkey, 1, NULL));
	V(21, kinet_dev_signal_warp(d, dst + OFF_SIG, a.dkey, 100, NULL));
	V(22, kinet_dev_signal_block(d, dst + OFF_SIG, a.dkey, 10000, NULL));
	V(23, kinet_dev_signal_wait_until_block(d, sig, KINET_DEV_CMP_EQ, NT + 400 + 10000, NULL));
	for (unsigned i = tid; i < C_BYTES; i += NT)
		a.src[OFF_C + i] = kd_pat(i, 40);
	__syncthreads();
	V(24, kinet_dev_put_signal_block(d, a.src + OFF_C, a.skey, dst + OFF_C, a.dkey, C_BYTES,
					 dst + OFF_SIG, a.dkey, 1, NULL));
	V(25, kinet_dev_signal_wait_until_warp(d, sig, KINET_DEV_CMP_GE, NT + 400 + 10001, NULL));
	/* the data is there once the signal is: sample it from the kernel */
	if (a.dst[OFF_C + tid * 32749 % C_BYTES] != kd_pat(tid * 32749 % C_BYTES, 40))
		vfail(a.err, 26, -1);

	/* send / recv / write_imm: the target (t) posts receives, d sends:
	 * one block-form send (4096 B) and one send_imm per warp */
	struct kinet_dev_qp *t = a.t;
	V(27, kinet_dev_post_recv_block(t, a.dst + OFF_MSG, a.dkey, 4096, NULL));
	V(28, kinet_dev_post_recv_warp(t, a.dst + OFF_MSG + 4096 * (1 + warp), a.dkey, 4096, NULL));
	for (unsigned i = tid; i < 4096; i += NT)
		a.src[OFF_A + i] = kd_pat(i, 50);
	__syncthreads();
	V(29, kinet_dev_send_block(d, a.src + OFF_A, a.skey, 4096, NULL));
	V(30, kinet_dev_send_imm_warp(d, a.src + OFF_A, a.skey, 100 + warp, 0xa0 + warp, NULL));
	uint32_t len = 0, imm = 0;
	uint64_t ridx = 0;
	V(31, kinet_dev_recv_block(t, &len, &imm, &ridx)); /* the first message: the block's */
	if (len != 4096 || imm != 0)
		vfail(a.err, 32, (int)len);
	V(33, kinet_dev_recv_warp(t, &len, &imm, NULL)); /* one of the warps' each */
	if (len < 100 || len > 103 || imm != 0xa0 + (len - 100))
		vfail(a.err, 34, (int)len);
	__syncthreads();
	if (tid == 0)
		V(35, kinet_dev_post_recv(t, a.dst + OFF_MSG, a.dkey, 16, NULL));
	__syncthreads();
	if (warp == 0) {
		V(36, kinet_dev_write_imm_warp(d, a.src + OFF_A, a.skey, dst + OFF_IMM, a.dkey, 3000,
					       0x12345678, &tk));
		V(37, kinet_dev_recv_warp(t, &len, &imm, NULL));
		if (len != 3000 || imm != 0x12345678)
			vfail(a.err, 38, (int)len);
	}
	__syncthreads();
	V(41, kinet_dev_fence_block(d, &tk));
	V(42, kinet_dev_quiet_block(d));
	if (kinet_dev_qp_error(d) || kinet_dev_qp_recv_error(t))
		vfail(a.err, 43, (int)kinet_dev_qp_error(d));
}

static void run_verbs(enum kinet_db_mode mode, int src_gpu, int dst_gpu)
{
	struct g_rig r;
	int herr[2] = {0, 0};
	KT_OK(g_rig_open(&r, mode, TOTAL, src_gpu, TOTAL, dst_gpu));

	struct vargs a;
	a.d = r.p.s[0].d;
	a.t = r.p.s[1].d;
	a.src = r.src.p;
	a.dst = r.dst.p;
	a.skey = r.src.key;
	a.dkey = r.dst.key;
	a.err = r.err;
	verbs_kernel<<<1, NT>>>(a);
	G_CUDA(cudaGetLastError());
	G_CUDA(cudaDeviceSynchronize());
	G_CUDA(cudaMemcpy(herr, r.err, sizeof(herr), cudaMemcpyDeviceToHost));
	if (herr[0])
		fprintf(stderr, "kernel check %d failed (status %d)\n", herr[0], herr[1]);
	KT_CHECK_EQ(herr[0], 0);

	uint8_t *h = (uint8_t *)malloc(TOTAL), *hs = (uint8_t *)malloc(TOTAL);
	KT_CHECK(h && hs);
	KT_OK(kd_copy_out(h, &r.dst, 0, TOTAL));
	KT_OK(kd_copy_out(hs, &r.src, 0, TOTAL));
	for (size_t i = 0; i < (size_t)NT * A_BYTES; i++)
		KT_CHECK_EQ(h[OFF_A + i], kd_pat(i, 1));
	for (unsigned w = 0; w < 4; w++)
		for (size_t i = 0; i < B_BYTES; i++)
			KT_CHECK_EQ(h[OFF_B + w * B_BYTES + i], kd_pat(i, 10 + w));
	for (size_t i = 0; i < C_BYTES; i++) {
		KT_CHECK_EQ(h[OFF_C + i], kd_pat(i, 40));  /* the put_signal_block overwrote the first put */
		KT_CHECK_EQ(hs[OFF_D + i], kd_pat(i, 20)); /* what get_block read back */
	}
	for (size_t i = 0; i < (size_t)NT * 16; i++)
		KT_CHECK_EQ(h[OFF_INL + i], kd_pat(i, 30));
	uint64_t cnt, cas, sig;
	memcpy(&cnt, h + OFF_CNT, 8);
	memcpy(&cas, h + OFF_CAS, 8);
	memcpy(&sig, h + OFF_SIG, 8);
	KT_CHECK_EQ(cnt, NT + 4 * 1000 + 1000000);
	KT_CHECK(cas >= 1 && cas <= NT);
	KT_CHECK_EQ(sig, NT + 400 + 10001);
	for (size_t i = 0; i < 4096; i++)
		KT_CHECK_EQ(h[OFF_MSG + i], kd_pat(i, 50));
	for (size_t k = 1; k <= 4; k++)
		for (size_t i = 0; i < 100; i++)
			KT_CHECK_EQ(h[OFF_MSG + 4096 * k + i], kd_pat(i, 50));
	for (size_t i = 0; i < 3000; i++)
		KT_CHECK_EQ(h[OFF_IMM + i], kd_pat(i, 50));
	printf("  db %s, src %s, dst %s: ok\n", kt_db_names[mode], src_gpu ? "gpu" : "host",
	       dst_gpu ? "gpu" : "host");
	free(h);
	free(hs);
	g_rig_close(&r);
}

KT_TEST(verbs_all_db_modes_gpu_memory)
{
	G_NEED_GPU();
	for (int m = 0; m < 3; m++)
		run_verbs(kt_db_modes[m], 1, 1);
}

KT_TEST(verbs_host_memory)
{
	G_NEED_GPU();
	run_verbs(KINET_DB_GPU, 0, 0);
	run_verbs(KINET_DB_BF, 1, 0);
	run_verbs(KINET_DB_CPU, 0, 1);
}

KT_MAIN(verbs_all_db_modes_gpu_memory, verbs_host_memory)
