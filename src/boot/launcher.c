/*
 * Rank and job size from the environment of the common launchers.
 */
#include <errno.h>
#include <stdlib.h>

#include "boot_internal.h"

static const struct {
	const char *rank;
	const char *size;
	const char *source;
} launchers[] = {
	{"KINET_RANK", "KINET_NRANKS", "KINET_RANK/KINET_NRANKS"},
	{"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK/OMPI_COMM_WORLD_SIZE"},
	{"PMI_RANK", "PMI_SIZE", "PMI_RANK/PMI_SIZE"},
	{"SLURM_PROCID", "SLURM_NTASKS", "SLURM_PROCID/SLURM_NTASKS"},
};

static int parse_int(const char *name, const char *v, int *out)
{
	char *end;
	long n;

	errno = 0;
	n = strtol(v, &end, 10);
	if (errno || end == v || *end || n < 0 || n > (1 << 24)) {
		KINET_ERR("bootstrap: %s=%s is not a rank or a size", name, v);
		return -EINVAL;
	}
	*out = (int)n;
	return 0;
}

int boot_env_rank(int *rank, int *nranks, const char **source)
{
	for (size_t i = 0; i < sizeof(launchers) / sizeof(launchers[0]); i++) {
		const char *r = kinet_env_str(launchers[i].rank);
		const char *s = kinet_env_str(launchers[i].size);

		if (!r && !s)
			continue;
		*source = launchers[i].source;
		if (!r || !s) {
			KINET_ERR("bootstrap: %s is set but %s is not",
				  r ? launchers[i].rank : launchers[i].size,
				  r ? launchers[i].size : launchers[i].rank);
			return -EINVAL;
		}
		if (parse_int(launchers[i].rank, r, rank) || parse_int(launchers[i].size, s, nranks))
			return -EINVAL;
		if (*nranks < 1 || *rank >= *nranks) {
			KINET_ERR("bootstrap: rank %d of %d (from %s) is out of range", *rank, *nranks,
				  *source);
			return -EINVAL;
		}
		return 0;
	}
	KINET_ERR("bootstrap: no rank in the environment: run under kinetrun, mpirun or srun, set "
		  "KINET_RANK, KINET_NRANKS and KINET_ROOT, or use kinet_boot_init_with_id()");
	return -ENOENT;
}
