/*
 * The job this process belongs to, as far as anything says: the launcher's
 * variables (the same launchers as kinet_boot_init) or a kinet_boot that
 * joined.  Carriers (src/provider/soft/remote.c) open only in a job of several
 * ranks; the engine idles without spinning when the ranks of this host
 * would oversubscribe its cores (src/core/pollers.c).
 */
#include <stdlib.h>

#include "internal.h"

static atomic_int joined_nranks;

static int env_count(const char *name)
{
	const char *v = kinet_env_str(name);
	char *end;
	long n;

	if (!v)
		return 0;
	n = strtol(v, &end, 10);
	return *end || n < 1 || n > (1 << 24) ? 0 : (int)n;
}

void kinet_job_joined(int nranks)
{
	atomic_store(&joined_nranks, nranks);
}

void kinet_job_size(int *nranks, int *local)
{
	static const char *const sizes[] = {"KINET_NRANKS", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE",
					    "SLURM_NTASKS"};
	static const char *const locals[] = {"KINET_LOCAL_SIZE", "OMPI_COMM_WORLD_LOCAL_SIZE",
					     "MPI_LOCALNRANKS", "SLURM_NTASKS_PER_NODE"};
	int n = atomic_load(&joined_nranks), l = 0;

	for (size_t i = 0; !n && i < sizeof(sizes) / sizeof(sizes[0]); i++)
		n = env_count(sizes[i]);
	for (size_t i = 0; !l && i < sizeof(locals) / sizeof(locals[0]); i++)
		l = env_count(locals[i]);
	/* Slurm says how many nodes rather than how many tasks on each. */
	if (!l && env_count("SLURM_NNODES") == 1)
		l = env_count("SLURM_NTASKS");
	*nranks = n ? n : 1;
	*local = l && l <= *nranks ? l : 1;
}
