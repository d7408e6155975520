#!/bin/sh
# Lists the public functions of the installed headers (include/kinet/) that
# no reference page documents, and exits 1 when there is one.  A function
# counts as documented when its name appears in docs/api/*.md or, for the
# device API, in docs/DEVICE_API.md or its pages (docs/device-api/).  Names
# matching a pattern of docs/api/internal.txt are the device API's
# implementation, not part of the API.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT" || exit 1
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

# Declarations and definitions that start a line: host functions (return
# type, name; KINET_API exports), device and wire functions (KINET_DEV_FN, KINET_WIRE_FN,
# static inline).
find include/kinet -type f \( -name '*.h' -o -name '*.cuh' \) -print | sort | xargs sed -n -E \
	-e 's/^((KINET_API|KINET_DEV_FN|KINET_WIRE_FN|static inline|const|unsigned|struct|enum) )*[a-z_0-9]+ \**(kinet_[a-z0-9_]+)\(.*/\3/p' |
	sort -u >"$TMP/functions"
# Device verbs whose thread, _warp and _block forms one macro generates
# (include/kinet/device/impl/forms.cuh): KINET_DEVI_FORMS[_ONE](verb, ...).
find include/kinet -type f -name '*.cuh' -print | sort | xargs sed -n -E \
	-e 's/^KINET_DEVI_FORMS(_ONE)?\(([a-z_0-9]+),.*/kinet_dev_\2\nkinet_dev_\2_warp\nkinet_dev_\2_block/p' |
	sort -u >>"$TMP/functions"
sort -u -o "$TMP/functions" "$TMP/functions"
grep -v '^#' docs/api/internal.txt | grep -v '^$' >"$TMP/internal"
cat docs/api/*.md docs/DEVICE_API.md docs/device-api/*.md | grep -o 'kinet_[a-z0-9_]*' | sort -u >"$TMP/documented"

missing=0 n=0
while read -r f; do
	if printf '%s\n' "$f" | grep -qxf "$TMP/internal"; then
		continue
	fi
	n=$((n + 1))
	if ! grep -qx "$f" "$TMP/documented"; then
		echo "undocumented public function: $f"
		missing=$((missing + 1))
	fi
done <"$TMP/functions"
if [ "$missing" -ne 0 ]; then
	echo "$missing of $n public functions have no reference page (docs/api/)"
	exit 1
fi
echo "api docs: all $n public functions documented"
