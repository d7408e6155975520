#!/bin/sh
# scripts/mlx5-selftest.sh where there is no ConnectX: it stops before any
# suite with exit 77 and one clear line saying why (no mlx5 device, and,
# with a library name that does not exist, rdma-core not found).  Where an
# mlx5 port is usable, skipped: the self-test is then run by hand.
# Usage: mlx5_selftest_check.sh SELFTEST BUILD_DIR
set -u
SELFTEST=$1
BUILD=$2
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
failed=0

if "$BUILD/tools/kinet-info" --provider mlx5 >/dev/null 2>&1; then
	echo "SKIP: an mlx5 port is usable here: run $SELFTEST by hand"
	exit 77
fi

# check NAME WANT_REASON [ENV=VALUE...]
check() {
	name=$1
	want=$2
	shift 2
	env "$@" MLX5_SELFTEST_LOG="$TMP/log" sh "$SELFTEST" -b "$BUILD" >"$TMP/out" 2>&1
	rc=$?
	sed 's/^/    /' "$TMP/out"
	if [ $rc -ne 77 ]; then
		echo "FAIL: $name: exit status $rc, expected 77"
		failed=1
	elif ! grep -q "^mlx5-selftest: stop: " "$TMP/out"; then
		echo "FAIL: $name: no 'mlx5-selftest: stop:' line"
		failed=1
	elif ! grep "^mlx5-selftest: stop: " "$TMP/out" | grep -Eq "$want"; then
		echo "FAIL: $name: the reason is not /$want/"
		failed=1
	elif grep -q "suite" "$TMP/out" "$TMP/log"; then
		echo "FAIL: $name: it went on to the test suites"
		failed=1
	else
		echo "ok: $name"
	fi
}

check "no device" "no mlx5 device|rdma-core not found|without rdma-core's headers|no active mlx5 port"
check "no libibverbs" "rdma-core not found: cannot load libkinet-no-such-verbs.so.1|without rdma-core's headers" \
	KINET_MLX5_LIBIBVERBS=libkinet-no-such-verbs.so.1
exit $failed
