/*
 * The ConnectX provider of a build without rdma-core's headers: it is
 * still registered as "mlx5", so that asking for it says what is missing
 * (-ENODEV) instead of "no such provider".  Compiled instead of the
 * provider's verbs files (src/CMakeLists.txt).
 */
#include <errno.h>

#include "driver.h"

#define WHY                                                                                                  \
	"this kinet was built without rdma-core's headers (infiniband/verbs.h, infiniband/mlx5dv.h): "       \
	"install libibverbs-dev (or rdma-core-devel) and rebuild to use the ConnectX provider"

static int absent_probe(const char **why)
{
	*why = WHY;
	return -ENODEV;
}

static int absent_describe(kinet_describe_fn line, void *arg)
{
	line(arg, WHY);
	return -ENODEV;
}

/* Core probes before it opens a context, so nothing else is ever called. */
static const struct kinet_provider_ops absent_ops = {
	.ctx_size = sizeof(struct kinet_ctx),
	.qp_size = sizeof(struct kinet_qp),
	.mr_size = sizeof(struct kinet_mr),
	.db_auto = KINET_DB_CPU,
	.probe = absent_probe,
	.describe = absent_describe,
};

static struct kinet_provider absent_provider = {.name = "mlx5", .ops = &absent_ops};

__attribute__((constructor)) static void absent_register(void)
{
	kinet_provider_register(&absent_provider);
}
