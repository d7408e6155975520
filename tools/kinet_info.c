/*
 * kinet-info: what this build and machine offer: version, providers, CUDA,
 * engine defaults and the wire struct sizes.  Exits 0 after the report; a
 * provider that cannot be opened is reported with the reason (not as an
 * error: listing it is not asking for it).
 */
#include <kinet/kinet.h>
#include <kinet/wire.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef KINET_VERSION
#define KINET_VERSION "unknown"
#endif

static void show_provider(const char *name)
{
	const char *why;

	if (kinet_provider_probe(name, &why) == 0)
		printf("  %-5s available\n", name);
	else
		printf("  %-5s not available: %s\n", name, why);
}

static void usage(FILE *f)
{
	fprintf(f, "usage: kinet-info [--help | --version]\n"
		   "Prints what this kinet build and machine offer: version, providers, CUDA,\n"
		   "engine settings, the environment variables kinet reads and the wire struct sizes.\n");
}

static void show_env(const char *name, const char *unset)
{
	const char *v = getenv(name);
	printf("  %-21s %s\n", name, v ? v : unset);
}

int main(int argc, char **argv)
{
	if (argc > 1) {
		if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
			usage(stdout);
			return 0;
		}
		if (!strcmp(argv[1], "-V") || !strcmp(argv[1], "--version")) {
			printf("kinet-info %s\n", KINET_VERSION);
			return 0;
		}
		fprintf(stderr, "kinet-info: unknown argument '%s'\n", argv[1]);
		usage(stderr);
		return 2;
	}
	printf("kinet %s\n", KINET_VERSION);

	printf("providers:\n");
	show_provider("soft");
	show_provider("mlx5");
	{
		struct kinet_ctx_attr attr;
		struct kinet_ctx *ctx = NULL;
		kinet_ctx_attr_init(&attr);
		int rc = kinet_ctx_open(&attr, &ctx);
		if (rc == 0) {
			printf("  default: %s\n", kinet_ctx_provider(ctx));
			kinet_ctx_close(ctx);
		} else {
			printf("  default: cannot open a context: %s (%d)\n", kinet_strerror(rc), rc);
		}
	}

	printf("cuda: %s\n", kinet_cuda_available() ? "available" : "not available");

	const char *threads = getenv("KINET_ENGINE_THREADS");
	printf("engine threads: %s\n", threads && *threads ? threads : "1 (default)");

	printf("environment:\n");
	show_env("KINET_PROVIDER", "(unset: auto)");
	show_env("KINET_ENGINE_THREADS", "(unset: 1)");
	show_env("KINET_LOG", "(unset: warn)");
	show_env("KINET_P2P", "(unset: auto: device loads/stores between GPUs of this process)");
	show_env("KINET_TRANSPORT", "(unset: auto)");
	show_env("KINET_CARRIERS", "(unset: auto: opened in a rank of a job of several)");

	printf("wire structs (bytes):\n");
	printf("  wqe_ctrl_seg   %zu\n", sizeof(struct kinet_wqe_ctrl_seg));
	printf("  wqe_raddr_seg  %zu\n", sizeof(struct kinet_wqe_raddr_seg));
	printf("  wqe_data_seg   %zu\n", sizeof(struct kinet_wqe_data_seg));
	printf("  wqe_inline_seg %zu\n", sizeof(struct kinet_wqe_inline_seg));
	printf("  wqe_atomic_seg %zu\n", sizeof(struct kinet_wqe_atomic_seg));
	printf("  cqe64          %zu\n", sizeof(struct kinet_cqe64));
	printf("  err_cqe        %zu\n", sizeof(struct kinet_err_cqe));
	printf("  wqe basic block %u, ds unit %u\n", KINET_WQE_BB_SIZE, KINET_WQE_DS_SIZE);
	return 0;
}
