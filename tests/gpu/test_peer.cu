/*
 * The peer path on GPUs: two contexts of one process, the initiator on
 * device 0 and the target on device 1 (device 0 again on a one-GPU machine,
 * which has peer access to itself; the output says which).  Every buffer is
 * GPU memory.  Engines are paused where an operation must take the peer
 * path, so only the GPU's own stores and atomics can complete it.
 */
#include "kt_dev.h"

#define BUF (8u << 20)
#define HAMMER_BLOCKS 132
#define HAMMER_THREADS 256
#define HAMMER_OPS 16
#define ORDER_ITERS 1000
#define ORDER_BYTES (64u * 1024)

struct side {
	struct kinet_ctx *ctx;
	struct kd_side s;
	struct kd_buf buf;
};

struct fx {
	int dev[2];
	struct side x[2]; /* 0: initiator, 1: target */
};

static int fx_open(struct fx *f, const char *p2p, uint32_t timeout_ms, enum kinet_qp_sharing sharing)
{
	struct kd_opts o;
	struct kinet_qp_info info[2];
	int rc = 0;

	setenv("KINET_P2P", p2p, 1);
	memset(f, 0, sizeof(*f));
	f->dev[0] = 0;
	f->dev[1] = g_gpu_count() > 1 ? 1 : 0;
	kd_opts_init(&o);
	o.timeout_ms = timeout_ms;
	o.sharing = sharing;
	for (int i = 0; i < 2 && !rc; i++) {
		struct kinet_ctx_attr attr;
		kinet_ctx_attr_init(&attr);
		attr.provider = "soft";
		attr.cuda_device = f->dev[i];
		rc = kinet_ctx_open(&attr, &f->x[i].ctx);
		if (!rc) {
			cudaSetDevice(f->dev[i]);
			rc = kd_buf_alloc_mem(f->x[i].ctx, &f->x[i].buf, BUF, 1);
		}
		if (!rc)
			rc = kd_side_create(&f->x[i].s, f->x[i].ctx, &o);
		if (!rc)
			rc = kinet_qp_pack(f->x[i].s.qp, &info[i]);
	}
	for (int i = 0; i < 2 && !rc; i++)
		rc = kinet_qp_connect(f->x[i].s.qp, &info[1 - i]);
	for (int i = 0; i < 2 && !rc; i++)
		rc = kinet_qp_export(f->x[i].s.qp, &f->x[i].s.d);
	cudaSetDevice(f->dev[0]);
	return rc;
}

static void fx_close(struct fx *f)
{
	for (int i = 0; i < 2; i++) {
		struct side *x = &f->x[i];
		cudaSetDevice(f->dev[i]);
		if (x->s.qp)
			kinet_qp_destroy(x->s.qp);
		if (x->s.scq)
			kinet_cq_destroy(x->s.scq);
		if (x->s.rcq)
			kinet_cq_destroy(x->s.rcq);
		kd_buf_free(&x->buf);
		if (x->ctx)
			kinet_ctx_close(x->ctx);
	}
	cudaSetDevice(0);
	unsetenv("KINET_P2P");
}

static void fx_pause(struct fx *f, int pause)
{
	for (int i = 0; i < 2; i++)
		KT_OK(pause ? kinet_ctx_pause(f->x[i].ctx) : kinet_ctx_resume(f->x[i].ctx));
}

/* ---- every verb in one form (group g), statuses into st[] ---- */

struct vargs {
	struct kinet_dev_qp *d;
	uint8_t *a; /* initiator's buffer (device 0) */
	uint32_t akey;
	uint64_t b; /* target's buffer (device 1) */
	uint32_t bkey;
	int *st;
	uint32_t seed;
	uint32_t big; /* bytes of the large put/get (within the form's peer limits) */
};

#define ST(i, call)                                                                                          \
	do {                                                                                                 \
		int s_ = (call);                                                                             \
		if (kinet_devi_group_rank(g) == 0 && s_)                                                     \
			a.st[i] = s_;                                                                        \
	} while (0)

__global__ void verbs_kernel(struct vargs a, int g)
{
	uint64_t tk = 0;
	uint32_t r = kinet_devi_group_rank(g), n = kinet_devi_group_size(g);
	/* a large put of a pattern, then get it back into a + 2 MiB */
	/* the pattern also covers the odd put (4097 at +3) and put_signal (8 KiB) */
	for (uint32_t i = r; i < (a.big > 8192 ? a.big : 8192); i += n)
		a.a[i] = kd_pat(i, a.seed);
	kinet_devi_group_sync(g);
	ST(0, kinet_devi_put_g(g, a.d, a.a, a.akey, a.b, a.bkey, a.big, &tk));
	ST(1, kinet_devi_wait_g(g, a.d, tk));
	ST(2, kinet_devi_get_g(g, a.d, a.a + (2u << 20), a.akey, a.b, a.bkey, a.big, &tk));
	ST(3, kinet_devi_wait_g(g, a.d, tk));
	/* odd sizes and offsets: byte and 8-byte paths of the copy */
	ST(4, kinet_devi_put_g(g, a.d, a.a + 3, a.akey, a.b + (1u << 20) + 5, a.bkey, 4097, &tk));
	ST(5, kinet_devi_quiet_g(g, a.d));
	/* atomics on b + 3 MiB: fetch_add 5 to 100, then CAS 105 -> 9 */
	uint64_t *res = (uint64_t *)(void *)(a.a + (3u << 20));
	ST(6, kinet_devi_fetch_add_g(g, a.d, res, a.akey, a.b + (3u << 20), a.bkey, 5, &tk));
	ST(15, kinet_devi_wait_g(g, a.d, tk));
	if (r == 0 && *res != 100)
		a.st[7] = 1000 + (int)*res;
	ST(8, kinet_devi_compare_swap_g(g, a.d, res + 1, a.akey, a.b + (3u << 20), a.bkey, 105, 9, &tk));
	ST(15, kinet_devi_wait_g(g, a.d, tk));
	if (r == 0 && res[1] != 105)
		a.st[9] = 1000 + (int)res[1];
	/* put_inline, signal, put_signal, fence */
	uint64_t v = 0xabcdef0123456789ull;
	ST(10, kinet_devi_put_inline_g(g, a.d, &v, 8, a.b + (3u << 20) + 64, a.bkey, &tk));
	ST(11, kinet_devi_signal_g(g, a.d, a.b + (3u << 20) + 128, a.bkey, 3, &tk));
	ST(12, kinet_devi_put_signal_g(g, a.d, a.a, a.akey, a.b + (3u << 20) + 4096, a.bkey, 8192,
				       a.b + (3u << 20) + 128, a.bkey, 4, &tk));
	ST(13, kinet_devi_fence_g(g, a.d, &tk));
	ST(14, kinet_devi_quiet_g(g, a.d));
}

static void run_verbs(struct fx *f, int form, uint32_t seed)
{
	struct vargs a;
	int *st;
	uint64_t init = 100;
	G_CUDA(cudaMallocManaged((void **)&st, 16 * sizeof(int)));
	memset(st, 0, 16 * sizeof(int));
	cudaSetDevice(f->dev[1]);
	G_CUDA(cudaMemset(f->x[1].buf.p, 0, BUF));
	KT_OK(kd_copy_in(&f->x[1].buf, 3u << 20, &init, 8));
	cudaSetDevice(f->dev[0]);
	a.d = f->x[0].s.d;
	a.a = f->x[0].buf.p;
	a.akey = f->x[0].buf.key;
	a.b = kd_addr(&f->x[1].buf, 0);
	a.bkey = f->x[1].buf.key;
	a.st = st;
	a.seed = seed;
	/* thread: 2 KiB (a thread's get limit), warp: 64 KiB, block: 1 MiB */
	a.big = form == 0 ? 2048u : form == 1 ? 65536u : 1u << 20;
	if (form == 0)
		verbs_kernel<<<1, 1>>>(a, KINET_DEVI_GROUP_THREAD);
	else if (form == 1)
		verbs_kernel<<<1, 32>>>(a, KINET_DEVI_GROUP_WARP);
	else
		verbs_kernel<<<1, 256>>>(a, KINET_DEVI_GROUP_BLOCK);
	G_CUDA(cudaDeviceSynchronize());
	for (int i = 0; i < 16; i++)
		if (st[i]) {
			fprintf(stderr, "form %d: step %d: status %d\n", form, i, st[i]);
			KT_CHECK_EQ(st[i], 0);
		}
	uint8_t *h = (uint8_t *)malloc(BUF);
	KT_OK(kd_copy_out(h, &f->x[1].buf, 0, BUF));
	int bad = 0;
	for (uint32_t i = 0; i < a.big; i++)
		bad += h[i] != kd_pat(i, seed);
	for (uint32_t i = 0; i < 4097; i++)
		bad += h[(1u << 20) + 5 + i] != kd_pat(i + 3, seed);
	bad += h[(1u << 20) + 4] != 0 || h[(1u << 20) + 5 + 4097] != 0;
	for (uint32_t i = 0; i < 8192; i++)
		bad += h[(3u << 20) + 4096 + i] != kd_pat(i, seed);
	KT_CHECK_EQ(bad, 0);
	uint64_t w[3];
	memcpy(&w[0], h + (3u << 20), 8);
	memcpy(&w[1], h + (3u << 20) + 64, 8);
	memcpy(&w[2], h + (3u << 20) + 128, 8);
	KT_CHECK_EQ(w[0], 9);
	KT_CHECK_EQ(w[1], 0xabcdef0123456789ull);
	KT_CHECK_EQ(w[2], 7);
	KT_OK(kd_copy_out(h, &f->x[0].buf, 2u << 20, a.big));
	for (uint32_t i = 0; i < a.big; i++)
		bad += h[i] != kd_pat(i, seed);
	KT_CHECK_EQ(bad, 0);
	free(h);
	cudaFree(st);
}

KT_TEST(verbs_all_forms_and_sharing_modes)
{
	G_NEED_GPU();
	enum kinet_qp_sharing shares[3] = {KINET_SHARE_EXCLUSIVE, KINET_SHARE_CTA, KINET_SHARE_GPU};
	for (int s = 0; s < 3; s++) {
		struct fx f;
		KT_OK(fx_open(&f, "auto", 5000, shares[s]));
		if (s == 0)
			printf("initiator on device %d, target on device %d%s\n", f.dev[0], f.dev[1],
			       f.dev[0] == f.dev[1] ? " (one GPU: peer access to itself)" : "");
		KT_CHECK_EQ(kinet_qp_get_path(f.x[0].s.qp), KINET_QP_PATH_PEER);
		fx_pause(&f, 1); /* only the peer path can complete these */
		for (int form = 0; form < 3; form++)
			run_verbs(&f, form, (uint32_t)(10 * s + form));
		fx_pause(&f, 0);
		fx_close(&f);
	}
}

/* ---- 132 x 256 threads, fetch_add on one peer word ---- */

__global__ void hammer_kernel(struct kinet_dev_qp *d, uint64_t *res, uint32_t akey, uint64_t word,
			      uint32_t bkey, int *failed)
{
	uint64_t t = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
	for (int i = 0; i < HAMMER_OPS; i++)
		if (kinet_dev_fetch_add(d, &res[t * HAMMER_OPS + i], akey, word, bkey, 1, NULL))
			atomicAdd(failed, 1);
}

KT_TEST(atomics_hammer_exact)
{
	G_NEED_GPU();
	struct fx f;
	int *failed;
	const uint64_t total = (uint64_t)HAMMER_BLOCKS * HAMMER_THREADS * HAMMER_OPS;
	KT_OK(fx_open(&f, "auto", 5000, KINET_SHARE_GPU));
	G_CUDA(cudaMallocManaged((void **)&failed, sizeof(int)));
	*failed = 0;
	fx_pause(&f, 1);
	hammer_kernel<<<HAMMER_BLOCKS, HAMMER_THREADS>>>(f.x[0].s.d, (uint64_t *)(void *)f.x[0].buf.p,
							 f.x[0].buf.key, kd_addr(&f.x[1].buf, 0),
							 f.x[1].buf.key, failed);
	G_CUDA(cudaDeviceSynchronize());
	fx_pause(&f, 0);
	KT_CHECK_EQ(*failed, 0);
	uint64_t sum = 0;
	KT_OK(kd_copy_out(&sum, &f.x[1].buf, 0, 8));
	KT_CHECK_EQ(sum, total);
	uint64_t *res = (uint64_t *)malloc(total * 8);
	uint8_t *seen = (uint8_t *)calloc(total, 1);
	KT_OK(kd_copy_out(res, &f.x[0].buf, 0, total * 8));
	int dup = 0;
	for (uint64_t i = 0; i < total; i++)
		if (res[i] >= total || seen[res[i]]++)
			dup++;
	KT_CHECK_EQ(dup, 0);
	free(res);
	free(seen);
	cudaFree(failed);
	fx_close(&f);
}

/* ---- put_signal ordering under load: the receiver checks every byte each
 * time the signal moves, then acknowledges through its own QP ---- */

__global__ void order_sender(struct kinet_dev_qp *d, uint8_t *a, uint32_t akey, uint64_t b, uint32_t bkey,
			     uint64_t sig, const uint64_t *ack, int *err)
{
	for (uint32_t it = 1; it <= ORDER_ITERS; it++) {
		for (uint32_t i = threadIdx.x; i < ORDER_BYTES / 8; i += blockDim.x)
			((uint64_t *)(void *)a)[i] = it;
		__syncthreads();
		int st = kinet_dev_put_signal_block(d, a, akey, b, bkey, ORDER_BYTES, sig, bkey, 1, NULL);
		int where = 100000;
		uint64_t seen = 0;
		if (!st) {
			where = 300000;
			st = kinet_dev_signal_wait_until_block(d, ack, KINET_DEV_CMP_GE, it, &seen);
		}
		if (st) {
			if (threadIdx.x == 0) {
				printf("order_sender: iteration %u: %s failed (%d), ack at %llu\n", it,
				       where == 100000 ? "put_signal" : "ack wait", st,
				       (unsigned long long)seen);
				*err = where + st;
			}
			return;
		}
	}
}

__global__ void order_receiver(struct kinet_dev_qp *d, const uint8_t *b, const uint64_t *sig, uint64_t ack,
			       uint32_t akey, int *err)
{
	__shared__ int bad;
	for (uint32_t it = 1; it <= ORDER_ITERS; it++) {
		if (threadIdx.x == 0)
			bad = 0;
		int st = kinet_dev_signal_wait_until_block(d, sig, KINET_DEV_CMP_GE, it, NULL);
		for (uint32_t i = threadIdx.x; !st && i < ORDER_BYTES / 8; i += blockDim.x)
			if (((const volatile uint64_t *)(const void *)b)[i] != it)
				atomicAdd(&bad, 1);
		__syncthreads();
		if (!st && bad && threadIdx.x == 0)
			atomicAdd(err, bad);
		if (!st)
			st = kinet_dev_signal_block(d, ack, akey, 1, NULL);
		if (st) {
			if (threadIdx.x == 0) {
				printf("order_receiver: iteration %u failed (%d)\n", it, st);
				*err = 200000 + st;
			}
			return;
		}
	}
}

KT_TEST(put_signal_ordering_under_load)
{
	G_NEED_GPU();
	struct fx f;
	int *err;
	cudaStream_t s[2];
	KT_OK(fx_open(&f, "auto", 10000, KINET_SHARE_CTA));
	KT_CHECK_EQ(kinet_qp_get_path(f.x[1].s.qp), KINET_QP_PATH_PEER);
	G_CUDA(cudaMallocManaged((void **)&err, 2 * sizeof(int)));
	err[0] = err[1] = 0;
	uint8_t *a = f.x[0].buf.p, *b = f.x[1].buf.p;
	/* data at b + 0, signal at b + 1 MiB, ack at a + 1 MiB */
	for (int i = 0; i < 2; i++) {
		cudaSetDevice(f.dev[i]);
		G_CUDA(cudaStreamCreateWithFlags(&s[i], cudaStreamNonBlocking));
	}
	/* Both kernels loaded before either runs: with lazy module loading
	 * (CUDA's default) loading the second while the first spins waiting
	 * for it waits for the first to end. */
	for (int i = 0; i < 2; i++) {
		struct cudaFuncAttributes fa;
		cudaSetDevice(f.dev[i]);
		G_CUDA(cudaFuncGetAttributes(&fa, order_sender));
		G_CUDA(cudaFuncGetAttributes(&fa, order_receiver));
	}
	cudaSetDevice(f.dev[1]);
	order_receiver<<<1, 512, 0, s[1]>>>(f.x[1].s.d, b, (const uint64_t *)(const void *)(b + (1u << 20)),
					    kd_addr(&f.x[0].buf, 1u << 20), f.x[0].buf.key, err + 1);
	cudaSetDevice(f.dev[0]);
	order_sender<<<1, 512, 0, s[0]>>>(f.x[0].s.d, a + (2u << 20), f.x[0].buf.key, kd_addr(&f.x[1].buf, 0),
					  f.x[1].buf.key, kd_addr(&f.x[1].buf, 1u << 20),
					  (const uint64_t *)(const void *)(a + (1u << 20)), err);
	for (int i = 0; i < 2; i++) {
		cudaSetDevice(f.dev[i]);
		G_CUDA(cudaStreamSynchronize(s[i]));
		cudaStreamDestroy(s[i]);
	}
	cudaSetDevice(f.dev[0]);
	KT_CHECK_EQ(err[0], 0);
	KT_CHECK_EQ(err[1], 0);
	cudaFree(err);
	fx_close(&f);
}

/* ---- protection: bad key, range, right fail as on the engine path ---- */

__global__ void bad_put(struct kinet_dev_qp *d, uint8_t *a, uint32_t akey, uint64_t raddr, uint32_t rkey,
			int *st)
{
	uint64_t tk = 0;
	int s = kinet_dev_put(d, a, akey, raddr, rkey, 64, &tk);
	if (!s)
		s = kinet_dev_wait(d, tk);
	*st = s;
}

KT_TEST(protection_errors)
{
	G_NEED_GPU();
	for (int c = 0; c < 3; c++) {
		struct fx f;
		struct kinet_error err;
		struct kinet_mr *ro = NULL;
		int *st;
		KT_OK(fx_open(&f, "auto", 2000, KINET_SHARE_GPU));
		cudaSetDevice(f.dev[1]);
		G_CUDA(cudaMemset(f.x[1].buf.p, 0x5a, BUF));
		KT_OK(kinet_mr_reg(f.x[1].ctx, f.x[1].buf.p + (2u << 20), 4096, KINET_ACCESS_REMOTE_READ,
				   &ro));
		cudaSetDevice(f.dev[0]);
		G_CUDA(cudaMallocManaged((void **)&st, sizeof(int)));
		*st = -1;
		kinet_ctx_clear_error(f.x[0].ctx);
		uint64_t raddr =
			c == 1 ? kd_addr(&f.x[1].buf, BUF - 32) : kd_addr(&f.x[1].buf, c == 2 ? 2u << 20 : 0);
		uint32_t rkey = c == 0 ? f.x[1].buf.key ^ 0x100 : c == 2 ? kinet_mr_rkey(ro) : f.x[1].buf.key;
		bad_put<<<1, 1>>>(f.x[0].s.d, f.x[0].buf.p, f.x[0].buf.key, raddr, rkey, st);
		G_CUDA(cudaDeviceSynchronize());
		KT_CHECK_EQ(*st, -EIO);
		KT_OK(kinet_ctx_last_error(f.x[0].ctx, &err));
		KT_CHECK_EQ(err.status, -EIO);
		KT_CHECK(err.syndrome == KINET_SYND_REMOTE_ACCESS_ERR ||
			 err.syndrome == KINET_SYND_REMOTE_INVAL_REQ_ERR);
		uint8_t *h = (uint8_t *)malloc(BUF);
		KT_OK(kd_copy_out(h, &f.x[1].buf, 0, BUF));
		int changed = 0;
		for (uint32_t i = 0; i < BUF; i++)
			changed += h[i] != 0x5a;
		KT_CHECK_EQ(changed, 0);
		free(h);
		cudaFree(st);
		KT_OK(kinet_mr_dereg(ro));
		fx_close(&f);
	}
}

/* ---- KINET_P2P=off: the engine path, same results ---- */

KT_TEST(p2p_off_uses_engine)
{
	G_NEED_GPU();
	struct fx f;
	KT_OK(fx_open(&f, "off", 5000, KINET_SHARE_GPU));
	KT_CHECK_EQ(kinet_qp_get_path(f.x[0].s.qp), KINET_QP_PATH_ENGINE);
	for (int form = 0; form < 3; form++)
		run_verbs(&f, form, 77 + (uint32_t)form);
	fx_close(&f);
}

/* A peer QP whose thread-form transfer is above the peer limit: the copy
 * engine moves it (engines running), same bytes. */
__global__ void big_put(struct kinet_dev_qp *d, uint8_t *a, uint32_t akey, uint64_t b, uint32_t bkey, int *st)
{
	uint64_t tk = 0;
	int s = kinet_dev_put(d, a, akey, b, bkey, 1u << 20, &tk);
	if (!s)
		s = kinet_dev_wait(d, tk);
	*st = s;
}

KT_TEST(large_thread_put_uses_copy_engine)
{
	G_NEED_GPU();
	struct fx f;
	int *st;
	KT_OK(fx_open(&f, "auto", 5000, KINET_SHARE_GPU));
	KT_CHECK_EQ(kinet_qp_get_path(f.x[0].s.qp), KINET_QP_PATH_PEER);
	uint8_t *h = (uint8_t *)malloc(1u << 20);
	for (uint32_t i = 0; i < (1u << 20); i++)
		h[i] = kd_pat(i, 5);
	KT_OK(kd_copy_in(&f.x[0].buf, 0, h, 1u << 20));
	G_CUDA(cudaMallocManaged((void **)&st, sizeof(int)));
	*st = -1;
	big_put<<<1, 1>>>(f.x[0].s.d, f.x[0].buf.p, f.x[0].buf.key, kd_addr(&f.x[1].buf, 0), f.x[1].buf.key,
			  st);
	G_CUDA(cudaDeviceSynchronize());
	KT_CHECK_EQ(*st, 0);
	memset(h, 0, 1u << 20);
	KT_OK(kd_copy_out(h, &f.x[1].buf, 0, 1u << 20));
	int bad = 0;
	for (uint32_t i = 0; i < (1u << 20); i++)
		bad += h[i] != kd_pat(i, 5);
	KT_CHECK_EQ(bad, 0);
	free(h);
	cudaFree(st);
	fx_close(&f);
}

KT_MAIN(verbs_all_forms_and_sharing_modes, atomics_hammer_exact, put_signal_ordering_under_load,
	protection_errors, p2p_off_uses_engine, large_thread_put_uses_copy_engine)
