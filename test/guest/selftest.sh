#!/bin/bash
# selftest.sh - prove the guest builder, run.sh and the stream framing work
#
# Theory of operation
# -------------------
# Without ferry's VM mode, the peer on qemu's `-netdev stream` socket is
# l2echo.py.  Two boots:
#  1. silent peer (l2echo only reads): the guest checks that eth0 exists
#     with our MAC, virtio_net is loaded, iperf3 runs, and that DHCP failed
#     (nobody answers); then l2echo must have seen well-formed frames from
#     that MAC, among them the DHCPDISCOVER: the 4-byte big-endian length
#     framing works end to end, guest to peer.
#  2. responding peer (l2echo --respond, the toy router of l2respond.py):
#     the guest must get its DHCP lease applied (address, default route,
#     resolv.conf, dhcp.env), a SLAAC address in 2001:db8:1::/64, and ping
#     the router over IPv4 and IPv6: framing works in both directions and
#     /init + udhcpc.script configure the network.
# Both run in a user+network namespace of their own: nothing can leave the
# machine (and qemu has no NIC but the stream socket).
#
# usage: selftest.sh            (exit 0 and "N passed, 0 failed" on success)

set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

if [ -z "${FERRY_GUEST_IN_NS:-}" ]; then
	FERRY_GUEST_IN_NS=1 exec unshare -Urn "$0" "$@"
fi

MAC=52:54:00:fe:00:01
DIR=$(mktemp -d "${TMPDIR:-/tmp}/ferry-guest-selftest.XXXXXX")
L2PID=""
PASS=0 FAIL=0
cleanup() {
	[ -n "$L2PID" ] && kill "$L2PID" 2>/dev/null
	rm -rf "$DIR"
}
trap cleanup EXIT

# result() - count and print a PASS/FAIL line: result OK|FAIL TEXT
result() {
	if [ "$1" = OK ]; then
		echo "PASS $2"
		PASS=$((PASS + 1))
	else
		echo "FAIL $2"
		FAIL=$((FAIL + 1))
	fi
}

# boot() - start l2echo with args $3, boot guest script $1 with kernel
# args $2 against it; leaves $DIR/guest.out, $DIR/l2echo.out, and sets
# GUEST_RC and L2_RC
boot() {
	local script=$1 append=$2 l2args=$3
	rm -f "$DIR/sock"
	# shellcheck disable=SC2086
	python3 "$HERE/l2echo.py" $l2args "$DIR/sock" > "$DIR/l2echo.out" 2>&1 &
	L2PID=$!
	GUEST_RC=0
	"$HERE/run.sh" -t 120 -m "$MAC" -l "$DIR/console.log" -a "$append" \
		"$DIR/sock" "$script" > "$DIR/guest.out" || GUEST_RC=$?
	# l2echo exits when qemu closes the socket; deadline anyway
	for _ in $(seq 50); do
		kill -0 "$L2PID" 2>/dev/null || break
		sleep 0.1
	done
	L2_RC=0
	wait "$L2PID" || L2_RC=$?
	L2PID=""
	if [ "$GUEST_RC" != 0 ]; then
		echo "guest exit $GUEST_RC, output and console:"
		sed 's/^/  guest: /' "$DIR/guest.out"
		tr -d '\r' < "$DIR/console.log" | tail -n 20 | sed 's/^/  console: /'
	fi
	sed 's/^/  l2echo: /' "$DIR/l2echo.out"
}

"$HERE/build.sh" > /dev/null

# 1. silent peer
cat > "$DIR/silent.sh" <<EOF
set -e
test -e /sys/class/net/eth0
grep -qi '^$MAC\$' /sys/class/net/eth0/address
lsmod | grep -q '^virtio_net '
iperf3 --version | grep -q '^iperf 3'
test "\$FERRY_GUEST_DHCP" = fail
echo guest-checks-ok
EOF
boot "$DIR/silent.sh" "ferry.dhcp_tries=2 ferry.dhcp_timeout=1 ferry.slaac_wait=2" ""
if [ "$GUEST_RC" = 0 ] && grep -qx guest-checks-ok "$DIR/guest.out"; then
	result OK "guest boots, eth0/virtio_net/iperf3 present, no lease"
else
	result FAIL "guest checks with a silent peer (exit $GUEST_RC)"
fi
if [ "$L2_RC" = 0 ] && grep -q "^frame .* $MAC -> ff:ff:ff:ff:ff:ff ethertype 0x0800 udp 68->67 dhcp-discover" \
	"$DIR/l2echo.out"; then
	result OK "l2echo received the guest's DHCPDISCOVER in stream framing"
else
	result FAIL "no DHCPDISCOVER from $MAC at l2echo (rc $L2_RC)"
fi

# 2. responding peer
cat > "$DIR/respond.sh" <<'EOF'
set -e
test "$FERRY_GUEST_DHCP" = ok
test "$FERRY_GUEST_SLAAC" = ok
. /run/ferry/dhcp.env
test "$DHCP_IP/$DHCP_PREFIX" = 198.51.100.2/24
ip -4 addr show dev eth0 | grep -q 'inet 198.51.100.2/24 '
ip -4 route | grep -q '^default via 198.51.100.1 dev eth0'
grep -qx 'nameserver 198.51.100.1' /etc/resolv.conf
grep -qx 'search ferry.test' /etc/resolv.conf
ip -6 addr show dev eth0 scope global | grep -q 'inet6 2001:db8:1:0:'
ping -c 1 -W 5 198.51.100.1 > /dev/null
ping6 -c 1 -W 5 2001:db8:1::1 > /dev/null
echo guest-net-ok
EOF
boot "$DIR/respond.sh" "" "--respond"
if [ "$GUEST_RC" = 0 ] && grep -qx guest-net-ok "$DIR/guest.out"; then
	result OK "guest configured by DHCP and SLAAC, pings the router (v4, v6)"
else
	result FAIL "guest network configuration via the toy router (exit $GUEST_RC)"
fi

echo "$PASS passed, $FAIL failed"
[ "$FAIL" = 0 ]
