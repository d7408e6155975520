/*
 * The software NIC's Ethernet ports (issue 29): each port is a packet
 * carrier (carrier/packet.c) on a Linux interface, and each of its queues
 * a raw-packet QP that engine thread 0 runs.
 *
 * Receive: engine thread 0 polls every port's carrier on each pass
 * (eth_progress), asks core's rules which queue takes each frame
 * (kinet_eth_port_steer), places the frame in that queue's next posted
 * receive WQE with the RC responder's helpers and writes an Ethernet
 * receive CQE (byte count, real-time stamp, L3/L4 types, checksum flags).
 * A frame with no rule, too long for the queue, or finding no WQE posted
 * is dropped and counted; a slot not handed back is never written over.
 *
 * Send: the packet transport executes a raw-packet QP's send WQEs, decoded
 * by execute.c (decode_raw): Ethernet sends (gathered, checksums filled,
 * handed to the carrier; -EAGAIN keeps the WQE at the head for the next
 * pass) and WAIT on time (the queue holds, without blocking the thread,
 * until CLOCK_REALTIME reaches the WQE's time).
 *
 * Every raw-packet QP runs on engine thread 0 with the receive pass, so a
 * carrier is only ever used by that thread (kinet_packet_send and _poll
 * need no lock of their own).  docs/ETHERNET.md, "Ports, queues and
 * steering".
 */
#define _GNU_SOURCE
#include <errno.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "carrier/packet.h"
#include "engine.h"
#include "eth_csum.h"
#include "responder.h"

_Static_assert(KINET_ETH_BACKEND_AUTO == (int)KINET_PACKET_BACKEND_AUTO &&
		       KINET_ETH_BACKEND_PACKET == (int)KINET_PACKET_BACKEND_PACKET &&
		       KINET_ETH_BACKEND_XDP == (int)KINET_PACKET_BACKEND_XDP &&
		       KINET_ETH_BACKEND_XDP_NATIVE == (int)KINET_PACKET_BACKEND_XDP_NATIVE,
	       "the port's backend is handed to the carrier as is");

/* Frames taken from a carrier per port and pass. */
#define ETH_RX_BATCH 32u

struct soft_eth_port {
	struct kinet_eth_port *port;
	struct kinet_packet *pkt;
	_Atomic int status; /* 0, or the carrier's sticky error */
	struct soft_eth_port *next;
};

/* A context's ports; the receive pass holds the lock for its whole pass
 * over them, so a port taken off the list is one the pass no longer
 * touches. */
struct soft_eth {
	pthread_mutex_t lock;
	struct soft_eth_port *ports;
};

/* A raw-packet QP's side (transport_priv). */
struct soft_eth_qp {
	struct soft_eth_port *sp;
	uint8_t cs_allowed; /* KINET_ETH_WQE_L3_CSUM | _L4_CSUM the queue was made with */
	bool timed;
	uint32_t room; /* bytes of frame[] */
	uint8_t frame[];
};

static pthread_mutex_t eth_make_lock = PTHREAD_MUTEX_INITIALIZER;

static uint64_t realtime_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void port_failed(struct soft_eth_port *sp, int err)
{
	int none = 0;

	if (atomic_compare_exchange_strong(&sp->status, &none, err))
		KINET_WARN("eth port %s: %s: receiving stops, sends complete with errors (close and reopen "
			   "the port once the interface is back)",
			   sp->port->ifname,
			   err == -ENODEV     ? "the interface vanished"
			   : err == -ENETDOWN ? "the interface went down"
					      : kinet_strerror(err));
}

/* ---- receive ------------------------------------------------------------- */

/* Places frame f in q's next posted receive WQE and completes it: 0, or -1
 * when the queue had no WQE posted (or is in the error state).  Port lock
 * (read) and the registration table's read lock held. */
static int rx_place(struct kinet_engine_thread *t, struct kinet_eth_rxq *q, const struct kinet_packet_rx *f)
{
	struct kinet_qp *qp = q->qp;
	struct kinet_resp_recv rv;
	struct kinet_cqe_desc d;
	uint8_t ok = 0, l3 = 0, l4 = 0;

	if (atomic_load_explicit(&qp->state, memory_order_acquire) != KINET_QPS_RTS)
		return -1;
	if (kinet_resp_recv_peek(qp, f->len, &rv))
		return -1;
	if (!rv.syndrome &&
	    kinet_resp_copy_sync(t, rv.dst[0].ptr, rv.dst[0].type, f->data, KINET_MEM_HOST, f->len))
		rv.syndrome = KINET_SYND_LOCAL_PROT_ERR;
	/* A WQE that cannot take the frame (device code rewrote it): an error
	 * CQE, and the queue goes to the error state, as for an RC receive. */
	if (kinet_resp_recv_take(qp, &rv))
		return -1;
	kinet_eth_csum_check(f->data, f->len, &ok, &l3, &l4);
	d = kinet_resp_cqe(qp, KINET_CQE_RESP_SEND, rv.index, f->len, 0, 0);
	d.eth = true;
	d.timestamp = kinet_eth_rt_from_ns(f->ts_ns);
	d.l3_type = l3;
	d.l4_type = l4;
	d.csum_ok = ok;
	kinet_engine_complete(qp, qp->attr.recv_cq, &d);
	return 0;
}

static void rx_batch(struct kinet_engine_thread *t, struct kinet_eth_port *port,
		     const struct kinet_packet_rx *rx, unsigned n)
{
	struct kinet_eth_counters *c = &port->stats;
	uint64_t delivered = 0, no_rule = 0, too_long = 0, full = 0;

	pthread_rwlock_rdlock(&port->lock);
	kinet_mr_table_rdlock(port->ctx);
	for (unsigned i = 0; i < n; i++) {
		const struct kinet_packet_rx *f = &rx[i];
		struct kinet_eth_rxq *q = kinet_eth_port_steer(port, f->data, f->len);

		if (!q)
			no_rule++;
		else if (f->len < f->wire_len || f->len > q->attr.max_pkt_size)
			too_long++;
		else if (rx_place(t, q, f))
			full++;
		else
			delivered++;
	}
	kinet_mr_table_unlock(port->ctx);
	pthread_rwlock_unlock(&port->lock);
	kinet_eth_count(&c->rx_frames, n);
	if (delivered)
		kinet_eth_count(&c->rx_delivered, delivered);
	if (no_rule)
		kinet_eth_count(&c->rx_drop_no_rule, no_rule);
	if (too_long)
		kinet_eth_count(&c->rx_drop_too_long, too_long);
	if (full)
		kinet_eth_count(&c->rx_drop_queue_full, full);
}

/* Engine thread 0, every pass (thread lock held). */
static int eth_progress(struct kinet_engine_thread *t)
{
	struct soft_eth *e = kinet_sctx(t->ctx)->eth;
	struct kinet_packet_rx rx[ETH_RX_BATCH];
	int work = 0;

	pthread_mutex_lock(&e->lock);
	for (struct soft_eth_port *sp = e->ports; sp; sp = sp->next) {
		int n;

		if (atomic_load_explicit(&sp->status, memory_order_relaxed))
			continue;
		n = kinet_packet_poll(sp->pkt, rx, ETH_RX_BATCH);
		if (n < 0) {
			port_failed(sp, n);
			continue;
		}
		if (!n)
			continue;
		rx_batch(t, sp->port, rx, (unsigned)n);
		kinet_packet_release(sp->pkt, (unsigned)n);
		work += n;
	}
	pthread_mutex_unlock(&e->lock);
	return work;
}

/* ---- send (the packet transport) ----------------------------------------- */

static void fail(struct kinet_exec_result *res, uint8_t syndrome)
{
	res->status = KINET_EXEC_ERROR;
	res->syndrome = syndrome;
}

static void packet_execute(struct kinet_engine_thread *t, struct kinet_qp *qp, struct kinet_op *op,
			   struct kinet_exec_result *res)
{
	struct soft_eth_qp *x = kinet_sqp(qp)->transport_priv;
	struct soft_eth_port *sp = x->sp;
	struct iovec iov;
	uint32_t off = 0;
	int rc;

	if (op->opcode == KINET_WQE_OP_WAIT) {
		if (!x->timed) {
			KINET_INFO("eth txq %u: WAIT on time in a queue created without timed sends",
				   qp->qpn);
			fail(res, KINET_SYND_LOCAL_QP_OP_ERR);
			return;
		}
		/* Holds the queue: execute_one leaves the WQE at the head, the
		 * thread goes on with its pass and looks again at the next. */
		res->status = realtime_ns() >= op->wait_ns ? KINET_EXEC_DONE : KINET_EXEC_BUSY;
		return;
	}
	if (op->opcode != KINET_WQE_OP_SEND) {
		fail(res, KINET_SYND_LOCAL_QP_OP_ERR);
		return;
	}
	if (atomic_load_explicit(&sp->status, memory_order_relaxed)) {
		fail(res, KINET_SYND_TRANSPORT_RETRY_EXC_ERR);
		return;
	}
	if (op->length < 14 || op->length > x->room) {
		KINET_INFO("eth txq %u: a frame of %u bytes (MTU %u)", qp->qpn, op->length, sp->port->mtu);
		fail(res, KINET_SYND_LOCAL_LENGTH_ERR);
		return;
	}
	if (op->cs_flags & ~x->cs_allowed) {
		KINET_INFO("eth txq %u: checksum flags 0x%02x in a queue created with 0x%02x", qp->qpn,
			   op->cs_flags, x->cs_allowed);
		fail(res, KINET_SYND_LOCAL_QP_OP_ERR);
		return;
	}
	for (int i = 0; i < op->nsge; i++) {
		if (kinet_resp_copy_sync(t, x->frame + off, KINET_MEM_HOST, op->sge[i].ptr, op->sge[i].type,
					 op->sge_len[i])) {
			fail(res, KINET_SYND_LOCAL_PROT_ERR);
			return;
		}
		off += op->sge_len[i];
	}
	if (op->cs_flags && kinet_eth_csum_fill(x->frame, off, op->cs_flags)) {
		KINET_INFO("eth txq %u: checksum flags 0x%02x on a frame without the header to fill", qp->qpn,
			   op->cs_flags);
		fail(res, KINET_SYND_LOCAL_QP_OP_ERR);
		return;
	}
	iov.iov_base = x->frame;
	iov.iov_len = off;
	rc = kinet_packet_send(sp->pkt, &iov, 1);
	if (rc == 1) {
		kinet_eth_count(&sp->port->stats.tx_frames, 1);
		res->status = KINET_EXEC_DONE;
	} else if (rc == 0 || rc == -EAGAIN) {
		res->status = KINET_EXEC_BUSY; /* the socket's buffer is full: the next pass */
	} else if (rc == -EMSGSIZE || rc == -EINVAL) {
		fail(res, KINET_SYND_LOCAL_LENGTH_ERR);
	} else {
		port_failed(sp, rc);
		fail(res, KINET_SYND_TRANSPORT_RETRY_EXC_ERR);
	}
}

const struct kinet_transport_ops kinet_transport_packet = {
	.name = "packet",
	.execute = packet_execute,
};

void kinet_eth_tx_failed(struct kinet_qp *qp, uint32_t n)
{
	struct soft_eth_qp *x = kinet_sqp(qp)->transport_priv;

	if (x)
		kinet_eth_count(&x->sp->port->stats.tx_errors, n);
}

/* ---- ports and queues (provider ops) -------------------------------------- */

static struct soft_eth *eth_state(struct kinet_ctx *ctx)
{
	struct kinet_soft_ctx *s = kinet_sctx(ctx);
	struct soft_eth *e;

	pthread_mutex_lock(&eth_make_lock);
	e = s->eth;
	if (!e && (e = calloc(1, sizeof(*e)))) {
		pthread_mutex_init(&e->lock, NULL);
		s->eth = e;
		/* Release: the pass that finds the hook finds the state. */
		__atomic_store_n(&s->eth_progress, eth_progress, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&eth_make_lock);
	return e;
}

static void read_mac(struct kinet_eth_port *port)
{
	struct ifreq ifr;
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return;
	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", port->ifname);
	if (!ioctl(fd, SIOCGIFHWADDR, &ifr))
		memcpy(port->mac, ifr.ifr_hwaddr.sa_data, 6);
	close(fd);
}

int kinet_soft_eth_port_open(struct kinet_eth_port *port)
{
	/* The carrier's back end enum is the API's, value for value. */
	struct kinet_packet_attr pa = {
		.ifname = port->ifname, .rx_frames = port->rx_frames, .backend = port->backend};
	struct soft_eth *e = eth_state(port->ctx);
	struct soft_eth_port *sp;
	int ret;

	if (!e)
		return -ENOMEM;
	sp = calloc(1, sizeof(*sp));
	if (!sp)
		return -ENOMEM;
	/* The carrier says why it cannot (no interface, down, no CAP_NET_RAW,
	 * AF_XDP asked for and impossible). */
	ret = kinet_packet_open(&pa, &sp->pkt);
	if (ret) {
		free(sp);
		return ret;
	}
	sp->port = port;
	port->prov = sp;
	port->mtu = kinet_packet_mtu(sp->pkt);
	port->backend_used = kinet_packet_backend(sp->pkt);
	read_mac(port);
	pthread_mutex_lock(&e->lock);
	sp->next = e->ports;
	e->ports = sp;
	pthread_mutex_unlock(&e->lock);
	return 0;
}

void kinet_soft_eth_port_close(struct kinet_eth_port *port)
{
	struct soft_eth *e = kinet_sctx(port->ctx)->eth;
	struct soft_eth_port *sp = port->prov, **p;

	/* Taking the lock waits for a receive pass over the port to end. */
	pthread_mutex_lock(&e->lock);
	for (p = &e->ports; *p && *p != sp; p = &(*p)->next)
		;
	if (*p)
		*p = sp->next;
	pthread_mutex_unlock(&e->lock);
	kinet_packet_close(sp->pkt);
	free(sp);
	port->prov = NULL;
}

int kinet_soft_eth_port_status(struct kinet_eth_port *port)
{
	struct soft_eth_port *sp = port->prov;

	return atomic_load_explicit(&sp->status, memory_order_relaxed);
}

uint64_t kinet_soft_eth_port_rx_dropped(struct kinet_eth_port *port)
{
	struct soft_eth_port *sp = port->prov;
	struct kinet_packet_stats st;

	return kinet_packet_stats(sp->pkt, &st) ? 0 : st.rx_drops;
}

int kinet_soft_eth_qp_attach(struct kinet_qp *qp, struct kinet_eth_port *port, uint8_t cs_flags, bool timed)
{
	struct kinet_soft_qp *s = kinet_sqp(qp);
	/* The longest frame the interface sends: MTU, header, one VLAN tag. */
	uint32_t room = port->mtu + 18;
	struct soft_eth_qp *x = calloc(1, sizeof(*x) + room);

	if (!x)
		return -ENOMEM;
	x->sp = port->prov;
	x->cs_allowed = cs_flags;
	x->timed = timed;
	x->room = room;
	s->transport = &kinet_transport_packet;
	s->transport_priv = x;
	s->raw = true;
	/* Thread 0: the receive pass's, so the carrier has one user. */
	kinet_engine_move_to_remote_thread(qp);
	return 0;
}

void kinet_soft_eth_qp_fini(struct kinet_qp *qp)
{
	struct kinet_soft_qp *s = kinet_sqp(qp);

	if (s->raw)
		free(s->transport_priv);
	s->transport_priv = NULL;
}

void kinet_soft_eth_close(struct kinet_ctx *ctx)
{
	struct kinet_soft_ctx *s = kinet_sctx(ctx);
	struct soft_eth *e = s->eth;

	if (!e)
		return;
	__atomic_store_n(&s->eth_progress, NULL, __ATOMIC_RELAXED); /* engine stopped */
	s->eth = NULL;
	pthread_mutex_destroy(&e->lock);
	free(e);
}
