/*
 * GPU memory through the software NIC's copy engine: RDMA write and read
 * GPU->GPU, host->GPU, GPU->host (also many at once: each completion means
 * its data landed), fetch-add and compare-swap on GPU memory
 * (also from several threads and QPs at once: the sum must be exact), and
 * protection checks that leave GPU memory outside the region untouched;
 * and that a cudaMemcpy into registered GPU memory has landed when it
 * returns (the region's allocation synchronizes its memory operations).
 * Skips (exit 77) without a CUDA device.
 */
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <vector>

#include "kinet/kinet.h"
#include "kinet/wire.h"
#include "kt.h"

#define ACC_ALL                                                                                              \
	(KINET_ACCESS_LOCAL_WRITE | KINET_ACCESS_REMOTE_WRITE | KINET_ACCESS_REMOTE_READ |                   \
	 KINET_ACCESS_REMOTE_ATOMIC)
#define GUARD 4096
#define DEADLINE_MS 10000

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static int gpu_count(void)
{
	int n = 0;
	if (cudaGetDeviceCount(&n) != cudaSuccess) {
		cudaGetLastError();
		return 0;
	}
	return n;
}

#define NEED_GPU()                                                                                           \
	do {                                                                                                 \
		if (gpu_count() <= 0)                                                                        \
			KT_SKIP("no CUDA device");                                                           \
	} while (0)

#define CUDA_OK(call) KT_CHECK_EQ((int)(call), (int)cudaSuccess)

/* A buffer: host (malloc) or GPU (cudaMalloc), with unregistered guards of
 * GUARD bytes on each side. */
struct buf {
	bool gpu;
	uint8_t *raw;
	uint8_t *p;
	size_t len;
	struct kinet_mr *mr;
};

static int buf_alloc(struct kinet_ctx *ctx, struct buf *b, bool gpu, size_t len, uint8_t fill)
{
	size_t total = len + 2 * GUARD;
	memset(b, 0, sizeof(*b));
	b->gpu = gpu;
	b->len = len;
	if (gpu) {
		if (cudaMalloc((void **)&b->raw, total) != cudaSuccess)
			return -ENOMEM;
		cudaMemset(b->raw, 0xa5, total);
		cudaMemset(b->raw + GUARD, fill, len);
		cudaDeviceSynchronize();
	} else {
		b->raw = (uint8_t *)aligned_alloc(64, total);
		if (!b->raw)
			return -ENOMEM;
		memset(b->raw, 0xa5, total);
		memset(b->raw + GUARD, fill, len);
	}
	b->p = b->raw + GUARD;
	return kinet_mr_reg(ctx, b->p, len, ACC_ALL, &b->mr);
}

static void buf_free(struct buf *b)
{
	if (b->mr)
		kinet_mr_dereg(b->mr);
	if (b->gpu)
		cudaFree(b->raw);
	else
		free(b->raw);
	memset(b, 0, sizeof(*b));
}

/* Copies [off, off+len) of the buffer (guards included when off is
 * negative) into host memory. */
static std::vector<uint8_t> buf_read(const struct buf *b, long off, size_t len)
{
	std::vector<uint8_t> v(len);
	if (b->gpu)
		cudaMemcpy(v.data(), b->p + off, len, cudaMemcpyDeviceToHost);
	else
		memcpy(v.data(), b->p + off, len);
	return v;
}

static void buf_write(struct buf *b, size_t off, const void *src, size_t len)
{
	if (b->gpu)
		cudaMemcpy(b->p + off, src, len, cudaMemcpyHostToDevice);
	else
		memcpy(b->p + off, src, len);
}

static bool all_is(const std::vector<uint8_t> &v, uint8_t x)
{
	for (uint8_t c : v)
		if (c != x)
			return false;
	return true;
}

static bool guards_ok(const struct buf *b)
{
	return all_is(buf_read(b, -GUARD, GUARD), 0xa5) && all_is(buf_read(b, (long)b->len, GUARD), 0xa5);
}

static uint64_t addr(const struct buf *b, size_t off)
{
	return (uint64_t)(uintptr_t)(b->p + off);
}

static struct kinet_sge sge(const struct buf *b, size_t off, uint32_t len)
{
	struct kinet_sge s;
	s.addr = addr(b, off);
	s.length = len;
	s.lkey = kinet_mr_lkey(b->mr);
	return s;
}

static struct kinet_send_wr wr(uint64_t id, enum kinet_wr_opcode op, const struct kinet_sge *s,
			       const struct buf *rb, size_t roff)
{
	struct kinet_send_wr w;
	memset(&w, 0, sizeof(w));
	w.wr_id = id;
	w.opcode = op;
	w.send_flags = KINET_SEND_SIGNALED;
	w.sg_list = s;
	w.num_sge = 1;
	w.remote_addr = addr(rb, roff);
	w.rkey = kinet_mr_rkey(rb->mr);
	return w;
}

static int poll1(struct kinet_cq *cq, struct kinet_wc *wc)
{
	uint64_t deadline = now_ms() + DEADLINE_MS;
	for (;;) {
		int n = kinet_cq_poll(cq, 1, wc);
		if (n < 0)
			return n;
		if (n == 1)
			return 0;
		if (now_ms() > deadline)
			return -ETIMEDOUT;
		sched_yield();
	}
}

struct pair {
	struct kinet_cq *cq[2];
	struct kinet_qp *qp[2];
};

static int pair_create(struct kinet_ctx *ctx, struct pair *p)
{
	struct kinet_qp_info info[2];
	int rc;
	memset(p, 0, sizeof(*p));
	for (int i = 0; i < 2; i++) {
		struct kinet_cq_attr ca = {.size = sizeof(struct kinet_cq_attr), .depth = 0, .flags = 0};
		struct kinet_qp_attr qa;
		ca.depth = 256;
		if ((rc = kinet_cq_create(ctx, &ca, &p->cq[i])))
			return rc;
		kinet_qp_attr_init(&qa);
		qa.send_cq = p->cq[i];
		qa.recv_cq = p->cq[i];
		qa.sq_depth = 128;
		qa.rq_depth = 16;
		qa.max_recv_sge = 1;
		if ((rc = kinet_qp_create(ctx, &qa, &p->qp[i])))
			return rc;
		if ((rc = kinet_qp_pack(p->qp[i], &info[i])))
			return rc;
	}
	for (int i = 0; i < 2; i++)
		if ((rc = kinet_qp_connect(p->qp[i], &info[1 - i])))
			return rc;
	return 0;
}

static void pair_destroy(struct pair *p)
{
	for (int i = 0; i < 2; i++)
		if (p->qp[i])
			kinet_qp_destroy(p->qp[i]);
	for (int i = 0; i < 2; i++)
		if (p->cq[i])
			kinet_cq_destroy(p->cq[i]);
}

static int open_ctx(struct kinet_ctx **ctx, int threads)
{
	struct kinet_ctx_attr a;
	kinet_ctx_attr_init(&a);
	a.provider = kt_provider();
	a.cuda_device = 0;
	a.engine_threads = threads;
	return kinet_ctx_open(&a, ctx);
}

static void pattern(std::vector<uint8_t> &v, unsigned seed)
{
	for (size_t i = 0; i < v.size(); i++)
		v[i] = (uint8_t)(i * 31 + seed * 17 + (i >> 9));
}

/* Write then read back for each (local, remote) placement. */
static void write_read(bool lgpu, bool rgpu, size_t len)
{
	struct kinet_ctx *ctx;
	struct pair p;
	struct buf l, r, back;
	struct kinet_wc wc;

	KT_OK(open_ctx(&ctx, 1));
	KT_OK(pair_create(ctx, &p));
	KT_OK(buf_alloc(ctx, &l, lgpu, len + 64, 0x11));
	KT_OK(buf_alloc(ctx, &r, rgpu, len + 64, 0x22));
	KT_OK(buf_alloc(ctx, &back, lgpu, len + 64, 0x33));
	KT_CHECK_EQ(kinet_mr_mem_type(l.mr), lgpu ? KINET_MEM_CUDA : KINET_MEM_HOST);
	KT_CHECK_EQ(kinet_mr_mem_type(r.mr), rgpu ? KINET_MEM_CUDA : KINET_MEM_HOST);
	std::vector<uint8_t> src(len);
	pattern(src, (unsigned)len);
	buf_write(&l, 0, src.data(), len);

	struct kinet_sge s = sge(&l, 0, (uint32_t)len);
	struct kinet_send_wr w = wr(1, KINET_WR_RDMA_WRITE, &s, &r, 32);
	KT_OK(kinet_qp_post_send(p.qp[0], &w, 1, NULL));
	KT_OK(poll1(p.cq[0], &wc));
	KT_CHECK_EQ(wc.wr_id, 1);
	KT_CHECK_EQ(wc.status, 0);
	KT_CHECK(buf_read(&r, 32, len) == src);
	KT_CHECK(all_is(buf_read(&r, 0, 32), 0x22));
	KT_CHECK(all_is(buf_read(&r, (long)(32 + len), 32), 0x22));

	struct kinet_sge s2 = sge(&back, 16, (uint32_t)len);
	w = wr(2, KINET_WR_RDMA_READ, &s2, &r, 32);
	KT_OK(kinet_qp_post_send(p.qp[0], &w, 1, NULL));
	KT_OK(poll1(p.cq[0], &wc));
	KT_CHECK_EQ(wc.wr_id, 2);
	KT_CHECK_EQ(wc.status, 0);
	KT_CHECK(buf_read(&back, 16, len) == src);
	KT_CHECK(all_is(buf_read(&back, 0, 16), 0x33));
	KT_CHECK(all_is(buf_read(&back, (long)(16 + len), 48), 0x33));
	KT_CHECK(guards_ok(&l) && guards_ok(&r) && guards_ok(&back));
	buf_free(&l);
	buf_free(&r);
	buf_free(&back);
	pair_destroy(&p);
	kinet_ctx_close(ctx);
}

KT_TEST(gpu_to_gpu)
{
	NEED_GPU();
	write_read(true, true, 1);
	write_read(true, true, 4096);
	write_read(true, true, 8u << 20);
}

KT_TEST(host_to_gpu)
{
	NEED_GPU();
	write_read(false, true, 100);
	write_read(false, true, 1u << 20);
}

KT_TEST(gpu_to_host)
{
	NEED_GPU();
	write_read(true, false, 100);
	write_read(true, false, 1u << 20);
}

/* Atomics on a GPU target, results into host and into GPU memory. */
KT_TEST(gpu_atomics)
{
	NEED_GPU();
	struct kinet_ctx *ctx;
	struct pair p;
	struct buf tgt, hres, gres;
	struct kinet_wc wc;
	uint64_t v;

	KT_OK(open_ctx(&ctx, 1));
	KT_OK(pair_create(ctx, &p));
	KT_OK(buf_alloc(ctx, &tgt, true, 64, 0));
	KT_OK(buf_alloc(ctx, &hres, false, 64, 0x11));
	KT_OK(buf_alloc(ctx, &gres, true, 64, 0x11));
	v = 1000;
	buf_write(&tgt, 8, &v, 8);

	for (int g = 0; g < 2; g++) {
		struct buf *res = g ? &gres : &hres;
		struct kinet_sge s = sge(res, 0, 8);
		struct kinet_send_wr w = wr(10 + g, KINET_WR_ATOMIC_FETCH_AND_ADD, &s, &tgt, 8);
		w.compare_add = 5;
		KT_OK(kinet_qp_post_send(p.qp[0], &w, 1, NULL));
		KT_OK(poll1(p.cq[0], &wc));
		KT_CHECK_EQ(wc.status, 0);
		KT_CHECK_EQ(wc.opcode, KINET_WC_FETCH_ADD);
		memcpy(&v, buf_read(res, 0, 8).data(), 8);
		KT_CHECK_EQ(v, 1000 + 5 * g);
	}
	memcpy(&v, buf_read(&tgt, 8, 8).data(), 8);
	KT_CHECK_EQ(v, 1010);

	/* compare-swap: equal swaps, unequal does not */
	struct kinet_sge s = sge(&gres, 8, 8);
	struct kinet_send_wr w = wr(20, KINET_WR_ATOMIC_CMP_AND_SWP, &s, &tgt, 8);
	w.compare_add = 1010;
	w.swap = 0xdeadbeefcafeull;
	KT_OK(kinet_qp_post_send(p.qp[0], &w, 1, NULL));
	KT_OK(poll1(p.cq[0], &wc));
	KT_CHECK_EQ(wc.status, 0);
	KT_CHECK_EQ(wc.opcode, KINET_WC_COMP_SWAP);
	memcpy(&v, buf_read(&gres, 8, 8).data(), 8);
	KT_CHECK_EQ(v, 1010);
	memcpy(&v, buf_read(&tgt, 8, 8).data(), 8);
	KT_CHECK(v == 0xdeadbeefcafeull);
	w.wr_id = 21;
	w.compare_add = 1;
	w.swap = 2;
	KT_OK(kinet_qp_post_send(p.qp[0], &w, 1, NULL));
	KT_OK(poll1(p.cq[0], &wc));
	KT_CHECK_EQ(wc.status, 0);
	memcpy(&v, buf_read(&tgt, 8, 8).data(), 8);
	KT_CHECK(v == 0xdeadbeefcafeull);
	memcpy(&v, buf_read(&gres, 8, 8).data(), 8);
	KT_CHECK(v == 0xdeadbeefcafeull);
	KT_CHECK(all_is(buf_read(&tgt, 0, 8), 0));
	KT_CHECK(all_is(buf_read(&tgt, 16, 48), 0));
	KT_CHECK(guards_ok(&tgt) && guards_ok(&gres) && guards_ok(&hres));
	buf_free(&tgt);
	buf_free(&hres);
	buf_free(&gres);
	pair_destroy(&p);
	kinet_ctx_close(ctx);
}

/* Several threads, each with its own QP pair, fetch-adding one GPU counter. */
#define NT 4
#define NFA 500

struct fa_worker {
	struct kinet_ctx *ctx;
	struct pair p;
	struct buf *tgt;
	struct buf res; /* NFA old values, in GPU memory for odd workers */
	pthread_t tid;
	int fail;
};

static void *fa_thread(void *arg)
{
	struct fa_worker *w = (struct fa_worker *)arg;
	struct kinet_wc wc;
	for (int i = 0; i < NFA; i++) {
		struct kinet_sge s = sge(&w->res, (size_t)i * 8, 8);
		struct kinet_send_wr x = wr((uint64_t)i, KINET_WR_ATOMIC_FETCH_AND_ADD, &s, w->tgt, 0);
		x.compare_add = 1;
		x.send_flags = (i % 16 == 15 || i == NFA - 1) ? KINET_SEND_SIGNALED : 0;
		if (kinet_qp_post_send(w->p.qp[0], &x, 1, NULL)) {
			w->fail = 1;
			return NULL;
		}
		if (x.send_flags && (poll1(w->p.cq[0], &wc) || wc.status || wc.wr_id != (uint64_t)i)) {
			w->fail = 1;
			return NULL;
		}
	}
	return NULL;
}

static void concurrent_atomics(int engine_threads)
{
	struct kinet_ctx *ctx;
	struct buf tgt;
	struct fa_worker w[NT];

	KT_OK(open_ctx(&ctx, engine_threads));
	KT_OK(buf_alloc(ctx, &tgt, true, 64, 0));
	for (int t = 0; t < NT; t++) {
		w[t].ctx = ctx;
		w[t].tgt = &tgt;
		w[t].fail = 0;
		KT_OK(pair_create(ctx, &w[t].p));
		KT_OK(buf_alloc(ctx, &w[t].res, t % 2 == 1, NFA * 8, 0xff));
	}
	for (int t = 0; t < NT; t++)
		KT_OK(pthread_create(&w[t].tid, NULL, fa_thread, &w[t]));
	for (int t = 0; t < NT; t++)
		pthread_join(w[t].tid, NULL);
	for (int t = 0; t < NT; t++)
		KT_CHECK_EQ(w[t].fail, 0);
	uint64_t v;
	memcpy(&v, buf_read(&tgt, 0, 8).data(), 8);
	KT_CHECK_EQ(v, NT * NFA);
	std::vector<uint8_t> seen(NT * NFA, 0);
	for (int t = 0; t < NT; t++) {
		std::vector<uint8_t> r = buf_read(&w[t].res, 0, NFA * 8);
		for (int i = 0; i < NFA; i++) {
			memcpy(&v, r.data() + i * 8, 8);
			KT_CHECK(v < (uint64_t)(NT * NFA));
			KT_CHECK(!seen[v]);
			seen[v] = 1;
		}
	}
	for (int t = 0; t < NT; t++) {
		buf_free(&w[t].res);
		pair_destroy(&w[t].p);
	}
	buf_free(&tgt);
	kinet_ctx_close(ctx);
}

KT_TEST(gpu_atomics_concurrent)
{
	NEED_GPU();
	concurrent_atomics(1);
	concurrent_atomics(4);
}

/* A write running past a GPU region fails and leaves the GPU memory alone. */
KT_TEST(gpu_protection)
{
	NEED_GPU();
	struct kinet_ctx *ctx;
	struct pair p;
	struct buf l, r;
	struct kinet_wc wc;

	KT_OK(open_ctx(&ctx, 1));
	KT_OK(pair_create(ctx, &p));
	KT_OK(buf_alloc(ctx, &l, true, 4096, 0x11));
	KT_OK(buf_alloc(ctx, &r, true, 4096, 0x22));
	struct kinet_sge s = sge(&l, 0, 64);
	struct kinet_send_wr w = wr(1, KINET_WR_RDMA_WRITE, &s, &r, 4096 - 32);
	w.send_flags = 0;
	KT_OK(kinet_qp_post_send(p.qp[0], &w, 1, NULL));
	KT_OK(poll1(p.cq[0], &wc));
	KT_CHECK_EQ(wc.wr_id, 1);
	KT_CHECK_EQ(wc.status, KINET_SYND_REMOTE_ACCESS_ERR);
	KT_CHECK_EQ(kinet_qp_get_state(p.qp[0]), KINET_QPS_ERR);
	KT_CHECK(all_is(buf_read(&r, 0, 4096), 0x22));
	KT_CHECK(guards_ok(&r));
	/* A read into GPU memory past the local region. */
	pair_destroy(&p);
	KT_OK(pair_create(ctx, &p));
	s = sge(&l, 4096 - 8, 64);
	w = wr(2, KINET_WR_RDMA_READ, &s, &r, 0);
	KT_OK(kinet_qp_post_send(p.qp[0], &w, 1, NULL));
	KT_OK(poll1(p.cq[0], &wc));
	KT_CHECK_EQ(wc.wr_id, 2);
	KT_CHECK_EQ(wc.status, KINET_SYND_LOCAL_PROT_ERR);
	KT_CHECK(all_is(buf_read(&l, 0, 4096), 0x11));
	KT_CHECK(guards_ok(&l));
	/* Inline data the CPU cannot read: refused at posting, nothing sent. */
	pair_destroy(&p);
	KT_OK(pair_create(ctx, &p));
	s = sge(&l, 0, 16);
	w = wr(3, KINET_WR_RDMA_WRITE, &s, &r, 0);
	w.send_flags |= KINET_SEND_INLINE;
	KT_CHECK_EQ(kinet_qp_post_send(p.qp[0], &w, 1, NULL), -EINVAL);
	KT_CHECK_EQ(kinet_qp_get_state(p.qp[0]), KINET_QPS_RTS);
	KT_CHECK(all_is(buf_read(&r, 0, 4096), 0x22));
	buf_free(&l);
	buf_free(&r);
	pair_destroy(&p);
	kinet_ctx_close(ctx);
}

/* Writes to GPU memory posted together share one event per engine pass
 * (pending.c): every completion, signaled or covering unsignaled ones,
 * must still mean that its own copy and every earlier one has landed.  80
 * writes make two passes (64 WQEs per QP per pass), each ending with a
 * large write (256 MiB, ~0.1 ms on the copy engine): the second pass is
 * sealed while the first one's large copy runs, so one reap finds both
 * events, and a completion of the second pass reported with the first
 * one's event would be seen while its large copy still runs.  The tail of
 * the newest slot a poll covers is read first, through the default stream,
 * which does not wait for the engine's; then every slot in full. */
KT_TEST(gpu_batch_completions)
{
	NEED_GPU();
	enum { N = 80 };
	const size_t small = 1u << 20, large = 256u << 20, tail = 4096;
	size_t len[N], off[N], total = 0;
	struct kinet_ctx *ctx;
	struct pair p;
	struct buf l, r;

	for (int i = 0; i < N; i++) {
		len[i] = i == 63 || i == N - 1 ? large : small;
		off[i] = total;
		total += len[i];
	}
	KT_OK(open_ctx(&ctx, 1));
	KT_OK(pair_create(ctx, &p));
	KT_OK(buf_alloc(ctx, &l, true, total, 0x11));
	KT_OK(buf_alloc(ctx, &r, true, total, 0x22));
	std::vector<std::vector<uint8_t>> src(N);
	for (int round = 0; round < 5; round++) {
		struct kinet_sge s[N];
		struct kinet_send_wr w[N];
		for (int i = 0; i < N; i++) {
			src[i].resize(len[i]);
			pattern(src[i], (unsigned)(round * N + i));
			buf_write(&l, off[i], src[i].data(), len[i]);
			s[i] = sge(&l, off[i], (uint32_t)len[i]);
			w[i] = wr((uint64_t)i, KINET_WR_RDMA_WRITE, &s[i], &r, off[i]);
			if (i % 3 != 2 && i != 63 && i != N - 1)
				w[i].send_flags = 0; /* covered by the next signaled one */
		}
		KT_OK(kinet_qp_post_send(p.qp[0], w, N, NULL));
		int checked = 0;
		uint64_t deadline = now_ms() + DEADLINE_MS;
		while (checked < N) {
			struct kinet_wc wc[N];
			int n = kinet_cq_poll(p.cq[0], N, wc);
			if (n == 0 && now_ms() < deadline)
				continue;
			KT_CHECK(n > 0); /* not an error, nor nothing for DEADLINE_MS */
			if (n <= 0)
				break;
			int last = (int)wc[n - 1].wr_id;
			KT_CHECK(last >= checked && last < N);
			if (last < checked || last >= N)
				break;
			std::vector<uint8_t> want(src[last].end() - tail, src[last].end());
			KT_CHECK(buf_read(&r, (long)(off[last] + len[last] - tail), tail) == want);
			for (int k = 0; k < n; k++)
				KT_CHECK_EQ(wc[k].status, 0);
			for (; checked <= last; checked++)
				KT_CHECK(buf_read(&r, (long)off[checked], len[checked]) == src[checked]);
		}
	}
	KT_CHECK(guards_ok(&l) && guards_ok(&r));
	buf_free(&l);
	buf_free(&r);
	pair_destroy(&p);
	kinet_ctx_close(ctx);
}

/* CUresult cuPointerGetAttribute(void *data, CUpointer_attribute attribute,
 * CUdeviceptr ptr), from the driver the runtime loaded; NULL if absent. */
typedef int (*get_attr_fn)(void *data, int attribute, unsigned long long ptr);
#define CU_SYNC_MEMOPS 6

static get_attr_fn driver_get_attr(void)
{
	void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
	void *f = lib ? dlsym(lib, "cuPointerGetAttribute") : NULL;
	get_attr_fn fn;
	memcpy(&fn, &f, sizeof(f));
	return fn;
}

/* 1 when the allocation holding p synchronizes its memory operations. */
static int sync_memops(get_attr_fn get, const void *p)
{
	unsigned v = 2;
	if (get(&v, CU_SYNC_MEMOPS, (unsigned long long)(uintptr_t)p))
		return -1;
	return (int)v;
}

/* Copies on a stream of their own keep the copy engines busy, so that the
 * DMA a cudaMemcpy from pageable memory leaves behind lands late. */
struct hog {
	uint8_t *a, *b;
	size_t len;
	volatile int stop;
	pthread_t tid;
};

static void *hog_thread(void *arg)
{
	struct hog *h = (struct hog *)arg;
	cudaStream_t s;
	if (cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) != cudaSuccess)
		return NULL;
	while (!h->stop) {
		cudaMemcpyAsync(h->b, h->a, h->len, cudaMemcpyDeviceToDevice, s);
		cudaStreamSynchronize(s);
	}
	cudaStreamDestroy(s);
	return NULL;
}

/* Rounds of: a cudaMemcpy of a value from pageable memory into GPU
 * memory, a fetch-add on it that must return that value; a cudaMemcpy of a
 * pattern, an RDMA write of it into host memory.  0, or the failing round
 * (said on stderr). */
static int memcpy_then_post(struct pair *p, struct buf *tgt, struct buf *src, struct buf *hres,
			    struct buf *hdst)
{
	struct kinet_wc wc;
	for (uint64_t i = 1; i <= 200; i++) {
		uint64_t v = i * 1000, old;
		buf_write(tgt, 8, &v, 8);
		struct kinet_sge s = sge(hres, 0, 8);
		struct kinet_send_wr w = wr(i, KINET_WR_ATOMIC_FETCH_AND_ADD, &s, tgt, 8);
		w.compare_add = 1;
		if (kinet_qp_post_send(p->qp[0], &w, 1, NULL) || poll1(p->cq[0], &wc) || wc.status) {
			fprintf(stderr, "round %d: fetch-add failed\n", (int)i);
			return (int)i;
		}
		memcpy(&old, hres->p, 8);
		if (old != v) {
			fprintf(stderr,
				"round %d: fetch-add read %llu, cudaMemcpy wrote %llu before posting\n",
				(int)i, (unsigned long long)old, (unsigned long long)v);
			return (int)i;
		}

		std::vector<uint8_t> data(src->len);
		pattern(data, (unsigned)i);
		buf_write(src, 0, data.data(), data.size());
		struct kinet_sge s2 = sge(src, 0, (uint32_t)src->len);
		w = wr(1000 + i, KINET_WR_RDMA_WRITE, &s2, hdst, 0);
		if (kinet_qp_post_send(p->qp[0], &w, 1, NULL) || poll1(p->cq[0], &wc) || wc.status) {
			fprintf(stderr, "round %d: write failed\n", (int)i);
			return (int)i;
		}
		if (memcmp(hdst->p, data.data(), data.size())) {
			fprintf(stderr, "round %d: the write carried other data than cudaMemcpy wrote\n",
				(int)i);
			return (int)i;
		}
	}
	return 0;
}

/* The application writes GPU memory with cudaMemcpy from pageable host
 * memory, which may return before its DMA has landed, then posts
 * operations that read that memory on the engine's stream (a NIC would
 * read it by DMA): the registration makes such copies synchronous
 * (CU_POINTER_ATTRIBUTE_SYNC_MEMOPS), so the operations see the data. */
KT_TEST(gpu_memcpy_then_post)
{
	NEED_GPU();
	struct kinet_ctx *ctx;
	struct pair p;
	struct buf tgt, src, hres, hdst;
	struct hog h;
	get_attr_fn get = driver_get_attr();

	KT_OK(open_ctx(&ctx, 1));
	KT_OK(pair_create(ctx, &p));
	if (get) {
		void *plain;
		CUDA_OK(cudaMalloc(&plain, 4096));
		printf("an unregistered allocation: sync_memops %d\n", sync_memops(get, plain));
		cudaFree(plain);
	}
	KT_OK(buf_alloc(ctx, &tgt, true, 64, 0));
	KT_OK(buf_alloc(ctx, &src, true, 4096, 0));
	KT_OK(buf_alloc(ctx, &hres, false, 64, 0x11));
	KT_OK(buf_alloc(ctx, &hdst, false, 4096, 0x22));
	if (get) {
		KT_CHECK_EQ(sync_memops(get, tgt.p), 1);
		KT_CHECK_EQ(sync_memops(get, src.raw), 1); /* the whole allocation, guards too */
	}
	h.len = 64u << 20;
	h.stop = 0;
	CUDA_OK(cudaMalloc((void **)&h.a, 2 * h.len));
	h.b = h.a + h.len;
	KT_OK(pthread_create(&h.tid, NULL, hog_thread, &h));
	int failed = memcpy_then_post(&p, &tgt, &src, &hres, &hdst);
	h.stop = 1;
	pthread_join(h.tid, NULL);
	cudaFree(h.a);
	KT_CHECK_EQ(failed, 0);
	buf_free(&tgt);
	buf_free(&src);
	buf_free(&hres);
	buf_free(&hdst);
	pair_destroy(&p);
	kinet_ctx_close(ctx);
}

KT_MAIN(gpu_to_gpu, host_to_gpu, gpu_to_host, gpu_batch_completions, gpu_atomics, gpu_atomics_concurrent,
	gpu_protection, gpu_memcpy_then_post)
