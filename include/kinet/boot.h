/*
 * kinet bootstrap: how the processes of a job find each other before they
 * connect queue pairs.  Every rank learns its rank and the job size, and the
 * ranks exchange small blobs (QP and MR descriptors) with allgather, barrier
 * and broadcast over TCP, in a star through rank 0.
 *
 * Two ways in:
 *   - kinet_boot_init(): rank and size from the launcher's environment
 *     (kinetrun, mpirun, srun, ...), rank 0's address from $KINET_ROOT;
 *   - kinet_boot_get_unique_id() + kinet_boot_init_with_id(): as NCCL, rank 0
 *     makes an id and the application hands it to the other ranks itself.
 *
 * Every blocking step is bounded by a timeout (attr->timeout_ms, else
 * $KINET_BOOT_TIMEOUT_MS, else 30000 ms), also the collectives: a rank that
 * never arrives, a root that never answers or a peer that dies make the
 * call fail (-ETIMEDOUT, -ECONNRESET, -EPIPE) with an error log naming the
 * ranks involved; nothing waits forever.  After a failed collective the
 * object only answers -ENOTCONN, except kinet_boot_fini().
 *
 * A bootstrap object is not thread-safe: one thread at a time per object.
 * Every rank must call the collectives in the same order with the same
 * sizes; a mismatch is detected and fails with -EPROTO.
 *
 * Functions return 0 on success and a negative errno on failure.
 */
#ifndef KINET_BOOT_H
#define KINET_BOOT_H

#include <stddef.h>
#include <stdint.h>

#include "kinet/api.h"

#ifdef __cplusplus
extern "C" {
#endif

struct kinet_boot;

struct kinet_boot_attr {
	uint32_t size;	  /* sizeof(struct kinet_boot_attr), or 0 (kinet_ctx(3), "Attributes") */
	int timeout_ms;	  /* bound of every blocking step; 0: $KINET_BOOT_TIMEOUT_MS or 30000 */
	const char *root; /* "host:port" of rank 0; NULL: $KINET_ROOT */
};

/* Fills attr with the defaults (its size, timeout_ms 0, root NULL). */
KINET_API void kinet_boot_attr_init(struct kinet_boot_attr *attr);

/*
 * kinet_boot_init - join the job described by the environment
 *
 * attr: NULL for the defaults, see struct kinet_boot_attr.
 * boot: receives the new object; set to NULL on failure.
 *
 * The rank and size come from the first of these pairs that is set:
 *   KINET_RANK, KINET_NRANKS                        (kinetrun)
 *   OMPI_COMM_WORLD_RANK, OMPI_COMM_WORLD_SIZE      (Open MPI's mpirun)
 *   PMI_RANK, PMI_SIZE                              (MPICH/Hydra, PMI)
 *   SLURM_PROCID, SLURM_NTASKS                      (srun)
 * With more than one rank, attr->root or $KINET_ROOT must give the
 * "host:port" (IPv4 address or name) where rank 0 listens: rank 0 listens
 * on that port of every interface, the others connect to host, retrying
 * until the timeout.  Returns when every rank has joined.
 *
 * Errors:
 *   -EINVAL      a bad argument, a malformed or inconsistent variable, a
 *                job of several ranks without KINET_ROOT, a root address
 *                that does not resolve, a rank whose size differs from
 *                rank 0's;
 *   -ENOENT      no launcher variables at all;
 *   -EADDRINUSE  (rank 0) the root port is taken;
 *   -ETIMEDOUT   (rank 0) some ranks did not connect in time (they are
 *                named in the log); (others) the root could not be
 *                reached or did not finish the handshake in time;
 *   -ECONNRESET  the root closed the connection during the handshake;
 *   -EPROTO      a peer speaks another protocol version;
 *   -ENOMEM      out of memory.
 */
KINET_API int kinet_boot_init(const struct kinet_boot_attr *attr, struct kinet_boot **boot);

/* An opaque job id, as ncclUniqueId: rank 0's address and port and a
 * random key.  Plain bytes, safe to copy between machines. */
#define KINET_BOOT_ID_BYTES 128
struct kinet_boot_id {
	unsigned char internal[KINET_BOOT_ID_BYTES];
};

/*
 * kinet_boot_get_unique_id - make an id for kinet_boot_init_with_id
 *
 * id: receives the id.
 *
 * Called once, by the process that will be rank 0: it opens a listening TCP
 * socket on an ephemeral port of every interface, kept open in the process
 * until rank 0 calls kinet_boot_init_with_id() with the id.  The address
 * put in the id is $KINET_BOOT_ADDR when set (IPv4 address or host name),
 * else the first IPv4 address of an interface that is up and not loopback,
 * else 127.0.0.1.
 *
 * Errors: -EINVAL (id NULL, bad $KINET_BOOT_ADDR), -ENOMEM, or the errno of
 * socket(), bind() or listen().
 */
KINET_API int kinet_boot_get_unique_id(struct kinet_boot_id *id);

/*
 * kinet_boot_init_with_id - join the job of a unique id
 *
 * id:     from kinet_boot_get_unique_id(), the same bytes on every rank.
 * rank:   this process's rank, 0 <= rank < nranks.  Rank 0 must be the
 *         process that made the id.
 * nranks: the number of ranks, the same on every rank.
 * boot:   receives the new object; set to NULL on failure.
 *
 * The timeout is $KINET_BOOT_TIMEOUT_MS or 30000 ms; see
 * kinet_boot_set_timeout() for the collectives that follow.  Returns when
 * every rank has joined.  An id serves one job: rank 0 takes its listening
 * socket and closes it once all ranks have joined.
 *
 * Errors: as kinet_boot_init(), and -EINVAL when the id is not one, or rank
 * 0 calls from a process that did not make the id (or uses it twice).
 */
KINET_API int kinet_boot_init_with_id(const struct kinet_boot_id *id, int rank, int nranks,
				      struct kinet_boot **boot);

/* This process's rank, and the number of ranks (at least 1). */
KINET_API int kinet_boot_rank(const struct kinet_boot *boot);
KINET_API int kinet_boot_size(const struct kinet_boot *boot);

/*
 * kinet_boot_set_timeout - change the bound of the following collectives
 *
 * timeout_ms > 0.  Ranks may reach a collective up to timeout_ms apart.
 * Errors: -EINVAL.
 */
KINET_API int kinet_boot_set_timeout(struct kinet_boot *boot, int timeout_ms);

/*
 * kinet_boot_allgather - gather one blob from every rank, on every rank
 *
 * mine: this rank's len bytes.
 * all:  receives nranks * len bytes: rank i's blob at all + i * len.  May
 *       not overlap mine, except that mine may be all + rank * len.
 * len:  the same on every rank; 0 acts as a barrier.
 *
 * Errors:
 *   -EINVAL      bad arguments, or nranks * len too large;
 *   -ETIMEDOUT   a rank did not reach the call within the timeout;
 *   -ECONNRESET  a rank (or rank 0) closed its connection: it exited or
 *                failed;
 *   -EPIPE       a send found the connection closed;
 *   -EPROTO      ranks called different collectives, or different len;
 *   -ENOTCONN    an earlier collective failed.
 * Rank 0 tells the other ranks why it failed; they return the same errno.
 */
KINET_API int kinet_boot_allgather(struct kinet_boot *boot, const void *mine, void *all, size_t len);

/*
 * kinet_boot_barrier - wait until every rank has called it
 *
 * Errors: as kinet_boot_allgather().
 */
KINET_API int kinet_boot_barrier(struct kinet_boot *boot);

/*
 * kinet_boot_bcast - copy len bytes from rank root to every rank
 *
 * buf:  on root, the data; on the others, receives it.
 * len:  the same on every rank.
 * root: the sending rank, the same on every rank.
 *
 * The root returns once its data is sent; the others once they have it.
 * Errors: as kinet_boot_allgather().
 */
KINET_API int kinet_boot_bcast(struct kinet_boot *boot, void *buf, size_t len, int root);

/*
 * kinet_boot_fini - leave the job and free the object
 *
 * Closes the connections without waiting for the other ranks (call
 * kinet_boot_barrier() first to leave together).  NULL is allowed.
 * Returns 0.
 */
KINET_API int kinet_boot_fini(struct kinet_boot *boot);

#ifdef __cplusplus
}
#endif

#endif /* KINET_BOOT_H */
