/*
 * Collectives over the star: the ranks send to rank 0, which gathers from
 * all of them at once (poll), then answers each.  A failure anywhere breaks
 * the star: rank 0 tells the others why (ABORT), every connection is shut
 * down, and each rank returns an errno instead of waiting.
 */
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "boot_internal.h"

static void mark_broken(struct kinet_boot *b, int err, const char *text)
{
	if (b->broken)
		return;
	b->broken = err;
	for (int i = 0; i < b->nranks; i++) {
		if (b->fds[i] < 0)
			continue;
		if (b->rank == 0 && text)
			boot_send_abort(b->fds[i], b->seq, err, text);
		shutdown(b->fds[i], SHUT_RDWR);
	}
}

int boot_fail(struct kinet_boot *b, int err, const char *fmt, ...)
{
	char text[BOOT_ABORT_MAX - 4];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	KINET_ERR("bootstrap: %s", text);
	mark_broken(b, err, text);
	return -err;
}

static int coll_begin(struct kinet_boot *b, const char *what)
{
	if (b->broken) {
		KINET_ERR("bootstrap: rank %d: %s after an earlier failure (%s)", b->rank, what,
			  strerror(b->broken));
		return -ENOTCONN;
	}
	b->seq++;
	return 0;
}

/* Checks the header rank `peer` sent against what this rank expects. */
static int check_hdr(struct kinet_boot *b, int peer, const struct boot_hdr *h, uint32_t op, uint64_t len)
{
	if (h->op != op || h->seq != b->seq)
		return boot_fail(b, EPROTO,
				 "rank %d is in %s #%u while rank %d is in %s #%u (every rank must call the "
				 "same collectives in the same order)",
				 peer, boot_op_name(h->op), h->seq, b->rank, boot_op_name(op), b->seq);
	if (h->len != len)
		return boot_fail(b, EPROTO, "%s #%u: rank %d passed %llu bytes, rank %d expected %llu",
				 boot_op_name(op), b->seq, peer, (unsigned long long)h->len, b->rank,
				 (unsigned long long)len);
	return 0;
}

/* Per-rank state of rank 0's gather. */
struct gather {
	uint8_t hdr[BOOT_HDR_BYTES];
	size_t got;
	bool done;
};

/* One recv() of rank i's frame.  1 once complete, 0 for more, < 0 failed. */
static int gather_step(struct kinet_boot *b, int i, struct gather *g, uint32_t op, uint8_t *dst, size_t len)
{
	struct boot_hdr h;
	uint8_t *p = g->got < BOOT_HDR_BYTES ? g->hdr + g->got : dst + (g->got - BOOT_HDR_BYTES);
	size_t want = g->got < BOOT_HDR_BYTES ? BOOT_HDR_BYTES - g->got : len + BOOT_HDR_BYTES - g->got;
	ssize_t n = recv(b->fds[i], p, want, 0);

	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
		return 0;
	if (n <= 0)
		return boot_fail(b, ECONNRESET,
				 "rank %d closed its connection during %s #%u (it exited or failed)", i,
				 boot_op_name(op), b->seq);
	g->got += (size_t)n;
	if (g->got == BOOT_HDR_BYTES) {
		boot_hdr_decode(g->hdr, &h);
		if (check_hdr(b, i, &h, op, len))
			return -b->broken;
	}
	return g->got == BOOT_HDR_BYTES + len;
}

static int gather_timeout(struct kinet_boot *b, uint32_t op, const struct gather *g)
{
	char list[200];
	int *late = malloc(sizeof(int) * (size_t)b->nranks), n = 0;

	if (!late)
		return boot_fail(b, ETIMEDOUT, "%s #%u timed out after %d ms", boot_op_name(op), b->seq,
				 b->timeout_ms);
	for (int i = 1; i < b->nranks; i++)
		if (!g[i].done)
			late[n++] = i;
	boot_format_ranks(late, n, list, sizeof(list));
	free(late);
	return boot_fail(b, ETIMEDOUT, "%s #%u: rank(s) %s did not arrive within %d ms", boot_op_name(op),
			 b->seq, list, b->timeout_ms);
}

/* Rank 0: receives len bytes from every rank (only < 0) or from rank only,
 * rank i's at dst + i * len (only < 0) or at dst. */
static int root_gather(struct kinet_boot *b, uint32_t op, uint8_t *dst, size_t len, int only,
		       uint64_t deadline)
{
	struct gather *g = calloc((size_t)b->nranks, sizeof(*g));
	struct pollfd *pfd = calloc((size_t)b->nranks, sizeof(*pfd));
	int *who = calloc((size_t)b->nranks, sizeof(int));
	int left = only < 0 ? b->nranks - 1 : 1, rc = 0;

	if (!g || !pfd || !who) {
		rc = boot_fail(b, ENOMEM, "out of memory in %s", boot_op_name(op));
		goto out;
	}
	for (int i = 0; i < b->nranks; i++)
		g[i].done = i == 0 || (only >= 0 && i != only);
	while (left && rc == 0) {
		int npfd = 0, n, ms = boot_ms_left(deadline);

		if (ms == 0) {
			rc = gather_timeout(b, op, g);
			break;
		}
		for (int i = 1; i < b->nranks; i++) {
			if (g[i].done)
				continue;
			pfd[npfd] = (struct pollfd){.fd = b->fds[i], .events = POLLIN};
			who[npfd++] = i;
		}
		n = poll(pfd, (nfds_t)npfd, ms);
		if (n < 0 && errno != EINTR)
			rc = boot_fail(b, errno, "poll: %s", strerror(errno));
		for (int k = 0; n > 0 && k < npfd && rc == 0; k++) {
			int i = who[k];

			if (!pfd[k].revents)
				continue;
			rc = gather_step(b, i, &g[i], op, only < 0 ? dst + (size_t)i * len : dst, len);
			if (rc == 1) {
				g[i].done = true;
				rc = 0;
			}
		}
		left = 0;
		for (int i = 1; i < b->nranks; i++)
			left += !g[i].done;
	}
out:
	free(g);
	free(pfd);
	free(who);
	return rc;
}

/* Not rank 0, after a failed send: rank 0 may have said why it gave up. */
static int pending_abort(struct kinet_boot *b, uint32_t op)
{
	uint64_t deadline = boot_deadline(100);
	struct boot_hdr h;

	if (b->rank == 0 || boot_recv_hdr(b->fds[0], &h, deadline) != 0 || h.op != BOOT_OP_ABORT)
		return 0;
	return boot_recv_abort(b->fds[0], h.len, deadline, b->rank, boot_op_name(op));
}

static int send_to(struct kinet_boot *b, int peer, uint32_t op, const void *buf, size_t len,
		   uint64_t deadline)
{
	int rc = boot_send_frame(b->fds[peer], op, b->seq, buf, len, deadline);

	if (rc && rc != -ETIMEDOUT) {
		int why = pending_abort(b, op);

		if (why) {
			mark_broken(b, -why, NULL);
			return why;
		}
	}
	if (rc == -ETIMEDOUT)
		return boot_fail(b, ETIMEDOUT, "rank %d: %s #%u: rank %d did not take the data within %d ms",
				 b->rank, boot_op_name(op), b->seq, peer, b->timeout_ms);
	if (rc)
		return boot_fail(b, -rc, "rank %d: %s #%u: cannot send to rank %d: %s (it exited or failed)",
				 b->rank, boot_op_name(op), b->seq, peer, strerror(-rc));
	return 0;
}

/* Not rank 0: receives rank 0's answer, len bytes into buf. */
static int recv_from_root(struct kinet_boot *b, uint32_t op, void *buf, size_t len, uint64_t deadline)
{
	struct boot_hdr h;
	int rc = boot_recv_hdr(b->fds[0], &h, deadline);

	if (rc == 0 && h.op == BOOT_OP_ABORT) {
		rc = boot_recv_abort(b->fds[0], h.len, deadline, b->rank, boot_op_name(op));
		mark_broken(b, -rc, NULL);
		return rc;
	}
	if (rc == 0)
		rc = check_hdr(b, 0, &h, op, len);
	if (rc == 0 && len)
		rc = boot_recv_all(b->fds[0], buf, len, deadline);
	if (rc == -ETIMEDOUT)
		return boot_fail(b, ETIMEDOUT, "rank %d: %s #%u: no answer from rank 0 within %d ms", b->rank,
				 boot_op_name(op), b->seq, b->timeout_ms);
	if (rc && !b->broken)
		return boot_fail(b, -rc, "rank %d: rank 0 closed its connection during %s #%u (%s)", b->rank,
				 boot_op_name(op), b->seq, strerror(-rc));
	return rc;
}

/* Allgather and barrier: gather at rank 0, then send everything to all. */
static int exchange(struct kinet_boot *b, uint32_t op, const void *mine, void *all, size_t len)
{
	size_t total = len * (size_t)b->nranks;
	uint64_t deadline;
	int rc = coll_begin(b, boot_op_name(op));

	if (rc)
		return rc;
	deadline = boot_deadline(b->timeout_ms);
	if (b->rank != 0) {
		rc = send_to(b, 0, op, mine, len, deadline);
		return rc ? rc : recv_from_root(b, op, all, total, deadline);
	}
	if (len && all != mine)
		memmove(all, mine, len);
	rc = root_gather(b, op, all, len, -1, deadline);
	for (int i = 1; i < b->nranks && rc == 0; i++)
		rc = send_to(b, i, op, all, total, deadline);
	return rc;
}

int kinet_boot_allgather(struct kinet_boot *boot, const void *mine, void *all, size_t len)
{
	if (!boot)
		return KINET_EINVAL("boot", "NULL");
	if (len && (!mine || !all))
		return KINET_EINVAL(mine ? "all" : "mine", "NULL");
	if (len > SIZE_MAX / (size_t)boot->nranks)
		return KINET_EINVAL("len", "nranks * len overflows");
	return exchange(boot, BOOT_OP_ALLGATHER, mine, all, len);
}

int kinet_boot_barrier(struct kinet_boot *boot)
{
	if (!boot)
		return KINET_EINVAL("boot", "NULL");
	return exchange(boot, BOOT_OP_BARRIER, NULL, NULL, 0);
}

int kinet_boot_bcast(struct kinet_boot *boot, void *buf, size_t len, int root)
{
	uint64_t deadline;
	int rc;

	if (!boot)
		return KINET_EINVAL("boot", "NULL");
	if (len && !buf)
		return KINET_EINVAL("buf", "NULL");
	if (root < 0 || root >= boot->nranks)
		return KINET_EINVAL("root", "not a rank");
	rc = coll_begin(boot, "bcast");
	if (rc)
		return rc;
	deadline = boot_deadline(boot->timeout_ms);
	if (boot->rank == root && root != 0)
		return send_to(boot, 0, BOOT_OP_BCAST, buf, len, deadline);
	if (boot->rank != 0)
		return recv_from_root(boot, BOOT_OP_BCAST, buf, len, deadline);
	if (root != 0)
		rc = root_gather(boot, BOOT_OP_BCAST, buf, len, root, deadline);
	for (int i = 1; i < boot->nranks && rc == 0; i++)
		if (i != root)
			rc = send_to(boot, i, BOOT_OP_BCAST, buf, len, deadline);
	return rc;
}
