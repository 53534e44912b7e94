"""vmprof.py - where VM mode spends its effort: CPU and system calls per
GiB of one iperf3 transfer, for ferry vm and passt, stream or vhost-user.

usage (inside the sandbox):
  bash test/sandbox.sh python3 test/bench/vmprof.py [options] CONFIG...
    CONFIG: ferry | ferry-vu | passt | passt-vu, optionally :BINARY
            (ferry-vu:/tmp/ferry.old: another ferry build, for A/B;
            passt-vu:build/peers/trixie/bin/passt: trixie's passt)
    -d g2h|h2g   direction (default g2h)
    -t SECONDS   iperf3 time (default 8)
    -r ROUNDS    rounds per boot (default 2)
    -s           also attach `strace -c -f` to the translator (slows it:
                 read the counts per GiB, not the rate)
    -p           also `perf record -g` the translator (user space only in
                 the sandbox); report in build/bench/vmprof/CONFIG.perf.txt

One guest boot per configuration (vm.run_tool()). The translator's CPU
time (utime+stime from /proc) is read before the guest boots and when it
is gone; the boot costs the translator little, so CPU per GiB is the
whole run's CPU over the bytes iperf3 moved. qemu's CPU (the guest's
emulated work, boot excluded) is sampled while iperf3's data connection
is up (two established sockets on the server's port). The guest prints
its /proc/net/netstat, /proc/net/snmp, virtio interrupts and /proc/stat
around each iperf3 run: a second table has, per GiB, the guest's pure
ACKs received (TcpExt TCPPureAcks), those its header prediction took
(TCPHPAcks), its virtio interrupts and its busy share; and ferry's
frames to the guest (its stats at exit, in the tool's log in the work
directory). Configurations given twice alternate (A B A B) so machine
noise hits both alike.
"""
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)

import procs  # noqa: E402
import vm  # noqa: E402

PORT = 5201
NONE = ["-t", "none", "-u", "none"]

# vm.GUEST_SCRIPT with the guest's counters printed around each run
SNAP = """snap() {{
    echo "SNAP-BEGIN $1"
    cat /proc/net/netstat /proc/net/snmp
    grep virtio /proc/interrupts
    head -1 /proc/stat
    echo "SNAP-END $1"
}}
"""
GUEST_SCRIPT = vm.GUEST_SCRIPT.replace(
    'echo "BENCH-BEGIN $d"', 'snap a\n        echo "BENCH-BEGIN $d"').replace(
    'echo "BENCH-END $d $?"', 'echo "BENCH-END $d $?"\n        snap b')
GUEST_SCRIPT = GUEST_SCRIPT.replace(". /run/ferry/dhcp.env", SNAP + ". /run/ferry/dhcp.env", 1)


def snap_values(text):
    """{counter: value} of one snapshot: TcpExt.X, Tcp.X, irq.NAME, cpu.busy,
    cpu.all (jiffies)."""
    v, heads = {}, {}
    for line in text.splitlines():
        parts = line.split()
        if not parts:
            continue
        if parts[0].endswith(":") and len(parts) > 1 and not parts[1].lstrip("-").isdigit():
            heads[parts[0]] = parts[1:]
        elif parts[0] in heads:
            for k, x in zip(heads[parts[0]], parts[1:]):
                v[parts[0][:-1] + "." + k] = int(x)
        elif parts[0] == "cpu":
            n = [int(x) for x in parts[1:9]]
            v["cpu.all"] = sum(n)
            v["cpu.busy"] = sum(n) - n[3] - n[4]
        elif "virtio" in line and parts[0].endswith(":"):
            counts = [int(x) for x in parts[1:] if x.isdigit()]
            v["irq." + parts[-1]] = sum(counts)
    return v


def guest_deltas(out):
    """Counter increases summed over every (before, after) pair."""
    snaps = re.findall(r"SNAP-BEGIN (\w)\n(.*?)SNAP-END \1", out, re.S)
    total, before = {}, None
    for tag, body in snaps:
        vals = snap_values(body)
        if tag == "a":
            before = vals
        elif before is not None:
            for k, x in vals.items():
                total[k] = total.get(k, 0) + x - before.get(k, x)
            before = None
    return total


class QemuSampler(threading.Thread):
    """qemu's CPU while iperf3's data connection is up: every 50 ms, find
    the qemu of this socket (its command line names it), count the
    established sockets on the server's port, and add up qemu's CPU over
    the samples that saw the transfer on both ends."""

    def __init__(self, sock):
        super().__init__(daemon=True)
        self.sock, self.cpu, self.secs = sock, 0.0, 0.0
        self.pid, self.est_max = None, 0
        self.done = threading.Event()

    def run(self):
        pid, last = None, None
        while not self.done.wait(0.05):
            if pid is None:
                pid = self.pid = find_qemu(self.sock)
                continue
            cpu = procs.cpu_seconds(pid)
            if cpu is None:
                return
            now = time.monotonic()
            est = established(PORT)
            self.est_max = max(self.est_max, est)
            if est >= 2:
                if last is not None:
                    self.cpu += cpu - last[0]
                    self.secs += now - last[1]
                last = (cpu, now)
            else:
                last = None


def find_qemu(sock):
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/cmdline", "rb") as f:
                cmd = f.read()
        except OSError:
            continue
        # argv[0]: not the `timeout` run.sh starts it under
        if b"qemu-system" in cmd.split(b"\0")[0] and sock.encode() in cmd:
            return int(d)
    return None


def established(port):
    """Established TCP sockets whose local port is port."""
    n, hexport = 0, f":{port:04X}"
    for t in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(t) as f:
                for line in f.readlines()[1:]:
                    p = line.split()
                    if p[1].endswith(hexport) and p[3] == "01":
                        n += 1
        except OSError:
            pass
    return n


def ferry_frames(log):
    """(frames from the guest, frames to it) of ferry's last stats line."""
    try:
        with open(log, errors="replace") as f:
            m = re.findall(r"from guest (\d+) frames \d+ bytes, to guest (\d+) frames", f.read())
    except OSError:
        return None
    return (int(m[-1][0]), int(m[-1][1])) if m else None


def argv_of(cfg, ferry):
    cfg, _, binary = cfg.partition(":")
    base = ([binary or ferry, "vm", "-f", "-1"] if cfg.startswith("ferry")
            else [binary or "passt", "-f", "-1", "--runas", "0"])
    vu = cfg.endswith("-vu")
    return base + NONE + (["--vhost-user"] if vu else []), (("-u",) if vu else ())


class Watch:
    """Attach strace/perf to the translator once it runs; CPU before/after."""

    def __init__(self, out, name, strace, perf):
        self.out, self.name, self.strace, self.perf = out, name, strace, perf
        self.tracers = []
        self.cpu0 = None

    def __call__(self, pid):
        self.pid = pid
        self.cpu0 = procs.cpu_seconds(pid)
        self.m0 = procs.machine_busy_seconds()
        if self.strace:
            self.tracers.append(procs.start(
                ["strace", "-c", "-f", "-p", str(pid), "-o",
                 os.path.join(self.out, self.name + ".strace.txt")]))
        if self.perf:
            self.tracers.append(procs.start(
                ["perf", "record", "-g", "-p", str(pid), "-o",
                 os.path.join(self.out, self.name + ".perf.data")]))

    def before_stop(self):
        self.cpu1 = procs.cpu_seconds(self.pid)
        self.m1 = procs.machine_busy_seconds()
        for t in self.tracers:
            t.send_signal(signal.SIGINT)
            try:
                t.wait(timeout=20)
            except subprocess.TimeoutExpired:
                procs.stop(t)


def main():
    args, cfgs = sys.argv[1:], []
    d, secs, rounds, strace, perf = "g2h", 8, 2, False, False
    while args:
        a = args.pop(0)
        if a == "-d":
            d = args.pop(0)
        elif a == "-t":
            secs = int(args.pop(0))
        elif a == "-r":
            rounds = int(args.pop(0))
        elif a == "-s":
            strace = True
        elif a == "-p":
            perf = True
        else:
            cfgs.append(a)
    for tool in (["strace"] if strace else []) + (["perf"] if perf else []):
        if not shutil.which(tool):
            raise SystemExit(f"vmprof: {tool} is missing (apt-get install {tool})")
    out = os.path.join(ROOT, "build", "bench", "vmprof")
    os.makedirs(out, exist_ok=True)
    ferry = os.environ.get("FERRY_BIN", os.path.join(ROOT, "ferry"))
    srv = procs.start(["iperf3", "-s", "-p", str(PORT)])
    procs.wait_for(lambda: procs.listening(PORT), 10)
    work = tempfile.mkdtemp(prefix="vmprof.")
    rows, grows = [], []
    try:
        for i, cfg in enumerate(cfgs):
            argv, run_args = argv_of(cfg, ferry)
            name = f"{i}-{cfg}".replace("/", "_").replace(":", "_")	# a file name
            w = Watch(out, name, strace, perf)
            qs = QemuSampler(os.path.join(work, f"vm-{name}", "sock"))
            qs.start()
            try:
                res, info, err = vm.run_tool(name, argv, ROOT, work, rounds, secs, PORT,
                                             run_args=run_args, dirs=(d,), watch=w,
                                             script_text=GUEST_SCRIPT)
            finally:
                qs.done.set()
                qs.join()
            if err:
                print(f"{name}: {err}", flush=True)
                continue
            vals = [x["value"] for x in res[d] if x["value"] is not None]
            gib = sum(vals) * secs / 8 / 1.073741824
            g = guest_deltas(info.get("out", ""))
            fr = ferry_frames(os.path.join(work, f"vm-{name}", "log"))
            irq = sum(x for k, x in g.items() if k.startswith("irq."))

            def per(x):
                return f"{x / gib:.0f}" if gib and x is not None else "-"
            grow = [name, f"{qs.cpu / gib:.2f}" if gib else "-",
                    per(g.get("TcpExt.TCPPureAcks")), per(g.get("TcpExt.TCPHPAcks")),
                    per(irq), per(g.get("Tcp.InSegs")), per(g.get("Tcp.OutSegs")),
                    f"{g['cpu.busy'] / g['cpu.all']:.2f}" if g.get("cpu.all") else "-",
                    per(fr[0]) if fr else "-", per(fr[1]) if fr else "-"]
            grows.append(grow)
            if not qs.cpu:
                print(f"{name}: qemu pid {qs.pid}, at most {qs.est_max} sockets "
                      f"on port {PORT}", flush=True)
            print(" | ".join(grow), flush=True)
            cpu = (w.cpu1 - w.cpu0) if w.cpu0 is not None else None
            row = [name, " ".join(f"{v:.2f}" for v in vals),
                   f"{cpu / gib:.2f}" if cpu is not None and gib else "-",
                   f"{(w.m1 - w.m0) / gib:.1f}" if gib else "-"]
            if strace:
                row.append(strace_per_gib(os.path.join(out, name + ".strace.txt"), gib))
            if perf:
                perf_report(os.path.join(out, name + ".perf.data"),
                            os.path.join(out, name + ".perf.txt"))
            rows.append(row)
            print(" | ".join(row), flush=True)
    finally:
        procs.stop(srv)
        procs.stop_all()
    print(f"\n{d}, {rounds} x {secs} s per boot: Gbit/s per run | translator "
          "CPU s/GiB | machine busy s/GiB (boot included)"
          + (" | syscalls per GiB" if strace else ""))
    for r in rows:
        print(" | ".join(r))
    print("\nper GiB: run | qemu CPU s (transfers only) | guest pure ACKs in | "
          "of them header-predicted (TCPHPAcks) | guest virtio interrupts | "
          "guest segments in | out | guest busy share | translator frames from "
          "guest | to guest (ferry only)")
    for r in grows:
        print(" | ".join(r))
    procs.print_loadavg("at end")


def strace_per_gib(path, gib):
    """`strace -c` summary as 'name count/GiB' for the main calls."""
    try:
        with open(path) as f:
            text = f.read()
    except OSError:
        return "-"
    calls = []
    for line in text.splitlines():
        m = re.match(r"\s*[\d.]+\s+[\d.]+\s+\d+\s+(\d+)\s+(?:\d+\s+)?(\w+)$", line)
        if m and m.group(2) != "total":
            calls.append((int(m.group(1)), m.group(2)))
    calls.sort(reverse=True)
    return ", ".join(f"{n} {c / gib:.0f}" for c, n in calls[:8]) if gib else "-"


def perf_report(data, txt):
    with open(txt, "w") as f:
        subprocess.run(["perf", "report", "-i", data, "--stdio", "--no-children",
                        "--percent-limit", "1.5"], stdout=f, stderr=subprocess.DEVNULL,
                       timeout=300)


if __name__ == "__main__":
    main()
