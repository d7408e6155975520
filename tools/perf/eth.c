/*
 * kinet-perf eth: the client side of the Ethernet echo benchmark.
 *
 *   kinet-perf eth --peer ADDR [--port P] [-s FRAME]... [-n N] [--window W]
 *                  [--seconds S] [--label TEXT] [--stop] [--no-floors]
 *
 * An ordinary UDP socket (the kernel's stack: what a sensor or another
 * host would send with) sends datagrams to an echo server at ADDR:P and
 * checks that each comes back whole: round trip (one datagram in flight,
 * N samples: min, median, p99) and echoes per second (W in flight for S
 * seconds), for each frame size (Ethernet frame bytes, headers included:
 * 64 .. 1514; the UDP payload is FRAME - 42).  Which server answers --
 * eth_udp_echo's kernel, the same loop on CPU threads, or a socket echo --
 * is the caller's choice (bench/ethernet.sh runs all three); --label names
 * it in the output.  The GPU<->CPU signalling floor is measured in the same
 * run (kinet-perf's floor; CPU threads without a GPU).  --stop sends the
 * echo's stop datagram at the end.
 *
 * A datagram not back within 100 ms counts as lost (and the measurement
 * goes on); the run fails (exit 1) if more than 1 % of any point was lost
 * or an echo came back altered.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "perf.h"

#define ETH_HEADERS 42u /* Ethernet 14 + IPv4 20 + UDP 8 */
#define ETH_MAX_FRAME 1514u
#define ETH_LOST_NS 100000000ull
#define ETH_MAX_WINDOW 256u

struct eth_opts {
	const char *peer, *label;
	uint16_t port;
	uint32_t sizes[PERF_MAX_SIZES];
	int nsizes;
	uint64_t n;
	uint32_t window;
	double seconds;
	int stop, floors;
};

struct eth_point {
	uint32_t frame;
	struct perf_stats rtt;
	double p99; /* microseconds */
	double pps;
	uint64_t lat_lost, rate_sent, rate_lost, altered;
};

static int eth_usage(void)
{
	fprintf(stderr, "usage: kinet-perf eth --peer ADDR [--port P] [-s FRAME]... [-n N] [--window W] "
			"[--seconds S] [--label TEXT] [--stop] [--no-floors]\n");
	return 2;
}

static int eth_parse(int argc, char **argv, struct eth_opts *o)
{
	*o = (struct eth_opts){NULL, "echo server", 5000, {0}, 0, 10000, 32, 1.0, 0, 1};
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!strcmp(a, "--stop")) {
			o->stop = 1;
			continue;
		}
		if (!strcmp(a, "--no-floors")) {
			o->floors = 0;
			continue;
		}
		if (!v)
			return eth_usage();
		i++;
		if (!strcmp(a, "--peer"))
			o->peer = v;
		else if (!strcmp(a, "--label"))
			o->label = v;
		else if (!strcmp(a, "--port"))
			o->port = (uint16_t)atoi(v);
		else if (!strcmp(a, "-s") && o->nsizes < PERF_MAX_SIZES)
			o->sizes[o->nsizes++] = (uint32_t)atoi(v);
		else if (!strcmp(a, "-n"))
			o->n = strtoull(v, NULL, 10);
		else if (!strcmp(a, "--window"))
			o->window = (uint32_t)atoi(v);
		else if (!strcmp(a, "--seconds"))
			o->seconds = atof(v);
		else
			return eth_usage();
	}
	if (!o->nsizes) {
		static const uint32_t defaults[] = {64, 128, 256, 512, 1024, 1500};
		for (int i = 0; i < 6; i++)
			o->sizes[o->nsizes++] = defaults[i];
	}
	for (int i = 0; i < o->nsizes; i++)
		if (o->sizes[i] < 64 || o->sizes[i] > ETH_MAX_FRAME) {
			fprintf(stderr, "kinet-perf eth: -s %u: a frame is 64..%u bytes\n", o->sizes[i],
				ETH_MAX_FRAME);
			return 2;
		}
	if (!o->peer || !o->port || !o->n || !o->window || o->window > ETH_MAX_WINDOW || o->seconds <= 0)
		return eth_usage();
	return 0;
}

/* Payload: 8-byte sequence number, then a pattern of it, so an echo is
 * checked whole. */
static void fill(uint8_t *p, uint32_t len, uint64_t seq)
{
	memcpy(p, &seq, 8);
	for (uint32_t i = 8; i < len; i++)
		p[i] = (uint8_t)(seq * 31u + i);
}

static int check(const uint8_t *p, ssize_t got, uint32_t len, uint64_t *seq)
{
	if (got != (ssize_t)len)
		return -1;
	memcpy(seq, p, 8);
	for (uint32_t i = 8; i < len; i++)
		if (p[i] != (uint8_t)(*seq * 31u + i))
			return -1;
	return 0;
}

/* Receives one echo within timeout_ns: 1 (seq and validity set), 0 when
 * none came, <0 on a socket error. */
static int recv_echo(int fd, uint8_t *buf, uint32_t len, uint64_t timeout_ns, uint64_t *seq, int *altered)
{
	uint64_t end = perf_now_ns() + timeout_ns;
	for (;;) {
		ssize_t got = recv(fd, buf, ETH_MAX_FRAME, MSG_DONTWAIT);
		if (got < 0 && errno == ECONNREFUSED)
			continue; /* an ICMP error of the server's stack (see perf_eth_main) */
		if (got >= 0) {
			*altered = check(buf, got, len, seq) != 0;
			return 1;
		}
		if (errno != EAGAIN && errno != EWOULDBLOCK)
			return -errno;
		uint64_t now = perf_now_ns();
		if (now >= end)
			return 0;
		/* Spin for the first 200 us (the round trip being measured),
		 * then sleep in poll: a lost datagram must not burn a core. */
		if (end - now < timeout_ns - 200000ull) {
			struct pollfd pfd = {fd, POLLIN, 0};
			poll(&pfd, 1, 1);
		}
	}
}

static int measure(int fd, const struct sockaddr_in *to, const struct eth_opts *o, uint32_t frame,
		   struct eth_point *pt)
{
	uint32_t len = frame - ETH_HEADERS;
	uint8_t out[ETH_MAX_FRAME], in[ETH_MAX_FRAME];
	uint64_t *ns = malloc(o->n * sizeof(uint64_t)), got = 0, seq = 0, rseq;
	int altered, rc;

	memset(pt, 0, sizeof(*pt));
	pt->frame = frame;
	if (!ns)
		return -ENOMEM;
	/* Round trip: one in flight; a late echo of an earlier datagram is
	 * skipped, not counted as this one. */
	for (uint64_t i = 0; i < o->n; i++) {
		fill(out, len, ++seq);
		uint64_t t0 = perf_now_ns();
		if (sendto(fd, out, len, 0, (const struct sockaddr *)to, sizeof(*to)) != (ssize_t)len) {
			free(ns);
			return -errno;
		}
		for (;;) {
			rc = recv_echo(fd, in, len, ETH_LOST_NS, &rseq, &altered);
			if (rc < 0) {
				free(ns);
				return rc;
			}
			if (rc == 0) {
				pt->lat_lost++;
				break;
			}
			if (altered) {
				pt->altered++;
				break;
			}
			if (rseq == seq) {
				ns[got++] = perf_now_ns() - t0;
				break;
			}
		}
	}
	perf_stats_ns(ns, got, &pt->rtt); /* sorts ns */
	if (got)
		pt->p99 = (double)ns[(got - 1) * 99 / 100] / 1000.0;
	free(ns);

	/* Echoes per second: window in flight, a new datagram per echo. */
	uint64_t start = perf_now_ns(), end = start + (uint64_t)(o->seconds * 1e9), back = 0;
	uint64_t inflight = 0;
	while (perf_now_ns() < end) {
		while (inflight < o->window) {
			fill(out, len, ++seq);
			if (sendto(fd, out, len, MSG_DONTWAIT, (const struct sockaddr *)to, sizeof(*to)) !=
			    (ssize_t)len)
				break;
			inflight++;
			pt->rate_sent++;
		}
		rc = recv_echo(fd, in, len, ETH_LOST_NS, &rseq, &altered);
		if (rc < 0)
			return rc;
		if (rc == 0) { /* the window's echoes are gone: count, refill */
			pt->rate_lost += inflight;
			inflight = 0;
			continue;
		}
		pt->altered += (uint64_t)altered;
		back++;
		inflight--;
	}
	pt->pps = (double)back / ((double)(perf_now_ns() - start) / 1e9);
	/* What is still in flight comes back or not; drain it briefly. */
	while (inflight && recv_echo(fd, in, len, 20000000ull, &rseq, &altered) == 1)
		inflight--;
	pt->rate_lost += inflight;
	return 0;
}

int perf_eth_main(int argc, char **argv)
{
	struct eth_opts o;
	struct eth_point pts[PERF_MAX_SIZES];
	struct sockaddr_in peer;
	int fd, rc, failed = 0;

	if ((rc = eth_parse(argc, argv, &o)))
		return rc;
	memset(&peer, 0, sizeof(peer));
	peer.sin_family = AF_INET;
	peer.sin_port = htons(o.port);
	if (inet_pton(AF_INET, o.peer, &peer.sin_addr) != 1) {
		fprintf(stderr, "kinet-perf eth: --peer %s: not an IPv4 address\n", o.peer);
		return 2;
	}
	/* Not connected: the server's own stack also sees the datagrams (a
	 * packet socket is a tap) and may answer ICMP port unreachable, which
	 * a connected socket would turn into ECONNREFUSED. */
	fd = socket(AF_INET, SOCK_DGRAM, 0);
	if (fd < 0) {
		fprintf(stderr, "kinet-perf eth: socket to %s:%u: %s\n", o.peer, o.port, strerror(errno));
		return 1;
	}
	printf("kinet-perf eth: %s at %s:%u, UDP socket client, %llu round trips and %.1f s at %u in flight "
	       "per frame size\n",
	       o.label, o.peer, o.port, (unsigned long long)o.n, o.seconds, o.window);
	printf("%-8s %10s %10s %10s %10s %12s %8s %8s\n", "frame B", "min us", "median us", "p99 us",
	       "max us", "echoes/s", "lost", "altered");
	for (int i = 0; i < o.nsizes; i++) {
		struct eth_point *p = &pts[i];
		if ((rc = measure(fd, &peer, &o, o.sizes[i], p))) {
			fprintf(stderr, "kinet-perf eth: frame %u: %s\n", o.sizes[i], strerror(-rc));
			failed = 1;
			break;
		}
		uint64_t lost = p->lat_lost + p->rate_lost;
		printf("%-8u %10.2f %10.2f %10.2f %10.2f %12.0f %8llu %8llu\n", p->frame, p->rtt.min,
		       p->rtt.median, p->p99, p->rtt.max, p->pps, (unsigned long long)lost,
		       (unsigned long long)p->altered);
		fflush(stdout);
		if (p->altered || lost * 100 > o.n + p->rate_sent)
			failed = 1;
	}
	if (o.floors) {
		struct perf_opts po;
		struct perf_floors f;
		perf_opts_defaults(&po);
		perf_floors_measure(&po, &f);
		if (f.measured)
			printf("floor: %s: median %.3f us (min %.3f)\n", f.rtt_label, f.rtt.median,
			       f.rtt.min);
		else
			printf("floor: not measured (kinet-perf write --lat says why)\n");
	}
	if (o.stop) {
		static const char stop[] = "KINET-STOP";
		if (sendto(fd, stop, sizeof(stop) - 1, 0, (const struct sockaddr *)&peer, sizeof(peer)) < 0)
			fprintf(stderr, "kinet-perf eth: sending the stop datagram: %s\n", strerror(errno));
	}
	close(fd);
	return failed;
}
