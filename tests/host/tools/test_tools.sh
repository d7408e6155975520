#!/bin/sh
# kinet-info and kinet-perf flags: --help and --version answer only that,
# bad sizes and a missing operation are refused, bw rows show no latency,
# and a plain run prints no "error:" line (nothing asked for a provider or
# a carrier that is missing), several posting units give a rate, a
# two-rank run measures its floors between the ranks, and one whose rank 1
# stops exits promptly with a failure.
# Usage: test_tools.sh KINET_INFO KINET_PERF KINETRUN
set -u
INFO=$1
PERF=$2
KINETRUN=$3
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
failed=0

fail() {
	echo "FAIL: $*"
	failed=1
}

# run NAME WANT_RC CMD...: stdout in $TMP/out, stderr in $TMP/err
run() {
	name=$1
	want=$2
	shift 2
	"$@" >"$TMP/out" 2>"$TMP/err"
	rc=$?
	if [ "$rc" -ne "$want" ]; then
		fail "$name: exit status $rc, expected $want"
		sed 's/^/    /' "$TMP/out" "$TMP/err"
	else
		echo "ok: $name"
	fi
}

has() { grep -q -- "$2" "$TMP/$1" || fail "$name: $1 lacks '$2'"; }
lacks() { ! grep -q -- "$2" "$TMP/$1" || fail "$name: $1 has '$2'"; }

run "kinet-info" 0 "$INFO"
has out "^providers:"
has out "mlx5  not available: "
lacks err "error:"
# The ConnectX section says why there is none, as a reason, not an error.
has out "^mlx5 (ConnectX):"
grep -A1 "^mlx5 (ConnectX):" "$TMP/out" | grep -Eq "no mlx5 device|rdma-core not found|without rdma-core's headers" ||
	fail "kinet-info: the mlx5 section gives no reason"

# Asked for by name, an unusable provider is an error (exit 1).
run "kinet-info --provider mlx5" 1 "$INFO" --provider mlx5
has out "^mlx5: not available"
has err "error: provider mlx5 is not usable here: "
run "kinet-info --provider soft" 0 "$INFO" --provider soft
has out "^soft: available"
run "kinet-info --provider bogus" 2 "$INFO" --provider bogus
has err "no such provider"

run "kinet-info --help" 0 "$INFO" --help
has out "^usage: kinet-info"
lacks out "providers:"

run "kinet-info --version" 0 "$INFO" --version
has out "^kinet-info [0-9]"
lacks out "providers:"

run "kinet-info bad argument" 2 "$INFO" --bogus
has err "unknown argument"

run "kinet-perf --help" 0 "$PERF" --help
has out "^usage: kinet-perf"

run "kinet-perf without an operation" 2 "$PERF" -s 8
has err "which operation"

run "kinet-perf -s -5" 2 "$PERF" write -s -5
has err "bad value for -s: -5"

run "kinet-perf --bw" 0 "$PERF" write --bw -s 4096 --iters 50 --no-floors
lacks err "error:"
# op mode init variant bytes thr blk qps eng db src dst iters median p5 p95
awk '$1 == "write" && $2 == "bw" { n++; if ($14 != "-" || $15 != "-" || $16 != "-") bad++ }
	END { exit !(n > 0 && !bad) }' "$TMP/out" || { fail "bw rows: latency columns not '-'"; cat "$TMP/out"; }

run "kinet-perf --lat" 0 "$PERF" write --lat -s 8 --iters 50 --no-floors
lacks err "error:"
awk '$1 == "write" && $2 == "lat" { n++; if ($14 !~ /^[0-9.]+$/) bad++ } END { exit !(n > 0 && !bad) }' \
	"$TMP/out" || { fail "lat rows: no latency"; cat "$TMP/out"; }

# Several posting units, whose device code kinet-perf compiles apart from
# the launch: each posts and the rate is one (under host emulation every
# unit had been block 0, and the rate printed 0.000).
run "kinet-perf --rate, 4 units" 0 "$PERF" write --rate -s 8 -t 4 -q 2 --iters 200 --initiator gpu --no-floors
lacks err "error:"
# ... GB/s Mops/s: column 18
awk '$1 == "write" && $2 == "rate" { n++; if (!($18 + 0 > 0)) bad++ } END { exit !(n > 0 && !bad) }' \
	"$TMP/out" || { fail "rate rows: no rate"; cat "$TMP/out"; }

run "kinet-perf, two ranks" 0 "$KINETRUN" -n 2 --timeout 60 -- "$PERF" write --lat -s 8 --iters 200
has out "rank 0<->rank 1 round trip"
has out "remote write's 4 handoffs"
# [0] op mode init ...: the lat rows are compared with the handoff chain
awk '$2 == "write" && $3 == "lat" { n++; if ($20 !~ /^[0-9.]+x$/) bad++ } END { exit !(n > 0 && !bad) }' \
	"$TMP/out" || { fail "two-rank lat rows: no vs_floor"; cat "$TMP/out"; }

# A rank stopped mid-run (SIGSTOP) fails the other's point when its QP
# times out (10 s); kinet-perf then exits non-zero at once instead of
# waiting out its 600 s collective bound at the barrier that ends the
# point (kinetrun then kills the stopped rank).  Rank 1 is stopped once it
# has connected and had time to reach that barrier: stopped earlier, in
# the setup's exchange, it is a rank that never arrived, which only the
# bootstrap's timeout can tell.
rank_pid() { # PARENT RANK: the pid of that rank among PARENT's children
	for d in /proc/[0-9]*; do
		[ "$(awk '/^PPid:/ { print $2 }' "$d/status" 2>/dev/null)" = "$1" ] || continue
		if tr '\0' '\n' <"$d/environ" 2>/dev/null | grep -qx "KINET_RANK=$2"; then
			echo "${d#/proc/}"
			return
		fi
	done
}
name="kinet-perf, two ranks, rank 1 stopped"
KINET_LOG=debug "$KINETRUN" -n 2 --timeout 100 -- "$PERF" write --lat -s 8 --iters 10000000 --no-floors \
	>"$TMP/out" 2>&1 &
kr=$!
i=0
until grep -q '^\[1\] .*connected to QP' "$TMP/out" || [ $i -ge 600 ] || ! kill -0 "$kr" 2>/dev/null; do
	sleep 0.1
	i=$((i + 1))
done
sleep 2
r1=$(rank_pid "$kr" 1)
if [ -z "$r1" ]; then
	fail "$name: rank 1 not found"
	kill "$kr" 2>/dev/null
	wait "$kr"
else
	kill -STOP "$r1"
	t0=$(date +%s)
	wait "$kr"
	rc=$?
	t=$(($(date +%s) - t0))
	kill -KILL "$r1" 2>/dev/null
	if [ "$rc" -eq 0 ] || [ "$rc" -eq 124 ] || [ "$t" -gt 45 ]; then
		fail "$name: exit status $rc after $t s, expected a failure within 45 s"
		grep -v 'debug:' "$TMP/out" | sed 's/^/    /'
	else
		echo "ok: $name (exit status $rc after $t s)"
		has out "run abandoned after a failure"
	fi
fi

exit $failed
