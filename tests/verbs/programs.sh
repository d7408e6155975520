#!/usr/bin/env bash
# tests/verbs/programs.sh: runs one of Debian's unmodified verbs programs
# (ibverbs-utils, perftest) as a server and a client on kinet's verbs
# (through kinet-verbs), and checks that both finished and reported their
# numbers.
#
# Usage: programs.sh KINET_VERBS local|netns PORT PROGRAM [ARGS...]
#
#   local: two processes on this host (the node carrier); the client
#   connects to localhost.  netns: the server in one network namespace, the
#   client in another, joined by a veth pair (tests/netns/run.sh; the ofi
#   carrier over tcp), addressed by GID (rc_pingpong's -g 0, perftest's
#   -x 0).  PORT is the program's own setup port (-p), distinct per test so
#   tests run side by side.  Each side is bounded by `timeout`.
#
# Exit status: 0 when both sides exit 0 and the client printed a result
# line; 77 with "SKIP: ..." when the program is not installed (or, netns,
# not root); 1 otherwise, with both sides' output.
set -u
launcher=$(readlink -f "$1") mode=$2 port=$3
shift 3
prog=$1
shift
here=$(cd "$(dirname "$0")" && pwd)

command -v "$prog" >/dev/null 2>&1 || {
	echo "SKIP: $prog is not installed (ibverbs-utils / perftest)"
	exit 77
}
case "$prog" in
ibv_*) result='iters in [0-9.]+ seconds' ;;
*) result='^ *[0-9]+ +[0-9]+ +[0-9.]+' ;;
esac

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

check() {
	local ok=0
	grep -Eq "$result" "$out/client" || ok=1
	grep -Eq "$result" "$out/server" || [ "${prog#ib_}" != "$prog" ] || ok=1
	if grep -qiE 'validation failed|data mismatch|Couldn|failed to' "$out/client" "$out/server"; then
		ok=1
	fi
	if [ "$1" -ne 0 ] || [ "$2" -ne 0 ] || [ $ok -ne 0 ]; then
		echo "FAIL: $prog $* (server $1, client $2)"
		echo "--- server"; cat "$out/server"
		echo "--- client"; cat "$out/client"
		exit 1
	fi
	echo "--- client"; cat "$out/client"
	echo "OK: $prog ($mode)"
	exit 0
}

if [ "$mode" = local ]; then
	timeout 90 "$launcher" "$prog" -p "$port" "$@" >"$out/server" 2>&1 &
	spid=$!
	# The server listens on its port once its QP exists: retry the
	# client's setup connection a few times instead of guessing a delay.
	for _ in $(seq 50); do
		timeout 90 "$launcher" "$prog" -p "$port" "$@" localhost >"$out/client" 2>&1
		crc=$?
		grep -q 'Couldn.t connect to localhost\|Unable to open file descriptor for socket connection\|Couldn.t connect to' "$out/client" || break
		kill -0 $spid 2>/dev/null || break
		sleep 0.2
	done
	wait $spid
	check $? $crc
fi

# netns: rank 0 serves, rank 1 connects to rank 0's address (KINET_ROOT's
# host part); both address the other by GID 0.
gidarg=-g
case "$prog" in ib_*) gidarg=-x ;; esac
script='cd "$0"; if [ "$KINET_RANK" = 0 ]; then
	exec timeout 90 "$1" "$2" -p "$3" '"$gidarg"' 0 "${@:4}" >server 2>&1
else
	for i in $(seq 50); do
		timeout 90 "$1" "$2" -p "$3" '"$gidarg"' 0 "${@:4}" "${KINET_ROOT%:*}" >client 2>&1 && exit 0
		grep -q "Couldn.t connect to\|Unable to open file descriptor" client || exit 1
		sleep 0.2
	done
	exit 1
fi'
"$here/../netns/run.sh" --timeout 120 -- bash -c "$script" "$out" "$launcher" "$prog" "$port" "$@" >"$out/run" 2>&1
rc=$?
if [ $rc -eq 77 ]; then
	cat "$out/run"
	exit 77
fi
check $rc $rc
