#!/usr/bin/env bash
# tests/netns/run.sh: runs a command as two ranks in two network namespaces
# joined by a veth pair, so that traffic between the ranks crosses a real
# (virtual) Ethernet link instead of loopback: the `ofi` transport's
# "other host" case on one machine.
#
# Usage: tests/netns/run.sh [--timeout SECONDS] [--] COMMAND [ARGS...]
#
#   Rank 0 runs COMMAND in namespace kinet-a-<pid>, on veth kna<pid> with
#   address 10.201.<n>.1/24; rank 1 in kinet-b-<pid>, on knb<pid> with
#   10.201.<n>.2/24 (<pid> is this script's, <n> = pid % 250 + 1; the
#   addresses exist only inside the namespaces).  Each rank gets the
#   caller's environment plus:
#     KINET_RANK=0|1 KINET_NRANKS=2 KINET_ROOT=10.201.<n>.1:<port>
#     KINET_TRANSPORT=ofi KINET_OFI_IFACE=<its veth> KINET_NETNS_ADDR=<its address>
#     KINET_LOCAL_SIZE=2 (unless set: the two "hosts" share this one's cores)
#   <port> is $KINET_NETNS_PORT (default 29500).  Set KINET_OFI_PROVIDER
#   etc. in the caller's environment to pass them on.  Lines of output are
#   prefixed "[rank N] ".  Each rank is killed after --timeout seconds
#   ($KINET_NETNS_TIMEOUT, default 120).
#
#   Examples:
#     sudo tests/netns/run.sh build/tests/test_carrier_ofi
#     sudo tests/netns/run.sh --timeout 60 build/examples/some_example --iters 10
#
# Exit status: 0 when both ranks exit 0; else rank 0's status if non-zero,
# else rank 1's (124 for a rank that timed out); 77 (ctest's
# SKIP_RETURN_CODE) with "SKIP: needs root and network namespaces (ip
# netns)" when not root, or when the namespaces or the veth pair cannot be
# created.  The namespaces (and with them the veth pair) are deleted on
# every exit, failures and signals included.
set -u

timeout_s=${KINET_NETNS_TIMEOUT:-120}
while [ $# -gt 0 ]; do
	case "$1" in
	--timeout)
		timeout_s=$2
		shift 2
		;;
	--)
		shift
		break
		;;
	*) break ;;
	esac
done
if [ $# -eq 0 ]; then
	sed -n '2,/^set -u/p' "$0" | sed -e '/^set -u/d' -e 's/^# \{0,1\}//' >&2
	exit 2
fi

skip() {
	echo "SKIP: needs root and network namespaces (ip netns): $*"
	exit 77
}

[ "$(id -u)" -eq 0 ] || skip "not root"
command -v ip >/dev/null 2>&1 || skip "no ip command (iproute2)"

id=$$
net=$((id % 250 + 1))
ns_a=kinet-a-$id
ns_b=kinet-b-$id
veth_a=kna$id
veth_b=knb$id
addr_a=10.201.$net.1
addr_b=10.201.$net.2
port=${KINET_NETNS_PORT:-29500}
tmp=$(mktemp -d /tmp/kinet-netns.XXXXXX)
made_a=0
made_b=0

# Ends what still runs inside our namespaces (only our ranks can be there),
# then deletes the namespaces, which deletes the veth pair.
cleanup() {
	local ns pid sig
	trap - EXIT INT TERM HUP
	for sig in TERM KILL; do
		for ns in "$ns_a" "$ns_b"; do
			for pid in $(ip netns pids "$ns" 2>/dev/null); do
				kill -"$sig" "$pid" 2>/dev/null
			done
		done
		[ "$sig" = TERM ] && [ -n "$(ip netns pids "$ns_a" 2>/dev/null)$(ip netns pids "$ns_b" 2>/dev/null)" ] &&
			sleep 1
	done
	[ "$made_a" = 1 ] && ip netns del "$ns_a" 2>/dev/null
	[ "$made_b" = 1 ] && ip netns del "$ns_b" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

ip netns add "$ns_a" 2>"$tmp/err" || skip "ip netns add failed: $(cat "$tmp/err")"
made_a=1
ip netns add "$ns_b" 2>"$tmp/err" || skip "ip netns add failed: $(cat "$tmp/err")"
made_b=1
ip link add "$veth_a" netns "$ns_a" type veth peer name "$veth_b" netns "$ns_b" 2>"$tmp/err" ||
	skip "cannot create a veth pair: $(cat "$tmp/err")"
ip -n "$ns_a" addr add "$addr_a/24" dev "$veth_a" &&
	ip -n "$ns_b" addr add "$addr_b/24" dev "$veth_b" &&
	ip -n "$ns_a" link set "$veth_a" up &&
	ip -n "$ns_b" link set "$veth_b" up &&
	ip -n "$ns_a" link set lo up &&
	ip -n "$ns_b" link set lo up || {
	echo "netns: cannot configure the veth pair" >&2
	exit 1
}
# wait (bounded) until each side reaches the other
if command -v ping >/dev/null 2>&1; then
	for _ in $(seq 50); do
		ip netns exec "$ns_a" ping -c1 -W1 "$addr_b" >/dev/null 2>&1 && break
		sleep 0.1
	done
fi

echo "netns: rank 0 in $ns_a ($veth_a $addr_a), rank 1 in $ns_b ($veth_b $addr_b), root $addr_a:$port"

# Both ranks poll on this host's cores: told so, their idle engines yield
# rather than spin when the pollers outnumber the cores (src/core/pollers.c;
# spinning, 8-byte writes over tcp between two ranks on 2 cores took 230 us
# instead of 34).
run_rank() { # rank ns veth addr
	ip netns exec "$2" env KINET_RANK="$1" KINET_NRANKS=2 KINET_LOCAL_SIZE="${KINET_LOCAL_SIZE:-2}" \
		KINET_ROOT="$addr_a:$port" \
		KINET_TRANSPORT=ofi KINET_OFI_IFACE="$3" KINET_NETNS_ADDR="$4" \
		timeout -k 5 "$timeout_s" "${@:5}" 2>&1
	echo $? >"$tmp/rc$1"
}

(run_rank 0 "$ns_a" "$veth_a" "$addr_a" "$@" | sed -u 's/^/[rank 0] /') &
pid0=$!
(run_rank 1 "$ns_b" "$veth_b" "$addr_b" "$@" | sed -u 's/^/[rank 1] /') &
pid1=$!
wait "$pid0"
wait "$pid1"

rc0=$(cat "$tmp/rc0" 2>/dev/null || echo 1)
rc1=$(cat "$tmp/rc1" 2>/dev/null || echo 1)
echo "netns: rank 0 exited $rc0, rank 1 exited $rc1"
if [ "$rc0" != 0 ]; then
	exit "$rc0"
fi
exit "$rc1"
