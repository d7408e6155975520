/*
 * NCCL, loaded at run time (dlopen) for the all-to-all benchmark's
 * comparison: no build or link dependency.  The library is
 * $KINET_NCCL_LIB when set (run-gpu.sh points it at the one PyTorch's
 * nvidia-nccl package installs), else libnccl.so.2 from the loader's path.
 *
 * The few declarations below are NCCL's C ABI as nccl.h (2.x) gives it:
 * an opaque communicator, a 128-byte unique id, int results (0: success),
 * and ncclUint8 = 1.  Streams are passed as void * (cudaStream_t).
 */
#ifndef KINET_BENCH_NCCL_DL_H
#define KINET_BENCH_NCCL_DL_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define NCCL_DL_ID_BYTES 128
#define NCCL_DL_UINT8 1

struct nccl_dl_id {
	char internal[NCCL_DL_ID_BYTES];
};

struct nccl_dl {
	void *lib;
	int version; /* ncclGetVersion: major * 10000 + minor * 100 + patch */
	char path[512];
	int (*get_version)(int *);
	int (*get_unique_id)(struct nccl_dl_id *);
	int (*comm_init_rank)(void **comm, int nranks, struct nccl_dl_id id, int rank);
	int (*comm_destroy)(void *comm);
	int (*alltoall)(const void *, void *, size_t, int, void *, void *); /* NULL before 2.28 */
	int (*send)(const void *, size_t, int, int, void *, void *);
	int (*recv)(void *, size_t, int, int, void *, void *);
	int (*group_start)(void);
	int (*group_end)(void);
	const char *(*error_string)(int);
};

/* 0, or -1 with *why (static text) when NCCL cannot be loaded. */
int nccl_dl_open(struct nccl_dl *n, const char **why);
void nccl_dl_close(struct nccl_dl *n);

#ifdef __cplusplus
}
#endif

#endif /* KINET_BENCH_NCCL_DL_H */
