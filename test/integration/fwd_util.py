"""Helpers for the port-forwarding tests (test_tcp_fwd.py,
test_tcp_splice.py): servers on fixed ports inside the guest or on the
sandbox host, listening-port checks from /proc/net/tcp{,6}, transfers
with SHA-256 comparison, and ferry's forwarding counters (SIGUSR1)."""
import re
import signal

import conftest
from tcp_util import PY, TCPX, Endpoint, guest_argv

MiB = 1 << 20
FWD_STATS = (r"tcp forwarding listeners (\d+) accepted (\d+) to guest (\d+) "
             r"spliced (\d+) refused (\d+) splice resets (\d+) scans (\d+)")


def listening(text):
    """Ports in state LISTEN in /proc/net/tcp{,6} text."""
    ports = set()
    for line in text.splitlines():
        p = line.split()
        if len(p) > 3 and p[0] != "sl" and p[3] == "0A":
            ports.add(int(p[1].rsplit(":", 1)[1], 16))
    return ports


def _read(*names):
    txt = ""
    for name in names:
        with open(name) as fh:
            txt += fh.read()
    return txt


def host_listening(fam=None):
    """Ports listening on the host: fam "4" or "6" for one family only
    (/proc/net/tcp or tcp6), None for either."""
    names = {"4": ["/proc/net/tcp"], "6": ["/proc/net/tcp6"],
             None: ["/proc/net/tcp", "/proc/net/tcp6"]}[fam]
    return listening(_read(*names))


def guest_listening(f, fam=None):
    names = {"4": ["/proc/net/tcp"], "6": ["/proc/net/tcp6"],
             None: ["/proc/net/tcp", "/proc/net/tcp6"]}[fam]
    return listening(f.guest(["cat"] + names).stdout)


def wait_host_port(port, present=True, timeout=10, fams=("4", "6")):
    """Wait until port listens on the host in every family of fams (a
    test that then connects over IPv4 and IPv6 needs both), or, present
    False, in none of them."""
    def ok():
        return all((port in host_listening(x)) == present for x in fams)
    conftest.wait_for(ok, timeout, f"host port {port} "
                      f"{'open' if present else 'closed'} (IPv{'+'.join(fams)})")


def wait_guest_port(f, port, timeout=10, fams=("4", "6")):
    """Wait until port listens in the guest in every family of fams."""
    conftest.wait_for(lambda: all(port in guest_listening(f, x) for x in fams),
                      timeout, f"guest port {port} open (IPv{'+'.join(fams)})")


def guest_server(f, addr, port, role, *opts):
    """tcpx.py listening on a fixed port inside the guest."""
    return Endpoint(guest_argv(f, [PY, TCPX, "listen", addr, str(port), role]
                               + list(opts))).wait_ready()


def host_server(addr, port, role, *opts):
    return Endpoint([PY, TCPX, "listen", addr, str(port), role]
                    + list(opts)).wait_ready()


def client(argv_prefix, addr, port, role, *opts):
    return Endpoint(list(argv_prefix) + [PY, TCPX, "connect", addr, str(port),
                                         role] + list(opts))


def exchange(srv, cli, direction, nbytes, timeout=120):
    """srv/cli started with roles for direction ("up": client sends);
    returns (sender result, receiver result) after checking content."""
    try:
        c, s = cli.result(timeout), srv.result(timeout)
    finally:
        cli.kill()
        srv.kill()
    snd, rcv = (c, s) if direction == "up" else (s, c)
    assert snd["bytes"] == nbytes, snd
    assert rcv["bytes"] == nbytes, rcv
    assert rcv["sha256"] == snd["sha256"], "content differs"
    return snd, rcv


def roles(direction, nbytes):
    """(server role+opts, client role+opts) for a transfer."""
    send = ["send", "--bytes", str(nbytes)]
    return (["recv"], send) if direction == "up" else (send, ["recv"])


def to_guest(f, host_addr, host_port, guest_port, direction, nbytes,
             guest_addr="::", timeout=120):
    """A host client reaches a guest server through -t; content checked."""
    sr, cr = roles(direction, nbytes)
    srv = guest_server(f, guest_addr, guest_port, *sr)
    cli = client([], host_addr, host_port, *cr, "--timeout", str(timeout))
    return exchange(srv, cli, direction, nbytes, timeout)


def to_host(f, guest_addr, guest_port, host_port, direction, nbytes,
            host_addr="127.0.0.1", timeout=120):
    """A guest client reaches a host server through -T; content checked."""
    sr, cr = roles(direction, nbytes)
    srv = host_server(host_addr, host_port, *sr)
    cli = client(guest_argv(f, []), guest_addr, guest_port, *cr,
                 "--timeout", str(timeout))
    return exchange(srv, cli, direction, nbytes, timeout)


def fwd_stats(f):
    """ferry's forwarding counters (dict) after SIGUSR1."""
    before = len(f.output())
    f.proc.send_signal(signal.SIGUSR1)

    def line():
        m = re.findall(FWD_STATS, f.output()[before:])
        return m[-1] if m else None
    v = conftest.wait_for(line, 5, "forwarding statistics")
    keys = ("listeners", "accepted", "to_guest", "spliced", "refused",
            "splice_rst", "scans")
    return dict(zip(keys, map(int, v)))


def refused_or_reset(addr, port, argv_prefix=()):
    """Connect, send a byte, read: True when the connection is refused or
    reset (nothing forwards to a listener)."""
    code = ("import socket,sys\n"
            "try:\n"
            f" s=socket.create_connection(({addr!r},{port}),5)\n"
            " s.sendall(b'x'); d=s.recv(1)\n"
            " print('eof' if not d else 'data')\n"
            "except (ConnectionRefusedError, ConnectionResetError):\n"
            " print('refused')\n")
    r = conftest.run(list(argv_prefix) + [PY, "-c", code], timeout=20)
    return r.stdout.strip() == "refused"
