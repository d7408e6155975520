/*
 * Queue memory of the ConnectX provider.  rdma-core allocates a QP's or
 * CQ's ring and doorbell record through the allocator of the parent domain
 * it is created on; kinet's allocator hands it page-aligned host memory
 * that is also pinned and mapped into the GPU (cudaHostRegister), so that
 * the NIC (through the kernel's pinning of the same pages), the host
 * library and device code all reach the queues, as on the software NIC.
 * And the UAR page, where the doorbell registers are, mapped into the GPU
 * as I/O memory for the GPU doorbell modes.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifdef KINET_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

#include "mlx5.h"

static size_t page_size(void)
{
	long p = sysconf(_SC_PAGESIZE);

	return p > 0 ? (size_t)p : 4096;
}

static const char *resource_name(uint64_t type)
{
	if (type == MLX5DV_RES_TYPE_QP)
		return "QP ring";
	if (type == MLX5DV_RES_TYPE_CQ)
		return "CQ ring";
	if (type == MLX5DV_RES_TYPE_DBR)
		return "doorbell record";
	return "queue memory";
}

static void *queue_alloc(struct ibv_pd *pd, void *pd_context, size_t size, size_t alignment, uint64_t type)
{
	struct kinet_mlx5_ctx *m = pd_context;
	size_t page = page_size(), len = (size + page - 1) & ~(page - 1);
	void *p = NULL;

	(void)pd;
	(void)m;
	/* A doorbell record (8 bytes) gets a page too: pinning and mapping
	 * work on pages, and no two objects share one. */
	if (posix_memalign(&p, alignment > page ? alignment : page, len ? len : page))
		return NULL;
	memset(p, 0, len ? len : page);
#ifdef KINET_HAVE_CUDA
	if (m->ctx.cuda_device >= 0) {
		cudaError_t e = cudaHostRegister(p, len ? len : page,
						 cudaHostRegisterMapped | cudaHostRegisterPortable);

		if (e != cudaSuccess) {
			KINET_ERR("mlx5: %s of %zu bytes: cudaHostRegister: %s", resource_name(type), size,
				  cudaGetErrorString(e));
			cudaGetLastError();
			free(p);
			return NULL;
		}
	}
#endif
	KINET_DBG("mlx5: %s of %zu bytes at %p", resource_name(type), size, p);
	return p;
}

static void queue_free(struct ibv_pd *pd, void *pd_context, void *ptr, uint64_t type)
{
	struct kinet_mlx5_ctx *m = pd_context;

	(void)pd;
	(void)type;
	(void)m;
	if (!ptr)
		return;
#ifdef KINET_HAVE_CUDA
	if (m->ctx.cuda_device >= 0 && cudaHostUnregister(ptr) != cudaSuccess)
		cudaGetLastError();
#endif
	free(ptr);
}

struct ibv_pd *kinet_mlx5_domain(struct kinet_mlx5_ctx *m, struct ibv_td *td)
{
	struct ibv_parent_domain_init_attr a;
	struct ibv_pd *d;

	memset(&a, 0, sizeof(a));
	a.pd = m->pd;
	a.td = td;
	a.comp_mask = IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS | IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT;
	a.alloc = queue_alloc;
	a.free = queue_free;
	a.pd_context = m;
	d = ibv_alloc_parent_domain(m->verbs, &a);
	if (!d)
		KINET_ERR("mlx5: ibv_alloc_parent_domain: %s (rdma-core's mlx5 provider v22 or newer places "
			  "queues in memory kinet allocates)",
			  strerror(errno));
	return d;
}

int kinet_mlx5_uar_map(struct kinet_mlx5_ctx *m, void *reg, struct kinet_mlx5_uar_page **out, char *why,
		       size_t whylen)
{
#ifdef KINET_HAVE_CUDA
	void *page = (void *)((uintptr_t)reg & ~(uintptr_t)(page_size() - 1)), *dev = NULL;
	struct kinet_mlx5_uar_page *u;
	cudaError_t e;
	int ret = 0;

	*out = NULL;
	pthread_mutex_lock(&m->lock);
	for (u = m->uar_pages; u; u = u->next)
		if (u->page == page)
			break;
	if (u) {
		u->refs++;
		*out = u;
		goto out;
	}
	/* One registration per page (CUDA refuses a second); QPs whose
	 * BlueFlame registers share it share this one. */
	e = cudaHostRegister(page, page_size(),
			     cudaHostRegisterMapped | cudaHostRegisterPortable | cudaHostRegisterIoMemory);
	if (e == cudaSuccess)
		e = cudaHostGetDevicePointer(&dev, page, 0);
	if (e != cudaSuccess) {
		snprintf(
			why, whylen,
			"cudaHostRegister(IoMemory) of the NIC's doorbell page: %s (the GPU driver must map "
			"PCI BARs of other devices: a data-center GPU, a recent driver, no IOMMU in the way)",
			cudaGetErrorString(e));
		cudaGetLastError();
		ret = -EOPNOTSUPP;
		goto out;
	}
	u = calloc(1, sizeof(*u));
	if (!u) {
		cudaHostUnregister(page);
		ret = -ENOMEM;
		snprintf(why, whylen, "out of memory");
		goto out;
	}
	u->page = page;
	u->dev = dev;
	u->refs = 1;
	u->next = m->uar_pages;
	m->uar_pages = u;
	*out = u;
out:
	pthread_mutex_unlock(&m->lock);
	return ret;
#else
	(void)m;
	(void)reg;
	*out = NULL;
	snprintf(why, whylen, "this kinet was built without CUDA");
	return -EOPNOTSUPP;
#endif
}

void kinet_mlx5_uar_unmap(struct kinet_mlx5_ctx *m, struct kinet_mlx5_uar_page *page)
{
	struct kinet_mlx5_uar_page **p;

	if (!page)
		return;
	pthread_mutex_lock(&m->lock);
	if (--page->refs == 0) {
		for (p = &m->uar_pages; *p; p = &(*p)->next) {
			if (*p == page) {
				*p = page->next;
				break;
			}
		}
#ifdef KINET_HAVE_CUDA
		if (cudaHostUnregister(page->page) != cudaSuccess)
			cudaGetLastError();
#endif
		free(page);
	}
	pthread_mutex_unlock(&m->lock);
}
