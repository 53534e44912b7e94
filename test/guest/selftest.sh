#!/bin/bash
# selftest.sh - prove the guest builder, run.sh and the stream framing work
#
# Theory of operation
# -------------------
# Without ferry's VM mode, the peer on qemu's `-netdev stream` socket is
# l2echo.py, which only reads and decodes frames.  We boot the guest against
# it with a script that checks that eth0 exists with the MAC we chose, that
# virtio_net is loaded and that iperf3 runs, and expects DHCP to fail (no
# server answers).  Then we check that l2echo saw well-formed frames from
# that MAC, among them the guest's DHCPDISCOVER, which proves the 4-byte
# big-endian length framing end to end.  Runs in its own user+network
# namespace: nothing can leave the machine (qemu has no other NIC anyway).
#
# usage: selftest.sh            (exit 0 and "2 passed, 0 failed" on success)

set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

if [ -z "${FERRY_GUEST_IN_NS:-}" ]; then
	FERRY_GUEST_IN_NS=1 exec unshare -Urn "$0" "$@"
fi

MAC=52:54:00:fe:00:01
DIR=$(mktemp -d "${TMPDIR:-/tmp}/ferry-guest-selftest.XXXXXX")
L2PID=""
cleanup() {
	[ -n "$L2PID" ] && kill "$L2PID" 2>/dev/null
	rm -rf "$DIR"
}
trap cleanup EXIT

"$HERE/build.sh" > /dev/null

cat > "$DIR/guest.sh" <<EOF
set -e
test -e /sys/class/net/eth0
grep -qi '^$MAC\$' /sys/class/net/eth0/address
lsmod | grep -q '^virtio_net '
iperf3 --version | grep -q '^iperf 3'
test "\$FERRY_GUEST_DHCP" = fail
echo guest-checks-ok
EOF

python3 "$HERE/l2echo.py" "$DIR/sock" > "$DIR/l2echo.out" 2>&1 &
L2PID=$!

pass=0 fail=0
# dhcp_tries=2: the discover is what we look for; slaac_wait=2 lets the
# guest's IPv6 DAD/router solicitations show up too
if "$HERE/run.sh" -t 120 -m "$MAC" -l "$DIR/console.log" \
	-a "ferry.dhcp_tries=2 ferry.dhcp_timeout=1 ferry.slaac_wait=2" \
	"$DIR/sock" "$DIR/guest.sh" > "$DIR/guest.out"; then
	if grep -qx guest-checks-ok "$DIR/guest.out"; then
		echo "PASS guest boots, eth0/virtio_net/iperf3 present"
		pass=$((pass + 1))
	else
		echo "FAIL guest exit 0 without its check line"
		fail=$((fail + 1))
	fi
else
	echo "FAIL guest checks (run.sh exit $?):"
	sed 's/^/  /' "$DIR/guest.out"
	fail=$((fail + 1))
fi

# l2echo exits when qemu closes the socket; give it a deadline anyway
for _ in $(seq 50); do
	kill -0 "$L2PID" 2>/dev/null || break
	sleep 0.1
done
L2RC=0
wait "$L2PID" || L2RC=$?
L2PID=""
sed 's/^/  l2echo: /' "$DIR/l2echo.out"
if [ "$L2RC" = 0 ] &&
   grep -q "^frame .* $MAC -> ff:ff:ff:ff:ff:ff ethertype 0x0800 udp 68->67 dhcp-discover" \
	"$DIR/l2echo.out"; then
	echo "PASS l2echo received the guest's DHCPDISCOVER in stream framing"
	pass=$((pass + 1))
else
	echo "FAIL no DHCPDISCOVER from $MAC at l2echo (rc $L2RC)"
	fail=$((fail + 1))
fi
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
