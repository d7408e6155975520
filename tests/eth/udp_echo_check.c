/*
 * udp_echo_check: both ends of kinet-netns-run's self-test (ctest
 * netns_run_selftest), a UDP echo across the veth pair.
 *
 *   udp_echo_check server ADDR PORT [COUNT]
 *     binds ADDR:PORT, prints "ready", echoes every datagram back to its
 *     sender; exits 0 after COUNT of them (default: runs until killed).
 *   udp_echo_check server-spin ADDR PORT [COUNT]
 *     the same, spinning on a non-blocking socket instead of sleeping in
 *     recvfrom (the kernel socket echo of bench/ethernet.sh, beside echoes
 *     that spin too)
 *   udp_echo_check client ADDR PORT COUNT
 *     sends COUNT datagrams (16..1415 bytes, a pattern of their number) to
 *     ADDR:PORT; each must come back byte-exact from ADDR:PORT within
 *     TRY_MS (a few tries: the first one waits for ARP).
 *
 * Where kinet-netns-run set them, it also checks its environment: the
 * server that KT_ADDR is the address it was given (the {ADDR} token and
 * the variable agree), the client that after the exchange the kernel's
 * neighbour table (/proc/net/arp, this namespace's) has ADDR at
 * KT_PEER_MAC on KT_IFACE.  Exit 0 when all holds, else 1 saying what.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define TRY_MS 1000
#define TRIES 5
#define MAX_LEN 1500

static int die(const char *what)
{
	fprintf(stderr, "udp_echo_check: %s\n", what);
	return 1;
}

static int socket_at(const char *addr, int port, struct sockaddr_in *sa)
{
	*sa = (struct sockaddr_in){.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	if (inet_pton(AF_INET, addr, &sa->sin_addr) != 1)
		return -1;
	return socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
}

static int server(const char *addr, int port, long count, bool spin)
{
	const char *env = getenv("KT_ADDR");
	struct sockaddr_in me, from;
	char buf[MAX_LEN];
	int s = socket_at(addr, port, &me);

	if (env && strcmp(env, addr))
		return die("KT_ADDR is not the address given ({ADDR})");
	if (s < 0 || bind(s, (struct sockaddr *)&me, sizeof(me)))
		return die(strerror(errno));
	printf("udp echo server on %s:%d ready\n", addr, port);
	fflush(stdout);
	for (long n = 0; count <= 0 || n < count; n++) {
		socklen_t fl = sizeof(from);
		ssize_t len =
			recvfrom(s, buf, sizeof(buf), spin ? MSG_DONTWAIT : 0, (struct sockaddr *)&from, &fl);

		if (len < 0 && spin && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			n--;
			continue;
		}
		if (len < 0 || sendto(s, buf, (size_t)len, 0, (struct sockaddr *)&from, fl) != len)
			return die(strerror(errno));
	}
	close(s);
	return 0;
}

static size_t fill(char *buf, long seq)
{
	size_t len = 16 + (size_t)(seq * 37) % 1400;

	for (size_t i = 0; i < len; i++)
		buf[i] = (char)(seq * 131 + (long)i);
	memcpy(buf, &seq, sizeof(seq));
	return len;
}

/* Whether the echo of want (len bytes) comes back from peer in time. */
static bool echoed(int s, const struct sockaddr_in *peer, const char *want, size_t len)
{
	struct pollfd pfd = {.fd = s, .events = POLLIN};
	struct sockaddr_in from;
	char got[MAX_LEN];

	while (poll(&pfd, 1, TRY_MS) == 1) {
		socklen_t fl = sizeof(from);
		ssize_t n = recvfrom(s, got, sizeof(got), 0, (struct sockaddr *)&from, &fl);

		if (n == (ssize_t)len && !memcmp(got, want, len) &&
		    from.sin_addr.s_addr == peer->sin_addr.s_addr && from.sin_port == peer->sin_port)
			return true;
	}
	return false;
}

/* ADDR at KT_PEER_MAC on KT_IFACE in this namespace's neighbour table. */
static int check_arp(const char *addr)
{
	const char *mac = getenv("KT_PEER_MAC"), *iface = getenv("KT_IFACE");
	char line[256], ip[64], hw[64], dev[64];
	FILE *f;

	if (!mac || !iface)
		return 0;
	f = fopen("/proc/net/arp", "r");
	if (!f)
		return die("cannot read /proc/net/arp");
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%63s %*s %*s %63s %*s %63s", ip, hw, dev) == 3 && !strcmp(ip, addr)) {
			fclose(f);
			if (strcasecmp(hw, mac) || strcmp(dev, iface))
				return die("the neighbour table disagrees with KT_PEER_MAC/KT_IFACE");
			return 0;
		}
	fclose(f);
	return die("the peer is not in the neighbour table");
}

static int client(const char *addr, int port, long count)
{
	struct sockaddr_in peer;
	char buf[MAX_LEN];
	int s = socket_at(addr, port, &peer);

	if (s < 0)
		return die("bad address or no socket");
	for (long seq = 0; seq < count; seq++) {
		size_t len = fill(buf, seq);
		int tries = 0;

		do {
			if (sendto(s, buf, len, 0, (struct sockaddr *)&peer, sizeof(peer)) != (ssize_t)len)
				return die(strerror(errno));
		} while (!echoed(s, &peer, buf, len) && ++tries < TRIES);
		if (tries == TRIES) {
			fprintf(stderr, "udp_echo_check: datagram %ld (%zu bytes) not echoed\n", seq, len);
			return 1;
		}
	}
	close(s);
	printf("udp echo: %ld datagrams echoed byte-exact by %s:%d\n", count, addr, port);
	return check_arp(addr);
}

int main(int argc, char **argv)
{
	long count = argc > 4 ? atol(argv[4]) : 0;

	if (argc >= 4 && (!strcmp(argv[1], "server") || !strcmp(argv[1], "server-spin")))
		return server(argv[2], atoi(argv[3]), count, argv[1][6] == '-');
	if (argc == 5 && !strcmp(argv[1], "client") && count > 0)
		return client(argv[2], atoi(argv[3]), count);
	fprintf(stderr, "usage: udp_echo_check server[-spin] ADDR PORT [COUNT] | client ADDR PORT COUNT\n");
	return 2;
}
