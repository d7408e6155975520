/*
 * The verbs front door's objects (docs/VERBS.md): rdma-core's public
 * structures, each wrapped around the kinet object that does the work.
 * Every wrapper starts with (or ends in, for the context) the structure
 * rdma-core's inline functions reach through, laid out as libibverbs v44
 * lays it out, so programs compiled against rdma-core's headers call into
 * kinet.
 *
 * Lifetimes: a context owns its kinet context, its directory listener and
 * its notifier thread; both threads stop before the kinet context closes.
 * CQs, SRQs and QPs are on the context's lists (under lock) while they
 * exist: the notifier and the directory only touch them under that lock,
 * and destroy unlinks before it frees.
 */
#ifndef KINET_VERBS_H
#define KINET_VERBS_H

#include <infiniband/verbs.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "kinet/kinet.h"

/* The symbol kinet's ofi carrier looks for to know that the process's
 * libibverbs is this one (it then keeps libfabric off verbs providers). */
extern const int kinet_verbs_front_door;

#define KINET_VERBS_EXPORT __attribute__((visibility("default")))

/* The directory (directory.c): each context serves its QPs' connection
 * blobs on TCP port base + slot, and its QPNs carry the slot in their top
 * byte, so a QPN and a GID (an IPv4 address) are all a peer needs. */
#define KINET_VERBS_SLOTS 255

struct kinet_verbs_directory {
	int listen_fd;
	int wake[2];
	uint16_t port_base;
	uint16_t slot;
	pthread_t thread;
	bool running;
};

struct kinet_verbs_cq;
struct kinet_verbs_qp;
struct kinet_verbs_srq;

struct kinet_verbs_context {
	struct kinet_ctx *kctx;
	union ibv_gid gid; /* ::ffff:a.b.c.d of the chosen interface */
	uint32_t ipv4;	   /* network order */
	struct kinet_verbs_directory dir;

	pthread_mutex_t lock; /* the lists, arming, async events */
	pthread_cond_t wake;  /* the notifier: something was armed */
	struct kinet_verbs_cq *cqs;
	struct kinet_verbs_qp *qps;
	struct kinet_verbs_srq *srqs;
	pthread_t notifier;
	bool stopping;
	int async_pipe[2]; /* records of struct ibv_async_event */

	struct verbs_context vctx; /* last: its ibv_context must end the object */
};

static inline struct kinet_verbs_context *kinet_verbs_ctx(struct ibv_context *context)
{
	return (struct kinet_verbs_context *)((char *)context -
					      __builtin_offsetof(struct kinet_verbs_context, vctx.context));
}

struct kinet_verbs_mr {
	struct ibv_mr mr;
	struct kinet_mr *kmr;
};

struct kinet_verbs_cq {
	struct ibv_cq_ex cq; /* first: ibv_cq_ex_to_cq is a cast */
	struct kinet_cq *kcq;
	uint64_t wc_flags;   /* what ibv_create_cq_ex asked to read */
	bool armed;	     /* under the context's lock */
	struct kinet_wc cur; /* the completion start_poll/next_poll reached */
	struct kinet_verbs_cq *next;
};

static inline struct kinet_verbs_cq *kinet_verbs_cq(struct ibv_cq *cq)
{
	return (struct kinet_verbs_cq *)cq;
}

struct kinet_verbs_srq {
	struct ibv_srq srq;
	struct kinet_srq *ksrq;
	uint32_t max_wr;
	uint32_t max_sge;
	uint32_t limit; /* armed when non-zero, under the context's lock */
	struct kinet_verbs_srq *next;
};

/* The ibv_wr_* API (qp_ex.c): the work requests between wr_start and
 * wr_complete, with their scatter lists and inline bytes. */
struct kinet_verbs_batch {
	struct kinet_send_wr *wr;
	struct kinet_sge *sge; /* max_sge per request */
	uint8_t *inline_buf;   /* max_inline per request */
	uint32_t count, cap;
	int error; /* the first bad call since wr_start, as an errno */
};

struct kinet_verbs_qp {
	struct ibv_qp_ex qpx; /* first: ibv_qp is its first member */
	struct kinet_qp *kqp;
	struct ibv_qp_cap cap;
	bool sq_sig_all;
	struct ibv_qp_attr attr; /* what modify_qp set, for query_qp */
	int attr_mask;
	struct kinet_verbs_batch batch;
	uint64_t send_ops; /* IBV_QP_EX_WITH_*: the builders asked for */
	struct kinet_verbs_qp *next;
	bool last_wqe_sent; /* IBV_EVENT_QP_LAST_WQE_REACHED given (SRQ) */
};

static inline struct kinet_verbs_qp *kinet_verbs_qp(struct ibv_qp *qp)
{
	return (struct kinet_verbs_qp *)qp;
}

/* errno as a verb returns it (positive) from kinet's (negative). */
static inline int kinet_verbs_errno(int kinet_ret)
{
	return kinet_ret < 0 ? -kinet_ret : kinet_ret;
}

/* gid.c */
int kinet_verbs_gid_choose(struct kinet_verbs_context *ctx);
/* The address (network order) of the interface the GID comes from:
 * $KINET_VERBS_NETDEV, else the first up, non-loopback one with an IPv4
 * address, else loopback. */
int kinet_verbs_netdev_address(uint32_t *ipv4);
/* Node GUID: an EUI-64 from the address (host order). */
uint64_t kinet_verbs_guid(uint32_t ipv4);

/* directory.c */
int kinet_verbs_directory_start(struct kinet_verbs_context *ctx);
void kinet_verbs_directory_stop(struct kinet_verbs_context *ctx);
/* Asks the context serving qpn at ipv4 (network order) for its blob. */
int kinet_verbs_directory_lookup(struct kinet_verbs_context *ctx, uint32_t ipv4, uint32_t qpn,
				 struct kinet_qp_info *info);

/* notify.c */
int kinet_verbs_notifier_start(struct kinet_verbs_context *ctx);
void kinet_verbs_notifier_stop(struct kinet_verbs_context *ctx);

/* wc.c */
void kinet_verbs_wc(const struct kinet_wc *in, struct ibv_wc *out);
enum ibv_wc_status kinet_verbs_wc_status(int syndrome);
enum ibv_wc_opcode kinet_verbs_wc_opcode(const struct kinet_wc *wc);

/* post.c */
int kinet_verbs_post_errno(int kinet_ret);
int kinet_verbs_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad);
int kinet_verbs_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad);
int kinet_verbs_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad);

/* cq.c / qp.c / srq.c ops the context table points at */
int kinet_verbs_poll_cq(struct ibv_cq *cq, int num_entries, struct ibv_wc *wc);
int kinet_verbs_req_notify_cq(struct ibv_cq *cq, int solicited_only);
struct ibv_cq_ex *kinet_verbs_create_cq_ex(struct ibv_context *context, struct ibv_cq_init_attr_ex *attr);
struct ibv_qp *kinet_verbs_create_qp_ex(struct ibv_context *context, struct ibv_qp_init_attr_ex *attr);
int kinet_verbs_query_port_ex(struct ibv_context *context, uint8_t port, struct ibv_port_attr *attr,
			      size_t attr_len);
int kinet_verbs_query_device_ex(struct ibv_context *context, const struct ibv_query_device_ex_input *input,
				struct ibv_device_attr_ex *attr, size_t attr_size);
struct ibv_srq *kinet_verbs_create_srq_ex(struct ibv_context *context, struct ibv_srq_init_attr_ex *attr);
int kinet_verbs_get_srq_num(struct ibv_srq *srq, uint32_t *srq_num);

/* qp_ex.c */
void kinet_verbs_qp_ex_init(struct kinet_verbs_qp *qp, uint64_t send_ops_flags);
void kinet_verbs_batch_free(struct kinet_verbs_batch *batch);

/* The device's limits (query.c), which create calls check against. */
#define KINET_VERBS_MAX_QP_WR 8192
#define KINET_VERBS_MAX_SGE 16 /* KINET_MAX_SGE */
#define KINET_VERBS_MAX_INLINE 256
#define KINET_VERBS_MAX_CQE (1 << 22)
#define KINET_VERBS_MAX_SRQ_WR 32768
#define KINET_VERBS_MAX_RD_ATOM 16

#endif /* KINET_VERBS_H */
