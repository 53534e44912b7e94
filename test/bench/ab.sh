#!/bin/bash
# ab.sh - alternate ferry builds and peers on the latency rows
# (test/bench/ab.py), inside the sandbox like make bench. Example:
#   bash test/bench/ab.sh base=ferry:/tmp/ferry-main new=ferry:./ferry pasta=pasta
set -eu
cd "$(dirname "$0")/../.."
exec bash test/sandbox.sh unshare --pid --fork --kill-child --mount-proc \
	/usr/bin/python3 test/bench/ab.py "$@"
