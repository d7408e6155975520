/*
 * moe_dispatch_combine: mixture-of-experts dispatch and combine between the
 * ranks of a job, in kernels (device code in moe.cuh), checked element by
 * element against a CPU reference.
 *
 *   kinetrun -n 2 -- ./moe_dispatch_combine [--tokens T] [--hidden H] [--topk K]
 *                     [--experts E] [--rounds N] [--blocks B] [--threads N]
 *
 * Each rank has T tokens of H bf16 values routed to K of E experts (E / ranks
 * per rank).  Per round: a dispatch kernel sends each token to the ranks of
 * its experts and lays the received tokens out per local expert; an expert
 * kernel scales expert e's rows by 2^(e % 3 - 1); a combine kernel sends the
 * weighted partial sums back and adds them up.  Every round has new tokens
 * and routes, and continues the team's signal rounds (no reset between).
 *
 * Checks on every rank: every expert's rows are exactly the tokens routed to
 * it, from every rank, once each, ordered by source (provenance and bits);
 * every output element is within the bf16 rounding bound of the reference
 * (the reference does the same fp32 operations in the same order, so the
 * outputs are normally bit-identical; the bound allows one bf16 step of each
 * partial and of the sum, what fusing a multiply-add could change).
 *
 * Built twice, as the other device examples: with nvcc (one GPU per rank,
 * KINET_LOCAL_RANK % GPUs) and as C with KINET_HOST_EMU (-emu: blocks are
 * CPU threads).  Exit 0 when every check passed.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <kinet/boot.h>
#include <kinet/kinet.h>
#include <kinet/mesh.h>
#include <kinet/team.h>

#include "moe.cuh"
#include "moe_host.h"

#if !defined(KINET_HOST_EMU)
#include <unistd.h>
#endif

static int rank = -1;

static int fail(const char *what, int err)
{
	fprintf(stderr, "moe_dispatch_combine: rank %d: %s: %s\n", rank, what, kinet_strerror(err));
	return 1;
}

/* Dispatch output against the routes of every rank: exact. */
static long check_dispatch(const struct moe_cfg *c, uint64_t round, const uint32_t *base, const uint64_t *src,
			   const moe_bf16 *ex)
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
static double ulp_bf16(float v)
{
	int e;
	if (v == 0)
		return 0;
	frexpf(v, &e); /* |v| = m * 2^e, m in [0.5, 1) */
	return ldexp(1.0, e - 8);
}

/* Combine output against the reference: within the bound; exact counted. */
static long check_combine(const struct moe_cfg *c, uint64_t round, const moe_bf16 *out, long *exact,
			  double *max_err)
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
				bound += ulp_bf16(part);
				sum = sum + part;
			}
			float ref = moe_from_bf16(moe_to_bf16(sum));
			float got = moe_from_bf16(out[(size_t)t * c->hidden + (size_t)h]);
			double err = fabs((double)got - (double)ref);
			bound += ulp_bf16(ref);
			*exact += got == ref;
			if (err > *max_err)
				*max_err = err;
			bad += !(err <= bound);
		}
	}
	return bad;
}

int main(int argc, char **argv)
{
	struct moe_opts o;
	struct moe_job j;
	struct kinet_boot *boot;
	int rc;

#if !defined(KINET_HOST_EMU)
	int ndev = 0;
	if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
		char emu[4096];
		fprintf(stderr,
			"moe_dispatch_combine: no CUDA device; running the host-emulated build instead\n");
		snprintf(emu, sizeof(emu), "%s-emu", argv[0]);
		execv(emu, argv);
		fprintf(stderr, "moe_dispatch_combine: cannot run %s; run moe_dispatch_combine-emu\n", emu);
		return 77;
	}
#endif
	if ((rc = kinet_boot_init(NULL, &boot)))
		return fail("kinet_boot_init (run under kinetrun, mpirun or srun)", rc);
	rank = kinet_boot_rank(boot);
	if (moe_opts_parse(&o, argc, argv, kinet_boot_size(boot)))
		return 2;
	if ((rc = moe_job_open(&j, boot, &o)))
		return fail("setting up", rc);
	if (rank == 0)
		printf("moe_dispatch_combine: %d ranks on %s; T=%d H=%d k=%d E=%d; %u blocks x %u threads; "
		       "%d rounds\n",
		       j.cfg.ranks, j.where, j.cfg.tokens, j.cfg.hidden, j.cfg.topk, j.cfg.experts, j.blocks,
		       j.threads, o.rounds);
	for (int p = 0; p < j.cfg.ranks; p++)
		printf("moe_dispatch_combine: rank %d reaches rank %d %s\n", rank, p,
		       kinet_team_peer_mapped(j.team, p) ? "with stores (mapped)"
							 : "through its QP (software NIC)");
	long bad_d = 0, bad_c = 0, exact = 0;
	double max_err = 0;
	for (int r = 1; r <= o.rounds && !rc; r++) {
		if ((rc = moe_job_inputs(&j, (uint64_t)r)) || (rc = moe_job_round(&j, (uint64_t)r)) ||
		    (rc = moe_job_fetch(&j)))
			break;
		bad_d += check_dispatch(&j.cfg, (uint64_t)r, j.h_base, j.h_src, j.h_ex);
		bad_c += check_combine(&j.cfg, (uint64_t)r, j.h_out, &exact, &max_err);
	}
	if (rc)
		moe_job_report_error(&j, rc);
	long total = (long)o.rounds * j.cfg.tokens * j.cfg.hidden;
	printf("moe_dispatch_combine: rank %d: dispatch %s, combine %s (%ld of %ld outputs bit-identical to "
	       "the "
	       "reference, largest difference %.3g)\n",
	       rank, rc || bad_d ? "WRONG" : "exact", rc || bad_c ? "WRONG" : "within bf16 rounding", exact,
	       total, max_err);
	int ok = !rc && !bad_d && !bad_c;
	moe_job_close(&j);
	kinet_boot_fini(boot);
	if (ok && rank == 0)
		printf("OK\n");
	return ok ? 0 : 1;
}
