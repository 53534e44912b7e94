"""flows.py - the 10k-flow row: many idle flows beside one bulk stream.

One measurement on one backend (issue 23 item 5):

  1. iperf3, one TCP stream guest->host, without the flows (A);
  2. the guest opens N TCP connections to test/bench/flows.c's server on
     the host (`flows tcp`, 256 in SYN-SENT at a time) and N UDP flows
     (`flows udp`: one datagram from each of N sockets, each answered
     once by the server), and holds them, idle;
  3. the translator's RSS (VmRSS) before and after: bytes per flow;
  4. IDLE_S seconds with nothing moving: the translator's CPU time and
     its voluntary context switches (its wake-ups) per second;
  5. iperf3 twice beside the idle flows (B), then the flows closed and
     iperf3 once more without them (A): the figure is median(B) /
     median(A), so drift over the measurement lands on both sides.

The set-up times (ms per 1000 connections, and for the UDP flows) are
wall clock: on a busy machine they move with the load. CPU seconds,
context switches, RSS and the translator's open fds are counts that
do not. N is BENCH_FLOWS (default 10000), lowered to what the fd limit
lets the translator hold: each TCP connection and each UDP flow costs
it a socket, and ferry keeps at most half of RLIMIT_NOFILE less 64 for
each protocol (hard limit 20000 on the machine this was written on).
ferry keeps at most UDP_MAX_FLOWS_DEFAULT (4096) UDP flows and evicts
the least recently active beyond that: `fds` shows what it held.
"""
import os
import re
import resource
import statistics
import time

import measure
import procs

FLOWS_PORT = 5330
IDLE_S = 5
READY_S = 180		# for N connections through a slow translator


def flow_count(want):
    """N within what the fd limit lets a translator hold per protocol
    (ferry's fd_budget(): half the limit less 64), less room for the
    bulk stream and the probes."""
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    return max(1, min(want, hard // 2 - 64 - 100))


def _status(pid, key):
    """A number from /proc/PID/status (e.g. VmRSS in KiB), or None."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return None


def _fds(pid):
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return None


def _wait_ready(p, log, what):
    """The READY line of a holder (flows.c), or raise with its output."""
    def ready():
        text = measure._read(log)
        m = re.search(r"READY .*", text)
        return m.group(0) if m else (None if procs.alive(p) else "died")
    line = procs.wait_for(ready, READY_S, interval=0.1)
    if not line or line == "died":
        tail = " | ".join(measure._read(log).strip().splitlines()[-2:])
        raise RuntimeError(f"{what}: no READY in {READY_S} s ({line or 'timeout'}): {tail}")
    return dict((k, float(v)) for k, v in re.findall(r"(\w+)=([\d.]+)", line))


def measure_flows(be, fam, secs, n, binary, workdir):
    """One measurement (see the module's comment): a result dict."""
    pid = be.pid
    a1 = measure.iperf(be, fam, secs)
    if a1.get("value") is None:
        return {"value": None, "error": "bulk without flows: " + a1["error"]}
    rss0, fds0 = _status(pid, "VmRSS") if pid else None, _fds(pid) if pid else None
    holders, out = [], {"flows": n, "loadavg": os.getloadavg()[0]}
    try:
        for proto in ("tcp", "udp"):
            log = os.path.join(workdir, f"flows-{be.name}-{be.mtu}-{proto}.log")
            if os.path.exists(log):
                os.unlink(log)
            p = procs.start(be.guest([binary, proto, be.server(fam).split("%")[0],
                                      str(FLOWS_PORT), str(n)]), log=log)
            holders.append(p)
            got = _wait_ready(p, log, f"{proto} flows")
            out[f"{proto}_ms_per_1000"] = round(got["ms"] * 1000 / n, 1)
            out.update({f"{proto}_{k}": int(v) for k, v in got.items() if k != "ms"})
        if pid:
            out["rss_kib_before"], out["rss_kib_after"] = rss0, _status(pid, "VmRSS")
            out["fds_before"], out["fds"] = fds0, _fds(pid)
            if rss0 and out["rss_kib_after"]:
                out["rss_bytes_per_flow"] = round((out["rss_kib_after"] - rss0) * 1024
                                                  / (2 * n))
            c0, w0 = procs.cpu_seconds(pid), _status(pid, "voluntary_ctxt_switches")
            t0 = time.monotonic()
            time.sleep(IDLE_S)		# a measurement window, not a wait for a state
            dt = time.monotonic() - t0
            c1, w1 = procs.cpu_seconds(pid), _status(pid, "voluntary_ctxt_switches")
            out["idle_cpu_pct"] = round((c1 - c0) / dt * 100, 2)
            if w0 is not None and w1 is not None:
                out["idle_wakeups_per_s"] = round((w1 - w0) / dt, 1)
        with_flows = [measure.iperf(be, fam, secs) for _ in range(2)]
    except RuntimeError as e:
        return {"value": None, "error": str(e)}
    finally:
        for p in holders:
            procs.stop(p)
    a2 = measure.iperf(be, fam, secs)
    without = [r for r in (a1, a2) if r.get("value") is not None]
    with_ok = [r for r in with_flows if r.get("value") is not None]
    if not with_ok:
        return {"value": None, "error": "bulk beside the flows: " + with_flows[0]["error"]}
    a, b = statistics.median(r["value"] for r in without), \
        statistics.median(r["value"] for r in with_ok)
    mins = [r["min"] for r in with_ok if r.get("min") is not None]
    out.update({"value": b / a, "bulk_without": a, "bulk_with": b,
                "bulk_min_per_sec": min(mins) if mins else None})
    for key, runs in (("cpu_s_per_gib_without", without), ("cpu_s_per_gib_with", with_ok)):
        vals = [r["cpu"] / (r["bytes"] / 2**30) for r in runs
                if r.get("cpu") is not None and r.get("bytes")]
        if vals:
            out[key] = round(statistics.median(vals), 3)
    return out
