/*
 * kinet-netns-run: runs two commands in two network namespaces joined by a
 * veth pair (tests/harness/kt_netns.h: no iproute2 needed), so that an
 * example's two ends talk over a real (virtual) Ethernet link.
 *
 *   kinet-netns-run [--timeout S] [--wait-ms MS] [--a-finishes 1]
 *                   -- CMD_A ARGS... -- CMD_B ARGS...
 *
 * CMD_A starts in namespace a; CMD_B in namespace b once A printed a line
 * containing "ready" on stdout, or --wait-ms passed, or A exited 0.  Each
 * gets KT_IFACE, KT_ADDR, KT_MAC, KT_PEER_ADDR, KT_PEER_MAC (and KT_SIDE,
 * KT_IFINDEX, KT_PEER_IFACE, KT_NETNS) for its side, and the tokens
 * {IFACE} {ADDR} {MAC} {PEER_ADDR} {PEER_MAC} in its arguments are
 * replaced by the same values.  Output lines are prefixed "[a] "/"[b] ".
 *
 * Exit status: B's when A exits 0, or when A is still running after B
 * ended and then exits 0 or by the SIGTERM it is sent; else the first
 * failure (exit code, or 128 + signal).  With --a-finishes 1, A is the
 * side that checks (a receiver judging what B sent): after B ended it
 * must end by itself, within the timeout, and exit 0 -- it is not stopped,
 * so that it cannot pass by being killed before it judged.  124 after
 * --timeout seconds
 * (default 60; both killed); 77 (ctest's skip) when the namespaces cannot
 * be made, saying why; 2 for a bad command line.  Each command runs in a
 * process group of its own, killed whole when the command ends, so that
 * nothing left behind keeps a namespace alive; the namespaces are deleted
 * on every exit, signals included.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "kt_netns.h"

#define SKIP_CODE 77 /* KT_SKIP_CODE of tests/CMakeLists.txt */
#define TIMEOUT_CODE 124
#define STOP_MS 5000 /* how long a SIGTERMed command may take to exit */
#define POLL_MS 20

struct stream {
	int fd; /* read end; -1 at end of file */
	int to; /* 1 or 2 */
	size_t len;
	char buf[4096];
};

struct side {
	char **argv;
	pid_t pid; /* 0: not started */
	bool done;
	int status;
	struct stream out, err;
	char prefix[5];
};

static struct kt_netns net;
static struct side sides[2];
static volatile sig_atomic_t pgid[2];
static bool ready;

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	fprintf(stderr, "kinet-netns-run: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n");
}

/* A signal ends the run: both commands' groups killed, namespaces gone. */
static void on_signal(int sig)
{
	for (int i = 0; i < 2; i++)
		if (pgid[i] > 0)
			kill(-pgid[i], SIGKILL);
	kt_netns_cleanup();
	_exit(128 + sig);
}

/* ---- the commands' arguments and environment ------------------------------ */

/* The side's values of {IFACE} {ADDR} {MAC} {PEER_ADDR} {PEER_MAC}. */
static const char *token_value(int side, const char *s, size_t *toklen)
{
	static const char *const names[] = {"{IFACE}", "{ADDR}", "{MAC}", "{PEER_ADDR}", "{PEER_MAC}"};
	const char *vals[] = {net.veth[side], net.addr[side], net.mac_str[side], net.addr[!side],
			      net.mac_str[!side]};

	for (int i = 0; i < 5; i++) {
		*toklen = strlen(names[i]);
		if (!strncmp(s, names[i], *toklen))
			return vals[i];
	}
	return NULL;
}

static char *substitute(int side, const char *arg)
{
	size_t cap = strlen(arg) * 4 + 64, len = 0, toklen;
	char *out = malloc(cap);

	if (!out)
		abort();
	for (const char *s = arg; *s;) {
		const char *v = *s == '{' ? token_value(side, s, &toklen) : NULL;

		if (len + 32 >= cap && !(out = realloc(out, cap *= 2)))
			abort();
		if (v) {
			len += (size_t)sprintf(out + len, "%s", v);
			s += toklen;
		} else {
			out[len++] = *s++;
		}
	}
	out[len] = 0;
	return out;
}

static void set_env(int side)
{
	char idx[16];

	snprintf(idx, sizeof(idx), "%d", net.ifindex[side]);
	setenv("KT_SIDE", side ? "b" : "a", 1);
	setenv("KT_NETNS", net.ns[side], 1);
	setenv("KT_IFACE", net.veth[side], 1);
	setenv("KT_IFINDEX", idx, 1);
	setenv("KT_ADDR", net.addr[side], 1);
	setenv("KT_MAC", net.mac_str[side], 1);
	setenv("KT_PEER_IFACE", net.veth[!side], 1);
	setenv("KT_PEER_ADDR", net.addr[!side], 1);
	setenv("KT_PEER_MAC", net.mac_str[!side], 1);
}

/* ---- starting, reading, stopping ------------------------------------------ */

/* In the child: its namespace, group, streams and environment, then exec. */
static void child(int side, int out_w, int err_w)
{
	sigset_t none;

	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	for (int sig = 1; sig < NSIG; sig++)
		signal(sig, SIG_DFL);
	setpgid(0, 0);
	prctl(PR_SET_PDEATHSIG, SIGKILL); /* a killed runner leaves nothing running */
	if (dup2(out_w, 1) < 0 || dup2(err_w, 2) < 0)
		_exit(127);
	if (kt_netns_enter(&net, side)) {
		fprintf(stderr, "kinet-netns-run: cannot enter namespace %c: %s\n", 'a' + side,
			strerror(errno));
		_exit(127);
	}
	set_env(side);
	execvp(sides[side].argv[0], sides[side].argv);
	fprintf(stderr, "kinet-netns-run: cannot run %s: %s\n", sides[side].argv[0], strerror(errno));
	_exit(127);
}

static int start(int side)
{
	struct side *s = &sides[side];
	int out[2], err[2];

	if (pipe2(out, O_CLOEXEC) || pipe2(err, O_CLOEXEC))
		return -errno;
	fflush(NULL);
	s->pid = fork();
	if (s->pid < 0)
		return -errno;
	if (s->pid == 0)
		child(side, out[1], err[1]);
	setpgid(s->pid, s->pid); /* also here: no window where a kill misses it */
	pgid[side] = s->pid;
	close(out[1]);
	close(err[1]);
	s->out = (struct stream){.fd = out[0], .to = 1};
	s->err = (struct stream){.fd = err[0], .to = 2};
	return 0;
}

static void emit(const struct side *s, const struct stream *st, const char *line, size_t len)
{
	char buf[sizeof(st->buf) + 8];

	memcpy(buf, s->prefix, 4);
	memcpy(buf + 4, line, len);
	buf[4 + len] = '\n';
	if (write(st->to, buf, len + 5) < 0) {
	}
	if (s == &sides[0] && st->to == 1 && memmem(line, len, "ready", 5))
		ready = true;
}

/* Prints the complete lines of st (all of it at end of file or when full). */
static void flush_lines(const struct side *s, struct stream *st, bool all)
{
	char *start = st->buf, *nl;

	while ((nl = memchr(start, '\n', st->len - (size_t)(start - st->buf)))) {
		emit(s, st, start, (size_t)(nl - start));
		start = nl + 1;
	}
	st->len -= (size_t)(start - st->buf);
	memmove(st->buf, start, st->len);
	if (st->len && (all || st->len == sizeof(st->buf))) {
		emit(s, st, st->buf, st->len);
		st->len = 0;
	}
}

static void read_stream(const struct side *s, struct stream *st)
{
	ssize_t n = read(st->fd, st->buf + st->len, sizeof(st->buf) - st->len);

	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return;
	if (n <= 0) {
		close(st->fd);
		st->fd = -1;
		flush_lines(s, st, true);
		return;
	}
	st->len += (size_t)n;
	flush_lines(s, st, false);
}

/* Waits up to ms for output and passes it on. */
static void pump(int ms)
{
	struct pollfd pfd[4];
	struct stream *st[4];
	const struct side *owner[4];
	int n = 0;

	for (int i = 0; i < 2; i++) {
		struct stream *both[2] = {&sides[i].out, &sides[i].err};

		for (int j = 0; j < 2; j++)
			if (sides[i].pid && both[j]->fd >= 0) {
				pfd[n] = (struct pollfd){.fd = both[j]->fd, .events = POLLIN};
				owner[n] = &sides[i];
				st[n++] = both[j];
			}
	}
	if (poll(pfd, (nfds_t)n, ms) <= 0)
		return;
	for (int i = 0; i < n; i++)
		if (pfd[i].revents)
			read_stream(owner[i], st[i]);
}

/* Whether side has ended (reaped now or before); its group is killed then. */
static bool reap(int side)
{
	struct side *s = &sides[side];

	if (s->done)
		return true;
	if (!s->pid || waitpid(s->pid, &s->status, WNOHANG) != s->pid)
		return false;
	s->done = true;
	kill(-s->pid, SIGKILL);
	pgid[side] = 0;
	return true;
}

/* SIGTERM, then SIGKILL after STOP_MS; output passed on meanwhile. */
static void stop(int side)
{
	uint64_t until = now_ms() + STOP_MS;

	if (!sides[side].pid || reap(side))
		return;
	kill(-sides[side].pid, SIGTERM);
	while (!reap(side) && now_ms() < until)
		pump(POLL_MS);
	if (!reap(side)) {
		say("%c did not end within %d ms of SIGTERM: killed", 'a' + side, STOP_MS);
		kill(-sides[side].pid, SIGKILL);
		waitpid(sides[side].pid, &sides[side].status, 0);
		sides[side].done = true;
		pgid[side] = 0;
	}
}

/* ---- the run -------------------------------------------------------------- */

static int code_of(int status)
{
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static bool failed(int side)
{
	return code_of(sides[side].status) != 0;
}

static int describe(int side, const char *how)
{
	int st = sides[side].status;

	if (WIFEXITED(st))
		say("%c (%s) exited %d%s", 'a' + side, sides[side].argv[0], WEXITSTATUS(st), how);
	else
		say("%c (%s) killed by signal %d (%s)%s", 'a' + side, sides[side].argv[0], WTERMSIG(st),
		    strsignal(WTERMSIG(st)), how);
	return code_of(st);
}

static bool a_finishes; /* --a-finishes 1 */

/* B has ended: its status, unless A, stopped now (or, with --a-finishes,
 * left to end by itself before the deadline), then fails. */
static int after_b(uint64_t deadline)
{
	bool a_running = !reap(0);

	if (a_finishes) {
		if (failed(1)) {
			stop(0);
			return describe(1, "");
		}
		while (!reap(0) && now_ms() < deadline)
			pump(POLL_MS);
		if (!reap(0)) {
			stop(0);
			say("a did not end by itself after b ended (--a-finishes)");
			return TIMEOUT_CODE;
		}
		return failed(0) ? describe(0, " after b ended") : 0;
	}
	stop(0);
	if (failed(1))
		return describe(1, "");
	if (a_running &&
	    (!failed(0) || (WIFSIGNALED(sides[0].status) && WTERMSIG(sides[0].status) == SIGTERM)))
		return 0;
	if (failed(0))
		return describe(0, a_running ? " after b ended and it was sent SIGTERM" : "");
	return 0;
}

static bool b_may_start(uint64_t a_started, int wait_ms)
{
	return ready || (wait_ms > 0 && now_ms() - a_started >= (uint64_t)wait_ms) ||
	       (sides[0].done && !failed(0));
}

static int timed_out(unsigned timeout_s)
{
	say("timeout: still running after %u s (%s): both killed", timeout_s,
	    !sides[1].pid ? "b not started: a never printed \"ready\"" : "b had not ended");
	return TIMEOUT_CODE;
}

static int run(unsigned timeout_s, int wait_ms)
{
	uint64_t t0 = now_ms(), deadline = t0 + timeout_s * 1000ull;
	int err = start(0);

	if (err) {
		say("cannot start a: %s", strerror(-err));
		return 1;
	}
	for (;;) {
		bool a_failed = reap(0) && failed(0);

		if (!sides[1].pid && !a_failed && b_may_start(t0, wait_ms) && (err = start(1))) {
			say("cannot start b: %s", strerror(-err));
			stop(0);
			return 1;
		}
		if (a_failed) {
			stop(1);
			return describe(0, sides[1].pid ? " before b ended" : " before b started");
		}
		if (reap(1))
			return after_b(deadline);
		if (now_ms() >= deadline)
			return timed_out(timeout_s);
		pump(POLL_MS);
	}
}

/* What the commands wrote last, until both streams of each are closed
 * (their groups are dead, so that comes at once) or a second passed. */
static void drain(void)
{
	uint64_t until = now_ms() + 1000;

	for (int i = 0; i < 2; i++)
		if (sides[i].pid && !sides[i].done) {
			kill(-sides[i].pid, SIGKILL);
			waitpid(sides[i].pid, &sides[i].status, 0);
			sides[i].done = true;
		}
	while (now_ms() < until) {
		bool open = false;

		for (int i = 0; i < 2; i++)
			open |= sides[i].pid && (sides[i].out.fd >= 0 || sides[i].err.fd >= 0);
		if (!open)
			break;
		pump(POLL_MS);
	}
}

static void usage(void)
{
	fprintf(stderr,
		"usage: kinet-netns-run [--timeout S] [--wait-ms MS] [--a-finishes 1] -- CMD_A [ARGS...] -- "
		"CMD_B "
		"[ARGS...]\n"
		"  A runs in namespace a; B in namespace b once A printed a line containing \"ready\"\n"
		"  (or after --wait-ms, or when A exited 0).  KT_IFACE KT_ADDR KT_MAC KT_PEER_ADDR\n"
		"  KT_PEER_MAC in their environment; {IFACE} {ADDR} {MAC} {PEER_ADDR} {PEER_MAC}\n"
		"  replaced in their arguments.  Exit: B's status, or the first failure; 124 timeout;\n"
		"  --a-finishes 1: A must end by itself after B, exiting 0 (it is not stopped);\n"
		"  77 when the namespaces cannot be made.\n");
	exit(2);
}

/* Splits argv at the two "--": A's words, then B's. */
static void parse(int argc, char **argv, unsigned *timeout_s, int *wait_ms, int cut[3])
{
	int i = 1, side = 0;

	for (; i < argc && strcmp(argv[i], "--"); i += 2) {
		if (i + 1 >= argc)
			usage();
		if (!strcmp(argv[i], "--timeout"))
			*timeout_s = (unsigned)atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--wait-ms"))
			*wait_ms = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--a-finishes"))
			a_finishes = atoi(argv[i + 1]) != 0;
		else
			usage();
	}
	cut[0] = i;
	for (int j = i + 1; j < argc && side < 1; j++)
		if (!strcmp(argv[j], "--"))
			cut[++side] = j;
	cut[2] = argc;
	if (i >= argc || side != 1 || cut[1] == cut[0] + 1 || cut[1] + 1 >= argc || !*timeout_s)
		usage();
}

static char **side_argv(int side, char **words, int n)
{
	char **v = calloc((size_t)n + 1, sizeof(*v));

	if (!v)
		abort();
	for (int i = 0; i < n; i++)
		v[i] = substitute(side, words[i]);
	return v;
}

int main(int argc, char **argv)
{
	static const int sigs[] = {SIGTERM, SIGINT, SIGHUP};
	unsigned timeout_s = 60;
	int wait_ms = 0, cut[3], code;

	parse(argc, argv, &timeout_s, &wait_ms, cut);
	for (unsigned i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		signal(sigs[i], on_signal);
	signal(SIGPIPE, SIG_IGN);
	if (kt_netns_setup(&net, "nr", 0)) {
		printf("SKIP: %s\n", net.why);
		return SKIP_CODE;
	}
	say("a: %s %s %s %s <-> b: %s %s %s %s", net.ns[0][0] ? net.ns[0] : "(anonymous)", net.veth[0],
	    net.addr[0], net.mac_str[0], net.ns[1][0] ? net.ns[1] : "(anonymous)", net.veth[1], net.addr[1],
	    net.mac_str[1]);
	for (int i = 0; i < 2; i++) {
		sides[i].argv = side_argv(i, argv + cut[i] + 1, cut[i + 1] - cut[i] - 1);
		snprintf(sides[i].prefix, sizeof(sides[i].prefix), "[%c] ", 'a' + i);
	}
	code = run(timeout_s, wait_ms);
	drain();
	kt_netns_teardown(&net);
	return code;
}
