"""vmprof.py - where VM mode spends its effort: CPU and system calls per
GiB of one iperf3 transfer, for ferry vm and passt, stream or vhost-user.

usage (inside the sandbox):
  bash test/sandbox.sh python3 test/bench/vmprof.py [options] CONFIG...
    CONFIG: ferry | ferry-vu | passt | passt-vu, optionally :BINARY
            (ferry-vu:/tmp/ferry.old: another ferry build, for A/B)
    -d g2h|h2g   direction (default g2h)
    -t SECONDS   iperf3 time (default 8)
    -r ROUNDS    rounds per boot (default 2)
    -s           also attach `strace -c -f` to the translator (slows it:
                 read the counts per GiB, not the rate)
    -p           also `perf record -g` the translator (user space only in
                 the sandbox); report in build/bench/vmprof/CONFIG.perf.txt

One guest boot per configuration (vm.run_tool()). The translator's and
qemu's CPU time (utime+stime from /proc) are read before the guest boots
and when it is gone; the boot costs the translator little, so CPU per
GiB is the whole run's CPU over the bytes iperf3 moved. ferry's own
counters (SIGUSR1 dump at exit) are in the tool's log in the work
directory. Configurations given twice alternate (A B A B) so machine
noise hits both alike.
"""
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)

import procs  # noqa: E402
import vm  # noqa: E402

PORT = 5201
NONE = ["-t", "none", "-u", "none"]


def argv_of(cfg, ferry):
    cfg, _, binary = cfg.partition(":")
    base = ([binary or ferry, "vm", "-f", "-1"] if cfg.startswith("ferry")
            else ["passt", "-f", "-1", "--runas", "0"])
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
    rows = []
    try:
        for i, cfg in enumerate(cfgs):
            argv, run_args = argv_of(cfg, ferry)
            name = f"{i}-{cfg}"
            w = Watch(out, name, strace, perf)
            res, _info, err = vm.run_tool(name, argv, ROOT, work, rounds, secs, PORT,
                                          run_args=run_args, dirs=(d,), watch=w)
            if err:
                print(f"{name}: {err}", flush=True)
                continue
            vals = [x["value"] for x in res[d] if x["value"] is not None]
            gib = sum(vals) * secs / 8 / 1.073741824
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
