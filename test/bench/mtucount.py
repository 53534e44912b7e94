#!/usr/bin/python3
"""mtucount.py - why one TCP stream guest->host differs between MTUs, in
counts rather than rates (issue 23 item 3).

Run by test/bench/mtucount.sh inside test/sandbox.sh. For each MTU
(MTUCOUNT_MTUS, default "65520 1500"), starts ferry in namespace mode as
bench.py does (with --stats 1), one iperf3 client guest->host (IPv4,
MTUCOUNT_TIME seconds, default 3), and prints per MiB moved:

  - the guest's TCP: segments sent and their mean size (nstat TcpOutSegs
    and IpExtOutOctets), the ACKs it got (TcpInSegs), retransmissions,
    its last cwnd, MSS, rtt and send window (ss -ti, sampled each 0.5 s);
  - the guest's tap: frames and bytes (ip -s link), so the mean frame the
    guest handed ferry (a GSO frame counts once);
  - ferry: its statistics lines after the run (traffic, TCP counters),
    its voluntary context switches (wake-ups) and CPU seconds per MiB;
  - ferry's host socket (ss -tmi in the host namespace): MSS, its send
    buffer and what sits in it.

Rates taken under load mean little; the counts per MiB are what to
compare between the two MTUs. The basis is iperf3's own count of the
bytes it sent (nstat's IpExtOutOctets counts a GSO frame once, not its
bytes). With MTUCOUNT_ROUNDS > 1 the MTUs alternate and a summary ends
the run: each MTU's rates, their median, and the medians of ferry's CPU,
the whole machine's CPU and ferry's wake-ups per GiB.
"""
import os
import re
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import backends  # noqa: E402
import measure  # noqa: E402
import procs  # noqa: E402


def nstat(be):
    """The guest's SNMP counters (absolute, nstat -az) as a dict."""
    r = procs.run(be.guest(["nstat", "-az", "--json"]), timeout=10)
    import json
    try:
        js = json.loads(r.stdout)
        return js.get("kernel", js)
    except ValueError:
        return {}


def link_stats(be):
    """(tx packets, tx bytes, tx dropped) of the guest's non-loopback link."""
    for i in be.gjson("-s", "link", "show"):
        if i.get("ifname") != "lo":
            tx = i["stats64"]["tx"]
            return tx["packets"], tx["bytes"], tx["dropped"]
    return 0, 0, 0


def ss_guest(be):
    r = procs.run(be.guest(["ss", "-tinH", "dport", "=", str(measure.IPERF_PORT)]),
                  timeout=10)
    return r.stdout


def ss_host():
    """ferry's own socket to the iperf3 server (the host end it writes)."""
    r = procs.run(["ss", "-tmiHn", "dport", "=", str(measure.IPERF_PORT)], timeout=10)
    return r.stdout


def status(pid, key):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return 0


def one(mtu, secs, out, ferry, summary):
    be = backends.Ferry(mtu, out, ferry)
    be.argv = lambda: backends.Ferry.argv(be) + ["--stats", "3600"]
    be.start()
    try:
        srv = measure.Servers(out, "/bin/true")
        srv.ensure("iperf3")
        n0, (p0, b0, drops0) = nstat(be), link_stats(be)
        w0, c0 = status(be.pid, "voluntary_ctxt_switches"), procs.cpu_seconds(be.pid)
        u0, s0 = procs.cpu_split(be.pid)
        m0 = procs.machine_busy_seconds()
        tracer = None
        if os.environ.get("MTUCOUNT_STRACE") == "1":
            tracer = procs.start(["strace", "-c", "-f", "-p", str(be.pid), "-o",
                                  os.path.join(out, f"strace-{mtu}.txt")])
            time.sleep(1)		# strace attaches
        argv = be.guest(["iperf3", "-c", be.server("4"), "-p", str(measure.IPERF_PORT),
                         "-t", str(secs), "-J"])
        jlog = os.path.join(out, f"iperf-{mtu}.json")
        if os.path.exists(jlog):
            os.unlink(jlog)
        p = procs.start(argv, log=jlog)
        samples_g, samples_h = [], []
        while procs.alive(p):
            time.sleep(0.5)		# sampling period, not a wait for a state
            samples_g.append(ss_guest(be))
            samples_h.append(ss_host())
        n1, (p1, b1, drops1) = nstat(be), link_stats(be)
        w1, c1 = status(be.pid, "voluntary_ctxt_switches"), procs.cpu_seconds(be.pid)
        u1, s1 = procs.cpu_split(be.pid)
        m1 = procs.machine_busy_seconds()
        if tracer:
            os.kill(tracer.pid, 2)	# SIGINT: strace prints its table
            tracer.wait(timeout=10)
        os.kill(be.pid, 10)		# SIGUSR1: ferry logs its statistics
        procs.wait_for(lambda: "tcp" in measure._read(be.log), 5)
        time.sleep(0.3)
        d = {k: n1.get(k, 0) - n0.get(k, 0) for k in n1}
        res = measure._read(jlog)
        rate = re.findall(r'"bits_per_second":\s*([\d.e+]+)', res)
        sent = re.findall(r'"sum_sent":\s*{[^}]*?"bytes":\s*(\d+)', res)
        nbytes = int(sent[-1]) if sent else 0
        mib = max(nbytes, 1) / 2**20
        gbit = float(rate[-1]) / 1e9 if rate else 0
        gib = mib / 1024
        summary.setdefault(mtu, []).append(
            (gbit, (c1 - c0) / gib, (m1 - m0) / gib, (w1 - w0) / gib))
        print(f"== MTU {mtu}: {gbit:.2f} Gbit/s "
              f"(load {os.getloadavg()[0]:.1f}), {mib:.0f} MiB sent by iperf3; "
              f"machine {(m1 - m0) / gib:.2f} CPU s/GiB")
        seg = d.get("TcpOutSegs", 0)
        print(f"  guest TCP: {seg / mib:.1f} segments/MiB, mean "
              f"{nbytes / max(seg, 1):.0f} payload bytes; ACKs in "
              f"{d.get('TcpInSegs', 0) / mib:.1f}/MiB; retrans {d.get('TcpRetransSegs', 0)}")
        print(f"  guest tap: {(p1 - p0) / mib:.1f} frames/MiB, mean "
              f"{(b1 - b0) / max(p1 - p0, 1):.0f} bytes, tx dropped {drops1 - drops0}")
        print(f"  ferry: {(w1 - w0) / mib:.2f} wake-ups/MiB, {(c1 - c0) / mib * 1e6:.0f} us CPU/MiB"
              f" (user {(u1 - u0) / mib * 1e6:.0f}, system {(s1 - s0) / mib * 1e6:.0f})")
        if tracer:
            for line in measure._read(os.path.join(out, f"strace-{mtu}.txt")).splitlines():
                f = line.split()
                if len(f) >= 5 and f[3].isdigit():
                    print(f"    {f[-1]:16s} {int(f[3]) / mib:8.1f} calls/MiB"
                          + (f", {f[4]} errors" if len(f) == 6 else ""))
        for k in sorted(d):
            if d[k] and k.startswith("TcpExt") and any(
                    s in k for s in ("Delay", "Pure", "Hp", "Window", "TSQ", "Probe",
                                     "Prune", "Collapse", "Reno", "SACK", "Lost", "Undo")):
                print(f"    {k} {d[k]}")
        for name, smp in (("guest ss", samples_g), ("host ss", samples_h)):
            for s in smp[len(smp) // 2:len(smp) // 2 + 1]:
                keep = [w for w in s.split() if re.match(
                    r"(mss|cwnd|ssthresh|rtt|snd_wnd|rwnd_limited|skmem|notsent|bytes_retrans"
                    r"|pacing_rate|delivery_rate|rcv_space|unacked|Recv-Q|\d+$)", w)]
                print(f"  {name} (mid-run): " + " ".join(keep))
        log = measure._read(be.log)
        for line in log.strip().splitlines()[-8:]:
            if "from guest" in line or "tcp opened" in line:
                print("  ferry: " + line.strip()[:400])
    finally:
        be.stop()
        procs.stop_all()


def main():
    if os.environ.get("FERRY_SANDBOX") != "1":
        raise SystemExit("mtucount.py must run inside test/sandbox.sh")
    root = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
    out = os.path.join(root, "build", "bench", "mtucount")
    os.makedirs(out, exist_ok=True)
    ferry = os.environ.get("FERRY_BIN", os.path.join(root, "ferry"))
    secs = int(os.environ.get("MTUCOUNT_TIME", "3"))
    procs.print_loadavg("at start")
    summary = {}
    mtus = os.environ.get("MTUCOUNT_MTUS", "65520 1500").split()
    for r in range(int(os.environ.get("MTUCOUNT_ROUNDS", "1"))):
        for mtu in mtus[r % len(mtus):] + mtus[:r % len(mtus)]:
            one(int(mtu), secs, out, ferry, summary)
    procs.print_loadavg("at end")
    for mtu, runs in summary.items():
        med = [statistics.median(x[i] for x in runs) for i in range(4)]
        print(f"MTU {mtu}: " + " ".join(f"{x[0]:.2f}" for x in runs)
              + f" Gbit/s, median {med[0]:.2f}; per GiB: ferry {med[1]:.3f} s,"
              f" machine {med[2]:.3f} s, {med[3]:.0f} wake-ups")


if __name__ == "__main__":
    procs.main_guarded(main)
