"""TCP translation end to end: the guest connects through ferry to servers
on the sandbox host's loopback (via the gateway address).

Sizes (CI budget: the whole suite on 2 cores, ASan build): 1 GiB each
way for the main case (IPv4, MTU 65520); 256 MiB for IPv6 and for MTU
1500 (where every byte costs ~44x more frames). Content is verified with
SHA-256 on both ends.
"""
import os
import signal

import pytest

import conftest

from tcp_util import (check_transfer, guest_connect, host_listen, target,
                      transfer)

GiB = 1 << 30
MiB = 1 << 20
BIG = int(os.environ.get("FERRY_TCP_BIG", GiB))
MID = int(os.environ.get("FERRY_TCP_MID", 256 * MiB))


@pytest.mark.parametrize("direction", ["up", "down"])
def test_tcp_bulk_v4_mtu65520(ferry_ns, direction):
    f = ferry_ns()
    check_transfer(f, False, direction, BIG, timeout=600)


@pytest.mark.parametrize("direction", ["up", "down"])
def test_tcp_bulk_v6_mtu65520(ferry_ns, direction):
    f = ferry_ns()
    check_transfer(f, True, direction, MID, timeout=600)


@pytest.mark.parametrize("v6", [False, True], ids=["v4", "v6"])
@pytest.mark.parametrize("direction", ["up", "down"])
def test_tcp_bulk_mtu1500(ferry_ns, direction, v6):
    f = ferry_ns(args=["-m", "1500"])
    check_transfer(f, v6, direction, MID // 4 if v6 else MID, timeout=600)


def test_tcp_refused(ferry_ns):
    f = ferry_ns()
    srv = host_listen("127.0.0.1", "hold")
    port = srv.port
    srv.kill()                      # nobody listens there any more
    r = f.guest(["python3", "-c",
                 "import socket,sys\n"
                 "try:\n"
                 f" socket.create_connection(('{target(f, False)[1]}', {port}), 10)\n"
                 "except ConnectionRefusedError:\n"
                 " print('refused')\n"], timeout=20)
    assert "refused" in r.stdout, r.stdout + r.stderr


def halfclose(f, v6, guest_first):
    """One side sends 5 MiB and closes its sending side first; the other
    receives to EOF, then sends 3 MiB back over the half-open connection."""
    laddr, caddr = target(f, v6)
    first, second = ("halfclose", "sendrecv")
    srv = host_listen(laddr, second if guest_first else first,
                      "--bytes", str(3 * MiB if guest_first else 5 * MiB))
    cli = guest_connect(f, caddr, srv.port, first if guest_first else second,
                        "--bytes", str(5 * MiB if guest_first else 3 * MiB))
    c, s = cli.result(60), srv.result(60)
    a, b = (c, s) if guest_first else (s, c)    # a closed first
    assert b["bytes"] == 5 * MiB and b["sha256"] == a["sent_sha256"]
    assert a["bytes"] == 3 * MiB and a["sha256"] == b["sent_sha256"]


@pytest.mark.parametrize("v6", [False, True], ids=["v4", "v6"])
def test_tcp_halfclose_guest_first(ferry_ns, v6):
    halfclose(ferry_ns(), v6, True)


def test_tcp_halfclose_host_first(ferry_ns):
    halfclose(ferry_ns(), False, False)


def test_tcp_rst_from_host(ferry_ns):
    f = ferry_ns()
    laddr, caddr = target(f, False)
    srv = host_listen(laddr, "rst")
    cli = guest_connect(f, caddr, srv.port, "hold")
    assert srv.result(30) == {"rst": True}
    assert cli.result(30) == {"reset": True}


def test_tcp_rst_from_guest(ferry_ns):
    f = ferry_ns()
    laddr, caddr = target(f, False)
    srv = host_listen(laddr, "hold")
    cli = guest_connect(f, caddr, srv.port, "rst")
    assert cli.result(30) == {"rst": True}
    assert srv.result(30) == {"reset": True}


def test_tcp_host_peer_disappears(ferry_ns):
    """The host server process dies mid-connection: the guest learns."""
    f = ferry_ns()
    laddr, caddr = target(f, False)
    srv = host_listen(laddr, "recv")
    cli = guest_connect(f, caddr, srv.port, "hold")
    # Accepted: the server holds a socket besides stdio and the listener.
    fds = f"/proc/{srv.proc.pid}/fd"
    conftest.wait_for(lambda: len(os.listdir(fds)) > 4, 10,
                      "accepted connection")
    srv.proc.send_signal(signal.SIGKILL)
    srv.proc.wait()
    r = cli.result(30)
    assert r.get("eof") or r.get("reset"), r


@pytest.mark.parametrize("v6", [False, True], ids=["v4", "v6"])
def test_tcp_many_short(ferry_ns, v6):
    """1000 short connections, 100 at a time, each echoing 1 KiB."""
    f = ferry_ns()
    laddr, caddr = target(f, v6)
    srv = host_listen(laddr, "echo", "--count", "1000")
    cli = guest_connect(f, caddr, srv.port, "many", "--conns", "1000",
                        "--parallel", "100", "--size", "1024",
                        "--timeout", "120")
    r = cli.result(150)
    assert r == {"done": 1000, "bad": 0, "conns": 1000}, r
    assert srv.result(30)["served"] == 1000


def test_tcp_many_long(ferry_ns):
    """50 concurrent connections echoing 4 MiB each."""
    f = ferry_ns()
    laddr, caddr = target(f, False)
    srv = host_listen(laddr, "echo", "--count", "50")
    cli = guest_connect(f, caddr, srv.port, "many", "--conns", "50",
                        "--parallel", "50", "--size", str(4 * MiB),
                        "--timeout", "240")
    r = cli.result(300)
    assert r == {"done": 50, "bad": 0, "conns": 50}, r
    assert srv.result(30)["echoed"] == 50 * 4 * MiB


def test_tcp_paused_receiver_bounded_and_recovers(ferry_ns):
    """Host -> guest with a guest receiver that stops reading for 3 s:
    the transfer completes intact (the stall matrix covers the rest)."""
    f = ferry_ns()
    rcv, secs = check_transfer(f, False, "down", 256 * MiB, recv_opts=(
        "--pause-at", str(32 * MiB), "--pause", "3"))
    assert secs < 120
