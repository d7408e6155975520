/*
 * Logging of the library (log.c): levels, the per-call-site budget, errors
 * that yield -EINVAL with the argument named.
 */
#ifndef KINET_CORE_LOG_H
#define KINET_CORE_LOG_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kinet/device/types.h"
#include "kinet/kinet.h"
#include "kinet/wire.h"

struct kinet_ctx;
struct kinet_qp;
struct kinet_cq;
struct kinet_mr;

/* ---- log (log.c) ---- */
void kinet_log(enum kinet_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Per call site budget of log lines: bad input (garbage doorbells, WQEs,
 * messages) can repeat a message on every engine pass, so each call site
 * prints at most KINET_LOG_BURST lines per KINET_LOG_WINDOW_NS, then says
 * how many it dropped. */
struct kinet_log_limit {
	_Atomic uint64_t window_start;
	atomic_uint printed;
	atomic_uint dropped;
};
#define KINET_LOG_BURST 10u
#define KINET_LOG_WINDOW_NS (5 * 1000000000ull)
void kinet_log_limited(struct kinet_log_limit *rl, enum kinet_log_level level, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
#define KINET_LOG_RL(level, ...)                                                                             \
	({                                                                                                   \
		static struct kinet_log_limit kinet_rl_;                                                     \
		kinet_log_limited(&kinet_rl_, level, __VA_ARGS__);                                           \
	})
#define KINET_ERR(...) KINET_LOG_RL(KINET_LOG_ERROR, __VA_ARGS__)
#define KINET_WARN(...) KINET_LOG_RL(KINET_LOG_WARN, __VA_ARGS__)
#define KINET_INFO(...) KINET_LOG_RL(KINET_LOG_INFO, __VA_ARGS__)
/* Debug output is asked for explicitly and kept whole. */
#define KINET_DBG(...) kinet_log(KINET_LOG_DEBUG, __VA_ARGS__)
/* Logs "<func>: invalid argument '<name>': <why>" and yields -EINVAL. */
#define KINET_EINVAL(name, why) (KINET_ERR("%s: invalid argument '%s': %s", __func__, name, why), -EINVAL)

/* While on (this thread), error and warning lines are logged at info
 * level: for what the library tries without being asked (a carrier opened
 * in case a peer needs it).  Returns the previous setting. */
bool kinet_log_demote(bool on);

#endif /* KINET_CORE_LOG_H */
