/*
 * What the device and its port say about themselves (ibv_devinfo -v).  The
 * limits are the software NIC's; they are the ones create calls check.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "verbs.h"

/* rdma-core's private node (IBVERBS_PRIVATE_34); ibv_devinfo imports it. */
enum kinet_verbs_gid_type_sysfs { KINET_VERBS_GID_ROCE_V1 = 0, KINET_VERBS_GID_ROCE_V2 = 1 };
KINET_VERBS_EXPORT int ibv_query_gid_type(struct ibv_context *context, uint8_t port_num, unsigned int index,
					  enum kinet_verbs_gid_type_sysfs *type);

static void device_attr(struct kinet_verbs_context *ctx, struct ibv_device_attr *a)
{
	memset(a, 0, sizeof(*a));
	snprintf(a->fw_ver, sizeof(a->fw_ver), "kinet %s", "0.1");
	a->node_guid = htobe64(kinet_verbs_guid(ctx->ipv4));
	a->sys_image_guid = a->node_guid;
	a->max_mr_size = UINT64_MAX;
	a->page_size_cap = 0xfffff000;
	/* Not a PCI device: vendor 0 (ConnectX would be 0x02c9). */
	a->vendor_id = 0;
	a->vendor_part_id = 0;
	a->hw_ver = 0;
	a->max_qp = 65535;
	a->max_qp_wr = KINET_VERBS_MAX_QP_WR;
	a->device_cap_flags = IBV_DEVICE_RC_RNR_NAK_GEN | IBV_DEVICE_PORT_ACTIVE_EVENT;
	a->max_sge = KINET_VERBS_MAX_SGE;
	a->max_sge_rd = KINET_VERBS_MAX_SGE;
	a->max_cq = 65535;
	a->max_cqe = KINET_VERBS_MAX_CQE - 1;
	a->max_mr = 1 << 20;
	a->max_pd = 1 << 20;
	a->max_qp_rd_atom = KINET_VERBS_MAX_RD_ATOM;
	a->max_ee_rd_atom = 0;
	a->max_res_rd_atom = 65535 * KINET_VERBS_MAX_RD_ATOM;
	a->max_qp_init_rd_atom = KINET_VERBS_MAX_RD_ATOM;
	a->atomic_cap = IBV_ATOMIC_HCA;
	a->max_srq = 65535;
	a->max_srq_wr = KINET_VERBS_MAX_SRQ_WR - 1;
	a->max_srq_sge = KINET_VERBS_MAX_SGE;
	a->max_pkeys = 1;
	a->local_ca_ack_delay = 16;
	a->phys_port_cnt = 1;
}

KINET_VERBS_EXPORT int ibv_query_device(struct ibv_context *context, struct ibv_device_attr *attr)
{
	if (!context || !attr)
		return EINVAL;
	device_attr(kinet_verbs_ctx(context), attr);
	return 0;
}

int kinet_verbs_query_device_ex(struct ibv_context *context, const struct ibv_query_device_ex_input *input,
				struct ibv_device_attr_ex *attr, size_t attr_size)
{
	struct ibv_device_attr_ex a;

	if (input && input->comp_mask)
		return EINVAL;
	if (attr_size < sizeof(a.orig_attr))
		return EINVAL;
	memset(&a, 0, sizeof(a));
	device_attr(kinet_verbs_ctx(context), &a.orig_attr);
	a.max_dm_size = 0;
	a.phys_port_cnt_ex = 1;
	memcpy(attr, &a, attr_size < sizeof(a) ? attr_size : sizeof(a));
	return 0;
}

static int port_attr(struct kinet_verbs_context *ctx, uint8_t port, struct ibv_port_attr *a)
{
	(void)ctx;
	if (port != 1)
		return EINVAL;
	memset(a, 0, sizeof(*a));
	a->state = IBV_PORT_ACTIVE;
	a->max_mtu = IBV_MTU_4096;
	a->active_mtu = IBV_MTU_4096;
	a->gid_tbl_len = 1;
	a->port_cap_flags = IBV_PORT_CM_SUP;
	a->max_msg_sz = 1u << 31;
	a->pkey_tbl_len = 1;
	/* RoCE: no LID, no subnet manager. */
	a->lid = 0;
	a->sm_lid = 0;
	a->max_vl_num = 1;
	a->active_width = 2;  /* 4x */
	a->active_speed = 32; /* EDR, 25 Gb/s per lane: a number, the software NIC has no line rate */
	a->phys_state = 5;    /* LinkUp */
	a->link_layer = IBV_LINK_LAYER_ETHERNET;
	return 0;
}

int kinet_verbs_query_port_ex(struct ibv_context *context, uint8_t port, struct ibv_port_attr *attr,
			      size_t attr_len)
{
	struct ibv_port_attr a;
	int ret = port_attr(kinet_verbs_ctx(context), port, &a);

	if (ret)
		return ret;
	memcpy(attr, &a, attr_len < sizeof(a) ? attr_len : sizeof(a));
	return 0;
}

/* The exported ibv_query_port is the one programs built before the
 * extended port attributes call: it fills the old, shorter structure. */
#undef ibv_query_port
KINET_VERBS_EXPORT int ibv_query_port(struct ibv_context *context, uint8_t port_num,
				      struct _compat_ibv_port_attr *port_attr);
KINET_VERBS_EXPORT int ibv_query_port(struct ibv_context *context, uint8_t port_num,
				      struct _compat_ibv_port_attr *port_attr)
{
	if (!context || !port_attr)
		return EINVAL;
	return kinet_verbs_query_port_ex(context, port_num, (struct ibv_port_attr *)(void *)port_attr,
					 offsetof(struct ibv_port_attr, flags));
}

KINET_VERBS_EXPORT int ibv_query_gid(struct ibv_context *context, uint8_t port_num, int index,
				     union ibv_gid *gid)
{
	if (!context || !gid || port_num != 1 || index != 0) {
		errno = EINVAL;
		return -1;
	}
	*gid = kinet_verbs_ctx(context)->gid;
	return 0;
}

KINET_VERBS_EXPORT int ibv_query_gid_type(struct ibv_context *context, uint8_t port_num, unsigned int index,
					  enum kinet_verbs_gid_type_sysfs *type)
{
	if (!context || !type || port_num != 1 || index != 0) {
		errno = EINVAL;
		return -1;
	}
	*type = KINET_VERBS_GID_ROCE_V2;
	return 0;
}

static void gid_entry(struct kinet_verbs_context *ctx, struct ibv_gid_entry *e)
{
	memset(e, 0, sizeof(*e));
	e->gid = ctx->gid;
	e->gid_index = 0;
	e->port_num = 1;
	e->gid_type = IBV_GID_TYPE_ROCE_V2;
	e->ndev_ifindex = 0;
}

KINET_VERBS_EXPORT int _ibv_query_gid_ex(struct ibv_context *context, uint32_t port_num, uint32_t gid_index,
					 struct ibv_gid_entry *entry, uint32_t flags, size_t entry_size)
{
	struct ibv_gid_entry e;

	if (!context || !entry || flags || entry_size < sizeof(e))
		return EINVAL;
	if (port_num != 1 || gid_index != 0)
		return ENODATA;
	gid_entry(kinet_verbs_ctx(context), &e);
	memcpy(entry, &e, sizeof(e));
	return 0;
}

KINET_VERBS_EXPORT ssize_t _ibv_query_gid_table(struct ibv_context *context, struct ibv_gid_entry *entries,
						size_t max_entries, uint32_t flags, size_t entry_size)
{
	if (!context || !entries || flags || entry_size < sizeof(*entries))
		return -EINVAL;
	if (max_entries < 1)
		return -EINVAL;
	gid_entry(kinet_verbs_ctx(context), entries);
	return 1;
}

KINET_VERBS_EXPORT int ibv_query_pkey(struct ibv_context *context, uint8_t port_num, int index, __be16 *pkey)
{
	if (!context || !pkey || port_num != 1 || index != 0) {
		errno = EINVAL;
		return -1;
	}
	*pkey = htobe16(0xffff);
	return 0;
}

KINET_VERBS_EXPORT int ibv_get_pkey_index(struct ibv_context *context, uint8_t port_num, __be16 pkey)
{
	if (!context || port_num != 1 || be16toh(pkey) != 0xffff) {
		errno = EINVAL;
		return -1;
	}
	return 0;
}
