#!/bin/bash
# syscalls.sh - ferry's system calls per request/response exchange
# (test/bench/syscalls.py, strace -c), inside the sandbox like make bench.
# Needs strace, wrk, nginx (run make bench once, or apt-get install them).
set -eu
cd "$(dirname "$0")/../.."
command -v strace >/dev/null || { echo "syscalls: strace missing (apt-get install strace)" >&2; exit 1; }
make -s ferry
exec bash test/sandbox.sh unshare --pid --fork --kill-child --mount-proc \
	/usr/bin/python3 test/bench/syscalls.py "$@"
