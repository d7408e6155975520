/*
 * Logging to stderr.  The level comes from $KINET_LOG once, unless the
 * application set one first.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "internal.h"

static atomic_int log_level = KINET_LOG_WARN;
static atomic_bool log_level_set;
static pthread_once_t log_once = PTHREAD_ONCE_INIT;

static const char *const level_names[] = {"error", "warn", "info", "debug"};
static _Thread_local bool log_demoted;

static void log_init(void)
{
	const char *v = getenv("KINET_LOG");
	int i;

	if (!v || !*v || atomic_load(&log_level_set))
		return;
	for (i = 0; i <= KINET_LOG_DEBUG; i++) {
		if (!strcasecmp(v, level_names[i]) || (v[0] == '0' + i && !v[1])) {
			atomic_store(&log_level, i);
			return;
		}
	}
	fprintf(stderr, "kinet[%d]: warn: KINET_LOG=%s is not one of error, warn, info, debug, 0..3\n",
		(int)getpid(), v);
}

void kinet_log_set_level(enum kinet_log_level level)
{
	pthread_once(&log_once, log_init);
	if (level < KINET_LOG_ERROR)
		level = KINET_LOG_ERROR;
	if (level > KINET_LOG_DEBUG)
		level = KINET_LOG_DEBUG;
	atomic_store(&log_level_set, true);
	atomic_store(&log_level, level);
}

bool kinet_log_demote(bool on)
{
	bool was = log_demoted;

	log_demoted = on;
	return was;
}

void kinet_log(enum kinet_log_level level, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	pthread_once(&log_once, log_init);
	if ((unsigned)level > KINET_LOG_DEBUG)
		level = KINET_LOG_DEBUG;
	if (log_demoted && level < KINET_LOG_INFO)
		level = KINET_LOG_INFO;
	if ((int)level > atomic_load_explicit(&log_level, memory_order_relaxed))
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	/* One stdio call, so lines of concurrent threads do not interleave. */
	fprintf(stderr, "kinet[%d]: %s: %s\n", (int)getpid(), level_names[level], msg);
}
