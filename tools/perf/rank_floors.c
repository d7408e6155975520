/*
 * kinet-perf floors of a two-rank run (kinetrun -n 2): what handing a word
 * between the two processes costs on this host before kinet does anything.
 *
 * A write from rank 0 to rank 1 over the node carrier passes through four
 * hands: the initiator gives the WQE to rank 0's engine, which gives it to
 * rank 1's engine (the other process), which executes it and gives the
 * acknowledgement back, and rank 0's engine gives the CQE to the
 * initiator.  The handoff floor plays that chain with bare shared words:
 * thread A -> thread B -> rank 1 -> B -> A.  The process floor is the bare
 * round trip between the two main threads.
 *
 * Waiters spin when the host has a core for each of the chain's three
 * threads, and yield otherwise, as kinet's idle engines do when threads
 * outnumber cores: the floor belongs to the scheduling regime kinet runs
 * in, so a 2-core machine's number says what any protocol could reach
 * there.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "kinet/boot.h"
#include "perf.h"

#define RANK_WARMUP 200
#define RANK_ITERS 5000

/* Samples of each floor: RANK_ITERS, or as many as the timed points when
 * --iters asks for fewer (not under 100): on a loaded machine where waiters
 * yield, one sample can cost a scheduler tick (4 ms), and 5000 of them then
 * took longer than a short run's points.  Both ranks read the same
 * command line, so they agree on the count. */
static uint64_t rank_iters(const struct perf_opts *o)
{
	if (o->iters <= 0 || o->iters >= RANK_ITERS)
		return RANK_ITERS;
	return o->iters < 100 ? 100 : (uint64_t)o->iters;
}

static uint64_t rank_warmup(uint64_t iters)
{
	return iters / 10 < RANK_WARMUP ? iters / 10 : RANK_WARMUP;
}
#define RANK_WAIT_LIMIT_NS (2ull * 1000000000ull)

/* One word per cache line: the chain's words never share one. */
struct rank_words {
	uint64_t to_engine[8];	  /* A -> B */
	uint64_t to_target[8];	  /* B (or A) -> rank 1 */
	uint64_t to_origin[8];	  /* rank 1 -> B (or A) */
	uint64_t to_initiator[8]; /* B -> A */
	uint64_t failed[8];	  /* either side gave up: the other stops too */
};

struct rank_chain {
	struct rank_words *w;
	uint64_t first, n;
	int yield;
};

/* Waits until *word reaches want; 0, or -ETIMEDOUT (and the peers told). */
static int wait_word(struct rank_words *w, uint64_t *word, uint64_t want, int yield)
{
	uint64_t start = perf_now_ns(), spins = 0;
	while (__atomic_load_n(word, __ATOMIC_ACQUIRE) < want) {
		if (yield)
			sched_yield();
		if ((++spins & 0xff) == 0 && (__atomic_load_n(w->failed, __ATOMIC_RELAXED) ||
					      perf_now_ns() - start > RANK_WAIT_LIMIT_NS)) {
			__atomic_store_n(w->failed, 1, __ATOMIC_RELAXED);
			return -ETIMEDOUT;
		}
	}
	return 0;
}

/* Thread B of the handoff chain: rank 0's stand-in for its engine. */
static void *chain_engine(void *p)
{
	struct rank_chain *c = (struct rank_chain *)p;
	struct rank_words *w = c->w;
	for (uint64_t i = c->first; i < c->first + c->n; i++) {
		if (wait_word(w, w->to_engine, i, c->yield))
			break;
		__atomic_store_n(w->to_target, i, __ATOMIC_RELEASE);
		if (wait_word(w, w->to_origin, i, c->yield))
			break;
		__atomic_store_n(w->to_initiator, i, __ATOMIC_RELEASE);
	}
	return NULL;
}

/* Rank 0's shared page, named after its pid (both ranks learn it from the
 * allgather), unlinked once rank 1 has it mapped. */
static struct rank_words *map_words(struct kinet_boot *boot, int rank, char *why, size_t whylen)
{
	int pids[2] = {0, 0}, mine = (int)getpid(), fd = -1, rc;
	char name[64];
	void *m = MAP_FAILED;

	if (rank == 0) {
		snprintf(name, sizeof(name), "/kinet-perf-floor-%d", mine);
		fd = shm_open(name, O_CREAT | O_EXCL | O_RDWR, 0600);
		if (fd >= 0 && ftruncate(fd, sizeof(struct rank_words))) {
			close(fd);
			fd = -1;
		}
	}
	rc = kinet_boot_allgather(boot, &mine, pids, sizeof(mine));
	if (rc) {
		snprintf(why, whylen, "allgather: %s", kinet_strerror(rc));
		goto out;
	}
	if (rank == 1) {
		snprintf(name, sizeof(name), "/kinet-perf-floor-%d", pids[0]);
		fd = shm_open(name, O_RDWR, 0600);
	}
	if (fd >= 0)
		m = mmap(NULL, sizeof(struct rank_words), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED)
		snprintf(why, whylen, "shared page %s: %s", name, strerror(errno));
out:
	/* Both ranks pass the barrier, mapped or not, so neither waits for a
	 * partner that gave up; a rank that failed says so in the result. */
	rc = kinet_boot_barrier(boot);
	if (rank == 0 && fd >= 0)
		shm_unlink(name);
	if (fd >= 0)
		close(fd);
	if (rc && m != MAP_FAILED) {
		munmap(m, sizeof(struct rank_words));
		m = MAP_FAILED;
	}
	return m == MAP_FAILED ? NULL : (struct rank_words *)m;
}

static int rank0_measure(struct rank_words *w, int yield, uint64_t iters, struct perf_rank_floors *f)
{
	uint64_t warm = rank_warmup(iters), n = warm + iters, *ns = (uint64_t *)malloc(n * sizeof(uint64_t));
	struct rank_chain c = {w, n + 1, n, yield};
	pthread_t engine;
	int rc = 0;

	if (!ns)
		return -ENOMEM;
	/* Process round trip: words 1..n. */
	for (uint64_t i = 1; i <= n && !rc; i++) {
		uint64_t t0 = perf_now_ns();
		__atomic_store_n(w->to_target, i, __ATOMIC_RELEASE);
		rc = wait_word(w, w->to_origin, i, yield);
		ns[i - 1] = perf_now_ns() - t0;
	}
	if (!rc)
		perf_stats_ns(ns + warm, iters, &f->process_rtt);
	/* Handoff chain: words n+1..2n. */
	if (!rc && pthread_create(&engine, NULL, chain_engine, &c) == 0) {
		for (uint64_t i = c.first; i < c.first + n && !rc; i++) {
			uint64_t t0 = perf_now_ns();
			__atomic_store_n(w->to_engine, i, __ATOMIC_RELEASE);
			rc = wait_word(w, w->to_initiator, i, yield);
			ns[i - c.first] = perf_now_ns() - t0;
		}
		pthread_join(engine, NULL);
		if (!rc)
			perf_stats_ns(ns + warm, iters, &f->handoff_rtt);
	} else if (!rc) {
		rc = -EAGAIN;
	}
	free(ns);
	return rc;
}

/* Rank 1 answers every word of both floors. */
static int rank1_answer(struct rank_words *w, int yield, uint64_t iters)
{
	uint64_t n = 2 * (rank_warmup(iters) + iters);
	for (uint64_t i = 1; i <= n; i++) {
		if (wait_word(w, w->to_target, i, yield))
			return -ETIMEDOUT;
		__atomic_store_n(w->to_origin, i, __ATOMIC_RELEASE);
	}
	return 0;
}

void perf_rank_floors_measure(const struct perf_opts *o, struct kinet_boot *boot, struct perf_rank_floors *f)
{
	long cores = sysconf(_SC_NPROCESSORS_ONLN);
	cpu_set_t set;
	struct rank_words *w;
	int rc;

	memset(f, 0, sizeof(*f));
	if (sched_getaffinity(0, sizeof(set), &set) == 0)
		cores = CPU_COUNT(&set);
	f->yield = cores < 3;
	w = map_words(boot, o->rank, f->note, sizeof(f->note));
	if (!w)
		return;
	rc = o->rank == 0 ? rank0_measure(w, f->yield, rank_iters(o), f)
			  : rank1_answer(w, f->yield, rank_iters(o));
	munmap(w, sizeof(*w));
	if (rc)
		snprintf(f->note, sizeof(f->note), "%s", kinet_strerror(rc));
	else
		f->measured = o->rank == 0;
}
