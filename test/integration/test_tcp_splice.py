"""The loopback fast path: forwarded connections between the host's
loopback and the namespace's are spliced socket to socket (no frames on
the guest link), with TCP's half-close and reset semantics.

-t: a host client on 127.0.0.1 / ::1 reaches a guest server on the
guest's own address over the namespace's loopback interface (on its
loopback address only with --host-lo-to-ns-lo, as in pasta); -T: a guest
client on the namespace's loopback reaches a host server. Every case checks ferry's counters: spliced, not
through the tap. The bulk case moves 1 GiB host -> namespace (about 3 s
here, SHA-256 on both ends is the bottleneck; FERRY_SPLICE_BIG
overrides), the others 256 MiB or less.
"""
import json
import os
import subprocess

import pytest

import conftest
from fwd_util import (MiB, client, fwd_stats, guest_server, host_server,
                      refused_or_reset, to_guest, to_host, wait_guest_port,
                      wait_host_port)
from tcp_util import PY, guest_argv

BIG = int(os.environ.get("FERRY_SPLICE_BIG", 1 << 30))
MID = 256 * MiB


def fwd_ferry(ferry_ns, port, extra=()):
    f = ferry_ns(args=["-t", str(port), "-T", str(port + 1)] + list(extra))
    wait_host_port(port)
    wait_guest_port(f, port + 1)
    return f


def assert_spliced(f, n):
    st = fwd_stats(f)
    assert st["spliced"] == n and st["to_guest"] == 0, st
    return st


@pytest.mark.parametrize("direction", ["up", "down"])
def test_splice_bulk_host_to_ns(ferry_ns, direction):
    """1 GiB (up) / 256 MiB (down) through -t over IPv4 loopback."""
    f = fwd_ferry(ferry_ns, 40300)
    n = BIG if direction == "up" else MID
    to_guest(f, "127.0.0.1", 40300, 40300, direction, n, timeout=300)
    assert_spliced(f, 1)


@pytest.mark.parametrize("direction", ["up", "down"])
def test_splice_bulk_ns_to_host_v6(ferry_ns, direction):
    f = fwd_ferry(ferry_ns, 40310)
    to_host(f, "::1", 40311, 40311, direction, MID, host_addr="::1",
            timeout=300)
    assert_spliced(f, 1)


def halfclose(f, first_is_client, via_t):
    """The first side sends 5 MiB and shuts its sending side; the other
    reads to EOF, then sends 3 MiB back over the half-open connection."""
    first = ["halfclose", "--bytes", str(5 * MiB)]
    second = ["sendrecv", "--bytes", str(3 * MiB)]
    cr, sr = (first, second) if first_is_client else (second, first)
    if via_t:
        srv = guest_server(f, "0.0.0.0", 40320, *sr)
        cli = client([], "127.0.0.1", 40320, *cr)
    else:
        srv = host_server("127.0.0.1", 40321, *sr)
        cli = client(guest_argv(f, []), "127.0.0.1", 40321, *cr)
    c, s = cli.result(60), srv.result(60)
    a, b = (c, s) if first_is_client else (s, c)
    assert b["bytes"] == 5 * MiB and b["sha256"] == a["sent_sha256"]
    assert a["bytes"] == 3 * MiB and a["sha256"] == b["sent_sha256"]


@pytest.mark.parametrize("via_t", [True, False], ids=["-t", "-T"])
def test_splice_halfclose(ferry_ns, via_t):
    f = fwd_ferry(ferry_ns, 40320)
    halfclose(f, True, via_t)
    halfclose(f, False, via_t)
    assert_spliced(f, 2)


@pytest.mark.parametrize("via_t", [True, False], ids=["-t", "-T"])
def test_splice_rst_both_ways(ferry_ns, via_t):
    """A reset on either end reaches the other end as a reset."""
    f = fwd_ferry(ferry_ns, 40330)
    for rst_client in (True, False):
        cr, sr = (["rst"], ["hold"]) if rst_client else (["hold"], ["rst"])
        if via_t:
            srv = guest_server(f, "0.0.0.0", 40330, *sr)
            cli = client([], "127.0.0.1", 40330, *cr)
        else:
            srv = host_server("127.0.0.1", 40331, *sr)
            cli = client(guest_argv(f, []), "127.0.0.1", 40331, *cr)
        c, s = cli.result(30), srv.result(30)
        rst, held = (c, s) if rst_client else (s, c)
        assert rst == {"rst": True}
        assert held == {"reset": True}, held
    st = assert_spliced(f, 2)
    assert st["splice_rst"] == 2, st


def test_splice_refused(ferry_ns):
    """Nothing listens behind the forwarded port: the client is reset,
    on both paths."""
    f = fwd_ferry(ferry_ns, 40340)
    assert refused_or_reset("127.0.0.1", 40340)
    assert refused_or_reset("::1", 40340)
    assert refused_or_reset("127.0.0.1", 40341, guest_argv(f, []))
    st = assert_spliced(f, 3)
    assert st["refused"] + st["splice_rst"] >= 3, st


def test_splice_many_short(ferry_ns):
    """300 short connections, 50 at a time, through -t's splice path
    (each: 1 KiB echoed)."""
    f = fwd_ferry(ferry_ns, 40350)
    srv = guest_server(f, "0.0.0.0", 40350, "echo", "--count", "300")
    cli = client([], "127.0.0.1", 40350, "many", "--conns", "300",
                 "--parallel", "50", "--size", "1024", "--timeout", "60")
    r = cli.result(90)
    assert r == {"done": 300, "bad": 0, "conns": 300}, r
    assert srv.result(30)["served"] == 300
    assert_spliced(f, 300)


def test_splice_paused_reader(ferry_ns):
    """The guest server stops reading for 2 s after 16 MiB: the spliced
    connection blocks (no EPOLLIN while the writer is full), then resumes
    and completes intact."""
    f = fwd_ferry(ferry_ns, 40360)
    n = 128 * MiB
    srv = guest_server(f, "0.0.0.0", 40360, "recv", "--pause-at",
                       str(16 * MiB), "--pause", "2")
    cli = client([], "127.0.0.1", 40360, "send", "--bytes", str(n))
    c, s = cli.result(120), srv.result(120)
    assert s["bytes"] == n and s["sha256"] == c["sha256"]
    assert s["pause"][1] - s["pause"][0] >= 2
    assert_spliced(f, 1)


# Guest server: accept one connection on ADDR PORT, print the client's
# address and the local one as JSON, close.
WHO = r'''
import json, socket, sys
fam = socket.AF_INET6 if ":" in sys.argv[1] else socket.AF_INET
s = socket.socket(fam, socket.SOCK_STREAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((sys.argv[1], int(sys.argv[2])))
s.listen(1)
print("ready", flush=True)
c, peer = s.accept()
print(json.dumps({"peer": peer[0], "local": c.getsockname()[0]}), flush=True)
'''


def who(f, addr, port):
    p = subprocess.Popen(guest_argv(f, [PY, "-c", WHO, addr, str(port)]),
                         stdout=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "ready"
    return p


def seen_by_guest(f, srv_addr, lo, port):
    """A guest server on srv_addr:port, a host client on lo:port (-t):
    the addresses the server sees (peer, local)."""
    p = who(f, srv_addr, port)
    cli = client([], lo, port, "hold")
    try:
        out, _ = p.communicate(timeout=20)
    finally:
        cli.kill()
        if p.poll() is None:
            p.kill()
            p.wait()
    return json.loads(out)


@pytest.mark.parametrize("fam", ["v4", "v6"])
def test_splice_target_default(ferry_ns, fam):
    """A host loopback client of -t reaches the guest's own address (from
    it, over the namespace's lo); a server bound only to the guest's
    loopback is not exposed."""
    lo, guest = ("127.0.0.1", conftest.HOST4) if fam == "v4" \
        else ("::1", conftest.HOST6)
    f = fwd_ferry(ferry_ns, 40370)
    p = who(f, lo, 40370)
    try:
        assert refused_or_reset(lo, 40370)
    finally:
        p.kill()
        p.wait()
    assert seen_by_guest(f, guest, lo, 40370) == {"peer": guest,
                                                   "local": guest}
    assert_spliced(f, 2)


@pytest.mark.parametrize("fam", ["v4", "v6"])
def test_splice_target_host_lo_to_ns_lo(ferry_ns, fam):
    """--host-lo-to-ns-lo: a host loopback client of -t reaches the
    guest's loopback, from its loopback (as UDP does)."""
    lo = "127.0.0.1" if fam == "v4" else "::1"
    f = fwd_ferry(ferry_ns, 40380, ["--host-lo-to-ns-lo"])
    assert seen_by_guest(f, lo, lo, 40380) == {"peer": lo, "local": lo}
    assert_spliced(f, 1)


HOLD = r"""
import socket, sys
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("0.0.0.0", int(sys.argv[1])))
s.listen(4)
print("ready", flush=True)
c, _ = s.accept()
sys.stdin.read()
"""


def peer_socket_of(pid, peer):
    """A duplicate (pidfd_getfd) of the socket of process pid whose peer
    address is peer, or None."""
    import ctypes
    import socket
    libc = ctypes.CDLL(None, use_errno=True)
    pidfd = os.pidfd_open(pid)
    try:
        for name in os.listdir(f"/proc/{pid}/fd"):
            try:
                if not os.readlink(f"/proc/{pid}/fd/{name}").startswith(
                        "socket:"):
                    continue
            except OSError:
                continue
            fd = libc.syscall(438, pidfd, int(name), 0)   # pidfd_getfd
            assert fd >= 0, os.strerror(ctypes.get_errno())
            s = socket.socket(fileno=fd)
            try:
                if s.getpeername()[:2] == peer:
                    return s
            except OSError:
                pass
            s.close()
    finally:
        os.close(pidfd)
    return None


def test_splice_accepted_socket_options(ferry_ns):
    """The socket ferry accepts on a -t listener carries TCP_NODELAY and
    SO_KEEPALIVE: tcp_splice.c does not set them, accept() copies them
    from the listener (listen_sock() sets them once)."""
    import socket
    from conftest import wait_for
    f = fwd_ferry(ferry_ns, 40360)
    srv = subprocess.Popen(["nsenter", "-t", str(f.guest_pid), "-U", "-n",
                            "--preserve-credentials", "python3", "-c", HOLD,
                            "40360"], stdin=subprocess.PIPE,
                           stdout=subprocess.PIPE, text=True)
    try:
        assert srv.stdout.readline().strip() == "ready"
        cli = socket.create_connection(("127.0.0.1", 40360), 5)
        found = []
        wait_for(lambda: found.append(peer_socket_of(
            f.proc.pid, cli.getsockname())) or found[-1], 10,
            "ferry's accepted socket")
        s = found[-1]
        assert s.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)
        assert s.getsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE)
        s.close()
        cli.close()
        assert_spliced(f, 1)
    finally:
        srv.kill()
        srv.wait()
