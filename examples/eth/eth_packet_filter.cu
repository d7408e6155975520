/*
 * eth_packet_filter: a persistent kernel counts the IPv4 packets arriving
 * on an interface by protocol, per receive queue, and hands each batch's
 * counts to the CPU through a semaphore ring per queue (filter.cuh); the
 * CPU adds them up.  The traffic comes from the other side's ordinary
 * sockets (--client, traffic.c).
 *
 *   eth_packet_filter --iface IF [--queues N] [--mem gpu|host] [--idle-ms MS]
 *                     [--expect-udp N] [--expect-tcp N] [--expect-icmp N]
 *   eth_packet_filter --client --peer ADDR [--udp N] [--tcp N] [--icmp N]
 *
 * The server steers every IPv4 frame to its queues by RSS (one warp each)
 * and stops on the stop datagram (to any UDP port), or SIGINT/SIGTERM.  It
 * prints the counts per queue and in all; with --expect-* it checks the
 * totals (exactly: the client's stack sends one frame per UDP datagram,
 * TCP attempt to a closed port and ICMP echo) and exits 1 on a mismatch.
 * The client sends what it is told (default 100 UDP, 20 TCP, 20 ICMP) to
 * ADDR, UDP to port 6000 and TCP to 6001.  Exit status 0 only if every
 * check holds and every warp stopped without an error.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <kinet/device.cuh>
#include <kinet/eth.h>
#include <kinet/kinet.h>

#if !defined(KINET_HOST_EMU)
#include <cuda_runtime.h>
#endif

#include "filter.cuh"
#include "mapped.h"
#include "traffic.h"

#define SEM_ITEMS 64u
#define TRAFFIC_PORT 6000

struct opts {
	const char *iface, *peer;
	int client, queues, mem, require_gpu;
	uint64_t idle_ms;
	long long expect[3]; /* udp, tcp, icmp; -1: not checked */
	struct traffic_counts send;
};

static volatile sig_atomic_t interrupted;

static void on_signal(int sig)
{
	(void)sig;
	interrupted = 1;
}

static int usage(void)
{
	fprintf(stderr, "usage: eth_packet_filter --iface IF [--queues N] [--mem gpu|host] [--idle-ms MS]\n"
			"                         [--expect-udp N] [--expect-tcp N] [--expect-icmp N] "
			"[--require-gpu]\n"
			"       eth_packet_filter --client --peer ADDR [--udp N] [--tcp N] [--icmp N]\n");
	return 2;
}

static int parse(int argc, char **argv, struct opts *o)
{
	memset(o, 0, sizeof(*o));
	o->queues = 2;
	o->mem = -1;
	o->expect[0] = o->expect[1] = o->expect[2] = -1;
	o->send = (struct traffic_counts){100, 20, 20};
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!strcmp(a, "--client") || !strcmp(a, "--require-gpu")) {
			*(a[2] == 'c' ? &o->client : &o->require_gpu) = 1;
			continue;
		}
		if (!v)
			return usage();
		i++;
		if (!strcmp(a, "--iface"))
			o->iface = v;
		else if (!strcmp(a, "--peer"))
			o->peer = v;
		else if (!strcmp(a, "--queues"))
			o->queues = atoi(v);
		else if (!strcmp(a, "--mem") && (!strcmp(v, "gpu") || !strcmp(v, "host")))
			o->mem = !strcmp(v, "gpu") ? KINET_ETH_MEM_GPU : KINET_ETH_MEM_HOST_MAPPED;
		else if (!strcmp(a, "--idle-ms"))
			o->idle_ms = strtoull(v, NULL, 10);
		else if (!strcmp(a, "--expect-udp"))
			o->expect[0] = atoll(v);
		else if (!strcmp(a, "--expect-tcp"))
			o->expect[1] = atoll(v);
		else if (!strcmp(a, "--expect-icmp"))
			o->expect[2] = atoll(v);
		else if (!strcmp(a, "--udp"))
			o->send.udp = (uint32_t)atoi(v);
		else if (!strcmp(a, "--tcp"))
			o->send.tcp = (uint32_t)atoi(v);
		else if (!strcmp(a, "--icmp"))
			o->send.icmp = (uint32_t)atoi(v);
		else
			return usage();
	}
	if (o->client ? !o->peer : (!o->iface || o->queues < 1 || o->queues > FILTER_MAX_QUEUES))
		return usage();
	return 0;
}

#if defined(KINET_HOST_EMU)
static void filter_block(void *p)
{
	struct kinet_dev_eth_pkt pkts[FILTER_BATCH];
	filter_warp((const struct filter_args *)p, (int)kinet_dev_block_id(), pkts);
}

struct emu_run {
	struct filter_args *args;
	unsigned n;
};

static void *emu_main(void *p)
{
	struct emu_run *r = (struct emu_run *)p;
	kinet_emu_launch(r->n, filter_block, r->args);
	return NULL;
}
#else
__global__ void filter_kernel(struct filter_args a)
{
	__shared__ struct kinet_dev_eth_pkt pkts[FILTER_BATCH];
	filter_warp(&a, (int)blockIdx.x, pkts);
}
#endif

/* The CPU side of the rings: takes every READY item in order, adds its
 * counts, hands it back DONE; a queue is finished at its EXIT item. */
struct totals {
	struct filter_counts c;
	uint64_t batches, packets;
};

static int drain(struct kinet_sem *sem, uint64_t *next, struct totals *t, int *exited)
{
	for (;;) {
		uint32_t idx = (uint32_t)(*next % SEM_ITEMS);
		enum kinet_sem_status st;
		struct kinet_sem_pkt_info info;
		struct filter_counts c;
		int rc = kinet_sem_get_status(sem, idx, &st);
		if (rc || (st != KINET_SEM_READY && st != KINET_SEM_EXIT))
			return rc;
		if (st == KINET_SEM_EXIT) {
			*exited = 1;
			return 0;
		}
		if ((rc = kinet_sem_get_pkt_info(sem, idx, &info)) ||
		    (rc = kinet_sem_get_custom_info(sem, idx, &c, sizeof(c))))
			return rc;
		t->c.udp += c.udp;
		t->c.tcp += c.tcp;
		t->c.icmp += c.icmp;
		t->c.other += c.other;
		t->packets += info.count;
		t->batches++;
		if ((rc = kinet_sem_set_status(sem, idx, KINET_SEM_DONE)))
			return rc;
		(*next)++;
	}
}

#define CHECK(call)                                                                                          \
	do {                                                                                                 \
		int rc_ = (call);                                                                            \
		if (rc_) {                                                                                   \
			fprintf(stderr, "eth_packet_filter: %s: %s\n", #call, kinet_strerror(rc_));          \
			ret = rc_;                                                                           \
			goto out;                                                                            \
		}                                                                                            \
	} while (0)

static int serve(const struct opts *o)
{
	struct kinet_ctx *ctx = NULL;
	struct kinet_ctx_attr ca;
	struct kinet_eth_port *port = NULL;
	struct kinet_eth_rxq *rxq[FILTER_MAX_QUEUES] = {0};
	struct kinet_sem *sem[FILTER_MAX_QUEUES] = {0};
	struct kinet_eth_flow *flow = NULL;
	struct filter_args args;
	struct totals per[FILTER_MAX_QUEUES], all;
	uint64_t next[FILTER_MAX_QUEUES] = {0};
	int exited[FILTER_MAX_QUEUES] = {0};
	uint32_t *stop_host = NULL;
	struct filter_status *status_host = NULL;
	int ret = 0, mem = o->mem;

#if defined(KINET_HOST_EMU)
	if (mem < 0)
		mem = KINET_ETH_MEM_HOST;
#else
	if (mem < 0)
		mem = KINET_ETH_MEM_GPU;
#endif
	memset(per, 0, sizeof(per));
	memset(&all, 0, sizeof(all));
	kinet_ctx_attr_init(&ca);
	CHECK(kinet_ctx_open(&ca, &ctx));
	struct kinet_eth_port_attr pa;
	kinet_eth_port_attr_init(&pa);
	pa.ifname = o->iface;
	CHECK(kinet_eth_port_open(ctx, &pa, &port));
	memset(&args, 0, sizeof(args));
	args.idle_ns = o->idle_ms * 1000000ull;
	if (!(args.stop = (uint32_t *)mapped_alloc(sizeof(uint32_t), (void **)&stop_host)) ||
	    !(args.status = (struct filter_status *)mapped_alloc(
		      sizeof(struct filter_status) * FILTER_MAX_QUEUES, (void **)&status_host))) {
		fprintf(stderr, "eth_packet_filter: cannot allocate host-mapped memory\n");
		ret = -ENOMEM;
		goto out;
	}
	for (int q = 0; q < o->queues; q++) {
		struct kinet_eth_rxq_attr ra;
		struct kinet_sem_attr sa;
		kinet_eth_rxq_attr_init(&ra);
		ra.mem = mem;
		CHECK(kinet_eth_rxq_create(port, &ra, &rxq[q]));
		CHECK(kinet_eth_rxq_export(rxq[q], &args.rxq[q]));
		kinet_sem_attr_init(&sa);
		sa.nitems = SEM_ITEMS;
		sa.custom_size = sizeof(struct filter_counts);
		CHECK(kinet_sem_create(ctx, &sa, &sem[q]));
		CHECK(kinet_sem_export(sem[q], &args.sem[q]));
	}
	struct kinet_eth_flow_attr fa;
	kinet_eth_flow_attr_init(&fa);
	fa.match = KINET_ETH_MATCH_ETHERTYPE;
	fa.ethertype = 0x0800;
	fa.action = o->queues > 1 ? KINET_ETH_ACTION_RSS : KINET_ETH_ACTION_QUEUE;
	fa.nqueues = (uint32_t)o->queues;
	fa.queues = rxq;
	CHECK(kinet_eth_flow_create(port, &fa, &flow));

	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
#if defined(KINET_HOST_EMU)
	struct emu_run run = {&args, (unsigned)o->queues};
	pthread_t thread;
	if (pthread_create(&thread, NULL, emu_main, &run)) {
		ret = -EAGAIN;
		goto out;
	}
#else
	filter_kernel<<<o->queues, 32>>>(args);
	if (cudaGetLastError() != cudaSuccess) {
		fprintf(stderr, "eth_packet_filter: kernel launch failed\n");
		ret = -EIO;
		goto out;
	}
#endif
	printf("eth_packet_filter: ready on %s, %d queue(s)\n", o->iface, o->queues);
	fflush(stdout);
	for (int done = 0; done < o->queues;) {
		done = 0;
		for (int q = 0; q < o->queues; q++) {
			if (!exited[q] && (ret = drain(sem[q], &next[q], &per[q], &exited[q]))) {
				fprintf(stderr, "eth_packet_filter: queue %d's ring: %s\n", q,
					kinet_strerror(ret));
				__atomic_store_n(stop_host, 1, __ATOMIC_RELEASE);
			}
			done += exited[q] || __atomic_load_n(&status_host[q].ended, __ATOMIC_ACQUIRE);
		}
		if (interrupted)
			__atomic_store_n(stop_host, 1, __ATOMIC_RELEASE);
		usleep(200);
	}
#if defined(KINET_HOST_EMU)
	pthread_join(thread, NULL);
#else
	cudaDeviceSynchronize();
#endif
	for (int q = 0; q < o->queues; q++) {
		struct totals *t = &per[q];
		printf("eth_packet_filter: queue %d: %llu batches, %llu packets: %llu UDP, %llu TCP, %llu "
		       "ICMP, "
		       "%llu other; %s\n",
		       q, (unsigned long long)t->batches, (unsigned long long)t->packets,
		       (unsigned long long)t->c.udp, (unsigned long long)t->c.tcp,
		       (unsigned long long)t->c.icmp, (unsigned long long)t->c.other,
		       status_host[q].error ? kinet_strerror(status_host[q].error) : "stopped cleanly");
		if (status_host[q].error && !ret)
			ret = status_host[q].error;
		all.c.udp += t->c.udp;
		all.c.tcp += t->c.tcp;
		all.c.icmp += t->c.icmp;
		all.c.other += t->c.other;
	}
	printf("eth_packet_filter: all queues: %llu UDP, %llu TCP, %llu ICMP, %llu other\n",
	       (unsigned long long)all.c.udp, (unsigned long long)all.c.tcp, (unsigned long long)all.c.icmp,
	       (unsigned long long)all.c.other);
	{ /* a block: C++ (nvcc) refuses a goto past initialised variables */
		const uint64_t got[3] = {all.c.udp, all.c.tcp, all.c.icmp};
		const char *name[3] = {"UDP", "TCP", "ICMP"};
		for (int i = 0; i < 3; i++)
			if (o->expect[i] >= 0 && got[i] != (uint64_t)o->expect[i]) {
				fprintf(stderr, "eth_packet_filter: %s: counted %llu, expected %lld\n",
					name[i], (unsigned long long)got[i], o->expect[i]);
				if (!ret)
					ret = -EPROTO;
			}
	}
out:
	if (flow)
		kinet_eth_flow_destroy(flow);
	for (int q = 0; q < FILTER_MAX_QUEUES; q++) {
		if (rxq[q])
			kinet_eth_rxq_destroy(rxq[q]);
		if (sem[q])
			kinet_sem_destroy(sem[q]);
	}
	if (port)
		kinet_eth_port_close(port);
	if (ctx)
		kinet_ctx_close(ctx);
	if (stop_host)
		mapped_free(stop_host);
	if (status_host)
		mapped_free(status_host);
	return ret;
}

int main(int argc, char **argv)
{
	struct opts o;

	if (parse(argc, argv, &o))
		return 2;
	if (o.client)
		return traffic_send(o.peer, TRAFFIC_PORT, &o.send, 1000) ? 1 : 0;
#if defined(KINET_HOST_EMU)
	if (o.require_gpu) {
		printf("eth_packet_filter: skipped: this build runs on CPU threads (--require-gpu)\n");
		return 77;
	}
	if (o.mem == KINET_ETH_MEM_GPU) {
		fprintf(stderr, "eth_packet_filter: --mem gpu needs the CUDA build\n");
		return 2;
	}
#else
	int ndev = 0;
	if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
		printf("eth_packet_filter: skipped: no CUDA device\n");
		return 77;
	}
#endif
	return serve(&o) ? 1 : 0;
}
