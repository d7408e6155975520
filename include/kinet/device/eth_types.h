/*
 * Ethernet queues, the layout host and device share (plain C): the
 * descriptors kinet_eth_rxq_export() and kinet_eth_txq_export() place in
 * GPU memory (host memory under host emulation).  Host API: kinet/eth.h;
 * device API: kinet/device/eth.cuh; the model: docs/ETHERNET.md.
 *
 * Each queue is backed by a raw-packet QP of the port (struct kinet_dev_qp,
 * kinet/device/types.h), so the device API drives its rings with the same
 * reserve / commit / doorbell / CQ steps as an RC QP:
 *  - a receive queue is the QP's receive side: npkts receive WQEs, WQE i
 *    one data segment over packet slot i (pkt_buf + i * max_pkt_size),
 *    posted once at creation; the NIC fills the next posted WQE with the
 *    next packet steered to the queue and writes a receive CQE (byte
 *    count, real-time timestamp, L3/L4 types and checksum flags,
 *    kinet/wire_eth.h) on the QP's receive CQ.  Device code hands slots
 *    back by moving the receive doorbell record on (the WQEs themselves
 *    never change): a packet that finds no posted WQE is dropped and
 *    counted (queue full), never written over one not handed back;
 *  - a send queue is the QP's send side: Ethernet send WQEs and
 *    WAIT-on-time WQEs (kinet/wire_eth.h) and send CQEs on its send CQ.
 */
#ifndef KINET_DEVICE_ETH_TYPES_H
#define KINET_DEVICE_ETH_TYPES_H

#include <stdint.h>

#include "kinet/device/types.h"

#ifdef __cplusplus
extern "C" {
#endif

struct kinet_dev_eth_rxq {
	struct kinet_dev_qp *qp; /* receive side: rq, recv_cq; no send side used */
	uint8_t *pkt_buf;	 /* npkts x max_pkt_size bytes, device-usable */
	uint32_t max_pkt_size;	 /* bytes per slot (the stride) */
	uint32_t npkts;		 /* slots = receive WQEs = CQEs, a power of two */
	uint32_t pkt_lkey;	 /* lkey of pkt_buf (sends straight from a slot) */
	uint32_t rqn;		 /* the queue's number (CQEs' qpn) */
	/* device state (zero at export) */
	uint64_t received; /* packets returned to callers so far */
	uint64_t retired;  /* of those, slots handed back (receive doorbell) */
	uint32_t lock;	   /* one receiving group at a time */
	uint32_t pad;
};

struct kinet_dev_eth_txq {
	struct kinet_dev_qp *qp; /* send side: sq, doorbell, send_cq */
	uint32_t sqn;		 /* the queue's number (WQEs' qpn_ds) */
	/* KINET_ETH_WQE_L3_CSUM | _L4_CSUM when the queue was created with
	 * checksum offload (kinet_eth_txq_attr.csum); sends may ask for
	 * less, never more. */
	uint32_t cs_flags;
	/* 1 when the queue takes WAIT-on-time WQEs (kinet_eth_txq_attr.timed) */
	uint32_t timed;
	uint32_t pad;
};

/* What kinet_dev_eth_rxq_recv reports per packet (GPUNetIO's
 * doca_gpu_dev_eth_rxq_attr). */
struct kinet_dev_eth_pkt {
	uint64_t timestamp_ns; /* receive time, CLOCK_REALTIME nanoseconds */
	uint32_t bytes;	       /* the frame's length (as placed in its slot) */
	uint8_t l3_type;       /* KINET_CQE_L3_HDR_* */
	uint8_t l4_type;       /* KINET_CQE_L4_HDR_* */
	uint8_t csum_ok;       /* KINET_CQE_L2_OK | _L3_OK | _L4_OK */
	uint8_t pad;
};

#ifdef __cplusplus
}
#endif

#endif /* KINET_DEVICE_ETH_TYPES_H */
