#!/usr/bin/env bash
# Builds and runs the main demo, examples/put_signal_pingpong: the CUDA
# build on the GPU when there is one (nvidia-smi works and nvcc is found),
# else the host-emulated build (put_signal_pingpong-emu) on CPU threads
# against the software NIC.  Builds only the library and the demo, and
# without CUDA when there is no GPU to run it.  Extra arguments go to the
# demo.
set -euo pipefail

KINET_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD_DIR=${BUILD_DIR:-$KINET_ROOT/build}
# shellcheck source=scripts/deps.sh
. "$KINET_ROOT/scripts/deps.sh"

demo=put_signal_pingpong
gpu=0
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
	gpu=1
fi
if [ "$gpu" = 1 ]; then
	kinet_need_packages "${KINET_DEMO_PACKAGES[@]}" g++
	kinet_configure "$BUILD_DIR" -DKINET_CUDA=ON
	kinet_build "$BUILD_DIR" --target "$demo-emu"
	if grep -q '^KINET_CUDA_FOUND:INTERNAL=ON$' "$BUILD_DIR/CMakeCache.txt" &&
		kinet_build "$BUILD_DIR" --target "$demo"; then
		echo "kinet: running $demo on the GPU" >&2
		exec "$BUILD_DIR/examples/$demo" "$@"
	fi
	echo "kinet: a GPU is present but the build has no CUDA (nvcc not found); using host emulation" >&2
else
	kinet_need_packages "${KINET_DEMO_PACKAGES[@]}"
	kinet_configure "$BUILD_DIR" -DKINET_CUDA=OFF
	kinet_build "$BUILD_DIR" --target "$demo-emu"
	echo "kinet: no usable GPU; running $demo-emu (device API on CPU threads)" >&2
fi
exec "$BUILD_DIR/examples/$demo-emu" "$@"
