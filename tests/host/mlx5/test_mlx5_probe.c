/*
 * The ConnectX provider where it cannot run: asked for, it fails with
 * -ENODEV and a log line saying why (no mlx5 device; rdma-core not found,
 * naming the library; or a build without rdma-core's headers), probing
 * and describing say the same without logging, and nothing is left open.
 * ctest runs it four times: as is (no device here), with
 * $KINET_MLX5_LIBIBVERBS or $KINET_MLX5_LIBMLX5 naming a library that
 * does not exist (the dlopen failure path), and with a library that lacks
 * mlx5dv's functions (rdma-core too old).  On a machine with a usable
 * mlx5 port it skips.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kinet/kinet.h"
#include "kt.h"

/* The reason this run must give, from the environment ctest sets. */
static const char *expected_reason(void)
{
#ifndef KINET_TEST_HAVE_MLX5
	return "without rdma-core's headers";
#else
	const char *lib = getenv("KINET_MLX5_LIBIBVERBS");

	if (!lib || !*lib)
		lib = getenv("KINET_MLX5_LIBMLX5");
	return lib && *lib ? lib : NULL;
#endif
}

/* With no override: rdma-core is missing or there is no device. */
static int reason_ok(const char *why)
{
	const char *want = expected_reason();

	if (!why || !*why)
		return 0;
	if (want)
		return strstr(why, want) &&
		       (strstr(why, "rdma-core not found") || strstr(why, "rdma-core too old") ||
			strstr(why, "rdma-core's headers"));
	return strstr(why, "no mlx5 device") || strstr(why, "rdma-core not found") ||
	       strstr(why, "no active mlx5 port");
}

struct lines {
	char text[4096];
	int n;
};

static void collect(void *arg, const char *line)
{
	struct lines *l = arg;
	size_t len = strlen(l->text);

	snprintf(l->text + len, sizeof(l->text) - len, "%s\n", line);
	l->n++;
}

/* Runs kinet_ctx_open(provider mlx5) with stderr captured in out. */
static int open_capturing(struct kinet_ctx **ctx, char *out, size_t len)
{
	struct kinet_ctx_attr attr;
	char path[] = "/tmp/kinet-mlx5-probe-XXXXXX";
	int fd = mkstemp(path), saved = dup(2), rc;
	ssize_t n;

	kinet_ctx_attr_init(&attr);
	attr.provider = "mlx5";
	attr.cuda_device = KINET_CUDA_DEVICE_NONE;
	fflush(stderr);
	dup2(fd, 2);
	rc = kinet_ctx_open(&attr, ctx);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	n = pread(fd, out, len - 1, 0);
	out[n > 0 ? n : 0] = 0;
	close(fd);
	unlink(path);
	fputs(out, stderr); /* still shown in ctest's log */
	return rc;
}

KT_TEST(probe)
{
	const char *why = NULL;
	int rc = kinet_provider_probe("mlx5", &why);

	if (!rc && !expected_reason())
		KT_SKIP("an mlx5 port is usable here: scripts/mlx5-selftest.sh is the test for it");
	KT_CHECK_EQ(rc, -ENODEV);
	printf("probe: %s\n", why);
	KT_CHECK(reason_ok(why));
	/* The soft NIC stays available whatever happens to mlx5. */
	KT_OK(kinet_provider_probe("soft", &why));
}

KT_TEST(open_fails_clearly)
{
	struct kinet_ctx *ctx = (struct kinet_ctx *)&ctx;
	const char *why = NULL;
	char log[2048];

	if (!kinet_provider_probe("mlx5", &why) && !expected_reason())
		KT_SKIP("an mlx5 port is usable here");
	KT_CHECK_EQ(open_capturing(&ctx, log, sizeof(log)), -ENODEV);
	KT_CHECK(ctx == NULL);
	/* One error line naming the provider, the reason and the way out. */
	KT_CHECK(strstr(log, "error: provider mlx5: "));
	KT_CHECK(reason_ok(strstr(log, "provider mlx5: ")));
	KT_CHECK(strstr(log, "KINET_PROVIDER=soft"));
	/* Twice: a failed load is retried, not remembered half-done. */
	KT_CHECK_EQ(open_capturing(&ctx, log, sizeof(log)), -ENODEV);
	KT_CHECK(reason_ok(strstr(log, "provider mlx5: ")));
}

KT_TEST(describe)
{
	struct lines l;
	const char *why = NULL;
	int rc;

	if (!kinet_provider_probe("mlx5", &why) && !expected_reason())
		KT_SKIP("an mlx5 port is usable here");
	memset(&l, 0, sizeof(l));
	rc = kinet_provider_describe("mlx5", collect, &l);
	printf("describe (%d):\n%s", rc, l.text);
	KT_CHECK_EQ(rc, -ENODEV);
	KT_CHECK(l.n >= 1);
	KT_CHECK(reason_ok(l.text));
	KT_CHECK_EQ(kinet_provider_describe("soft", collect, &l), -EOPNOTSUPP);
	KT_CHECK_EQ(kinet_provider_describe("bogus", collect, &l), -EINVAL);
	KT_CHECK_EQ(kinet_provider_describe(NULL, collect, &l), -EINVAL);
	KT_CHECK_EQ(kinet_provider_describe("mlx5", NULL, &l), -EINVAL);
}

/* Asking for auto never touches mlx5: the software NIC, and no error. */
KT_TEST(auto_is_soft)
{
	struct kinet_ctx_attr attr;
	struct kinet_ctx *ctx = NULL;

	kinet_ctx_attr_init(&attr);
	attr.provider = "auto";
	attr.cuda_device = KINET_CUDA_DEVICE_NONE;
	KT_OK(kinet_ctx_open(&attr, &ctx));
	KT_CHECK(!strcmp(kinet_ctx_provider(ctx), "soft"));
	KT_OK(kinet_ctx_close(ctx));
}

KT_MAIN(probe, open_fails_clearly, describe, auto_is_soft)
