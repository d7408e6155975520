/*
 * The device API on CPU threads (host emulation) between the ranks of a
 * kinetrun job: put_signal rings and an all-to-all exchange over the
 * exported mesh (kinet_mesh_export), one thread per peer QP, data checked
 * byte for byte once the signals say it is there.
 */
#include <pthread.h>

#include "kinet/device.cuh"
#include "kt_mp.h"

#define RING 16
#define SZ 3000u   /* put_signal payload */
#define BLK 70000u /* all-to-all block: two fragments */

static struct mp m;
static struct kinet_dev_qp **dev;

/* Layout: [ring in: size*RING*SZ][ring out: size*RING*SZ][a2a in: size*BLK]
 * [a2a out: size*BLK][signals: 2*64 words].  The scratch word that
 * non-fetching atomics need comes with the export (kinet_qp_export). */
static size_t ring_in(int s, int k)
{
	return ((size_t)s * RING + (size_t)k) * SZ;
}
static size_t ring_out(int p, int k)
{
	return (size_t)m.size * RING * SZ + ring_in(p, k);
}
static size_t a2a_in(int s)
{
	return 2 * (size_t)m.size * RING * SZ + (size_t)s * BLK;
}
static size_t a2a_out(int p)
{
	return a2a_in(m.size) + (size_t)p * BLK;
}
static size_t sig_off(int which, int s)
{
	return a2a_out(m.size) + ((size_t)which * 64 + (size_t)s) * 8;
}
static uint64_t *sig(int which, int s)
{
	return (uint64_t *)(m.buf + sig_off(which, s));
}

struct sender {
	int peer;
	int rc;
	pthread_t tid;
};

static void *send_main(void *arg)
{
	struct sender *s = arg;
	int p = s->peer;
	struct kinet_dev_qp *qp = dev[p];
	uint32_t lk = kinet_mr_lkey(m.mr), rk = m.peer[p].rkey;
	uint64_t ra = m.peer[p].addr, tk;

	for (int k = 0; k < RING && !s->rc; k++)
		s->rc = kinet_dev_put_signal(qp, m.buf + ring_out(p, k), lk, ra + ring_in(m.rank, k), rk, SZ,
					     ra + sig_off(0, m.rank), rk, 1, &tk);
	if (!s->rc)
		s->rc = kinet_dev_put(qp, m.buf + a2a_out(p), lk, ra + a2a_in(m.rank), rk, BLK, &tk);
	if (!s->rc)
		s->rc = kinet_dev_signal(qp, ra + sig_off(1, m.rank), rk, 1, &tk);
	if (!s->rc)
		s->rc = kinet_dev_quiet(qp);
	return NULL;
}

KT_TEST(put_signal_and_alltoall)
{
	struct kinet_mesh_attr ma;
	struct sender snd[64];

	if (!mp_launched())
		KT_SKIP("needs a kinetrun job (KINET_RANK, KINET_NRANKS); ctest runs it through kinetrun");
	kinet_mesh_attr_init(&ma);
	ma.with_recv = 0;
	ma.qp.sq_depth = 64;
	KT_OK(mp_open(&m, 2 * (RING * SZ + BLK), 2 * 64 * 8, &ma));
	KT_CHECK(m.size <= 64);
	KT_OK(kinet_mesh_export(m.mesh, 0, &dev));
	for (int p = 0; p < m.size; p++) {
		for (int k = 0; k < RING; k++)
			mp_fill(m.buf + ring_out(p, k), SZ, m.rank, p, k);
		mp_fill(m.buf + a2a_out(p), BLK, m.rank, p, 100);
	}
	KT_OK(kinet_boot_barrier(m.boot));

	for (int p = 0; p < m.size; p++) {
		snd[p] = (struct sender){.peer = p};
		KT_OK(pthread_create(&snd[p].tid, NULL, send_main, &snd[p]));
	}
	/* Each signal says its slot (and the ones before it) are in place. */
	int bad = 0;
	for (int s = 0; s < m.size; s++) {
		for (int k = 0; k < RING; k++) {
			if (kinet_dev_signal_wait_until(NULL, sig(0, s), KINET_DEV_CMP_GE, (uint64_t)k + 1,
							NULL) ||
			    mp_check(m.buf + ring_in(s, k), SZ, s, m.rank, k))
				bad++;
		}
		if (kinet_dev_signal_wait_until(NULL, sig(1, s), KINET_DEV_CMP_GE, 1, NULL) ||
		    mp_check(m.buf + a2a_in(s), BLK, s, m.rank, 100))
			bad++;
	}
	for (int p = 0; p < m.size; p++) {
		pthread_join(snd[p].tid, NULL);
		KT_CHECK_EQ(snd[p].rc, 0);
	}
	KT_CHECK_EQ(bad, 0);
	for (int s = 0; s < m.size; s++) {
		KT_CHECK_EQ(*sig(0, s), RING);
		KT_CHECK_EQ(*sig(1, s), 1);
	}
	mp_close(&m);
}

KT_MAIN(put_signal_and_alltoall)
