/*
 * MoE expert-parallel dispatch and combine on a kinet team, in the style of
 * DeepEP's kernels: the parts moe_dispatch_combine.cu (and kinet's
 * all-to-all benchmark) share.  docs/architecture/collectives.md explains
 * the design; in short:
 *
 *  - every rank has T tokens of H bf16 values and, per token, k experts of
 *    E (expert e lives on rank e / (E / ranks)) with routing weights;
 *  - dispatch: each token goes once to every rank holding one of its
 *    experts, into that rank's receive buffer [source rank][slot], with a
 *    112-byte record (token, experts, weights, and its index among the
 *    source's tokens of each expert); a mapped rank is written with the
 *    warp's 16-byte stores, any other gets the token staged here and one
 *    put per block; every block signals every rank once (its share of the
 *    round).  The receiver waits for every source, then lays the tokens
 *    out per local expert: rows [expert_base[e], expert_base[e+1]), copied
 *    (MOE_LAYOUT_COPY) or as indices of the received rows (MOE_LAYOUT_INDEX);
 *  - combine: the expert rank sums, per received token, its local experts'
 *    outputs times their weights (fp32, rounded to bf16) and sends the
 *    partial back to the token's rank at the same slot; that rank adds the
 *    partials of every rank its token went to.
 *
 * Everything runs inside the kernels (no host round trip); a grid must be
 * resident at once (every block waits for data other blocks send).  This
 * header compiles as CUDA and, with KINET_HOST_EMU, as C11 for CPU threads
 * (a block is then one thread).
 */
#ifndef KINET_EXAMPLE_MOE_CUH
#define KINET_EXAMPLE_MOE_CUH

#include <stdint.h>
#include <string.h>

#include <kinet/coll.cuh>

#define MOE_KMAX 8
#define MOE_MAX_RANKS 64
#define MOE_MAX_EXPERTS 1024
/* The per-expert layout dispatch leaves: the rows themselves (expert_x), or
 * which received token each row is (expert_at), for expert kernels that
 * gather their input rows (as gather-GEMM MoE kernels do): no copy. */
#define MOE_LAYOUT_COPY 0
#define MOE_LAYOUT_INDEX 1
#define MOE_SLOT_DISPATCH 0
#define MOE_SLOT_COMBINE 1

/* ---- what differs between a CUDA block and an emulated one ---- */
#if defined(KINET_HOST_EMU)
#define MOE_SHARED(decl) decl /* one thread is the block: its own stack */
#define MOE_TID 0u
#define MOE_NTHREADS 1u
#define MOE_WARP_ID 0u
#define MOE_NWARPS 1u
#define MOE_LANE 0u
#define MOE_WARP_SIZE 1u
#define moe_sync() ((void)0)
#define moe_add(p, v) moe_add_one_thread((p), (v))
#define moe_fmul(a, b) ((a) * (b))
#define moe_fadd(a, b) ((a) + (b))
#else
#define MOE_SHARED(decl) __shared__ decl
#define MOE_TID threadIdx.x
#define MOE_NTHREADS blockDim.x
#define MOE_WARP_ID (threadIdx.x / 32u)
#define MOE_NWARPS (blockDim.x / 32u)
#define MOE_LANE (threadIdx.x & 31u)
#define MOE_WARP_SIZE 32u
#define moe_sync() __syncthreads()
#define moe_add(p, v) atomicAdd((p), (v))
/* No contraction into FMAs: the host reference does the same operations. */
#define moe_fmul(a, b) __fmul_rn((a), (b))
#define moe_fadd(a, b) __fadd_rn((a), (b))
#endif

#if defined(KINET_HOST_EMU)
static inline int moe_add_one_thread(int *p, int v)
{
	int old = *p;
	*p += v;
	return old;
}
#endif

/* A block's published counts: flag = epoch after them (release), waited
 * for (acquire) by later blocks of the same grid, which is resident as a
 * whole; bounded all the same (1: timed out). */
#define MOE_FLAG_TIMEOUT_NS 10000000000ull
KINET_DEV_FN void moe_flag_publish(uint64_t *flag, uint64_t epoch)
{
#if defined(KINET_HOST_EMU)
	__atomic_store_n(flag, epoch, __ATOMIC_RELEASE);
#else
	__threadfence(); /* the block's counts (ordered by its barrier) first */
	*(volatile uint64_t *)flag = epoch;
#endif
}
KINET_DEV_FN int moe_flag_wait(const uint64_t *flag, uint64_t epoch)
{
	uint64_t end = kinet_dev_now_ns() + MOE_FLAG_TIMEOUT_NS;
	for (uint32_t i = 0;; i++) {
#if defined(KINET_HOST_EMU)
		if (__atomic_load_n(flag, __ATOMIC_ACQUIRE) == epoch)
			return 0;
#else
		if (*(const volatile uint64_t *)flag == epoch) {
			__threadfence();
			return 0;
		}
#endif
		if ((i & 63) == 63 && kinet_dev_now_ns() > end)
			return 1;
		kinet_dev_relax(i);
	}
}

typedef uint16_t moe_bf16; /* bfloat16 bits */

/* Round to nearest even (finite values; what the reference does too). */
static __host__ __device__ inline moe_bf16 moe_to_bf16(float f)
{
	uint32_t u;
	memcpy(&u, &f, 4);
	return (moe_bf16)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}
static __host__ __device__ inline float moe_from_bf16(moe_bf16 b)
{
	uint32_t u = (uint32_t)b << 16;
	float f;
	memcpy(&f, &u, 4);
	return f;
}

/* 16 bytes of a row (8 values) in registers: one vector load or store. */
union moe_vec {
	uint64_t q[2];
	moe_bf16 h[8];
};
KINET_DEV_FN union moe_vec moe_load16(const void *p)
{
	union moe_vec v;
#if defined(KINET_HOST_EMU)
	memcpy(&v, p, 16);
#else
	ulonglong2 t = *(const ulonglong2 *)p;
	v.q[0] = t.x;
	v.q[1] = t.y;
#endif
	return v;
}
KINET_DEV_FN void moe_store16(void *p, union moe_vec v)
{
#if defined(KINET_HOST_EMU)
	memcpy(p, &v, 16);
#else
	ulonglong2 t;
	t.x = v.q[0];
	t.y = v.q[1];
	*(ulonglong2 *)p = t;
#endif
}

/* One dispatched token's record (7 x 16 bytes). */
struct moe_meta {
	int32_t token; /* index at its source rank */
	int32_t topk;
	int32_t expert[MOE_KMAX]; /* global expert ids */
	float weight[MOE_KMAX];
	uint32_t epos[MOE_KMAX]; /* index among the source's tokens of that expert */
	uint64_t pad;
};

struct moe_cfg {
	int rank, ranks;
	int tokens;  /* T, the same on every rank */
	int hidden;  /* H, a multiple of 8 (rows of 16-byte words) */
	int topk;    /* k <= MOE_KMAX */
	int experts; /* E, a multiple of ranks, <= MOE_MAX_EXPERTS */
	int layout;  /* MOE_LAYOUT_COPY or MOE_LAYOUT_INDEX */
};

/* Heap offsets (the same on every rank) and sizes. */
struct moe_layout {
	uint64_t row;	     /* H * 2 bytes */
	uint64_t hdr;	     /* bytes per header: count, then one count per local expert */
	uint64_t x;	     /* [T] rows: this rank's tokens */
	uint64_t stage_x;    /* [R][T] rows: dispatch staging (ranks reached through QPs) */
	uint64_t stage_meta; /* [R][T] records */
	uint64_t stage_hdr;  /* [R] headers */
	uint64_t recv_x;     /* [R sources][T] rows */
	uint64_t recv_meta;  /* [R][T] records */
	uint64_t recv_hdr;   /* [R] headers */
	uint64_t comb_stage; /* [R][T] rows: combine staging */
	uint64_t comb_recv;  /* [R expert ranks][T slots] rows: partials back */
	uint64_t total;
};

static __host__ __device__ inline int moe_local_experts(const struct moe_cfg *c)
{
	return c->experts / c->ranks;
}

static inline uint64_t moe_align(uint64_t v)
{
	return (v + 255) & ~(uint64_t)255;
}

static inline void moe_layout_init(struct moe_layout *l, const struct moe_cfg *c)
{
	uint64_t R = (uint64_t)c->ranks, T = (uint64_t)c->tokens;
	l->row = (uint64_t)c->hidden * 2;
	l->hdr = (16 + 4 * (uint64_t)moe_local_experts(c) + 15) & ~(uint64_t)15;
	l->x = 0;
	l->stage_x = moe_align(l->x + T * l->row);
	l->stage_meta = moe_align(l->stage_x + R * T * l->row);
	l->stage_hdr = moe_align(l->stage_meta + R * T * sizeof(struct moe_meta));
	l->recv_x = moe_align(l->stage_hdr + R * l->hdr);
	l->recv_meta = moe_align(l->recv_x + R * T * l->row);
	l->recv_hdr = moe_align(l->recv_meta + R * T * sizeof(struct moe_meta));
	l->comb_stage = moe_align(l->recv_hdr + R * l->hdr);
	l->comb_recv = moe_align(l->comb_stage + R * T * l->row);
	l->total = moe_align(l->comb_recv + R * T * l->row);
}

/* Rows of the expert layout a rank may need: every received token times
 * its local experts. */
static inline uint64_t moe_max_rows(const struct moe_cfg *c)
{
	int k = c->topk < moe_local_experts(c) ? c->topk : moe_local_experts(c);
	return (uint64_t)c->ranks * (uint64_t)c->tokens * (uint64_t)k;
}

/* Kernel arguments (device-usable pointers). */
struct moe_args {
	struct kinet_dev_team *team;
	struct moe_cfg cfg;
	struct moe_layout lay;
	uint64_t epoch;		  /* 1, 2, ...: one dispatch and one combine each */
	const int32_t *topk_idx;  /* [T][k] */
	const float *topk_w;	  /* [T][k] */
	int32_t *slot_of;	  /* [T][R]: the token's slot at each rank, -1: not sent */
	uint32_t *hist;		  /* [blocks][R + E]: each dispatch block's counts */
	uint64_t *flags;	  /* [blocks]: the epoch whose counts hist holds */
	uint32_t *epos;		  /* [T][k]: index among this rank's tokens of the expert */
	moe_bf16 *expert_x;	  /* [rows][H]: dispatch output, per local expert */
	uint64_t *expert_src;	  /* [rows]: source rank << 32 | token, of each row */
	uint32_t *expert_at;	  /* [rows]: source rank * T + slot: the row in recv_x */
	uint32_t *expert_base;	  /* [E_local + 1]: first row of each local expert */
	const moe_bf16 *expert_y; /* [rows][H]: the experts' outputs, combine input */
	moe_bf16 *out;		  /* [T][H]: combine output */
	int *status;		  /* [blocks]: first failing status, 0 if none */
};

static __host__ __device__ inline int moe_owner(const struct moe_cfg *c, int expert)
{
	return expert / (c->experts / c->ranks);
}

/* Into how many pieces a block cuts each of its `items` rows so that its
 * warps all have work (small batches: a row's copy by one warp is a few
 * dependent rounds of loads; more warps per row, fewer rounds). */
KINET_DEV_FN uint32_t moe_pieces(uint32_t items, uint32_t vecs)
{
#if defined(KINET_HOST_EMU)
	/* A block is one thread here: pieces cost nothing, and so the CPU
	 * runs check their arithmetic too. */
	uint32_t n = 3;
	(void)items;
#else
	uint32_t n = items ? MOE_NWARPS / items : 1;
#endif
	n = n < 1 ? 1 : n > 8 ? 8 : n;
	return n < vecs ? n : (vecs ? vecs : 1);
}

/* Piece q of n of a row of `vecs` 16-byte words: [*v0, *v1). */
KINET_DEV_FN void moe_piece(uint32_t vecs, uint32_t q, uint32_t n, uint32_t *v0, uint32_t *v1)
{
	uint32_t per = (vecs + n - 1) / n;
	*v0 = q * per < vecs ? q * per : vecs;
	*v1 = *v0 + per < vecs ? *v0 + per : vecs;
}

#define MOE_TRY(a, call)                                                                                     \
	do {                                                                                                 \
		int st_ = (call);                                                                            \
		if (st_ && !(a)->status[kinet_dev_block_id()])                                               \
			(a)->status[kinet_dev_block_id()] = st_;                                             \
	} while (0)

#include "moe_combine.cuh"
#include "moe_dispatch.cuh"

/* ---- the example's "experts": expert e scales its rows by 2^(e % 3 - 1)
 * (exact in bf16, so the reference knows every output bit) ---- */

static __host__ __device__ inline float moe_expert_scale(int expert)
{
	return expert % 3 == 0 ? 0.5f : expert % 3 == 1 ? 1.0f : 2.0f;
}

KINET_DEV_FN void moe_expert_block(const struct moe_args *a, moe_bf16 *y)
{
	const struct moe_cfg *c = &a->cfg;
	const int EL = moe_local_experts(c);
	uint64_t rows = a->expert_base[EL], vecs = (uint64_t)c->hidden / 8;
	uint64_t i = (uint64_t)kinet_dev_block_id() * MOE_NTHREADS + MOE_TID;
	uint64_t n = (uint64_t)kinet_dev_grid_blocks() * MOE_NTHREADS;
	for (; i < rows * vecs; i += n) {
		uint64_t row = i / vecs;
		int lo = 0, hi = EL; /* the expert e with base[e] <= row < base[e + 1] */
		while (hi - lo > 1) {
			int mid = (lo + hi) / 2;
			if (a->expert_base[mid] <= row)
				lo = mid;
			else
				hi = mid;
		}
		int e = lo;
		float f = moe_expert_scale(c->rank * EL + e);
		const moe_bf16 *in =
			c->layout == MOE_LAYOUT_COPY
				? a->expert_x + row * (uint64_t)c->hidden
				: (const moe_bf16 *)kinet_dev_team_ptr(
					  a->team, a->lay.recv_x + (uint64_t)a->expert_at[row] * a->lay.row);
		union moe_vec v = moe_load16(in + (i % vecs) * 8);
		for (int k = 0; k < 8; k++)
			v.h[k] = moe_to_bf16(moe_fmul(moe_from_bf16(v.h[k]), f));
		moe_store16(y + i * 8, v);
	}
}

/* ---- kernels: CUDA entry points, or bodies for kinet_emu_launch ---- */
#if defined(KINET_HOST_EMU)
static void moe_dispatch_emu(void *p)
{
	moe_dispatch_block((const struct moe_args *)p);
}
static void moe_combine_emu(void *p)
{
	moe_combine_block((const struct moe_args *)p);
}
static void moe_expert_emu(void *p)
{
	const struct moe_args *a = (const struct moe_args *)p;
	moe_expert_block(a, (moe_bf16 *)(uintptr_t)a->expert_y);
}
#else
__global__ void moe_dispatch_kernel(struct moe_args a)
{
	moe_dispatch_block(&a);
}
__global__ void moe_combine_kernel(struct moe_args a)
{
	moe_combine_block(&a);
}
__global__ void moe_expert_kernel(struct moe_args a)
{
	moe_expert_block(&a, (moe_bf16 *)(uintptr_t)a.expert_y);
}
#endif

/* ---- inputs: deterministic in (rank, round, token), so any rank can
 * rebuild any rank's tokens for its checks ---- */

static inline uint64_t moe_mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

static inline uint64_t moe_seed(int rank, uint64_t round, int token)
{
	return moe_mix(((uint64_t)rank << 48) ^ (round << 24) ^ (uint64_t)token);
}

/* Values of magnitude [0.5, 1), either sign: no cancellation to zero. */
static inline moe_bf16 moe_gen_x(int rank, uint64_t round, int token, int h)
{
	uint64_t u = moe_mix(moe_seed(rank, round, token) + (uint64_t)h);
	float mag = 0.5f + (float)(u & 0xffff) / 131072.0f;
	return moe_to_bf16(u >> 16 & 1 ? -mag : mag);
}

/* k distinct experts and weights >= 1 / (2k) summing to 1. */
static inline void moe_gen_route(const struct moe_cfg *c, int rank, uint64_t round, int token, int32_t *idx,
				 float *w)
{
	uint64_t st = moe_seed(rank, round, token) ^ 0x5eed;
	float sum = 0;
	for (int j = 0; j < c->topk; j++) {
		int e, dup;
		do {
			e = (int)(moe_mix(st++) % (uint64_t)c->experts);
			dup = 0;
			for (int q = 0; q < j; q++)
				dup |= idx[q] == e;
		} while (dup);
		idx[j] = e;
		w[j] = 1.0f + (float)(moe_mix(st++) & 0xffff) / 65536.0f;
		sum += w[j];
	}
	for (int j = 0; j < c->topk; j++)
		w[j] /= sum;
}

#endif /* KINET_EXAMPLE_MOE_CUH */
