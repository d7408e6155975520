#!/bin/sh
# The layer check (scripts/check-layers.py) finds a real call graph and
# fails on a cross-layer call: a tree of two files is compiled where core
# calls into a provider (must fail, naming the call), then where the
# provider calls core (must pass), then an object directory with no
# library objects (must fail: an empty call graph proves nothing); and the
# include rule: a provider including core's internal.h instead of driver.h
# must fail, naming the file, while driver.h passes.
#   layers_check.sh PYTHON CHECK_LAYERS_PY CC
set -u
PY=$1
CHECK=$2
CC=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0

make_tree() { # CORE_BODY PROVIDER_BODY
	rm -rf "$tmp/root"
	mkdir -p "$tmp/root/src/core" "$tmp/root/src/provider/fake" \
		"$tmp/root/build/src/CMakeFiles/kinet_objects.dir/core" \
		"$tmp/root/build/src/CMakeFiles/kinet_objects.dir/provider/fake"
	printf '%s\n' "$1" >"$tmp/root/src/core/core_part.c"
	printf '%s\n' "$2" >"$tmp/root/src/provider/fake/fake_part.c"
	"$CC" -c "$tmp/root/src/core/core_part.c" \
		-o "$tmp/root/build/src/CMakeFiles/kinet_objects.dir/core/core_part.c.o" &&
		"$CC" -c "$tmp/root/src/provider/fake/fake_part.c" \
			-o "$tmp/root/build/src/CMakeFiles/kinet_objects.dir/provider/fake/fake_part.c.o"
}

expect() { # WHAT WANT_RC PATTERN
	"$PY" "$CHECK" --root "$tmp/root" --objects "$tmp/root/build/src" >"$tmp/out" 2>&1
	rc=$?
	if [ "$rc" -ne "$2" ] || ! grep -q "$3" "$tmp/out"; then
		echo "FAIL: $1: exit $rc (want $2), output:"
		cat "$tmp/out"
		fail=1
	else
		echo "ok: $1"
	fi
}

make_tree 'int fake_provider_fn(void); int core_fn(void) { return fake_provider_fn(); }' \
	'int fake_provider_fn(void) { return 1; }' || exit 1
expect "core calling a provider fails" 1 "core calls into a provider: src/core uses fake_provider_fn"

make_tree 'int core_fn(void) { return 2; }' \
	'int core_fn(void); int fake_provider_fn(void) { return core_fn(); }' || exit 1
expect "a provider calling core passes" 0 "call graph: 1 folder edges, no cycle"

rm -f "$tmp/root/build/src/CMakeFiles/kinet_objects.dir/core/"*.o \
	"$tmp/root/build/src/CMakeFiles/kinet_objects.dir/provider/fake/"*.o
expect "no objects is not a pass" 1 "cannot be checked"
# The include rule: providers see core only through driver.h, which
# declares exactly the core functions they call.
make_tree 'int kinet_core_fn(void) { return 2; }' \
	'int kinet_core_fn(void); int fake_provider_fn(void) { return kinet_core_fn(); }' || exit 1
printf '/* core only */\n' >"$tmp/root/src/core/internal.h"
printf 'int kinet_core_fn(void);\n' >"$tmp/root/src/core/driver.h"
printf '#include "driver.h"\n' >"$tmp/root/src/provider/fake/fake.h"
expect "a provider including driver.h passes" 0 "include graph: 1 folder edges, no cycle"
printf '#include "internal.h"\n' >"$tmp/root/src/provider/fake/fake.h"
expect "a provider including internal.h fails" 1 "src/provider/fake may include only driver.h of core: src/provider/fake/fake.h includes src/core/internal.h"
printf '#include "driver.h"\n' >"$tmp/root/src/provider/fake/fake.h"
printf '/* nothing */\n' >"$tmp/root/src/core/driver.h"
expect "a core function a provider calls missing from driver.h fails" 1 "driver.h does not declare kinet_core_fn"
exit $fail
