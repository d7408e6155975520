#!/usr/bin/env bash
# Runs the standard kinet-perf sweep and writes its results into an output
# directory (default ./bench-out):
#   results.jsonl   one kinet-perf JSON document per line (one per command)
#   log.txt         the human tables (stderr of each run) and failures
#   machine.json    GPU, driver, CPU, commit, date, the commands
# Then: python3 bench/report.py OUTDIR  (regenerates docs/benchmarks/).
#
#   BUILD=build-gpu bench/run.sh [OUTDIR]
#
# BUILD: build directory holding tools/kinet-perf (default ./build-gpu).
# KINET_COMMIT: the commit measured, where git is not available.
# KINET_BENCH_TWO_GPUS: 1 runs the two-GPU sweep (--peer-gpu 1), 0 skips
# it; default: run it when nvidia-smi lists two GPUs or more.
# KINET_BENCH_BUDGET_S: wall-time budget (default 330 s); commands left when
# it is spent are skipped and listed as such.  Each command is bounded by
# KINET_BENCH_CMD_TIMEOUT_S (default 120 s); a failure is logged and the
# sweep goes on.
set -u

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
OUT=${1:-./bench-out}
BUILD=${BUILD:-./build-gpu}
BUDGET=${KINET_BENCH_BUDGET_S:-330}
CMD_TIMEOUT=${KINET_BENCH_CMD_TIMEOUT_S:-120}

PERF=""
for cand in "$BUILD/tools/kinet-perf" "$ROOT/$BUILD/tools/kinet-perf" "$ROOT/build-gpu/tools/kinet-perf"; do
	if [ -x "$cand" ]; then
		PERF=$cand
		break
	fi
done
if [ -z "$PERF" ]; then
	echo "bench/run.sh: no kinet-perf in $BUILD/tools (set BUILD to the build directory)" >&2
	exit 2
fi

mkdir -p "$OUT"
RESULTS="$OUT/results.jsonl"
LOG="$OUT/log.txt"
CMDS="$OUT/commands.txt"
: >"$RESULTS"
: >"$LOG"
: >"$CMDS"

if [ -z "${KINET_COMMIT:-}" ]; then
	KINET_COMMIT=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)
fi
export KINET_COMMIT
# Sections 1-6 measure the software NIC: loopback QPs of one process would
# otherwise take the peer path (device stores, no engine), and the report
# would judge the engine's targets on numbers the engine never made.
# KINET_P2P set by the caller wins; section 7 sets it per sweep.
export KINET_P2P=${KINET_P2P:-off}

START=$(date +%s)
FAILED=0
SKIPPED=0

# begin WHAT: records a command in commands.txt and the log; 1 (and
# counted as skipped) when the budget is spent.  finish WHAT RC: counts and
# logs a failure (RC not 0).
begin() {
	local elapsed=$(($(date +%s) - START))
	echo "$1" >>"$CMDS"
	if [ "$elapsed" -ge "$BUDGET" ]; then
		echo "SKIPPED (budget of ${BUDGET}s spent): $1" | tee -a "$LOG" >&2
		SKIPPED=$((SKIPPED + 1))
		return 1
	fi
	echo "[$elapsed s] $1" >&2
	echo "### $1" >>"$LOG"
}
finish() {
	if [ "$2" -ne 0 ]; then
		echo "FAILED (exit $2): $1" | tee -a "$LOG" >&2
		FAILED=$((FAILED + 1))
	fi
}

# run ARGS...: one kinet-perf command (under the launcher in LAUNCH, when
# set), its JSON appended to results.jsonl.
LAUNCH=()
run() {
	local out rc what
	what="${LAUNCH[*]:+${LAUNCH[*]} }kinet-perf $*"
	[ "${LAUNCH[0]:-}" = env ] || what="KINET_P2P=$KINET_P2P $what"
	begin "$what" || return 0
	out=$(timeout --kill-after=10 "$CMD_TIMEOUT" "${LAUNCH[@]}" "$PERF" "$@" --json 2>>"$LOG")
	rc=$?
	if [ -n "$out" ]; then
		# Only complete documents (one line each) go into the results;
		# under kinetrun, rank 0's, behind its "[0] " prefix.
		printf '%s\n' "$out" | sed -n 's/^\(\[0\] \)\{0,1\}\({"tool":"kinet-perf".*\)$/\2/p' >>"$RESULTS"
	fi
	finish "$what" $rc
	return 0
}

# The commands that decide the targets come first, so that a slow machine
# that runs out of budget still has them.
# 1. Latency, 8 B put to host memory, GPU- and CPU-initiated (target: median
#    <= 1.5x the GPU<->CPU round trip of the same run), then every operation.
run write --lat -s 8
# 2. Compute + put + wait per iteration: persistent kernel vs kernel boundary.
#    Sources in GPU memory up to 512 B are staged by device code for the
#    software NIC (--stage-bytes 512; the library's default is 256 B); 4 KiB
#    goes through the engine's copy engine, which beats staging at that size.
run iter -s 8,64,512,4096
run iter -s 8,64,512,4096 --src-mem gpu --stage-bytes 512
# The same with a light compute step (about 1 us), where the launch and
# synchronisation the kernel-boundary way pays weigh most.
run iter -s 8,64,512,4096 --compute-reps 1 --compute-n 4096
run iter -s 8,64,512,4096 --src-mem gpu --compute-reps 1 --compute-n 4096 --stage-bytes 512
# The block that computed posts with the _block forms, which stage the
# source with every thread (4 KiB in one round of loads and stores).
run iter -s 8,64,512,4096 --src-mem gpu --compute-reps 1 --compute-n 4096 --stage-bytes 4096 --group block
# 3. Bandwidth vs size (window of 64 outstanding per thread).
run write --bw --sweep 4K:64M
run write --bw --sweep 4K:64M --src-mem gpu --dst-mem gpu
# 4. Message rate of 8-byte puts vs QPs and engine threads (32 posting
#    threads per block, one block per QP, combined doorbells; CPU-initiated:
#    a thread per QP).  132 QPs: enough posters that the engines are the
#    limit (eng_busy says which side is).
for eng in 1 2 4 8; do
	for qps in 1 16 64 132; do
		init=gpu
		[ "$qps" -le 16 ] && init=both
		run write --rate -s 8 -t 32 -b "$qps" -q "$qps" --engine-threads "$eng" --initiator "$init"
	done
done
# 5. The rest: every operation's latency, doorbell modes, size sweeps.
for op in read fetch_add compare_swap put_signal send; do
	run "$op" --lat -s 8
done
for db in cpu gpu bf; do
	run write --lat -s 8 --db "$db" --initiator gpu
done
run write --lat --sweep 8:1M
run write --lat --sweep 8:1M --src-mem gpu --dst-mem gpu
run read --lat --sweep 8:64K
run write --bw --sweep 4K:64M --src-mem gpu --dst-mem host
run read --bw --sweep 4K:16M
run put_signal --rate -s 8 -t 32 -b 16 -q 16 --engine-threads 4
run send --rate -s 8 -t 32 -b 16 -q 16 --engine-threads 4

# 6. Optional, KINET_BENCH_TWO_RANKS=1: the same between two ranks
#    (kinetrun -n 2: rank 0 initiates and prints the JSON, rank 1 is the
#    target; kinetrun prefixes their lines with "[rank] ").  On a machine
#    with several GPUs each rank takes GPU KINET_LOCAL_RANK % count, so the
#    GPU-memory sweep goes from one GPU to the other.
if [ "${KINET_BENCH_TWO_RANKS:-0}" = 1 ]; then
	KINETRUN="$BUILD/tools/kinetrun"
	[ -x "$KINETRUN" ] || KINETRUN="$(dirname "$PERF")/kinetrun"
	if [ -x "$KINETRUN" ]; then
		LAUNCH=("$KINETRUN" -n 2 --)
		run write --lat -s 8
		run write --bw --sweep 4K:64M --src-mem gpu --dst-mem gpu
		LAUNCH=()
	else
		echo "bench/run.sh: KINET_BENCH_TWO_RANKS=1 but no $KINETRUN" | tee -a "$LOG" >&2
	fi
fi

# 7. Two GPUs of this host in one process (--peer-gpu 1: initiator on GPU 0,
#    target side on GPU 1), each run beside the peer floors of the same run
#    (store ping-pongs, cudaMemcpyPeerAsync, kernel copy, raw store rate):
#    once as kinet chooses (the peer path where the GPUs reach each other),
#    once with KINET_P2P=off (the engine path).  Both buffers on the GPUs,
#    so the data goes GPU 0 -> GPU 1.  In --bw every one of the 132 x 256
#    threads puts its own message, so the iterations are few; through the
#    engine the sweep stops at 4 MiB: beyond, a put queued behind the other
#    threads' on the QP waits past the QP's 10 s timeout (seen on two H200s).
# two_gpu_sweep BW_MAX
two_gpu_sweep() {
	local mem=(--peer-gpu 1 --src-mem gpu --dst-mem gpu)
	run write --lat -s 8 "${mem[@]}"
	run put_signal --lat -s 8 "${mem[@]}"
	# Bandwidth with the cooperative form (a block per put, its own slot),
	# as the kernel copy floor with the same grid; the rate thread by thread.
	run write --bw --sweep "64K:$1" --group block --blocks 132 --threads 256 -n 2 -w 1 "${mem[@]}"
	run write --rate -s 8 --group thread --blocks 132 --threads 256 "${mem[@]}"
}
two_gpus=${KINET_BENCH_TWO_GPUS:-auto}
if [ "$two_gpus" = auto ]; then
	two_gpus=0
	[ "$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')" -ge 2 ] && two_gpus=1
fi
if [ "$two_gpus" = 1 ]; then
	LAUNCH=(env KINET_P2P=auto)
	two_gpu_sweep 64M
	LAUNCH=(env KINET_P2P=off)
	two_gpu_sweep 4M
	LAUNCH=()
fi

# 8. The remote path beside libfabric's own (bench/ofi_compare.sh: 8-byte
#    writes between two ranks over the ofi carrier against libfabric's
#    pingpong and windowed rate on the same provider, in one run), with a
#    build that has libfabric: shm between two processes, and tcp;ofi_rxm
#    between two network namespaces where this is root with ip(8) (else
#    the script says why it skipped).  Its summary goes to ofi-PROVIDER.txt.
BDIR=$(cd "$(dirname "$PERF")/.." && pwd)
if [ -x "$BDIR/bench/kinet-fi-pingpong" ]; then
	for prov in shm tcp; do
		what="BUILD=${BDIR#"$ROOT"/} bench/ofi_compare.sh $prov 10000"
		begin "$what" || continue
		BUILD="$BDIR" timeout --kill-after=10 $((CMD_TIMEOUT * 3)) \
			"$ROOT/bench/ofi_compare.sh" "$prov" 10000 >"$OUT/ofi-$prov.txt" 2>>"$LOG"
		rc=$?
		[ $rc -eq 77 ] || finish "$what" $rc # 77: tcp skipped, the file says why
	done
fi

# Machine description.
gpu_name=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
driver=$(nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null | head -1)
cuda_ver=$(nvidia-smi 2>/dev/null | sed -n 's/.*CUDA Version: *\([0-9.]*\).*/\1/p' | head -1)
cpu_model=$(sed -n 's/^model name[[:space:]]*: *//p' /proc/cpuinfo 2>/dev/null | head -1)
cores=$(nproc 2>/dev/null || echo 0)
end=$(date +%s)
python3 - "$OUT/machine.json" <<PY
import json, sys
cmds = [l.rstrip("\n") for l in open("$CMDS")]
json.dump({
    "gpu": "${gpu_name:-none}",
    "driver": "${driver:-none}",
    "cuda": "${cuda_ver:-}",
    "cpu": """${cpu_model:-unknown}""",
    "cores": int("${cores}" or 0),
    "hostname": "$(hostname 2>/dev/null)",
    "kernel": "$(uname -r 2>/dev/null)",
    "commit": "${KINET_COMMIT}",
    "date": "$(date -u +%Y-%m-%dT%H:%M:%SZ)",
    "wall_s": $((end - START)),
    "failed": ${FAILED},
    "skipped": ${SKIPPED},
    "perf": "${PERF}",
    "commands": cmds,
}, open(sys.argv[1], "w"), indent=1)
PY
echo "bench/run.sh: $(wc -l <"$RESULTS") result documents in $RESULTS, ${FAILED} failed, ${SKIPPED} skipped, $((end - START)) s" >&2
exit 0
