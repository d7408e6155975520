#!/usr/bin/env bash
# scripts/check-env.sh KINET_INFO [ROOT]: the environment table is the one
# list of KINET_* variables: every "KINET_..." name read in src/ and tools/,
# and every KINET_ variable a script takes with a default, is in it (kinet-info --env), and README.md's Environment table is
# `kinet-info --env --markdown`, between its two marker comments.  Exits 1
# naming what differs.
set -u
info=$1
root=${2:-$(cd "$(dirname "$0")/.." && pwd)}
bad=0

table=$("$info" --env --markdown) || {
	echo "kinet-info --env --markdown failed"
	exit 1
}
names=$(printf '%s\n' "$table" | sed -n 's/^| `\(KINET_[A-Z0-9_]*\)`.*/\1/p' | sort -u)
[ -n "$names" ] || {
	echo "kinet-info --env --markdown listed no variable"
	exit 1
}
used=$(grep -rhoE '"KINET_[A-Z0-9_]+"' "$root/src" "$root/tools" --include='*.c' --include='*.h' --include='*.cu' |
	tr -d '"' | sort -u)
for n in $used; do
	printf '%s\n' "$names" | grep -qx "$n" || {
		echo "$n is read in src/ or tools/ but is not in the environment table (src/core/env_vars.c)"
		bad=1
	}
done

# What the scripts take from the environment: the ${KINET_*:-default} form.
script_used=$(grep -rhoE '\$\{KINET_[A-Z0-9_]+:-' "$root/scripts" "$root/bench" "$root/tests" --include='*.sh' |
	sed 's/^..//; s/:-$//' | sort -u)
for n in $script_used; do
	printf '%s\n' "$names" | grep -qx "$n" || {
		echo "$n is taken from the environment by a script but is not in the environment table (src/core/env_vars.c)"
		bad=1
	}
done

readme=$(sed -n '/^<!-- env table: kinet-info --env --markdown -->$/,/^<!-- end of env table -->$/p' "$root/README.md" |
	sed '1d;$d')
if [ "$readme" != "$table" ]; then
	echo "README.md's Environment table is not kinet-info --env --markdown; regenerate it:"
	diff <(printf '%s\n' "$readme") <(printf '%s\n' "$table") | head -20
	bad=1
fi
[ $bad -eq 0 ] && echo "env table: $(printf '%s\n' "$names" | wc -l) variables; every name read in src/, tools/ and the scripts declared; README matches"
exit $bad
