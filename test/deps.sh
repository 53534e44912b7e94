#!/bin/bash
# deps.sh - make sure the tools the tests use are installed.
#
# As root on Debian/Ubuntu, missing packages are installed with apt-get
# (and we say so). Otherwise print the exact install line and fail.
# Usage: test/deps.sh [extra-package ...]
set -u

# tool:package pairs the test suite needs
NEED="unshare:util-linux nsenter:util-linux ip:iproute2 busybox:busybox
ping:iputils-ping tshark:tshark iperf3:iperf3 dig:dnsutils curl:curl
nc:netcat-openbsd /usr/bin/python3:python3 gcc:gcc make:make
dhclient:isc-dhcp-client ethtool:ethtool podman:podman crun:crun
dnsmasq:dnsmasq-base sysctl:procps traceroute:traceroute
/usr/lib/podman/netavark:netavark"

# The rootless tests run ferry as a real unprivileged user, who opens
# /dev/net/tun as every rootless pasta does: the kernel creates it mode
# 0666 (drivers/net/tun.c), but a container runtime may have made it 0600.
if [ -c /dev/net/tun ] && [ "$(stat -c %a /dev/net/tun)" != 666 ]; then
	if [ "$(id -u)" = 0 ]; then
		echo "deps: /dev/net/tun was mode $(stat -c %a /dev/net/tun), set to 0666 (the kernel's default)"
		chmod 0666 /dev/net/tun
	else
		echo "deps: /dev/net/tun is mode $(stat -c %a /dev/net/tun): the rootless tests need 0666"
	fi
fi

missing=""
for pair in $NEED; do
	tool=${pair%%:*}; pkg=${pair#*:}
	command -v "$tool" >/dev/null 2>&1 || missing="$missing $pkg"
done
/usr/bin/python3 -c 'import pytest' 2>/dev/null || missing="$missing python3-pytest"
for pkg in "$@"; do
	dpkg -s "$pkg" >/dev/null 2>&1 || missing="$missing $pkg"
done
missing=$(echo $missing | tr ' ' '\n' | sort -u | tr '\n' ' ')
[ -z "${missing// /}" ] && exit 0

if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
	echo "deps: installing missing test tools:$missing"
	export DEBIAN_FRONTEND=noninteractive
	apt-get install -y -qq $missing >/tmp/ferry-apt.log 2>&1 ||
	{ apt-get update -qq >>/tmp/ferry-apt.log 2>&1 &&
	  apt-get install -y -qq $missing >>/tmp/ferry-apt.log 2>&1; } ||
	{ echo "deps: apt-get failed, see /tmp/ferry-apt.log"; exit 1; }
	exit 0
fi
echo "deps: missing test tools. Install them with:"
echo "  sudo apt-get install -y $missing"
exit 1
