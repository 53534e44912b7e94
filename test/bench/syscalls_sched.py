#!/usr/bin/python3
"""syscalls_sched.py DATA TOOL - the wake-ups of one request/response
chain in a `perf sched record` file (test/bench/syscalls_sched.sh).

The chain: the translator (ferry, or pasta whose process is passt.avx2)
and the applications it wakes (pingpong, sockperf). The translator is the
process of that name that woke an application most often (other helpers
may run other ferries at the same time); the applications are the ones
it woke or that woke it. For each hop (waker -> wakee) it prints the
wake-ups, the share whose wakee ran on another CPU than the waker's
(a cross-CPU wake-up: an IPI, and on a busy CPU a wait for the running
task's preemption), and the time from the wake-up to the wakee running
(median and 90th percentile), then each task's run time per wake-up.
"""
import collections
import re
import statistics
import subprocess
import sys

APPS = ("pingpong", "sockperf")
LINE = re.compile(r"\s*(\S.*?)\s+(\d+)\s+\[(\d+)\]\s+([\d.]+):\s+(\S+):\s+(.*)")


def events(data):
    out = subprocess.run(["perf", "script", "-i", data, "-F",
                          "comm,pid,cpu,time,event,trace"],
                         capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        m = LINE.match(line)
        if m:
            comm, pid, cpu, t, ev, tr = m.groups()
            yield comm, int(pid), int(cpu), float(t), ev, tr


def chain(evs, tool):
    """(translator pid, application pids)."""
    woke = collections.Counter()
    for comm, pid, _, _, ev, tr in evs:
        w = re.search(r"comm=(\S+) pid=(\d+)", tr)
        if ev == "sched:sched_waking" and w and w.group(1) in APPS and comm.startswith(tool):
            woke[pid] += 1
    if not woke:
        raise SystemExit(f"no {tool} waking {'/'.join(APPS)} in the recording")
    tp = woke.most_common(1)[0][0]
    apps = set()
    for comm, pid, _, _, ev, tr in evs:
        w = re.search(r"comm=(\S+) pid=(\d+)", tr)
        if ev != "sched:sched_waking" or not w:
            continue
        if pid == tp and w.group(1) in APPS:
            apps.add(int(w.group(2)))
        elif int(w.group(2)) == tp and comm in APPS:
            apps.add(pid)
    return tp, apps


def main():
    data, tool = sys.argv[1], sys.argv[2]
    tool = "passt" if tool == "pasta" else tool
    evs = list(events(data))
    tp, apps = chain(evs, tool)
    members = apps | {tp}
    name = {p: ("T" if p == tp else f"app{p}") for p in members}
    pend, start = {}, {}
    lat, cross = collections.defaultdict(list), collections.Counter()
    run = collections.defaultdict(float)
    for _, pid, cpu, t, ev, tr in evs:
        if ev == "sched:sched_waking":
            wp = int(re.search(r"pid=(\d+)", tr).group(1))
            if wp in members and pid in members:
                pend[wp] = (t, f"{name[pid]} -> {name[wp]}", cpu)
        elif ev == "sched:sched_switch":
            s = re.search(r"prev_pid=(\d+).*next_pid=(\d+)", tr)
            prev, nxt = int(s.group(1)), int(s.group(2))
            if prev in start:
                run[prev] += t - start.pop(prev)
            if nxt in members:
                start[nxt] = t
            if nxt in pend:
                tw, hop, wcpu = pend.pop(nxt)
                lat[hop].append((t - tw) * 1e6)
                cross[hop] += cpu != wcpu
    print(f"translator T = pid {tp}, applications {sorted(apps)}")
    for hop in sorted(lat):
        v = sorted(lat[hop])
        print(f"  {hop:20s} {len(v):6d} wake-ups, cross-CPU {cross[hop] / len(v):.2f}, "
              f"wake-up to running p50 {statistics.median(v):6.1f} us, p90 {v[int(len(v) * .9)]:6.1f} us")
    n = max(len(v) for v in lat.values())
    for p in sorted(members):
        print(f"  run time {name[p]:10s} {run[p] * 1e6 / n:6.1f} us per exchange")


if __name__ == "__main__":
    main()
