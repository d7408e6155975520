/*
 * Which ConnectX port a context uses: the one $KINET_DEVICE names, else the
 * first active port closest to the context's GPU on the PCI tree (a NIC
 * under the GPU's own switch moves its data without crossing the CPU), as
 * NCCL and NVSHMEM pick theirs.  Pure (mlx5_attr.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mlx5_attr.h"

int kinet_mlx5_device_spec_parse(const char *s, struct kinet_mlx5_device_spec *spec, const char **why)
{
	const char *colon;
	size_t len;
	char *end;
	long port = 0;

	memset(spec, 0, sizeof(*spec));
	*why = NULL;
	if (!s || !*s)
		return 0;
	colon = strchr(s, ':');
	len = colon ? (size_t)(colon - s) : strlen(s);
	if (!len) {
		*why = "KINET_DEVICE has no device name (mlx5_0 or mlx5_0:1)";
		return -EINVAL;
	}
	if (len >= sizeof(spec->name)) {
		*why = "KINET_DEVICE: device name too long";
		return -EINVAL;
	}
	for (size_t i = 0; i < len; i++) {
		if (s[i] == ' ' || s[i] == '/' || s[i] == ',') {
			*why = "KINET_DEVICE: one device name (mlx5_0 or mlx5_0:1)";
			return -EINVAL;
		}
	}
	if (colon) {
		port = strtol(colon + 1, &end, 10);
		if (!colon[1] || *end || port < 1 || port > 255) {
			*why = "KINET_DEVICE: the port after ':' must be a number 1..255 (mlx5_0:1)";
			return -EINVAL;
		}
	}
	memcpy(spec->name, s, len);
	spec->name[len] = 0;
	spec->port = (int)port;
	return 0;
}

/* The path components from the PCI root ("pci0000:00") on; NULL if none. */
static const char *pci_root(const char *path)
{
	const char *p = path ? strstr(path, "/pci") : NULL;

	return p ? p + 1 : NULL;
}

static int components(const char *p)
{
	int n = 0;

	for (; *p; p++)
		if (*p == '/' && p[1] && p[1] != '/')
			n++;
	return n + 1;
}

int kinet_mlx5_pci_distance(const char *a, const char *b)
{
	const char *ra = pci_root(a), *rb = pci_root(b);
	int da, db, common = 0;
	size_t i = 0;

	if (!ra || !rb)
		return -1;
	da = components(ra);
	db = components(rb);
	/* Whole components in common, from the root. */
	for (;; i++) {
		bool ea = !ra[i] || ra[i] == '/', eb = !rb[i] || rb[i] == '/';

		if (ea && eb) {
			common++;
			if (!ra[i] || !rb[i])
				break;
			continue;
		}
		if (ra[i] != rb[i])
			break;
	}
	if (!common)
		return KINET_MLX5_PCI_FAR + da + db;
	return (da - common) + (db - common);
}

const char *kinet_mlx5_port_state_name(int state)
{
	static const char *const names[] = {"NOP", "DOWN", "INIT", "ARMED", "ACTIVE", "ACTIVE_DEFER"};

	return state >= 0 && state <= 5 ? names[state] : "?";
}

const char *kinet_mlx5_link_layer_name(int link_layer)
{
	switch (link_layer) {
	case KINET_MLX5_IBV_LINK_LAYER_INFINIBAND:
		return "InfiniBand";
	case KINET_MLX5_IBV_LINK_LAYER_ETHERNET:
		return "Ethernet (RoCE)";
	}
	return "unknown";
}

static bool better(const struct kinet_mlx5_port_desc *c, const struct kinet_mlx5_port_desc *best)
{
	if (!best)
		return true;
	if (c->pci_distance < 0)
		return false;
	return best->pci_distance < 0 || c->pci_distance < best->pci_distance;
}

int kinet_mlx5_port_choose(const struct kinet_mlx5_port_desc *p, size_t n,
			   const struct kinet_mlx5_device_spec *spec, char *why, size_t whylen)
{
	const struct kinet_mlx5_port_desc *best = NULL;
	bool named = spec && spec->name[0], seen_dev = false, seen_port = false;
	int down_state = -1;
	size_t nseen = 0;

	why[0] = 0;
	for (size_t i = 0; i < n; i++) {
		const struct kinet_mlx5_port_desc *c = &p[i];

		if (named && strcmp(c->device, spec->name))
			continue;
		seen_dev = true;
		if (named && spec->port && c->port != spec->port)
			continue;
		seen_port = true;
		nseen++;
		if (c->state != KINET_MLX5_IBV_PORT_ACTIVE) {
			down_state = c->state;
			continue;
		}
		if (better(c, best))
			best = c;
	}
	if (best)
		return (int)(best - p);
	if (!n)
		snprintf(why, whylen, "no mlx5 device");
	else if (named && !seen_dev)
		snprintf(why, whylen, "KINET_DEVICE=%s: no such mlx5 device", spec->name);
	else if (named && !seen_port)
		snprintf(why, whylen, "KINET_DEVICE=%s:%d: the device has no port %d", spec->name, spec->port,
			 spec->port);
	else if (named && spec->port)
		snprintf(why, whylen,
			 "KINET_DEVICE=%s:%d: the port is %s, not ACTIVE (cable, link or subnet manager)",
			 spec->name, spec->port, kinet_mlx5_port_state_name(down_state));
	else
		snprintf(why, whylen,
			 "no active mlx5 port%s%s (%zu port%s, all down: cable, link or subnet manager)",
			 named ? " on " : "", named ? spec->name : "", nseen, nseen == 1 ? "" : "s");
	return -ENODEV;
}
