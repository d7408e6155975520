#!/usr/bin/env bash
# Fuzzes the software NIC with libFuzzer (tests/fuzz/) for SECONDS seconds:
#   scripts/fuzz.sh SECONDS [libFuzzer options...]
# Two targets share the time: fuzz_engine (QPs, RDMA; 2/3 of it, seeds in
# tests/fuzz/corpus/) and fuzz_eth (an Ethernet send queue on "lo"; 1/3,
# seeds in tests/fuzz/corpus_eth/; it needs root or CAP_NET_RAW, else it
# says SKIP and its share is not spent).
# Builds $FUZZ_BUILD_DIR (default build-fuzz/) with clang, ASan, UBSan and
# coverage, starts from the seeds (new inputs go to a scratch corpus, the
# repository's is left alone) and exits non-zero on a finding (the
# crashing input is written to $FUZZ_BUILD_DIR/findings/).  libFuzzer's
# logs go to $FUZZ_BUILD_DIR/fuzz.log and fuzz_eth.log; the output ends in
# one line, "fuzz: N inputs in S s, F findings (per target)" (test.sh reads
# it; N and F summed), after a log's tail when there is a finding or
# libFuzzer failed.  A slow input is
# not a finding: slow units are not reported, and any slow-unit-* file
# (-report_slow_units given) is moved to $FUZZ_BUILD_DIR/slow-units/.
# Exits 77 with the reason when clang's libFuzzer cannot be had here.
set -euo pipefail

KINET_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SECONDS_WANTED=${1:?usage: scripts/fuzz.sh SECONDS [libFuzzer options...]}
shift
FUZZ_BUILD_DIR=${FUZZ_BUILD_DIR:-$KINET_ROOT/build-fuzz}
# shellcheck source=scripts/deps.sh
. "$KINET_ROOT/scripts/deps.sh"

kinet_need_packages "${KINET_BUILD_PACKAGES[@]}" || true
if ! command -v clang >/dev/null 2>&1; then
	kinet_need_packages clang >/dev/null 2>&1 || true
fi
if command -v clang >/dev/null 2>&1 &&
	! echo 'int LLVMFuzzerTestOneInput(const char *d, long n) { return 0; }' |
		clang -x c -fsanitize=fuzzer -o /dev/null - >/dev/null 2>&1; then
	# Debian ships libFuzzer in the compiler-rt package of the clang version.
	v=$(clang -dumpversion | cut -d. -f1)
	kinet_need_packages "libclang-rt-$v-dev" >/dev/null 2>&1 || true
fi
if ! command -v clang >/dev/null 2>&1 ||
	! echo 'int LLVMFuzzerTestOneInput(const char *d, long n) { return 0; }' |
		clang -x c -fsanitize=fuzzer -o /dev/null - >/dev/null 2>&1; then
	echo "SKIP: fuzzing needs clang with libFuzzer (apt-get install clang libclang-rt-dev)"
	exit 77
fi

FUZZ_BUILD_DIR=$(mkdir -p "$FUZZ_BUILD_DIR" && cd "$FUZZ_BUILD_DIR" && pwd)
flags="-fsanitize=address,undefined,fuzzer-no-link -fno-sanitize-recover=undefined -fno-omit-frame-pointer -g"
cmake -S "$KINET_ROOT" -B "$FUZZ_BUILD_DIR" -DCMAKE_C_COMPILER=clang -DKINET_CUDA=OFF -DKINET_FUZZ=ON \
	-DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_FLAGS="$flags" >/dev/null
cmake --build "$FUZZ_BUILD_DIR" --target fuzz_engine fuzz_eth -j "$(nproc)"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$FUZZ_BUILD_DIR/findings"
# Leaks are checked by the sanitizer run of the test suite; here they would
# only report the harness's persistent contexts.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
# From the scratch directory: crash handlers of some libfabric providers
# drop files in the current one.
cd "$work"
eth_seconds=$((SECONDS_WANTED / 3))
[ "$eth_seconds" -ge 1 ] || eth_seconds=1
engine_seconds=$((SECONDS_WANTED - eth_seconds))
[ "$engine_seconds" -ge 1 ] || engine_seconds=1
echo "fuzz: $SECONDS_WANTED s of libFuzzer ($engine_seconds s fuzz_engine, $eth_seconds s fuzz_eth), logs in $FUZZ_BUILD_DIR/*.log"

rc=0
total_inputs=0
total_findings=0
total_slow=0
per_target=()
# fuzz_target NAME SECONDS SEEDS LOG [libFuzzer options...]: one run.
fuzz_target() {
	local name=$1 secs=$2 seeds=$3 log=$4 start seconds trc=0 findings slow inputs skip
	shift 4
	mkdir -p "$work/$name"
	# Findings of earlier runs stay; this run's are the files newer than this.
	touch "$work/$name.start"
	start=$(date +%s)
	# -report_slow_units: an input slower than this many seconds is reported
	# and written to findings/ as slow-unit-*, which is no bug; one that hangs
	# is caught by -timeout (a timeout-* finding).
	"$FUZZ_BUILD_DIR/tests/fuzz/$name" -max_total_time="$secs" -timeout=60 -rss_limit_mb=8192 \
		-report_slow_units=1000000 -print_final_stats=1 -artifact_prefix="$FUZZ_BUILD_DIR/findings/" "$@" \
		"$work/$name" "$seeds" >"$log" 2>&1 || trc=$?
	seconds=$(($(date +%s) - start))
	skip=$(sed -n 's/^SKIP: *//p' "$log" | head -n 1)
	if [ -n "$skip" ] && [ "$trc" -eq 0 ]; then
		echo "fuzz: $name skipped: $skip"
		per_target+=("$name skipped: $skip")
		return
	fi

	slow=$(find "$FUZZ_BUILD_DIR/findings" -maxdepth 1 -type f -name 'slow-unit-*' | wc -l)
	if [ "$slow" -gt 0 ]; then
		mkdir -p "$FUZZ_BUILD_DIR/slow-units"
		find "$FUZZ_BUILD_DIR/findings" -maxdepth 1 -type f -name 'slow-unit-*' \
			-exec mv -f {} "$FUZZ_BUILD_DIR/slow-units/" \;
	fi
	findings=$(find "$FUZZ_BUILD_DIR/findings" -maxdepth 1 -type f -newer "$work/$name.start" | wc -l)
	# The final stats' count, else (a crash can end the run before them) the
	# last status line's "#N".
	inputs=$(sed -n 's/^stat::number_of_executed_units: *\([0-9]*\).*/\1/p' "$log" | tail -n 1)
	if [ -z "$inputs" ]; then
		inputs=$(sed -n 's/^#\([0-9][0-9]*\)[[:space:]].*/\1/p' "$log" | tail -n 1)
	fi
	if [ "$findings" -gt 0 ] || [ "$trc" -ne 0 ]; then
		echo "fuzz: $name: libFuzzer's log ends ($log):"
		tail -n 60 "$log"
		find "$FUZZ_BUILD_DIR/findings" -maxdepth 1 -type f -newer "$work/$name.start" -printf 'fuzz: finding %p\n'
	fi
	if [ "$slow" -gt 0 ]; then
		echo "fuzz: $name: $slow slow input(s), not findings, in $FUZZ_BUILD_DIR/slow-units/"
	fi
	local status=""
	[ "$trc" -eq 0 ] || status=", libFuzzer exit status $trc"
	per_target+=("$name ${inputs:-0} inputs/$findings findings in $seconds s$status")
	total_inputs=$((total_inputs + ${inputs:-0}))
	total_findings=$((total_findings + findings))
	total_slow=$((total_slow + slow))
	if [ "$trc" -eq 0 ] && [ "$findings" -gt 0 ]; then
		trc=1
	fi
	[ "$rc" -ne 0 ] || rc=$trc
}

t0=$(date +%s)
fuzz_target fuzz_engine "$engine_seconds" "$KINET_ROOT/tests/fuzz/corpus" "$FUZZ_BUILD_DIR/fuzz.log" "$@"
fuzz_target fuzz_eth "$eth_seconds" "$KINET_ROOT/tests/fuzz/corpus_eth" "$FUZZ_BUILD_DIR/fuzz_eth.log" "$@"
detail=$(
	IFS=';'
	echo "${per_target[*]}"
)
status=""
[ "$rc" -eq 0 ] || status=" (exit status $rc)"
echo "fuzz: $total_inputs inputs in $(($(date +%s) - t0)) s, $total_findings findings$status (${detail//;/; })"
exit "$rc"
