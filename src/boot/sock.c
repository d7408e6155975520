/*
 * Non-blocking TCP sockets of the bootstrap.  Every wait is a poll() bounded
 * by a deadline; sends use MSG_NOSIGNAL, so a closed peer is -EPIPE, never
 * SIGPIPE.
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "boot_internal.h"

static int new_socket(void)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	int one = 1;

	if (fd >= 0)
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fd;
}

int boot_listen(const struct sockaddr_in *sa, int backlog, int *fd)
{
	char name[64];
	int one = 1, s, rc;

	s = new_socket();
	if (s < 0)
		return -errno;
	setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	rc = bind(s, (const struct sockaddr *)sa, sizeof(*sa));
	if (rc == 0)
		rc = listen(s, backlog);
	if (rc != 0) {
		rc = -errno;
		boot_addr_str(sa, name, sizeof(name));
		KINET_ERR("bootstrap: rank 0 cannot listen on %s: %s", name, strerror(-rc));
		close(s);
		return rc;
	}
	*fd = s;
	return 0;
}

static int wait_fd(int fd, short events, uint64_t deadline)
{
	struct pollfd p = {.fd = fd, .events = events};

	for (;;) {
		int rc = poll(&p, 1, boot_ms_left(deadline));

		if (rc > 0)
			return 0;
		if (rc == 0)
			return -ETIMEDOUT;
		if (errno != EINTR)
			return -errno;
	}
}

int boot_connect(const struct sockaddr_in *sa, uint64_t deadline, int *fd)
{
	socklen_t elen = sizeof(int);
	int s, rc, err = 0;

	s = new_socket();
	if (s < 0)
		return -errno;
	rc = connect(s, (const struct sockaddr *)sa, sizeof(*sa));
	if (rc != 0 && errno != EINPROGRESS) {
		rc = -errno;
		close(s);
		return rc;
	}
	if (rc != 0) {
		rc = wait_fd(s, POLLOUT, deadline);
		if (rc == 0 && getsockopt(s, SOL_SOCKET, SO_ERROR, &err, &elen) != 0)
			err = errno;
		if (rc == 0 && err)
			rc = -err;
		if (rc != 0) {
			close(s);
			return rc;
		}
	}
	*fd = s;
	return 0;
}

static int io_errno(int err)
{
	if (err == EPIPE)
		return -EPIPE;
	if (err == ECONNRESET || err == ENOTCONN || err == ECONNABORTED || err == ESHUTDOWN)
		return -ECONNRESET;
	return -err;
}

int boot_send_all(int fd, const void *buf, size_t len, uint64_t deadline)
{
	const uint8_t *p = buf;

	while (len) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL);
		int rc;

		if (n > 0) {
			p += n;
			len -= (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
			return io_errno(errno);
		rc = wait_fd(fd, POLLOUT, deadline);
		if (rc)
			return rc;
	}
	return 0;
}

int boot_recv_all(int fd, void *buf, size_t len, uint64_t deadline)
{
	uint8_t *p = buf;

	while (len) {
		ssize_t n = recv(fd, p, len, 0);
		int rc;

		if (n > 0) {
			p += n;
			len -= (size_t)n;
			continue;
		}
		if (n == 0)
			return -ECONNRESET;
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN && errno != EWOULDBLOCK)
			return io_errno(errno);
		rc = wait_fd(fd, POLLIN, deadline);
		if (rc)
			return rc;
	}
	return 0;
}

int boot_send_frame(int fd, uint32_t op, uint32_t seq, const void *payload, size_t len, uint64_t deadline)
{
	struct boot_hdr h = {.len = len, .op = op, .seq = seq};
	uint8_t hdr[BOOT_HDR_BYTES];
	int rc;

	boot_hdr_encode(hdr, &h);
	rc = boot_send_all(fd, hdr, sizeof(hdr), deadline);
	if (rc == 0 && len)
		rc = boot_send_all(fd, payload, len, deadline);
	return rc;
}

int boot_recv_hdr(int fd, struct boot_hdr *h, uint64_t deadline)
{
	uint8_t hdr[BOOT_HDR_BYTES];
	int rc = boot_recv_all(fd, hdr, sizeof(hdr), deadline);

	if (rc == 0)
		boot_hdr_decode(hdr, h);
	return rc;
}

void boot_send_abort(int fd, uint32_t seq, int err, const char *text)
{
	uint8_t msg[BOOT_ABORT_MAX];
	size_t tlen = strnlen(text, sizeof(msg) - 4);

	boot_put32(msg, (uint32_t)err);
	memcpy(msg + 4, text, tlen);
	boot_send_frame(fd, BOOT_OP_ABORT, seq, msg, 4 + tlen, boot_deadline(100));
}

int boot_recv_abort(int fd, uint64_t len, uint64_t deadline, int rank, const char *what)
{
	uint8_t msg[BOOT_ABORT_MAX + 1];
	int err;

	if (len < 4 || len > BOOT_ABORT_MAX || boot_recv_all(fd, msg, len, deadline) != 0) {
		KINET_ERR("bootstrap: rank %d: rank 0 aborted the %s", rank, what);
		return -ECONNRESET;
	}
	msg[len] = 0;
	err = (int)boot_get32(msg);
	if (err <= 0 || err > 4095)
		err = ECONNRESET;
	KINET_ERR("bootstrap: rank %d: rank 0 aborted the %s: %s", rank, what, (const char *)msg + 4);
	return -err;
}
