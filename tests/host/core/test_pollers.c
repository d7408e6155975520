/*
 * Polling threads against cores: on one core (this process's affinity
 * narrowed to it), an engine thread and the application thread it assumes
 * are one poller too many, as are two emulated device threads; a warning
 * says so, once.  As one of two ranks of the host (the ctest entry
 * pollers_2ranks: KINET_NRANKS=2, KINET_LOCAL_SIZE=2) even an idle process
 * is one too many: the other rank polls too.
 */
#define _GNU_SOURCE
#include <sched.h>

#include "internal.h"
#include "kt_host.h"

/* kinet_emu_launch's count of emulated device threads. */
#define KINET_HOST_EMU 1
#include "kinet/device/launch.h"

static int narrow_to_one_core(void)
{
	cpu_set_t set;

	if (sched_getaffinity(0, sizeof(set), &set))
		return -errno;
	for (int c = 0; c < CPU_SETSIZE; c++) {
		if (CPU_ISSET(c, &set)) {
			CPU_ZERO(&set);
			CPU_SET(c, &set);
			return sched_setaffinity(0, sizeof(set), &set) ? -errno : 0;
		}
	}
	return -ENODEV;
}

/* Waits until the engine threads have counted themselves (or gone). */
static bool wait_for(bool want)
{
	uint64_t end = kt_now_ms() + KT_DEADLINE_MS;

	while (kinet_pollers_oversubscribed() != want)
		if (kt_now_ms() > end)
			return false;
	return true;
}

static void checks(bool two_ranks)
{
	struct kinet_ctx *ctx;

	/* Nothing polls but the application thread (and the other rank's). */
	KT_CHECK_EQ(kinet_pollers_oversubscribed(), two_ranks);
	kinet_emu_threads_add(1);
	KT_CHECK_EQ(kinet_pollers_oversubscribed(), two_ranks);
	kinet_emu_threads_add(1);
	KT_CHECK(kinet_pollers_oversubscribed());
	kinet_emu_threads_add(-2);
	KT_CHECK_EQ(kinet_pollers_oversubscribed(), two_ranks);

	KT_OK(kt_ctx_open(1, &ctx));
	KT_CHECK(wait_for(true));
	KT_OK(kinet_ctx_close(ctx));
	KT_CHECK(wait_for(two_ranks));
}

KT_TEST(one_core)
{
	const char *local = getenv("KINET_LOCAL_SIZE");
	static char log[65536];
	struct kt_capture cap;
	int failed = kt_failed_checks;

	KT_OK(narrow_to_one_core());
	KT_OK(kt_capture_begin(&cap));
	checks(local && !strcmp(local, "2"));
	kt_capture_end(&cap, log, sizeof(log));
	if (kt_failed_checks == failed)
		KT_CHECK_EQ(kt_count_lines(log, "warn: ", "poll on 1 core(s)"), 1);
}

KT_MAIN(one_core)
