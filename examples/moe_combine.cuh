/*
 * MoE combine (moe.cuh): one kernel, three phases per block.
 *
 *  1. Partials: for every source rank s, block b takes its share of the
 *     tokens s dispatched here (slots [j0, j1)); warp w computes, for slot
 *     j, the sum over the token's experts on this rank of weight * output
 *     (fp32 in expert order, rounded once to bf16) and stores it at slot j
 *     of s's combine buffer for this rank (mapped), or stages it.
 *  2. Signals: warp s puts the block's staged range for s (one put) and
 *     signals s with the block's share of the round.
 *  3. Reduce: every block waits for every expert rank; the grid's warps
 *     add, for each of this rank's tokens, the partials of the ranks it
 *     went to (in rank order, fp32), rounded to bf16 into out.
 */
#ifndef KINET_EXAMPLE_MOE_COMBINE_CUH
#define KINET_EXAMPLE_MOE_COMBINE_CUH

/* Row j's partial, 8 values (one 16-byte word) per lane at a time. */
KINET_DEV_FN void moe_partial_row(const struct moe_args *a, const struct moe_meta *m, int s,
				  const uint32_t *ebase, const uint32_t *sbase, moe_bf16 *dst, uint32_t v0,
				  uint32_t v1)
{
	const struct moe_cfg *c = &a->cfg;
	const int EL = moe_local_experts(c), me = c->rank;
	const moe_bf16 *rows[MOE_KMAX];
	float w[MOE_KMAX];
	int n = 0;
	for (int q = 0; q < m->topk; q++) {
		int e = m->expert[q] - me * EL;
		if (e < 0 || e >= EL)
			continue;
		uint64_t row = (uint64_t)ebase[e] + sbase[s * EL + e] + m->epos[q];
		rows[n] = a->expert_y + row * (uint64_t)c->hidden;
		w[n++] = m->weight[q];
	}
	for (uint32_t v = v0 + MOE_LANE; v < v1; v += MOE_WARP_SIZE) {
		float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
		for (int q = 0; q < n; q++) {
			union moe_vec y = moe_load16(rows[q] + (size_t)v * 8);
			for (int i = 0; i < 8; i++)
				acc[i] = moe_fadd(acc[i], moe_fmul(w[q], moe_from_bf16(y.h[i])));
		}
		union moe_vec o;
		for (int i = 0; i < 8; i++)
			o.h[i] = moe_to_bf16(acc[i]);
		moe_store16(dst + (size_t)v * 8, o);
	}
}

KINET_DEV_FN void moe_combine_block(const struct moe_args *a)
{
	const struct kinet_dev_team *team = a->team;
	const struct moe_cfg *c = &a->cfg;
	const struct moe_layout *l = &a->lay;
	const uint32_t b = kinet_dev_block_id(), nb = kinet_dev_grid_blocks();
	const int R = c->ranks, me = c->rank, T = c->tokens, EL = moe_local_experts(c), H = c->hidden;
	MOE_SHARED(uint32_t ebase[MOE_MAX_EXPERTS + 1]);
	MOE_SHARED(uint32_t sbase[MOE_MAX_EXPERTS]);
	MOE_SHARED(uint32_t cnt[MOE_MAX_RANKS]);

	/* The layout dispatch made (headers of this round are still here). */
	for (int e = (int)MOE_TID; e < EL; e += (int)MOE_NTHREADS) {
		uint32_t run = 0;
		for (int s = 0; s < R; s++) {
			sbase[s * EL + e] = run;
			run += ((const uint32_t *)kinet_dev_team_ptr(
				team, l->recv_hdr + (uint64_t)s * l->hdr))[4 + e];
		}
	}
	for (int e = (int)MOE_TID; e <= EL; e += (int)MOE_NTHREADS)
		ebase[e] = a->expert_base[e];
	for (int s = (int)MOE_TID; s < R; s += (int)MOE_NTHREADS)
		cnt[s] = *(const uint32_t *)kinet_dev_team_ptr(team, l->recv_hdr + (uint64_t)s * l->hdr);
	moe_sync();

	/* 1. partials of this block's slots of every source, a (slot, piece)
	 * per warp at a time */
	const uint32_t vecs = (uint32_t)H / 8;
	for (int i = 0; i < R; i++) {
		int s = (me + 1 + (int)b + i) % R;
		uint32_t per = (cnt[s] + nb - 1) / nb, j0 = b * per < cnt[s] ? b * per : cnt[s];
		uint32_t j1 = j0 + per < cnt[s] ? j0 + per : cnt[s];
		uint32_t pc = moe_pieces(j1 - j0, vecs), v0, v1;
		for (uint32_t it = MOE_WARP_ID; it < (j1 - j0) * pc; it += MOE_NWARPS) {
			uint32_t j = j0 + it / pc;
			uint64_t at = (uint64_t)s * T + j;
			const struct moe_meta *m = (const struct moe_meta *)kinet_dev_team_ptr(
				team, l->recv_meta + at * sizeof(struct moe_meta));
			uint64_t back = l->comb_recv + ((uint64_t)me * T + j) * l->row;
			moe_bf16 *dst = (moe_bf16 *)kinet_dev_team_peer_ptr(team, s, back);
			if (!dst)
				dst = (moe_bf16 *)kinet_dev_team_ptr(team, l->comb_stage + at * l->row);
			moe_piece(vecs, it % pc, pc, &v0, &v1);
			moe_partial_row(a, m, s, ebase, sbase, dst, v0, v1);
		}
	}
	moe_sync();

	/* 2. staged ranges and signals */
	for (int s = (int)MOE_WARP_ID; s < R; s += (int)MOE_NWARPS) {
		uint32_t per = (cnt[s] + nb - 1) / nb, j0 = b * per < cnt[s] ? b * per : cnt[s];
		uint32_t j1 = j0 + per < cnt[s] ? j0 + per : cnt[s];
		if (j1 > j0 && !kinet_dev_team_peer_ptr(team, s, 0))
			MOE_TRY(a, kinet_dev_team_put_warp(team, s,
							   l->comb_recv + ((uint64_t)me * T + j0) * l->row,
							   l->comb_stage + ((uint64_t)s * T + j0) * l->row,
							   (uint64_t)(j1 - j0) * l->row));
		MOE_TRY(a,
			kinet_dev_team_signal_warp(team, s, MOE_SLOT_COMBINE, kinet_dev_team_share(b, nb)));
	}

	/* 3. every expert rank's partials in, then the weighted sums */
	int wst = 0;
	for (int p = 0; p < R && !wst; p++)
		wst = kinet_dev_team_wait_until_block(team, MOE_SLOT_COMBINE, p,
						      a->epoch * KINET_DEV_TEAM_EPOCH, NULL);
	if (wst) {
		MOE_TRY(a, wst);
		return;
	}
	uint64_t gw = (uint64_t)b * MOE_NWARPS + MOE_WARP_ID, nw = (uint64_t)nb * MOE_NWARPS;
	for (uint64_t t = gw; t < (uint64_t)T; t += nw) {
		const moe_bf16 *part[MOE_MAX_RANKS];
		int n = 0;
		for (int p = 0; p < R; p++) {
			int s = a->slot_of[t * (uint64_t)R + (uint64_t)p];
			if (s >= 0)
				part[n++] = (const moe_bf16 *)kinet_dev_team_ptr(
					team, l->comb_recv + ((uint64_t)p * T + (uint64_t)s) * l->row);
		}
		for (int v = (int)MOE_LANE; v < H / 8; v += (int)MOE_WARP_SIZE) {
			float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
			for (int q = 0; q < n; q++) {
				union moe_vec y = moe_load16(part[q] + (size_t)v * 8);
				for (int i = 0; i < 8; i++)
					acc[i] = moe_fadd(acc[i], moe_from_bf16(y.h[i]));
			}
			union moe_vec o;
			for (int i = 0; i < 8; i++)
				o.h[i] = moe_to_bf16(acc[i]);
			moe_store16(a->out + t * (uint64_t)H + (uint64_t)v * 8, o);
		}
	}
	if (b == 0)
		for (int p = (int)MOE_WARP_ID; p < R; p += (int)MOE_NWARPS)
			if (!kinet_dev_team_peer_ptr(team, p, 0))
				MOE_TRY(a, kinet_dev_team_quiet_warp(team, p));
}

#endif /* KINET_EXAMPLE_MOE_COMBINE_CUH */
