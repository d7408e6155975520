/*
 * IPv4 addresses of the bootstrap: "host:port" parsing and the address a
 * unique id advertises.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "boot_internal.h"

static int resolve(const char *host, const char *port, struct sockaddr_in *sa)
{
	struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = SOCK_STREAM};
	struct addrinfo *res = NULL;
	int rc;

	rc = getaddrinfo(host, port, &hints, &res);
	if (rc != 0)
		return rc;
	memcpy(sa, res->ai_addr, sizeof(*sa));
	freeaddrinfo(res);
	return 0;
}

int boot_parse_addr(const char *hostport, struct sockaddr_in *sa)
{
	char host[256];
	const char *colon;
	char *end;
	long port;
	size_t hlen;
	int rc;

	colon = hostport ? strrchr(hostport, ':') : NULL;
	if (!colon || colon == hostport) {
		KINET_ERR("bootstrap: root address '%s' is not host:port", hostport ? hostport : "(null)");
		return -EINVAL;
	}
	hlen = (size_t)(colon - hostport);
	port = strtol(colon + 1, &end, 10);
	if (hlen >= sizeof(host) || end == colon + 1 || *end || port <= 0 || port > 65535) {
		KINET_ERR("bootstrap: root address '%s' is not host:port (port 1..65535)", hostport);
		return -EINVAL;
	}
	memcpy(host, hostport, hlen);
	host[hlen] = 0;
	rc = resolve(host, colon + 1, sa);
	if (rc != 0) {
		KINET_ERR("bootstrap: cannot resolve root host '%s' (IPv4): %s", host, gai_strerror(rc));
		return -EINVAL;
	}
	return 0;
}

void boot_addr_str(const struct sockaddr_in *sa, char *buf, size_t size)
{
	char ip[INET_ADDRSTRLEN] = "?";

	inet_ntop(AF_INET, &sa->sin_addr, ip, sizeof(ip));
	snprintf(buf, size, "%s:%u", ip, (unsigned)ntohs(sa->sin_port));
}

int boot_local_addr(struct in_addr *addr)
{
	const char *want = kinet_env_str("KINET_BOOT_ADDR");
	struct ifaddrs *ifs, *ifa;
	struct sockaddr_in sa;
	int rc;

	if (want) {
		rc = resolve(want, NULL, &sa);
		if (rc != 0) {
			KINET_ERR("bootstrap: KINET_BOOT_ADDR=%s does not resolve (IPv4): %s", want,
				  gai_strerror(rc));
			return -EINVAL;
		}
		*addr = sa.sin_addr;
		return 0;
	}
	addr->s_addr = htonl(INADDR_LOOPBACK);
	if (getifaddrs(&ifs) != 0)
		return 0;
	for (ifa = ifs; ifa; ifa = ifa->ifa_next) {
		if (!ifa->ifa_addr || ifa->ifa_addr->sa_family != AF_INET)
			continue;
		if (!(ifa->ifa_flags & IFF_UP) || (ifa->ifa_flags & IFF_LOOPBACK))
			continue;
		*addr = ((struct sockaddr_in *)ifa->ifa_addr)->sin_addr;
		break;
	}
	freeifaddrs(ifs);
	return 0;
}
