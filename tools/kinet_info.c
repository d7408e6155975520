/*
 * kinet-info: what this build and machine offer: version, providers, CUDA,
 * engine defaults, the ConnectX (mlx5) devices and what works on them, what
 * Ethernet ports need and whether this process has it, and the wire struct
 * sizes.  Exits 0 after the report; a provider that cannot
 * be opened is reported with the reason (not as an error: listing it is
 * not asking for it).  --provider NAME reports that provider only and, as
 * it was asked for, exits 1 with an error line when it is not usable.
 */
#include <kinet/kinet.h>
#include <kinet/wire.h>

#include <errno.h>
#include <linux/capability.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

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

/* Whether this process has capability cap in its effective set. */
static bool has_cap(unsigned cap)
{
	struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
	struct __user_cap_data_struct d[2];

	memset(d, 0, sizeof(d));
	if (syscall(SYS_capget, &h, d))
		return false;
	return (d[cap / 32].effective >> (cap % 32)) & 1u;
}

/* What Ethernet ports need (docs/ETHERNET.md, "Capabilities, back ends and
 * the Linux stack") and whether this process has it: asking opens nothing. */
static void show_ethernet(void)
{
	struct rlimit ml;
	const char *backend = getenv("KINET_ETH_BACKEND");
	bool bpf = has_cap(39 /* CAP_BPF */) || has_cap(CAP_SYS_ADMIN);

	printf("ethernet ports:\n");
	printf("  AF_PACKET (default): %s\n",
	       has_cap(CAP_NET_RAW)
		       ? "usable (CAP_NET_RAW)"
		       : "not usable: no CAP_NET_RAW (run as root, or setcap cap_net_raw+ep the program)");
	printf("  AF_XDP (KINET_ETH_BACKEND=xdp, now %s): ", backend ? backend : "unset");
	if (bpf && has_cap(CAP_NET_ADMIN)) {
		bool unlimited = !getrlimit(RLIMIT_MEMLOCK, &ml) && ml.rlim_cur == RLIM_INFINITY;
		printf("capabilities there (CAP_BPF or CAP_SYS_ADMIN, and CAP_NET_ADMIN); locked memory %s\n",
		       unlimited ? "unlimited" : "limited (raised at open where allowed)");
	} else {
		printf("not usable: needs CAP_BPF (or CAP_SYS_ADMIN) and CAP_NET_ADMIN\n");
	}
}

static void usage(FILE *f)
{
	fprintf(f, "usage: kinet-info [--help | --version | --provider NAME | --env [--markdown]]\n"
		   "Prints what this kinet build and machine offer: version, providers, CUDA,\n"
		   "engine settings, ConnectX (mlx5) devices, the environment variables kinet reads\n"
		   "and the wire struct sizes.  --provider NAME: only what provider NAME finds (exit 1\n"
		   "when it is not usable here).  --env: every environment variable kinet reads, its\n"
		   "value now, default, allowed values and help (exit 1 when one is not allowed);\n"
		   "--markdown: the same as the README's table.\n");
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

/* --env: every variable of kinet's table with its value now; 1 when one
 * is not allowed.  --markdown: the README's table (ctest env_table checks
 * that the README holds exactly this). */
static int show_env(bool markdown)
{
	struct kinet_env_info e;
	int bad = 0;

	if (markdown) {
		printf("| Variable | Values | Default | What |\n|---|---|---|---|\n");
		for (unsigned i = 0; !kinet_env_info(i, &e); i++) {
			/* A bar would end the cell: choices are listed with commas. */
			printf("| `%s` | ", e.name);
			for (const char *c = e.allowed; *c; c++)
				fputs(*c == '|' ? ", " : (char[]){*c, 0}, stdout);
			printf(" | %s | %s |\n", e.dflt ? e.dflt : "(unset)", e.help);
		}
		return 0;
	}
	for (unsigned i = 0; !kinet_env_info(i, &e); i++) {
		printf("  %-26s %-7s %s%s%s\n", e.name, e.scope, e.value ? e.value : "(unset)",
		       e.value ? "" : ": ", e.value ? "" : (e.dflt ? e.dflt : "not given"));
		if (e.invalid) {
			printf("  %-26s         ^ INVALID: %s (%s)\n", "", e.invalid,
			       e.fallback ? "the default is used" : "kinet_ctx_open fails");
			bad = 1;
		}
		printf("  %-26s         %s; allowed: %s\n", "", e.help, e.allowed);
	}
	return bad;
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
		if (!strcmp(argv[1], "--env")) {
			if (argc > 3 || (argc == 3 && strcmp(argv[2], "--markdown"))) {
				usage(stderr);
				return 2;
			}
			return show_env(argc == 3);
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
	show_ethernet();

	/* The variables that are set (kinet-info --env: all of them). */
	printf("environment (set; kinet-info --env lists every variable):\n");
	{
		struct kinet_env_info e;
		int n = 0;

		for (unsigned i = 0; !kinet_env_info(i, &e); i++) {
			if (!e.value)
				continue;
			printf("  %-26s %s%s%s\n", e.name, e.value, e.invalid ? "  INVALID: " : "",
			       e.invalid ? e.invalid : "");
			n++;
		}
		if (!n)
			printf("  (none: every default)\n");
	}

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
