#!/usr/bin/env bash
# Builds kinet and runs its tests with ctest; exits with ctest's status.
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

kinet_need_packages "${KINET_BUILD_PACKAGES[@]}" clang-format
kinet_build "$BUILD_DIR"

cd "$BUILD_DIR"
# ctest prints the summary line ("N% tests passed, ...") last; its exit
# status is the script's.
exec ctest --output-on-failure -j "$KINET_TEST_JOBS" "$@"
