/*
 * libfabric loaded at run time (ofi_dl.c): the functions of libfabric.so.1
 * the ofi carrier calls, found with dlsym on first use of the carrier, so
 * that libkinet.so has no link-time dependency on libfabric.
 *
 * Why: libfabric NEEDS libibverbs, libefa, librdmacm and, on Debian,
 * libpsm2/libinfinipath, whose SIGSEGV handler turns a crash of any program
 * linking them into "exit 1" without a core; and the verbs front door
 * (src/verbs/) must be the process's libibverbs without libfabric loaded
 * at start.  A program that never reaches another host never loads it.
 *
 * Only libfabric's exported functions are here: most fi_* calls
 * (fi_domain, fi_send, fi_cq_read, fi_close, ...) are static inlines of
 * rdma/fi_*.h that call through the ops tables of the objects, and
 * fi_allocinfo() is fi_dupinfo(NULL), so it is kinet_ofi.dupinfo(NULL)
 * here.  Headers still come from libfabric-dev at build time.
 */
#ifndef KINET_OFI_DL_H
#define KINET_OFI_DL_H

#ifdef KINET_HAVE_OFI

#include <stdint.h>

#include <rdma/fabric.h>

struct kinet_ofi_fabric {
	int (*getinfo)(uint32_t version, const char *node, const char *service, uint64_t flags,
		       const struct fi_info *hints, struct fi_info **info);
	void (*freeinfo)(struct fi_info *info);
	struct fi_info *(*dupinfo)(const struct fi_info *info);
	int (*fabric)(struct fi_fabric_attr *attr, struct fid_fabric **fabric, void *context);
	const char *(*strerror)(int errnum);
	uint32_t (*version)(void);
};

/* The table; valid once kinet_ofi_load() returned 0 (it never changes
 * after that: libfabric stays loaded for the life of the process, as its
 * providers expect). */
extern struct kinet_ofi_fabric kinet_ofi;

/* Loads libfabric.so.1 (once; a failure is retried at the next call) with
 * the fabric call depth raised (core/fabric_guard.h).  0, or -ENOSYS with
 * an error logged naming the library and dlerror().  $KINET_OFI_LIBFABRIC
 * names another file (tests use it to see a missing library). */
int kinet_ofi_load(void);

/* fi_strerror, safe before the load ("libfabric error N"). */
const char *ofi_strerror(int err);

/* Whether this process's libibverbs is kinet's verbs front door (it
 * exports kinet_verbs_front_door): libfabric providers over verbs would
 * then route kinet's own traffic back into kinet. */
int kinet_ofi_under_front_door(void);

/* Whether provider name prov (a core provider, or "core;utility") may be
 * used: under the front door, none of verbs, efa, psm2, psm3, usnic, opx
 * unless $FI_PROVIDER chose them (the user's word). */
int kinet_ofi_prov_allowed(const char *prov);

#endif /* KINET_HAVE_OFI */
#endif /* KINET_OFI_DL_H */
