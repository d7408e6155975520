/*
 * kinetrun: starts N local ranks of a kinet job.
 *
 *   kinetrun -n N [--timeout SECONDS] [--] command [args...]
 *
 * Each rank gets KINET_RANK, KINET_NRANKS, KINET_ROOT (127.0.0.1 and a free
 * port, where rank 0's kinet_boot_init() listens), KINET_LOCAL_RANK and
 * KINET_LOCAL_SIZE, and runs in its own process group.  Its stdout and
 * stderr lines come out prefixed with "[rank] ".  When a rank fails (non-zero
 * exit or a signal) the others get SIGTERM, then SIGKILL 2 s later.
 * SIGINT and SIGTERM are passed on to the ranks; a second one kills them.
 *
 * Exit status: 0 when every rank exits 0; else the first failing rank's
 * exit code, or 128 + its signal; 124 after --timeout; 2 for bad usage.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_RANKS 4096
#define LINE_MAX_BYTES 65536 /* a longer line is cut */
#define KILL_GRACE_MS 2000
#define DRAIN_GRACE_MS 500 /* output of leftover grandchildren after all ranks exited */

struct stream {
	int fd;	 /* read end, -1 once closed */
	int out; /* 1 or 2 */
	char *buf;
	size_t len;
};

struct rank {
	pid_t pid;
	bool alive;
	struct stream s[2];
};

static struct rank *ranks;
static int nranks;
static int sig_pipe[2] = {-1, -1};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: kinetrun -n N [--timeout SECONDS] [--] command [args...]\n"
		"  -n N                number of ranks to start (1..%d)\n"
		"  --timeout SECONDS   kill every rank after SECONDS (exit status 124)\n"
		"  -h, --help          this text\n",
		MAX_RANKS);
}

static void bad_usage(const char *fmt, const char *arg)
{
	fprintf(stderr, "kinetrun: ");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "\n");
	usage(stderr);
	exit(2);
}

static long parse_num(const char *opt, const char *v, long max)
{
	char *end;
	long n;

	if (!v)
		bad_usage("%s needs a value", opt);
	errno = 0;
	n = strtol(v, &end, 10);
	if (errno || end == v || *end || n < 1 || n > max)
		bad_usage("bad value '%s'", v);
	return n;
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static void on_signal(int sig)
{
	int saved = errno;
	unsigned char c = (unsigned char)sig;

	if (write(sig_pipe[1], &c, 1) < 0) {
		/* full: a wakeup is already pending */
	}
	errno = saved;
}

/* A free TCP port of 127.0.0.1 (bound, read, released). */
static int free_port(void)
{
	struct sockaddr_in sa = {.sin_family = AF_INET};
	socklen_t len = sizeof(sa);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), port = -1;

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd >= 0 && bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0 &&
	    getsockname(fd, (struct sockaddr *)&sa, &len) == 0)
		port = ntohs(sa.sin_port);
	if (fd >= 0)
		close(fd);
	return port;
}

static void write_all(int fd, const char *p, size_t len)
{
	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return; /* EPIPE and such: the output is lost */
		p += n;
		len -= (size_t)n;
	}
}

/* Writes "[rank] " + line + "\n" in one write, so lines do not mix. */
static void emit(int r, const struct stream *s, const char *line, size_t len)
{
	char *out = malloc(len + 32);
	int n;

	if (!out)
		return;
	n = snprintf(out, 32, "[%d] ", r);
	memcpy(out + n, line, len);
	out[n + len] = '\n';
	write_all(s->out, out, (size_t)n + len + 1);
	free(out);
}

static void stream_close(int r, struct stream *s)
{
	if (s->fd < 0)
		return;
	if (s->len)
		emit(r, s, s->buf, s->len);
	s->len = 0;
	close(s->fd);
	s->fd = -1;
}

static void stream_read(int r, struct stream *s)
{
	char *nl, *start;
	ssize_t n;

	n = read(s->fd, s->buf + s->len, LINE_MAX_BYTES - s->len);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		stream_close(r, s);
		return;
	}
	s->len += (size_t)n;
	start = s->buf;
	while ((nl = memchr(start, '\n', s->len - (size_t)(start - s->buf)))) {
		emit(r, s, start, (size_t)(nl - start));
		start = nl + 1;
	}
	s->len -= (size_t)(start - s->buf);
	memmove(s->buf, start, s->len);
	if (s->len == LINE_MAX_BYTES) {
		emit(r, s, s->buf, s->len);
		s->len = 0;
	}
}

static void child_exec(int r, int port, int out, int err, char **cmd)
{
	char v[64];
	sigset_t none;

	setpgid(0, 0);
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	signal(SIGCHLD, SIG_DFL);
	signal(SIGPIPE, SIG_DFL);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	if (dup2(out, 1) < 0 || dup2(err, 2) < 0)
		_exit(127);
	snprintf(v, sizeof(v), "%d", r);
	setenv("KINET_RANK", v, 1);
	setenv("KINET_LOCAL_RANK", v, 1);
	snprintf(v, sizeof(v), "%d", nranks);
	setenv("KINET_NRANKS", v, 1);
	setenv("KINET_LOCAL_SIZE", v, 1);
	snprintf(v, sizeof(v), "127.0.0.1:%d", port);
	setenv("KINET_ROOT", v, 1);
	execvp(cmd[0], cmd);
	fprintf(stderr, "kinetrun: cannot run %s: %s\n", cmd[0], strerror(errno));
	_exit(127);
}

static int spawn(int r, int port, char **cmd)
{
	struct rank *k = &ranks[r];
	int p[2][2];
	pid_t pid;

	for (int i = 0; i < 2; i++) {
		if (pipe2(p[i], O_CLOEXEC) != 0) {
			perror("kinetrun: pipe");
			return -1;
		}
		k->s[i] = (struct stream){.fd = p[i][0], .out = i + 1, .buf = malloc(LINE_MAX_BYTES)};
		if (!k->s[i].buf) {
			perror("kinetrun: malloc");
			return -1;
		}
	}
	pid = fork();
	if (pid < 0) {
		perror("kinetrun: fork");
		return -1;
	}
	if (pid == 0)
		child_exec(r, port, p[0][1], p[1][1], cmd);
	setpgid(pid, pid); /* also here: no race with the kill below */
	k->pid = pid;
	k->alive = true;
	for (int i = 0; i < 2; i++) {
		close(p[i][1]);
		fcntl(p[i][0], F_SETFL, O_NONBLOCK);
	}
	return 0;
}

static void signal_all(int sig)
{
	for (int r = 0; r < nranks; r++)
		if (ranks[r].alive && kill(-ranks[r].pid, sig) != 0)
			kill(ranks[r].pid, sig);
}

/* The state of the run, and what decides the exit status. */
struct run {
	int status;    /* first failure's exit status, 0 if none */
	bool stopping; /* ranks were told to stop */
	bool timed_out;
	int interrupted;  /* signal passed on, 0 if none */
	uint64_t kill_at; /* SIGKILL time, 0 if none */
	int alive;
};

static void stop_all(struct run *run, int sig)
{
	if (!run->stopping)
		run->kill_at = now_ms() + KILL_GRACE_MS;
	run->stopping = true;
	signal_all(sig);
}

static void reap(struct run *run)
{
	int st, code;
	pid_t pid;

	while ((pid = waitpid(-1, &st, WNOHANG)) > 0) {
		int r;

		for (r = 0; r < nranks && ranks[r].pid != pid; r++)
			;
		if (r == nranks || !ranks[r].alive)
			continue;
		ranks[r].alive = false;
		run->alive--;
		code = WIFSIGNALED(st) ? 128 + WTERMSIG(st) : WEXITSTATUS(st);
		if (code == 0 || run->status || run->stopping)
			continue; /* fine, not the first failure, or stopped by us */
		run->status = code;
		if (run->interrupted)
			continue; /* the signal the user sent */
		if (WIFSIGNALED(st))
			fprintf(stderr, "kinetrun: rank %d (pid %d) was killed by signal %d (%s)%s\n", r,
				(int)pid, WTERMSIG(st), strsignal(WTERMSIG(st)),
				run->alive ? "; stopping the other ranks" : "");
		else
			fprintf(stderr, "kinetrun: rank %d (pid %d) exited with status %d%s\n", r, (int)pid,
				code, run->alive ? "; stopping the other ranks" : "");
		if (run->alive && !run->stopping)
			stop_all(run, SIGTERM);
	}
}

static void on_signals(struct run *run)
{
	unsigned char c;

	while (read(sig_pipe[0], &c, 1) == 1) {
		if (c == SIGCHLD)
			continue; /* reaped by the loop */
		if (run->interrupted) {
			fprintf(stderr, "kinetrun: %s again, killing the ranks\n", strsignal(c));
			signal_all(SIGKILL);
			continue;
		}
		run->interrupted = c;
		signal_all(c);
	}
}

static int open_streams(void)
{
	int n = 0;

	for (int r = 0; r < nranks; r++)
		n += (ranks[r].s[0].fd >= 0) + (ranks[r].s[1].fd >= 0);
	return n;
}

static int run_loop(struct run *run, long timeout_s)
{
	uint64_t end_at = timeout_s ? now_ms() + (uint64_t)timeout_s * 1000u : 0, drain_at = 0;
	struct pollfd *pfd = calloc((size_t)nranks * 2 + 1, sizeof(*pfd));
	int *who = calloc((size_t)nranks * 2 + 1, sizeof(int));

	if (!pfd || !who) {
		perror("kinetrun: calloc");
		signal_all(SIGKILL);
		return 1;
	}
	while (run->alive > 0 || open_streams() > 0) {
		uint64_t now = now_ms(), next = UINT64_MAX;
		int n = 1, wait_ms;

		if (end_at && now >= end_at && !run->timed_out) {
			fprintf(stderr, "kinetrun: timeout after %ld s, killing the ranks\n", timeout_s);
			run->timed_out = true;
			stop_all(run, SIGTERM);
		}
		if (run->kill_at && now >= run->kill_at) {
			signal_all(SIGKILL);
			run->kill_at = 0;
		}
		if (run->alive == 0 && !drain_at)
			drain_at = now + DRAIN_GRACE_MS;
		if (drain_at && now >= drain_at) {
			for (int r = 0; r < nranks; r++)
				for (int i = 0; i < 2; i++)
					stream_close(r, &ranks[r].s[i]);
			break;
		}
		if (end_at && !run->timed_out)
			next = end_at;
		if (run->kill_at && run->kill_at < next)
			next = run->kill_at;
		if (drain_at && drain_at < next)
			next = drain_at;
		wait_ms = next == UINT64_MAX ? -1 : (int)(next > now ? next - now : 0);
		pfd[0] = (struct pollfd){.fd = sig_pipe[0], .events = POLLIN};
		for (int r = 0; r < nranks; r++)
			for (int i = 0; i < 2; i++)
				if (ranks[r].s[i].fd >= 0) {
					pfd[n] = (struct pollfd){.fd = ranks[r].s[i].fd, .events = POLLIN};
					who[n++] = r * 2 + i;
				}
		if (poll(pfd, (nfds_t)n, wait_ms) < 0 && errno != EINTR) {
			perror("kinetrun: poll");
			signal_all(SIGKILL);
			break;
		}
		if (pfd[0].revents)
			on_signals(run);
		for (int k = 1; k < n; k++)
			if (pfd[k].revents)
				stream_read(who[k] / 2, &ranks[who[k] / 2].s[who[k] % 2]);
		reap(run);
	}
	free(pfd);
	free(who);
	if (run->timed_out)
		return 124;
	if (run->status)
		return run->status;
	return run->interrupted ? 128 + run->interrupted : 0;
}

int main(int argc, char **argv)
{
	struct sigaction sa = {.sa_handler = on_signal};
	struct run run = {0};
	sigset_t block, old;
	long timeout_s = 0;
	int i, port;

	for (i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "--")) {
			i++;
			break;
		} else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			usage(stdout);
			return 0;
		} else if (!strcmp(a, "-n") || !strcmp(a, "--np")) {
			nranks = (int)parse_num(a, argv[++i], MAX_RANKS);
		} else if (!strncmp(a, "-n", 2) && a[2] != '-') {
			nranks = (int)parse_num("-n", a + 2, MAX_RANKS);
		} else if (!strcmp(a, "--timeout")) {
			timeout_s = parse_num(a, argv[++i], 1000000);
		} else if (!strncmp(a, "--timeout=", 10)) {
			timeout_s = parse_num("--timeout", a + 10, 1000000);
		} else if (a[0] == '-') {
			bad_usage("unknown option '%s'", a);
		} else {
			break;
		}
	}
	if (nranks < 1)
		bad_usage("-n N is required%s", "");
	if (i >= argc)
		bad_usage("no command given%s", "");

	ranks = calloc((size_t)nranks, sizeof(*ranks));
	port = free_port();
	if (!ranks || port < 0 || pipe2(sig_pipe, O_CLOEXEC | O_NONBLOCK) != 0) {
		perror("kinetrun: setup");
		return 1;
	}
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART;
	sigaction(SIGCHLD, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);

	/* No handler runs in a child between fork and exec. */
	sigemptyset(&block);
	sigaddset(&block, SIGCHLD);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGTERM);
	sigprocmask(SIG_BLOCK, &block, &old);
	for (int r = 0; r < nranks; r++) {
		for (int s = 0; s < 2; s++)
			ranks[r].s[s].fd = -1;
		if (spawn(r, port, argv + i) != 0) {
			signal_all(SIGKILL);
			run.status = 1;
			break;
		}
		run.alive++;
	}
	sigprocmask(SIG_SETMASK, &old, NULL);
	if (run.status) {
		run.stopping = true;
		run_loop(&run, 0);
		return 1;
	}
	return run_loop(&run, timeout_s);
}
