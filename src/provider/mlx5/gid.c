/*
 * GID choice of the ConnectX provider.  On RoCE the GID index picks the
 * source address and the RoCE version of every packet, and a wrong one is
 * the classic silent failure (a RoCE v1 or link-local GID that the switch
 * does not route): so a RoCE v2 GID of the wanted family, global first, as
 * NCCL and NVSHMEM choose.  On InfiniBand the port GID (index 0); the LID
 * routes.  Pure (mlx5_attr.h).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "mlx5_attr.h"

bool kinet_mlx5_gid_is_zero(const uint8_t raw[16])
{
	for (int i = 0; i < 16; i++)
		if (raw[i])
			return false;
	return true;
}

/* ::ffff:a.b.c.d */
bool kinet_mlx5_gid_is_ipv4(const uint8_t raw[16])
{
	for (int i = 0; i < 10; i++)
		if (raw[i])
			return false;
	return raw[10] == 0xff && raw[11] == 0xff;
}

/* fe80::/64 */
bool kinet_mlx5_gid_is_link_local(const uint8_t raw[16])
{
	static const uint8_t prefix[8] = {0xfe, 0x80};

	return !memcmp(raw, prefix, sizeof(prefix));
}

int kinet_mlx5_gid_family_parse(const char *s)
{
	if (!s || !*s || !strcmp(s, "any"))
		return KINET_MLX5_GID_ANY;
	if (!strcmp(s, "ipv4"))
		return KINET_MLX5_GID_IPV4;
	if (!strcmp(s, "ipv6"))
		return KINET_MLX5_GID_IPV6;
	return -1;
}

const char *kinet_mlx5_gid_type_name(uint32_t type)
{
	switch (type) {
	case KINET_MLX5_IBV_GID_TYPE_IB:
		return "IB";
	case KINET_MLX5_IBV_GID_TYPE_ROCE_V1:
		return "RoCE v1";
	case KINET_MLX5_IBV_GID_TYPE_ROCE_V2:
		return "RoCE v2";
	}
	return "?";
}

void kinet_mlx5_gid_format(const uint8_t raw[16], char *buf, size_t len)
{
	int start = -1, run = 0, i, j;
	uint16_t w[8];
	size_t n = 0;

	if (kinet_mlx5_gid_is_ipv4(raw)) {
		snprintf(buf, len, "%u.%u.%u.%u", raw[12], raw[13], raw[14], raw[15]);
		return;
	}
	/* IPv6 text: the longest run of two or more zero groups is "::". */
	for (i = 0; i < 8; i++)
		w[i] = (uint16_t)(raw[2 * i] << 8 | raw[2 * i + 1]);
	for (i = 0; i < 8; i = j + 1) {
		for (j = i; j < 8 && !w[j]; j++)
			;
		if (j - i >= 2 && j - i > run) {
			start = i;
			run = j - i;
		}
	}
	buf[0] = 0;
	for (i = 0; i < 8 && n < len; i++) {
		if (i == start) {
			n += (size_t)snprintf(buf + n, len - n, "::");
			i += run - 1;
			continue;
		}
		n += (size_t)snprintf(buf + n, len - n, "%s%x", i && i != start + run ? ":" : "", w[i]);
	}
}

/* Rank of a RoCE GID for the family (lower is better), -1 when unusable. */
static int roce_rank(const struct kinet_mlx5_gid *g, enum kinet_mlx5_gid_family family)
{
	bool v4 = kinet_mlx5_gid_is_ipv4(g->raw);
	int rank;

	if (kinet_mlx5_gid_is_zero(g->raw))
		return -1;
	if ((family == KINET_MLX5_GID_IPV4 && !v4) || (family == KINET_MLX5_GID_IPV6 && v4))
		return -1;
	/* v2 before v1 (v1 is not routable), global before link-local, IPv4
	 * before IPv6 when either will do. */
	rank = g->type == KINET_MLX5_IBV_GID_TYPE_ROCE_V2   ? 0
	       : g->type == KINET_MLX5_IBV_GID_TYPE_ROCE_V1 ? 4
							    : -1;
	if (rank < 0)
		return -1;
	if (kinet_mlx5_gid_is_link_local(g->raw))
		rank += 2;
	if (!v4)
		rank += 1;
	return rank;
}

int kinet_mlx5_gid_choose(const struct kinet_mlx5_gid *gids, size_t n, int link_layer, int want_index,
			  enum kinet_mlx5_gid_family family, const char **why)
{
	int best = -1, best_rank = 1 << 30;

	*why = NULL;
	if (want_index >= 0) {
		for (size_t i = 0; i < n; i++)
			if (gids[i].index == (uint32_t)want_index && !kinet_mlx5_gid_is_zero(gids[i].raw))
				return want_index;
		*why = "KINET_MLX5_GID_INDEX names no GID of the port's table";
		return -ENOENT;
	}
	if (link_layer == KINET_MLX5_IBV_LINK_LAYER_INFINIBAND) {
		for (size_t i = 0; i < n; i++)
			if (gids[i].index == 0)
				return 0;
		*why = "the InfiniBand port has no GID 0";
		return -ENOENT;
	}
	for (size_t i = 0; i < n; i++) {
		int r = roce_rank(&gids[i], family);

		if (r >= 0 && (r < best_rank || (r == best_rank && gids[i].index < (uint32_t)best))) {
			best = (int)gids[i].index;
			best_rank = r;
		}
	}
	if (best < 0) {
		*why = family == KINET_MLX5_GID_ANY
			       ? "no RoCE GID on the port: give its network interface an IP address (RoCE v2 "
				 "GIDs are made from the interface's addresses)"
			       : "no RoCE GID of the family KINET_MLX5_GID_FAMILY asks for on the port";
		return -ENOENT;
	}
	if (best_rank >= 4)
		*why = "only RoCE v1 GIDs on the port: RoCE v1 is not routed beyond one L2 network";
	return best;
}
