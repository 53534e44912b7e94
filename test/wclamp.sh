#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# wclamp.sh - build and run the TCP_WINDOW_CLAMP characterisation (test/wclamp.c)
#
# Runs the program twice in its own private user + network namespace (it
# creates them itself): once with the loopback default MTU (65536, MSS 65483)
# and once with MTU 1500 (MSS 1448, like most real paths).  Exit status: 0 if
# "MSG_TRUNC + TCP_WINDOW_CLAMP re-set re-opens a zero window" held in both
# runs, 1 if it did not, 2 on setup failure.  Usage: test/wclamp.sh [extra args]
set -u
dir=$(cd "$(dirname "$0")" && pwd)
bin="$dir/wclamp"
if [ ! -x "$bin" ] || [ "$dir/wclamp.c" -nt "$bin" ]; then
	cc -O2 -Wall -Wextra -Werror -o "$bin" "$dir/wclamp.c" || {
		echo "wclamp.sh: build failed" >&2; exit 2; }
fi
rc=0
for mtu in 65536 1500; do
	echo "### wclamp, loopback MTU $mtu"
	"$bin" -m "$mtu" "$@"
	r=$?
	echo "### exit status $r"
	[ "$r" -gt "$rc" ] && rc=$r
done
exit "$rc"
