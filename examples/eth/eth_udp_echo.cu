/*
 * eth_udp_echo: a persistent kernel that echoes UDP datagrams arriving on
 * a network interface, addresses swapped, until told to stop (GPUNetIO's
 * receive-process-send pattern on kinet's Ethernet queues).  echo.cuh is
 * the kernel.
 *
 *   eth_udp_echo --iface IF [options]
 *
 * Options:
 *   --iface IF        the interface to serve (required)
 *   --port P          UDP destination port served (default 5000); a rule
 *                     steers it to the queues, everything else is dropped
 *   --queues N        receive queues, one warp each, spread by RSS (default 1)
 *   --mem gpu|host    the packet buffers in GPU memory (default with a GPU)
 *                     or pinned host memory the kernel maps
 *   --idle-ms MS      stop with an error after MS without a packet
 *                     (default 0: never)
 *   --require-gpu     exit 77 (skipped) where there is no CUDA device
 *
 * Prints "ready" once the kernel serves, then, at the end, a line per
 * queue.  It stops when a datagram whose payload starts with "KINET-STOP"
 * arrives (it is echoed first) or on SIGINT/SIGTERM.  Exit status 0 only
 * if every warp stopped without an error.
 *
 * Built with nvcc (the kernel on GPU 0) and as C with KINET_HOST_EMU
 * (eth_udp_echo-emu: the warps are CPU threads, the same code).
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <kinet/device.cuh>
#include <kinet/eth.h>
#include <kinet/kinet.h>

#if !defined(KINET_HOST_EMU)
#include <cuda_runtime.h>
#endif

#include "echo.cuh"
#include "mapped.h"

struct opts {
	const char *iface;
	uint16_t port;
	int queues;
	int mem; /* enum kinet_eth_mem */
	uint64_t idle_ms;
	int require_gpu;
};

static volatile sig_atomic_t interrupted;

static void on_signal(int sig)
{
	(void)sig;
	interrupted = 1;
}

static int usage(void)
{
	fprintf(stderr, "usage: eth_udp_echo --iface IF [--port P] [--queues N] [--mem gpu|host] "
			"[--idle-ms MS] [--require-gpu]\n");
	return 2;
}

static int parse(int argc, char **argv, struct opts *o)
{
	*o = (struct opts){NULL, 5000, 1, -1, 0, 0};
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!strcmp(a, "--require-gpu")) {
			o->require_gpu = 1;
			continue;
		}
		if (!v)
			return usage();
		i++;
		if (!strcmp(a, "--iface"))
			o->iface = v;
		else if (!strcmp(a, "--port"))
			o->port = (uint16_t)atoi(v);
		else if (!strcmp(a, "--queues"))
			o->queues = atoi(v);
		else if (!strcmp(a, "--mem") && (!strcmp(v, "gpu") || !strcmp(v, "host")))
			o->mem = !strcmp(v, "gpu") ? KINET_ETH_MEM_GPU : KINET_ETH_MEM_HOST_MAPPED;
		else if (!strcmp(a, "--idle-ms"))
			o->idle_ms = strtoull(v, NULL, 10);
		else
			return usage();
	}
	if (!o->iface || !o->port || o->queues < 1 || o->queues > ECHO_MAX_QUEUES)
		return usage();
	return 0;
}

static uint32_t load_u32(const uint32_t *p)
{
	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

#if defined(KINET_HOST_EMU)
static void echo_block(void *p)
{
	struct kinet_dev_eth_pkt pkts[ECHO_BATCH];
	echo_warp((const struct echo_args *)p, (int)kinet_dev_block_id(), pkts);
}

struct emu_run {
	struct echo_args *args;
	unsigned n;
};

static void *emu_main(void *p)
{
	struct emu_run *r = (struct emu_run *)p;
	kinet_emu_launch(r->n, echo_block, r->args);
	return NULL;
}
#else
__global__ void echo_kernel(struct echo_args a)
{
	__shared__ struct kinet_dev_eth_pkt pkts[ECHO_BATCH];
	echo_warp(&a, (int)blockIdx.x, pkts);
}
#endif

#define CHECK(call)                                                                                          \
	do {                                                                                                 \
		int rc_ = (call);                                                                            \
		if (rc_) {                                                                                   \
			fprintf(stderr, "eth_udp_echo: %s: %s\n", #call, kinet_strerror(rc_));               \
			ret = rc_;                                                                           \
			goto out;                                                                            \
		}                                                                                            \
	} while (0)

int main(int argc, char **argv)
{
	struct opts o;
	struct kinet_ctx *ctx = NULL;
	struct kinet_ctx_attr ca;
	struct kinet_eth_port *port = NULL;
	struct kinet_eth_rxq *rxq[ECHO_MAX_QUEUES] = {0};
	struct kinet_eth_txq *txq[ECHO_MAX_QUEUES] = {0};
	struct kinet_eth_flow *flow = NULL;
	struct echo_args args;
	uint32_t *stop_host = NULL;
	struct echo_status *status_host = NULL;
	int ret = 0;

	if (parse(argc, argv, &o))
		return 2;
#if defined(KINET_HOST_EMU)
	if (o.require_gpu) {
		printf("eth_udp_echo: skipped: this build runs on CPU threads (--require-gpu)\n");
		return 77;
	}
	if (o.mem < 0)
		o.mem = KINET_ETH_MEM_HOST;
	if (o.mem == KINET_ETH_MEM_GPU) {
		fprintf(stderr, "eth_udp_echo: --mem gpu needs the CUDA build\n");
		return 2;
	}
#else
	int ndev = 0;
	if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
		printf("eth_udp_echo: skipped: no CUDA device%s\n", o.require_gpu ? " (--require-gpu)" : "");
		return 77;
	}
	if (o.mem < 0)
		o.mem = KINET_ETH_MEM_GPU;
#endif
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	kinet_ctx_attr_init(&ca);
	CHECK(kinet_ctx_open(&ca, &ctx));

	struct kinet_eth_port_attr pa;
	kinet_eth_port_attr_init(&pa);
	pa.ifname = o.iface;
	CHECK(kinet_eth_port_open(ctx, &pa, &port));

	memset(&args, 0, sizeof(args));
	args.port = o.port;
	args.idle_ns = o.idle_ms * 1000000ull;
	if (!(args.stop = (uint32_t *)mapped_alloc(sizeof(uint32_t), (void **)&stop_host)) ||
	    !(args.status = (struct echo_status *)mapped_alloc(sizeof(struct echo_status) * (size_t)o.queues,
							       (void **)&status_host))) {
		fprintf(stderr, "eth_udp_echo: cannot allocate host-mapped memory\n");
		ret = -ENOMEM;
		goto out;
	}
	for (int q = 0; q < o.queues; q++) {
		struct kinet_eth_rxq_attr ra;
		struct kinet_eth_txq_attr ta;
		kinet_eth_rxq_attr_init(&ra);
		ra.mem = o.mem;
		CHECK(kinet_eth_rxq_create(port, &ra, &rxq[q]));
		kinet_eth_txq_attr_init(&ta);
		CHECK(kinet_eth_txq_create(port, &ta, &txq[q]));
		CHECK(kinet_eth_rxq_export(rxq[q], &args.rxq[q]));
		CHECK(kinet_eth_txq_export(txq[q], &args.txq[q]));
	}
	/* UDP to our port, spread over the queues by RSS; the rest dropped. */
	struct kinet_eth_flow_attr fa;
	kinet_eth_flow_attr_init(&fa);
	fa.match = KINET_ETH_MATCH_ETHERTYPE | KINET_ETH_MATCH_IP_PROTO | KINET_ETH_MATCH_DST_PORT;
	fa.ethertype = 0x0800;
	fa.ip_proto = 17;
	fa.dst_port = o.port;
	fa.action = o.queues > 1 ? KINET_ETH_ACTION_RSS : KINET_ETH_ACTION_QUEUE;
	fa.nqueues = (uint32_t)o.queues;
	fa.queues = rxq;
	CHECK(kinet_eth_flow_create(port, &fa, &flow));

#if defined(KINET_HOST_EMU)
	struct emu_run run = {&args, (unsigned)o.queues};
	pthread_t thread;
	if (pthread_create(&thread, NULL, emu_main, &run)) {
		fprintf(stderr, "eth_udp_echo: cannot start the CPU threads\n");
		ret = -EAGAIN;
		goto out;
	}
#else
	echo_kernel<<<o.queues, 32>>>(args);
	if (cudaGetLastError() != cudaSuccess) {
		fprintf(stderr, "eth_udp_echo: kernel launch failed\n");
		ret = -EIO;
		goto out;
	}
#endif
	printf("eth_udp_echo: ready on %s port %u, %d queue(s), packets in %s memory\n", o.iface, o.port,
	       o.queues, o.mem == KINET_ETH_MEM_GPU ? "GPU" : "host");
	fflush(stdout);

	for (;;) {
		int ended = 0;
		for (int q = 0; q < o.queues; q++)
			ended += load_u32(&status_host[q].ended) != 0;
		if (ended == o.queues)
			break;
		if (interrupted)
			__atomic_store_n(stop_host, 1, __ATOMIC_RELEASE);
		usleep(1000);
	}
#if defined(KINET_HOST_EMU)
	pthread_join(thread, NULL);
#else
	cudaDeviceSynchronize();
#endif
	for (int q = 0; q < o.queues; q++) {
		printf("eth_udp_echo: queue %d: %llu echoed, %llu ignored, %s\n", q,
		       (unsigned long long)status_host[q].echoed, (unsigned long long)status_host[q].ignored,
		       status_host[q].error ? kinet_strerror(status_host[q].error) : "stopped cleanly");
		if (status_host[q].error && !ret)
			ret = status_host[q].error;
	}
	struct kinet_eth_port_stats ps;
	if (!kinet_eth_port_stats(port, &ps))
		printf("eth_udp_echo: port: %llu frames in, %llu delivered, %llu no rule, %llu queue full, "
		       "%llu sent, %llu send errors\n",
		       (unsigned long long)ps.rx_frames, (unsigned long long)ps.rx_delivered,
		       (unsigned long long)ps.rx_drop_no_rule, (unsigned long long)ps.rx_drop_queue_full,
		       (unsigned long long)ps.tx_frames, (unsigned long long)ps.tx_errors);
out:
	/* Every path here has the kernel ended (or never started). */
	if (flow)
		kinet_eth_flow_destroy(flow);
	for (int q = 0; q < ECHO_MAX_QUEUES; q++) {
		if (rxq[q])
			kinet_eth_rxq_destroy(rxq[q]);
		if (txq[q])
			kinet_eth_txq_destroy(txq[q]);
	}
	if (port)
		kinet_eth_port_close(port);
	if (ctx)
		kinet_ctx_close(ctx);
	if (stop_host)
		mapped_free(stop_host);
	if (status_host)
		mapped_free(status_host);
	return ret ? 1 : 0;
}
