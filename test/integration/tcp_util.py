"""Helpers for the TCP integration tests: tcpx.py endpoints on the sandbox
host and inside the guest, started concurrently, results compared.

The guest reaches the host's loopback through the gateway address: host
servers listen on 127.0.0.1 / ::1, guest clients connect to the gateway
(IPv6: the default router, link-local with a scope). Guest servers listen
on the guest address; the host reaches them through port forwarding
(-t), which is not part of these helpers.
"""
import json
import re
import subprocess
import sys
import time
from pathlib import Path

import conftest

TCPX = str(Path(__file__).resolve().parent / "tcpx.py")
PY = sys.executable or "/usr/bin/python3"


def guest_argv(f, argv):
    return ["nsenter", "-t", str(f.guest_pid), "-U", "-n",
            "--preserve-credentials"] + argv


class Endpoint:
    """A tcpx.py process; listeners report their port."""

    def __init__(self, argv):
        self.argv = argv
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True)
        self.port = None

    def wait_ready(self, timeout=10):
        line = self.proc.stdout.readline()
        if not line.startswith("ready"):
            self.proc.kill()
            raise AssertionError(f"{self.argv} did not start: {line!r} "
                                 f"{self.proc.stderr.read()}")
        self.port = int(line.split()[1])
        return self

    def result(self, timeout=120):
        try:
            out, err = self.proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            out, err = self.proc.communicate()
            raise AssertionError(f"{self.argv} timed out after {timeout}s\n"
                                 f"{out}\n{err}")
        lines = [l for l in out.splitlines() if l.startswith("{")]
        assert lines, f"{self.argv} exited {self.proc.returncode}:\n{out}\n{err}"
        return json.loads(lines[-1])

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def host_listen(addr, role, *opts):
    return Endpoint([PY, TCPX, "listen", addr, "0", role] + list(opts)).wait_ready()


def guest_listen(f, addr, role, *opts):
    return Endpoint(guest_argv(f, [PY, TCPX, "listen", addr, "0", role] +
                               list(opts))).wait_ready()


def host_connect(addr, port, role, *opts):
    return Endpoint([PY, TCPX, "connect", addr, str(port), role] + list(opts))


def guest_connect(f, addr, port, role, *opts):
    return Endpoint(guest_argv(f, [PY, TCPX, "connect", addr, str(port), role]
                               + list(opts)))


def gw6(f):
    """The guest's IPv6 default router as ADDR%DEV (or ADDR if global),
    once the guest's link-local address is usable."""
    out = f.guest(["ip", "-6", "route", "show", "default"]).stdout
    m = re.search(r"via (\S+) dev (\S+)", out)
    assert m, f"no IPv6 default route in the guest:\n{out}"
    addr, dev = m.groups()

    def ready():
        o = f.guest(["ip", "-6", "addr", "show", "dev", dev]).stdout
        return "inet6" in o and "tentative" not in o
    conftest.wait_for(ready, 10, "guest IPv6 addresses")
    return f"{addr}%{dev}" if addr.lower().startswith("fe80") else addr


def target(f, v6):
    """(host listen address, address the guest connects to)."""
    return ("::1", gw6(f)) if v6 else ("127.0.0.1", conftest.GW4)


def transfer(f, v6, direction, nbytes, timeout=300, recv_opts=()):
    """Move nbytes guest->host ("up") or host->guest ("down") through
    ferry; returns (sender result, receiver result, seconds)."""
    laddr, caddr = target(f, v6)
    t0 = time.monotonic()
    if direction == "up":
        srv = host_listen(laddr, "recv", *recv_opts)
        cli = guest_connect(f, caddr, srv.port, "send", "--bytes", str(nbytes),
                            "--timeout", str(timeout))
    else:
        srv = host_listen(laddr, "send", "--bytes", str(nbytes))
        cli = guest_connect(f, caddr, srv.port, "recv", "--timeout",
                            str(timeout), *recv_opts)
    try:
        a, b = cli.result(timeout), srv.result(timeout)
    finally:
        cli.kill()
        srv.kill()
    secs = time.monotonic() - t0
    snd, rcv = (a, b) if direction == "up" else (b, a)
    return snd, rcv, secs


def check_transfer(f, v6, direction, nbytes, **kw):
    snd, rcv, secs = transfer(f, v6, direction, nbytes, **kw)
    assert snd["bytes"] == nbytes, snd
    assert rcv["bytes"] == nbytes, (rcv["bytes"], f.output()[-2000:])
    assert rcv["sha256"] == snd["sha256"], "content differs"
    return rcv, secs
