"""flows.py - the 10k-flow row: many idle flows beside one bulk stream.

One measurement on one backend (issue 23 item 5):

  1. iperf3, one TCP stream guest->host and one host->guest, without
     the flows (A): host->guest is where ferry's retransmission timer
     is re-armed by every ACK, so a timer that walked every connection
     would come every ~10 ms;
  2. the guest opens N TCP connections to test/bench/flows.c's server on
     the host (`flows tcp`, 256 in SYN-SENT at a time) and N UDP flows
     (`flows udp`: one datagram from each of N sockets, each answered
     once by the server), and holds them, idle;
  3. the translator's RSS (VmRSS) before and after: bytes per flow;
  4. IDLE_S seconds with nothing moving: the translator's CPU time and
     its voluntary context switches (its wake-ups) per second;
  5. the same twice beside the idle flows (B), then the flows closed and
     once more without them (A): per direction median(B) / median(A),
     so drift over the measurement lands on both sides; the figure is
     the lower of the two directions. Also per direction: the
     translator's CPU per GiB, and its user part alone (where a timer
     that walks every connection shows), with and without the flows.

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


def _user_cpu(pid):
    """User CPU seconds of pid (where a scan of idle connections would
    show), or None."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            st = f.read()
    except OSError:
        return None
    return int(st[st.rindex(")") + 2:].split()[11]) / os.sysconf("SC_CLK_TCK")


def _bulk(be, fam, secs, reverse):
    """measure.iperf() with the translator's user CPU seconds added."""
    u0 = _user_cpu(be.pid) if be.pid else None
    r = measure.iperf(be, fam, secs, reverse=reverse)
    u1 = _user_cpu(be.pid) if be.pid else None
    if u0 is not None and u1 is not None:
        r["ucpu"] = u1 - u0
    return r


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


DIRS = (("g2h", False), ("h2g", True))


def _bulk_round(be, fam, secs):
    """One bulk run each way: {"g2h": result, "h2g": result}."""
    return {d: _bulk(be, fam, secs, rev) for d, rev in DIRS}


def _open_flows(be, fam, n, binary, workdir, holders, out):
    """Start the two holders (flows.c tcp/udp) and wait for them; their
    set-up figures into out. Raises RuntimeError."""
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


def _idle(pid, out, rss0, fds0, n):
    """The translator with the flows open and idle: RSS per flow, fds, CPU
    and wake-ups over IDLE_S seconds, into out."""
    out["rss_kib_before"], out["rss_kib_after"] = rss0, _status(pid, "VmRSS")
    out["fds_before"], out["fds"] = fds0, _fds(pid)
    if rss0 and out["rss_kib_after"]:
        out["rss_bytes_per_flow"] = round((out["rss_kib_after"] - rss0) * 1024 / (2 * n))
    c0, w0 = procs.cpu_seconds(pid), _status(pid, "voluntary_ctxt_switches")
    t0 = time.monotonic()
    time.sleep(IDLE_S)		# a measurement window, not a wait for a state
    dt = time.monotonic() - t0
    c1, w1 = procs.cpu_seconds(pid), _status(pid, "voluntary_ctxt_switches")
    out["idle_cpu_pct"] = round((c1 - c0) / dt * 100, 2)
    if w0 is not None and w1 is not None:
        out["idle_wakeups_per_s"] = round((w1 - w0) / dt, 1)


def _summarise(out, without, with_flows):
    """Per direction: the rates, their ratio, CPU and user CPU per GiB,
    with and without the flows; the figure is the lower ratio. Returns
    out, or an error dict."""
    ratios = []
    for d, _ in DIRS:
        wo = [r[d] for r in without if r[d].get("value") is not None]
        wi = [r[d] for r in with_flows if r[d].get("value") is not None]
        if not wo or not wi:
            bad = [r[d] for r in without + with_flows if r[d].get("value") is None]
            return {"value": None, "error": f"bulk {d}: " + bad[0]["error"]}
        a = statistics.median(r["value"] for r in wo)
        b = statistics.median(r["value"] for r in wi)
        ratios.append(b / a)
        out.update({f"ratio_{d}": round(b / a, 3), f"bulk_without_{d}": a,
                    f"bulk_with_{d}": b})
        for key, runs in (("without", wo), ("with", wi)):
            for cpu, name in (("cpu", "cpu_s_per_gib_"), ("ucpu", "user_ms_per_gib_")):
                vals = [r[cpu] / (r["bytes"] / 2**30) for r in runs
                        if r.get(cpu) is not None and r.get("bytes")]
                if vals:
                    v = statistics.median(vals)
                    out[f"{name}{key}_{d}"] = round(v * 1000, 1) if cpu == "ucpu" \
                        else round(v, 3)
    out["value"] = min(ratios)
    return out


def measure_flows(be, fam, secs, n, binary, workdir):
    """One measurement (see the module's comment): a result dict."""
    pid = be.pid
    a1 = _bulk_round(be, fam, secs)
    rss0, fds0 = (_status(pid, "VmRSS"), _fds(pid)) if pid else (None, None)
    holders, out = [], {"flows": n, "loadavg": os.getloadavg()[0]}
    try:
        _open_flows(be, fam, n, binary, workdir, holders, out)
        if pid:
            _idle(pid, out, rss0, fds0, n)
        with_flows = [_bulk_round(be, fam, secs) for _ in range(2)]
    except RuntimeError as e:
        return {"value": None, "error": str(e)}
    finally:
        for p in holders:
            procs.stop(p)
    a2 = _bulk_round(be, fam, secs)
    return _summarise(out, [a1, a2], with_flows)
