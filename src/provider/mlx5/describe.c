/*
 * What the ConnectX provider finds on this machine, for kinet-info: every
 * mlx5 device and port (state, link layer, active MTU, GIDs, firmware),
 * then, on the port a context would take, whether GPU memory registers
 * (dma-buf, peer memory) and whether the GPU can map the doorbell page,
 * each with the reason when not.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef KINET_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

#include "mlx5.h"

#define MAX_GIDS 256

struct out {
	kinet_describe_fn line;
	void *arg;
};

__attribute__((format(printf, 2, 3))) static void say(struct out *o, const char *fmt, ...)
{
	char buf[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	o->line(o->arg, buf);
}

static void describe_port(struct out *o, const struct kinet_mlx5_verbs *v, struct ibv_context *c,
			  const char *name, uint8_t port)
{
	struct kinet_mlx5_gid *g = calloc(MAX_GIDS, sizeof(*g));
	struct ibv_port_attr pa;
	const char *why;
	int n, chosen;

	if (!g)
		return;
	if (kinet_mlx5_query_port(v, c, port, &pa)) {
		say(o, "  port %u: cannot query: %s", port, strerror(errno));
		free(g);
		return;
	}
	say(o, "  port %u: %s, %s, active MTU %u (max %u), LID %u", port,
	    kinet_mlx5_port_state_name(pa.state), kinet_mlx5_link_layer_name(pa.link_layer),
	    kinet_mlx5_mtu_bytes(pa.active_mtu), kinet_mlx5_mtu_bytes(pa.max_mtu), pa.lid);
	n = kinet_mlx5_gid_table(v, c, name, port, pa.gid_tbl_len, g, MAX_GIDS);
	chosen =
		n > 0 ? kinet_mlx5_gid_choose(g, (size_t)n, pa.link_layer, -1, KINET_MLX5_GID_ANY, &why) : -1;
	if (n <= 0)
		say(o, "    no GID%s", n < 0 ? " (cannot read the table)" : "");
	for (int i = 0; i < n; i++) {
		char text[64];

		kinet_mlx5_gid_format(g[i].raw, text, sizeof(text));
		say(o, "    GID %u: %-7s %s%s", g[i].index, kinet_mlx5_gid_type_name(g[i].type), text,
		    (int)g[i].index == chosen ? "  (kinet's choice)" : "");
	}
	if (chosen < 0 && n > 0)
		say(o, "    no usable GID: %s", why);
	free(g);
}

static const char *atomics(enum ibv_atomic_cap cap)
{
	if (cap == IBV_ATOMIC_GLOB)
		return "global (PCIe atomics)";
	return cap == IBV_ATOMIC_HCA ? "HCA (atomic among the NIC's own)" : "none";
}

static void describe_devices(struct out *o, const struct kinet_mlx5_verbs *v, struct ibv_device **list)
{
	for (int i = 0; list[i]; i++) {
		struct ibv_device_attr da;
		struct ibv_context *c;

		if (!v->is_supported(list[i]))
			continue;
		c = v->open_device(list[i]);
		if (!c || v->query_device(c, &da)) {
			say(o, "%s: cannot open: %s", v->get_device_name(list[i]), strerror(errno));
			if (c)
				v->close_device(c);
			continue;
		}
		say(o, "%s: firmware %s, %u port%s, atomics %s, sysfs %s", v->get_device_name(list[i]),
		    da.fw_ver, da.phys_port_cnt, da.phys_port_cnt == 1 ? "" : "s", atomics(da.atomic_cap),
		    list[i]->ibdev_path);
		for (uint8_t p = 1; p <= da.phys_port_cnt; p++)
			describe_port(o, v, c, v->get_device_name(list[i]), p);
		v->close_device(c);
	}
}

/* GPU memory registration, each path on its own. */
static void check_gpu_memory(struct out *o, struct kinet_mlx5_ctx *m)
{
#ifdef KINET_HAVE_CUDA
	const size_t len = 2u << 20;
	char why[384] = "";
	void *buf = NULL;

	if (m->ctx.cuda_device < 0) {
		say(o, "  GPU memory registration: not tried: no CUDA device");
		return;
	}
	cudaSetDevice(m->ctx.cuda_device);
	if (cudaMalloc(&buf, len) != cudaSuccess) {
		cudaGetLastError();
		say(o, "  GPU memory registration: not tried: cudaMalloc failed");
		return;
	}
	say(o, "  GPU memory, dma-buf: %s%s",
	    kinet_mlx5_try_dmabuf(m, buf, len, m->ctx.cuda_device, why, sizeof(why)) ? "no: " : "works", why);
	why[0] = 0;
	say(o, "  GPU memory, peer memory (nvidia-peermem): %s%s",
	    kinet_mlx5_try_peer_memory(m, buf, len, why, sizeof(why)) ? "no: " : "works", why);
	cudaFree(buf);
#else
	(void)m;
	say(o, "  GPU memory registration: not tried: this kinet was built without CUDA");
#endif
}

/* The doorbell page mapped into the GPU, on a QP of the context. */
static void check_uar(struct out *o, struct kinet_ctx *ctx)
{
	struct kinet_cq_attr ca = {.depth = 16};
	struct kinet_qp_attr qa;
	struct kinet_cq *cq = NULL;
	struct kinet_qp *qp = NULL;
	struct kinet_mlx5_uar_page *page;
	char why[384] = "";

	if (ctx->cuda_device < 0) {
		say(o,
		    "  GPU-mapped UAR: not tried: no CUDA device (a host-only context rings from the CPU)");
		return;
	}
	kinet_qp_attr_init(&qa);
	qa.sq_depth = 8;
	qa.db_mode = KINET_DB_GPU;
	if (kinet_cq_create(ctx, &ca, &cq) || (qa.send_cq = cq, kinet_qp_create(ctx, &qa, &qp))) {
		say(o, "  GPU-mapped UAR: not tried: cannot create a CQ and a QP (see the log)");
	} else if (kinet_mlx5_uar_map(kinet_mctx(ctx), kinet_qp_db_reg(qp), &page, why, sizeof(why))) {
		say(o, "  GPU-mapped UAR: no: %s (QPs fall back to CPU-assisted doorbells)", why);
	} else {
		kinet_mlx5_uar_unmap(kinet_mctx(ctx), page);
		say(o, "  GPU-mapped UAR: works (GPU and BlueFlame doorbell modes)");
	}
	if (qp)
		kinet_qp_destroy(qp);
	if (cq)
		kinet_cq_destroy(cq);
}

int kinet_mlx5_describe(kinet_describe_fn line, void *arg)
{
	struct out o = {line, arg};
	const struct kinet_mlx5_verbs *v;
	struct kinet_ctx_attr attr;
	struct kinet_ctx *ctx = NULL;
	struct ibv_device **list;
	char why[512];
	const char *w;
	int rc;

	v = kinet_mlx5_verbs_load(&w);
	if (!v) {
		say(&o, "%s", w);
		return -ENODEV;
	}
	rc = kinet_mlx5_device_probe(v, why, sizeof(why));
	if (rc) {
		say(&o, "%s", why);
		return rc;
	}
	list = v->get_device_list(NULL);
	if (list) {
		describe_devices(&o, v, list);
		v->free_device_list(list);
	}
	kinet_ctx_attr_init(&attr);
	attr.provider = "mlx5";
	rc = kinet_ctx_open(&attr, &ctx);
	if (rc) {
		say(&o, "checks: cannot open a context: %s (see the log)", kinet_strerror(rc));
		return 0;
	}
	say(&o, "checks on %s port %u (the port a context takes here%s), CUDA device %d:",
	    kinet_mctx(ctx)->device, kinet_mctx(ctx)->port,
	    kinet_env_is_set("KINET_DEVICE") ? ", from KINET_DEVICE" : ", closest to the GPU",
	    ctx->cuda_device);
	check_gpu_memory(&o, kinet_mctx(ctx));
	check_uar(&o, ctx);
	kinet_ctx_close(ctx);
	return 0;
}
