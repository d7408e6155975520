#!/usr/bin/env bash
# Checks that every C/CUDA source follows .clang-format (no files are
# changed).  Exits 0 when clean, 1 listing the offenders, 77 (ctest: skipped)
# when clang-format is not installed.  To fix: scripts/check-format.sh --fix
set -euo pipefail

KINET_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CLANG_FORMAT=${CLANG_FORMAT:-clang-format}
cd "$KINET_ROOT"

if ! command -v "$CLANG_FORMAT" >/dev/null 2>&1; then
	echo "SKIP: clang-format not installed (apt-get install clang-format)"
	exit 77
fi

mapfile -d '' files < <(find include src tests tools examples bench -type f \
	\( -name '*.c' -o -name '*.h' -o -name '*.cu' -o -name '*.cuh' \) -print0 2>/dev/null | sort -z)
if [ ${#files[@]} -eq 0 ]; then
	echo "no sources found"
	exit 0
fi

if [ "${1:-}" = "--fix" ]; then
	"$CLANG_FORMAT" -i "${files[@]}"
	exit 0
fi

bad=()
for f in "${files[@]}"; do
	if ! "$CLANG_FORMAT" --dry-run --Werror "$f" >/dev/null 2>&1; then
		bad+=("$f")
	fi
done
if [ ${#bad[@]} -ne 0 ]; then
	echo "not clang-formatted (${#bad[@]} of ${#files[@]} files; run scripts/check-format.sh --fix):"
	for f in "${bad[@]}"; do
		echo "  $f"
		"$CLANG_FORMAT" --dry-run "$f" 2>&1 | head -6 | sed 's/^/    /' || true
	done
	exit 1
fi
echo "clang-format: ${#files[@]} files clean ($("$CLANG_FORMAT" --version))"
