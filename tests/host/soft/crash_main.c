/*
 * A program linking libkinet that crashes in its own main, after opening a
 * context of the soft provider: it must die by SIGSEGV (exit status 139
 * in a shell, a core where enabled).  libfabric's dependencies psm2 and
 * infinipath, once linked into libkinet, installed a SIGSEGV handler that
 * turned this into "exit 1" without a core (host/crash_signal_check.sh).
 */
#include <stdio.h>

#include <kinet/kinet.h>

int main(void)
{
	struct kinet_ctx_attr attr;
	struct kinet_ctx *ctx;
	int rc;

	kinet_ctx_attr_init(&attr);
	attr.provider = "soft";
	attr.cuda_device = KINET_CUDA_DEVICE_NONE;
	if ((rc = kinet_ctx_open(&attr, &ctx))) {
		fprintf(stderr, "kinet_ctx_open: %s\n", kinet_strerror(rc));
		return 2;
	}
	/* The crash, through a pointer the compiler cannot see is NULL. */
	volatile int *volatile p = NULL;
	*p = 1;
	kinet_ctx_close(ctx);
	return 0;
}
