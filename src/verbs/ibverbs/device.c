/*
 * Devices and contexts: one device, kinet0, the software NIC; each
 * ibv_open_device opens a kinet context of the soft provider, with its own
 * directory slot (directory.c) and notifier thread (notify.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "front.h"
#include "verbs.h"

KINET_VERBS_EXPORT const int kinet_verbs_front_door = 1;

/* Devices live as long as the process: a program may keep an ibv_device
 * pointer after ibv_free_device_list (rdma-core keeps them too). */
static struct ibv_device kinet_device = {
	.node_type = IBV_NODE_CA,
	.transport_type = IBV_TRANSPORT_IB,
	.name = "kinet0",
	.dev_name = "uverbs0",
	.dev_path = "/sys/class/infiniband_verbs/uverbs0",
	.ibdev_path = "/sys/class/infiniband/kinet0",
};

/* Set while kinet itself loads or initialises libfabric: the efa provider
 * enumerates verbs devices then, and must not find kinet0 (it would open
 * a kinet context inside kinet). */

KINET_VERBS_EXPORT struct ibv_device **ibv_get_device_list(int *num_devices)
{
	struct ibv_device **list = calloc(2, sizeof(*list));
	int n = 1;

	if (!list) {
		errno = ENOMEM;
		return NULL;
	}
	if (kinet_fabric_call_depth() > 0)
		n = 0;
	if (n)
		list[0] = &kinet_device;
	if (num_devices)
		*num_devices = n;
	return list;
}

KINET_VERBS_EXPORT void ibv_free_device_list(struct ibv_device **list)
{
	free(list);
}

KINET_VERBS_EXPORT const char *ibv_get_device_name(struct ibv_device *device)
{
	return device ? device->name : NULL;
}

KINET_VERBS_EXPORT int ibv_get_device_index(struct ibv_device *device)
{
	return device == &kinet_device ? 0 : -1;
}

KINET_VERBS_EXPORT __be64 ibv_get_device_guid(struct ibv_device *device)
{
	uint32_t ipv4 = 0;

	if (device != &kinet_device)
		return 0;
	kinet_verbs_netdev_address(&ipv4);
	return htobe64(kinet_verbs_guid(ipv4));
}

static void context_ops(struct kinet_verbs_context *ctx)
{
	struct ibv_context_ops *ops = &ctx->vctx.context.ops;

	ops->poll_cq = kinet_verbs_poll_cq;
	ops->req_notify_cq = kinet_verbs_req_notify_cq;
	ops->post_send = kinet_verbs_post_send;
	ops->post_recv = kinet_verbs_post_recv;
	ops->post_srq_recv = kinet_verbs_post_srq_recv;

	ctx->vctx.query_port = kinet_verbs_query_port_ex;
	ctx->vctx.query_device_ex = kinet_verbs_query_device_ex;
	ctx->vctx.create_cq_ex = kinet_verbs_create_cq_ex;
	ctx->vctx.create_qp_ex = kinet_verbs_create_qp_ex;
	ctx->vctx.create_srq_ex = kinet_verbs_create_srq_ex;
	ctx->vctx.get_srq_num = kinet_verbs_get_srq_num;
	ctx->vctx.sz = sizeof(ctx->vctx);
	ctx->vctx.context.abi_compat = __VERBS_ABI_IS_EXTENDED;
}

KINET_VERBS_EXPORT struct ibv_context *ibv_open_device(struct ibv_device *device)
{
	struct kinet_ctx_attr attr;
	struct kinet_verbs_context *ctx;
	int ret;

	if (device != &kinet_device) {
		errno = ENODEV;
		return NULL;
	}
	ctx = calloc(1, sizeof(*ctx));
	if (!ctx) {
		errno = ENOMEM;
		return NULL;
	}
	ctx->dir.listen_fd = -1;
	ctx->dir.wake[0] = ctx->dir.wake[1] = -1;
	ctx->async_pipe[0] = ctx->async_pipe[1] = -1;
	pthread_mutex_init(&ctx->lock, NULL);
	pthread_cond_init(&ctx->wake, NULL);
	pthread_mutex_init(&ctx->vctx.context.mutex, NULL);
	ctx->vctx.context.device = device;
	ctx->vctx.context.num_comp_vectors = 1;
	context_ops(ctx);

	ret = kinet_verbs_gid_choose(ctx);
	if (ret)
		goto err;
	kinet_ctx_attr_init(&attr);
	/* The front door is the software NIC's (a ConnectX is used through
	 * the system's rdma-core, not through this library). */
	attr.provider = "soft";
	ret = kinet_verbs_errno(kinet_ctx_open(&attr, &ctx->kctx));
	if (ret) {
		fprintf(stderr, "kinet verbs: cannot open the software NIC: %s\n", kinet_strerror(-ret));
		goto err;
	}
	ret = kinet_verbs_directory_start(ctx);
	if (ret)
		goto err;
	kinet_ctx_set_qpn_base(ctx->kctx, (uint32_t)ctx->dir.slot << 16 | 1);
	if (pipe2(ctx->async_pipe, O_CLOEXEC)) {
		ret = errno;
		goto err;
	}
	ctx->vctx.context.async_fd = ctx->async_pipe[0];
	ctx->vctx.context.cmd_fd = -1;
	ret = kinet_verbs_notifier_start(ctx);
	if (ret)
		goto err;
	return &ctx->vctx.context;
err:
	kinet_verbs_directory_stop(ctx);
	if (ctx->kctx)
		kinet_ctx_close(ctx->kctx);
	if (ctx->async_pipe[0] >= 0) {
		close(ctx->async_pipe[0]);
		close(ctx->async_pipe[1]);
	}
	free(ctx);
	errno = ret;
	return NULL;
}

KINET_VERBS_EXPORT int ibv_close_device(struct ibv_context *context)
{
	struct kinet_verbs_context *ctx = kinet_verbs_ctx(context);

	/* Both threads stop before the kinet context goes: they reach its QPs
	 * and CQs.  What the program left open goes with the context (kinet
	 * frees its objects; the wrappers are freed here), as a device's
	 * resources go when its file is closed. */
	kinet_verbs_notifier_stop(ctx);
	kinet_verbs_directory_stop(ctx);
	kinet_ctx_close(ctx->kctx);
	while (ctx->qps) {
		struct kinet_verbs_qp *qp = ctx->qps;

		ctx->qps = qp->next;
		kinet_verbs_batch_free(&qp->batch);
		free(qp);
	}
	while (ctx->cqs) {
		struct kinet_verbs_cq *cq = ctx->cqs;

		ctx->cqs = cq->next;
		free(cq);
	}
	while (ctx->srqs) {
		struct kinet_verbs_srq *srq = ctx->srqs;

		ctx->srqs = srq->next;
		free(srq);
	}
	close(ctx->async_pipe[0]);
	close(ctx->async_pipe[1]);
	pthread_mutex_destroy(&ctx->lock);
	pthread_cond_destroy(&ctx->wake);
	free(ctx);
	return 0;
}
