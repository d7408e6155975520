#!/bin/sh
# kinet as a user gets it: installs BUILD into a fresh prefix, checks what
# is there (the library under its soname, headers, tools, kinet.pc, the
# CMake package), then builds the examples from a copy outside the source
# tree against the installed kinet only, with CMake (find_package) and with
# pkg-config (examples/Makefile), and runs them.
# Usage: test_install.sh BUILD_DIR SOURCE_DIR
set -u
BUILD=$1
SRC=$(cd "$2" && pwd)
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
P=$TMP/prefix
failed=0

fail() {
	echo "FAIL: $*"
	failed=1
}

# step NAME CMD...: runs CMD quietly, shows its output when it fails.
step() {
	name=$1
	shift
	if "$@" >"$TMP/log" 2>&1; then
		echo "ok: $name"
	else
		fail "$name"
		sed 's/^/    /' "$TMP/log"
	fi
}

for tool in cmake make pkg-config readelf; do
	if ! command -v "$tool" >/dev/null 2>&1; then
		echo "SKIP: $tool is not installed"
		exit 77
	fi
done

step "cmake --install" cmake --install "$BUILD" --prefix "$P"
for f in lib/libkinet.so lib/libkinet.so.0 include/kinet/kinet.h include/kinet/device.cuh \
	include/kinet/device/rma.cuh include/kinet/device/impl/forms.cuh include/kinet/syndrome.h bin/kinetrun bin/kinet-info bin/kinet-perf \
	lib/pkgconfig/kinet.pc lib/cmake/kinet/kinetConfig.cmake lib/cmake/kinet/kinetConfigVersion.cmake; do
	[ -e "$P/$f" ] || fail "not installed: $f"
done
readelf -d "$P/lib/libkinet.so" | grep -q 'SONAME.*\[libkinet\.so\.0\]' || fail "soname is not libkinet.so.0"
step "installed kinet-info runs" "$P/bin/kinet-info" --version

cp -r "$SRC/examples" "$TMP/examples"

# CMake: find_package(kinet) from the prefix.
step "cmake configure" cmake -S "$TMP/examples" -B "$TMP/cmake" -DCMAKE_PREFIX_PATH="$P" \
	-DCMAKE_EXPORT_COMPILE_COMMANDS=ON
step "cmake build" cmake --build "$TMP/cmake" -j 2
if grep -q "$SRC" "$TMP/cmake/compile_commands.json" 2>/dev/null; then
	fail "a compile command reaches into the source tree $SRC"
fi
ldd "$TMP/cmake/hello_host" | grep -q "$P/lib/libkinet.so.0" || fail "hello_host does not use the installed libkinet"
step "examples (ctest)" sh -c "cd '$TMP/cmake' && ctest --output-on-failure"

# pkg-config: examples/Makefile.
step "make (pkg-config)" make -C "$TMP/examples" PKG_CONFIG_PATH="$P/lib/pkgconfig"
cd "$TMP/examples" || exit 1
step "hello_host" ./hello_host
step "error_handling" ./error_handling
step "device_put-emu" ./device_put-emu
step "put_signal_pingpong-emu" ./put_signal_pingpong-emu 200
step "mesh_write (kinetrun -n 2)" "$P/bin/kinetrun" -n 2 --timeout 50 -- ./mesh_write

exit $failed
