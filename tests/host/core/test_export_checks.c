/*
 * kinet_qp_export's checks on the CQs of the QP, and what it says when one
 * fails: device code tracks progress through the CQs, so an exported QP
 * needs its own (not shared, not one for both queues), deeper than its
 * queues; a QP without a receive queue needs no receive CQ.
 */
#include "kt_host.h"

struct env {
	struct kinet_ctx *ctx;
	struct kinet_cq *cq[2];
	struct kinet_qp *qp[2];
};

/* QPs with sq_depth 16 (and rq_depth 16 with a receive CQ); cq[i] NULL:
 * not made.  Creates what the case needs, nothing else. */
static int env_open(struct env *e, uint32_t depth0, uint32_t depth1)
{
	int rc;

	memset(e, 0, sizeof(*e));
	if ((rc = kt_ctx_open(1, &e->ctx)))
		return rc;
	for (int i = 0; i < 2; i++) {
		struct kinet_cq_attr a = {.depth = i ? depth1 : depth0};

		if (a.depth && (rc = kinet_cq_create(e->ctx, &a, &e->cq[i])))
			return rc;
	}
	return 0;
}

static int qp_make(struct env *e, int i, struct kinet_cq *scq, struct kinet_cq *rcq)
{
	struct kinet_qp_attr a;

	kinet_qp_attr_init(&a);
	a.send_cq = scq;
	a.recv_cq = rcq;
	a.sq_depth = 16;
	a.rq_depth = 16;
	return kinet_qp_create(e->ctx, &a, &e->qp[i]);
}

/* Exports qp[0]; *log: what was logged. */
static int export_logged(struct env *e, char *log, size_t len)
{
	struct kinet_dev_qp *d = NULL;
	struct kt_capture cap;
	int rc = kt_capture_begin(&cap);

	if (rc)
		return rc;
	rc = kinet_qp_export(e->qp[0], &d);
	kt_capture_end(&cap, log, len);
	return rc ? rc : (d ? 0 : -EFAULT);
}

static void env_close(struct env *e)
{
	kinet_ctx_close(e->ctx);
}

KT_TEST(one_cq_for_both)
{
	struct env e;
	char log[4096];

	KT_OK(env_open(&e, 64, 0));
	KT_OK(qp_make(&e, 0, e.cq[0], e.cq[0]));
	KT_CHECK_EQ(export_logged(&e, log, sizeof(log)), -EINVAL);
	/* The QP itself is the CQ's second user: no other QP to blame. */
	KT_CHECK_EQ(kt_count_lines(log, "error: ", "one CQ for sends and receives"), 1);
	KT_CHECK_EQ(kt_count_lines(log, "error: ", "other QP"), 0);
	env_close(&e);
}

KT_TEST(shared_cq)
{
	struct env e;
	char log[4096];

	KT_OK(env_open(&e, 64, 0));
	KT_OK(qp_make(&e, 0, e.cq[0], NULL));
	KT_OK(qp_make(&e, 1, e.cq[0], NULL));
	KT_CHECK_EQ(export_logged(&e, log, sizeof(log)), -EINVAL);
	KT_CHECK_EQ(kt_count_lines(log, "error: ", "send CQ is shared with 1 other QP"), 1);
	env_close(&e);
}

KT_TEST(shallow_cqs)
{
	struct env e;
	char log[4096];

	KT_OK(env_open(&e, 16, 64));
	KT_OK(qp_make(&e, 0, e.cq[0], e.cq[1]));
	KT_CHECK_EQ(export_logged(&e, log, sizeof(log)), -EINVAL);
	KT_CHECK_EQ(kt_count_lines(log, "error: ", "send CQ depth 16 must exceed"), 1);
	env_close(&e);

	KT_OK(env_open(&e, 64, 16));
	KT_OK(qp_make(&e, 0, e.cq[0], e.cq[1]));
	KT_CHECK_EQ(export_logged(&e, log, sizeof(log)), -EINVAL);
	KT_CHECK_EQ(kt_count_lines(log, "error: ", "receive CQ depth 16 must exceed"), 1);
	env_close(&e);
}

KT_TEST(without_receive_queue)
{
	struct env e;
	char log[4096];

	KT_OK(env_open(&e, 64, 0));
	KT_OK(qp_make(&e, 0, e.cq[0], NULL));
	KT_OK(export_logged(&e, log, sizeof(log)));
	KT_CHECK_EQ(kt_count_lines(log, "error: ", ""), 0);
	env_close(&e);
}

KT_MAIN(one_cq_for_both, shared_cq, shallow_cqs, without_receive_queue)
