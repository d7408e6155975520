/*
 * kt_netns.h's pair of namespaces: unshare + bind mount for the namespaces
 * (as iproute2's `ip netns add`), rtnetlink for the links and addresses.
 */
#define _GNU_SOURCE
#include "kt_netns.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/if_link.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/veth.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#define RUN_DIR "/run/netns"
#define MAX_PAIRS 8
#define NL_TIMEOUT_S 5

/* What kt_netns_cleanup deletes: paths written before they are mounted
 * on, so that a signal handler needs no formatting. */
static struct {
	volatile sig_atomic_t used;
	char path[2][64];
	volatile sig_atomic_t mounted[2];
} pairs[MAX_PAIRS];
static pid_t owner;
static unsigned made;

/* ---- rtnetlink ------------------------------------------------------------ */

struct nl_msg {
	struct nlmsghdr h;
	char room[1024];
};

static struct rtattr *nl_put(struct nl_msg *m, int type, const void *data, size_t len)
{
	struct rtattr *a = (struct rtattr *)((char *)m + NLMSG_ALIGN(m->h.nlmsg_len));

	a->rta_type = (unsigned short)type;
	a->rta_len = (unsigned short)RTA_LENGTH(len);
	if (len)
		memcpy(RTA_DATA(a), data, len);
	m->h.nlmsg_len = NLMSG_ALIGN(m->h.nlmsg_len) + RTA_ALIGN(a->rta_len);
	return a;
}

/* Nests: what is put after nl_nest until nl_end goes inside a. */
static struct rtattr *nl_nest(struct nl_msg *m, int type)
{
	return nl_put(m, type, NULL, 0);
}

static void nl_end(struct nl_msg *m, struct rtattr *a)
{
	a->rta_len = (unsigned short)((char *)m + m->h.nlmsg_len - (char *)a);
}

static void nl_init(struct nl_msg *m, int type, int flags, const void *hdr, size_t hlen)
{
	memset(m, 0, sizeof(*m));
	m->h.nlmsg_len = NLMSG_LENGTH(hlen);
	m->h.nlmsg_type = (unsigned short)type;
	m->h.nlmsg_flags = (unsigned short)(NLM_F_REQUEST | NLM_F_ACK | flags);
	memcpy(NLMSG_DATA(&m->h), hdr, hlen);
}

/* A rtnetlink socket in the calling thread's namespace, bounded waits
 * (a lost reply must not hang a test), extended acks for the reasons. */
static int nl_open(void)
{
	struct timeval tv = {.tv_sec = NL_TIMEOUT_S};
	int one = 1, fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);

	if (fd < 0)
		return -errno;
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_NETLINK, NETLINK_EXT_ACK, &one, sizeof(one));
	setsockopt(fd, SOL_NETLINK, NETLINK_CAP_ACK, &one, sizeof(one));
	return fd;
}

/* The kernel's own words for a refusal (NLMSGERR_ATTR_MSG), if any. */
static void nl_ext_msg(const struct nlmsghdr *h, char *out, size_t outlen)
{
	const struct nlmsgerr *e = NLMSG_DATA(h);
	const struct rtattr *a = (const struct rtattr *)((const char *)e + sizeof(*e));
	int left = (int)h->nlmsg_len - (int)NLMSG_LENGTH(sizeof(*e));

	out[0] = 0;
	if (!(h->nlmsg_flags & NLM_F_ACK_TLVS) || !(h->nlmsg_flags & NLM_F_CAPPED))
		return;
	for (; RTA_OK(a, left); a = RTA_NEXT(a, left))
		if (a->rta_type == NLMSGERR_ATTR_MSG)
			snprintf(out, outlen, " (%.*s)", (int)RTA_PAYLOAD(a), (const char *)RTA_DATA(a));
}

/* Sends m and waits for its ack; a reply before the ack (RTM_GET*) is
 * copied to reply.  0 or -errno, the kernel's message in ext. */
static int nl_talk(int fd, struct nl_msg *m, void *reply, size_t cap, char *ext, size_t extlen)
{
	static unsigned seq;
	char buf[8192] __attribute__((aligned(4)));

	m->h.nlmsg_seq = ++seq;
	ext[0] = 0;
	if (send(fd, m, m->h.nlmsg_len, 0) < 0)
		return -errno;
	for (;;) {
		ssize_t len = recv(fd, buf, sizeof(buf), 0);
		struct nlmsghdr *h = (struct nlmsghdr *)buf;

		if (len < 0)
			return errno == EAGAIN ? -ETIMEDOUT : -errno;
		for (int left = (int)len; NLMSG_OK(h, left); h = NLMSG_NEXT(h, left)) {
			if (h->nlmsg_seq != m->h.nlmsg_seq)
				continue;
			if (h->nlmsg_type == NLMSG_ERROR) {
				nl_ext_msg(h, ext, extlen);
				return ((struct nlmsgerr *)NLMSG_DATA(h))->error;
			}
			if (reply && h->nlmsg_len <= cap)
				memcpy(reply, h, h->nlmsg_len);
		}
	}
}

/* ---- reasons -------------------------------------------------------------- */

static int fail(struct kt_netns *n, int err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(struct kt_netns *n, int err, const char *fmt, ...)
{
	va_list ap;
	int len = snprintf(n->why, sizeof(n->why), "needs root and network namespaces: ");

	va_start(ap, fmt);
	vsnprintf(n->why + len, sizeof(n->why) - (size_t)len, fmt, ap);
	va_end(ap);
	return err < 0 ? err : -EINVAL;
}

/* ---- namespaces ----------------------------------------------------------- */

int kt_netns_enter(const struct kt_netns *n, int side)
{
	return setns(n->ns_fd[side], CLONE_NEWNET) ? -errno : 0;
}

void kt_netns_leave(const struct kt_netns *n)
{
	if (setns(n->home_fd, CLONE_NEWNET)) {
		perror("kt_netns: setns back home");
		abort();
	}
}

/* The calling thread's namespace's sysctls, as it sees them. */
static void no_ipv6(void)
{
	const char *files[] = {"/proc/sys/net/ipv6/conf/all/disable_ipv6",
			       "/proc/sys/net/ipv6/conf/default/disable_ipv6"};

	for (int i = 0; i < 2; i++) {
		int fd = open(files[i], O_WRONLY | O_CLOEXEC);
		if (fd >= 0) {
			if (write(fd, "1", 1) < 0) {
			}
			close(fd);
		}
	}
}

/* /run/netns as iproute2 leaves it: a shared mount, so that the
 * namespaces' bind mounts reach other mount namespaces too. */
static int run_dir_ready(void)
{
	if (mkdir(RUN_DIR, 0755) && errno != EEXIST)
		return -errno;
	if (!mount("", RUN_DIR, "none", MS_SHARED | MS_REC, NULL))
		return 0;
	if (errno != EINVAL || mount(RUN_DIR, RUN_DIR, "none", MS_BIND | MS_REC, NULL) ||
	    mount("", RUN_DIR, "none", MS_SHARED | MS_REC, NULL))
		return -errno;
	return 0;
}

/* Names the calling thread's (new) namespace as `ip netns add` does; a
 * failure leaves it anonymous, which costs only its visibility. */
static void name_ns(struct kt_netns *n, int slot, int side)
{
	const char *path = pairs[slot].path[side];
	int fd;

	if (run_dir_ready())
		goto anonymous;
	fd = open(path, O_RDONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0);
	if (fd < 0)
		goto anonymous;
	close(fd);
	pairs[slot].mounted[side] = 1;
	if (!mount("/proc/thread-self/ns/net", path, "none", MS_BIND, NULL))
		return;
	pairs[slot].mounted[side] = 0;
	unlink(path);
anonymous:
	n->ns[side][0] = 0;
}

static int make_ns(struct kt_netns *n, int slot, int side)
{
	int err = 0;

	if (unshare(CLONE_NEWNET))
		return fail(n, -errno, "unshare(CLONE_NEWNET): %s", strerror(errno));
	n->ns_fd[side] = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
	if (n->ns_fd[side] < 0)
		err = fail(n, -errno, "cannot open the new namespace: %s", strerror(errno));
	else
		name_ns(n, slot, side);
	no_ipv6();
	kt_netns_leave(n);
	return err;
}

/* ---- links ---------------------------------------------------------------- */

/* veth[0] in namespace 0, its peer veth[1] in namespace 1, created from
 * home: each end is born in its namespace (IFLA_NET_NS_FD). */
static int make_veth(struct kt_netns *n)
{
	struct ifinfomsg ifi = {.ifi_family = AF_UNSPEC};
	struct rtattr *info, *data, *peer;
	struct nl_msg m;
	char ext[256];
	int fd = nl_open(), err;

	if (fd < 0)
		return fail(n, fd, "rtnetlink socket: %s", strerror(-fd));
	nl_init(&m, RTM_NEWLINK, NLM_F_CREATE | NLM_F_EXCL, &ifi, sizeof(ifi));
	nl_put(&m, IFLA_IFNAME, n->veth[0], strlen(n->veth[0]) + 1);
	nl_put(&m, IFLA_NET_NS_FD, &n->ns_fd[0], 4);
	info = nl_nest(&m, IFLA_LINKINFO);
	nl_put(&m, IFLA_INFO_KIND, "veth", 5);
	data = nl_nest(&m, IFLA_INFO_DATA);
	peer = nl_put(&m, VETH_INFO_PEER, &ifi, sizeof(ifi));
	nl_put(&m, IFLA_IFNAME, n->veth[1], strlen(n->veth[1]) + 1);
	nl_put(&m, IFLA_NET_NS_FD, &n->ns_fd[1], 4);
	nl_end(&m, peer);
	nl_end(&m, data);
	nl_end(&m, info);
	err = nl_talk(fd, &m, NULL, 0, ext, sizeof(ext));
	close(fd);
	if (err)
		return fail(n, err, "cannot create a veth pair: %s%s%s", strerror(-err), ext,
			    err == -EOPNOTSUPP ? " (no veth driver?)" : "");
	return 0;
}

/* ifindex (and MAC, if mac) of the link named name. */
static int link_get(int fd, const char *name, int *ifindex, uint8_t *mac, char *ext, size_t extlen)
{
	struct ifinfomsg ifi = {.ifi_family = AF_UNSPEC};
	char buf[8192] __attribute__((aligned(4))) = {0};
	struct nlmsghdr *reply = (struct nlmsghdr *)buf;
	struct nl_msg m;
	struct rtattr *a;
	int left, err;

	nl_init(&m, RTM_GETLINK, 0, &ifi, sizeof(ifi));
	nl_put(&m, IFLA_IFNAME, name, strlen(name) + 1);
	err = nl_talk(fd, &m, buf, sizeof(buf), ext, extlen);
	if (err)
		return err;
	if (reply->nlmsg_type != RTM_NEWLINK)
		return -EPROTO;
	*ifindex = ((struct ifinfomsg *)NLMSG_DATA(reply))->ifi_index;
	left = (int)reply->nlmsg_len - (int)NLMSG_LENGTH(sizeof(ifi));
	a = (struct rtattr *)((char *)NLMSG_DATA(reply) + NLMSG_ALIGN(sizeof(ifi)));
	for (; mac && RTA_OK(a, left); a = RTA_NEXT(a, left))
		if (a->rta_type == IFLA_ADDRESS && RTA_PAYLOAD(a) == 6)
			memcpy(mac, RTA_DATA(a), 6);
	return 0;
}

static int link_up(int fd, int ifindex, char *ext, size_t extlen)
{
	struct ifinfomsg ifi = {
		.ifi_family = AF_UNSPEC, .ifi_index = ifindex, .ifi_flags = IFF_UP, .ifi_change = IFF_UP};
	struct nl_msg m;

	nl_init(&m, RTM_NEWLINK, 0, &ifi, sizeof(ifi));
	return nl_talk(fd, &m, NULL, 0, ext, extlen);
}

static int addr_add(int fd, int ifindex, const char *addr, char *ext, size_t extlen)
{
	struct ifaddrmsg ifa = {.ifa_family = AF_INET, .ifa_prefixlen = 24, .ifa_index = (unsigned)ifindex};
	struct in_addr in;
	struct nl_msg m;

	if (inet_pton(AF_INET, addr, &in) != 1)
		return -EINVAL;
	nl_init(&m, RTM_NEWADDR, NLM_F_CREATE | NLM_F_EXCL, &ifa, sizeof(ifa));
	nl_put(&m, IFA_LOCAL, &in, 4);
	nl_put(&m, IFA_ADDRESS, &in, 4);
	return nl_talk(fd, &m, NULL, 0, ext, extlen);
}

/* Inside namespace side: the veth's index and MAC, its address, it and
 * lo up. */
static int config_side(struct kt_netns *n, int side)
{
	const uint8_t *mac = n->mac[side];
	char ext[256];
	int lo, fd, err;

	err = kt_netns_enter(n, side);
	fd = err ? err : nl_open();
	kt_netns_leave(n);
	if (fd < 0)
		return fail(n, fd, "cannot reach namespace %c: %s", 'a' + side, strerror(-fd));
	err = link_get(fd, n->veth[side], &n->ifindex[side], n->mac[side], ext, sizeof(ext));
	if (!err)
		err = addr_add(fd, n->ifindex[side], n->addr[side], ext, sizeof(ext));
	if (!err)
		err = link_up(fd, n->ifindex[side], ext, sizeof(ext));
	if (!err)
		err = link_get(fd, "lo", &lo, NULL, ext, sizeof(ext));
	if (!err)
		err = link_up(fd, lo, ext, sizeof(ext));
	close(fd);
	if (err)
		return fail(n, err, "cannot configure %s: %s%s", n->veth[side], strerror(-err), ext);
	snprintf(n->mac_str[side], sizeof(n->mac_str[side]), "%02x:%02x:%02x:%02x:%02x:%02x", mac[0], mac[1],
		 mac[2], mac[3], mac[4], mac[5]);
	return 0;
}

int kt_netns_del_veth(struct kt_netns *n)
{
	struct ifinfomsg ifi = {.ifi_family = AF_UNSPEC, .ifi_index = n->ifindex[1]};
	struct nl_msg m;
	char ext[256];
	int fd, err;

	err = kt_netns_enter(n, 1);
	fd = err ? err : nl_open();
	kt_netns_leave(n);
	if (fd < 0)
		return fd;
	nl_init(&m, RTM_DELLINK, 0, &ifi, sizeof(ifi));
	err = nl_talk(fd, &m, NULL, 0, ext, sizeof(ext));
	close(fd);
	if (err)
		fprintf(stderr, "kt_netns: deleting %s: %s%s\n", n->veth[1], strerror(-err), ext);
	else
		n->veth_gone = true;
	return err;
}

/* ---- setup and teardown --------------------------------------------------- */

static void remove_slot(int slot)
{
	for (int side = 0; side < 2; side++) {
		if (!pairs[slot].mounted[side])
			continue;
		umount2(pairs[slot].path[side], MNT_DETACH);
		unlink(pairs[slot].path[side]);
		pairs[slot].mounted[side] = 0;
	}
	pairs[slot].used = 0;
}

void kt_netns_cleanup(void)
{
	if (getpid() != owner)
		return;
	for (int slot = 0; slot < MAX_PAIRS; slot++)
		if (pairs[slot].used)
			remove_slot(slot);
}

static void on_signal(int sig)
{
	static const char msg[] = "kt_netns: watchdog or signal, deleting the namespaces\n";

	if (write(2, msg, sizeof(msg) - 1) < 0) {
	}
	kt_netns_cleanup();
	_exit(sig == SIGALRM ? 124 : 128 + sig);
}

void kt_netns_teardown(struct kt_netns *n)
{
	int slot = n->slot;

	n->slot = -1;
	if (slot >= 0 && slot < MAX_PAIRS && pairs[slot].used && getpid() == owner)
		remove_slot(slot);
	for (int i = 0; i < 2; i++) {
		if (n->ns_fd[i] >= 0)
			close(n->ns_fd[i]);
		n->ns_fd[i] = -1;
	}
	if (n->home_fd >= 0)
		close(n->home_fd);
	n->home_fd = -1;
}

/* Names and addresses from the pid (and the pair's number k within this
 * process): 10.X.Y.0/24 with X in 100..199 keeps clear of the 10.201 and
 * 10.202 of tests/netns/run.sh and earlier tests. */
static void name_pair(struct kt_netns *n, int slot, const char *tag, unsigned k)
{
	int id = (int)getpid(), q = id % 25000;

	for (int i = 0; i < 2; i++) {
		char sfx[8] = "";

		if (k)
			snprintf(sfx, sizeof(sfx), "x%u", k % 100);
		snprintf(n->ns[i], sizeof(n->ns[i]), "kinet-%.3s-%c-%d%s", tag, 'a' + i, id, sfx);
		snprintf(n->veth[i], sizeof(n->veth[i]), "k%.3s%c%d%s", tag, 'a' + i, id, sfx);
		snprintf(n->addr[i], sizeof(n->addr[i]), "10.%d.%d.%u", 100 + q / 250, q % 250 + 1,
			 2 * (k % 100) + 1 + i);
		snprintf(pairs[slot].path[i], sizeof(pairs[slot].path[i]), RUN_DIR "/%s", n->ns[i]);
	}
}

/* Whether name is one of ours (kinet-TAG-a|b-PID[xK]) whose process is
 * gone: a run killed by SIGKILL (ctest's timeout) could not clean up. */
static bool stale(const char *name)
{
	char tag[8], side, rest[16], proc[32];
	int pid;

	if (sscanf(name, "kinet-%3[a-z]-%c-%d%15s", tag, &side, &pid, rest) < 3 ||
	    (side != 'a' && side != 'b'))
		return false;
	snprintf(proc, sizeof(proc), "/proc/%d", pid);
	return pid > 0 && access(proc, F_OK) && errno == ENOENT;
}

static void sweep_stale(void)
{
	DIR *d = opendir(RUN_DIR);
	struct dirent *e;

	while (d && (e = readdir(d))) {
		char path[sizeof(RUN_DIR) + 256];

		if (!stale(e->d_name))
			continue;
		snprintf(path, sizeof(path), RUN_DIR "/%s", e->d_name);
		umount2(path, MNT_DETACH);
		unlink(path);
	}
	if (d)
		closedir(d);
}

static int take_slot(struct kt_netns *n)
{
	for (int slot = 0; slot < MAX_PAIRS; slot++)
		if (!pairs[slot].used) {
			pairs[slot].used = 1;
			n->slot = slot;
			return slot;
		}
	return -1;
}

static void arm_watchdog(unsigned watchdog_s)
{
	static const int sigs[] = {SIGTERM, SIGINT, SIGHUP, SIGALRM};

	if (!watchdog_s)
		return;
	for (unsigned i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		signal(sigs[i], on_signal);
	alarm(watchdog_s);
}

int kt_netns_setup(struct kt_netns *n, const char *tag, unsigned watchdog_s)
{
	int slot, err = 0;

	memset(n, 0, sizeof(*n));
	n->ns_fd[0] = n->ns_fd[1] = n->home_fd = n->slot = -1;
	if (geteuid() != 0)
		return fail(n, -EPERM, "not root");
	if (owner != getpid()) {
		owner = getpid();
		memset(pairs, 0, sizeof(pairs));
		atexit(kt_netns_cleanup);
		sweep_stale();
	}
	slot = take_slot(n);
	if (slot < 0)
		return fail(n, -ENOSPC, "more than %d pairs in one process", MAX_PAIRS);
	n->home_fd = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
	if (n->home_fd < 0)
		return fail(n, -errno, "cannot open /proc/thread-self/ns/net: %s", strerror(errno));
	name_pair(n, slot, tag, made++);
	arm_watchdog(watchdog_s);
	for (int i = 0; i < 2 && !err; i++)
		err = make_ns(n, slot, i);
	if (!err)
		err = make_veth(n);
	for (int i = 0; i < 2 && !err; i++)
		err = config_side(n, i);
	if (err)
		kt_netns_teardown(n);
	return err;
}
