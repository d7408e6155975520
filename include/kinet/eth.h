/*
 * kinet host API, Ethernet half: ports on Linux interfaces, packet receive
 * and send queues that kernels drive (kinet/device/eth.cuh), steering
 * rules, and GPU semaphores.  The model and its mapping to GPUNetIO's
 * names: docs/ETHERNET.md.
 */
#ifndef KINET_ETH_H
#define KINET_ETH_H

#include <stddef.h>
#include <stdint.h>

#include "kinet/api.h"
#include "kinet/device/eth_types.h"
#include "kinet/device/sem_types.h"
#include "kinet/kinet.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- ports (kinet_eth_port(3)) -----------------------------------------
 * A port is a Linux network interface the context's NIC sends on and
 * receives from.  The software NIC reaches it through a raw AF_PACKET
 * socket (CAP_NET_RAW), or, when asked, an AF_XDP socket (CAP_BPF and
 * CAP_NET_ADMIN too); frames the port receives go through its steering
 * rules to receive queues, frames its send queues send leave on it. */
struct kinet_eth_port;
struct kinet_eth_rxq;
struct kinet_eth_txq;
struct kinet_eth_flow;

struct kinet_eth_port_attr {
	uint32_t size;	    /* sizeof(struct kinet_eth_port_attr), or 0 */
	const char *ifname; /* the interface, in the caller's network namespace */
	/* Frames the carrier's receive ring holds before the kernel drops
	 * (a power of two >= 16); 0: 4096. */
	uint32_t rx_frames;
	/* enum kinet_eth_backend (docs/ETHERNET.md, "AF_XDP"); 0: AUTO.  Was
	 * padding (always 0) before: the layout is unchanged. */
	int32_t backend;
};

/* Which socket the software NIC's port uses on its interface. */
enum kinet_eth_backend {
	/* AF_PACKET, unless KINET_ETH_BACKEND=xdp (or xdp-native) asks for
	 * AF_XDP: then AF_XDP where it can be opened, else one warning saying
	 * why and AF_PACKET. */
	KINET_ETH_BACKEND_AUTO = 0,
	KINET_ETH_BACKEND_PACKET = 1, /* AF_PACKET: TPACKET_V2 ring, sendmmsg */
	/* AF_XDP with kinet's XDP program in SKB (generic) mode, or in the
	 * driver (native).  Asked for here, a failure is kinet_eth_port_open's
	 * error (-EPERM, -EOPNOTSUPP, ...), logged with the reason. */
	KINET_ETH_BACKEND_XDP = 2,
	KINET_ETH_BACKEND_XDP_NATIVE = 3,
};

struct kinet_eth_port_stats {
	uint64_t rx_frames;	     /* frames the port took from the interface */
	uint64_t rx_delivered;	     /* placed in a receive queue, CQE written */
	uint64_t rx_drop_no_rule;    /* no rule matched, or a drop rule did */
	uint64_t rx_drop_queue_full; /* the queue had no slot handed back */
	uint64_t rx_drop_too_long;   /* longer than the queue's max_pkt_size */
	uint64_t rx_drop_carrier;    /* dropped by the kernel: the carrier's ring was full */
	uint64_t tx_frames;	     /* sent on the interface */
	uint64_t tx_errors;	     /* sends completed with an error CQE */
};

/* Fills attr with the defaults (its size, no interface, rx_frames 0,
 * backend AUTO). */
KINET_API void kinet_eth_port_attr_init(struct kinet_eth_port_attr *attr);
/* Opens attr->ifname.  0; -EINVAL (bad attribute), -ENODEV (no such
 * interface), -ENETDOWN (it is down), -EPERM (no CAP_NET_RAW: logged with
 * what to do), -EOPNOTSUPP (the context's NIC has no Ethernet queues),
 * -ENOMEM. */
KINET_API int kinet_eth_port_open(struct kinet_ctx *ctx, const struct kinet_eth_port_attr *attr,
				  struct kinet_eth_port **port);
/* -EBUSY while queues or flows of the port remain.  kinet_ctx_close
 * closes the ports left, with their queues and flows. */
KINET_API int kinet_eth_port_close(struct kinet_eth_port *port);
KINET_API int kinet_eth_port_mac(const struct kinet_eth_port *port, uint8_t mac[6]);
KINET_API uint32_t kinet_eth_port_mtu(const struct kinet_eth_port *port);
KINET_API int kinet_eth_port_stats(struct kinet_eth_port *port, struct kinet_eth_port_stats *stats);
/* Once the interface went down or vanished: -ENETDOWN or -ENODEV, sticky
 * (queues stop receiving; sends complete with errors); else 0. */
KINET_API int kinet_eth_port_status(struct kinet_eth_port *port);
/* The back end the port uses: KINET_ETH_BACKEND_PACKET, _XDP or
 * _XDP_NATIVE (never AUTO); -EINVAL for a NULL port. */
KINET_API int kinet_eth_port_backend(const struct kinet_eth_port *port);

/* ---- packet queues ------------------------------------------------------ */

/* Where a queue's packet buffer lives. */
enum kinet_eth_mem {
	KINET_ETH_MEM_HOST_MAPPED = 0, /* pinned host memory mapped into the GPU */
	KINET_ETH_MEM_GPU = 1,	       /* GPU memory (needs a CUDA device: else -ENODEV) */
	KINET_ETH_MEM_HOST = 2,	       /* plain host memory (CPU threads only) */
};

struct kinet_eth_rxq_attr {
	uint32_t size;	       /* sizeof(struct kinet_eth_rxq_attr), or 0 */
	uint32_t npkts;	       /* slots, a power of two, 16..KINET_ETH_MAX_PKTS */
	uint32_t max_pkt_size; /* bytes per slot, 64..KINET_ETH_MAX_PKT_SIZE */
	int32_t mem;	       /* enum kinet_eth_mem */
};
/* 2^15: a receive queue counts its WQEs in 16 bits (the doorbell record),
 * so at most half the counter is ever outstanding. */
#define KINET_ETH_MAX_PKTS (1u << 15)
#define KINET_ETH_MAX_PKT_SIZE 9216u

/* Fills attr with the defaults: 1024 slots of 2048 bytes, host-mapped. */
KINET_API void kinet_eth_rxq_attr_init(struct kinet_eth_rxq_attr *attr);
/* A cyclic receive queue: npkts slots of max_pkt_size bytes in one buffer,
 * every slot's receive WQE posted.  It receives what rules steer to it. */
KINET_API int kinet_eth_rxq_create(struct kinet_eth_port *port, const struct kinet_eth_rxq_attr *attr,
				   struct kinet_eth_rxq **rxq);
/* -EBUSY while a flow steers to it. */
KINET_API int kinet_eth_rxq_destroy(struct kinet_eth_rxq *rxq);
/* The descriptor device code takes; the same pointer every call, valid
 * until the queue is destroyed. */
KINET_API int kinet_eth_rxq_export(struct kinet_eth_rxq *rxq, struct kinet_dev_eth_rxq **drxq);

struct kinet_eth_txq_attr {
	uint32_t size;	 /* sizeof(struct kinet_eth_txq_attr), or 0 */
	uint32_t depth;	 /* send WQEs (basic blocks), a power of two, 16..32768 */
	uint32_t csum;	 /* 1: L3/L4 checksum offload (sends may ask for it) */
	uint32_t timed;	 /* 1: wait-on-time sends (kinet_dev_eth_txq_send_at) */
	int32_t sharing; /* enum kinet_qp_sharing: who may send at once */
	int32_t db_mode; /* enum kinet_db_mode */
};

/* Fills attr with the defaults: 1024 WQEs, checksums and timed sends on,
 * exclusive, KINET_DB_AUTO. */
KINET_API void kinet_eth_txq_attr_init(struct kinet_eth_txq_attr *attr);
KINET_API int kinet_eth_txq_create(struct kinet_eth_port *port, const struct kinet_eth_txq_attr *attr,
				   struct kinet_eth_txq **txq);
KINET_API int kinet_eth_txq_destroy(struct kinet_eth_txq *txq);
KINET_API int kinet_eth_txq_export(struct kinet_eth_txq *txq, struct kinet_dev_eth_txq **dtxq);

/* ---- steering rules (kinet_eth_flow(3)) ---------------------------------
 * Each received frame goes to the first rule it matches (lowest priority
 * value first; equal priorities in creation order); a frame no rule
 * matches is dropped and counted (rx_drop_no_rule).  A rule with no match
 * fields matches every frame: the default. */
enum {
	KINET_ETH_MATCH_ETHERTYPE = 1u << 0, /* after at most one VLAN tag */
	KINET_ETH_MATCH_IP_PROTO = 1u << 1,  /* IPv4 protocol / IPv6 next header */
	KINET_ETH_MATCH_DST_PORT = 1u << 2,  /* UDP or TCP destination port */
};

enum kinet_eth_action {
	KINET_ETH_ACTION_QUEUE = 0, /* to queues[0] */
	KINET_ETH_ACTION_RSS = 1,   /* to one of queues[0..nqueues) by the 5-tuple hash */
	KINET_ETH_ACTION_DROP = 2,  /* counted in rx_drop_no_rule */
};

struct kinet_eth_flow_attr {
	uint32_t size;	    /* sizeof(struct kinet_eth_flow_attr), or 0 */
	uint32_t priority;  /* lower first */
	uint32_t match;	    /* KINET_ETH_MATCH_* */
	uint16_t ethertype; /* host order */
	uint8_t ip_proto;
	uint8_t pad;
	uint16_t dst_port; /* host order */
	uint16_t pad2;
	int32_t action;	  /* enum kinet_eth_action */
	uint32_t nqueues; /* QUEUE: 1; RSS: 1..KINET_ETH_MAX_RSS_QUEUES; DROP: 0 */
	struct kinet_eth_rxq **queues;
};
#define KINET_ETH_MAX_RSS_QUEUES 64u

KINET_API void kinet_eth_flow_attr_init(struct kinet_eth_flow_attr *attr);
KINET_API int kinet_eth_flow_create(struct kinet_eth_port *port, const struct kinet_eth_flow_attr *attr,
				    struct kinet_eth_flow **flow);
KINET_API int kinet_eth_flow_destroy(struct kinet_eth_flow *flow);
/* The RSS hash of a frame as a rule spreads it: Toeplitz over the IPv4 or
 * IPv6 source and destination addresses, then (UDP, TCP) the ports, with
 * the key most NICs default to (Microsoft's RSS verification key); 0 for
 * a frame without IP.  The queue is queues[hash % nqueues]. */
KINET_API uint32_t kinet_eth_rss_hash(const void *frame, size_t len);

/* ---- GPU semaphores (kinet_sem(3)) ------------------------------------
 * A ring of items, each a status (enum kinet_sem_status), a packet info
 * (struct kinet_sem_pkt_info) and custom info of a size chosen at
 * creation, set and read from kernels (kinet/device/sem.cuh) and from the
 * CPU, so that a receive kernel hands batches to the CPU or to another
 * kernel (GPUNetIO's doca_gpu_semaphore). */
struct kinet_sem;

/* Where the items live. */
enum kinet_sem_mem {
	/* Pinned host memory mapped into the GPU (cudaHostAlloc, mapped):
	 * kernels and the CPU both reach it at memory speed on their side.
	 * For GPU <-> CPU rings.  In a context without a CUDA device it is
	 * plain host memory (what CPU threads running the device API use). */
	KINET_SEM_MEM_HOST_MAPPED = 0,
	/* GPU memory (cudaMalloc): kernel <-> kernel rings; the host calls
	 * copy through the CUDA runtime (slow, but correct).  Needs a CUDA
	 * device in the context, else -ENODEV. */
	KINET_SEM_MEM_GPU = 1,
	/* Plain host memory, not mapped: CPU <-> CPU (and the device API on
	 * CPU threads); kernels cannot reach it. */
	KINET_SEM_MEM_HOST = 2,
};

struct kinet_sem_attr {
	uint32_t size;	      /* sizeof(struct kinet_sem_attr), or 0 */
	uint32_t nitems;      /* items in the ring, 1..KINET_SEM_MAX_ITEMS */
	uint32_t custom_size; /* bytes of custom info per item, 0..KINET_SEM_MAX_CUSTOM */
	int32_t mem;	      /* enum kinet_sem_mem */
};
#define KINET_SEM_MAX_ITEMS (1u << 24)
#define KINET_SEM_MAX_CUSTOM (1u << 16)

/* Fills attr with the defaults: its size, 1024 items, no custom info,
 * KINET_SEM_MEM_HOST_MAPPED. */
KINET_API void kinet_sem_attr_init(struct kinet_sem_attr *attr);
/* Every item starts KINET_SEM_FREE with zeroed info.  0; -EINVAL (a bad
 * attribute, named in the log), -ENODEV (GPU memory asked for in a
 * context without a CUDA device, logged), -ENOMEM, -EIO (CUDA failed). */
KINET_API int kinet_sem_create(struct kinet_ctx *ctx, const struct kinet_sem_attr *attr,
			       struct kinet_sem **sem);
/* Frees the ring and its exported descriptor; no kernel may still use
 * them.  kinet_ctx_close destroys the semaphores left. */
KINET_API int kinet_sem_destroy(struct kinet_sem *sem);
KINET_API uint32_t kinet_sem_nitems(const struct kinet_sem *sem);

/* Status of item idx: an acquire load (what the item's writer stored
 * before its release of the status is visible afterwards). */
KINET_API int kinet_sem_get_status(struct kinet_sem *sem, uint32_t idx, enum kinet_sem_status *status);
/* A release store: the item's info and custom info written before it are
 * visible to whoever sees the status. */
KINET_API int kinet_sem_set_status(struct kinet_sem *sem, uint32_t idx, enum kinet_sem_status status);
KINET_API int kinet_sem_get_pkt_info(struct kinet_sem *sem, uint32_t idx, struct kinet_sem_pkt_info *info);
KINET_API int kinet_sem_set_pkt_info(struct kinet_sem *sem, uint32_t idx,
				     const struct kinet_sem_pkt_info *info);
/* Host address of item idx's custom info (custom_size bytes).  -EINVAL
 * without custom info; -EOPNOTSUPP for GPU memory (use the copies below). */
KINET_API int kinet_sem_custom_info_addr(struct kinet_sem *sem, uint32_t idx, void **addr);
/* Copies len bytes (<= custom_size) of item idx's custom info out / in;
 * for every memory type. */
KINET_API int kinet_sem_get_custom_info(struct kinet_sem *sem, uint32_t idx, void *dst, size_t len);
KINET_API int kinet_sem_set_custom_info(struct kinet_sem *sem, uint32_t idx, const void *src, size_t len);
/* The descriptor device code takes (kinet/device/sem.cuh), in GPU memory
 * (host memory without a CUDA device); the same pointer every call, valid
 * until kinet_sem_destroy. */
KINET_API int kinet_sem_export(struct kinet_sem *sem, struct kinet_dev_sem **dsem);

#ifdef __cplusplus
}
#endif

#endif /* KINET_ETH_H */
