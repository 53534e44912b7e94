#!/bin/bash
# syscalls_sched.sh - where a request/response exchange waits: the
# scheduler's view of the translator and the two applications.
# Usage: bash test/bench/syscalls_sched.sh [ferry|pasta] [pp4|sp4|...]
# Runs test/bench/syscalls.sh for one workload (SYSCALLS_TIME=6) and,
# from outside the sandbox (perf needs the initial namespaces), records
# 2 s of `perf sched record -a` during its untraced run; then
# syscalls_sched.py prints, per hop of the chain (translator -> client,
# client -> translator, translator -> server, server -> translator), how
# many wake-ups crossed CPUs and how long the woken task waited to run.
# Output in build/bench/sched/. Needs perf and root.
set -eu
cd "$(dirname "$0")/../.."
tool=${1:-ferry}
wl=${2:-pp4}
command -v perf >/dev/null || { echo "syscalls_sched: perf missing (apt-get install linux-perf)" >&2; exit 1; }
out=build/bench/sched
mkdir -p "$out"
log=$out/$tool-$wl.log
SYSCALLS_TOOL=$tool SYSCALLS_TIME=6 SYSCALLS_ONLY="^$wl\$" bash test/bench/syscalls.sh >"$log" 2>&1 &
pid=$!
for _ in $(seq 300); do grep -q " pid " "$log" && break; sleep 0.1; done
sleep 2.5	# the servers start and the untraced run begins (no signal for it)
perf sched record -o "$out/$tool-$wl.data" -a -- sleep 2 >/dev/null 2>&1
wait "$pid"
grep untraced "$log" || true
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 test/bench/syscalls_sched.py "$out/$tool-$wl.data" "$tool"
