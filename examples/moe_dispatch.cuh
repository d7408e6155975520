/*
 * MoE dispatch (moe.cuh): one kernel, four phases per block.
 *
 *  1. Slots: block b owns tokens [t0, t1).  It counts its tokens per rank
 *     and per expert (shared counters), publishes the counts (hist[b],
 *     then flags[b] = epoch), sums those of the blocks before it, and
 *     hands its own tokens their slots and expert indices from there: its
 *     slots for rank p are one contiguous range [dbase[p], dcnt[p]), and
 *     the last block ends with the totals.
 *  2. Tokens: warp w copies tokens t0 + w, t0 + w + warps, ... to each rank
 *     they go to: into that rank's receive buffer when it is mapped, else
 *     into the staging area (same layout).
 *  3. Signals: warp p (and p + warps, ...) puts the block's staged range
 *     for rank p (one put each for rows and records), the last block adds
 *     the header (counts), and every block signals every rank with its
 *     share of the round.
 *  4. Layout: every block waits for every source, reads the headers, and
 *     the grid's warps place each received token in the rows of its local
 *     experts: row = expert_base[e] + (tokens of e from earlier sources) +
 *     the token's index among its source's tokens of e; the row is a copy
 *     (MOE_LAYOUT_COPY) or the index of the received token (_INDEX).
 */
#ifndef KINET_EXAMPLE_MOE_DISPATCH_CUH
#define KINET_EXAMPLE_MOE_DISPATCH_CUH

static __host__ __device__ inline uint64_t moe_dest_mask(const struct moe_cfg *c, const int32_t *idx)
{
	uint64_t m = 0;
	for (int j = 0; j < c->topk; j++)
		m |= 1ull << moe_owner(c, idx[j]);
	return m;
}

KINET_DEV_FN void moe_token_range(const struct moe_cfg *c, uint32_t b, uint32_t nb, int *t0, int *t1)
{
	int per = (c->tokens + (int)nb - 1) / (int)nb;
	*t0 = (int)b * per < c->tokens ? (int)b * per : c->tokens;
	*t1 = *t0 + per < c->tokens ? *t0 + per : c->tokens;
}

/* The record of token t for its receivers, written by one lane. */
KINET_DEV_FN void moe_meta_write(const struct moe_args *a, int t, struct moe_meta *dst)
{
	const struct moe_cfg *c = &a->cfg;
	struct moe_meta m;
	memset(&m, 0, sizeof(m));
	m.token = t;
	m.topk = c->topk;
	for (int j = 0; j < c->topk; j++) {
		m.expert[j] = a->topk_idx[(size_t)t * c->topk + j];
		m.weight[j] = a->topk_w[(size_t)t * c->topk + j];
		m.epos[j] = a->epos[(size_t)t * c->topk + j];
	}
	*dst = m;
}

KINET_DEV_FN void moe_dispatch_block(const struct moe_args *a)
{
	const struct kinet_dev_team *team = a->team;
	const struct moe_cfg *c = &a->cfg;
	const struct moe_layout *l = &a->lay;
	const uint32_t b = kinet_dev_block_id(), nb = kinet_dev_grid_blocks();
	const int R = c->ranks, me = c->rank, k = c->topk, T = c->tokens, EL = moe_local_experts(c);
	MOE_SHARED(int dcnt[MOE_MAX_RANKS]);
	MOE_SHARED(int dbase[MOE_MAX_RANKS]);
	MOE_SHARED(int ecnt[MOE_MAX_EXPERTS]);
	int t0, t1;
	moe_token_range(c, b, nb, &t0, &t1);

	/* 1. slots: this block's counts per rank and expert, published for the
	 * blocks after it; the counts of the blocks before it summed (the start
	 * of its ranges); then its tokens' slots and expert indices */
	MOE_SHARED(int failed);
	const int cols = R + c->experts;
	for (int i = (int)MOE_TID; i < R; i += (int)MOE_NTHREADS)
		dcnt[i] = 0;
	for (int i = (int)MOE_TID; i < c->experts; i += (int)MOE_NTHREADS)
		ecnt[i] = 0;
	if (MOE_TID == 0)
		failed = 0;
	moe_sync();
	for (int t = t0 + (int)MOE_TID; t < t1; t += (int)MOE_NTHREADS) {
		const int32_t *idx = &a->topk_idx[(size_t)t * k];
		uint64_t m = moe_dest_mask(c, idx);
		for (int j = 0; j < k; j++)
			moe_add(&ecnt[idx[j]], 1);
		for (int p = 0; p < R; p++)
			if (m >> p & 1)
				moe_add(&dcnt[p], 1);
	}
	moe_sync();
	uint32_t *mine = a->hist + (size_t)b * (size_t)cols;
	for (int i = (int)MOE_TID; i < cols; i += (int)MOE_NTHREADS)
		mine[i] = (uint32_t)(i < R ? dcnt[i] : ecnt[i - R]);
	moe_sync();
	if (MOE_TID == 0)
		moe_flag_publish(&a->flags[b], a->epoch);
	for (uint32_t i = MOE_TID; i < b; i += MOE_NTHREADS)
		if (moe_flag_wait(&a->flags[i], a->epoch))
			failed = 1;
	moe_sync();
	if (failed) {
		MOE_TRY(a, -ETIMEDOUT);
		return;
	}
	for (int col = (int)MOE_TID; col < cols; col += (int)MOE_NTHREADS) {
		uint32_t sum = 0;
		for (uint32_t i = 0; i < b; i++)
			sum += ((const volatile uint32_t *)a->hist)[(size_t)i * (size_t)cols + (size_t)col];
		if (col < R)
			dcnt[col] = dbase[col] = (int)sum;
		else
			ecnt[col - R] = (int)sum;
	}
	moe_sync();
	for (int t = t0 + (int)MOE_TID; t < t1; t += (int)MOE_NTHREADS) {
		const int32_t *idx = &a->topk_idx[(size_t)t * k];
		uint64_t m = moe_dest_mask(c, idx);
		for (int j = 0; j < k; j++)
			a->epos[(size_t)t * k + j] = (uint32_t)moe_add(&ecnt[idx[j]], 1);
		for (int p = 0; p < R; p++)
			a->slot_of[(size_t)t * R + p] = m >> p & 1 ? moe_add(&dcnt[p], 1) : -1;
	}
	moe_sync();

	/* 2. tokens (slots and records of this block's own tokens are its own
	 * writes, ordered by the barrier above): one (token, rank, piece) per
	 * warp at a time, the ranks of a token and the pieces of a row on
	 * different warps */
	const uint32_t vecs = (uint32_t)(l->row / 16), items = (uint32_t)(t1 - t0) * (uint32_t)R;
	const uint32_t pc = moe_pieces(items, vecs);
	for (uint32_t it = MOE_WARP_ID; it < items * pc; it += MOE_NWARPS) {
		uint32_t q = it % pc, v0, v1;
		int t = t0 + (int)(it / pc / (uint32_t)R), i = (int)(it / pc % (uint32_t)R);
		int p = (me + 1 + t + i) % R; /* the warps spread over the ranks */
		int s = a->slot_of[(size_t)t * R + p];
		if (s < 0)
			continue;
		const uint8_t *src = (const uint8_t *)kinet_dev_team_ptr(team, l->x + (uint64_t)t * l->row);
		uint64_t at = (uint64_t)me * T + (uint64_t)s;
		uint8_t *dx = (uint8_t *)kinet_dev_team_peer_ptr(team, p, l->recv_x + at * l->row);
		struct moe_meta *dm = (struct moe_meta *)kinet_dev_team_peer_ptr(
			team, p, l->recv_meta + at * sizeof(struct moe_meta));
		if (!dx) { /* through the QP: stage, sent in phase 3 */
			uint64_t st = (uint64_t)p * T + (uint64_t)s;
			dx = (uint8_t *)kinet_dev_team_ptr(team, l->stage_x + st * l->row);
			dm = (struct moe_meta *)kinet_dev_team_ptr(team, l->stage_meta + st * sizeof(*dm));
		}
		moe_piece(vecs, q, pc, &v0, &v1);
		kinet_dev_coll_copy_warp(dx + (uint64_t)v0 * 16, src + (uint64_t)v0 * 16,
					 (uint64_t)(v1 - v0) * 16);
		if (q == 0 && MOE_LANE == 0)
			moe_meta_write(a, t, dm);
	}
	moe_sync();

	/* 3. staged ranges, header, signals */
	for (int p = (int)MOE_WARP_ID; p < R; p += (int)MOE_NWARPS) {
		uint64_t lo = (uint64_t)dbase[p], n = (uint64_t)(dcnt[p] - dbase[p]);
		uint64_t at = (uint64_t)me * T + lo, st = (uint64_t)p * T + lo;
		int mapped = kinet_dev_team_peer_ptr(team, p, 0) != NULL;
		if (!mapped && n) {
			MOE_TRY(a, kinet_dev_team_put_warp(team, p, l->recv_x + at * l->row,
							   l->stage_x + st * l->row, n * l->row));
			MOE_TRY(a,
				kinet_dev_team_put_warp(team, p, l->recv_meta + at * sizeof(struct moe_meta),
							l->stage_meta + st * sizeof(struct moe_meta),
							n * sizeof(struct moe_meta)));
		}
		if (b == nb - 1) {
			/* The header: this block saw every token (t1 == T). */
			uint64_t dst = l->recv_hdr + (uint64_t)me * l->hdr;
			uint32_t *h =
				(uint32_t *)(mapped ? kinet_dev_team_peer_ptr(team, p, dst)
						    : kinet_dev_team_ptr(team, l->stage_hdr +
										       (uint64_t)p * l->hdr));
			for (int e = (int)MOE_LANE; e < EL; e += (int)MOE_WARP_SIZE)
				h[4 + e] = (uint32_t)ecnt[p * EL + e];
			if (MOE_LANE == 0)
				h[0] = (uint32_t)dcnt[p];
			if (!mapped)
				MOE_TRY(a,
					kinet_dev_team_put_warp(team, p, dst,
								l->stage_hdr + (uint64_t)p * l->hdr, l->hdr));
		}
		MOE_TRY(a,
			kinet_dev_team_signal_warp(team, p, MOE_SLOT_DISPATCH, kinet_dev_team_share(b, nb)));
	}

	/* 4. every source in, then the layout per local expert */
	MOE_SHARED(uint32_t ebase[MOE_MAX_EXPERTS + 1]);
	MOE_SHARED(uint32_t sbase[MOE_MAX_EXPERTS]); /* [source][local expert] */
	MOE_SHARED(uint32_t cpre[MOE_MAX_RANKS + 1]);
	int wst = 0; /* the same in every thread (the block form broadcasts it) */
	for (int s = 0; s < R && !wst; s++)
		wst = kinet_dev_team_wait_until_block(team, MOE_SLOT_DISPATCH, s,
						      a->epoch * KINET_DEV_TEAM_EPOCH, NULL);
	if (wst) {
		MOE_TRY(a, wst);
		return; /* data that did not arrive is not laid out */
	}
	for (int e = (int)MOE_TID; e < EL; e += (int)MOE_NTHREADS) {
		uint32_t run = 0;
		for (int s = 0; s < R; s++) {
			const uint32_t *h = (const uint32_t *)kinet_dev_team_ptr(
				team, l->recv_hdr + (uint64_t)s * l->hdr);
			sbase[s * EL + e] = run;
			run += h[4 + e];
		}
		ebase[e + 1] = run; /* this expert's total, summed below */
	}
	moe_sync();
	if (MOE_TID == 0) {
		ebase[0] = 0;
		for (int e = 0; e < EL; e++)
			ebase[e + 1] += ebase[e];
		cpre[0] = 0;
		for (int s = 0; s < R; s++)
			cpre[s + 1] = cpre[s] + *(const uint32_t *)kinet_dev_team_ptr(
							team, l->recv_hdr + (uint64_t)s * l->hdr);
	}
	moe_sync();
	if (b == 0)
		for (int e = (int)MOE_TID; e <= EL; e += (int)MOE_NTHREADS)
			a->expert_base[e] = ebase[e];
	uint64_t gw = (uint64_t)b * MOE_NWARPS + MOE_WARP_ID, nw = (uint64_t)nb * MOE_NWARPS;
	for (uint64_t i = gw; i < cpre[R]; i += nw) {
		int s = 0;
		while (i >= cpre[s + 1])
			s++;
		uint64_t j = i - cpre[s], at = (uint64_t)s * T + j;
		const struct moe_meta *m = (const struct moe_meta *)kinet_dev_team_ptr(
			team, l->recv_meta + at * sizeof(struct moe_meta));
		const void *src = kinet_dev_team_ptr(team, l->recv_x + at * l->row);
		for (int q = 0; q < m->topk; q++) {
			int e = m->expert[q] - me * EL;
			if (e < 0 || e >= EL)
				continue;
			uint64_t row = (uint64_t)ebase[e] + sbase[s * EL + e] + m->epos[q];
			if (c->layout == MOE_LAYOUT_COPY)
				kinet_dev_coll_copy_warp(a->expert_x + row * (uint64_t)c->hidden, src,
							 l->row);
			if (MOE_LANE == 0) {
				a->expert_src[row] = ((uint64_t)s << 32) | (uint32_t)m->token;
				a->expert_at[row] = (uint32_t)at;
			}
		}
	}
	/* Sends through QPs complete (errors show here, not at the next round). */
	if (b == 0)
		for (int p = (int)MOE_WARP_ID; p < R; p += (int)MOE_NWARPS)
			if (!kinet_dev_team_peer_ptr(team, p, 0))
				MOE_TRY(a, kinet_dev_team_quiet_warp(team, p));
}

#endif /* KINET_EXAMPLE_MOE_DISPATCH_CUH */
