/*
 * kinet-perf: shared declarations of the benchmark's parts.
 *
 *   opts.c      command line (perftest-like) into struct perf_opts
 *   stats.c     sample statistics (median, percentiles)
 *   report.c    human table, JSON document, machine description
 *   cpu_post.c  CPU-initiated operations (kinet_qp_post_send / kinet_cq_poll)
 *   setup.c     context, QP pairs, registered buffers, the send responder
 *   mem.cu      host/GPU memory, device copies (CUDA or plain C)
 *   floors.cu   physical floors: signalling round trip, copy bandwidth,
 *               launch + sync, small copy + sync
 *   peer_floors.cu  floors between two GPUs of the host (--peer-gpu):
 *               store ping-pongs, peer copies, raw peer store rate
 *   launch.cu   the GPU-initiated modes' host side: arguments, launches
 *   kargs.h     their kernel arguments and entry points
 *   unit.cuh    device code they share: posting units, one operation
 *   lat.cu, bw.cu, iter.cu   device code of each mode (latency,
 *               bandwidth/rate, iteration)
 *   pingpong.cu device code on both sides answering each other
 *   ../kinet_perf.cu  main: runs each (size, initiator) point
 *
 * The .cu files are CUDA when the build has it and are also compiled as C
 * with KINET_HOST_EMU (device code then runs on CPU threads); the .c files
 * are host C in both builds.  Everything here is C linkage.
 */
#ifndef KINET_PERF_H
#define KINET_PERF_H

#include <stddef.h>
#include <stdint.h>

#include "kinet/kinet.h"

#ifdef __cplusplus
extern "C" {
#endif

enum perf_op {
	PERF_OP_WRITE,
	PERF_OP_READ,
	PERF_OP_FETCH_ADD,
	PERF_OP_COMPARE_SWAP,
	PERF_OP_PUT_SIGNAL,
	PERF_OP_SEND,
};

enum perf_mode {
	PERF_MODE_LAT,
	PERF_MODE_BW,
	PERF_MODE_RATE,
	PERF_MODE_ITER,
	PERF_MODE_PINGPONG,
};

/* Who posts in bw/rate: each thread, each warp (the _warp forms), or each
 * block (the _block forms) is one posting unit. */
enum perf_group {
	PERF_GROUP_THREAD,
	PERF_GROUP_WARP,
	PERF_GROUP_BLOCK,
};

enum perf_initiator {
	PERF_INIT_GPU = 1,
	PERF_INIT_CPU = 2,
	PERF_INIT_BOTH = 3,
};

enum perf_mem {
	PERF_MEM_HOST = 0,
	PERF_MEM_GPU = 1,
};

#define PERF_MAX_SIZES 64
#define PERF_MAX_WINDOW 256
/* CPU threads that play GPU threads under emulation (and CPU posters). */
#define PERF_MAX_EMU_THREADS 256

struct perf_opts {
	enum perf_op op;
	enum perf_mode mode;
	uint64_t sizes[PERF_MAX_SIZES];
	int nsizes;
	int initiator; /* enum perf_initiator bits */
	int threads;   /* per block */
	int blocks;
	int qps;
	int engine_threads;
	/* --engine-threads 1,2,4: the whole run once per count (a context
	 * each); nengines 0: one run with engine_threads. */
	int engine_list[16];
	int nengines;
	enum perf_group group; /* bw, rate: posting unit (GPU-initiated) */
	enum kinet_db_mode db_mode;
	int sharing; /* enum kinet_qp_sharing, or -1: derived from the layout */
	enum perf_mem src_mem, dst_mem;
	long iters;	 /* 0: default of the mode and size */
	long warmup;	 /* -1: default */
	int window;	 /* outstanding operations per thread (bw, rate) */
	int inline_mode; /* -1 auto (writes <= 28 B inline), 0 off, 1 on */
	int json;
	int floors;
	int compute_reps; /* iter mode: passes of arithmetic over the buffer */
	int compute_n;	  /* iter mode: floats in the buffer */
	uint32_t sq_depth;
	uint32_t stage_bytes; /* kinet_qp_attr.stage_bytes (0: the library's default) */
	const char *command;  /* the command line, for the report */
	int emulated;	      /* device code runs on CPU threads */
	const char *emu_reason;
	/* Two ranks (KINET_RANK/KINET_NRANKS = 2, e.g. under kinetrun): rank 0
	 * initiates, rank 1 is the target.  nranks 0: loopback in one process. */
	int nranks, rank, local_rank;
	/* CUDA device of the initiator (loopback: 0; two ranks: local_rank %
	 * count).  peer_gpu >= 0 (loopback only): the target side's context
	 * and buffers on that device; -1: the target shares the initiator's. */
	int gpu;
	int peer_gpu;
};

void perf_opts_defaults(struct perf_opts *o);
/* kinet-perf eth (eth.c): the Ethernet echo client; argv[0] is "eth". */
int perf_eth_main(int argc, char **argv);
/* 0, 1 when --help was printed, -1 on a usage error (printed). */
int perf_opts_parse(struct perf_opts *o, int argc, char **argv);
const char *perf_op_name(enum perf_op op);
const char *perf_mode_name(enum perf_mode m);
const char *perf_mem_name(enum perf_mem m);
const char *perf_db_name(enum kinet_db_mode m);
const char *perf_sharing_name(int s);
const char *perf_group_name(enum perf_group g);
/* GPU posting units of bw/rate: threads, warps (ceil(threads / 32) per
 * block) or blocks; ops = units x iters. */
uint32_t perf_units(const struct perf_opts *o);
/* Iterations and warm-up for one size, from the options or the defaults. */
long perf_iters_for(const struct perf_opts *o, uint64_t size);
long perf_warmup_for(const struct perf_opts *o, uint64_t size);

/* ---- statistics ---- */

struct perf_stats {
	uint64_t n;
	double min, p5, median, p95, max, mean; /* microseconds */
};
/* Sorts ns[0..n) in place and fills s (microseconds). */
void perf_stats_ns(uint64_t *ns, uint64_t n, struct perf_stats *s);
double perf_now_us(void);
uint64_t perf_now_ns(void);

/* ---- results ---- */

struct perf_result {
	enum perf_op op;
	enum perf_mode mode;
	int initiator;	     /* PERF_INIT_GPU or PERF_INIT_CPU */
	const char *variant; /* iter mode: "gpu-persistent", "cpu-kernel-boundary", "compute-only" */
	uint64_t size;
	int threads, blocks, qps, engine_threads;
	enum perf_group group; /* thread for the CPU-initiated and lat/iter */
	enum kinet_db_mode db_mode;
	int sharing;
	enum perf_mem src_mem, dst_mem;
	int inl;
	long iters, warmup;
	int window;
	int status; /* 0, or the errno of the first failure */
	char error[128];
	struct perf_stats lat; /* per operation (lat), per iteration (iter) */
	int have_lat;
	double elapsed_us; /* timed window */
	double bytes, ops;
	double bw_gbs;	  /* 1e9 bytes per second */
	double mops;	  /* 1e6 operations per second */
	const char *path; /* data path of the initiator QPs; NULL: not known */
	/* The engine threads over the run of the point (bw, rate; from
	 * kinet_ctx_engine_stats before and after): the busiest thread's
	 * share of the time in passes that found work, the mean share, and
	 * busy engine time per WQE executed; lat rows too.  have_engine 0: not
	 * measured. */
	int have_engine;
	double eng_busy_max, eng_busy_mean, eng_ns_per_wqe;
	double eng_spin, eng_yield, eng_sleep; /* idle policy: mean shares of the time */
	double eng_wqes;
};

/* Floors between GPU A (the initiator's) and GPU B (--peer-gpu), measured
 * in the same run; see peer_floors.cu for how. */
struct perf_peer_floors {
	int measured;
	int gpu_a, gpu_b;
	int p2p;			/* peer access both ways: the store floors exist */
	int rev;			/* copies run B -> A (reads move data that way) */
	const char *note;		/* why a floor is missing, or NULL */
	struct perf_stats store_rtt;	/* a: st.relaxed.sys flag ping-pong, round trip */
	struct perf_stats fence_rtt;	/* b: data, fence.sc.sys, flag ping-pong, round trip */
	int store_failed, fence_failed; /* the other side did not answer in time */
	int ncopy;
	uint64_t copy_size[PERF_MAX_SIZES];
	double memcpy_gbs[PERF_MAX_SIZES]; /* c: cudaMemcpyPeerAsync */
	double kcopy_gbs[PERF_MAX_SIZES];  /* d: kernel copy, 16-byte accesses */
	int copy_blocks, copy_threads;
	/* d copies copy_units x size bytes per round (--group block: one
	 * round of the benchmark's bytes, units x size), else size. */
	uint32_t copy_units;
	int rate_blocks, rate_threads;
	double store_mops; /* e: 8-byte peer stores, 1e6 per second */
	int rate_failed;
};

/* Two ranks (rank_floors.c): the handoffs of a remote write between the
 * processes, with bare shared words; measured by rank 0. */
struct perf_rank_floors {
	int measured;
	int yield;		       /* waiters yielded: fewer cores than threads */
	struct perf_stats process_rtt; /* rank 0 <-> rank 1, main threads */
	struct perf_stats handoff_rtt; /* thread -> thread -> rank 1 -> thread -> thread */
	char note[128];		       /* why not measured */
};

struct perf_floors {
	int measured;
	const char *rtt_label, *launch_label, *small_copy_label, *copy_label;
	struct perf_stats rtt;	      /* signalling round trip */
	struct perf_stats launch;     /* empty kernel launch + synchronize */
	struct perf_stats small_copy; /* 8-byte copy + synchronize */
	int ncopy;
	uint64_t copy_size[PERF_MAX_SIZES];
	double copy_gbs[PERF_MAX_SIZES];     /* cudaMemcpyAsync (or memcpy) */
	double cpu_copy_gbs[PERF_MAX_SIZES]; /* memcpy, host to host (the soft NIC's path) */
	struct perf_peer_floors peer;
	struct perf_rank_floors ranks;
};

struct perf_report {
	const struct perf_opts *o;
	const char *provider;
	const char *device;	 /* GPU name or "host emulation" */
	const char *peer_device; /* --peer-gpu: that GPU's name, else NULL */
	struct perf_floors floors;
	struct perf_result *res;
	int nres, cap;
};

struct perf_result *perf_report_add(struct perf_report *r);
void perf_report_table(const struct perf_report *r, void *file);
void perf_report_json(const struct perf_report *r, void *file);
void perf_report_free(struct perf_report *r);

/* ---- memory (mem.cu) ---- */

/* Host memory is pinned and mapped into the GPU (one address under UVA). */
void *perf_alloc(enum perf_mem m, size_t len);
void perf_free(enum perf_mem m, void *p);
/* Copies between host and any perf memory (or device descriptors). */
int perf_copy_to(void *dst, const void *src, size_t len);
int perf_copy_from(void *dst, const void *src, size_t len);
int perf_fill(enum perf_mem m, void *p, int byte, size_t len);
/* 1 when the build has CUDA and a GPU is there; name of the current device
 * (device 0 unless perf_gpu_select chose another). */
int perf_gpu_present(char *name, size_t len);
int perf_gpu_sm_count(void);
/* Makes device local_rank % (device count) current; returns it (0 without
 * CUDA or GPUs). */
int perf_gpu_select(int local_rank);
/* CUDA builds: 0 for cudaSuccess, else -EIO with "what: CUDA's message"
 * in err (the error cleared, so later calls see their own). */
int perf_cuda_check(int status, const char *what, char *err, size_t errlen);
/* CUDA devices (0 without CUDA); name of device dev. */
int perf_gpu_count(void);
int perf_gpu_name(int dev, char *name, size_t len);
/* Makes dev current; the device that was (-1 without CUDA). */
int perf_gpu_use(int dev);
/* perf_alloc/perf_free with device dev current (dev < 0: the current one). */
void *perf_alloc_on(int dev, enum perf_mem m, size_t len);
void perf_free_on(int dev, enum perf_mem m, void *p);

/* ---- setup (setup.c) ---- */

struct perf_side {
	struct kinet_cq *scq, *rcq;
	struct kinet_qp *qp;
	struct kinet_dev_qp *dev; /* exported (GPU initiator only) */
};

struct kinet_boot;

struct perf_env {
	const struct perf_opts *o;
	struct kinet_ctx *ctx;
	/* The target side's context: ctx, or with --peer-gpu its own on that
	 * GPU (the library leaves that device current after its calls; setup
	 * makes the initiator's current again). */
	struct kinet_ctx *tgt_ctx;
	/* Two ranks: the job (rank 0 holds only ini[], rank 1 only tgt[] and
	 * dst); NULL for loopback. */
	struct kinet_boot *boot;
	int peer_failed; /* setup failed because the other rank's did */
	int nqps;
	int gpu_init; /* QPs exported for device code */
	struct perf_side *ini, *tgt;
	uint64_t size;
	int inl;
	/* buffers: per QP dst_stride bytes, slots_per_qp slots of slot
	 * bytes each (a posting unit's own: unit k of a QP uses slot k) */
	uint8_t *src, *dst;
	size_t src_stride, dst_stride, src_len, dst_len;
	size_t slot, slots_per_qp;
	struct kinet_mr *src_mr, *dst_mr;
	uint64_t *results; /* old values of atomics: one word per poster */
	struct kinet_mr *res_mr;
	uint64_t *scratch; /* old values of put_signal's add posted from the CPU */
	struct kinet_mr *scratch_mr;
	size_t nposters;
	int waiter_spins; /* cpu_post.c: 1 a poster spins on its CQ, -1 yields, 0 not known yet */
	uint64_t sig_off; /* signal word: dst + q*dst_stride + sig_off */
	uint64_t rdst;	  /* dst as the initiator targets it (the peer's address) */
	uint32_t rkey;	  /* and its rkey */
	struct kinet_dev_qp **dev_qps; /* device array of exported QPs */
	/* send responder: a host thread keeping receives posted */
	void *responder;
};

int perf_env_open_ctx(struct perf_env *e, const struct perf_opts *o);
/* QPs, buffers, connect, export; nposters: units that post (each gets a
 * slot of its QP's part of the buffers).  With two
 * ranks a collective (both ranks set up the same point; either fails, both
 * do): rank 0 gets initiator QPs and sources, rank 1 target QPs, dst and
 * the send responder. */
int perf_env_setup(struct perf_env *e, uint64_t size, int gpu_init, size_t nposters, char *err,
		   size_t errlen);
/* Two ranks: the barrier that ends a point that was set up (rank 1 waits
 * there while rank 0 measures); 0 in loopback. */
int perf_env_done(struct perf_env *e);
void perf_env_teardown(struct perf_env *e);
void perf_env_close(struct perf_env *e);
int perf_env_sharing(const struct perf_opts *o);
/* Data path of the initiator QPs of a point that is set up ("engine",
 * "peer", "mixed"), or NULL when the library does not say. */
const char *perf_env_path(const struct perf_env *e);

/* ---- CPU-initiated (cpu_post.c) ---- */

int perf_cpu_lat(struct perf_env *e, long warmup, long iters, uint64_t *samples, char *err, size_t errlen);
int perf_cpu_bw(struct perf_env *e, long warmup, long iters, int window, double *elapsed_us, char *err,
		size_t errlen);
/* One signalled write of e->size from QP 0's slot, waited for (iter mode). */
int perf_cpu_put_wait(struct perf_env *e);
/* WQEs one operation takes (put_signal: 2). */
int perf_wqes_per_op(enum perf_op op);

/* ---- floors (floors.cu) ---- */

void perf_floors_measure(const struct perf_opts *o, struct perf_floors *f);
/* rank_floors.c: both ranks of a two-rank run call it at the same point. */
struct kinet_boot;
void perf_rank_floors_measure(const struct perf_opts *o, struct kinet_boot *boot, struct perf_rank_floors *f);
/* peer_floors.cu: GPU o->gpu -> GPU o->peer_gpu (CUDA build; no-op else). */
void perf_peer_floors_measure(const struct perf_opts *o, struct perf_peer_floors *f);

/* ---- GPU-initiated modes (launch.cu) ---- */

int perf_gpu_lat(struct perf_env *e, long warmup, long iters, uint64_t *samples, double *total_us, char *err,
		 size_t errlen);
int perf_gpu_bw(struct perf_env *e, long warmup, long iters, int window, double *elapsed_us, char *err,
		size_t errlen);
/* pingpong.cu: rounds of A -> B -> A from device code on both sides; A's
 * round trips in samples (ns). */
int perf_pingpong(struct perf_env *e, long warmup, long iters, uint64_t *samples, char *err, size_t errlen);
/* Iteration: variant 0 GPU persistent (compute+put+wait; phase: the
 * put + wait part, may be NULL), 1 CPU kernel boundary (compute kernel,
 * host posts and waits), 2 compute only, 3 compute + the fence that
 * invalidates L1 (fence.acq_rel.sys by thread 0). */
int perf_iter(struct perf_env *e, int variant, long warmup, long iters, uint64_t *samples, uint64_t *phase,
	      char *err, size_t errlen);

#ifdef __cplusplus
}
#endif

#endif /* KINET_PERF_H */
