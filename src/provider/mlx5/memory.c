/*
 * Memory registration with the NIC.  Host memory: ibv_reg_mr.  GPU memory:
 * dma-buf first (the CUDA driver exports the allocation as a dma-buf,
 * cuMemGetHandleForAddressRange, which ibv_reg_dmabuf_mr registers: the
 * upstream path, kernel 5.12+), then peer memory (ibv_reg_mr on the GPU
 * address, which works when nvidia-peermem is loaded); when neither does,
 * one error naming both reasons.  The CUDA driver's functions are loaded
 * at run time from libcuda.so.1, as rdma-core is.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#ifdef KINET_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

#include "mlx5.h"

static bool access_ok(const char *path)
{
	return access(path, F_OK) == 0;
}

#ifdef KINET_HAVE_CUDA
/* The CUDA driver API's types and values used here (cuda.h), so that this
 * file needs no driver header. */
typedef int kinet_curesult;
typedef unsigned long long kinet_cudeviceptr;
#define KINET_CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED 124
#define KINET_CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD 1

struct cuda_driver {
	kinet_curesult (*get_address_range)(kinet_cudeviceptr *base, size_t *size, kinet_cudeviceptr ptr);
	kinet_curesult (*get_handle)(void *handle, kinet_cudeviceptr ptr, size_t size, int type,
				     unsigned long long flags);
	kinet_curesult (*device_get)(int *dev, int ordinal);
	kinet_curesult (*device_attribute)(int *value, int attribute, int dev);
	kinet_curesult (*error_string)(kinet_curesult e, const char **s);
};

static pthread_once_t cuda_once = PTHREAD_ONCE_INIT;
static struct cuda_driver cuda;
static const char *cuda_why;

static void cuda_load(void)
{
	void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	void *s[5];

	if (!h) {
		cuda_why = "the CUDA driver (libcuda.so.1) cannot be loaded";
		return;
	}
	s[0] = dlsym(h, "cuMemGetAddressRange_v2");
	s[1] = dlsym(h, "cuMemGetHandleForAddressRange");
	s[2] = dlsym(h, "cuDeviceGet");
	s[3] = dlsym(h, "cuDeviceGetAttribute");
	s[4] = dlsym(h, "cuGetErrorString");
	if (!s[0] || !s[1] || !s[2] || !s[3]) {
		cuda_why = "the CUDA driver has no cuMemGetHandleForAddressRange (driver 515 / CUDA 11.7 or "
			   "newer "
			   "exports GPU memory as dma-buf)";
		return;
	}
	memcpy(&cuda.get_address_range, &s[0], sizeof(s[0]));
	memcpy(&cuda.get_handle, &s[1], sizeof(s[1]));
	memcpy(&cuda.device_get, &s[2], sizeof(s[2]));
	memcpy(&cuda.device_attribute, &s[3], sizeof(s[3]));
	memcpy(&cuda.error_string, &s[4], sizeof(s[4]));
}

static const char *cu_error(kinet_curesult e)
{
	const char *s = NULL;

	if (cuda.error_string && !cuda.error_string(e, &s) && s)
		return s;
	return "CUDA driver error";
}
#endif /* KINET_HAVE_CUDA */

/* GPU memory through dma-buf: the ibv_mr, or NULL with why. */
static struct ibv_mr *reg_dmabuf(struct kinet_mlx5_ctx *m, void *addr, size_t len, uint64_t iova,
				 int cuda_device, unsigned access, char *why, size_t whylen)
{
#ifdef KINET_HAVE_CUDA
	kinet_cudeviceptr base = 0, start, end;
	size_t size = 0, page = (size_t)sysconf(_SC_PAGESIZE);
	int dev, supported = 0, prev = -1, fd = -1, err;
	kinet_curesult e;
	struct ibv_mr *mr;

	if (!m->v->reg_dmabuf_mr) {
		snprintf(why, whylen, "rdma-core older than v34 has no ibv_reg_dmabuf_mr");
		return NULL;
	}
	pthread_once(&cuda_once, cuda_load);
	if (cuda_why) {
		snprintf(why, whylen, "%s", cuda_why);
		return NULL;
	}
	if (cuda.device_get(&dev, cuda_device) ||
	    cuda.device_attribute(&supported, KINET_CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED, dev) ||
	    !supported) {
		snprintf(why, whylen,
			 "the CUDA driver cannot export GPU %d's memory as dma-buf (it needs the open GPU "
			 "kernel "
			 "modules, or a driver and kernel with dma-buf support)",
			 cuda_device);
		return NULL;
	}
	/* The driver calls need the GPU's context current on this thread; the
	 * caller's device is put back. */
	if (cudaGetDevice(&prev) != cudaSuccess)
		prev = -1;
	cudaSetDevice(cuda_device);
	e = cuda.get_address_range(&base, &size, (kinet_cudeviceptr)(uintptr_t)addr);
	/* The whole allocation, on host page boundaries, as the export wants;
	 * the region is an offset into it. */
	start = base & ~(kinet_cudeviceptr)(page - 1);
	end = (base + size + page - 1) & ~(kinet_cudeviceptr)(page - 1);
	if (!e)
		e = cuda.get_handle(&fd, start, (size_t)(end - start),
				    KINET_CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, 0);
	if (prev >= 0)
		cudaSetDevice(prev);
	cudaGetLastError();
	if (e) {
		snprintf(why, whylen, "cuMemGetHandleForAddressRange: %s", cu_error(e));
		return NULL;
	}
	mr = m->v->reg_dmabuf_mr(m->pd, (uint64_t)(uintptr_t)addr - start, len, iova, fd, (int)access);
	err = errno;
	close(fd); /* the registration holds its own reference */
	if (!mr)
		snprintf(why, whylen,
			 "ibv_reg_dmabuf_mr: %s (the kernel's mlx5 driver needs dma-buf support: "
			 "Linux 5.12 or newer)",
			 strerror(err));
	return mr;
#else
	(void)m;
	(void)addr;
	(void)len;
	(void)iova;
	(void)cuda_device;
	(void)access;
	snprintf(why, whylen, "this kinet was built without CUDA");
	return NULL;
#endif
}

/* GPU memory through nvidia-peermem: the ibv_mr, or NULL with why. */
static struct ibv_mr *reg_peer(struct kinet_mlx5_ctx *m, void *addr, size_t len, uint64_t iova,
			       unsigned access, char *why, size_t whylen)
{
	struct ibv_mr *mr = m->v->reg_mr_iova2(m->pd, addr, len, iova, access);

	if (!mr)
		snprintf(why, whylen, "ibv_reg_mr on the GPU address: %s (%s)", strerror(errno),
			 access_ok("/sys/module/nvidia_peermem")
				 ? "nvidia-peermem is loaded"
				 : "nvidia-peermem is not loaded: modprobe nvidia-peermem");
	return mr;
}

int kinet_mlx5_mr_reg(struct kinet_mr *mr)
{
	struct kinet_mlx5_ctx *m = kinet_mctx(mr->ctx);
	struct kinet_mlx5_mr *mm = kinet_mmr(mr);
	unsigned access = kinet_mlx5_access_flags(mr->access);
	uint64_t iova = kinet_mlx5_mr_iova(mr->addr, mr->access);
	void *addr = (void *)(uintptr_t)mr->addr;
	const char *want = kinet_env_str("KINET_MLX5_GPU_MR");
	char w1[320] = "not tried", w2[320] = "not tried";

	if (mr->type == KINET_MEM_HOST) {
		mm->ibmr = m->v->reg_mr_iova2(m->pd, addr, mr->length, iova, access);
		mm->how = "host";
		if (!mm->ibmr) {
			int err = errno ? errno : EINVAL;

			KINET_ERR("mlx5: ibv_reg_mr(%p, %llu bytes): %s%s", addr,
				  (unsigned long long)mr->length, strerror(err),
				  err == ENOMEM ? " (raise the locked-memory limit: ulimit -l)" : "");
			return -err;
		}
	} else {
		if (strcmp(want, "peer-memory"))
			mm->ibmr = reg_dmabuf(m, addr, mr->length, iova, mr->cuda_device, access, w1,
					      sizeof(w1));
		mm->how = "dma-buf";
		if (!mm->ibmr && strcmp(want, "dma-buf")) {
			mm->ibmr = reg_peer(m, addr, mr->length, iova, access, w2, sizeof(w2));
			mm->how = "peer memory";
		}
		if (!mm->ibmr) {
			KINET_ERR(
				"mlx5: cannot register GPU memory %p (%llu bytes) with the NIC: dma-buf: %s; "
				"peer memory: %s",
				addr, (unsigned long long)mr->length, w1, w2);
			return -EOPNOTSUPP;
		}
	}
	mr->lkey = mm->ibmr->lkey;
	mr->rkey = mm->ibmr->rkey;
	KINET_DBG("mlx5: mr %p+%llu (%s): lkey %#x rkey %#x", addr, (unsigned long long)mr->length, mm->how,
		  mr->lkey, mr->rkey);
	return 0;
}

void kinet_mlx5_mr_dereg(struct kinet_mr *mr)
{
	struct kinet_mlx5_mr *mm = kinet_mmr(mr);
	int rc;

	if (!mm->ibmr)
		return;
	rc = kinet_mctx(mr->ctx)->v->dereg_mr(mm->ibmr);
	if (rc)
		KINET_WARN("mlx5: ibv_dereg_mr(lkey %#x): %s", mr->lkey, strerror(rc));
	mm->ibmr = NULL;
}

int kinet_mlx5_try_dmabuf(struct kinet_mlx5_ctx *m, void *addr, size_t len, int cuda_device, char *why,
			  size_t whylen)
{
	struct ibv_mr *mr =
		reg_dmabuf(m, addr, len, (uintptr_t)addr, cuda_device, IBV_ACCESS_LOCAL_WRITE, why, whylen);

	if (!mr)
		return -EOPNOTSUPP;
	m->v->dereg_mr(mr);
	return 0;
}

int kinet_mlx5_try_peer_memory(struct kinet_mlx5_ctx *m, void *addr, size_t len, char *why, size_t whylen)
{
	struct ibv_mr *mr = reg_peer(m, addr, len, (uintptr_t)addr, IBV_ACCESS_LOCAL_WRITE, why, whylen);

	if (!mr)
		return -EOPNOTSUPP;
	m->v->dereg_mr(mr);
	return 0;
}
