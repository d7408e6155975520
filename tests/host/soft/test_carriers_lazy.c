/*
 * Carriers open on first need: a one-process program (local QPs only) opens
 * no shared-memory inbox and no socket; a rank of a job, a forced
 * $KINET_TRANSPORT and KINET_CARRIERS=always open what they need.  A carrier
 * opened on a guess that fails logs no error line; one that was asked for
 * does.  Each case uses its own context (carriers belong to a context).
 */
#include <dirent.h>

#include "kt_host.h"

static const char *const job_vars[] = {
	"KINET_NRANKS",
	"OMPI_COMM_WORLD_SIZE",
	"PMI_SIZE",
	"SLURM_NTASKS",
	"SLURM_NNODES",
	"KINET_LOCAL_SIZE",
	"OMPI_COMM_WORLD_LOCAL_SIZE",
	"MPI_LOCALNRANKS",
	"KINET_TRANSPORT",
	"KINET_CARRIERS",
	"KINET_OFI_PROVIDER",
};

static void env_clear(void)
{
	for (size_t i = 0; i < sizeof(job_vars) / sizeof(job_vars[0]); i++)
		unsetenv(job_vars[i]);
}

/* Sockets among this process's open files. */
static int count_sockets(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d))) {
		char path[300], target[300];
		ssize_t len;

		snprintf(path, sizeof(path), "/proc/self/fd/%s", e->d_name);
		len = readlink(path, target, sizeof(target) - 1);
		if (len > 0) {
			target[len] = 0;
			n += !strncmp(target, "socket:", 7);
		}
	}
	closedir(d);
	return n;
}

/* Distinct kinet inboxes (/dev/shm/kinet-*) mapped in this process (a
 * context maps its own, and maps it again to send to itself). */
static int count_inboxes(void)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512], seen[16][128];
	int n = 0;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		const char *name = strstr(line, "/dev/shm/kinet-");
		int i;

		if (!name)
			continue;
		for (i = 0; i < n && strncmp(seen[i], name, sizeof(seen[i]) - 1); i++)
			;
		if (i == n && n < 16)
			snprintf(seen[n++], sizeof(seen[0]), "%s", name);
	}
	fclose(f);
	return n;
}

struct opened {
	int inboxes, sockets;
};

/* Opens a context and a loopback pair (kinet_qp_info, connect), moves 4 KiB,
 * and reports what the context opened on the way. */
static int pair_run(struct opened *o)
{
	struct kinet_ctx *ctx;
	struct kt_pair p;
	struct kt_buf src, dst;
	struct kinet_wc wc;
	int inboxes = count_inboxes(), sockets = count_sockets(), rc;

	if ((rc = kt_ctx_open(1, &ctx)))
		return rc;
	rc = kt_pair_create(&p, ctx, ctx, NULL);
	if (!rc && !(rc = kt_buf_alloc(ctx, &src, 4096, KT_ACC_ALL, 0x5a))) {
		if (!(rc = kt_buf_alloc(ctx, &dst, 4096, KT_ACC_ALL, 0))) {
			struct kinet_sge s = kt_sge(&src, 0, 4096);
			struct kinet_send_wr wr = kt_wr(7, KINET_WR_RDMA_WRITE, KINET_SEND_SIGNALED, &s, 1,
							kt_addr(&dst, 0), kt_rkey(&dst));

			rc = kt_post(p.qp[0], &wr);
			if (!rc)
				rc = kt_poll1(p.cq[0], &wc);
			if (!rc)
				rc = kt_wc_expect(&wc, 7, 0);
			if (!rc && !kt_mem_is(dst.p, 0x5a, 4096))
				rc = -EIO;
			o->inboxes = count_inboxes() - inboxes;
			o->sockets = count_sockets() - sockets;
			kt_buf_free(&dst);
		}
		kt_buf_free(&src);
	}
	kt_pair_destroy(&p);
	kinet_ctx_close(ctx);
	return rc;
}

KT_TEST(one_process_opens_nothing)
{
	struct opened o;

	env_clear();
	KT_CHECK(count_sockets() >= 0 && count_inboxes() >= 0);
	/* A first context absorbs what the process opens once, not per
	 * context: on a GPU machine a socket appeared in the first run of a
	 * CUDA build (its first registration asks the CUDA runtime what the
	 * memory is, which starts the driver).  A carrier belongs to its
	 * context and would open again. */
	KT_OK(pair_run(&o));
	KT_OK(pair_run(&o));
	KT_CHECK_EQ(o.inboxes, 0);
	KT_CHECK_EQ(o.sockets, 0);
}

/* All ranks on this host: the inbox, and no fabric endpoint. */
KT_TEST(local_job_opens_node)
{
	struct opened o;

	env_clear();
	setenv("KINET_NRANKS", "2", 1);
	setenv("KINET_LOCAL_SIZE", "2", 1);
	KT_OK(pair_run(&o));
	KT_CHECK_EQ(o.inboxes, 1);
	KT_CHECK_EQ(o.sockets, 0);
	env_clear();
}

KT_TEST(forced_node_opens_node)
{
	struct opened o;

	env_clear();
	setenv("KINET_TRANSPORT", "node", 1);
	KT_OK(pair_run(&o));
	KT_CHECK_EQ(o.inboxes, 1);
	KT_CHECK_EQ(o.sockets, 0);
	env_clear();
}

/* Processes paired by hand, without a launcher. */
KT_TEST(always_opens_node)
{
	struct opened o;

	env_clear();
	setenv("KINET_CARRIERS", "always", 1);
	setenv("KINET_OFI_PROVIDER", "tcp;ofi_rxm", 1);
	KT_OK(pair_run(&o));
	KT_CHECK_EQ(o.inboxes, 1);
	env_clear();
}

/* Ranks that may span hosts: the fabric endpoint too. */
KT_TEST(job_opens_ofi)
{
#ifdef KINET_TEST_HAVE_OFI
	struct opened o;

	env_clear();
	setenv("OMPI_COMM_WORLD_SIZE", "2", 1);
	setenv("KINET_OFI_PROVIDER", "tcp;ofi_rxm", 1);
	KT_OK(pair_run(&o));
	KT_CHECK_EQ(o.inboxes, 1);
	KT_CHECK(o.sockets > 0);
	env_clear();
#else
	KT_SKIP("libkinet was built without libfabric");
#endif
}

/* Runs pair_run with stderr captured; *errors: the "error:" lines. */
static int pair_run_logged(int *errors)
{
	static char log[65536];
	struct kt_capture cap;
	struct opened o;
	int rc = kt_capture_begin(&cap);

	if (rc)
		return rc;
	rc = pair_run(&o);
	kt_capture_end(&cap, log, sizeof(log));
	*errors = kt_count_lines(log, "kinet[", ": error: ");
	return rc;
}

/* An ofi carrier that cannot open (no such provider; a build without
 * libfabric fails the same way) is an error only when asked for. */
KT_TEST(failed_guess_is_quiet)
{
	int errors;

	env_clear();
	setenv("KINET_NRANKS", "2", 1);
	setenv("KINET_OFI_PROVIDER", "no-such-provider", 1);
	KT_OK(pair_run_logged(&errors));
	KT_CHECK_EQ(errors, 0);
	env_clear();
}

KT_TEST(failed_request_is_an_error)
{
	int errors;

	env_clear();
	setenv("KINET_TRANSPORT", "ofi", 1);
	setenv("KINET_OFI_PROVIDER", "no-such-provider", 1);
	/* The QPs of the pair cannot connect over a carrier that did not open. */
	KT_CHECK(pair_run_logged(&errors) != 0);
	KT_CHECK(errors > 0);
	env_clear();
}

KT_MAIN(one_process_opens_nothing, local_job_opens_node, forced_node_opens_node, always_opens_node,
	job_opens_ofi, failed_guess_is_quiet, failed_request_is_an_error)
