/*
 * rdma-core at run time: dlopen of libibverbs.so.1 and libmlx5.so.1 and
 * dlsym of what the provider calls (mlx5_dl.h).  Both stay loaded for the
 * life of the process, as rdma-core's own providers do.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "driver.h"
#include "mlx5_dl.h"

static pthread_mutex_t load_lock = PTHREAD_MUTEX_INITIALIZER;
static struct kinet_mlx5_verbs table;
static bool loaded;
static char why_buf[512];

/* The library $env names, by default (the environment table's) the
 * system's. */
static void *open_lib(const char *env, const char **name)
{
	*name = kinet_env_str(env);
	return dlopen(*name, RTLD_NOW | RTLD_LOCAL);
}

/* dlsym into a function pointer; required ones missing fail the load. */
#define SYM(lib, field, name, required)                                                                      \
	do {                                                                                                 \
		void *s_ = dlsym(lib, name);                                                                 \
		if (!s_ && (required)) {                                                                     \
			missing = name;                                                                      \
			goto fail;                                                                           \
		}                                                                                            \
		memcpy(&t.field, &s_, sizeof(s_));                                                           \
	} while (0)

static int load(const char **why)
{
	const char *vname, *mname, *missing = NULL;
	struct kinet_mlx5_verbs t;
	void *v, *m;

	memset(&t, 0, sizeof(t));
	v = open_lib("KINET_MLX5_LIBIBVERBS", &vname);
	if (!v) {
		snprintf(why_buf, sizeof(why_buf),
			 "rdma-core not found: cannot load %s (%s); install rdma-core (libibverbs1 and "
			 "ibverbs-providers, or rdma-core and libibverbs)",
			 vname, dlerror());
		*why = why_buf;
		return -ENODEV;
	}
	m = open_lib("KINET_MLX5_LIBMLX5", &mname);
	if (!m) {
		snprintf(why_buf, sizeof(why_buf),
			 "rdma-core not found: cannot load %s (%s); install rdma-core's mlx5 provider "
			 "(ibverbs-providers, or libibverbs)",
			 mname, dlerror());
		*why = why_buf;
		return -ENODEV;
	}
	SYM(v, get_device_list, "ibv_get_device_list", true);
	SYM(v, free_device_list, "ibv_free_device_list", true);
	SYM(v, get_device_name, "ibv_get_device_name", true);
	SYM(v, open_device, "ibv_open_device", true);
	SYM(v, close_device, "ibv_close_device", true);
	SYM(v, query_device, "ibv_query_device", true);
	SYM(v, query_port_compat, "ibv_query_port", true);
	SYM(v, query_gid, "ibv_query_gid", true);
	SYM(v, query_gid_table, "_ibv_query_gid_table", false);
	SYM(v, alloc_pd, "ibv_alloc_pd", true);
	SYM(v, dealloc_pd, "ibv_dealloc_pd", true);
	SYM(v, reg_mr_iova2, "ibv_reg_mr_iova2", true);
	SYM(v, reg_dmabuf_mr, "ibv_reg_dmabuf_mr", false);
	SYM(v, dereg_mr, "ibv_dereg_mr", true);
	SYM(v, destroy_cq, "ibv_destroy_cq", true);
	SYM(v, destroy_qp, "ibv_destroy_qp", true);
	SYM(v, modify_qp, "ibv_modify_qp", true);
	SYM(v, query_qp, "ibv_query_qp", true);
	SYM(v, get_async_event, "ibv_get_async_event", true);
	SYM(v, ack_async_event, "ibv_ack_async_event", true);
	SYM(v, event_type_str, "ibv_event_type_str", true);
	SYM(m, is_supported, "mlx5dv_is_supported", true);
	SYM(m, init_obj, "mlx5dv_init_obj", true);
	SYM(m, create_cq, "mlx5dv_create_cq", true);
	SYM(m, create_qp, "mlx5dv_create_qp", true);
	table = t;
	return 0;
fail:
	snprintf(why_buf, sizeof(why_buf),
		 "rdma-core too old: %s lacks %s (kinet's ConnectX provider needs rdma-core v32 or newer)",
		 missing[0] == 'm' ? mname : vname, missing);
	*why = why_buf;
	return -ENODEV;
}

const struct kinet_mlx5_verbs *kinet_mlx5_verbs_load(const char **why)
{
	const struct kinet_mlx5_verbs *t = NULL;

	pthread_mutex_lock(&load_lock);
	if (loaded || !load(why)) {
		loaded = true;
		t = &table;
	}
	pthread_mutex_unlock(&load_lock);
	return t;
}

int kinet_mlx5_query_port(const struct kinet_mlx5_verbs *v, struct ibv_context *context, uint8_t port,
			  struct ibv_port_attr *attr)
{
	struct verbs_context *vctx = verbs_get_ctx_op(context, query_port);

	memset(attr, 0, sizeof(*attr));
	if (vctx)
		return vctx->query_port(context, port, attr, sizeof(*attr));
	return v->query_port_compat(context, port, (struct _compat_ibv_port_attr *)(void *)attr);
}
