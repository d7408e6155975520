/*
 * Completion statuses: every syndrome is visible from kinet.h alone (no
 * wire.h) and has its own name; anything else reads as unknown.
 */
#include "kinet/kinet.h"
#include "kt.h"

static const int syndromes[] = {
	KINET_SYND_LOCAL_LENGTH_ERR,
	KINET_SYND_LOCAL_QP_OP_ERR,
	KINET_SYND_LOCAL_PROT_ERR,
	KINET_SYND_WR_FLUSH_ERR,
	KINET_SYND_MW_BIND_ERR,
	KINET_SYND_BAD_RESP_ERR,
	KINET_SYND_LOCAL_ACCESS_ERR,
	KINET_SYND_REMOTE_INVAL_REQ_ERR,
	KINET_SYND_REMOTE_ACCESS_ERR,
	KINET_SYND_REMOTE_OP_ERR,
	KINET_SYND_TRANSPORT_RETRY_EXC_ERR,
	KINET_SYND_RNR_RETRY_EXC_ERR,
	KINET_SYND_REMOTE_ABORTED_ERR,
};
#define NSYND ((int)(sizeof(syndromes) / sizeof(syndromes[0])))

KT_TEST(names_distinct)
{
	const char *unknown = kinet_wc_status_str(0x99);

	KT_CHECK(!strcmp(kinet_wc_status_str(0), "success"));
	for (int i = 0; i < NSYND; i++) {
		const char *s = kinet_wc_status_str(syndromes[i]);

		KT_CHECK(s && *s);
		KT_CHECK(strcmp(s, unknown) != 0);
		KT_CHECK(strcmp(s, "success") != 0);
		for (int j = 0; j < i; j++)
			KT_CHECK(strcmp(s, kinet_wc_status_str(syndromes[j])) != 0);
	}
}

/* The ibverbs wording, so logs read the same on verbs and on kinet. */
KT_TEST(verbs_wording)
{
	KT_CHECK(!strcmp(kinet_wc_status_str(KINET_SYND_REMOTE_ACCESS_ERR), "remote access error"));
	KT_CHECK(!strcmp(kinet_wc_status_str(KINET_SYND_WR_FLUSH_ERR), "work request flushed error"));
	KT_CHECK(!strcmp(kinet_wc_status_str(KINET_SYND_RNR_RETRY_EXC_ERR), "RNR retry counter exceeded"));
}

KT_TEST(unknown)
{
	KT_CHECK(!strcmp(kinet_wc_status_str(-1), "unknown completion status"));
	KT_CHECK(!strcmp(kinet_wc_status_str(0x99), "unknown completion status"));
	KT_CHECK(!strcmp(kinet_wc_status_str(KINET_SYND_REMOTE_ACCESS_ERR + 0x100),
			 "unknown completion status"));
}

KT_MAIN(names_distinct, verbs_wording, unknown)
