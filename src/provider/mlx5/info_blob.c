/*
 * The ConnectX provider's part of kinet_qp_info (the transport bytes), the
 * only thing two mlx5 QPs swap out of band: what RTR needs of the peer's
 * port (LID or GID, active MTU) and its first packet sequence number.
 * Little-endian, versioned, with a magic first so that a software-NIC QP's
 * info is refused with a clear error.  Pure (mlx5_attr.h).
 *
 *   0..3   magic "KMX5"      4  version (1)     5  link layer
 *   6      port              7  active MTU      8..9  LID
 *   10..12 PSN (24 bits)     16..31 GID
 */
#include <errno.h>
#include <string.h>

#include "kinet/kinet.h"
#include "mlx5_attr.h"

#define INFO_MAGIC "KMX5"
#define INFO_VERSION 1

_Static_assert(KINET_QP_INFO_TRANSPORT_BYTES >= 32, "kinet_qp_info too small for the mlx5 part");

void kinet_mlx5_info_pack(const struct kinet_mlx5_peer_info *p, uint8_t *t)
{
	memset(t, 0, KINET_QP_INFO_TRANSPORT_BYTES);
	memcpy(t, INFO_MAGIC, 4);
	t[4] = INFO_VERSION;
	t[5] = p->link_layer;
	t[6] = p->port;
	t[7] = p->mtu;
	t[8] = (uint8_t)p->lid;
	t[9] = (uint8_t)(p->lid >> 8);
	t[10] = (uint8_t)p->psn;
	t[11] = (uint8_t)(p->psn >> 8);
	t[12] = (uint8_t)(p->psn >> 16);
	memcpy(t + 16, p->gid, 16);
}

int kinet_mlx5_info_unpack(const uint8_t *t, struct kinet_mlx5_peer_info *p)
{
	memset(p, 0, sizeof(*p));
	if (memcmp(t, INFO_MAGIC, 4) || t[4] != INFO_VERSION)
		return -EPROTO;
	p->link_layer = t[5];
	p->port = t[6];
	p->mtu = t[7];
	p->lid = (uint16_t)(t[8] | t[9] << 8);
	p->psn = (uint32_t)t[10] | (uint32_t)t[11] << 8 | (uint32_t)t[12] << 16;
	memcpy(p->gid, t + 16, 16);
	if ((p->link_layer != KINET_MLX5_IBV_LINK_LAYER_INFINIBAND &&
	     p->link_layer != KINET_MLX5_IBV_LINK_LAYER_ETHERNET) ||
	    !p->port || !kinet_mlx5_mtu_bytes(p->mtu))
		return -EPROTO;
	/* InfiniBand routes by LID (0 is not one); RoCE by GID. */
	if (p->link_layer == KINET_MLX5_IBV_LINK_LAYER_INFINIBAND ? !p->lid : kinet_mlx5_gid_is_zero(p->gid))
		return -EPROTO;
	return 0;
}
