"""--splice-only: pasta's loopback-only mode, which sandboxing tools pass
(nsjail without NAT, stado and others: `pasta -f -q ... --splice-only
-T PORT ...`). The namespace gets no tap device, only its loopback: -T
and -U reach the host's loopback, -t and -u from the host's loopback
reach the namespace's loopback (--host-lo-to-ns-lo implied: the
namespace has no other address), while a connection to anywhere else
fails at once (no route) and ferry handles no frame at all.

Each check fails if ferry ignored the option: with a tap device the
namespace has a second interface, and a host loopback client of -t/-u
would be sent to the guest's own address, which nothing there has.
"""
import json
import os
import socket
import subprocess

import pytest

import conftest
from conftest import HOST4, HOST6
from fwd_util import (fwd_stats, guest_server, host_server, refused_or_reset,
                      to_guest, to_host, wait_guest_port, wait_host_port)
from tcp_util import PY
from test_udp import echo, host_query, stats  # noqa: F401
from test_udp_ns import free_ports, guest_client, guest_echo

T_IN, T_OUT = 40500, 40501
FRAMES = (r"stats: from guest (\d+) frames (\d+) bytes, "
          r"to guest (\d+) frames (\d+) bytes")

# Guest side: connect to each ADDR; print errno and seconds per address.
CONNECT_OUT = r'''
import json, socket, sys, time
out = {}
for addr in sys.argv[2:]:
    fam = socket.AF_INET6 if ":" in addr else socket.AF_INET
    s = socket.socket(fam, socket.SOCK_STREAM)
    s.settimeout(5)
    t = time.monotonic()
    try:
        s.connect((addr, int(sys.argv[1])))
        out[addr] = ["connected", 0]
    except OSError as e:
        out[addr] = [e.errno, time.monotonic() - t]
print(json.dumps(out))
'''


def so_ferry(ferry_ns, udp_in, udp_out, extra=()):
    f = ferry_ns(args=["--splice-only", "-t", str(T_IN), "-T", str(T_OUT),
                       "-u", str(udp_in), "-U", str(udp_out)] + list(extra),
                 config_net=False)
    wait_host_port(T_IN)
    wait_guest_port(f, T_OUT)
    return f


def frames(f):
    """ferry's guest-link counters: (rx frames, rx bytes, tx frames,
    tx bytes)."""
    return tuple(map(int, stats(f, FRAMES)))


def test_splice_only_namespace_has_loopback_only(ferry_ns):
    """No tap: lo is the namespace's only interface, and connecting to
    the host's addresses fails at once with 'network unreachable'."""
    f = so_ferry(ferry_ns, *free_ports(2))
    links = f.guest(["ip", "-o", "link", "show"]).stdout.splitlines()
    assert [ln.split(":")[1].strip() for ln in links] == ["lo"], links
    assert f.guest(["ip", "-4", "route", "show"]).stdout.strip() == ""
    r = f.guest([PY, "-c", CONNECT_OUT, "80", HOST4, HOST6, "203.0.113.1"])
    for addr, (err, secs) in json.loads(r.stdout).items():
        assert err == 101 and secs < 1, (addr, err, secs)	# ENETUNREACH
    assert "--splice-only" in f.output()
    assert frames(f) == (0, 0, 0, 0)
    # ...and the log says nothing of a guest address, gateway or template
    # interface the mode never uses
    for word in ("template interface", "gateway", "router", "local mode"):
        assert word not in f.output(), f.output()


@pytest.mark.parametrize("lo", ["127.0.0.1", "::1"])
def test_splice_only_tcp_both_ways(ferry_ns, lo):
    """-T: a namespace client on its loopback reaches a host server on
    the host's; -t: a host loopback client reaches a server on the
    namespace's loopback. Both spliced; a -t client on the host's own
    address is refused (nowhere to send it), and no frame is handled."""
    f = so_ferry(ferry_ns, *free_ports(2))
    to_host(f, lo, T_OUT, T_OUT, "up", 4 << 20, host_addr=lo)
    to_host(f, lo, T_OUT, T_OUT, "down", 4 << 20, host_addr=lo)
    to_guest(f, lo, T_IN, T_IN, "up", 4 << 20, guest_addr=lo)
    to_guest(f, lo, T_IN, T_IN, "down", 4 << 20, guest_addr=lo)
    st = fwd_stats(f)
    assert st["spliced"] == 4 and st["to_guest"] == 0, st
    srv = guest_server(f, "::", T_IN, "recv")
    try:
        assert refused_or_reset(HOST4 if lo == "127.0.0.1" else HOST6, T_IN)
    finally:
        srv.kill()
    st2 = fwd_stats(f)
    assert st2["refused"] == st["refused"] + 1, (st, st2)
    assert st2["to_guest"] == 0 and st2["spliced"] == 4, st2
    assert frames(f) == (0, 0, 0, 0)


def test_splice_only_udp_both_ways(ferry_ns, echo):  # noqa: F811
    """-U: namespace loopback clients reach a host echo server on the
    host's loopback; -u: host loopback clients reach a namespace echo
    server bound to its loopback; datagrams from the host's own address
    to the -u port are dropped (NO_LINK), never queued as frames."""
    u_in, u_out = free_ports(2)
    echo(socket.AF_INET, "127.0.0.1", u_out)
    echo(socket.AF_INET6, "::1", u_out)
    f = so_ferry(ferry_ns, u_in, u_out)
    assert guest_client(f, f"127.0.0.1|{u_out}", f"::1|{u_out}") == "ok"
    srv4 = guest_echo(f, "127.0.0.1", u_in)
    srv6 = guest_echo(f, "::1", u_in)
    try:
        for lo in ("127.0.0.1", "::1"):
            msg = b"splice-only " + lo.encode()
            assert host_query(lo, u_in, msg) == (msg, u_in)
        for addr in (HOST4, HOST6):
            with pytest.raises(socket.timeout):
                host_query(addr, u_in, b"through the tap?", timeout=0.5)
        assert int(stats(f, r"stats: drop NO_LINK (\d+)")) == 2
    finally:
        for p in (srv4, srv6):
            p.kill()
            p.wait()
    assert int(stats(f, r"(\d+) datagrams on the loopback path")) >= 8
    assert frames(f) == (0, 0, 0, 0)


def test_splice_only_sandbox_tool_command_line(tmp_path):
    """A sandboxing tool's command line, as it builds it: ferry as
    'pasta', in the foreground, running the command with -T to a host
    server; the command's exit status is ferry's."""
    pasta = tmp_path / "pasta"
    os.symlink(conftest.FERRY, pasta)
    srv = host_server("127.0.0.1", 40502, "send", "--bytes", "1000")
    cmd = [PY, "-c", "import socket,sys\n"
           "s=socket.create_connection(('127.0.0.1',40503),5)\n"
           "n=0\n"
           "while True:\n"
           " d=s.recv(65536)\n"
           " if not d: break\n"
           " n+=len(d)\n"
           "sys.exit(0 if n == 1000 else 3)\n"]
    argv = [str(pasta), "-q", "-f", "--runas", f"{os.getuid()}:{os.getgid()}",
            "--splice-only", "-t", "none", "-u", "none",
            "-T", "40503:40502", "-U", "none", "--"] + cmd
    r = subprocess.run(argv, capture_output=True, text=True,
                       timeout=30 * conftest.SLOW)
    assert r.returncode == 0, (r.returncode, r.stdout, r.stderr)
    assert r.stderr == "", r.stderr
    assert srv.result(10)["bytes"] == 1000
