#!/bin/sh
# A crash in a program linking libkinet ends the program by the signal
# (status 139: 128 + SIGSEGV), not "exit 1": no library kinet loads at
# start may install a SIGSEGV handler that swallows it (libfabric's
# psm2/infinipath did, when libkinet linked libfabric).  No core file is
# written here (ulimit -c 0).  Usage: crash_signal_check.sh CRASH_MAIN
set -u
ulimit -c 0 2>/dev/null
"$1"
status=$?
if [ "$status" -eq 139 ]; then
	echo "ok: the crash ended the program by SIGSEGV (status 139)"
	exit 0
fi
echo "FAIL: $1 exited with status $status, not 139 (SIGSEGV): a handler swallowed the crash?"
exit 1
