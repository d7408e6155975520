/*
 * Every KINET_* environment variable, declared once (env.h): its type,
 * its allowed values or range, its default and a line of help.  The
 * getters (env.c) read nothing else, kinet_ctx_open checks them all,
 * `kinet-info --env` prints this table, and ctest env_table checks that
 * every KINET_ name in src/ and tools/, and every one the scripts take
 * from the environment, is here and that the README's table is this one.
 *
 * Where falling back is right (the log level, tuning knobs whose default
 * is always safe) a bad value is one warning naming what is used instead;
 * everywhere else it is an error naming the variable, the value and what
 * is allowed, and kinet_ctx_open fails with -EINVAL.
 */
#include "env.h"

#define INT(n, lo, hi, d, fb, scope, help)                                                                   \
	{                                                                                                    \
		n, KINET_ENV_INT, lo, hi, NULL, d, fb, scope, help                                           \
	}
#define BOOL(n, d, fb, scope, help)                                                                          \
	{                                                                                                    \
		n, KINET_ENV_BOOL, 0, 1, "0|1", d, fb, scope, help                                           \
	}
#define CHOICE(n, c, d, fb, scope, help)                                                                     \
	{                                                                                                    \
		n, KINET_ENV_CHOICE, 0, 0, c, d, fb, scope, help                                             \
	}
#define STR(n, d, scope, help)                                                                               \
	{                                                                                                    \
		n, KINET_ENV_STRING, 0, 0, NULL, d, false, scope, help                                       \
	}

static const struct kinet_env_var vars[] = {
	/* context and software NIC */
	CHOICE("KINET_PROVIDER", "auto|soft|mlx5", "auto", false, "core",
	       "provider: auto (the software NIC; mlx5 only when asked for), soft, mlx5 (ConnectX via "
	       "rdma-core)"),
	INT("KINET_ENGINE_THREADS", 1, 64, "1", false, "core", "software NIC engine threads per context"),
	CHOICE("KINET_LOG", "error|warn|info|debug|0|1|2|3", "warn", true, "core", "log level on stderr"),
	CHOICE("KINET_TRANSPORT", "auto|local|node|ofi", "auto", false, "soft",
	       "how peers are reached: auto (same process local, same host node, else ofi) or forced"),
	CHOICE("KINET_CARRIERS", "auto|always", "auto", false, "soft",
	       "when a process opens its shared-memory inbox and fabric endpoint: in a rank of a job of "
	       "several "
	       "(auto), or always"),
	CHOICE("KINET_P2P", "auto|off|force|0|1", "auto", false, "core",
	       "the peer path between GPUs (device verbs with the GPU's own loads and stores)"),
	INT("KINET_CQ_MODERATION", 1, 1 << 20, "16", true, "core",
	    "exported QPs: a CQE every N WQEs (power of two, at most a quarter of the send queue)"),
	INT("KINET_STAGE_BYTES", 0, 4096, "256", true, "core",
	    "largest write from GPU memory device code stages beside its WQE (0: none)"),
	BOOL("KINET_STAGE_ALL", "0", true, "core",
	     "stage every source, host memory too (tests without a GPU)"),
	INT("KINET_ENGINE_SPIN_US", 0, 10000000, "200", true, "soft",
	    "how long an idle engine thread spins (0 when the host's polling threads outnumber its cores, "
	    "unless set)"),
	INT("KINET_ENGINE_YIELD_US", 0, 100000000, "5000", true, "soft", "then how long it yields"),
	INT("KINET_ENGINE_SLEEP_MAX_US", 0, 1000000, "200", true, "soft", "its longest sleep after that"),
	BOOL("KINET_NODE_IPC", "1", false, "soft",
	     "0: the node transport stages GPU memory through its messages instead of CUDA IPC"),
	CHOICE("KINET_ETH_BACKEND", "auto|packet|xdp|xdp-native", "auto", false, "soft",
	       "Ethernet ports of attr backend AUTO: auto and packet use AF_PACKET; xdp (SKB mode) and "
	       "xdp-native use AF_XDP where possible, else warn once and use AF_PACKET"),
	/* the ofi carrier */
	STR("KINET_OFI_PROVIDER", NULL, "ofi",
	    "libfabric provider (tcp;ofi_rxm, shm, verbs;ofi_rxm, efa, cxi); "
	    "default tcp;ofi_rxm when offered"),
	STR("KINET_OFI_ADDR", NULL, "ofi", "source address of the fabric endpoint"),
	STR("KINET_OFI_IFACE", NULL, "ofi", "interface of the fabric endpoint"),
	STR("KINET_OFI_LIBFABRIC", "libfabric.so.1", "ofi", "the libfabric the ofi carrier loads (dlopen)"),
	BOOL("KINET_OFI_MR_REG", "0", false, "ofi",
	     "1: register message buffers even where the provider need not"),
	INT("KINET_OFI_TX_BUFS", 1, 65536, "64", false, "ofi", "send buffers of the fabric endpoint"),
	INT("KINET_OFI_RX_BUFS", 1, 65536, "64", false, "ofi", "receive buffers of the fabric endpoint"),
	INT("KINET_OFI_BUNDLE", 0, 1 << 20, "4096", true, "ofi",
	    "payload bytes of one bundle of small carrier messages (0: each on its own)"),
	INT("KINET_OFI_INJECT", -1, 1 << 20, "-1", true, "ofi",
	    "largest carrier message sent with fi_inject (-1: the provider's inject size; 0: none)"),
	INT("KINET_OFI_PEER_TIMEOUT_MS", 0, 86400000, "10000", false, "ofi",
	    "a fabric peer silent this long is dead (0: never)"),
	/* the ConnectX provider */
	STR("KINET_DEVICE", NULL, "mlx5",
	    "mlx5: the port, e.g. mlx5_0:1 (default: the one closest to the GPU)"),
	CHOICE("KINET_MLX5_GID_FAMILY", "any|ipv4|ipv6", "any", false, "mlx5", "mlx5: the GID family to use"),
	INT("KINET_MLX5_GID_INDEX", -1, 255, "-1", false, "mlx5", "mlx5: the GID index (-1: chosen)"),
	CHOICE("KINET_MLX5_MTU", "256|512|1024|2048|4096", NULL, false, "mlx5",
	       "mlx5: path MTU cap (default: the port's)"),
	INT("KINET_MLX5_TIMEOUT", -1, 31, "-1", false, "mlx5",
	    "mlx5: local ACK timeout exponent (-1: from the QP)"),
	INT("KINET_MLX5_RETRY_CNT", -1, 7, "-1", false, "mlx5", "mlx5: retry count (-1: from the QP)"),
	INT("KINET_MLX5_SL", 0, 15, "0", false, "mlx5", "mlx5: service level"),
	INT("KINET_MLX5_TRAFFIC_CLASS", 0, 255, "0", false, "mlx5", "mlx5: traffic class"),
	CHOICE("KINET_MLX5_GPU_MR", "auto|dma-buf|peer-memory", "auto", false, "mlx5",
	       "mlx5: how GPU memory is registered"),
	STR("KINET_MLX5_LIBIBVERBS", "libibverbs.so.1", "mlx5", "mlx5: the libibverbs loaded"),
	STR("KINET_MLX5_LIBMLX5", "libmlx5.so.1", "mlx5", "mlx5: the libmlx5 loaded"),
	/* bootstrap */
	INT("KINET_RANK", 0, 1 << 24, NULL, false, "boot", "this process's rank (set by kinetrun)"),
	INT("KINET_NRANKS", 1, 1 << 24, NULL, false, "boot", "ranks of the job (set by kinetrun)"),
	INT("KINET_LOCAL_RANK", 0, 1 << 24, NULL, false, "boot", "rank among this host's (set by kinetrun)"),
	INT("KINET_LOCAL_SIZE", 1, 1 << 24, NULL, false, "boot", "ranks on this host (set by kinetrun)"),
	STR("KINET_ROOT", NULL, "boot", "host:port of rank 0's bootstrap listener (set by kinetrun)"),
	STR("KINET_BOOT_ADDR", NULL, "boot", "address this rank's bootstrap listens on"),
	INT("KINET_BOOT_TIMEOUT_MS", 1, 86400000, "30000", true, "boot", "bound of every bootstrap step"),
	/* the verbs front door */
	STR("KINET_VERBS_NETDEV", NULL, "verbs",
	    "verbs front door: the interface whose IPv4 address is GID 0 (default: first up, not loopback)"),
	INT("KINET_VERBS_PORT_BASE", 1024, 65280, "18700", false, "verbs",
	    "verbs front door: QPN directory ports are this + 1..255"),
	/* tools and scripts (read by them, declared so none is a typo) */
	STR("KINET_COMMIT", NULL, "tools", "kinet-perf: the commit its report names (default: git's)"),
	STR("KINET_PERF_EMU_REASON", NULL, "tools",
	    "kinet-perf: set when a CUDA build hands over to kinet-perf-emu"),
	BOOL("KINET_TEST_QUICK", "0", true, "scripts", "scripts/test.sh: the quick subset"),
	INT("KINET_TEST_JOBS", 1, 1024, NULL, true, "scripts", "scripts/test.sh: ctest parallelism"),
	INT("KINET_NETNS_TIMEOUT", 1, 86400, "120", true, "scripts",
	    "tests/netns/run.sh: per-rank timeout (s)"),
	INT("KINET_NETNS_PORT", 1024, 65535, "29500", true, "scripts", "tests/netns/run.sh: bootstrap port"),
	STR("KINET_NETNS_ADDR", NULL, "scripts", "tests/netns/run.sh: this rank's address (set for it)"),
	INT("KINET_FUZZ_SMOKE_SECONDS", 1, 86400, "60", true, "scripts",
	    "scripts/test.sh: fuzz smoke time (s)"),
	STR("KINET_CMAKE_ARGS", NULL, "scripts", "scripts/gpu-test.sh: extra cmake configure arguments"),
	BOOL("KINET_GPU_LONG", "0", true, "scripts", "scripts/gpu-test.sh: also the soaks (ctest -L long)"),
	INT("KINET_CTEST_TIMEOUT", 1, 86400, "300", true, "scripts",
	    "scripts/gpu-test.sh: per-test limit (s)"),
	INT("KINET_BENCH_BUDGET_S", 1, 86400, "330", true, "scripts",
	    "bench/run.sh: time for the whole sweep (s)"),
	INT("KINET_BENCH_CMD_TIMEOUT_S", 1, 86400, "120", true, "scripts",
	    "bench/run.sh, bench/alltoall/run-gpu.sh: per-command limit (s; run-gpu.sh: 600)"),
	BOOL("KINET_BENCH_TWO_RANKS", "0", true, "scripts", "bench/run.sh: also the two-process rows"),
	CHOICE("KINET_BENCH_TWO_GPUS", "auto|0|1", "auto", true, "scripts", "bench/run.sh: the two-GPU rows"),
	STR("KINET_BENCH_TOKENS", "1,8,128,4096", "scripts", "bench/alltoall/run-gpu.sh: tokens per rank"),
	INT("KINET_BENCH_HIDDEN", 1, 1 << 20, "7168", true, "scripts",
	    "bench/alltoall/run-gpu.sh: hidden size"),
	INT("KINET_BENCH_ITERS", 1, 1 << 24, "50", true, "scripts", "bench/alltoall/run-gpu.sh: iterations"),
	STR("KINET_NCCL_LIB", NULL, "scripts", "bench/alltoall/run-gpu.sh: the NCCL library to compare with"),
};

const struct kinet_env_var *kinet_env_vars(size_t *count)
{
	*count = sizeof(vars) / sizeof(vars[0]);
	return vars;
}
