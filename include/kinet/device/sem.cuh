/*
 * kinet device API: GPU semaphores, a ring of items a kernel and the CPU
 * (or two kernels) hand to each other: each a status (enum
 * kinet_sem_status: FREE, READY, DONE, HOLD, ERROR, EXIT), a packet info
 * (struct kinet_sem_pkt_info) and custom info.  The descriptor comes from
 * kinet_sem_export() (kinet/eth.h).  GPUNetIO's doca_gpu_dev_semaphore_*.
 *
 * One thread per call: a status is one word, so there are no _warp or
 * _block forms; a group that fills an item together synchronises (which
 * orders its members' stores, PTX fences being cumulative) and then one
 * thread sets the status.
 *
 * Ordering (impl/sem.cuh): set_status is a system-scope release, get_status
 * a system-scope acquire, cas_status both.  So: write the info and custom
 * info, then set READY; see READY, then read them.  Statuses: 0, -EINVAL
 * (no such item, no custom info, a status past KINET_SEM_EXIT), -EAGAIN
 * (cas_status: the status was not `expected`).  Reference: kinet_sem(3).
 */
#ifndef KINET_DEVICE_SEM_CUH
#define KINET_DEVICE_SEM_CUH

#include "kinet/device/impl/sem.cuh"
#include "kinet/device/platform.cuh"
#include "kinet/device/sem_types.h"

/* Status of item idx (acquire: the info written before it is visible). */
KINET_DEV_FN int kinet_dev_sem_get_status(const struct kinet_dev_sem *sem, uint32_t idx,
					  enum kinet_sem_status *status)
{
	return kinet_devi_sem_get_status(sem, idx, status);
}

/* Sets item idx's status (release: everything the thread wrote, or saw
 * written, before is visible to whoever sees the status). */
KINET_DEV_FN int kinet_dev_sem_set_status(const struct kinet_dev_sem *sem, uint32_t idx,
					  enum kinet_sem_status status)
{
	return kinet_devi_sem_set_status(sem, idx, status);
}

/* Sets item idx's status to desired if it is expected, atomically among
 * GPU threads.  0 when it was set; -EAGAIN when the status was another
 * (*seen, if not NULL, has it); -EOPNOTSUPP for a ring in host memory
 * where the GPU has no host-native atomics (PCIe hosts: a GPU
 * compare-and-set there can undo a status the CPU stored; give each item
 * one GPU owner instead, docs/ETHERNET.md); -EINVAL for a bad index or
 * status. */
KINET_DEV_FN int kinet_dev_sem_cas_status(const struct kinet_dev_sem *sem, uint32_t idx,
					  enum kinet_sem_status expected, enum kinet_sem_status desired,
					  enum kinet_sem_status *seen)
{
	return kinet_devi_sem_cas_status(sem, idx, expected, desired, seen);
}

KINET_DEV_FN int kinet_dev_sem_get_pkt_info(const struct kinet_dev_sem *sem, uint32_t idx,
					    struct kinet_sem_pkt_info *info)
{
	return kinet_devi_sem_get_pkt_info(sem, idx, info);
}

KINET_DEV_FN int kinet_dev_sem_set_pkt_info(const struct kinet_dev_sem *sem, uint32_t idx,
					    const struct kinet_sem_pkt_info *info)
{
	return kinet_devi_sem_set_pkt_info(sem, idx, info);
}

/* Device address of item idx's custom info (custom_size bytes, 16-byte
 * aligned); -EINVAL when the ring has none. */
KINET_DEV_FN int kinet_dev_sem_custom_info(const struct kinet_dev_sem *sem, uint32_t idx, void **addr)
{
	return kinet_devi_sem_custom_info(sem, idx, addr);
}

#endif /* KINET_DEVICE_SEM_CUH */
