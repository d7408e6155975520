/*
 * kinet-info: what this build and machine offer: version, providers, CUDA,
 * engine defaults, the ConnectX (mlx5) devices and what works on them, and
 * the wire struct sizes.  Exits 0 after the report; a provider that cannot
 * be opened is reported with the reason (not as an error: listing it is
 * not asking for it).  --provider NAME reports that provider only and, as
 * it was asked for, exits 1 with an error line when it is not usable.
 */
#include <kinet/kinet.h>
#include <kinet/wire.h>

#include <errno.h>
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
	fprintf(f, "usage: kinet-info [--help | --version | --provider NAME]\n"
		   "Prints what this kinet build and machine offer: version, providers, CUDA,\n"
		   "engine settings, ConnectX (mlx5) devices, the environment variables kinet reads\n"
		   "and the wire struct sizes.  --provider NAME: only what provider NAME finds (exit 1\n"
		   "when it is not usable here).\n");
}

static void print_line(void *arg, const char *line)
{
	printf("%s%s\n", (const char *)arg, line);
}

/* What provider name finds, each line indented; its status. */
static int show_description(const char *name, const char *indent)
{
	return kinet_provider_describe(name, print_line, (void *)indent);
}

/* --provider NAME: asked for, so unusable is an error. */
static int only_provider(const char *name)
{
	const char *why = NULL;
	int rc = kinet_provider_probe(name, &why);

	if (rc == -EINVAL) {
		fprintf(stderr, "kinet-info: error: %s: %s\n", name, why);
		return 2;
	}
	printf("%s: %s\n", name, rc ? "not available" : "available");
	rc = show_description(name, "  ");
	if (rc && rc != -EOPNOTSUPP) {
		kinet_provider_probe(name, &why);
		fprintf(stderr, "kinet-info: error: provider %s is not usable here: %s\n", name,
			why ? why : kinet_strerror(rc));
		return 1;
	}
	return 0;
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
		if (!strcmp(argv[1], "--provider")) {
			if (argc != 3) {
				fprintf(stderr, "kinet-info: --provider needs a name (soft or mlx5)\n");
				usage(stderr);
				return 2;
			}
			return only_provider(argv[2]);
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

	/* Listing is not asking: a missing device or rdma-core is a reason,
	 * printed as such (docs/MLX5.md). */
	printf("mlx5 (ConnectX):\n");
	show_description("mlx5", "  ");

	const char *threads = getenv("KINET_ENGINE_THREADS");
	printf("engine threads: %s\n", threads && *threads ? threads : "1 (default)");

	printf("environment:\n");
	show_env("KINET_PROVIDER", "(unset: auto)");
	show_env("KINET_ENGINE_THREADS", "(unset: 1)");
	show_env("KINET_LOG", "(unset: warn)");
	show_env("KINET_P2P", "(unset: auto: device loads/stores between GPUs of this process)");
	show_env("KINET_TRANSPORT", "(unset: auto)");
	show_env("KINET_CARRIERS", "(unset: auto: opened in a rank of a job of several)");
	show_env("KINET_DEVICE", "(unset: the active mlx5 port closest to the GPU)");
	show_env("KINET_MLX5_GID_INDEX", "(unset: a RoCE v2 GID, IPv4 first)");
	show_env("KINET_MLX5_MTU", "(unset: the ports' active MTU)");

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
