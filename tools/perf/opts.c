/*
 * kinet-perf command line.  Shaped as perftest's ib_write_bw and friends:
 *   kinet-perf <op> [--lat|--bw|--rate|--mode M] [-s SIZE]... [options]
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "perf.h"

static const char *const op_names[] = {"write", "read", "fetch_add", "compare_swap", "put_signal", "send"};
static const char *const mode_names[] = {"lat", "bw", "rate", "iter", "pingpong"};
static const char *const group_names[] = {"thread", "warp", "block"};

const char *perf_op_name(enum perf_op op)
{
	return op_names[op];
}
const char *perf_mode_name(enum perf_mode m)
{
	return mode_names[m];
}
const char *perf_mem_name(enum perf_mem m)
{
	return m == PERF_MEM_GPU ? "gpu" : "host";
}
const char *perf_db_name(enum kinet_db_mode m)
{
	switch (m) {
	case KINET_DB_CPU:
		return "cpu";
	case KINET_DB_GPU:
		return "gpu";
	case KINET_DB_BF:
		return "bf";
	default:
		return "auto";
	}
}
const char *perf_sharing_name(int s)
{
	switch (s) {
	case KINET_SHARE_EXCLUSIVE:
		return "exclusive";
	case KINET_SHARE_CTA:
		return "cta";
	case KINET_SHARE_GPU:
		return "gpu";
	default:
		return "auto";
	}
}

const char *perf_group_name(enum perf_group g)
{
	return group_names[g];
}

uint32_t perf_units(const struct perf_opts *o)
{
	switch (o->group) {
	case PERF_GROUP_WARP:
		return (uint32_t)(o->blocks * ((o->threads + 31) / 32));
	case PERF_GROUP_BLOCK:
		return (uint32_t)o->blocks;
	default:
		return (uint32_t)(o->threads * o->blocks);
	}
}

void perf_opts_defaults(struct perf_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->op = PERF_OP_WRITE;
	o->mode = PERF_MODE_LAT;
	o->initiator = PERF_INIT_BOTH; /* the CPU-initiated alternative beside every result */
	o->threads = 1;
	o->blocks = 1;
	o->qps = 1;
	o->engine_threads = 0;
	o->db_mode = KINET_DB_AUTO;
	o->sharing = -1;
	o->src_mem = PERF_MEM_HOST;
	o->dst_mem = PERF_MEM_HOST;
	o->warmup = -1;
	o->window = 64;
	o->inline_mode = -1;
	o->floors = 1;
	o->compute_reps = 8;
	o->compute_n = 16384;
	o->sq_depth = 256;
	o->peer_gpu = -1;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: kinet-perf <write|read|fetch_add|compare_swap|put_signal|send|iter> [options]\n"
		"       kinet-perf eth --peer ADDR [--port P] [-s FRAME]... [-n N] [--window W] [--seconds "
		"S]\n"
		"                         the Ethernet echo client: UDP round trip and echoes/s "
		"(perf/eth.c)\n"
		"  --lat | --bw | --rate | --mode lat|bw|rate|iter|pingpong   what to measure (default\n"
		"                         --lat); pingpong (write, put_signal; one process, GPU-\n"
		"                         initiated): device code on both sides answers each other\n"
		"  -s, --size SIZE        message size (K/M/G suffixes; repeat or comma list)\n"
		"  -a, --all              power-of-two sweep 8 B .. 8 MiB\n"
		"  --sweep MIN:MAX        power-of-two sweep MIN .. MAX\n"
		"  --initiator gpu|cpu|both   who posts: a kernel, the host, or both (default both)\n"
		"  -t, --threads N        GPU threads per block that post (default 1)\n"
		"  -b, --blocks N         GPU blocks (default 1)\n"
		"  -q, --qps N            queue pairs (default 1)\n"
		"  --group thread|warp|block  bw/rate, GPU-initiated write, read, put_signal: the\n"
		"                         posting unit is each thread, each warp (kinet_dev_*_warp)\n"
		"                         or each block (kinet_dev_*_block); ops = units x iters,\n"
		"                         each unit with its own source and target slot (default thread)\n"
		"  --engine-threads N[,N...]  software NIC threads (default $KINET_ENGINE_THREADS or 1);\n"
		"                         a list runs everything once per count (a sweep: where\n"
		"                         the rate stops growing, eng_busy says who the limit is)\n"
		"  --db auto|cpu|gpu|bf   doorbell mode (default auto)\n"
		"  --sharing auto|exclusive|cta|gpu   QP sharing mode (default: from the layout)\n"
		"  --src-mem host|gpu     initiator's buffer (default host: pinned, mapped)\n"
		"  --dst-mem host|gpu     target's buffer (default host)\n"
		"  --peer-gpu D           loopback: the target's context and buffers on GPU D, the\n"
		"                         initiator on GPU 0; adds the peer floors (GPU 0 <-> D;\n"
		"                         D = 0: a context of its own on the same GPU)\n"
		"  -n, --iters N          timed iterations (per posting thread in bw/rate)\n"
		"  -w, --warmup N         warm-up iterations\n"
		"  --window N             outstanding operations per thread in bw/rate (default 64)\n"
		"  --inline | --no-inline small writes carried in the WQE (default: <= 28 B inline)\n"
		"  --sq-depth N           send queue depth in WQEs (default 256)\n"
		"  --stage-bytes N        largest write from GPU memory that device code stages in\n"
		"                         host memory for the software NIC (default: the library's,\n"
		"                         $KINET_STAGE_BYTES or 256; KINET_STAGE_BYTES=0: none)\n"
		"  --compute-reps N       iter mode: arithmetic passes over the buffer (default 8)\n"
		"  --compute-n N          iter mode: floats in the buffer (default 16384)\n"
		"  --no-floors            skip the floor measurements\n"
		"  --json                 one JSON document on stdout (the table goes to stderr)\n"
		"  -h, --help\n"
		"Without a GPU the device code runs on CPU threads (host emulation); the output says so.\n");
	fprintf(f, "Loopback in one process, or two ranks: kinetrun -n 2 -- kinet-perf ...\n"
		   "(KINET_RANK, KINET_NRANKS=2): rank 0 initiates and reports, rank 1 is the target;\n"
		   "each rank uses GPU KINET_LOCAL_RANK %% (GPU count); latency is compared with the\n"
		   "remote write's four handoffs between the ranks played with bare shared words.\n");
}

static int parse_size(const char *s, uint64_t *v)
{
	char *end;
	/* strtoull would take "-5" as 2^64 - 5. */
	if (*s < '0' || *s > '9')
		return -1;
	errno = 0;
	unsigned long long x = strtoull(s, &end, 0);
	if (errno || end == s)
		return -1;
	switch (*end) {
	case 'k':
	case 'K':
		x <<= 10;
		end++;
		break;
	case 'm':
	case 'M':
		x <<= 20;
		end++;
		break;
	case 'g':
	case 'G':
		x <<= 30;
		end++;
		break;
	default:
		break;
	}
	if (*end == 'i' || *end == 'B')
		end++;
	if (*end == 'B')
		end++;
	if (*end)
		return -1;
	*v = x;
	return 0;
}

static int parse_long(const char *s, long min, long *v)
{
	char *end;
	errno = 0;
	long x = strtol(s, &end, 0);
	if (errno || end == s || *end || x < min)
		return -1;
	*v = x;
	return 0;
}

static int add_size(struct perf_opts *o, uint64_t v)
{
	if (o->nsizes >= PERF_MAX_SIZES)
		return -1;
	o->sizes[o->nsizes++] = v;
	return 0;
}

static int add_sizes(struct perf_opts *o, const char *list)
{
	char buf[512];
	snprintf(buf, sizeof(buf), "%s", list);
	for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		uint64_t v;
		if (parse_size(t, &v) || add_size(o, v))
			return -1;
	}
	return 0;
}

static int add_sweep(struct perf_opts *o, uint64_t lo, uint64_t hi)
{
	if (lo == 0 || hi < lo)
		return -1;
	for (uint64_t v = lo; v <= hi; v *= 2)
		if (add_size(o, v))
			return -1;
	return 0;
}

static int pick(const char *s, const char *const *names, int n)
{
	for (int i = 0; i < n; i++)
		if (!strcmp(s, names[i]))
			return i;
	return -1;
}

int perf_opts_parse(struct perf_opts *o, int argc, char **argv)
{
	static const char *const inits[] = {"", "gpu", "cpu", "both"};
	static const char *const mems[] = {"host", "gpu"};
	static const char *const dbs[] = {"auto", "cpu", "gpu", "bf"};
	static const char *const shares[] = {"exclusive", "cta", "gpu"};
	int have_op = 0, threads_set = 0;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;
		long n;
		uint64_t lo, hi;
		int k;

/* Options that take a value consume the next argument. */
#define NEED_VALUE()                                                                                         \
	do {                                                                                                 \
		if (!v) {                                                                                    \
			fprintf(stderr, "kinet-perf: %s needs a value\n", a);                                \
			return -1;                                                                           \
		}                                                                                            \
		i++;                                                                                         \
	} while (0)
#define BAD_VALUE()                                                                                          \
	do {                                                                                                 \
		fprintf(stderr, "kinet-perf: bad value for %s: %s\n", a, v);                                 \
		return -1;                                                                                   \
	} while (0)

		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			usage(stdout);
			return 1;
		} else if (a[0] != '-' && !have_op) {
			if (!strcmp(a, "iter")) {
				o->op = PERF_OP_WRITE;
				o->mode = PERF_MODE_ITER;
			} else if ((k = pick(a, op_names, 6)) >= 0) {
				o->op = (enum perf_op)k;
			} else {
				fprintf(stderr, "kinet-perf: unknown operation '%s'\n", a);
				usage(stderr);
				return -1;
			}
			have_op = 1;
		} else if (!strcmp(a, "--lat")) {
			o->mode = PERF_MODE_LAT;
		} else if (!strcmp(a, "--bw")) {
			o->mode = PERF_MODE_BW;
		} else if (!strcmp(a, "--rate")) {
			o->mode = PERF_MODE_RATE;
		} else if (!strcmp(a, "--mode")) {
			NEED_VALUE();
			if ((k = pick(v, mode_names, 5)) < 0)
				BAD_VALUE();
			o->mode = (enum perf_mode)k;
		} else if (!strcmp(a, "-s") || !strcmp(a, "--size")) {
			NEED_VALUE();
			if (add_sizes(o, v))
				BAD_VALUE();
		} else if (!strcmp(a, "-a") || !strcmp(a, "--all")) {
			if (add_sweep(o, 8, 8u << 20))
				BAD_VALUE();
		} else if (!strcmp(a, "--sweep")) {
			NEED_VALUE();
			char buf[64];
			snprintf(buf, sizeof(buf), "%s", v);
			char *colon = strchr(buf, ':');
			if (!colon)
				BAD_VALUE();
			*colon = 0;
			if (parse_size(buf, &lo) || parse_size(colon + 1, &hi) || add_sweep(o, lo, hi))
				BAD_VALUE();
		} else if (!strcmp(a, "--initiator")) {
			NEED_VALUE();
			if ((k = pick(v, inits, 4)) <= 0)
				BAD_VALUE();
			o->initiator = k;
		} else if (!strcmp(a, "-t") || !strcmp(a, "--threads")) {
			NEED_VALUE();
			if (parse_long(v, 1, &n) || n > 1024)
				BAD_VALUE();
			o->threads = (int)n;
			threads_set = 1;
		} else if (!strcmp(a, "-b") || !strcmp(a, "--blocks")) {
			NEED_VALUE();
			if (parse_long(v, 1, &n) || n > 4096)
				BAD_VALUE();
			o->blocks = (int)n;
		} else if (!strcmp(a, "-q") || !strcmp(a, "--qps")) {
			NEED_VALUE();
			if (parse_long(v, 1, &n) || n > 4096)
				BAD_VALUE();
			o->qps = (int)n;
		} else if (!strcmp(a, "--group")) {
			NEED_VALUE();
			if ((k = pick(v, group_names, 3)) < 0)
				BAD_VALUE();
			o->group = (enum perf_group)k;
		} else if (!strcmp(a, "--engine-threads")) {
			char buf[128], *tok, *save = NULL;
			NEED_VALUE();
			snprintf(buf, sizeof(buf), "%s", v);
			o->nengines = 0;
			for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
				if (parse_long(tok, 1, &n) || n > 256 || o->nengines == 16)
					BAD_VALUE();
				o->engine_list[o->nengines++] = (int)n;
			}
			if (!o->nengines)
				BAD_VALUE();
			o->engine_threads = o->engine_list[0];
			if (o->nengines == 1)
				o->nengines = 0;
		} else if (!strcmp(a, "--db")) {
			NEED_VALUE();
			if ((k = pick(v, dbs, 4)) < 0)
				BAD_VALUE();
			o->db_mode = (enum kinet_db_mode)k;
		} else if (!strcmp(a, "--sharing")) {
			NEED_VALUE();
			if (!strcmp(v, "auto"))
				o->sharing = -1;
			else if ((k = pick(v, shares, 3)) >= 0)
				o->sharing = k;
			else
				BAD_VALUE();
		} else if (!strcmp(a, "--src-mem") || !strcmp(a, "--dst-mem")) {
			NEED_VALUE();
			if ((k = pick(v, mems, 2)) < 0)
				BAD_VALUE();
			if (a[2] == 's')
				o->src_mem = (enum perf_mem)k;
			else
				o->dst_mem = (enum perf_mem)k;
		} else if (!strcmp(a, "--peer-gpu")) {
			NEED_VALUE();
			/* Whether D exists is known only with the devices (main). */
			if (parse_long(v, -1, &n) || n > 1024)
				BAD_VALUE();
			o->peer_gpu = (int)n;
		} else if (!strcmp(a, "-n") || !strcmp(a, "--iters")) {
			NEED_VALUE();
			if (parse_long(v, 1, &n))
				BAD_VALUE();
			o->iters = n;
		} else if (!strcmp(a, "-w") || !strcmp(a, "--warmup")) {
			NEED_VALUE();
			if (parse_long(v, 0, &n))
				BAD_VALUE();
			o->warmup = n;
		} else if (!strcmp(a, "--window")) {
			NEED_VALUE();
			if (parse_long(v, 1, &n) || n > PERF_MAX_WINDOW)
				BAD_VALUE();
			o->window = (int)n;
		} else if (!strcmp(a, "--inline")) {
			o->inline_mode = 1;
		} else if (!strcmp(a, "--no-inline")) {
			o->inline_mode = 0;
		} else if (!strcmp(a, "--sq-depth")) {
			NEED_VALUE();
			if (parse_long(v, 2, &n) || n > 32768)
				BAD_VALUE();
			o->sq_depth = (uint32_t)n;
		} else if (!strcmp(a, "--stage-bytes")) {
			NEED_VALUE();
			if (parse_long(v, 1, &n) || n > KINET_QP_STAGE_MAX)
				BAD_VALUE();
			o->stage_bytes = (uint32_t)n;
		} else if (!strcmp(a, "--compute-reps")) {
			NEED_VALUE();
			if (parse_long(v, 0, &n) || n > 1000000)
				BAD_VALUE();
			o->compute_reps = (int)n;
		} else if (!strcmp(a, "--compute-n")) {
			NEED_VALUE();
			if (parse_long(v, 1, &n) || n > (1l << 26))
				BAD_VALUE();
			o->compute_n = (int)n;
		} else if (!strcmp(a, "--no-floors")) {
			o->floors = 0;
		} else if (!strcmp(a, "--json")) {
			o->json = 1;
		} else {
			fprintf(stderr, "kinet-perf: unknown option '%s'\n", a);
			usage(stderr);
			return -1;
		}
#undef NEED_VALUE
#undef BAD_VALUE
	}
	if (!have_op) {
		fprintf(stderr, "kinet-perf: which operation? (write, read, fetch_add, compare_swap, "
				"put_signal, send or iter)\n");
		usage(stderr);
		return -1;
	}
	if (!o->nsizes)
		add_size(o, o->mode == PERF_MODE_BW ? 65536 : 8);
	/* Atomics move 8 bytes whatever -s says. */
	if (o->op == PERF_OP_FETCH_ADD || o->op == PERF_OP_COMPARE_SWAP) {
		o->nsizes = 1;
		o->sizes[0] = 8;
	}
	for (int i = 0; i < o->nsizes; i++) {
		if (o->sizes[i] == 0 || o->sizes[i] > (1ull << 30)) {
			fprintf(stderr, "kinet-perf: size %llu out of range (1 B .. 1 GiB)\n",
				(unsigned long long)o->sizes[i]);
			return -1;
		}
		if (o->mode == PERF_MODE_ITER && o->sizes[i] > 4096) {
			fprintf(stderr, "kinet-perf: iter mode puts at most 4 KiB\n");
			return -1;
		}
	}
	if (o->mode == PERF_MODE_PINGPONG) {
		if (o->op != PERF_OP_WRITE && o->op != PERF_OP_PUT_SIGNAL) {
			fprintf(stderr, "kinet-perf: pingpong plays write or put_signal\n");
			return -1;
		}
		if (o->nranks) {
			fprintf(stderr,
				"kinet-perf: pingpong runs in one process (--peer-gpu D for two GPUs)\n");
			return -1;
		}
		/* Both sides are device code; the host has no part to play. */
		o->initiator = PERF_INIT_GPU;
	}
	if (o->mode == PERF_MODE_LAT || o->mode == PERF_MODE_PINGPONG) {
		/* One poster: latency of one operation at a time. */
		o->threads = o->blocks = o->qps = 1;
	} else if (o->mode == PERF_MODE_ITER) {
		/* One block computes; its thread 0 puts.  -t sets the block. */
		if (!threads_set)
			o->threads = 256;
		o->blocks = o->qps = 1;
		if (o->op != PERF_OP_WRITE) {
			fprintf(stderr, "kinet-perf: iter mode measures compute + put (write) + wait\n");
			return -1;
		}
	}
	if (o->group != PERF_GROUP_THREAD) {
		bool iter_block = o->mode == PERF_MODE_ITER && o->group == PERF_GROUP_BLOCK;
		if (o->mode != PERF_MODE_BW && o->mode != PERF_MODE_RATE && !iter_block) {
			fprintf(stderr,
				"kinet-perf: --group %s is for --bw and --rate (iter: --group block)\n",
				group_names[o->group]);
			return -1;
		}
		if (o->op != PERF_OP_WRITE && o->op != PERF_OP_READ && o->op != PERF_OP_PUT_SIGNAL) {
			fprintf(stderr,
				"kinet-perf: --group %s measures write, read and put_signal, not %s\n",
				group_names[o->group], op_names[o->op]);
			return -1;
		}
		/* A warp form wants all 32 lanes (an emulated warp is one thread). */
		if (o->group == PERF_GROUP_WARP && !o->emulated && o->threads % 32) {
			fprintf(stderr,
				"kinet-perf: --group warp needs --threads a multiple of 32 (got %d)\n",
				o->threads);
			return -1;
		}
	}
	if (o->window > (int)o->sq_depth)
		o->window = (int)o->sq_depth;
	return 0;
}

long perf_iters_for(const struct perf_opts *o, uint64_t size)
{
	if (o->iters)
		return o->iters;
	switch (o->mode) {
	case PERF_MODE_LAT:
	case PERF_MODE_PINGPONG:
		return o->emulated ? 2000 : 10000;
	case PERF_MODE_ITER:
		return o->emulated ? 300 : 2000;
	default: {
		/* Enough bytes for a steady state, not minutes at large sizes. */
		uint64_t budget = (o->emulated ? 64ull : 512ull) << 20;
		uint64_t n = budget / size / (uint64_t)perf_units(o);
		if (n < 32)
			n = 32;
		if (n > 5000)
			n = 5000;
		return (long)n;
	}
	}
}

long perf_warmup_for(const struct perf_opts *o, uint64_t size)
{
	if (o->warmup >= 0)
		return o->warmup;
	long n = perf_iters_for(o, size) / 10;
	return n < 8 ? 8 : n;
}
