/*
 * GPUNetIO kernels, unmodified, on kinet: kernels built on GPUNetIO's
 * device headers from the CUDA toolkit (NCCL's copy under
 * nccl_device/gin/gdaki/doca_gpunetio/) drive QPs exported with
 * kinet_qp_export_gpunetio, in the three doorbell modes GPUNetIO knows
 * (CPU proxy, GPU doorbell, BlueFlame).  64 threads of two blocks share a
 * QP (GPUNetIO's GPU sharing mode) and stream put, p, signal, put_signal,
 * get and atomics (low-level read and atomic WQEs) and the four counter
 * forms (WAIT on a companion QP) into zero-based signal and counter tables
 * as NCCL's GIN lays them out: over 90000 WQEs per mode, so the CQ wraps
 * hundreds of times and the 16-bit WQE index wraps; then quiet.  A warp
 * posts with the warp form of put, and in BlueFlame mode with
 * doca_gpu_dev_verbs_submit_bf_warp.  Every byte, count and old value is
 * checked on the host.  A last test writes the same operations with
 * GPUNetIO's WQE functions and kinet's builders and compares the bytes.
 * Skips (exit 77) without a CUDA device or without GPUNetIO's headers.
 */
#include <assert.h>
#include <cuda.h>
#include <unistd.h>

#include "kt_dev.h"

#include "kinet/gpunetio.h"

#if __has_include(<nccl_device/gin/gdaki/doca_gpunetio/doca_gpunetio_device.h>)
#define HAVE_GPUNETIO 1
#include <nccl_device/gin/gdaki/doca_gpunetio/doca_gpunetio_device.h>
#endif

#define NEED_GPUNETIO()                                                                                      \
	do {                                                                                                 \
		G_NEED_GPU();                                                                                \
		if (!HAVE_GPUNETIO_HEADERS)                                                                  \
			KT_SKIP("GPUNetIO's device headers (nccl_device/gin/gdaki/doca_gpunetio/ in the "    \
				"CUDA "                                                                      \
				"toolkit's include folder) are not installed");                              \
	} while (0)

#ifdef HAVE_GPUNETIO
#define HAVE_GPUNETIO_HEADERS 1

#define BLOCKS 2
#define NT 32 /* threads per block */
#define THREADS (BLOCKS * NT)
#define ITERS 160
#define SLOT 96 /* bytes of each put / get, not a power of two */
#define OPS (THREADS * ITERS)
#define WARP_ITERS 200
#define BF_ITERS 2000
#define KERNEL_LIMIT_S 240 /* GPUNetIO waits without bound: the host does not */

typedef struct doca_gpu_dev_verbs_qp dqp_t;
typedef struct doca_gpu_dev_verbs_addr gn_addr_t;

/* Everything the kernels address: buffers and their big-endian keys
 * (GPUNetIO takes keys already swapped). */
struct gn_args {
	dqp_t *qp, *comp;
	uint8_t *src, *dst, *dst2, *dst3, *gsrc, *gdst, *wdst;
	uint64_t *inl, *inl2, *fa_word, *fa_res, *cs_words, *cs_res;
	uint32_t k_src, k_dst, k_g, k_words;
	uint32_t k_sig, k_sig2, k_ctr, k_sink; /* zero-based: addressed by offset */
	int *status;
};

__device__ static gn_addr_t gn_addr(const void *p, uint32_t key)
{
	gn_addr_t a;
	a.addr = (uint64_t)(uintptr_t)p;
	a.key = key;
	return a;
}

__device__ static gn_addr_t gn_off(uint64_t off, uint32_t key)
{
	gn_addr_t a;
	a.addr = off;
	a.key = key;
	return a;
}

/* One WQE through GPUNetIO's low-level calls: read, or an atomic. */
__device__ static void gn_get(dqp_t *qp, gn_addr_t raddr, gn_addr_t laddr, uint32_t bytes)
{
	uint64_t idx = doca_gpu_dev_verbs_reserve_wq_slots(qp, 1);
	struct doca_gpu_dev_verbs_wqe *w = doca_gpu_dev_verbs_get_wqe_ptr(qp, idx);
	doca_gpu_dev_verbs_wqe_prepare_read(qp, w, idx, DOCA_GPUNETIO_IB_MLX5_WQE_CTRL_CQ_UPDATE, raddr.addr,
					    raddr.key, laddr.addr, laddr.key, bytes);
	doca_gpu_dev_verbs_mark_wqes_ready(qp, idx, idx);
	doca_gpu_dev_verbs_submit(qp, idx + 1);
}

__device__ static void gn_atomic(dqp_t *qp, uint32_t opcode, gn_addr_t raddr, gn_addr_t laddr,
				 uint64_t compare_add, uint64_t swap)
{
	uint64_t idx = doca_gpu_dev_verbs_reserve_wq_slots(qp, 1);
	struct doca_gpu_dev_verbs_wqe *w = doca_gpu_dev_verbs_get_wqe_ptr(qp, idx);
	doca_gpu_dev_verbs_wqe_prepare_atomic(qp, w, idx, opcode, DOCA_GPUNETIO_IB_MLX5_WQE_CTRL_CQ_UPDATE,
					      raddr.addr, raddr.key, laddr.addr, laddr.key, sizeof(uint64_t),
					      compare_add, swap);
	doca_gpu_dev_verbs_mark_wqes_ready(qp, idx, idx);
	doca_gpu_dev_verbs_submit(qp, idx + 1);
}

__global__ void gn_ops_kernel(struct gn_args a)
{
	const uint32_t t = blockIdx.x * blockDim.x + threadIdx.x;
	const gn_addr_t sink = gn_off(0, a.k_sink);
	const gn_addr_t sig = gn_off(8 * t, a.k_sig), sig2 = gn_off(8 * t, a.k_sig2),
			ctr = gn_off(8 * t, a.k_ctr);
	doca_gpu_dev_verbs_ticket_t tk;

	for (uint32_t i = 0; i < ITERS; i++) {
		const uint64_t n = (uint64_t)t * ITERS + i, off = n * SLOT;
		const gn_addr_t src = gn_addr(a.src + off, a.k_src);
		const uint64_t value = (uint64_t)t << 32 | i;

		doca_gpu_dev_verbs_put(a.qp, gn_addr(a.dst + off, a.k_dst), src, SLOT, &tk);
		doca_gpu_dev_verbs_p<uint64_t>(a.qp, gn_addr(a.inl + n, a.k_dst), value, &tk);
		doca_gpu_dev_verbs_signal<DOCA_GPUNETIO_VERBS_SIGNAL_OP_ADD>(a.qp, sig, sink, 1, &tk);
		doca_gpu_dev_verbs_put_signal<DOCA_GPUNETIO_VERBS_SIGNAL_OP_ADD>(
			a.qp, gn_addr(a.dst2 + off, a.k_dst), src, SLOT, sig, sink, 2, &tk);
		gn_get(a.qp, gn_addr(a.gsrc + off, a.k_g), gn_addr(a.gdst + off, a.k_g), SLOT);
		gn_atomic(a.qp, DOCA_GPUNETIO_IB_MLX5_OPCODE_ATOMIC_FA, gn_addr(a.fa_word, a.k_words),
			  gn_addr(a.fa_res + n, a.k_words), 1, 0);
		gn_atomic(a.qp, DOCA_GPUNETIO_IB_MLX5_OPCODE_ATOMIC_CS, gn_addr(a.cs_words + t, a.k_words),
			  gn_addr(a.cs_res + n, a.k_words), i, i + 1);
		switch (i % 4) {
		case 0:
			doca_gpu_dev_verbs_put_counter(a.qp, gn_addr(a.dst3 + off, a.k_dst), src, SLOT,
						       a.comp, ctr, sink, 1);
			break;
		case 1:
			doca_gpu_dev_verbs_p_counter<uint64_t>(a.qp, gn_addr(a.inl2 + n, a.k_dst), value,
							       a.comp, ctr, sink, 1);
			break;
		case 2:
			doca_gpu_dev_verbs_signal_counter<DOCA_GPUNETIO_VERBS_SIGNAL_OP_ADD>(
				a.qp, sig2, sink, 1, a.comp, ctr, sink, 1);
			break;
		default:
			doca_gpu_dev_verbs_put_signal_counter<DOCA_GPUNETIO_VERBS_SIGNAL_OP_ADD>(
				a.qp, gn_addr(a.dst3 + off, a.k_dst), src, SLOT, sig2, sink, 1, a.comp, ctr,
				sink, 1);
			break;
		}
		if (i % 16 == 15)
			doca_gpu_dev_verbs_wait(a.qp, tk); /* the thread's last ticket */
	}
	/* quiet: everything of both QPs (errors show in the QP state, the
	 * context's error record and the data, which the host checks) */
	doca_gpu_dev_verbs_wait(a.qp);
	doca_gpu_dev_verbs_wait(a.comp);
}

/* One warp: the warp form of put (a WQE per lane, one doorbell), then in
 * BlueFlame mode single WQEs submitted with the warp's BlueFlame copy. */
__global__ void gn_warp_kernel(struct gn_args a, int bf)
{
	const uint32_t lane = threadIdx.x;
	doca_gpu_dev_verbs_ticket_t tk = 0;

	for (uint32_t i = 0; i < WARP_ITERS; i++) {
		const uint64_t off = ((uint64_t)i * 32 + lane) * SLOT;
		doca_gpu_dev_verbs_put<DOCA_GPUNETIO_VERBS_RESOURCE_SHARING_MODE_GPU,
				       DOCA_GPUNETIO_VERBS_NIC_HANDLER_AUTO,
				       DOCA_GPUNETIO_VERBS_EXEC_SCOPE_WARP>(
			a.qp, gn_addr(a.wdst + off, a.k_dst), gn_addr(a.src + off, a.k_src), SLOT, &tk);
	}
	int st = doca_gpu_dev_verbs_poll_cq_at(doca_gpu_dev_verbs_qp_get_cq_sq(a.qp), tk);
	for (uint32_t i = 0; bf && !st && i < BF_ITERS; i++) {
		const uint64_t off = ((uint64_t)WARP_ITERS * 32 + i) * SLOT;
		uint64_t idx = 0;
		struct doca_gpu_dev_verbs_wqe *w;
		if (lane == 0) {
			idx = doca_gpu_dev_verbs_reserve_wq_slots(a.qp, 1);
			w = doca_gpu_dev_verbs_get_wqe_ptr(a.qp, idx);
			doca_gpu_dev_verbs_wqe_prepare_write(
				a.qp, w, idx, DOCA_GPUNETIO_IB_MLX5_OPCODE_RDMA_WRITE,
				DOCA_GPUNETIO_IB_MLX5_WQE_CTRL_CQ_UPDATE, 0,
				(uint64_t)(uintptr_t)(a.wdst + off), a.k_dst,
				(uint64_t)(uintptr_t)(a.src + off), a.k_src, SLOT);
			doca_gpu_dev_verbs_mark_wqes_ready(a.qp, idx, idx);
		}
		idx = __shfl_sync(0xffffffffu, idx, 0);
		w = doca_gpu_dev_verbs_get_wqe_ptr(a.qp, idx);
		doca_gpu_dev_verbs_submit_bf_warp(a.qp, idx + 1, w);
		tk = idx;
	}
	if (bf && !st)
		st = doca_gpu_dev_verbs_poll_cq_at(doca_gpu_dev_verbs_qp_get_cq_sq(a.qp), tk);
	if (lane == 0 && st)
		atomicCAS(a.status, 0, st);
}

/* Waits for the kernels of the default stream, bounded: GPUNetIO's polls
 * spin for ever on a completion that never comes. */
static int gn_sync(const char *what)
{
	for (int ms = 0; ms < KERNEL_LIMIT_S * 1000; ms++) {
		cudaError_t e = cudaStreamQuery(0);
		if (e == cudaSuccess)
			return 0;
		if (e != cudaErrorNotReady) {
			fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(e));
			return -EIO;
		}
		usleep(1000);
	}
	fprintf(stderr, "%s: still running after %d s (a completion never came); giving up\n", what,
		KERNEL_LIMIT_S);
	fflush(stderr);
	_exit(1);
}

struct gn_fx {
	struct kinet_ctx *ctx;
	struct kinet_cq *cq[4];
	struct kinet_qp *qp[4]; /* 0 main, 1 companion; 2, 3 their peers */
	struct kinet_gpunetio_qp *d[2];
	struct kd_buf data, words, sig, sig2, ctr, sink;
	struct gn_args a;
};

static size_t gn_total_slots(void)
{
	return (size_t)OPS + (size_t)WARP_ITERS * 32 + BF_ITERS;
}

static int gn_open(struct gn_fx *f, enum kinet_db_mode mode)
{
	struct kinet_qp_info info[4];
	const size_t slots = gn_total_slots(), span = slots * SLOT;
	int rc = 0;

	memset(f, 0, sizeof(*f));
	f->ctx = kd_ctx_open();
	if (!f->ctx)
		return -ENODEV;
	for (int i = 0; i < 4 && !rc; i++) {
		struct kinet_cq_attr ca = {
			.size = sizeof(struct kinet_cq_attr), .depth = 128, .flags = KINET_CQ_IGNORE_OVERRUN};
		struct kinet_qp_attr qa;
		rc = kinet_cq_create(f->ctx, &ca, &f->cq[i]);
		if (rc)
			break;
		kinet_qp_attr_init(&qa);
		qa.send_cq = f->cq[i];
		qa.sq_depth = 128;
		qa.db_mode = mode;
		qa.timeout_ms = 20000;
		rc = kinet_qp_create(f->ctx, &qa, &f->qp[i]);
		if (!rc)
			rc = kinet_qp_pack(f->qp[i], &info[i]);
	}
	for (int i = 0; i < 4 && !rc; i++)
		rc = kinet_qp_connect(f->qp[i], &info[i ^ 2]);
	for (int i = 0; i < 2 && !rc; i++)
		rc = kinet_qp_export_gpunetio(f->qp[i], &f->d[i]);
	/* One GPU buffer: src, dst, dst2, dst3, gsrc, gdst, wdst (span each),
	 * inl, inl2 (8 B per op). */
	if (!rc)
		rc = kd_buf_alloc_mem(f->ctx, &f->data, 7 * span + 2 * 8 * (size_t)OPS, 1);
	if (!rc)
		rc = kd_buf_alloc_mem(f->ctx, &f->words, 8 + 8 * THREADS + 2 * 8 * (size_t)OPS, 1);
	if (rc)
		return rc;
	/* NCCL's GIN tables: zero-based, addressed by 8 * id. */
	struct kd_buf *zb[4] = {&f->sig, &f->sig2, &f->ctr, &f->sink};
	for (int i = 0; i < 4 && !rc; i++) {
		if (cudaMalloc((void **)&zb[i]->p, 8 * THREADS) != cudaSuccess ||
		    cudaMemset(zb[i]->p, 0, 8 * THREADS) != cudaSuccess)
			return -ENOMEM;
		zb[i]->gpu = 1;
		zb[i]->len = 8 * THREADS;
		rc = kinet_mr_reg(f->ctx, zb[i]->p, 8 * THREADS, KT_ACC_ALL | KINET_ACCESS_ZERO_BASED,
				  &zb[i]->mr);
		zb[i]->key = kinet_mr_lkey(zb[i]->mr);
	}
	if (rc)
		return rc;

	struct gn_args *a = &f->a;
	uint8_t *p = f->data.p;
	a->qp = (dqp_t *)f->d[0];
	a->comp = (dqp_t *)f->d[1];
	a->src = p;
	a->dst = p + span;
	a->dst2 = p + 2 * span;
	a->dst3 = p + 3 * span;
	a->gsrc = p + 4 * span;
	a->gdst = p + 5 * span;
	a->wdst = p + 6 * span;
	a->inl = (uint64_t *)(p + 7 * span);
	a->inl2 = a->inl + OPS;
	a->fa_word = (uint64_t *)f->words.p;
	a->cs_words = a->fa_word + 1;
	a->fa_res = a->cs_words + THREADS;
	a->cs_res = a->fa_res + OPS;
	a->k_src = a->k_dst = a->k_g = kinet_be32(f->data.key);
	a->k_words = kinet_be32(f->words.key);
	a->k_sig = kinet_be32(f->sig.key);
	a->k_sig2 = kinet_be32(f->sig2.key);
	a->k_ctr = kinet_be32(f->ctr.key);
	a->k_sink = kinet_be32(f->sink.key);
	if (cudaMalloc((void **)&a->status, sizeof(int)) != cudaSuccess ||
	    cudaMemset(a->status, 0, sizeof(int)) != cudaSuccess)
		return -ENOMEM;

	/* Sources: a pattern per slot, copied in. */
	uint8_t *h = (uint8_t *)malloc(span);
	if (!h)
		return -ENOMEM;
	for (size_t i = 0; i < span; i++)
		h[i] = kd_pat(i, 11);
	rc = kd_copy_in(&f->data, 0, h, span);
	for (size_t i = 0; i < span && !rc; i++)
		h[i] = kd_pat(i, 23);
	if (!rc)
		rc = kd_copy_in(&f->data, 4 * span, h, span);
	free(h);
	return rc;
}

static void gn_close(struct gn_fx *f)
{
	struct kd_buf *b[6] = {&f->data, &f->words, &f->sig, &f->sig2, &f->ctr, &f->sink};
	for (int i = 0; i < 6; i++)
		kd_buf_free(b[i]);
	cudaFree(f->a.status);
	for (int i = 0; i < 4; i++)
		if (f->qp[i])
			kinet_qp_destroy(f->qp[i]);
	for (int i = 0; i < 4; i++)
		if (f->cq[i])
			kinet_cq_destroy(f->cq[i]);
	if (f->ctx)
		kinet_ctx_close(f->ctx);
}

/* 0 when the n bytes at off of the region `base` of f->data hold the
 * pattern of seed over the same offsets as the source, else -1 (first
 * difference printed). */
static int gn_expect(const uint8_t *h, size_t base, size_t from, size_t n, uint32_t seed, const char *what)
{
	for (size_t i = from; i < from + n; i++) {
		if (h[base + i] != kd_pat(i, seed)) {
			fprintf(stderr, "%s: byte %zu is 0x%02x, expected 0x%02x\n", what, i, h[base + i],
				kd_pat(i, seed));
			return -1;
		}
	}
	return 0;
}

static int gn_expect_zero(const uint8_t *h, size_t base, size_t from, size_t n, const char *what)
{
	for (size_t i = from; i < from + n; i++) {
		if (h[base + i]) {
			fprintf(stderr, "%s: byte %zu is 0x%02x, expected 0\n", what, i, h[base + i]);
			return -1;
		}
	}
	return 0;
}

static int gn_cmp_u64(const void *x, const void *y)
{
	uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
	return a < b ? -1 : a > b;
}

static void gn_run(enum kinet_db_mode mode)
{
	struct gn_fx f;
	struct kinet_error err;
	const size_t span = gn_total_slots() * SLOT;
	int status = 0;

	NEED_GPUNETIO();
	KT_OK(gn_open(&f, mode));
	struct kinet_gpunetio_qp d; /* the descriptor is GPU memory */
	G_CUDA(cudaMemcpy(&d, f.d[0], sizeof(d), cudaMemcpyDeviceToHost));
	KT_CHECK_EQ(d.nic_handler, mode == KINET_DB_CPU ? KINET_GPUNETIO_NIC_HANDLER_CPU_PROXY
							: KINET_GPUNETIO_NIC_HANDLER_GPU_SM_DB);
	gn_ops_kernel<<<BLOCKS, NT>>>(f.a);
	KT_OK(gn_sync("ops kernel"));
	gn_warp_kernel<<<1, 32>>>(f.a, mode == KINET_DB_BF);
	KT_OK(gn_sync("warp kernel"));
	G_CUDA(cudaMemcpy(&status, f.a.status, sizeof(status), cudaMemcpyDeviceToHost));
	KT_CHECK_EQ(status, 0);

	/* Every byte of every buffer. */
	size_t total = f.data.len;
	uint8_t *h = (uint8_t *)malloc(total);
	KT_CHECK(h != NULL);
	KT_OK(kd_copy_out(h, &f.data, 0, total));
	const size_t ops = (size_t)OPS * SLOT, warp = (size_t)WARP_ITERS * 32 * SLOT;
	const size_t bf = mode == KINET_DB_BF ? (size_t)BF_ITERS * SLOT : 0;
	int bad = gn_expect(h, span, 0, ops, 11, "put") || gn_expect(h, 2 * span, 0, ops, 11, "put_signal") ||
		  gn_expect(h, 5 * span, 0, ops, 23, "get") ||
		  gn_expect(h, 6 * span, 0, warp + bf, 11, "warp put / BlueFlame") ||
		  gn_expect_zero(h, 6 * span, warp + bf, span - warp - bf, "past the warp puts");
	for (size_t n = 0; n < (size_t)OPS && !bad; n++) {
		uint32_t t = (uint32_t)(n / ITERS), i = (uint32_t)(n % ITERS);
		uint64_t inl, inl2, want = (uint64_t)t << 32 | i;
		memcpy(&inl, h + 7 * span + 8 * n, 8);
		memcpy(&inl2, h + 7 * span + 8 * (OPS + n), 8);
		bad = inl != want || inl2 != (i % 4 == 1 ? want : 0);
		if (i % 4 == 0 || i % 4 == 3)
			bad = bad || gn_expect(h, 3 * span, n * SLOT, SLOT, 11, "put with counter");
		else
			bad = bad || gn_expect_zero(h, 3 * span, n * SLOT, SLOT, "no counter put");
		if (bad)
			fprintf(stderr, "op %zu (thread %u iteration %u): inline or counter put wrong\n", n,
				t, i);
	}
	KT_CHECK(!bad);
	free(h);

	/* Counts and old values. */
	uint64_t *w = (uint64_t *)malloc(f.words.len);
	uint64_t tab[3][THREADS];
	KT_CHECK(w != NULL);
	KT_OK(kd_copy_out(w, &f.words, 0, f.words.len));
	struct kd_buf *zb[3] = {&f.sig, &f.sig2, &f.ctr};
	for (int k = 0; k < 3; k++)
		KT_OK(kd_copy_out(tab[k], zb[k], 0, 8 * THREADS));
	KT_CHECK_EQ(w[0], (uint64_t)OPS);
	uint64_t *fa_res = w + 1 + THREADS, *cs_res = fa_res + OPS;
	qsort(fa_res, OPS, 8, gn_cmp_u64);
	for (int t = 0; t < THREADS; t++) {
		KT_CHECK_EQ(w[1 + t], ITERS);
		KT_CHECK_EQ(tab[0][t], 3 * ITERS);
		KT_CHECK_EQ(tab[1][t], ITERS / 2);
		KT_CHECK_EQ(tab[2][t], ITERS);
		for (int i = 0; i < ITERS; i++) {
			KT_CHECK_EQ(fa_res[t * ITERS + i], (uint64_t)t * ITERS + i); /* each old value once */
			KT_CHECK_EQ(cs_res[t * ITERS + i], i);
		}
	}
	free(w);

	/* The queues went round: the CQs many times, the 16-bit index too. */
	G_CUDA(cudaMemcpy(&d, f.d[0], sizeof(d), cudaMemcpyDeviceToHost));
	KT_CHECK(d.sq_rsvd_index > 65536);
	KT_CHECK_EQ(d.cq_sq.cqe_ci, d.sq_rsvd_index);
	printf("  %s: %llu WQEs on the main QP, %llu on the companion\n", kt_db_names[mode],
	       (unsigned long long)d.sq_rsvd_index, (unsigned long long)(2 * OPS));
	KT_OK(kinet_ctx_last_error(f.ctx, &err));
	KT_CHECK_EQ(err.status, 0);
	for (int i = 0; i < 4; i++)
		KT_CHECK_EQ(kinet_qp_get_state(f.qp[i]), KINET_QPS_RTS);
	gn_close(&f);
}

/* ---- the same WQEs from GPUNetIO's functions and kinet's builders ---- */

#define CMP_SLOTS 16
#define CMP_QPN 0x123456u

enum { W_NOP, W_WRITE, W_WRITE_IMM, W_READ, W_INL8, W_INL4, W_FA, W_CS, W_WAIT, W_COUNT };

__global__ void gn_wqe_kernel(dqp_t *qp, struct kinet_dev_qp *kq)
{
	const uint64_t raddr = 0x0000123456789abcull, laddr = 0x00007f0011223344ull;
	const uint32_t rkey = 0xa1b2c3d4u, lkey = 0x01020304u;
	const uint16_t base = 0xfff8; /* the index wraps inside the batch */
	const uint8_t flags = KINET_DEV_WQE_SIGNALED;
	const enum doca_gpu_dev_verbs_wqe_ctrl_flags cf = DOCA_GPUNETIO_IB_MLX5_WQE_CTRL_CQ_UPDATE;
	uint16_t i;
	uint64_t v8 = 0x1122334455667788ull;
	uint32_t v4 = 0xcafef00du;

	i = (uint16_t)(base + W_NOP);
	doca_gpu_dev_verbs_wqe_prepare_nop(qp, doca_gpu_dev_verbs_get_wqe_ptr(qp, i), i, cf);
	kinet_dev_wqe_prep_nop(kq, i, flags);
	i = (uint16_t)(base + W_WRITE);
	doca_gpu_dev_verbs_wqe_prepare_write(qp, doca_gpu_dev_verbs_get_wqe_ptr(qp, i), i,
					     DOCA_GPUNETIO_IB_MLX5_OPCODE_RDMA_WRITE, cf, 0, raddr,
					     kinet_be32(rkey), laddr, kinet_be32(lkey), 4096);
	kinet_dev_wqe_prep_write(kq, i, flags, (const void *)(uintptr_t)laddr, lkey, raddr, rkey, 4096);
	i = (uint16_t)(base + W_WRITE_IMM);
	doca_gpu_dev_verbs_wqe_prepare_write(
		qp, doca_gpu_dev_verbs_get_wqe_ptr(qp, i), i, DOCA_GPUNETIO_IB_MLX5_OPCODE_RDMA_WRITE_IMM, cf,
		kinet_be32(0xdeadbeefu), raddr, kinet_be32(rkey), laddr, kinet_be32(lkey), 4096);
	kinet_dev_wqe_prep_write_imm(kq, i, flags, (const void *)(uintptr_t)laddr, lkey, raddr, rkey, 4096,
				     0xdeadbeefu);
	i = (uint16_t)(base + W_READ);
	doca_gpu_dev_verbs_wqe_prepare_read(qp, doca_gpu_dev_verbs_get_wqe_ptr(qp, i), i, cf, raddr,
					    kinet_be32(rkey), laddr, kinet_be32(lkey), 100000);
	kinet_dev_wqe_prep_read(kq, i, flags, (void *)(uintptr_t)laddr, lkey, raddr, rkey, 100000);
	i = (uint16_t)(base + W_INL8);
	doca_gpu_dev_verbs_prepare_inl_rdma_write_wqe_header(qp, doca_gpu_dev_verbs_get_wqe_ptr(qp, i), i, cf,
							     raddr, kinet_be32(rkey), sizeof(v8));
	doca_gpu_dev_verbs_prepare_inl_rdma_write_wqe_data<uint64_t>(
		qp, doca_gpu_dev_verbs_get_wqe_ptr(qp, i), v8);
	kinet_dev_wqe_prep_write_inline(kq, i, flags, &v8, sizeof(v8), raddr, rkey);
	i = (uint16_t)(base + W_INL4);
	doca_gpu_dev_verbs_prepare_inl_rdma_write_wqe_header(qp, doca_gpu_dev_verbs_get_wqe_ptr(qp, i), i, cf,
							     raddr, kinet_be32(rkey), sizeof(v4));
	doca_gpu_dev_verbs_prepare_inl_rdma_write_wqe_data<uint32_t>(
		qp, doca_gpu_dev_verbs_get_wqe_ptr(qp, i), v4);
	kinet_dev_wqe_prep_write_inline(kq, i, flags, &v4, sizeof(v4), raddr, rkey);
	i = (uint16_t)(base + W_FA);
	doca_gpu_dev_verbs_wqe_prepare_atomic(qp, doca_gpu_dev_verbs_get_wqe_ptr(qp, i), i,
					      DOCA_GPUNETIO_IB_MLX5_OPCODE_ATOMIC_FA, cf, raddr,
					      kinet_be32(rkey), laddr, kinet_be32(lkey), 8, 5, 0);
	kinet_dev_wqe_prep_fetch_add(kq, i, flags, (uint64_t *)(uintptr_t)laddr, lkey, raddr, rkey, 5);
	i = (uint16_t)(base + W_CS);
	doca_gpu_dev_verbs_wqe_prepare_atomic(qp, doca_gpu_dev_verbs_get_wqe_ptr(qp, i), i,
					      DOCA_GPUNETIO_IB_MLX5_OPCODE_ATOMIC_CS, cf, raddr,
					      kinet_be32(rkey), laddr, kinet_be32(lkey), 8, 7, 9);
	kinet_dev_wqe_prep_compare_swap(kq, i, flags, (uint64_t *)(uintptr_t)laddr, lkey, raddr, rkey, 7, 9);
	i = (uint16_t)(base + W_WAIT);
	doca_gpu_dev_verbs_wqe_prepare_wait(qp, doca_gpu_dev_verbs_get_wqe_ptr(qp, i), i, cf, 0x01234567u,
					    0x00abcdefu);
	kinet_dev_wqe_prep_wait(kq, i, flags, 0x00abcdefu, 0x01234567u);
}

/* Byte ranges GPUNetIO's function writes, per WQE (it leaves the control
 * segment's signature and reserved bytes, the immediate of non-IMM WQEs,
 * the remote segment's reserved word and the wait segment's reserved
 * bytes unset).  Fetch-add's compare field: GPUNetIO writes the addend,
 * kinet 0; ConnectX does not read it. */
struct gn_range {
	uint8_t from, to;
};
static const struct gn_range gn_defined[W_COUNT][6] = {
	{{0, 8}, {11, 12}},				  /* nop */
	{{0, 8}, {11, 16}, {16, 28}, {32, 48}},		  /* write */
	{{0, 8}, {11, 16}, {16, 28}, {32, 48}},		  /* write_imm */
	{{0, 8}, {11, 12}, {16, 28}, {32, 48}},		  /* read */
	{{0, 8}, {11, 12}, {16, 28}, {32, 44}},		  /* inline 8 B */
	{{0, 8}, {11, 12}, {16, 28}, {32, 40}},		  /* inline 4 B */
	{{0, 8}, {11, 12}, {16, 28}, {32, 40}, {48, 64}}, /* fetch_add: compare (40..47) apart, below */
	{{0, 8}, {11, 12}, {16, 28}, {32, 64}},		  /* compare_swap */
	{{0, 8}, {11, 12}, {24, 32}},			  /* wait */
};
static const char *const gn_wqe_names[W_COUNT] = {
	"nop", "write", "write_imm", "read", "inline 8 B", "inline 4 B", "fetch_add", "compare_swap", "wait"};

KT_TEST(wqe_bytes)
{
	NEED_GPUNETIO();
	uint8_t *ring[2];
	uint8_t h[2][CMP_SLOTS * 64];
	struct kinet_gpunetio_qp g;
	struct kinet_dev_qp k;
	dqp_t *dg;
	struct kinet_dev_qp *dk;

	for (int r = 0; r < 2; r++) {
		G_CUDA(cudaMalloc((void **)&ring[r], sizeof(h[r])));
		G_CUDA(cudaMemset(ring[r], 0xee, sizeof(h[r])));
	}
	memset(&g, 0, sizeof(g));
	g.sq_num = CMP_QPN;
	g.sq_num_shift8 = CMP_QPN << 8;
	g.sq_num_shift8_be = kinet_be32(CMP_QPN << 8);
	g.sq_num_shift8_be_1ds = kinet_be32(CMP_QPN << 8 | 1);
	g.sq_num_shift8_be_2ds = kinet_be32(CMP_QPN << 8 | 2);
	g.sq_num_shift8_be_3ds = kinet_be32(CMP_QPN << 8 | 3);
	g.sq_num_shift8_be_4ds = kinet_be32(CMP_QPN << 8 | 4);
	g.sq_wqe_num = CMP_SLOTS;
	g.sq_wqe_mask = CMP_SLOTS - 1;
	g.sq_wqe_daddr = ring[0];
	memset(&k, 0, sizeof(k));
	k.sq = ring[1];
	k.sq_mask = CMP_SLOTS - 1;
	k.qpn = CMP_QPN;
	k.max_inline = KINET_DEV_MAX_INLINE;
	G_CUDA(cudaMalloc((void **)&dg, sizeof(g)));
	G_CUDA(cudaMalloc((void **)&dk, sizeof(k)));
	G_CUDA(cudaMemcpy(dg, &g, sizeof(g), cudaMemcpyHostToDevice));
	G_CUDA(cudaMemcpy(dk, &k, sizeof(k), cudaMemcpyHostToDevice));
	gn_wqe_kernel<<<1, 1>>>(dg, dk);
	G_CUDA(cudaDeviceSynchronize());
	for (int r = 0; r < 2; r++)
		G_CUDA(cudaMemcpy(h[r], ring[r], sizeof(h[r]), cudaMemcpyDeviceToHost));

	for (int w = 0; w < W_COUNT; w++) {
		const uint8_t *x = h[0] + ((0xfff8 + w) % CMP_SLOTS) * 64,
			      *y = h[1] + ((0xfff8 + w) % CMP_SLOTS) * 64;
		int n = 0;
		for (const struct gn_range *r = gn_defined[w]; r->to; r++) {
			for (int b = r->from; b < r->to; b++, n++) {
				if (x[b] != y[b])
					fprintf(stderr, "%s: byte %d: GPUNetIO 0x%02x, kinet 0x%02x\n",
						gn_wqe_names[w], b, x[b], y[b]);
				KT_CHECK_EQ(x[b], y[b]);
			}
		}
		printf("  %-12s %2d bytes GPUNetIO defines: identical\n", gn_wqe_names[w], n);
	}
	/* fetch-add: the compare field GPUNetIO fills with the addend. */
	const uint8_t *fa_g = h[0] + ((0xfff8 + W_FA) % CMP_SLOTS) * 64 + 40;
	const uint8_t *fa_k = h[1] + ((0xfff8 + W_FA) % CMP_SLOTS) * 64 + 40;
	uint64_t cg, ck;
	memcpy(&cg, fa_g, 8);
	memcpy(&ck, fa_k, 8);
	KT_CHECK_EQ(kinet_be64(cg), 5);
	KT_CHECK_EQ(ck, 0);
	printf("  fetch_add compare field: GPUNetIO %llu (the addend), kinet 0 (unread by the NIC)\n",
	       (unsigned long long)kinet_be64(cg));
	for (int r = 0; r < 2; r++)
		cudaFree(ring[r]);
	cudaFree(dg);
	cudaFree(dk);
}

#else /* no GPUNetIO headers */
#define HAVE_GPUNETIO_HEADERS 0

static void gn_run(enum kinet_db_mode mode)
{
	(void)mode;
	NEED_GPUNETIO();
}

KT_TEST(wqe_bytes)
{
	NEED_GPUNETIO();
}
#endif

KT_TEST(ops_cpu_proxy)
{
	gn_run(KINET_DB_CPU);
}

KT_TEST(ops_gpu_doorbell)
{
	gn_run(KINET_DB_GPU);
}

KT_TEST(ops_blueflame)
{
	gn_run(KINET_DB_BF);
}

KT_MAIN(ops_cpu_proxy, ops_gpu_doorbell, ops_blueflame, wqe_bytes)
