/*
 * kinet device API, implementation: time bounds.  No device call spins
 * without one: every wait is bounded by the QP's timeout (qp->timeout_ns,
 * KINET_DEV_DEFAULT_TIMEOUT_NS when 0), and a timeout is recorded in the
 * context's error record.
 */
#ifndef KINET_DEVICE_IMPL_DEADLINE_CUH
#define KINET_DEVICE_IMPL_DEADLINE_CUH

#include "kinet/device/error.cuh"
#include "kinet/device/platform.cuh"
#include "kinet/device/types.h"

/* Used when a descriptor carries timeout_ns == 0: never wait forever. */
#ifndef KINET_DEV_DEFAULT_TIMEOUT_NS
#define KINET_DEV_DEFAULT_TIMEOUT_NS (10ull * 1000000000ull)
#endif

struct kinet_devi_deadline {
	uint64_t start; /* 0 until the first check */
	uint64_t limit;
	uint32_t iter;
};

KINET_DEV_FN uint64_t kinet_devi_qp_timeout_ns(const struct kinet_dev_qp *qp)
{
	return qp && qp->timeout_ns ? qp->timeout_ns : KINET_DEV_DEFAULT_TIMEOUT_NS;
}

KINET_DEV_FN void kinet_devi_deadline_init(struct kinet_devi_deadline *d, uint64_t timeout_ns)
{
	d->start = 0;
	d->limit = timeout_ns;
	d->iter = 0;
}

/* Relaxes one spin iteration; 1 once the time is up. */
KINET_DEV_FN int kinet_devi_deadline_expired(struct kinet_devi_deadline *d)
{
	kinet_devi_relax(d->iter);
	d->iter++;
	uint64_t now = kinet_dev_now_ns();
	if (!d->start) {
		d->start = now ? now : 1;
		return 0;
	}
	return now - d->start > d->limit;
}

KINET_DEV_FN int kinet_devi_qp_timed_out(struct kinet_dev_qp *qp)
{
	kinet_dev_record_error(qp->err, -ETIMEDOUT, qp->qpn, 0, 0, 0);
	return -ETIMEDOUT;
}

#endif /* KINET_DEVICE_IMPL_DEADLINE_CUH */
