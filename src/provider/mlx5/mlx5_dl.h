/*
 * rdma-core loaded at run time (dl.c): the functions of libibverbs.so.1 and
 * libmlx5.so.1 the ConnectX provider calls, found with dlsym, so that
 * libkinet.so has no link-time dependency on rdma-core and runs where it
 * is absent.  The provider calls rdma-core only through this table (and
 * through verbs.h's inline helpers that call a context's own ops).
 */
#ifndef KINET_MLX5_DL_H
#define KINET_MLX5_DL_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <infiniband/mlx5dv.h>
#include <infiniband/verbs.h>

struct kinet_mlx5_verbs {
	/* libibverbs.so.1 */
	struct ibv_device **(*get_device_list)(int *num_devices);
	void (*free_device_list)(struct ibv_device **list);
	const char *(*get_device_name)(struct ibv_device *device);
	struct ibv_context *(*open_device)(struct ibv_device *device);
	int (*close_device)(struct ibv_context *context);
	int (*query_device)(struct ibv_context *context, struct ibv_device_attr *attr);
	/* The exported ibv_query_port takes the short compat struct: only
	 * kinet_mlx5_query_port calls it, when the context lacks the op. */
	int (*query_port_compat)(struct ibv_context *context, uint8_t port,
				 struct _compat_ibv_port_attr *attr);
	int (*query_gid)(struct ibv_context *context, uint8_t port, int index, union ibv_gid *gid);
	/* NULL before rdma-core v32: GID types then come from sysfs. */
	ssize_t (*query_gid_table)(struct ibv_context *context, struct ibv_gid_entry *entries, size_t max,
				   uint32_t flags, size_t entry_size);
	struct ibv_pd *(*alloc_pd)(struct ibv_context *context);
	int (*dealloc_pd)(struct ibv_pd *pd);
	struct ibv_mr *(*reg_mr_iova2)(struct ibv_pd *pd, void *addr, size_t length, uint64_t iova,
				       unsigned int access);
	/* NULL before rdma-core v34 (no dma-buf registration). */
	struct ibv_mr *(*reg_dmabuf_mr)(struct ibv_pd *pd, uint64_t offset, size_t length, uint64_t iova,
					int fd, int access);
	int (*dereg_mr)(struct ibv_mr *mr);
	int (*destroy_cq)(struct ibv_cq *cq);
	int (*destroy_qp)(struct ibv_qp *qp);
	int (*modify_qp)(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask);
	int (*query_qp)(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask, struct ibv_qp_init_attr *init);
	int (*get_async_event)(struct ibv_context *context, struct ibv_async_event *event);
	void (*ack_async_event)(struct ibv_async_event *event);
	const char *(*event_type_str)(enum ibv_event_type event);

	/* libmlx5.so.1 */
	bool (*is_supported)(struct ibv_device *device);
	int (*init_obj)(struct mlx5dv_obj *obj, uint64_t type);
	struct ibv_cq_ex *(*create_cq)(struct ibv_context *context, struct ibv_cq_init_attr_ex *attr,
				       struct mlx5dv_cq_init_attr *dv_attr);
	struct ibv_qp *(*create_qp)(struct ibv_context *context, struct ibv_qp_init_attr_ex *attr,
				    struct mlx5dv_qp_init_attr *dv_attr);
};

/* Loads rdma-core (once; a failure is retried at the next call): the
 * table, or NULL with *why ("rdma-core not found: ...", valid until the
 * next failure).  $KINET_MLX5_LIBIBVERBS and $KINET_MLX5_LIBMLX5 name
 * other files (tests use them to see a missing library). */
const struct kinet_mlx5_verbs *kinet_mlx5_verbs_load(const char **why);

/* ibv_query_port with the full struct, without the link-time symbol the
 * verbs.h macro would name. */
int kinet_mlx5_query_port(const struct kinet_mlx5_verbs *v, struct ibv_context *context, uint8_t port,
			  struct ibv_port_attr *attr);

#endif /* KINET_MLX5_DL_H */
