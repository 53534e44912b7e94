#!/bin/bash
# mtucount.sh - one TCP stream guest->host at each MTU, in counts
# (test/bench/mtucount.py), inside the sandbox like make bench.
set -eu
cd "$(dirname "$0")/../.."
make -s ferry
exec bash test/sandbox.sh unshare --pid --fork --kill-child --mount-proc \
	/usr/bin/python3 test/bench/mtucount.py "$@"
