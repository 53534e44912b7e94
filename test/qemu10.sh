#!/bin/bash
# qemu10.sh - qemu 10.0 for the migration tests, unpacked beside the
# system's qemu (the other VM tests keep theirs).
#
# vhost-user device-state migration (the back-end's state carried in the
# migration stream) needs qemu 10.0; Debian bookworm has 7.2, its
# backports suite 10.0. As root: the machine's own bookworm entry is
# copied with the suite changed to bookworm-backports (written to
# /etc/apt/sources.list.d/ferry-backports.sources; backports are never
# installed from unless asked), and qemu-system-x86 with its data package
# are downloaded from there and unpacked under QEMU10_DIR (default
# /var/cache/ferry/qemu10), not installed. Prints the binary's path.
# Without root, or offline, it fails saying what to do.
set -eu
dir=${QEMU10_DIR:-/var/cache/ferry/qemu10}
bin=$dir/usr/bin/qemu-system-x86_64
if [ -x "$bin" ] && "$bin" --version 2>/dev/null | grep -q 'version 10\.'; then
	echo "$bin"; exit 0
fi
if [ "$(id -u)" != 0 ]; then
	echo "qemu10: qemu 10.0 is needed (Debian bookworm-backports" \
	     "qemu-system-x86): run test/qemu10.sh as root once" >&2
	exit 1
fi
src=/etc/apt/sources.list.d/ferry-backports.sources
if [ ! -e "$src" ]; then
	# the first deb822 stanza naming bookworm, its suite changed
	awk 'BEGIN { RS = ""; ORS = "\n\n" }
	     /Suites:[^\n]*bookworm( |$|\n)/ && !done {
		sub(/Suites:[^\n]*/, "Suites: bookworm-backports"); print; done = 1 }' \
		/etc/apt/sources.list.d/*.sources > "$src.tmp"
	if ! grep -q bookworm-backports "$src.tmp"; then
		rm -f "$src.tmp"
		echo "qemu10: no bookworm entry in the apt sources to copy" >&2
		exit 1
	fi
	mv "$src.tmp" "$src"
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >/tmp/ferry-qemu10.log 2>&1
mkdir -p "$dir/debs"
( cd "$dir/debs" && apt-get download -t bookworm-backports \
	qemu-system-x86 qemu-system-data qemu-system-common \
	>>/tmp/ferry-qemu10.log 2>&1 ) ||
	{ echo "qemu10: download failed, see /tmp/ferry-qemu10.log" >&2; exit 1; }
for d in "$dir"/debs/*.deb; do dpkg -x "$d" "$dir"; done
"$bin" --version | head -1 >&2
echo "$bin"
