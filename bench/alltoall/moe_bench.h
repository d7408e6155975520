/*
 * kinet-alltoall-bench: MoE dispatch and combine (part of
 * alltoall_bench.cu), with examples/moe.cuh's kernels, beside NCCL's
 * grouped send/recv of the same bytes per rank pair: dispatch sends each
 * token once to every rank holding one of its experts, with its 112-byte
 * record; combine sends one bf16 row back per such token.
 */

struct moe_samples {
	uint64_t *hd, *gd, *hc, *gc, *hdc, *gdc; /* host/gpu: dispatch, combine, both */
};

static void moe_report(struct bench *b, const char *prefix, int tokens, uint64_t bd, uint64_t bc,
		       struct moe_samples *m)
{
	char what[64];
	snprintf(what, sizeof(what), "%s_dispatch", prefix);
	report_pair(b, what, tokens, bd, m->hd, m->gd);
	snprintf(what, sizeof(what), "%s_combine", prefix);
	report_pair(b, what, tokens, bc, m->hc, m->gc);
	snprintf(what, sizeof(what), "%s_dispatch_combine", prefix);
	report_pair(b, what, tokens, bd + bc, m->hdc, m->gdc);
}

static void moe_keep(struct bench *b, struct moe_samples *m, int e, uint64_t hd, uint64_t gd, uint64_t hc,
		     uint64_t gc)
{
	if (e <= b->o.warmup)
		return;
	int i = e - 1 - b->o.warmup;
	m->hd[i] = hd;
	m->gd[i] = gd;
	m->hc[i] = hc;
	m->gc[i] = gc;
	m->hdc[i] = hd + hc;
	m->gdc[i] = gd + gc;
}

/* One kernel of the job, timed; then the blocks' statuses. */
static int moe_timed(struct bench *b, struct moe_job *j, enum moe_kernel k, uint64_t epoch, uint64_t *host,
		     uint64_t *gpu)
{
	uint64_t t0 = bench_now_ns();
	bench_timer_start(b);
	int rc = moe_job_launch(j, k, epoch);
	if (!rc)
		rc = bench_timer_stop(b, gpu);
	*host = bench_now_ns() - t0;
	return rc ? rc : moe_job_status(j);
}

/* Tokens from every source to every destination rank ([s * R + p]), and
 * the bytes this rank's dispatch and combine send to other ranks. */
static void moe_counts(struct bench *b, const struct moe_job *j, uint64_t *cnt, uint64_t *bd, uint64_t *bc)
{
	const int R = b->size, me = b->rank;
	const uint64_t row = j->args.lay.row, rec = row + sizeof(struct moe_meta);
	int32_t idx[MOE_KMAX];
	float w[MOE_KMAX];
	for (int s = 0; s < R; s++)
		for (int t = 0; t < j->cfg.tokens; t++) {
			moe_gen_route(&j->cfg, s, 1, t, idx, w);
			uint64_t mask = moe_dest_mask(&j->cfg, idx);
			for (int p = 0; p < R; p++)
				cnt[s * R + p] += mask >> p & 1;
		}
	*bd = *bc = 0;
	for (int p = 0; p < R; p++)
		if (p != me) {
			*bd += cnt[me * R + p] * rec;
			*bc += cnt[p * R + me] * row;
		}
}

static int bench_moe(struct bench *b, int tokens)
{
	struct moe_opts mo;
	struct moe_job j;
	const int R = b->size, me = b->rank, total = b->o.warmup + b->o.iters;
	uint64_t *cnt = (uint64_t *)calloc((size_t)R * R, sizeof(uint64_t));
	uint64_t *buf = (uint64_t *)calloc((size_t)b->o.iters * 6, sizeof(uint64_t));
	struct moe_samples m = {buf,
				buf + b->o.iters,
				buf + 2 * b->o.iters,
				buf + 3 * b->o.iters,
				buf + 4 * b->o.iters,
				buf + 5 * b->o.iters};
	uint64_t bd = 0, bc = 0, row = 0, rec = 0;
	int mapped = 0, rc;
#if !defined(KINET_HOST_EMU)
	cudaStream_t mine = b->stream;
#endif
	memset(&j, 0, sizeof(j));
	memset(&mo, 0, sizeof(mo));
	mo.tokens = tokens;
	mo.hidden = b->o.hidden;
	mo.topk = b->o.topk;
	mo.experts = b->o.experts;
	mo.rounds = 1;
	mo.blocks = b->o.blocks;
	mo.threads = b->o.threads;
	mo.layout = b->o.layout;
	rc = cnt && buf ? moe_job_open(&j, b->boot, &mo, b->ctx, b->mesh) : -ENOMEM;
#if !defined(KINET_HOST_EMU)
	if (j.stream)
		b->stream = j.stream; /* the job's kernels run there */
#endif
	if (!rc)
		rc = moe_job_inputs(&j, 1);
	if (rc)
		goto out;
	for (int p = 0; p < R; p++)
		mapped += p != me && kinet_team_peer_mapped(j.team, p) == 1;
	b->path = mapped ? "peer" : "engine";
	moe_counts(b, &j, cnt, &bd, &bc);
	row = j.args.lay.row;
	rec = row + sizeof(struct moe_meta);
	if ((rc = kinet_boot_barrier(b->boot)))
		goto out;

	/* kinet: dispatch, (experts, untimed), combine; the same tokens each
	 * round, a new epoch of both slots */
	for (int e = 1; e <= total && !rc; e++) {
		uint64_t hd, gd, hc = 0, gc = 0, u;
		rc = moe_timed(b, &j, MOE_DISPATCH, (uint64_t)e, &hd, &gd);
		/* The layout before the combine: after it a peer may reuse the
		 * receive buffers the index layout points into. */
		if (!rc && e == 1 && b->o.check)
			rc = moe_job_fetch_layout(&j);
		if (!rc)
			rc = moe_timed(b, &j, MOE_EXPERT, (uint64_t)e, &u, &u);
		if (!rc)
			rc = moe_timed(b, &j, MOE_COMBINE, (uint64_t)e, &hc, &gc);
		if (!rc && e == 1 && b->o.check) {
			long exact = 0;
			double err = 0;
			rc = moe_copy(j.h_out, j.args.out, (size_t)tokens * (size_t)b->o.hidden * 2, 0);
			if (!rc && (moe_check_dispatch(&j.cfg, 1, j.h_base, j.h_src, j.h_ex) ||
				    moe_check_combine(&j.cfg, 1, j.h_out, &exact, &err))) {
				fprintf(stderr,
					"kinet-alltoall-bench: rank %d: MoE results differ from the "
					"reference\n",
					me);
				rc = -EIO;
			}
		}
		moe_keep(b, &m, e, hd, gd, hc, gc);
	}
	if (rc)
		goto out;
	moe_report(b, b->o.layout == MOE_LAYOUT_COPY ? "kinet_copy" : "kinet", tokens, bd, bc, &m);

	/* NCCL: grouped send/recv of the same bytes per pair, both ways */
	if (b->comm && !(rc = kinet_boot_barrier(b->boot))) {
		uint64_t *v = (uint64_t *)calloc((size_t)8 * R, sizeof(uint64_t)), sd = 0, rd = 0, sc = 0,
			 rcv = 0;
		uint8_t *sbuf = NULL, *rbuf = NULL;
		/* v: [0] dispatch send bytes, [1] displs, [2] recv bytes, [3]
		 * displs; [4..7] the same for combine */
		for (int p = 0; v && p < R; p++) {
			v[p] = cnt[me * R + p] * rec, v[R + p] = sd, sd += v[p];
			v[2 * R + p] = cnt[p * R + me] * rec, v[3 * R + p] = rd, rd += v[2 * R + p];
			v[4 * R + p] = cnt[p * R + me] * row, v[5 * R + p] = sc, sc += v[4 * R + p];
			v[6 * R + p] = cnt[me * R + p] * row, v[7 * R + p] = rcv, rcv += v[6 * R + p];
		}
		sbuf = (uint8_t *)bench_dev_alloc((size_t)(sd > sc ? sd : sc));
		rbuf = (uint8_t *)bench_dev_alloc((size_t)(rd > rcv ? rd : rcv));
		if (!v || !sbuf || !rbuf)
			rc = -ENOMEM;
		for (int e = 1; e <= total && !rc; e++) {
			uint64_t t0 = bench_now_ns(), hd, gd = 0, hc, gc = 0;
			bench_timer_start(b);
			rc = bench_nccl_alltoallv(b, sbuf, v, v + R, rbuf, v + 2 * R, v + 3 * R);
			if (!rc)
				rc = bench_timer_stop(b, &gd);
			hd = bench_now_ns() - t0;
			t0 = bench_now_ns();
			bench_timer_start(b);
			if (!rc)
				rc = bench_nccl_alltoallv(b, sbuf, v + 4 * R, v + 5 * R, rbuf, v + 6 * R,
							  v + 7 * R);
			if (!rc)
				rc = bench_timer_stop(b, &gc);
			hc = bench_now_ns() - t0;
			moe_keep(b, &m, e, hd, gd, hc, gc);
		}
		if (!rc)
			moe_report(b, "nccl", tokens, bd, bc, &m);
		bench_dev_free(sbuf);
		bench_dev_free(rbuf);
		free(v);
	}
out:
	if (rc)
		bench_fail(b, "MoE dispatch/combine", rc);
	kinet_boot_barrier(b->boot);
#if !defined(KINET_HOST_EMU)
	b->stream = mine;
#endif
	moe_job_close(&j);
	free(cnt);
	free(buf);
	return rc;
}
