/*
 * `ofi` carrier setup: provider choice (fi_getinfo), fabric, domain, AV,
 * CQ and RDM endpoint, and the registered buffer pools.
 *
 * Provider: $KINET_OFI_PROVIDER ("tcp;ofi_rxm", "shm", "verbs;ofi_rxm",
 * "efa", "cxi", ...) or, by default, tcp;ofi_rxm when present, else the first
 * RDM provider offering FI_MSG.  Source address: $KINET_OFI_ADDR (an IP
 * literal) or $KINET_OFI_IFACE (a network interface; its address, or a
 * domain of that name).
 *
 * Memory registration: the hints accept FI_MR_LOCAL, FI_MR_ENDPOINT,
 * FI_MR_VIRT_ADDR, FI_MR_ALLOCATED and FI_MR_PROV_KEY, and what the provider
 * asks for is honoured: the bounce buffers are registered when FI_MR_LOCAL
 * is set (or $KINET_OFI_MR_REG=1), bound to the endpoint and enabled under
 * FI_MR_ENDPOINT, with a chosen key unless FI_MR_PROV_KEY.  No memory is
 * exposed for remote access, so VIRT_ADDR and the keys matter only locally.
 */
#ifdef KINET_HAVE_OFI

#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ofi_internal.h"

#define OFI_API_VERSION FI_VERSION(1, 9)
#define OFI_MR_MODES (FI_MR_LOCAL | FI_MR_ENDPOINT | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY)

/* Source address wanted by the environment. */
struct ofi_src {
	const char *iface;
	struct sockaddr_storage sa;
	size_t len; /* 0: none */
};

static int ofi_parse_addr(const char *s, struct sockaddr_storage *sa, size_t *len)
{
	char host[INET6_ADDRSTRLEN + 2];
	const char *port = NULL;
	size_t n;

	memset(sa, 0, sizeof(*sa));
	if (s[0] == '[') { /* [v6]:port */
		const char *e = strchr(s, ']');
		if (!e || (size_t)(e - s - 1) >= sizeof(host))
			return -EINVAL;
		n = (size_t)(e - s - 1);
		memcpy(host, s + 1, n);
		host[n] = 0;
		port = e[1] == ':' ? e + 2 : NULL;
	} else {
		const char *colon = strchr(s, ':');
		bool v4port = colon && !strchr(colon + 1, ':');
		n = v4port ? (size_t)(colon - s) : strlen(s);
		if (n >= sizeof(host))
			return -EINVAL;
		memcpy(host, s, n);
		host[n] = 0;
		port = v4port ? colon + 1 : NULL;
	}
	struct sockaddr_in *in4 = (struct sockaddr_in *)sa;
	struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)sa;
	uint16_t p = port ? (uint16_t)atoi(port) : 0;
	if (inet_pton(AF_INET, host, &in4->sin_addr) == 1) {
		in4->sin_family = AF_INET;
		in4->sin_port = htons(p);
		*len = sizeof(*in4);
		return 0;
	}
	if (inet_pton(AF_INET6, host, &in6->sin6_addr) == 1) {
		in6->sin6_family = AF_INET6;
		in6->sin6_port = htons(p);
		*len = sizeof(*in6);
		return 0;
	}
	return -EINVAL;
}

/* The interface's IPv4 address (else IPv6); 0 with len 0 when it has none. */
static int ofi_iface_addr(const char *iface, struct sockaddr_storage *sa, size_t *len)
{
	struct ifaddrs *ifa, *i;

	*len = 0;
	if (getifaddrs(&ifa)) {
		KINET_ERR("ofi carrier: getifaddrs: %s", strerror(errno));
		return -errno;
	}
	for (int family = AF_INET; family && !*len; family = family == AF_INET ? AF_INET6 : 0) {
		for (i = ifa; i; i = i->ifa_next) {
			if (!i->ifa_addr || i->ifa_addr->sa_family != family || strcmp(i->ifa_name, iface))
				continue;
			*len = family == AF_INET ? sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6);
			memset(sa, 0, sizeof(*sa));
			memcpy(sa, i->ifa_addr, *len);
			break;
		}
	}
	freeifaddrs(ifa);
	return 0;
}

static int ofi_src_from_env(struct ofi_src *src)
{
	const char *addr = kinet_env_str("KINET_OFI_ADDR");

	memset(src, 0, sizeof(*src));
	src->iface = kinet_env_str("KINET_OFI_IFACE");
	if (addr) {
		if (ofi_parse_addr(addr, &src->sa, &src->len)) {
			KINET_ERR("ofi carrier: KINET_OFI_ADDR=%s is not an IPv4/IPv6 address", addr);
			return -EINVAL;
		}
		return 0;
	}
	if (src->iface) {
		if (if_nametoindex(src->iface) == 0)
			KINET_WARN("ofi carrier: KINET_OFI_IFACE=%s: no such interface here; matching "
				   "fabric domains by that name",
				   src->iface);
		else
			return ofi_iface_addr(src->iface, &src->sa, &src->len);
	}
	return 0;
}

static struct fi_info *ofi_hints(const char *prov, bool ordered, const struct ofi_src *src)
{
	struct fi_info *h = kinet_ofi.dupinfo(NULL);

	if (!h)
		return NULL;
	h->caps = FI_MSG;
	h->mode = FI_CONTEXT | FI_CONTEXT2;
	h->ep_attr->type = FI_EP_RDM;
	h->domain_attr->mr_mode = OFI_MR_MODES;
	h->domain_attr->threading = FI_THREAD_DOMAIN; /* the carrier serialises its calls */
	if (ordered) {
		h->tx_attr->msg_order = FI_ORDER_SAS;
		h->rx_attr->msg_order = FI_ORDER_SAS;
	}
	if (prov && !(h->fabric_attr->prov_name = strdup(prov)))
		goto fail;
	if (src && src->len) {
		if (!(h->src_addr = malloc(src->len)))
			goto fail;
		memcpy(h->src_addr, &src->sa, src->len);
		h->src_addrlen = src->len;
		h->addr_format = src->sa.ss_family == AF_INET ? FI_SOCKADDR_IN : FI_SOCKADDR_IN6;
	}
	return h;
fail:
	kinet_ofi.freeinfo(h);
	return NULL;
}

/* First usable entry of list: not over verbs under the verbs front door
 * (ofi_dl.h), big enough messages; with an interface, a domain of that
 * name when there is one. */
static struct fi_info *ofi_pick(struct fi_info *list, const char *iface)
{
	struct fi_info *first = NULL;

	for (struct fi_info *i = list; i; i = i->next) {
		if (!kinet_ofi_prov_allowed(i->fabric_attr->prov_name)) {
			KINET_INFO(
				"ofi carrier: skipping %s/%s: this process's libibverbs is kinet's verbs "
				"front door, and %s would route kinet's traffic back into kinet (FI_PROVIDER "
				"overrides)",
				i->fabric_attr->prov_name, i->domain_attr->name, i->fabric_attr->prov_name);
			continue;
		}
		if (i->ep_attr->max_msg_size < OFI_BUF_SIZE) {
			KINET_INFO("ofi carrier: skipping %s/%s: max message %zu < %zu bytes",
				   i->fabric_attr->prov_name, i->domain_attr->name, i->ep_attr->max_msg_size,
				   (size_t)OFI_BUF_SIZE);
			continue;
		}
		if (iface && i->domain_attr->name && !strcmp(i->domain_attr->name, iface))
			return i;
		if (!first)
			first = i;
	}
	return first;
}

/* fi_getinfo for one provider name (NULL: any): with the source address
 * before without, send-after-send ordering before without.  A duplicate of
 * the chosen entry, or NULL. */
static struct fi_info *ofi_find(const char *prov, const struct ofi_src *src, int *last_err)
{
	for (int with_src = src->len ? 1 : 0; with_src >= 0; with_src--) {
		for (int ordered = 1; ordered >= 0; ordered--) {
			struct fi_info *hints, *list = NULL, *pick, *dup;
			const char *iface = with_src ? NULL : src->iface;
			int rc;

			if (!(hints = ofi_hints(prov, ordered, with_src ? src : NULL)))
				return NULL;
			rc = kinet_ofi.getinfo(OFI_API_VERSION, NULL, NULL, 0, hints, &list);
			kinet_ofi.freeinfo(hints);
			if (rc) {
				if (rc != -FI_ENODATA)
					KINET_INFO("ofi carrier: fi_getinfo(%s): %s", prov ? prov : "any",
						   ofi_strerror(-rc));
				*last_err = rc;
				continue;
			}
			pick = ofi_pick(list, iface);
			if (pick && (src->iface || src->len) && !with_src &&
			    !(iface && pick->domain_attr->name && !strcmp(pick->domain_attr->name, iface)))
				KINET_WARN("ofi carrier: provider %s cannot bind the requested address or "
					   "interface; using its domain %s",
					   pick->fabric_attr->prov_name, pick->domain_attr->name);
			dup = pick ? kinet_ofi.dupinfo(pick) : NULL;
			kinet_ofi.freeinfo(list);
			if (dup) {
				if (!ordered)
					KINET_INFO("ofi carrier: %s gives no send-after-send ordering; the "
						   "carrier reorders",
						   dup->fabric_attr->prov_name);
				return dup;
			}
		}
	}
	return NULL;
}

static int ofi_choose(struct kinet_carrier *c)
{
	const char *want = kinet_env_str("KINET_OFI_PROVIDER");
	struct ofi_src src;
	int rc, last = -FI_ENODATA;

	if ((rc = ofi_src_from_env(&src)))
		return rc;
	if (want) {
		c->info = ofi_find(want, &src, &last);
	} else {
		c->info = ofi_find("tcp;ofi_rxm", &src, &last);
		if (!c->info)
			c->info = ofi_find(NULL, &src, &last);
	}
	if (!c->info) {
		KINET_ERR(
			"ofi carrier: no libfabric provider %s offers reliable datagram (FI_EP_RDM) "
			"endpoints with FI_MSG: %s (try KINET_OFI_PROVIDER=tcp;ofi_rxm, shm, verbs;ofi_rxm, "
			"efa or cxi; FI_LOG_LEVEL=info shows why)",
			want ? want : "(tcp;ofi_rxm or any)", ofi_strerror(-last));
		return -ENODEV;
	}
	KINET_INFO("ofi carrier: provider %s, domain %s, mr_mode 0x%x, msg_order 0x%llx, av %d",
		   c->info->fabric_attr->prov_name, c->info->domain_attr->name,
		   (unsigned)c->info->domain_attr->mr_mode, (unsigned long long)c->info->tx_attr->msg_order,
		   (int)c->info->domain_attr->av_type);
	return 0;
}

#define OFI_CALL(call, what)                                                                                 \
	do {                                                                                                 \
		int rc_ = (call);                                                                            \
		if (rc_) {                                                                                   \
			KINET_ERR("ofi carrier: %s (%s): %s", what, c->info->fabric_attr->prov_name,         \
				  ofi_strerror(rc_ < 0 ? -rc_ : rc_));                                       \
			return rc_ < 0 && -rc_ < 256 ? rc_ : -EIO;                                           \
		}                                                                                            \
	} while (0)

static int ofi_pool_init(struct kinet_carrier *c, struct ofi_pool *p, int count, enum ofi_op_kind kind,
			 uint64_t access, uint64_t key)
{
	uint64_t mr_mode = c->info->domain_attr->mr_mode;

	p->count = count;
	p->size = (size_t)count * OFI_BUF_SIZE;
	if (posix_memalign((void **)&p->mem, 4096, p->size)) {
		p->mem = NULL;
		return -ENOMEM;
	}
	memset(p->mem, 0, p->size);
	if (!(p->ops = calloc((size_t)count, sizeof(*p->ops))))
		return -ENOMEM;
	for (int i = 0; i < count; i++) {
		p->ops[i].kind = kind;
		p->ops[i].buf = p->mem + (size_t)i * OFI_BUF_SIZE;
	}
	if (!(mr_mode & FI_MR_LOCAL) && kinet_env_long("KINET_OFI_MR_REG") == 0)
		return 0;
	OFI_CALL(fi_mr_reg(c->domain, p->mem, p->size, access, 0, (mr_mode & FI_MR_PROV_KEY) ? 0 : key, 0,
			   &p->mr, NULL),
		 "fi_mr_reg of the bounce buffers");
	if (mr_mode & FI_MR_ENDPOINT) {
		OFI_CALL(fi_mr_bind(p->mr, &c->ep->fid, 0), "fi_mr_bind to the endpoint");
		OFI_CALL(fi_mr_enable(p->mr), "fi_mr_enable");
	}
	p->desc = fi_mr_desc(p->mr);
	return 0;
}

int ofi_post_recv(struct kinet_carrier *c, struct ofi_op *op)
{
	ssize_t rc = fi_recv(c->ep, op->buf, OFI_BUF_SIZE, c->rxp.desc, FI_ADDR_UNSPEC, &op->fictx);

	if (rc == 0) {
		c->rx_posted++;
		return 0;
	}
	if (rc != -FI_EAGAIN)
		KINET_ERR("ofi carrier: fi_recv: %s", ofi_strerror((int)-rc));
	op->next = c->rx_repost;
	c->rx_repost = op;
	return rc == -FI_EAGAIN ? -EAGAIN : -EIO;
}

static uint64_t ofi_random_id(void)
{
	uint64_t id = 0;

	if (getrandom(&id, sizeof(id), GRND_NONBLOCK) != sizeof(id))
		id = kinet_now_ns() * 0x9e3779b97f4a7c15ull ^ ((uint64_t)getpid() << 32);
	return id ? id : 1;
}

int ofi_setup(struct kinet_carrier *c)
{
	struct fi_cq_attr cq_attr = {0};
	struct fi_av_attr av_attr = {0};
	int rc, ntx, nrx;

	if ((rc = ofi_choose(c)))
		return rc;
	ntx = (int)kinet_env_long("KINET_OFI_TX_BUFS");
	nrx = (int)kinet_env_long("KINET_OFI_RX_BUFS");
	ntx = ntx < 1 ? 1 : ntx;
	nrx = nrx < 1 ? 1 : nrx;
	if (c->info->tx_attr->size && (size_t)ntx > c->info->tx_attr->size)
		ntx = (int)c->info->tx_attr->size;
	if (c->info->rx_attr->size && (size_t)nrx > c->info->rx_attr->size)
		nrx = (int)c->info->rx_attr->size;

	long bundle = kinet_env_long("KINET_OFI_BUNDLE");
	c->bundle_max = bundle <= 0			 ? 0
			: bundle > KINET_CARRIER_MAX_MSG ? KINET_CARRIER_MAX_MSG
							 : (size_t)bundle;
	long inject = kinet_env_long("KINET_OFI_INJECT");
	c->inject_max = c->info->tx_attr->inject_size;
	if (inject >= 0 && (size_t)inject < c->inject_max)
		c->inject_max = (size_t)inject;
	OFI_CALL(kinet_ofi.fabric(c->info->fabric_attr, &c->fabric, NULL), "fi_fabric");
	OFI_CALL(fi_domain(c->fabric, c->info, &c->domain, NULL), "fi_domain");
	cq_attr.size = (size_t)(ntx + nrx) * 2;
	cq_attr.wait_obj = FI_WAIT_NONE;
	cq_attr.format = c->cq_format = FI_CQ_FORMAT_DATA;
	if (fi_cq_open(c->domain, &cq_attr, &c->cq, NULL)) {
		cq_attr.format = c->cq_format = FI_CQ_FORMAT_CONTEXT; /* the header carries the length */
		OFI_CALL(fi_cq_open(c->domain, &cq_attr, &c->cq, NULL), "fi_cq_open");
	}
	av_attr.type =
		c->info->domain_attr->av_type == FI_AV_UNSPEC ? FI_AV_TABLE : c->info->domain_attr->av_type;
	OFI_CALL(fi_av_open(c->domain, &av_attr, &c->av, NULL), "fi_av_open");
	OFI_CALL(fi_endpoint(c->domain, c->info, &c->ep, NULL), "fi_endpoint");
	OFI_CALL(fi_ep_bind(c->ep, &c->av->fid, 0), "fi_ep_bind(av)");
	OFI_CALL(fi_ep_bind(c->ep, &c->cq->fid, FI_TRANSMIT | FI_RECV), "fi_ep_bind(cq)");
	OFI_CALL(fi_enable(c->ep), "fi_enable");

	c->addr_len = sizeof(c->addr);
	rc = fi_getname(&c->ep->fid, c->addr, &c->addr_len);
	if (rc == -FI_ETOOSMALL) {
		KINET_ERR("ofi carrier: %s endpoint address takes %zu bytes, more than the %u a QP can carry",
			  c->info->fabric_attr->prov_name, c->addr_len, KINET_CARRIER_ADDR_MAX);
		return -ENAMETOOLONG;
	}
	OFI_CALL(rc, "fi_getname");
	char name[128];
	size_t name_len = sizeof(name);
	KINET_INFO("ofi carrier: endpoint %s", fi_av_straddr(c->av, c->addr, name, &name_len));

	if ((rc = ofi_pool_init(c, &c->txp, ntx, OFI_OP_TX, FI_SEND, 1)) ||
	    (rc = ofi_pool_init(c, &c->rxp, nrx, OFI_OP_RX, FI_RECV, 2)))
		return rc;
	for (int i = ntx - 1; i >= 0; i--) {
		c->txp.ops[i].next = c->tx_free;
		c->tx_free = &c->txp.ops[i];
	}
	for (int i = 0; i < nrx; i++) {
		rc = ofi_post_recv(c, &c->rxp.ops[i]);
		if (rc && rc != -EAGAIN)
			return rc;
	}
	c->id = ofi_random_id();
	long ms = kinet_env_long("KINET_OFI_PEER_TIMEOUT_MS");
	c->peer_timeout_ns = ms > 0 ? (uint64_t)ms * 1000000ull : 0;
	return 0;
}

static int ofi_close_fid(struct fid *fid, const char *what)
{
	int rc = fid ? fi_close(fid) : 0;

	if (rc == -FI_EBUSY) /* not ours to fix; seen with ofi_rxm 1.17 */
		KINET_INFO(
			"ofi carrier: the %s stays open: libfabric still holds objects of it (ofi_rxm after "
			"simultaneous connects, or a peer that died with sends in flight: "
			"ofiwg/libfabric#12016)",
			what);
	else if (rc)
		KINET_WARN("ofi carrier: closing the %s: %s", what, ofi_strerror(-rc));
	return rc;
}

void ofi_teardown(struct kinet_carrier *c)
{
	if (c->ep)
		ofi_close_fid(&c->ep->fid, "endpoint");
	if (c->txp.mr)
		ofi_close_fid(&c->txp.mr->fid, "send buffer registration");
	if (c->rxp.mr)
		ofi_close_fid(&c->rxp.mr->fid, "receive buffer registration");
	if (c->av)
		ofi_close_fid(&c->av->fid, "address vector");
	if (c->cq)
		ofi_close_fid(&c->cq->fid, "completion queue");
	if (c->domain && ofi_close_fid(&c->domain->fid, "domain"))
		c->fabric = NULL; /* still in use by the domain */
	if (c->fabric)
		ofi_close_fid(&c->fabric->fid, "fabric");
	if (c->info)
		kinet_ofi.freeinfo(c->info);
	free(c->txp.mem);
	free(c->txp.ops);
	free(c->rxp.mem);
	free(c->rxp.ops);
}

#endif /* KINET_HAVE_OFI */
