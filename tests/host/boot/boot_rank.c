/*
 * One rank of a bootstrap job started by kinetrun (test_kinetrun.sh): joins
 * from the environment, allgathers the ranks and the KINET_LOCAL_* values,
 * checks them, and prints "rank R of N ok".  Exits 1 on any failure.
 */
#include <stdio.h>
#include <stdlib.h>

#include "kinet/boot.h"

int main(void)
{
	struct kinet_boot *boot = NULL;
	int mine[3], *all, n, rc;

	rc = kinet_boot_init(NULL, &boot);
	if (rc) {
		fprintf(stderr, "kinet_boot_init: %d\n", rc);
		return 1;
	}
	n = kinet_boot_size(boot);
	mine[0] = kinet_boot_rank(boot);
	mine[1] = atoi(getenv("KINET_LOCAL_RANK") ? getenv("KINET_LOCAL_RANK") : "-1");
	mine[2] = atoi(getenv("KINET_LOCAL_SIZE") ? getenv("KINET_LOCAL_SIZE") : "-1");
	all = calloc((size_t)n, sizeof(mine));
	rc = all ? kinet_boot_allgather(boot, mine, all, sizeof(mine)) : 1;
	for (int r = 0; r < n && rc == 0; r++)
		if (all[3 * r] != r || all[3 * r + 1] != r || all[3 * r + 2] != n)
			rc = 1;
	if (rc == 0)
		rc = kinet_boot_barrier(boot);
	if (rc == 0)
		printf("rank %d of %d ok\n", mine[0], n);
	else
		fprintf(stderr, "rank %d failed: %d\n", mine[0], rc);
	free(all);
	kinet_boot_fini(boot);
	return rc ? 1 : 0;
}
