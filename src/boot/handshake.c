/*
 * The handshake: rank 0 accepts until every rank has said HELLO with the
 * job's key, then answers WELCOME to all; the others connect (retrying until
 * the deadline), say HELLO and wait for the answer.
 */
#define _GNU_SOURCE /* accept4 */
#include <errno.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "boot_internal.h"

#define HELLO_FRAME (BOOT_HDR_BYTES + BOOT_HELLO_BYTES)

/* A connection accepted by rank 0 that has not said HELLO yet. */
struct pending {
	int fd;
	size_t got;
	uint8_t buf[HELLO_FRAME];
};

void boot_format_ranks(const int *ranks, int n, char *buf, size_t size)
{
	size_t off = 0;

	buf[0] = 0;
	for (int i = 0; i < n && off + 16 < size; i++) {
		int j = i;

		while (j + 1 < n && ranks[j + 1] == ranks[j] + 1)
			j++;
		if (j > i)
			off += (size_t)snprintf(buf + off, size - off, "%s%d-%d", i ? ", " : "", ranks[i],
						ranks[j]);
		else
			off += (size_t)snprintf(buf + off, size - off, "%s%d", i ? ", " : "", ranks[i]);
		i = j;
		if (i + 1 < n && off + 16 >= size)
			snprintf(buf + off, size - off, ", ...");
	}
}

static int report_missing(struct kinet_boot *b)
{
	char list[256];
	int *missing = malloc(sizeof(int) * (size_t)b->nranks);
	int n = 0;

	if (!missing)
		return boot_fail(b, ETIMEDOUT, "ranks did not connect to %s within %d ms", b->root,
				 b->timeout_ms);
	for (int i = 1; i < b->nranks; i++)
		if (b->fds[i] < 0)
			missing[n++] = i;
	boot_format_ranks(missing, n, list, sizeof(list));
	free(missing);
	return boot_fail(b, ETIMEDOUT, "rank(s) %s did not connect to %s within %d ms", list, b->root,
			 b->timeout_ms);
}

/* Rejects a peer whose HELLO contradicts the job. */
static int reject(struct kinet_boot *b, int fd, int err, const char *text)
{
	boot_send_abort(fd, 0, err, text);
	close(fd);
	return boot_fail(b, err, "%s", text);
}

/* 1: the peer joined; 0: not one of ours, dropped; < 0: the job is broken. */
static int check_hello(struct kinet_boot *b, struct pending *p)
{
	const uint8_t *m = p->buf + BOOT_HDR_BYTES;
	struct boot_hdr h;
	uint32_t rank, nranks, version;
	char text[200];

	boot_hdr_decode(p->buf, &h);
	if (h.op != BOOT_OP_HELLO || h.len != BOOT_HELLO_BYTES || boot_get64(m) != b->magic) {
		KINET_WARN("bootstrap: dropped a connection to %s that is not from this job", b->root);
		close(p->fd);
		return 0;
	}
	rank = boot_get32(m + 8);
	nranks = boot_get32(m + 12);
	version = boot_get32(m + 16);
	if (version != BOOT_VERSION) {
		snprintf(text, sizeof(text), "rank %u speaks bootstrap protocol %u, rank 0 speaks %u", rank,
			 version, BOOT_VERSION);
		return reject(b, p->fd, EPROTO, text);
	}
	if (nranks != (uint32_t)b->nranks || rank == 0 || rank >= nranks) {
		snprintf(text, sizeof(text), "rank %u of %u joined a job of %d ranks", rank, nranks,
			 b->nranks);
		return reject(b, p->fd, EINVAL, text);
	}
	if (b->fds[rank] >= 0) {
		snprintf(text, sizeof(text), "two processes claim rank %u", rank);
		return reject(b, p->fd, EINVAL, text);
	}
	b->fds[rank] = p->fd;
	return 1;
}

/* Reads what pending peer p sent.  2: it joined; 1: dropped; 0: needs
 * more; < 0: the job is broken. */
static int read_hello(struct kinet_boot *b, struct pending *p)
{
	ssize_t n = recv(p->fd, p->buf + p->got, HELLO_FRAME - p->got, 0);
	int rc;

	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
		return 0;
	if (n <= 0) {
		close(p->fd);
		return 1;
	}
	p->got += (size_t)n;
	if (p->got < HELLO_FRAME)
		return 0;
	rc = check_hello(b, p);
	if (rc < 0)
		p->fd = -1; /* closed by reject() */
	return rc < 0 ? rc : rc + 1;
}

static void accept_all(int lfd, struct pending *pend, int *np, int npmax)
{
	int one = 1, fd;

	while ((fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0) {
		if (*np == npmax) {
			close(fd);
			continue;
		}
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		pend[*np].fd = fd;
		pend[*np].got = 0;
		(*np)++;
	}
}

int boot_root_gather(struct kinet_boot *b, int lfd, uint64_t deadline)
{
	int npmax = b->nranks + 64, np = 0, joined = 1, rc = 0;
	struct pending *pend = calloc((size_t)npmax, sizeof(*pend));
	struct pollfd *pfd = calloc((size_t)npmax + 1, sizeof(*pfd));

	if (!pend || !pfd) {
		rc = boot_fail(b, ENOMEM, "out of memory in the handshake");
		goto out;
	}
	while (joined < b->nranks && rc == 0) {
		int ms = boot_ms_left(deadline), n;

		if (ms == 0) {
			rc = report_missing(b);
			break;
		}
		pfd[0] = (struct pollfd){.fd = lfd, .events = POLLIN};
		for (int i = 0; i < np; i++)
			pfd[i + 1] = (struct pollfd){.fd = pend[i].fd, .events = POLLIN};
		n = poll(pfd, (nfds_t)np + 1, ms);
		if (n < 0 && errno != EINTR)
			rc = boot_fail(b, errno, "poll: %s", strerror(errno));
		if (n <= 0)
			continue;
		/* Backwards, so that moving the last entry into a hole is safe. */
		for (int i = np - 1; i >= 0 && rc == 0; i--) {
			if (!pfd[i + 1].revents)
				continue;
			rc = read_hello(b, &pend[i]);
			if (rc > 0) {
				joined += rc == 2;
				pend[i] = pend[--np];
				rc = 0;
			}
		}
		if (rc == 0 && (pfd[0].revents & POLLIN))
			accept_all(lfd, pend, &np, npmax);
	}
	for (int i = 1; i < b->nranks && rc == 0; i++) {
		rc = boot_send_frame(b->fds[i], BOOT_OP_WELCOME, 0, NULL, 0, deadline);
		if (rc)
			rc = boot_fail(b, -rc, "rank %d left during the handshake: %s", i, strerror(-rc));
	}
out:
	for (int i = 0; i < np; i++)
		if (pend[i].fd >= 0)
			close(pend[i].fd);
	free(pend);
	free(pfd);
	return rc;
}

static bool retryable(int err)
{
	return err == ECONNREFUSED || err == ETIMEDOUT || err == EHOSTUNREACH || err == ENETUNREACH ||
	       err == ECONNRESET || err == EAGAIN || err == EINTR;
}

/* Connects to rank 0, retrying until the deadline. */
static int connect_root(struct kinet_boot *b, const struct sockaddr_in *sa, uint64_t deadline, int *fd)
{
	int backoff_ms = 10, rc;

	for (;;) {
		rc = boot_connect(sa, deadline, fd);
		if (rc == 0)
			return 0;
		if (!retryable(-rc)) {
			KINET_ERR("bootstrap: rank %d cannot connect to root %s: %s", b->rank, b->root,
				  strerror(-rc));
			return rc;
		}
		if (boot_ms_left(deadline) == 0) {
			KINET_ERR("bootstrap: rank %d could not reach root %s within %d ms (%s)", b->rank,
				  b->root, b->timeout_ms, strerror(-rc));
			return -ETIMEDOUT;
		}
		int ms = boot_ms_left(deadline);
		usleep((useconds_t)(ms < backoff_ms ? ms : backoff_ms) * 1000u);
		backoff_ms = backoff_ms * 2 > 200 ? 200 : backoff_ms * 2;
	}
}

int boot_join(struct kinet_boot *b, const struct sockaddr_in *sa, uint64_t deadline)
{
	uint8_t hello[BOOT_HELLO_BYTES];
	struct boot_hdr h;
	int fd = -1, rc;

	rc = connect_root(b, sa, deadline, &fd);
	if (rc)
		return rc;
	boot_put64(hello, b->magic);
	boot_put32(hello + 8, (uint32_t)b->rank);
	boot_put32(hello + 12, (uint32_t)b->nranks);
	boot_put32(hello + 16, BOOT_VERSION);
	rc = boot_send_frame(fd, BOOT_OP_HELLO, 0, hello, sizeof(hello), deadline);
	if (rc == 0)
		rc = boot_recv_hdr(fd, &h, deadline);
	if (rc == -ETIMEDOUT)
		KINET_ERR("bootstrap: rank %d could not reach root %s: it did not complete the handshake "
			  "within %d ms (rank 0 not started, or still waiting for other ranks)",
			  b->rank, b->root, b->timeout_ms);
	else if (rc)
		KINET_ERR("bootstrap: rank %d: root %s closed the connection during the handshake (%s)",
			  b->rank, b->root, strerror(-rc));
	else if (h.op == BOOT_OP_ABORT)
		rc = boot_recv_abort(fd, h.len, deadline, b->rank, "handshake");
	else if (h.op != BOOT_OP_WELCOME || h.len != 0)
		rc = boot_fail(b, EPROTO, "rank %d: root %s answered the handshake with %s", b->rank, b->root,
			       boot_op_name(h.op));
	if (rc) {
		close(fd);
		return rc;
	}
	b->fds[0] = fd;
	return 0;
}
