#!/bin/sh
# tests/eth/xdp_backend_check.sh CMD [ARGS...]: runs CMD (an Ethernet
# example under kinet-netns-run) with KINET_ETH_BACKEND=xdp and
# KINET_LOG=info, and says whether its port really went through AF_XDP.
#   - the port opened AF_XDP ("through AF_XDP" logged) and CMD exited 0: pass;
#   - AF_XDP was not possible here (the fall back's warning, "using
#     AF_PACKET instead", names why): 77, skipped -- but only if the echo
#     still worked over AF_PACKET; a failure is a failure either way;
#   - neither line: fail (the variable was not honoured).
# ctest sets the two variables (ENVIRONMENT); they are set here too so
# that the script means the same when run by hand.
KINET_ETH_BACKEND=xdp
KINET_LOG=info
export KINET_ETH_BACKEND KINET_LOG
log=$(mktemp) || exit 1
trap 'rm -f "$log"' EXIT
"$@" >"$log" 2>&1
rc=$?
cat "$log"
if grep -q "using AF_PACKET instead" "$log"; then
	[ $rc -eq 0 ] || exit $rc
	echo "SKIP: AF_XDP is not possible here (the warning above says why); the example passed over AF_PACKET"
	exit 77
fi
[ $rc -eq 0 ] || exit $rc
if ! grep -q "through AF_XDP" "$log"; then
	echo "FAIL: KINET_ETH_BACKEND=xdp, but no port said it opened AF_XDP"
	exit 1
fi
echo "PASS: the example's port carried its frames through AF_XDP"
