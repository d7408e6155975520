/*
 * Checks of the MoE example's results against a CPU reference (moe.cuh):
 * the dispatch layout exactly, the combine output within the bf16 rounding
 * bound.  Host code, shared by moe_dispatch_combine.cu and kinet's
 * all-to-all benchmark.
 */
#ifndef KINET_EXAMPLE_MOE_CHECK_H
#define KINET_EXAMPLE_MOE_CHECK_H

#include <math.h>
#include <stdlib.h>

#include "moe.cuh"

/* Dispatch output against the routes of every rank: exact. */
static inline long moe_check_dispatch(const struct moe_cfg *c, uint64_t round, const uint32_t *base,
				      const uint64_t *src, const moe_bf16 *ex)
{
	const int EL = moe_local_experts(c);
	long bad = 0;
	int32_t idx[MOE_KMAX];
	float w[MOE_KMAX];
	/* want[e]: rows expert e must get; seen per (source, token, expert) */
	uint64_t rows = 0;
	uint8_t *seen = (uint8_t *)calloc((size_t)c->ranks * (size_t)c->tokens * (size_t)EL, 1);
	if (!seen)
		return 1;
	for (int s = 0; s < c->ranks; s++)
		for (int t = 0; t < c->tokens; t++) {
			moe_gen_route(c, s, round, t, idx, w);
			for (int j = 0; j < c->topk; j++)
				rows += moe_owner(c, idx[j]) == c->rank;
		}
	bad += base[0] != 0 || base[EL] != rows;
	for (int e = 0; e < EL && !bad; e++) {
		int last_src = 0;
		for (uint64_t r = base[e]; r < base[e + 1] && r < rows; r++) {
			int s = (int)(src[r] >> 32), t = (int)(uint32_t)src[r], hit = 0;
			if (s < 0 || s >= c->ranks || t < 0 || t >= c->tokens || s < last_src) {
				bad++;
				continue;
			}
			last_src = s;
			moe_gen_route(c, s, round, t, idx, w);
			for (int j = 0; j < c->topk; j++)
				hit |= idx[j] == c->rank * EL + e;
			uint8_t *sn = &seen[((size_t)s * c->tokens + (size_t)t) * EL + (size_t)e];
			bad += !hit || *sn;
			*sn = 1;
			for (int h = 0; h < c->hidden; h++)
				bad += ex[r * (uint64_t)c->hidden + (uint64_t)h] != moe_gen_x(s, round, t, h);
		}
	}
	free(seen);
	return bad;
}

/* bf16 step at |v| (0 for 0). */
static inline double moe_ulp_bf16(float v)
{
	int e;
	if (v == 0)
		return 0;
	frexpf(v, &e); /* |v| = m * 2^e, m in [0.5, 1) */
	return ldexp(1.0, e - 8);
}

/* Combine output against the reference: within the bound; exact counted. */
static inline long moe_check_combine(const struct moe_cfg *c, uint64_t round, const moe_bf16 *out,
				     long *exact, double *max_err)
{
	long bad = 0;
	int32_t idx[MOE_KMAX];
	float w[MOE_KMAX];
	for (int t = 0; t < c->tokens; t++) {
		moe_gen_route(c, c->rank, round, t, idx, w);
		for (int h = 0; h < c->hidden; h++) {
			float x = moe_from_bf16(moe_gen_x(c->rank, round, t, h)), sum = 0;
			double bound = 0;
			for (int p = 0; p < c->ranks; p++) {
				float acc = 0;
				int any = 0;
				for (int j = 0; j < c->topk; j++) {
					if (moe_owner(c, idx[j]) != p)
						continue;
					float y = moe_from_bf16(moe_to_bf16(x * moe_expert_scale(idx[j])));
					acc = acc + w[j] * y;
					any = 1;
				}
				if (!any)
					continue;
				float part = moe_from_bf16(moe_to_bf16(acc));
				bound += moe_ulp_bf16(part);
				sum = sum + part;
			}
			float ref = moe_from_bf16(moe_to_bf16(sum));
			float got = moe_from_bf16(out[(size_t)t * c->hidden + (size_t)h]);
			double err = fabs((double)got - (double)ref);
			bound += moe_ulp_bf16(ref);
			*exact += got == ref;
			if (err > *max_err)
				*max_err = err;
			bad += !(err <= bound);
		}
	}
	return bad;
}

#endif /* KINET_EXAMPLE_MOE_CHECK_H */
