#!/usr/bin/env bash
# Builds kinet and runs its tests with ctest; exits with ctest's status.
# The build has CUDA when nvcc is found (GPU tests are built, and skipped
# without a GPU).  After ctest's summary it lists the skipped tests with
# the reason each printed.
#   KINET_TEST_JOBS   parallel tests (default 2; set 1 if a timing-sensitive
#                     test misbehaves on a loaded machine)
#   BUILD_DIR         build directory (default build/)
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

cd "$BUILD_DIR"
mkdir -p Testing
rc=0
ctest --output-on-failure -j "$KINET_TEST_JOBS" "$@" | tee Testing/ctest-output.txt || rc=$?
kinet_skip_reasons Testing/ctest-output.txt Testing/Temporary/LastTest.log
exit "$rc"
