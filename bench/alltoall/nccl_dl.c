/*
 * NCCL loaded at run time (nccl_dl.h).
 */
#include "nccl_dl.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void *sym(void *lib, const char *name, int *missing)
{
	void *p = dlsym(lib, name);
	if (!p)
		(*missing)++;
	return p;
}

int nccl_dl_open(struct nccl_dl *n, const char **why)
{
	const char *path = getenv("KINET_NCCL_LIB");
	int missing = 0;

	memset(n, 0, sizeof(*n));
	if (!path || !*path)
		path = "libnccl.so.2";
	snprintf(n->path, sizeof(n->path), "%s", path);
	n->lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!n->lib) {
		*why = "libnccl.so.2 not found (set KINET_NCCL_LIB to its path)";
		return -1;
	}
	/* Casts through void *: POSIX guarantees dlsym's result converts. */
	*(void **)&n->get_version = sym(n->lib, "ncclGetVersion", &missing);
	*(void **)&n->get_unique_id = sym(n->lib, "ncclGetUniqueId", &missing);
	*(void **)&n->comm_init_rank = sym(n->lib, "ncclCommInitRank", &missing);
	*(void **)&n->comm_destroy = sym(n->lib, "ncclCommDestroy", &missing);
	*(void **)&n->send = sym(n->lib, "ncclSend", &missing);
	*(void **)&n->recv = sym(n->lib, "ncclRecv", &missing);
	*(void **)&n->group_start = sym(n->lib, "ncclGroupStart", &missing);
	*(void **)&n->group_end = sym(n->lib, "ncclGroupEnd", &missing);
	*(void **)&n->error_string = sym(n->lib, "ncclGetErrorString", &missing);
	*(void **)&n->alltoall = dlsym(n->lib, "ncclAlltoAll"); /* optional */
	if (missing || n->get_version(&n->version)) {
		*why = "the NCCL library lacks ncclSend/ncclRecv or its version";
		nccl_dl_close(n);
		return -1;
	}
	return 0;
}

void nccl_dl_close(struct nccl_dl *n)
{
	if (n->lib)
		dlclose(n->lib);
	memset(n, 0, sizeof(*n));
}
