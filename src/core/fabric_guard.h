/*
 * kinet inside libfabric: a per-thread depth, raised by the ofi carrier
 * around its calls into libfabric (loading it, fi_getinfo, creating and
 * closing fabric, domain and endpoint).
 *
 * Why: the verbs front door (src/verbs/) is libibverbs.so.1 for the
 * process, and libfabric's providers enumerate verbs devices when they
 * start (efa does so in its init, whatever FI_PROVIDER says).  Were the
 * front door to hand them kinet's own devices, kinet's carrier would run
 * over itself.  Its ibv_get_device_list returns no device while
 * kinet_fabric_call_depth() > 0, that is while this thread is inside
 * kinet's own use of libfabric.  Core-level, not public API.
 */
#ifndef KINET_FABRIC_GUARD_H
#define KINET_FABRIC_GUARD_H

/* Enter before a call into libfabric, leave after it; they nest. */
void kinet_fabric_enter(void);
void kinet_fabric_leave(void);

/* How deep this thread is in kinet's calls into libfabric (0: not). */
int kinet_fabric_call_depth(void);

#endif /* KINET_FABRIC_GUARD_H */
