/*
 * moe_dispatch_combine: mixture-of-experts dispatch and combine between the
 * ranks of a job, in kernels (device code in moe.cuh), checked element by
 * element against a CPU reference.
 *
 *   kinetrun -n 2 -- ./moe_dispatch_combine [--tokens T] [--hidden H] [--topk K]
 *                     [--experts E] [--rounds N] [--blocks B] [--threads N] [--layout copy|index]
 *
 * Each rank has T tokens of H bf16 values routed to K of E experts (E / ranks
 * per rank).  Per round: a dispatch kernel sends each token to the ranks of
 * its experts and lays the received tokens out per local expert (copies of
 * the rows, or with --layout index the rows' places in the receive buffer,
 * which the expert kernel gathers from); an expert
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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <kinet/boot.h>
#include <kinet/kinet.h>
#include <kinet/mesh.h>
#include <kinet/team.h>

#include "moe.cuh"
#include "moe_check.h"
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
	if ((rc = moe_job_open(&j, boot, &o, NULL, NULL)))
		return fail("setting up", rc);
	if (rank == 0)
		printf("moe_dispatch_combine: %d ranks on %s; T=%d H=%d k=%d E=%d; %u blocks x %u threads; "
		       "%d rounds; %s layout\n",
		       j.cfg.ranks, j.where, j.cfg.tokens, j.cfg.hidden, j.cfg.topk, j.cfg.experts, j.blocks,
		       j.threads, o.rounds, o.layout == MOE_LAYOUT_COPY ? "copy" : "index");
	for (int p = 0; p < j.cfg.ranks; p++)
		printf("moe_dispatch_combine: rank %d reaches rank %d %s\n", rank, p,
		       kinet_team_peer_mapped(j.team, p) ? "with stores (mapped)"
							 : "through its QP (software NIC)");
	long bad_d = 0, bad_c = 0, exact = 0;
	double max_err = 0;
	for (int r = 1; r <= o.rounds && !rc; r++) {
		if ((rc = moe_job_inputs(&j, (uint64_t)r)) || (rc = moe_job_round(&j, (uint64_t)r, 1)))
			break;
		bad_d += moe_check_dispatch(&j.cfg, (uint64_t)r, j.h_base, j.h_src, j.h_ex);
		bad_c += moe_check_combine(&j.cfg, (uint64_t)r, j.h_out, &exact, &max_err);
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
