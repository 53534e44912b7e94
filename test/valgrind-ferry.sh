#!/bin/sh
# valgrind-ferry.sh - ferry under valgrind memcheck, for the integration
# tests with FERRY_VALGRIND=1 (conftest.py points FERRY here).
#
# Runs $FERRY_VG_BIN (a ferry built without sanitizers: build/ferry-plain)
# with this script's arguments. valgrind gives the program the path it
# was given as argv[0], so when this script is invoked through a link
# named pasta* or passt* (the tests' argv0 modes) it runs ferry through a
# link of that name. Each process logs to $FERRY_VG_LOGDIR/vg.PID.log
# (the child a namespace-mode ferry forks too, until it execs its
# command, which runs natively); conftest.py fails the test that saw a
# report there. Exit status 99: valgrind reported an error.
set -eu
bin=${FERRY_VG_BIN:?FERRY_VG_BIN is not set}
dir=${FERRY_VG_LOGDIR:-/tmp}
name=$(basename "$0")
case $name in
pasta* | passt*)
	mkdir -p "$dir/argv0"
	ln -sf "$bin" "$dir/argv0/$name"
	bin=$dir/argv0/$name ;;
esac
here=$(cd "$(dirname "$(readlink -f "$0")")" && pwd)
exec valgrind -q --error-exitcode=99 --track-origins=yes \
	--leak-check=no --track-fds=no \
	--suppressions="$here/valgrind.supp" \
	--log-file="$dir/vg.%p.log" "$bin" "$@"
