/*
 * Attribute translation of the ConnectX provider: kinet's access bits,
 * timeouts and MTUs into what verbs takes; error CQEs and doorbells in the
 * PRM's terms.  Pure (mlx5_attr.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "kinet/kinet.h"
#include "mlx5_attr.h"

/* Transport retries when $KINET_MLX5_RETRY_CNT says nothing: the most the
 * field holds, as NCCL and NVSHMEM use; the timeout exponent is then
 * chosen so that all of them fit in the QP's timeout. */
#define DEFAULT_RETRY_CNT 7
/* RNR retries: the most that is not "infinite" (7), so that a send to a QP
 * that never posts a receive fails within a bound, as on the soft NIC. */
#define DEFAULT_RNR_RETRY 6
/* Outstanding RDMA reads and atomics per QP, at most (ConnectX's usual
 * device limit). */
#define MAX_RD_ATOMIC 16

unsigned kinet_mlx5_access_flags(unsigned a)
{
	unsigned f = 0;

	if (a & KINET_ACCESS_LOCAL_WRITE)
		f |= KINET_MLX5_IBV_ACCESS_LOCAL_WRITE;
	if (a & KINET_ACCESS_REMOTE_WRITE)
		f |= KINET_MLX5_IBV_ACCESS_REMOTE_WRITE;
	if (a & KINET_ACCESS_REMOTE_READ)
		f |= KINET_MLX5_IBV_ACCESS_REMOTE_READ;
	if (a & KINET_ACCESS_REMOTE_ATOMIC)
		f |= KINET_MLX5_IBV_ACCESS_REMOTE_ATOMIC;
	return f;
}

uint64_t kinet_mlx5_mr_iova(uint64_t addr, unsigned a)
{
	return a & KINET_ACCESS_ZERO_BASED ? 0 : addr;
}

unsigned kinet_mlx5_mtu_bytes(int mtu)
{
	return mtu >= KINET_MLX5_IBV_MTU_256 && mtu <= KINET_MLX5_IBV_MTU_4096 ? 256u << (mtu - 1) : 0;
}

int kinet_mlx5_mtu_parse(const char *s)
{
	char *end;
	long v;

	if (!s || !*s)
		return 0;
	v = strtol(s, &end, 10);
	if (*end)
		return -1;
	for (int m = KINET_MLX5_IBV_MTU_256; m <= KINET_MLX5_IBV_MTU_4096; m++)
		if ((long)kinet_mlx5_mtu_bytes(m) == v)
			return m;
	return -1;
}

uint64_t kinet_mlx5_ack_timeout_us(uint8_t t)
{
	if (!t)
		return UINT64_MAX;
	/* 4.096 us * 2^t, exactly: 4096 ns << t. */
	return ((uint64_t)4096 << t) / 1000;
}

uint8_t kinet_mlx5_ack_timeout(uint32_t timeout_ms, uint8_t retry_cnt)
{
	uint64_t budget_ns = (uint64_t)timeout_ms * 1000000ull;
	uint8_t t = KINET_MLX5_MIN_ACK_TIMEOUT;

	while (t < 31 && ((uint64_t)4096 << (t + 1)) * (retry_cnt + 1u) <= budget_ns)
		t++;
	return t;
}

/* IB spec 9.7.5.2.8, in microseconds: code 0 is the longest, 655.36 ms. */
static const uint32_t rnr_table_us[32] = {
	655360, 10,    20,    30,    40,    60,	    80,	    120,    160,    240,    320,
	480,	640,   960,   1280,  1920,  2560,   3840,   5120,   7680,   10240,  15360,
	20480,	30720, 40960, 61440, 81920, 122880, 163840, 245760, 327680, 491520,
};

uint32_t kinet_mlx5_rnr_timer_us(uint8_t code)
{
	return rnr_table_us[code & 31];
}

uint8_t kinet_mlx5_rnr_timer(uint64_t us)
{
	uint8_t best = 1;

	if (us >= rnr_table_us[0])
		return 0;
	for (uint8_t c = 1; c < 32; c++)
		if (rnr_table_us[c] <= us)
			best = c;
	return best;
}

static uint8_t min_u32(uint32_t a, uint32_t b)
{
	return (uint8_t)(a < b ? a : b);
}

int kinet_mlx5_path_compute(const struct kinet_mlx5_path_in *in, struct kinet_mlx5_path *out,
			    const char **why)
{
	int mtu = in->local_mtu;

	memset(out, 0, sizeof(*out));
	/* Both ends must use one MTU no larger than either port's active MTU:
	 * a 4096 MTU on a 1500-byte Ethernet drops every full packet. */
	if (!kinet_mlx5_mtu_bytes(in->local_mtu) || !kinet_mlx5_mtu_bytes(in->remote_mtu)) {
		*why = "a port reported no valid active MTU";
		return -EINVAL;
	}
	if (in->remote_mtu < mtu)
		mtu = in->remote_mtu;
	if (in->mtu_cap > 0 && in->mtu_cap < mtu)
		mtu = in->mtu_cap;
	out->path_mtu = (uint8_t)mtu;

	out->retry_cnt = in->retry_override >= 0 && in->retry_override <= 7 ? (uint8_t)in->retry_override
									    : DEFAULT_RETRY_CNT;
	out->timeout = in->timeout_override >= 1 && in->timeout_override <= 31
			       ? (uint8_t)in->timeout_override
			       : kinet_mlx5_ack_timeout(in->timeout_ms, out->retry_cnt);
	out->retry_bound_us = kinet_mlx5_ack_timeout_us(out->timeout) * (out->retry_cnt + 1u);

	/* rnr_timeout_ms 0: fail at the first RNR NAK. */
	if (!in->rnr_timeout_ms) {
		out->rnr_retry = 0;
		out->min_rnr_timer = 1;
	} else {
		out->rnr_retry = DEFAULT_RNR_RETRY;
		out->min_rnr_timer =
			kinet_mlx5_rnr_timer((uint64_t)in->rnr_timeout_ms * 1000u / DEFAULT_RNR_RETRY);
	}
	out->rnr_bound_us = (uint64_t)kinet_mlx5_rnr_timer_us(out->min_rnr_timer) * out->rnr_retry;

	out->max_rd_atomic = min_u32(in->max_init_rd_atomic ? in->max_init_rd_atomic : 1, MAX_RD_ATOMIC);
	out->max_dest_rd_atomic = min_u32(in->max_dest_rd_atomic ? in->max_dest_rd_atomic : 1, MAX_RD_ATOMIC);
	*why = NULL;
	return 0;
}

bool kinet_mlx5_cqe_error_decode(const struct kinet_cqe64 *cqe, struct kinet_mlx5_cqe_error *e)
{
	const struct kinet_err_cqe *ecqe = (const struct kinet_err_cqe *)(const void *)cqe;
	uint8_t op = kinet_cqe_opcode(cqe);
	uint32_t v;

	if (op != KINET_CQE_REQ_ERR && op != KINET_CQE_RESP_ERR)
		return false;
	v = kinet_be32(ecqe->s_wqe_opcode_qpn);
	e->qpn = v & 0xffffff;
	e->wqe_opcode = (uint8_t)(v >> 24);
	e->syndrome = ecqe->syndrome;
	e->vendor_syndrome = ecqe->vendor_err_synd;
	e->wqe_counter = kinet_be16(ecqe->wqe_counter);
	e->responder = op == KINET_CQE_RESP_ERR;
	/* Work flushed behind the first error says nothing new (the soft NIC
	 * records only the WQE that failed). */
	e->first_error = e->syndrome != KINET_SYND_WR_FLUSH_ERR;
	return true;
}

uint64_t kinet_mlx5_doorbell(uint32_t qpn, uint64_t pi)
{
	struct kinet_wqe_ctrl_seg c;
	uint64_t v;

	memset(&c, 0, sizeof(c));
	c.opmod_idx_opcode = kinet_be32((uint32_t)(uint16_t)pi << 8);
	c.qpn_ds = kinet_be32((qpn & 0xffffff) << 8);
	memcpy(&v, &c, sizeof(v));
	return v;
}
