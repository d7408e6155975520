/*
 * mesh_write: one program, several processes.  Each rank writes its
 * signature into a slot of every rank's buffer (its own included) over the
 * QPs of a mesh, waits for the completions, and after a barrier checks that
 * every rank's signature arrived.
 *
 * Run it under a launcher, which gives each process its rank:
 *   kinetrun -n 2 -- ./mesh_write
 *   mpirun -n 2 -x KINET_ROOT=host0:29500 ./mesh_write     (Open MPI)
 *   srun -n 2 --export=ALL,KINET_ROOT=host0:29500 ./mesh_write
 * where host0 is where rank 0 runs (kinetrun sets KINET_ROOT itself).
 * Ranks on one host talk over shared memory, ranks on other hosts over
 * libfabric.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <kinet/boot.h>
#include <kinet/kinet.h>
#include <kinet/mesh.h>

static int rank = -1;

static int fail(const char *what, int err)
{
	fprintf(stderr, "mesh_write: rank %d: %s: %s\n", rank, what, kinet_strerror(err));
	return 1;
}

static uint64_t signature(int r)
{
	return 0x6b696e6574000000ull + (uint64_t)r;
}

/* The completion of the write to peer, waited for at most 10 s. */
static int wait_write(struct kinet_cq *cq)
{
	struct timespec now, end;
	struct kinet_wc wc;

	timespec_get(&end, TIME_UTC);
	end.tv_sec += 10;
	do {
		int n = kinet_cq_poll(cq, 1, &wc);

		if (n < 0)
			return fail("kinet_cq_poll", n);
		if (n == 1 && wc.status)
			fprintf(stderr, "mesh_write: rank %d: write failed: %s\n", rank,
				kinet_wc_status_str(wc.status));
		if (n == 1)
			return wc.status ? 1 : 0;
		timespec_get(&now, TIME_UTC);
	} while (now.tv_sec < end.tv_sec || (now.tv_sec == end.tv_sec && now.tv_nsec < end.tv_nsec));
	return fail("waiting for a completion", -ETIMEDOUT);
}

int main(void)
{
	struct kinet_boot *boot;
	struct kinet_ctx_attr cattr;
	struct kinet_ctx *ctx;
	struct kinet_mesh_attr mattr;
	struct kinet_mesh *mesh;
	struct kinet_mr *mr;
	struct kinet_mr_info *all;
	uint64_t *slots, mine;
	int nranks, rc, bad = 0;

	/* Rank, size and rank 0's address from the launcher's variables. */
	if ((rc = kinet_boot_init(NULL, &boot)))
		return fail("kinet_boot_init (run under kinetrun, mpirun or srun)", rc);
	rank = kinet_boot_rank(boot);
	nranks = kinet_boot_size(boot);

	kinet_ctx_attr_init(&cattr);
	if ((rc = kinet_ctx_open(&cattr, &ctx)))
		return fail("kinet_ctx_open", rc);
	/* slots[r]: where rank r writes its signature. */
	slots = calloc((size_t)nranks, sizeof(*slots));
	all = calloc((size_t)nranks, sizeof(*all));
	if (!slots || !all)
		return fail("calloc", -ENOMEM);
	if ((rc = kinet_mr_reg(ctx, slots, (size_t)nranks * sizeof(*slots),
			       KINET_ACCESS_LOCAL_WRITE | KINET_ACCESS_REMOTE_WRITE, &mr)))
		return fail("kinet_mr_reg", rc);

	/* One QP to every rank, connected in one collective call; then every
	 * rank's buffer address and rkey. */
	kinet_mesh_attr_init(&mattr);
	mattr.with_recv = 0;
	if ((rc = kinet_mesh_create(ctx, boot, &mattr, &mesh)))
		return fail("kinet_mesh_create", rc);
	if ((rc = kinet_mesh_exchange_mr(boot, mr, all)))
		return fail("kinet_mesh_exchange_mr", rc);

	mine = signature(rank);
	struct kinet_mr *src;
	if ((rc = kinet_mr_reg(ctx, &mine, sizeof(mine), KINET_ACCESS_LOCAL_WRITE, &src)))
		return fail("kinet_mr_reg", rc);
	for (int peer = 0; peer < nranks; peer++) {
		struct kinet_sge sge = {(uint64_t)(uintptr_t)&mine, sizeof(mine), kinet_mr_lkey(src)};
		struct kinet_send_wr wr = {.wr_id = (uint64_t)peer,
					   .opcode = KINET_WR_RDMA_WRITE,
					   .send_flags = KINET_SEND_SIGNALED,
					   .sg_list = &sge,
					   .num_sge = 1,
					   .remote_addr = all[peer].addr + (uint64_t)rank * sizeof(*slots),
					   .rkey = all[peer].rkey};

		if ((rc = kinet_qp_post_send(kinet_mesh_qp(mesh, peer, 0), &wr, 1, NULL)))
			return fail("kinet_qp_post_send", rc);
		if (wait_write(kinet_mesh_send_cq(mesh, peer, 0)))
			return 1;
	}
	/* Every rank's writes are complete once every rank is here. */
	if ((rc = kinet_boot_barrier(boot)))
		return fail("kinet_boot_barrier", rc);
	for (int r = 0; r < nranks; r++)
		bad += slots[r] != signature(r);
	printf("mesh_write: rank %d of %d: %s\n", rank, nranks,
	       bad ? "MISSING WRITES" : "a write from every rank arrived");

	/* No rank may still target this rank's QPs or memory when they go. */
	kinet_boot_barrier(boot);
	kinet_mesh_destroy(mesh);
	kinet_mr_dereg(src);
	kinet_mr_dereg(mr);
	kinet_ctx_close(ctx);
	kinet_boot_fini(boot);
	free(slots);
	free(all);
	return bad ? 1 : 0;
}
