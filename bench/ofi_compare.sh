#!/usr/bin/env bash
# bench/ofi_compare.sh: kinet's remote path beside libfabric's own, in one
# run: latency and message rate of 8-byte writes between two ranks over the
# ofi carrier (kinet-perf, two ranks) and of 8-byte messages over the same
# libfabric provider (kinet-fi-pingpong), then the ratios.
#
# Usage: BUILD=build-host bench/ofi_compare.sh [shm|tcp] [ITERS]
#
#   shm  two processes of this host (kinetrun -n 2), KINET_OFI_PROVIDER=shm
#   tcp  two network namespaces joined by a veth pair (tests/netns/run.sh,
#        root only), tcp;ofi_rxm: the carrier's "other host" case
# kinet's latency is post to completion of a remote write (the request and
# the target's answer cross the fabric); libfabric's is the round trip of a
# message and its echo.  Rate: kinet-perf write --rate (one poster, window
# 64; from the GPU also 16 QPs of 32 posting threads, with one and with four
# engine threads) against kinet-fi-pingpong's windowed fi_send (window 64).
set -u
mode=${1:-shm}
iters=${2:-5000}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-$ROOT/build-host}
perf=$BUILD/tools/kinet-perf
fip=$BUILD/bench/kinet-fi-pingpong
run2=$BUILD/tools/kinetrun
for f in "$perf" "$fip" "$run2"; do
	[ -x "$f" ] || {
		echo "bench/ofi_compare.sh: $f missing (build with libfabric; BUILD=dir)" >&2
		exit 2
	}
done
out=$(mktemp -d /tmp/kinet-ofi-compare.XXXXXX)
trap 'rm -rf "$out"' EXIT

case "$mode" in
shm)
	export KINET_OFI_PROVIDER=shm
	two() { "$run2" -n 2 -- env KINET_TRANSPORT=ofi "$@"; }
	;;
tcp)
	export KINET_OFI_PROVIDER="tcp;ofi_rxm"
	two() { "$ROOT/tests/netns/run.sh" --timeout 300 "$@"; }
	;;
*)
	echo "usage: bench/ofi_compare.sh [shm|tcp] [ITERS]" >&2
	exit 2
	;;
esac

echo "# bench/ofi_compare.sh $mode, $iters iterations, $(nproc) cores, commit $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null)"
set -o pipefail
# A step that fails ends the run with its status (77: tcp skipped, where
# tests/netns/run.sh printed why).
two "$fip" -s 8 -n "$iters" --msgs $((iters * 20)) | tee "$out/fi" || exit $?
two "$perf" write --lat -s 8 -n "$iters" --initiator both | tee "$out/lat" || exit $?
two "$perf" write --rate -s 8 -n $((iters * 4)) --initiator both --no-floors | tee "$out/rate" || exit $?
# The GPU posts into one QP at ~0.5 M/s on its own (32 threads sharing it,
# a system fence each): 16 QPs, so the remote path is what is measured.
# Host emulation runs at most 256 device threads: 16 per QP there.
posters=32
grep -q "HOST EMULATION" "$out/lat" && posters=16
two "$perf" write --rate -s 8 -t $posters -b 16 -q 16 -n "$iters" --initiator gpu --no-floors |
	tee "$out/rate16" || exit $?
# The same with four engine threads per rank: remote QPs share thread 0,
# so the rate should hold (spread over threads it fell 3-5x).
two "$perf" write --rate -s 8 -t $posters -b 16 -q 16 -n "$iters" --initiator gpu --no-floors \
	--engine-threads 4 | tee "$out/rate16e4" || exit $?

# Table rows of rank 0 (kinetrun prefixes "[0] ", run.sh "[rank 0] ").
row() { sed -e 's/^\[[a-z ]*0\] //' "$out/$1" | awk -v m="$2" -v i="$3" '$1 == "write" && $2 == m && $3 == i'; }
fi_lat=$(sed -n 's/.*fi lat 8 B round trip: median_us \([0-9.]*\).*/\1/p' "$out/fi")
fi_rate=$(sed -n 's/.*fi rate 8 B: \([0-9.]*\) M msgs.*/\1/p' "$out/fi")
echo "# kinet over ofi ($KINET_OFI_PROVIDER) against libfabric's own, same run:"
printf '%-37s %12s %12s %8s\n' "measure" "kinet" "libfabric" "ratio"
for init in gpu cpu; do
	l=$(row lat lat $init | awk '{print $14}')
	r=$(row rate rate $init | awk '{print $18}')
	[ -n "$l" ] && [ -n "$fi_lat" ] &&
		awk -v k="$l" -v f="$fi_lat" -v w="lat 8 B us ($init-initiated)" \
			'BEGIN { printf "%-37s %12s %12s %7.2fx\n", w, k, f, k / f }'
	[ -n "$r" ] && [ -n "$fi_rate" ] &&
		awk -v k="$r" -v f="$fi_rate" -v w="rate 8 B M/s ($init-initiated)" \
			'BEGIN { printf "%-37s %12s %12s %7.0f%%\n", w, k, f, 100 * k / f }'
done
for f in "rate16:16 QPs" "rate16e4:16 QPs, 4 engines"; do
	r=$(row "${f%%:*}" rate gpu | awk '{print $18}')
	[ -n "$r" ] && [ -n "$fi_rate" ] &&
		awk -v k="$r" -v f="$fi_rate" -v w="rate 8 B M/s (gpu, ${f#*:})" \
			'BEGIN { printf "%-37s %12s %12s %7.0f%%\n", w, k, f, 100 * k / f }'
done

exit 0
