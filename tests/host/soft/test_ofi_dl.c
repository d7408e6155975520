/*
 * libfabric is loaded on first use of the ofi carrier (src/provider/soft/
 * ofi_dl.c), never at start: a program that only runs local QPs never maps
 * it; a missing libfabric, when ofi is asked for, is an error code and a
 * log line naming libfabric.so.1, not a crash; asked for and present, it
 * is mapped then.  Linked to libkinet.so, as applications are (the ELF
 * side, no NEEDED entry, is host/ofi_link_check.sh).  The tests run in
 * this order: the missing library first, since a loaded one stays.
 */
#include "kt_host.h"

static const char *const vars[] = {
	"KINET_NRANKS",	       "OMPI_COMM_WORLD_SIZE", "PMI_SIZE",	  "SLURM_NTASKS",
	"SLURM_NNODES",	       "KINET_LOCAL_SIZE",     "KINET_TRANSPORT", "KINET_CARRIERS",
	"KINET_OFI_LIBFABRIC", "KINET_OFI_PROVIDER",   "KINET_OFI_ADDR",
};

static void env_clear(void)
{
	for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++)
		unsetenv(vars[i]);
}

/* 1 when a libfabric is mapped in this process, 0 not, -1 unknown. */
static int fabric_mapped(void)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	int found = 0;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		found |= strstr(line, "/libfabric.so") != NULL;
	fclose(f);
	return found;
}

/* A loopback pair on one context moving 4 KiB (over a carrier when
 * KINET_TRANSPORT says so). */
static int pair_run(void)
{
	struct kinet_ctx *ctx;
	struct kt_pair p;
	struct kt_buf src, dst;
	struct kinet_wc wc;
	int rc;

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
			kt_buf_free(&dst);
		}
		kt_buf_free(&src);
	}
	if (!rc || p.qp[0])
		kt_pair_destroy(&p);
	kinet_ctx_close(ctx);
	return rc;
}

KT_TEST(local_run_never_loads_it)
{
	env_clear();
	KT_CHECK_EQ(fabric_mapped(), 0); /* libkinet.so does not need it */
	KT_OK(pair_run());
	setenv("KINET_TRANSPORT", "node", 1); /* another process on this host */
	KT_OK(pair_run());
	KT_CHECK_EQ(fabric_mapped(), 0);
	env_clear();
}

KT_TEST(missing_is_an_error)
{
	static char log[65536];
	struct kt_capture cap;
	int rc;

	env_clear();
	setenv("KINET_TRANSPORT", "ofi", 1);
	setenv("KINET_OFI_LIBFABRIC", "libkinet-no-such-fabric.so.1", 1);
	KT_OK(kt_capture_begin(&cap));
	rc = pair_run();
	kt_capture_end(&cap, log, sizeof(log));
	KT_CHECK(rc < 0);
#ifdef KINET_TEST_HAVE_OFI
	/* The loader's line: the library it wanted and dlerror()'s words. */
	KT_CHECK_EQ(kt_count_lines(log, "libfabric.so.1", "libkinet-no-such-fabric.so.1"), 1);
	KT_CHECK(kt_count_lines(log, "kinet[", "cannot open shared object file") >= 1);
#endif
	KT_CHECK_EQ(fabric_mapped(), 0);
	env_clear();
}

KT_TEST(loaded_on_first_use)
{
#ifdef KINET_TEST_HAVE_OFI
	env_clear();
	setenv("KINET_TRANSPORT", "ofi", 1);
	setenv("KINET_OFI_PROVIDER", "tcp;ofi_rxm", 1);
	setenv("KINET_OFI_ADDR", "127.0.0.1", 1);
	int rc = pair_run();
	if (rc == -ENODEV || rc == -ENOSYS) {
		env_clear();
		KT_SKIP("libfabric or its tcp;ofi_rxm provider is not available here");
	}
	KT_OK(rc);
	KT_CHECK_EQ(fabric_mapped(), 1);
	env_clear();
#else
	KT_SKIP("libkinet was built without libfabric's headers");
#endif
}

KT_MAIN(local_run_never_loads_it, missing_is_an_error, loaded_on_first_use)
