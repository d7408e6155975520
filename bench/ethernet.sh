#!/usr/bin/env bash
# bench/ethernet.sh: UDP echo round trip and echoes per second across two
# network namespaces joined by a veth pair, for three echo servers in one
# run: eth_udp_echo's persistent kernel (the GPU build, its packet slots in
# GPU memory and in host-mapped memory; where there is no GPU it is
# skipped), the same loop on CPU threads over the same software
# NIC back end (eth_udp_echo-emu), and a kernel UDP socket echo that spins
# (udp_echo_check server-spin).  The client is `kinet-perf eth` in the
# other namespace (an ordinary UDP socket), which also measures the
# GPU<->CPU signalling floor.  Needs root (namespaces).
#
# Usage: BUILD=build bench/ethernet.sh [N] [SECONDS] [FRAMES]
#
#   N        round trips per frame size (default 10000)
#   SECONDS  of echoes/s per frame size (default 1)
#   FRAMES   comma-separated frame sizes (default 64,128,256,512,1024,1500)
#
# KINET_ENGINE_THREADS is left alone (default 1: one engine thread).  The
# raw outputs stay in the folder printed at the end.
set -u
n=${1:-10000}
seconds=${2:-1}
frames=${3:-64,128,256,512,1024,1500}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-$ROOT/build}
runner=$BUILD/tests/eth/kinet-netns-run
sock=$BUILD/tests/eth/udp_echo_check
perf=$BUILD/tools/kinet-perf
for f in "$runner" "$sock" "$perf" "$BUILD/examples/eth_udp_echo-emu"; do
	[ -x "$f" ] || {
		echo "bench/ethernet.sh: $f missing (BUILD=dir)" >&2
		exit 2
	}
done
out=$(mktemp -d /tmp/kinet-ethernet.XXXXXX)
sizes=()
IFS=, read -ra fs <<<"$frames"
for s in "${fs[@]}"; do sizes+=(-s "$s"); done
client=("$perf" eth --peer {PEER_ADDR} --port 5000 -n "$n" --seconds "$seconds" "${sizes[@]}")
failed=0

run() { # label file server...
	local label=$1 file=$2
	shift 2
	timeout 900 "$runner" --timeout 800 -- "$@" -- "${client[@]}" --label "$label" --stop \
		>"$out/$file" 2>&1
	local rc=$?
	[ $rc -eq 0 ] || [ $rc -eq 77 ] || failed=1
	return $rc
}

gpu_ok=0
if [ -x "$BUILD/examples/eth_udp_echo" ]; then
	# Packet slots in GPU memory (the engine copies each frame in and out
	# with the copy engine) and in host memory the kernel maps (no copy).
	run "GPU kernel echo, slots in GPU memory" gpu "$BUILD/examples/eth_udp_echo" --iface {IFACE} \
		--port 5000 --mem gpu --require-gpu && gpu_ok=1
	run "GPU kernel echo, slots in host memory" gpu_host "$BUILD/examples/eth_udp_echo" --iface {IFACE} \
		--port 5000 --mem host --require-gpu
fi
run "CPU echo, same back end (eth_udp_echo-emu)" cpu "$BUILD/examples/eth_udp_echo-emu" --iface {IFACE} \
	--port 5000
run "kernel UDP socket echo (spinning)" socket "$sock" server-spin {ADDR} 5000

echo "| server | frame B | min us | median us | p99 us | echoes/s | lost |"
echo "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"
for f in gpu gpu_host cpu socket; do
	[ -f "$out/$f" ] || continue
	label=$(sed -n 's/.*kinet-perf eth: \(.*\) at [0-9.]*:[0-9]*, UDP.*/\1/p' "$out/$f" | head -1)
	awk -v l="$label" '$1 ~ /^\[b\]$/ && $2 ~ /^[0-9]+$/ && NF >= 9 {
		printf "| %s | %s | %s | %s | %s | %s | %s |\n", l, $2, $3, $4, $5, $7, $8 }' "$out/$f"
done
grep -h "floor:" "$out"/* | head -1 | sed "s/^\[b\] floor:/floor, same run:/"
[ $gpu_ok -eq 1 ] || echo "(no GPU kernel row: no GPU build, or no GPU here; see $out/gpu)"
echo "raw outputs: $out"
exit $failed
