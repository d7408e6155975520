/*
 * Ethernet ports, packet queues and steering rules (eth.c; the public
 * side is kinet/eth.h).  Core owns the objects and the steering table; the
 * provider opens the interface (ops->eth_port_open), runs the queues' QPs
 * and, for each frame it receives, asks kinet_eth_port_steer which queue
 * takes it (docs/ETHERNET.md, "Ports, queues and steering").
 */
#ifndef KINET_CORE_ETH_H
#define KINET_CORE_ETH_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "kinet/eth.h"

struct kinet_ctx;
struct kinet_qp;
struct kinet_cq;
struct kinet_mr;

/* Counters of a port: the provider's engine adds, anyone reads. */
struct kinet_eth_counters {
	_Atomic uint64_t rx_frames;
	_Atomic uint64_t rx_delivered;
	_Atomic uint64_t rx_drop_no_rule;
	_Atomic uint64_t rx_drop_queue_full;
	_Atomic uint64_t rx_drop_too_long;
	_Atomic uint64_t tx_frames;
	_Atomic uint64_t tx_errors;
};

static inline void kinet_eth_count(_Atomic uint64_t *c, uint64_t n)
{
	atomic_fetch_add_explicit(c, n, memory_order_relaxed);
}

/* The rules of a port, sorted: priority, then creation (seq). */
struct kinet_eth_flow_table {
	struct kinet_eth_flow **v;
	uint32_t n;
	uint32_t cap;
	uint64_t seq; /* the next rule's */
};

struct kinet_eth_port {
	struct kinet_ctx *ctx;
	struct kinet_eth_port *next_in_ctx; /* under ctx->obj_lock */
	char ifname[16];
	uint32_t rx_frames;
	int32_t backend;      /* asked for (enum kinet_eth_backend) */
	int32_t backend_used; /* set by the provider's eth_port_open */
	uint32_t mtu;
	uint8_t mac[6];
	void *prov; /* the provider's side (its carrier) */

	/* The steering table and the object lists below.  The provider's
	 * receive pass holds it for reading from the look-up of a frame's
	 * queue until the frame is placed; creating and destroying rules and
	 * queues take it for writing (docs/LIFETIMES.md). */
	pthread_rwlock_t lock;
	struct kinet_eth_flow_table rules;
	struct kinet_eth_rxq *rxqs;
	struct kinet_eth_txq *txqs;
	uint32_t nflows;

	struct kinet_eth_counters stats;
};

struct kinet_eth_rxq {
	struct kinet_eth_port *port;
	struct kinet_eth_rxq *next; /* the port's list, under port->lock */
	struct kinet_eth_rxq_attr attr;
	struct kinet_cq *cq;  /* receive CQ: npkts CQEs */
	struct kinet_cq *scq; /* the QP's unused send side's */
	struct kinet_qp *qp;
	struct kinet_mr *mr;
	uint8_t *buf;  /* host pointer (GPU memory: the device pointer) */
	uint8_t *dbuf; /* device-usable */
	size_t bytes;
	uint32_t flows; /* rules steering here, under port->lock */
	pthread_mutex_t export_lock;
	struct kinet_dev_eth_rxq *dev;
};

struct kinet_eth_txq {
	struct kinet_eth_port *port;
	struct kinet_eth_txq *next; /* the port's list, under port->lock */
	struct kinet_eth_txq_attr attr;
	struct kinet_cq *cq;
	struct kinet_qp *qp;
	pthread_mutex_t export_lock;
	struct kinet_dev_eth_txq *dev;
};

struct kinet_eth_flow {
	struct kinet_eth_port *port;
	struct kinet_eth_flow_attr attr; /* attr.queues points at queues below */
	uint64_t seq;
	struct kinet_eth_rxq *queues[KINET_ETH_MAX_RSS_QUEUES];
};

/* What rules match on, found in a frame (kinet_eth_frame_key). */
struct kinet_eth_frame_key {
	uint16_t ethertype; /* after at most one VLAN tag, host order */
	uint8_t ip_proto;   /* IPv4 protocol / IPv6 next header; valid with ip */
	bool ip;	    /* IPv4 or IPv6 with a whole header */
	bool ports;	    /* a UDP or TCP header with its ports (not a later fragment) */
	uint16_t dst_port;  /* host order, valid with ports */
	uint32_t l3;	    /* offset of the IP header */
	uint32_t l4;	    /* offset of the UDP/TCP header */
	bool ipv6;
};

/* Parses what steering needs; a frame too short for an Ethernet header is
 * ethertype 0, no IP. */
void kinet_eth_frame_key(const uint8_t *frame, uint32_t len, struct kinet_eth_frame_key *key);
/* Whether rule attr matches the frame whose key is k. */
bool kinet_eth_rule_matches(const struct kinet_eth_flow_attr *attr, const struct kinet_eth_frame_key *k);
/* Puts f in the table in order (priority, then creation) and sets f->seq;
 * 0 or -ENOMEM.  Removes it. */
int kinet_eth_flow_table_add(struct kinet_eth_flow_table *t, struct kinet_eth_flow *f);
void kinet_eth_flow_table_del(struct kinet_eth_flow_table *t, const struct kinet_eth_flow *f);
void kinet_eth_flow_table_free(struct kinet_eth_flow_table *t);
/* The first rule of t the frame matches, or NULL. */
struct kinet_eth_flow *kinet_eth_flow_table_match(const struct kinet_eth_flow_table *t, const uint8_t *frame,
						  uint32_t len);

/* For the provider's receive pass, port->lock held for reading until the
 * frame is placed: the queue that takes the frame, or NULL when no rule
 * matches or a DROP rule does. */
struct kinet_eth_rxq *kinet_eth_port_steer(struct kinet_eth_port *port, const uint8_t *frame, uint32_t len);

/* kinet_ctx_close: closes the ports left with their queues and rules
 * (engine stopped). */
void kinet_eth_ctx_close(struct kinet_ctx *ctx);

#endif /* KINET_CORE_ETH_H */
