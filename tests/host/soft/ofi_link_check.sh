#!/bin/sh
# libkinet.so and libfabric: no ELF dependency (DT_NEEDED) on libfabric and
# no undefined fi_* symbol (one would fail at load where libfabric is
# absent, or pull it in); the ofi carrier loads libfabric.so.1 with dlopen
# on first use (src/provider/soft/ofi_dl.c) when the build had its headers.
# Usage: ofi_link_check.sh LIBKINET HAVE_OFI(0|1)
set -u
LIB=$1
HAVE=$2
for tool in readelf nm; do
	command -v "$tool" >/dev/null 2>&1 || { echo "SKIP: $tool not installed (binutils)"; exit 77; }
done
[ -f "$LIB" ] || { echo "FAIL: no such file: $LIB"; exit 1; }
failed=0

needed=$(readelf -d "$LIB" | grep NEEDED)
echo "$needed"
if echo "$needed" | grep -Eq 'libfabric|libpsm|libinfinipath|libefa|librdmacm'; then
	echo "FAIL: $LIB has an ELF dependency on libfabric or what it pulls in"
	failed=1
fi
undef=$(nm -D --undefined-only "$LIB" | grep -E ' fi_' || true)
if [ -n "$undef" ]; then
	echo "FAIL: $LIB needs libfabric symbols at load time:"
	echo "$undef"
	failed=1
fi
if [ "$HAVE" = 1 ] && ! grep -qa "libfabric.so.1" "$LIB"; then
	echo "FAIL: $LIB does not name libfabric.so.1: is the ofi carrier built in?"
	failed=1
fi
[ "$failed" = 0 ] && echo "ok: no link-time dependency on libfabric (ofi carrier built in: $HAVE)"
exit $failed
