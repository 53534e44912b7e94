#!/usr/bin/python3
"""syscalls.py - system calls per request/response exchange in ferry.

Run by test/bench/syscalls.sh inside test/sandbox.sh. Starts ferry (ns
mode, MTU 65520) the way bench.py does, the host-side servers of
measure.py, then for each workload attaches `strace -c -f` to ferry while
one client in the guest runs, and prints ferry's system calls per
exchange, by name:

  pp4, pp6    test/bench/pingpong.c, one 64-byte message in flight
              (IPv4 through the gateway, IPv6 through fe80::1)
  sp4         sockperf ping-pong, 64 bytes (the bench's IPv4 latency row)
  keep1       wrk -c1 keep-alive against nginx (one request in flight)
  keep8       wrk -c8 keep-alive (the bench row's shape)
  close8      wrk -c8 with Connection: close (the bench row's shape)
  close1      wrk -c1 with Connection: close (one connection at a time:
              its steps read one after the other in a SYSCALLS_TRACE)

The exchange count comes from the client (pingpong's count, wrk's
requests). strace slows every call down, so rates under it mean nothing, and
work that normally takes two loop iterations can fall into one (the
reply is there before ferry looks again); the counts per exchange are
what to compare. So each workload first runs once without strace, which
gives ferry's sleeps (voluntary context switches: the loop's wake-ups),
preemptions (involuntary ones)
and CPU time per exchange.

Environment: FERRY_BIN (default ./ferry), SYSCALLS_TIME (seconds per
workload, default 3), SYSCALLS_ONLY (regex on workload names),
SYSCALLS_TOOL=pasta, pasta-trixie or slirp4netns (trace Debian 12's or
trixie's pasta or slirp4netns instead, started as bench.py does, to compare the same workloads call by
call), SYSCALLS_TOOL=relay (test/bench/relay.c in a veth guest, as ab.py's
"relay" variant: the floor; its IPv4 relay is traced, so the IPv6
workload pp6 reads nothing).
SYSCALLS_PERF=1 (count with `perf stat` on the syscall tracepoints
instead of strace: the backend runs at full speed, so its batching is
the untraced one; strace slows every call and merges loop iterations.
Prints the same table from the untraced run, the total over the calls
in PERF_CALLS (every call ferry, pasta and the relay make per exchange;
clock reads are in the vDSO); needs tracefs.)
SYSCALLS_TRACE=1 (strace writes every call, with its arguments, to
build/bench/syscalls/trace-NAME.txt instead of counting: to read what one
exchange or connection does; no counts are printed then).
"""
import os
import re
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ab  # noqa: E402
import backends  # noqa: E402
import measure  # noqa: E402
import procs  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def strace_summary(path):
    """{syscall: calls} from an `strace -c` table."""
    calls = {}
    try:
        with open(path) as f:
            for line in f:
                m = re.match(r"\s*[0-9.]+\s+[0-9.]+\s+\d+\s+(\d+)\s+(?:(\d+)\s+)?(\w+)$",
                             line)
                if m and m.group(3) != "total":
                    calls[m.group(3)] = int(m.group(1))
    except OSError:
        pass
    return calls


def workloads(be, secs, pingpong):
    url = f"http://{be.server('4')}:{measure.HTTP_PORT}/"
    wrk = ["wrk", "-t", "1", "-d", f"{secs}s", "--timeout", "2s"]
    pp = [pingpong, "client"]
    return [
        ("pp4", pp + [be.server("4"), str(measure.PP_PORT), str(secs)], "pingpong"),
        ("pp6", pp + [be.server("6"), str(measure.PP_PORT), str(secs)], "pingpong"),
        ("sp4", ["sockperf", "ping-pong", "--tcp", "-i", be.server("4"), "-p",
                 str(measure.SOCKPERF_PORT), "-t", str(secs), "--full-rtt", "-m", "64"],
         "sockperf"),
        ("keep1", wrk + ["-c", "1", url], "nginx"),
        ("keep8", wrk + ["-c", "8", url], "nginx"),
        ("close8", wrk + ["-c", "8", "-H", "Connection: close", url], "nginx"),
        ("close1", wrk + ["-c", "1", "-H", "Connection: close", url], "nginx"),
    ]


def ctxt_switches(pid):
    """(voluntary, involuntary) context switches of pid: the times it
    slept, and the times a task it woke (or another) preempted it."""
    sw = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            k, _, v = line.partition(":")
            if k.endswith("voluntary_ctxt_switches"):
                sw[k] = int(v)
    return sw.get("voluntary_ctxt_switches", 0), sw.get("nonvoluntary_ctxt_switches", 0)


def untraced(be, name, argv, secs):
    """One run without strace: ferry's wake-ups and CPU us per exchange
    (user space, and the kernel's work in its system calls: for a tap
    write or a loopback sendmsg() that is the receiving stack's too)."""
    w0, c0 = ctxt_switches(be.pid), procs.cpu_split(be.pid)
    r = procs.run(be.guest(argv), timeout=secs + 30)
    w1, c1 = ctxt_switches(be.pid), procs.cpu_split(be.pid)
    n = exchanges(name, r.stdout)
    if not n:
        return f"no result (exit {r.returncode})"
    u, k = (c1[0] - c0[0]) * 1e6 / n, (c1[1] - c0[1]) * 1e6 / n
    return (f"untraced: exchanges {n} ({n / secs:.0f}/s), {be.name} sleeps "
            f"{(w1[0] - w0[0]) / n:.2f}, preempted {(w1[1] - w0[1]) / n:.2f} "
            f"and CPU {u + k:.1f} us per exchange (user {u:.1f}, system {k:.1f})")


PERF_CALLS = ("read", "write", "writev", "readv", "epoll_wait", "epoll_pwait",
              "sendmsg", "recvmsg", "sendto", "recvfrom", "setsockopt",
              "getsockopt", "ioctl", "connect", "socket", "close", "epoll_ctl",
              "shutdown", "pread64", "accept", "accept4", "timerfd_settime")


def perf_counted(be, name, argv, secs, out):
    """SYSCALLS_PERF=1: one run counted by perf stat on the syscall
    tracepoints; (exchanges, {syscall: calls}, the client's result)."""
    log = os.path.join(out, f"perf-{name}.txt")
    evs = []		# (raw_syscalls:sys_enter reads 0 with -p here)
    for call in PERF_CALLS:
        evs += ["-e", f"syscalls:sys_enter_{call}"]
    st = procs.start(["perf", "stat", "-x", ",", "-o", log] + evs + ["-p", str(be.pid)])
    time.sleep(0.5)		# perf attaches (no readiness signal exists)
    r = procs.run(be.guest(argv), timeout=secs + 30)
    os.kill(st.pid, signal.SIGINT)	# perf writes the counts
    try:
        st.wait(timeout=10)
    finally:
        procs.stop(st)
    calls = {}
    with open(log) as f:
        for line in f:
            parts = line.strip().split(",")
            if len(parts) > 2 and parts[0].isdigit():
                # "syscalls:sys_enter_readu": perf marks user-only counting
                ev = re.sub(r"(:u|u)$", "", parts[2]).split(":")[1]
                ev = ev.replace("sys_enter_", "")
                calls[ev] = int(parts[0])
    return exchanges(name, r.stdout), calls, r


def exchanges(name, out):
    if name.startswith("pp"):
        m = re.search(r"count (\d+)", out)
        return int(int(m.group(1)) / 0.9) if m else None	# + the warm-up
    if name.startswith("sp"):
        # the whole run (warm-up included), not the observations
        m = re.search(r"\[Total Run\].*ReceivedMessages=(\d+)", out)
        return int(m.group(1)) if m else None
    m = re.search(r"(\d+) requests in", out)
    return int(m.group(1)) if m else None


def trace(be, name, argv, secs, out):
    """SYSCALLS_TRACE=1: every call the backend makes during one run."""
    log = os.path.join(out, f"trace-{name}.txt")
    st = procs.start(["strace", "-f", "-ttt", "-o", log, "-p", str(be.pid)])
    time.sleep(0.5)		# strace attaches (no readiness signal exists)
    r = procs.run(be.guest(argv), timeout=secs + 30)
    os.kill(st.pid, signal.SIGINT)
    try:
        st.wait(timeout=10)
    finally:
        procs.stop(st)
    print(f"{name:7s} {exchanges(name, r.stdout)} exchanges, trace in {log}", flush=True)


class Relay(ab.RelayVariant):
    """ab.py's relay variant; the process to trace is the IPv4 relay."""
    name = "relay"

    @property
    def pid(self):
        return self.relays[0].pid if self.relays else None


def main():
    secs = int(os.environ.get("SYSCALLS_TIME", "3"))
    only = os.environ.get("SYSCALLS_ONLY")
    out, pingpong = measure.tool_setup("syscalls.py", "syscalls")
    servers = measure.Servers(out, pingpong)
    tool = os.environ.get("SYSCALLS_TOOL", "ferry")
    if tool == "pasta":
        be = backends.Pasta(65520, out)
    elif tool == "pasta-trixie":
        why = backends.available(tool)
        if why:
            raise SystemExit(f"syscalls: {why}")
        be = backends.PastaTrixie(65520, out)
    elif tool == "relay":
        be = Relay(out)
    elif tool == "slirp4netns":
        be = backends.Slirp(65520, out)
    else:
        be = backends.Ferry(65520, out,
                            os.environ.get("FERRY_BIN", os.path.join(ROOT, "ferry")))
    be.start()
    print(f"{be.name} pid {be.pid}; guest reaches the host at {be.addrs}", flush=True)
    for name, argv, srv in workloads(be, secs, pingpong):
        if only and not re.search(only, name):
            continue
        why = servers.ensure(srv)
        if why:
            print(f"{name}: {why}")
            continue
        print(f"{name:7s} {untraced(be, name, argv, secs)}", flush=True)
        log = os.path.join(out, f"strace-{name}.txt")
        if os.environ.get("SYSCALLS_PERF") == "1":
            n, calls, r = perf_counted(be, name, argv, secs, out)
            if not n or not calls:
                print(f"{name}: no result (exit {r.returncode}): {r.stdout[-200:]}")
                continue
            total = sum(calls.values())	# of the calls listed
            parts = " ".join(f"{k} {v / n:.2f}" for k, v in
                             sorted(calls.items(), key=lambda kv: -kv[1]) if v / n >= 0.01)
            print(f"{name:7s} exchanges {n:7d}  syscalls/exchange {total / n:6.2f} "
                  f"(perf): {parts}", flush=True)
            continue
        if os.environ.get("SYSCALLS_TRACE") == "1":
            trace(be, name, argv, secs, out)
            continue
        st = procs.start(["strace", "-c", "-f", "-o", log, "-p", str(be.pid)])
        time.sleep(0.5)		# strace attaches (no readiness signal exists)
        r = procs.run(be.guest(argv), timeout=secs + 30)
        os.kill(st.pid, signal.SIGINT)	# detach: strace writes the table
        try:
            st.wait(timeout=10)
        finally:
            procs.stop(st)
        n = exchanges(name, r.stdout)
        calls = strace_summary(log)
        if not n or not calls:
            print(f"{name}: no result (exit {r.returncode}): {r.stdout[-200:]} {r.stderr[-200:]}")
            continue
        total = sum(calls.values())
        parts = " ".join(f"{k} {v / n:.2f}" for k, v in
                         sorted(calls.items(), key=lambda kv: -kv[1]) if v / n >= 0.01)
        print(f"{name:7s} exchanges {n:7d}  syscalls/exchange {total / n:6.2f}: {parts}",
              flush=True)
    be.stop()


if __name__ == "__main__":
    procs.main_guarded(main)
