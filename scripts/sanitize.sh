#!/usr/bin/env bash
# Builds the host library and tests with a sanitizer and runs the host suite:
#   scripts/sanitize.sh asan|tsan [ctest args...]
# asan: AddressSanitizer + UndefinedBehaviorSanitizer + LeakSanitizer, in
# build-asan/; tsan: ThreadSanitizer, in build-tsan/ (suppressions with
# their reasons: tests/tsan.supp).  Without CUDA; the GPU, netns, perf and
# format tests, the install test (which builds the examples against an
# uninstrumented toolchain) and Debian's verbs programs (label programs:
# uninstrumented binaries cannot load a sanitized libibverbs) and the crash
# test (label nosan: a sanitizer handles SIGSEGV itself) are left to the
# plain run.  Exits with ctest's status.
set -euo pipefail

KINET_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
kind=${1:?usage: scripts/sanitize.sh asan|tsan [ctest args...]}
shift
# shellcheck source=scripts/deps.sh
. "$KINET_ROOT/scripts/deps.sh"
kinet_need_packages "${KINET_BUILD_PACKAGES[@]}"

case "$kind" in
asan)
	flags="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
	export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0:detect_stack_use_after_return=0}
	export LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$KINET_ROOT/tests/lsan.supp}
	export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
	;;
tsan)
	# GCC warns that TSan does not model atomic_thread_fence: the
	# publications that rely on a fence alone are listed, with why they
	# are safe, in tests/tsan.supp.
	flags="-fsanitize=thread -fno-omit-frame-pointer -Wno-tsan"
	export TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1:history_size=7:suppressions=$KINET_ROOT/tests/tsan.supp}
	;;
*)
	echo "scripts/sanitize.sh: unknown sanitizer '$kind' (asan or tsan)" >&2
	exit 2
	;;
esac

dir=${SANITIZE_BUILD_DIR:-$KINET_ROOT/build-$kind}
# Sanitized engines are several times slower: longer transport timeouts
# for the tests' QP pairs (tests/harness/kt_host.h).
export KT_TIMEOUT_SCALE=${KT_TIMEOUT_SCALE:-5}
cmake -S "$KINET_ROOT" -B "$dir" -DKINET_CUDA=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_FLAGS="$flags" -DCMAKE_CXX_FLAGS="$flags" \
	-DCMAKE_EXE_LINKER_FLAGS="$flags" -DCMAKE_SHARED_LINKER_FLAGS="$flags" >/dev/null
cmake --build "$dir" -j "$(nproc)"
cd "$dir"
exec ctest --output-on-failure -j "${KINET_TEST_JOBS:-2}" -LE 'gpu|netns|perf|format|install|programs|nosan' "$@"
