/*
 * The peer path between two processes: this process (the initiator, CUDA
 * device 0) forks a target (device 1 where there are two GPUs, else device
 * 0 again); they connect two QPs over the node transport with
 * KINET_P2P=force, so the target's windows arrive in messages and its GPU
 * memory is reached through CUDA IPC mappings.
 *  - verbs: with the initiator's engine paused (only the GPU's own stores
 *    and atomics can complete anything), a kernel puts (block, warp and
 *    thread forms, inline), gets, adds, swaps and put_signals into the
 *    target's memory; the target checks every byte in its own process;
 *  - deregistration: the target deregisters a region; when
 *    kinet_mr_dereg has returned, a put through its old key fails (EIO)
 *    and the region is untouched;
 *  - death: the target kills itself; a kernel putting in a loop on the
 *    other QP gets an error within bounded time, not a hang.
 * Exits 77 (skip) without a CUDA device.
 */
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kt_dev.h"

#define BUF (4u << 20)
#define SMALL 4096u
#define NT 256
#define PUT_BYTES (1u << 20)
#define THREAD_BYTES 256u
#define GET_BYTES 100003u
#define PS_BYTES 65536u
/* Offsets in the target's buffer. */
#define T_PUT 0
#define T_WARP (T_PUT + PUT_BYTES)
#define T_THREAD (T_WARP + 8 * 4096)
#define T_INLINE (T_THREAD + NT * THREAD_BYTES)
#define T_FA (T_INLINE + 64)
#define T_CAS (T_FA + 8)
#define T_SIG (T_CAS + 8)
#define T_PS (T_SIG + 8 + 4096)
#define T_GET (T_PS + PS_BYTES)
/* In the initiator's buffer. */
#define I_RES (BUF - 2 * NT * 8)
#define I_GET (BUF / 2)

enum { CMD_CHECK = 'c', CMD_DEREG = 'd', CMD_DIE = 'k', CMD_QUIT = 'q' };

struct hello {
	struct kinet_qp_info qp[2];
	struct kinet_mr_info mr, small;
	int skip;
};

static int xfer(int fd, void *p, size_t n, int out)
{
	for (size_t done = 0; done < n;) {
		ssize_t r =
			out ? write(fd, (char *)p + done, n - done) : read(fd, (char *)p + done, n - done);
		if (r <= 0)
			return -1;
		done += (size_t)r;
	}
	return 0;
}

struct proc {
	struct kinet_ctx *ctx;
	struct kd_side s[2];
	struct kd_buf buf, small;
};

static int proc_open(struct proc *p, int dev, int with_small, struct hello *h)
{
	struct kinet_ctx_attr ca;
	struct kd_opts o;
	int rc;

	memset(p, 0, sizeof(*p));
	if (cudaSetDevice(dev) != cudaSuccess)
		return -ENODEV;
	kinet_ctx_attr_init(&ca);
	ca.provider = "soft";
	ca.cuda_device = dev;
	if ((rc = kinet_ctx_open(&ca, &p->ctx)) || (rc = kd_buf_alloc_mem(p->ctx, &p->buf, BUF, 1)))
		return rc;
	if (with_small && (rc = kd_buf_alloc_mem(p->ctx, &p->small, SMALL, 1)))
		return rc;
	kd_opts_init(&o);
	o.timeout_ms = 1000;
	for (int i = 0; i < 2; i++)
		if ((rc = kd_side_create(&p->s[i], p->ctx, &o)) ||
		    (rc = kinet_qp_pack(p->s[i].qp, &h->qp[i])))
			return rc;
	if ((rc = kinet_mr_pack(p->buf.mr, &h->mr)))
		return rc;
	return with_small ? kinet_mr_pack(p->small.mr, &h->small) : 0;
}

static uint8_t pat(uint64_t i, int tag)
{
	return (uint8_t)(i * 37u + (uint64_t)tag * 11u + (i >> 8) + 1u);
}

static int fill(uint8_t *dev, size_t n, int tag)
{
	uint8_t *h = (uint8_t *)malloc(n);
	if (!h)
		return -1;
	for (size_t i = 0; i < n; i++)
		h[i] = pat(i, tag);
	int rc = cudaMemcpy(dev, h, n, cudaMemcpyHostToDevice) == cudaSuccess ? 0 : -1;
	free(h);
	return rc;
}

static int same(const uint8_t *h, size_t n, int tag)
{
	for (size_t i = 0; i < n; i++)
		if (h[i] != pat(i, tag)) {
			fprintf(stderr, "byte %zu of tag %d: %u, expected %u\n", i, tag, h[i], pat(i, tag));
			return 0;
		}
	return 1;
}

/* The target's own check of what the initiator's kernel did. */
static int target_check(struct proc *p)
{
	uint8_t *h = (uint8_t *)malloc(BUF);
	int ok = h && cudaMemcpy(h, p->buf.p, BUF, cudaMemcpyDeviceToHost) == cudaSuccess;
	ok = ok && same(h + T_PUT, PUT_BYTES, 1) && same(h + T_WARP, 8 * 4096, 2) &&
	     same(h + T_THREAD, NT * THREAD_BYTES, 3) && same(h + T_PS, PS_BYTES, 4);
	uint64_t w[4];
	if (ok) {
		memcpy(w, h + T_INLINE, 8);
		memcpy(w + 1, h + T_FA, 8);
		memcpy(w + 2, h + T_CAS, 8);
		memcpy(w + 3, h + T_SIG, 8);
		ok = w[0] == 0x1122334455667788ull && w[1] == NT && w[2] > 1000 && w[2] <= 1000 + NT &&
		     w[3] == 1;
		if (!ok)
			fprintf(stderr, "target words: inline %llx fa %llu cas %llu sig %llu\n",
				(unsigned long long)w[0], (unsigned long long)w[1], (unsigned long long)w[2],
				(unsigned long long)w[3]);
	}
	free(h);
	return ok;
}

/* The target: serves until told to quit or to die. */
static void target(int rd, int wr)
{
	struct proc p;
	struct hello mine, peer;
	int n = 0;
	char c;

	memset(&mine, 0, sizeof(mine));
	if (cudaGetDeviceCount(&n) != cudaSuccess || n < 1) {
		mine.skip = 1;
		xfer(wr, &mine, sizeof(mine), 1);
		_exit(0);
	}
	if (proc_open(&p, n > 1 ? 1 : 0, 1, &mine) || fill(p.buf.p + T_GET, GET_BYTES, 5) ||
	    xfer(wr, &mine, sizeof(mine), 1) || xfer(rd, &peer, sizeof(peer), 0))
		_exit(1);
	for (int i = 0; i < 2; i++)
		if (kinet_qp_connect(p.s[i].qp, &peer.qp[i]))
			_exit(1);
	while (!xfer(rd, &c, 1, 0)) {
		char r = 1;
		if (c == CMD_CHECK) {
			r = (char)target_check(&p);
		} else if (c == CMD_DEREG) {
			uint8_t h[SMALL];
			r = cudaMemcpy(h, p.small.p, SMALL, cudaMemcpyDeviceToHost) == cudaSuccess;
			for (unsigned i = 0; i < SMALL; i++)
				r &= h[i] == 0;
			r &= kinet_mr_dereg(p.small.mr) == 0;
			p.small.mr = NULL;
		} else if (c == CMD_DIE) {
			raise(SIGKILL);
		} else if (c == CMD_QUIT) {
			kinet_ctx_close(p.ctx);
			_exit(0);
		} else if (c == 'z') { /* the deregistered region is still zero */
			uint8_t h[SMALL];
			r = cudaMemcpy(h, p.small.p, SMALL, cudaMemcpyDeviceToHost) == cudaSuccess;
			for (unsigned i = 0; i < SMALL; i++)
				r &= h[i] == 0;
		}
		if (xfer(wr, &r, 1, 1))
			break;
	}
	_exit(1);
}

struct kargs {
	struct kinet_dev_qp *qp;
	uint8_t *src;
	uint32_t lkey;
	uint64_t dst;
	uint32_t rkey;
	uint64_t *res;
	int *err;
	uint64_t loop_ns;
};

#define K(code, call)                                                                                        \
	do {                                                                                                 \
		int st_ = (call);                                                                            \
		if (st_) {                                                                                   \
			atomicCAS(a.err, 0, (code)*1000 + st_);                                              \
			return;                                                                              \
		}                                                                                            \
	} while (0)

__global__ void verbs_kernel(struct kargs a)
{
	unsigned tid = threadIdx.x, warp = tid / 32;
	uint64_t tk = 0;
	K(1, kinet_dev_put_block(a.qp, a.src, a.lkey, a.dst + T_PUT, a.rkey, PUT_BYTES, &tk));
	K(2, kinet_dev_wait_block(a.qp, tk));
	K(3, kinet_dev_put_warp(a.qp, a.src + PUT_BYTES + warp * 4096, a.lkey, a.dst + T_WARP + warp * 4096,
				a.rkey, 4096, &tk));
	K(4, kinet_dev_wait_warp(a.qp, tk));
	K(5, kinet_dev_put(a.qp, a.src + 2 * PUT_BYTES + tid * THREAD_BYTES, a.lkey,
			   a.dst + T_THREAD + tid * THREAD_BYTES, a.rkey, THREAD_BYTES, &tk));
	K(6, kinet_dev_wait(a.qp, tk));
	if (tid == 0) {
		uint64_t v = 0x1122334455667788ull;
		K(7, kinet_dev_put_inline(a.qp, &v, 8, a.dst + T_INLINE, a.rkey, &tk));
		K(8, kinet_dev_wait(a.qp, tk));
	}
	K(9, kinet_dev_fetch_add(a.qp, &a.res[tid], a.lkey, a.dst + T_FA, a.rkey, 1, &tk));
	K(10, kinet_dev_wait(a.qp, tk));
	K(11, kinet_dev_compare_swap(a.qp, &a.res[NT + tid], a.lkey, a.dst + T_CAS, a.rkey, 0, 1000 + tid + 1,
				     &tk));
	K(12, kinet_dev_wait(a.qp, tk));
	__syncthreads();
	K(13, kinet_dev_put_signal_block(a.qp, a.src + 3 * PUT_BYTES, a.lkey, a.dst + T_PS, a.rkey, PS_BYTES,
					 a.dst + T_SIG, a.rkey, 1, &tk));
	K(14, kinet_dev_wait_block(a.qp, tk));
	K(15, kinet_dev_get_block(a.qp, a.src + I_GET, a.lkey, a.dst + T_GET, a.rkey, GET_BYTES, &tk));
	K(16, kinet_dev_wait_block(a.qp, tk));
}

/* One 8-byte put and its wait; the status in *err (0: done). */
__global__ void put_kernel(struct kargs a)
{
	uint64_t tk = 0, v = 42;
	int st = kinet_dev_put_inline(a.qp, &v, 8, a.dst, a.rkey, &tk);
	if (!st)
		st = kinet_dev_wait(a.qp, tk);
	*a.err = st;
}

/* Puts until one fails or loop_ns passes; *err: the failure, or -1. */
__global__ void loop_kernel(struct kargs a)
{
	uint64_t t0 = kinet_dev_now_ns(), i = 0;
	for (;;) {
		uint64_t tk = 0;
		int st = kinet_dev_put_inline(a.qp, &i, 8, a.dst, a.rkey, &tk);
		if (!st)
			st = kinet_dev_wait(a.qp, tk);
		if (st) {
			*a.err = st;
			a.res[0] = i;
			return;
		}
		if (kinet_dev_now_ns() - t0 > a.loop_ns) {
			*a.err = -1;
			return;
		}
		i++;
	}
}

static uint64_t g_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static char ask(int rd, int wr, char c)
{
	char r = 0;
	if (xfer(wr, &c, 1, 1) || xfer(rd, &r, 1, 0))
		return -1;
	return r;
}

KT_TEST(peer_process)
{
	int to_t[2], from_t[2], status = 0, herr = 0;
	struct hello mine, peer;
	struct proc p;

	setenv("KINET_P2P", "force", 1);
	setenv("KINET_TRANSPORT", "node", 1);
	KT_OK(pipe(to_t));
	KT_OK(pipe(from_t));
	pid_t pid = fork(); /* before CUDA is touched here */
	KT_CHECK(pid >= 0);
	if (pid == 0) {
		close(to_t[1]);
		close(from_t[0]);
		target(to_t[0], from_t[1]);
	}
	close(to_t[0]);
	close(from_t[1]);
	int rd = from_t[0], wr = to_t[1];
	KT_OK(xfer(rd, &peer, sizeof(peer), 0));
	if (peer.skip) {
		waitpid(pid, &status, 0);
		KT_SKIP("no CUDA device");
	}
	memset(&mine, 0, sizeof(mine));
	KT_OK(proc_open(&p, 0, 0, &mine));
	KT_OK(xfer(wr, &mine, sizeof(mine), 1));
	for (int i = 0; i < 2; i++) {
		KT_OK(kinet_qp_connect(p.s[i].qp, &peer.qp[i]));
		KT_OK(kinet_qp_export(p.s[i].qp, &p.s[i].d));
		KT_CHECK_EQ(kinet_qp_get_path(p.s[i].qp), KINET_QP_PATH_PEER);
	}
	int ndev = 0;
	cudaGetDeviceCount(&ndev);
	printf("initiator on GPU 0, target process on GPU %d\n", ndev > 1 ? 1 : 0);

	struct kargs a;
	memset(&a, 0, sizeof(a));
	a.qp = p.s[0].d;
	a.src = p.buf.p;
	a.lkey = p.buf.key;
	a.dst = peer.mr.addr;
	a.rkey = peer.mr.rkey;
	a.res = (uint64_t *)(void *)(p.buf.p + I_RES);
	G_CUDA(cudaMalloc((void **)&a.err, sizeof(int)));
	G_CUDA(cudaMemset(a.err, 0, sizeof(int)));
	KT_OK(fill(p.buf.p, PUT_BYTES, 1));
	KT_OK(fill(p.buf.p + PUT_BYTES, 8 * 4096, 2));
	KT_OK(fill(p.buf.p + 2 * PUT_BYTES, NT * THREAD_BYTES, 3));
	KT_OK(fill(p.buf.p + 3 * PUT_BYTES, PS_BYTES, 4));

	/* Verbs with this process's engine paused. */
	KT_OK(kinet_ctx_pause(p.ctx));
	verbs_kernel<<<1, NT>>>(a);
	G_CUDA(cudaDeviceSynchronize());
	KT_OK(kinet_ctx_resume(p.ctx));
	G_CUDA(cudaMemcpy(&herr, a.err, sizeof(int), cudaMemcpyDeviceToHost));
	KT_CHECK_EQ(herr, 0);
	KT_CHECK_EQ(ask(rd, wr, CMD_CHECK), 1);
	uint8_t *h = (uint8_t *)malloc(GET_BYTES);
	uint64_t res[2 * NT];
	G_CUDA(cudaMemcpy(h, p.buf.p + I_GET, GET_BYTES, cudaMemcpyDeviceToHost));
	KT_CHECK(same(h, GET_BYTES, 5));
	free(h);
	G_CUDA(cudaMemcpy(res, a.res, sizeof(res), cudaMemcpyDeviceToHost));
	uint8_t seen[NT] = {0};
	int winners = 0;
	for (int i = 0; i < NT; i++) {
		KT_CHECK(res[i] < NT && !seen[res[i]]++);
		winners += res[NT + i] == 0;
	}
	KT_CHECK_EQ(winners, 1);

	/* Deregistration: acknowledged before it returns, so the old key then
	 * fails (through the engine) and the region stays zero. */
	a.dst = peer.small.addr;
	a.rkey = peer.small.rkey;
	KT_CHECK_EQ(ask(rd, wr, CMD_DEREG), 1);
	put_kernel<<<1, 1>>>(a);
	G_CUDA(cudaDeviceSynchronize());
	G_CUDA(cudaMemcpy(&herr, a.err, sizeof(int), cudaMemcpyDeviceToHost));
	KT_CHECK_EQ(herr, -EIO);
	KT_CHECK_EQ(ask(rd, wr, 'z'), 1);

	/* Death: a kernel putting in a loop on the other QP fails, bounded. */
	a.qp = p.s[1].d;
	a.dst = peer.mr.addr;
	a.rkey = peer.mr.rkey;
	a.loop_ns = 20ull * 1000000000ull;
	G_CUDA(cudaMemset(a.err, 0, sizeof(int)));
	loop_kernel<<<1, 1>>>(a);
	usleep(200000);
	char c = CMD_DIE;
	KT_OK(xfer(wr, &c, 1, 1));
	KT_CHECK_EQ(waitpid(pid, &status, 0), pid);
	KT_CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	uint64_t t0 = g_now_ms();
	G_CUDA(cudaDeviceSynchronize());
	uint64_t dt = g_now_ms() - t0;
	G_CUDA(cudaMemcpy(&herr, a.err, sizeof(int), cudaMemcpyDeviceToHost));
	G_CUDA(cudaMemcpy(res, a.res, 8, cudaMemcpyDeviceToHost));
	printf("after the target died: status %d after %llu ms (%llu puts before)\n", herr,
	       (unsigned long long)dt, (unsigned long long)res[0]);
	KT_CHECK(herr == -EIO || herr == -ETIMEDOUT);
	KT_CHECK(res[0] > 0);
	KT_CHECK(dt < 10000);
	KT_CHECK_EQ(kinet_qp_get_path(p.s[1].qp), KINET_QP_PATH_ENGINE);
	cudaFree(a.err);
	for (int i = 0; i < 2; i++)
		kinet_qp_destroy(p.s[i].qp);
	kd_buf_free(&p.buf);
	KT_OK(kinet_ctx_close(p.ctx));
	close(rd);
	close(wr);
}

KT_MAIN(peer_process)
