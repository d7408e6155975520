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
	/* Through the table's check, but not its getter: that logs, and
	 * logging is what is being set up. */
	const char *v = getenv("KINET_LOG");
	int i;

	if (!v || !*v || atomic_load(&log_level_set))
		return;
	if (!kinet_env_invalid(kinet_env_var("KINET_LOG"), v))
		for (i = 0; i <= KINET_LOG_DEBUG; i++)
			if (!strcasecmp(v, level_names[i]) || (v[0] == '0' + i && !v[1])) {
				atomic_store(&log_level, i);
				return;
			}
	fprintf(stderr, "kinet[%d]: warn: KINET_LOG=%s: expected one of %s; using warn\n", (int)getpid(), v,
		kinet_env_var("KINET_LOG")->choices);
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

static bool log_enabled(enum kinet_log_level *level)
{
	pthread_once(&log_once, log_init);
	if ((unsigned)*level > KINET_LOG_DEBUG)
		*level = KINET_LOG_DEBUG;
	if (log_demoted && *level < KINET_LOG_INFO)
		*level = KINET_LOG_INFO;
	return (int)*level <= atomic_load_explicit(&log_level, memory_order_relaxed);
}

static void log_line(enum kinet_log_level level, const char *fmt, va_list ap)
{
	char msg[1024];

	vsnprintf(msg, sizeof(msg), fmt, ap);
	/* One stdio call, so lines of concurrent threads do not interleave. */
	fprintf(stderr, "kinet[%d]: %s: %s\n", (int)getpid(), level_names[level], msg);
}

void kinet_log(enum kinet_log_level level, const char *fmt, ...)
{
	va_list ap;

	if (!log_enabled(&level))
		return;
	va_start(ap, fmt);
	log_line(level, fmt, ap);
	va_end(ap);
}

void kinet_log_limited(struct kinet_log_limit *rl, enum kinet_log_level level, const char *fmt, ...)
{
	uint64_t now, start;
	unsigned dropped = 0;
	va_list ap;

	if (!log_enabled(&level))
		return;
	now = kinet_now_ns();
	start = atomic_load_explicit(&rl->window_start, memory_order_relaxed);
	/* The thread that moves the window on reports what the last one
	 * dropped; racing threads may print a line or two more, no harm. */
	if ((!start || now - start >= KINET_LOG_WINDOW_NS) &&
	    atomic_compare_exchange_strong(&rl->window_start, &start, now)) {
		atomic_store(&rl->printed, 0);
		dropped = atomic_exchange(&rl->dropped, 0);
	}
	if (atomic_fetch_add(&rl->printed, 1) >= KINET_LOG_BURST) {
		atomic_fetch_add(&rl->dropped, 1);
		return;
	}
	if (dropped)
		fprintf(stderr, "kinet[%d]: %s: (%u more like the next line were not shown)\n", (int)getpid(),
			level_names[level], dropped);
	va_start(ap, fmt);
	log_line(level, fmt, ap);
	va_end(ap);
}
