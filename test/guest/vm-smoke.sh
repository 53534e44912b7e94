#!/bin/bash
# vm-smoke.sh - boot the test guest against the real `ferry vm`
#
# Theory of operation
# -------------------
# The template for VM-mode tests.  Inside test/sandbox.sh (user+network
# namespace, uplink that goes nowhere, documentation addresses) start
# `ferry vm` on a UNIX socket (--one-off: it exits when qemu goes away),
# boot the guest with test/guest/run.sh against it, and check from inside
# the guest that DHCPv4 and SLAAC configured eth0 and that the gateway
# answers a ping.  Guest commands that could hang are bounded with
# busybox `timeout` so a stuck connection fails fast instead of running
# into run.sh's deadline.
#
# usage: vm-smoke.sh   (FERRY_BIN: the ferry binary, default ./ferry of the
#                       repository; prints "N passed, N failed")

set -eu
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
FERRY=${FERRY_BIN:-$ROOT/ferry}

if [ "${FERRY_SANDBOX:-}" != 1 ]; then
	[ -x "$FERRY" ] || { echo "no ferry binary at $FERRY (make first)"; exit 2; }
	exec "$ROOT/test/sandbox.sh" "$0" "$@"
fi

D=$(mktemp -d "${TMPDIR:-/tmp}/ferry-vm-smoke.XXXXXX")
FPID=""
cleanup() {
	[ -n "$FPID" ] && kill "$FPID" 2>/dev/null
	rm -rf "$D"
}
trap cleanup EXIT

"$FERRY" vm -f -1 -s "$D/sock" -l "$D/ferry.log" > "$D/ferry.out" 2>&1 &
FPID=$!

cat > "$D/t.sh" <<'EOF'
fail=0
check() {	# check DESCRIPTION COMMAND...: one PASS/FAIL line
	local what=$1; shift
	if "$@" > /dev/null 2>&1; then echo "PASS $what"
	else echo "FAIL $what"; fail=1; fi
}
check "DHCPv4 lease" test "$FERRY_GUEST_DHCP" = ok
. /run/ferry/dhcp.env 2>/dev/null
check "IPv4 address on eth0" sh -c "ip -4 addr show dev eth0 | grep -q 'inet $DHCP_IP/'"
check "IPv4 default route" sh -c "ip -4 route | grep -q '^default via $DHCP_ROUTER'"
check "SLAAC address" test "$FERRY_GUEST_SLAAC" = ok
check "ping IPv4 gateway" timeout 10 ping -c 1 -W 5 "$DHCP_ROUTER"
exit $fail
EOF

rc=0
"$HERE/run.sh" -t 120 -l "$D/console.log" "$D/sock" "$D/t.sh" > "$D/out" ||
	rc=$?
cat "$D/out"
pass=$(grep -c '^PASS' "$D/out" || true)
fail=$(grep -c '^FAIL' "$D/out" || true)
if [ "$rc" != 0 ] && [ "$fail" = 0 ]; then
	echo "FAIL guest run (run.sh exit $rc)"
	fail=1
fi
if [ "$fail" != 0 ]; then
	sed 's/^/  ferry: /' "$D/ferry.out" "$D/ferry.log" 2>/dev/null | tail -n 20
fi
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
