"""UDP through ferry: echo both ways over IPv4/IPv6, 10 000 datagrams of
mixed sizes, forwarded port ranges, flow expiry and eviction at the limit,
ICMP port unreachable reaching the guest.

Host-side servers are threads of this pytest process (sandbox host
namespace); guest-side programs are python3 (or nc) run in the guest with
Ferry.guest(). The guest reaches the host through its gateway (mapped to
host loopback) and through an extra host address on lo.
"""
import json
import os
import re
import select
import signal
import socket
import subprocess
import threading
import time

import pytest

import conftest
from conftest import GW4, GW6, HOST4, HOST6, run, wait_for, require

PY = "/usr/bin/python3"
EXTRA4, EXTRA6 = "198.51.100.200", "2001:db8::200"
IFACE = "uplink0"		# --config-net copies the template's name
ROUTER6 = "fe80::1"		# the guest's router: maps to host ::1
GW6_SCOPED = f"{ROUTER6}%{IFACE}"


@pytest.fixture(scope="module", autouse=True)
def extra_host_addr():
    """A host address the guest does not share (on lo: no dummy module)."""
    run(["ip", "addr", "replace", EXTRA4 + "/32", "dev", "lo"])
    run(["ip", "-6", "addr", "replace", EXTRA6 + "/128", "dev", "lo"])
    yield
    run(["ip", "addr", "del", EXTRA4 + "/32", "dev", "lo"], check=False)
    run(["ip", "-6", "addr", "del", EXTRA6 + "/128", "dev", "lo"],
        check=False)


class Echo:
    """UDP echo server on the sandbox host (a thread of this process);
    kind SOCK_STREAM: a listening socket, for a subclass's _run()."""

    def __init__(self, family, addr="", port=0, kind=socket.SOCK_DGRAM):
        self.s = socket.socket(family, kind)
        self.s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
        if family == socket.AF_INET6:
            self.s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
        if kind == socket.SOCK_STREAM:
            self.s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.s.bind((addr, port))
        if kind == socket.SOCK_STREAM:
            self.s.listen(8)
        self.port = self.s.getsockname()[1]
        self.s.settimeout(0.1)
        self.count = 0
        self.peers = set()
        self.stopped = False
        self.t = threading.Thread(target=self._run, daemon=True)
        self.t.start()

    def _run(self):
        while not self.stopped:
            try:
                data, peer = self._receive()
            except socket.timeout:
                continue
            except OSError:
                return
            self.count += 1
            self.peers.add(peer[:2])
            self._answer(data, peer)

    def _receive(self):
        return self.s.recvfrom(65535)

    def _answer(self, data, peer):
        self.s.sendto(data, peer)

    def close(self):
        self.stopped = True
        self.t.join(2)
        self.s.close()


@pytest.fixture
def echo():
    servers = []

    def start(family, addr="", port=0):
        e = Echo(family, addr, port)
        servers.append(e)
        return e

    yield start
    for e in servers:
        e.close()


# Guest side: send messages to ADDR PORT on a connected socket, expect
# each echoed back unchanged; print "ok" and the local port.
GUEST_ECHO = r'''
import socket, sys
addr, port, sport = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
ai = socket.getaddrinfo(addr, port, 0, socket.SOCK_DGRAM)[0]
s = socket.socket(ai[0], socket.SOCK_DGRAM)
s.bind(("::" if ai[0] == socket.AF_INET6 else "0.0.0.0", sport))
s.settimeout(3)
s.connect(ai[4])
msgs = [b"x", b"hello ferry", bytes(range(256)) * 5, bytes(60000)]
for i, m in enumerate(msgs):
    s.send(m)
    r = s.recv(65535)
    assert r == m, (i, len(r), len(m))
print("ok", s.getsockname()[1])
'''


@pytest.mark.parametrize("family,dst", [
    ("4", GW4), ("4", EXTRA4), ("6", GW6_SCOPED), ("6", EXTRA6)],
    ids=["v4-gateway", "v4-host-addr", "v6-gateway", "v6-host-addr"])
def test_udp_echo_guest_to_host(ferry_ns, echo, family, dst):
    """Guest -> host echo with content checks, up to a 60000-byte
    datagram; the host sees the guest's own source port."""
    fam = socket.AF_INET if family == "4" else socket.AF_INET6
    e = echo(fam)
    f = ferry_ns()
    r = f.guest([PY, "-c", GUEST_ECHO, dst, str(e.port), "40777"])
    assert r.stdout.split() == ["ok", "40777"]
    assert e.count == 4
    assert {p[1] for p in e.peers} == {40777}


# Guest side: N datagrams of mixed sizes (seeded), at most W in flight;
# reports counts as JSON. Each payload carries its sequence number and a
# pattern derived from it, so corruption and reordering are detected.
GUEST_VOLUME = r'''
import json, random, select, socket, struct, sys
addr, port, n, maxlen = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
rnd = random.Random(4)
blk = bytes(rnd.getrandbits(8) for _ in range(maxlen + 2048))
sizes = [rnd.choice((8, 9, 100, 512, 1000, maxlen, rnd.randint(8, maxlen)))
         for _ in range(n)]
def payload(i):
    off = (i * 7) % 2048
    return struct.pack("!II", i, sizes[i]) + blk[off:off + sizes[i] - 8]
ai = socket.getaddrinfo(addr, port, 0, socket.SOCK_DGRAM)[0]
s = socket.socket(ai[0], socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
s.connect(ai[4])
got, corrupt, dup, lost, W = set(), 0, 0, 0, 16
i = 0
while i < n:
    batch = range(i, min(n, i + W))
    for j in batch:
        s.send(payload(j))
    want = set(batch)
    while want:
        if not select.select([s], [], [], 2.0)[0]:
            lost += len(want)
            break
        d = s.recv(65535)
        k = struct.unpack("!I", d[:4])[0] if len(d) >= 8 else -1
        if k < 0 or k >= n or d != payload(k):
            corrupt += 1
        elif k in got:
            dup += 1
        else:
            got.add(k)
            want.discard(k)
    i += W
print(json.dumps({"sent": n, "received": len(got), "corrupt": corrupt,
                  "dup": dup, "lost": lost}))
'''


def test_udp_10000_mixed_sizes(ferry_ns, echo):
    """10 000 datagrams of mixed sizes up to the MTU (1500 here), echoed:
    none corrupted, none lost at this moderate rate."""
    e = echo(socket.AF_INET)
    f = ferry_ns(args=["-m", "1500"])
    r = f.guest([PY, "-c", GUEST_VOLUME, GW4, str(e.port), "10000",
                 str(1500 - 28)], timeout=120)
    res = json.loads(r.stdout)
    print("udp volume:", res)
    assert res["corrupt"] == 0 and res["dup"] == 0
    assert res["received"] == 10000, res


# Guest side: send a "warm" datagram (the path and the gateway's neighbour
# entry are ready once the host has it), then on "go" from stdin a burst
# of N numbered datagrams of SIZE bytes as fast as it can; prints "sent".
GUEST_BURST = r'''
import socket, struct, sys
addr, port, n, size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 8 << 20)
s.connect((addr, port))
s.send(b"warm")
print("ready", flush=True)
assert sys.stdin.readline().strip() == "go"
pad = bytes(size - 4)
for i in range(n):
    s.send(struct.pack("!I", i) + pad)
print("sent", flush=True)
'''


def test_udp_burst_held_while_ferry_is_stopped(ferry_ns):
    """A burst the guest sends while ferry is off the CPU waits in the
    tap's transmit queue (lengthened to 4096 frames, ns.c): 3000 datagrams
    sent while ferry is stopped (SIGSTOP) all reach the host, in order,
    once it runs again. With the tap's default 1000 frames, 2000 of them
    were dropped by the tap."""
    n, size = 3000, 1400
    host = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    host.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
    host.bind(("", 0))
    host.settimeout(10)
    # The host socket must hold the whole burst: ferry delivers it faster
    # than this test reads (each 1400-byte datagram is charged ~2.3 KiB).
    rcvbuf = host.getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF)
    if rcvbuf < n * 2560:
        host.close()
        pytest.skip(f"receive buffer {rcvbuf} bytes (net.core.rmem_max) "
                    f"cannot hold {n} datagrams")
    f = ferry_ns()
    g = subprocess.Popen(["nsenter", "-t", str(f.guest_pid), "-U", "-n",
                          "--preserve-credentials", PY, "-c", GUEST_BURST,
                          GW4, str(host.getsockname()[1]), str(n), str(size)],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         text=True)
    try:
        assert g.stdout.readline().strip() == "ready"
        assert host.recv(65535) == b"warm"
        os.kill(f.proc.pid, signal.SIGSTOP)
        try:
            g.stdin.write("go\n")
            g.stdin.flush()
            assert g.stdout.readline().strip() == "sent"
        finally:
            os.kill(f.proc.pid, signal.SIGCONT)
        seq = []
        try:
            while len(seq) < n:
                d = host.recv(65535)
                assert len(d) == size, len(d)
                seq.append(int.from_bytes(d[:4], "big"))
        except socket.timeout:
            pass
        assert seq == list(range(n)), \
            f"{len(seq)} of {n} arrived; first gap or swap near " + \
            str(next((i for i, k in enumerate(seq) if k != i), None))
    finally:
        g.kill()
        g.wait()
        host.close()


# Guest side echo server on ports given, both families; prints "ready".
GUEST_SERVER = r'''
import select, socket, sys
socks = []
for p in map(int, sys.argv[1:]):
    for fam, a in ((socket.AF_INET, "0.0.0.0"), (socket.AF_INET6, "::")):
        s = socket.socket(fam, socket.SOCK_DGRAM)
        if fam == socket.AF_INET6:
            s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
        s.bind((a, p))
        socks.append(s)
print("ready", flush=True)
while True:
    for s in select.select(socks, [], [])[0]:
        d, peer = s.recvfrom(65535)
        s.sendto(b"echo:%d:" % s.getsockname()[1] + d, peer)
'''


def guest_server(f, ports):
    """Start GUEST_SERVER in the guest; returns the Popen (we stop it)."""
    p = subprocess.Popen(["nsenter", "-t", str(f.guest_pid), "-U", "-n",
                          "--preserve-credentials", PY, "-c", GUEST_SERVER]
                         + [str(x) for x in ports],
                         stdout=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "ready"
    return p


def host_query(addr, port, data, timeout=3):
    fam = socket.AF_INET6 if ":" in addr else socket.AF_INET
    with socket.socket(fam, socket.SOCK_DGRAM) as s:
        s.settimeout(timeout)
        s.sendto(data, (addr, port))
        r, peer = s.recvfrom(65535)
        return r, peer[1]


def test_udp_forwarded_port_range(ferry_ns):
    """-u 31000-31002:32000-32002: host clients on loopback and on the
    host's address reach the guest's target ports over IPv4 and IPv6, and
    replies come back from the forwarded port."""
    f = ferry_ns(args=["-u", "31000-31002:32000-32002"])
    srv = guest_server(f, [32000, 32001, 32002])
    try:
        for i in range(3):
            for addr in ("127.0.0.1", HOST4, "::1", HOST6):
                msg = f"m{i}{addr}".encode() * 50
                r, sport = host_query(addr, 31000 + i, msg)
                assert sport == 31000 + i
                assert r == b"echo:%d:" % (32000 + i) + msg
        # Unforwarded port: nothing listens on the host.
        with pytest.raises((ConnectionRefusedError, socket.timeout)):
            host_query("127.0.0.1", 31003, b"x", timeout=1)
    finally:
        srv.kill()
        srv.wait()


def test_udp_forwarded_many_clients_one_port(ferry_ns):
    """Several clients of one forwarded port each get their own replies."""
    f = ferry_ns(args=["-u", "31010"])
    srv = guest_server(f, [31010])
    try:
        socks = []
        for i in range(8):
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            s.settimeout(3)
            s.sendto(b"client%d" % i, ("127.0.0.1", 31010))
            socks.append(s)
        for i, s in enumerate(socks):
            assert s.recvfrom(100)[0] == b"echo:31010:client%d" % i
            s.close()
    finally:
        srv.kill()
        srv.wait()


def test_udp_forwarded_bind_address(ferry_ns):
    """-u 127.0.0.1/31020 -u 31021: the first port listens on host
    loopback only, the second on every address."""
    f = ferry_ns(args=["-u", "127.0.0.1/31020", "-u", "31021"])
    srv = guest_server(f, [31020, 31021])
    try:
        assert host_query("127.0.0.1", 31020, b"a")[0] == b"echo:31020:a"
        with pytest.raises((ConnectionRefusedError, socket.timeout)):
            host_query(HOST4, 31020, b"b", timeout=1)
        with pytest.raises((ConnectionRefusedError, socket.timeout)):
            host_query("::1", 31020, b"c", timeout=1)
        assert host_query(HOST4, 31021, b"d")[0] == b"echo:31021:d"
        assert host_query("::1", 31021, b"e")[0] == b"echo:31021:e"
    finally:
        srv.kill()
        srv.wait()


# Guest side, after sending on a connected socket s: what comes back.
ANSWER = r'''
try:
    s.recv(100)
    print("answered")
except ConnectionRefusedError:
    print("refused")
except socket.timeout:
    print("timeout")
'''

GUEST_REFUSED = r'''
import socket, sys
ai = socket.getaddrinfo(sys.argv[1], int(sys.argv[2]), 0, socket.SOCK_DGRAM)[0]
s = socket.socket(ai[0], socket.SOCK_DGRAM)
s.settimeout(5)
s.connect(ai[4])
s.send(b"anyone?")
''' + ANSWER


def closed_port(fam):
    with socket.socket(fam, socket.SOCK_DGRAM) as s:
        s.bind(("", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize("dst", [GW4, EXTRA4, GW6_SCOPED, EXTRA6],
                         ids=["v4-gateway", "v4-host-addr", "v6-gateway",
                              "v6-host-addr"])
def test_udp_port_unreachable_reaches_guest(ferry_ns, dst):
    """The host's ICMP port unreachable becomes the guest's: its socket
    sees ECONNREFUSED at once instead of a timeout."""
    port = closed_port(socket.AF_INET6 if ":" in dst else socket.AF_INET)
    f = ferry_ns()
    r = f.guest([PY, "-c", GUEST_REFUSED, dst, str(port)])
    assert r.stdout.strip() == "refused"


def test_udp_port_unreachable_nc(ferry_ns):
    """nc -u (netcat-openbsd) gives up at once on the refusal (it exits
    1 on POLLERR without a message) instead of waiting for its input."""
    require("nc")
    port = closed_port(socket.AF_INET)
    f = ferry_ns()
    r = f.guest(f"start=$(date +%s%N); (printf 'a\\n'; sleep 4) | "
                f"{{ nc -u -v -w 6 {GW4} {port}; rc=$?; "
                f"echo rc=$rc ms=$(( ($(date +%s%N) - start) / 1000000 )); }}",
                check=False, timeout=20)
    m = re.search(r"rc=(\d+) ms=(\d+)", r.stdout)
    assert m, r
    assert m.group(1) == "1" and int(m.group(2)) < 3000, r.stdout


def stats(f, pattern):
    """Ask ferry for its statistics (SIGUSR1); the last line matching.
    Asked again every 0.5 s until a dump has one: a module prints no
    line before its first event (no udp flows statistics line before the first
    flow, a drop reason none before its first drop), and a dump ferry
    took before reading what the guest just sent had none."""
    before = len(f.output())
    asked = [0.0]

    def line():
        if time.monotonic() - asked[0] >= 0.5:
            f.proc.send_signal(signal.SIGUSR1)
            asked[0] = time.monotonic()
        m = re.findall(pattern, f.output()[before:])
        return m[-1] if m else None
    return wait_for(line, 5, f"stats line {pattern}")


# Guest side: one datagram (echoed) from each of n source ports.
GUEST_FLOWS = r'''
import socket, sys
addr, port, base, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
ok = 0
for i in range(n):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("0.0.0.0", base + i))
    s.settimeout(3)
    s.sendto(b"f%d" % i, (addr, port))
    ok += s.recv(100) == b"f%d" % i
    s.close()
print(ok)
'''

FLOW_STATS = r"udp flows (\d+) open, (\d+) created, (\d+) expired, (\d+) evicted"


def test_udp_flow_eviction_and_expiry(ferry_ns, echo, monkeypatch):
    """With at most 4 flows, 6 conversations evict the 2 least recently
    used; idle flows then expire (test timeouts of 5 s). The six must
    all happen within one timeout, or the first flows expire instead of
    being evicted: at 1.5 s a loaded machine (each exchange four context
    switches, ferry's ASan build among them) came close."""
    monkeypatch.setenv("FERRY_TEST_UDP_MAX_FLOWS", "4")
    monkeypatch.setenv("FERRY_TEST_UDP_TIMEOUT_MS", "5000")
    monkeypatch.setenv("FERRY_TEST_UDP_TIMEOUT_REPLIED_MS", "5000")
    e = echo(socket.AF_INET)
    f = ferry_ns()
    r = f.guest([PY, "-c", GUEST_FLOWS, GW4, str(e.port), "42000", "6"])
    assert r.stdout.strip() == "6"
    opened, created, expired, evicted = map(int, stats(f, FLOW_STATS))
    assert (created, evicted) == (6, 2)
    assert opened + expired == 4
    assert "udp: flow limit reached (4)" in f.output()

    def all_expired():
        o, _, x, _ = map(int, stats(f, FLOW_STATS))
        return o == 0 and x == 4
    wait_for(all_expired, 15, "flows to expire", interval=0.3)


def test_udp_destination_flood_bounded_fds(ferry_ns, monkeypatch):
    """A flood of distinct destinations cannot take more descriptors than
    the flow limit allows."""
    monkeypatch.setenv("FERRY_TEST_UDP_MAX_FLOWS", "16")
    f = ferry_ns()
    # The gateway's neighbour entry first: until ferry answers the ARP
    # request, the guest's kernel keeps only ~44 of these datagrams (its
    # unresolved queue, unres_qlen_bytes) and drops the rest, so a ferry
    # off the CPU for a few ms (the flood takes ~5 ms) saw fewer than 300.
    f.guest(["ping", "-c", "1", "-W", "5", GW4])
    base = len(os.listdir(f"/proc/{f.proc.pid}/fd"))
    f.guest([PY, "-c", r'''
import socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for p in range(20000, 20300):
    s.sendto(b"x", ("198.51.100.1", p))
'''])
    wait_for(lambda: int(stats(f, FLOW_STATS)[1]) == 300, 5,
             "300 flows created")
    fds = len(os.listdir(f"/proc/{f.proc.pid}/fd"))
    assert fds <= base + 16, (base, fds)
    assert int(stats(f, FLOW_STATS)[3]) >= 300 - 16


# Guest side: a server on the forwarded target port; after the first
# datagram it waits for a line on stdin, then replies on a socket
# connected to the client and reports what came back.
GUEST_REPLY_REFUSED = r'''
import socket, sys
fam = socket.AF_INET6 if sys.argv[1] == "6" else socket.AF_INET
s = socket.socket(fam, socket.SOCK_DGRAM)
s.bind(("::" if fam == socket.AF_INET6 else "0.0.0.0", int(sys.argv[2])))
print("ready", flush=True)
d, peer = s.recvfrom(100)
print("got", flush=True)
sys.stdin.readline()
s.connect(peer)
s.settimeout(5)
s.send(b"reply")
try:
    while s.recv(100) == b"hello":	# one the test sent again, queued
        pass
    print("answered")
except ConnectionRefusedError:
    print("refused")
except socket.timeout:
    print("timeout")
'''


@pytest.mark.parametrize("family", ["4", "6"])
def test_udp_forwarded_port_unreachable_reaches_guest(ferry_ns, family):
    """-u: the guest replies to a client that has gone away; the host's
    port unreachable (on the shared forwarded-port socket) becomes the
    guest's, so its socket sees ECONNREFUSED."""
    f = ferry_ns(args=["-u", "31030"])
    p = subprocess.Popen(["nsenter", "-t", str(f.guest_pid), "-U", "-n",
                          "--preserve-credentials", PY, "-c",
                          GUEST_REPLY_REFUSED, family, "31030"],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         text=True)
    try:
        assert p.stdout.readline().strip() == "ready"
        fam = socket.AF_INET6 if family == "6" else socket.AF_INET
        # A datagram may be lost (the tap queue under load): resend
        # from the same socket (one flow) until the guest says it got
        # one, with a deadline, instead of waiting on its line forever.
        with socket.socket(fam, socket.SOCK_DGRAM) as c:
            deadline = time.monotonic() + 15
            while True:
                c.sendto(b"hello", (HOST6 if family == "6" else HOST4, 31030))
                if select.select([p.stdout], [], [], 1)[0]:
                    break
                assert time.monotonic() < deadline, \
                    "the guest got no datagram in 15 s"
        assert p.stdout.readline().strip() == "got"
        p.stdin.write("go\n")
        p.stdin.flush()
        assert p.stdout.readline().strip() == "refused"
        assert p.wait(10) == 0
    finally:
        p.kill()
        p.wait()
    opened, created, expired, evicted = map(int, stats(f, FLOW_STATS))
    assert created == 1
    assert re.search(r", (\d+) ICMP errors to guest",
                     f.output()).group(1) == "1"


@pytest.mark.parametrize("family", ["4", "6"])
def test_ping_host_unreachable_reaches_guest(ferry_ns, family):
    """An echo request to an address on the host's link that nobody
    answers: the host's neighbour resolution fails and its ping socket
    queues "host unreachable"; ferry relays it, so the guest's ping
    reports the unreachable host (with its own echo id quoted: the
    guest's kernel finds the socket by it) instead of just timing out."""
    require("ping")
    dst = "198.51.100.77" if family == "4" else "2001:db8::77"
    f = ferry_ns()
    r = f.guest(["ping", "-n", "-" + family, "-c", "1", "-W", "8", dst],
                check=False, timeout=30)
    assert r.returncode != 0, r.stdout
    assert re.search(r"[Uu]nreachable", r.stdout + r.stderr), \
        (r.stdout, r.stderr)
