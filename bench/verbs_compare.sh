#!/usr/bin/env bash
# bench/verbs_compare.sh: the verbs front door's cost, in one run: perftest's
# ib_write_lat and ib_write_bw over kinet's libibverbs (kinet-verbs) beside
# kinet-perf's own CPU-initiated write over the same carrier (two processes
# of this host: the node carrier), and the floors kinet-perf measures in the
# same run (rank-to-rank round trip through a shared word; memcpy).
#
# Usage: BUILD=build bench/verbs_compare.sh [ITERS] [SIZES]
#
#   ITERS  iterations per size (default 1000; bandwidth runs use ITERS too)
#   SIZES  comma list (default 64,256,1K,4K,16K,64K,256K,1M,4M)
#
# What is compared: ib_write_lat's t_typical (perftest's median of half a
# ping-pong: a write, the peer seeing it and writing back) against
# kinet-perf write --lat --initiator cpu's median (post to completion of one
# write: the request reaches the target's engine, the data is placed, the
# answer comes back); ib_write_bw's average against kinet-perf write --bw
# --initiator cpu (window 64).  Both sides use one QP, one posting thread
# and one engine thread per process.  Prints a markdown table and keeps the
# raw outputs in a folder it names.
set -u
iters=${1:-1000}
sizes=${2:-64,256,1K,4K,16K,64K,256K,1M,4M}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-$ROOT/build}
perf=$BUILD/tools/kinet-perf
run2=$BUILD/tools/kinetrun
kv=$BUILD/tools/kinet-verbs
for f in "$perf" "$run2" "$kv"; do
	[ -x "$f" ] || {
		echo "bench/verbs_compare.sh: $f missing (BUILD=dir)" >&2
		exit 2
	}
done
for p in ib_write_lat ib_write_bw; do
	command -v $p >/dev/null || {
		echo "bench/verbs_compare.sh: $p missing (apt-get install perftest)" >&2
		exit 2
	}
done
out=$(mktemp -d /tmp/kinet-verbs-compare.XXXXXX)
port=19100

bytes() {
	case "$1" in
	*K) echo $((${1%K} * 1024)) ;;
	*M) echo $((${1%M} * 1048576)) ;;
	*) echo "$1" ;;
	esac
}

# perftest SERVER+CLIENT; the client's output in $out/$2.
perftest() {
	local name=$1
	shift
	port=$((port + 1))
	timeout 300 "$kv" "$@" -F -p $port >"$out/$name.server" 2>&1 &
	local s=$!
	for _ in $(seq 100); do
		timeout 300 "$kv" "$@" -F -p $port localhost >"$out/$name" 2>&1 && break
		grep -q "Couldn.t connect" "$out/$name" || break
		sleep 0.1
	done
	wait $s
}

list=""
for s in ${sizes//,/ }; do
	list="$list${list:+,}$(bytes "$s")"
done

"$run2" -n 2 -- "$perf" write --lat --initiator cpu -s "$list" -n "$iters" >"$out/kinet_lat" 2>&1
"$run2" -n 2 -- "$perf" write --bw --initiator cpu -s "$list" -n "$iters" --no-floors >"$out/kinet_bw" 2>&1
for s in ${list//,/ }; do
	perftest "lat_$s" ib_write_lat -s "$s" -n "$iters"
	perftest "bw_$s" ib_write_bw -s "$s" -n "$iters"
done

echo "# bench/verbs_compare.sh $iters iterations; $(nproc) cores; $(date -u +%Y-%m-%dT%H:%MZ)"
echo "# raw outputs: $out"
grep -E '^\[0\] # +(rank 0<->rank 1 round trip|remote write.s 4 handoffs|memcpy)' "$out/kinet_lat" |
	sed 's/^\[0\] # */floor: /'
echo
echo "| bytes | ib_write_lat median us (p99) | kinet-perf write lat median us (p5-p95) | ratio | ib_write_bw MiB/s | kinet-perf write bw MiB/s | ratio |"
echo "| ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
for s in ${list//,/ }; do
	pl=$(awk -v s="$s" '$1 == s && NF >= 9 {print $5, $8}' "$out/lat_$s")
	pb=$(awk -v s="$s" '$1 == s && NF >= 4 {print $4}' "$out/bw_$s")
	kl=$(awk -v s="$s" '$1 == "[0]" && $2 == "write" && $3 == "lat" && $6 == s {print $15, $16, $17}' "$out/kinet_lat")
	kb=$(awk -v s="$s" '$1 == "[0]" && $2 == "write" && $3 == "bw" && $6 == s {print $18}' "$out/kinet_bw")
	set -- $pl
	plm=${1:--} pl99=${2:--}
	set -- $kl
	klm=${1:--} kl5=${2:--} kl95=${3:--}
	lr=$(awk -v a="$plm" -v b="$klm" 'BEGIN { if (a + 0 > 0 && b + 0 > 0) printf "%.2f", a / b; else print "-" }')
	# kinet-perf reports GB/s (1e9 B/s); perftest MiB/s.
	kbm=$(awk -v g="$kb" 'BEGIN { if (g + 0 > 0) printf "%.0f", g * 1e9 / 1048576; else print "-" }')
	br=$(awk -v a="${pb:--}" -v b="$kbm" 'BEGIN { if (a + 0 > 0 && b + 0 > 0) printf "%.2f", a / b; else print "-" }')
	echo "| $s | $plm ($pl99) | $klm ($kl5-$kl95) | $lr | ${pb:--} | $kbm | $br |"
done
