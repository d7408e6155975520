#!/usr/bin/env bash
# bench/transceiver.sh: the transceiver's round trip (examples/transceiver/)
# in one run: the persistent kernel and the CPU loop serving the same
# requests, in one process and in two (node carrier), each request by SEND
# and by write-with-immediate, beside kinet-perf's GPU<->CPU signalling
# round trip (the floor of anything a kernel asks a CPU-side NIC to do).
#
# Usage: BUILD=build bench/transceiver.sh [REQUESTS] [SIZE]
#
#   REQUESTS  per configuration, one QP, back to back (default 20000)
#   SIZE      payload bytes (default 16: request and answer inline)
#
# Uses $BUILD/examples/transceiver (nvcc build; without a GPU it runs its
# -emu build, and the table says "host emulation").  Prints a markdown
# table; the raw outputs stay in the folder it names.
set -u
requests=${1:-20000}
size=${2:-16}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-$ROOT/build}
trx=$BUILD/examples/transceiver
[ -x "$trx" ] || trx=$BUILD/examples/transceiver-emu
run2=$BUILD/tools/kinetrun
perf=$BUILD/tools/kinet-perf
for f in "$trx" "$run2" "$perf"; do
	[ -x "$f" ] || {
		echo "bench/transceiver.sh: $f missing (BUILD=dir)" >&2
		exit 2
	}
done
out=$(mktemp -d /tmp/kinet-transceiver.XXXXXX)
failed=0

args=(--qps 1 --requests "$requests" --size "$size")
for op in send write_imm; do
	timeout 300 "$trx" "${args[@]}" --op $op >"$out/one_$op" 2>&1 || failed=1
	timeout 300 "$run2" -n 2 -- "$trx" "${args[@]}" --op $op >"$out/two_$op" 2>&1 || failed=1
done
timeout 120 "$perf" write --lat -s 8 --initiator gpu >"$out/floor" 2>&1 || failed=1

where=$(grep -m1 -o 'server kernel on [^;]*' "$out/one_send")
floor_line=$(grep -m1 -E 'GPU<->CPU round trip|thread<->thread round trip' "$out/floor")
floor=$(printf '%s\n' "$floor_line" | sed -E 's/.*median +([0-9.]+) us.*/\1/')
floor_name=$(printf '%s\n' "$floor_line" | sed -E 's/^# *//; s/ +median.*//')
echo "transceiver, $where, $size-byte payloads, $requests requests per row, one QP, back to back"
echo
echo "| processes | request by | service | min us | median us | p99 us | p99.9 us | answers/s | median / floor |"
echo "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |"
for f in one_send one_write_imm two_send two_write_imm; do
	procs=one
	case $f in two_*) procs=two ;; esac
	op=${f#*_}
	sed 's/^\[[0-9]\] //' "$out/$f" | awk -v p="$procs" -v op="$op" -v fl="${floor:-0}" '
		($1 == "gpu" || $1 == "cpu") && NF == 11 {
			ratio = fl > 0 ? sprintf("%.2f", $8 / fl) : "-"
			printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", p, op, ($1 == "gpu" ? "kernel" : "CPU loop"), $7, $8, $9, $10, $11, ratio
		}'
done
echo
echo "floor: ${floor_name:-?} median ${floor:-?} us (kinet-perf write --lat -s 8 --initiator gpu, same run)"
echo "raw outputs: $out"
[ $failed -eq 0 ] || echo "bench/transceiver.sh: a run failed; see $out" >&2
exit $failed
