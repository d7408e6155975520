/*
 * Ethernet ports, packet queues and steering rules (kinet/eth.h,
 * kinet_eth_port(3), kinet_eth_flow(3)).  A port wraps a Linux interface
 * the provider opens; each receive and send queue is a raw-packet QP of
 * the port (its receive side, or its send side), so device code drives it
 * with the RC QP's rings, doorbells and CQs.  Rules live here, sorted, and
 * the provider's receive pass asks kinet_eth_port_steer for each frame's
 * queue (docs/ETHERNET.md, "Ports, queues and steering"; lifetimes:
 * docs/LIFETIMES.md).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "kinet/eth.h"
#include "provider.h"

#define ETH_TXQ_MIN 16u
#define ETH_TXQ_MAX 32768u
#define ETH_RXQ_MIN_PKTS 16u
#define ETH_MIN_PKT_SIZE 64u
#define ETH_POST_BATCH 256

static bool is_pow2(uint32_t v)
{
	return v && !(v & (v - 1));
}

static uint16_t get_be16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

/* ---- rules and RSS (pure) ---------------------------------------------- */

void kinet_eth_frame_key(const uint8_t *f, uint32_t len, struct kinet_eth_frame_key *k)
{
	uint32_t off = 14;
	uint16_t et;

	memset(k, 0, sizeof(*k));
	if (len < 14)
		return;
	et = get_be16(f + 12);
	if (et == 0x8100 || et == 0x88a8) {
		if (len < 18)
			return;
		et = get_be16(f + 16);
		off = 18;
	}
	k->ethertype = et;
	if (et == 0x0800 && len >= off + 20 && f[off] >> 4 == 4) {
		uint32_t ihl = (uint32_t)(f[off] & 0xf) * 4;

		if (ihl < 20 || off + ihl > len)
			return;
		k->ip = true;
		k->l3 = off;
		k->ip_proto = f[off + 9];
		/* Only a first fragment (or a whole datagram) has the ports. */
		if ((get_be16(f + off + 6) & 0x1fff) == 0 && (k->ip_proto == 6 || k->ip_proto == 17) &&
		    off + ihl + 4 <= len) {
			k->ports = true;
			k->l4 = off + ihl;
		}
	} else if (et == 0x86dd && len >= off + 40 && f[off] >> 4 == 6) {
		k->ip = true;
		k->ipv6 = true;
		k->l3 = off;
		k->ip_proto = f[off + 6];
		/* No extension headers are walked (a ConnectX steers on the
		 * next header too). */
		if ((k->ip_proto == 6 || k->ip_proto == 17) && off + 44 <= len) {
			k->ports = true;
			k->l4 = off + 40;
		}
	}
	if (k->ports)
		k->dst_port = get_be16(f + k->l4 + 2);
}

bool kinet_eth_rule_matches(const struct kinet_eth_flow_attr *a, const struct kinet_eth_frame_key *k)
{
	if ((a->match & KINET_ETH_MATCH_ETHERTYPE) && k->ethertype != a->ethertype)
		return false;
	if ((a->match & KINET_ETH_MATCH_IP_PROTO) && (!k->ip || k->ip_proto != a->ip_proto))
		return false;
	if ((a->match & KINET_ETH_MATCH_DST_PORT) && (!k->ports || k->dst_port != a->dst_port))
		return false;
	return true;
}

int kinet_eth_flow_table_add(struct kinet_eth_flow_table *t, struct kinet_eth_flow *f)
{
	uint32_t at;

	if (t->n == t->cap) {
		uint32_t cap = t->cap ? t->cap * 2 : 8;
		struct kinet_eth_flow **v = realloc(t->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		t->v = v;
		t->cap = cap;
	}
	/* After every rule of the same priority: creation order. */
	for (at = 0; at < t->n && t->v[at]->attr.priority <= f->attr.priority; at++)
		;
	memmove(&t->v[at + 1], &t->v[at], (t->n - at) * sizeof(*t->v));
	t->v[at] = f;
	t->n++;
	f->seq = t->seq++;
	return 0;
}

void kinet_eth_flow_table_del(struct kinet_eth_flow_table *t, const struct kinet_eth_flow *f)
{
	for (uint32_t i = 0; i < t->n; i++) {
		if (t->v[i] == f) {
			memmove(&t->v[i], &t->v[i + 1], (t->n - i - 1) * sizeof(*t->v));
			t->n--;
			return;
		}
	}
}

void kinet_eth_flow_table_free(struct kinet_eth_flow_table *t)
{
	free(t->v);
	memset(t, 0, sizeof(*t));
}

struct kinet_eth_flow *kinet_eth_flow_table_match(const struct kinet_eth_flow_table *t, const uint8_t *frame,
						  uint32_t len)
{
	struct kinet_eth_frame_key k;

	kinet_eth_frame_key(frame, len, &k);
	for (uint32_t i = 0; i < t->n; i++)
		if (kinet_eth_rule_matches(&t->v[i]->attr, &k))
			return t->v[i];
	return NULL;
}

/* Microsoft's RSS verification key, the default of most NICs' RSS. */
static const uint8_t rss_key[40] = {
	0x6d, 0x5a, 0x56, 0xda, 0x25, 0x5b, 0x0e, 0xc2, 0x41, 0x67, 0x25, 0x3d, 0x43, 0xa3,
	0x8f, 0xb0, 0xd0, 0xca, 0x2b, 0xcb, 0xae, 0x7b, 0x30, 0xb4, 0x77, 0xcb, 0x2d, 0xa3,
	0x80, 0x30, 0xf2, 0x0c, 0x6a, 0x42, 0xb7, 0x3b, 0xbe, 0xac, 0x01, 0xfa,
};

/* Toeplitz over n <= 36 bytes: for each set input bit, the 32 key bits
 * starting at that bit's position. */
static uint32_t toeplitz(const uint8_t *in, uint32_t n)
{
	uint32_t h = 0;
	uint32_t win = (uint32_t)rss_key[0] << 24 | (uint32_t)rss_key[1] << 16 | (uint32_t)rss_key[2] << 8 |
		       rss_key[3];

	for (uint32_t i = 0; i < n; i++) {
		for (int b = 7; b >= 0; b--) {
			uint32_t next = i * 8 + (uint32_t)(7 - b) + 32; /* the key bit shifted in */

			if (in[i] >> b & 1)
				h ^= win;
			win = win << 1 | (uint32_t)(rss_key[next / 8] >> (7 - next % 8) & 1);
		}
	}
	return h;
}

uint32_t kinet_eth_rss_hash(const void *frame, size_t len)
{
	const uint8_t *f = frame;
	struct kinet_eth_frame_key k;
	uint8_t in[36];
	uint32_t n;

	if (!frame || len > UINT32_MAX)
		return 0;
	kinet_eth_frame_key(f, (uint32_t)len, &k);
	if (!k.ip)
		return 0;
	/* Source and destination address (IPv4 at 12, IPv6 at 8), then the
	 * source and destination ports: the order of the wire. */
	n = k.ipv6 ? 32 : 8;
	memcpy(in, f + k.l3 + (k.ipv6 ? 8 : 12), n);
	if (k.ports) {
		memcpy(in + n, f + k.l4, 4);
		n += 4;
	}
	return toeplitz(in, n);
}

struct kinet_eth_rxq *kinet_eth_port_steer(struct kinet_eth_port *port, const uint8_t *frame, uint32_t len)
{
	struct kinet_eth_flow *f = kinet_eth_flow_table_match(&port->rules, frame, len);

	if (!f)
		return NULL;
	switch (f->attr.action) {
	case KINET_ETH_ACTION_QUEUE:
		return f->queues[0];
	case KINET_ETH_ACTION_RSS:
		return f->queues[kinet_eth_rss_hash(frame, len) % f->attr.nqueues];
	default:
		return NULL;
	}
}

/* ---- ports --------------------------------------------------------------- */

void kinet_eth_port_attr_init(struct kinet_eth_port_attr *attr)
{
	if (!attr)
		return;
	memset(attr, 0, sizeof(*attr));
	attr->size = sizeof(*attr);
}

int kinet_eth_port_open(struct kinet_ctx *ctx, const struct kinet_eth_port_attr *attr,
			struct kinet_eth_port **out)
{
	struct kinet_eth_port_attr a;
	struct kinet_eth_port *port;
	int ret;

	if (!out)
		return KINET_EINVAL("port", "NULL");
	*out = NULL;
	if (!ctx)
		return KINET_EINVAL("ctx", "NULL");
	if (!attr)
		return KINET_EINVAL("attr", "NULL");
	if ((ret = kinet_attr_read("attr", attr, sizeof(a), &a)))
		return ret;
	if (!a.ifname || !a.ifname[0])
		return KINET_EINVAL("attr->ifname", "NULL or empty");
	if (strlen(a.ifname) >= sizeof(port->ifname))
		return KINET_EINVAL("attr->ifname", "longer than an interface name can be (15 characters)");
	if (a.rx_frames && (a.rx_frames < 16 || !is_pow2(a.rx_frames)))
		return KINET_EINVAL("attr->rx_frames", "must be 0 or a power of two >= 16");
	if (a.backend < KINET_ETH_BACKEND_AUTO || a.backend > KINET_ETH_BACKEND_XDP_NATIVE)
		return KINET_EINVAL("attr->backend", "not an enum kinet_eth_backend");
	if (!ctx->ops->eth_port_open) {
		KINET_ERR("%s: the %s provider has no Ethernet queues", __func__, ctx->provider_name);
		return -EOPNOTSUPP;
	}
	port = calloc(1, sizeof(*port));
	if (!port)
		return -ENOMEM;
	port->ctx = ctx;
	strcpy(port->ifname, a.ifname);
	port->rx_frames = a.rx_frames;
	port->backend = a.backend;
	pthread_rwlock_init(&port->lock, NULL);
	ret = ctx->ops->eth_port_open(port);
	if (ret) {
		pthread_rwlock_destroy(&port->lock);
		free(port);
		return ret;
	}
	pthread_mutex_lock(&ctx->obj_lock);
	port->next_in_ctx = ctx->eth_ports;
	ctx->eth_ports = port;
	pthread_mutex_unlock(&ctx->obj_lock);
	KINET_DBG("eth port %s: MTU %u, %u receive ring frames", port->ifname, port->mtu,
		  port->rx_frames ? port->rx_frames : 4096u);
	*out = port;
	return 0;
}

int kinet_eth_port_close(struct kinet_eth_port *port)
{
	struct kinet_ctx *ctx;
	struct kinet_eth_port **p;
	bool busy;

	if (!port)
		return KINET_EINVAL("port", "NULL");
	ctx = port->ctx;
	pthread_rwlock_rdlock(&port->lock);
	busy = port->rxqs || port->txqs || port->nflows;
	pthread_rwlock_unlock(&port->lock);
	if (busy) {
		KINET_ERR("%s: port %s still has queues or rules: destroy them first", __func__,
			  port->ifname);
		return -EBUSY;
	}
	pthread_mutex_lock(&ctx->obj_lock);
	for (p = &ctx->eth_ports; *p && *p != port; p = &(*p)->next_in_ctx)
		;
	if (*p)
		*p = port->next_in_ctx;
	pthread_mutex_unlock(&ctx->obj_lock);
	/* The provider's receive pass lets go of the port before this returns. */
	ctx->ops->eth_port_close(port);
	kinet_eth_flow_table_free(&port->rules);
	pthread_rwlock_destroy(&port->lock);
	free(port);
	return 0;
}

int kinet_eth_port_mac(const struct kinet_eth_port *port, uint8_t mac[6])
{
	if (!port)
		return KINET_EINVAL("port", "NULL");
	if (!mac)
		return KINET_EINVAL("mac", "NULL");
	memcpy(mac, port->mac, 6);
	return 0;
}

uint32_t kinet_eth_port_mtu(const struct kinet_eth_port *port)
{
	return port ? port->mtu : 0;
}

int kinet_eth_port_stats(struct kinet_eth_port *port, struct kinet_eth_port_stats *s)
{
	const struct kinet_eth_counters *c;

	if (!port)
		return KINET_EINVAL("port", "NULL");
	if (!s)
		return KINET_EINVAL("stats", "NULL");
	c = &port->stats;
	s->rx_frames = atomic_load_explicit(&c->rx_frames, memory_order_relaxed);
	s->rx_delivered = atomic_load_explicit(&c->rx_delivered, memory_order_relaxed);
	s->rx_drop_no_rule = atomic_load_explicit(&c->rx_drop_no_rule, memory_order_relaxed);
	s->rx_drop_queue_full = atomic_load_explicit(&c->rx_drop_queue_full, memory_order_relaxed);
	s->rx_drop_too_long = atomic_load_explicit(&c->rx_drop_too_long, memory_order_relaxed);
	s->rx_drop_carrier = port->ctx->ops->eth_port_rx_dropped(port);
	s->tx_frames = atomic_load_explicit(&c->tx_frames, memory_order_relaxed);
	s->tx_errors = atomic_load_explicit(&c->tx_errors, memory_order_relaxed);
	return 0;
}

int kinet_eth_port_backend(const struct kinet_eth_port *port)
{
	if (!port)
		return KINET_EINVAL("port", "NULL");
	return port->backend_used;
}

int kinet_eth_port_status(struct kinet_eth_port *port)
{
	if (!port)
		return KINET_EINVAL("port", "NULL");
	return port->ctx->ops->eth_port_status(port);
}

/* ---- receive queues ------------------------------------------------------ */

void kinet_eth_rxq_attr_init(struct kinet_eth_rxq_attr *attr)
{
	if (!attr)
		return;
	memset(attr, 0, sizeof(*attr));
	attr->size = sizeof(*attr);
	attr->npkts = 1024;
	attr->max_pkt_size = 2048;
	attr->mem = KINET_ETH_MEM_HOST_MAPPED;
}

static int no_gpu(const char *fn)
{
	KINET_ERR("%s: GPU memory asked for (KINET_ETH_MEM_GPU), but the context has no CUDA device (%s): "
		  "use KINET_ETH_MEM_HOST_MAPPED or KINET_ETH_MEM_HOST",
		  fn,
#ifdef KINET_HAVE_CUDA
		  "opened host-only, or no device found"
#else
		  "libkinet is built without CUDA"
#endif
	);
	return -ENODEV;
}

static void rxq_free_memory(struct kinet_eth_rxq *q)
{
	struct kinet_ctx *ctx = q->port->ctx;

	if (!q->buf)
		return;
	switch (q->attr.mem) {
	case KINET_ETH_MEM_HOST_MAPPED:
		kinet_host_free(ctx, q->buf);
		break;
	case KINET_ETH_MEM_GPU:
		kinet_cuda_free(ctx, q->buf);
		break;
	default:
		free(q->buf);
		break;
	}
	q->buf = NULL;
}

/* The QP of a queue, made a raw-packet QP of port and started. */
static int raw_qp_start(struct kinet_eth_port *port, struct kinet_qp *qp, uint8_t cs_flags, bool timed)
{
	int ret = port->ctx->ops->eth_qp_attach(qp, port, cs_flags, timed);

	if (ret)
		return ret;
	/* Release: the engine that sees RTS sees the QP's transport. */
	atomic_store_explicit(&qp->state, KINET_QPS_RTS, memory_order_release);
	port->ctx->ops->doorbell(qp);
	return 0;
}

static void rxq_free(struct kinet_eth_rxq *q)
{
	if (q->qp)
		kinet_qp_destroy(q->qp);
	if (q->cq)
		kinet_cq_destroy(q->cq);
	if (q->scq)
		kinet_cq_destroy(q->scq);
	if (q->mr)
		kinet_mr_dereg(q->mr);
	rxq_free_memory(q);
	if (q->dev)
		kinet_cuda_free(q->port->ctx, q->dev);
	pthread_mutex_destroy(&q->export_lock);
	free(q);
}

int kinet_eth_rxq_create(struct kinet_eth_port *port, const struct kinet_eth_rxq_attr *attr,
			 struct kinet_eth_rxq **out)
{
	struct kinet_eth_rxq_attr a;
	struct kinet_cq_attr ca;
	struct kinet_qp_attr qa;
	struct kinet_eth_rxq *q;
	struct kinet_ctx *ctx;
	int ret;

	if (!out)
		return KINET_EINVAL("rxq", "NULL");
	*out = NULL;
	if (!port)
		return KINET_EINVAL("port", "NULL");
	if (!attr)
		return KINET_EINVAL("attr", "NULL");
	if ((ret = kinet_attr_read("attr", attr, sizeof(a), &a)))
		return ret;
	if (a.npkts < ETH_RXQ_MIN_PKTS || a.npkts > KINET_ETH_MAX_PKTS || !is_pow2(a.npkts))
		return KINET_EINVAL("attr->npkts", "must be a power of two, 16..KINET_ETH_MAX_PKTS (32768)");
	if (a.max_pkt_size < ETH_MIN_PKT_SIZE || a.max_pkt_size > KINET_ETH_MAX_PKT_SIZE)
		return KINET_EINVAL("attr->max_pkt_size", "must be 64..KINET_ETH_MAX_PKT_SIZE (9216)");
	if (a.mem != KINET_ETH_MEM_HOST_MAPPED && a.mem != KINET_ETH_MEM_GPU && a.mem != KINET_ETH_MEM_HOST)
		return KINET_EINVAL("attr->mem", "not an enum kinet_eth_mem");
	ctx = port->ctx;
	if (a.mem == KINET_ETH_MEM_GPU && ctx->cuda_device < 0)
		return no_gpu(__func__);

	q = calloc(1, sizeof(*q));
	if (!q)
		return -ENOMEM;
	q->port = port;
	q->attr = a;
	pthread_mutex_init(&q->export_lock, NULL);
	q->bytes = (size_t)a.npkts * a.max_pkt_size;
	switch (a.mem) {
	case KINET_ETH_MEM_HOST_MAPPED:
		q->buf = kinet_host_alloc(ctx, q->bytes);
		q->dbuf = q->buf ? kinet_host_dev_ptr(ctx, q->buf) : NULL;
		break;
	case KINET_ETH_MEM_GPU:
		q->buf = kinet_cuda_alloc(ctx, q->bytes);
		q->dbuf = q->buf;
		break;
	default:
		if (posix_memalign((void **)&q->buf, 4096, q->bytes))
			q->buf = NULL;
		else
			memset(q->buf, 0, q->bytes);
		q->dbuf = q->buf;
		break;
	}
	ret = q->buf && q->dbuf ? 0 : -ENOMEM;
	if (!ret)
		ret = kinet_mr_reg(ctx, q->buf, q->bytes, KINET_ACCESS_LOCAL_WRITE, &q->mr);
	if (!ret) {
		/* One CQE per posted receive at most: the consumer hands a slot
		 * back only after its CQE, so the ring cannot be written over
		 * unread, and device code need not publish its index.  Twice
		 * the slots: what kinet_qp_export asks of an exported QP. */
		kinet_cq_attr_init(&ca);
		ca.depth = 2 * a.npkts;
		ca.flags = KINET_CQ_IGNORE_OVERRUN;
		ret = kinet_cq_create(ctx, &ca, &q->cq);
	}
	if (!ret) {
		kinet_cq_attr_init(&ca);
		ca.depth = 16;
		ret = kinet_cq_create(ctx, &ca, &q->scq);
	}
	if (!ret) {
		kinet_qp_attr_init(&qa);
		qa.send_cq = q->scq;
		qa.recv_cq = q->cq;
		qa.sq_depth = 1;
		qa.rq_depth = a.npkts;
		qa.max_recv_sge = 1;
		qa.max_inline = 0;
		ret = kinet_qp_create(ctx, &qa, &q->qp);
	}
	if (!ret)
		ret = raw_qp_start(port, q->qp, 0, false);
	/* Every slot's receive WQE, posted once: WQE i is slot i. */
	for (uint32_t i = 0; !ret && i < a.npkts; i += ETH_POST_BATCH) {
		struct kinet_sge sge[ETH_POST_BATCH];
		struct kinet_recv_wr wr[ETH_POST_BATCH];
		int n = 0;

		for (uint32_t j = i; j < a.npkts && n < ETH_POST_BATCH; j++, n++) {
			sge[n] = (struct kinet_sge){
				.addr = (uint64_t)(uintptr_t)(q->buf + (size_t)j * a.max_pkt_size),
				.length = a.max_pkt_size,
				.lkey = kinet_mr_lkey(q->mr)};
			wr[n] = (struct kinet_recv_wr){.wr_id = j, .sg_list = &sge[n], .num_sge = 1};
		}
		ret = kinet_qp_post_recv(q->qp, wr, n, NULL);
	}
	if (ret) {
		rxq_free(q);
		return ret;
	}
	pthread_rwlock_wrlock(&port->lock);
	q->next = port->rxqs;
	port->rxqs = q;
	pthread_rwlock_unlock(&port->lock);
	KINET_DBG("eth port %s: rxq %u, %u slots of %u bytes", port->ifname, q->qp->qpn, a.npkts,
		  a.max_pkt_size);
	*out = q;
	return 0;
}

int kinet_eth_rxq_destroy(struct kinet_eth_rxq *q)
{
	struct kinet_eth_port *port;
	struct kinet_eth_rxq **p;

	if (!q)
		return KINET_EINVAL("rxq", "NULL");
	port = q->port;
	/* Under the write lock: no receive pass is placing a frame in it,
	 * and with no rule naming it none will. */
	pthread_rwlock_wrlock(&port->lock);
	if (q->flows) {
		pthread_rwlock_unlock(&port->lock);
		KINET_ERR("%s: rxq %u: %u rule(s) still steer to it: destroy them first", __func__,
			  q->qp->qpn, q->flows);
		return -EBUSY;
	}
	for (p = &port->rxqs; *p && *p != q; p = &(*p)->next)
		;
	if (*p)
		*p = q->next;
	pthread_rwlock_unlock(&port->lock);
	rxq_free(q);
	return 0;
}

int kinet_eth_rxq_export(struct kinet_eth_rxq *q, struct kinet_dev_eth_rxq **drxq)
{
	struct kinet_dev_eth_rxq d;
	int ret = 0;

	if (!q)
		return KINET_EINVAL("rxq", "NULL");
	if (!drxq)
		return KINET_EINVAL("drxq", "NULL");
	pthread_mutex_lock(&q->export_lock);
	if (!q->dev) {
		memset(&d, 0, sizeof(d));
		ret = kinet_qp_export(q->qp, &d.qp);
		d.pkt_buf = q->dbuf;
		d.max_pkt_size = q->attr.max_pkt_size;
		d.npkts = q->attr.npkts;
		d.pkt_lkey = kinet_mr_lkey(q->mr);
		d.rqn = q->qp->qpn;
		if (!ret)
			ret = kinet_cuda_export_copy(q->port->ctx, &d, sizeof(d), (void **)&q->dev);
	}
	*drxq = ret ? NULL : q->dev;
	pthread_mutex_unlock(&q->export_lock);
	return ret;
}

/* ---- send queues --------------------------------------------------------- */

void kinet_eth_txq_attr_init(struct kinet_eth_txq_attr *attr)
{
	if (!attr)
		return;
	memset(attr, 0, sizeof(*attr));
	attr->size = sizeof(*attr);
	attr->depth = 1024;
	attr->csum = 1;
	attr->timed = 1;
	attr->sharing = KINET_SHARE_EXCLUSIVE;
	attr->db_mode = KINET_DB_AUTO;
}

static void txq_free(struct kinet_eth_txq *q)
{
	if (q->qp)
		kinet_qp_destroy(q->qp);
	if (q->cq)
		kinet_cq_destroy(q->cq);
	if (q->dev)
		kinet_cuda_free(q->port->ctx, q->dev);
	pthread_mutex_destroy(&q->export_lock);
	free(q);
}

int kinet_eth_txq_create(struct kinet_eth_port *port, const struct kinet_eth_txq_attr *attr,
			 struct kinet_eth_txq **out)
{
	struct kinet_eth_txq_attr a;
	struct kinet_cq_attr ca;
	struct kinet_qp_attr qa;
	struct kinet_eth_txq *q;
	struct kinet_ctx *ctx;
	int ret;

	if (!out)
		return KINET_EINVAL("txq", "NULL");
	*out = NULL;
	if (!port)
		return KINET_EINVAL("port", "NULL");
	if (!attr)
		return KINET_EINVAL("attr", "NULL");
	if ((ret = kinet_attr_read("attr", attr, sizeof(a), &a)))
		return ret;
	if (a.depth < ETH_TXQ_MIN || a.depth > ETH_TXQ_MAX || !is_pow2(a.depth))
		return KINET_EINVAL("attr->depth", "must be a power of two, 16..32768");
	if (a.csum > 1)
		return KINET_EINVAL("attr->csum", "must be 0 or 1");
	if (a.timed > 1)
		return KINET_EINVAL("attr->timed", "must be 0 or 1");
	if ((unsigned)a.sharing > KINET_SHARE_GPU)
		return KINET_EINVAL("attr->sharing", "not an enum kinet_qp_sharing");
	if ((unsigned)a.db_mode > KINET_DB_BF)
		return KINET_EINVAL("attr->db_mode", "not an enum kinet_db_mode");
	ctx = port->ctx;

	q = calloc(1, sizeof(*q));
	if (!q)
		return -ENOMEM;
	q->port = port;
	q->attr = a;
	pthread_mutex_init(&q->export_lock, NULL);
	/* At most one CQE per WQE, and a WQE's slot is reused only after its
	 * completion is known: depth CQEs never overrun unread ones; twice
	 * that, as kinet_qp_export asks of an exported QP. */
	kinet_cq_attr_init(&ca);
	ca.depth = 2 * a.depth;
	ca.flags = KINET_CQ_IGNORE_OVERRUN;
	ret = kinet_cq_create(ctx, &ca, &q->cq);
	if (!ret) {
		kinet_qp_attr_init(&qa);
		qa.send_cq = q->cq;
		qa.sq_depth = a.depth;
		qa.max_inline = 0;
		qa.sharing = (enum kinet_qp_sharing)a.sharing;
		qa.db_mode = (enum kinet_db_mode)a.db_mode;
		ret = kinet_qp_create(ctx, &qa, &q->qp);
	}
	if (!ret)
		ret = raw_qp_start(port, q->qp, a.csum ? KINET_ETH_WQE_L3_CSUM | KINET_ETH_WQE_L4_CSUM : 0,
				   a.timed != 0);
	if (ret) {
		txq_free(q);
		return ret;
	}
	pthread_rwlock_wrlock(&port->lock);
	q->next = port->txqs;
	port->txqs = q;
	pthread_rwlock_unlock(&port->lock);
	KINET_DBG("eth port %s: txq %u, %u WQEs, checksums %s, timed %s", port->ifname, q->qp->qpn, a.depth,
		  a.csum ? "on" : "off", a.timed ? "on" : "off");
	*out = q;
	return 0;
}

int kinet_eth_txq_destroy(struct kinet_eth_txq *q)
{
	struct kinet_eth_port *port;
	struct kinet_eth_txq **p;

	if (!q)
		return KINET_EINVAL("txq", "NULL");
	port = q->port;
	pthread_rwlock_wrlock(&port->lock);
	for (p = &port->txqs; *p && *p != q; p = &(*p)->next)
		;
	if (*p)
		*p = q->next;
	pthread_rwlock_unlock(&port->lock);
	/* kinet_qp_destroy takes the QP from the engine, waiting for a pass
	 * over it to end. */
	txq_free(q);
	return 0;
}

int kinet_eth_txq_export(struct kinet_eth_txq *q, struct kinet_dev_eth_txq **dtxq)
{
	struct kinet_dev_eth_txq d;
	int ret = 0;

	if (!q)
		return KINET_EINVAL("txq", "NULL");
	if (!dtxq)
		return KINET_EINVAL("dtxq", "NULL");
	pthread_mutex_lock(&q->export_lock);
	if (!q->dev) {
		memset(&d, 0, sizeof(d));
		ret = kinet_qp_export(q->qp, &d.qp);
		d.sqn = q->qp->qpn;
		d.cs_flags = q->attr.csum ? KINET_ETH_WQE_L3_CSUM | KINET_ETH_WQE_L4_CSUM : 0;
		d.timed = q->attr.timed;
		if (!ret)
			ret = kinet_cuda_export_copy(q->port->ctx, &d, sizeof(d), (void **)&q->dev);
	}
	*dtxq = ret ? NULL : q->dev;
	pthread_mutex_unlock(&q->export_lock);
	return ret;
}

/* ---- steering rules ------------------------------------------------------ */

void kinet_eth_flow_attr_init(struct kinet_eth_flow_attr *attr)
{
	if (!attr)
		return;
	memset(attr, 0, sizeof(*attr));
	attr->size = sizeof(*attr);
	attr->action = KINET_ETH_ACTION_QUEUE;
}

int kinet_eth_flow_create(struct kinet_eth_port *port, const struct kinet_eth_flow_attr *attr,
			  struct kinet_eth_flow **out)
{
	struct kinet_eth_flow_attr a;
	struct kinet_eth_flow *f;
	int ret;

	if (!out)
		return KINET_EINVAL("flow", "NULL");
	*out = NULL;
	if (!port)
		return KINET_EINVAL("port", "NULL");
	if (!attr)
		return KINET_EINVAL("attr", "NULL");
	if ((ret = kinet_attr_read("attr", attr, sizeof(a), &a)))
		return ret;
	if (a.match &
	    ~(uint32_t)(KINET_ETH_MATCH_ETHERTYPE | KINET_ETH_MATCH_IP_PROTO | KINET_ETH_MATCH_DST_PORT))
		return KINET_EINVAL("attr->match", "unknown KINET_ETH_MATCH_* bit");
	switch (a.action) {
	case KINET_ETH_ACTION_QUEUE:
		if (a.nqueues != 1)
			return KINET_EINVAL("attr->nqueues", "must be 1 for KINET_ETH_ACTION_QUEUE");
		break;
	case KINET_ETH_ACTION_RSS:
		if (!a.nqueues || a.nqueues > KINET_ETH_MAX_RSS_QUEUES)
			return KINET_EINVAL(
				"attr->nqueues",
				"must be 1..KINET_ETH_MAX_RSS_QUEUES (64) for KINET_ETH_ACTION_RSS");
		break;
	case KINET_ETH_ACTION_DROP:
		if (a.nqueues)
			return KINET_EINVAL("attr->nqueues", "must be 0 for KINET_ETH_ACTION_DROP");
		break;
	default:
		return KINET_EINVAL("attr->action", "not an enum kinet_eth_action");
	}
	if (a.nqueues && !a.queues)
		return KINET_EINVAL("attr->queues", "NULL");
	for (uint32_t i = 0; i < a.nqueues; i++) {
		if (!a.queues[i])
			return KINET_EINVAL("attr->queues", "holds NULL");
		if (a.queues[i]->port != port)
			return KINET_EINVAL("attr->queues", "holds a queue of another port");
	}
	f = calloc(1, sizeof(*f));
	if (!f)
		return -ENOMEM;
	f->port = port;
	f->attr = a;
	for (uint32_t i = 0; i < a.nqueues; i++)
		f->queues[i] = a.queues[i];
	f->attr.queues = f->queues;
	pthread_rwlock_wrlock(&port->lock);
	ret = kinet_eth_flow_table_add(&port->rules, f);
	if (!ret) {
		for (uint32_t i = 0; i < a.nqueues; i++)
			f->queues[i]->flows++;
		port->nflows++;
	}
	pthread_rwlock_unlock(&port->lock);
	if (ret) {
		free(f);
		return ret;
	}
	*out = f;
	return 0;
}

int kinet_eth_flow_destroy(struct kinet_eth_flow *f)
{
	struct kinet_eth_port *port;

	if (!f)
		return KINET_EINVAL("flow", "NULL");
	port = f->port;
	pthread_rwlock_wrlock(&port->lock);
	kinet_eth_flow_table_del(&port->rules, f);
	for (uint32_t i = 0; i < f->attr.nqueues; i++)
		f->queues[i]->flows--;
	port->nflows--;
	pthread_rwlock_unlock(&port->lock);
	free(f);
	return 0;
}

void kinet_eth_ctx_close(struct kinet_ctx *ctx)
{
	while (ctx->eth_ports) {
		struct kinet_eth_port *port = ctx->eth_ports;

		while (port->rules.n)
			kinet_eth_flow_destroy(port->rules.v[port->rules.n - 1]);
		while (port->rxqs)
			kinet_eth_rxq_destroy(port->rxqs);
		while (port->txqs)
			kinet_eth_txq_destroy(port->txqs);
		kinet_eth_port_close(port);
	}
}
