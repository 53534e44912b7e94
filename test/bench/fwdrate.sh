#!/bin/bash
# fwdrate.sh - connection rate through a forwarded port (-t), host client
# to a guest nginx (test/bench/fwdrate.py), inside the sandbox like make
# bench. Example: bash test/bench/fwdrate.sh base=/tmp/ferry-main new=./ferry
set -eu
cd "$(dirname "$0")/../.."
exec bash test/sandbox.sh unshare --pid --fork --kill-child --mount-proc \
	/usr/bin/python3 test/bench/fwdrate.py "$@"
