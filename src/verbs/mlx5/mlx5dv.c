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

KINET_VERBS_EXPORT int mlx5dv_query_device(struct ibv_context *ctx, struct mlx5dv_context *attrs)
{
	return kinet_verbs_mlx5_query_device(ctx, attrs);
}

KINET_VERBS_EXPORT bool mlx5dv_is_supported(struct ibv_device *device)
{
	return kinet_verbs_mlx5_is_supported(device);
}
