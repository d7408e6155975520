/*
 * Protection domains and memory regions.  A PD is a name only: kinet
 * checks every key against its context's registration table, which is
 * what one PD per context gives (the programs this serves use one).  An MR
 * is a kinet_mr with the access rights asked for; the software NIC enforces
 * them (a missing right is an error completion, docs/VERBS.md).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "verbs.h"

KINET_VERBS_EXPORT struct ibv_pd *ibv_alloc_pd(struct ibv_context *context)
{
	struct ibv_pd *pd;

	if (!context) {
		errno = EINVAL;
		return NULL;
	}
	pd = calloc(1, sizeof(*pd));
	if (!pd) {
		errno = ENOMEM;
		return NULL;
	}
	pd->context = context;
	pd->handle = 1;
	return pd;
}

KINET_VERBS_EXPORT int ibv_dealloc_pd(struct ibv_pd *pd)
{
	if (!pd)
		return EINVAL;
	free(pd);
	return 0;
}

static int access_flags(unsigned access, unsigned *out)
{
	const unsigned known = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
			       IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_ZERO_BASED |
			       IBV_ACCESS_RELAXED_ORDERING | IBV_ACCESS_MW_BIND | IBV_ACCESS_HUGETLB;

	/* The kernel's rule: remote write or atomic needs local write. */
	if ((access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) &&
	    !(access & IBV_ACCESS_LOCAL_WRITE))
		return EINVAL;
	if (access & IBV_ACCESS_ON_DEMAND)
		return EOPNOTSUPP;
	/* Optional flags (relaxed ordering and above) may be ignored, the
	 * others must be known. */
	if (access & ~known & (IBV_ACCESS_OPTIONAL_FIRST - 1))
		return EINVAL;
	*out = (access & IBV_ACCESS_LOCAL_WRITE ? KINET_ACCESS_LOCAL_WRITE : 0) |
	       (access & IBV_ACCESS_REMOTE_WRITE ? KINET_ACCESS_REMOTE_WRITE : 0) |
	       (access & IBV_ACCESS_REMOTE_READ ? KINET_ACCESS_REMOTE_READ : 0) |
	       (access & IBV_ACCESS_REMOTE_ATOMIC ? KINET_ACCESS_REMOTE_ATOMIC : 0) |
	       (access & IBV_ACCESS_ZERO_BASED ? KINET_ACCESS_ZERO_BASED : 0);
	return 0;
}

static struct ibv_mr *reg(struct ibv_pd *pd, void *addr, size_t length, uint64_t iova, unsigned access)
{
	struct kinet_verbs_mr *mr;
	unsigned kaccess;
	int ret;

	if (!pd || !length) {
		errno = EINVAL;
		return NULL;
	}
	ret = access_flags(access, &kaccess);
	if (ret) {
		errno = ret;
		return NULL;
	}
	/* kinet names a region by its address or, zero-based, by offsets
	 * from 0: an iova that is neither is not something it can give. */
	if (iova != (uintptr_t)addr) {
		if (iova) {
			fprintf(stderr,
				"kinet verbs: an iova other than the address or 0 is not supported\n");
			errno = EOPNOTSUPP;
			return NULL;
		}
		kaccess |= KINET_ACCESS_ZERO_BASED;
	}
	mr = calloc(1, sizeof(*mr));
	if (!mr) {
		errno = ENOMEM;
		return NULL;
	}
	ret = kinet_mr_reg(kinet_verbs_ctx(pd->context)->kctx, addr, length, kaccess, &mr->kmr);
	if (ret) {
		free(mr);
		errno = kinet_verbs_errno(ret);
		return NULL;
	}
	mr->mr.context = pd->context;
	mr->mr.pd = pd;
	mr->mr.addr = addr;
	mr->mr.length = length;
	mr->mr.handle = kinet_mr_lkey(mr->kmr);
	mr->mr.lkey = kinet_mr_lkey(mr->kmr);
	mr->mr.rkey = kinet_mr_rkey(mr->kmr);
	return &mr->mr;
}

#undef ibv_reg_mr
KINET_VERBS_EXPORT struct ibv_mr *ibv_reg_mr(struct ibv_pd *pd, void *addr, size_t length, int access)
{
	return reg(pd, addr, length, (uintptr_t)addr, (unsigned)access);
}

#undef ibv_reg_mr_iova
KINET_VERBS_EXPORT struct ibv_mr *ibv_reg_mr_iova(struct ibv_pd *pd, void *addr, size_t length, uint64_t iova,
						  int access)
{
	return reg(pd, addr, length, iova, (unsigned)access);
}

KINET_VERBS_EXPORT struct ibv_mr *ibv_reg_mr_iova2(struct ibv_pd *pd, void *addr, size_t length,
						   uint64_t iova, unsigned int access)
{
	return reg(pd, addr, length, iova, access);
}

/* A dma-buf (GPU memory exported with cuMemGetHandleForAddressRange) is
 * registered by the address the program gives as iova, which must be the
 * address of the same bytes in this process: what GPU programs pass, and
 * what kinet registers (it reaches GPU memory by address).  The file must
 * be a dma-buf. */
KINET_VERBS_EXPORT struct ibv_mr *ibv_reg_dmabuf_mr(struct ibv_pd *pd, uint64_t offset, size_t length,
						    uint64_t iova, int fd, int access)
{
	char path[64], target[128];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	n = readlink(path, target, sizeof(target) - 1);
	if (fd < 0 || n < 0) {
		errno = EBADF;
		return NULL;
	}
	target[n] = 0;
	if (!strstr(target, "dmabuf")) {
		fprintf(stderr, "kinet verbs: ibv_reg_dmabuf_mr: fd %d is not a dma-buf (%s)\n", fd, target);
		errno = EINVAL;
		return NULL;
	}
	(void)offset;
	return reg(pd, (void *)(uintptr_t)iova, length, iova, (unsigned)access);
}

KINET_VERBS_EXPORT int ibv_dereg_mr(struct ibv_mr *ibmr)
{
	struct kinet_verbs_mr *mr = (struct kinet_verbs_mr *)ibmr;
	int ret;

	if (!mr)
		return EINVAL;
	ret = kinet_mr_dereg(mr->kmr);
	if (ret)
		return kinet_verbs_errno(ret);
	free(mr);
	return 0;
}
