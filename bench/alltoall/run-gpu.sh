#!/usr/bin/env bash
# The device all-to-all and MoE dispatch/combine measurements on a GPU
# machine (docs/benchmarks/alltoall.md), everything into OUTDIR:
#
#   bench/alltoall/run-gpu.sh OUTDIR [NRANKS]
#
# NRANKS: ranks, one per GPU (default: every GPU nvidia-smi lists, at most 8).
# Builds kinet with CUDA in $BUILD (default ./build-gpu) unless it is there,
# finds NCCL (KINET_NCCL_LIB, else PyTorch's nvidia-nccl package, else the
# loader's path), then runs, each bounded by KINET_BENCH_CMD_TIMEOUT_S (600 s):
#   example-*.txt        moe_dispatch_combine at the benchmark's sizes, checked
#                        element by element (peer path with both layouts, and
#                        KINET_P2P=off)
#   results-peer.jsonl   kinet-alltoall-bench, peer path (GPUs' own stores)
#   results-peer-copy.jsonl  its MoE part with the per-expert layout copied
#                        (rows "kinet_copy_*"; the default lays out indices)
#   results-engine.jsonl the same with KINET_P2P=off (software NIC), fewer iterations
#   results-1gpu.jsonl   two ranks on GPU 0 (single-GPU sanity), small
#   log.txt machine.txt commands.txt, and summary.md + plots from plot.py
# The JSON lines are rank 0's (kinetrun's "[0] " prefix removed).
# KINET_BENCH_TOKENS (1,8,128,4096) and KINET_BENCH_HIDDEN (7168) change the
# sizes, KINET_BENCH_ITERS (50) the iterations of the peer-path run.
set -u

# Policy of the GPU machine (as scripts/gpu-test.sh): NVLink multicast stays off.
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
OUT=${1:?usage: run-gpu.sh OUTDIR [NRANKS]}
BUILD=${BUILD:-$ROOT/build-gpu}
CMD_TIMEOUT=${KINET_BENCH_CMD_TIMEOUT_S:-600}
NGPU=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
N=${2:-$NGPU}
[ "$N" -gt 8 ] && N=8
if [ "${NGPU:-0}" -lt 1 ]; then
	echo "run-gpu.sh: no GPU (nvidia-smi lists none)" >&2
	exit 2
fi
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
LOG=$OUT/log.txt
: >"$LOG"
: >"$OUT/commands.txt"

# ---- build ----
if [ ! -x "$BUILD/bench/kinet-alltoall-bench" ] || [ ! -x "$BUILD/examples/moe_dispatch_combine" ]; then
	echo "building kinet with CUDA in $BUILD" >&2
	{ cmake -S "$ROOT" -B "$BUILD" -DKINET_CUDA=ON -DCMAKE_BUILD_TYPE=Release &&
		cmake --build "$BUILD" -j "$(nproc)" --target kinetrun kinet-alltoall-bench moe_dispatch_combine \
			moe_dispatch_combine-emu; } >>"$LOG" 2>&1 || {
		echo "run-gpu.sh: build failed, see $LOG" >&2
		exit 1
	}
fi
KINETRUN=$BUILD/tools/kinetrun
BENCH=$BUILD/bench/kinet-alltoall-bench
EXAMPLE=$BUILD/examples/moe_dispatch_combine

# ---- NCCL, loaded by the benchmark at run time ----
if [ -z "${KINET_NCCL_LIB:-}" ]; then
	KINET_NCCL_LIB=$(python3 "$ROOT/bench/alltoall/find_nccl.py" 2>/dev/null)
fi
export KINET_NCCL_LIB
export KINET_COMMIT=${KINET_COMMIT:-$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)}

{
	echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
	echo "commit: $KINET_COMMIT"
	echo "ranks: $N of $NGPU GPUs"
	echo "nccl: ${KINET_NCCL_LIB:-libnccl.so.2 on the library path}"
	nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv 2>&1
	nvidia-smi topo -m 2>&1
	uname -a
} >"$OUT/machine.txt"

FAILED=0
# run NAME [ENV=VALUE...] -- COMMAND...: output to OUTDIR/NAME, JSON lines
# (rank 0's) to OUTDIR/NAME.jsonl when NAME ends in .jsonl.
run() {
	local name=$1 envs=() rc
	shift
	while [ "$1" != "--" ]; do
		envs+=("$1")
		shift
	done
	shift
	echo "${envs[*]} $*" | tee -a "$OUT/commands.txt" >&2
	echo "### ${envs[*]} $*" >>"$LOG"
	if [ "${name%.jsonl}" != "$name" ]; then
		env "${envs[@]}" timeout --kill-after=10 "$CMD_TIMEOUT" "$@" 2>>"$LOG" |
			sed -n 's/^\[0\] \({"tool":"kinet-alltoall-bench".*\)$/\1/p' >"$OUT/$name"
		rc=${PIPESTATUS[0]}
	else
		env "${envs[@]}" timeout --kill-after=10 "$CMD_TIMEOUT" "$@" >"$OUT/$name" 2>&1
		rc=$?
	fi
	if [ "$rc" -ne 0 ]; then
		echo "FAILED (exit $rc): ${envs[*]} $*" | tee -a "$LOG" >&2
		FAILED=$((FAILED + 1))
	fi
}

TOKENS=${KINET_BENCH_TOKENS:-1,8,128,4096}
HIDDEN=${KINET_BENCH_HIDDEN:-7168}
ITERS=${KINET_BENCH_ITERS:-50}
LARGEST=${TOKENS##*,}
SIZES=(--tokens 128 --hidden "$HIDDEN" --topk 8 --experts 256)
# ---- correctness at the benchmark's sizes ----
run example-peer.txt KINET_LOG=warn -- "$KINETRUN" -n "$N" -- "$EXAMPLE" "${SIZES[@]}" --rounds 3
run example-peer-index.txt KINET_LOG=warn -- "$KINETRUN" -n "$N" -- "$EXAMPLE" "${SIZES[@]}" --rounds 3 \
	--layout index
run example-engine.txt KINET_P2P=off -- "$KINETRUN" -n "$N" -- "$EXAMPLE" "${SIZES[@]}" --rounds 2
run "example-$LARGEST.txt" KINET_LOG=warn -- "$KINETRUN" -n "$N" -- "$EXAMPLE" --tokens "$LARGEST" \
	--hidden "$HIDDEN" --topk 8 --experts 256 --rounds 1
# ---- the measurements ----
run results-peer.jsonl KINET_LOG=warn -- "$KINETRUN" -n "$N" -- "$BENCH" --tokens "$TOKENS" --hidden "$HIDDEN" \
	--iters "$ITERS" --warmup 5
run results-peer-copy.jsonl KINET_LOG=warn -- "$KINETRUN" -n "$N" -- "$BENCH" --tokens "$TOKENS" \
	--hidden "$HIDDEN" --iters 20 --warmup 3 --only moe --layout copy --no-nccl
run results-engine.jsonl KINET_P2P=off -- "$KINETRUN" -n "$N" -- "$BENCH" --tokens "$TOKENS" --hidden "$HIDDEN" \
	--iters 10 --warmup 2
run results-1gpu.jsonl CUDA_VISIBLE_DEVICES=0 -- "$KINETRUN" -n 2 -- "$BENCH" --tokens 1,128 --hidden "$HIDDEN" \
	--iters 20 --warmup 3

if command -v python3 >/dev/null 2>&1; then
	python3 "$ROOT/bench/alltoall/plot.py" "$OUT" >>"$LOG" 2>&1 || echo "plot.py failed, see $LOG" >&2
fi
echo "run-gpu.sh: results in $OUT ($FAILED command(s) failed)" >&2
[ "$FAILED" -eq 0 ]
