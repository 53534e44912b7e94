#!/usr/bin/python3
"""ab.py - alternate ferry builds (and peers) on the latency rows.

Run by test/bench/ab.sh inside test/sandbox.sh. On this shared 2-core
machine the absolute latency moves by tens of percent from minute to
minute, so a change worth a few percent only shows when the variants are
measured in turn, round after round, and compared within each round.
Every variant is started once (namespace mode, at MTU AB_MTU, default
65520); then for each of ROUNDS rounds each workload runs once on each variant, in an order
rotated every round. The report: each variant's median p50 per workload,
its lowest p50 (a run that found the machine quiet: under load the runs
are bimodal, ~60 us when a CPU is free, 200-350 us when not), and the
median over the rounds of its p50 divided by the first variant's p50 in
the same round (below 1: faster than the first; the HTTP rows are
rates, and "lowest" is their worst run).

Variants (arguments), each LABEL=SPEC[+CMD]:
  veth, pasta, slirp4netns  the bench's backends (backends.py)
  pasta-trixie            trixie's pasta (test/bench/peers.sh unpacks it)
  relay                   veth, with test/bench/relay.c in the guest
                          between the client (on the guest's loopback)
                          and veth: two kernel TCP connections and a
                          minimal relay, the floor under any translator
  relay:N                 the same relay, polling N us before each sleep
                          (its own addresses: one relay and one relay:N
                          can run beside veth in one run)
  ferry:PATH[:ARG,...]    a ferry binary, with extra options (e.g.
                          ferry:./ferry:--no-offload)
  +CMD                    a shell command run in the guest once it is up
                          (e.g. +"tc qdisc replace dev uplink0 root noqueue")

Workloads (AB_ONLY: regex on the names): sp4 (sockperf ping-pong, IPv4,
the bench's row), pp4 and pp6 (test/bench/pingpong.c), hc4 and hk4 (the
bench's HTTP rows, wrk -c8 against nginx: Connection: close and
keep-alive, requests/s: above 1 is faster there), tg4 and th4 (iperf3,
one TCP stream guest->host and host->guest, Gbit/s: above 1 is faster). AB_ROUNDS
(default 6), AB_TIME (seconds per run, default 2), AB_MTU (the guest's MTU,
default 65520; the relay's veth has it too).
"""
import os
import re
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import backends  # noqa: E402
import measure  # noqa: E402
import procs  # noqa: E402

MTU = int(os.environ.get("AB_MTU", "65520"))



class FerryVariant(backends.Ferry):
    """A ferry binary with extra options, in its own directory."""

    def __init__(self, label, mtu, workdir, binary, extra):
        super().__init__(mtu, os.path.join(workdir, label), binary)
        self.extra = extra

    def argv(self):
        return super().argv() + self.extra


class RelayVariant(backends.Veth):
    """veth with relay.c in the guest: the client reaches the guest's
    loopback, the relay connects through veth to the host's servers
    (its own veth pair and addresses, so it runs beside plain veth)."""
    ifx, net4, plen4, net6 = "br", "203.0.113.", 24, "2001:db8:c::"

    def __init__(self, workdir, poll_us=0):
        super().__init__(MTU, workdir)
        self.relays = []
        self.poll_us = poll_us
        if poll_us:	# beside a plain relay: addresses 203.0.113.101/28 ...
            self.ifx, self.net4, self.plen4, self.net6 = "bp", "203.0.113.10", 28, "2001:db8:d::"

    def start(self):
        super().start()
        root = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
        binary = os.path.join(self.dir, "relay")
        r = procs.run(["cc", "-O2", "-o", binary,
                       os.path.join(root, "test", "bench", "relay.c")], timeout=60)
        if r.returncode:
            raise SystemExit("cannot build relay.c: " + r.stderr)
        ports = [str(p) for p in (measure.SOCKPERF_PORT, measure.PP_PORT, measure.HTTP_PORT,
                                  measure.IPERF_PORT)]
        for fam, inside in (("4", "127.0.0.1"), ("6", "::1")):
            log = os.path.join(self.dir, f"relay{fam}.log")
            argv = ["env", f"RELAY_POLL_US={self.poll_us}", binary, inside, self.addrs[fam]]
            self.relays.append(procs.start(self.guest(argv + ports), log=log))
            if not procs.wait_for(lambda: "ready" in open(log).read(), 10):
                raise SystemExit(f"relay{fam} did not start: {open(log).read()}")
        self.addrs = {"4": "127.0.0.1", "6": "::1"}

    def stop(self):
        for p in self.relays:
            procs.stop(p)
        super().stop()


def variant(label, spec, workdir):
    if spec == "veth":
        return backends.Veth(MTU, os.path.join(workdir, label))
    if spec == "relay" or spec.startswith("relay:"):
        return RelayVariant(os.path.join(workdir, label), int(spec.partition(":")[2] or 0))
    if spec == "pasta":
        return backends.Pasta(MTU, os.path.join(workdir, label))
    if spec == "slirp4netns":
        return backends.Slirp(MTU, os.path.join(workdir, label))
    if spec == "pasta-trixie":
        why = backends.available(spec)
        if why:
            raise SystemExit(f"ab: {why}")
        return backends.PastaTrixie(MTU, os.path.join(workdir, label))
    parts = spec.split(":")
    if parts[0] != "ferry" or len(parts) < 2:
        raise SystemExit(f"ab: unknown variant {spec!r}")
    extra = parts[2].split(",") if len(parts) > 2 and parts[2] else []
    return FerryVariant(label, MTU, workdir, os.path.abspath(parts[1]), extra)


def workloads(pingpong):
    return [
        ("sp4", "sockperf", lambda be, t: measure.sockperf(be, "4", t)),
        ("pp4", "pingpong", lambda be, t: measure.pingpong(be, "4", t, pingpong)),
        ("pp6", "pingpong", lambda be, t: measure.pingpong(be, "6", t, pingpong)),
        ("hc4", "nginx", lambda be, t: measure.wrk(be, "4", t, True)),
        ("hk4", "nginx", lambda be, t: measure.wrk(be, "4", t, False)),
        ("tg4", "iperf3", lambda be, t: measure.iperf(be, "4", t)),
        ("th4", "iperf3", lambda be, t: measure.iperf(be, "4", t, reverse=True)),
    ]


def unit(w):
    """The unit of workload w's figure."""
    return {"h": "req/s", "t": "Gbit/s"}.get(w[0], "us")


def report(labels, res, cpu):
    """Per workload and variant: the median figure, the median ratio to the
    first variant within a round, the runs; and for the HTTP rows the
    translator's CPU time per request (its own, so less moved by the
    machine's load than the rate)."""
    for w, per in res.items():
        base = per[labels[0]]
        print(f"{w}:")
        for lab in labels:
            vals = [v for v in per[lab] if v is not None]
            ratios = [v / b for v, b in zip(per[lab], base) if v and b]
            med = f"{statistics.median(vals):7.1f}" if vals else "    n/a"
            low = f"{min(vals):7.1f}" if vals else "    n/a"
            rat = f"{statistics.median(ratios):.3f}" if ratios else "n/a"
            runs = " ".join(f"{v:.1f}" if v else "-" for v in per[lab])
            what = "p50 median" if unit(w) == "us" else "median"
            print(f"  {lab:12s} {what} {med} {unit(w)}, lowest {low}  x {labels[0]}: {rat}"
                  f"   runs {runs}")
            if cpu[w][lab]:
                print(f"  {'':12s} CPU {statistics.median(cpu[w][lab]):.1f} us per request "
                      f"(runs {' '.join(f'{x:.0f}' for x in cpu[w][lab])})")


def main():
    rounds = int(os.environ.get("AB_ROUNDS", "6"))
    secs = int(os.environ.get("AB_TIME", "2"))
    only = os.environ.get("AB_ONLY")
    out, pingpong = measure.tool_setup("ab.py", "ab")
    labels, bes = [], {}
    for arg in sys.argv[1:]:
        label, _, spec = arg.partition("=")
        spec, _, gcmd = (spec or label).partition("+")
        be = variant(label, spec, out)
        be.start()
        if gcmd:
            r = procs.run(be.guest(["sh", "-c", gcmd]), timeout=10)
            if r.returncode:
                raise SystemExit(f"{label}: {gcmd}: exit {r.returncode}: {r.stderr}")
        labels.append(label)
        bes[label] = be
    if not labels:
        raise SystemExit("usage: ab.sh LABEL=SPEC ... (see test/bench/ab.py)")
    servers = measure.Servers(out, pingpong)
    wls = [w for w in workloads(pingpong) if not only or re.search(only, w[0])]
    res = {w[0]: {lab: [] for lab in labels} for w in wls}
    cpu = {w[0]: {lab: [] for lab in labels} for w in wls}	# us per request
    procs.print_loadavg("at start")
    for rnd in range(rounds):
        order = labels[rnd % len(labels):] + labels[:rnd % len(labels)]
        for name, srv, fn in wls:
            why = servers.ensure(srv)
            if why:
                raise SystemExit(f"{name}: {why}")
            for lab in order:
                v = fn(bes[lab], secs)
                res[name][lab].append(v["value"])
                if v.get("cpu") is not None and v.get("requests"):
                    cpu[name][lab].append(v["cpu"] * 1e6 / v["requests"])
                print(f"round {rnd + 1} {name} {lab}: "
                      f"{v['value'] if v['value'] is not None else v['error']}",
                      file=sys.stderr, flush=True)
    procs.print_loadavg("at end")
    report(labels, res, cpu)
    for be in bes.values():
        be.stop()


if __name__ == "__main__":
    procs.main_guarded(main)
