/*
 * kinet-fi-pingpong: libfabric's own latency and message rate between two
 * ranks, over the provider kinet's ofi carrier would pick, so the overhead
 * of kinet's remote path over the raw provider is known
 * (bench/ofi_compare.sh runs both and prints the ratios).
 *
 *   kinet-fi-pingpong [-s SIZE] [-n ITERS] [-w WARMUP] [--window W] [--msgs N] [--inject 0|1]
 *
 * Two ranks from the environment kinet-perf uses (KINET_RANK, KINET_NRANKS
 * = 2, KINET_ROOT: kinetrun -n 2, tests/netns/run.sh); the endpoint names
 * are swapped with kinet's bootstrap.  The provider is $KINET_OFI_PROVIDER
 * (default tcp;ofi_rxm), bound to $KINET_OFI_ADDR or $KINET_NETNS_ADDR when
 * set: what the carrier does (src/provider/soft/ofi_setup.c).
 *
 *   lat   rank 0 sends SIZE bytes, rank 1 sends them back: round trip per
 *         iteration (the shape of kinet's remote write: request, then the
 *         target's answer), median and percentiles
 *   rate  rank 0 sends N messages keeping at most W in flight, rank 1
 *         (receives pre-posted) answers once it has them all: N over the
 *         time to that answer
 * Messages of at most the provider's inject size go with fi_inject (no
 * send completion; --inject 0: fi_send) in lat, as libfabric's own pingpong
 * does.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <arpa/inet.h>
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>

#include "kinet/boot.h"
#include "kinet/kinet.h"

#define NAME_MAX_LEN 256
#define RX_DEPTH 512
#define POLL_TIMEOUT_NS (10ull * 1000000000ull)

struct fip {
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_av *av;
	struct fid_cq *cq;
	struct fid_ep *ep;
	struct fid_mr *mr;
	void *desc;
	uint8_t *buf; /* RX_DEPTH receive slots, then one send slot */
	size_t slot;
	fi_addr_t peer;
	size_t inject;
	struct fi_context rx_ctx[RX_DEPTH];
	struct fi_context tx_ctx;
	uint64_t tx_done, rx_done;
};

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

#define CHECK(call, what)                                                                                    \
	do {                                                                                                 \
		int rc_ = (int)(call);                                                                       \
		if (rc_) {                                                                                   \
			fprintf(stderr, "kinet-fi-pingpong: %s: %s\n", what, fi_strerror(-rc_));             \
			return -1;                                                                           \
		}                                                                                            \
	} while (0)

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static int post_recv(struct fip *f, int i)
{
	ssize_t rc;
	while ((rc = fi_recv(f->ep, f->buf + (size_t)i * f->slot, f->slot, f->desc, FI_ADDR_UNSPEC,
			     &f->rx_ctx[i])) == -FI_EAGAIN)
		fi_cq_read(f->cq, NULL, 0);
	return (int)rc;
}

/* Reads completions: reposts each receive, counts sends and receives. */
static int progress(struct fip *f)
{
	struct fi_cq_entry e[16];
	ssize_t n = fi_cq_read(f->cq, e, 16);
	if (n == -FI_EAGAIN)
		return 0;
	if (n < 0) {
		struct fi_cq_err_entry err;
		memset(&err, 0, sizeof(err));
		fi_cq_readerr(f->cq, &err, 0);
		fprintf(stderr, "kinet-fi-pingpong: completion error: %s\n", fi_strerror(err.err));
		return -1;
	}
	for (ssize_t k = 0; k < n; k++) {
		struct fi_context *c = e[k].op_context;
		if (c == &f->tx_ctx) {
			f->tx_done++;
		} else {
			int i = (int)(c - f->rx_ctx);
			f->rx_done++;
			if (post_recv(f, i))
				return -1;
		}
	}
	return 0;
}

/* Sends size bytes to the peer (inject when small: no completion). */
static int send_one(struct fip *f, size_t size, uint64_t *posted)
{
	uint8_t *tx = f->buf + (size_t)RX_DEPTH * f->slot;
	ssize_t rc;
	for (;;) {
		if (size <= f->inject)
			rc = fi_inject(f->ep, tx, size, f->peer);
		else
			rc = fi_send(f->ep, tx, size, f->desc, f->peer, &f->tx_ctx);
		if (rc != -FI_EAGAIN)
			break;
		if (progress(f))
			return -1;
	}
	if (rc) {
		fprintf(stderr, "kinet-fi-pingpong: send: %s\n", fi_strerror((int)-rc));
		return -1;
	}
	if (size > f->inject)
		(*posted)++;
	return 0;
}

static int wait_rx(struct fip *f, uint64_t want)
{
	uint64_t start = now_ns();
	while (f->rx_done < want) {
		if (progress(f))
			return -1;
		if (now_ns() - start > POLL_TIMEOUT_NS) {
			fprintf(stderr, "kinet-fi-pingpong: no message from the peer in 10 s\n");
			return -1;
		}
	}
	return 0;
}

static int setup(struct fip *f, struct kinet_boot *boot, size_t size)
{
	const char *prov = getenv("KINET_OFI_PROVIDER");
	const char *addr = getenv("KINET_OFI_ADDR");
	struct fi_info *hints = fi_allocinfo();
	struct sockaddr_in sin;
	struct fi_av_attr av_attr = {.type = FI_AV_TABLE};
	struct fi_cq_attr cq_attr = {.format = FI_CQ_FORMAT_CONTEXT, .size = RX_DEPTH * 2};
	char names[2][NAME_MAX_LEN + 8];
	size_t len = NAME_MAX_LEN;
	int me = kinet_boot_rank(boot);

	if (!addr)
		addr = getenv("KINET_NETNS_ADDR");
	if (!prov)
		prov = "tcp;ofi_rxm";
	hints->caps = FI_MSG;
	hints->mode = FI_CONTEXT;
	hints->ep_attr->type = FI_EP_RDM;
	hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
	hints->domain_attr->threading = FI_THREAD_DOMAIN;
	hints->fabric_attr->prov_name = strdup(prov);
	memset(&sin, 0, sizeof(sin));
	if (addr && strcmp(prov, "shm") && inet_pton(AF_INET, addr, &sin.sin_addr) == 1) {
		sin.sin_family = AF_INET;
		hints->addr_format = FI_SOCKADDR_IN;
		hints->src_addr = malloc(sizeof(sin));
		memcpy(hints->src_addr, &sin, sizeof(sin));
		hints->src_addrlen = sizeof(sin);
	}
	CHECK(fi_getinfo(FI_VERSION(1, 9), NULL, NULL, 0, hints, &f->info), "fi_getinfo");
	fi_freeinfo(hints);
	CHECK(fi_fabric(f->info->fabric_attr, &f->fabric, NULL), "fi_fabric");
	CHECK(fi_domain(f->fabric, f->info, &f->domain, NULL), "fi_domain");
	CHECK(fi_av_open(f->domain, &av_attr, &f->av, NULL), "fi_av_open");
	CHECK(fi_cq_open(f->domain, &cq_attr, &f->cq, NULL), "fi_cq_open");
	CHECK(fi_endpoint(f->domain, f->info, &f->ep, NULL), "fi_endpoint");
	CHECK(fi_ep_bind(f->ep, &f->av->fid, 0), "fi_ep_bind av");
	CHECK(fi_ep_bind(f->ep, &f->cq->fid, FI_TRANSMIT | FI_RECV), "fi_ep_bind cq");
	CHECK(fi_enable(f->ep), "fi_enable");
	f->inject = f->info->tx_attr->inject_size;
	f->slot = size < 64 ? 64 : (size + 63) & ~(size_t)63;
	f->buf = aligned_alloc(4096, (f->slot * (RX_DEPTH + 1) + 4095) & ~(size_t)4095);
	if (!f->buf)
		return -1;
	memset(f->buf, 0, f->slot * (RX_DEPTH + 1));
	if (f->info->domain_attr->mr_mode & FI_MR_LOCAL) {
		CHECK(fi_mr_reg(f->domain, f->buf, f->slot * (RX_DEPTH + 1), FI_SEND | FI_RECV, 0, 0, 0,
				&f->mr, NULL),
		      "fi_mr_reg");
		f->desc = fi_mr_desc(f->mr);
	}
	for (int i = 0; i < RX_DEPTH; i++)
		if (post_recv(f, i))
			return -1;
	memset(names, 0, sizeof(names));
	CHECK(fi_getname(&f->ep->fid, names[me] + 8, &len), "fi_getname");
	memcpy(names[me], &len, sizeof(len));
	if (kinet_boot_allgather(boot, names[me], names, sizeof(names[0]))) {
		fprintf(stderr, "kinet-fi-pingpong: address exchange failed\n");
		return -1;
	}
	if (fi_av_insert(f->av, names[1 - me] + 8, 1, &f->peer, 0, NULL) != 1) {
		fprintf(stderr, "kinet-fi-pingpong: fi_av_insert failed\n");
		return -1;
	}
	return 0;
}

static int run_lat(struct fip *f, int me, size_t size, long warmup, long iters)
{
	uint64_t *s = calloc((size_t)iters, 8), posted = 0;
	if (!s)
		return -1;
	for (long i = 0; i < warmup + iters; i++) {
		uint64_t t0 = now_ns();
		if (me == 0) {
			if (send_one(f, size, &posted) || wait_rx(f, (uint64_t)i + 1))
				return -1;
		} else {
			if (wait_rx(f, (uint64_t)i + 1) || send_one(f, size, &posted))
				return -1;
		}
		if (i >= warmup)
			s[i - warmup] = now_ns() - t0;
	}
	while (f->tx_done < posted)
		if (progress(f))
			return -1;
	if (me == 0) {
		qsort(s, (size_t)iters, 8, cmp_u64);
		printf("fi lat %zu B round trip: median_us %.3f p5_us %.3f p95_us %.3f min_us %.3f (%ld "
		       "iters)\n",
		       size, s[iters / 2] / 1e3, s[iters * 5 / 100] / 1e3, s[iters * 95 / 100] / 1e3,
		       s[0] / 1e3, iters);
	}
	free(s);
	return 0;
}

/* Sends go with fi_send, window-bounded by their completions (injected
 * messages are unbounded and measured slower: the receiver then handles
 * them as unexpected). */
static int run_rate(struct fip *f, int me, size_t size, long msgs, long window)
{
	uint64_t posted = 0, rx0 = f->rx_done, t0 = now_ns();
	size_t inject = f->inject;

	f->inject = 0;
	if (me == 0) {
		for (long i = 0; i < msgs; i++) {
			while ((long)(posted - f->tx_done) >= window)
				if (progress(f))
					return -1;
			if (send_one(f, size, &posted))
				return -1;
		}
		if (wait_rx(f, rx0 + 1))
			return -1;
		double us = (double)(now_ns() - t0) / 1e3;
		printf("fi rate %zu B: %.3f M msgs/s (%ld messages, window %ld, %s)\n", size,
		       (double)msgs / us, msgs, window, size <= f->inject ? "fi_inject" : "fi_send");
	} else {
		if (wait_rx(f, rx0 + (uint64_t)msgs) || send_one(f, size, &posted))
			return -1;
	}
	while (f->tx_done < posted)
		if (progress(f))
			return -1;
	f->inject = inject;
	return 0;
}

int main(int argc, char **argv)
{
	struct kinet_boot *boot = NULL;
	struct fip f;
	size_t size = 8;
	long iters = 10000, warmup = 1000, msgs = 200000, window = 64;
	int rc, inject = 1;

	for (int i = 1; i < argc; i++) {
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!v) {
			fprintf(stderr,
				"usage: %s [-s SIZE] [-n ITERS] [-w WARMUP] [--window W] [--msgs N]\n",
				argv[0]);
			return 2;
		}
		if (!strcmp(argv[i], "-s"))
			size = (size_t)atol(v);
		else if (!strcmp(argv[i], "-n"))
			iters = atol(v);
		else if (!strcmp(argv[i], "-w"))
			warmup = atol(v);
		else if (!strcmp(argv[i], "--window"))
			window = atol(v);
		else if (!strcmp(argv[i], "--msgs"))
			msgs = atol(v);
		else if (!strcmp(argv[i], "--inject"))
			inject = atoi(v);
		else {
			fprintf(stderr, "kinet-fi-pingpong: unknown option %s\n", argv[i]);
			return 2;
		}
		i++;
	}
	if (iters < 1 || warmup < 0 || window < 1 || msgs < 1 || size > 65536) {
		fprintf(stderr, "kinet-fi-pingpong: bad option value\n");
		return 2;
	}
	rc = kinet_boot_init(NULL, &boot);
	if (rc || kinet_boot_size(boot) != 2) {
		fprintf(stderr,
			"kinet-fi-pingpong: needs two ranks (kinetrun -n 2, tests/netns/run.sh): %s\n",
			rc ? kinet_strerror(rc) : "job size is not 2");
		return 2;
	}
	memset(&f, 0, sizeof(f));
	if (setup(&f, boot, size) || kinet_boot_barrier(boot))
		return 1;
	if (!inject)
		f.inject = 0;
	int me = kinet_boot_rank(boot);
	if (me == 0)
		printf("# libfabric %s, domain %s, inject size %zu\n", f.info->fabric_attr->prov_name,
		       f.info->domain_attr->name, f.inject);
	rc = run_lat(&f, me, size, warmup, iters);
	if (!rc)
		rc = kinet_boot_barrier(boot);
	if (!rc)
		rc = run_rate(&f, me, size, msgs, window);
	if (!rc)
		rc = kinet_boot_barrier(boot);
	fi_close(&f.ep->fid);
	if (f.mr)
		fi_close(&f.mr->fid);
	fi_close(&f.cq->fid);
	fi_close(&f.av->fid);
	fi_close(&f.domain->fid);
	fi_close(&f.fabric->fid);
	fi_freeinfo(f.info);
	free(f.buf);
	kinet_boot_fini(boot);
	return rc ? 1 : 0;
}
