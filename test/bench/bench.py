#!/usr/bin/python3
"""bench.py - ferry against veth, pasta (Debian 12's and trixie's) and
slirp4netns, side by side; in VM mode against passt (both).

Run by test/bench/run.sh inside test/sandbox.sh (never directly on the
host: every address used is local to the sandbox). Plan:

  for each MTU stage (65520, then 1500):
      start every backend at that MTU (all up at once, idle when not used)
      for each path of the stage:
          for run in 1..N:
              for each backend: one measurement
      stop the backends (peak RSS is read first)

so the runs of one figure are spread over the stage and the tools of a
row are measured minutes apart at most: noise from other work on the
machine hits them alike. A figure is the median of its N runs; the
per-second minimum of a bulk transfer is the lowest over all runs (a
stall must not hide behind a median). A backend that fails to start, or
a path it cannot do, gives n/a with the reason; the run goes on.

Environment: BENCH_RUNS (N, default 3), BENCH_TIME (seconds per run,
default 2; the UDP rate search probes for 1 s less), BENCH_QUICK=1 (N=1,
a subset: ~2 minutes),
BENCH_TOOLS (comma list, default veth,ferry,pasta,pasta-trixie,slirp4netns),
BENCH_VM=0/1 (the VM-mode rows: ferry vm and passt with the qemu guest;
default 1, 0 in quick mode), BENCH_VM_TOOLS (default
ferry,passt,passt-trixie),
BENCH_ONLY (regex on path ids), FERRY_BIN, BENCH_OUT (default build/bench),
BENCH_FLOWS (the 10k-flow row's N, default 10000, lowered to the fd limit),
FERRY_BASE_BIN (another ferry build, column "ferry-base" in every row: an
A/B in one run; run.sh sets it from BENCH_BASE=REV),
BENCH_PUBLISH=1/0 (write doc/bench.svg, doc/bench.md's results and
README.md's chart caption; default: only after a full run).
`bench.py --render build/bench/results.json` re-makes the table, chart
and docs from a saved run (no sandbox needed).
"""
import os
import re
import signal
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import backends  # noqa: E402
import flows  # noqa: E402
import measure  # noqa: E402
import procs  # noqa: E402
import report  # noqa: E402
import vm  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
NS_TOOLS = ("veth", "ferry", "pasta", "pasta-trixie", "slirp4netns")
VM_TOOLS = ("ferry", "passt", "passt-trixie")


def with_base(tools, base):
    """The tool list with "ferry-base" after "ferry" when a base build is
    given (FERRY_BASE_BIN)."""
    if not base:
        return tools
    i = tools.index("ferry") + 1
    return tools[:i] + ("ferry-base",) + tools[i:]


class Path:
    """One row: what is measured, how, and which way is better."""

    def __init__(self, pid, label, unit, better, kind, fam, mtu, tools=None, **args):
        self.id, self.label, self.unit, self.better = pid, label, unit, better
        self.kind, self.fam, self.mtu, self.args = kind, fam, mtu, args
        self.tools = tools	# None: the namespace tools (veth, ferry, the peers)
        self.base = "passt" if tools else "veth"


def plan(quick, vm, vm_tools=VM_TOOLS):
    rows = []
    for mtu in (65520, 1500):
        for fam in ("4", "6"):
            for streams in (1, 4):
                for rev, d in ((False, "g2h"), (True, "h2g")):
                    if quick and (fam == "6" or streams == 4):
                        continue
                    arrow = "guest->host" if not rev else "host->guest"
                    rows.append(Path(f"tcp{streams}-{d}-v{fam}-{mtu}",
                                     f"TCP {streams} stream{'s' if streams > 1 else ''} "
                                     f"{arrow} IPv{fam} MTU {mtu}",
                                     "Gbit/s", "higher", "tcp", fam, mtu,
                                     streams=streams, reverse=rev))
        if mtu != 65520:
            continue
        for rev, d in ((False, "g2h"), (True, "h2g")):
            arrow = "guest->host" if not rev else "host->guest"
            rows.append(Path(f"udp-fixed-{d}-v4-{mtu}",
                             f"UDP {arrow} at 1 Gbit/s offered (loss %)", "Gbit/s",
                             "higher", "udp", "4", mtu, reverse=rev))
            rows.append(Path(f"udp-max-{d}-v4-{mtu}",
                             f"UDP {arrow} best rate with <1% loss", "Gbit/s",
                             "higher", "udpmax", "4", mtu, reverse=rev))
            rows.append(Path(f"udpblast-{d}-v4-{mtu}",
                             f"UDP {arrow} unthrottled sendmmsg (loss %)", "Gbit/s",
                             "higher", "udpblast", "4", mtu, reverse=rev))
        rows.append(Path(f"rr-v4-{mtu}", "TCP request/response p50 IPv4 (sockperf)",
                         "us", "lower", "sockperf", "4", mtu))
        if not quick:
            rows.append(Path(f"rr-v6-{mtu}", "TCP request/response p50 IPv6 (pingpong)",
                             "us", "lower", "pingpong", "6", mtu))
        rows.append(Path(f"http-close-v4-{mtu}", "HTTP Connection: close (conn/s)",
                         "req/s", "higher", "wrk", "4", mtu, close=True))
        rows.append(Path(f"http-keep-v4-{mtu}", "HTTP keep-alive requests/s",
                         "req/s", "higher", "wrk", "4", mtu, close=False))
        if not quick:
            rows.append(Path(f"flows10k-g2h-v4-{mtu}", "TCP 1 stream beside 10k idle TCP "
                             "+ 10k UDP flows (x without)", "x", "higher", "flows", "4", mtu))
    for vu in (False, True) if vm else ():
        for rev, d in ((False, "g2h"), (True, "h2g")):
            arrow = "guest->host" if not rev else "host->guest"
            rows.append(Path(f"vm-{'vu-' if vu else ''}tcp1-{d}-v4",
                             f"VM (qemu TCG{', vhost-user' if vu else ''}): "
                             f"TCP 1 stream {arrow} IPv4",
                             "Gbit/s", "higher", "vm", "4", 65520,
                             tools=list(vm_tools), dir=d, vu=vu))
    return rows


class Bench:
    def __init__(self):
        quick = os.environ.get("BENCH_QUICK") == "1"
        self.quick = quick
        self.n = int(os.environ.get("BENCH_RUNS", "1" if quick else "3"))
        self.secs = int(os.environ.get("BENCH_TIME", "2"))
        # VM rows: more and longer runs in the same boot (a TCG guest's
        # rate moves more from run to run; issue 23 asks for >= 5 runs)
        self.vm_n = int(os.environ.get("BENCH_VM_RUNS", "1" if quick else "5"))
        self.vm_secs = int(os.environ.get("BENCH_VM_TIME", "3"))
        self.base = os.environ.get("FERRY_BASE_BIN")	# an A/B build, or None
        ns_tools, vm_tools = with_base(NS_TOOLS, self.base), with_base(VM_TOOLS, self.base)
        self.tools = os.environ.get("BENCH_TOOLS", ",".join(ns_tools)).split(",")
        self.vm_tools = os.environ.get("BENCH_VM_TOOLS", ",".join(vm_tools)).split(",")
        only = os.environ.get("BENCH_ONLY")
        self.vm = os.environ.get("BENCH_VM", "0" if quick else "1") == "1"
        self.rows = [r for r in plan(quick, self.vm, self.vm_tools)
                     if not only or re.search(only, r.id)]
        self.out = os.path.abspath(os.environ.get("BENCH_OUT", os.path.join(ROOT, "build", "bench")))
        self.work = os.path.join(self.out, "work")
        os.makedirs(self.work, exist_ok=True)
        self.root = ROOT
        self.row_secs = {}	# row id -> seconds its measurements took
        self.ferry = os.environ.get("FERRY_BIN", os.path.join(ROOT, "ferry"))
        self.pingpong = os.path.join(self.out, "pingpong")
        self.udpblast = os.path.join(self.out, "udpblast")
        self.flowsbin = os.path.join(self.out, "flows")
        self.flows_n = flows.flow_count(int(os.environ.get("BENCH_FLOWS", "10000")))
        self.results = {r.id: {t: {"runs": []} for t in self.row_tools(r)} for r in self.rows}
        self.tool_info = {t: {} for r in self.rows for t in self.row_tools(r)}
        pub = os.environ.get("BENCH_PUBLISH")
        self.publish = pub == "1" if pub else not (quick or only or
                                                   "BENCH_TOOLS" in os.environ)

    def row_tools(self, row):
        return row.tools or self.tools

    def log(self, msg):
        print(msg, file=sys.stderr, flush=True)

    def make_backend(self, tool, mtu):
        if tool == "veth":
            return backends.Veth(mtu, self.work)
        if tool == "ferry":
            return backends.Ferry(mtu, self.work, self.ferry)
        if tool == "ferry-base":
            return backends.FerryBase(mtu, self.work, self.base)
        if tool == "pasta":
            return backends.Pasta(mtu, self.work)
        if tool == "pasta-trixie":
            return backends.PastaTrixie(mtu, self.work)
        if tool == "slirp4netns":
            return backends.Slirp(mtu, self.work)
        raise ValueError(tool)

    def start_backend(self, tool, mtu):
        """A started backend, or the error string."""
        why = backends.available(tool)
        if why:
            return why
        be = self.make_backend(tool, mtu)
        try:
            be.start()
        except (backends.BackendError, OSError) as e:
            be.stop()
            return str(e)
        self.servers.ensure("nginx")
        for fam in ("4", "6"):
            if fam in be.addrs and fam not in be.na:
                why = measure.tcp_probe(be, fam)
                if why:
                    be.na[fam] = why
        self.log(f"  {tool} mtu {mtu}: up (pid {be.pid}); guest reaches host at "
                 f"{be.addrs}; n/a: {be.na or 'none'}")
        return be

    def measure(self, be, row):
        a = row.args
        if row.kind == "tcp":
            return measure.iperf(be, row.fam, self.secs, a["streams"], a["reverse"])
        if row.kind == "udp":
            return measure.iperf(be, row.fam, self.secs, reverse=a["reverse"], udp_rate=1e9)
        if row.kind == "udpmax":
            return measure.udp_search(be, row.fam, max(1, self.secs - 1), a["reverse"],
                                      5e8, 5 if self.quick else 7)
        if row.kind == "udpblast":
            return measure.udpblast(be, row.fam, self.secs, a["reverse"], self.udpblast,
                                    self.work)
        if row.kind == "sockperf":
            return measure.sockperf(be, row.fam, self.secs)
        if row.kind == "pingpong":
            return measure.pingpong(be, row.fam, self.secs, self.pingpong)
        if row.kind == "wrk":
            return measure.wrk(be, row.fam, self.secs, a["close"])
        if row.kind == "flows":
            return flows.measure_flows(be, row.fam, self.secs, self.flows_n, self.flowsbin,
                                       self.work)
        raise ValueError(row.kind)

    def server_for(self, row):
        if row.kind == "udpblast":
            return "nginx"	# only for the check; udpblast runs per measurement
        if row.kind == "flows":
            return "flows"	# and iperf3 (one() starts both)
        return {"tcp": "iperf3", "udp": "iperf3", "udpmax": "iperf3", "sockperf": "sockperf",
                "pingpong": "pingpong", "wrk": "nginx"}[row.kind]

    def one(self, be, row, run):
        """One measurement of row on backend be; records it."""
        slot = self.results[row.id][be.name]
        if "na" in slot:
            return
        if not procs.alive(be.proc) and be.proc is not None:
            slot["na"] = f"{be.name} died earlier: " + be.log_tail()
            return
        if row.fam in be.na:
            slot["na"] = be.na[row.fam]
            return
        srv = self.server_for(row)
        why = self.servers.ensure(srv) or (row.kind == "flows" and
                                           self.servers.ensure("iperf3"))
        if why:
            slot["na"] = why
            return
        res = self.measure(be, row)
        if res.get("value") is None:
            if be.proc is not None and not procs.alive(be.proc):
                res["error"] = (f"{be.name} exited ({be.proc.returncode}) during the run: "
                                + be.log_tail())
            slot.setdefault("errors", []).append(res["error"])
            self.servers.restart(srv)	# a half-finished test can wedge iperf3 -s
            if len(slot["errors"]) >= 2 or not slot["runs"] and run == self.n - 1:
                slot["na"] = res["error"]
            self.log(f"    {be.name:12s} run {run + 1}: error: {res['error']}")
            return
        slot["runs"].append(res)
        extra = report.extras(res.get("min"), res.get("loss"), res.get("p99"))
        self.log(f"    {be.name:12s} run {run + 1}: {res['value']:.3f} {row.unit}{extra}")

    def warm_up(self, bes, rows):
        """One unrecorded 1-s iperf3 run guest->host on each backend before
        a stage's first row: the first connection through a freshly started
        path was the slowest run of its row for every tool (veth 18.9
        against 24.5-28.8 Gbit/s, ferry 9.0 against 11.5-13.9, 2026-12-02),
        and the first row took that run as one of its three."""
        if not any(r.kind in ("tcp", "udp", "udpmax", "flows") for r in rows) \
                or self.servers.ensure("iperf3"):
            return
        for be in bes:
            fam = "4" if "4" not in be.na else "6"
            res = measure.iperf(be, fam, 1)
            self.log(f"    {be.name:12s} warm-up: "
                     + (f"{res['value']:.3f} Gbit/s (not recorded)"
                        if res.get("value") is not None else res.get("error", "?")))

    def stage(self, mtu, rows):
        self.log(f"== MTU {mtu}: starting {', '.join(self.tools)}")
        bes = []
        for t in self.tools:
            be = self.start_backend(t, mtu)
            if isinstance(be, str):
                self.log(f"  {t} mtu {mtu}: FAILED to start: {be}")
                for r in rows:
                    self.results[r.id][t]["na"] = f"failed to start: {be}"
                self.tool_info[t].setdefault("start_errors", []).append(be)
            else:
                bes.append(be)
        try:
            self.warm_up(bes, rows)
            for row in rows:
                self.log(f"-- {row.id}: {row.label}")
                t0 = time.time()
                for run in range(self.n):
                    for be in bes:
                        self.one(be, row, run)
                self.row_secs[row.id] = round(time.time() - t0, 1)
        finally:
            for be in bes:
                rss = be.peak_rss_kib()
                if rss:
                    info = self.tool_info[be.name]
                    info["peak_rss_kib"] = max(rss, info.get("peak_rss_kib", 0))
                be.stop()

    def build_tools(self):
        """Compile the C helpers (pingpong.c, udpblast.c, flows.c) into
        BENCH_OUT."""
        for name in ("pingpong", "udpblast", "flows"):
            src = os.path.join(ROOT, "test", "bench", name + ".c")
            r = procs.run(["cc", "-O2", "-Wall", "-Wextra", "-Werror", "-o",
                           os.path.join(self.out, name), src], timeout=60)
            if r.returncode:
                raise SystemExit(f"bench: cannot build {name}.c: " + r.stderr)

    def main(self):
        if os.environ.get("FERRY_SANDBOX") != "1":
            raise SystemExit("bench.py must run inside test/sandbox.sh (use make bench)")
        t0 = time.time()
        self.build_tools()
        self.servers = measure.Servers(self.work, self.pingpong)
        self.servers.add("flows", [self.flowsbin, "serve", str(flows.FLOWS_PORT)],
                         flows.FLOWS_PORT)
        for mtu in (65520, 1500):
            rows = [r for r in self.rows if r.mtu == mtu and r.kind != "vm"]
            if rows:
                self.stage(mtu, rows)
        vm_rows = [r for r in self.rows if r.kind == "vm"]
        if vm_rows:
            self.vm_stage(vm_rows)
        self.finish(time.time() - t0)

    def vm_stage(self, rows):
        """ferry vm and passt (Debian 12's and trixie's), one guest boot
        each per backend: qemu's -netdev stream, then vhost-user (guest
        RAM in a shared memfd); see vm.py. A passt without --vhost-user
        (Debian 12's) gives n/a for that row."""
        self.log(f"== VM mode (qemu guest): {', '.join(self.vm_tools)}")
        why = os.environ.get("BENCH_VM_ERROR") or self.servers.ensure("iperf3")
        opts = ["-f", "-1", "-t", "none", "-u", "none"]
        passt = ["--runas", "0"] + opts
        argvs = {"ferry": [self.ferry, "vm"] + opts,
                 "ferry-base": [self.base or "ferry-base", "vm"] + opts,
                 "passt": ["passt"] + passt,
                 "passt-trixie": [os.path.join(backends.TRIXIE_BIN, "passt")] + passt}
        for vu in (False, True):
            vrows = [r for r in rows if r.args.get("vu", False) == vu]
            for tool, argv in argvs.items() if vrows else ():
                if tool not in self.vm_tools:
                    continue
                err = why or backends.available(tool)
                if vu and not err:
                    err = None if vm.has_vhost_user(
                        argv[:2 if tool.startswith("ferry") else 1]) else (
                        f"this {tool} has no --vhost-user")
                    argv = argv + ["--vhost-user"]
                self.vm_tool(vrows, tool + ("-vu" if vu else ""), tool, argv, err,
                             ("-u",) if vu else ())

    def vm_tool(self, rows, name, tool, argv, err, run_args):
        """One guest boot against tool (argv): its runs into rows."""
        res, info = None, {}
        if not err:
            res, info, err = vm.run_tool(name, argv, ROOT, self.work, self.vm_n, self.vm_secs,
                                         measure.IPERF_PORT, run_args=run_args)
        key = "vu_peak_rss_kib" if run_args else "vm_peak_rss_kib"
        if info.get("peak_rss_kib"):
            self.tool_info[tool][key] = info["peak_rss_kib"]
        for row in rows:
            slot = self.results[row.id][tool]
            if err:
                slot["na"] = err
                self.log(f"    {tool:12s} {row.id}: n/a: {err}")
                continue
            for i, r in enumerate(res[row.args["dir"]]):
                if r["value"] is None:
                    slot.setdefault("errors", []).append(r["error"])
                else:
                    slot["runs"].append(r)
                shown = (f"{r['value']:.3f} Gbit/s{report.extras(r.get('min'), None, None)}"
                         if r["value"] is not None else "error: " + r["error"])
                self.log(f"    {tool:12s} {row.id} run {i + 1}: {shown}")

    def finish(self, elapsed):
        summary = {}
        for row in self.rows:
            per = {}
            for t in self.row_tools(row):
                s = self.results[row.id][t]
                runs = s["runs"]
                if not runs:
                    per[t] = {"na": s.get("na") or "; ".join(s.get("errors", [])) or "not run"}
                    continue
                d = {"median": statistics.median(r["value"] for r in runs),
                     "n": len(runs), "runs": runs}
                mins = [r["min"] for r in runs if r.get("min") is not None]
                if mins:
                    d["min_per_sec"] = min(mins)
                for k in ("p99", "loss"):
                    vals = [r[k] for r in runs if r.get(k) is not None]
                    if vals:
                        d[k] = statistics.median(vals)
                cpu = [r["cpu"] / (r["bytes"] / 2**30) for r in runs
                       if r.get("cpu") is not None and r.get("bytes")]
                if cpu:
                    d["cpu_s_per_gib"] = statistics.median(cpu)
                mcpu = [r["mcpu"] / (r["bytes"] / 2**30) for r in runs
                        if r.get("mcpu") is not None and r.get("bytes")]
                if mcpu:
                    d["machine_cpu_s_per_gib"] = statistics.median(mcpu)
                if s.get("errors"):
                    d["errors"] = s["errors"]
                per[t] = d
            summary[row.id] = per
        report.write_all(self, summary, elapsed)


def render(path):
    """Re-make the table, chart and docs from a saved results.json."""
    import json
    with open(path) as f:
        doc = json.load(f)
    b = Bench()
    b.tools, b.tool_info = doc["tools"], doc["tool_info"]
    b.rows = []
    for r in sorted(doc["rows"], key=lambda x: x.get("base", "veth") != "veth"):
        tools = r.get("tools") if r.get("base", "veth") != "veth" else None
        kind = r.get("kind") or re.sub(r"\d+$", "", r["id"].split("-")[0])
        b.rows.append(Path(r["id"], r["label"], r["unit"], r["better"], kind, r["family"],
                           r["mtu"], tools=tools))
    b.n, b.secs = doc["meta"]["runs"], doc["meta"]["seconds_per_run"]
    report.write_all(b, {r["id"]: r["results"] for r in doc["rows"]}, 0, m=doc["meta"])


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--render":
        render(sys.argv[2])
        return
    b = Bench()

    def on_signal(sig, _frame):
        procs.stop_all()
        sys.exit(128 + sig)
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGHUP, on_signal)
    try:
        b.main()
    finally:
        procs.stop_all()


if __name__ == "__main__":
    main()
