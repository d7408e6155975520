#!/bin/sh
# The reference pages as installed man pages: installs BUILD into a fresh
# prefix, then wants share/man/man3/NAME.3 for every KINET_API function of
# include/kinet/ (a page, or a `.so` page naming one that is there), and
# one page rendered: by man (`man -l`, and `man -w` finding
# kinet_qp_post_send through MANPATH), else by groff, else (neither
# installed, said so) a check of its macros.
# Usage: test_man.sh BUILD_DIR SOURCE_DIR
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

if ! command -v cmake >/dev/null 2>&1; then
	echo "SKIP: cmake is not installed"
	exit 77
fi
if ! cmake --install "$BUILD" --prefix "$P" >"$TMP/log" 2>&1; then
	sed 's/^/    /' "$TMP/log"
	fail "cmake --install"
	exit 1
fi
M=$P/share/man/man3
if [ ! -d "$M" ]; then
	echo "SKIP: no man pages installed (python3 was not found when the build was configured)"
	exit 77
fi

# Every exported function: KINET_API, then the name before its "(" (a
# declaration may span lines).
find "$SRC/include/kinet" -name '*.h' -exec cat {} + | tr '\n' ' ' | grep -oE 'KINET_API [^;(]*\(' |
	grep -oE 'kinet_[a-z0-9_]+ *\($' | tr -d ' (' | sort -u >"$TMP/api"
n=$(wc -l <"$TMP/api")
[ "$n" -gt 0 ] || fail "found no KINET_API function under $SRC/include/kinet"
while read -r f; do
	page=$M/$f.3
	if [ ! -f "$page" ]; then
		fail "no man page for $f ($page)"
		continue
	fi
	so=$(sed -n 's/^\.so //p' "$page")
	if [ -n "$so" ] && [ ! -f "$P/share/man/$so" ]; then
		fail "$f.3 points at $so, which is not installed"
	fi
done <"$TMP/api"
echo "man pages for all $n KINET_API functions"

# Every real page: .TH first, a NAME section with its one whatis line.
for page in "$M"/*.3; do
	grep -q '^\.so ' "$page" && continue
	head -n 1 "$page" | grep -q '^\.TH ' || fail "$(basename "$page"): does not start with .TH"
	grep -A1 '^\.SH "NAME"' "$page" | grep -q ' \\- ' || fail "$(basename "$page"): no NAME line (names \\- what)"
done

page=$M/kinet_qp.3
if command -v man >/dev/null 2>&1 && command -v nroff >/dev/null 2>&1; then
	MANWIDTH=80 man -l "$page" >"$TMP/out" 2>"$TMP/err" || fail "man -l kinet_qp.3: $(cat "$TMP/err")"
	grep -q 'kinet_qp_connect' "$TMP/out" || fail "man -l kinet_qp.3 shows no kinet_qp_connect"
	found=$(MANPATH=$P/share/man man -w kinet_qp_post_send 2>&1)
	case "$found" in
	"$P"/share/man/man3/*) echo "man -w kinet_qp_post_send: $found" ;;
	*) fail "man -w kinet_qp_post_send with MANPATH=$P/share/man: $found" ;;
	esac
elif command -v groff >/dev/null 2>&1; then
	echo "man is not installed: groff renders kinet_qp.3 instead"
	groff -man -Tutf8 -ww "$page" >"$TMP/out" 2>"$TMP/err" || fail "groff kinet_qp.3"
	[ -s "$TMP/err" ] && fail "groff warns: $(cat "$TMP/err")"
	grep -q 'kinet_qp_connect' "$TMP/out" || fail "groff shows no kinet_qp_connect"
else
	echo "neither man nor groff is installed: kinet_qp.3 checked for its macros only"
	grep -q '^\.SH "SYNOPSIS"' "$page" || fail "kinet_qp.3 has no SYNOPSIS"
	awk '/^\.nf$/ { o++ } /^\.fi$/ { o-- } END { exit o != 0 }' "$page" || fail "kinet_qp.3: .nf without .fi"
fi
[ "$failed" -eq 0 ] && echo "man pages: ok"
exit "$failed"
