#!/usr/bin/env bash
# Fuzzes the software NIC with libFuzzer (tests/fuzz/) for SECONDS seconds:
#   scripts/fuzz.sh SECONDS [libFuzzer options...]
# Builds $FUZZ_BUILD_DIR (default build-fuzz/) with clang, ASan, UBSan and
# coverage, starts from the seeds in tests/fuzz/corpus/ (new inputs go to a
# scratch corpus, the repository's is left alone) and exits non-zero on a
# finding (the crashing input is written to $FUZZ_BUILD_DIR/findings/).
# libFuzzer's log goes to $FUZZ_BUILD_DIR/fuzz.log; the output ends in one
# line, "fuzz: N inputs in S s, F findings" (test.sh reads it), after the
# log's tail when there is a finding or libFuzzer failed.  A slow input is
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
cmake --build "$FUZZ_BUILD_DIR" --target fuzz_engine -j "$(nproc)"

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
mkdir corpus
log=$FUZZ_BUILD_DIR/fuzz.log
# Findings of earlier runs stay; this run's are the files newer than this.
touch "$work/start"
echo "fuzz: $SECONDS_WANTED s of libFuzzer, its log in $log"
start=$(date +%s)
rc=0
# -report_slow_units: an input slower than this many seconds is reported
# and written to findings/ as slow-unit-*, which is no bug; one that hangs
# is caught by -timeout (a timeout-* finding).
"$FUZZ_BUILD_DIR/tests/fuzz/fuzz_engine" -max_total_time="$SECONDS_WANTED" -timeout=60 -rss_limit_mb=8192 \
	-report_slow_units=1000000 -print_final_stats=1 -artifact_prefix="$FUZZ_BUILD_DIR/findings/" "$@" corpus \
	"$KINET_ROOT/tests/fuzz/corpus" >"$log" 2>&1 || rc=$?
seconds=$(($(date +%s) - start))

slow=$(find "$FUZZ_BUILD_DIR/findings" -maxdepth 1 -type f -name 'slow-unit-*' | wc -l)
if [ "$slow" -gt 0 ]; then
	mkdir -p "$FUZZ_BUILD_DIR/slow-units"
	find "$FUZZ_BUILD_DIR/findings" -maxdepth 1 -type f -name 'slow-unit-*' \
		-exec mv -f {} "$FUZZ_BUILD_DIR/slow-units/" \;
fi
findings=$(find "$FUZZ_BUILD_DIR/findings" -maxdepth 1 -type f -newer "$work/start" | wc -l)
# The final stats' count, else (a crash can end the run before them) the
# last status line's "#N".
inputs=$(sed -n 's/^stat::number_of_executed_units: *\([0-9]*\).*/\1/p' "$log" | tail -n 1)
if [ -z "$inputs" ]; then
	inputs=$(sed -n 's/^#\([0-9][0-9]*\)[[:space:]].*/\1/p' "$log" | tail -n 1)
fi
if [ "$findings" -gt 0 ] || [ "$rc" -ne 0 ]; then
	echo "fuzz: libFuzzer's log ends ($log):"
	tail -n 60 "$log"
	find "$FUZZ_BUILD_DIR/findings" -maxdepth 1 -type f -newer "$work/start" -printf 'fuzz: finding %p\n'
fi
if [ "$slow" -gt 0 ]; then
	echo "fuzz: $slow slow input(s), not findings, in $FUZZ_BUILD_DIR/slow-units/"
fi
status=""
[ "$rc" -eq 0 ] || status=" (libFuzzer exit status $rc)"
echo "fuzz: ${inputs:-0} inputs in $seconds s, $findings findings$status"
if [ "$rc" -eq 0 ] && [ "$findings" -gt 0 ]; then
	rc=1
fi
exit "$rc"
