/*
 * The ConnectX provider's pure part (src/provider/mlx5/mlx5_attr.h), with
 * no NIC: access flags, path MTU, ACK timeout and RNR encodings, GID
 * choice from a port's table, KINET_DEVICE parsing, PCI distance and port
 * choice, the qp_info blob, error CQE decoding and the doorbell value.
 * Where rdma-core's headers are installed, the values repeated from them
 * and the doorbell's layout are checked against verbs.h and mlx5dv.h.
 */
#include <errno.h>
#include <string.h>

#include "kinet/kinet.h"
#include "kinet/wire.h"
#include "kt.h"
#include "mlx5_attr.h"

#ifdef KINET_TEST_RDMA_HEADERS
#include <endian.h>
#include <infiniband/mlx5dv.h>
#include <infiniband/verbs.h>
#endif

KT_TEST(access_flags)
{
	KT_CHECK_EQ(kinet_mlx5_access_flags(0), 0);
	KT_CHECK_EQ(kinet_mlx5_access_flags(KINET_ACCESS_LOCAL_WRITE), KINET_MLX5_IBV_ACCESS_LOCAL_WRITE);
	KT_CHECK_EQ(kinet_mlx5_access_flags(KINET_ACCESS_REMOTE_WRITE | KINET_ACCESS_LOCAL_WRITE),
		    KINET_MLX5_IBV_ACCESS_REMOTE_WRITE | KINET_MLX5_IBV_ACCESS_LOCAL_WRITE);
	KT_CHECK_EQ(kinet_mlx5_access_flags(KINET_ACCESS_REMOTE_READ), KINET_MLX5_IBV_ACCESS_REMOTE_READ);
	KT_CHECK_EQ(kinet_mlx5_access_flags(KINET_ACCESS_REMOTE_ATOMIC | KINET_ACCESS_LOCAL_WRITE),
		    KINET_MLX5_IBV_ACCESS_REMOTE_ATOMIC | KINET_MLX5_IBV_ACCESS_LOCAL_WRITE);
	/* Zero-based is the address given, not a flag verbs would refuse. */
	KT_CHECK_EQ(kinet_mlx5_access_flags(KINET_ACCESS_ZERO_BASED | KINET_ACCESS_REMOTE_READ),
		    KINET_MLX5_IBV_ACCESS_REMOTE_READ);
	KT_CHECK_EQ(kinet_mlx5_mr_iova(0x7f0012345000ull, KINET_ACCESS_REMOTE_READ), 0x7f0012345000ull);
	KT_CHECK_EQ(kinet_mlx5_mr_iova(0x7f0012345000ull, KINET_ACCESS_ZERO_BASED), 0);
}

KT_TEST(mtu)
{
	KT_CHECK_EQ(kinet_mlx5_mtu_bytes(1), 256);
	KT_CHECK_EQ(kinet_mlx5_mtu_bytes(3), 1024);
	KT_CHECK_EQ(kinet_mlx5_mtu_bytes(5), 4096);
	KT_CHECK_EQ(kinet_mlx5_mtu_bytes(0), 0);
	KT_CHECK_EQ(kinet_mlx5_mtu_bytes(6), 0);
	KT_CHECK_EQ(kinet_mlx5_mtu_parse(NULL), 0);
	KT_CHECK_EQ(kinet_mlx5_mtu_parse(""), 0);
	KT_CHECK_EQ(kinet_mlx5_mtu_parse("256"), 1);
	KT_CHECK_EQ(kinet_mlx5_mtu_parse("2048"), 4);
	KT_CHECK_EQ(kinet_mlx5_mtu_parse("4096"), 5);
	KT_CHECK_EQ(kinet_mlx5_mtu_parse("1500"), -1);
	KT_CHECK_EQ(kinet_mlx5_mtu_parse("4k"), -1);
	KT_CHECK_EQ(kinet_mlx5_mtu_parse("8192"), -1);
}

static void path_in_init(struct kinet_mlx5_path_in *in)
{
	memset(in, 0, sizeof(*in));
	in->timeout_ms = 5000;
	in->rnr_timeout_ms = 1000;
	in->local_mtu = 5;
	in->remote_mtu = 5;
	in->max_init_rd_atomic = 16;
	in->max_dest_rd_atomic = 16;
	in->timeout_override = -1;
	in->retry_override = -1;
}

/* The path MTU is the smaller active MTU of the two ports, never more: a
 * 4096 MTU on a 1500-byte Ethernet (active MTU 1024) drops every full
 * packet. */
KT_TEST(path_mtu)
{
	struct kinet_mlx5_path_in in;
	struct kinet_mlx5_path p;
	const char *why;

	path_in_init(&in);
	KT_OK(kinet_mlx5_path_compute(&in, &p, &why));
	KT_CHECK_EQ(p.path_mtu, 5);
	in.local_mtu = 3; /* RoCE port on a 1500-byte netdev */
	KT_OK(kinet_mlx5_path_compute(&in, &p, &why));
	KT_CHECK_EQ(p.path_mtu, 3);
	in.local_mtu = 5;
	in.remote_mtu = 3; /* the peer's */
	KT_OK(kinet_mlx5_path_compute(&in, &p, &why));
	KT_CHECK_EQ(p.path_mtu, 3);
	in.mtu_cap = 2; /* KINET_MLX5_MTU=512 */
	KT_OK(kinet_mlx5_path_compute(&in, &p, &why));
	KT_CHECK_EQ(p.path_mtu, 2);
	in.mtu_cap = 5; /* a cap above the ports' changes nothing */
	KT_OK(kinet_mlx5_path_compute(&in, &p, &why));
	KT_CHECK_EQ(p.path_mtu, 3);
	in.local_mtu = 0;
	KT_CHECK_EQ(kinet_mlx5_path_compute(&in, &p, &why), -EINVAL);
	KT_CHECK(why && *why);
	in.local_mtu = 5;
	in.remote_mtu = 9;
	KT_CHECK_EQ(kinet_mlx5_path_compute(&in, &p, &why), -EINVAL);
}

KT_TEST(ack_timeout)
{
	struct kinet_mlx5_path_in in;
	struct kinet_mlx5_path p;
	const char *why;

	KT_CHECK_EQ(kinet_mlx5_ack_timeout_us(0), UINT64_MAX); /* 0 means "wait forever" */
	KT_CHECK_EQ(kinet_mlx5_ack_timeout_us(1), 8);
	KT_CHECK_EQ(kinet_mlx5_ack_timeout_us(14), 67108);
	KT_CHECK_EQ(kinet_mlx5_ack_timeout_us(17), 536870);
	KT_CHECK_EQ(kinet_mlx5_ack_timeout(5000, 7), 17);
	KT_CHECK_EQ(kinet_mlx5_ack_timeout(2000, 7), 15);
	KT_CHECK_EQ(kinet_mlx5_ack_timeout(1, 7), KINET_MLX5_MIN_ACK_TIMEOUT);
	/* Every timeout: all retries fit, and one step longer would not (above
	 * the floor); never 0, never above 31. */
	for (uint32_t ms = 1; ms < 400000; ms = ms * 3 / 2 + 1) {
		for (uint8_t r = 0; r <= 7; r++) {
			uint8_t t = kinet_mlx5_ack_timeout(ms, r);

			KT_CHECK(t >= KINET_MLX5_MIN_ACK_TIMEOUT && t <= 31);
			if (t > KINET_MLX5_MIN_ACK_TIMEOUT)
				KT_CHECK(kinet_mlx5_ack_timeout_us(t) * (r + 1u) <= (uint64_t)ms * 1000u);
			if (t < 31)
				KT_CHECK(kinet_mlx5_ack_timeout_us(t + 1) * (r + 1u) >
					 (uint64_t)ms * 1000u - 1000u);
		}
	}
	path_in_init(&in);
	KT_OK(kinet_mlx5_path_compute(&in, &p, &why));
	KT_CHECK_EQ(p.retry_cnt, 7);
	KT_CHECK_EQ(p.timeout, 17);
	KT_CHECK(p.retry_bound_us <= 5000000u && p.retry_bound_us > 2500000u);
	in.retry_override = 3;
	KT_OK(kinet_mlx5_path_compute(&in, &p, &why));
	KT_CHECK_EQ(p.retry_cnt, 3);
	KT_CHECK_EQ(p.timeout, 18); /* four tries of 1.07 s fit in 5 s */
	in.timeout_override = 14;
	KT_OK(kinet_mlx5_path_compute(&in, &p, &why));
	KT_CHECK_EQ(p.timeout, 14);
	in.timeout_override = 0; /* out of range (infinite): ignored */
	in.retry_override = 8;
	KT_OK(kinet_mlx5_path_compute(&in, &p, &why));
	KT_CHECK_EQ(p.timeout, 17);
	KT_CHECK_EQ(p.retry_cnt, 7);
}

KT_TEST(rnr)
{
	struct kinet_mlx5_path_in in;
	struct kinet_mlx5_path p;
	const char *why;

	KT_CHECK_EQ(kinet_mlx5_rnr_timer_us(0), 655360);
	KT_CHECK_EQ(kinet_mlx5_rnr_timer_us(1), 10);
	KT_CHECK_EQ(kinet_mlx5_rnr_timer_us(12), 640);
	KT_CHECK_EQ(kinet_mlx5_rnr_timer_us(31), 491520);
	for (uint8_t c = 2; c < 32; c++)
		KT_CHECK(kinet_mlx5_rnr_timer_us(c) > kinet_mlx5_rnr_timer_us(c - 1));
	KT_CHECK_EQ(kinet_mlx5_rnr_timer(0), 1); /* the shortest there is */
	KT_CHECK_EQ(kinet_mlx5_rnr_timer(10), 1);
	KT_CHECK_EQ(kinet_mlx5_rnr_timer(119), 6);
	KT_CHECK_EQ(kinet_mlx5_rnr_timer(120), 7);
	KT_CHECK_EQ(kinet_mlx5_rnr_timer(500000), 31);
	KT_CHECK_EQ(kinet_mlx5_rnr_timer(655360), 0);

	path_in_init(&in);
	for (uint32_t ms = 1; ms < 100000; ms = ms * 2 + 1) {
		in.rnr_timeout_ms = ms;
		KT_OK(kinet_mlx5_path_compute(&in, &p, &why));
		/* Bounded: 7 would retry forever. */
		KT_CHECK(p.rnr_retry < 7);
		KT_CHECK(p.min_rnr_timer <= 31);
		if (ms >= 1 && ms * 1000u / p.rnr_retry >= 10 && ms < 3900)
			KT_CHECK(p.rnr_bound_us <= (uint64_t)ms * 1000u);
	}
	in.rnr_timeout_ms = 1000;
	KT_OK(kinet_mlx5_path_compute(&in, &p, &why));
	KT_CHECK_EQ(p.rnr_retry, 6);
	KT_CHECK_EQ(p.min_rnr_timer, 28); /* 163.84 ms x 6 */
	in.rnr_timeout_ms = 0;		  /* fail at the first RNR NAK */
	KT_OK(kinet_mlx5_path_compute(&in, &p, &why));
	KT_CHECK_EQ(p.rnr_retry, 0);
	KT_CHECK_EQ(p.rnr_bound_us, 0);
}

KT_TEST(rd_atomic)
{
	struct kinet_mlx5_path_in in;
	struct kinet_mlx5_path p;
	const char *why;

	path_in_init(&in);
	in.max_init_rd_atomic = 32;
	in.max_dest_rd_atomic = 4;
	KT_OK(kinet_mlx5_path_compute(&in, &p, &why));
	KT_CHECK_EQ(p.max_rd_atomic, 16);
	KT_CHECK_EQ(p.max_dest_rd_atomic, 4);
	in.max_init_rd_atomic = 0;
	KT_OK(kinet_mlx5_path_compute(&in, &p, &why));
	KT_CHECK_EQ(p.max_rd_atomic, 1);
}

static struct kinet_mlx5_gid gid_entry(uint32_t index, uint32_t type, const char *kind, uint8_t last)
{
	struct kinet_mlx5_gid g;

	memset(&g, 0, sizeof(g));
	g.index = index;
	g.type = type;
	if (!strcmp(kind, "v4")) { /* ::ffff:10.0.0.last */
		g.raw[10] = g.raw[11] = 0xff;
		g.raw[12] = 10;
		g.raw[15] = last;
	} else if (!strcmp(kind, "ll")) { /* fe80::last */
		g.raw[0] = 0xfe;
		g.raw[1] = 0x80;
		g.raw[15] = last;
	} else if (!strcmp(kind, "v6")) { /* 2001:db8::last */
		g.raw[0] = 0x20;
		g.raw[1] = 0x01;
		g.raw[2] = 0x0d;
		g.raw[3] = 0xb8;
		g.raw[15] = last;
	}
	return g;
}

KT_TEST(gid_choice)
{
	const uint32_t v1 = KINET_MLX5_IBV_GID_TYPE_ROCE_V1, v2 = KINET_MLX5_IBV_GID_TYPE_ROCE_V2;
	const int eth = KINET_MLX5_IBV_LINK_LAYER_ETHERNET, ib = KINET_MLX5_IBV_LINK_LAYER_INFINIBAND;
	/* The usual table of a RoCE port: link-local v1/v2, then each address
	 * of the interface as v1 and v2. */
	struct kinet_mlx5_gid t[] = {
		gid_entry(0, v1, "ll", 1), gid_entry(1, v2, "ll", 1), gid_entry(2, v1, "v4", 7),
		gid_entry(3, v2, "v4", 7), gid_entry(4, v1, "v6", 9), gid_entry(5, v2, "v6", 9),
	};
	const size_t n = sizeof(t) / sizeof(t[0]);
	const char *why;

	KT_CHECK_EQ(kinet_mlx5_gid_choose(t, n, eth, -1, KINET_MLX5_GID_ANY, &why), 3);
	KT_CHECK(why == NULL);
	KT_CHECK_EQ(kinet_mlx5_gid_choose(t, n, eth, -1, KINET_MLX5_GID_IPV4, &why), 3);
	KT_CHECK_EQ(kinet_mlx5_gid_choose(t, n, eth, -1, KINET_MLX5_GID_IPV6, &why), 5);
	/* An explicit index wins when the table has it. */
	KT_CHECK_EQ(kinet_mlx5_gid_choose(t, n, eth, 4, KINET_MLX5_GID_ANY, &why), 4);
	KT_CHECK_EQ(kinet_mlx5_gid_choose(t, n, eth, 9, KINET_MLX5_GID_ANY, &why), -ENOENT);
	KT_CHECK(why && strstr(why, "KINET_MLX5_GID_INDEX"));
	/* Order in the table does not matter; global beats link-local. */
	struct kinet_mlx5_gid u[] = {gid_entry(7, v2, "v6", 2), gid_entry(2, v2, "ll", 3)};
	KT_CHECK_EQ(kinet_mlx5_gid_choose(u, 2, eth, -1, KINET_MLX5_GID_ANY, &why), 7);
	KT_CHECK_EQ(kinet_mlx5_gid_choose(u, 2, eth, -1, KINET_MLX5_GID_IPV4, &why), -ENOENT);
	KT_CHECK(why && strstr(why, "family"));
	/* Only link-local v2: used (one L2 network works). */
	KT_CHECK_EQ(kinet_mlx5_gid_choose(&u[1], 1, eth, -1, KINET_MLX5_GID_ANY, &why), 2);
	/* Only v1: used, with a warning. */
	struct kinet_mlx5_gid w[] = {gid_entry(0, v1, "ll", 1), gid_entry(1, v1, "v4", 5)};
	KT_CHECK_EQ(kinet_mlx5_gid_choose(w, 2, eth, -1, KINET_MLX5_GID_ANY, &why), 1);
	KT_CHECK(why && strstr(why, "RoCE v1"));
	/* No address on the interface: only zero GIDs, or none. */
	struct kinet_mlx5_gid z[] = {gid_entry(0, v2, "zero", 0)};
	KT_CHECK_EQ(kinet_mlx5_gid_choose(z, 1, eth, -1, KINET_MLX5_GID_ANY, &why), -ENOENT);
	KT_CHECK(why && strstr(why, "IP address"));
	KT_CHECK_EQ(kinet_mlx5_gid_choose(z, 0, eth, -1, KINET_MLX5_GID_ANY, &why), -ENOENT);
	KT_CHECK_EQ(kinet_mlx5_gid_choose(z, 1, eth, 0, KINET_MLX5_GID_ANY, &why), -ENOENT);
	/* InfiniBand: the port GID. */
	struct kinet_mlx5_gid g_ib[] = {gid_entry(0, KINET_MLX5_IBV_GID_TYPE_IB, "ll", 0x42)};
	KT_CHECK_EQ(kinet_mlx5_gid_choose(g_ib, 1, ib, -1, KINET_MLX5_GID_ANY, &why), 0);
	KT_CHECK_EQ(kinet_mlx5_gid_choose(g_ib, 0, ib, -1, KINET_MLX5_GID_ANY, &why), -ENOENT);

	KT_CHECK_EQ(kinet_mlx5_gid_family_parse(NULL), KINET_MLX5_GID_ANY);
	KT_CHECK_EQ(kinet_mlx5_gid_family_parse("any"), KINET_MLX5_GID_ANY);
	KT_CHECK_EQ(kinet_mlx5_gid_family_parse("ipv4"), KINET_MLX5_GID_IPV4);
	KT_CHECK_EQ(kinet_mlx5_gid_family_parse("ipv6"), KINET_MLX5_GID_IPV6);
	KT_CHECK_EQ(kinet_mlx5_gid_family_parse("IPv4"), -1);
}

KT_TEST(gid_text)
{
	char buf[64];
	struct kinet_mlx5_gid g;

	g = gid_entry(0, 0, "v4", 7);
	kinet_mlx5_gid_format(g.raw, buf, sizeof(buf));
	KT_CHECK(!strcmp(buf, "10.0.0.7"));
	KT_CHECK(kinet_mlx5_gid_is_ipv4(g.raw) && !kinet_mlx5_gid_is_link_local(g.raw));
	g = gid_entry(0, 0, "ll", 1);
	kinet_mlx5_gid_format(g.raw, buf, sizeof(buf));
	KT_CHECK(!strcmp(buf, "fe80::1"));
	KT_CHECK(kinet_mlx5_gid_is_link_local(g.raw) && !kinet_mlx5_gid_is_ipv4(g.raw));
	g = gid_entry(0, 0, "v6", 0x2a);
	kinet_mlx5_gid_format(g.raw, buf, sizeof(buf));
	KT_CHECK(!strcmp(buf, "2001:db8::2a"));
	g = gid_entry(0, 0, "zero", 0);
	kinet_mlx5_gid_format(g.raw, buf, sizeof(buf));
	KT_CHECK(!strcmp(buf, "::"));
	KT_CHECK(kinet_mlx5_gid_is_zero(g.raw));
	/* An InfiniBand port GID: subnet prefix and GUID, no zero run. */
	for (int i = 0; i < 16; i++)
		g.raw[i] = (uint8_t)(i + 1);
	kinet_mlx5_gid_format(g.raw, buf, sizeof(buf));
	KT_CHECK(!strcmp(buf, "102:304:506:708:90a:b0c:d0e:f10"));
	KT_CHECK(!strcmp(kinet_mlx5_gid_type_name(KINET_MLX5_IBV_GID_TYPE_ROCE_V2), "RoCE v2"));
}

KT_TEST(device_spec)
{
	struct kinet_mlx5_device_spec s;
	const char *why;
	static const char *const bad[] = {
		":1",
		"mlx5_0:",
		"mlx5_0:0",
		"mlx5_0:x",
		"mlx5_0:256",
		"mlx5_0:1x",
		"mlx5_0,mlx5_1",
		"mlx5 0",
		"a_device_name_that_is_much_longer_than_any_rdma_device_name_can_be_at_all"};

	KT_OK(kinet_mlx5_device_spec_parse(NULL, &s, &why));
	KT_CHECK(!s.name[0] && !s.port);
	KT_OK(kinet_mlx5_device_spec_parse("", &s, &why));
	KT_CHECK(!s.name[0]);
	KT_OK(kinet_mlx5_device_spec_parse("mlx5_0", &s, &why));
	KT_CHECK(!strcmp(s.name, "mlx5_0") && s.port == 0);
	KT_OK(kinet_mlx5_device_spec_parse("mlx5_bond_0:2", &s, &why));
	KT_CHECK(!strcmp(s.name, "mlx5_bond_0") && s.port == 2);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		why = NULL;
		KT_CHECK_EQ(kinet_mlx5_device_spec_parse(bad[i], &s, &why), -EINVAL);
		KT_CHECK(why && strstr(why, "KINET_DEVICE"));
	}
}

KT_TEST(pci_distance)
{
	const char *gpu = "/sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:08.0/0000:03:00.0";
	const char *nic_same_switch =
		"/sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:10.0/0000:04:00.0";
	const char *nic_same_root = "/sys/devices/pci0000:00/0000:00:02.0/0000:05:00.0";
	const char *nic_other_root = "/sys/devices/pci0000:80/0000:80:01.0/0000:81:00.0";

	KT_CHECK_EQ(kinet_mlx5_pci_distance(gpu, gpu), 0);
	KT_CHECK_EQ(kinet_mlx5_pci_distance(gpu, nic_same_switch), 4);
	KT_CHECK_EQ(kinet_mlx5_pci_distance(nic_same_switch, gpu), 4);
	KT_CHECK_EQ(kinet_mlx5_pci_distance(gpu, nic_same_root), 6);
	KT_CHECK(kinet_mlx5_pci_distance(gpu, nic_other_root) >= KINET_MLX5_PCI_FAR);
	/* A bridge and a device below it; a component that only starts alike. */
	KT_CHECK_EQ(kinet_mlx5_pci_distance("/sys/devices/pci0000:00/0000:00:01.0",
					    "/sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0"),
		    1);
	KT_CHECK_EQ(kinet_mlx5_pci_distance("/sys/devices/pci0000:00/0000:00:01.0",
					    "/sys/devices/pci0000:00/0000:00:01.00"),
		    2);
	KT_CHECK_EQ(kinet_mlx5_pci_distance(NULL, gpu), -1);
	KT_CHECK_EQ(kinet_mlx5_pci_distance("/sys/devices/virtual/net/lo", gpu), -1);
}

static struct kinet_mlx5_port_desc port(const char *dev, int p, bool active, int dist)
{
	struct kinet_mlx5_port_desc d = {dev, p, active ? KINET_MLX5_IBV_PORT_ACTIVE : 1,
					 KINET_MLX5_IBV_LINK_LAYER_ETHERNET, dist};
	return d;
}

KT_TEST(port_choice)
{
	struct kinet_mlx5_port_desc p[] = {
		port("mlx5_0", 1, true, 6),  port("mlx5_1", 1, true, 4), port("mlx5_2", 1, false, 0),
		port("mlx5_3", 1, true, -1), port("mlx5_3", 2, true, 4),
	};
	const size_t n = sizeof(p) / sizeof(p[0]);
	struct kinet_mlx5_device_spec s;
	const char *w;
	char why[256];

	/* The closest active port; a tie goes to the first. */
	KT_CHECK_EQ(kinet_mlx5_port_choose(p, n, NULL, why, sizeof(why)), 1);
	/* Unknown distances come after known ones, in order. */
	struct kinet_mlx5_port_desc q[] = {port("mlx5_0", 1, true, -1), port("mlx5_1", 1, true, 300),
					   port("mlx5_2", 1, true, -1)};
	KT_CHECK_EQ(kinet_mlx5_port_choose(q, 3, NULL, why, sizeof(why)), 1);
	q[1].pci_distance = -1;
	KT_CHECK_EQ(kinet_mlx5_port_choose(q, 3, NULL, why, sizeof(why)), 0);

	KT_OK(kinet_mlx5_device_spec_parse("mlx5_0", &s, &w));
	KT_CHECK_EQ(kinet_mlx5_port_choose(p, n, &s, why, sizeof(why)), 0);
	KT_OK(kinet_mlx5_device_spec_parse("mlx5_3", &s, &w));
	KT_CHECK_EQ(kinet_mlx5_port_choose(p, n, &s, why, sizeof(why)), 4);
	KT_OK(kinet_mlx5_device_spec_parse("mlx5_3:1", &s, &w));
	KT_CHECK_EQ(kinet_mlx5_port_choose(p, n, &s, why, sizeof(why)), 3);
	KT_OK(kinet_mlx5_device_spec_parse("mlx5_2", &s, &w));
	KT_CHECK_EQ(kinet_mlx5_port_choose(p, n, &s, why, sizeof(why)), -ENODEV);
	KT_CHECK(strstr(why, "no active mlx5 port on mlx5_2"));
	KT_OK(kinet_mlx5_device_spec_parse("mlx5_2:1", &s, &w));
	KT_CHECK_EQ(kinet_mlx5_port_choose(p, n, &s, why, sizeof(why)), -ENODEV);
	KT_CHECK(strstr(why, "DOWN") && strstr(why, "mlx5_2:1"));
	KT_OK(kinet_mlx5_device_spec_parse("mlx5_9", &s, &w));
	KT_CHECK_EQ(kinet_mlx5_port_choose(p, n, &s, why, sizeof(why)), -ENODEV);
	KT_CHECK(strstr(why, "no such mlx5 device"));
	KT_OK(kinet_mlx5_device_spec_parse("mlx5_0:2", &s, &w));
	KT_CHECK_EQ(kinet_mlx5_port_choose(p, n, &s, why, sizeof(why)), -ENODEV);
	KT_CHECK(strstr(why, "has no port 2"));
	KT_CHECK_EQ(kinet_mlx5_port_choose(p, 0, NULL, why, sizeof(why)), -ENODEV);
	KT_CHECK(strstr(why, "no mlx5 device"));
	KT_CHECK_EQ(kinet_mlx5_port_choose(&p[2], 1, NULL, why, sizeof(why)), -ENODEV);
	KT_CHECK(strstr(why, "no active mlx5 port"));
}

KT_TEST(info_blob)
{
	uint8_t t[KINET_QP_INFO_TRANSPORT_BYTES];
	struct kinet_mlx5_peer_info a, b;

	memset(&a, 0, sizeof(a));
	a.link_layer = KINET_MLX5_IBV_LINK_LAYER_ETHERNET;
	a.port = 2;
	a.mtu = 3;
	a.psn = 0xabcdef;
	a.gid[10] = a.gid[11] = 0xff;
	a.gid[12] = 192;
	a.gid[15] = 5;
	kinet_mlx5_info_pack(&a, t);
	KT_OK(kinet_mlx5_info_unpack(t, &b));
	KT_CHECK(!memcmp(&a, &b, sizeof(a)));

	a.link_layer = KINET_MLX5_IBV_LINK_LAYER_INFINIBAND;
	a.lid = 0x1234;
	a.mtu = 5;
	kinet_mlx5_info_pack(&a, t);
	KT_OK(kinet_mlx5_info_unpack(t, &b));
	KT_CHECK_EQ(b.lid, 0x1234);
	KT_CHECK_EQ(b.psn, 0xabcdef);
	KT_CHECK_EQ(b.mtu, 5);

	/* Another provider's info (the soft NIC's starts with a host id), a
	 * later version, fields out of range: refused. */
	uint8_t u[KINET_QP_INFO_TRANSPORT_BYTES];
	memcpy(u, t, sizeof(u));
	u[0] ^= 1;
	KT_CHECK_EQ(kinet_mlx5_info_unpack(u, &b), -EPROTO);
	memcpy(u, t, sizeof(u));
	u[4] = 2;
	KT_CHECK_EQ(kinet_mlx5_info_unpack(u, &b), -EPROTO);
	memcpy(u, t, sizeof(u));
	u[7] = 6; /* MTU */
	KT_CHECK_EQ(kinet_mlx5_info_unpack(u, &b), -EPROTO);
	memcpy(u, t, sizeof(u));
	u[5] = 3; /* link layer */
	KT_CHECK_EQ(kinet_mlx5_info_unpack(u, &b), -EPROTO);
	memcpy(u, t, sizeof(u));
	u[6] = 0; /* port */
	KT_CHECK_EQ(kinet_mlx5_info_unpack(u, &b), -EPROTO);
	a.lid = 0; /* InfiniBand without a LID */
	kinet_mlx5_info_pack(&a, u);
	KT_CHECK_EQ(kinet_mlx5_info_unpack(u, &b), -EPROTO);
	a.link_layer = KINET_MLX5_IBV_LINK_LAYER_ETHERNET; /* RoCE without a GID */
	memset(a.gid, 0, sizeof(a.gid));
	kinet_mlx5_info_pack(&a, u);
	KT_CHECK_EQ(kinet_mlx5_info_unpack(u, &b), -EPROTO);
	memset(u, 0, sizeof(u));
	KT_CHECK_EQ(kinet_mlx5_info_unpack(u, &b), -EPROTO);
}

static void err_cqe(struct kinet_cqe64 *c, uint8_t opcode, uint8_t synd, uint8_t vendor, uint8_t wqe_op,
		    uint32_t qpn, uint16_t counter)
{
	struct kinet_err_cqe *e = (struct kinet_err_cqe *)(void *)c;

	memset(c, 0, sizeof(*c));
	e->syndrome = synd;
	e->vendor_err_synd = vendor;
	e->s_wqe_opcode_qpn = kinet_be32((uint32_t)wqe_op << 24 | qpn);
	e->wqe_counter = kinet_be16(counter);
	e->op_own = (uint8_t)(opcode << 4 | 1);
}

KT_TEST(cqe_errors)
{
	struct kinet_mlx5_cqe_error e;
	struct kinet_cqe64 c;

	err_cqe(&c, KINET_CQE_REQ_ERR, KINET_SYND_REMOTE_ACCESS_ERR, 0x88, KINET_WQE_OP_RDMA_WRITE, 0x123456,
		77);
	KT_CHECK(kinet_mlx5_cqe_error_decode(&c, &e));
	KT_CHECK_EQ(e.qpn, 0x123456);
	KT_CHECK_EQ(e.syndrome, KINET_SYND_REMOTE_ACCESS_ERR);
	KT_CHECK_EQ(e.vendor_syndrome, 0x88);
	KT_CHECK_EQ(e.wqe_opcode, KINET_WQE_OP_RDMA_WRITE);
	KT_CHECK_EQ(e.wqe_counter, 77);
	KT_CHECK(e.first_error && !e.responder);
	err_cqe(&c, KINET_CQE_REQ_ERR, KINET_SYND_WR_FLUSH_ERR, 0xf9, KINET_WQE_OP_SEND, 9, 78);
	KT_CHECK(kinet_mlx5_cqe_error_decode(&c, &e));
	KT_CHECK(!e.first_error); /* a flush records nothing new */
	err_cqe(&c, KINET_CQE_RESP_ERR, KINET_SYND_LOCAL_LENGTH_ERR, 0, 0, 9, 3);
	KT_CHECK(kinet_mlx5_cqe_error_decode(&c, &e));
	KT_CHECK(e.responder && e.first_error && e.syndrome == KINET_SYND_LOCAL_LENGTH_ERR);
	err_cqe(&c, KINET_CQE_REQ, 0, 0, 0, 9, 3);
	KT_CHECK(!kinet_mlx5_cqe_error_decode(&c, &e));
	err_cqe(&c, KINET_CQE_RESP_SEND, 0, 0, 0, 9, 3);
	KT_CHECK(!kinet_mlx5_cqe_error_decode(&c, &e));
}

/* The plain doorbell: the QP number and the 16-bit producer index, ds 0
 * (what NVSHMEM's IBGDA and the software NIC both read as "up to here"). */
KT_TEST(doorbell)
{
	struct kinet_wqe_ctrl_seg c;
	uint64_t v = kinet_mlx5_doorbell(0xabcdef, 0x12345);

	memset(&c, 0, sizeof(c));
	memcpy(&c, &v, sizeof(v));
	KT_CHECK_EQ(kinet_wqe_ctrl_qpn(&c), 0xabcdef);
	KT_CHECK_EQ(kinet_wqe_ctrl_index(&c), 0x2345);
	KT_CHECK_EQ(kinet_wqe_ctrl_ds(&c), 0);
	KT_CHECK_EQ(kinet_be32(c.opmod_idx_opcode) & 0xff, 0); /* no opcode */
	KT_CHECK_EQ(kinet_be32(c.opmod_idx_opcode) >> 24, 0);
	v = kinet_mlx5_doorbell(0x1000001, 0xffff);
	memcpy(&c, &v, sizeof(v));
	KT_CHECK_EQ(kinet_wqe_ctrl_qpn(&c), 1); /* 24-bit QP numbers */
	KT_CHECK_EQ(kinet_wqe_ctrl_index(&c), 0xffff);
}

/* rdma-core's values, where its headers are installed. */
KT_TEST(verbs_values)
{
#ifdef KINET_TEST_RDMA_HEADERS
	KT_CHECK_EQ(KINET_MLX5_IBV_ACCESS_LOCAL_WRITE, IBV_ACCESS_LOCAL_WRITE);
	KT_CHECK_EQ(KINET_MLX5_IBV_ACCESS_REMOTE_WRITE, IBV_ACCESS_REMOTE_WRITE);
	KT_CHECK_EQ(KINET_MLX5_IBV_ACCESS_REMOTE_READ, IBV_ACCESS_REMOTE_READ);
	KT_CHECK_EQ(KINET_MLX5_IBV_ACCESS_REMOTE_ATOMIC, IBV_ACCESS_REMOTE_ATOMIC);
	KT_CHECK_EQ(KINET_MLX5_IBV_MTU_256, IBV_MTU_256);
	KT_CHECK_EQ(KINET_MLX5_IBV_MTU_4096, IBV_MTU_4096);
	KT_CHECK_EQ(kinet_mlx5_mtu_bytes(IBV_MTU_1024), 1024);
	KT_CHECK_EQ(kinet_mlx5_mtu_bytes(IBV_MTU_2048), 2048);
	KT_CHECK_EQ(KINET_MLX5_IBV_LINK_LAYER_INFINIBAND, IBV_LINK_LAYER_INFINIBAND);
	KT_CHECK_EQ(KINET_MLX5_IBV_LINK_LAYER_ETHERNET, IBV_LINK_LAYER_ETHERNET);
	KT_CHECK_EQ(KINET_MLX5_IBV_PORT_ACTIVE, IBV_PORT_ACTIVE);
	KT_CHECK(!strcmp(kinet_mlx5_port_state_name(IBV_PORT_DOWN), "DOWN"));
	KT_CHECK_EQ(KINET_MLX5_IBV_GID_TYPE_IB, IBV_GID_TYPE_IB);
	KT_CHECK_EQ(KINET_MLX5_IBV_GID_TYPE_ROCE_V1, IBV_GID_TYPE_ROCE_V1);
	KT_CHECK_EQ(KINET_MLX5_IBV_GID_TYPE_ROCE_V2, IBV_GID_TYPE_ROCE_V2);
	KT_CHECK_EQ(kinet_mlx5_access_flags(KINET_ACCESS_LOCAL_WRITE | KINET_ACCESS_REMOTE_WRITE |
					    KINET_ACCESS_REMOTE_READ | KINET_ACCESS_REMOTE_ATOMIC),
		    IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
			    IBV_ACCESS_REMOTE_ATOMIC);
	/* The doorbell as mlx5dv.h's control segment spells it. */
	struct mlx5_wqe_ctrl_seg m;
	uint64_t v = kinet_mlx5_doorbell(0x42, 0x1234);
	memset(&m, 0, sizeof(m));
	m.opmod_idx_opcode = htobe32(0x1234u << 8);
	m.qpn_ds = htobe32(0x42u << 8);
	KT_CHECK(!memcmp(&v, &m, sizeof(v)));
	/* The record the CPU-assisted mode writes is the send counter. */
	KT_CHECK_EQ(KINET_DBR_SEND, MLX5_SND_DBR);
	KT_CHECK_EQ(KINET_DBR_RECV, MLX5_RCV_DBR);
#else
	KT_SKIP("rdma-core's headers are not installed");
#endif
}

KT_MAIN(access_flags, mtu, path_mtu, ack_timeout, rnr, rd_atomic, gid_choice, gid_text, device_spec,
	pci_distance, port_choice, info_blob, cqe_errors, doorbell, verbs_values)
