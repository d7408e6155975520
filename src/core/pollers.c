/*
 * Threads that poll for work, against the cores this process may run on.
 * Spinning while idle pays only when every poller has a core of its own:
 * otherwise a spinner holds the core that the thread with the next step of
 * an operation waits for, for the whole spin.  Two ranks of kinet-perf on
 * 2 cores took 206 us per 8-byte write with idle engines spinning 200 us,
 * 9.5 us with them yielding at once.
 *
 * Pollers of this process: engine threads of every context and emulated
 * device threads (kinet_emu_launch).  The other ranks on this host are
 * assumed to poll as much, each with at least one thread besides its
 * engines (the one that drives the device API or polls CQs).
 */
#define _GNU_SOURCE
#include <sched.h>
#include <unistd.h>

#include "internal.h"

static atomic_int engines, emulated;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static int cores, local_ranks;
static atomic_bool warned;

static void pollers_init(void)
{
	cpu_set_t set;
	int nranks;

	cores = sched_getaffinity(0, sizeof(set), &set) == 0 ? CPU_COUNT(&set) : 0;
	if (cores <= 0)
		cores = (int)sysconf(_SC_NPROCESSORS_ONLN);
	if (cores <= 0)
		cores = 1;
	kinet_job_size(&nranks, &local_ranks);
}

void kinet_pollers_add(bool engine, int delta)
{
	atomic_fetch_add(engine ? &engines : &emulated, delta);
}

bool kinet_pollers_oversubscribed(void)
{
	int eng, emu, per_rank;

	pthread_once(&once, pollers_init);
	eng = atomic_load_explicit(&engines, memory_order_relaxed);
	emu = atomic_load_explicit(&emulated, memory_order_relaxed);
	per_rank = eng + (emu > 1 ? emu : 1);
	if (local_ranks * per_rank <= cores)
		return false;
	if (!atomic_exchange(&warned, true))
		KINET_WARN("%d threads poll on %d core(s) (%d rank(s) on this host, each %d engine thread(s) "
			   "+ %d other): idle engines yield instead of spinning and operations wait for the "
			   "scheduler; a core per thread avoids it (KINET_ENGINE_SPIN_US forces a spin)",
			   local_ranks * per_rank, cores, local_ranks, eng, per_rank - eng);
	return true;
}

bool kinet_pollers_engines(void)
{
	return atomic_load_explicit(&engines, memory_order_relaxed) > 0;
}
