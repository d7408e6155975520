/*
 * kt_netns: two network namespaces joined by a veth pair, made without
 * iproute2 (the GPU machines have no `ip` command), for the tests and the
 * examples' runner (tests/eth/netns_run.c).
 *
 * Each namespace is made as `ip netns add` makes one: a thread unshares
 * its network namespace and bind-mounts it on /run/netns/NAME, so `ip
 * netns` lists it where iproute2 exists and `ip netns del` would remove
 * it.  Where /run/netns cannot be mounted on, the namespace stays
 * anonymous, held by the descriptor alone.  Everything else goes through
 * rtnetlink: the veth pair (one end created straight into each namespace),
 * the IPv4 addresses (/24), links up, lo up; IPv6 is off in both (its
 * router solicitations and DAD would be noise on the link).
 *
 * Names carry the process id (namespace kinet-TAG-a-PID, veth kTAGaPID)
 * and the subnet 10.X.Y.0/24 is derived from it, so parallel tests never
 * collide.  Teardown deletes the namespaces (and with them the veth pair);
 * so do exit, SIGTERM/SIGINT/SIGHUP and a watchdog alarm when asked for.
 */
#ifndef KINET_TEST_NETNS_H
#define KINET_TEST_NETNS_H

#include <net/if.h>
#include <stdbool.h>
#include <stdint.h>

struct kt_netns {
	char ns[2][40];		   /* names under /run/netns; "" when anonymous */
	char veth[2][IF_NAMESIZE]; /* veth[i] lives in namespace i */
	char addr[2][16];	   /* dotted IPv4 of veth[i], prefix /24 */
	char mac_str[2][18];	   /* aa:bb:cc:dd:ee:ff */
	uint8_t mac[2][6];
	int ifindex[2]; /* of veth[i], inside namespace i */
	int ns_fd[2];	/* setns(fd, CLONE_NEWNET) enters namespace i */
	int home_fd;	/* the namespace the pair was made from */
	bool veth_gone; /* kt_netns_del_veth ran */
	int slot;	/* kt_netns.c's own: its entry for the cleanup */
	char why[512];	/* why kt_netns_setup failed: a skip reason */
};

/*
 * Makes the pair.  tag (at most 3 characters, e.g. "pc") tells the user
 * apart in names.  watchdog_s > 0: SIGTERM, SIGINT, SIGHUP and SIGALRM
 * delete every pair of this process and end it (124 for the alarm, else
 * 128 + signal), and alarm(watchdog_s) is armed; 0 leaves signals to the
 * caller, whose handler calls kt_netns_cleanup().  Returns 0, or -errno
 * with n->why saying why (not root, no namespaces, no veth driver).
 */
int kt_netns_setup(struct kt_netns *n, const char *tag, unsigned watchdog_s);

/* Deletes the namespaces of n (and so the veth); idempotent. */
void kt_netns_teardown(struct kt_netns *n);

/* Deletes every pair this process made and has not torn down: only
 * async-signal-safe calls (umount2, unlink, close), for signal handlers;
 * a forked child calling it (or exit) deletes nothing. */
void kt_netns_cleanup(void);

/* Moves the calling thread into namespace side (0 or 1): 0 or -errno.
 * Sockets made there stay there after kt_netns_leave. */
int kt_netns_enter(const struct kt_netns *n, int side);

/* Moves the calling thread back to the home namespace; aborts if it cannot
 * (a thread left in the wrong namespace would make every later check lie). */
void kt_netns_leave(const struct kt_netns *n);

/* Deletes the veth pair (both ends go) through rtnetlink, for "interface
 * vanished" tests; safe from any thread that is in the home namespace. */
int kt_netns_del_veth(struct kt_netns *n);

#endif
