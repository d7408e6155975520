/*
 * Contexts: provider choice, CUDA device, engine, object lists and the
 * first-error record.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "internal.h"
#include "kinet/eth.h"
#include "provider.h"

#define KINET_MAX_ENGINE_THREADS 64

static pthread_once_t node_once = PTHREAD_ONCE_INIT;
static uint64_t node_id;
static atomic_uint ctx_seq;

/* splitmix64 finaliser: spreads pid, time and randomness over 64 bits. */
static uint64_t mix64(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	x ^= x >> 31;
	return x;
}

/* Same for every context of the process, different across processes (pids
 * repeat across hosts and containers, hence the random part). */
static void node_id_init(void)
{
	uint64_t r = 0;

	if (getrandom(&r, sizeof(r), GRND_NONBLOCK) != sizeof(r))
		r = (uint64_t)(uintptr_t)&r;
	node_id = mix64(r ^ mix64(kinet_now_ns()) ^ ((uint64_t)getpid() << 32));
	if (!node_id)
		node_id = 1;
}

void kinet_ctx_attr_init(struct kinet_ctx_attr *attr)
{
	if (!attr)
		return;
	memset(attr, 0, sizeof(*attr));
	attr->size = sizeof(*attr);
	attr->provider = NULL;
	attr->engine_threads = 0;
	attr->cuda_device = -1;
}

int kinet_provider_probe(const char *name, const char **why)
{
	const struct kinet_provider *p = name ? kinet_provider_find(name) : NULL;
	const char *reason = NULL;
	int ret = 0;

	if (!name) {
		reason = "no provider named";
		ret = -EINVAL;
	} else if (!p) {
		reason = "no such provider (soft or mlx5)";
		ret = -EINVAL;
	} else if (p->ops->probe) {
		ret = p->ops->probe(&reason);
	}
	if (why)
		*why = reason;
	return ret;
}

int kinet_provider_describe(const char *name, kinet_describe_fn line, void *arg)
{
	const struct kinet_provider *p;

	if (!name)
		return KINET_EINVAL("name", "NULL");
	if (!line)
		return KINET_EINVAL("line", "NULL");
	p = kinet_provider_find(name);
	if (!p)
		return -EINVAL;
	return p->ops->describe ? p->ops->describe(line, arg) : -EOPNOTSUPP;
}

/* auto is the software NIC: the ConnectX provider has been compiled and
 * unit-tested but not yet run on a NIC, so it is taken only when asked for
 * (docs/architecture/mlx5.md). */
static int choose_provider(const char *name, const char **chosen, const struct kinet_provider_ops **ops)
{
	const struct kinet_provider *p = kinet_provider_find(!strcmp(name, "auto") ? "soft" : name);
	const char *why;
	int ret;

	if (!strcmp(name, "auto")) {
		if (!p) { /* registered at load time; only a broken link lacks it */
			KINET_ERR("the software NIC provider is not registered");
			return -ENODEV;
		}
		KINET_INFO("provider auto: the software NIC (KINET_PROVIDER=mlx5 asks for a ConnectX NIC, "
			   "docs/MLX5.md)");
		*chosen = p->name;
		*ops = p->ops;
		return 0;
	}
	ret = kinet_provider_probe(name, &why);
	if (ret == -ENODEV)
		KINET_ERR("provider %s: %s; use KINET_PROVIDER=soft", name, why);
	else if (ret)
		KINET_ERR("unknown provider '%s' (auto, soft or mlx5)", name);
	else {
		*chosen = p->name;
		*ops = p->ops;
	}
	return ret;
}

static int choose_cuda_device(int want, int *device)
{
	*device = -1;
	if (want == -2)
		return 0;
	if (want == -1) {
		if (kinet_cuda_available() && !kinet_cuda_select(0))
			*device = 0;
		return 0;
	}
	if (kinet_cuda_select(want)) {
		KINET_ERR("CUDA device %d is not available%s", want,
			  kinet_cuda_available() ? "" : " (no CUDA device, or a build without CUDA)");
		return -ENODEV;
	}
	*device = want;
	return 0;
}

static void ctx_free(struct kinet_ctx *ctx)
{
	kinet_host_free(ctx, ctx->dev_err);
	free(ctx->mr_table);
	kinet_brlock_destroy(&ctx->mr_lock);
	pthread_mutex_destroy(&ctx->obj_lock);
	pthread_mutex_destroy(&ctx->atomic_lock);
	pthread_mutex_destroy(&ctx->err_lock);
	free(ctx);
}

int kinet_ctx_open(const struct kinet_ctx_attr *attr, struct kinet_ctx **out)
{
	struct kinet_ctx_attr a;
	const struct kinet_provider_ops *ops;
	struct kinet_ctx *ctx;
	const char *provider, *provider_name;
	long nthreads;
	int ret;

	if (!out)
		return KINET_EINVAL("ctx", "NULL");
	*out = NULL;
	if (!attr)
		kinet_ctx_attr_init(&a);
	else if ((ret = kinet_attr_read("attr", attr, sizeof(a), &a)))
		return ret;
	attr = &a;
	if (attr->engine_threads < 0)
		return KINET_EINVAL("attr->engine_threads", "negative");
	if (attr->cuda_device < -2)
		return KINET_EINVAL("attr->cuda_device", "must be >= 0, -1 (default) or -2 (host only)");

	/* Every KINET_* variable, once per open, against the table: a bad
	 * value is refused here, naming it, rather than misleading later. */
	ret = kinet_env_check();
	if (ret)
		return ret;

	/* The provider first: it says how large its context is. */
	provider = attr->provider ? attr->provider : kinet_env_str("KINET_PROVIDER");
	ret = choose_provider(provider, &provider_name, &ops);
	if (ret)
		return ret;

	/* The registration lock's shards and obj_lock have lines of their own
	 * (ctx.h, brlock.h). */
	ctx = kinet_alloc_lines(ops->ctx_size);
	if (!ctx)
		return -ENOMEM;
	ctx->provider_name = provider_name;
	ctx->ops = ops;
	ctx->attr = *attr;
	ctx->cuda_device = -1;
	kinet_brlock_init(&ctx->mr_lock);
	pthread_mutex_init(&ctx->obj_lock, NULL);
	pthread_mutex_init(&ctx->atomic_lock, NULL);
	pthread_mutex_init(&ctx->err_lock, NULL);

	ret = choose_cuda_device(attr->cuda_device, &ctx->cuda_device);
	if (ret)
		goto err;

	pthread_once(&node_once, node_id_init);
	ctx->node_id = node_id;
	/* QPNs of different contexts of a process differ, so a stray QPN is
	 * caught rather than silently naming another context's QP. */
	ctx->next_qpn = (((atomic_fetch_add(&ctx_seq, 1) % 255) + 1) << 16) | 1;
	ctx->next_cqn = ctx->next_qpn;

	ctx->dev_err = kinet_host_alloc(ctx, sizeof(*ctx->dev_err));
	if (!ctx->dev_err) {
		ret = -ENOMEM;
		goto err;
	}

	nthreads = attr->engine_threads ? attr->engine_threads : kinet_env_long("KINET_ENGINE_THREADS");
	if (nthreads < 1)
		nthreads = 1;
	if (nthreads > KINET_MAX_ENGINE_THREADS)
		nthreads = KINET_MAX_ENGINE_THREADS;
	ret = ctx->ops->ctx_open(ctx, (int)nthreads);
	if (ret)
		goto err;
	ret = kinet_peer_ctx_add(ctx);
	if (ret) {
		ctx->ops->ctx_stop(ctx);
		goto err;
	}

	KINET_DBG("context open: provider %s, CUDA device %d, %ld engine threads, node %016llx",
		  ctx->provider_name, ctx->cuda_device, nthreads, (unsigned long long)ctx->node_id);
	*out = ctx;
	return 0;
err:
	ctx_free(ctx);
	return ret;
}

int kinet_ctx_close(struct kinet_ctx *ctx)
{
	if (!ctx)
		return KINET_EINVAL("ctx", "NULL");

	/* Peers' device code stops reaching this context's memory. */
	kinet_peer_ctx_remove(ctx);
	/* Engine first: after this nothing executes, so QPs can be torn down
	 * without handing them back to an engine thread. */
	ctx->ops->ctx_stop(ctx);
	atomic_store(&ctx->engine_stopped, true);

	/* Ports with their rules and queues (whose QPs and CQs go here). */
	kinet_eth_ctx_close(ctx);
	while (ctx->qps)
		kinet_qp_destroy(ctx->qps);
	while (ctx->srqs)
		kinet_srq_destroy(ctx->srqs);
	while (ctx->sems)
		kinet_sem_destroy(ctx->sems);
	while (ctx->cqs)
		kinet_cq_destroy(ctx->cqs);
	/* Regions a NIC knows go before its protection domain (ctx_close);
	 * the software NIC's carriers may still name theirs. */
	if (ctx->ops->mr_dereg)
		kinet_mr_table_free(ctx);
	/* Carriers last: engine thread 0 drove them and QPs used them. */
	ctx->ops->ctx_close(ctx);
	kinet_mr_table_free(ctx);
	ctx_free(ctx);
	return 0;
}

const char *kinet_ctx_provider(const struct kinet_ctx *ctx)
{
	return ctx ? ctx->provider_name : NULL;
}

uint32_t kinet_ctx_alloc_qpn(struct kinet_ctx *ctx)
{
	uint32_t qpn;

	pthread_mutex_lock(&ctx->obj_lock);
	qpn = ctx->next_qpn & 0xffffff;
	if (!qpn)
		qpn = 1;
	ctx->next_qpn = qpn + 1;
	pthread_mutex_unlock(&ctx->obj_lock);
	return qpn;
}

struct kinet_qp *kinet_ctx_find_qp(struct kinet_ctx *ctx, uint32_t qpn)
{
	struct kinet_qp *qp;

	pthread_mutex_lock(&ctx->obj_lock);
	for (qp = ctx->qps; qp; qp = qp->next_in_ctx)
		if (qp->qpn == qpn)
			break;
	pthread_mutex_unlock(&ctx->obj_lock);
	return qp;
}

struct kinet_qp *kinet_ctx_get_qp(struct kinet_ctx *ctx, uint32_t qpn)
{
	struct kinet_qp *qp;

	pthread_mutex_lock(&ctx->obj_lock);
	for (qp = ctx->qps; qp; qp = qp->next_in_ctx)
		if (qp->qpn == qpn)
			break;
	if (qp)
		kinet_qp_get(qp);
	pthread_mutex_unlock(&ctx->obj_lock);
	return qp;
}

/* ---- errors ---- */

void kinet_ctx_record_error(struct kinet_ctx *ctx, int status, uint32_t qpn, uint8_t syndrome, uint8_t opcode,
			    uint16_t wqe_counter)
{
	pthread_mutex_lock(&ctx->err_lock);
	if (!ctx->host_err.status && status) {
		ctx->host_err.status = status;
		ctx->host_err.qpn = qpn;
		ctx->host_err.syndrome = syndrome;
		ctx->host_err.opcode = opcode;
		ctx->host_err.wqe_counter = wqe_counter;
		ctx->host_err.source = KINET_ERROR_SOURCE_ENGINE;
	}
	pthread_mutex_unlock(&ctx->err_lock);
}

int kinet_ctx_last_error(struct kinet_ctx *ctx, struct kinet_error *err)
{
	struct kinet_dev_error *d;

	if (!ctx)
		return KINET_EINVAL("ctx", "NULL");
	if (!err)
		return KINET_EINVAL("err", "NULL");
	memset(err, 0, sizeof(*err));
	pthread_mutex_lock(&ctx->err_lock);
	d = ctx->dev_err;
	if (ctx->host_err.status) {
		*err = ctx->host_err;
	} else if (__atomic_load_n(&d->valid, __ATOMIC_ACQUIRE)) {
		err->status = d->status;
		err->qpn = d->qpn;
		err->syndrome = (uint8_t)d->syndrome;
		err->opcode = (uint8_t)d->opcode;
		err->wqe_counter = (uint16_t)d->wqe_counter;
		err->source = KINET_ERROR_SOURCE_DEVICE;
	}
	pthread_mutex_unlock(&ctx->err_lock);
	return 0;
}

void kinet_ctx_clear_error(struct kinet_ctx *ctx)
{
	struct kinet_dev_error *d;

	if (!ctx)
		return;
	pthread_mutex_lock(&ctx->err_lock);
	memset(&ctx->host_err, 0, sizeof(ctx->host_err));
	d = ctx->dev_err;
	/* Clear `valid` before releasing `claimed`: a device writer can only
	 * claim the record afterwards, so its new entry is never cleared. */
	__atomic_store_n(&d->valid, 0, __ATOMIC_RELAXED);
	d->status = 0;
	d->qpn = 0;
	d->syndrome = 0;
	d->opcode = 0;
	d->wqe_counter = 0;
	__atomic_store_n(&d->claimed, 0, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&ctx->err_lock);
}

/* ---- engine control ---- */

static int ctx_pause(struct kinet_ctx *ctx, bool paused, const char *func)
{
	if (!ctx)
		return KINET_EINVAL("ctx", "NULL");
	if (!ctx->ops->ctx_pause) {
		KINET_ERR("%s: provider %s executes WQEs in a NIC, which cannot be paused", func,
			  ctx->provider_name);
		return -EOPNOTSUPP;
	}
	ctx->ops->ctx_pause(ctx, paused);
	return 0;
}

int kinet_ctx_pause(struct kinet_ctx *ctx)
{
	return ctx_pause(ctx, true, __func__);
}

int kinet_ctx_resume(struct kinet_ctx *ctx)
{
	return ctx_pause(ctx, false, __func__);
}

int kinet_ctx_engine_stats(struct kinet_ctx *ctx, int thread, struct kinet_engine_stats *stats)
{
	if (!ctx)
		return KINET_EINVAL("ctx", "NULL");
	if (!stats)
		return KINET_EINVAL("stats", "NULL");
	if (thread < 0)
		return KINET_EINVAL("thread", "negative");
	if (!ctx->ops->ctx_engine_stats)
		return -ENOTSUP;
	return ctx->ops->ctx_engine_stats(ctx, thread, stats);
}
