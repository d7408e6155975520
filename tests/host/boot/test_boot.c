/*
 * Bootstrap: allgather, barrier and bcast among ranks run as threads
 * (unique id) or forked processes (launcher variables), the launcher
 * variables themselves, and the failures that must end in an errno within
 * the timeout instead of a hang: a missing rank, a root that never answers,
 * a peer that leaves mid-collective, mismatched collectives.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "kinet/boot.h"
#include "kt.h"

#define MAX_RANKS 8
#define BLOB 13
#define BIG (1u << 20)

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static const char *const launcher_vars[] = {
	"KINET_RANK", "KINET_NRANKS", "KINET_ROOT",   "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
	"PMI_RANK",   "PMI_SIZE",     "SLURM_PROCID", "SLURM_NTASKS",	      "KINET_BOOT_TIMEOUT_MS",
};

static void clear_env(void)
{
	for (size_t i = 0; i < sizeof(launcher_vars) / sizeof(launcher_vars[0]); i++)
		unsetenv(launcher_vars[i]);
}

static void setenv_int(const char *name, int v)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "%d", v);
	setenv(name, buf, 1);
}

/* A TCP port of 127.0.0.1 that nothing listens on (bound, then released). */
static int unused_port(void)
{
	struct sockaddr_in sa = {.sin_family = AF_INET};
	socklen_t len = sizeof(sa);
	int fd = socket(AF_INET, SOCK_STREAM, 0), port = -1;

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd >= 0 && bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0 &&
	    getsockname(fd, (struct sockaddr *)&sa, &len) == 0)
		port = ntohs(sa.sin_port);
	close(fd);
	return port;
}

static uint8_t pattern(int rank, size_t i, int round)
{
	return (uint8_t)(rank * 31 + (int)i * 7 + round * 13 + 1);
}

/* ---- ranks as threads (unique id) ---- */

enum mode {
	MODE_NORMAL,   /* allgather, barrier, bcast; must all succeed */
	MODE_LEAVE,    /* the last rank leaves after init; the others allgather */
	MODE_MISMATCH, /* rank 1 calls barrier, the others allgather */
};

struct rank_arg {
	const struct kinet_boot_id *id;
	int rank, nranks;
	enum mode mode;
	int init_rc; /* kinet_boot_init_with_id */
	int op_rc;   /* first failing collective (modes LEAVE, MISMATCH) */
	int after_rc;
	int line;    /* first failed check (MODE_NORMAL) */
	uint64_t ms; /* from start to the end of the last call */
};

#define R_CHECK(a, cond)                                                                                     \
	do {                                                                                                 \
		if (!(cond)) {                                                                               \
			(a)->line = __LINE__;                                                                \
			goto out;                                                                            \
		}                                                                                            \
	} while (0)

static void normal_ops(struct rank_arg *a, struct kinet_boot *b)
{
	uint8_t mine[BLOB], all[MAX_RANKS * BLOB], msg[64];
	uint8_t *big = malloc((size_t)a->nranks * BIG);

	R_CHECK(a, big);
	R_CHECK(a, kinet_boot_rank(b) == a->rank);
	R_CHECK(a, kinet_boot_size(b) == a->nranks);
	for (int round = 0; round < 3; round++) {
		for (size_t i = 0; i < BLOB; i++)
			mine[i] = pattern(a->rank, i, round);
		memset(all, 0, sizeof(all));
		R_CHECK(a, kinet_boot_allgather(b, mine, all, BLOB) == 0);
		for (int r = 0; r < a->nranks; r++)
			for (size_t i = 0; i < BLOB; i++)
				R_CHECK(a, all[r * BLOB + i] == pattern(r, i, round));
		R_CHECK(a, kinet_boot_barrier(b) == 0);
	}
	/* in place, and large enough for partial sends and receives */
	for (size_t i = 0; i < BIG; i++)
		big[(size_t)a->rank * BIG + i] = pattern(a->rank, i, 7);
	R_CHECK(a, kinet_boot_allgather(b, big + (size_t)a->rank * BIG, big, BIG) == 0);
	for (int r = 0; r < a->nranks; r++)
		for (size_t i = 0; i < BIG; i += 4093)
			R_CHECK(a, big[(size_t)r * BIG + i] == pattern(r, i, 7));
	R_CHECK(a, kinet_boot_allgather(b, NULL, NULL, 0) == 0);
	for (int root = 0; root < a->nranks; root += a->nranks - 1) {
		memset(msg, a->rank == root ? 0xa0 + root : 0, sizeof(msg));
		R_CHECK(a, kinet_boot_bcast(b, msg, sizeof(msg), root) == 0);
		for (size_t i = 0; i < sizeof(msg); i++)
			R_CHECK(a, msg[i] == 0xa0 + root);
		if (a->nranks == 1)
			break;
	}
	R_CHECK(a, kinet_boot_barrier(b) == 0);
out:
	free(big);
}

static void *rank_thread(void *p)
{
	struct rank_arg *a = p;
	struct kinet_boot *b = NULL;
	uint64_t t0 = now_ms();
	uint8_t mine[8] = {(uint8_t)a->rank}, all[MAX_RANKS * 8];

	a->init_rc = kinet_boot_init_with_id(a->id, a->rank, a->nranks, &b);
	if (a->init_rc)
		goto out;
	switch (a->mode) {
	case MODE_NORMAL:
		normal_ops(a, b);
		break;
	case MODE_LEAVE:
		if (a->rank == a->nranks - 1)
			break;
		a->op_rc = kinet_boot_allgather(b, mine, all, sizeof(mine));
		a->after_rc = kinet_boot_barrier(b);
		break;
	case MODE_MISMATCH:
		if (a->rank == 1)
			a->op_rc = kinet_boot_barrier(b);
		else
			a->op_rc = kinet_boot_allgather(b, mine, all, sizeof(mine));
		break;
	}
out:
	kinet_boot_fini(b);
	a->ms = now_ms() - t0;
	return NULL;
}

/* Runs ranks [0, nranks) except `missing` as threads of one job. */
static int run_threads(int nranks, int missing, enum mode mode, struct rank_arg *args)
{
	struct kinet_boot_id id;
	pthread_t th[MAX_RANKS];
	int rc = kinet_boot_get_unique_id(&id);

	if (rc)
		return rc;
	for (int r = 0; r < nranks; r++) {
		args[r] = (struct rank_arg){.id = &id, .rank = r, .nranks = nranks, .mode = mode};
		if (r != missing && pthread_create(&th[r], NULL, rank_thread, &args[r]) != 0)
			return -EAGAIN;
	}
	for (int r = 0; r < nranks; r++)
		if (r != missing)
			pthread_join(th[r], NULL);
	return 0;
}

static void check_normal(int nranks)
{
	struct rank_arg args[MAX_RANKS];

	clear_env();
	KT_OK(run_threads(nranks, -1, MODE_NORMAL, args));
	for (int r = 0; r < nranks; r++) {
		if (args[r].init_rc || args[r].line)
			fprintf(stderr, "rank %d: init %d, failed check at line %d\n", r, args[r].init_rc,
				args[r].line);
		KT_CHECK_EQ(args[r].init_rc, 0);
		KT_CHECK_EQ(args[r].line, 0);
	}
}

KT_TEST(threads_1_rank)
{
	check_normal(1);
}

KT_TEST(threads_2_ranks)
{
	check_normal(2);
}

KT_TEST(threads_4_ranks)
{
	check_normal(4);
}

KT_TEST(missing_rank_times_out)
{
	struct rank_arg args[4];

	clear_env();
	setenv("KINET_BOOT_TIMEOUT_MS", "500", 1);
	KT_OK(run_threads(4, 3, MODE_NORMAL, args));
	unsetenv("KINET_BOOT_TIMEOUT_MS");
	KT_CHECK_EQ(args[0].init_rc, -ETIMEDOUT);
	KT_CHECK(args[0].ms >= 450 && args[0].ms < 2000);
	for (int r = 1; r < 3; r++) {
		KT_CHECK(args[r].init_rc == -ETIMEDOUT || args[r].init_rc == -ECONNRESET);
		KT_CHECK(args[r].ms < 2000);
	}
}

KT_TEST(peer_leaves_mid_collective)
{
	struct rank_arg args[3];

	clear_env();
	setenv("KINET_BOOT_TIMEOUT_MS", "10000", 1);
	KT_OK(run_threads(3, -1, MODE_LEAVE, args));
	unsetenv("KINET_BOOT_TIMEOUT_MS");
	for (int r = 0; r < 3; r++)
		KT_CHECK_EQ(args[r].init_rc, 0);
	/* well before the 10 s timeout */
	for (int r = 0; r < 2; r++) {
		KT_CHECK(args[r].op_rc == -ECONNRESET || args[r].op_rc == -EPIPE);
		KT_CHECK_EQ(args[r].after_rc, -ENOTCONN);
		KT_CHECK(args[r].ms < 3000);
	}
}

KT_TEST(mismatched_collectives)
{
	struct rank_arg args[3];

	clear_env();
	setenv("KINET_BOOT_TIMEOUT_MS", "10000", 1);
	KT_OK(run_threads(3, -1, MODE_MISMATCH, args));
	unsetenv("KINET_BOOT_TIMEOUT_MS");
	for (int r = 0; r < 3; r++) {
		KT_CHECK_EQ(args[r].init_rc, 0);
		/* rank 2 may find the connection gone before it reads why */
		KT_CHECK(args[r].op_rc == -EPROTO ||
			 (r == 2 && (args[r].op_rc == -ECONNRESET || args[r].op_rc == -EPIPE)));
		KT_CHECK(args[r].ms < 3000);
	}
}

/* ---- the root never answers ---- */

static int join_as_rank1(const char *root, int timeout_ms, uint64_t *ms)
{
	struct kinet_boot_attr attr;
	struct kinet_boot *b = (struct kinet_boot *)&attr;
	uint64_t t0 = now_ms();
	int rc;

	clear_env();
	setenv("KINET_RANK", "1", 1);
	setenv("KINET_NRANKS", "2", 1);
	kinet_boot_attr_init(&attr);
	attr.timeout_ms = timeout_ms;
	attr.root = root;
	rc = kinet_boot_init(&attr, &b);
	*ms = now_ms() - t0;
	if (b == (struct kinet_boot *)&attr) {
		rc = -1000; /* *boot must be NULL on failure */
		b = NULL;
	}
	kinet_boot_fini(b);
	clear_env();
	return rc;
}

KT_TEST(root_not_listening)
{
	char root[64];
	uint64_t ms;

	snprintf(root, sizeof(root), "127.0.0.1:%d", unused_port());
	KT_CHECK_EQ(join_as_rank1(root, 300, &ms), -ETIMEDOUT);
	KT_CHECK(ms >= 250 && ms < 1500);
}

KT_TEST(root_never_accepts)
{
	struct sockaddr_in sa = {.sin_family = AF_INET};
	socklen_t len = sizeof(sa);
	char root[64];
	uint64_t ms;
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	KT_CHECK(fd >= 0);
	KT_OK(bind(fd, (struct sockaddr *)&sa, sizeof(sa)));
	KT_OK(listen(fd, 4));
	KT_OK(getsockname(fd, (struct sockaddr *)&sa, &len));
	snprintf(root, sizeof(root), "localhost:%d", ntohs(sa.sin_port));
	int rc = join_as_rank1(root, 300, &ms);
	close(fd);
	KT_CHECK_EQ(rc, -ETIMEDOUT);
	KT_CHECK(ms >= 250 && ms < 1500);
}

KT_TEST(unique_id_root_absent)
{
	struct kinet_boot_id id;
	struct kinet_boot *b = NULL;
	uint64_t t0;

	clear_env();
	KT_OK(kinet_boot_get_unique_id(&id));
	setenv("KINET_BOOT_TIMEOUT_MS", "300", 1);
	t0 = now_ms();
	KT_CHECK_EQ(kinet_boot_init_with_id(&id, 1, 2, &b), -ETIMEDOUT);
	KT_CHECK(now_ms() - t0 < 1500);
	KT_CHECK(b == NULL);
	unsetenv("KINET_BOOT_TIMEOUT_MS");
	/* rank 0 of a one-rank job takes (and closes) the listener; once only */
	KT_OK(kinet_boot_init_with_id(&id, 0, 1, &b));
	KT_CHECK_EQ(kinet_boot_size(b), 1);
	kinet_boot_fini(b);
	KT_CHECK_EQ(kinet_boot_init_with_id(&id, 0, 1, &b), -EINVAL);
}

/* ---- launcher variables ---- */

KT_TEST(env_errors)
{
	struct kinet_boot *b = NULL;

	clear_env();
	KT_CHECK_EQ(kinet_boot_init(NULL, &b), -ENOENT);
	setenv("OMPI_COMM_WORLD_RANK", "1", 1);
	setenv("OMPI_COMM_WORLD_SIZE", "2", 1);
	KT_CHECK_EQ(kinet_boot_init(NULL, &b), -EINVAL); /* no KINET_ROOT */
	setenv("KINET_ROOT", "no-port-here", 1);
	KT_CHECK_EQ(kinet_boot_init(NULL, &b), -EINVAL);
	setenv("KINET_ROOT", "127.0.0.1:99999", 1);
	KT_CHECK_EQ(kinet_boot_init(NULL, &b), -EINVAL);
	clear_env();
	setenv("KINET_RANK", "0", 1);
	KT_CHECK_EQ(kinet_boot_init(NULL, &b), -EINVAL); /* no KINET_NRANKS */
	setenv("KINET_NRANKS", "x", 1);
	KT_CHECK_EQ(kinet_boot_init(NULL, &b), -EINVAL);
	setenv("KINET_RANK", "4", 1);
	setenv("KINET_NRANKS", "4", 1);
	KT_CHECK_EQ(kinet_boot_init(NULL, &b), -EINVAL);
	KT_CHECK(b == NULL);
	clear_env();
	KT_CHECK_EQ(kinet_boot_init(NULL, NULL), -EINVAL);
	KT_CHECK_EQ(kinet_boot_init_with_id(NULL, 0, 1, &b), -EINVAL);
	KT_CHECK_EQ(kinet_boot_get_unique_id(NULL), -EINVAL);
	struct kinet_boot_id zero = {{0}};
	KT_CHECK_EQ(kinet_boot_init_with_id(&zero, 1, 2, &b), -EINVAL);
	KT_CHECK_EQ(kinet_boot_barrier(NULL), -EINVAL);
	KT_CHECK_EQ(kinet_boot_fini(NULL), 0);
}

KT_TEST(env_single_rank)
{
	struct kinet_boot *b = NULL;
	uint8_t mine[4] = {1, 2, 3, 4}, all[4] = {0};

	clear_env();
	/* KINET_* wins over the launchers; one rank needs no root */
	setenv("KINET_RANK", "0", 1);
	setenv("KINET_NRANKS", "1", 1);
	setenv("SLURM_PROCID", "3", 1);
	setenv("SLURM_NTASKS", "4", 1);
	KT_OK(kinet_boot_init(NULL, &b));
	KT_CHECK_EQ(kinet_boot_rank(b), 0);
	KT_CHECK_EQ(kinet_boot_size(b), 1);
	KT_OK(kinet_boot_allgather(b, mine, all, sizeof(mine)));
	KT_CHECK(memcmp(mine, all, sizeof(mine)) == 0);
	KT_OK(kinet_boot_barrier(b));
	KT_OK(kinet_boot_bcast(b, mine, sizeof(mine), 0));
	KT_CHECK_EQ(kinet_boot_bcast(b, mine, sizeof(mine), 1), -EINVAL);
	KT_CHECK_EQ(kinet_boot_set_timeout(b, 0), -EINVAL);
	KT_OK(kinet_boot_set_timeout(b, 100));
	kinet_boot_fini(b);
	clear_env();
}

/* ---- ranks as processes, from launcher variables ---- */

/* The body of a forked rank: 0 when all went well, else the failing line. */
static int env_rank_body(int rank, int nranks)
{
	struct kinet_boot *b = NULL;
	uint8_t mine[BLOB], all[MAX_RANKS * BLOB];
	int line = 0;

	if (kinet_boot_init(NULL, &b) != 0)
		return __LINE__;
	if (kinet_boot_rank(b) != rank || kinet_boot_size(b) != nranks)
		line = __LINE__;
	for (size_t i = 0; i < BLOB && !line; i++)
		mine[i] = pattern(rank, i, 0);
	if (!line && kinet_boot_allgather(b, mine, all, BLOB) != 0)
		line = __LINE__;
	for (int r = 0; r < nranks && !line; r++)
		for (size_t i = 0; i < BLOB; i++)
			if (all[r * BLOB + i] != pattern(r, i, 0))
				line = __LINE__;
	if (!line && kinet_boot_barrier(b) != 0)
		line = __LINE__;
	kinet_boot_fini(b);
	return line;
}

/* Forks nranks processes with rank/size in rank_var/size_var and KINET_ROOT
 * on a free port; returns how many failed (or timed out after 10 s). */
static int run_env_job(const char *rank_var, const char *size_var, int nranks)
{
	char root[64];
	pid_t pids[MAX_RANKS];
	int failed = 0;
	uint64_t end = now_ms() + 10000;

	snprintf(root, sizeof(root), "127.0.0.1:%d", unused_port());
	fflush(NULL);
	for (int r = 0; r < nranks; r++) {
		pids[r] = fork();
		if (pids[r] < 0)
			return nranks;
		if (pids[r] == 0) {
			int line;

			clear_env();
			setenv_int(rank_var, r);
			setenv_int(size_var, nranks);
			setenv("KINET_ROOT", root, 1);
			setenv("KINET_BOOT_TIMEOUT_MS", "5000", 1);
			line = env_rank_body(r, nranks);
			if (line)
				fprintf(stderr, "%s rank %d: failed at line %d\n", rank_var, r, line);
			_exit(line ? 1 : 0);
		}
	}
	for (int r = 0; r < nranks; r++) {
		int st = 0;
		pid_t got;

		while ((got = waitpid(pids[r], &st, WNOHANG)) == 0 && now_ms() < end)
			usleep(5000);
		if (got == 0) {
			kill(pids[r], SIGKILL);
			waitpid(pids[r], &st, 0);
			fprintf(stderr, "%s rank %d: hung\n", rank_var, r);
			failed++;
		} else if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
			failed++;
		}
	}
	return failed;
}

KT_TEST(env_kinet_4_ranks)
{
	KT_CHECK_EQ(run_env_job("KINET_RANK", "KINET_NRANKS", 4), 0);
}

KT_TEST(env_ompi)
{
	KT_CHECK_EQ(run_env_job("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", 2), 0);
}

KT_TEST(env_pmi)
{
	KT_CHECK_EQ(run_env_job("PMI_RANK", "PMI_SIZE", 3), 0);
}

KT_TEST(env_slurm)
{
	KT_CHECK_EQ(run_env_job("SLURM_PROCID", "SLURM_NTASKS", 2), 0);
}

KT_MAIN(threads_1_rank, threads_2_ranks, threads_4_ranks, missing_rank_times_out, peer_leaves_mid_collective,
	mismatched_collectives, root_not_listening, root_never_accepts, unique_id_root_absent, env_errors,
	env_single_rank, env_kinet_4_ranks, env_ompi, env_pmi, env_slurm)
