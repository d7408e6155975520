#!/usr/bin/env bash
# Builds kinet and runs its tests with ctest.
# The build has CUDA when nvcc is found (GPU tests are built, and skipped
# without a GPU).  After ctest's summary it lists the skipped tests with
# the reason each printed.
#   KINET_TEST_JOBS   parallel tests (default 2; set 1 if a timing-sensitive
#                     test misbehaves on a loaded machine)
#   BUILD_DIR         build directory (default build/)
#   KINET_TEST_QUICK  1: only the build and the ctest run (no fuzz, no
#                     sanitizers)
# Unless KINET_TEST_QUICK=1 or ctest arguments are given, the ctest run has
# before it a short fuzz run (scripts/fuzz.sh; skipped where clang's
# libFuzzer cannot be had) and the host suite under ASan+UBSan and under
# ThreadSanitizer (scripts/sanitize.sh), each in its own build directory.
# Every step runs, whatever the earlier ones gave; at the end a table gives
# each step's result (pass, fail or skip), wall time and counts (tests
# passed of those run, fuzz inputs).  Exits 0 when no step failed, else
# the status of the first that did.  This is what CI (.ci/run) runs.
# Extra arguments go to ctest (e.g. -R wire, -L host).
set -uo pipefail

KINET_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD_DIR=${BUILD_DIR:-$KINET_ROOT/build}
KINET_TEST_JOBS=${KINET_TEST_JOBS:-2}
# shellcheck source=scripts/deps.sh
. "$KINET_ROOT/scripts/deps.sh"

LOGS=$(mktemp -d)
trap 'rm -rf "$LOGS"' EXIT

# One row per step: name, result, seconds, counts.
step_names=()
step_results=()
step_seconds=()
step_counts=()
first_failure=0

record() { # NAME RESULT SECONDS COUNTS [RC]
	step_names+=("$1")
	step_results+=("$2")
	step_seconds+=("$3")
	step_counts+=("$4")
	if [ "$2" = fail ] && [ "$first_failure" -eq 0 ]; then
		first_failure=${5:-1}
	fi
}

# "P/M tests passed[, F failed][, S skipped]" from a ctest run's output:
# the summary line ("N% tests passed, F tests failed out of M") gives M
# and F; the skipped ones (counted as passed there) are its ***Skipped
# lines.
ctest_counts() {
	local line total failed skipped
	line=$(grep -E '^[0-9]+% tests passed, [0-9]+ tests? failed out of [0-9]+' "$1" | tail -n 1)
	if [ -z "$line" ]; then
		echo "no ctest summary"
		return
	fi
	total=$(echo "$line" | sed -E 's/.* out of ([0-9]+).*/\1/')
	failed=$(echo "$line" | sed -E 's/.*, ([0-9]+) tests? failed.*/\1/')
	skipped=$(grep -c '\*\*\*Skipped' "$1")
	printf '%s/%s tests passed' $((total - failed - skipped)) "$total"
	[ "$failed" -eq 0 ] || printf ', %s failed' "$failed"
	[ "$skipped" -eq 0 ] || printf ', %s skipped' "$skipped"
	echo
}

# run_step NAME KIND CMD...: runs CMD with its output shown and kept,
# then records it.  KIND says how to count: ctest, fuzz or none.  Exit
# status 77 is a skip (the reason: the output's "SKIP: " line).
run_step() {
	local name=$1 kind=$2 t0 rc counts result out
	shift 2
	out=$LOGS/$name.txt
	echo "==== test.sh: $name"
	t0=$(date +%s)
	"$@" 2>&1 | tee "$out"
	rc=${PIPESTATUS[0]}
	case "$rc" in
	0) result=pass ;;
	77) result=skip ;;
	*) result=fail ;;
	esac
	case "$kind" in
	ctest) counts=$(ctest_counts "$out") ;;
	fuzz) counts=$(sed -n 's/^fuzz: \([0-9]* inputs\) in .*, \([0-9]* findings\).*/\1, \2/p' "$out" | tail -n 1) ;;
	*) counts="" ;;
	esac
	if [ "$result" = skip ]; then
		counts=$(sed -n 's/^.*SKIP: *//p' "$out" | head -n 1)
	elif [ "$result" = fail ] && [ "$kind" = none ]; then
		counts="exit status $rc"
	fi
	record "$name" "$result" $(($(date +%s) - t0)) "$counts" "$rc"
}

# shellcheck disable=SC2317 # build and main_ctest run through run_step
build() {
	kinet_need_packages "${KINET_TEST_PACKAGES[@]}" || return
	# KINET_CUDA=ON: with CUDA when nvcc is there, also in a build
	# directory the demo configured without it.
	kinet_configure "$BUILD_DIR" -DKINET_CUDA=ON || return
	kinet_build "$BUILD_DIR"
}

# shellcheck disable=SC2317
main_ctest() {
	cd "$BUILD_DIR" && mkdir -p Testing || return
	ctest --output-on-failure -j "$KINET_TEST_JOBS" "$@"
}

run_step build none build
built=${step_results[0]}

if [ "${KINET_TEST_QUICK:-0}" != 1 ] && [ "$#" -eq 0 ]; then
	run_step fuzz fuzz "$KINET_ROOT/scripts/fuzz.sh" "${KINET_FUZZ_SMOKE_SECONDS:-60}"
	run_step asan ctest "$KINET_ROOT/scripts/sanitize.sh" asan
	run_step tsan ctest "$KINET_ROOT/scripts/sanitize.sh" tsan
else
	why="KINET_TEST_QUICK=1"
	[ "$#" -eq 0 ] || why="ctest arguments given"
	for s in fuzz asan tsan; do
		record "$s" skip 0 "$why"
	done
fi

if [ "$built" = pass ]; then
	run_step ctest ctest main_ctest "$@"
	mkdir -p "$BUILD_DIR/Testing"
	cp "$LOGS/ctest.txt" "$BUILD_DIR/Testing/ctest-output.txt"
	if [ -f "$BUILD_DIR/Testing/Temporary/LastTest.log" ]; then
		kinet_skip_reasons "$BUILD_DIR/Testing/ctest-output.txt" "$BUILD_DIR/Testing/Temporary/LastTest.log"
	fi
else
	record ctest skip 0 "the build failed"
fi

echo
echo "test.sh summary:"
printf '  %-6s %-6s %7s  %s\n' step result time counts
for i in "${!step_names[@]}"; do
	printf '  %-6s %-6s %6ss  %s\n' "${step_names[$i]}" "${step_results[$i]}" "${step_seconds[$i]}" \
		"${step_counts[$i]}"
done
exit "$first_failure"
