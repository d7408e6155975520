/*
 * The packet carrier's AF_XDP back end (issue 29, item 5): one AF_XDP
 * socket bound to queue 0 of the interface, a UMEM of its own, and a small
 * XDP program, assembled here, that redirects frames to the socket.
 * kinet_packet_open (packet.c) opens it when asked (attr->backend, or
 * KINET_ETH_BACKEND=xdp) and forwards every kinet_packet_* call to it, so
 * the calls below have the semantics packet.h documents, except where
 * noted there (no kernel stamp, no truncation, ARP left to the stack).
 * docs/ETHERNET.md, "AF_XDP", says what it needs and when it is used.
 */
#ifndef KINET_CARRIER_XDP_H
#define KINET_CARRIER_XDP_H

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "packet.h"

struct kinet_xdp;

/* Send frames of the UMEM (and the send and completion rings' slots). */
#define KINET_XDP_TX_FRAMES 512u

/* Opens the back end on attr->ifname.  0, or a negative errno with why[]
 * holding one sentence that names the reason and what to do (the caller
 * logs it: as an error, or as the warning of a fall back to AF_PACKET):
 * -EPERM (no CAP_NET_RAW, CAP_BPF or CAP_NET_ADMIN), -EAFNOSUPPORT (no
 * AF_XDP in this kernel), -ENOBUFS (RLIMIT_MEMLOCK too small and not
 * raisable), -EOPNOTSUPP (the interface or kernel refuses the program or
 * the mode; MTU too large for a UMEM frame), -EBUSY (another XDP program
 * is attached), -ENODEV, -ENETDOWN, -EINVAL, -ENOMEM. */
int kinet_xdp_open(const struct kinet_packet_attr *attr, struct kinet_xdp **xdp, char *why, size_t why_len);
void kinet_xdp_close(struct kinet_xdp *x);
int kinet_xdp_ifindex(const struct kinet_xdp *x);
uint32_t kinet_xdp_mtu(const struct kinet_xdp *x);
int kinet_xdp_poll(struct kinet_xdp *x, struct kinet_packet_rx *rx, unsigned max);
void kinet_xdp_release(struct kinet_xdp *x, unsigned n);
int kinet_xdp_wait(struct kinet_xdp *x, int timeout_ms);
int kinet_xdp_send(struct kinet_xdp *x, const struct iovec *frames, unsigned n);
int kinet_xdp_stats(struct kinet_xdp *x, struct kinet_packet_stats *stats);
/* The program's id (BPF_OBJ_GET_INFO_BY_FD), for tests that check it is
 * gone after close; 0 if unknown. */
uint32_t kinet_xdp_prog_id(const struct kinet_xdp *x);

#endif /* KINET_CARRIER_XDP_H */
