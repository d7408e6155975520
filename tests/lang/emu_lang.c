/*
 * Every public header, in a program that runs the device API on CPU threads
 * (KINET_HOST_EMU): built as ISO C11 without extensions and as C++ (the
 * same file), so neither a POSIX-only declaration nor a C-only keyword can
 * creep into the headers.  One emulated block puts 64 bytes and adds to a
 * counter over a loopback pair; the host checks both.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <kinet/boot.h>
#include <kinet/coll.cuh>
#include <kinet/device.cuh>
#include <kinet/kinet.h>
#include <kinet/mesh.h>
#include <kinet/syndrome.h>
#include <kinet/team.h>
#include <kinet/wire.h>

#define LEN 64

struct job {
	struct kinet_dev_qp *qp;
	uint8_t *src, *dst;
	uint64_t *counter, *old;
	uint32_t key;
	int status;
};

static void block(void *arg)
{
	struct job *j = (struct job *)arg;
	int st = kinet_dev_put(j->qp, j->src, j->key, (uint64_t)(uintptr_t)j->dst, j->key, LEN, NULL);

	if (!st)
		st = kinet_dev_fetch_add(j->qp, j->old, j->key, (uint64_t)(uintptr_t)j->counter, j->key, 5,
					 NULL);
	if (!st)
		st = kinet_dev_quiet(j->qp);
	j->status = st;
}

#define CHECK(call)                                                                                          \
	do {                                                                                                 \
		int rc_ = (call);                                                                            \
		if (rc_) {                                                                                   \
			fprintf(stderr, "emu_lang: %s: %s\n", #call, kinet_strerror(rc_));                   \
			return 1;                                                                            \
		}                                                                                            \
	} while (0)

int main(void)
{
	struct kinet_ctx_attr cattr;
	struct kinet_ctx *ctx;
	struct kinet_cq *cq[2];
	struct kinet_qp *qp[2];
	struct kinet_qp_info info[2];
	struct kinet_mr *mr;
	struct job j;
	uint8_t *mem = (uint8_t *)calloc(1, 4 * LEN);

	if (!mem)
		return 1;
	kinet_ctx_attr_init(&cattr);
	cattr.cuda_device = KINET_CUDA_DEVICE_NONE;
	CHECK(kinet_ctx_open(&cattr, &ctx));
	for (int s = 0; s < 2; s++) {
		struct kinet_cq_attr qa;
		struct kinet_qp_attr attr;

		memset(&qa, 0, sizeof(qa));
		qa.depth = 64;
		CHECK(kinet_cq_create(ctx, &qa, &cq[s]));
		kinet_qp_attr_init(&attr);
		attr.send_cq = cq[s];
		attr.sq_depth = 16;
		CHECK(kinet_qp_create(ctx, &attr, &qp[s]));
		CHECK(kinet_qp_pack(qp[s], &info[s]));
	}
	CHECK(kinet_qp_connect(qp[0], &info[1]));
	CHECK(kinet_qp_connect(qp[1], &info[0]));
	CHECK(kinet_mr_reg(ctx, mem, 4 * LEN,
			   KINET_ACCESS_LOCAL_WRITE | KINET_ACCESS_REMOTE_WRITE | KINET_ACCESS_REMOTE_ATOMIC,
			   &mr));
	memset(&j, 0, sizeof(j));
	CHECK(kinet_qp_export(qp[0], &j.qp));
	j.src = mem;
	j.dst = mem + LEN;
	j.counter = (uint64_t *)(void *)(mem + 2 * LEN);
	j.old = (uint64_t *)(void *)(mem + 3 * LEN);
	j.key = kinet_mr_lkey(mr);
	for (int i = 0; i < LEN; i++)
		j.src[i] = (uint8_t)(i + 1);
	*j.counter = 37;

	CHECK(kinet_emu_launch(1, block, &j));
	int ok = j.status == 0 && !memcmp(j.src, j.dst, LEN) && *j.counter == 42 && *j.old == 37;
	if (!ok)
		fprintf(stderr, "emu_lang: status %d, counter %llu, old %llu\n", j.status,
			(unsigned long long)*j.counter, (unsigned long long)*j.old);

	kinet_mr_dereg(mr);
	for (int s = 0; s < 2; s++) {
		kinet_qp_destroy(qp[s]);
		kinet_cq_destroy(cq[s]);
	}
	kinet_ctx_close(ctx);
	free(mem);
	printf("emu_lang: %s\n", ok ? "OK" : "FAILED");
	return ok ? 0 : 1;
}
