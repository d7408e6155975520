/*
 * The examples' traffic from the other side: ordinary sockets of the
 * Linux stack, as another host would send.
 */
#ifndef ETH_TRAFFIC_H
#define ETH_TRAFFIC_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct traffic_counts {
	uint32_t udp, tcp, icmp;
};

/* Sends c->udp UDP datagrams to peer:port, c->tcp TCP connection attempts
 * to peer:port + 1 (a closed port: one SYN each, answered by a reset),
 * c->icmp ICMP echo requests (a raw socket: root), spaced by gap_us, then
 * the stop datagram "KINET-STOP" to peer:port.  0, or a negative errno
 * with the failing step printed. */
int traffic_send(const char *peer, uint16_t port, const struct traffic_counts *c, uint32_t gap_us);

#ifdef __cplusplus
}
#endif

#endif /* ETH_TRAFFIC_H */
