#!/bin/sh
# Checks that every code block of the guide (docs/GUIDE.md and its pages,
# docs/guide/*.md) is a real file under examples/, word for word: each
# fence names its file after the language ("```c examples/hello_host.c") and
# holds that file's whole text.  CI builds and runs those files
# (examples/CMakeLists.txt, tests/install/).  Exits 0 when all match, 1
# listing what does not.
#   scripts/check-guide.sh [PAGE...]
#   scripts/check-guide.sh --fix   copies each named file into its block
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

if [ "${1:-}" = "--fix" ]; then
	for GUIDE in "$ROOT"/docs/GUIDE.md "$ROOT"/docs/guide/*.md; do
	awk -v root="$ROOT" '
		/^```/ && !inside { inside = 1; print; split($0, w, " "); copy = w[2] !~ /^examples\//
			if (!copy) { f = root "/" w[2]; while ((getline line < f) > 0) print line; close(f) }
			next }
		/^```/ && inside { inside = 0; print; next }
		!inside || copy { print }
	' "$GUIDE" >"$TMP/guide" && cat "$TMP/guide" >"$GUIDE"
	done
	exit
fi
[ $# -eq 0 ] && set -- "$ROOT"/docs/GUIDE.md "$ROOT"/docs/guide/*.md

failed=0 n=0
for GUIDE in "$@"; do
rm -f "$TMP"/*.name "$TMP"/*.text

# Splits the guide: $TMP/N.name holds block N's file name, $TMP/N.text its
# lines; an unterminated block is reported by its opening line.
awk -v dir="$TMP" '
	/^```/ && !inside { inside = 1; n++; split($0, w, " "); print (w[2] ? w[2] : "-") > (dir "/" n ".name");
		printf "" > (dir "/" n ".text"); start = NR; next }
	/^```/ && inside { inside = 0; close(dir "/" n ".text"); next }
	inside { print > (dir "/" n ".text") }
	END { if (inside) { print "unterminated code block at line " start; exit 1 } }
' "$GUIDE" || exit 1

for name_file in "$TMP"/*.name; do
	[ -e "$name_file" ] || break
	n=$((n + 1))
	block=${name_file%.name}
	name=$(cat "$name_file")
	case "$name" in
	examples/*) ;;
	*)
		echo "$(basename "$GUIDE"), code block $(basename "$block") names no file under examples/ (\"$name\")"
		failed=1
		continue
		;;
	esac
	if [ ! -f "$ROOT/$name" ]; then
		echo "$(basename "$GUIDE"), code block $(basename "$block"): $name does not exist"
		failed=1
	elif ! cmp -s "$block.text" "$ROOT/$name"; then
		echo "$(basename "$GUIDE"), code block $(basename "$block") differs from $name:"
		diff "$ROOT/$name" "$block.text" | head -10 | sed 's/^/    /'
		failed=1
	fi
done
done
if [ "$n" -eq 0 ]; then
	echo "no code blocks in $*"
	exit 1
fi
[ "$failed" -eq 0 ] && echo "the guide ($# pages): $n code blocks, each a file under examples/"
exit $failed
