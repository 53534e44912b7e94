"""measure.py - host-side servers and one measurement per call.

Servers run in the sandbox's host namespace on wildcard addresses, so
each backend's guest reaches them through its own path (veth address,
gateway mapped to host loopback, slirp's 10.0.2.2):
  iperf3 -s            port 5201  (TCP bulk and UDP; control is TCP)
  sockperf server      port 11111 (TCP latency, IPv4: sockperf 3.7 has no IPv6)
  pingpong server      port 11112 (TCP latency, IPv6; test/bench/pingpong.c)
  nginx                port 8080  (a 64-byte file; HTTP connection/request rate)

Each measure function runs one client inside the guest and returns a dict:
  value   the figure (Gbit/s, microseconds, requests/s)
  min     lowest per-second throughput (bulk transfers), Gbit/s
  bytes   bytes moved (for CPU seconds per GiB)
  cpu     translator CPU seconds used during the run (None for veth)
  error   why there is no value (then value is None)
"""
import json
import os
import re

import procs

IPERF_PORT, SOCKPERF_PORT, PP_PORT, HTTP_PORT, BLAST_PORT = 5201, 11111, 11112, 8080, 5310

# udp_search() stops bisecting once the bracket (highest rate without
# loss, lowest with) is this narrow: 5%.
UDP_SEARCH_STEP = 1.05

NGINX_CONF = """
daemon off;
master_process off;
worker_processes 1;
user root;
pid {d}/nginx.pid;
error_log {d}/error.log warn;
events {{ worker_connections 4096; }}
http {{
    access_log off;
    client_body_temp_path {d}/tmp;
    proxy_temp_path {d}/tmp;
    fastcgi_temp_path {d}/tmp;
    uwsgi_temp_path {d}/tmp;
    scgi_temp_path {d}/tmp;
    keepalive_requests 1000000;
    server {{
        listen 0.0.0.0:{port} reuseport backlog=4096;
        listen [::]:{port} ipv6only=on reuseport backlog=4096;
        root {d}/www;
    }}
}}
"""


def tool_setup(script, sub):
    """Common start of the stand-alone tools (syscalls.py, ab.py): check
    the sandbox, make build/bench/SUB, build pingpong.c into it. Returns
    (the directory, the pingpong binary)."""
    if os.environ.get("FERRY_SANDBOX") != "1":
        raise SystemExit(f"{script} must run inside test/sandbox.sh")
    root = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
    out = os.path.join(root, "build", "bench", sub)
    os.makedirs(out, exist_ok=True)
    pingpong = os.path.join(out, "pingpong")
    r = procs.run(["cc", "-O2", "-o", pingpong,
                   os.path.join(root, "test", "bench", "pingpong.c")], timeout=60)
    if r.returncode:
        raise SystemExit("cannot build pingpong.c: " + r.stderr)
    return out, pingpong


class Servers:
    """The host-side servers; ensure() (re)starts any that is not up."""

    def __init__(self, workdir, pingpong):
        self.dir = os.path.join(workdir, "servers")
        os.makedirs(os.path.join(self.dir, "tmp"), exist_ok=True)
        os.makedirs(os.path.join(self.dir, "www"), exist_ok=True)
        with open(os.path.join(self.dir, "www", "index.html"), "w") as f:
            f.write("ferry benchmark: a small static response body.....\n".ljust(63) + "\n")
        with open(os.path.join(self.dir, "nginx.conf"), "w") as f:
            f.write(NGINX_CONF.format(d=self.dir, port=HTTP_PORT))
        self.spec = {
            "iperf3": (["iperf3", "-s", "-p", str(IPERF_PORT)], IPERF_PORT),
            "sockperf": (["sockperf", "server", "--tcp", "-i", "0.0.0.0",
                          "-p", str(SOCKPERF_PORT)], SOCKPERF_PORT),
            "pingpong": ([pingpong, "server", str(PP_PORT)], PP_PORT),
            "nginx": (["nginx", "-p", self.dir, "-c", os.path.join(self.dir, "nginx.conf"),
                       "-e", os.path.join(self.dir, "error.log")], HTTP_PORT),
        }
        self.procs = {}

    def add(self, name, argv, port):
        """One more server: argv, listening on TCP port once up."""
        self.spec[name] = (argv, port)

    def ensure(self, name):
        p = self.procs.get(name)
        if procs.alive(p):
            return None
        argv, port = self.spec[name]
        p = procs.start(argv, log=os.path.join(self.dir, name + ".log"))
        self.procs[name] = p
        if not procs.wait_for(lambda: procs.listening(port) or not procs.alive(p), 10) \
                or not procs.alive(p):
            return f"{name} server did not start (see {self.dir}/{name}.log)"
        return None

    def restart(self, name):
        procs.stop(self.procs.pop(name, None))
        return self.ensure(name)


def _cpu(be):
    return procs.cpu_seconds(be.pid) if be.pid else None


def _run(be, argv, timeout):
    """Run argv in the guest; returns (result, translator CPU seconds).
    result.mcpu is the whole machine's busy CPU seconds meanwhile: both
    endpoints, the translator and the kernel's softirq work, for every
    tool including veth (meaningful on a machine with nothing else busy)."""
    c0 = _cpu(be)
    m0 = procs.machine_busy_seconds()
    r = procs.run(be.guest(argv), timeout=timeout)
    r.mcpu = procs.machine_busy_seconds() - m0
    c1 = _cpu(be)
    cpu = (c1 - c0) if c0 is not None and c1 is not None else None
    return r, cpu


def _err(r):
    lines = [ln.strip() for ln in (r.stderr + "\n" + r.stdout).splitlines() if ln.strip()]
    return f"exit {r.returncode}: " + " | ".join(lines[-3:])[:300]


def _iperf_json(r):
    try:
        js = json.loads(r.stdout)
    except ValueError:
        return None, _err(r)
    if js.get("error"):
        return None, "iperf3: " + js["error"]
    return js, None


def iperf(be, fam, secs, streams=1, reverse=False, udp_rate=None, length=1400):
    """One iperf3 run from the guest to the host server (reverse: -R)."""
    argv = ["iperf3", "-c", be.server(fam), "-p", str(IPERF_PORT), "-t", str(secs),
            "-J", "-P", str(streams), "--connect-timeout", "3000"]
    if reverse:
        argv.append("-R")
    if udp_rate:
        # 2 MiB socket buffers at both iperf3 ends: loss should come from
        # the path, not from iperf3's own default receive buffer.
        argv += ["-u", "-b", str(int(udp_rate)), "-l", str(length), "-w", "2M"]
    r, cpu = _run(be, argv, secs + 20)
    js, err = _iperf_json(r)
    if err:
        return {"value": None, "error": err}
    end = js["end"]
    per_sec = [iv["sum"]["bits_per_second"] / 1e9 for iv in js.get("intervals", [])
               if iv["sum"].get("seconds", 0) >= 0.5]
    if udp_rate:
        s = end["sum"]
        lost = s.get("lost_percent", 0.0)
        sent_bytes = end.get("sum_sent", s).get("bytes", s.get("bytes", 0))
        got = s.get("bytes", 0) * (1 - lost / 100.0)
        dur = s.get("seconds") or secs
        return {"value": got * 8 / dur / 1e9, "loss": lost, "offered": udp_rate / 1e9,
                "bytes": got, "sent_bytes": sent_bytes, "cpu": cpu}
    rcv = end["sum_received"]
    return {"value": rcv["bits_per_second"] / 1e9, "bytes": rcv["bytes"], "cpu": cpu,
            "mcpu": r.mcpu,
            "min": min(per_sec) if per_sec else None,
            "per_sec": [round(x, 3) for x in per_sec],
            "retrans": end.get("sum_sent", {}).get("retransmits")}


def udp_search(be, fam, secs, reverse, start_rate, probes, probe=None):
    """Highest offered rate with < 1% loss: double until loss, then bisect
    (geometric mean of the bracket) until it is within 5% or the probes
    are used up. probe(rate) runs one probe (default: iperf3 -u at that
    rate); it returns iperf()'s dict."""
    if probe is None:
        def probe(rate):
            return iperf(be, fam, secs, reverse=reverse, udp_rate=rate)
    lo, hi, rate, best, tried = 0.0, None, start_rate, None, []
    for _ in range(probes):
        res = probe(rate)
        if res.get("value") is None:
            if best is None and not tried:
                return res
            break
        tried.append((round(rate / 1e9, 3), round(res["loss"], 2)))
        if res["loss"] < 1.0:
            lo, best = rate, res
        else:
            hi = rate
        if hi is not None and lo and hi / lo <= UDP_SEARCH_STEP:
            break
        rate = rate * 2 if hi is None else (lo * hi) ** 0.5 if lo else rate / 2
    if best is None:
        return {"value": 0.0, "loss": None, "probes": tried,
                "note": f"loss >= 1% even at {tried[-1][0]} Gbit/s"}
    return dict(best, probes=tried)


_blast_seq = 0


def _blast_result(text):
    m = re.search(r"RESULT datagrams=(\d+) bytes=(\d+) seconds=([0-9.]+) mbit=(\d+)", text)
    return (int(m.group(1)), int(m.group(2)), float(m.group(4)) / 1000) if m else None


def udpblast(be, fam, secs, reverse, binary, workdir, size=1400):
    """Unthrottled UDP (test/bench/udpblast.c, sendmmsg/recvmmsg batches).

    guest->host: host `recv`, guest `send` to the server address.
    host->guest: host `serve`, guest `pull` (its hello opens the flow, the
    host blasts back along it). Received rate and loss (sent - received).
    """
    log = os.path.join(workdir, f"udpblast-{be.name}.log")
    if os.path.exists(log):
        os.unlink(log)
    # A new port each time: datagrams of an earlier run still queued in a
    # slow translator must not land in this one.
    global _blast_seq
    _blast_seq += 1
    port = str(BLAST_PORT + _blast_seq % 64)
    host = [binary, "serve", port, str(size), str(secs)] if reverse else \
        [binary, "recv", port, str(secs)]
    hp = procs.start(host, log=log)
    try:
        if not procs.wait_for(lambda: "READY" in _read(log) or not procs.alive(hp), 5) \
                or "READY" not in _read(log):
            return {"value": None, "error": "udpblast on the host did not start: " + _read(log)}
        guest = [binary, "pull", be.server(fam), port, str(secs)] if reverse else \
            [binary, "send", be.server(fam), port, str(size), str(secs)]
        r, cpu = _run(be, guest, secs + 40)
        try:
            hp.wait(timeout=secs + 10)
        except Exception:
            pass
        recv_text, send_text = (r.stdout, _read(log)) if reverse else (_read(log), r.stdout)
    finally:
        procs.stop(hp)
    got = _blast_result(recv_text)
    sent = re.search(r"SENT datagrams=(\d+)", send_text)
    if r.returncode or not got or not sent:
        return {"value": None, "error": _err(r) + " | host: " + _read(log)[-200:]}
    n_sent = int(sent.group(1))
    loss = 100.0 * (n_sent - got[0]) / n_sent if n_sent else 0.0
    return {"value": got[2], "loss": max(0.0, loss), "bytes": got[1], "cpu": cpu}


def _read(path):
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except OSError:
        return ""


def sockperf(be, fam, secs):
    """TCP ping-pong round trip (sockperf, IPv4): p50 and p99 in us."""
    argv = ["sockperf", "ping-pong", "--tcp", "-i", be.server(fam), "-p", str(SOCKPERF_PORT),
            "-t", str(secs), "--full-rtt", "-m", "64"]
    r, cpu = _run(be, argv, secs + 20)
    p = dict(re.findall(r"percentile (50|99)\.000 =\s*([0-9.]+)", r.stdout))
    if r.returncode or "50" not in p:
        return {"value": None, "error": _err(r)}
    return {"value": float(p["50"]), "p99": float(p["99"]), "cpu": cpu}


def pingpong(be, fam, secs, binary):
    """TCP ping-pong round trip (our pingpong.c): p50 and p99 in us."""
    argv = [binary, "client", be.server(fam), str(PP_PORT), str(secs)]
    r, cpu = _run(be, argv, secs + 20)
    m = re.search(r"count (\d+) p50 ([0-9.]+) p99 ([0-9.]+)", r.stdout)
    if r.returncode or not m:
        return {"value": None, "error": _err(r)}
    return {"value": float(m.group(2)), "p99": float(m.group(3)), "cpu": cpu}


def wrk(be, fam, secs, close):
    """HTTP requests/s from the guest to nginx (Connection: close or keep-alive)."""
    host = be.server(fam)
    url = f"http://{host}:{HTTP_PORT}/" if fam == "4" else f"http://[{host}]:{HTTP_PORT}/"
    argv = ["wrk", "-t", "1", "-c", "8", "-d", f"{secs}s", "--timeout", "2s", url]
    if close:
        argv[1:1] = ["-H", "Connection: close"]
    r, cpu = _run(be, argv, secs + 20)
    m = re.search(r"Requests/sec:\s*([0-9.]+)", r.stdout)
    if r.returncode or not m:
        return {"value": None, "error": _err(r)}
    total = re.search(r"(\d+) requests in", r.stdout)
    errs = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)",
                     r.stdout)
    bad = re.search(r"Non-2xx or 3xx responses: (\d+)", r.stdout)
    out = {"value": float(m.group(1)), "cpu": cpu,
           "requests": int(total.group(1)) if total else None}
    if errs:
        out["socket_errors"] = sum(int(x) for x in errs.groups())
    if bad:
        out["non_2xx"] = int(bad.group(1))
    return out


def tcp_probe(be, fam):
    """None if a TCP connection from the guest to nginx works, else why."""
    code = ("import socket,sys\n"
            "try:\n"
            " s=socket.create_connection((sys.argv[1],%d),timeout=3)\n"
            " s.sendall(b'HEAD / HTTP/1.0\\r\\n\\r\\n')\n"
            " d=s.recv(64)\n"
            "except Exception as e:\n"
            " sys.exit(repr(e))\n"
            "sys.exit(0 if d.startswith(b'HTTP/') else 'no HTTP reply')\n" % HTTP_PORT)
    r = procs.run(be.guest(["/usr/bin/python3", "-c", code, be.server(fam)]), timeout=10)
    if r.returncode == 0:
        return None
    return f"TCP to {be.server(fam)}:{HTTP_PORT} fails: " + _err(r)
