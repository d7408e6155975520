/*
 * Engine threads of the software NIC: each owns a set of QPs and makes
 * passes over them.  Idle threads back off (spin, yield, short sleeps) so a
 * small machine running tests stays responsive; a host post wakes the owner
 * at once, a device doorbell is seen at the next pass.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine.h"

/* A look at the doorbells of t's QPs after `sleeping` was set (see
 * kinet_engine_send_rung). */
static bool doorbells_rung(struct kinet_engine_thread *t)
{
	bool rung = false;

	pthread_mutex_lock(&t->lock);
	for (int i = 0; i < t->nqps && !rung; i++)
		rung = kinet_engine_db_pending(t->qps[i]);
	pthread_mutex_unlock(&t->lock);
	return rung;
}

/* Sleeps ns at most, until kicked; when idle (not paused) not at all if a
 * doorbell was rung meanwhile. */
static void engine_sleep(struct kinet_engine_thread *t, uint64_t ns, bool idle)
{
	struct timespec ts;
	unsigned kicks = atomic_load(&t->kicks);

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_nsec += (long)ns;
	while (ts.tv_nsec >= 1000000000L) {
		ts.tv_nsec -= 1000000000L;
		ts.tv_sec++;
	}
	/* Seq_cst, then a fence: the other half of kinet_engine_send_rung's
	 * fence, so a send doorbell rung before the poster saw `sleeping`
	 * false is seen by the look below. */
	atomic_store(&t->sleeping, true);
	atomic_thread_fence(memory_order_seq_cst);
	if (idle && doorbells_rung(t)) {
		atomic_store(&t->sleeping, false);
		return;
	}
	pthread_mutex_lock(&t->sleep_lock);
	/* A kick between the load of `kicks` and here is caught by the
	 * comparison, so no wake-up is lost. */
	if (atomic_load(&t->kicks) == kicks && !atomic_load(&t->engine->stop))
		pthread_cond_timedwait(&t->sleep_cond, &t->sleep_lock, &ts);
	atomic_store(&t->sleeping, false);
	pthread_mutex_unlock(&t->sleep_lock);
}

static void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ volatile("yield");
#endif
}

/* Adds to a counter only this thread writes (others read it relaxed). */
static void stat_add(uint64_t *counter, uint64_t v)
{
	__atomic_store_n(counter, __atomic_load_n(counter, __ATOMIC_RELAXED) + v, __ATOMIC_RELAXED);
}

enum idle_state { ENGINE_BUSY, ENGINE_SPIN, ENGINE_YIELD, ENGINE_SLEEP };

/* How long an idle spin runs between two yields: rarely enough that a
 * thread with a core of its own pays a yield (~1 us in a VM) on few
 * doorbells, often enough that a poller sharing this core waits 20 us,
 * not the whole spin (KINET_ENGINE_SPIN_US). */
#define ENGINE_SPIN_YIELD_NS 20000u

static void *engine_main(void *arg)
{
	struct kinet_engine_thread *t = arg;
	struct kinet_engine *e = t->engine;
	uint64_t idle_since = 0, sleep_ns = 20000, spin_ns = 0, spin_yield_at = 0;
	uint64_t last = kinet_now_ns();

	kinet_pollers_add(true, 1);
	if (kinet_engine_thread_cuda_init(t))
		KINET_WARN("engine thread %d: no CUDA stream, GPU memory operations will fail", t->index);

	while (!atomic_load_explicit(&e->stop, memory_order_acquire)) {
		enum idle_state what = ENGINE_BUSY;
		int work = 0;

		if (atomic_load_explicit(&e->paused, memory_order_acquire)) {
			engine_sleep(t, 100000, false);
			last = kinet_now_ns();
			continue;
		}
		/* No lock but the thread's own: its QP set, which only
		 * kinet_engine_add_qp / remove_qp / pause take besides it. */
		unsigned kicks = atomic_load(&t->kicks);
		pthread_mutex_lock(&t->lock);
		/* Again under the lock: kinet_engine_pause may have come and
		 * gone (lock, unlock) between the check above and the lock, and
		 * it promises that no pass starts after it returns. */
		if (atomic_load_explicit(&e->paused, memory_order_acquire)) {
			pthread_mutex_unlock(&t->lock);
			continue;
		}
		if (t->index == 0) {
			/* Acquire: pairs with the release that publishes the
			 * remote state with the hook (rp_state_get).  Under the
			 * thread's lock like the QP pass, so kinet_engine_pause
			 * also waits for a remote pass under way (the lock order
			 * is the QP pass's: this lock, then the registration
			 * table's, then the remote state's). */
			int (*progress)(struct kinet_ctx *) =
				__atomic_load_n(&kinet_sctx(t->ctx)->remote_progress, __ATOMIC_ACQUIRE);
			if (progress)
				work += progress(t->ctx);
			/* Ethernet receive (engine/eth.c): the same lock order. */
			int (*eth)(struct kinet_engine_thread *) =
				__atomic_load_n(&kinet_sctx(t->ctx)->eth_progress, __ATOMIC_ACQUIRE);
			if (eth)
				work += eth(t);
		}
		/* After the remote pass: an answer it took completes its
		 * operation in this pass, not the next. */
		for (int i = 0; i < t->nqps; i++)
			work += kinet_engine_progress_qp(t, t->qps[i]);
		/* What the pass sent to other processes leaves together.  Only
		 * thread 0 runs QPs of remote transports
		 * (kinet_engine_move_to_remote_thread); what another thread sent
		 * (a QP that could not move) leaves at the start of thread 0's
		 * next remote pass.  Idle threads looking at the carrier's
		 * bundle count on every pass would pull its line from thread 0
		 * after each bundle it opens or posts. */
		if (t->index == 0) {
			void (*flush)(struct kinet_ctx *) =
				__atomic_load_n(&kinet_sctx(t->ctx)->remote_flush, __ATOMIC_ACQUIRE);
			if (flush)
				flush(t->ctx);
		}
		pthread_mutex_unlock(&t->lock);
		stat_add(&t->stats.passes, 1);

		uint64_t now = kinet_now_ns();
		if (work || atomic_load(&t->kicks) != kicks) {
			idle_since = 0;
			sleep_ns = 20000;
			stat_add(&t->stats.busy_passes, 1);
			stat_add(&t->stats.busy_ns, now - last);
			last = now;
			continue;
		}
		if (!idle_since) {
			idle_since = now;
			spin_yield_at = ENGINE_SPIN_YIELD_NS;
			/* Spinning on a core another poller needs delays it. */
			spin_ns = e->spin_set || !kinet_pollers_oversubscribed() ? e->spin_ns : 0;
		}
		uint64_t idle = now - idle_since;
		if (idle < spin_ns) {
			/* One pause per look: a device doorbell is seen within a
			 * pass, not after a long burst of pauses (a pause is
			 * ~140 cycles on recent x86).  A yield now and then:
			 * the scheduler may run the thread that posts on this
			 * core whatever the core count says (after a context
			 * opens, until its load balancer moves one), and a
			 * spin that never yields holds that thread's next step
			 * for the whole spin (206 us per operation). */
			if (idle >= spin_yield_at) {
				sched_yield();
				spin_yield_at = idle + ENGINE_SPIN_YIELD_NS;
			} else {
				cpu_relax();
			}
			what = ENGINE_SPIN;
		} else if (idle < spin_ns + e->yield_ns) {
			sched_yield();
			what = ENGINE_YIELD;
		} else {
			engine_sleep(t, sleep_ns, true);
			if (sleep_ns < e->sleep_max_ns)
				sleep_ns *= 2;
			if (sleep_ns > e->sleep_max_ns)
				sleep_ns = e->sleep_max_ns;
			what = ENGINE_SLEEP;
		}
		/* The empty pass and what followed it count as idle time of the
		 * state it ended in.  After a spin's one pause the clock is not
		 * read again (the pause counts with the next pass): a reading
		 * is a large share of an idle pass. */
		if (what != ENGINE_SPIN)
			now = kinet_now_ns();
		stat_add(what == ENGINE_SPIN	? &t->stats.spin_ns
			 : what == ENGINE_YIELD ? &t->stats.yield_ns
						: &t->stats.sleep_ns,
			 now - last);
		last = now;
	}
	kinet_pollers_add(true, -1);
	return NULL;
}

int kinet_engine_start(struct kinet_ctx *ctx, int nthreads)
{
	struct kinet_engine *e = calloc(1, sizeof(*e));

	if (!e)
		return -ENOMEM;
	e->ctx = ctx;
	e->nthreads = nthreads;
	e->spin_ns = (uint64_t)kinet_env_long("KINET_ENGINE_SPIN_US") * 1000;
	e->spin_set = kinet_env_is_set("KINET_ENGINE_SPIN_US");
	e->yield_ns = (uint64_t)kinet_env_long("KINET_ENGINE_YIELD_US") * 1000;
	e->sleep_max_ns = (uint64_t)kinet_env_long("KINET_ENGINE_SLEEP_MAX_US") * 1000;
	if (e->sleep_max_ns < 20000)
		e->sleep_max_ns = 20000;
	e->threads = calloc((size_t)nthreads, sizeof(*e->threads));
	if (!e->threads) {
		free(e);
		return -ENOMEM;
	}
	kinet_sctx(ctx)->engine = e;
	for (int i = 0; i < nthreads; i++) {
		struct kinet_engine_thread *t = &e->threads[i];

		t->ctx = ctx;
		t->engine = e;
		t->index = i;
		pthread_mutex_init(&t->lock, NULL);
		pthread_mutex_init(&t->sleep_lock, NULL);
		pthread_cond_init(&t->sleep_cond, NULL);
		int rc = pthread_create(&t->tid, NULL, engine_main, t);
		if (rc) {
			KINET_ERR("engine: cannot start thread %d: %s", i, strerror(rc));
			kinet_engine_stop(ctx);
			return -rc;
		}
		t->started = true;
	}
	KINET_INFO("engine: %d thread(s) started", nthreads);
	return 0;
}

void kinet_engine_stop(struct kinet_ctx *ctx)
{
	struct kinet_engine *e = kinet_sctx(ctx)->engine;

	if (!e)
		return;
	atomic_store(&e->stop, true);
	for (int i = 0; i < e->nthreads; i++) {
		struct kinet_engine_thread *t = &e->threads[i];

		if (!t->started)
			continue;
		pthread_mutex_lock(&t->sleep_lock);
		pthread_cond_broadcast(&t->sleep_cond);
		pthread_mutex_unlock(&t->sleep_lock);
		pthread_join(t->tid, NULL);
	}
	/* Work still in flight: wait for its copies (they touch user memory
	 * that is about to be freed), then drop it without completions. */
	for (int i = 0; i < e->nthreads; i++) {
		struct kinet_engine_thread *t = &e->threads[i];

		for (int j = 0; j < t->nqps; j++) {
			kinet_sqp(t->qps[j])->owner = NULL;
			kinet_engine_drain_qp(t, t->qps[j]);
		}
		kinet_engine_thread_cuda_fini(t);
		free(t->qps);
		pthread_mutex_destroy(&t->lock);
		pthread_mutex_destroy(&t->sleep_lock);
		pthread_cond_destroy(&t->sleep_cond);
	}
	free(e->threads);
	free(e);
	kinet_sctx(ctx)->engine = NULL;
}

/* Puts qp in t's set and makes t its owner; t->lock held.  0 or -ENOMEM
 * (then nothing changed). */
static int thread_add(struct kinet_engine_thread *t, struct kinet_qp *qp)
{
	if (t->nqps == t->cap) {
		int cap = t->cap ? t->cap * 2 : 16;
		struct kinet_qp **qps = realloc(t->qps, (size_t)cap * sizeof(*qps));

		if (!qps)
			return -ENOMEM;
		t->qps = qps;
		t->cap = cap;
	}
	t->qps[t->nqps++] = qp;
	kinet_sqp(qp)->owner = t;
	return 0;
}

/* Takes qp out of t's set; t->lock held. */
static void thread_drop(struct kinet_engine_thread *t, struct kinet_qp *qp)
{
	for (int i = 0; i < t->nqps; i++) {
		if (t->qps[i] == qp) {
			t->qps[i] = t->qps[--t->nqps];
			break;
		}
	}
}

void kinet_engine_add_qp(struct kinet_ctx *ctx, struct kinet_qp *qp)
{
	struct kinet_engine *e = kinet_sctx(ctx)->engine;
	unsigned idx = atomic_fetch_add(&e->next_thread, 1) % (unsigned)e->nthreads;
	struct kinet_engine_thread *t = &e->threads[idx];

	pthread_mutex_lock(&t->lock);
	int rc = thread_add(t, qp);
	pthread_mutex_unlock(&t->lock);
	if (rc) {
		/* Cannot happen in practice; the QP would never run, so say so
		 * loudly rather than hang its users. */
		KINET_ERR("engine: out of memory adding QP %u", qp->qpn);
		kinet_qp_to_error(qp, "engine out of memory");
	}
}

/* Remote work serialises on the remote protocol's state and the carrier
 * (one lock each, taken per operation): QPs of several engine threads
 * contending for them made 8-byte writes over ofi shm 2.6-3x slower with
 * two threads and 3.4-5x with four than with one.  Thread 0 runs the
 * remote pass, so the QPs of remote transports join it
 * (docs/ARCHITECTURE.md).  Called while the QP connects (not RTS: no
 * doorbell of it is looked at); a QP with operations in flight (a
 * reconnection) stays where their copies are. */
void kinet_engine_move_to_remote_thread(struct kinet_qp *qp)
{
	struct kinet_engine_thread *from = kinet_sqp(qp)->owner, *to;

	if (!from || from->index == 0)
		return;
	to = &from->engine->threads[0];
	/* Lock order: a thread's lock before thread 0's, the only place two
	 * are held. */
	pthread_mutex_lock(&from->lock);
	if (!kinet_sqp(qp)->npending) {
		pthread_mutex_lock(&to->lock);
		if (!thread_add(to, qp))
			thread_drop(from, qp);
		pthread_mutex_unlock(&to->lock);
	}
	pthread_mutex_unlock(&from->lock);
}

void kinet_engine_remove_qp(struct kinet_ctx *ctx, struct kinet_qp *qp)
{
	struct kinet_engine_thread *t = kinet_sqp(qp)->owner;

	(void)ctx;
	if (!t)
		return;
	/* Taking the lock waits for a pass in progress to end. */
	pthread_mutex_lock(&t->lock);
	thread_drop(t, qp);
	kinet_engine_drain_qp(t, qp);
	kinet_sqp(qp)->owner = NULL;
	pthread_mutex_unlock(&t->lock);
}

int kinet_engine_stats(struct kinet_ctx *ctx, int index, struct kinet_engine_stats *out)
{
	struct kinet_engine *e = kinet_sctx(ctx)->engine;
	struct kinet_engine_thread *t;

	if (!e || index >= e->nthreads)
		return -EINVAL;
	t = &e->threads[index];
	out->passes = __atomic_load_n(&t->stats.passes, __ATOMIC_RELAXED);
	out->busy_passes = __atomic_load_n(&t->stats.busy_passes, __ATOMIC_RELAXED);
	out->wqes = __atomic_load_n(&t->stats.wqes, __ATOMIC_RELAXED);
	out->busy_ns = __atomic_load_n(&t->stats.busy_ns, __ATOMIC_RELAXED);
	out->spin_ns = __atomic_load_n(&t->stats.spin_ns, __ATOMIC_RELAXED);
	out->yield_ns = __atomic_load_n(&t->stats.yield_ns, __ATOMIC_RELAXED);
	out->sleep_ns = __atomic_load_n(&t->stats.sleep_ns, __ATOMIC_RELAXED);
	pthread_mutex_lock(&t->lock);
	out->qps = (uint32_t)t->nqps;
	pthread_mutex_unlock(&t->lock);
	out->pad = 0;
	return e->nthreads;
}

void kinet_engine_kick(struct kinet_qp *qp)
{
	struct kinet_engine_thread *t = kinet_sqp(qp)->owner;

	if (!t)
		return;
	atomic_fetch_add(&t->kicks, 1);
	if (atomic_load(&t->sleeping)) {
		pthread_mutex_lock(&t->sleep_lock);
		pthread_cond_signal(&t->sleep_cond);
		pthread_mutex_unlock(&t->sleep_lock);
	}
}

/* A host post of send WQEs.  The engine reads every doorbell on every
 * pass, so it needs telling only when it sleeps; kicking it always (an
 * atomic add on the line the engine reads its kicks from on every pass)
 * took ~300 ns of each post on the H200 host.  Dekker with engine_sleep:
 * here the doorbell store (kinet_qp_post_send, before), a full fence, the
 * load of `sleeping`; there the store of `sleeping`, a full fence, the
 * look at the doorbells: one of the two sees the other's store.  Other
 * kicks (receives posted, state changes) are not doorbells the engine
 * looks at before sleeping, and stay unconditional. */
void kinet_engine_send_rung(struct kinet_qp *qp)
{
	struct kinet_engine_thread *t = kinet_sqp(qp)->owner;

	if (!t)
		return;
	atomic_thread_fence(memory_order_seq_cst);
	if (atomic_load_explicit(&t->sleeping, memory_order_relaxed))
		kinet_engine_kick(qp);
}

void kinet_engine_pause(struct kinet_ctx *ctx, bool paused)
{
	struct kinet_engine *e = kinet_sctx(ctx)->engine;

	if (!e)
		return;
	atomic_store_explicit(&e->paused, paused, memory_order_release);
	if (paused) {
		/* Return only once no pass is running, so nothing executes
		 * after the caller is told the engine is paused. */
		for (int i = 0; i < e->nthreads; i++) {
			pthread_mutex_lock(&e->threads[i].lock);
			pthread_mutex_unlock(&e->threads[i].lock);
		}
		return;
	}
	kinet_engine_kick_all(ctx);
}

void kinet_engine_kick_all(struct kinet_ctx *ctx)
{
	struct kinet_engine *e = kinet_sctx(ctx)->engine;

	if (!e)
		return;
	for (int i = 0; i < e->nthreads; i++) {
		struct kinet_engine_thread *t = &e->threads[i];

		atomic_fetch_add(&t->kicks, 1);
		pthread_mutex_lock(&t->sleep_lock);
		pthread_cond_signal(&t->sleep_cond);
		pthread_mutex_unlock(&t->sleep_lock);
	}
}
