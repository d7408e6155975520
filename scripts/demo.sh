#!/usr/bin/env bash
# Builds kinet and runs the main demo, examples/put_signal_pingpong: the CUDA
# build on the GPU when there is one (nvidia-smi works and the build has
# CUDA), else the host-emulated build (put_signal_pingpong-emu) on CPU
# threads against the software NIC.  Extra arguments go to the demo.
set -euo pipefail

KINET_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD_DIR=${BUILD_DIR:-$KINET_ROOT/build}
# shellcheck source=scripts/deps.sh
. "$KINET_ROOT/scripts/deps.sh"

kinet_need_packages "${KINET_BUILD_PACKAGES[@]}"
kinet_build "$BUILD_DIR"

demo=put_signal_pingpong
gpu=0
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
	gpu=1
fi
if [ "$gpu" = 1 ] && [ -x "$BUILD_DIR/examples/$demo" ]; then
	echo "kinet: running $demo on the GPU" >&2
	exec "$BUILD_DIR/examples/$demo" "$@"
fi
if [ "$gpu" = 1 ]; then
	echo "kinet: a GPU is present but the build has no CUDA (nvcc not found); using host emulation" >&2
else
	echo "kinet: no usable GPU; running $demo-emu (device API on CPU threads)" >&2
fi
if [ ! -x "$BUILD_DIR/examples/$demo-emu" ]; then
	echo "kinet: $BUILD_DIR/examples/$demo-emu was not built (is examples/$demo.cu there?)" >&2
	exit 1
fi
exec "$BUILD_DIR/examples/$demo-emu" "$@"
