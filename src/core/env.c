/*
 * Environment variables and time.
 */
#include <errno.h>
#include <stdlib.h>
#include <time.h>

#include "internal.h"

const char *kinet_env_str(const char *name, const char *dflt)
{
	const char *v = getenv(name);

	return v && *v ? v : dflt;
}

long kinet_env_long(const char *name, long dflt)
{
	const char *v = kinet_env_str(name, NULL);
	char *end;
	long n;

	if (!v)
		return dflt;
	errno = 0;
	n = strtol(v, &end, 0);
	if (errno || end == v || *end) {
		KINET_WARN("%s=%s is not a number, using %ld", name, v, dflt);
		return dflt;
	}
	return n;
}

uint64_t kinet_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}
