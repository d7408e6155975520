/*
 * kinet-perf output: a table for people, a JSON document for scripts
 * (bench/report.py).  Every result is printed beside the floor of the same
 * run: latencies against the signalling round trip, bandwidths against the
 * copy bandwidth of the same path.
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

/* The floor a result is compared with, and how many times it is. */
static double vs_floor(const struct perf_report *r, const struct perf_result *x, const char **what)
{
	const struct perf_floors *f = &r->floors;
	*what = NULL;
	if (!f->measured || x->status)
		return 0;
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

void perf_report_table(const struct perf_report *r, void *file)
{
	FILE *f = (FILE *)file;
	const struct perf_opts *o = r->o;
	char cpu[256];
	cpu_model(cpu, sizeof(cpu));
	fprintf(f, "# kinet-perf %s (%s), provider %s\n", perf_op_name(o->op), perf_mode_name(o->mode),
		r->provider);
	fprintf(f, "# device: %s\n", r->device);
	if (o->emulated)
		fprintf(f, "# HOST EMULATION: device code runs on CPU threads (%s); floors are CPU floors\n",
			o->emu_reason ? o->emu_reason : "no GPU");
	fprintf(f, "# cpu: %s, %ld cores\n", cpu, sysconf(_SC_NPROCESSORS_ONLN));
	if (o->nranks == 2)
		fprintf(f, "# two ranks (kinetrun): initiator QPs in rank 0 (this one), target QPs and "
			   "destination in rank 1\n");
	else
		fprintf(f, "# loopback: initiator and target QPs connected in this process\n");
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
	}
	fprintf(f,
		"%-12s %-4s %-4s %-20s %10s %4s %4s %4s %3s %-4s %-4s %-4s %10s %10s %10s %10s %10s %10s "
		"%9s\n",
		"op", "mode", "init", "variant", "bytes", "thr", "blk", "qps", "eng", "db", "src", "dst",
		"iters", "median_us", "p5_us", "p95_us", "GB/s", "Mops/s", "vs_floor");
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
		fprintf(f,
			"%-12s %-4s %-4s %-20s %10llu %4d %4d %4d %3d %-4s %-4s %-4s %10ld %10.3f %10.3f "
			"%10.3f %10.3f "
			"%10.3f ",
			perf_op_name(x->op), perf_mode_name(x->mode), init_name(x->initiator),
			x->variant ? x->variant : "-", (unsigned long long)x->size, x->threads, x->blocks,
			x->qps, x->engine_threads, perf_db_name(x->db_mode), perf_mem_name(x->src_mem),
			perf_mem_name(x->dst_mem), x->iters, x->have_lat ? x->lat.median : 0,
			x->have_lat ? x->lat.p5 : 0, x->have_lat ? x->lat.p95 : 0, x->bw_gbs, x->mops);
		if (what)
			fprintf(f, "%8.2fx\n", ratio);
		else
			fprintf(f, "%9s\n", "-");
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
	fprintf(f, ",\"op\":\"%s\",\"mode\":\"%s\",\"emulated\":%s,\"emu_reason\":", perf_op_name(o->op),
		perf_mode_name(o->mode), o->emulated ? "true" : "false");
	json_str(f, o->emulated ? o->emu_reason : "");
	fprintf(f,
		",\"topology\":\"%s\",\"provider\":", o->nranks == 2 ? "two ranks (kinetrun)" : "loopback");
	json_str(f, r->provider);
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
		fprintf(f, "]}");
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
			",\"size\":%llu,\"threads\":%d,\"blocks\":%d,\"qps\":%d,\"engine_threads\":%d,\"db\":"
			"\"%s\","
			"\"sharing\":\"%s\",\"src_mem\":\"%s\",\"dst_mem\":\"%s\",\"inline\":%s,\"iters\":%"
			"ld,"
			"\"warmup\":%ld,\"window\":%d,\"status\":%d,\"error\":",
			(unsigned long long)x->size, x->threads, x->blocks, x->qps, x->engine_threads,
			perf_db_name(x->db_mode), perf_sharing_name(x->sharing), perf_mem_name(x->src_mem),
			perf_mem_name(x->dst_mem), x->inl ? "true" : "false", x->iters, x->warmup, x->window,
			x->status);
		json_str(f, x->error);
		fputc(',', f);
		if (x->have_lat) {
			json_stats(f, "lat_us", &x->lat);
			fputc(',', f);
		}
		fprintf(f, "\"elapsed_us\":%.3f,\"bytes\":%.0f,\"ops\":%.0f,\"bw_GBs\":%.4f,\"mops\":%.4f",
			x->elapsed_us, x->bytes, x->ops, x->bw_gbs, x->mops);
		if (what)
			fprintf(f, ",\"vs_floor\":{\"what\":\"%s\",\"ratio\":%.4f}", what, ratio);
		fputc('}', f);
	}
	fprintf(f, "]}\n");
}
