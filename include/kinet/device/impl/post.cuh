/*
 * kinet device API, implementation: posting one operation -- RDMA chunks
 * plus an optional single WQE (the "tail") -- as a thread or a group,
 * through the low level (sq.cuh): reserve, write, commit in order, ring
 * once per round.  WQEs ask for CQEs as completion moderation says
 * (kinet_devi_post_sig): every qp->sq_signal_every-th index, and the last
 * WQE of a post the caller will most likely wait for; a wait for a ticket
 * no CQE covers posts a signalled NOP (impl/completion.cuh).
 */
#ifndef KINET_DEVICE_IMPL_POST_CUH
#define KINET_DEVICE_IMPL_POST_CUH

#include "kinet/device/impl/stage.cuh"
#include "kinet/device/platform.cuh"
#include "kinet/device/sq.cuh"
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

/* Chunked part: RDMA_WRITE, RDMA_READ or RDMA_WRITE_IMM (immediate on the
 * last chunk); opcode NOP (0) for none. */
struct kinet_devi_xfer {
	uint8_t opcode;
	uint32_t lkey;
	uint32_t rkey;
	uint32_t imm_be;
	uint64_t laddr;
	uint64_t raddr;
	uint64_t size;
};

/* Single WQE after the chunks (built by rank 0). */
struct kinet_devi_tail {
	uint8_t opcode; /* KINET_WQE_OP_*; inline: RDMA_WRITE or SEND(_IMM) with inl != NULL */
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

KINET_DEV_FN uint64_t kinet_devi_chunk_size(int group, uint64_t size)
{
	uint64_t max = KINET_DEV_MAX_WQE_BYTES;
	uint32_t gsize = kinet_devi_group_size(group);
	if (gsize <= 1)
		return max;
	uint64_t c = (size + gsize - 1) / gsize;
	if (c < KINET_DEV_GROUP_CHUNK_MIN)
		c = KINET_DEV_GROUP_CHUNK_MIN;
	c = (c + 63) & ~(uint64_t)63;
	return c < max ? c : max;
}

/* Builds chunk k of x (of nchunks, chunk bytes each) as the WQE at idx. */
KINET_DEV_FN void kinet_devi_build_chunk(union kinet_dev_wqe *w, const struct kinet_dev_qp *qp, uint64_t idx,
					 const struct kinet_devi_xfer *x, uint64_t chunk, uint64_t nchunks,
					 uint64_t k, uint8_t sig)
{
	uint64_t off = k * chunk;
	uint64_t len = x->size - off < chunk ? x->size - off : chunk;
	uint8_t op = x->opcode;
	if (op == KINET_WQE_OP_RDMA_WRITE_IMM && k != nchunks - 1)
		op = KINET_WQE_OP_RDMA_WRITE;
	kinet_dev_wqe_build_rdma(w, qp->qpn, idx, op, sig, x->laddr + off, x->lkey, x->raddr + off, x->rkey,
				 (uint32_t)len, op == KINET_WQE_OP_RDMA_WRITE_IMM ? x->imm_be : 0);
	if (nchunks == 1 && kinet_devi_stage_wanted(qp, op, x->lkey, len))
		kinet_wqe_set_opmod(&w->rdma.ctrl, KINET_WQE_OPMOD_STAGED);
}

KINET_DEV_FN void kinet_devi_build_tail(union kinet_dev_wqe *w, const struct kinet_dev_qp *qp, uint64_t idx,
					const struct kinet_devi_tail *t, uint8_t sig)
{
	uint8_t flags = (uint8_t)(sig | t->flags);
	switch (t->opcode) {
	case KINET_WQE_OP_RDMA_WRITE:
		kinet_dev_wqe_build_write_inline(w, qp->qpn, idx, flags, t->inl, t->size, t->raddr, t->rkey);
		break;
	case KINET_WQE_OP_SEND:
	case KINET_WQE_OP_SEND_IMM:
		if (t->inl) {
			kinet_dev_wqe_build_send_inline(w, qp->qpn, idx, t->opcode, flags, t->inl, t->size,
							t->imm_be);
			break;
		}
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

/* Completion moderation (docs/DEVICE_API.md): whether WQE idx, number k
 * of the post's total, asks for a CQE.  Every sq_signal_every-th index
 * does; the last WQE of the post does when `last_sig` (a multi-WQE post,
 * data the caller will read, a NOP, or a queue that was idle: then the
 * caller most likely waits next, and a CQE now saves it a NOP later).  The
 * engine writes an error CQE for any WQE that fails, asked or not. */
KINET_DEV_FN uint8_t kinet_devi_post_sig(const struct kinet_dev_qp *qp, uint64_t idx, uint64_t k,
					 uint64_t total, int last_sig)
{
	uint32_t every = qp->sq_signal_every;
	if (every <= 1 || ((idx + 1) & (every - 1)) == 0 || (k + 1 == total && last_sig))
		return KINET_DEV_WQE_SIGNALED;
	return 0;
}

/* Index + 1 of the last WQE of [start, start + n) that asked for a CQE, or
 * 0 (the round holds positions posted .. posted + n - 1 of the post). */
KINET_DEV_FN uint64_t kinet_devi_post_sig_end(const struct kinet_dev_qp *qp, uint64_t start, uint32_t n,
					      uint64_t posted, uint64_t total, int last_sig)
{
	uint64_t every = qp->sq_signal_every, end = start + n;
	if (every <= 1 || (posted + n == total && last_sig))
		return end;
	end &= ~(every - 1);
	return end > start ? end : 0;
}

/* Moves sq_signaled up to sig_end, after the commit that rang it. */
KINET_DEV_FN void kinet_devi_sq_note_signaled(struct kinet_dev_qp *qp, uint64_t sig_end)
{
	int scope = kinet_devi_qp_scope(qp);
	if (!sig_end || qp->sq_signal_every <= 1)
		return;
	if (scope == KINET_DEVI_SCOPE_THREAD) {
		if (sig_end > qp->sq_signaled)
			qp->sq_signaled = sig_end;
	} else if (kinet_devi_scoped_load_relaxed_u64(scope, &qp->sq_signaled) < sig_end) {
		kinet_devi_atomic_max_u64(&qp->sq_signaled, sig_end);
	}
}

/* Posts x's chunks then t (either may be absent) as the group g: rounds of
 * at most half the queue, each reserved by rank 0, written by all ranks,
 * committed (one doorbell) by rank 0 after a group barrier.  In GPU and BF
 * doorbell modes rank 0 rings with the words of the round's last WQE, never
 * reading the ring (host memory) back: it built that WQE itself, or it
 * builds it again in registers (the builders are pure functions of their
 * arguments, so the copy is the same bytes as the lane that stored it
 * wrote; cheaper than a shuffle or shared-memory exchange of 64 bytes).
 * WQEs ask for CQEs as kinet_devi_post_sig says. */
KINET_DEV_FN int kinet_devi_post_group(int g, struct kinet_dev_qp *qp, const struct kinet_devi_xfer *x,
				       const struct kinet_devi_tail *t, uint64_t *ticket)
{
	uint32_t rank = kinet_devi_group_rank(g), gsize = kinet_devi_group_size(g);
	uint64_t chunk = 1, nchunks = 0;
	if (x && x->opcode != KINET_WQE_OP_NOP) {
		chunk = kinet_devi_chunk_size(g, x->size);
		nchunks = (x->size + chunk - 1) / chunk;
		if (nchunks == 0 && x->opcode == KINET_WQE_OP_RDMA_WRITE_IMM)
			nchunks = 1; /* zero-length write with immediate */
	}
	uint64_t total = nchunks + (t ? 1 : 0);
	uint64_t round = kinet_dev_sq_depth(qp) / 2;
	if (round == 0)
		round = 1;
	/* A result the caller reads (get, fetching atomics), a NOP (fence,
	 * moderation's flush) or several WQEs: the last one asks for a CQE. */
	int last_sig = total > 1 || (x && x->opcode == KINET_WQE_OP_RDMA_READ) ||
		       (t && (t->opcode == KINET_WQE_OP_NOP ||
			      ((t->opcode == KINET_WQE_OP_ATOMIC_FA || t->opcode == KINET_WQE_OP_ATOMIC_CS) &&
			       t->laddr != qp->scratch)));
	uint64_t posted = 0, tk = 0;
	int st = 0;
	int need_last = qp->db_mode == KINET_DB_GPU || qp->db_mode == KINET_DB_BF;
	while (posted < total) {
		uint32_t n = (uint32_t)(total - posted < round ? total - posted : round);
		uint64_t start = 0;
		if (rank == 0) {
			st = kinet_dev_sq_reserve(qp, n, &start);
			/* An idle queue (every earlier WQE known complete): the
			 * caller most likely waits for this post next.  Told to
			 * the group in the top bit of start. */
			if (!st && kinet_devi_scoped_load_relaxed_u64(kinet_devi_qp_scope(qp),
								      &qp->sq_done) == start)
				start |= 1ull << 63;
		}
		kinet_devi_group_bcast(g, &st, &start);
		if (st)
			break;
		int lsig = last_sig || (int)(start >> 63);
		start &= ~(1ull << 63);
		uint32_t c = posted < nchunks ? (uint32_t)(nchunks - posted < n ? nchunks - posted : n) : 0;
		uint64_t lastq[8];
		int have_last = 0;
		union kinet_dev_wqe w;
		/* A staged write is one WQE, the first of the first round; the
		 * whole group copies its source (impl/stage.cuh). */
		if (posted == 0 && c && nchunks == 1 &&
		    kinet_devi_stage_wanted(qp, x->opcode, x->lkey, x->size))
			kinet_devi_stage_copy_group(g, qp, start, x->laddr, (uint32_t)x->size);
		for (uint32_t i = rank; i < c; i += gsize) {
			kinet_devi_build_chunk(&w, qp, start + i, x, chunk, nchunks, posted + i,
					       kinet_devi_post_sig(qp, start + i, posted + i, total, lsig));
			kinet_dev_wqe_store(qp, start + i, &w);
			if (i == n - 1) {
				kinet_dev_wqe_words(&w, lastq);
				have_last = 1;
			}
		}
		if (t && c < n && rank == 0) { /* the tail closes the last round */
			kinet_devi_build_tail(&w, qp, start + c, t,
					      kinet_devi_post_sig(qp, start + c, posted + c, total, lsig));
			kinet_dev_wqe_store(qp, start + c, &w);
			kinet_dev_wqe_words(&w, lastq);
			have_last = 1;
		}
		/* Every member's WQE stores happen before rank 0's release fence
		 * in kinet_dev_sq_ring (barrier, then a cumulative fence). */
		kinet_devi_group_sync(g);
		if (rank == 0) {
			if (need_last && !have_last) {
				/* the last WQE is chunk posted + n - 1, another lane's */
				kinet_devi_build_chunk(
					&w, qp, start + n - 1, x, chunk, nchunks, posted + n - 1,
					kinet_devi_post_sig(qp, start + n - 1, posted + n - 1, total, lsig));
				kinet_dev_wqe_words(&w, lastq);
				have_last = 1;
			}
			st = kinet_dev_sq_commit(qp, start, n, have_last ? lastq : NULL);
			if (!st)
				kinet_devi_sq_note_signaled(
					qp, kinet_devi_post_sig_end(qp, start, n, posted, total, lsig));
		}
		tk = start + n;
		kinet_devi_group_bcast(g, &st, &tk);
		if (st)
			break;
		posted += n;
	}
	if (ticket)
		*ticket = st ? 0 : tk;
	return st;
}

/* Runs a single-WQE operation as group g: rank 0 posts, all get the result. */
KINET_DEV_FN int kinet_devi_post_tail(int g, struct kinet_dev_qp *qp, const struct kinet_devi_tail *t,
				      uint64_t *ticket)
{
	int st = 0;
	uint64_t tk = 0;
	if (kinet_devi_group_rank(g) == 0)
		st = kinet_devi_post_group(KINET_DEVI_GROUP_THREAD, qp, NULL, t, &tk);
	kinet_devi_group_bcast(g, &st, &tk);
	if (ticket)
		*ticket = tk;
	return st;
}

KINET_DEV_FN void kinet_devi_tail_init(struct kinet_devi_tail *t, uint8_t opcode)
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

KINET_DEV_FN void kinet_devi_xfer_init(struct kinet_devi_xfer *x, uint8_t opcode, uint64_t laddr,
				       uint32_t lkey, uint64_t raddr, uint32_t rkey, uint64_t size,
				       uint32_t imm_be)
{
	x->opcode = opcode;
	x->laddr = laddr;
	x->lkey = lkey;
	x->raddr = raddr;
	x->rkey = rkey;
	x->size = size;
	x->imm_be = imm_be;
}

KINET_DEV_FN void kinet_devi_signal_tail(struct kinet_devi_tail *t, const struct kinet_dev_qp *qp,
					 uint64_t sig_raddr, uint32_t sig_rkey, uint64_t add)
{
	kinet_devi_tail_init(t, KINET_WQE_OP_ATOMIC_FA);
	t->laddr = qp->scratch;
	t->lkey = qp->scratch_lkey;
	t->raddr = sig_raddr;
	t->rkey = sig_rkey;
	t->swap_add = add;
}

/* Completion moderation: a ticket whose WQE (and every later one) asked
 * for no CQE would never complete, so a signalled NOP goes after it (its
 * CQE covers the ticket: completions are in order), as ConnectX users do.
 * *ticket becomes the NOP's: the caller waits for the completion it
 * created, so no CQE of its making is left unconsumed when it returns (a
 * kernel that waited for everything leaves sq_done == sq_reserved).
 * 0, or the NOP post's status (-EIO after an error: the wait reports it). */
KINET_DEV_FN int kinet_devi_sq_cover(struct kinet_dev_qp *qp, uint64_t *ticket)
{
	int scope = kinet_devi_qp_scope(qp);
	uint64_t nop = 0;
	if (qp->sq_signal_every <= 1 || !*ticket)
		return 0;
	if (kinet_devi_scoped_load_acquire_u64(scope, &qp->sq_signaled) >= *ticket ||
	    kinet_devi_scoped_load_acquire_u64(scope, &qp->sq_done) >= *ticket)
		return 0;
	struct kinet_devi_tail t;
	kinet_devi_tail_init(&t, KINET_WQE_OP_NOP);
	int st = kinet_devi_post_group(KINET_DEVI_GROUP_THREAD, qp, NULL, &t, &nop);
	if (!st && nop > *ticket)
		*ticket = nop;
	return st;
}

#endif /* KINET_DEVICE_IMPL_POST_CUH */
