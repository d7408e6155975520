/*
 * The environment table (env_vars.c) and its getters (env.c): every
 * KINET_* variable is declared once; nothing reads one any other way.
 */
#ifndef KINET_CORE_ENV_H
#define KINET_CORE_ENV_H

#include <stdbool.h>
#include <stddef.h>

enum kinet_env_kind {
	KINET_ENV_INT,
	KINET_ENV_BOOL,
	KINET_ENV_CHOICE, /* one of choices ("a|b|c") */
	KINET_ENV_STRING,
};

struct kinet_env_var {
	const char *name;
	enum kinet_env_kind kind;
	long min, max;	     /* INT, BOOL */
	const char *choices; /* CHOICE: "a|b|c" */
	const char *dflt;    /* as text; NULL: unset means "not given" */
	bool fallback;	     /* a bad value warns and uses the default, else is an error */
	const char *scope;   /* core, soft, ofi, mlx5, boot, verbs, tools, scripts */
	const char *help;
};

const struct kinet_env_var *kinet_env_vars(size_t *count);
/* The declaration of name, or NULL. */
const struct kinet_env_var *kinet_env_var(const char *name);

/* The value of a declared variable, checked against its declaration: the
 * default when unset or (after one log line) when its value is bad.  A
 * name outside the table that starts with KINET_ is a bug (logged once);
 * other names (launchers' variables) are read as they are. */
const char *kinet_env_str(const char *name);
long kinet_env_long(const char *name);
/* Whether the variable is set to a valid value (not its default). */
bool kinet_env_is_set(const char *name);
/* 0, or -EINVAL (logged once) when the variable is set to a value its
 * declaration refuses and has no fallback: for what is read after
 * kinet_ctx_open's check, where using the default would hide the error. */
int kinet_env_valid(const char *name);
/* Checks every set KINET_* variable (kinet_ctx_open): 0, or -EINVAL after
 * an error line naming the first bad one that has no fallback.  Bad ones
 * with a fallback warn once; unknown KINET_* names warn once (a typo). */
int kinet_env_check(void);
/* Why value is not valid for var (a static sentence), or NULL when it is. */
const char *kinet_env_invalid(const struct kinet_env_var *var, const char *value);

#endif /* KINET_CORE_ENV_H */
