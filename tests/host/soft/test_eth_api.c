/*
 * Ethernet ports, queues and rules without an interface (kinet/eth.h,
 * src/core/eth.c): attribute defaults; every argument error (-EINVAL
 * naming the field, -ENODEV for an unknown interface or GPU memory
 * without CUDA); the RSS hash against Microsoft's published verification
 * vectors (IPv4, with and without the ports); the rules on crafted frames
 * (ethertype after a VLAN tag, IPv4/IPv6 UDP/TCP ports, ICMP, a later
 * fragment, no match) and their order (priority, then creation), through
 * a port struct made here (white box: no provider is involved in rules).
 */
#include "kt.h"
#include "kt_host.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "eth.h"
#include "kinet/eth.h"
#include "kinet/kinet.h"

/* ---- frames ------------------------------------------------------------- */

/* An Ethernet header (one VLAN tag when vlan), then type; returns its length. */
static uint32_t put_eth(uint8_t *f, uint16_t type, bool vlan)
{
	uint32_t off = 12;

	memset(f, 0, 12);
	f[0] = 0x02;
	f[6] = 0x02;
	if (vlan) {
		f[12] = 0x81;
		f[13] = 0x00;
		f[14] = 0x00;
		f[15] = 0x05;
		off = 16;
	}
	f[off] = (uint8_t)(type >> 8);
	f[off + 1] = (uint8_t)type;
	return off + 2;
}

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static void put_ip4(uint8_t *p, const char *dotted)
{
	unsigned a, b, c, d;

	sscanf(dotted, "%u.%u.%u.%u", &a, &b, &c, &d);
	p[0] = (uint8_t)a;
	p[1] = (uint8_t)b;
	p[2] = (uint8_t)c;
	p[3] = (uint8_t)d;
}

/* IPv4 frame: proto, addresses, ports (UDP/TCP), fragment offset; its length. */
static uint32_t frame4(uint8_t *f, bool vlan, uint8_t proto, const char *src, const char *dst, uint16_t sport,
		       uint16_t dport, uint16_t frag)
{
	uint32_t l3 = put_eth(f, 0x0800, vlan), l4 = l3 + 20;

	memset(f + l3, 0, 20 + 20);
	f[l3] = 0x45;
	put16(f + l3 + 2, 20 + 20);
	put16(f + l3 + 6, frag);
	f[l3 + 8] = 64;
	f[l3 + 9] = proto;
	put_ip4(f + l3 + 12, src);
	put_ip4(f + l3 + 16, dst);
	put16(f + l4, sport);
	put16(f + l4 + 2, dport);
	return l4 + 20;
}

static uint32_t frame6(uint8_t *f, uint8_t next, uint16_t sport, uint16_t dport)
{
	uint32_t l3 = put_eth(f, 0x86dd, false), l4 = l3 + 40;

	memset(f + l3, 0, 40 + 20);
	f[l3] = 0x60;
	put16(f + l3 + 4, 20);
	f[l3 + 6] = next;
	f[l3 + 7] = 64;
	f[l3 + 8] = 0xfd;
	f[l3 + 23] = 1;
	f[l3 + 24] = 0xfd;
	f[l3 + 39] = 2;
	put16(f + l4, sport);
	put16(f + l4 + 2, dport);
	return l4 + 20;
}

/* ---- tests -------------------------------------------------------------- */

KT_TEST(attr_defaults)
{
	struct kinet_eth_port_attr p;
	struct kinet_eth_rxq_attr r;
	struct kinet_eth_txq_attr t;
	struct kinet_eth_flow_attr f;

	memset(&p, 0xff, sizeof(p));
	memset(&r, 0xff, sizeof(r));
	memset(&t, 0xff, sizeof(t));
	memset(&f, 0xff, sizeof(f));
	kinet_eth_port_attr_init(&p);
	kinet_eth_rxq_attr_init(&r);
	kinet_eth_txq_attr_init(&t);
	kinet_eth_flow_attr_init(&f);
	KT_CHECK_EQ(p.size, sizeof(p));
	KT_CHECK(p.ifname == NULL);
	KT_CHECK_EQ(p.rx_frames, 0);
	KT_CHECK_EQ(r.size, sizeof(r));
	KT_CHECK_EQ(r.npkts, 1024);
	KT_CHECK_EQ(r.max_pkt_size, 2048);
	KT_CHECK_EQ(r.mem, KINET_ETH_MEM_HOST_MAPPED);
	KT_CHECK_EQ(t.size, sizeof(t));
	KT_CHECK_EQ(t.depth, 1024);
	KT_CHECK_EQ(t.csum, 1);
	KT_CHECK_EQ(t.timed, 1);
	KT_CHECK_EQ(t.sharing, KINET_SHARE_EXCLUSIVE);
	KT_CHECK_EQ(t.db_mode, KINET_DB_AUTO);
	KT_CHECK_EQ(f.size, sizeof(f));
	KT_CHECK_EQ(f.match, 0);
	KT_CHECK_EQ(f.action, KINET_ETH_ACTION_QUEUE);
	KT_CHECK_EQ(f.nqueues, 0);
	KT_CHECK(f.queues == NULL);
	/* NULL is ignored. */
	kinet_eth_port_attr_init(NULL);
	kinet_eth_rxq_attr_init(NULL);
	kinet_eth_txq_attr_init(NULL);
	kinet_eth_flow_attr_init(NULL);
}

KT_TEST(port_arguments)
{
	struct kinet_ctx *ctx = NULL;
	struct kinet_eth_port *port = (struct kinet_eth_port *)(uintptr_t)1;
	struct kinet_eth_port_attr a;
	struct kinet_eth_port_stats st;
	uint8_t mac[6];
	int rc;

	KT_OK(kt_ctx_open(1, &ctx));
	kinet_eth_port_attr_init(&a);
	a.ifname = "kinet-none0";
	KT_CHECK_EQ(kinet_eth_port_open(ctx, &a, NULL), -EINVAL);
	KT_CHECK_EQ(kinet_eth_port_open(NULL, &a, &port), -EINVAL);
	KT_CHECK(port == NULL);
	KT_CHECK_EQ(kinet_eth_port_open(ctx, NULL, &port), -EINVAL);
	a.ifname = NULL;
	KT_CHECK_EQ(kinet_eth_port_open(ctx, &a, &port), -EINVAL);
	a.ifname = "";
	KT_CHECK_EQ(kinet_eth_port_open(ctx, &a, &port), -EINVAL);
	a.ifname = "a-name-too-long-for-linux";
	KT_CHECK_EQ(kinet_eth_port_open(ctx, &a, &port), -EINVAL);
	a.ifname = "kinet-none0";
	a.rx_frames = 8;
	KT_CHECK_EQ(kinet_eth_port_open(ctx, &a, &port), -EINVAL);
	a.rx_frames = 100;
	KT_CHECK_EQ(kinet_eth_port_open(ctx, &a, &port), -EINVAL);
	a.rx_frames = 0;
	a.size = 3; /* not a layout this library knows */
	KT_CHECK_EQ(kinet_eth_port_open(ctx, &a, &port), -EINVAL);
	a.size = 0; /* zero: this header's layout */
	/* No such interface: -ENODEV; without CAP_NET_RAW the socket fails
	 * first (-EPERM). */
	rc = kinet_eth_port_open(ctx, &a, &port);
	KT_CHECK(rc == -ENODEV || rc == -EPERM);
	KT_CHECK(port == NULL);
	KT_CHECK_EQ(kinet_eth_port_close(NULL), -EINVAL);
	KT_CHECK_EQ(kinet_eth_port_mac(NULL, mac), -EINVAL);
	KT_CHECK_EQ(kinet_eth_port_mtu(NULL), 0);
	KT_CHECK_EQ(kinet_eth_port_stats(NULL, &st), -EINVAL);
	KT_CHECK_EQ(kinet_eth_port_status(NULL), -EINVAL);
	KT_OK(kinet_ctx_close(ctx));
}

/* A port without an interface: enough for argument checks and rules
 * (white box). */
static struct kinet_eth_port *fake_port(struct kinet_ctx *ctx)
{
	struct kinet_eth_port *p = calloc(1, sizeof(*p));

	p->ctx = ctx;
	strcpy(p->ifname, "fake0");
	pthread_rwlock_init(&p->lock, NULL);
	return p;
}

static void fake_port_free(struct kinet_eth_port *p)
{
	kinet_eth_flow_table_free(&p->rules);
	pthread_rwlock_destroy(&p->lock);
	free(p);
}

KT_TEST(queue_arguments)
{
	struct kinet_ctx *ctx = NULL;
	struct kinet_eth_port *port;
	struct kinet_eth_rxq *rxq = (struct kinet_eth_rxq *)(uintptr_t)1;
	struct kinet_eth_txq *txq = (struct kinet_eth_txq *)(uintptr_t)1;
	struct kinet_dev_eth_rxq *drxq;
	struct kinet_dev_eth_txq *dtxq;
	struct kinet_eth_rxq_attr r;
	struct kinet_eth_txq_attr t;

	KT_OK(kt_ctx_open(1, &ctx));
	port = fake_port(ctx);
	kinet_eth_rxq_attr_init(&r);
	KT_CHECK_EQ(kinet_eth_rxq_create(port, &r, NULL), -EINVAL);
	KT_CHECK_EQ(kinet_eth_rxq_create(NULL, &r, &rxq), -EINVAL);
	KT_CHECK(rxq == NULL);
	KT_CHECK_EQ(kinet_eth_rxq_create(port, NULL, &rxq), -EINVAL);
	uint32_t bad_npkts[] = {0, 8, 15, 17, 1000, KINET_ETH_MAX_PKTS * 2};
	for (unsigned i = 0; i < sizeof(bad_npkts) / sizeof(bad_npkts[0]); i++) {
		kinet_eth_rxq_attr_init(&r);
		r.npkts = bad_npkts[i];
		KT_CHECK_EQ(kinet_eth_rxq_create(port, &r, &rxq), -EINVAL);
	}
	uint32_t bad_size[] = {0, 63, KINET_ETH_MAX_PKT_SIZE + 1};
	for (unsigned i = 0; i < sizeof(bad_size) / sizeof(bad_size[0]); i++) {
		kinet_eth_rxq_attr_init(&r);
		r.max_pkt_size = bad_size[i];
		KT_CHECK_EQ(kinet_eth_rxq_create(port, &r, &rxq), -EINVAL);
	}
	kinet_eth_rxq_attr_init(&r);
	r.mem = 7;
	KT_CHECK_EQ(kinet_eth_rxq_create(port, &r, &rxq), -EINVAL);
	r.mem = KINET_ETH_MEM_GPU; /* a host-only context */
	KT_CHECK_EQ(kinet_eth_rxq_create(port, &r, &rxq), -ENODEV);
	kinet_eth_rxq_attr_init(&r);
	r.size = 1;
	KT_CHECK_EQ(kinet_eth_rxq_create(port, &r, &rxq), -EINVAL);
	KT_CHECK_EQ(kinet_eth_rxq_destroy(NULL), -EINVAL);
	KT_CHECK_EQ(kinet_eth_rxq_export(NULL, &drxq), -EINVAL);

	kinet_eth_txq_attr_init(&t);
	KT_CHECK_EQ(kinet_eth_txq_create(port, &t, NULL), -EINVAL);
	KT_CHECK_EQ(kinet_eth_txq_create(NULL, &t, &txq), -EINVAL);
	KT_CHECK(txq == NULL);
	KT_CHECK_EQ(kinet_eth_txq_create(port, NULL, &txq), -EINVAL);
	uint32_t bad_depth[] = {0, 8, 100, 65536};
	for (unsigned i = 0; i < sizeof(bad_depth) / sizeof(bad_depth[0]); i++) {
		kinet_eth_txq_attr_init(&t);
		t.depth = bad_depth[i];
		KT_CHECK_EQ(kinet_eth_txq_create(port, &t, &txq), -EINVAL);
	}
	kinet_eth_txq_attr_init(&t);
	t.csum = 2;
	KT_CHECK_EQ(kinet_eth_txq_create(port, &t, &txq), -EINVAL);
	kinet_eth_txq_attr_init(&t);
	t.timed = 3;
	KT_CHECK_EQ(kinet_eth_txq_create(port, &t, &txq), -EINVAL);
	kinet_eth_txq_attr_init(&t);
	t.sharing = 9;
	KT_CHECK_EQ(kinet_eth_txq_create(port, &t, &txq), -EINVAL);
	kinet_eth_txq_attr_init(&t);
	t.db_mode = -1;
	KT_CHECK_EQ(kinet_eth_txq_create(port, &t, &txq), -EINVAL);
	KT_CHECK_EQ(kinet_eth_txq_destroy(NULL), -EINVAL);
	KT_CHECK_EQ(kinet_eth_txq_export(NULL, &dtxq), -EINVAL);
	fake_port_free(port);
	KT_OK(kinet_ctx_close(ctx));
}

KT_TEST(flow_arguments)
{
	struct kinet_ctx *ctx = NULL;
	struct kinet_eth_port *port, *other;
	struct kinet_eth_rxq q0 = {0}, q1 = {0}, qx = {0};
	struct kinet_eth_rxq *qs[KINET_ETH_MAX_RSS_QUEUES + 1];
	struct kinet_eth_flow *f = (struct kinet_eth_flow *)(uintptr_t)1, *g = NULL;
	struct kinet_eth_flow_attr a;

	KT_OK(kt_ctx_open(1, &ctx));
	port = fake_port(ctx);
	other = fake_port(ctx);
	q0.port = port;
	q1.port = port;
	qx.port = other;
	for (unsigned i = 0; i <= KINET_ETH_MAX_RSS_QUEUES; i++)
		qs[i] = i & 1 ? &q1 : &q0;

	kinet_eth_flow_attr_init(&a);
	a.nqueues = 1;
	a.queues = qs;
	KT_CHECK_EQ(kinet_eth_flow_create(port, &a, NULL), -EINVAL);
	KT_CHECK_EQ(kinet_eth_flow_create(NULL, &a, &f), -EINVAL);
	KT_CHECK(f == NULL);
	KT_CHECK_EQ(kinet_eth_flow_create(port, NULL, &f), -EINVAL);
	a.match = 1u << 7;
	KT_CHECK_EQ(kinet_eth_flow_create(port, &a, &f), -EINVAL);
	a.match = 0;
	a.nqueues = 2; /* QUEUE takes one */
	KT_CHECK_EQ(kinet_eth_flow_create(port, &a, &f), -EINVAL);
	a.nqueues = 0;
	KT_CHECK_EQ(kinet_eth_flow_create(port, &a, &f), -EINVAL);
	a.action = KINET_ETH_ACTION_RSS;
	KT_CHECK_EQ(kinet_eth_flow_create(port, &a, &f), -EINVAL);
	a.nqueues = KINET_ETH_MAX_RSS_QUEUES + 1;
	KT_CHECK_EQ(kinet_eth_flow_create(port, &a, &f), -EINVAL);
	a.action = KINET_ETH_ACTION_DROP;
	a.nqueues = 1;
	KT_CHECK_EQ(kinet_eth_flow_create(port, &a, &f), -EINVAL);
	a.action = 9;
	KT_CHECK_EQ(kinet_eth_flow_create(port, &a, &f), -EINVAL);
	a.action = KINET_ETH_ACTION_QUEUE;
	a.queues = NULL;
	KT_CHECK_EQ(kinet_eth_flow_create(port, &a, &f), -EINVAL);
	struct kinet_eth_rxq *nullq = NULL, *otherq = &qx;
	a.queues = &nullq;
	KT_CHECK_EQ(kinet_eth_flow_create(port, &a, &f), -EINVAL);
	a.queues = &otherq;
	KT_CHECK_EQ(kinet_eth_flow_create(port, &a, &f), -EINVAL);
	KT_CHECK_EQ(port->nflows, 0);
	KT_CHECK_EQ(kinet_eth_flow_destroy(NULL), -EINVAL);

	/* Good ones: they count on their queues (rxq destroy says -EBUSY). */
	a.queues = qs;
	KT_OK(kinet_eth_flow_create(port, &a, &f));
	a.action = KINET_ETH_ACTION_RSS;
	a.nqueues = KINET_ETH_MAX_RSS_QUEUES;
	KT_OK(kinet_eth_flow_create(port, &a, &g));
	KT_CHECK_EQ(port->nflows, 2);
	KT_CHECK_EQ(q0.flows, 1 + KINET_ETH_MAX_RSS_QUEUES / 2);
	KT_CHECK_EQ(q1.flows, KINET_ETH_MAX_RSS_QUEUES / 2);
	KT_CHECK_EQ(kinet_eth_port_close(port), -EBUSY);
	KT_OK(kinet_eth_flow_destroy(f));
	KT_OK(kinet_eth_flow_destroy(g));
	KT_CHECK_EQ(q0.flows, 0);
	KT_CHECK_EQ(q1.flows, 0);
	KT_CHECK_EQ(port->nflows, 0);
	fake_port_free(port);
	fake_port_free(other);
	KT_OK(kinet_ctx_close(ctx));
}

/* Microsoft's "Verifying the RSS Hash Calculation" vectors: IPv4 with the
 * key of the same page (destination first in the table, as there). */
KT_TEST(rss_hash_vectors)
{
	static const struct {
		const char *dst;
		uint16_t dport;
		const char *src;
		uint16_t sport;
		uint32_t ip, ip_ports;
	} v[] = {
		{"161.142.100.80", 1766, "66.9.149.187", 2794, 0x323e8fc2, 0x51ccc178},
		{"65.69.140.83", 4739, "199.92.111.2", 14230, 0xd718262a, 0xc626b0ea},
		{"12.22.207.184", 38024, "24.19.198.95", 12898, 0xd2d0a5de, 0x5c2b394a},
		{"209.142.163.6", 2217, "38.27.205.30", 48228, 0x82989176, 0xafc7327f},
		{"202.188.127.2", 1303, "153.39.163.191", 44251, 0x5d1809c5, 0x10e828a2},
	};
	uint8_t f[128];

	for (unsigned i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		uint32_t n = frame4(f, false, 6, v[i].src, v[i].dst, v[i].sport, v[i].dport, 0);
		uint32_t h = kinet_eth_rss_hash(f, n);

		if (h != v[i].ip_ports)
			printf("vector %u with ports: 0x%08x, want 0x%08x\n", i, h, v[i].ip_ports);
		KT_CHECK_EQ(h, v[i].ip_ports);
		/* UDP hashes the same fields. */
		n = frame4(f, true, 17, v[i].src, v[i].dst, v[i].sport, v[i].dport, 0);
		KT_CHECK_EQ(kinet_eth_rss_hash(f, n), v[i].ip_ports);
		/* Without ports (ICMP; a later fragment): the addresses only. */
		n = frame4(f, false, 1, v[i].src, v[i].dst, v[i].sport, v[i].dport, 0);
		h = kinet_eth_rss_hash(f, n);
		if (h != v[i].ip)
			printf("vector %u addresses only: 0x%08x, want 0x%08x\n", i, h, v[i].ip);
		KT_CHECK_EQ(h, v[i].ip);
		n = frame4(f, false, 6, v[i].src, v[i].dst, v[i].sport, v[i].dport, 100);
		KT_CHECK_EQ(kinet_eth_rss_hash(f, n), v[i].ip);
	}
	/* Not IP: 0. */
	memset(f, 0, sizeof(f));
	put_eth(f, 0x0806, false);
	KT_CHECK_EQ(kinet_eth_rss_hash(f, 60), 0);
	KT_CHECK_EQ(kinet_eth_rss_hash(NULL, 60), 0);
	KT_CHECK_EQ(kinet_eth_rss_hash(f, 10), 0);
	/* IPv6 hashes something, and the ports change it. */
	uint32_t n6 = frame6(f, 17, 1000, 2000);
	uint32_t h6 = kinet_eth_rss_hash(f, n6);
	frame6(f, 17, 1000, 2001);
	KT_CHECK(h6 != 0 && h6 != kinet_eth_rss_hash(f, n6));
}

KT_TEST(rules_match)
{
	struct kinet_eth_frame_key k;
	struct kinet_eth_flow_attr a;
	uint8_t f[128];
	uint32_t n;

	kinet_eth_flow_attr_init(&a);
	/* ethertype, plain and after a VLAN tag */
	a.match = KINET_ETH_MATCH_ETHERTYPE;
	a.ethertype = 0x88b5;
	n = put_eth(f, 0x88b5, false);
	kinet_eth_frame_key(f, 60, &k);
	KT_CHECK(kinet_eth_rule_matches(&a, &k));
	n = put_eth(f, 0x88b5, true);
	kinet_eth_frame_key(f, 60, &k);
	KT_CHECK(kinet_eth_rule_matches(&a, &k));
	a.ethertype = 0x0800;
	KT_CHECK(!kinet_eth_rule_matches(&a, &k));
	/* IPv4 UDP port, with and without the protocol */
	kinet_eth_flow_attr_init(&a);
	a.match = KINET_ETH_MATCH_DST_PORT;
	a.dst_port = 4791;
	n = frame4(f, false, 17, "10.0.0.1", "10.0.0.2", 5000, 4791, 0);
	kinet_eth_frame_key(f, n, &k);
	KT_CHECK(k.ip && k.ports && k.dst_port == 4791 && k.ip_proto == 17);
	KT_CHECK(kinet_eth_rule_matches(&a, &k));
	a.match |= KINET_ETH_MATCH_IP_PROTO;
	a.ip_proto = 17;
	KT_CHECK(kinet_eth_rule_matches(&a, &k));
	a.ip_proto = 6;
	KT_CHECK(!kinet_eth_rule_matches(&a, &k));
	/* TCP over a VLAN tag */
	n = frame4(f, true, 6, "10.0.0.1", "10.0.0.2", 5000, 4791, 0);
	kinet_eth_frame_key(f, n, &k);
	KT_CHECK(kinet_eth_rule_matches(&a, &k));
	/* a later fragment has no ports */
	n = frame4(f, false, 6, "10.0.0.1", "10.0.0.2", 5000, 4791, 185);
	kinet_eth_frame_key(f, n, &k);
	KT_CHECK(k.ip && !k.ports);
	KT_CHECK(!kinet_eth_rule_matches(&a, &k));
	/* ICMP: a protocol, no ports */
	n = frame4(f, false, 1, "10.0.0.1", "10.0.0.2", 0x0800, 4791, 0);
	kinet_eth_frame_key(f, n, &k);
	kinet_eth_flow_attr_init(&a);
	a.match = KINET_ETH_MATCH_IP_PROTO;
	a.ip_proto = 1;
	KT_CHECK(kinet_eth_rule_matches(&a, &k));
	a.match |= KINET_ETH_MATCH_DST_PORT;
	a.dst_port = 4791;
	KT_CHECK(!kinet_eth_rule_matches(&a, &k));
	/* IPv6 UDP and TCP */
	kinet_eth_flow_attr_init(&a);
	a.match = KINET_ETH_MATCH_ETHERTYPE | KINET_ETH_MATCH_IP_PROTO | KINET_ETH_MATCH_DST_PORT;
	a.ethertype = 0x86dd;
	a.ip_proto = 17;
	a.dst_port = 53;
	n = frame6(f, 17, 999, 53);
	kinet_eth_frame_key(f, n, &k);
	KT_CHECK(kinet_eth_rule_matches(&a, &k));
	n = frame6(f, 6, 999, 53);
	kinet_eth_frame_key(f, n, &k);
	KT_CHECK(!kinet_eth_rule_matches(&a, &k));
	/* truncated headers match nothing that needs them */
	n = frame4(f, false, 17, "10.0.0.1", "10.0.0.2", 5000, 4791, 0);
	kinet_eth_frame_key(f, 14 + 10, &k);
	KT_CHECK(!k.ip && k.ethertype == 0x0800);
	kinet_eth_frame_key(f, 6, &k);
	KT_CHECK_EQ(k.ethertype, 0);
	/* no match field: every frame */
	kinet_eth_flow_attr_init(&a);
	KT_CHECK(kinet_eth_rule_matches(&a, &k));
}

/* The order rules are tried in, and what steering does with the winner,
 * through the public calls on a port struct made here. */
KT_TEST(rules_order)
{
	struct kinet_ctx *ctx = NULL;
	struct kinet_eth_port *port;
	struct kinet_eth_rxq q[6];
	struct kinet_eth_rxq *rss[4] = {&q[2], &q[3], &q[4], &q[5]};
	struct kinet_eth_flow *fl[6];
	struct kinet_eth_flow_attr a;
	uint8_t f[128];
	uint32_t n;

	KT_OK(kt_ctx_open(1, &ctx));
	port = fake_port(ctx);
	memset(q, 0, sizeof(q));
	for (int i = 0; i < 6; i++)
		q[i].port = port;
	struct kinet_eth_rxq *p0 = &q[0], *p1 = &q[1];

	/* Made in this order: a catch-all DROP at priority 10, UDP 4791 to q1
	 * at 5, UDP (any port) RSS at 5 (after the first: same priority),
	 * UDP 4791 to q0 at 1 (first of all). */
	kinet_eth_flow_attr_init(&a);
	a.priority = 10;
	a.action = KINET_ETH_ACTION_DROP;
	KT_OK(kinet_eth_flow_create(port, &a, &fl[0]));
	kinet_eth_flow_attr_init(&a);
	a.priority = 5;
	a.match = KINET_ETH_MATCH_IP_PROTO | KINET_ETH_MATCH_DST_PORT;
	a.ip_proto = 17;
	a.dst_port = 4792;
	a.nqueues = 1;
	a.queues = &p1;
	KT_OK(kinet_eth_flow_create(port, &a, &fl[1]));
	kinet_eth_flow_attr_init(&a);
	a.priority = 5;
	a.match = KINET_ETH_MATCH_IP_PROTO;
	a.ip_proto = 17;
	a.action = KINET_ETH_ACTION_RSS;
	a.nqueues = 4;
	a.queues = rss;
	KT_OK(kinet_eth_flow_create(port, &a, &fl[2]));
	kinet_eth_flow_attr_init(&a);
	a.priority = 1;
	a.match = KINET_ETH_MATCH_DST_PORT;
	a.dst_port = 4791;
	a.nqueues = 1;
	a.queues = &p0;
	KT_OK(kinet_eth_flow_create(port, &a, &fl[3]));

	KT_CHECK(port->rules.v[0] == fl[3] && port->rules.v[1] == fl[1] && port->rules.v[2] == fl[2] &&
		 port->rules.v[3] == fl[0]);
	n = frame4(f, false, 17, "10.0.0.1", "10.0.0.2", 5000, 4791, 0);
	KT_CHECK(kinet_eth_port_steer(port, f, n) == &q[0]);
	n = frame4(f, false, 6, "10.0.0.1", "10.0.0.2", 5000, 4791,
		   0); /* TCP: the port rule has no protocol */
	KT_CHECK(kinet_eth_port_steer(port, f, n) == &q[0]);
	n = frame4(f, false, 17, "10.0.0.1", "10.0.0.2", 5000, 4792, 0);
	KT_CHECK(kinet_eth_port_steer(port, f, n) == &q[1]);
	/* RSS: queues[hash % 4], the same for the same 5-tuple. */
	n = frame4(f, true, 17, "10.0.0.1", "10.0.0.2", 5000, 9, 0);
	KT_CHECK(kinet_eth_port_steer(port, f, n) == rss[kinet_eth_rss_hash(f, n) % 4]);
	KT_CHECK(kinet_eth_port_steer(port, f, n) == kinet_eth_port_steer(port, f, n));
	/* TCP to another port and ARP: the DROP rule, NULL. */
	n = frame4(f, false, 6, "10.0.0.1", "10.0.0.2", 5000, 80, 0);
	KT_CHECK(kinet_eth_port_steer(port, f, n) == NULL);
	n = put_eth(f, 0x0806, false);
	KT_CHECK(kinet_eth_port_steer(port, f, 60) == NULL);
	/* Rules gone one by one: a UDP 4791 frame falls to the next. */
	n = frame4(f, false, 17, "10.0.0.1", "10.0.0.2", 5000, 4791, 0);
	KT_OK(kinet_eth_flow_destroy(fl[3]));
	KT_CHECK(kinet_eth_port_steer(port, f, n) == rss[kinet_eth_rss_hash(f, n) % 4]);
	KT_OK(kinet_eth_flow_destroy(fl[2]));
	KT_CHECK(kinet_eth_port_steer(port, f, n) == NULL);
	KT_OK(kinet_eth_flow_destroy(fl[0]));
	KT_CHECK(kinet_eth_port_steer(port, f, n) == NULL); /* no rule at all */
	/* A later rule of the same priority as a remaining one comes after it. */
	kinet_eth_flow_attr_init(&a);
	a.priority = 5;
	a.nqueues = 1;
	a.queues = &p0;
	KT_OK(kinet_eth_flow_create(port, &a, &fl[4]));
	n = frame4(f, false, 17, "10.0.0.1", "10.0.0.2", 5000, 4792, 0);
	KT_CHECK(kinet_eth_port_steer(port, f, n) == &q[1]);
	n = frame4(f, false, 17, "10.0.0.1", "10.0.0.2", 5000, 4793, 0);
	KT_CHECK(kinet_eth_port_steer(port, f, n) == &q[0]);
	KT_OK(kinet_eth_flow_destroy(fl[1]));
	KT_OK(kinet_eth_flow_destroy(fl[4]));
	for (int i = 0; i < 6; i++)
		KT_CHECK_EQ(q[i].flows, 0);
	fake_port_free(port);
	KT_OK(kinet_ctx_close(ctx));
}

KT_MAIN(attr_defaults, port_arguments, queue_arguments, flow_arguments, rss_hash_vectors, rules_match,
	rules_order)
