/*
 * How a verbs peer finds a QP from what programs exchange: its QPN and its
 * GID.  A ConnectX needs nothing more, the wire carries the QPN; kinet's
 * carriers need the QP's connection blob (kinet_qp_pack).  Each context
 * serves the blobs of its QPs on TCP port base + slot, slot being the
 * first free one of 1..255 on this network namespace, and numbers its QPs
 * slot << 16 | n.  The peer asks the GID's IPv4 address (loopback when the
 * address vector has no GRH: a peer on this host) at the port its QPN
 * names.  $KINET_VERBS_PORT_BASE moves the range (default 18700).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "front.h"
#include "sock.h"
#include "verbs.h"

#define DIR_MAGIC 0x6b76647200000001ull /* "kvdr", version 1 */
/* A request or an answer moves within this. */
#define DIR_IO_MS 2000
/* The answer may wait for the peer to open a carrier (loading libfabric
 * and opening an endpoint, seconds on a loaded machine): bounded, so an
 * unreachable peer is an error, never a hang. */
#define DIR_ANSWER_MS 20000
/* A peer not listening yet (still starting) is asked again for this long. */
#define DIR_CONNECT_MS 5000

struct dir_request {
	uint64_t magic;
	uint32_t qpn;
	uint32_t pad;
};

struct dir_answer {
	uint64_t magic;
	int32_t status; /* 0 or a positive errno */
	uint32_t pad;
	struct kinet_qp_info info;
};

/* Which carrier the asking peer will reach this QP through: this host's
 * shared memory when it asks from this host (loopback or this context's
 * own address), the network otherwise. */
static void pack_for(struct kinet_verbs_context *ctx, int fd)
{
	struct sockaddr_in a;
	socklen_t len = sizeof(a);
	bool here = false;

	if (!getpeername(fd, (struct sockaddr *)&a, &len) && a.sin_family == AF_INET)
		here = a.sin_addr.s_addr == ctx->ipv4 || (ntohl(a.sin_addr.s_addr) >> 24) == 127;
	kinet_front_pack_carriers(here, !here);
}

static int answer(struct kinet_verbs_context *ctx, int fd)
{
	struct dir_request rq;
	struct dir_answer an;
	struct kinet_verbs_qp *qp;
	int ret = boot_recv_all(fd, &rq, sizeof(rq), boot_deadline(DIR_IO_MS));

	if (ret)
		return ret;
	memset(&an, 0, sizeof(an));
	an.magic = DIR_MAGIC;
	an.status = ENOENT;
	if (rq.magic != DIR_MAGIC) {
		an.status = EPROTO;
	} else {
		pthread_mutex_lock(&ctx->lock);
		for (qp = ctx->qps; qp; qp = qp->next)
			if (kinet_qp_num(qp->kqp) == rq.qpn) {
				pack_for(ctx, fd);
				an.status = kinet_verbs_errno(kinet_qp_pack(qp->kqp, &an.info));
				break;
			}
		pthread_mutex_unlock(&ctx->lock);
	}
	return boot_send_all(fd, &an, sizeof(an), boot_deadline(DIR_IO_MS));
}

static void *serve(void *arg)
{
	struct kinet_verbs_context *ctx = arg;
	struct pollfd p[2] = {{.fd = ctx->dir.listen_fd, .events = POLLIN},
			      {.fd = ctx->dir.wake[0], .events = POLLIN}};

	for (;;) {
		int fd;

		if (poll(p, 2, -1) < 0 && errno != EINTR)
			break;
		if (p[1].revents)
			break;
		if (!(p[0].revents & POLLIN))
			continue;
		fd = accept4(ctx->dir.listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
		if (fd < 0)
			continue;
		/* One request per connection, answered in turn: the blob is
		 * packed under the list lock (the first pack for a carrier
		 * opens it), and no read or write waits on a peer longer than
		 * DIR_IO_MS. */
		(void)answer(ctx, fd);
		close(fd);
	}
	return NULL;
}

int kinet_verbs_directory_start(struct kinet_verbs_context *ctx)
{
	int one = 1, ret;

	ctx->dir.port_base = (uint16_t)kinet_env_long("KINET_VERBS_PORT_BASE");
	for (unsigned slot = 1; slot <= KINET_VERBS_SLOTS; slot++) {
		struct sockaddr_in a = {.sin_family = AF_INET,
					.sin_port = htons((uint16_t)(ctx->dir.port_base + slot)),
					.sin_addr.s_addr = htonl(INADDR_ANY)};
		int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

		if (fd < 0)
			return errno;
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (!bind(fd, (struct sockaddr *)&a, sizeof(a)) && !listen(fd, 64)) {
			ctx->dir.listen_fd = fd;
			ctx->dir.slot = (uint16_t)slot;
			break;
		}
		close(fd);
	}
	if (ctx->dir.listen_fd < 0) {
		fprintf(stderr, "kinet verbs: no free directory port in %u..%u (KINET_VERBS_PORT_BASE)\n",
			ctx->dir.port_base + 1, ctx->dir.port_base + KINET_VERBS_SLOTS);
		return EADDRINUSE;
	}
	if (pipe2(ctx->dir.wake, O_CLOEXEC)) {
		ret = errno;
		close(ctx->dir.listen_fd);
		ctx->dir.listen_fd = -1;
		return ret;
	}
	ret = pthread_create(&ctx->dir.thread, NULL, serve, ctx);
	if (ret) {
		close(ctx->dir.listen_fd);
		ctx->dir.listen_fd = -1;
		return ret;
	}
	ctx->dir.running = true;
	return 0;
}

void kinet_verbs_directory_stop(struct kinet_verbs_context *ctx)
{
	if (ctx->dir.running) {
		char c = 1;

		if (write(ctx->dir.wake[1], &c, 1) != 1)
			perror("kinet verbs: directory stop");
		pthread_join(ctx->dir.thread, NULL);
		ctx->dir.running = false;
	}
	if (ctx->dir.listen_fd >= 0)
		close(ctx->dir.listen_fd);
	ctx->dir.listen_fd = -1;
	if (ctx->dir.wake[0] >= 0) {
		close(ctx->dir.wake[0]);
		close(ctx->dir.wake[1]);
	}
	ctx->dir.wake[0] = ctx->dir.wake[1] = -1;
}

/* One request: 0 and *info, or a positive errno (ECONNREFUSED: nobody
 * listens there yet). */
static int ask(uint32_t ipv4, uint16_t port, uint32_t qpn, struct kinet_qp_info *info)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port), .sin_addr.s_addr = ipv4};
	struct dir_request rq = {.magic = DIR_MAGIC, .qpn = qpn};
	struct dir_answer an;
	int fd, ret = boot_connect(&a, boot_deadline(DIR_IO_MS), &fd);

	if (ret)
		return -ret;
	ret = boot_send_all(fd, &rq, sizeof(rq), boot_deadline(DIR_IO_MS));
	if (!ret)
		ret = boot_recv_all(fd, &an, sizeof(an), boot_deadline(DIR_ANSWER_MS));
	close(fd);
	if (ret)
		return -ret;
	if (an.magic != DIR_MAGIC)
		return EPROTO;
	if (an.status)
		return an.status;
	*info = an.info;
	return 0;
}

int kinet_verbs_directory_lookup(struct kinet_verbs_context *ctx, uint32_t ipv4, uint32_t qpn,
				 struct kinet_qp_info *info)
{
	unsigned slot = qpn >> 16;
	uint64_t give_up = boot_deadline(DIR_CONNECT_MS);
	int ret;

	if (!slot || slot > KINET_VERBS_SLOTS)
		return EINVAL;
	/* A peer that is starting may not listen yet: retried for a while,
	 * as a NIC retries a connection request. */
	while ((ret = ask(ipv4, (uint16_t)(ctx->dir.port_base + slot), qpn, info)) == ECONNREFUSED &&
	       boot_ms_left(give_up))
		usleep(10000);
	if (ret) {
		char ip[INET_ADDRSTRLEN];

		inet_ntop(AF_INET, &ipv4, ip, sizeof(ip));
		fprintf(stderr, "kinet verbs: cannot reach QP 0x%06x at %s port %u: %s\n", qpn, ip,
			ctx->dir.port_base + slot, strerror(ret));
	}
	return ret;
}
