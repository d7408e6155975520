/*
 * kinet-verbs: runs an unmodified verbs program on kinet's verbs front door.
 *
 *   kinet-verbs [--] CMD [ARGS...]
 *   kinet-verbs --print-dir
 *
 * Puts the folder holding kinet's libibverbs.so.1, libmlx5.so.1 and
 * libefa.so.1 first on LD_LIBRARY_PATH and execs CMD (searched on PATH).
 *
 * Why the library path and not LD_PRELOAD: the programs NEED
 * libibverbs.so.1 (and perftest libmlx5.so.1 and libefa.so.1) by soname.
 * With LD_PRELOAD the loader would still load the system's libraries for
 * those NEEDED entries, so both rdma-cores would be in the process: a
 * library that binds to the system's copy (librdmacm, libfabric, a dlopen
 * with RTLD_DEEPBIND, dlvsym on a handle from dlopen("libibverbs.so.1"))
 * would reach real rdma-core and its kernel devices.  Found first on the
 * library path, kinet's libraries ARE the sonames, loaded once, for the
 * program and every library it loads.  Nothing is installed over the
 * system's rdma-core.
 *
 * The folder, relative to this program's own path (/proc/self/exe):
 * installed, <prefix>/<libdir>/kinet/verbs beside <prefix>/<bindir>; else
 * the build tree's <build>/lib/verbs, when run from the build tree.
 *
 * Exit status: CMD's own (exec replaces this process); 127 when CMD is not
 * found, 126 when it cannot be executed, 1 when kinet's verbs libraries
 * are not found, 2 for bad usage.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* From tools/CMakeLists.txt: GNUInstallDirs' bindir and the verbs folder
 * under libdir (each relative to the prefix, or absolute), and the build
 * tree's verbs folder ("" when the front door is not built). */
#ifndef KINET_VERBS_BINDIR
#define KINET_VERBS_BINDIR "bin"
#endif
#ifndef KINET_VERBS_INSTALL_DIR
#define KINET_VERBS_INSTALL_DIR "lib/kinet/verbs"
#endif
#ifndef KINET_VERBS_BUILD_DIR
#define KINET_VERBS_BUILD_DIR ""
#endif

static bool has_libs(const char *dir)
{
	char path[PATH_MAX];
	int n = snprintf(path, sizeof(path), "%s/libibverbs.so.1", dir);
	return n > 0 && (size_t)n < sizeof(path) && access(path, R_OK) == 0;
}

/* The installed folder: strip as many components off the program's folder
 * as the bindir has, then append the libdir's verbs folder. */
static bool installed_dir(char *out, size_t len)
{
	if (KINET_VERBS_INSTALL_DIR[0] == '/') {
		snprintf(out, len, "%s", KINET_VERBS_INSTALL_DIR);
		return has_libs(out);
	}
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0)
		return false;
	exe[n] = '\0';
	char *slash = strrchr(exe, '/');
	if (!slash)
		return false;
	*slash = '\0'; /* the program's folder */
	if (KINET_VERBS_BINDIR[0] == '/') {
		/* An absolute bindir says nothing about the prefix. */
		return false;
	}
	for (const char *p = KINET_VERBS_BINDIR; *p;) {
		slash = strrchr(exe, '/');
		if (!slash)
			return false;
		*slash = '\0';
		p = strchr(p, '/');
		if (!p)
			break;
		while (*p == '/')
			p++;
	}
	int m = snprintf(out, len, "%s/%s", exe, KINET_VERBS_INSTALL_DIR);
	return m > 0 && (size_t)m < len && has_libs(out);
}

static bool verbs_dir(char *out, size_t len)
{
	if (installed_dir(out, len))
		return true;
	if (KINET_VERBS_BUILD_DIR[0] && has_libs(KINET_VERBS_BUILD_DIR)) {
		snprintf(out, len, "%s", KINET_VERBS_BUILD_DIR);
		return true;
	}
	return false;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: kinet-verbs [--] CMD [ARGS...]   run CMD on kinet's verbs (libibverbs, libmlx5)\n"
		   "       kinet-verbs --print-dir          print the folder of kinet's verbs libraries\n");
}

int main(int argc, char **argv)
{
	int first = 1;
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
		usage(stdout);
		return 0;
	}
	char dir[PATH_MAX];
	if (!verbs_dir(dir, sizeof(dir))) {
		fprintf(stderr,
			"kinet-verbs: kinet's verbs libraries (libibverbs.so.1) not found: neither installed "
			"(%s) "
			"nor in a build tree (%s); was kinet built with rdma-core's headers "
			"(docs/VERBS.md)?\n",
			KINET_VERBS_INSTALL_DIR,
			KINET_VERBS_BUILD_DIR[0] ? KINET_VERBS_BUILD_DIR : "not built");
		return 1;
	}
	if (!strcmp(argv[1], "--print-dir")) {
		printf("%s\n", dir);
		return 0;
	}
	if (!strcmp(argv[1], "--")) {
		first = 2;
		if (argc < 3) {
			usage(stderr);
			return 2;
		}
	}

	const char *old = getenv("LD_LIBRARY_PATH");
	size_t len = strlen(dir) + (old ? strlen(old) : 0) + 2;
	char *path = malloc(len);
	if (!path) {
		perror("kinet-verbs");
		return 1;
	}
	if (old && *old)
		snprintf(path, len, "%s:%s", dir, old);
	else
		snprintf(path, len, "%s", dir);
	if (setenv("LD_LIBRARY_PATH", path, 1) != 0) {
		perror("kinet-verbs: setenv");
		return 1;
	}
	free(path);

	execvp(argv[first], &argv[first]);
	int err = errno;
	fprintf(stderr, "kinet-verbs: cannot run %s: %s\n", argv[first], strerror(err));
	return err == ENOENT || err == ENOTDIR ? 127 : 126;
}
