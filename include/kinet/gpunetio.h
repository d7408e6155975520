/*
 * kinet for GPUNetIO kernels: queue descriptors laid out exactly as DOCA
 * GPUNetIO's struct doca_gpu_dev_verbs_qp and struct doca_gpu_dev_verbs_cq
 * (the open device API; NCCL 2.28 and later ship it under
 * nccl_device/gin/gdaki/doca_gpunetio/ of the CUDA toolkit's include
 * folder), so that kernels written against GPUNetIO's device headers run
 * unmodified on kinet QPs: pass the exported pointer where they take a
 * struct doca_gpu_dev_verbs_qp *.  Written from the documented layout;
 * tests/host/core/test_gpunetio_layout.c checks every offset against the real
 * header where it is installed.  What maps to what: docs/GPUNETIO.md.
 */
#ifndef KINET_GPUNETIO_H
#define KINET_GPUNETIO_H

#include <stddef.h>
#include <stdint.h>

#include "kinet/kinet.h"

#ifdef __cplusplus
extern "C" {
#endif

/* enum doca_gpu_dev_verbs_nic_handler: how device code rings. */
enum kinet_gpunetio_nic_handler {
	KINET_GPUNETIO_NIC_HANDLER_AUTO = 0,
	KINET_GPUNETIO_NIC_HANDLER_CPU_PROXY = 1, /* 64-bit producer index to a host word */
	KINET_GPUNETIO_NIC_HANDLER_GPU_SM_DB = 2, /* doorbell record + doorbell (or BlueFlame) */
	KINET_GPUNETIO_NIC_HANDLER_GPU_SM_BF = 3,
};

/* enum doca_gpu_dev_verbs_mem_type: where rings live. */
enum kinet_gpunetio_mem_type {
	KINET_GPUNETIO_MEM_TYPE_AUTO = 0,
	KINET_GPUNETIO_MEM_TYPE_HOST = 1,
	KINET_GPUNETIO_MEM_TYPE_GPU = 2,
};

/* struct doca_gpu_dev_verbs_cq.  Big-endian where noted. */
struct kinet_gpunetio_cq {
	uint8_t *cqe_daddr; /* the CQE ring, device-usable */
	uint32_t cq_num;    /* CQ number (what WAIT WQEs name) */
	uint32_t cqe_num;   /* CQEs in the ring, a power of two */
	uint32_t *dbrec;    /* CQ doorbell record: big-endian 24-bit consumer index */
	uint64_t cqe_ci;    /* device state: CQEs consumed */
	uint32_t cqe_mask;  /* cqe_num - 1 */
	uint8_t cqe_size;   /* 64 */
	uint64_t cqe_rsvd;  /* device state: CQEs handed to pollers */
	int32_t mem_type;   /* enum kinet_gpunetio_mem_type of the ring */
};

/* struct doca_gpu_dev_verbs_qp. */
struct kinet_gpunetio_qp {
	uint64_t sq_rsvd_index;	       /* device state: slots handed out */
	uint64_t sq_ready_index;       /* device state: slots written, in order */
	uint64_t sq_wqe_pi;	       /* device state: producer index rung */
	uint32_t sq_num;	       /* QPN */
	uint32_t sq_num_shift8;	       /* QPN << 8 */
	uint32_t sq_num_shift8_be;     /* big-endian QPN << 8 (qpn_ds with ds 0) */
	uint32_t sq_num_shift8_be_1ds; /* ... | 1 */
	uint32_t sq_num_shift8_be_2ds; /* ... | 2 */
	uint32_t sq_num_shift8_be_3ds; /* ... | 3 */
	uint32_t sq_num_shift8_be_4ds; /* ... | 4 */
	int32_t sq_lock;	       /* device state */
	uint16_t sq_wqe_num;	       /* send queue slots (64-byte blocks) */
	uint16_t sq_wqe_mask;	       /* sq_wqe_num - 1 */
	uint8_t *sq_wqe_daddr;	       /* the send queue ring */
	uint32_t *sq_dbrec;	       /* send doorbell record (big-endian 16-bit PI) */
	uint64_t *sq_db;	       /* CPU proxy: the PI word; else the UAR doorbell / BlueFlame window */
	uint32_t rq_num;	       /* receive side: GPUNetIO's device code does not use it */
	uint64_t rq_wqe_pi;
	uint32_t rq_wqe_num;
	uint32_t rq_wqe_mask;
	uint8_t *rq_wqe_daddr;
	uint32_t *rq_dbrec;
	uint32_t rcv_wqe_size;
	uint64_t rq_rsvd_index;
	uint64_t rq_ready_index;
	int32_t rq_lock;
	struct kinet_gpunetio_cq cq_sq; /* the send CQ */
	struct kinet_gpunetio_cq cq_rq; /* the receive CQ (zero without one) */
	int32_t nic_handler;		/* enum kinet_gpunetio_nic_handler */
	int32_t mem_type;		/* enum kinet_gpunetio_mem_type of the send queue */
};

#ifdef __cplusplus
#define KINET_GPUNETIO_STATIC_ASSERT static_assert
#else
#define KINET_GPUNETIO_STATIC_ASSERT _Static_assert
#endif
KINET_GPUNETIO_STATIC_ASSERT(sizeof(struct kinet_gpunetio_cq) == 56, "gpunetio cq");
KINET_GPUNETIO_STATIC_ASSERT(offsetof(struct kinet_gpunetio_cq, cqe_rsvd) == 40, "gpunetio cq");
KINET_GPUNETIO_STATIC_ASSERT(sizeof(struct kinet_gpunetio_qp) == 280, "gpunetio qp");
KINET_GPUNETIO_STATIC_ASSERT(offsetof(struct kinet_gpunetio_qp, sq_wqe_daddr) == 64, "gpunetio qp");
KINET_GPUNETIO_STATIC_ASSERT(offsetof(struct kinet_gpunetio_qp, cq_sq) == 160, "gpunetio qp");
KINET_GPUNETIO_STATIC_ASSERT(offsetof(struct kinet_gpunetio_qp, nic_handler) == 272, "gpunetio qp");

/*
 * kinet_qp_export_gpunetio - a GPUNetIO descriptor of qp, in GPU memory
 * (host memory in a context without CUDA, for host emulation); freed with
 * the QP.  Calling it again gives the same descriptor.
 *
 * Filled as GPUNetIO's host library fills it (doca_gpu_verbs_export_qp):
 * counters 0, QPN and its shifted, big-endian and per-ds forms, the rings,
 * the send doorbell record, and per the QP's doorbell mode:
 *   KINET_DB_CPU  nic_handler CPU_PROXY, sq_db = the QP's 64-bit PI word;
 *   KINET_DB_GPU  nic_handler GPU_SM_DB, sq_db = the UAR doorbell;
 *   KINET_DB_BF   nic_handler GPU_SM_DB, sq_db = the BlueFlame window (as
 *                 GPUNetIO: its high-level calls ring the doorbell there,
 *                 doca_gpu_dev_verbs_submit_bf_warp copies WQEs there).
 * The receive side, which GPUNetIO's host library leaves zero, is filled
 * when the QP has a receive queue.  mem_type is HOST: the software NIC's
 * rings are in pinned host memory.
 *
 * GPUNetIO's device code takes CQE i for WQE i and never publishes a
 * consumer index, so: the send CQ must be the QP's alone, created with
 * KINET_CQ_IGNORE_OVERRUN and at least as deep as the send queue; the
 * receive CQ (if any) must be another CQ; nothing may have been posted on
 * the QP or completed on its send CQ yet.  Afterwards the send queue
 * belongs to device code: host posts return -EBUSY, and so does
 * kinet_qp_export (one device API per QP).  Returns 0, -EINVAL (with the
 * reason logged), -EBUSY, -ENOMEM or -EIO.
 */
KINET_API int kinet_qp_export_gpunetio(struct kinet_qp *qp, struct kinet_gpunetio_qp **dev_qp);

/*
 * kinet_cq_export_gpunetio - a GPUNetIO descriptor of cq alone, for
 * doca_gpu_dev_verbs_poll_cq* on a CQ not exported with a QP; freed with
 * the CQ.  The consumer indexes start where the host poller stands.  A CQ
 * without KINET_CQ_IGNORE_OVERRUN needs its consumer index published
 * (doca_gpu_dev_verbs_cq_update_dbrec) or it overruns.
 */
KINET_API int kinet_cq_export_gpunetio(struct kinet_cq *cq, struct kinet_gpunetio_cq **dev_cq);

#ifdef __cplusplus
}
#endif

#endif /* KINET_GPUNETIO_H */
