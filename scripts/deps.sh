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

# Packages every build needs.
# shellcheck disable=SC2034 # used by the scripts that source this file
KINET_BUILD_PACKAGES=(cmake gcc g++ make pkg-config libibverbs-dev libfabric-dev iproute2)

# Configure (once) and build into $1.  Extra arguments go to cmake.
kinet_build() {
	local dir=$1
	shift
	cmake -S "$KINET_ROOT" -B "$dir" "$@"
	cmake --build "$dir" -j "$(nproc)"
}
