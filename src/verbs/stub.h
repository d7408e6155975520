/* What the verbs front door's stubs (ibverbs/stubs.c, mlx5/stubs.c,
 * efa/efa.c) share: one line on stderr the first time a program calls a
 * function kinet does not support, then errno = EOPNOTSUPP.  Once per
 * symbol, because programs probe optional verbs in loops and a line per
 * call would drown their own output. */
#ifndef KINET_VERBS_STUB_H
#define KINET_VERBS_STUB_H

#include <errno.h>
#include <stdio.h>

/* Weak: the front door's strong definition, where there is one, wins at
 * link time.  Default visibility: the libraries build with hidden as the
 * preset, and a stub must be exported to be found. */
#define KINET_VERBS_WEAK __attribute__((weak, visibility("default")))
/* An old symbol version's entry point: exported only through its .symver
 * alias (the C name itself matches no node of the map). */
#define KINET_VERBS_COMPAT __attribute__((visibility("default")))

static inline void kinet_verbs_stub_note(const char *name, int *said)
{
	if (!__atomic_exchange_n(said, 1, __ATOMIC_RELAXED))
		fprintf(stderr, "kinet verbs: %s is not supported (docs/VERBS.md)\n", name);
	/* After the print, which may itself change errno. */
	errno = EOPNOTSUPP;
}

#define KINET_VERBS_STUB(name)                                                                               \
	do {                                                                                                 \
		static int kinet_verbs_said;                                                                 \
		kinet_verbs_stub_note(name, &kinet_verbs_said);                                              \
	} while (0)

#endif
