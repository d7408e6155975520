/*
 * Provider selection: "soft" always works, "mlx5" is not available here
 * (no ConnectX, or no rdma-core, or a build without its headers: each
 * says so), anything else is refused; the
 * KINET_PROVIDER environment variable is honoured when the attribute is
 * NULL.  Also the host-only context and the engine-thread count.
 */
#include "kt_host.h"

static int open_with(const char *provider, struct kinet_ctx **ctx)
{
	struct kinet_ctx_attr attr;
	kinet_ctx_attr_init(&attr);
	attr.provider = provider;
	attr.cuda_device = KT_HOST_ONLY;
	*ctx = NULL;
	return kinet_ctx_open(&attr, ctx);
}

KT_TEST(soft)
{
	struct kinet_ctx *ctx;
	unsetenv("KINET_PROVIDER");
	KT_OK(open_with("soft", &ctx));
	KT_CHECK(ctx != NULL);
	KT_CHECK(strcmp(kinet_ctx_provider(ctx), "soft") == 0);
	KT_OK(kt_smoke(ctx));
	KT_OK(kinet_ctx_close(ctx));
}

KT_TEST(auto_falls_back_to_soft)
{
	struct kinet_ctx *ctx;
	unsetenv("KINET_PROVIDER");
	KT_OK(open_with("auto", &ctx));
	KT_CHECK(strcmp(kinet_ctx_provider(ctx), "soft") == 0);
	KT_OK(kinet_ctx_close(ctx));
	KT_OK(open_with(NULL, &ctx));
	KT_CHECK(strcmp(kinet_ctx_provider(ctx), "soft") == 0);
	KT_OK(kinet_ctx_close(ctx));
}

/* Why mlx5 cannot be used where there is no ConnectX: one of the reasons
 * the provider gives, never an empty or unknown one. */
static int mlx5_reason_ok(const char *why)
{
	return why && (strstr(why, "no mlx5 device") || strstr(why, "rdma-core not found") ||
		       strstr(why, "without rdma-core's headers") || strstr(why, "no active mlx5 port"));
}

KT_TEST(mlx5_unavailable)
{
	struct kinet_ctx *ctx;
	unsetenv("KINET_PROVIDER");
	if (kinet_provider_probe("mlx5", NULL) == 0) {
		printf("SKIP mlx5_unavailable: an mlx5 port is usable here\n");
		return;
	}
	KT_CHECK_EQ(open_with("mlx5", &ctx), -ENODEV);
	KT_CHECK(ctx == NULL);
}

KT_TEST(bogus)
{
	struct kinet_ctx *ctx;
	unsetenv("KINET_PROVIDER");
	KT_CHECK_EQ(open_with("bogus", &ctx), -EINVAL);
	KT_CHECK(ctx == NULL);
	KT_CHECK_EQ(open_with("", &ctx), -EINVAL);
	KT_CHECK_EQ(open_with("SOFTX", &ctx), -EINVAL);
}

/* The probe agrees with kinet_ctx_open and says why, without a log line
 * (kinet-info lists providers nobody asked for). */
KT_TEST(probe)
{
	const char *why = "unset";

	KT_OK(kinet_provider_probe("soft", &why));
	KT_CHECK(why == NULL);
	if (kinet_provider_probe("mlx5", &why) == 0) {
		printf("SKIP probe: an mlx5 port is usable here\n");
		return;
	}
	KT_CHECK_EQ(kinet_provider_probe("mlx5", &why), -ENODEV);
	KT_CHECK(mlx5_reason_ok(why));
	KT_CHECK_EQ(kinet_provider_probe("bogus", &why), -EINVAL);
	KT_CHECK(why && *why);
	KT_CHECK_EQ(kinet_provider_probe(NULL, NULL), -EINVAL);
	KT_CHECK_EQ(kinet_provider_probe("mlx5", NULL), -ENODEV);
}

KT_TEST(env_provider)
{
	struct kinet_ctx *ctx;
	setenv("KINET_PROVIDER", "soft", 1);
	KT_OK(open_with(NULL, &ctx));
	KT_CHECK(strcmp(kinet_ctx_provider(ctx), "soft") == 0);
	KT_OK(kinet_ctx_close(ctx));
	setenv("KINET_PROVIDER", "bogus", 1);
	KT_CHECK_EQ(open_with(NULL, &ctx), -EINVAL);
	setenv("KINET_PROVIDER", "mlx5", 1);
	if (kinet_provider_probe("mlx5", NULL))
		KT_CHECK_EQ(open_with(NULL, &ctx), -ENODEV);
	/* The attribute wins over the environment. */
	KT_OK(open_with("soft", &ctx));
	KT_CHECK(strcmp(kinet_ctx_provider(ctx), "soft") == 0);
	KT_OK(kinet_ctx_close(ctx));
	unsetenv("KINET_PROVIDER");
}

KT_TEST(env_engine_threads)
{
	struct kinet_ctx *ctx;
	struct kinet_ctx_attr attr;
	setenv("KINET_ENGINE_THREADS", "3", 1);
	kinet_ctx_attr_init(&attr);
	attr.provider = "soft";
	attr.cuda_device = KT_HOST_ONLY;
	KT_OK(kinet_ctx_open(&attr, &ctx));
	KT_OK(kt_smoke(ctx));
	KT_OK(kinet_ctx_close(ctx));
	unsetenv("KINET_ENGINE_THREADS");
}

KT_TEST(host_only_context)
{
	struct kinet_ctx *ctx;
	struct kinet_mr *mr;
	static uint8_t buf[256];
	KT_OK(open_with("soft", &ctx));
	KT_OK(kinet_mr_reg(ctx, buf, sizeof(buf), KT_ACC_ALL, &mr));
	KT_CHECK_EQ(kinet_mr_mem_type(mr), KINET_MEM_HOST);
	KT_CHECK_EQ(kinet_mr_lkey(mr), kinet_mr_rkey(mr));
	KT_OK(kinet_mr_dereg(mr));
	KT_OK(kinet_ctx_close(ctx));
}

/* Several contexts side by side, opened and closed repeatedly. */
KT_TEST(many_contexts)
{
	struct kinet_ctx *ctx[4];
	for (int r = 0; r < 5; r++) {
		for (int i = 0; i < 4; i++)
			KT_OK(kt_ctx_open(1 + i % 2, &ctx[i]));
		KT_OK(kt_smoke(ctx[r % 4]));
		for (int i = 3; i >= 0; i--)
			KT_OK(kinet_ctx_close(ctx[i]));
	}
}

KT_MAIN(soft, auto_falls_back_to_soft, mlx5_unavailable, bogus, probe, env_provider, env_engine_threads,
	host_only_context, many_contexts)
