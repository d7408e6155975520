/*
 * GPU memory on the node transport through CUDA IPC: the target's copy
 * engine reaches the requester's buffer directly, instead of the data
 * being staged through host buffers and shared-memory messages.  Only for
 * the node carrier (one host); ofi always stages.
 *
 * Requester (rp_ipc_prepare, on the QP's engine thread, rp_state.lock
 * held): an operation whose local buffer is one SGE of GPU memory (write,
 * write with immediate, send, send with immediate, read; atomics keep their
 * 8 bytes in the messages) goes as one RP_FLAG_IPC request whose payload
 * names the buffer: the cudaIpcMemHandle_t of the CUDA allocation holding
 * it, its offset there and the allocation's size.  The allocation is found
 * with the driver's cuMemGetAddressRange, taken from libcuda.so.1 (loaded
 * by the CUDA runtime; libkinet does not link libcuda), and the handle made
 * by cudaIpcGetMemHandle on its base, once per MR (kept in the MR).  Before
 * the first such request for an allocation, a QP sends an RP_IPC_PROBE and
 * keeps staging until the target answers yes (RP_IPC_ACK); when the target
 * cannot open the handle (a host-only context, a device without peer access
 * to the requester's, the requester's own process, $KINET_NODE_IPC=0, memory
 * cudaIpcGetMemHandle refuses such as managed memory), that allocation stays
 * staged on that QP.  Probes and answers are outside the order of requests:
 * until the answer, operations are staged, and both kinds may mix on a QP.
 *
 * Target (engine thread 0, MR table read lock and rp_state.lock held): opens
 * the handle (cudaIpcOpenMemHandle, cudaIpcMemLazyEnablePeerAccess) once per
 * (requester process, allocation), at its probe, and keeps the mapping until
 * the context closes.  The mapping's size comes from cuMemGetAddressRange on
 * it, or, where the driver does not tell, from the probe.  An RP_FLAG_IPC
 * request is checked as any other: the target's keys, range and access in
 * its own registration table decide; then the requester's buffer range is
 * checked against the mapping, and the data moves in one copy on thread 0's
 * stream (kinet_engine_copy, device to device through the copy engine),
 * waited for before the answer: from the requester's buffer for a write or
 * send, into it for a read.
 *
 * Limits: mappings are closed only at context close (a requester that frees
 * an allocation a target still maps keeps its memory alive until then); the
 * data of a read may land after the requester timed the operation out
 * (TRANSPORT_RETRY_EXC) if the target was slow rather than dead.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine.h"
#include "remote.h"

_Static_assert(sizeof(((struct kinet_soft_mr *)0)->ipc_handle) == RP_IPC_HANDLE_BYTES, "IPC handle size");

static bool ipc_enabled(struct rp_state *rs)
{
	if (!rs->ipc_mode)
		rs->ipc_mode = kinet_env_long("KINET_NODE_IPC") ? 1 : -1;
	return rs->ipc_mode > 0;
}

#ifdef KINET_HAVE_CUDA
#include <cuda_runtime_api.h>
#include <dlfcn.h>

_Static_assert(sizeof(cudaIpcMemHandle_t) == RP_IPC_HANDLE_BYTES, "cudaIpcMemHandle_t size");

/* CUresult cuMemGetAddressRange_v2(CUdeviceptr *base, size_t *size, CUdeviceptr ptr) */
typedef int (*range_fn)(unsigned long long *base, size_t *size, unsigned long long ptr);
static pthread_once_t range_once = PTHREAD_ONCE_INIT;
static range_fn range_get;

static void range_init(void)
{
	void *lib = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
	void *sym;

	if (!lib)
		lib = dlopen("libcuda.so.1", RTLD_LAZY);
	sym = lib ? dlsym(lib, "cuMemGetAddressRange_v2") : NULL;
	memcpy(&range_get, &sym, sizeof(sym));
	if (!range_get)
		KINET_INFO("node transport: cuMemGetAddressRange not found in libcuda.so.1: GPU memory is "
			   "staged");
}

/* The CUDA allocation holding ptr. */
static int alloc_range(const void *ptr, uint64_t *base, uint64_t *size)
{
	unsigned long long b = 0;
	size_t n = 0;

	pthread_once(&range_once, range_init);
	if (!range_get || range_get(&b, &n, (unsigned long long)(uintptr_t)ptr) != 0)
		return -ENOENT;
	*base = b;
	*size = n;
	return 0;
}

/* The IPC export of mr's allocation, made once (rs->lock held). */
bool rp_ipc_export(struct kinet_mr *mr)
{
	cudaIpcMemHandle_t h;
	uint64_t base, size;
	cudaError_t e;

	if (kinet_smr(mr)->ipc_state)
		return kinet_smr(mr)->ipc_state > 0;
	kinet_smr(mr)->ipc_state = -1;
	if (alloc_range((const void *)(uintptr_t)mr->addr, &base, &size) || mr->addr < base ||
	    mr->addr - base > size || mr->length > size - (mr->addr - base)) {
		KINET_DBG("mr %#x: no single CUDA allocation holds it: staged", mr->key);
		return false;
	}
	e = cudaIpcGetMemHandle(&h, (void *)(uintptr_t)base);
	if (e != cudaSuccess) {
		cudaGetLastError();
		KINET_DBG("mr %#x: cudaIpcGetMemHandle: %s: staged", mr->key, cudaGetErrorString(e));
		return false;
	}
	memcpy(kinet_smr(mr)->ipc_handle, &h, sizeof(h));
	kinet_smr(mr)->ipc_base = base;
	kinet_smr(mr)->ipc_size = size;
	kinet_smr(mr)->ipc_state = 1;
	return true;
}

/* Maps a requester's allocation; NULL, or why it cannot. */
static const char *ipc_open(const struct rp_ipc *ipc, uint8_t **base, uint64_t *size)
{
	cudaIpcMemHandle_t h;
	uint64_t b, n;
	void *p = NULL;
	cudaError_t e;

	memcpy(&h, ipc->handle, sizeof(h));
	e = cudaIpcOpenMemHandle(&p, h, cudaIpcMemLazyEnablePeerAccess);
	if (e != cudaSuccess) {
		cudaGetLastError();
		return cudaGetErrorString(e);
	}
	if (alloc_range(p, &b, &n) == 0 && b == (uintptr_t)p) {
		*size = n; /* what the driver mapped: no need to trust the probe */
	} else if (ipc->size) {
		*size = ipc->size;
	} else {
		cudaIpcCloseMemHandle(p);
		return "the size of the mapping is unknown";
	}
	*base = p;
	return NULL;
}

static void ipc_close(uint8_t *base)
{
	if (cudaIpcCloseMemHandle(base) != cudaSuccess)
		cudaGetLastError();
}

static void unmap_all(struct rp_state *rs)
{
	int old = -1;

	if (!rs->ipc_maps)
		return;
	/* The closing thread may have another device current. */
	if (cudaGetDevice(&old) != cudaSuccess || cudaSetDevice(rs->ctx->cuda_device) != cudaSuccess)
		cudaGetLastError();
	while (rs->ipc_maps) {
		struct rp_ipc_map *m = rs->ipc_maps;

		rs->ipc_maps = m->next;
		ipc_close(m->base);
		free(m);
	}
	if (old >= 0 && cudaSetDevice(old) != cudaSuccess)
		cudaGetLastError();
}

#else /* !KINET_HAVE_CUDA */

bool rp_ipc_export(struct kinet_mr *mr)
{
	(void)mr;
	return false;
}

static const char *ipc_open(const struct rp_ipc *ipc, uint8_t **base, uint64_t *size)
{
	(void)ipc;
	(void)base;
	(void)size;
	return "built without CUDA";
}

static void ipc_close(uint8_t *base)
{
	(void)base;
}

static void unmap_all(struct rp_state *rs)
{
	while (rs->ipc_maps) {
		struct rp_ipc_map *m = rs->ipc_maps;

		rs->ipc_maps = m->next;
		free(m);
	}
}

#endif /* KINET_HAVE_CUDA */

/* ---- requester ---- */

/* Asks the target whether it can open mr's allocation.  When the carrier
 * is full the next operation on it asks again. */
static void probe(struct rp_qp *p, const struct kinet_mr *mr)
{
	struct rp_ipc_peer *e = calloc(1, sizeof(*e));
	struct rp_ipc ipc;
	struct rp_msg m;
	struct iovec iov[2] = {{&m, sizeof(m)}, {&ipc, sizeof(ipc)}};

	if (!e)
		return;
	memset(&ipc, 0, sizeof(ipc));
	memcpy(ipc.handle, kinet_smr(mr)->ipc_handle, sizeof(ipc.handle));
	ipc.size = kinet_smr(mr)->ipc_size;
	rp_msg_init(&m, kinet_sctx(p->qp->ctx)->remote, RP_IPC_PROBE, p->qp->qpn, p->qp->remote.qpn,
		    p->peer_token);
	m.flags = RP_FLAG_LAST;
	m.frag_len = sizeof(ipc);
	if (p->car->ops->send(p->car->c, p->peer, iov, 2)) {
		free(e);
		return;
	}
	memcpy(e->handle, kinet_smr(mr)->ipc_handle, sizeof(e->handle));
	e->state = RP_IPC_PROBING;
	e->next = p->ipc;
	p->ipc = e;
}

bool rp_ipc_prepare(struct rp_state *rs, struct rp_qp *p, const struct kinet_op *op, struct rp_ipc *ipc)
{
	const struct kinet_mr_ref *g = &op->sge[0];
	struct rp_ipc_peer *e;

	switch (op->opcode) {
	case KINET_WQE_OP_RDMA_WRITE:
	case KINET_WQE_OP_RDMA_WRITE_IMM:
	case KINET_WQE_OP_SEND:
	case KINET_WQE_OP_SEND_IMM:
	case KINET_WQE_OP_RDMA_READ:
		break;
	default:
		return false;
	}
	if (p->car != &rs->car[RP_NODE] || op->inline_data || op->nsge != 1 || !op->length ||
	    g->type != KINET_MEM_CUDA || !ipc_enabled(rs) || !rp_ipc_export(g->mr))
		return false;
	for (e = p->ipc; e; e = e->next)
		if (!memcmp(e->handle, kinet_smr(g->mr)->ipc_handle, sizeof(e->handle)))
			break;
	if (!e) {
		probe(p, g->mr);
		return false;
	}
	if (e->state != RP_IPC_YES)
		return false;
	memcpy(ipc->handle, kinet_smr(g->mr)->ipc_handle, sizeof(ipc->handle));
	ipc->offset = (uint64_t)(uintptr_t)g->ptr - kinet_smr(g->mr)->ipc_base;
	ipc->size = kinet_smr(g->mr)->ipc_size;
	return true;
}

void rp_ipc_on_ack(struct rp_state *rs, struct rp_carrier *car, struct kinet_carrier_peer *peer,
		   const struct rp_msg *m, const uint8_t *payload)
{
	(void)car;
	(void)peer;
	struct rp_qp *p = rp_find_qp(rs, m->dst_qpn);

	if (!p || !rp_from_peer(p, m) || m->frag_len != sizeof(struct rp_ipc)) {
		KINET_DBG("remote: dropping a CUDA IPC answer for QP %u", m->dst_qpn);
		return;
	}
	for (struct rp_ipc_peer *e = p->ipc; e; e = e->next) {
		if (memcmp(e->handle, payload, sizeof(e->handle)) || e->state != RP_IPC_PROBING)
			continue;
		e->state = m->syndrome ? RP_IPC_NO : RP_IPC_YES;
		KINET_DBG("QP %u: GPU memory to QP %u %s", p->qp->qpn, m->src_qpn,
			  m->syndrome ? "stays staged" : "goes through CUDA IPC");
		if (!m->syndrome && !(rs->ipc_logged & 2)) {
			rs->ipc_logged |= 2;
			KINET_INFO("node transport: GPU memory goes through CUDA IPC (first: QP %u to QP %u)",
				   p->qp->qpn, m->src_qpn);
		}
		return;
	}
}

void rp_ipc_qp_free(struct rp_qp *p)
{
	while (p && p->ipc) {
		struct rp_ipc_peer *e = p->ipc;

		p->ipc = e->next;
		free(e);
	}
}

/* ---- target ---- */

/* The mapping of a requester's allocation, opened on first use.  Keyed by
 * the handle alone (it names one allocation of one process on the host):
 * an allocation is mapped once, whoever names it. */
struct rp_ipc_map *rp_ipc_map_get(struct rp_state *rs, uint64_t src_node, const struct rp_ipc *ipc)
{
	struct kinet_engine_thread *t0 = &kinet_sctx(rs->ctx)->engine->threads[0];
	struct rp_ipc_map *m;
	const char *why = NULL;
	uint8_t *base = NULL;
	uint64_t size = 0;

	for (m = rs->ipc_maps; m; m = m->next)
		if (!memcmp(m->handle, ipc->handle, sizeof(m->handle)))
			return m;
	if (!ipc_enabled(rs))
		why = "KINET_NODE_IPC=0";
	else if (rs->ctx->cuda_device < 0 || !t0->stream)
		why = "this context has no CUDA device";
	else
		why = ipc_open(ipc, &base, &size);
	if (!why && !(m = calloc(1, sizeof(*m)))) {
		ipc_close(base);
		why = "out of memory";
	}
	if (why) {
		if (!(rs->ipc_logged & 1)) {
			rs->ipc_logged |= 1;
			KINET_INFO(
				"node transport: GPU memory of process %016llx cannot be opened here (%s): "
				"staged through messages",
				(unsigned long long)src_node, why);
		}
		return NULL;
	}
	m->src_node = src_node;
	memcpy(m->handle, ipc->handle, sizeof(m->handle));
	m->base = base;
	m->size = size;
	m->next = rs->ipc_maps;
	rs->ipc_maps = m;
	return m;
}

void rp_ipc_on_probe(struct rp_state *rs, struct rp_carrier *car, struct kinet_carrier_peer *peer,
		     const struct rp_msg *m, const uint8_t *payload)
{
	struct rp_ipc ipc;
	struct rp_msg a;

	struct rp_qp *p = rp_find_qp(rs, m->dst_qpn);

	if (!car || !peer || m->frag_len != sizeof(ipc)) {
		rp_drop(rs, RP_DROP_GARBLED, m);
		return;
	}
	/* Only the connected peer may make this process open its memory (a
	 * probe that comes before the target connected is dropped: that
	 * allocation is staged). */
	if (!p || !rp_from_peer(p, m)) {
		rp_drop(rs, p ? RP_DROP_SENDER : RP_DROP_NO_QP, m);
		return;
	}
	memcpy(&ipc, payload, sizeof(ipc));
	rp_msg_reply(&a, rs, m, RP_IPC_ACK);
	a.flags = RP_FLAG_LAST;
	a.syndrome = car == &rs->car[RP_NODE] && rp_ipc_map_get(rs, m->src_node, &ipc) ? 0 : 1;
	rp_send_queued(rs, car, peer, &a, &ipc, sizeof(ipc));
}

uint8_t *rp_ipc_source(struct rp_state *rs, const struct rp_carrier *car, const struct rp_msg *m,
		       const uint8_t *payload)
{
	struct rp_ipc_map *map;
	struct rp_ipc ipc;

	if (car != &rs->car[RP_NODE] || m->frag_len != sizeof(ipc))
		return NULL;
	memcpy(&ipc, payload, sizeof(ipc));
	map = rp_ipc_map_get(rs, m->src_node, &ipc);
	if (!map || ipc.offset > map->size || m->length > map->size - ipc.offset)
		return NULL;
	return map->base + ipc.offset;
}

void rp_ipc_close(struct rp_state *rs)
{
	unmap_all(rs);
}
