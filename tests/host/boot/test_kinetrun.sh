#!/bin/sh
# kinetrun: rank environment, prefixed output, exit status, stopping the
# other ranks when one fails, --timeout, usage errors, and a real bootstrap
# job.  Usage: test_kinetrun.sh KINETRUN BOOT_RANK
set -u
KR=$1
BOOT_RANK=$2
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
failed=0

fail() {
	echo "FAIL: $*"
	failed=1
}

# expect_rc NAME WANT GOT
expect_rc() {
	if [ "$3" -ne "$2" ]; then fail "$1: exit status $3, expected $2"; else echo "ok: $1"; fi
}

# 1. four ranks, their variables, prefixed lines
"$KR" -n 4 -- sh -c 'echo hello $KINET_RANK' >"$TMP/out" 2>"$TMP/err"
expect_rc "hello" 0 $?
sort "$TMP/out" >"$TMP/sorted"
printf '[0] hello 0\n[1] hello 1\n[2] hello 2\n[3] hello 3\n' >"$TMP/want"
cmp -s "$TMP/sorted" "$TMP/want" || { fail "hello output:"; cat "$TMP/out"; }

"$KR" -n 2 -- sh -c 'echo $KINET_RANK $KINET_NRANKS $KINET_LOCAL_RANK $KINET_LOCAL_SIZE $KINET_ROOT' >"$TMP/out"
grep -Eq '^\[1\] 1 2 1 2 127\.0\.0\.1:[0-9]+$' "$TMP/out" || { fail "variables:"; cat "$TMP/out"; }

# 2. stderr stays stderr; a last line without newline is flushed
"$KR" -n 2 -- sh -c 'echo oops >&2; printf "no newline"' >"$TMP/out" 2>"$TMP/err"
expect_rc "stderr" 0 $?
grep -qx '\[1\] oops' "$TMP/err" || fail "stderr line missing"
grep -qx '\[0\] no newline' "$TMP/out" || fail "partial line missing"

# 3. exit status: the first failure's, or 128 + signal
"$KR" -n 2 -- sh -c 'exit $((KINET_RANK+3))' 2>"$TMP/err"
rc=$?
if [ $rc -ne 3 ] && [ $rc -ne 4 ]; then fail "exit code: $rc, expected 3 or 4"; else echo "ok: exit code"; fi
grep -q 'rank [01] (pid [0-9]*) exited with status [34]' "$TMP/err" || fail "no report of the failed rank"
"$KR" -n 1 -- sh -c 'kill -KILL $$' 2>/dev/null
expect_rc "signal" 137 $?
"$KR" -n 1 -- /nonexistent/program 2>/dev/null
expect_rc "exec failure" 127 $?

# 4. one rank fails, the sleeping one is stopped
start=$(date +%s)
"$KR" -n 2 -- sh -c 'if [ $KINET_RANK = 1 ]; then exit 1; fi; sleep 60' 2>"$TMP/err"
rc=$?
took=$(($(date +%s) - start))
expect_rc "kill the rest" 1 $rc
[ $took -le 5 ] || fail "kill the rest took $took s"
grep -q 'rank 1 (pid [0-9]*) exited with status 1; stopping the other ranks' "$TMP/err" || {
	fail "kill the rest report:"
	cat "$TMP/err"
}

# a rank that ignores SIGTERM gets SIGKILL 2 s later
start=$(date +%s)
"$KR" -n 2 -- sh -c 'trap "" TERM; if [ $KINET_RANK = 1 ]; then sleep 0.5; exit 2; fi; sleep 60' 2>/dev/null
rc=$?
took=$(($(date +%s) - start))
expect_rc "sigkill" 2 $rc
[ $took -le 6 ] || fail "sigkill took $took s"

# 5. --timeout
start=$(date +%s)
"$KR" --timeout 1 -n 2 -- sleep 60 2>/dev/null
rc=$?
took=$(($(date +%s) - start))
expect_rc "timeout" 124 $rc
[ $took -le 5 ] || fail "timeout took $took s"

# 6. usage errors
for args in "" "-n" "-n 0" "-n x sh" "-n 2" "--bogus -n 2 true" "-n 2 --timeout 0 true"; do
	# shellcheck disable=SC2086
	"$KR" $args >/dev/null 2>&1
	expect_rc "usage '$args'" 2 $?
done
"$KR" --help >/dev/null
expect_rc "help" 0 $?

# 7. a real bootstrap job
"$KR" -n 4 "$BOOT_RANK" >"$TMP/out" 2>"$TMP/err"
expect_rc "boot_rank" 0 $?
n=$(grep -c '^\[[0-3]\] rank [0-3] of 4 ok$' "$TMP/out")
[ "$n" -eq 4 ] || { fail "boot_rank output:"; cat "$TMP/out" "$TMP/err"; }

if [ $failed -ne 0 ]; then
	echo "test_kinetrun: FAILED"
	exit 1
fi
echo "test_kinetrun: all passed"
