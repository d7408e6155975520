/*
 * Remote protocol state of a context: carriers, connected QPs, transport
 * selection and the progress hook engine thread 0 calls on every pass.
 *
 * kinet_qp_info.transport layout (96 bytes, little-endian):
 *   [0..7]    host id: hash of /proc/sys/kernel/random/boot_id and the host
 *             name (two containers of one host with their own /dev/shm
 *             differ by host name);
 *   [8..19]   node carrier address (zero when the node carrier is closed);
 *   [20]      ofi carrier address length, 0 when there is none;
 *   [21..87]  ofi carrier address;
 *   [88..95]  the context's token (rp_msg.token in remote.h), which every
 *             message to it must carry.
 * $KINET_TRANSPORT=auto|local|node|ofi: auto picks local for a QP of the
 * same process (same node id), node for the same host id, else ofi; a
 * forced choice is used or the connect fails with the reason.  Forcing
 * node within one process works (two contexts talk over shared memory),
 * which is how single-process tests reach the protocol.
 *
 * Carriers open on first need.  An address in the info needs its carrier
 * open (an inbox in /dev/shm; a fabric endpoint, with tcp a listening
 * port), which costs start-up time, so kinet_qp_pack() opens one only when
 * a peer elsewhere may use it: $KINET_TRANSPORT names it, or the process is
 * one rank of several (ofi: of ranks that may span hosts), or
 * $KINET_CARRIERS=always (processes paired by hand, without a launcher).
 * A carrier opened on a guess that fails is reported at info level, since
 * nothing asked for it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "engine/engine.h"
#include "remote.h"

#define INFO_NODE_OFF 8
#define INFO_NODE_LEN 12
#define INFO_OFI_LEN_OFF 20
#define INFO_OFI_OFF 21
#define INFO_TOKEN_OFF (KINET_QP_INFO_TRANSPORT_BYTES - 8)
#define INFO_OFI_MAX (INFO_TOKEN_OFF - INFO_OFI_OFF)

/* Builds without libfabric have no ofi carrier; the weak reference is
 * NULL then, and the ofi transport reports it at connect. */
extern const struct kinet_carrier_ops kinet_carrier_ofi __attribute__((weak));

static pthread_once_t host_once = PTHREAD_ONCE_INIT;
static uint64_t host_id;

static uint64_t fnv1a(uint64_t h, const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		h ^= (uint8_t)s[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

static void host_id_init(void)
{
	char buf[256] = "";
	uint64_t h = 0xcbf29ce484222325ull;
	FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");

	if (f) {
		size_t n = fread(buf, 1, sizeof(buf) - 1, f);
		h = fnv1a(h, buf, n);
		fclose(f);
	}
	memset(buf, 0, sizeof(buf));
	gethostname(buf, sizeof(buf) - 1);
	host_id = fnv1a(h, buf, strlen(buf));
}

static void put64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t get64(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 0; i < 8; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

/* Who handles each kind of message.  A table rather than calls from here
 * into each part, so that the parts (remote_req.c, remote_tgt.c,
 * cuda_ipc.c, peer_path.c) depend only on msg.c below them and never on
 * this file, which receives for all of them. */
static rp_handler_fn *const handlers[] = {
	[RP_REQ] = rp_on_request,
	[RP_RESP] = rp_on_response,
	[RP_IPC_PROBE] = rp_ipc_on_probe,
	[RP_IPC_ACK] = rp_ipc_on_ack,
	[RP_PING] = rp_on_ping,
	[RP_PONG] = rp_on_pong,
	[RP_PEER_HELLO] = rp_peer_on_hello,
	[RP_PEER_WINDOW] = rp_peer_on_window,
	[RP_PEER_REVOKE] = rp_peer_on_revoke,
	[RP_PEER_ACK] = rp_peer_on_ack,
};

static void deliver(struct kinet_carrier *c, struct kinet_carrier_peer *peer, const void *msg, size_t len,
		    void *arg)
{
	struct rp_state *rs = arg;
	struct rp_msg m;
	struct rp_carrier *car = NULL;

	if (len < sizeof(m)) {
		rp_drop(rs, RP_DROP_GARBLED, NULL);
		return;
	}
	memcpy(&m, msg, sizeof(m));
	if (m.magic != RP_MAGIC || m.version != RP_VERSION || m.frag_len != len - sizeof(m) ||
	    m.frag_len > RP_FRAG) {
		rp_drop(rs, RP_DROP_GARBLED, NULL);
		return;
	}
	/* Before anything of the message is looked at. */
	if (m.token != rs->token) {
		rp_drop(rs, RP_DROP_TOKEN, &m);
		return;
	}
	for (int k = 0; k < RP_NKINDS; k++)
		if (rs->car[k].c == c)
			car = &rs->car[k];
	if (m.type >= sizeof(handlers) / sizeof(handlers[0]) || !handlers[m.type]) {
		KINET_WARN("remote: dropping a message of unknown type %u", m.type);
		return;
	}
	handlers[m.type](rs, car, peer, &m, (const uint8_t *)msg + sizeof(m));
}

static int remote_progress(struct kinet_ctx *ctx)
{
	struct rp_state *rs = kinet_sctx(ctx)->remote;
	int work = 0;

	kinet_mr_table_rdlock(ctx);
	pthread_mutex_lock(&rs->lock);
	for (int k = 0; k < RP_NKINDS; k++) {
		struct rp_carrier *car = &rs->car[k];

		if (car->c) {
			int n = car->ops->progress(car->c, deliver, rs);
			if (n > 0)
				work += n;
		}
	}
	work += rp_target_progress(rs);
	rp_peer_progress(rs);
	pthread_mutex_unlock(&rs->lock);
	kinet_mr_table_unlock(ctx);
	return work;
}

/* Engine thread 0, at the end of its pass: what the pass sent goes
 * out together (a carrier's bundles, ofi_tx.c).  No lock: the carriers
 * that flush are published once open (rp_carrier_get). */
static void remote_flush(struct kinet_ctx *ctx)
{
	struct rp_state *rs = kinet_sctx(ctx)->remote;

	for (int k = 0; k < RP_NKINDS; k++)
		if (__atomic_load_n(&rs->car[k].flushes, __ATOMIC_ACQUIRE))
			rs->car[k].ops->flush(rs->car[k].c);
}

struct rp_state *rp_state_get(struct kinet_ctx *ctx)
{
	struct rp_state *rs;

	pthread_mutex_lock(&ctx->obj_lock);
	rs = kinet_sctx(ctx)->remote;
	if (!rs && (rs = calloc(1, sizeof(*rs)))) {
		rs->ctx = ctx;
		/* Unpredictable enough to tell jobs and contexts apart; where
		 * getrandom fails, the clock and addresses still differ. */
		if (getrandom(&rs->token, sizeof(rs->token), GRND_NONBLOCK) != sizeof(rs->token))
			rs->token = kinet_now_ns() ^ ((uint64_t)getpid() << 32) ^ (uintptr_t)rs;
		rs->token |= 1; /* 0 is what a peer that was never told sends */
		pthread_mutex_init(&rs->lock, NULL);
		rs->car[RP_NODE].ops = &kinet_carrier_node;
		rs->car[RP_OFI].ops = &kinet_carrier_ofi; /* NULL without libfabric */
		kinet_sctx(ctx)->remote = rs;
		/* Release: the engine threads see the state before the hooks. */
		__atomic_store_n(&kinet_sctx(ctx)->remote_progress, remote_progress, __ATOMIC_RELEASE);
		__atomic_store_n(&kinet_sctx(ctx)->remote_flush, remote_flush, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&ctx->obj_lock);
	return rs;
}

struct rp_carrier *rp_carrier_get(struct rp_state *rs, enum rp_kind kind, bool asked)
{
	struct rp_carrier *car = &rs->car[kind];
	const char *name = kind == RP_NODE ? "node" : "ofi";

	if (!car->tried) {
		bool was = kinet_log_demote(!asked);

		car->tried = true;
		car->rc = car->ops ? car->ops->open(rs->ctx, &car->c) : -ENOSYS;
		if (car->c && car->ops->flush)
			__atomic_store_n(&car->flushes, true, __ATOMIC_RELEASE);
		kinet_log_demote(was);
		car->reported = asked;
		if (car->rc)
			KINET_INFO("remote: %s carrier unavailable: %s", name,
				   car->ops ? kinet_strerror(car->rc) : "built without libfabric");
	} else if (!car->c && asked && !car->reported) {
		/* It failed when nothing asked for it, so quietly. */
		car->reported = true;
		KINET_ERR("remote: the %s carrier did not open: %s (KINET_LOG=info shows why)", name,
			  kinet_strerror(car->rc));
	}
	return car->c ? car : NULL;
}

static const char *transport_mode(void)
{
	return kinet_env_str("KINET_TRANSPORT");
}

/* Whether kinet_qp_pack() opens the node and the ofi carrier (see the top
 * of this file). */
static void carriers_wanted(const char *mode, bool *node, bool *ofi)
{
	const char *when = kinet_env_str("KINET_CARRIERS");
	bool always = !strcmp(when, "always"), front_node, front_ofi;
	int nranks, local;

	if (kinet_front_pack_carriers_take(&front_node, &front_ofi) && !strcmp(mode, "auto")) {
		*node = front_node || always;
		*ofi = front_ofi || always;
		return;
	}
	kinet_job_size(&nranks, &local);
	*node = !strcmp(mode, "node") || (!strcmp(mode, "auto") && (always || nranks > 1));
	*ofi = !strcmp(mode, "ofi") || (!strcmp(mode, "auto") && (always || local < nranks));
}

void kinet_remote_fill_info(struct kinet_ctx *ctx, struct kinet_qp_info *info)
{
	const char *mode = transport_mode();
	bool asked = strcmp(mode, "auto") != 0, want_node, want_ofi;
	struct rp_state *rs;
	struct rp_carrier *car;

	pthread_once(&host_once, host_id_init);
	put64(info->transport, host_id);
	carriers_wanted(mode, &want_node, &want_ofi);
	if ((!want_node && !want_ofi) || !(rs = rp_state_get(ctx)))
		return;
	pthread_mutex_lock(&rs->lock);
	put64(info->transport + INFO_TOKEN_OFF, rs->token);
	if (want_node && (car = rp_carrier_get(rs, RP_NODE, asked))) {
		size_t len = INFO_NODE_LEN;

		if (car->ops->address(car->c, info->transport + INFO_NODE_OFF, &len) || len != INFO_NODE_LEN)
			memset(info->transport + INFO_NODE_OFF, 0, INFO_NODE_LEN);
	}
	if (want_ofi && (car = rp_carrier_get(rs, RP_OFI, asked))) {
		uint8_t addr[KINET_CARRIER_ADDR_MAX];
		size_t len = sizeof(addr);

		if (car->ops->address(car->c, addr, &len) == 0 && len <= INFO_OFI_MAX) {
			info->transport[INFO_OFI_LEN_OFF] = (uint8_t)len;
			memcpy(info->transport + INFO_OFI_OFF, addr, len);
		} else {
			KINET_WARN("remote: ofi address does not fit in kinet_qp_info (%zu > %d bytes)", len,
				   INFO_OFI_MAX);
		}
	}
	pthread_mutex_unlock(&rs->lock);
}

static bool has_node_addr(const struct kinet_qp_info *info)
{
	static const uint8_t zero[INFO_NODE_LEN];

	return memcmp(info->transport + INFO_NODE_OFF, zero, INFO_NODE_LEN) != 0;
}

const struct kinet_transport_ops *kinet_remote_choose(struct kinet_ctx *ctx,
						      const struct kinet_qp_info *remote)
{
	const char *mode = transport_mode();
	bool same_proc = remote->node_id == ctx->node_id;
	bool same_host, node_ok, ofi_ok;

	pthread_once(&host_once, host_id_init);
	same_host = get64(remote->transport) == host_id;
	node_ok = same_host && has_node_addr(remote);
	ofi_ok = remote->transport[INFO_OFI_LEN_OFF] != 0 && &kinet_carrier_ofi != NULL;

	if (!strcmp(mode, "local") || (!strcmp(mode, "auto") && same_proc)) {
		if (same_proc)
			return &kinet_transport_local;
		KINET_ERR("KINET_TRANSPORT=local, but QP %u lives in another process", remote->qpn);
		return NULL;
	}
	if (!strcmp(mode, "node") || (!strcmp(mode, "auto") && node_ok)) {
		if (node_ok)
			return &kinet_transport_node;
		KINET_ERR("node transport: QP %u is %s", remote->qpn,
			  same_host ? "of a context without a shared-memory inbox" : "on another host");
		return NULL;
	}
	if (!strcmp(mode, "auto") && !has_node_addr(remote) && !remote->transport[INFO_OFI_LEN_OFF]) {
		KINET_ERR("QP %u is of a process that opened no carriers: kinet_qp_pack() opens them "
			  "in a rank of a launched job (kinetrun, mpirun, srun, kinet_boot); set "
			  "KINET_CARRIERS=always in processes paired by other means",
			  remote->qpn);
		return NULL;
	}
	if (!strcmp(mode, "ofi") || !strcmp(mode, "auto")) {
		if (ofi_ok)
			return &kinet_transport_ofi;
		KINET_ERR("ofi transport: %s", &kinet_carrier_ofi == NULL
						       ? "this build has no libfabric"
						       : "the peer published no fabric address");
		return NULL;
	}
	KINET_ERR("KINET_TRANSPORT=%s: expected auto, local, node or ofi", mode);
	return NULL;
}

static int rp_connect(struct kinet_qp *qp, const struct kinet_qp_info *remote, enum rp_kind kind)
{
	struct rp_state *rs = rp_state_get(qp->ctx);
	struct rp_carrier *car;
	struct rp_qp *p;
	const uint8_t *addr =
		kind == RP_NODE ? remote->transport + INFO_NODE_OFF : remote->transport + INFO_OFI_OFF;
	size_t len = kind == RP_NODE ? INFO_NODE_LEN : remote->transport[INFO_OFI_LEN_OFF];
	int ret;

	if (!rs || !(p = calloc(1, sizeof(*p))))
		return -ENOMEM;
	pthread_mutex_lock(&rs->lock);
	car = rp_carrier_get(rs, kind, true);
	if (!car) {
		pthread_mutex_unlock(&rs->lock);
		free(p);
		return -ENODEV;
	}
	ret = car->ops->peer_get(car->c, addr, len, &p->peer);
	if (ret) {
		pthread_mutex_unlock(&rs->lock);
		free(p);
		return ret;
	}
	p->qp = qp;
	p->car = car;
	p->peer_token = get64(remote->transport + INFO_TOKEN_OFF);
	p->next_seq = 1;
	p->oldest = 1;
	p->next = rs->qps;
	rs->qps = p;
	kinet_sqp(qp)->transport_priv = p;
	pthread_mutex_unlock(&rs->lock);
	return 0;
}

static int node_connect(struct kinet_qp *qp, const struct kinet_qp_info *remote)
{
	return rp_connect(qp, remote, RP_NODE);
}

static int ofi_connect(struct kinet_qp *qp, const struct kinet_qp_info *remote)
{
	return rp_connect(qp, remote, RP_OFI);
}

static void rp_disconnect(struct kinet_qp *qp)
{
	struct rp_state *rs = kinet_sctx(qp->ctx)->remote;
	struct rp_qp **pp;

	if (!rs || !kinet_sqp(qp)->transport_priv)
		return;
	pthread_mutex_lock(&rs->lock);
	for (pp = &rs->qps; *pp; pp = &(*pp)->next) {
		if (*pp == kinet_sqp(qp)->transport_priv) {
			*pp = (*pp)->next;
			break;
		}
	}
	rp_target_qp_gone(rs, qp->qpn);
	pthread_mutex_unlock(&rs->lock);
	rp_ipc_qp_free(kinet_sqp(qp)->transport_priv);
	free(kinet_sqp(qp)->transport_priv);
	kinet_sqp(qp)->transport_priv = NULL;
}

void kinet_remote_close(struct kinet_ctx *ctx)
{
	struct rp_state *rs = kinet_sctx(ctx)->remote;

	if (!rs)
		return;
	__atomic_store_n(&kinet_sctx(ctx)->remote_progress, NULL, __ATOMIC_RELAXED); /* engine stopped */
	__atomic_store_n(&kinet_sctx(ctx)->remote_flush, NULL, __ATOMIC_RELAXED);
	kinet_sctx(ctx)->remote = NULL;
	rp_target_free(rs);
	rp_peer_free(rs);
	rp_ipc_close(rs);
	for (int k = 0; k < RP_NKINDS; k++)
		if (rs->car[k].c)
			rs->car[k].ops->close(rs->car[k].c);
	pthread_mutex_destroy(&rs->lock);
	free(rs);
}

const struct kinet_transport_ops kinet_transport_node = {
	.name = "node",
	.connect = node_connect,
	.disconnect = rp_disconnect,
	.execute = rp_execute,
	.op_done = rp_op_done,
	.peer_hello = rp_peer_hello,
};

const struct kinet_transport_ops kinet_transport_ofi = {
	.name = "ofi",
	.connect = ofi_connect,
	.disconnect = rp_disconnect,
	.execute = rp_execute,
	.op_done = rp_op_done,
};
