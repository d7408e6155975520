/*
 * TCP with deadlines (wire.c, sock.c): what the bootstrap's star is made
 * of, and what the verbs front door's QPN directory uses to ask a peer.
 * Every socket is non-blocking and every wait a poll() bounded by a
 * deadline (kinet_now_ns() time); sends use MSG_NOSIGNAL.  Standalone: it
 * names nothing of the bootstrap's state.
 */
#ifndef KINET_BOOT_SOCK_H
#define KINET_BOOT_SOCK_H

#include <netinet/in.h>
#include <stddef.h>
#include <stdint.h>

/* ---- time (wire.c) ---- */
uint64_t boot_deadline(int timeout_ms);
/* Milliseconds left until deadline, rounded up; 0 once passed. */
int boot_ms_left(uint64_t deadline);

/* ---- sockets (sock.c) ---- */
/* Listens on sa (SO_REUSEADDR); logs failures. */
int boot_listen(const struct sockaddr_in *sa, int backlog, int *fd);
/* One connection attempt, bounded by deadline: 0, -ECONNREFUSED, -ETIMEDOUT, ... */
int boot_connect(const struct sockaddr_in *sa, uint64_t deadline, int *fd);
/* Both return 0, -ETIMEDOUT, -ECONNRESET (EOF or reset), -EPIPE; fd must
 * be non-blocking for the deadline to hold. */
int boot_send_all(int fd, const void *buf, size_t len, uint64_t deadline);
int boot_recv_all(int fd, void *buf, size_t len, uint64_t deadline);

#endif /* KINET_BOOT_SOCK_H */
