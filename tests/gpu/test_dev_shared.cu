/*
 * Device API on the GPU: many threads on shared QPs.
 *   EXCLUSIVE: 132 blocks, one QP per block, used by thread 0 (thread form)
 *              and by warp 0 (warp form);
 *   CTA:       132 blocks x 256 threads, one QP per block;
 *   GPU:       132 blocks x 256 threads on ONE QP.
 * Every user does fetch_add(+1) on one counter and writes a (user, seq)
 * record to a slot of its own; checked: the counter is exact, the old
 * values are a permutation (nothing lost or duplicated), every record is
 * there, every ticket completed.  All three doorbell modes; targets in GPU
 * and in host memory.  Skips (exit 77) without a CUDA device.
 */
#include "kt_dev.h"

#define BLOCKS 132
#define THREADS 256
#define MAXQ BLOCKS

struct hargs {
	struct kinet_dev_qp **qps; /* per block, or one */
	int per_block;		   /* qps[blockIdx.x] (1) or qps[0] (0) */
	int form;		   /* 0 thread, 1 warp 0 only (warp form), 2 thread 0 only */
	int nops;
	uint64_t counter;
	uint32_t ckey;
	uint8_t *records;
	uint32_t rkey;
	uint64_t *results;
	uint32_t reskey;
	int *err;
};

__global__ void hammer(struct hargs a)
{
	unsigned tid = threadIdx.x, gid = blockIdx.x * blockDim.x + threadIdx.x;
	struct kinet_dev_qp *qp = a.qps[a.per_block ? blockIdx.x : 0];
	uint64_t last = 0, tk = 0;
	int st = 0;

	if (a.form == 2 && tid != 0)
		return;
	if (a.form == 1 && tid >= 32)
		return;
	for (int seq = 0; seq < a.nops && !st; seq++) {
		/* user = thread (form 0), warp (form 1: lanes split the work) or
		 * thread 0 (form 2): one per block in forms 1 and 2 */
		uint64_t user = a.form == 0 ? gid : blockIdx.x;
		uint64_t slot = user * (uint64_t)a.nops + (uint64_t)seq;
		uint64_t rec = (user << 32) | (uint64_t)seq;
		if (a.form == 1) {
			st = kinet_dev_fetch_add_warp(qp, &a.results[slot], a.reskey, a.counter, a.ckey, 1,
						      &tk);
			if (!st)
				st = kinet_dev_put_inline_warp(qp, &rec, 8,
							       (uint64_t)(uintptr_t)(a.records + 8 * slot),
							       a.rkey, &tk);
		} else {
			st = kinet_dev_fetch_add(qp, &a.results[slot], a.reskey, a.counter, a.ckey, 1, &tk);
			if (!st && tk <= last)
				st = 1000;
			last = tk;
			if (!st)
				st = kinet_dev_put_inline(qp, &rec, 8,
							  (uint64_t)(uintptr_t)(a.records + 8 * slot), a.rkey,
							  &tk);
		}
		if (!st && tk <= last)
			st = 1001;
		last = tk;
		if (!st && seq % 4 == 3)
			st = a.form == 1 ? kinet_dev_wait_warp(qp, tk) : kinet_dev_wait(qp, tk);
	}
	if (!st)
		st = a.form == 1 ? kinet_dev_wait_warp(qp, last) : kinet_dev_wait(qp, last);
	if (st && atomicCAS(&a.err[0], 0, st) == 0)
		a.err[1] = (int)gid;
}

/* mode: sharing; form as in hargs */
static void run(enum kinet_qp_sharing sharing, int form, enum kinet_db_mode db, int target_gpu, int nops)
{
	static const char *share_names[3] = {"exclusive", "cta", "gpu"};
	static const char *form_names[3] = {"thread", "warp", "thread0"};
	struct kinet_ctx *ctx = kd_ctx_open();
	KT_CHECK(ctx != NULL);
	int nq = sharing == KINET_SHARE_GPU ? 1 : BLOCKS;
	struct kd_pair *pairs = (struct kd_pair *)calloc((size_t)nq, sizeof(struct kd_pair));
	struct kinet_dev_qp *hq[MAXQ];
	struct kd_opts o;
	kd_opts_init(&o);
	o.sharing = sharing;
	o.db_mode = db;
	o.rq_depth = 0;
	o.sq_depth = sharing == KINET_SHARE_GPU ? 4096 : 512;
	o.timeout_ms = 60000;
	o.ctx = ctx;
	for (int q = 0; q < nq; q++) {
		KT_OK(kd_pair_create(&pairs[q], &o));
		hq[q] = pairs[q].s[0].d;
	}
	uint64_t users = form == 0 ? (uint64_t)BLOCKS * THREADS : BLOCKS;
	uint64_t total = users * (uint64_t)nops;
	struct kd_buf cnt, rec, res;
	KT_OK(kd_buf_alloc_mem(ctx, &cnt, 64, target_gpu));
	KT_OK(kd_buf_alloc_mem(ctx, &rec, 8 * total, target_gpu));
	KT_OK(kd_buf_alloc_mem(ctx, &res, 8 * total, 1));
	struct kinet_dev_qp **dq = NULL;
	int *err = NULL, herr[2] = {0, 0};
	G_CUDA(cudaMalloc((void **)&dq, sizeof(hq)));
	G_CUDA(cudaMemcpy(dq, hq, sizeof(hq), cudaMemcpyHostToDevice));
	G_CUDA(cudaMalloc((void **)&err, sizeof(herr)));
	G_CUDA(cudaMemset(err, 0, sizeof(herr)));

	struct hargs a;
	a.qps = dq;
	a.per_block = nq > 1;
	a.form = form;
	a.nops = nops;
	a.counter = kd_addr(&cnt, 0);
	a.ckey = cnt.key;
	a.records = rec.p;
	a.rkey = rec.key;
	a.results = (uint64_t *)(void *)res.p;
	a.reskey = res.key;
	a.err = err;
	cudaEvent_t e0, e1;
	cudaEventCreate(&e0);
	cudaEventCreate(&e1);
	cudaEventRecord(e0);
	hammer<<<BLOCKS, THREADS>>>(a);
	cudaEventRecord(e1);
	G_CUDA(cudaGetLastError());
	G_CUDA(cudaDeviceSynchronize());
	float ms = 0;
	cudaEventElapsedTime(&ms, e0, e1);
	G_CUDA(cudaMemcpy(herr, err, sizeof(herr), cudaMemcpyDeviceToHost));
	if (herr[0]) {
		struct kinet_error ke;
		fprintf(stderr, "thread %d: status %d\n", herr[1], herr[0]);
		if (!kinet_ctx_last_error(ctx, &ke))
			fprintf(stderr, "context error %d qpn %u syndrome 0x%x source %u\n", ke.status,
				ke.qpn, ke.syndrome, ke.source);
	}
	KT_CHECK_EQ(herr[0], 0);

	uint64_t c = 0;
	uint64_t *hr = (uint64_t *)malloc(8 * total), *hres = (uint64_t *)malloc(8 * total);
	uint8_t *seen = (uint8_t *)calloc(total, 1);
	KT_CHECK(hr && hres && seen);
	KT_OK(kd_copy_out(&c, &cnt, 0, 8));
	KT_OK(kd_copy_out(hr, &rec, 0, 8 * total));
	KT_OK(kd_copy_out(hres, &res, 0, 8 * total));
	KT_CHECK_EQ(c, total);
	for (uint64_t i = 0; i < total; i++) {
		KT_CHECK_EQ(hr[i], ((i / (uint64_t)nops) << 32) | (i % (uint64_t)nops));
		KT_CHECK(hres[i] < total);
		KT_CHECK(!seen[hres[i]]);
		seen[hres[i]] = 1;
	}
	for (int q = 0; q < nq; q++) {
		struct kinet_dev_qp d;
		G_CUDA(cudaMemcpy(&d, hq[q], sizeof(d), cudaMemcpyDeviceToHost));
		KT_CHECK_EQ(d.sq_done, d.sq_reserved);
		KT_CHECK_EQ(d.sq_error, 0);
	}
	printf("  %-9s %-7s db %-3s target %-4s: %llu ops x 2 in %.1f ms\n", share_names[sharing],
	       form_names[form], kt_db_names[db], target_gpu ? "gpu" : "host", (unsigned long long)total, ms);
	free(hr);
	free(hres);
	free(seen);
	cudaFree(dq);
	cudaFree(err);
	kd_buf_free(&cnt);
	kd_buf_free(&rec);
	kd_buf_free(&res);
	for (int q = 0; q < nq; q++)
		kd_pair_destroy(&pairs[q]);
	free(pairs);
	kinet_ctx_close(ctx);
}

KT_TEST(exclusive_qps)
{
	G_NEED_GPU();
	run(KINET_SHARE_EXCLUSIVE, 2, KINET_DB_CPU, 1, 64);
	run(KINET_SHARE_EXCLUSIVE, 2, KINET_DB_GPU, 0, 64);
	run(KINET_SHARE_EXCLUSIVE, 1, KINET_DB_BF, 1, 64);
}

KT_TEST(cta_qps)
{
	G_NEED_GPU();
	for (int m = 0; m < 3; m++)
		run(KINET_SHARE_CTA, 0, kt_db_modes[m], m != 1, 4);
}

KT_TEST(gpu_qp)
{
	G_NEED_GPU();
	for (int m = 0; m < 3; m++)
		run(KINET_SHARE_GPU, 0, kt_db_modes[m], m != 2, 2);
	run(KINET_SHARE_GPU, 1, KINET_DB_BF, 1, 16);
}

KT_MAIN(exclusive_qps, cta_qps, gpu_qp)
