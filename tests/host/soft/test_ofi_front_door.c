/*
 * The ofi carrier under kinet's verbs front door (src/provider/soft/
 * ofi_dl.h, src/core/fabric_guard.h).  This program plays the front door:
 * it exports kinet_verbs_front_door and ibv_get_device_list (ctest links
 * it with its symbols exported), so libfabric's providers, which look
 * verbs devices up when they start, call this ibv_get_device_list.  It
 * must see kinet's fabric call depth raised (the front door then shows no
 * device), and providers over verbs must not be chosen unless FI_PROVIDER
 * says so.  White-box: it calls the carrier's helpers.
 */
#include <stdlib.h>

#include "fabric_guard.h"
#include "kt_host.h"
#include "ofi_internal.h"

/* The front door's marker (its value does not matter, only its name). */
__attribute__((visibility("default"))) int kinet_verbs_front_door = 1;

struct ibv_device;
static int lookups, lookups_outside;

/* What the front door's ibv_get_device_list does while kinet is inside
 * libfabric: no device.  Called by libfabric's efa and verbs providers. */
__attribute__((visibility("default"))) struct ibv_device **ibv_get_device_list(int *num)
{
	lookups++;
	lookups_outside += kinet_fabric_call_depth() == 0;
	if (num)
		*num = 0;
	return calloc(1, sizeof(struct ibv_device *));
}

KT_TEST(depth_nests)
{
	KT_CHECK_EQ(kinet_fabric_call_depth(), 0);
	kinet_fabric_enter();
	kinet_fabric_enter();
	KT_CHECK_EQ(kinet_fabric_call_depth(), 2);
	kinet_fabric_leave();
	kinet_fabric_leave();
	KT_CHECK_EQ(kinet_fabric_call_depth(), 0);
}

KT_TEST(providers_over_verbs_skipped)
{
#ifdef KINET_HAVE_OFI
	unsetenv("FI_PROVIDER");
	KT_CHECK(kinet_ofi_under_front_door());
	KT_CHECK(kinet_ofi_prov_allowed("tcp;ofi_rxm"));
	KT_CHECK(kinet_ofi_prov_allowed("shm"));
	KT_CHECK(!kinet_ofi_prov_allowed("verbs;ofi_rxm"));
	KT_CHECK(!kinet_ofi_prov_allowed("efa"));
	KT_CHECK(!kinet_ofi_prov_allowed("psm3"));
	KT_CHECK(!kinet_ofi_prov_allowed("ofi_rxd;verbs"));
	KT_CHECK(kinet_ofi_prov_allowed("verbsx")); /* whole names only */
	setenv("FI_PROVIDER", "verbs", 1);	    /* the user's word */
	KT_CHECK(kinet_ofi_prov_allowed("verbs;ofi_rxm"));
	unsetenv("FI_PROVIDER");
#else
	KT_SKIP("libkinet was built without libfabric's headers");
#endif
}

/* libfabric's providers look verbs devices up only inside kinet's guard. */
KT_TEST(lookups_inside_the_guard)
{
#ifdef KINET_HAVE_OFI
	struct kinet_ctx *ctx;
	struct kinet_carrier *c = NULL;
	int rc;

	setenv("KINET_OFI_PROVIDER", "tcp;ofi_rxm", 1);
	setenv("KINET_OFI_ADDR", "127.0.0.1", 1);
	KT_OK(kt_ctx_open(1, &ctx));
	rc = kinet_carrier_ofi.open(ctx, &c);
	if (rc == -ENOSYS || rc == -ENODEV) {
		kinet_ctx_close(ctx);
		KT_SKIP("libfabric or its tcp;ofi_rxm provider is not available here");
	}
	KT_OK(rc);
	KT_CHECK_EQ(kinet_fabric_call_depth(), 0);
	kinet_carrier_ofi.close(c);
	kinet_ctx_close(ctx);
	KT_CHECK_EQ(lookups_outside, 0);
	fprintf(stderr, "libfabric looked verbs devices up %d times, all inside the guard\n", lookups);
#else
	KT_SKIP("libkinet was built without libfabric's headers");
#endif
}

KT_MAIN(depth_nests, providers_over_verbs_skipped, lookups_inside_the_guard)
