/*
 * kt: the minimal C test harness ctest runs.  One executable per test file;
 * each KT_TEST is run in order, a failed KT_CHECK prints file:line and the
 * expression and fails that test; KT_SKIP prints the reason and makes ctest
 * report the test as skipped (exit code 77, SKIP_RETURN_CODE).
 */
#ifndef KINET_TEST_HARNESS_H
#define KINET_TEST_HARNESS_H

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KT_SKIP_CODE 77

struct kt_case {
	const char *name;
	void (*fn)(void);
};

extern int kt_failed_checks;
extern int kt_skipped;

#define KT_CHECK(cond)                                                                                       \
	do {                                                                                                 \
		if (!(cond)) {                                                                               \
			fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);             \
			kt_failed_checks++;                                                                  \
			return;                                                                              \
		}                                                                                            \
	} while (0)

#define KT_CHECK_EQ(a, b)                                                                                    \
	do {                                                                                                 \
		long long kt_a_ = (long long)(a), kt_b_ = (long long)(b);                                    \
		if (kt_a_ != kt_b_) {                                                                        \
			fprintf(stderr, "%s:%d: check failed: %s == %s (%lld != %lld)\n", __FILE__,          \
				__LINE__, #a, #b, kt_a_, kt_b_);                                             \
			kt_failed_checks++;                                                                  \
			return;                                                                              \
		}                                                                                            \
	} while (0)

/* n bytes equal; else the first byte that differs is named. */
static inline void kt_bytes_mismatch(const char *what, const uint8_t *got, const uint8_t *want, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (got[i] != want[i]) {
			fprintf(stderr, "%s: byte %zu is 0x%02x, expected 0x%02x\n", what, i, got[i],
				want[i]);
			return;
		}
}

#define KT_CHECK_BYTES(what, got, want, n)                                                                   \
	do {                                                                                                 \
		if (memcmp((got), (want), (n)) != 0)                                                         \
			kt_bytes_mismatch((what), (const uint8_t *)(got), (const uint8_t *)(want), (n));     \
		KT_CHECK(memcmp((got), (want), (n)) == 0);                                                   \
	} while (0)

/* For calls returning 0 or a negative errno. */
#define KT_OK(call) KT_CHECK_EQ((call), 0)

#define KT_SKIP(...)                                                                                         \
	do {                                                                                                 \
		printf("SKIP: ");                                                                            \
		printf(__VA_ARGS__);                                                                         \
		printf("\n");                                                                                \
		kt_skipped = 1;                                                                              \
		return;                                                                                      \
	} while (0)

#define KT_TEST(name) static void name(void)

/* The provider the suites run on: "soft" unless $KT_PROVIDER names another
 * (scripts/mlx5-selftest.sh runs them with KT_PROVIDER=mlx5 on a ConnectX). */
static inline const char *kt_provider(void)
{
	const char *p = getenv("KT_PROVIDER");
	return p && *p ? p : "soft";
}

/* A test of the software NIC itself (its engine's pauses, doorbell
 * parsing, transports, peer path) skips on another provider. */
#define KT_NEED_SOFT(what)                                                                                   \
	do {                                                                                                 \
		if (strcmp(kt_provider(), "soft"))                                                           \
			KT_SKIP("%s: a test of the software NIC (KT_PROVIDER=%s)", what, kt_provider());     \
	} while (0)

/* Pauses ctx's engine, or skips where the provider is a NIC (-EOPNOTSUPP). */
#define KT_PAUSE(ctx)                                                                                        \
	do {                                                                                                 \
		int kt_r_ = kinet_ctx_pause(ctx);                                                            \
		if (kt_r_ == -EOPNOTSUPP)                                                                    \
			KT_SKIP("provider %s cannot pause its engine (a NIC)", kt_provider());               \
		KT_OK(kt_r_);                                                                                \
	} while (0)

/* KT_MAIN(test_a, test_b, ...) runs the tests; exits 77 only if every test
 * skipped, 1 if any check failed. */
#define KT_MAIN(...)                                                                                         \
	int kt_failed_checks, kt_skipped;                                                                    \
	int main(void)                                                                                       \
	{                                                                                                    \
		static void (*const kt_fns[])(void) = {__VA_ARGS__};                                         \
		static const char kt_names[] = #__VA_ARGS__;                                                 \
		const char *np = kt_names;                                                                   \
		int failed = 0, skipped = 0, n = (int)(sizeof(kt_fns) / sizeof(kt_fns[0]));                  \
		for (int i = 0; i < n; i++) {                                                                \
			char name[128];                                                                      \
			int len = 0;                                                                         \
			while (*np == ' ' || *np == ',')                                                     \
				np++;                                                                        \
			while (*np && *np != ',' && len < 127)                                               \
				name[len++] = *np++;                                                         \
			name[len] = 0;                                                                       \
			int before = kt_failed_checks;                                                       \
			kt_skipped = 0;                                                                      \
			printf("[ RUN  ] %s\n", name);                                                       \
			fflush(stdout);                                                                      \
			kt_fns[i]();                                                                         \
			if (kt_failed_checks != before) {                                                    \
				printf("[ FAIL ] %s\n", name);                                               \
				failed++;                                                                    \
			} else if (kt_skipped) {                                                             \
				printf("[ SKIP ] %s\n", name);                                               \
				skipped++;                                                                   \
			} else {                                                                             \
				printf("[  OK  ] %s\n", name);                                               \
			}                                                                                    \
			fflush(stdout);                                                                      \
		}                                                                                            \
		printf("%d tests, %d failed, %d skipped\n", n, failed, skipped);                             \
		if (failed)                                                                                  \
			return 1;                                                                            \
		return skipped == n ? KT_SKIP_CODE : 0;                                                      \
	}

#endif
