/*
 * The port's address: RoCE v2 over an interface's IPv4 address.  GID 0 is
 * ::ffff:a.b.c.d, as a RoCE NIC gives it, so `-g 0` and perftest's GID
 * choice work and a peer on another host can be reached at that address
 * (directory.c).  There is one GID: kinet has one port per context.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "front.h"
#include "verbs.h"

int kinet_verbs_netdev_address(uint32_t *ipv4)
{
	const char *want = kinet_env_str("KINET_VERBS_NETDEV");
	struct ifaddrs *all, *ifa, *pick = NULL;

	if (getifaddrs(&all))
		return errno;
	for (ifa = all; ifa; ifa = ifa->ifa_next) {
		if (!ifa->ifa_addr || ifa->ifa_addr->sa_family != AF_INET)
			continue;
		if (want && *want) {
			if (!strcmp(ifa->ifa_name, want)) {
				pick = ifa;
				break;
			}
			continue;
		}
		if (!(ifa->ifa_flags & IFF_UP))
			continue;
		if (ifa->ifa_flags & IFF_LOOPBACK) {
			if (!pick)
				pick = ifa;
			continue;
		}
		if (!pick || (pick->ifa_flags & IFF_LOOPBACK))
			pick = ifa;
	}
	if (!pick) {
		freeifaddrs(all);
		if (want && *want) {
			fprintf(stderr,
				"kinet verbs: KINET_VERBS_NETDEV=%s: no such interface with an IPv4 "
				"address\n",
				want);
			return ENODEV;
		}
		/* No IPv4 interface at all: loopback's address still reaches
		 * this host's contexts. */
		*ipv4 = htonl(INADDR_LOOPBACK);
		return 0;
	}
	*ipv4 = ((const struct sockaddr_in *)(const void *)pick->ifa_addr)->sin_addr.s_addr;
	freeifaddrs(all);
	return 0;
}

uint64_t kinet_verbs_guid(uint32_t ipv4)
{
	/* "ki" then fffe (EUI-64's filler) then the address. */
	return 0x6b69fffe00000000ull | ntohl(ipv4);
}

int kinet_verbs_gid_choose(struct kinet_verbs_context *ctx)
{
	int ret = kinet_verbs_netdev_address(&ctx->ipv4);

	if (ret)
		return ret;
	memset(&ctx->gid, 0, sizeof(ctx->gid));
	ctx->gid.raw[10] = 0xff;
	ctx->gid.raw[11] = 0xff;
	memcpy(&ctx->gid.raw[12], &ctx->ipv4, 4);
	return 0;
}
