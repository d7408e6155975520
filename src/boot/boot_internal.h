/*
 * Bootstrap internals: a star of TCP connections through rank 0.
 *
 * Every message is a frame: a 16-byte big-endian header (payload length 8,
 * operation 4, sequence number 4) and the payload.  The handshake is one
 * HELLO (magic, rank, nranks, version) from each rank, answered by WELCOME
 * once all ranks are in.  Each collective has a sequence number, the same on
 * every rank; rank 0 gathers, then scatters.  When rank 0 fails it sends
 * ABORT (errno, text) to the ranks it can still reach, then closes.
 */
#ifndef KINET_BOOT_INTERNAL_H
#define KINET_BOOT_INTERNAL_H

#include <netinet/in.h>
#include <stddef.h>
#include <stdint.h>

#include "driver.h"
#include "kinet/boot.h"
#include "sock.h"

#define BOOT_VERSION 1u
#define BOOT_HDR_BYTES 16
#define BOOT_HELLO_BYTES 20 /* magic 8, rank 4, nranks 4, version 4 */
#define BOOT_ABORT_MAX 256  /* errno 4 + text */

enum boot_op {
	BOOT_OP_HELLO = 1,
	BOOT_OP_WELCOME,
	BOOT_OP_ABORT,
	BOOT_OP_ALLGATHER,
	BOOT_OP_BARRIER,
	BOOT_OP_BCAST,
};

struct boot_hdr {
	uint64_t len;
	uint32_t op;
	uint32_t seq;
};

struct kinet_boot {
	int rank;
	int nranks;
	int timeout_ms;
	uint64_t magic;
	uint32_t seq;  /* collectives started */
	int broken;    /* errno that broke the star, 0 while sound */
	int *fds;      /* rank 0: fds[i] talks to rank i; others: fds[0] to rank 0 */
	char root[80]; /* rank 0's "host:port", for messages */
};

/* ---- big-endian fields (wire.c) ---- */
void boot_put32(uint8_t *p, uint32_t v);
void boot_put64(uint8_t *p, uint64_t v);
uint32_t boot_get32(const uint8_t *p);
uint64_t boot_get64(const uint8_t *p);
void boot_hdr_encode(uint8_t *buf, const struct boot_hdr *h);
void boot_hdr_decode(const uint8_t *buf, struct boot_hdr *h);
const char *boot_op_name(uint32_t op);

/* ---- addresses (addr.c) ---- */
/* Resolves "host:port" (IPv4).  Logs and returns -EINVAL when it cannot. */
int boot_parse_addr(const char *hostport, struct sockaddr_in *sa);
void boot_addr_str(const struct sockaddr_in *sa, char *buf, size_t size);
/* The address a unique id advertises (see kinet_boot_get_unique_id). */
int boot_local_addr(struct in_addr *addr);

/* ---- framed messages (sock.c; the sockets themselves: sock.h) ---- */
int boot_send_frame(int fd, uint32_t op, uint32_t seq, const void *payload, size_t len, uint64_t deadline);
int boot_recv_hdr(int fd, struct boot_hdr *h, uint64_t deadline);
/* Sends ABORT(err, text), waiting at most 100 ms. */
void boot_send_abort(int fd, uint32_t seq, int err, const char *text);
/* Reads an ABORT payload of len bytes and logs it; returns its -errno. */
int boot_recv_abort(int fd, uint64_t len, uint64_t deadline, int rank, const char *what);

/* ---- launchers (launcher.c) ---- */
/* Rank and size from the environment; *source names the variables. */
int boot_env_rank(int *rank, int *nranks, const char **source);

/* ---- unique ids (id.c) ---- */
struct boot_id_info {
	struct sockaddr_in sa;
	uint64_t magic;
};
int boot_id_decode(const struct kinet_boot_id *id, struct boot_id_info *info);
/* Takes rank 0's listening socket for magic, or -1 when this process has none. */
int boot_id_take_listener(uint64_t magic);
uint64_t boot_random64(void);

/* ---- handshake (handshake.c) ---- */
int boot_root_gather(struct kinet_boot *b, int lfd, uint64_t deadline);
int boot_join(struct kinet_boot *b, const struct sockaddr_in *sa, uint64_t deadline);
/* Formats a rank list: "3", "1, 3, 5-7". */
void boot_format_ranks(const int *ranks, int n, char *buf, size_t size);

/* ---- object (boot.c) ---- */
/* Creates the object and runs the handshake; lfd (rank 0) is consumed. */
int boot_start(int rank, int nranks, int timeout_ms, uint64_t magic, const struct sockaddr_in *sa,
	       const char *root_name, int lfd, struct kinet_boot **boot);
int boot_default_timeout(void);

/* ---- collectives (coll.c) ---- */
/* Logs "bootstrap: <text>" and marks b broken with err: rank 0 sends
 * ABORT(err, text) to every rank it still has, then every connection is
 * shut down.  Returns -err. */
int boot_fail(struct kinet_boot *b, int err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif /* KINET_BOOT_INTERNAL_H */
