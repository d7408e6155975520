/*
 * The examples' traffic from the other side (traffic.h).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/ip_icmp.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "traffic.h"

static void pause_us(uint32_t us)
{
	struct timespec ts = {(time_t)(us / 1000000u), (long)(us % 1000000u) * 1000L};
	nanosleep(&ts, NULL);
}

static int fail(const char *what)
{
	int e = errno;
	fprintf(stderr, "traffic: %s: %s\n", what, strerror(e));
	return -e;
}

static int send_udp(const struct sockaddr_in *to, const void *p, size_t n)
{
	int fd = socket(AF_INET, SOCK_DGRAM, 0);
	int rc = fd < 0 || sendto(fd, p, n, 0, (const struct sockaddr *)to, sizeof(*to)) != (ssize_t)n
			 ? fail("UDP sendto")
			 : 0;
	if (fd >= 0)
		close(fd);
	return rc;
}

/* One SYN: the closed port answers with a reset, so connect fails at once
 * and the stack sends no second SYN.  Bounded by a second. */
static int syn(const struct sockaddr_in *to)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return fail("TCP socket");
	if (connect(fd, (const struct sockaddr *)to, sizeof(*to)) && errno != EINPROGRESS) {
		int rc = errno == ECONNREFUSED ? 0 : fail("TCP connect");
		close(fd);
		return rc;
	}
	struct pollfd p = {fd, POLLOUT, 0};
	int n = poll(&p, 1, 1000);
	close(fd);
	if (n != 1) {
		fprintf(stderr, "traffic: TCP connect: no reset within 1 s\n");
		return -ETIMEDOUT;
	}
	return 0;
}

static uint16_t icmp_sum(const void *p, size_t n)
{
	const uint8_t *b = (const uint8_t *)p;
	uint32_t s = 0;
	for (size_t i = 0; i + 1 < n; i += 2)
		s += (uint32_t)(b[i] << 8 | b[i + 1]);
	if (n & 1)
		s += (uint32_t)b[n - 1] << 8;
	while (s >> 16)
		s = (s & 0xffffu) + (s >> 16);
	return htons((uint16_t)~s);
}

static int ping(int fd, const struct sockaddr_in *to, uint16_t seq)
{
	struct icmphdr h;
	memset(&h, 0, sizeof(h));
	h.type = ICMP_ECHO;
	h.un.echo.id = htons((uint16_t)getpid());
	h.un.echo.sequence = htons(seq);
	h.checksum = icmp_sum(&h, sizeof(h));
	return sendto(fd, &h, sizeof(h), 0, (const struct sockaddr *)to, sizeof(*to)) == (ssize_t)sizeof(h)
		       ? 0
		       : fail("ICMP sendto");
}

int traffic_send(const char *peer, uint16_t port, const struct traffic_counts *c, uint32_t gap_us)
{
	struct sockaddr_in to;
	int rc = 0, icmp = -1;
	static const char payload[] = "kinet eth example datagram";
	static const char stop[] = "KINET-STOP";

	memset(&to, 0, sizeof(to));
	to.sin_family = AF_INET;
	if (inet_pton(AF_INET, peer, &to.sin_addr) != 1) {
		fprintf(stderr, "traffic: %s: not an IPv4 address\n", peer);
		return -EINVAL;
	}
	if (c->icmp && (icmp = socket(AF_INET, SOCK_RAW, IPPROTO_ICMP)) < 0)
		return fail("ICMP raw socket (needs CAP_NET_RAW)");
	for (uint32_t i = 0; !rc && i < c->udp; i++, pause_us(gap_us)) {
		to.sin_port = htons(port);
		rc = send_udp(&to, payload, sizeof(payload));
	}
	for (uint32_t i = 0; !rc && i < c->tcp; i++, pause_us(gap_us)) {
		to.sin_port = htons((uint16_t)(port + 1));
		rc = syn(&to);
	}
	for (uint32_t i = 0; !rc && i < c->icmp; i++, pause_us(gap_us))
		rc = ping(icmp, &to, (uint16_t)i);
	if (icmp >= 0)
		close(icmp);
	if (!rc) {
		to.sin_port = htons(port);
		rc = send_udp(&to, stop, sizeof(stop) - 1);
	}
	if (!rc)
		printf("traffic: sent %u UDP, %u TCP SYN, %u ICMP echo to %s, then the stop datagram\n",
		       c->udp, c->tcp, c->icmp, peer);
	return rc;
}
