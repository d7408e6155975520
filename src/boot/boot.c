/*
 * The bootstrap object: creation from the environment or a unique id,
 * accessors and teardown.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "boot_internal.h"

void kinet_boot_attr_init(struct kinet_boot_attr *attr)
{
	if (!attr)
		return;
	memset(attr, 0, sizeof(*attr));
	attr->size = sizeof(*attr);
}

int boot_default_timeout(void)
{
	/* The table bounds it (1 ms .. a day; a bad value warns and falls
	 * back to the default). */
	return (int)kinet_env_long("KINET_BOOT_TIMEOUT_MS");
}

static void boot_free(struct kinet_boot *b)
{
	if (!b)
		return;
	for (int i = 0; b->fds && i < b->nranks; i++)
		if (b->fds[i] >= 0)
			close(b->fds[i]);
	free(b->fds);
	free(b);
}

int boot_start(int rank, int nranks, int timeout_ms, uint64_t magic, const struct sockaddr_in *sa,
	       const char *root_name, int lfd, struct kinet_boot **boot)
{
	struct kinet_boot *b = calloc(1, sizeof(*b));
	int rc = 0;

	if (b)
		b->fds = malloc(sizeof(int) * (size_t)nranks);
	if (!b || !b->fds) {
		free(b);
		if (lfd >= 0)
			close(lfd);
		return -ENOMEM;
	}
	b->rank = rank;
	b->nranks = nranks;
	b->timeout_ms = timeout_ms;
	b->magic = magic;
	for (int i = 0; i < nranks; i++)
		b->fds[i] = -1;
	if (root_name)
		snprintf(b->root, sizeof(b->root), "%s", root_name);
	else if (sa)
		boot_addr_str(sa, b->root, sizeof(b->root));
	if (nranks > 1) {
		uint64_t deadline = boot_deadline(timeout_ms);

		if (rank == 0 && lfd < 0) {
			/* Every interface: the root's name may resolve to a
			 * loopback alias on its own host (127.0.1.1). */
			struct sockaddr_in any = *sa;

			any.sin_addr.s_addr = htonl(INADDR_ANY);
			rc = boot_listen(&any, nranks < 4096 ? nranks : 4096, &lfd);
		}
		if (rc == 0)
			rc = rank == 0 ? boot_root_gather(b, lfd, deadline) : boot_join(b, sa, deadline);
	}
	if (lfd >= 0)
		close(lfd);
	if (rc) {
		boot_free(b);
		return rc;
	}
	KINET_INFO("bootstrap: rank %d of %d joined (root %s)", rank, nranks, nranks > 1 ? b->root : "-");
	kinet_job_joined(nranks);
	*boot = b;
	return 0;
}

/* The key of a job started from the environment: every rank knows the root
 * port and the size (the host may be spelled differently). */
static uint64_t env_magic(const struct sockaddr_in *sa, int nranks)
{
	uint64_t h = 0xcbf29ce484222325ull ^ 0x6b696e6574626f6full; /* FNV-1a, salted */
	uint64_t v = (uint64_t)ntohs(sa->sin_port) << 32 | (uint32_t)nranks;

	for (int i = 0; i < 8; i++) {
		h ^= (v >> (8 * i)) & 0xff;
		h *= 0x100000001b3ull;
	}
	return h;
}

int kinet_boot_init(const struct kinet_boot_attr *attr, struct kinet_boot **boot)
{
	struct sockaddr_in sa = {.sin_family = AF_INET};
	struct kinet_boot_attr a;
	const char *source = NULL, *root;
	int rank, nranks, timeout_ms, rc;

	if (!boot)
		return KINET_EINVAL("boot", "NULL");
	*boot = NULL;
	if (attr) {
		if ((rc = kinet_attr_read("attr", attr, sizeof(a), &a)))
			return rc;
		attr = &a;
	}
	if (attr && attr->timeout_ms < 0)
		return KINET_EINVAL("attr->timeout_ms", "negative");
	timeout_ms = attr && attr->timeout_ms ? attr->timeout_ms : boot_default_timeout();
	rc = boot_env_rank(&rank, &nranks, &source);
	if (rc)
		return rc;
	root = attr && attr->root ? attr->root : kinet_env_str("KINET_ROOT");
	if (nranks == 1)
		return boot_start(0, 1, timeout_ms, 0, NULL, root, -1, boot);
	if (!root) {
		KINET_ERR("bootstrap: rank %d of %d (from %s), but KINET_ROOT is not set: set it to the "
			  "host:port where rank 0 listens (kinetrun sets it)",
			  rank, nranks, source);
		return -EINVAL;
	}
	rc = boot_parse_addr(root, &sa);
	if (rc)
		return rc;
	return boot_start(rank, nranks, timeout_ms, env_magic(&sa, nranks), &sa, root, -1, boot);
}

int kinet_boot_init_with_id(const struct kinet_boot_id *id, int rank, int nranks, struct kinet_boot **boot)
{
	struct boot_id_info info;
	int lfd = -1, rc;

	if (!boot)
		return KINET_EINVAL("boot", "NULL");
	*boot = NULL;
	if (!id)
		return KINET_EINVAL("id", "NULL");
	if (nranks < 1 || nranks > (1 << 24))
		return KINET_EINVAL("nranks", "must be 1 .. 2^24");
	if (rank < 0 || rank >= nranks)
		return KINET_EINVAL("rank", "must be 0 .. nranks-1");
	rc = boot_id_decode(id, &info);
	if (rc)
		return rc;
	if (rank == 0) {
		lfd = boot_id_take_listener(info.magic);
		if (lfd < 0)
			return KINET_EINVAL("rank",
					    "rank 0 must be the process that made the id, and use it once");
	}
	return boot_start(rank, nranks, boot_default_timeout(), info.magic, &info.sa, NULL, lfd, boot);
}

int kinet_boot_rank(const struct kinet_boot *boot)
{
	return boot ? boot->rank : -EINVAL;
}

int kinet_boot_size(const struct kinet_boot *boot)
{
	return boot ? boot->nranks : -EINVAL;
}

int kinet_boot_set_timeout(struct kinet_boot *boot, int timeout_ms)
{
	if (!boot)
		return KINET_EINVAL("boot", "NULL");
	if (timeout_ms <= 0)
		return KINET_EINVAL("timeout_ms", "must be positive");
	boot->timeout_ms = timeout_ms;
	return 0;
}

int kinet_boot_fini(struct kinet_boot *boot)
{
	boot_free(boot);
	return 0;
}
