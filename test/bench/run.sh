#!/bin/bash
# run.sh - `make bench`: ferry against veth, pasta (Debian 12's and
# trixie's) and slirp4netns; passt (both) in VM mode.
#
# Installs the benchmark tools when missing (as root, with apt-get), then
# runs test/bench/bench.py inside test/sandbox.sh: a private user+network
# namespace whose uplink goes nowhere, so no packet leaves the machine.
# Output: a table on stdout, build/bench/results.json, results.md and
# bench.svg; after a full run also doc/bench.svg and the results section
# of doc/bench.md. Knobs (environment): see the top of bench.py
# (BENCH_RUNS, BENCH_TIME, BENCH_QUICK=1, BENCH_TOOLS, BENCH_ONLY), and
# BENCH_BASE=REV here (an A/B against that revision's ferry, every row).
set -eu
cd "$(dirname "$0")/../.."

NEED="iperf3:iperf3 sockperf:sockperf wrk:wrk nginx:nginx-light pasta:passt
slirp4netns:slirp4netns nsenter:util-linux ip:iproute2 cc:gcc /usr/bin/python3:python3"
missing=""
for pair in $NEED; do
	command -v "${pair%%:*}" >/dev/null 2>&1 || missing="$missing ${pair#*:}"
done
if [ -n "$missing" ]; then
	if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
		echo "bench: missing tools; install them with: apt-get install -y$missing" >&2
		exit 1
	fi
	echo "bench: installing$missing" >&2
	export DEBIAN_FRONTEND=noninteractive
	apt-get install -y -qq $missing >/tmp/ferry-bench-apt.log 2>&1 ||
	{ apt-get update -qq >>/tmp/ferry-bench-apt.log 2>&1 &&
	  apt-get install -y -qq $missing >>/tmp/ferry-bench-apt.log 2>&1; } ||
	{ echo "bench: apt-get failed, see /tmp/ferry-bench-apt.log" >&2; exit 1; }
fi
make -s ferry	# up to date with the sources (cheap when it is)
# BENCH_BASE=REV: that revision's ferry beside this one in every row
# (column ferry-base: an A/B in one run), built once from git archive
# into build/bench-base/REV.
if [ -n "${BENCH_BASE:-}" ]; then
	base=build/bench-base/$BENCH_BASE
	if [ ! -x "$base/ferry" ]; then
		rm -rf "$base" && mkdir -p "$base"
		git archive "$BENCH_BASE" | tar -x -C "$base" &&
		make -s -C "$base" ferry >/tmp/ferry-bench-base.log 2>&1 ||
		{ echo "bench: cannot build $BENCH_BASE, see /tmp/ferry-bench-base.log" >&2; exit 1; }
	fi
	export FERRY_BASE_BIN=$PWD/$base/ferry
fi
# A current passt/pasta beside Debian 12's: trixie's, unpacked under
# build/peers (test/bench/peers.sh; needs the network, so before the
# sandbox). Without it its columns are n/a with this reason.
if ! bash test/bench/peers.sh 2>/tmp/ferry-bench-peers.log; then
	BENCH_TRIXIE_ERROR="trixie passt: $(tail -n 1 /tmp/ferry-bench-peers.log)"
	export BENCH_TRIXIE_ERROR
fi
# VM-mode rows need the qemu guest of test/guest (built outside the
# sandbox: a first build installs packages).
vm_default=1; [ "${BENCH_QUICK:-}" = 1 ] && vm_default=0
if [ "${BENCH_VM:-$vm_default}" = 1 ] &&
   ! test/guest/build.sh >/tmp/ferry-bench-guest.log 2>&1; then
	export BENCH_VM_ERROR="guest build failed: $(tail -n 2 /tmp/ferry-bench-guest.log | tr '\n' ' ')"
fi
# A PID namespace of its own inside the sandbox: whatever happens to the
# run (Ctrl-C, kill -9 of the whole chain), the kernel ends every process
# it started when bench.py (PID 1 there) ends; bench.py itself also stops
# each process it started, by PID, on every exit path.
exec bash test/sandbox.sh unshare --pid --fork --kill-child --mount-proc \
	/usr/bin/python3 test/bench/bench.py "$@"
