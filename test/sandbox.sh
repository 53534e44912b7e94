#!/bin/bash
# sandbox.sh - run a command in a private network sandbox ("the host").
#
# Re-executes itself under `unshare -Urn` (new user + network namespace,
# mapped to root; with FERRY_SANDBOX_ROOT=1 no user namespace), then builds a host network that goes nowhere:
#   lo up;  veth "uplink0" <-> "uplink0p" (far end stays here, no address)
#   uplink0: 198.51.100.2/24, 2001:db8::2/64, MTU 65520
#   default routes via 198.51.100.1 and 2001:db8::1 (nobody answers)
# so ferry sees an ordinary host with a default route, yet no packet can
# leave this machine. A private mount namespace gives the sandbox its own
# /etc/resolv.conf (nameserver 198.51.100.53, search example.test): the
# host's real nameservers are never handed to a guest. Then runs "$@"
# with FERRY_SANDBOX=1.
set -eu
if [ "${FERRY_SANDBOX_INNER:-}" != 1 ]; then
	export FERRY_SANDBOX_INNER=1
	# FERRY_SANDBOX_ROOT=1 (the real root only): new network and mount
	# namespaces but no user namespace, so a test can switch to a real
	# unprivileged uid (test_rootless.py); the network is the same.
	[ "${FERRY_SANDBOX_ROOT:-}" = 1 ] &&
		exec unshare -nm --kill-child -- "$0" "$@"
	exec unshare -Urnm --kill-child -- "$0" "$@"
fi
ip link set lo up
resolv=$(mktemp /tmp/ferry-sandbox-resolv.XXXXXX)
printf 'nameserver 198.51.100.53\nsearch example.test\n' > "$resolv"
chmod 644 "$resolv"
mount --bind "$resolv" /etc/resolv.conf
rm -f "$resolv"	# the bind mount keeps the file alive
ip link add uplink0 type veth peer name uplink0p
ip link set uplink0 mtu 65520
ip link set uplink0p mtu 65520
ip link set uplink0p up
ip addr add 198.51.100.2/24 dev uplink0
ip -6 addr add 2001:db8::2/64 dev uplink0 nodad
ip link set uplink0 up
ip route add default via 198.51.100.1 dev uplink0 onlink
ip -6 route add default via 2001:db8::1 dev uplink0 onlink
# Unprivileged ICMP echo sockets for the (mapped) root group.
sysctl -qw net.ipv4.ping_group_range="0 0" || true
# Ephemeral ports above every fixed port the tests listen on (all below
# 45000): a client socket of one test, still closing, must never hold
# the port a later test forwards.
sysctl -qw net.ipv4.ip_local_port_range="45000 60999"
export FERRY_SANDBOX=1
exec "$@"
