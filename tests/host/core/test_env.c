/*
 * The environment table's one rule: a bad value of a variable without a
 * fallback fails kinet_ctx_open with -EINVAL (naming it), one with a
 * fallback opens with the default; kinet_env_info walks the table and
 * flags a bad value.
 */
#include <stdlib.h>

#include "kinet/kinet.h"
#include "kt.h"

static int open_with(const char *name, const char *value)
{
	struct kinet_ctx_attr attr;
	struct kinet_ctx *ctx = NULL;
	int ret;

	setenv(name, value, 1);
	kinet_ctx_attr_init(&attr);
	attr.provider = "soft";
	attr.cuda_device = KINET_CUDA_DEVICE_NONE;
	ret = kinet_ctx_open(&attr, &ctx);
	if (!ret)
		kinet_ctx_close(ctx);
	unsetenv(name);
	return ret;
}

KT_TEST(bad_values_fail_open)
{
	KT_CHECK_EQ(open_with("KINET_TRANSPORT", "bar"), -EINVAL);
	KT_CHECK_EQ(open_with("KINET_ENGINE_THREADS", "-3"), -EINVAL);
	KT_CHECK_EQ(open_with("KINET_ENGINE_THREADS", "100000"), -EINVAL);
	KT_CHECK_EQ(open_with("KINET_ENGINE_THREADS", "two"), -EINVAL);
	KT_CHECK_EQ(open_with("KINET_P2P", "maybe"), -EINVAL);
	KT_CHECK_EQ(open_with("KINET_PROVIDER", "foo"), -EINVAL);
	KT_CHECK_EQ(open_with("KINET_CARRIERS", "sometimes"), -EINVAL);
}

KT_TEST(good_and_fallback_values_open)
{
	KT_OK(open_with("KINET_TRANSPORT", "node"));
	KT_OK(open_with("KINET_ENGINE_THREADS", "2"));
	KT_OK(open_with("KINET_P2P", "off"));
	/* falls back (one warning): the log level, a tuning knob */
	KT_OK(open_with("KINET_LOG", "9"));
	KT_OK(open_with("KINET_ENGINE_SPIN_US", "-5"));
	/* not a kinet variable: warned about, ignored */
	KT_OK(open_with("KINET_ENGINE_THREAD", "4"));
}

KT_TEST(table_walk)
{
	struct kinet_env_info e;
	int found = 0, n = 0;

	setenv("KINET_ENGINE_THREADS", "0", 1);
	for (unsigned i = 0; !kinet_env_info(i, &e); i++, n++) {
		KT_CHECK(e.name && !strncmp(e.name, "KINET_", 6) && e.help && e.allowed && e.scope);
		if (!strcmp(e.name, "KINET_ENGINE_THREADS")) {
			found = 1;
			KT_CHECK(e.value && !strcmp(e.value, "0"));
			KT_CHECK(e.invalid != NULL);
			KT_CHECK(!e.fallback);
			KT_CHECK(!strcmp(e.dflt, "1"));
			KT_CHECK(!strcmp(e.allowed, "1..64"));
		}
	}
	unsetenv("KINET_ENGINE_THREADS");
	KT_CHECK(found);
	KT_CHECK(n >= 40);
	KT_CHECK_EQ(kinet_env_info((unsigned)n, &e), -ENOENT);
}

KT_MAIN(bad_values_fail_open, good_and_fallback_values_open, table_walk)
