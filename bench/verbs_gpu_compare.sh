#!/usr/bin/env bash
# bench/verbs_gpu_compare.sh: the verbs front door with GPU memory registered
# through a dma-buf, in one run: bench/verbs_gpu_bench (a plain verbs
# program: two RC QPs of one process connected to each other, cudaMalloc'd
# buffers exported with cuMemGetHandleForAddressRange and registered with
# ibv_reg_dmabuf_mr) beside kinet-perf's own CPU-initiated write over the
# same memory (loopback in one process, --src-mem gpu --dst-mem gpu).
# Debian's perftest has no CUDA support, which is why the verbs side is our
# own program.
#
# Usage: BUILD=build bench/verbs_gpu_compare.sh [ITERS] [SIZES]
#        MEM=host BUILD=build bench/verbs_gpu_compare.sh ...   (host memory on both sides)
#
#   ITERS  measured writes per size (default 1000; both sides, latency and
#          bandwidth; warm-up ITERS/10 on both)
#   SIZES  comma list with K/M suffixes (default 8,64,4K,64K,1M,4M)
#   MEM    gpu (default) or host
#
# How the verbs program gets kinet's libibverbs: it is linked with the
# build's lib/verbs/libibverbs.so.1 (its RUNPATH), as the front door's own
# tests (tests/verbs/) are; it is run through $BUILD/tools/kinet-verbs all
# the same, as an unmodified verbs program would be (the launcher puts
# lib/verbs first on the library path: the same library either way).  Its
# report names the libibverbs it loaded.
#
# What is compared (the same quantities on both sides, one process each,
# one QP posting, one CPU thread posting and polling):
#  - latency: one signaled RDMA write from post to its completion polled by
#    the CPU; median (p5-p95) in us: verbs_gpu_bench's lat row against
#    kinet-perf write --lat --initiator cpu;
#  - bandwidth: 64 writes outstanding, GB/s (1e9 B/s): verbs_gpu_bench's bw
#    row against kinet-perf write --bw --initiator cpu (window 64).
# ratio = verbs / kinet-perf (latency: above 1 is the front door's cost;
# bandwidth: below 1 is).  verbs_gpu_bench checks the destination after
# each size and exits non-zero on a mismatch or an error completion; the
# script then exits 1 after printing the table.  Exit 77 when --mem gpu has
# no GPU (the program's reason is printed).  Prints a markdown table and
# keeps the raw outputs in a folder it names.
set -u
iters=${1:-1000}
sizes=${2:-8,64,4K,64K,1M,4M}
mem=${MEM:-gpu}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-$ROOT/build}
perf=$BUILD/tools/kinet-perf
kv=$BUILD/tools/kinet-verbs
vb=$BUILD/bench/verbs_gpu_bench
case "$mem" in
host | gpu) ;;
*)
	echo "bench/verbs_gpu_compare.sh: MEM=$mem: host or gpu" >&2
	exit 2
	;;
esac
for f in "$perf" "$kv" "$vb"; do
	[ -x "$f" ] || {
		echo "bench/verbs_gpu_compare.sh: $f missing (BUILD=dir, built with CUDA and the verbs front door)" >&2
		exit 2
	}
done
out=$(mktemp -d /tmp/kinet-verbs-gpu-compare.XXXXXX)

bytes() {
	case "$1" in
	*K) echo $((${1%K} * 1024)) ;;
	*M) echo $((${1%M} * 1048576)) ;;
	*G) echo $((${1%G} * 1073741824)) ;;
	*) echo "$1" ;;
	esac
}
list=""
for s in ${sizes//,/ }; do
	list="$list${list:+,}$(bytes "$s")"
done

timeout 600 "$kv" "$vb" --mem "$mem" -s "$list" -n "$iters" >"$out/verbs" 2>&1
vrc=$?
if [ $vrc -eq 77 ]; then
	cat "$out/verbs"
	echo "# raw outputs: $out"
	exit 77
fi
timeout 600 "$perf" write --lat --initiator cpu --src-mem "$mem" --dst-mem "$mem" -s "$list" -n "$iters" \
	>"$out/kinet_lat" 2>&1
lrc=$?
timeout 600 "$perf" write --bw --initiator cpu --src-mem "$mem" --dst-mem "$mem" -s "$list" -n "$iters" \
	--window 64 --no-floors >"$out/kinet_bw" 2>&1
brc=$?

echo "# bench/verbs_gpu_compare.sh $iters iterations, MEM=$mem; $(nproc) cores; $(date -u +%Y-%m-%dT%H:%MZ)"
echo "# raw outputs: $out"
grep -E '^# (device|libibverbs|memory):' "$out/verbs" | sed 's/^# /# verbs_gpu_bench /'
grep -E '^# (device|HOST EMULATION|data path):' "$out/kinet_lat" | sed 's/^# /# kinet-perf /'
grep -E '^# +(signalling|.*round trip)' "$out/kinet_lat" | sed 's/^# */# kinet-perf floor: /'
echo
echo "| bytes | verbs lat median us (p5-p95) | kinet-perf lat median us (p5-p95) | ratio | verbs bw GB/s | kinet-perf bw GB/s | ratio |"
echo "| ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
for s in ${list//,/ }; do
	vl=$(awk -v s="$s" '$1 == "lat" && $3 == s {print $5, $6, $7}' "$out/verbs")
	vb_=$(awk -v s="$s" '$1 == "bw" && $3 == s {print $8}' "$out/verbs")
	# kinet-perf's rows: op mode init variant bytes ... median_us($14)
	# p5_us p95_us GB/s($17).
	kl=$(awk -v s="$s" '$1 == "write" && $2 == "lat" && $3 == "cpu" && $5 == s {print $14, $15, $16}' "$out/kinet_lat")
	kb=$(awk -v s="$s" '$1 == "write" && $2 == "bw" && $3 == "cpu" && $5 == s {print $17}' "$out/kinet_bw")
	# shellcheck disable=SC2086 # split into median, p5, p95
	set -- $vl
	vlm=${1:--} vl5=${2:--} vl95=${3:--}
	# shellcheck disable=SC2086
	set -- $kl
	klm=${1:--} kl5=${2:--} kl95=${3:--}
	lr=$(awk -v a="$vlm" -v b="$klm" 'BEGIN { if (a + 0 > 0 && b + 0 > 0) printf "%.2f", a / b; else print "-" }')
	br=$(awk -v a="${vb_:--}" -v b="${kb:--}" 'BEGIN { if (a + 0 > 0 && b + 0 > 0) printf "%.2f", a / b; else print "-" }')
	echo "| $s | $vlm ($vl5-$vl95) | $klm ($kl5-$kl95) | $lr | ${vb_:--} | ${kb:--} | $br |"
done
rc=0
if [ $vrc -ne 0 ]; then
	echo "# verbs_gpu_bench exited $vrc:"
	grep -v '^#' "$out/verbs" | grep -vE '^(mode|lat|bw) ' | sed 's/^/#   /'
	rc=1
fi
for x in "lat:$lrc" "bw:$brc"; do
	if [ "${x#*:}" -ne 0 ]; then
		echo "# kinet-perf write --${x%%:*} exited ${x#*:} (see $out/kinet_${x%%:*})"
		rc=1
	fi
done
exit $rc
