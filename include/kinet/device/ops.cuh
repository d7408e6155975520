/*
 * kinet device API: high level.  Safe for the QP's sharing mode: CTA and
 * GPU QPs may be used by many threads at once (every call reserves slots
 * with a CAS on sq_reserved, writes its WQEs, commits in order and rings
 * once); an EXCLUSIVE QP by one thread, or one group (through its leader),
 * at a time, which skips the atomics.  Every WQE posted here carries
 * CQ_UPDATE (completion moderation stride 1), so sq_done always advances
 * and slots are reused.
 *
 * Forms:  kinet_dev_<verb>(...)        one thread
 *         kinet_dev_<verb>_warp(...)   all 32 lanes of a warp, same arguments
 *         kinet_dev_<verb>_block(...)  all threads of the block, same arguments
 * Group forms share the work (transfers are split into chunks written by
 * different lanes), ring once per round, and give every member the same
 * status and ticket.  Under KINET_HOST_EMU a group is one thread.
 *
 * Tickets: index + 1 of the operation's last WQE; kinet_dev_wait(qp, t).
 * A ticket of 0 means there was nothing to post (zero-length put/get).
 * On a QP with the peer path (peer.cuh) most verbs move the data with the
 * GPU's own stores and atomics; their ticket is the send queue's commit
 * index at the time, and waiting on it completes the stores.
 * Statuses: 0, EAGAIN, ETIMEDOUT, EIO, EINVAL (positive).
 */
#ifndef KINET_DEVICE_OPS_CUH
#define KINET_DEVICE_OPS_CUH

#include "kinet/device/peer.cuh"
#include "kinet/device/platform.cuh"
#include "kinet/device/queue.cuh"
#include "kinet/device/types.h"
#include "kinet/device/wqe.cuh"

/* Largest transfer of one WQE; larger transfers are split. */
#ifndef KINET_DEV_MAX_WQE_BYTES
#define KINET_DEV_MAX_WQE_BYTES (1ull << 30)
#endif
/* Group forms split a transfer across lanes, but not below this size. */
#ifndef KINET_DEV_GROUP_CHUNK_MIN
#define KINET_DEV_GROUP_CHUNK_MIN (64ull * 1024)
#endif

/* Comparisons of kinet_dev_signal_wait_until. */
#define KINET_DEV_CMP_EQ 0
#define KINET_DEV_CMP_NE 1
#define KINET_DEV_CMP_GT 2
#define KINET_DEV_CMP_GE 3
#define KINET_DEV_CMP_LT 4
#define KINET_DEV_CMP_LE 5

/* ---- internal: one operation = RDMA chunks + an optional single WQE ---- */

/* Chunked part: RDMA_WRITE, RDMA_READ or RDMA_WRITE_IMM (immediate on the
 * last chunk); opcode NOP (0) for none. */
struct kinet_dev_xfer {
	uint8_t opcode;
	uint32_t lkey;
	uint32_t rkey;
	uint32_t imm_be;
	uint64_t laddr;
	uint64_t raddr;
	uint64_t size;
};

/* Single WQE after the chunks (built by rank 0). */
struct kinet_dev_tail {
	uint8_t opcode; /* KINET_WQE_OP_*; inline write: RDMA_WRITE with inl != NULL */
	uint8_t flags;	/* extra ctrl flags (FENCE) */
	uint32_t lkey;
	uint32_t rkey;
	uint32_t size;
	uint32_t imm_be;
	uint64_t laddr;
	uint64_t raddr;
	uint64_t swap_add;
	uint64_t compare;
	const void *inl;
};

KINET_DEV_FN uint64_t kinet_dev_chunk_size(int group, uint64_t size)
{
	uint64_t max = KINET_DEV_MAX_WQE_BYTES;
	uint32_t gsize = kinet_dev_group_size(group);
	if (gsize <= 1)
		return max;
	uint64_t c = (size + gsize - 1) / gsize;
	if (c < KINET_DEV_GROUP_CHUNK_MIN)
		c = KINET_DEV_GROUP_CHUNK_MIN;
	c = (c + 63) & ~(uint64_t)63;
	return c < max ? c : max;
}

/* Builds chunk k of x (of nchunks, chunk bytes each) as the WQE at idx. */
KINET_DEV_FN void kinet_dev_build_chunk(union kinet_dev_wqe *w, const struct kinet_dev_qp *qp, uint64_t idx,
					const struct kinet_dev_xfer *x, uint64_t chunk, uint64_t nchunks,
					uint64_t k)
{
	uint64_t off = k * chunk;
	uint64_t len = x->size - off < chunk ? x->size - off : chunk;
	uint8_t op = x->opcode;
	if (op == KINET_WQE_OP_RDMA_WRITE_IMM && k != nchunks - 1)
		op = KINET_WQE_OP_RDMA_WRITE;
	kinet_dev_wqe_build_rdma(w, qp->qpn, idx, op, KINET_DEV_WQE_SIGNALED, x->laddr + off, x->lkey,
				 x->raddr + off, x->rkey, (uint32_t)len,
				 op == KINET_WQE_OP_RDMA_WRITE_IMM ? x->imm_be : 0);
}

KINET_DEV_FN void kinet_dev_build_tail(union kinet_dev_wqe *w, const struct kinet_dev_qp *qp, uint64_t idx,
				       const struct kinet_dev_tail *t)
{
	uint8_t flags = (uint8_t)(KINET_DEV_WQE_SIGNALED | t->flags);
	switch (t->opcode) {
	case KINET_WQE_OP_RDMA_WRITE:
		kinet_dev_wqe_build_write_inline(w, qp->qpn, idx, flags, t->inl, t->size, t->raddr, t->rkey);
		break;
	case KINET_WQE_OP_SEND:
	case KINET_WQE_OP_SEND_IMM:
		kinet_dev_wqe_build_send(w, qp->qpn, idx, t->opcode, flags, t->laddr, t->lkey, t->size,
					 t->imm_be);
		break;
	case KINET_WQE_OP_ATOMIC_FA:
	case KINET_WQE_OP_ATOMIC_CS:
		kinet_dev_wqe_build_atomic(w, qp->qpn, idx, t->opcode, flags, t->laddr, t->lkey, t->raddr,
					   t->rkey, t->swap_add, t->compare);
		break;
	default:
		kinet_dev_wqe_build_nop(w, qp->qpn, idx, flags);
		break;
	}
}

/* Posts x's chunks then t (either may be absent) as the group g: rounds of
 * at most half the queue, each reserved by rank 0, written by all ranks,
 * committed (one doorbell) by rank 0 after a group barrier.  In GPU and BF
 * doorbell modes rank 0 rings with the words of the round's last WQE, never
 * reading the ring (host memory) back: it built that WQE itself, or it
 * builds it again in registers (the builders are pure functions of their
 * arguments, so the copy is the same bytes as the lane that stored it
 * wrote; cheaper than a shuffle or shared-memory exchange of 64 bytes). */
KINET_DEV_FN int kinet_dev_post_group(int g, struct kinet_dev_qp *qp, const struct kinet_dev_xfer *x,
				      const struct kinet_dev_tail *t, uint64_t *ticket)
{
	uint32_t rank = kinet_dev_group_rank(g), gsize = kinet_dev_group_size(g);
	uint64_t chunk = 1, nchunks = 0;
	if (x && x->opcode != KINET_WQE_OP_NOP) {
		chunk = kinet_dev_chunk_size(g, x->size);
		nchunks = (x->size + chunk - 1) / chunk;
		if (nchunks == 0 && x->opcode == KINET_WQE_OP_RDMA_WRITE_IMM)
			nchunks = 1; /* zero-length write with immediate */
	}
	uint64_t total = nchunks + (t ? 1 : 0);
	uint64_t round = kinet_dev_sq_depth(qp) / 2;
	if (round == 0)
		round = 1;
	uint64_t posted = 0, tk = 0;
	int st = 0;
	int need_last = qp->db_mode == KINET_DB_GPU || qp->db_mode == KINET_DB_BF;
	while (posted < total) {
		uint32_t n = (uint32_t)(total - posted < round ? total - posted : round);
		uint64_t start = 0;
		if (rank == 0)
			st = kinet_dev_sq_reserve(qp, n, &start);
		kinet_dev_group_bcast(g, &st, &start);
		if (st)
			break;
		uint32_t c = posted < nchunks ? (uint32_t)(nchunks - posted < n ? nchunks - posted : n) : 0;
		uint64_t lastq[8];
		int have_last = 0;
		union kinet_dev_wqe w;
		for (uint32_t i = rank; i < c; i += gsize) {
			kinet_dev_build_chunk(&w, qp, start + i, x, chunk, nchunks, posted + i);
			kinet_dev_wqe_store(qp, start + i, &w);
			if (i == n - 1) {
				kinet_dev_wqe_words(&w, lastq);
				have_last = 1;
			}
		}
		if (t && c < n && rank == 0) { /* the tail closes the last round */
			kinet_dev_build_tail(&w, qp, start + c, t);
			kinet_dev_wqe_store(qp, start + c, &w);
			kinet_dev_wqe_words(&w, lastq);
			have_last = 1;
		}
		/* Every member's WQE stores happen before rank 0's release fence
		 * in kinet_dev_sq_ring (barrier, then a cumulative fence). */
		kinet_dev_group_sync(g);
		if (rank == 0) {
			if (need_last && !have_last) {
				/* the last WQE is chunk posted + n - 1, another lane's */
				kinet_dev_build_chunk(&w, qp, start + n - 1, x, chunk, nchunks,
						      posted + n - 1);
				kinet_dev_wqe_words(&w, lastq);
				have_last = 1;
			}
			st = kinet_dev_sq_commit(qp, start, n, have_last ? lastq : NULL);
		}
		tk = start + n;
		kinet_dev_group_bcast(g, &st, &tk);
		if (st)
			break;
		posted += n;
	}
	if (ticket)
		*ticket = st ? 0 : tk;
	return st;
}

/* Runs a single-WQE operation as group g: rank 0 posts, all get the result. */
KINET_DEV_FN int kinet_dev_post_tail(int g, struct kinet_dev_qp *qp, const struct kinet_dev_tail *t,
				     uint64_t *ticket)
{
	int st = 0;
	uint64_t tk = 0;
	if (kinet_dev_group_rank(g) == 0)
		st = kinet_dev_post_group(KINET_DEV_GROUP_THREAD, qp, NULL, t, &tk);
	kinet_dev_group_bcast(g, &st, &tk);
	if (ticket)
		*ticket = tk;
	return st;
}

KINET_DEV_FN void kinet_dev_tail_init(struct kinet_dev_tail *t, uint8_t opcode)
{
	t->opcode = opcode;
	t->flags = 0;
	t->lkey = 0;
	t->rkey = 0;
	t->size = 0;
	t->imm_be = 0;
	t->laddr = 0;
	t->raddr = 0;
	t->swap_add = 0;
	t->compare = 0;
	t->inl = NULL;
}

KINET_DEV_FN void kinet_dev_xfer_init(struct kinet_dev_xfer *x, uint8_t opcode, uint64_t laddr, uint32_t lkey,
				      uint64_t raddr, uint32_t rkey, uint64_t size, uint32_t imm_be)
{
	x->opcode = opcode;
	x->laddr = laddr;
	x->lkey = lkey;
	x->raddr = raddr;
	x->rkey = rkey;
	x->size = size;
	x->imm_be = imm_be;
}

/* ---- put: RDMA write of size bytes (any size; split into WQEs) ---- */

KINET_DEV_FN int kinet_dev_put_g(int g, struct kinet_dev_qp *qp, const void *laddr, uint32_t lkey,
				 uint64_t raddr, uint32_t rkey, uint64_t size, uint64_t *ticket)
{
	if (qp->peer) {
		int st = kinet_dev_peer_put_g(g, qp, laddr, lkey, raddr, rkey, size, ticket);
		if (st != KINET_DEV_PEER_MISS)
			return st;
	}
	struct kinet_dev_xfer x;
	kinet_dev_xfer_init(&x, KINET_WQE_OP_RDMA_WRITE, (uint64_t)(uintptr_t)laddr, lkey, raddr, rkey, size,
			    0);
	return kinet_dev_post_group(g, qp, &x, NULL, ticket);
}
KINET_DEV_FN int kinet_dev_put(struct kinet_dev_qp *qp, const void *laddr, uint32_t lkey, uint64_t raddr,
			       uint32_t rkey, uint64_t size, uint64_t *ticket)
{
	return kinet_dev_put_g(KINET_DEV_GROUP_THREAD, qp, laddr, lkey, raddr, rkey, size, ticket);
}
KINET_DEV_FN int kinet_dev_put_warp(struct kinet_dev_qp *qp, const void *laddr, uint32_t lkey, uint64_t raddr,
				    uint32_t rkey, uint64_t size, uint64_t *ticket)
{
	return kinet_dev_put_g(KINET_DEV_GROUP_WARP, qp, laddr, lkey, raddr, rkey, size, ticket);
}
KINET_DEV_FN int kinet_dev_put_block(struct kinet_dev_qp *qp, const void *laddr, uint32_t lkey,
				     uint64_t raddr, uint32_t rkey, uint64_t size, uint64_t *ticket)
{
	return kinet_dev_put_g(KINET_DEV_GROUP_BLOCK, qp, laddr, lkey, raddr, rkey, size, ticket);
}

/* ---- put_inline: size <= qp->max_inline (28) bytes carried in the WQE;
 * data need not be registered and may be reused on return ---- */

KINET_DEV_FN int kinet_dev_put_inline_g(int g, struct kinet_dev_qp *qp, const void *data, uint32_t size,
					uint64_t raddr, uint32_t rkey, uint64_t *ticket)
{
	uint32_t max = qp->max_inline < KINET_DEV_MAX_INLINE ? qp->max_inline : KINET_DEV_MAX_INLINE;
	if (size > max)
		return EINVAL;
	if (qp->peer) {
		int st = kinet_dev_peer_put_inline_g(g, qp, data, size, raddr, rkey, ticket);
		if (st != KINET_DEV_PEER_MISS)
			return st;
	}
	struct kinet_dev_tail t;
	kinet_dev_tail_init(&t, KINET_WQE_OP_RDMA_WRITE);
	t.inl = data;
	t.size = size;
	t.raddr = raddr;
	t.rkey = rkey;
	return kinet_dev_post_tail(g, qp, &t, ticket);
}
KINET_DEV_FN int kinet_dev_put_inline(struct kinet_dev_qp *qp, const void *data, uint32_t size,
				      uint64_t raddr, uint32_t rkey, uint64_t *ticket)
{
	return kinet_dev_put_inline_g(KINET_DEV_GROUP_THREAD, qp, data, size, raddr, rkey, ticket);
}
KINET_DEV_FN int kinet_dev_put_inline_warp(struct kinet_dev_qp *qp, const void *data, uint32_t size,
					   uint64_t raddr, uint32_t rkey, uint64_t *ticket)
{
	return kinet_dev_put_inline_g(KINET_DEV_GROUP_WARP, qp, data, size, raddr, rkey, ticket);
}
KINET_DEV_FN int kinet_dev_put_inline_block(struct kinet_dev_qp *qp, const void *data, uint32_t size,
					    uint64_t raddr, uint32_t rkey, uint64_t *ticket)
{
	return kinet_dev_put_inline_g(KINET_DEV_GROUP_BLOCK, qp, data, size, raddr, rkey, ticket);
}

/* ---- get: RDMA read of size bytes into [laddr, lkey] ---- */

KINET_DEV_FN int kinet_dev_get_g(int g, struct kinet_dev_qp *qp, void *laddr, uint32_t lkey, uint64_t raddr,
				 uint32_t rkey, uint64_t size, uint64_t *ticket)
{
	if (qp->peer) {
		int st = kinet_dev_peer_get_g(g, qp, laddr, lkey, raddr, rkey, size, ticket);
		if (st != KINET_DEV_PEER_MISS)
			return st;
	}
	struct kinet_dev_xfer x;
	kinet_dev_xfer_init(&x, KINET_WQE_OP_RDMA_READ, (uint64_t)(uintptr_t)laddr, lkey, raddr, rkey, size,
			    0);
	return kinet_dev_post_group(g, qp, &x, NULL, ticket);
}
KINET_DEV_FN int kinet_dev_get(struct kinet_dev_qp *qp, void *laddr, uint32_t lkey, uint64_t raddr,
			       uint32_t rkey, uint64_t size, uint64_t *ticket)
{
	return kinet_dev_get_g(KINET_DEV_GROUP_THREAD, qp, laddr, lkey, raddr, rkey, size, ticket);
}
KINET_DEV_FN int kinet_dev_get_warp(struct kinet_dev_qp *qp, void *laddr, uint32_t lkey, uint64_t raddr,
				    uint32_t rkey, uint64_t size, uint64_t *ticket)
{
	return kinet_dev_get_g(KINET_DEV_GROUP_WARP, qp, laddr, lkey, raddr, rkey, size, ticket);
}
KINET_DEV_FN int kinet_dev_get_block(struct kinet_dev_qp *qp, void *laddr, uint32_t lkey, uint64_t raddr,
				     uint32_t rkey, uint64_t size, uint64_t *ticket)
{
	return kinet_dev_get_g(KINET_DEV_GROUP_BLOCK, qp, laddr, lkey, raddr, rkey, size, ticket);
}

/* ---- fetch_add / compare_swap: 64-bit remote atomics; the old value is
 * written to [result, lkey] (8 bytes, registered) and valid once the
 * ticket completes ---- */

KINET_DEV_FN int kinet_dev_fetch_add_g(int g, struct kinet_dev_qp *qp, uint64_t *result, uint32_t lkey,
				       uint64_t raddr, uint32_t rkey, uint64_t add, uint64_t *ticket)
{
	if (qp->peer) {
		int st = kinet_dev_peer_atomic_g(g, qp, 0, result, lkey, raddr, rkey, add, 0, ticket);
		if (st != KINET_DEV_PEER_MISS)
			return st;
	}
	struct kinet_dev_tail t;
	kinet_dev_tail_init(&t, KINET_WQE_OP_ATOMIC_FA);
	t.laddr = (uint64_t)(uintptr_t)result;
	t.lkey = lkey;
	t.raddr = raddr;
	t.rkey = rkey;
	t.swap_add = add;
	return kinet_dev_post_tail(g, qp, &t, ticket);
}
KINET_DEV_FN int kinet_dev_fetch_add(struct kinet_dev_qp *qp, uint64_t *result, uint32_t lkey, uint64_t raddr,
				     uint32_t rkey, uint64_t add, uint64_t *ticket)
{
	return kinet_dev_fetch_add_g(KINET_DEV_GROUP_THREAD, qp, result, lkey, raddr, rkey, add, ticket);
}
KINET_DEV_FN int kinet_dev_fetch_add_warp(struct kinet_dev_qp *qp, uint64_t *result, uint32_t lkey,
					  uint64_t raddr, uint32_t rkey, uint64_t add, uint64_t *ticket)
{
	return kinet_dev_fetch_add_g(KINET_DEV_GROUP_WARP, qp, result, lkey, raddr, rkey, add, ticket);
}
KINET_DEV_FN int kinet_dev_fetch_add_block(struct kinet_dev_qp *qp, uint64_t *result, uint32_t lkey,
					   uint64_t raddr, uint32_t rkey, uint64_t add, uint64_t *ticket)
{
	return kinet_dev_fetch_add_g(KINET_DEV_GROUP_BLOCK, qp, result, lkey, raddr, rkey, add, ticket);
}

KINET_DEV_FN int kinet_dev_compare_swap_g(int g, struct kinet_dev_qp *qp, uint64_t *result, uint32_t lkey,
					  uint64_t raddr, uint32_t rkey, uint64_t compare, uint64_t swap,
					  uint64_t *ticket)
{
	if (qp->peer) {
		int st = kinet_dev_peer_atomic_g(g, qp, 1, result, lkey, raddr, rkey, compare, swap, ticket);
		if (st != KINET_DEV_PEER_MISS)
			return st;
	}
	struct kinet_dev_tail t;
	kinet_dev_tail_init(&t, KINET_WQE_OP_ATOMIC_CS);
	t.laddr = (uint64_t)(uintptr_t)result;
	t.lkey = lkey;
	t.raddr = raddr;
	t.rkey = rkey;
	t.swap_add = swap;
	t.compare = compare;
	return kinet_dev_post_tail(g, qp, &t, ticket);
}
KINET_DEV_FN int kinet_dev_compare_swap(struct kinet_dev_qp *qp, uint64_t *result, uint32_t lkey,
					uint64_t raddr, uint32_t rkey, uint64_t compare, uint64_t swap,
					uint64_t *ticket)
{
	return kinet_dev_compare_swap_g(KINET_DEV_GROUP_THREAD, qp, result, lkey, raddr, rkey, compare, swap,
					ticket);
}
KINET_DEV_FN int kinet_dev_compare_swap_warp(struct kinet_dev_qp *qp, uint64_t *result, uint32_t lkey,
					     uint64_t raddr, uint32_t rkey, uint64_t compare, uint64_t swap,
					     uint64_t *ticket)
{
	return kinet_dev_compare_swap_g(KINET_DEV_GROUP_WARP, qp, result, lkey, raddr, rkey, compare, swap,
					ticket);
}
KINET_DEV_FN int kinet_dev_compare_swap_block(struct kinet_dev_qp *qp, uint64_t *result, uint32_t lkey,
					      uint64_t raddr, uint32_t rkey, uint64_t compare, uint64_t swap,
					      uint64_t *ticket)
{
	return kinet_dev_compare_swap_g(KINET_DEV_GROUP_BLOCK, qp, result, lkey, raddr, rkey, compare, swap,
					ticket);
}

/* ---- signal: remote 64-bit add (non-fetching: the old value goes to the
 * QP's scratch buffer; EINVAL when the descriptor has none) ---- */

KINET_DEV_FN void kinet_dev_signal_tail(struct kinet_dev_tail *t, const struct kinet_dev_qp *qp,
					uint64_t sig_raddr, uint32_t sig_rkey, uint64_t add)
{
	kinet_dev_tail_init(t, KINET_WQE_OP_ATOMIC_FA);
	t->laddr = qp->scratch;
	t->lkey = qp->scratch_lkey;
	t->raddr = sig_raddr;
	t->rkey = sig_rkey;
	t->swap_add = add;
}

KINET_DEV_FN int kinet_dev_signal_g(int g, struct kinet_dev_qp *qp, uint64_t sig_raddr, uint32_t sig_rkey,
				    uint64_t add, uint64_t *ticket)
{
	if (!qp->scratch)
		return EINVAL;
	if (qp->peer) {
		int st = kinet_dev_peer_put_signal_g(g, qp, NULL, 0, 0, 0, 0, sig_raddr, sig_rkey, add,
						     ticket);
		if (st != KINET_DEV_PEER_MISS)
			return st;
	}
	struct kinet_dev_tail t;
	kinet_dev_signal_tail(&t, qp, sig_raddr, sig_rkey, add);
	return kinet_dev_post_tail(g, qp, &t, ticket);
}
KINET_DEV_FN int kinet_dev_signal(struct kinet_dev_qp *qp, uint64_t sig_raddr, uint32_t sig_rkey,
				  uint64_t add, uint64_t *ticket)
{
	return kinet_dev_signal_g(KINET_DEV_GROUP_THREAD, qp, sig_raddr, sig_rkey, add, ticket);
}
KINET_DEV_FN int kinet_dev_signal_warp(struct kinet_dev_qp *qp, uint64_t sig_raddr, uint32_t sig_rkey,
				       uint64_t add, uint64_t *ticket)
{
	return kinet_dev_signal_g(KINET_DEV_GROUP_WARP, qp, sig_raddr, sig_rkey, add, ticket);
}
KINET_DEV_FN int kinet_dev_signal_block(struct kinet_dev_qp *qp, uint64_t sig_raddr, uint32_t sig_rkey,
					uint64_t add, uint64_t *ticket)
{
	return kinet_dev_signal_g(KINET_DEV_GROUP_BLOCK, qp, sig_raddr, sig_rkey, add, ticket);
}

/* ---- put_signal: put, then add to the remote signal word.  The QP
 * executes in order, so the target sees the data before the signal. ---- */

KINET_DEV_FN int kinet_dev_put_signal_g(int g, struct kinet_dev_qp *qp, const void *laddr, uint32_t lkey,
					uint64_t raddr, uint32_t rkey, uint64_t size, uint64_t sig_raddr,
					uint32_t sig_rkey, uint64_t add, uint64_t *ticket)
{
	if (!qp->scratch)
		return EINVAL;
	if (qp->peer) {
		int st = kinet_dev_peer_put_signal_g(g, qp, laddr, lkey, raddr, rkey, size, sig_raddr,
						     sig_rkey, add, ticket);
		if (st != KINET_DEV_PEER_MISS)
			return st;
	}
	struct kinet_dev_xfer x;
	struct kinet_dev_tail t;
	kinet_dev_xfer_init(&x, KINET_WQE_OP_RDMA_WRITE, (uint64_t)(uintptr_t)laddr, lkey, raddr, rkey, size,
			    0);
	kinet_dev_signal_tail(&t, qp, sig_raddr, sig_rkey, add);
	return kinet_dev_post_group(g, qp, &x, &t, ticket);
}
KINET_DEV_FN int kinet_dev_put_signal(struct kinet_dev_qp *qp, const void *laddr, uint32_t lkey,
				      uint64_t raddr, uint32_t rkey, uint64_t size, uint64_t sig_raddr,
				      uint32_t sig_rkey, uint64_t add, uint64_t *ticket)
{
	return kinet_dev_put_signal_g(KINET_DEV_GROUP_THREAD, qp, laddr, lkey, raddr, rkey, size, sig_raddr,
				      sig_rkey, add, ticket);
}
KINET_DEV_FN int kinet_dev_put_signal_warp(struct kinet_dev_qp *qp, const void *laddr, uint32_t lkey,
					   uint64_t raddr, uint32_t rkey, uint64_t size, uint64_t sig_raddr,
					   uint32_t sig_rkey, uint64_t add, uint64_t *ticket)
{
	return kinet_dev_put_signal_g(KINET_DEV_GROUP_WARP, qp, laddr, lkey, raddr, rkey, size, sig_raddr,
				      sig_rkey, add, ticket);
}
KINET_DEV_FN int kinet_dev_put_signal_block(struct kinet_dev_qp *qp, const void *laddr, uint32_t lkey,
					    uint64_t raddr, uint32_t rkey, uint64_t size, uint64_t sig_raddr,
					    uint32_t sig_rkey, uint64_t add, uint64_t *ticket)
{
	return kinet_dev_put_signal_g(KINET_DEV_GROUP_BLOCK, qp, laddr, lkey, raddr, rkey, size, sig_raddr,
				      sig_rkey, add, ticket);
}

/* ---- write_imm: put whose last WQE carries an immediate (host order);
 * consumes one receive at the target, which gets a completion with it ---- */

KINET_DEV_FN int kinet_dev_write_imm_g(int g, struct kinet_dev_qp *qp, const void *laddr, uint32_t lkey,
				       uint64_t raddr, uint32_t rkey, uint64_t size, uint32_t imm,
				       uint64_t *ticket)
{
	struct kinet_dev_xfer x;
	kinet_dev_xfer_init(&x, KINET_WQE_OP_RDMA_WRITE_IMM, (uint64_t)(uintptr_t)laddr, lkey, raddr, rkey,
			    size, kinet_be32(imm));
	return kinet_dev_post_group(g, qp, &x, NULL, ticket);
}
KINET_DEV_FN int kinet_dev_write_imm(struct kinet_dev_qp *qp, const void *laddr, uint32_t lkey,
				     uint64_t raddr, uint32_t rkey, uint64_t size, uint32_t imm,
				     uint64_t *ticket)
{
	return kinet_dev_write_imm_g(KINET_DEV_GROUP_THREAD, qp, laddr, lkey, raddr, rkey, size, imm, ticket);
}
KINET_DEV_FN int kinet_dev_write_imm_warp(struct kinet_dev_qp *qp, const void *laddr, uint32_t lkey,
					  uint64_t raddr, uint32_t rkey, uint64_t size, uint32_t imm,
					  uint64_t *ticket)
{
	return kinet_dev_write_imm_g(KINET_DEV_GROUP_WARP, qp, laddr, lkey, raddr, rkey, size, imm, ticket);
}
KINET_DEV_FN int kinet_dev_write_imm_block(struct kinet_dev_qp *qp, const void *laddr, uint32_t lkey,
					   uint64_t raddr, uint32_t rkey, uint64_t size, uint32_t imm,
					   uint64_t *ticket)
{
	return kinet_dev_write_imm_g(KINET_DEV_GROUP_BLOCK, qp, laddr, lkey, raddr, rkey, size, imm, ticket);
}

/* ---- send / send_imm: one message of size <= 1 GiB (EINVAL above) into
 * the next receive the target posted ---- */

KINET_DEV_FN int kinet_dev_send_g(int g, struct kinet_dev_qp *qp, const void *laddr, uint32_t lkey,
				  uint64_t size, int with_imm, uint32_t imm, uint64_t *ticket)
{
	if (size > KINET_DEV_MAX_WQE_BYTES)
		return EINVAL;
	struct kinet_dev_tail t;
	kinet_dev_tail_init(&t, with_imm ? KINET_WQE_OP_SEND_IMM : KINET_WQE_OP_SEND);
	t.laddr = (uint64_t)(uintptr_t)laddr;
	t.lkey = lkey;
	t.size = (uint32_t)size;
	t.imm_be = with_imm ? kinet_be32(imm) : 0;
	return kinet_dev_post_tail(g, qp, &t, ticket);
}
KINET_DEV_FN int kinet_dev_send(struct kinet_dev_qp *qp, const void *laddr, uint32_t lkey, uint64_t size,
				uint64_t *ticket)
{
	return kinet_dev_send_g(KINET_DEV_GROUP_THREAD, qp, laddr, lkey, size, 0, 0, ticket);
}
KINET_DEV_FN int kinet_dev_send_warp(struct kinet_dev_qp *qp, const void *laddr, uint32_t lkey, uint64_t size,
				     uint64_t *ticket)
{
	return kinet_dev_send_g(KINET_DEV_GROUP_WARP, qp, laddr, lkey, size, 0, 0, ticket);
}
KINET_DEV_FN int kinet_dev_send_block(struct kinet_dev_qp *qp, const void *laddr, uint32_t lkey,
				      uint64_t size, uint64_t *ticket)
{
	return kinet_dev_send_g(KINET_DEV_GROUP_BLOCK, qp, laddr, lkey, size, 0, 0, ticket);
}
KINET_DEV_FN int kinet_dev_send_imm(struct kinet_dev_qp *qp, const void *laddr, uint32_t lkey, uint64_t size,
				    uint32_t imm, uint64_t *ticket)
{
	return kinet_dev_send_g(KINET_DEV_GROUP_THREAD, qp, laddr, lkey, size, 1, imm, ticket);
}
KINET_DEV_FN int kinet_dev_send_imm_warp(struct kinet_dev_qp *qp, const void *laddr, uint32_t lkey,
					 uint64_t size, uint32_t imm, uint64_t *ticket)
{
	return kinet_dev_send_g(KINET_DEV_GROUP_WARP, qp, laddr, lkey, size, 1, imm, ticket);
}
KINET_DEV_FN int kinet_dev_send_imm_block(struct kinet_dev_qp *qp, const void *laddr, uint32_t lkey,
					  uint64_t size, uint32_t imm, uint64_t *ticket)
{
	return kinet_dev_send_g(KINET_DEV_GROUP_BLOCK, qp, laddr, lkey, size, 1, imm, ticket);
}

/* ---- post_recv: one receive buffer (thread-safe, in-order commit);
 * EAGAIN when the receive queue is full; *index = its receive index ---- */

KINET_DEV_FN int kinet_dev_post_recv(struct kinet_dev_qp *qp, void *laddr, uint32_t lkey, uint32_t size,
				     uint64_t *index)
{
	uint64_t idx = 0;
	int st = kinet_dev_rq_reserve(qp, 1, &idx);
	if (st)
		return st;
	kinet_dev_rq_prep(qp, idx, laddr, lkey, size);
	st = kinet_dev_rq_commit(qp, idx, 1);
	if (index)
		*index = idx;
	return st;
}
KINET_DEV_FN int kinet_dev_post_recv_g(int g, struct kinet_dev_qp *qp, void *laddr, uint32_t lkey,
				       uint32_t size, uint64_t *index)
{
	int st = 0;
	uint64_t idx = 0;
	kinet_dev_group_sync(g);
	if (kinet_dev_group_rank(g) == 0)
		st = kinet_dev_post_recv(qp, laddr, lkey, size, &idx);
	kinet_dev_group_bcast(g, &st, &idx);
	if (index)
		*index = idx;
	return st;
}
KINET_DEV_FN int kinet_dev_post_recv_warp(struct kinet_dev_qp *qp, void *laddr, uint32_t lkey, uint32_t size,
					  uint64_t *index)
{
	return kinet_dev_post_recv_g(KINET_DEV_GROUP_WARP, qp, laddr, lkey, size, index);
}
KINET_DEV_FN int kinet_dev_post_recv_block(struct kinet_dev_qp *qp, void *laddr, uint32_t lkey, uint32_t size,
					   uint64_t *index)
{
	return kinet_dev_post_recv_g(KINET_DEV_GROUP_BLOCK, qp, laddr, lkey, size, index);
}

/* ---- recv: the next receive completion, in order (bounded wait):
 * byte count, immediate (host order; 0 without one) and the receive index
 * (which posted buffer).  EIO on an error completion. ---- */

KINET_DEV_FN int kinet_dev_recv(struct kinet_dev_qp *qp, uint32_t *byte_len, uint32_t *imm, uint64_t *index)
{
	struct kinet_dev_deadline d;
	kinet_dev_deadline_init(&d, kinet_dev_qp_timeout_ns(qp));
	for (;;) {
		int st = kinet_dev_rq_poll(qp, byte_len, imm, index);
		if (st != EAGAIN)
			return st;
		if (kinet_dev_deadline_expired(&d))
			return kinet_dev_qp_timed_out(qp);
	}
}
KINET_DEV_FN int kinet_dev_recv_g(int g, struct kinet_dev_qp *qp, uint32_t *byte_len, uint32_t *imm,
				  uint64_t *index)
{
	int st = 0;
	uint32_t len = 0, im = 0;
	uint64_t idx = 0, packed = 0;
	if (kinet_dev_group_rank(g) == 0) {
		st = kinet_dev_recv(qp, &len, &im, &idx);
		packed = ((uint64_t)im << 32) | len;
	}
	kinet_dev_group_bcast(g, &st, &packed);
	if (byte_len)
		*byte_len = (uint32_t)packed;
	if (imm)
		*imm = (uint32_t)(packed >> 32);
	kinet_dev_group_bcast(g, &st, &idx);
	if (index)
		*index = idx;
	return st;
}
KINET_DEV_FN int kinet_dev_recv_warp(struct kinet_dev_qp *qp, uint32_t *byte_len, uint32_t *imm,
				     uint64_t *index)
{
	return kinet_dev_recv_g(KINET_DEV_GROUP_WARP, qp, byte_len, imm, index);
}
KINET_DEV_FN int kinet_dev_recv_block(struct kinet_dev_qp *qp, uint32_t *byte_len, uint32_t *imm,
				      uint64_t *index)
{
	return kinet_dev_recv_g(KINET_DEV_GROUP_BLOCK, qp, byte_len, imm, index);
}

/* ---- test / wait: one ticket (kinet_dev_sq_test / kinet_dev_sq_wait in
 * queue.cuh), after completing the caller's peer-path stores ---- */

KINET_DEV_FN int kinet_dev_test(struct kinet_dev_qp *qp, uint64_t ticket)
{
	kinet_dev_peer_complete(qp);
	return kinet_dev_sq_test(qp, ticket);
}
KINET_DEV_FN int kinet_dev_wait(struct kinet_dev_qp *qp, uint64_t ticket)
{
	kinet_dev_peer_complete(qp);
	return kinet_dev_sq_wait(qp, ticket);
}

/* ---- wait (one ticket) in group forms ---- */

KINET_DEV_FN int kinet_dev_wait_g(int g, struct kinet_dev_qp *qp, uint64_t ticket)
{
	int st = 0;
	uint64_t unused = 0;
	if (kinet_dev_group_rank(g) == 0)
		st = kinet_dev_wait(qp, ticket);
	kinet_dev_group_bcast(g, &st, &unused);
	return st;
}
KINET_DEV_FN int kinet_dev_wait_warp(struct kinet_dev_qp *qp, uint64_t ticket)
{
	return kinet_dev_wait_g(KINET_DEV_GROUP_WARP, qp, ticket);
}
KINET_DEV_FN int kinet_dev_wait_block(struct kinet_dev_qp *qp, uint64_t ticket)
{
	return kinet_dev_wait_g(KINET_DEV_GROUP_BLOCK, qp, ticket);
}

/* ---- quiet: everything committed on the QP so far is complete ---- */

KINET_DEV_FN int kinet_dev_quiet(struct kinet_dev_qp *qp)
{
	return kinet_dev_wait(qp, kinet_dev_scoped_load_acquire_u64(kinet_dev_qp_scope(qp), &qp->sq_ready));
}
KINET_DEV_FN int kinet_dev_quiet_g(int g, struct kinet_dev_qp *qp)
{
	int st = 0;
	uint64_t unused = 0;
	kinet_dev_group_sync(g); /* posts of every member before the snapshot */
	if (kinet_dev_group_rank(g) == 0)
		st = kinet_dev_quiet(qp);
	kinet_dev_group_bcast(g, &st, &unused);
	return st;
}
KINET_DEV_FN int kinet_dev_quiet_warp(struct kinet_dev_qp *qp)
{
	return kinet_dev_quiet_g(KINET_DEV_GROUP_WARP, qp);
}
KINET_DEV_FN int kinet_dev_quiet_block(struct kinet_dev_qp *qp)
{
	return kinet_dev_quiet_g(KINET_DEV_GROUP_BLOCK, qp);
}

/* ---- fence: operations posted after it start only once the reads and
 * atomics posted before it are complete (a NOP with the fence flag; writes
 * are already ordered on one QP).  ticket: that NOP's ---- */

KINET_DEV_FN int kinet_dev_fence_g(int g, struct kinet_dev_qp *qp, uint64_t *ticket)
{
	struct kinet_dev_tail t;
	kinet_dev_tail_init(&t, KINET_WQE_OP_NOP);
	t.flags = KINET_DEV_WQE_FENCE;
	kinet_dev_group_sync(g);
	if (qp->peer) {
		/* Peer reads and atomics are complete on return; only WQEs still
		 * in flight need the fenced NOP. */
		int st = 0;
		uint64_t ready = 0;
		if (kinet_dev_group_rank(g) == 0)
			st = kinet_dev_peer_sq_idle(qp, &ready) ? 0 : KINET_DEV_PEER_MISS;
		kinet_dev_group_bcast(g, &st, &ready);
		if (st != KINET_DEV_PEER_MISS)
			return kinet_dev_peer_done(st, ready, ticket);
	}
	return kinet_dev_post_tail(g, qp, &t, ticket);
}
KINET_DEV_FN int kinet_dev_fence(struct kinet_dev_qp *qp, uint64_t *ticket)
{
	return kinet_dev_fence_g(KINET_DEV_GROUP_THREAD, qp, ticket);
}
KINET_DEV_FN int kinet_dev_fence_warp(struct kinet_dev_qp *qp, uint64_t *ticket)
{
	return kinet_dev_fence_g(KINET_DEV_GROUP_WARP, qp, ticket);
}
KINET_DEV_FN int kinet_dev_fence_block(struct kinet_dev_qp *qp, uint64_t *ticket)
{
	return kinet_dev_fence_g(KINET_DEV_GROUP_BLOCK, qp, ticket);
}

/* ---- signal_wait_until: waits until *sig <cmp> value on a local word
 * (written by the NIC: acquire load at system scope; data placed before
 * the signal is visible once it returns).  Bounded by qp's timeout (qp may
 * be NULL: the default); 0, ETIMEDOUT, EINVAL (bad cmp).  *seen: the value
 * that satisfied it (may be NULL). ---- */

KINET_DEV_FN int kinet_dev_cmp(uint64_t v, int cmp, uint64_t value)
{
	switch (cmp) {
	case KINET_DEV_CMP_EQ:
		return v == value;
	case KINET_DEV_CMP_NE:
		return v != value;
	case KINET_DEV_CMP_GT:
		return v > value;
	case KINET_DEV_CMP_GE:
		return v >= value;
	case KINET_DEV_CMP_LT:
		return v < value;
	default:
		return v <= value;
	}
}

KINET_DEV_FN int kinet_dev_signal_wait_until(struct kinet_dev_qp *qp, const uint64_t *sig, int cmp,
					     uint64_t value, uint64_t *seen)
{
	if (cmp < KINET_DEV_CMP_EQ || cmp > KINET_DEV_CMP_LE)
		return EINVAL;
	struct kinet_dev_deadline d;
	kinet_dev_deadline_init(&d, kinet_dev_qp_timeout_ns(qp));
	for (uint32_t i = 1;; i++) {
		/* Acquire polls (measured: a relaxed poll plus an acquire once
		 * the value is there, or a fence, see it later); the clock is
		 * read every 16 polls. */
		uint64_t v = kinet_dev_load_acquire_u64_sys(sig);
		if (kinet_dev_cmp(v, cmp, value)) {
			if (seen)
				*seen = v;
			return 0;
		}
		if ((i & 15) == 0 && kinet_dev_deadline_expired(&d)) {
			if (qp)
				return kinet_dev_qp_timed_out(qp);
			return ETIMEDOUT;
		}
	}
}
KINET_DEV_FN int kinet_dev_signal_wait_until_g(int g, struct kinet_dev_qp *qp, const uint64_t *sig, int cmp,
					       uint64_t value, uint64_t *seen)
{
	int st = 0;
	uint64_t v = 0;
	if (kinet_dev_group_rank(g) == 0)
		st = kinet_dev_signal_wait_until(qp, sig, cmp, value, &v);
	kinet_dev_group_bcast(g, &st, &v);
	if (seen)
		*seen = v;
	return st;
}
KINET_DEV_FN int kinet_dev_signal_wait_until_warp(struct kinet_dev_qp *qp, const uint64_t *sig, int cmp,
						  uint64_t value, uint64_t *seen)
{
	return kinet_dev_signal_wait_until_g(KINET_DEV_GROUP_WARP, qp, sig, cmp, value, seen);
}
KINET_DEV_FN int kinet_dev_signal_wait_until_block(struct kinet_dev_qp *qp, const uint64_t *sig, int cmp,
						   uint64_t value, uint64_t *seen)
{
	return kinet_dev_signal_wait_until_g(KINET_DEV_GROUP_BLOCK, qp, sig, cmp, value, seen);
}

#endif /* KINET_DEVICE_OPS_CUH */
