# shellcheck shell=bash
# Sourced by demo.sh and test.sh: installs what a build needs on a Debian or
# Ubuntu machine, with apt-get, only when something is missing.
#
#   kinet_need_packages pkg...   # checks each (command or dpkg), installs the missing

# package -> command that proves it is there ("" = ask dpkg)
kinet_pkg_cmd() {
	case "$1" in
	cmake) echo cmake ;;
	gcc) echo gcc ;;
	g++) echo g++ ;;
	make) echo make ;;
	iproute2) echo ip ;;
	pkg-config) echo pkg-config ;;
	clang-format) echo clang-format ;;
	*) echo "" ;;
	esac
}

kinet_have_pkg() {
	local cmd
	cmd=$(kinet_pkg_cmd "$1")
	if [ -n "$cmd" ] && command -v "$cmd" >/dev/null 2>&1; then
		return 0
	fi
	[ "$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null)" = "install ok installed" ]
}

kinet_need_packages() {
	local missing=() p
	for p in "$@"; do
		kinet_have_pkg "$p" || missing+=("$p")
	done
	[ ${#missing[@]} -eq 0 ] && return 0

	echo "kinet: installing missing packages: ${missing[*]}" >&2
	if ! command -v apt-get >/dev/null 2>&1; then
		echo "kinet: apt-get not found; install these yourself: ${missing[*]}" >&2
		return 1
	fi
	local sudo=""
	if [ "$(id -u)" -ne 0 ]; then
		if command -v sudo >/dev/null 2>&1; then
			sudo="sudo"
		else
			echo "kinet: not root and no sudo; install these yourself: ${missing[*]}" >&2
			return 1
		fi
	fi
	export DEBIAN_FRONTEND=noninteractive
	$sudo apt-get update
	$sudo apt-get install -y --no-install-recommends "${missing[@]}"
}

# What the demo needs (a build of the library and one example, in C)...
# shellcheck disable=SC2034 # used by the scripts that source this file
KINET_DEMO_PACKAGES=(cmake gcc make)
# ... and what the tests need: C++ (the headers' C++ test), libfabric (the
# ofi transport), libibverbs (the wire-format check against mlx5dv.h),
# iproute2 (network namespaces), pkg-config, clang-format; and the
# unmodified verbs programs the verbs front door runs (ibverbs-utils,
# perftest).
# shellcheck disable=SC2034
KINET_TEST_PACKAGES=(cmake gcc g++ make pkg-config libibverbs-dev libfabric-dev iproute2 clang-format
	ibverbs-utils perftest)

# kinet_configure DIR [cmake arguments...]
kinet_configure() {
	local dir=$1
	shift
	cmake -S "$KINET_ROOT" -B "$dir" "$@"
}

# kinet_build DIR [cmake --build arguments, e.g. --target T]: with all cores.
kinet_build() {
	local dir=$1
	shift
	cmake --build "$dir" -j "$(nproc)" "$@"
}

# kinet_skip_reasons CTEST_OUTPUT LAST_TEST_LOG: each test ctest reported as
# skipped, with the reasons it printed (its "SKIP: ..." lines, else its
# last line), which ctest shows only with -V.
kinet_skip_reasons() {
	local names
	names=$(sed -n 's/^.*Test *#[0-9]*: \([^ ]*\) .*\*\*\*Skipped.*$/\1/p' "$1")
	[ -n "$names" ] || return 0
	echo "Skipped tests and why:"
	for name in $names; do
		awk -v t="$name" '
			$0 ~ "^[0-9]+/[0-9]+ Test: " t "$" { state = 1; next }
			state == 1 && /^Output:/ { state = 2; next }
			state == 2 && /^<end of output>/ { exit }
			state == 2 && /^-+$/ { next }
			state == 2 && NF { last = $0 }
			state == 2 && /SKIP:/ { r = $0; sub(/^.*SKIP: */, "", r); if (!(r in seen)) { seen[r] = 1; print "  " t ": " r }; found = 1 }
			END { if (!found) print "  " t ": " (last ? last : "(no reason printed)") }
		' "$2"
	done
}
