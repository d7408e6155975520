/*
 * Device collectives (kinet/coll.cuh) on CPU threads: a job of N ranks as
 * threads of this process, each with its own bootstrap, host-only context,
 * mesh and team.  Run twice: with the engine (the software NIC carries
 * every put and signal) and with KINET_P2P=force (peers mapped: the team
 * stores into their heaps directly).  Checked: all-to-all and
 * all-to-all(v) over many rounds in one kernel (alternating slots and
 * buffers, byte for byte, signal words exactly rounds * KINET_DEV_TEAM_EPOCH),
 * the barrier's ordering over rounds and lanes, argument errors, and a
 * bounded wait for a signal that never comes.
 */
#include <pthread.h>
#include <stdlib.h>

#include "kinet/boot.h"
#include "kinet/coll.cuh"
#include "kinet/kinet.h"
#include "kinet/mesh.h"
#include "kinet/team.h"
#include "kt.h"

#define MAX_RANKS 4
#define BLOCKS 3
#define ROUNDS 6
#define A2A_BYTES 9001u /* not a multiple of 16: three slices and a tail */
#define V_MAX 12000u	/* largest all-to-all(v) block */
#define HEAP (1u << 20)

/* Heap layout: send regions per round, two receive buffers, the barrier
 * test's words, the all-to-all(v) tables. */
#define SEND_OFF(r) ((uint64_t)(r)*MAX_RANKS * V_MAX)
#define RECV_OFF(b) (SEND_OFF(ROUNDS + 1) + (uint64_t)(b)*MAX_RANKS * V_MAX)
#define BAR_OFF RECV_OFF(2)
#define TAB_OFF (BAR_OFF + 4096)

struct job;

struct rank_ctx {
	struct job *job;
	int rank;
	struct kinet_boot *boot;
	struct kinet_ctx *ctx;
	struct kinet_mesh *mesh;
	struct kinet_team *team;
	struct kinet_dev_team *dev;
	uint8_t *heap;
	uint64_t epochs; /* rounds slots 0 and 1 took so far */
	int line;	 /* first failed check, 0 if none */
};

struct job {
	int nranks;
	int timeout_ms;
	struct kinet_boot_id id;
	void (*body)(struct rank_ctx *);
	struct rank_ctx r[MAX_RANKS];
};

#define R_CHECK(rc, cond)                                                                                    \
	do {                                                                                                 \
		if (!(cond)) {                                                                               \
			if (!(rc)->line)                                                                     \
				(rc)->line = __LINE__;                                                       \
			return;                                                                              \
		}                                                                                            \
	} while (0)

static uint8_t pat(int from, int to, uint64_t round, uint64_t i)
{
	return (uint8_t)(i * 7u + (uint64_t)from * 31u + (uint64_t)to * 57u + round * 101u + (i >> 8) + 1u);
}

/* Bytes rank `from` sends rank `to` in the all-to-all(v) (one empty). */
static uint64_t vbytes(int from, int to)
{
	if (from == 1 && to == 0)
		return 0;
	return 1000u + 2999u * (uint64_t)((from + 2 * to) % 4) + 16u * (uint64_t)from;
}

/* ---- kernels ---- */

enum { FORM_THREAD, FORM_WARP, FORM_BLOCK };

struct a2a_arg {
	struct kinet_dev_team *t;
	int form;	 /* FORM_* */
	int v;		 /* all-to-all(v) */
	uint64_t epoch0; /* rounds the slots took before (signal words only grow) */
	uint64_t *send_displ, *send_bytes, *recv_displ;
	int status[BLOCKS];
	uint64_t bad[BLOCKS];
};

static int a2a_call(const struct a2a_arg *a, uint32_t slot, uint64_t e, uint64_t send, uint64_t recv)
{
	const struct kinet_dev_team *t = a->t;
	if (a->v) {
		if (a->form == FORM_THREAD)
			return kinet_dev_alltoallv(t, slot, e, send, a->send_displ, a->send_bytes, recv,
						   a->recv_displ);
		if (a->form == FORM_WARP)
			return kinet_dev_alltoallv_warp(t, slot, e, send, a->send_displ, a->send_bytes, recv,
							a->recv_displ);
		return kinet_dev_alltoallv_block(t, slot, e, send, a->send_displ, a->send_bytes, recv,
						 a->recv_displ);
	}
	if (a->form == FORM_THREAD)
		return kinet_dev_alltoall(t, slot, e, send, recv, A2A_BYTES);
	if (a->form == FORM_WARP)
		return kinet_dev_alltoall_warp(t, slot, e, send, recv, A2A_BYTES);
	return kinet_dev_alltoall_block(t, slot, e, send, recv, A2A_BYTES);
}

/* ROUNDS rounds in one kernel: round e sends region e, lands in buffer
 * e & 1 on slot e & 1; every block checks the whole receive buffer before
 * its next round (its share of round e + 1 is what lets a peer reuse it). */
static void a2a_kernel(void *p)
{
	struct a2a_arg *a = (struct a2a_arg *)p;
	const struct kinet_dev_team *t = a->t;
	unsigned b = kinet_dev_block_id();
	int me = kinet_dev_team_rank(t), n = kinet_dev_team_size(t);
	for (uint64_t e = 1; e <= ROUNDS && !a->status[b]; e++) {
		a->status[b] =
			a2a_call(a, (uint32_t)(e & 1), a->epoch0 + (e + 1) / 2, SEND_OFF(e), RECV_OFF(e & 1));
		for (int s = 0; s < n && !a->status[b]; s++) {
			uint64_t len = a->v ? vbytes(s, me) : A2A_BYTES;
			uint64_t at = RECV_OFF(e & 1) +
				      (a->v ? a->recv_displ[MAX_RANKS + s] : (uint64_t)s * A2A_BYTES);
			const uint8_t *in = (const uint8_t *)kinet_dev_team_ptr(t, at);
			for (uint64_t i = 0; i < len; i++)
				a->bad[b] += in[i] != pat(s, me, e, i);
		}
	}
}

static void fill_sends(struct rank_ctx *rc, int v)
{
	int n = rc->job->nranks;
	for (uint64_t e = 1; e <= ROUNDS; e++) {
		uint64_t at = 0;
		for (int p = 0; p < n; p++) {
			uint64_t len = v ? vbytes(rc->rank, p) : A2A_BYTES;
			for (uint64_t i = 0; i < len; i++)
				rc->heap[SEND_OFF(e) + at + i] = pat(rc->rank, p, e, i);
			at += len;
		}
	}
}

static void run_a2a(struct rank_ctx *rc, int v, int form)
{
	int n = rc->job->nranks;
	/* Tables in the heap (device-usable); recv_displ[MAX_RANKS + s]: where
	 * source s lands here, for the check. */
	uint64_t *tab = (uint64_t *)(void *)(rc->heap + TAB_OFF);
	struct a2a_arg a;
	memset(&a, 0, sizeof(a));
	a.t = rc->dev;
	a.form = form;
	a.v = v;
	a.epoch0 = rc->epochs;
	rc->epochs += ROUNDS / 2;
	a.send_displ = tab;
	a.send_bytes = tab + MAX_RANKS;
	a.recv_displ = tab + 2 * MAX_RANKS;
	uint64_t sd = 0;
	for (int p = 0; p < n; p++) {
		uint64_t rd = 0;
		for (int s = 0; s < rc->rank; s++)
			rd += vbytes(s, p);
		a.send_displ[p] = sd;
		a.send_bytes[p] = vbytes(rc->rank, p);
		a.recv_displ[p] = rd;
		sd += a.send_bytes[p];
		rd = 0;
		for (int s = 0; s < p; s++)
			rd += vbytes(s, rc->rank);
		a.recv_displ[MAX_RANKS + p] = rd;
	}
	fill_sends(rc, v);
	uint64_t *sig0 = kinet_dev_team_signal_ptr(rc->dev, 0, 0);
	uint64_t before[2][MAX_RANKS];
	for (int s = 0; s < n; s++)
		for (int k = 0; k < 2; k++)
			before[k][s] = __atomic_load_n(sig0 + (uint64_t)k * n + s, __ATOMIC_ACQUIRE);
	R_CHECK(rc, kinet_boot_barrier(rc->boot) == 0);
	R_CHECK(rc, kinet_emu_launch(BLOCKS, a2a_kernel, &a) == 0);
	for (int b = 0; b < BLOCKS; b++) {
		if (a.status[b] || a.bad[b])
			fprintf(stderr, "rank %d v %d form %d block %d: status %d, %llu bad bytes\n",
				rc->rank, v, form, b, a.status[b], (unsigned long long)a.bad[b]);
		R_CHECK(rc, a.status[b] == 0);
		R_CHECK(rc, a.bad[b] == 0);
	}
	/* Each slot took ROUNDS / 2 rounds from every source: the shares add
	 * up exactly, whatever the slicing. */
	R_CHECK(rc, kinet_boot_barrier(rc->boot) == 0);
	for (int s = 0; s < n; s++)
		for (int k = 0; k < 2; k++)
			R_CHECK(rc, __atomic_load_n(sig0 + (uint64_t)k * n + s, __ATOMIC_ACQUIRE) -
						    before[k][s] ==
					    ROUNDS / 2 * KINET_DEV_TEAM_EPOCH);
}

static void body_alltoall(struct rank_ctx *rc)
{
	for (int v = 0; v < 2 && !rc->line; v++)
		for (int form = 0; form < 3 && !rc->line; form++)
			run_a2a(rc, v, form);
}

/* Barrier: block b of each rank puts a word into the next rank's heap,
 * passes the barrier of its lane, then must find the previous rank's word
 * of this round. */
struct bar_arg {
	struct kinet_dev_team *t;
	int rounds;
	int status[BLOCKS];
	uint64_t bad[BLOCKS];
};

static void bar_kernel(void *p)
{
	struct bar_arg *a = (struct bar_arg *)p;
	const struct kinet_dev_team *t = a->t;
	unsigned b = kinet_dev_block_id();
	int me = kinet_dev_team_rank(t), n = kinet_dev_team_size(t);
	for (int r = 0; r < a->rounds && !a->status[b]; r++) {
		uint64_t src = BAR_OFF + ((uint64_t)b * 4 + (uint64_t)(r & 1)) * 8;
		uint64_t dst = src + 2 * 8;
		*(uint64_t *)kinet_dev_team_ptr(t, src) = ((uint64_t)me << 32) | (uint64_t)r;
		a->status[b] = kinet_dev_team_put(t, (me + 1) % n, dst, src, 8);
		if (!a->status[b])
			a->status[b] = kinet_dev_team_barrier(t);
		uint64_t want = ((uint64_t)((me + n - 1) % n) << 32) | (uint64_t)r;
		a->bad[b] += *(volatile uint64_t *)kinet_dev_team_ptr(t, dst) != want;
	}
}

static void body_barrier(struct rank_ctx *rc)
{
	struct bar_arg a;
	memset(&a, 0, sizeof(a));
	a.t = rc->dev;
	a.rounds = 40;
	R_CHECK(rc, kinet_emu_launch(2, bar_kernel, &a) == 0); /* lanes 0 and 1 */
	for (int b = 0; b < 2; b++) {
		R_CHECK(rc, a.status[b] == 0);
		R_CHECK(rc, a.bad[b] == 0);
	}
	/* Each lane counted its barriers; a second kernel continues the count. */
	R_CHECK(rc, rc->dev->barrier_epoch[0] == 40 && rc->dev->barrier_epoch[1] == 40);
	a.rounds = 5;
	R_CHECK(rc, kinet_emu_launch(2, bar_kernel, &a) == 0);
	R_CHECK(rc, a.status[0] == 0 && a.status[1] == 0 && a.bad[0] == 0 && a.bad[1] == 0);
	R_CHECK(rc, rc->dev->barrier_epoch[0] == 45);
}

/* Arguments outside the team, and a wait nobody answers. */
struct err_arg {
	struct kinet_dev_team *t;
	int st[8];
	uint64_t wait_ns;
};

static void err_kernel(void *p)
{
	struct err_arg *a = (struct err_arg *)p;
	const struct kinet_dev_team *t = a->t;
	uint64_t heap = t->heap_bytes;
	a->st[0] = kinet_dev_team_put(t, 0, heap - 8, 0, 16);	 /* past the heap */
	a->st[1] = kinet_dev_team_put(t, 0, 0, ~0ull, 1);	 /* offset overflow */
	a->st[2] = kinet_dev_team_signal(t, t->size, 0, 1);	 /* no such rank */
	a->st[3] = kinet_dev_team_signal(t, 0, t->slots, 1);	 /* no such slot */
	a->st[4] = kinet_dev_alltoall(t, 0, 0, 0, 4096, 16);	 /* epoch 0 */
	a->st[5] = kinet_dev_team_wait_until(t, 0, -1, 1, NULL); /* no such rank */
	uint64_t t0 = kinet_dev_now_ns();
	a->st[6] = kinet_dev_team_wait_until(t, 3, 0, 1, NULL); /* nobody signals slot 3 */
	a->wait_ns = kinet_dev_now_ns() - t0;
	a->st[7] = kinet_dev_team_put_signal(t, 0, 64, 0, 8, 2, 5); /* to itself: fine */
}

static void body_errors(struct rank_ctx *rc)
{
	struct err_arg a;
	memset(&a, 0, sizeof(a));
	a.t = rc->dev;
	R_CHECK(rc, kinet_emu_launch(1, err_kernel, &a) == 0);
	for (int i = 0; i < 6; i++)
		R_CHECK(rc, a.st[i] == -EINVAL);
	R_CHECK(rc, a.st[6] == -ETIMEDOUT);
	/* The QP timeout (200 ms) bounds it. */
	R_CHECK(rc, a.wait_ns >= 150000000ull && a.wait_ns < 5000000000ull);
	R_CHECK(rc, a.st[7] == 0);
	R_CHECK(rc, *kinet_dev_team_signal_ptr(rc->dev, 2, 0) == 5);
}

/* ---- the job ---- */

static void *rank_main(void *p)
{
	struct rank_ctx *rc = (struct rank_ctx *)p;
	struct job *j = rc->job;
	struct kinet_ctx_attr ca;
	struct kinet_mesh_attr ma;
	struct kinet_team_attr ta;
	int ok = 0;

	if (kinet_boot_init_with_id(&j->id, rc->rank, j->nranks, &rc->boot)) {
		rc->line = __LINE__;
		return NULL;
	}
	kinet_ctx_attr_init(&ca);
	ca.cuda_device = KINET_CUDA_DEVICE_NONE;
	kinet_mesh_attr_init(&ma);
	ma.with_recv = 0;
	ma.qp.sharing = KINET_SHARE_GPU;
	ma.qp.sq_depth = 64;
	ma.qp.timeout_ms = j->timeout_ms;
	kinet_team_attr_init(&ta);
	ta.heap_bytes = HEAP;
	ta.slots = 4;
	if (kinet_ctx_open(&ca, &rc->ctx) || kinet_mesh_create(rc->ctx, rc->boot, &ma, &rc->mesh) ||
	    kinet_team_create(rc->boot, rc->mesh, &ta, &rc->team) || kinet_team_export(rc->team, &rc->dev))
		rc->line = __LINE__;
	else
		ok = 1;
	if (ok) {
		rc->heap = (uint8_t *)kinet_team_heap(rc->team);
		if (!rc->heap || kinet_team_heap_bytes(rc->team) != HEAP ||
		    kinet_team_rank(rc->team) != rc->rank || kinet_team_size(rc->team) != j->nranks ||
		    (uint8_t *)kinet_dev_team_ptr(rc->dev, 0) != rc->heap)
			rc->line = __LINE__;
		else
			j->body(rc);
	}
	if (kinet_team_destroy(rc->team) && !rc->line)
		rc->line = __LINE__;
	kinet_mesh_destroy(rc->mesh);
	kinet_ctx_close(rc->ctx);
	kinet_boot_fini(rc->boot);
	return NULL;
}

static void run_job(int nranks, int timeout_ms, void (*body)(struct rank_ctx *))
{
	static struct job j;
	pthread_t th[MAX_RANKS];
	memset(&j, 0, sizeof(j));
	j.nranks = nranks;
	j.timeout_ms = timeout_ms;
	j.body = body;
	KT_OK(kinet_boot_get_unique_id(&j.id));
	for (int r = 0; r < nranks; r++) {
		j.r[r].job = &j;
		j.r[r].rank = r;
		KT_OK(pthread_create(&th[r], NULL, rank_main, &j.r[r]));
	}
	for (int r = 0; r < nranks; r++)
		pthread_join(th[r], NULL);
	for (int r = 0; r < nranks; r++) {
		if (j.r[r].line)
			fprintf(stderr, "rank %d: check at line %d failed\n", r, j.r[r].line);
		KT_CHECK_EQ(j.r[r].line, 0);
	}
}

/* Which way the team reaches its peers, as KINET_P2P says. */
static void body_mapping(struct rank_ctx *rc)
{
	const char *p2p = getenv("KINET_P2P");
	int force = p2p && !strcmp(p2p, "force");
	for (int p = 0; p < rc->job->nranks; p++)
		R_CHECK(rc, kinet_team_peer_mapped(rc->team, p) == (p == rc->rank || force));
	R_CHECK(rc, kinet_team_peer_mapped(rc->team, rc->job->nranks) == -EINVAL);
	R_CHECK(rc, kinet_team_peer_mapped(NULL, 0) == -EINVAL);
}

static void both_paths(int nranks, void (*body)(struct rank_ctx *))
{
	unsetenv("KINET_P2P");
	run_job(nranks, 5000, body_mapping);
	run_job(nranks, 5000, body);
	setenv("KINET_P2P", "force", 1);
	run_job(nranks, 5000, body_mapping);
	run_job(nranks, 5000, body);
	unsetenv("KINET_P2P");
}

KT_TEST(team_alltoall_3ranks)
{
	both_paths(3, body_alltoall);
}

KT_TEST(team_alltoall_2ranks)
{
	both_paths(2, body_alltoall);
}

KT_TEST(team_barrier)
{
	both_paths(3, body_barrier);
}

KT_TEST(team_device_errors)
{
	run_job(1, 200, body_errors);
}

/* A single rank's job: host-side argument errors. */
static void body_create_errors(struct rank_ctx *rc)
{
	struct kinet_team_attr ta;
	struct kinet_team *t = (struct kinet_team *)&ta;
	struct kinet_mesh_attr ma;
	struct kinet_mesh *excl = NULL;

	kinet_team_attr_init(&ta);
	R_CHECK(rc, kinet_team_create(rc->boot, rc->mesh, &ta, &t) == -EINVAL && t == NULL); /* heap 0 */
	ta.heap_bytes = 4096;
	R_CHECK(rc, kinet_team_create(NULL, rc->mesh, &ta, &t) == -EINVAL);
	R_CHECK(rc, kinet_team_create(rc->boot, NULL, &ta, &t) == -EINVAL);
	R_CHECK(rc, kinet_team_create(rc->boot, rc->mesh, NULL, &t) == -EINVAL);
	R_CHECK(rc, kinet_team_create(rc->boot, rc->mesh, &ta, NULL) == -EINVAL);
	ta.qp_index = 1;
	R_CHECK(rc, kinet_team_create(rc->boot, rc->mesh, &ta, &t) == -EINVAL);
	ta.qp_index = 0;
	ta.slots = 5000;
	R_CHECK(rc, kinet_team_create(rc->boot, rc->mesh, &ta, &t) == -EINVAL);
	ta.slots = 4;
	/* QPs a single thread owns cannot carry a whole kernel's blocks. */
	kinet_mesh_attr_init(&ma);
	ma.with_recv = 0;
	R_CHECK(rc, kinet_mesh_create(rc->ctx, rc->boot, &ma, &excl) == 0);
	R_CHECK(rc, kinet_team_create(rc->boot, excl, &ta, &t) == -EINVAL);
	kinet_mesh_destroy(excl);
	R_CHECK(rc, kinet_team_export(NULL, &rc->dev) == -EINVAL);
	R_CHECK(rc, kinet_team_export(rc->team, NULL) == -EINVAL);
	R_CHECK(rc, kinet_team_destroy(NULL) == 0);
	R_CHECK(rc,
		kinet_team_heap(NULL) == NULL && kinet_team_size(NULL) == 0 && kinet_team_rank(NULL) == -1);
}

KT_TEST(team_create_errors)
{
	run_job(1, 5000, body_create_errors);
}

KT_MAIN(team_create_errors, team_device_errors, team_alltoall_2ranks, team_alltoall_3ranks, team_barrier)
