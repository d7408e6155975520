#!/bin/sh
# kinet-netns-run's behaviour (ctest netns_run_status): which status it
# exits with, what each side sees, that a timeout and a signal end it in
# time, and that no namespace outlives it.  Usage: netns_run_check.sh RUNNER
# Skips (77) where the runner does.
set -u
run=$1
fails=0

# expect CODE WHAT ARGS...: the runner, run with ARGS, exits CODE.
expect() {
	want=$1 what=$2
	shift 2
	"$run" "$@" >/tmp/kinet-nrc.$$ 2>&1
	got=$?
	if [ "$got" -eq 77 ] && grep -q '^SKIP:' /tmp/kinet-nrc.$$; then
		cat /tmp/kinet-nrc.$$
		rm -f /tmp/kinet-nrc.$$
		exit 77
	fi
	if [ "$got" -ne "$want" ]; then
		echo "FAIL: $what: exit $got, expected $want; its output:"
		sed 's/^/    /' /tmp/kinet-nrc.$$
		fails=$((fails + 1))
	else
		echo "ok: $what (exit $got)"
	fi
	rm -f /tmp/kinet-nrc.$$
}

# Side b's status passes through; a, still running, is stopped (SIGTERM).
expect 0 "b succeeds, a stopped" -- sh -c 'echo ready; exec sleep 30' -- true
expect 3 "b's failure" -- sh -c 'echo ready; exec sleep 30' -- sh -c 'exit 3'
# a failing first is the run's failure, b stopped; before b starts too.
expect 5 "a fails first" -- sh -c 'echo ready; sleep 0.3; exit 5' -- sleep 30
expect 6 "a fails before ready" -- sh -c 'exit 6' -- true
# a ignoring SIGTERM after b ended, then exiting 0: success; exiting 4: 4.
expect 4 "a fails when stopped" -- sh -c 'trap "exit 4" TERM; echo ready; while :; do sleep 0.1; done' -- true
expect 0 "a exits 0 when stopped" -- sh -c 'trap "exit 0" TERM; echo ready; while :; do sleep 0.1; done' -- true
# --wait-ms starts b without "ready"; a exiting 0 does too.
expect 0 "--wait-ms" --wait-ms 200 -- sleep 30 -- true
expect 0 "a exits 0 first" -- true -- true
expect 127 "no such command" -- sh -c 'echo ready; exec sleep 30' -- /nonexistent/kinet-cmd
# What each side sees: its values in tokens and environment, inside its
# own namespace (only lo and its veth in /proc/net/dev).
see='test "$1" = "$KT_IFACE" && test "$2" = "$KT_ADDR" && test "$3" = "$KT_MAC" &&
	test "$4" = "$KT_PEER_ADDR" && test "$5" = "$KT_PEER_MAC" && test "$6" = "$KT_SIDE" &&
	test "$KT_ADDR" != "$KT_PEER_ADDR" && test "$KT_MAC" != "$KT_PEER_MAC" &&
	grep -q "^ *$KT_IFACE:" /proc/net/dev && grep -q "^ *lo:" /proc/net/dev &&
	test $(wc -l </proc/net/dev) -eq 4'
expect 0 "tokens and environment" -- sh -c "$see && echo ready && exec sleep 30" x {IFACE} {ADDR} {MAC} \
	{PEER_ADDR} {PEER_MAC} a -- sh -c "$see" x {IFACE} {ADDR} {MAC} {PEER_ADDR} {PEER_MAC} b
expect 1 "tokens checked (wrong side)" -- sh -c 'echo ready; exec sleep 30' -- sh -c "$see" x {IFACE} \
	{ADDR} {MAC} {PEER_ADDR} {PEER_MAC} a
expect 2 "bad command line" -- true

# The timeout: 124 within a few seconds, nothing left behind.
start=$(date +%s)
expect 124 "timeout" --timeout 2 -- sh -c 'echo ready; exec sleep 60' -- sleep 60
took=$(($(date +%s) - start))
if [ "$took" -gt 10 ]; then
	echo "FAIL: the 2 s timeout took $took s"
	fails=$((fails + 1))
fi

# SIGTERM to the runner: 143, its commands and namespaces gone.
"$run" -- sh -c 'echo ready; exec sleep 60' -- sleep 60 >/dev/null 2>&1 &
pid=$!
sleep 1
kill -TERM $pid
wait $pid
got=$?
sleep 0.2
left=$(ls /run/netns 2>/dev/null | grep -c -- "-$pid\$")
if [ "$got" -ne 143 ] || [ "$left" -ne 0 ] || pgrep -P $pid >/dev/null 2>&1; then
	echo "FAIL: SIGTERM: exit $got (expected 143), $left namespaces left"
	fails=$((fails + 1))
else
	echo "ok: SIGTERM (exit 143, namespaces gone)"
fi

echo "$fails failed"
[ "$fails" -eq 0 ]
