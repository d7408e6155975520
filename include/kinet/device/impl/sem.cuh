/*
 * kinet device API, implementation: GPU semaphores (kinet/device/sem.cuh).
 *
 * Ordering: the status word is the only one that publishes.  A writer
 * stores the item's info and custom info with plain (volatile) stores,
 * then the status with a system-scope release store, so a reader on the
 * GPU, another GPU or the CPU that sees the status with an acquire load
 * sees the info written before it.  System scope because the other side
 * may be the CPU (host-mapped rings); a GPU-memory ring pays a little for
 * it and stays correct whoever reads it.
 */
#ifndef KINET_DEVICE_IMPL_SEM_CUH
#define KINET_DEVICE_IMPL_SEM_CUH

#include "kinet/device/platform.cuh"
#include "kinet/device/sem_types.h"

KINET_DEV_FN struct kinet_sem_item *kinet_devi_sem_item(const struct kinet_dev_sem *sem, uint32_t idx)
{
	if (!sem || idx >= sem->nitems)
		return NULL;
	return &sem->items[idx];
}

KINET_DEV_FN int kinet_devi_sem_get_status(const struct kinet_dev_sem *sem, uint32_t idx,
					   enum kinet_sem_status *status)
{
	struct kinet_sem_item *it = kinet_devi_sem_item(sem, idx);
	if (!it || !status)
		return KINET_DEV_EINVAL;
	*status = (enum kinet_sem_status)kinet_devi_load_acquire_u32_sys(&it->status);
	return KINET_DEV_OK;
}

KINET_DEV_FN int kinet_devi_sem_set_status(const struct kinet_dev_sem *sem, uint32_t idx,
					   enum kinet_sem_status status)
{
	struct kinet_sem_item *it = kinet_devi_sem_item(sem, idx);
	if (!it || (uint32_t)status > KINET_SEM_STATUS_MAX)
		return KINET_DEV_EINVAL;
	kinet_devi_store_release_u32_sys(&it->status, (uint32_t)status);
	return KINET_DEV_OK;
}

KINET_DEV_FN int kinet_devi_sem_cas_status(const struct kinet_dev_sem *sem, uint32_t idx,
					   enum kinet_sem_status expected, enum kinet_sem_status desired,
					   enum kinet_sem_status *seen)
{
	struct kinet_sem_item *it = kinet_devi_sem_item(sem, idx);
	uint32_t old;
	if (!it || (uint32_t)desired > KINET_SEM_STATUS_MAX)
		return KINET_DEV_EINVAL;
	if (sem->flags & KINET_DEV_SEM_NO_HOST_CAS)
		return KINET_DEV_EOPNOTSUPP;
	old = kinet_devi_atomic_cas_u32_sys(&it->status, (uint32_t)expected, (uint32_t)desired);
	if (seen)
		*seen = (enum kinet_sem_status)old;
	return old == (uint32_t)expected ? KINET_DEV_OK : KINET_DEV_EAGAIN;
}

/* Volatile: each call reads memory afresh (the status acquire before it
 * orders it), never a value the compiler kept from an earlier round. */
KINET_DEV_FN int kinet_devi_sem_get_pkt_info(const struct kinet_dev_sem *sem, uint32_t idx,
					     struct kinet_sem_pkt_info *info)
{
	struct kinet_sem_item *it = kinet_devi_sem_item(sem, idx);
	const volatile struct kinet_sem_pkt_info *v;
	if (!it || !info)
		return KINET_DEV_EINVAL;
	v = &it->info;
	info->first = v->first;
	info->bytes = v->bytes;
	info->count = v->count;
	info->reserved = v->reserved;
	return KINET_DEV_OK;
}

KINET_DEV_FN int kinet_devi_sem_set_pkt_info(const struct kinet_dev_sem *sem, uint32_t idx,
					     const struct kinet_sem_pkt_info *info)
{
	struct kinet_sem_item *it = kinet_devi_sem_item(sem, idx);
	volatile struct kinet_sem_pkt_info *v;
	if (!it || !info)
		return KINET_DEV_EINVAL;
	v = &it->info;
	v->first = info->first;
	v->bytes = info->bytes;
	v->count = info->count;
	v->reserved = 0;
	return KINET_DEV_OK;
}

KINET_DEV_FN int kinet_devi_sem_custom_info(const struct kinet_dev_sem *sem, uint32_t idx, void **addr)
{
	if (!sem || idx >= sem->nitems || !addr || !sem->custom)
		return KINET_DEV_EINVAL;
	*addr = sem->custom + (uint64_t)idx * sem->custom_stride;
	return KINET_DEV_OK;
}

#endif /* KINET_DEVICE_IMPL_SEM_CUH */
