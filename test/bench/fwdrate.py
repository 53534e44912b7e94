#!/usr/bin/python3
"""fwdrate.py - connection rate of the host-initiated direction (-t).

Run by test/bench/fwdrate.sh inside test/sandbox.sh. The bench's HTTP rows
run wrk in the guest against nginx on the host; this is the other way:
nginx in the guest namespace, a port forwarded with -t, and wrk on the
host connecting to the host's own uplink address (not loopback: loopback
clients are spliced in namespace mode, without the guest link), so every
connection is accepted by ferry and opened to the guest with a SYN
(tcp_fwd.c).

Variants (arguments), each LABEL=PATH of a ferry binary; for each of
FWD_ROUNDS rounds (default 5) each variant runs wrk once (FWD_TIME
seconds, default 2; FWD_CLOSE=0 for keep-alive), in an order rotated every
round. Reported per variant: the median requests/s, the median ratio to
the first variant within a round, and ferry's CPU time per request.
"""
import os
import re
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import backends  # noqa: E402
import measure  # noqa: E402
import procs  # noqa: E402

PORT = 8090
HOST_ADDR = "198.51.100.2"	# test/sandbox.sh: the host's uplink address


class FwdFerry(backends.Ferry):
    """ferry forwarding its port (PORT + the variant's index: each variant
    holds one host port) to the guest's PORT, nothing else."""

    def __init__(self, mtu, workdir, binary, port):
        super().__init__(mtu, workdir, binary)
        self.port = port

    def argv(self):
        return [self.binary, "ns", "-f", "--config-net", "-m", str(self.mtu),
                "-t", f"{self.port}:{PORT}", "-u", "none", "-T", "none", "-U", "none"]


def guest_nginx(be, d):
    """nginx inside be's guest namespace on PORT (its files under d)."""
    os.makedirs(os.path.join(d, "www"), exist_ok=True)
    os.makedirs(os.path.join(d, "tmp"), exist_ok=True)
    with open(os.path.join(d, "www", "index.html"), "w") as f:
        f.write("ferry benchmark: a small static response body.....\n".ljust(63) + "\n")
    with open(os.path.join(d, "nginx.conf"), "w") as f:
        f.write(measure.NGINX_CONF.format(d=d, port=PORT))
    p = procs.start(be.guest(["nginx", "-p", d, "-c", os.path.join(d, "nginx.conf"),
                              "-e", os.path.join(d, "error.log")]),
                    log=os.path.join(d, "nginx.log"))
    probe = ["python3", "-c", f"import socket;socket.create_connection(('127.0.0.1',{PORT}),1)"]
    if not procs.wait_for(lambda: procs.run(be.guest(probe), timeout=5).returncode == 0, 10):
        raise SystemExit(f"nginx in the guest did not start (see {d})")
    return p


def run_wrk(be, secs, close):
    argv = ["wrk", "-t", "1", "-c", "8", "-d", f"{secs}s", "--timeout", "2s",
            f"http://{HOST_ADDR}:{be.port}/"]
    if close:
        argv[1:1] = ["-H", "Connection: close"]
    c0 = procs.cpu_seconds(be.pid)
    r = procs.run(argv, timeout=secs + 20)
    c1 = procs.cpu_seconds(be.pid)
    m = re.search(r"Requests/sec:\s*([0-9.]+)", r.stdout)
    n = re.search(r"(\d+) requests in", r.stdout)
    if r.returncode or not m or not n:
        return None, None
    return float(m.group(1)), (c1 - c0) * 1e6 / int(n.group(1))


def main():
    rounds = int(os.environ.get("FWD_ROUNDS", "5"))
    secs = int(os.environ.get("FWD_TIME", "2"))
    close = os.environ.get("FWD_CLOSE", "1") != "0"
    out, _ = measure.tool_setup("fwdrate.py", "fwdrate")
    labels, bes = [], {}
    for arg in sys.argv[1:]:
        label, _, path = arg.partition("=")
        be = FwdFerry(65520, os.path.join(out, label), os.path.abspath(path),
                      PORT + 1 + len(labels))
        be.start()
        guest_nginx(be, os.path.join(out, label, "nginx"))
        labels.append(label)
        bes[label] = be
    if not labels:
        raise SystemExit("usage: fwdrate.sh LABEL=FERRY_BINARY ... (see test/bench/fwdrate.py)")
    rate = {lab: [] for lab in labels}
    cpu = {lab: [] for lab in labels}
    procs.print_loadavg("at start")
    for rnd in range(rounds):
        for lab in labels[rnd % len(labels):] + labels[:rnd % len(labels)]:
            v, us = run_wrk(bes[lab], secs, close)
            rate[lab].append(v)
            if us is not None:
                cpu[lab].append(us)
            print(f"round {rnd + 1} {lab}: {v} req/s, {us} us CPU per request",
                  file=sys.stderr, flush=True)
    procs.print_loadavg("at end")
    base = rate[labels[0]]
    print(f"host -> guest through -t, wrk -c8, {'Connection: close' if close else 'keep-alive'}:")
    for lab in labels:
        vals = [v for v in rate[lab] if v]
        ratios = [v / b for v, b in zip(rate[lab], base) if v and b]
        print(f"  {lab:10s} median {statistics.median(vals) if vals else 0:8.1f} req/s"
              f"  x {labels[0]}: {statistics.median(ratios) if ratios else 0:.3f}"
              f"  CPU {statistics.median(cpu[lab]) if cpu[lab] else 0:.1f} us per request"
              f"   runs {' '.join(f'{v:.0f}' if v else '-' for v in rate[lab])}")
    for be in bes.values():
        be.stop()


if __name__ == "__main__":
    procs.main_guarded(main)
