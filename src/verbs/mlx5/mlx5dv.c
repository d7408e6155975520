/*
 * libmlx5.so.1's verbs over kinet: the answers come from libibverbs.so.1,
 * which owns the objects (its KINET_VERBS_PRIVATE_0 node).  DevX and the
 * other mlx5dv calls are stubs.c's: EOPNOTSUPP (docs/VERBS.md).
 */
#include <infiniband/mlx5dv.h>

#define KINET_VERBS_EXPORT __attribute__((visibility("default")))

int kinet_verbs_mlx5_init_obj(struct mlx5dv_obj *obj, uint64_t type);
int kinet_verbs_mlx5_query_device(struct ibv_context *context, struct mlx5dv_context *attrs);
bool kinet_verbs_mlx5_is_supported(struct ibv_device *device);

KINET_VERBS_EXPORT int mlx5dv_init_obj(struct mlx5dv_obj *obj, uint64_t obj_type)
{
	return kinet_verbs_mlx5_init_obj(obj, obj_type);
}

/* The MLX5_1.0 entry point (programs linked against rdma-core before
 * MLX5_1.2) takes the same arguments. */
KINET_VERBS_EXPORT int kinet_mlx5dv_init_obj_1_0(struct mlx5dv_obj *obj, uint64_t obj_type);
KINET_VERBS_EXPORT int kinet_mlx5dv_init_obj_1_0(struct mlx5dv_obj *obj, uint64_t obj_type)
{
	return kinet_verbs_mlx5_init_obj(obj, obj_type);
}
__asm__(".symver kinet_mlx5dv_init_obj_1_0, mlx5dv_init_obj@MLX5_1.0");

KINET_VERBS_EXPORT int mlx5dv_query_device(struct ibv_context *ctx, struct mlx5dv_context *attrs)
{
	return kinet_verbs_mlx5_query_device(ctx, attrs);
}

KINET_VERBS_EXPORT bool mlx5dv_is_supported(struct ibv_device *device)
{
	return kinet_verbs_mlx5_is_supported(device);
}
