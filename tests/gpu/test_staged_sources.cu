/*
 * Staged sources on the GPU (docs/device-api/staged-sources.md): puts from
 * GPU memory through the software NIC (peer path off), with the engine
 * paused while the kernel posts and then overwrites every source.  A
 * staged put (1..stage_bytes) must deliver the bytes of posting time, a
 * larger one those the engine finds when it runs; a source key made wrong
 * is an error completion with nothing written.  The _block and _warp
 * forms stage with every lane.  Every doorbell mode.
 * Skips (exit 77) without a CUDA device.
 */
#include "kt_dev.h"

#define NT 32
#define SLOT 8192 /* per thread, in source and target */
#define STAGE 4096

/* Size and source offset of thread i: staged sizes, odd alignments, and
 * two above the staging limit. */
__host__ __device__ static uint32_t st_size(unsigned i)
{
	const uint32_t sizes[8] = {1, 8, 13, 28, 256, 1000, STAGE, STAGE + 904};
	return sizes[i % 8];
}
__host__ __device__ static uint32_t st_off(unsigned i)
{
	return (i / 8) * 3; /* 0, 3, 6, 9 */
}

struct sargs {
	struct kinet_dev_qp *d;
	uint8_t *src;
	uint64_t dst;
	uint32_t skey, dkey;
	int *err;
};

__global__ void staged_kernel(struct sargs a)
{
	unsigned i = threadIdx.x;
	uint8_t *s = a.src + (size_t)i * SLOT + st_off(i);
	uint32_t n = st_size(i);
	uint64_t tk = 0;
	for (uint32_t k = 0; k < n; k++)
		s[k] = kd_pat(k, i);
	int st = kinet_dev_put(a.d, s, a.skey, a.dst + (size_t)i * SLOT, a.dkey, n, &tk);
	/* Every put is posted (the engine is paused): now change the sources. */
	__syncthreads();
	for (uint32_t k = 0; k < n; k++)
		s[k] = kd_pat(k, i + 100);
	__threadfence_system();
	__syncthreads();
	if (!st)
		st = kinet_dev_wait(a.d, tk);
	if (st && atomicCAS(&a.err[0], 0, (int)i + 1) == 0)
		a.err[1] = st;
}

/* The block and warp forms stage cooperatively: block 0 puts STAGE bytes
 * (offset 16), warp 1 of it puts 1000 (offset 5, the byte path), both
 * after filling and before rewriting their sources. */
__global__ void staged_group_kernel(struct sargs a)
{
	uint8_t *sb = a.src + 16, *sw = a.src + SLOT + 5;
	uint64_t tb = 0, tw = 0;
	unsigned warp = threadIdx.x / 32;
	for (uint32_t k = threadIdx.x; k < STAGE; k += blockDim.x)
		sb[k] = kd_pat(k, 200);
	for (uint32_t k = threadIdx.x; k < 1000; k += blockDim.x)
		sw[k] = kd_pat(k, 201);
	__syncthreads();
	int st = kinet_dev_put_block(a.d, sb, a.skey, a.dst, a.dkey, STAGE, &tb);
	int sw_st = 0;
	if (warp == 1)
		sw_st = kinet_dev_put_warp(a.d, sw, a.skey, a.dst + SLOT, a.dkey, 1000, &tw);
	__syncthreads();
	for (uint32_t k = threadIdx.x; k < STAGE; k += blockDim.x)
		sb[k] = kd_pat(k, 202);
	for (uint32_t k = threadIdx.x; k < 1000; k += blockDim.x)
		sw[k] = kd_pat(k, 203);
	__threadfence_system();
	__syncthreads();
	if (!st)
		st = kinet_dev_quiet_block(a.d);
	if (!st)
		st = sw_st;
	if (st && atomicCAS(&a.err[0], 0, (int)threadIdx.x + 1) == 0)
		a.err[1] = st;
}

__global__ void bad_key_kernel(struct kinet_dev_qp *d, uint8_t *src, uint32_t skey, uint64_t dst,
			       uint32_t dkey, int *err)
{
	uint64_t tk = 0;
	int st = kinet_dev_put(d, src, skey ^ 0x5500u, dst, dkey, 64, &tk);
	if (!st)
		st = kinet_dev_wait(d, tk);
	err[0] = st;
}

static void run_staged(enum kinet_db_mode mode)
{
	struct g_rig r;
	int herr[2] = {0, 0};
	KT_OK(g_rig_open(&r, mode, (size_t)NT * SLOT, 1, (size_t)NT * SLOT, 0));
	KT_CHECK(r.p.s[0].d != NULL);
	KT_CHECK(r.src.key & 0x80u); /* GPU memory's keys say so */
	KT_CHECK(!(r.dst.key & 0x80u));

	struct sargs a;
	a.d = r.p.s[0].d;
	a.src = r.src.p;
	a.dst = kd_addr(&r.dst, 0);
	a.skey = r.src.key;
	a.dkey = r.dst.key;
	a.err = r.err;
	KT_OK(kinet_ctx_pause(r.ctx));
	staged_kernel<<<1, NT>>>(a);
	G_CUDA(cudaGetLastError());
	kt_sleep_ms(200); /* the kernel posts and rewrites its sources meanwhile */
	KT_OK(kinet_ctx_resume(r.ctx));
	G_CUDA(cudaDeviceSynchronize());
	G_CUDA(cudaMemcpy(herr, r.err, sizeof(herr), cudaMemcpyDeviceToHost));
	if (herr[0])
		fprintf(stderr, "thread %d: status %d\n", herr[0] - 1, herr[1]);
	KT_CHECK_EQ(herr[0], 0);
	for (unsigned i = 0; i < NT; i++) {
		uint32_t n = st_size(i), seed = n <= STAGE ? i : i + 100;
		const uint8_t *t = r.dst.p + (size_t)i * SLOT;
		int ok = 1;
		for (uint32_t k = 0; k < n; k++)
			ok &= t[k] == kd_pat(k, seed);
		for (uint32_t k = n; k < SLOT; k++)
			ok &= t[k] == 0;
		if (!ok)
			fprintf(stderr, "thread %u (size %u, offset %u): wrong bytes\n", i, n, st_off(i));
		KT_CHECK(ok);
	}

	/* The group forms: posting-time bytes too. */
	memset(r.dst.p, 0, (size_t)2 * SLOT);
	KT_OK(kinet_ctx_pause(r.ctx));
	staged_group_kernel<<<1, NT * 4>>>(a);
	G_CUDA(cudaGetLastError());
	kt_sleep_ms(200);
	KT_OK(kinet_ctx_resume(r.ctx));
	G_CUDA(cudaDeviceSynchronize());
	G_CUDA(cudaMemcpy(herr, r.err, sizeof(herr), cudaMemcpyDeviceToHost));
	if (herr[0])
		fprintf(stderr, "group kernel thread %d: status %d\n", herr[0] - 1, herr[1]);
	KT_CHECK_EQ(herr[0], 0);
	int gok = 1;
	for (uint32_t k = 0; k < STAGE; k++)
		gok &= r.dst.p[k] == kd_pat(k, 200);
	for (uint32_t k = 0; k < 1000; k++)
		gok &= r.dst.p[SLOT + k] == kd_pat(k, 201);
	KT_CHECK(gok);

	/* A wrong source key: error completion, nothing written. */
	memset(r.dst.p, 0, 64);
	bad_key_kernel<<<1, 1>>>(r.p.s[0].d, r.src.p, r.src.key, kd_addr(&r.dst, 0), r.dst.key, r.err);
	G_CUDA(cudaDeviceSynchronize());
	G_CUDA(cudaMemcpy(herr, r.err, sizeof(herr), cudaMemcpyDeviceToHost));
	KT_CHECK_EQ(herr[0], -EIO);
	KT_CHECK(kt_mem_is(r.dst.p, 0, 64));
	printf("  db %s: staged puts ok\n", kt_db_names[mode]);
	g_rig_close(&r);
}

KT_TEST(staged_puts_from_gpu_memory)
{
	G_NEED_GPU();
	/* The engine path (loopback would take the peer path), and slots
	 * large enough for every staged size above. */
	setenv("KINET_P2P", "off", 1);
	setenv("KINET_STAGE_BYTES", "4096", 1);
	for (int m = 0; m < 3; m++)
		run_staged(kt_db_modes[m]);
}

KT_MAIN(staged_puts_from_gpu_memory)
