/*
 * The device API on the GPU between the processes of a kinetrun job, every
 * rank on CUDA device 0 (`kinetrun -n 2 -- test_mp_gpu`: two processes
 * sharing one GPU).  Each rank's kernel works on the next rank of the ring
 * (dst) through the exported mesh: put (block and thread forms), get,
 * fetch_add, compare_swap, put_signal (the receiver waits for the signal
 * with signal_wait_until and samples the data from its kernel), send into
 * a receive posted by dst's kernel, and a put through the QP to itself.
 * Data, signals and atomics live in three separate cudaMalloc regions; all
 * is checked byte for byte on the host, and the atomics must sum exactly.
 * Two rounds with different patterns: over the node transport the first
 * GPU operations of an allocation are staged while the CUDA IPC probe is
 * answered, the second round goes by CUDA IPC (KINET_LOG=info says so);
 * the put to itself stays staged (a process cannot open its own handle).
 *
 * ctest: gpu_mp_node (KINET_TRANSPORT=node) and gpu_mp_ofi
 * (KINET_TRANSPORT=ofi; tcp;ofi_rxm on 127.0.0.1 unless the environment
 * says otherwise; skipped when this build or machine has no ofi), both with
 * KINET_P2P=off; gpu_mp_peer (node, KINET_P2P=force): the one-sided verbs
 * take the peer path across the processes, sends stay on the engine.
 * Exits 77 (skip) without a CUDA device or outside kinetrun.
 */
#include <cuda_runtime.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kinet/boot.h"
#include "kinet/device.cuh"
#include "kinet/kinet.h"
#include "kinet/mesh.h"
#include "kt.h"

#define ACC_ALL                                                                                              \
	(KINET_ACCESS_LOCAL_WRITE | KINET_ACCESS_REMOTE_WRITE | KINET_ACCESS_REMOTE_READ |                   \
	 KINET_ACCESS_REMOTE_ATOMIC)

#define NT 128 /* threads of the block: 4 warps */
#define NW (NT / 32)
#define ROUNDS 2

/* Data region: sources (filled by the host) and destinations (zeroed). */
#define PUT_BYTES ((1u << 20) + 4099u) /* block-form put: 17 WQEs */
#define SMALL_BYTES 256u	       /* per thread, thread-form put */
#define GET_BYTES 300001u
#define PS_BYTES 200003u   /* put_signal */
#define SEND_BYTES 150001u /* three fragments when staged */
#define SELF_BYTES 70001u  /* put through the QP to itself */
#define AL(x) (((x) + 4095u) & ~(size_t)4095u)
#define OFF_PUT 0
#define OFF_PUT_IN (OFF_PUT + AL(PUT_BYTES))
#define OFF_SMALL (OFF_PUT_IN + AL(PUT_BYTES))
#define OFF_SMALL_IN (OFF_SMALL + AL(NT * SMALL_BYTES))
#define OFF_GET_SRC (OFF_SMALL_IN + AL(NT * SMALL_BYTES))
#define OFF_GET_DST (OFF_GET_SRC + AL(GET_BYTES))
#define OFF_PS (OFF_GET_DST + AL(GET_BYTES))
#define OFF_PS_IN (OFF_PS + AL(PS_BYTES))
#define OFF_SEND (OFF_PS_IN + AL(PS_BYTES))
#define OFF_RECV (OFF_SEND + AL(SEND_BYTES))
#define OFF_SELF (OFF_RECV + AL(SEND_BYTES))
#define OFF_SELF_IN (OFF_SELF + AL(SELF_BYTES))
#define DATA_BYTES (OFF_SELF_IN + AL(SELF_BYTES))

/* Signal region: word r counts the put_signals of round r. */
#define SIG_BYTES 4096u
/* Atomic region (words): the counter and the compare-swap word of each
 * round (targets), and this rank's fetched values (results). */
#define A_CNT 0
#define A_CAS(r) (8 + (r))
#define A_RES_FA(r) (64 + (r) * (NT + NW))	       /* NT thread-form, then NW warp-form */
#define A_RES_CS(r) (64 + ROUNDS * (NT + NW) + (r)*NT) /* NT thread-form */
#define ATOM_BYTES 8192u

enum { TAG_PUT = 1, TAG_SMALL = 2, TAG_GET = 3, TAG_PS = 4, TAG_SEND = 5, TAG_SELF = 6 };

/* Byte i of what rank `from` writes for rank `to` with tag and round. */
__host__ __device__ static inline uint8_t mpat(int from, int to, int tag, int round, uint64_t i)
{
	return (uint8_t)(i * 131u + (uint64_t)from * 7u + (uint64_t)to * 17u + (uint64_t)tag * 29u +
			 (uint64_t)round * 101u + (i >> 10) + 1u);
}

struct margs {
	struct kinet_dev_qp **dev; /* by rank, GPU memory */
	int me, dst, src, round;
	uint8_t *data;
	uint64_t *sig, *atom;
	uint32_t dkey, skey, akey;
	uint64_t pdata, psig, patom; /* dst's regions */
	uint32_t pdkey, pskey, pakey;
	int *err; /* [0] first failing check, [1] its status */
};

__device__ static void mfail(int *err, int code, int st)
{
	if (atomicCAS(&err[0], 0, code) == 0)
		err[1] = st;
}

#define V(code, call)                                                                                        \
	do {                                                                                                 \
		int st_ = (call);                                                                            \
		if (st_) {                                                                                   \
			mfail(a.err, code, st_);                                                             \
			return;                                                                              \
		}                                                                                            \
	} while (0)

/* One receive for src's send of this round. */
__global__ void post_recv_kernel(struct margs a)
{
	V(1, kinet_dev_post_recv(a.dev[a.src], a.data + OFF_RECV, a.dkey, SEND_BYTES, NULL));
}

__global__ void ops_kernel(struct margs a)
{
	unsigned tid = threadIdx.x, warp = tid / 32;
	struct kinet_dev_qp *t = a.dev[a.dst], *s = a.dev[a.src], *self = a.dev[a.me];
	uint64_t tk = 0;
	int r = a.round;

	/* put, block form (chunks written by all threads) */
	V(10,
	  kinet_dev_put_block(t, a.data + OFF_PUT, a.dkey, a.pdata + OFF_PUT_IN, a.pdkey, PUT_BYTES, &tk));
	V(11, kinet_dev_wait_block(t, tk));
	/* put, thread form: one WQE per thread */
	V(12, kinet_dev_put(t, a.data + OFF_SMALL + tid * SMALL_BYTES, a.dkey,
			    a.pdata + OFF_SMALL_IN + tid * SMALL_BYTES, a.pdkey, SMALL_BYTES, &tk));
	V(13, kinet_dev_wait(t, tk));
	/* get of dst's source */
	V(14, kinet_dev_get_block(t, a.data + OFF_GET_DST, a.dkey, a.pdata + OFF_GET_SRC, a.pdkey, GET_BYTES,
				  &tk));
	V(15, kinet_dev_wait_block(t, tk));

	/* fetch_add: every thread adds 1, then each warp adds 1000 */
	uint64_t *fa = a.atom + A_RES_FA(r);
	V(20, kinet_dev_fetch_add(t, &fa[tid], a.akey, a.patom + A_CNT * 8, a.pakey, 1, &tk));
	V(21, kinet_dev_wait(t, tk));
	__syncthreads();
	V(22, kinet_dev_fetch_add_warp(t, &fa[NT + warp], a.akey, a.patom + A_CNT * 8, a.pakey, 1000, &tk));
	V(23, kinet_dev_quiet_block(t));
	/* compare_swap: every thread tries 0 -> (me << 16) | (tid + 1); one wins */
	uint64_t *cs = a.atom + A_RES_CS(r);
	V(24, kinet_dev_compare_swap(t, &cs[tid], a.akey, a.patom + A_CAS(r) * 8, a.pakey, 0,
				     ((uint64_t)a.me << 16) | (tid + 1), &tk));
	V(25, kinet_dev_wait(t, tk));
	__syncthreads();

	/* put_signal to dst; wait for src's on our own signal word, then the
	 * data must be there: sample it from the kernel */
	V(30, kinet_dev_put_signal_block(t, a.data + OFF_PS, a.dkey, a.pdata + OFF_PS_IN, a.pdkey, PS_BYTES,
					 a.psig + (uint64_t)r * 8, a.pskey, 1, &tk));
	V(31, kinet_dev_wait_block(t, tk));
	V(32, kinet_dev_signal_wait_until_block(s, a.sig + r, KINET_DEV_CMP_GE, 1, NULL));
	for (uint64_t i = tid * 997u; i < PS_BYTES; i += NT * 997u)
		if (a.data[OFF_PS_IN + i] != mpat(a.src, a.me, TAG_PS, r, i))
			mfail(a.err, 33, (int)i);

	/* send to dst (its receive was posted before the round began), then
	 * take src's message from our receive queue */
	V(40, kinet_dev_send_block(t, a.data + OFF_SEND, a.dkey, SEND_BYTES, &tk));
	V(41, kinet_dev_wait_block(t, tk));
	uint32_t len = 0, imm = 0;
	V(42, kinet_dev_recv_block(s, &len, &imm, NULL));
	if (len != SEND_BYTES || imm != 0)
		mfail(a.err, 43, (int)len);

	/* a put to ourselves through the loopback QP */
	V(50, kinet_dev_put_block(self, a.data + OFF_SELF, a.dkey,
				  (uint64_t)(uintptr_t)(a.data + OFF_SELF_IN), a.dkey, SELF_BYTES, &tk));
	V(51, kinet_dev_wait_block(self, tk));

	V(60, kinet_dev_quiet_block(t));
	if (kinet_dev_qp_error(t) || kinet_dev_qp_recv_error(s))
		mfail(a.err, 61, (int)kinet_dev_qp_error(t));
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

#define G_CUDA(call) KT_CHECK_EQ((int)(call), (int)cudaSuccess)

/* Registered GPU memory. */
struct region {
	uint8_t *p;
	size_t len;
	struct kinet_mr *mr;
	struct kinet_mr_info *peer; /* [rank] */
};

static int region_open(struct kinet_ctx *ctx, struct kinet_boot *boot, struct region *g, size_t len)
{
	int rc;
	memset(g, 0, sizeof(*g));
	g->len = len;
	if (cudaMalloc((void **)&g->p, len) != cudaSuccess || cudaMemset(g->p, 0, len) != cudaSuccess)
		return -ENOMEM;
	if ((rc = kinet_mr_reg(ctx, g->p, len, ACC_ALL, &g->mr)))
		return rc;
	if (kinet_mr_mem_type(g->mr) != KINET_MEM_CUDA)
		return -EINVAL;
	g->peer = (struct kinet_mr_info *)calloc((size_t)kinet_boot_size(boot), sizeof(*g->peer));
	if (!g->peer)
		return -ENOMEM;
	return kinet_mesh_exchange_mr(boot, g->mr, g->peer);
}

static void region_close(struct region *g)
{
	if (g->mr)
		kinet_mr_dereg(g->mr);
	if (g->p)
		cudaFree(g->p);
	free(g->peer);
	memset(g, 0, sizeof(*g));
}

/* Host copy of n bytes of pattern (from, to, tag, round) into GPU memory. */
static int fill(uint8_t *dev, size_t n, int from, int to, int tag, int round)
{
	uint8_t *h = (uint8_t *)malloc(n);
	if (!h)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		h[i] = mpat(from, to, tag, round, i);
	int rc = cudaMemcpy(dev, h, n, cudaMemcpyHostToDevice) == cudaSuccess ? 0 : -EIO;
	free(h);
	return rc;
}

static int check(const uint8_t *h, size_t n, int from, int to, int tag, int round, const char *what)
{
	for (size_t i = 0; i < n; i++) {
		if (h[i] != mpat(from, to, tag, round, i)) {
			fprintf(stderr, "round %d: %s from rank %d to %d differs at byte %zu: %u != %u\n",
				round, what, from, to, i, h[i], mpat(from, to, tag, round, i));
			return -1;
		}
	}
	return 0;
}

struct job {
	struct kinet_boot *boot;
	struct kinet_ctx *ctx;
	struct kinet_mesh *mesh;
	struct region data, sig, atom;
	int *err;
	uint8_t *h;
	uint64_t *ha;
};

static void job_close(struct job *j)
{
	if (j->boot)
		kinet_boot_barrier(j->boot);
	kinet_mesh_destroy(j->mesh);
	region_close(&j->data);
	region_close(&j->sig);
	region_close(&j->atom);
	if (j->err)
		cudaFree(j->err);
	if (j->ctx)
		kinet_ctx_close(j->ctx);
	kinet_boot_fini(j->boot);
	free(j->h);
	free(j->ha);
	memset(j, 0, sizeof(*j));
}

/* One round: fill, post the receive, everyone ready, run, everyone done,
 * check what landed here and what came back. */
static void run_round(struct job *j, struct margs a)
{
	int me = a.me, dst = a.dst, src = a.src, r = a.round;
	uint8_t *d = j->data.p;
	int herr[2] = {0, 0};

	KT_OK(fill(d + OFF_PUT, PUT_BYTES, me, dst, TAG_PUT, r));
	KT_OK(fill(d + OFF_SMALL, NT * SMALL_BYTES, me, dst, TAG_SMALL, r));
	KT_OK(fill(d + OFF_GET_SRC, GET_BYTES, me, me, TAG_GET, r));
	KT_OK(fill(d + OFF_PS, PS_BYTES, me, dst, TAG_PS, r));
	KT_OK(fill(d + OFF_SEND, SEND_BYTES, me, dst, TAG_SEND, r));
	KT_OK(fill(d + OFF_SELF, SELF_BYTES, me, me, TAG_SELF, r));
	G_CUDA(cudaMemset(d + OFF_PUT_IN, 0, AL(PUT_BYTES)));
	G_CUDA(cudaMemset(d + OFF_SMALL_IN, 0, AL(NT * SMALL_BYTES)));
	G_CUDA(cudaMemset(d + OFF_GET_DST, 0, AL(GET_BYTES)));
	G_CUDA(cudaMemset(d + OFF_PS_IN, 0, AL(PS_BYTES)));
	G_CUDA(cudaMemset(d + OFF_RECV, 0, AL(SEND_BYTES)));
	G_CUDA(cudaMemset(d + OFF_SELF_IN, 0, AL(SELF_BYTES)));
	G_CUDA(cudaMemset(j->err, 0, 2 * sizeof(int)));
	post_recv_kernel<<<1, 1>>>(a);
	G_CUDA(cudaGetLastError());
	G_CUDA(cudaDeviceSynchronize());
	KT_OK(kinet_boot_barrier(j->boot));

	ops_kernel<<<1, NT>>>(a);
	G_CUDA(cudaGetLastError());
	G_CUDA(cudaDeviceSynchronize());
	G_CUDA(cudaMemcpy(herr, j->err, sizeof(herr), cudaMemcpyDeviceToHost));
	if (herr[0])
		fprintf(stderr, "rank %d round %d: kernel check %d failed (status %d)\n", me, r, herr[0],
			herr[1]);
	KT_CHECK_EQ(herr[0], 0);
	KT_OK(kinet_boot_barrier(j->boot)); /* every rank's operations are complete */

	/* What src wrote here, what we read from dst, our own put. */
	uint8_t *h = j->h;
	G_CUDA(cudaMemcpy(h, d, DATA_BYTES, cudaMemcpyDeviceToHost));
	KT_OK(check(h + OFF_PUT_IN, PUT_BYTES, src, me, TAG_PUT, r, "put (block)"));
	KT_OK(check(h + OFF_SMALL_IN, NT * SMALL_BYTES, src, me, TAG_SMALL, r, "put (thread)"));
	KT_OK(check(h + OFF_GET_DST, GET_BYTES, dst, dst, TAG_GET, r, "get"));
	KT_OK(check(h + OFF_PS_IN, PS_BYTES, src, me, TAG_PS, r, "put_signal"));
	KT_OK(check(h + OFF_RECV, SEND_BYTES, src, me, TAG_SEND, r, "send"));
	KT_OK(check(h + OFF_SELF_IN, SELF_BYTES, me, me, TAG_SELF, r, "put to itself"));
	uint64_t sig[ROUNDS];
	G_CUDA(cudaMemcpy(sig, j->sig.p, sizeof(sig), cudaMemcpyDeviceToHost));
	KT_CHECK_EQ(sig[r], 1);

	/* Atomics.  Here as a target: src's adds, exactly; its compare-swap
	 * winner.  As a requester: the values fetched from dst. */
	uint64_t *ha = j->ha;
	G_CUDA(cudaMemcpy(ha, j->atom.p, ATOM_BYTES, cudaMemcpyDeviceToHost));
	const uint64_t per_round = NT + NW * 1000;
	KT_CHECK_EQ(ha[A_CNT], (uint64_t)(r + 1) * per_round);
	uint64_t won = ha[A_CAS(r)];
	KT_CHECK_EQ(won >> 16, (uint64_t)src);
	KT_CHECK((won & 0xffff) >= 1 && (won & 0xffff) <= NT);
	/* Thread-form fetch_adds ran alone (a wait, then a barrier before the
	 * warp form): their old values are exactly base .. base + NT - 1. */
	const uint64_t base = (uint64_t)r * per_round;
	uint8_t seen[NT];
	memset(seen, 0, sizeof(seen));
	const uint64_t *fa = ha + A_RES_FA(r);
	for (int i = 0; i < NT; i++) {
		KT_CHECK(fa[i] >= base && fa[i] < base + NT);
		KT_CHECK(!seen[fa[i] - base]);
		seen[fa[i] - base] = 1;
	}
	uint8_t wseen[NW];
	memset(wseen, 0, sizeof(wseen));
	for (int w = 0; w < NW; w++) {
		uint64_t v = fa[NT + w] - base - NT;
		KT_CHECK(fa[NT + w] >= base + NT && v % 1000 == 0 && v / 1000 < NW);
		KT_CHECK(!wseen[v / 1000]);
		wseen[v / 1000] = 1;
	}
	const uint64_t *cs = ha + A_RES_CS(r);
	int winners = 0;
	uint64_t winner_val = 0;
	for (int i = 0; i < NT; i++) {
		if (cs[i] == 0) {
			winners++;
			winner_val = ((uint64_t)me << 16) | (uint64_t)(i + 1);
		}
	}
	KT_CHECK_EQ(winners, 1);
	for (int i = 0; i < NT; i++)
		KT_CHECK(cs[i] == 0 || cs[i] == winner_val);
	printf("rank %d round %d: put, get, fetch_add, compare_swap, put_signal, send/recv, loopback: ok\n",
	       me, r);
	fflush(stdout);
}

KT_TEST(mp_gpu)
{
	struct kinet_ctx_attr ca;
	struct kinet_mesh_attr ma;
	struct kinet_dev_qp **dev = NULL;
	struct job j;
	int rc;

	memset(&j, 0, sizeof(j));
	if (!getenv("KINET_RANK") || !getenv("KINET_NRANKS"))
		KT_SKIP("needs a kinetrun job (KINET_RANK, KINET_NRANKS): kinetrun -n 2 -- test_mp_gpu");
	if (gpu_count() <= 0)
		KT_SKIP("no CUDA device");
	int mode = cudaComputeModeDefault;
	if (cudaDeviceGetAttribute(&mode, cudaDevAttrComputeMode, 0) != cudaSuccess)
		cudaGetLastError();
	if (mode != cudaComputeModeDefault)
		KT_SKIP("CUDA device 0 is in compute mode %d: two processes cannot share it", mode);
	const char *tr = getenv("KINET_TRANSPORT");
	int ofi = tr && !strcmp(tr, "ofi");
	if (ofi) {
		/* Both ranks on this host: TCP over loopback. */
		setenv("KINET_OFI_PROVIDER", "tcp;ofi_rxm", 0);
		setenv("KINET_OFI_ADDR", "127.0.0.1", 0);
	}
	G_CUDA(cudaSetDevice(0));
	KT_OK(kinet_boot_init(NULL, &j.boot));
	int me = kinet_boot_rank(j.boot), n = kinet_boot_size(j.boot);
	KT_CHECK(n >= 2);

	kinet_ctx_attr_init(&ca);
	ca.provider = kt_provider();
	ca.cuda_device = 0;
	KT_OK(kinet_ctx_open(&ca, &j.ctx));
	kinet_mesh_attr_init(&ma);
	ma.qps_per_peer = 1;
	ma.with_recv = 1;
	ma.qp.sq_depth = 512;
	ma.qp.rq_depth = 16;
	ma.qp.sharing = KINET_SHARE_GPU;
	ma.qp.timeout_ms = 20000;
	ma.qp.rnr_timeout_ms = 5000;
	rc = kinet_mesh_create(j.ctx, j.boot, &ma, &j.mesh);
	if (rc == -EHOSTUNREACH && ofi) {
		job_close(&j);
		KT_SKIP("KINET_TRANSPORT=ofi: no ofi carrier here (libfabric with tcp;ofi_rxm)");
	}
	KT_OK(rc);
	KT_OK(region_open(j.ctx, j.boot, &j.data, DATA_BYTES));
	KT_OK(region_open(j.ctx, j.boot, &j.sig, SIG_BYTES));
	KT_OK(region_open(j.ctx, j.boot, &j.atom, ATOM_BYTES));
	KT_OK(kinet_mesh_export(j.mesh, 0, &dev));
	const char *p2p = getenv("KINET_P2P");
	if (p2p && !strcmp(p2p, "force")) /* gpu_mp_peer: the other ranks are reached by the peer path */
		for (int r = 0; r < n; r++)
			KT_CHECK_EQ(kinet_qp_get_path(kinet_mesh_qp(j.mesh, r, 0)), KINET_QP_PATH_PEER);
	G_CUDA(cudaMalloc((void **)&j.err, 2 * sizeof(int)));
	j.h = (uint8_t *)malloc(DATA_BYTES);
	j.ha = (uint64_t *)malloc(ATOM_BYTES);
	KT_CHECK(j.h && j.ha);

	struct margs a;
	memset(&a, 0, sizeof(a));
	a.dev = dev;
	a.me = me;
	a.dst = (me + 1) % n;
	a.src = (me + n - 1) % n;
	a.data = j.data.p;
	a.sig = (uint64_t *)(void *)j.sig.p;
	a.atom = (uint64_t *)(void *)j.atom.p;
	a.dkey = kinet_mr_lkey(j.data.mr);
	a.skey = kinet_mr_lkey(j.sig.mr);
	a.akey = kinet_mr_lkey(j.atom.mr);
	a.pdata = j.data.peer[a.dst].addr;
	a.psig = j.sig.peer[a.dst].addr;
	a.patom = j.atom.peer[a.dst].addr;
	a.pdkey = j.data.peer[a.dst].rkey;
	a.pskey = j.sig.peer[a.dst].rkey;
	a.pakey = j.atom.peer[a.dst].rkey;
	a.err = j.err;
	printf("rank %d of %d: transport %s, GPU 0\n", me, n, tr ? tr : "auto");
	for (int r = 0; r < ROUNDS; r++) {
		int before = kt_failed_checks;
		a.round = r;
		run_round(&j, a);
		if (kt_failed_checks != before)
			return; /* kinetrun stops the other ranks */
	}
	job_close(&j);
}

KT_MAIN(mp_gpu)
