#!/bin/sh
# mlx5-selftest.sh: what a user with a ConnectX NIC runs to see what kinet's
# ConnectX (mlx5) provider does on it, and to report it (docs/MLX5.md).
#
#   scripts/mlx5-selftest.sh [-b BUILD_DIR] [--device mlx5_0[:1]] [--quick]
#                            [--peer HOST [--peer-build DIR] [--root ADDR]]
#
# 1. lists the mlx5 devices and what works on them (kinet-info --provider
#    mlx5), and stops there when there is nothing to test;
# 2. runs the host test suites (device API on CPU threads included) and,
#    in a CUDA build with a GPU, the device test suite, with
#    KT_PROVIDER=mlx5 KINET_PROVIDER=mlx5 (tests of the software NIC itself
#    skip with a reason);
# 3. runs kinet-perf (latency, bandwidth, message rate; GPU- and
#    CPU-initiated) in loopback (initiator and target QPs on one port);
# 4. with --peer HOST: the same kinet-perf points across two hosts, rank 1
#    started on HOST over ssh (the same build at the same path, or
#    --peer-build DIR; this host must be reachable from HOST as --root ADDR,
#    default: this host's first address; the port is 29500 + a random part);
# 5. prints a summary to paste into an issue, between two marker lines; the
#    whole log goes to mlx5-selftest-HOST-DATE.log in the current folder.
#
# Environment: KINET_DEVICE, KINET_MLX5_* (docs/MLX5.md) pass through.
# Exit status: 0 everything passed; 1 something failed (the summary says
# what); 2 bad usage or no build found; 77 nothing to test here: no mlx5
# device, rdma-core not found, or a build without rdma-core's headers (the
# reason is printed: "mlx5-selftest: stop: ...").
set -u

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD='' PEER='' PEER_BUILD='' ROOT_ADDR='' QUICK=0
usage() {
	sed -n '2,/^set -u/p' "$0" | sed -e '/^set -u/d' -e 's/^# \{0,1\}//'
}
while [ $# -gt 0 ]; do
	case $1 in
	-b | --build) BUILD=$2; shift 2 ;;
	--device) KINET_DEVICE=$2; export KINET_DEVICE; shift 2 ;;
	--peer) PEER=$2; shift 2 ;;
	--peer-build) PEER_BUILD=$2; shift 2 ;;
	--root) ROOT_ADDR=$2; shift 2 ;;
	--quick) QUICK=1; shift ;;
	-h | --help) usage; exit 0 ;;
	*) echo "mlx5-selftest: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
	esac
done
if [ -z "$BUILD" ]; then
	for d in "$ROOT/build" "$ROOT/build-host"; do
		[ -x "$d/tools/kinet-info" ] && { BUILD=$d; break; }
	done
fi
if [ -z "$BUILD" ] || [ ! -x "$BUILD/tools/kinet-info" ]; then
	echo "mlx5-selftest: no kinet build found (build it, or give -b BUILD_DIR)" >&2
	exit 2
fi
BUILD=$(cd "$BUILD" && pwd)
INFO=$BUILD/tools/kinet-info
PERF=$BUILD/tools/kinet-perf
HOST=$(hostname 2>/dev/null || echo host)
LOG=${MLX5_SELFTEST_LOG:-$PWD/mlx5-selftest-$HOST-$(date +%Y%m%d-%H%M%S).log}
SUMMARY=$(mktemp)
trap 'rm -f "$SUMMARY"' EXIT
FAILED=0

say() { echo "$*" | tee -a "$LOG"; }
note() { echo "$*" >>"$SUMMARY"; }
: >"$LOG" || { echo "mlx5-selftest: cannot write $LOG" >&2; exit 2; }

say "mlx5-selftest: build $BUILD, log $LOG"

# ---- 1. devices ----------------------------------------------------------
"$INFO" --provider mlx5 >"$SUMMARY.info" 2>&1
rc=$?
cat "$SUMMARY.info" >>"$LOG"
if [ $rc -ne 0 ]; then
	why=$(sed -n 's/^kinet-info: error: provider mlx5 is not usable here: //p' "$SUMMARY.info")
	[ -n "$why" ] || why=$(tail -n 1 "$SUMMARY.info")
	rm -f "$SUMMARY.info" "$LOG"
	echo "mlx5-selftest: stop: $why"
	echo "mlx5-selftest: nothing to test on this machine (exit 77); docs/MLX5.md lists what the provider needs"
	exit 77
fi
note "## kinet mlx5 self-test"
note "- host: $HOST, $(uname -srm)"
note "- kinet: $(git -C "$ROOT" describe --always --dirty 2>/dev/null || echo unknown), build $(basename "$BUILD")"
pkg_version() { # the first of these packages installed
	for p in "$@"; do
		v=$( (dpkg-query -W -f '${Version}' "$p" || rpm -q --qf '%{VERSION}' "$p") 2>/dev/null | head -n 1)
		case $v in "" | *"not installed"*) ;; *) echo "$p $v"; return ;; esac
	done
	echo unknown
}
gpu=$(nvidia-smi -L 2>/dev/null | head -n 1)
driver=$(sed -n 's/.*Kernel Module *\([0-9.]*\).*/\1/p' /proc/driver/nvidia/version 2>/dev/null)
note "- rdma-core: $(pkg_version rdma-core libibverbs1 libibverbs)"
note "- OFED: $(ofed_info -s 2>/dev/null || echo none); nvidia-peermem: $(lsmod 2>/dev/null | grep -q nvidia_peermem && echo loaded || echo no)"
note "- GPU: ${gpu:-none}; NVIDIA driver: ${driver:-none}"
note '```'
cat "$SUMMARY.info" >>"$SUMMARY"
note '```'
rm -f "$SUMMARY.info"

# ---- 2. test suites ------------------------------------------------------
# Tests of the build itself or of the software NIC's transports do not use
# the provider: left out.
NOT_PROVIDER='^(format|layers|guide|api_docs|install|launcher_env|tools|kinetrun|lang_.*|mlx5_.*|provider|pollers.*|boot|carrier.*|carriers_lazy|netns_.*|perf.*|node_.*|ofi_.*|wire.*|gpunetio_layout|wc_status)$'
run_suite() { # name, ctest label
	out=$(mktemp)
	(cd "$BUILD" && KT_PROVIDER=mlx5 KINET_PROVIDER=mlx5 ctest -L "$2" -E "$NOT_PROVIDER" --timeout 300 \
		--output-on-failure) >"$out" 2>&1
	cat "$out" >>"$LOG"
	line=$(grep -E 'tests passed|No tests were found' "$out" | tail -n 1)
	skipped=$(grep -c 'Not Run\|\*\*\*Skipped' "$out")
	failed=$(sed -n 's/^[[:space:]]*[0-9]* - \(.*\) (\(Failed\|Timeout\|SEGFAULT\|Subprocess aborted\|Exception\).*/\1/p' "$out" | tr '\n' ' ')
	say "$1: ${line:-no result} ($skipped skipped)"
	note "- $1: ${line:-no result}; skipped $skipped${failed:+; failed: $failed}"
	[ -n "$failed" ] && FAILED=1
	rm -f "$out"
}
say "== host suites (KT_PROVIDER=mlx5) =="
run_suite "host suites" host
if grep -q 'KINET_CUDA_FOUND:INTERNAL=ON' "$BUILD/CMakeCache.txt" 2>/dev/null && nvidia-smi -L >/dev/null 2>&1; then
	say "== device suite (KT_PROVIDER=mlx5) =="
	run_suite "device suite" gpu
else
	say "device suite: not run (no CUDA build or no GPU)"
	note "- device suite: not run (no CUDA build or no GPU)"
fi

# ---- 3./4. kinet-perf ----------------------------------------------------
ITERS=2000
[ $QUICK = 1 ] && ITERS=200
POINTS="write --lat -s 8
write --bw -s 65536
write --rate -s 8
read --lat -s 8
fetch_add --lat -s 8
send --lat -s 64"
perf_point() { # label, command...
	label=$1
	shift
	out=$(mktemp)
	"$@" >"$out" 2>&1
	rc=$?
	cat "$out" >>"$LOG"
	if [ $rc -ne 0 ] || grep -q 'error:' "$out"; then
		say "FAIL kinet-perf $label (exit $rc)"
		note "- FAIL kinet-perf $label (exit $rc): $(grep -m1 'error:' "$out")"
		FAILED=1
	else
		# The result rows (not the floors or comments).
		grep -Ev '^#|^$|floor' "$out" | sed 's/^\[0\] //' >>"$SUMMARY"
	fi
	rm -f "$out"
}
export KINET_PROVIDER=mlx5
say "== kinet-perf, loopback =="
note '```'
note "# kinet-perf, loopback (KINET_PROVIDER=mlx5, --initiator both)"
while read -r p; do
	# shellcheck disable=SC2086
	perf_point "loopback $p" "$PERF" $p --initiator both --iters $ITERS
done <<POINTS_END
$POINTS
POINTS_END
note '```'

if [ -n "$PEER" ]; then
	say "== kinet-perf, two hosts: $HOST (rank 0) and $PEER (rank 1) =="
	[ -n "$ROOT_ADDR" ] || ROOT_ADDR=$(hostname -I 2>/dev/null | awk '{print $1}')
	PB=${PEER_BUILD:-$BUILD}
	note '```'
	note "# kinet-perf, two hosts ($HOST -> $PEER, KINET_PROVIDER=mlx5)"
	while read -r p; do
		port=$((29500 + $(od -An -N2 -tu2 /dev/urandom | tr -d ' ') % 20000))
		env="KINET_PROVIDER=mlx5 KINET_NRANKS=2 KINET_ROOT=$ROOT_ADDR:$port ${KINET_DEVICE:+KINET_DEVICE=$KINET_DEVICE}"
		# shellcheck disable=SC2086
		ssh -o BatchMode=yes "$PEER" "cd '$PB' && env $env KINET_RANK=1 ./tools/kinet-perf $p --iters $ITERS" \
			>>"$LOG" 2>&1 &
		# shellcheck disable=SC2086
		perf_point "two hosts $p" env $env KINET_RANK=0 "$PERF" $p --iters $ITERS
		wait
	done <<POINTS_END
$POINTS
POINTS_END
	note '```'
else
	note "- two hosts: not run (give --peer HOST)"
fi

# ---- 5. summary ----------------------------------------------------------
if [ $FAILED = 0 ]; then
	note "- result: everything passed"
else
	note "- result: FAILURES (full log: $(basename "$LOG"))"
fi
echo
echo "----- mlx5-selftest summary: paste below this line into an issue -----"
cat "$SUMMARY"
echo "----- end of summary -----"
cat "$SUMMARY" >>"$LOG"
exit $FAILED
