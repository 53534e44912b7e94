"""The options that turn a service off or steer the host side, shown by
their effect from inside the guest with real clients: --no-tcp and
--no-udp (an exchange with a host server fails, nothing of it reaches the
server, and no host port is forwarded), --no-ra (a router solicitation
gets no advertisement), --no-ndp (no advertisement, no neighbour), and
--no-dhcpv6 (a DHCPv6 SOLICIT gets no ADVERTISE), each against the same
exchange succeeding without the option; --outbound (the address a host
server sees) and --outbound-if4/6 (which interface host sockets may use:
TCP, UDP and ICMP echo alike); --freebind (-t and -u ports on an address
the host does not have yet); --busy-poll (the CPU pressure sampled once
traffic flows, never with 0). Every test fails if ferry ignored its
option. (--no-dhcp: test_services.py; --no-icmp: test_icmp.py.)
"""
import json
import os
import re
import signal
import socket

import pytest

from conftest import HOST4, HOST6, run, start_fails, wait_for
from fwd_util import host_listening, to_guest
from test_udp import (EXTRA4, EXTRA6, PY, Echo,  # noqa: F401
                      extra_host_addr, host_query, stats)
from test_udp_ns import (free_port, free_port_tcp_udp, free_ports, guest_echo,
                         udp_bound)

# A second host interface that routes nowhere (a veth pair whose far end
# stays here without an address): a host socket bound to it cannot reach
# the host's other addresses.
IF1, IF1_4, IF1_6 = "uplink1", "203.0.113.2", "2001:db8:1::2"

# Guest side, one exchange per run: "tcp ADDR PORT", "udp ADDR PORT" (one
# datagram, its echo), "rs IF" (a router solicitation from IF's
# link-local address; the advertisement's flags), "dhcp6 IF" (a DHCPv6
# SOLICIT; an ADVERTISE back?). Prints JSON {"ok": bool, ...}.
GUEST = r'''
import json, socket, struct, sys, time
what, arg = sys.argv[1], sys.argv[2]
def out(**kw):
    print(json.dumps(kw))
    sys.exit(0)
if what in ("tcp", "udp"):
    port = int(sys.argv[3])
    fam = socket.AF_INET6 if ":" in arg else socket.AF_INET
    s = socket.socket(fam, socket.SOCK_STREAM if what == "tcp"
                      else socket.SOCK_DGRAM)
    s.settimeout(2)
    try:
        s.connect((arg, port))
        s.send(b"ferry?")
        out(ok=s.recv(100) == b"ferry?")
    except OSError as e:
        out(ok=False, err=str(e))
idx = socket.if_nametoindex(arg)
deadline = time.monotonic() + 2
if what == "rs":
    s = socket.socket(socket.AF_INET6, socket.SOCK_RAW, socket.IPPROTO_ICMPV6)
    s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_MULTICAST_HOPS, 255)
    s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_MULTICAST_IF, idx)
    s.sendto(bytes([133, 0, 0, 0, 0, 0, 0, 0]), ("ff02::2", 0, 0, idx))
    while time.monotonic() < deadline:
        s.settimeout(max(deadline - time.monotonic(), 0.01))
        try:
            d, peer = s.recvfrom(2000)
        except socket.timeout:
            break
        if d[0] == 134:
            out(ok=True, flags=d[5], src=peer[0])
    out(ok=False)
duid = struct.pack("!HH6s", 3, 1, bytes.fromhex("9a5500000002"))
sol = (bytes([1, 0x12, 0x34, 0x56]) + struct.pack("!HH", 1, len(duid)) + duid
       + struct.pack("!HHIII", 3, 12, 1, 0, 0) + struct.pack("!HHH", 8, 2, 0))
s = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("::", 546, 0, idx))
s.sendto(sol, ("ff02::1:2", 547, 0, idx))
while time.monotonic() < deadline:
    s.settimeout(max(deadline - time.monotonic(), 0.01))
    try:
        d = s.recv(2000)
    except socket.timeout:
        break
    if d[:4] == bytes([2, 0x12, 0x34, 0x56]):
        out(ok=True)
out(ok=False)
'''


def guest_run(f, *args):
    return json.loads(f.guest([PY, "-c", GUEST] + [str(a) for a in args],
                              timeout=20).stdout)


class TcpEcho(Echo):
    """A TCP server on the host (a thread) that echoes each client's
    first message; count and peers as Echo's."""

    def __init__(self, family, port):
        super().__init__(family, "", port, socket.SOCK_STREAM)

    def _receive(self):
        return self.s.accept()

    def _answer(self, c, peer):
        with c:
            c.settimeout(2)
            try:
                c.sendall(c.recv(100))
            except OSError:
                pass


@pytest.fixture
def servers():
    """servers(fam, addr...) -> (TcpEcho, Echo, port): on one free port of
    family fam ("4" or "6"), TCP on any address, UDP on each addr (an echo
    bound to any address would answer from the address the kernel picks,
    which the guest's connected socket may not take); the Echo returned
    is the first one's."""
    made = []

    def start(fam, *addrs):
        af = socket.AF_INET if fam == "4" else socket.AF_INET6
        port = free_port_tcp_udp(af)
        made.append(TcpEcho(af, port))
        made.extend(Echo(af, a, port) for a in addrs)
        return made[-1 - len(addrs)], made[-len(addrs)], port

    yield start
    for s in made:
        s.close()


def drops_disabled(f):
    return int(stats(f, r"stats: drop SERVICE_DISABLED (\d+)"))


# --- --no-tcp, --no-udp ------------------------------------------------------


def test_no_tcp(ferry_ns, servers):
    """--no-tcp: a guest connection to a host server fails and never
    reaches it (the segments are dropped, counted), and -t forwards no
    port; UDP still works."""
    tcp, udp, port = servers("4", EXTRA4)
    fwd = free_port()
    assert guest_run(ferry_ns(), "tcp", EXTRA4, port)["ok"]
    f = ferry_ns(args=["--no-tcp", "-t", str(fwd)])
    assert fwd not in host_listening()
    r = guest_run(f, "tcp", EXTRA4, port)
    assert not r["ok"], r
    assert tcp.count == 1, tcp.peers	# the first ferry's only
    assert drops_disabled(f) >= 1
    assert guest_run(f, "udp", EXTRA4, port)["ok"]


def test_no_udp(ferry_ns, servers):
    """--no-udp: a guest datagram to a host echo server is dropped
    (counted) and never reaches it, and neither -u nor -U binds a port;
    TCP still works."""
    tcp, udp, port = servers("4", EXTRA4)
    fwd_in, fwd_out = free_ports(2)
    assert guest_run(ferry_ns(), "udp", EXTRA4, port)["ok"]
    n = udp.count
    f = ferry_ns(args=["--no-udp", "-u", str(fwd_in), "-U", str(fwd_out)])
    assert not udp_bound("/proc/net", fwd_in)
    guest_proc = f"/proc/{f.guest_pid}/net"
    assert not udp_bound(guest_proc, fwd_out)
    r = guest_run(f, "udp", EXTRA4, port)
    assert not r["ok"], r
    assert udp.count == n
    assert drops_disabled(f) >= 1
    assert guest_run(f, "tcp", EXTRA4, port)["ok"]


# --- --no-ra, --no-ndp, --no-dhcpv6 ---------------------------------------


def tap_up(f):
    """The guest's tap (not configured: no --config-net), brought up with
    a link-local address (no DAD); its name. The address is tentative
    until the kernel's DAD work has run, even with DAD off (a workqueue:
    late on a loaded machine), and a tentative one is no source address:
    wait until it is usable."""
    links = json.loads(f.guest(["ip", "-j", "link"]).stdout)
    ifn = [ln["ifname"] for ln in links if ln["ifname"] != "lo"][0]
    f.guest(["sysctl", "-qw", f"net.ipv6.conf.{ifn}.accept_dad=0"])
    f.guest(["ip", "link", "set", ifn, "up"])

    def usable():
        out = f.guest(["ip", "-6", "addr", "show", "dev", ifn]).stdout
        return any("inet6 fe80" in ln and "tentative" not in ln
                   for ln in out.splitlines())
    wait_for(usable, 10, "a usable link-local address")
    return ifn


def ping_router(f, ifn):
    """One echo to ferry's router address (needs its neighbour entry)."""
    r = f.guest(["ping", "-6", "-c", "1", "-W", "2", f"fe80::1%{ifn}"],
                check=False)
    return r.returncode == 0


@pytest.mark.parametrize("opt", ["--no-ra", "--no-ndp"])
def test_no_ra_no_ndp(ferry_ns, opt):
    """A router solicitation gets an advertisement (managed and other
    flags: DHCPv6 is on) and the router answers echo requests; with
    --no-ra no advertisement, the router still resolves; with --no-ndp
    neither."""
    f = ferry_ns(config_net=False)
    ifn = tap_up(f)
    ra = guest_run(f, "rs", ifn)
    assert ra["ok"] and ra["flags"] & 0xc0 == 0xc0, ra
    assert ping_router(f, ifn)
    f = ferry_ns(args=[opt], config_net=False)
    ifn = tap_up(f)
    assert not guest_run(f, "rs", ifn)["ok"]
    assert ping_router(f, ifn) == (opt == "--no-ra")
    if opt == "--no-ndp":
        assert drops_disabled(f) >= 1


def test_no_dhcpv6(ferry_ns):
    """A DHCPv6 SOLICIT gets an ADVERTISE; with --no-dhcpv6 none, and
    the router advertisement no longer points to DHCPv6 (M and O flags
    clear)."""
    f = ferry_ns(config_net=False)
    assert guest_run(f, "dhcp6", tap_up(f))["ok"]
    f = ferry_ns(args=["--no-dhcpv6"], config_net=False)
    ifn = tap_up(f)
    assert not guest_run(f, "dhcp6", ifn)["ok"]
    ra = guest_run(f, "rs", ifn)
    assert ra["ok"] and ra["flags"] & 0xc0 == 0, ra
    assert drops_disabled(f) >= 1


# --- --outbound, --outbound-if4/6 -------------------------------------------


@pytest.mark.parametrize("fam", ["4", "6"])
def test_outbound_address(ferry_ns, servers, fam):
    """-o ADDR: host sockets for the guest's TCP and UDP are bound to it,
    so a host server sees it as the client's address (without -o the
    kernel picks the server's own address, the destination being
    local)."""
    dst, out = (EXTRA4, HOST4) if fam == "4" else (EXTRA6, HOST6)
    tcp, udp, port = servers(fam, dst)
    f = ferry_ns()
    assert guest_run(f, "tcp", dst, port)["ok"]
    assert guest_run(f, "udp", dst, port)["ok"]
    assert {p[0] for p in tcp.peers} == {dst} == {p[0] for p in udp.peers}
    f.stop()
    tcp.peers.clear()
    udp.peers.clear()
    f = ferry_ns(args=["-o", out])
    assert guest_run(f, "tcp", dst, port)["ok"]
    assert guest_run(f, "udp", dst, port)["ok"]
    assert {p[0] for p in tcp.peers} == {out} == {p[0] for p in udp.peers}


@pytest.fixture
def second_if():
    """IF1: a host interface with IF1_4 and IF1_6 and no route beyond."""
    run(["ip", "link", "add", IF1, "type", "veth", "peer", "name",
         IF1 + "p"])
    run(["ip", "link", "set", IF1 + "p", "up"])
    run(["ip", "addr", "add", IF1_4 + "/24", "dev", IF1])
    run(["ip", "-6", "addr", "add", IF1_6 + "/64", "dev", IF1, "nodad"])
    run(["ip", "link", "set", IF1, "up"])
    yield
    run(["ip", "link", "del", IF1], check=False)


@pytest.mark.parametrize("fam", ["4", "6"])
def test_outbound_interface(ferry_ns, second_if, servers, fam):
    """--outbound-if4/6 IF1: host sockets for the guest's TCP, UDP and
    ICMP echo are bound to IF1, so the guest reaches IF1's own address
    but no longer the host's address on lo, which it reaches without the
    option."""
    dst, if_addr = (EXTRA4, IF1_4) if fam == "4" else (EXTRA6, IF1_6)
    port = servers(fam, dst, if_addr)[2]
    ping = ["ping", "-" + fam, "-c", "1", "-W", "1"]
    args = ["-i", "uplink0"]
    f = ferry_ns(args=args)
    for what in ("tcp", "udp"):
        assert guest_run(f, what, dst, port)["ok"], what
    assert f.guest(ping + [dst], check=False).returncode == 0
    f.stop()
    f = ferry_ns(args=args + [f"--outbound-if{fam}", IF1])
    for what in ("tcp", "udp"):
        assert guest_run(f, what, if_addr, port)["ok"], what
        assert not guest_run(f, what, dst, port)["ok"], what
    assert f.guest(ping + [if_addr], check=False).returncode == 0
    assert f.guest(ping + [dst], check=False).returncode != 0


# --- --freebind ------------------------------------------------------------

FREE4 = "203.0.113.77"		# not on the host when ferry starts


@pytest.mark.parametrize("proto", ["tcp", "udp"])
def test_freebind(ferry_ns, tmp_path, proto):
    """--freebind: a -t/-u port on an address the host does not have
    (yet) opens at start-up (IP_FREEBIND) and forwards to the guest once
    the address appears; without the option ferry exits naming the
    port, as for any port that cannot be bound."""
    opt = "-t" if proto == "tcp" else "-u"
    port = free_port()
    spec = f"{FREE4}/{port}"
    out = start_fails(ferry_ns, [opt, spec], [], tmp_path)
    assert f"port {port}" in out, out
    f = ferry_ns(args=["--freebind", opt, spec])
    srv = None if proto == "tcp" else guest_echo(f, "0.0.0.0", port)
    run(["ip", "addr", "add", FREE4 + "/32", "dev", "lo"])
    try:
        if proto == "tcp":
            to_guest(f, FREE4, port, port, "up", 1 << 20,
                     guest_addr="0.0.0.0")
        else:
            assert host_query(FREE4, port, b"freebind") == (b"freebind",
                                                            port)
    finally:
        run(["ip", "addr", "del", FREE4 + "/32", "dev", "lo"], check=False)
        if srv:
            srv.kill()
            srv.wait()


# --- --busy-poll ---------------------------------------------------------------

BUSY = (r"stats: busy polls (\d+), found events (\d+), preempted (\d+), "
        r"CPU pressure samples (\d+), contended (\d+)")


def stats_dump(f):
    """The text of one complete statistics dump: SIGUSR1 twice, the part
    between the two dumps' first lines (the first dump is whole once the
    second one starts)."""
    before = len(f.output())
    f.proc.send_signal(signal.SIGUSR1)
    wait_for(lambda: "stats: from guest" in f.output()[before:], 5,
             "a statistics dump")
    f.proc.send_signal(signal.SIGUSR1)
    wait_for(lambda: f.output()[before:].count("stats: from guest") == 2, 5,
             "a second statistics dump")
    return f.output()[before:].split("stats: from guest")[1]


@pytest.mark.parametrize("opt", [None, "0", "1000"])
def test_busy_poll(ferry_ns, servers, opt):
    """--busy-poll: by default (and with a budget) ferry samples the CPU
    pressure once traffic flows, to decide whether to poll before it
    sleeps (whether it then polls depends on the machine's load, which a
    test cannot choose; the unit tests cover the decisions); with 0 it
    never samples nor polls. A kernel without /proc/pressure/cpu: ferry
    says at start-up that it will not poll."""
    tcp, udp, port = servers("4", EXTRA4)
    f = ferry_ns(args=[] if opt is None else ["--busy-poll", opt])
    for _ in range(3):
        assert guest_run(f, "tcp", EXTRA4, port)["ok"]
    dump = stats_dump(f)
    if opt == "0":
        assert "busy poll" not in dump and "busy poll" not in f.output()
        return
    if not os.access("/proc/pressure/cpu", os.R_OK):
        assert "busy polling off: /proc/pressure/cpu" in f.output()
        return
    m = re.findall(BUSY, dump)
    assert m, dump
    polls, found, preempted, samples, contended = map(int, m[-1])
    assert samples >= 1 and contended <= samples and found <= polls, m
