/*
 * kinet-alltoall-bench: the plain all-to-all (part of alltoall_bench.cu).
 * Per T: a team whose heap holds the send buffer and two receive buffers
 * ([ranks][T * H * 2] each); rounds alternate slots and receive buffers
 * (epoch e of slot e & 1), as a program repeating the exchange would.
 */

/* One kernel, timed from the host (launch to synchronised) and by events;
 * then its blocks' statuses. */
static int a2a_round(struct bench *b, struct a2a_arg *a, unsigned blocks, unsigned threads, uint64_t *host_ns,
		     uint64_t *gpu_ns)
{
	uint64_t t0 = bench_now_ns();
	int rc = 0;
	bench_timer_start(b);
#if defined(KINET_HOST_EMU)
	(void)threads;
	if (kinet_emu_launch(blocks, a2a_emu, a))
		return -EAGAIN;
#else
	a2a_kernel<<<blocks, threads, 0, b->stream>>>(*a);
	if (cudaGetLastError() != cudaSuccess)
		return -EIO;
#endif
	rc = bench_timer_stop(b, gpu_ns);
	*host_ns = bench_now_ns() - t0;
	int st[1024];
	if (!rc && bench_copy(st, a->status, blocks * sizeof(int), 0))
		rc = -EIO;
	for (unsigned i = 0; i < blocks && !rc; i++)
		rc = st[i]; /* a device status: 0 or a negative errno */
	return rc;
}

/* Received blocks against the senders' pattern: mismatching bytes. */
static uint64_t a2a_check(struct bench *b, const uint8_t *recv, uint64_t bytes)
{
	uint8_t *h = (uint8_t *)malloc((size_t)(b->size * bytes));
	uint64_t bad = 0;
	if (!h || bench_copy(h, recv, (size_t)(b->size * bytes), 0)) {
		free(h);
		return 1;
	}
	for (int s = 0; s < b->size; s++)
		for (uint64_t i = 0; i < bytes; i++)
			bad += h[(uint64_t)s * bytes + i] != a2a_pat(s, b->rank, i);
	free(h);
	return bad;
}

static unsigned a2a_blocks(struct bench *b, uint64_t bytes, unsigned threads)
{
	unsigned n = b->o.blocks ? b->o.blocks : (unsigned)((bytes + 65535) / 65536);
	unsigned max = (unsigned)b->sms;
#if !defined(KINET_HOST_EMU)
	int occ = 0;
	/* Every block waits for the others: the grid must be resident. */
	cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, a2a_kernel, (int)threads, 0);
	max = (unsigned)(b->sms * (occ > 0 ? occ : 1));
	if (!b->o.blocks && max > (unsigned)b->sms)
		max = (unsigned)b->sms;
#else
	(void)threads;
	max = 3;
#endif
	n = n < 1 ? 1 : n;
	return n < max ? n : max;
}

static void report_pair(struct bench *b, const char *what, int tokens, uint64_t bytes, uint64_t *host,
			uint64_t *gpu)
{
	struct bench_stats s;
	bench_stats_of(b, host, b->o.iters, &s);
	bench_report(b, what, "host", tokens, bytes, &s);
#if !defined(KINET_HOST_EMU)
	bench_stats_of(b, gpu, b->o.iters, &s);
	bench_report(b, what, "gpu", tokens, bytes, &s);
#else
	(void)gpu;
#endif
}

static int bench_a2a(struct bench *b, int tokens)
{
	const uint64_t B = (uint64_t)tokens * (uint64_t)b->o.hidden * 2, R = (uint64_t)b->size;
	const int total = b->o.warmup + b->o.iters;
	struct kinet_team_attr ta;
	struct kinet_team *team = NULL;
	struct kinet_dev_team *dev = NULL;
	uint64_t *host = b->samples, *gpu = b->samples + b->o.iters;
	struct a2a_arg a;
	int rc;

	kinet_team_attr_init(&ta);
	ta.heap_bytes = 3 * R * B;
	ta.slots = 2;
	if ((rc = kinet_team_create(b->boot, b->mesh, &ta, &team)) || (rc = kinet_team_export(team, &dev)))
		return bench_fail(b, "kinet_team_create", rc);
	uint8_t *heap = (uint8_t *)kinet_team_heap(team), *fill = (uint8_t *)malloc((size_t)(R * B));
	int mapped = 0;
	for (int p = 0; p < b->size; p++)
		mapped += p != b->rank && kinet_team_peer_mapped(team, p) == 1;
	b->path = mapped ? "peer" : "engine";
	unsigned threads = b->o.threads ? b->o.threads : 512, blocks = a2a_blocks(b, B, threads);
	memset(&a, 0, sizeof(a));
	a.team = dev;
	a.bytes = B;
	a.status = (int *)bench_dev_alloc(blocks * sizeof(int));
	if (!fill || !a.status) {
		rc = -ENOMEM;
		goto out;
	}
	for (int p = 0; p < b->size; p++)
		for (uint64_t i = 0; i < B; i++)
			fill[(uint64_t)p * B + i] = a2a_pat(b->rank, p, i);
	if ((rc = bench_copy(heap, fill, (size_t)(R * B), 1)) || (rc = kinet_boot_barrier(b->boot)))
		goto out;

	/* kinet: kinet_dev_alltoall_block, every block of the grid */
	for (int e = 1; e <= total && !rc; e++) {
		uint64_t h, g;
		a.slot = (uint32_t)(e & 1);
		a.epoch = (uint64_t)(e + 1) / 2;
		a.recv_off = R * B * (uint64_t)(1 + (e & 1));
		rc = a2a_round(b, &a, blocks, threads, &h, &g);
		if (!rc && e == 1 && b->o.check && a2a_check(b, heap + a.recv_off, B)) {
			fprintf(stderr,
				"kinet-alltoall-bench: rank %d: kinet all-to-all delivered wrong data\n",
				b->rank);
			rc = -EIO;
		}
		if (e > b->o.warmup) {
			host[e - 1 - b->o.warmup] = h;
			gpu[e - 1 - b->o.warmup] = g;
		}
	}
	if (rc)
		goto out;
	report_pair(b, "kinet_alltoall", tokens, (R - 1) * B, host, gpu);

	/* the floor: the same grid storing the same bytes, no signals */
	if (mapped && !(rc = kinet_boot_barrier(b->boot))) {
		a.copy_only = 1;
		a.recv_off = R * B;
		for (int e = 1; e <= total && !rc; e++) {
			uint64_t h, g;
			rc = a2a_round(b, &a, blocks, threads, &h, &g);
			if (e > b->o.warmup) {
				host[e - 1 - b->o.warmup] = h;
				gpu[e - 1 - b->o.warmup] = g;
			}
		}
		if (!rc)
			report_pair(b, "floor_store", tokens, (uint64_t)mapped * B, host, gpu);
	}

	/* NCCL: the same bytes from the same buffer */
	if (!rc && b->comm && !(rc = kinet_boot_barrier(b->boot))) {
		uint64_t *cnt = (uint64_t *)calloc((size_t)(2 * R), sizeof(uint64_t));
		for (uint64_t p = 0; cnt && p < R; p++) {
			cnt[p] = B;
			cnt[R + p] = p * B;
		}
		for (int e = 1; cnt && e <= total && !rc; e++) {
			uint64_t t0 = bench_now_ns(), g = 0;
			bench_timer_start(b);
#if !defined(KINET_HOST_EMU)
			if (b->nccl.alltoall)
				rc = b->nccl.alltoall(heap, heap + R * B, B, NCCL_DL_UINT8, b->comm,
						      b->stream)
					     ? -EIO
					     : 0;
			else
#endif
				rc = bench_nccl_alltoallv(b, heap, cnt, cnt + R, heap + R * B, cnt, cnt + R);
			if (!rc)
				rc = bench_timer_stop(b, &g);
			uint64_t h = bench_now_ns() - t0;
			if (!rc && e == 1 && b->o.check && a2a_check(b, heap + R * B, B)) {
				fprintf(stderr, "kinet-alltoall-bench: rank %d: NCCL delivered wrong data\n",
					b->rank);
				rc = -EIO;
			}
			if (e > b->o.warmup) {
				host[e - 1 - b->o.warmup] = h;
				gpu[e - 1 - b->o.warmup] = g;
			}
		}
		if (!cnt)
			rc = -ENOMEM;
		free(cnt);
		if (!rc)
			report_pair(b, "nccl_alltoall", tokens, (R - 1) * B, host, gpu);
	}
out:
	if (rc)
		bench_fail(b, "all-to-all", rc);
	kinet_boot_barrier(b->boot);
	bench_dev_free(a.status);
	free(fill);
	kinet_team_destroy(team);
	return rc;
}
