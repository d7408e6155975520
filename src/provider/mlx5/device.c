/*
 * Finding the ConnectX port a context uses: every port of every mlx5
 * device described (state, link layer, PCI distance to the context's GPU),
 * the choice made by device_choice.c, then the chosen device opened with
 * its protection domain and the GID its QPs send from.
 */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef KINET_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

#include "mlx5.h"

#define MAX_PORTS 256
#define MAX_GIDS 256
#define GID_TABLE_ALL 4096 /* entries of all ports of a device */

/* The sysfs path of the GPU's PCI function, or an empty string. */
static void gpu_pci_path(int gpu, char *out, size_t len)
{
	out[0] = 0;
#ifdef KINET_HAVE_CUDA
	char bus[32], link[96];

	if (gpu < 0 || cudaDeviceGetPCIBusId(bus, sizeof(bus), gpu) != cudaSuccess) {
		cudaGetLastError();
		return;
	}
	for (char *c = bus; *c; c++)
		*c = (char)tolower((unsigned char)*c);
	snprintf(link, sizeof(link), "/sys/bus/pci/devices/%s", bus);
	if (!realpath(link, out) || strlen(out) >= len)
		out[0] = 0;
#else
	(void)gpu;
	(void)len;
#endif
}

/* The sysfs path of an RDMA device's PCI function, or an empty string. */
static void nic_pci_path(struct ibv_device *d, char *out)
{
	char link[PATH_MAX];

	out[0] = 0;
	if (snprintf(link, sizeof(link), "%s/device", d->ibdev_path) >= (int)sizeof(link) ||
	    !realpath(link, out))
		out[0] = 0;
}

struct port_list {
	struct kinet_mlx5_port_desc desc[MAX_PORTS];
	struct ibv_device *dev[MAX_PORTS];
	size_t n;
	int devices;	  /* mlx5 devices seen */
	char others[128]; /* RDMA devices of other drivers, for the message */
};

static void list_ports(const struct kinet_mlx5_verbs *v, struct ibv_device **list, const char *gpu_path,
		       struct port_list *pl)
{
	memset(pl, 0, sizeof(*pl));
	for (int i = 0; list[i]; i++) {
		const char *name = v->get_device_name(list[i]);
		struct ibv_device_attr da;
		struct ibv_context *c;
		char path[PATH_MAX];

		if (!v->is_supported(list[i])) {
			size_t o = strlen(pl->others);
			snprintf(pl->others + o, sizeof(pl->others) - o, "%s%s", o ? ", " : "", name);
			continue;
		}
		pl->devices++;
		c = v->open_device(list[i]);
		if (!c)
			continue;
		nic_pci_path(list[i], path);
		if (!v->query_device(c, &da)) {
			for (uint8_t p = 1; p <= da.phys_port_cnt && pl->n < MAX_PORTS; p++) {
				struct ibv_port_attr pa;
				struct kinet_mlx5_port_desc *d = &pl->desc[pl->n];

				if (kinet_mlx5_query_port(v, c, p, &pa))
					continue;
				d->device = name;
				d->port = p;
				d->state = pa.state;
				d->link_layer = pa.link_layer;
				d->pci_distance = gpu_path[0] ? kinet_mlx5_pci_distance(gpu_path, path) : -1;
				pl->dev[pl->n++] = list[i];
			}
		}
		v->close_device(c);
	}
}

static void no_device(const struct port_list *pl, char *why, size_t whylen)
{
	snprintf(why, whylen,
		 "no mlx5 device: rdma-core lists %s%s%s (is the mlx5_ib kernel module loaded, and is "
		 "/dev/infiniband visible in this container?)",
		 pl->others[0] ? "only " : "none", pl->others, pl->others[0] ? ", of other drivers" : "");
}

/* ibv_get_device_list failed: ENOSYS when the kernel has no RDMA device
 * class at all. */
static void no_list(char *why, size_t whylen)
{
	int err = errno;

	snprintf(why, whylen, "no mlx5 device: %s (ibv_get_device_list: %s)%s",
		 err == ENOSYS ? "this kernel offers no RDMA devices" : "rdma-core cannot list RDMA devices",
		 strerror(err),
		 err == ENOSYS ? "; is the mlx5_ib module loaded and /sys/class/infiniband visible here?"
			       : "");
}

int kinet_mlx5_device_probe(const struct kinet_mlx5_verbs *v, char *why, size_t whylen)
{
	struct ibv_device **list = v->get_device_list(NULL);
	struct port_list *pl;
	int ret;

	if (!list) {
		no_list(why, whylen);
		return -ENODEV;
	}
	pl = malloc(sizeof(*pl));
	if (!pl) {
		v->free_device_list(list);
		return -ENOMEM;
	}
	list_ports(v, list, "", pl);
	if (!pl->devices) {
		no_device(pl, why, whylen);
		ret = -ENODEV;
	} else {
		ret = kinet_mlx5_port_choose(pl->desc, pl->n, NULL, why, whylen);
		ret = ret < 0 ? ret : 0;
	}
	free(pl);
	v->free_device_list(list);
	return ret;
}

/* GID type from sysfs, for rdma-core older than the GID table query. */
static uint32_t sysfs_gid_type(const char *device, uint8_t port, int index)
{
	char path[256], buf[32] = "";
	FILE *f;

	snprintf(path, sizeof(path), "/sys/class/infiniband/%s/ports/%u/gid_attrs/types/%d", device, port,
		 index);
	f = fopen(path, "r");
	if (f) {
		if (!fgets(buf, sizeof(buf), f))
			buf[0] = 0;
		fclose(f);
	}
	if (strstr(buf, "RoCE v2"))
		return KINET_MLX5_IBV_GID_TYPE_ROCE_V2;
	if (strstr(buf, "RoCE"))
		return KINET_MLX5_IBV_GID_TYPE_ROCE_V1;
	return KINET_MLX5_IBV_GID_TYPE_IB;
}

int kinet_mlx5_gid_table(const struct kinet_mlx5_verbs *v, struct ibv_context *c, const char *device,
			 uint8_t port, int table_len, struct kinet_mlx5_gid *out, int max)
{
	int n = 0;

	if (v->query_gid_table) {
		/* The table of every port comes at once and must fit. */
		struct ibv_gid_entry *e = calloc(GID_TABLE_ALL, sizeof(*e));
		ssize_t got = e ? v->query_gid_table(c, e, GID_TABLE_ALL, 0, sizeof(e[0])) : -ENOMEM;

		if (got < 0) {
			free(e);
			return (int)got;
		}
		for (ssize_t i = 0; i < got && n < max; i++) {
			if (e[i].port_num != port)
				continue;
			out[n].index = e[i].gid_index;
			out[n].type = e[i].gid_type;
			memcpy(out[n].raw, e[i].gid.raw, 16);
			n++;
		}
		free(e);
		return n;
	}
	for (int i = 0; i < table_len && n < max; i++) {
		union ibv_gid g;

		if (v->query_gid(c, port, i, &g) || kinet_mlx5_gid_is_zero(g.raw))
			continue;
		out[n].index = (uint32_t)i;
		out[n].type = sysfs_gid_type(device, port, i);
		memcpy(out[n].raw, g.raw, 16);
		n++;
	}
	return n;
}

/* The GID a QP of m's port sends from ($KINET_MLX5_GID_INDEX,
 * $KINET_MLX5_GID_FAMILY, gid.c's rules). */
static int choose_gid(struct kinet_mlx5_ctx *m, char *why, size_t whylen)
{
	struct kinet_mlx5_gid *t = calloc(MAX_GIDS, sizeof(*t));
	int family = kinet_mlx5_gid_family_parse(kinet_env_str("KINET_MLX5_GID_FAMILY"));
	int n, idx = -1;
	const char *w = NULL;

	if (!t)
		return -ENOMEM;
	if (family < 0) {
		snprintf(why, whylen, "KINET_MLX5_GID_FAMILY must be ipv4, ipv6 or any");
		free(t);
		return -EINVAL;
	}
	n = kinet_mlx5_gid_table(m->v, m->verbs, m->device, m->port, m->port_attr.gid_tbl_len, t, MAX_GIDS);
	if (n >= 0)
		idx = kinet_mlx5_gid_choose(t, (size_t)n, m->port_attr.link_layer,
					    (int)kinet_env_long("KINET_MLX5_GID_INDEX"),
					    (enum kinet_mlx5_gid_family)family, &w);
	for (int i = 0; idx >= 0 && i < n; i++)
		if (t[i].index == (uint32_t)idx)
			memcpy(m->gid.raw, t[i].raw, 16);
	free(t);
	if (n < 0 || idx < 0) {
		snprintf(why, whylen, "%s port %u: %s", m->device, m->port,
			 n < 0 ? "cannot read the GID table" : w);
		return -ENODEV;
	}
	if (w)
		KINET_WARN("mlx5: %s port %u: %s", m->device, m->port, w);
	m->gid_index = idx;
	return 0;
}

int kinet_mlx5_device_open(struct kinet_mlx5_ctx *m, int gpu, char *why, size_t whylen)
{
	const struct kinet_mlx5_verbs *v = m->v;
	struct kinet_mlx5_device_spec spec;
	struct ibv_device **list;
	struct port_list *pl = NULL;
	char gpu_path[PATH_MAX];
	const char *w;
	int ret, i;

	ret = kinet_mlx5_device_spec_parse(kinet_env_str("KINET_DEVICE"), &spec, &w);
	if (ret) {
		snprintf(why, whylen, "%s", w);
		return ret;
	}
	list = v->get_device_list(NULL);
	if (!list) {
		no_list(why, whylen);
		return -ENODEV;
	}
	pl = malloc(sizeof(*pl));
	if (!pl) {
		ret = -ENOMEM;
		goto out;
	}
	gpu_pci_path(gpu, gpu_path, sizeof(gpu_path));
	list_ports(v, list, gpu_path, pl);
	if (!pl->devices) {
		no_device(pl, why, whylen);
		ret = -ENODEV;
		goto out;
	}
	i = kinet_mlx5_port_choose(pl->desc, pl->n, &spec, why, whylen);
	if (i < 0) {
		ret = i;
		goto out;
	}
	snprintf(m->device, sizeof(m->device), "%s", pl->desc[i].device);
	m->port = (uint8_t)pl->desc[i].port;
	m->verbs = v->open_device(pl->dev[i]);
	if (!m->verbs || v->query_device(m->verbs, &m->dev_attr) ||
	    kinet_mlx5_query_port(v, m->verbs, m->port, &m->port_attr)) {
		snprintf(why, whylen, "%s: cannot open or query the device: %s", m->device, strerror(errno));
		ret = -ENODEV;
		goto out;
	}
	m->pd = v->alloc_pd(m->verbs);
	if (!m->pd) {
		snprintf(why, whylen, "%s: ibv_alloc_pd: %s", m->device, strerror(errno));
		ret = -ENODEV;
		goto out;
	}
	ret = choose_gid(m, why, whylen);
	if (!ret && pl->desc[i].pci_distance >= KINET_MLX5_PCI_FAR)
		KINET_INFO("mlx5: %s is under another PCI root complex than CUDA device %d: its traffic "
			   "crosses the CPU",
			   m->device, gpu);
out:
	free(pl);
	v->free_device_list(list);
	if (ret)
		kinet_mlx5_device_close(m);
	return ret;
}

void kinet_mlx5_device_close(struct kinet_mlx5_ctx *m)
{
	if (m->pd)
		m->v->dealloc_pd(m->pd);
	m->pd = NULL;
	if (m->verbs)
		m->v->close_device(m->verbs);
	m->verbs = NULL;
}
