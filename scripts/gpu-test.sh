#!/usr/bin/env bash
# GPU machine test run (no apt, no network; CUDA at /usr/local/cuda):
# configures build-gpu/ with CUDA, builds, runs the GPU tests (ctest -L gpu,
# four at a time), the host tests (ctest -LE gpu) and the main demo on the
# GPU.  Logs go to
# $OUT/ when OUT is set (else the current directory).  Exits non-zero if any
# step failed; every step runs regardless.
#   BUILD_DIR        build directory (default build-gpu/)
#   KINET_TEST_JOBS  parallel host tests (default 2)
#   KINET_CMAKE_ARGS extra cmake configure arguments
#   KINET_CTEST_TIMEOUT  per-test time limit in seconds (default 300)
#   KINET_GPU_LONG   1: also the soaks (ctest -L long)
set -uo pipefail

# Policy of the GPU machine: NVLink multicast stays off.
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1

KINET_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD_DIR=${BUILD_DIR:-$KINET_ROOT/build-gpu}
KINET_TEST_JOBS=${KINET_TEST_JOBS:-2}
LOG_DIR=${OUT:-.}
mkdir -p "$LOG_DIR"
LOG_DIR=$(cd "$LOG_DIR" && pwd)
NVCC=${NVCC:-/usr/local/cuda/bin/nvcc}
PATH="$(dirname "$NVCC"):$PATH"
export PATH

failed=()
# step NAME CMD...: runs CMD with output to the terminal and $LOG_DIR/NAME.log.
step() {
	local name=$1
	shift
	echo "=== $name: $*"
	local start=$SECONDS rc=0
	"$@" 2>&1 | tee "$LOG_DIR/$name.log" || rc=$?
	echo "=== $name: exit $rc ($((SECONDS - start)) s)"
	[ "$rc" -eq 0 ] || failed+=("$name")
	return "$rc"
}

{
	date -u
	uname -a
	nvidia-smi || true
	"$NVCC" --version || true
	cmake --version | head -1
} >"$LOG_DIR/gpu-env.log" 2>&1

# KINET_CMAKE_ARGS: extra configure arguments, e.g. -DCMAKE_PREFIX_PATH=DIR
# where DIR/include holds the headers the machine lacks: rdma/ (libfabric's:
# the ofi carrier) and infiniband/ (rdma-core's: the verbs front door and
# its GPU test, gpu_verbs_mlx5dv, which is not built without them).
# shellcheck disable=SC2086
if ! step configure cmake -S "$KINET_ROOT" -B "$BUILD_DIR" -DKINET_CUDA=ON -DCMAKE_CUDA_COMPILER="$NVCC" ${KINET_CMAKE_ARGS:-} ||
	! step build cmake --build "$BUILD_DIR" -j "$(nproc)"; then
	echo "gpu-test: FAILED: ${failed[*]}" | tee "$LOG_DIR/gpu-test-summary.log"
	exit 1
fi
if ! grep -q '^KINET_CUDA:BOOL=ON' "$BUILD_DIR/CMakeCache.txt"; then
	echo "gpu-test: the build has no CUDA (nvcc at $NVCC?)" | tee -a "$LOG_DIR/configure.log"
	failed+=(cuda)
fi

cd "$BUILD_DIR" || exit 1
CTEST_TIMEOUT=(--timeout "${KINET_CTEST_TIMEOUT:-300}")
# Four at a time: tests side by side keep the copy engines busy, which is
# what showed that a cudaMemcpy could land after the operation posted
# behind it (docs/architecture/soft-nic.md).
step ctest-gpu ctest -L gpu --output-on-failure --no-tests=error -j 4 "${CTEST_TIMEOUT[@]}"
# The long mode: the soaks (label long; examples/transceiver's 10 million
# requests), minutes each.
if [ "${KINET_GPU_LONG:-0}" = 1 ]; then
	step ctest-long ctest -L long --output-on-failure --no-tests=error "${CTEST_TIMEOUT[@]}"
fi
# The format check is left to the Debian CI image: clang-format output differs
# between versions, and this machine's is not the reference one.
step ctest-host ctest -LE '^(gpu|format|long)$' --output-on-failure -j "$KINET_TEST_JOBS" "${CTEST_TIMEOUT[@]}"
if [ -x examples/put_signal_pingpong ]; then
	step demo timeout 300 examples/put_signal_pingpong
else
	echo "gpu-test: examples/put_signal_pingpong was not built" | tee "$LOG_DIR/demo.log"
	failed+=(demo)
fi

if [ ${#failed[@]} -ne 0 ]; then
	echo "gpu-test: FAILED: ${failed[*]}" | tee "$LOG_DIR/gpu-test-summary.log"
	exit 1
fi
echo "gpu-test: all passed" | tee "$LOG_DIR/gpu-test-summary.log"
