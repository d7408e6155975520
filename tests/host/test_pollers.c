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

#include "common.h"
#include "internal.h"

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

/* Copies what was logged to stderr; returns the lines that say how many
 * threads poll for work. */
static int count_warnings(const char *path)
{
	FILE *f = fopen(path, "r");
	char line[1024];
	int n = 0;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		fputs(line, stderr);
		n += strstr(line, "warn: ") && strstr(line, "poll on 1 core(s)");
	}
	fclose(f);
	return n;
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
	char path[] = "/tmp/kinet-pollers-XXXXXX";
	int fd = mkstemp(path), saved = dup(2), failed = kt_failed_checks;

	KT_CHECK(fd >= 0 && saved >= 0);
	KT_OK(narrow_to_one_core());
	dup2(fd, 2);
	checks(local && !strcmp(local, "2"));
	dup2(saved, 2);
	close(saved);
	close(fd);
	if (kt_failed_checks == failed)
		KT_CHECK_EQ(count_warnings(path), 1);
	else
		count_warnings(path); /* shows what the failed checks wrote */
	unlink(path);
}

KT_MAIN(one_core)
