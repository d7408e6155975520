/*
 * libfabric at run time (ofi_dl.h): dlopen of libfabric.so.1 on first use
 * of the ofi carrier and dlsym of the few functions it exports that the
 * carrier calls.  It stays loaded for the life of the process.
 *
 * dlsym gives each symbol's default version, the one a program linked
 * against this libfabric would bind: libfabric only appends fields to its
 * structures, so a newer library serves code built with older headers,
 * and the carrier asks fi_getinfo for API 1.9.
 */
#ifdef KINET_HAVE_OFI

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "carrier.h"
#include "ofi_dl.h"

#define LIBFABRIC "libfabric.so.1"

struct kinet_ofi_fabric kinet_ofi;

static pthread_mutex_t load_lock = PTHREAD_MUTEX_INITIALIZER;
static bool loaded;

/* dlsym into a function pointer (an object pointer cannot be converted to
 * one in ISO C, hence the copy). */
#define SYM(field, name)                                                                                     \
	do {                                                                                                 \
		void *s_ = dlsym(lib, name);                                                                 \
		if (!s_) {                                                                                   \
			missing = name;                                                                      \
			goto fail;                                                                           \
		}                                                                                            \
		memcpy(&t.field, &s_, sizeof(s_));                                                           \
	} while (0)

static int load(void)
{
	const char *name = kinet_env_str("KINET_OFI_LIBFABRIC"), *missing = NULL;
	bool other = strcmp(name, LIBFABRIC) != 0;
	struct kinet_ofi_fabric t;
	void *lib;

	memset(&t, 0, sizeof(t));
	/* libfabric's constructors may already look at verbs devices. */
	kinet_fabric_enter();
	lib = dlopen(name, RTLD_NOW | RTLD_LOCAL);
	kinet_fabric_leave();
	if (!lib) {
		KINET_ERR("ofi carrier: libfabric not found: cannot load %s%s: %s; install libfabric "
			  "(libfabric1, or libfabric) to reach peers on other hosts",
			  name, other ? " ($KINET_OFI_LIBFABRIC, in place of " LIBFABRIC ")" : "", dlerror());
		return -ENOSYS;
	}
	SYM(getinfo, "fi_getinfo");
	SYM(freeinfo, "fi_freeinfo");
	SYM(dupinfo, "fi_dupinfo");
	SYM(fabric, "fi_fabric");
	SYM(strerror, "fi_strerror");
	SYM(version, "fi_version");
	kinet_ofi = t;
	return 0;
fail:
	KINET_ERR("ofi carrier: %s is not a usable libfabric: it lacks %s", name, missing);
	dlclose(lib);
	return -ENOSYS;
}

int kinet_ofi_load(void)
{
	int rc = 0;

	pthread_mutex_lock(&load_lock);
	/* Release: ofi_strerror reads the table after seeing loaded. */
	if (!loaded && !(rc = load()))
		__atomic_store_n(&loaded, true, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&load_lock);
	return rc;
}

const char *ofi_strerror(int err)
{
	static _Thread_local char buf[32];

	if (__atomic_load_n(&loaded, __ATOMIC_ACQUIRE))
		return kinet_ofi.strerror(err);
	snprintf(buf, sizeof(buf), "libfabric error %d", err);
	return buf;
}

int kinet_ofi_under_front_door(void)
{
	return dlsym(RTLD_DEFAULT, "kinet_verbs_front_door") != NULL;
}

int kinet_ofi_prov_allowed(const char *prov)
{
	static const char *const over_verbs[] = {"verbs", "efa", "psm2", "psm3", "usnic", "opx"};
	const char *fi_provider = getenv("FI_PROVIDER");

	if (!prov || (fi_provider && *fi_provider) || !kinet_ofi_under_front_door())
		return 1;
	/* "verbs;ofi_rxm": each ';'-separated name of the stack. */
	for (const char *p = prov; *p;) {
		size_t n = strcspn(p, ";");
		for (size_t i = 0; i < sizeof(over_verbs) / sizeof(over_verbs[0]); i++)
			if (strlen(over_verbs[i]) == n && !strncmp(p, over_verbs[i], n))
				return 0;
		p += n + (p[n] == ';');
	}
	return 1;
}

#endif /* KINET_HAVE_OFI */
