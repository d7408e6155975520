/*
 * Environment variables (env.h): read through the table, one rule for a
 * bad value; and time.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "internal.h"

extern char **environ;

const struct kinet_env_var *kinet_env_var(const char *name)
{
	size_t n;
	const struct kinet_env_var *v = kinet_env_vars(&n);

	for (size_t i = 0; i < n; i++)
		if (!strcmp(v[i].name, name))
			return &v[i];
	return NULL;
}

static bool choice_has(const char *choices, const char *value)
{
	size_t len = strlen(value);

	for (const char *c = choices; c && *c;) {
		const char *bar = strchr(c, '|');
		size_t l = bar ? (size_t)(bar - c) : strlen(c);

		if (l == len && !strncmp(c, value, len))
			return true;
		c = bar ? bar + 1 : NULL;
	}
	return false;
}

const char *kinet_env_invalid(const struct kinet_env_var *var, const char *value)
{
	static _Thread_local char why[160];
	char *end;
	long n;

	switch (var->kind) {
	case KINET_ENV_STRING:
		return NULL;
	case KINET_ENV_CHOICE:
		if (choice_has(var->choices, value))
			return NULL;
		snprintf(why, sizeof(why), "expected one of %s", var->choices);
		return why;
	case KINET_ENV_INT:
	case KINET_ENV_BOOL:
		errno = 0;
		n = strtol(value, &end, 0);
		if (errno || end == value || *end) {
			snprintf(why, sizeof(why), "not a number (expected %ld..%ld)", var->min, var->max);
			return why;
		}
		if (n < var->min || n > var->max) {
			snprintf(why, sizeof(why), "out of range %ld..%ld", var->min, var->max);
			return why;
		}
		return NULL;
	}
	return "unknown kind";
}

/* Logs a bad value once per variable and value. */
static void report(const struct kinet_env_var *var, const char *value, const char *why)
{
	static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	static struct {
		const struct kinet_env_var *var;
		char value[64];
	} seen[32];
	static unsigned nseen;
	bool again = false;

	pthread_mutex_lock(&lock);
	for (unsigned i = 0; i < nseen; i++)
		if (seen[i].var == var && !strncmp(seen[i].value, value, sizeof(seen[i].value) - 1))
			again = true;
	if (!again && nseen < sizeof(seen) / sizeof(seen[0])) {
		seen[nseen].var = var;
		snprintf(seen[nseen].value, sizeof(seen[nseen].value), "%s", value);
		nseen++;
	}
	pthread_mutex_unlock(&lock);
	if (again)
		return;
	if (var->fallback)
		KINET_WARN("%s=%s: %s; using %s", var->name, value, why,
			   var->dflt ? var->dflt : "the default");
	else
		KINET_ERR("%s=%s: %s (kinet-info --env lists every variable)", var->name, value, why);
}

const char *kinet_env_str(const char *name)
{
	const struct kinet_env_var *var = kinet_env_var(name);
	const char *v = getenv(name), *why;

	if (!var) {
		if (!strncmp(name, "KINET_", 6))
			KINET_ERR("internal: %s is not in the environment table (src/core/env_vars.c)", name);
		return v && *v ? v : NULL;
	}
	if (!v || !*v)
		return var->dflt;
	why = kinet_env_invalid(var, v);
	if (why) {
		report(var, v, why);
		return var->dflt;
	}
	return v;
}

long kinet_env_long(const char *name)
{
	const char *v = kinet_env_str(name);

	return v ? strtol(v, NULL, 0) : 0;
}

bool kinet_env_is_set(const char *name)
{
	const struct kinet_env_var *var = kinet_env_var(name);
	const char *v = getenv(name);

	return var && v && *v && !kinet_env_invalid(var, v);
}

int kinet_env_valid(const char *name)
{
	const struct kinet_env_var *var = kinet_env_var(name);
	const char *v = getenv(name), *why;

	if (!var || !v || !*v || !(why = kinet_env_invalid(var, v)))
		return 0;
	report(var, v, why);
	return var->fallback ? 0 : -EINVAL;
}

int kinet_env_check(void)
{
	int ret = 0;

	for (char **e = environ; e && *e; e++) {
		const char *eq = strchr(*e, '=');
		char name[64];
		const struct kinet_env_var *var;
		const char *why;

		if (strncmp(*e, "KINET_", 6) || !eq || (size_t)(eq - *e) >= sizeof(name))
			continue;
		memcpy(name, *e, (size_t)(eq - *e));
		name[eq - *e] = 0;
		var = kinet_env_var(name);
		if (!var) {
			static atomic_bool warned;

			if (!atomic_exchange(&warned, true))
				KINET_WARN(
					"%s is not a kinet variable (kinet-info --env lists them); ignored",
					name);
			continue;
		}
		/* KINET_LOG is checked where the log is set up (log.c), which
		 * says what it uses instead: once, not twice. */
		if (!eq[1] || !strcmp(name, "KINET_LOG"))
			continue;
		why = kinet_env_invalid(var, eq + 1);
		if (!why)
			continue;
		report(var, eq + 1, why);
		if (!var->fallback && !ret)
			ret = -EINVAL;
	}
	return ret;
}

int kinet_env_info(unsigned index, struct kinet_env_info *info)
{
	static _Thread_local char allowed[48];
	size_t n;
	const struct kinet_env_var *var = kinet_env_vars(&n);
	const char *v;

	if (!info)
		return -EINVAL;
	if (index >= n)
		return -ENOENT;
	var += index;
	v = getenv(var->name);
	memset(info, 0, sizeof(*info));
	info->name = var->name;
	switch (var->kind) {
	case KINET_ENV_INT:
		snprintf(allowed, sizeof(allowed), "%ld..%ld", var->min, var->max);
		info->allowed = allowed;
		break;
	case KINET_ENV_BOOL:
	case KINET_ENV_CHOICE:
		info->allowed = var->choices;
		break;
	case KINET_ENV_STRING:
		info->allowed = "text";
		break;
	}
	info->dflt = var->dflt;
	info->value = v && *v ? v : NULL;
	info->invalid = info->value ? kinet_env_invalid(var, v) : NULL;
	info->fallback = var->fallback;
	info->scope = var->scope;
	info->help = var->help;
	return 0;
}

uint64_t kinet_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}
