/*
 * GPU semaphores, the layout host and device share (plain C): the item
 * statuses, the per-item packet info, an item, and the descriptor
 * kinet_sem_export() places in GPU memory (host memory under host
 * emulation).  Host API: kinet/eth.h; device API: kinet/device/sem.cuh;
 * the model: docs/ETHERNET.md.
 */
#ifndef KINET_DEVICE_SEM_TYPES_H
#define KINET_DEVICE_SEM_TYPES_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* An item's status: GPUNetIO's values (enum doca_gpu_semaphore_status),
 * so that rings ported from it keep their protocol.  kinet gives them no
 * meaning of its own: the program's protocol does (docs/ETHERNET.md). */
enum kinet_sem_status {
	KINET_SEM_FREE = 0,  /* nobody's; what every item starts as */
	KINET_SEM_READY = 1, /* filled, for the consumer */
	KINET_SEM_DONE = 2,  /* consumed */
	KINET_SEM_HOLD = 3,  /* claimed, being filled or read */
	KINET_SEM_ERROR = 4,
	KINET_SEM_EXIT = 5, /* the other side should stop */
};
#define KINET_SEM_STATUS_MAX KINET_SEM_EXIT

/* What an item says about a batch of packets (fixed; anything else goes
 * in the item's custom info). */
struct kinet_sem_pkt_info {
	uint64_t first;	   /* index of the batch's first packet in its queue */
	uint64_t bytes;	   /* bytes of the batch */
	uint32_t count;	   /* packets in the batch */
	uint32_t reserved; /* 0 */
};

/* One item of the ring, 32 bytes: the status word first, alone in its
 * 8 bytes, then the packet info. */
struct kinet_sem_item {
	uint32_t status; /* enum kinet_sem_status */
	uint32_t pad;
	struct kinet_sem_pkt_info info;
};

/* The exported descriptor (read-only for device code). */
struct kinet_dev_sem {
	struct kinet_sem_item *items; /* nitems items, device-usable */
	uint8_t *custom;	      /* nitems * custom_stride bytes, or NULL */
	uint32_t nitems;
	uint32_t custom_size;	/* bytes of custom info per item, as created */
	uint32_t custom_stride; /* custom_size rounded up to 16 */
	uint32_t mem;		/* enum kinet_sem_mem (kinet/eth.h) */
	uint32_t flags;		/* KINET_DEV_SEM_* */
};
/* The ring is host memory and the GPU has no host-native atomics (a PCIe
 * host: cudaDevAttrHostNativeAtomicSupported is 0): a GPU compare-and-set
 * there is not atomic with the CPU's stores, so kinet_dev_sem_cas_status
 * refuses (-EOPNOTSUPP). */
#define KINET_DEV_SEM_NO_HOST_CAS 1u

#ifdef __cplusplus
}
#endif

#endif /* KINET_DEVICE_SEM_TYPES_H */
