#!/usr/bin/env bash
# Builds kinet and runs its tests with ctest; exits with ctest's status.
# The build has CUDA when nvcc is found (GPU tests are built, and skipped
# without a GPU).  After ctest's summary it lists the skipped tests with
# the reason each printed.
#   KINET_TEST_JOBS   parallel tests (default 2; set 1 if a timing-sensitive
#                     test misbehaves on a loaded machine)
#   BUILD_DIR         build directory (default build/)
#   KINET_TEST_QUICK  1: only the ctest run below (no fuzz, no sanitizers)
# Before it, unless KINET_TEST_QUICK=1 or ctest arguments are given: a
# short fuzz run (scripts/fuzz.sh; skipped where clang's libFuzzer cannot
# be had) and the host suite under ASan+UBSan and under ThreadSanitizer
# (scripts/sanitize.sh), each in its own build directory; any failure
# there fails the script.  This is what CI (.ci/run) runs.
# Extra arguments go to ctest (e.g. -R wire, -L host).
set -euo pipefail

KINET_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD_DIR=${BUILD_DIR:-$KINET_ROOT/build}
KINET_TEST_JOBS=${KINET_TEST_JOBS:-2}
# shellcheck source=scripts/deps.sh
. "$KINET_ROOT/scripts/deps.sh"

kinet_need_packages "${KINET_TEST_PACKAGES[@]}"
# KINET_CUDA=ON: with CUDA when nvcc is there, also in a build directory
# the demo configured without it.
kinet_configure "$BUILD_DIR" -DKINET_CUDA=ON
kinet_build "$BUILD_DIR"

if [ "${KINET_TEST_QUICK:-0}" != 1 ] && [ "$#" -eq 0 ]; then
	frc=0
	"$KINET_ROOT/scripts/fuzz.sh" "${KINET_FUZZ_SMOKE_SECONDS:-60}" || frc=$?
	if [ "$frc" -ne 0 ] && [ "$frc" -ne 77 ]; then
		echo "test.sh: the fuzz run failed ($frc)" >&2
		exit "$frc"
	fi
	"$KINET_ROOT/scripts/sanitize.sh" asan
	"$KINET_ROOT/scripts/sanitize.sh" tsan
fi

cd "$BUILD_DIR"
mkdir -p Testing
rc=0
ctest --output-on-failure -j "$KINET_TEST_JOBS" "$@" | tee Testing/ctest-output.txt || rc=$?
kinet_skip_reasons Testing/ctest-output.txt Testing/Temporary/LastTest.log
exit "$rc"
