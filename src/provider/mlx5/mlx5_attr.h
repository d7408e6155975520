/*
 * The ConnectX provider's pure part: what it decides from numbers and
 * strings alone, with no rdma-core call and no rdma-core header, so that CI
 * tests it where there is no NIC (tests/host/mlx5/test_mlx5_attr.c) and builds
 * without rdma-core's headers still carry it.
 *
 * rdma-core's enum values used here are repeated as KINET_MLX5_IBV_*; the
 * test checks them against <infiniband/verbs.h> where it is installed.
 */
#ifndef KINET_MLX5_ATTR_H
#define KINET_MLX5_ATTR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kinet/wire.h"

/* enum ibv_access_flags */
#define KINET_MLX5_IBV_ACCESS_LOCAL_WRITE 1u
#define KINET_MLX5_IBV_ACCESS_REMOTE_WRITE 2u
#define KINET_MLX5_IBV_ACCESS_REMOTE_READ 4u
#define KINET_MLX5_IBV_ACCESS_REMOTE_ATOMIC 8u
/* enum ibv_mtu: 256 << (value - 1) bytes */
#define KINET_MLX5_IBV_MTU_256 1
#define KINET_MLX5_IBV_MTU_4096 5
/* link_layer of struct ibv_port_attr */
#define KINET_MLX5_IBV_LINK_LAYER_INFINIBAND 1
#define KINET_MLX5_IBV_LINK_LAYER_ETHERNET 2
/* enum ibv_port_state */
#define KINET_MLX5_IBV_PORT_ACTIVE 4
/* enum ibv_gid_type (struct ibv_gid_entry) */
#define KINET_MLX5_IBV_GID_TYPE_IB 0
#define KINET_MLX5_IBV_GID_TYPE_ROCE_V1 1
#define KINET_MLX5_IBV_GID_TYPE_ROCE_V2 2

/* ---- memory regions (attr.c) ---- */
/* The verbs access flags of kinet_mr_reg's access bits (ZERO_BASED is the
 * address the NIC is given, not a flag: kinet_mlx5_mr_iova). */
unsigned kinet_mlx5_access_flags(unsigned kinet_access);
/* The I/O virtual address WQEs name the region by: its address, or 0 for a
 * zero-based region (addresses are offsets). */
uint64_t kinet_mlx5_mr_iova(uint64_t addr, unsigned kinet_access);

/* ---- path MTU (attr.c) ---- */
/* Bytes of an enum ibv_mtu value, 0 when it is not one. */
unsigned kinet_mlx5_mtu_bytes(int mtu);
/* $KINET_MLX5_MTU (bytes: 256, 512, 1024, 2048 or 4096) as an enum ibv_mtu;
 * 0 for NULL or empty, -1 when it is none of those. */
int kinet_mlx5_mtu_parse(const char *bytes);

/* ---- connection attributes (attr.c) ---- */
struct kinet_mlx5_path_in {
	uint32_t timeout_ms;	     /* kinet_qp_attr.timeout_ms */
	uint32_t rnr_timeout_ms;     /* kinet_qp_attr.rnr_timeout_ms */
	int local_mtu;		     /* this port's active MTU (enum ibv_mtu) */
	int remote_mtu;		     /* the peer port's, from its kinet_qp_info */
	int mtu_cap;		     /* $KINET_MLX5_MTU, 0: none */
	uint32_t max_init_rd_atomic; /* device: max_qp_init_rd_atom */
	uint32_t max_dest_rd_atomic; /* device: max_qp_rd_atom */
	int timeout_override;	     /* $KINET_MLX5_TIMEOUT (exponent 1..31), -1: none */
	int retry_override;	     /* $KINET_MLX5_RETRY_CNT (0..7), -1: none */
};

/* What RESET -> INIT -> RTR -> RTS sets, and the bounds it gives. */
struct kinet_mlx5_path {
	uint8_t path_mtu;	    /* enum ibv_mtu: the smaller active MTU of both ports */
	uint8_t timeout;	    /* local ACK timeout: 4.096 us * 2^timeout */
	uint8_t retry_cnt;	    /* transport retries */
	uint8_t rnr_retry;	    /* RNR retries, never 7 (infinite) */
	uint8_t min_rnr_timer;	    /* what this QP, as responder, asks requesters to wait */
	uint8_t max_rd_atomic;	    /* outstanding reads/atomics as requester */
	uint8_t max_dest_rd_atomic; /* as responder */
	uint64_t retry_bound_us;    /* a dead peer's TRANSPORT_RETRY_EXC comes within this */
	uint64_t rnr_bound_us;	    /* a missing receive's RNR_RETRY_EXC, with a kinet peer */
};

/* Fills *out from *in: 0, or -EINVAL when no valid MTU is given (*why). */
int kinet_mlx5_path_compute(const struct kinet_mlx5_path_in *in, struct kinet_mlx5_path *out,
			    const char **why);
/* Microseconds of an ACK timeout exponent (0: infinite, UINT64_MAX). */
uint64_t kinet_mlx5_ack_timeout_us(uint8_t exponent);
/* The largest exponent whose retry_cnt + 1 attempts fit in timeout_ms, at
 * least KINET_MLX5_MIN_ACK_TIMEOUT (shorter ones retransmit spuriously on
 * a loaded fabric). */
#define KINET_MLX5_MIN_ACK_TIMEOUT 10
uint8_t kinet_mlx5_ack_timeout(uint32_t timeout_ms, uint8_t retry_cnt);
/* Microseconds of an RNR timer code (the IB table: 0 is the longest). */
uint32_t kinet_mlx5_rnr_timer_us(uint8_t code);
/* The longest RNR timer code not above us (at least code 1, 10 us). */
uint8_t kinet_mlx5_rnr_timer(uint64_t us);

/* ---- GIDs (gid.c) ---- */
struct kinet_mlx5_gid {
	uint32_t index;
	uint32_t type; /* KINET_MLX5_IBV_GID_TYPE_* */
	uint8_t raw[16];
};

enum kinet_mlx5_gid_family {
	KINET_MLX5_GID_ANY,  /* IPv4 first, then IPv6 */
	KINET_MLX5_GID_IPV4, /* only IPv4-mapped GIDs */
	KINET_MLX5_GID_IPV6, /* only IPv6 GIDs */
};

/* $KINET_MLX5_GID_FAMILY: ipv4, ipv6, or NULL/empty/any; -1 otherwise. */
int kinet_mlx5_gid_family_parse(const char *s);
/* The GID index a QP of this port uses: want_index (>= 0, $KINET_MLX5_GID_INDEX)
 * when the table has it; on InfiniBand index 0 (the port GID); on RoCE the
 * lowest RoCE v2 GID of the family, global before link-local.  The index,
 * or -ENOENT with *why. */
int kinet_mlx5_gid_choose(const struct kinet_mlx5_gid *gids, size_t n, int link_layer, int want_index,
			  enum kinet_mlx5_gid_family family, const char **why);
bool kinet_mlx5_gid_is_ipv4(const uint8_t raw[16]);
bool kinet_mlx5_gid_is_link_local(const uint8_t raw[16]);
bool kinet_mlx5_gid_is_zero(const uint8_t raw[16]);
/* An IPv4-mapped GID as a.b.c.d, any other as IPv6 text. */
void kinet_mlx5_gid_format(const uint8_t raw[16], char *buf, size_t len);
const char *kinet_mlx5_gid_type_name(uint32_t type);

/* ---- device and port (device_choice.c) ---- */
/* $KINET_DEVICE: "mlx5_0" (its first active port) or "mlx5_0:1". */
struct kinet_mlx5_device_spec {
	char name[64]; /* empty: no choice made */
	int port;      /* 1..255, 0: any active port */
};
/* 0 (NULL or empty s: no spec), or -EINVAL with *why. */
int kinet_mlx5_device_spec_parse(const char *s, struct kinet_mlx5_device_spec *spec, const char **why);

/* Hops between two PCI devices through their lowest common bridge, from
 * their sysfs paths (/sys/devices/pci0000:00/0000:00:01.0/...): 0 for the
 * same device.  Devices under different root complexes are
 * KINET_MLX5_PCI_FAR plus their depths apart (the path crosses the CPU).
 * -1 when a path is missing or not a PCI path. */
#define KINET_MLX5_PCI_FAR 256
int kinet_mlx5_pci_distance(const char *a, const char *b);

struct kinet_mlx5_port_desc {
	const char *device; /* "mlx5_0" */
	int port;	    /* 1-based */
	int state;	    /* enum ibv_port_state */
	int link_layer;
	int pci_distance; /* to the context's GPU, -1: unknown */
};
/* The port a context uses: spec's, else the active port closest to the GPU
 * (unknown distances last; ties in the order given).  Its index in p, or
 * -ENODEV (no such device or port, none active) with why filled. */
int kinet_mlx5_port_choose(const struct kinet_mlx5_port_desc *p, size_t n,
			   const struct kinet_mlx5_device_spec *spec, char *why, size_t whylen);
const char *kinet_mlx5_port_state_name(int state);
const char *kinet_mlx5_link_layer_name(int link_layer);

/* ---- the provider's part of kinet_qp_info (info_blob.c) ---- */
struct kinet_mlx5_peer_info {
	uint8_t link_layer; /* KINET_MLX5_IBV_LINK_LAYER_* */
	uint8_t port;
	uint8_t mtu;  /* the port's active MTU (enum ibv_mtu) */
	uint16_t lid; /* InfiniBand */
	uint32_t psn; /* 24 bits: the first packet sequence number it sends */
	uint8_t gid[16];
};
/* Fills transport (KINET_QP_INFO_TRANSPORT_BYTES): a magic and version
 * first, so that another provider's info is told apart. */
void kinet_mlx5_info_pack(const struct kinet_mlx5_peer_info *p, uint8_t *transport);
/* 0, or -EPROTO (not the mlx5 provider's, or a field out of range). */
int kinet_mlx5_info_unpack(const uint8_t *transport, struct kinet_mlx5_peer_info *p);

/* ---- completions and doorbells (attr.c) ---- */
struct kinet_mlx5_cqe_error {
	uint32_t qpn;
	uint8_t syndrome;
	uint8_t vendor_syndrome;
	uint8_t wqe_opcode;
	uint16_t wqe_counter;
	bool responder;	  /* RESP_ERR, not REQ_ERR */
	bool first_error; /* not a flush of work behind an earlier error */
};
/* false when cqe is no error CQE. */
bool kinet_mlx5_cqe_error_decode(const struct kinet_cqe64 *cqe, struct kinet_mlx5_cqe_error *e);
/* The 8-byte doorbell, as stored, announcing producer index pi (basic
 * blocks) of QP qpn: the plain doorbell (ds 0) the CPU-assisted mode and
 * host posting ring. */
uint64_t kinet_mlx5_doorbell(uint32_t qpn, uint64_t pi);

#endif /* KINET_MLX5_ATTR_H */
