/*
 * kinet-perf output: a table for people, a JSON document for scripts
 * (bench/report.py).  Every result is printed beside the floor of the same
 * run: latencies against the signalling round trip, bandwidths against the
 * copy bandwidth of the same path; with --peer-gpu, against the floors
 * between the two GPUs where the data goes there (vs_peer_floor).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "perf.h"

#ifndef KINET_VERSION
#define KINET_VERSION "unknown"
#endif
#ifndef KINET_PERF_COMMIT
#define KINET_PERF_COMMIT ""
#endif

struct perf_result *perf_report_add(struct perf_report *r)
{
	if (r->nres == r->cap) {
		int cap = r->cap ? r->cap * 2 : 16;
		struct perf_result *n = realloc(r->res, (size_t)cap * sizeof(*n));
		if (!n)
			return NULL;
		r->res = n;
		r->cap = cap;
	}
	struct perf_result *x = &r->res[r->nres++];
	memset(x, 0, sizeof(*x));
	return x;
}

void perf_report_free(struct perf_report *r)
{
	free(r->res);
	r->res = NULL;
	r->nres = r->cap = 0;
}

static void cpu_model(char *buf, size_t len)
{
	FILE *f = fopen("/proc/cpuinfo", "r");
	char line[512];
	snprintf(buf, len, "unknown");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, "model name", 10)) {
			char *c = strchr(line, ':');
			if (c) {
				c++;
				while (*c == ' ' || *c == '\t')
					c++;
				c[strcspn(c, "\n")] = 0;
				snprintf(buf, len, "%s", c);
			}
			break;
		}
	}
	fclose(f);
}

static const char *commit(void)
{
	const char *c = getenv("KINET_COMMIT");
	return c && *c ? c : KINET_PERF_COMMIT;
}

/* Copy floor of the same size (bandwidth results are compared with it). */
static double copy_floor(const struct perf_floors *f, uint64_t size, int cpu)
{
	for (int i = 0; i < f->ncopy; i++)
		if (f->copy_size[i] == size)
			return cpu ? f->cpu_copy_gbs[i] : f->copy_gbs[i];
	return 0;
}

static double peer_copy_floor(const struct perf_peer_floors *p, uint64_t size, int kernel)
{
	for (int i = 0; i < p->ncopy; i++)
		if (p->copy_size[i] == size)
			return kernel ? p->kcopy_gbs[i] : p->memcpy_gbs[i];
	return 0;
}

static int brings_value_back(enum perf_op op)
{
	return op == PERF_OP_READ || op == PERF_OP_FETCH_ADD || op == PERF_OP_COMPARE_SWAP;
}

/* --peer-gpu, with the target's buffer on GPU B (else the data does not go
 * between the GPUs and the ordinary floors stay):
 *  - lat, GPU-initiated: kinet-perf's latency is one operation from its
 *    post to its completion at the initiator, one at a time, not a
 *    ping-pong.  A write, put_signal or send is complete once its data is
 *    at B and ordered there (on the peer path: stores, fence.sc.sys, then
 *    the signal), one leg of the store+fence+store ping-pong: compared
 *    with half that round trip.  read, fetch_add and compare_swap bring a
 *    value back from B, a round trip: compared with the bare store
 *    ping-pong's round trip.
 *  - lat, CPU-initiated: the host posts and polls; no GPU store path to
 *    compare with, so the GPU<->CPU round trip as without --peer-gpu.
 *  - bw (both buffers on GPUs): GPU-initiated against the kernel copy
 *    with the run's grid, CPU-initiated against cudaMemcpyPeerAsync (what
 *    a host program would call), same size and direction.
 *  - rate: operations per second against the raw 8-byte peer store rate,
 *    whoever posts (it bounds small writes to B either way).
 *  - pingpong: the round trip against the floor's ping-pong of the same
 *    shape: write (a bare 8-byte put each way) against the bare store
 *    ping-pong, put_signal (data, fence, signal each way) against store +
 *    fence + store. */
static double vs_peer_floor(const struct perf_report *r, const struct perf_result *x, const char **what)
{
	const struct perf_peer_floors *p = &r->floors.peer;
	if (!p->measured || x->dst_mem != PERF_MEM_GPU)
		return 0;
	if (x->mode == PERF_MODE_PINGPONG && x->have_lat) {
		const struct perf_stats *fl = x->op == PERF_OP_PUT_SIGNAL ? &p->fence_rtt : &p->store_rtt;
		if (fl->median > 0) {
			*what = x->op == PERF_OP_PUT_SIGNAL ? "rtt_median/peer_fence_rtt_median"
							    : "rtt_median/peer_store_rtt_median";
			return x->lat.median / fl->median;
		}
	} else if (x->mode == PERF_MODE_LAT && x->have_lat && x->initiator == PERF_INIT_GPU) {
		if (brings_value_back(x->op) && p->store_rtt.median > 0) {
			*what = "lat_median/peer_store_rtt_median";
			return x->lat.median / p->store_rtt.median;
		}
		if (!brings_value_back(x->op) && p->fence_rtt.median > 0) {
			*what = "lat_median/(peer_fence_rtt_median/2)";
			return x->lat.median / (p->fence_rtt.median / 2);
		}
	} else if (x->mode == PERF_MODE_BW && x->bw_gbs > 0 && x->src_mem == PERF_MEM_GPU) {
		int gpu = x->initiator == PERF_INIT_GPU;
		double fl = peer_copy_floor(p, x->size, gpu);
		if (fl > 0) {
			*what = gpu ? "bw/peer_kernel_copy_bw" : "bw/peer_memcpy_bw";
			return x->bw_gbs / fl;
		}
	} else if (x->mode == PERF_MODE_RATE && x->mops > 0 && p->store_mops > 0) {
		*what = "mops/peer_store_mops";
		return x->mops / p->store_mops;
	}
	return 0;
}

/* The floor a result is compared with, and how many times it is. */
static double vs_floor(const struct perf_report *r, const struct perf_result *x, const char **what)
{
	const struct perf_floors *f = &r->floors;
	*what = NULL;
	if (!f->measured || x->status)
		return 0;
	if (r->o->peer_gpu >= 0) {
		double v = vs_peer_floor(r, x, what);
		if (*what)
			return v;
	}
	if (x->mode == PERF_MODE_LAT && x->have_lat && f->ranks.measured && f->ranks.handoff_rtt.median > 0) {
		/* Two ranks: the chain of handoffs a remote write makes. */
		*what = "lat_median/rank_handoff_rtt_median";
		return x->lat.median / f->ranks.handoff_rtt.median;
	}
	if (x->mode == PERF_MODE_LAT && x->have_lat && f->rtt.median > 0) {
		*what = "lat_median/rtt_median";
		return x->lat.median / f->rtt.median;
	}
	if ((x->mode == PERF_MODE_BW || x->mode == PERF_MODE_RATE) && x->bw_gbs > 0) {
		/* Against cudaMemcpyAsync of the same size and direction (the
		 * JSON also carries memcpy's, the soft NIC's host-to-host path). */
		double fl = copy_floor(f, x->size, 0);
		if (fl > 0) {
			*what = "bw/copy_bw";
			return x->bw_gbs / fl;
		}
	}
	return 0;
}

static const char *init_name(int i)
{
	return i == PERF_INIT_GPU ? "gpu" : "cpu";
}

static void table_stats(FILE *f, const char *name, const struct perf_stats *s)
{
	fprintf(f, "#   %-44s median %9.3f us  p5 %9.3f  p95 %9.3f  min %9.3f  max %9.3f  (n=%llu)\n", name,
		s->median, s->p5, s->p95, s->min, s->max, (unsigned long long)s->n);
}

/* The data path the results of this initiator (0: any) had in common,
 * "mixed", or NULL when none is known. */
static const char *data_path(const struct perf_report *r, int initiator)
{
	const char *path = NULL;
	for (int i = 0; i < r->nres; i++) {
		const struct perf_result *x = &r->res[i];
		if (!x->path || (initiator && x->initiator != initiator))
			continue;
		if (path && strcmp(path, x->path))
			return "mixed";
		path = x->path;
	}
	return path;
}

static void table_data_path(FILE *f, const struct perf_report *r)
{
	const char *all = data_path(r, 0);
	int q = r->o->qps;
	if (!all)
		fprintf(f, "# data path: unknown (this kinet does not report it)\n");
	else if (strcmp(all, "mixed"))
		fprintf(f, "# data path: %s (%d QP%s)\n", all, q, q == 1 ? "" : "s");
	else
		/* Only device code can take the peer path: the initiators may differ. */
		fprintf(f, "# data path: gpu-initiated %s, cpu-initiated %s (%d QP%s each)\n",
			data_path(r, PERF_INIT_GPU) ? data_path(r, PERF_INIT_GPU) : "-",
			data_path(r, PERF_INIT_CPU) ? data_path(r, PERF_INIT_CPU) : "-", q,
			q == 1 ? "" : "s");
}

static void table_peer_floors(FILE *f, const struct perf_report *r)
{
	const struct perf_peer_floors *p = &r->floors.peer;
	int from = p->rev ? p->gpu_b : p->gpu_a, to = p->rev ? p->gpu_a : p->gpu_b;
	char label[64];
	fprintf(f, "# peer floors (GPU %d -> GPU %d, same run): %s\n", p->gpu_a, p->gpu_b,
		p->p2p ? "peer access both ways" : "no peer access");
	if (p->p2p) {
		if (p->store_failed)
			fprintf(f, "#   %-44s FAILED\n", "raw store ping-pong, round trip");
		else
			table_stats(f, "raw store ping-pong, round trip", &p->store_rtt);
		if (p->fence_failed)
			fprintf(f, "#   %-44s FAILED\n", "store+fence+store ping-pong, round trip");
		else
			table_stats(f, "store+fence+store ping-pong, round trip", &p->fence_rtt);
	}
	snprintf(label, sizeof(label), "cudaMemcpyPeerAsync GPU %d -> GPU %d", from, to);
	for (int i = 0; i < p->ncopy; i++) {
		fprintf(f, "#   %-44s %10llu B  %8.2f GB/s", label, (unsigned long long)p->copy_size[i],
			p->memcpy_gbs[i]);
		if (p->p2p && p->copy_units > 1)
			fprintf(f, "   kernel copy %dx%d of %u x size %8.2f GB/s", p->copy_blocks,
				p->copy_threads, p->copy_units, p->kcopy_gbs[i]);
		else if (p->p2p)
			fprintf(f, "   kernel copy %dx%d %8.2f GB/s", p->copy_blocks, p->copy_threads,
				p->kcopy_gbs[i]);
		fputc('\n', f);
	}
	if (p->p2p) {
		snprintf(label, sizeof(label), "raw 8 B peer stores, %dx%d threads", p->rate_blocks,
			 p->rate_threads);
		if (p->rate_failed)
			fprintf(f, "#   %-44s FAILED\n", label);
		else
			fprintf(f, "#   %-44s %10.2f M stores/s\n", label, p->store_mops);
	}
	if (p->note)
		fprintf(f, "#   note: %s\n", p->note);
	fprintf(f,
		"# vs_floor with --peer-gpu (target buffer on GPU %d): gpu lat of write, put_signal, send "
		"/ half the store+fence+store round trip, of read and atomics / the raw store round "
		"trip; gpu bw / kernel copy, cpu bw / cudaMemcpyPeerAsync; rate / raw store rate\n",
		p->gpu_b);
}

void perf_report_table(const struct perf_report *r, void *file)
{
	FILE *f = (FILE *)file;
	const struct perf_opts *o = r->o;
	char cpu[256];
	cpu_model(cpu, sizeof(cpu));
	if (o->mode == PERF_MODE_BW || o->mode == PERF_MODE_RATE)
		fprintf(f, "# kinet-perf %s (%s, group %s: %u GPU posting unit%s), provider %s\n",
			perf_op_name(o->op), perf_mode_name(o->mode), perf_group_name(o->group),
			perf_units(o), perf_units(o) == 1 ? "" : "s", r->provider);
	else
		fprintf(f, "# kinet-perf %s (%s), provider %s\n", perf_op_name(o->op),
			perf_mode_name(o->mode), r->provider);
	fprintf(f, "# device: %s\n", r->device);
	if (o->emulated)
		fprintf(f, "# HOST EMULATION: device code runs on CPU threads (%s); floors are CPU floors\n",
			o->emu_reason ? o->emu_reason : "no GPU");
	fprintf(f, "# cpu: %s, %ld cores\n", cpu, sysconf(_SC_NPROCESSORS_ONLN));
	if (o->nranks == 2)
		fprintf(f, "# two ranks (kinetrun): initiator QPs in rank 0 (this one), target QPs and "
			   "destination in rank 1\n");
	else if (o->peer_gpu >= 0)
		fprintf(f,
			"# loopback, two GPUs: initiator QPs and source on GPU %d, target QPs and "
			"destination "
			"on GPU %d (%s), a context each\n",
			o->gpu, o->peer_gpu, r->peer_device ? r->peer_device : "?");
	else
		fprintf(f, "# loopback: initiator and target QPs connected in this process\n");
	table_data_path(f, r);
	if (r->floors.measured) {
		const struct perf_floors *fl = &r->floors;
		fprintf(f, "# floors (same run):\n");
		table_stats(f, fl->rtt_label, &fl->rtt);
		table_stats(f, fl->launch_label, &fl->launch);
		table_stats(f, fl->small_copy_label, &fl->small_copy);
		for (int i = 0; i < fl->ncopy; i++)
			fprintf(f, "#   %-44s %10llu B  %8.2f GB/s   memcpy host->host %8.2f GB/s\n",
				fl->copy_label, (unsigned long long)fl->copy_size[i], fl->copy_gbs[i],
				fl->cpu_copy_gbs[i]);
		if (fl->peer.measured)
			table_peer_floors(f, r);
		if (fl->ranks.measured) {
			const char *how = fl->ranks.yield ? "waiters yield" : "waiters spin";
			char label[64];
			snprintf(label, sizeof(label), "rank 0<->rank 1 round trip (%s)", how);
			table_stats(f, label, &fl->ranks.process_rtt);
			snprintf(label, sizeof(label), "remote write's 4 handoffs (%s)", how);
			table_stats(f, label, &fl->ranks.handoff_rtt);
		} else if (fl->ranks.note[0]) {
			fprintf(f, "#   two-rank floors not measured: %s\n", fl->ranks.note);
		}
	}
	fprintf(f,
		"%-12s %-4s %-4s %-20s %10s %4s %4s %4s %3s %-4s %-4s %-4s %10s %10s %10s %10s %10s %10s "
		"%9s %9s %7s\n",
		"op", "mode", "init", "variant", "bytes", "thr", "blk", "qps", "eng", "db", "src", "dst",
		"iters", "median_us", "p5_us", "p95_us", "GB/s", "Mops/s", "vs_floor", "eng_busy", "ns/wqe");
	for (int i = 0; i < r->nres; i++) {
		const struct perf_result *x = &r->res[i];
		const char *what;
		double ratio = vs_floor(r, x, &what);
		if (x->status) {
			fprintf(f, "%-12s %-4s %-4s %-20s %10llu  FAILED: %s\n", perf_op_name(x->op),
				perf_mode_name(x->mode), init_name(x->initiator),
				x->variant ? x->variant : "-", (unsigned long long)x->size, x->error);
			continue;
		}
		fprintf(f, "%-12s %-4s %-4s %-20s %10llu %4d %4d %4d %3d %-4s %-4s %-4s %10ld ",
			perf_op_name(x->op), perf_mode_name(x->mode), init_name(x->initiator),
			x->variant ? x->variant : "-", (unsigned long long)x->size, x->threads, x->blocks,
			x->qps, x->engine_threads, perf_db_name(x->db_mode), perf_mem_name(x->src_mem),
			perf_mem_name(x->dst_mem), x->iters);
		/* bw and rate runs time the whole batch: no per-operation latency. */
		if (x->have_lat)
			fprintf(f, "%10.3f %10.3f %10.3f ", x->lat.median, x->lat.p5, x->lat.p95);
		else
			fprintf(f, "%10s %10s %10s ", "-", "-", "-");
		fprintf(f, "%10.3f %10.3f ", x->bw_gbs, x->mops);
		if (what)
			fprintf(f, "%8.2fx", ratio);
		else
			fprintf(f, "%9s", "-");
		/* The busiest engine thread's share of the time in passes that
		 * found work: near 100% the engine is the limit, well below it
		 * the posters (the GPU side) are. */
		if (x->have_engine)
			fprintf(f, " %8.0f%% %7.0f\n", x->eng_busy_max * 100.0, x->eng_ns_per_wqe);
		else
			fprintf(f, " %9s %7s\n", "-", "-");
	}
	/* iter mode: the comparison the mode exists for. */
	double g = 0, c = 0;
	for (int i = 0; i < r->nres; i++) {
		const struct perf_result *x = &r->res[i];
		if (x->mode != PERF_MODE_ITER || x->status || !x->variant)
			continue;
		if (!strcmp(x->variant, "gpu-persistent"))
			g = x->lat.median;
		else if (!strcmp(x->variant, "cpu-kernel-boundary"))
			c = x->lat.median;
	}
	if (g > 0 && c > 0)
		fprintf(f,
			"# iteration: CPU-initiated (kernel boundary) / GPU-initiated (persistent) = %.2fx\n",
			c / g);
}

static void json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; s && *s; s++) {
		unsigned char ch = (unsigned char)*s;
		if (ch == '"' || ch == '\\')
			fprintf(f, "\\%c", ch);
		else if (ch < 0x20)
			fprintf(f, "\\u%04x", ch);
		else
			fputc(ch, f);
	}
	fputc('"', f);
}

static void json_stats(FILE *f, const char *name, const struct perf_stats *s)
{
	fprintf(f,
		"\"%s\":{\"n\":%llu,\"median\":%.4f,\"p5\":%.4f,\"p95\":%.4f,\"min\":%.4f,\"max\":%.4f,"
		"\"mean\":%.4f}",
		name, (unsigned long long)s->n, s->median, s->p5, s->p95, s->min, s->max, s->mean);
}

static void json_str_or_null(FILE *f, const char *s)
{
	if (s)
		json_str(f, s);
	else
		fputs("null", f);
}

static void json_peer_floors(FILE *f, const struct perf_report *r)
{
	const struct perf_peer_floors *p = &r->floors.peer;
	fprintf(f, "{\"gpu_a\":%d,\"gpu_b\":%d,\"device_b\":", p->gpu_a, p->gpu_b);
	json_str_or_null(f, r->peer_device);
	fprintf(f, ",\"p2p\":%s,\"copy_direction\":\"%s\",\"note\":", p->p2p ? "true" : "false",
		p->rev ? "b_to_a" : "a_to_b");
	json_str_or_null(f, p->note);
	fprintf(f, ",\"labels\":{\"store_rtt\":\"st.relaxed.sys flag ping-pong A<->B, round trip\","
		   "\"fence_rtt\":\"8 B data + fence.sc.sys + flag ping-pong A<->B, round trip\","
		   "\"memcpy\":\"cudaMemcpyPeerAsync\",\"kernel_copy\":\"kernel copy, 16 B accesses, "
		   "grid-stride, copy_grid.kernel_copy_units x size bytes a pass\",\"store_rate\":\"8 B "
		   "st.relaxed.sys per thread, a new peer word each\"},");
	if (p->p2p && !p->store_failed)
		json_stats(f, "store_rtt_us", &p->store_rtt);
	else
		fprintf(f, "\"store_rtt_us\":null");
	fputc(',', f);
	if (p->p2p && !p->fence_failed)
		json_stats(f, "fence_rtt_us", &p->fence_rtt);
	else
		fprintf(f, "\"fence_rtt_us\":null");
	fprintf(f, ",\"copy_grid\":{\"blocks\":%d,\"threads\":%d,\"kernel_copy_units\":%u},\"copy\":[",
		p->copy_blocks, p->copy_threads, p->copy_units ? p->copy_units : 1);
	for (int i = 0; i < p->ncopy; i++) {
		fprintf(f, "%s{\"size\":%llu,\"memcpy_peer_GBs\":%.4f,\"kernel_copy_GBs\":", i ? "," : "",
			(unsigned long long)p->copy_size[i], p->memcpy_gbs[i]);
		if (p->p2p)
			fprintf(f, "%.4f}", p->kcopy_gbs[i]);
		else
			fprintf(f, "null}");
	}
	fprintf(f, "],\"store_rate\":{\"blocks\":%d,\"threads\":%d,\"mops\":", p->rate_blocks,
		p->rate_threads);
	if (p->p2p && !p->rate_failed)
		fprintf(f, "%.4f}}", p->store_mops);
	else
		fprintf(f, "null}}");
}

void perf_report_json(const struct perf_report *r, void *file)
{
	FILE *f = (FILE *)file;
	const struct perf_opts *o = r->o;
	char cpu[256], host[256];
	cpu_model(cpu, sizeof(cpu));
	if (gethostname(host, sizeof(host)))
		snprintf(host, sizeof(host), "unknown");
	host[sizeof(host) - 1] = 0;

	fprintf(f, "{\"tool\":\"kinet-perf\",\"version\":\"%s\",\"commit\":", KINET_VERSION);
	json_str(f, commit());
	fprintf(f, ",\"command\":");
	json_str(f, o->command);
	fprintf(f, ",\"op\":\"%s\",\"mode\":\"%s\",\"group\":\"%s\",\"emulated\":%s,\"emu_reason\":",
		perf_op_name(o->op), perf_mode_name(o->mode), perf_group_name(o->group),
		o->emulated ? "true" : "false");
	json_str(f, o->emulated ? o->emu_reason : "");
	fprintf(f,
		",\"topology\":\"%s\",\"provider\":", o->nranks == 2 ? "two ranks (kinetrun)" : "loopback");
	json_str(f, r->provider);
	fprintf(f, ",\"peer_gpu\":%d,\"data_path\":", o->peer_gpu);
	json_str_or_null(f, data_path(r, 0));
	fprintf(f, ",\"machine\":{\"device\":");
	json_str(f, r->device);
	fprintf(f, ",\"cpu\":");
	json_str(f, cpu);
	fprintf(f, ",\"cores\":%ld,\"hostname\":", sysconf(_SC_NPROCESSORS_ONLN));
	json_str(f, host);
	fprintf(f, "},\"floors\":");
	if (r->floors.measured) {
		const struct perf_floors *fl = &r->floors;
		fprintf(f, "{\"labels\":{\"rtt\":");
		json_str(f, fl->rtt_label);
		fprintf(f, ",\"launch_sync\":");
		json_str(f, fl->launch_label);
		fprintf(f, ",\"small_copy_sync\":");
		json_str(f, fl->small_copy_label);
		fprintf(f, ",\"copy\":");
		json_str(f, fl->copy_label);
		fprintf(f, "},");
		json_stats(f, "rtt_us", &fl->rtt);
		fputc(',', f);
		json_stats(f, "launch_sync_us", &fl->launch);
		fputc(',', f);
		json_stats(f, "small_copy_sync_us", &fl->small_copy);
		fprintf(f, ",\"copy\":[");
		for (int i = 0; i < fl->ncopy; i++)
			fprintf(f, "%s{\"size\":%llu,\"copy_GBs\":%.4f,\"memcpy_GBs\":%.4f}", i ? "," : "",
				(unsigned long long)fl->copy_size[i], fl->copy_gbs[i], fl->cpu_copy_gbs[i]);
		fprintf(f, "],\"peer\":");
		if (fl->peer.measured)
			json_peer_floors(f, r);
		else
			fprintf(f, "null");
		fprintf(f, ",\"ranks\":");
		if (fl->ranks.measured) {
			fprintf(f, "{\"waiters_yield\":%s,", fl->ranks.yield ? "true" : "false");
			json_stats(f, "process_rtt_us", &fl->ranks.process_rtt);
			fputc(',', f);
			json_stats(f, "handoff_rtt_us", &fl->ranks.handoff_rtt);
			fputc('}', f);
		} else {
			fprintf(f, "null");
		}
		fputc('}', f);
	} else {
		fprintf(f, "null");
	}
	fprintf(f, ",\"results\":[");
	for (int i = 0; i < r->nres; i++) {
		const struct perf_result *x = &r->res[i];
		const char *what;
		double ratio = vs_floor(r, x, &what);
		fprintf(f, "%s{\"op\":\"%s\",\"mode\":\"%s\",\"initiator\":\"%s\",\"variant\":", i ? "," : "",
			perf_op_name(x->op), perf_mode_name(x->mode), init_name(x->initiator));
		json_str(f, x->variant ? x->variant : "");
		fprintf(f,
			",\"size\":%llu,\"group\":\"%s\",\"threads\":%d,\"blocks\":%d,\"qps\":%d,\"engine_"
			"threads\":%d,\"db\":"
			"\"%s\","
			"\"sharing\":\"%s\",\"src_mem\":\"%s\",\"dst_mem\":\"%s\",\"inline\":%s,\"iters\":%"
			"ld,"
			"\"warmup\":%ld,\"window\":%d,\"status\":%d,\"error\":",
			(unsigned long long)x->size, perf_group_name(x->group), x->threads, x->blocks, x->qps,
			x->engine_threads, perf_db_name(x->db_mode), perf_sharing_name(x->sharing),
			perf_mem_name(x->src_mem), perf_mem_name(x->dst_mem), x->inl ? "true" : "false",
			x->iters, x->warmup, x->window, x->status);
		json_str(f, x->error);
		fprintf(f, ",\"data_path\":");
		json_str_or_null(f, x->path);
		fputc(',', f);
		if (x->have_lat) {
			json_stats(f, "lat_us", &x->lat);
			fputc(',', f);
		}
		fprintf(f, "\"elapsed_us\":%.3f,\"bytes\":%.0f,\"ops\":%.0f,\"bw_GBs\":%.4f,\"mops\":%.4f",
			x->elapsed_us, x->bytes, x->ops, x->bw_gbs, x->mops);
		if (what)
			fprintf(f, ",\"vs_floor\":{\"what\":\"%s\",\"ratio\":%.4f}", what, ratio);
		if (x->have_engine)
			fprintf(f,
				",\"engine\":{\"busy_max\":%.4f,\"busy_mean\":%.4f,\"ns_per_wqe\":%.1f,"
				"\"wqes\":%.0f,\"spin\":%.4f,\"yield\":%.4f,\"sleep\":%.4f}",
				x->eng_busy_max, x->eng_busy_mean, x->eng_ns_per_wqe, x->eng_wqes,
				x->eng_spin, x->eng_yield, x->eng_sleep);
		fputc('}', f);
	}
	fprintf(f, "]}\n");
}
