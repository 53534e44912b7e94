"""`ferry vm --vhost-user`: the vhost-user back-end, end to end.

Two kinds of tests:
- a Python front-end speaks the vhost-user control protocol (12-byte
  header: request, flags, size; little-endian on x86) to check what ferry
  offers, and that malformed messages close the connection without
  hurting ferry, which then serves the next front-end;
- a real guest (test/guest, qemu/TCG) boots with its RAM in a shared memfd
  and `-netdev vhost-user` against ferry: DHCP, ping, TCP both ways with
  content checks, an inbound port, iperf3 both ways; then qemu goes away
  and a second boot against the same ferry is served too.
"""
import os
import socket
import struct
import subprocess
import time

import pytest

import vmchecks
from conftest import FERRY, HOST4, SLOW, wait_for
from test_vm import INBOUND
from vmguest import (FerryVM, GuestSession, boot_twice, build_guest,
                     ferry_stats, ferry_vms, host_side, host_side_stop,
                     inbound_client, sha)

GET_FEATURES, SET_FEATURES, SET_OWNER = 1, 2, 3
SET_VRING_NUM, GET_PROTOCOL_FEATURES, GET_QUEUE_NUM = 8, 15, 17
F_MRG_RXBUF, F_INDIRECT, F_EVENT_IDX, F_PROTOCOL, F_VERSION_1 = \
    1 << 15, 1 << 28, 1 << 29, 1 << 30, 1 << 32
F_LOG_ALL = 1 << 26
PF_REPLY_ACK = 1 << 3
PF_LOG_SHMFD = 1 << 1
PF_DEVICE_STATE = 1 << 19
VERSION = 1
REPLY = 1 << 2


def recv_exact(s, n, timeout=5):
    s.settimeout(timeout * SLOW)
    data = b""
    while len(data) < n:
        d = s.recv(n - len(data))
        if not d:
            raise EOFError(f"closed after {len(data)} of {n} bytes")
        data += d
    return data


class FrontEnd:
    """A vhost-user front-end stand-in (no memory, no rings)."""

    def __init__(self, path):
        self.s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.s.connect(path)

    def send(self, req, payload=b"", flags=VERSION):
        self.s.sendall(struct.pack("<III", req, flags, len(payload)) +
                       payload)

    def call(self, req, payload=b""):
        """Send a request that has a reply; return the reply payload."""
        self.send(req, payload)
        r, flags, n = struct.unpack("<III", recv_exact(self.s, 12))
        assert r == req and flags == VERSION | REPLY, (r, flags)
        return recv_exact(self.s, n)

    def u64(self, req):
        p = self.call(req)
        assert len(p) == 8
        return struct.unpack("<Q", p)[0]

    def closed_by_peer(self, timeout=5):
        """True once ferry closes the connection."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.s.settimeout(max(0.01, deadline - time.monotonic()))
            try:
                if not self.s.recv(4096):
                    return True
            except socket.timeout:
                return False
            except ConnectionResetError:
                return True
        return False

    def close(self):
        self.s.close()


@pytest.fixture
def vu(tmp_path):
    """Factory: vu(args=(), **kw) -> FerryVM with --vhost-user."""
    with ferry_vms(tmp_path, "vu", ["--vhost-user"]) as start:
        yield start


def test_features_offered(vu):
    f = vu()
    fe = FrontEnd(f.sock)
    feat = fe.u64(GET_FEATURES)
    for bit in (F_VERSION_1, F_MRG_RXBUF, F_PROTOCOL, F_LOG_ALL):
        assert feat & bit, hex(feat)
    for bit in (F_INDIRECT, F_EVENT_IDX):		# not implemented
        assert not feat & bit, hex(feat)
    pf = fe.u64(GET_PROTOCOL_FEATURES)
    assert pf & PF_REPLY_ACK and pf & PF_LOG_SHMFD, hex(pf)	# dirty log
    assert pf & PF_DEVICE_STATE, hex(pf)		# ferry's own state
    assert fe.u64(GET_QUEUE_NUM) == 1			# one queue pair
    fe.close()


MALFORMED = {
    "bad version": struct.pack("<III", GET_FEATURES, 2, 0),
    "reply flag from the front-end": struct.pack("<III", GET_FEATURES,
                                                 VERSION | REPLY, 0),
    "huge payload size": struct.pack("<III", SET_FEATURES, VERSION, 1 << 20),
    "wrong payload size": struct.pack("<III", SET_FEATURES, VERSION, 3) +
    b"abc",
    "features never offered": struct.pack("<IIIQ", SET_FEATURES, VERSION, 8,
                                          1 << 63),
    "second queue pair": struct.pack("<IIIII", SET_VRING_NUM, VERSION, 8, 2,
                                     256),
    "ring size not a power of two": struct.pack("<IIIII", SET_VRING_NUM,
                                                VERSION, 8, 0, 100),
    "unknown request": struct.pack("<III", 999, VERSION, 0),
}


SET_VRING_KICK, SET_VRING_CALL, SET_VRING_ERR = 12, 13, 14


@pytest.mark.parametrize("req", [SET_VRING_KICK, SET_VRING_CALL,
                                 SET_VRING_ERR])
@pytest.mark.parametrize("kind", ["pipe", "file"])
def test_ring_fd_not_an_eventfd_refused(vu, tmp_path, req, kind):
    """A hostile front-end passes a pipe (reading it, or writing it when
    full, would block ferry's loop) or a regular file (always readable)
    as a ring's kick, call or error fd: ferry refuses it with a log line
    and a counter, closes the connection and serves the next front-end."""
    f = vu()
    fe = FrontEnd(f.sock)
    fe.u64(GET_FEATURES)
    r, w = os.pipe()
    path = tmp_path / "ring-fd"
    path.write_bytes(b"\0" * 64)
    fd = r if kind == "pipe" else os.open(path, os.O_RDWR)
    try:
        fe.s.sendmsg([struct.pack("<IIIQ", req, VERSION, 8, 0)],
                     [(socket.SOL_SOCKET, socket.SCM_RIGHTS,
                       struct.pack("i", fd))])
        assert fe.closed_by_peer(), f"ferry kept a {kind} as a ring fd"
    finally:
        for x in {r, w, fd}:
            os.close(x)
    fe.close()
    assert f.alive()
    wait_for(lambda: "not an eventfd: refused" in f.output(), 5,
             "the log line")
    _, _, drops = ferry_stats(f)
    assert drops.get("VU_FD") == 1, drops
    fe2 = FrontEnd(f.sock)
    assert fe2.u64(GET_FEATURES) & F_VERSION_1
    fe2.close()


@pytest.mark.parametrize("what", sorted(MALFORMED))
def test_malformed_message_closes_and_next_is_served(vu, what):
    f = vu()
    fe = FrontEnd(f.sock)
    fe.u64(GET_FEATURES)
    fe.s.sendall(MALFORMED[what])
    assert fe.closed_by_peer(), f"ferry kept a front-end that sent {what}"
    fe.close()
    assert f.alive()
    fe2 = FrontEnd(f.sock)
    assert fe2.u64(GET_FEATURES) & F_VERSION_1
    fe2.close()


def test_random_garbage_never_crashes(vu):
    """Seeded random byte soup, many connections: ferry stays up and keeps
    answering (each connection either closes or waits for more)."""
    import random
    rnd = random.Random(4321)
    f = vu()
    for i in range(60):
        fe = FrontEnd(f.sock)
        data = bytes(rnd.randrange(256) for _ in range(rnd.randrange(1, 200)))
        if i % 2:	# a plausible header first, then garbage payload
            data = struct.pack("<III", rnd.randrange(0, 50), VERSION,
                               rnd.randrange(0, 64)) + data
        try:
            fe.s.sendall(data)
        except (BrokenPipeError, ConnectionResetError):
            pass	# ferry closed it already: fine
        fe.close()
        assert f.alive(), f.output()

    def answers():
        """A new front-end is served (until ferry has seen the last garbage
        connection close, a new one is refused as a second front-end)."""
        fe = FrontEnd(f.sock)
        try:
            return fe.u64(GET_FEATURES) & F_VERSION_1
        except (EOFError, OSError):	# refused: reset, EOF or timeout
            return False
        finally:
            fe.close()
    wait_for(answers, 10, "a front-end served after the garbage")
    assert f.alive(), f.output()


def test_second_front_end_refused(vu):
    f = vu()
    a = FrontEnd(f.sock)
    a.u64(GET_FEATURES)
    b = FrontEnd(f.sock)
    assert b.closed_by_peer()
    assert a.u64(GET_QUEUE_NUM) == 1		# the first is still served
    a.close()
    b.close()


def test_inherited_fd_vhost_user(vu):
    """qemu 10.1's -netdev passt,vhost-user=on: `--vhost-user --fd N`, a
    connected socket; ferry serves it and exits when it closes."""
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    f = vu(["-F", str(b.fileno())], socket_path=None, pass_fds=[b.fileno()])
    b.close()
    fe = FrontEnd.__new__(FrontEnd)
    fe.s = a
    assert fe.u64(GET_FEATURES) & F_VERSION_1
    assert fe.u64(GET_QUEUE_NUM) == 1
    fe.close()
    assert f.wait_exit(10) == 0


def test_libvirt_passt_vhost_user_command_line(tmp_path):
    """libvirt runs `passt --vhost-user --socket PATH` (daemonized, one
    client); it answers as a vhost-user back-end and exits with it."""
    passt = tmp_path / "passt"
    os.symlink(FERRY, passt)
    sock, pidf = tmp_path / "vu.socket", tmp_path / "passt.pid"
    argv = [str(passt), "--one-off", "--vhost-user", "--socket", str(sock),
            "--pid", str(pidf), "--mtu", "1500", "--log-file",
            str(tmp_path / "passt.log"), "--tcp-ports", "2222:22"]
    r = subprocess.run(argv, capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    pid = int(wait_for(lambda: pidf.exists() and pidf.read_text().strip(),
                       10, "pid file"))
    try:
        wait_for(lambda: sock.exists(), 10, "socket")
        fe = FrontEnd(str(sock))
        assert fe.u64(GET_FEATURES) & F_VERSION_1
        fe.close()
        wait_for(lambda: not os.path.exists(f"/proc/{pid}") or
                 open(f"/proc/{pid}/stat").read().split()[2] == "Z", 10,
                 "passt daemon to exit")
    finally:
        if os.path.exists(f"/proc/{pid}"):
            os.kill(pid, 9)


# --------------------------------------------------- a real qemu guest

TCP_UP, TCP_DOWN, IPERF = 18301, 18302, 18401	# INBOUND: test_vm's

GUEST_CHECKS = r"""
. /run/ferry/dhcp.env 2>/dev/null
GW=$DHCP_ROUTER
(timeout 60 nc -l -p {inbound} -e cat; echo $? > /tmp/inbound.rc) &
LPID=$!
check "DHCPv4 lease" test "$FERRY_GUEST_DHCP" = ok
check "DHCPv4 address" sh -c "ip -4 addr show dev eth0 | grep -q 'inet {host4}/24'"
check "SLAAC address" sh -c "test $FERRY_GUEST_SLAAC = ok && ip -6 addr show dev eth0 scope global | grep -q 'inet6 2001:db8::'"
check "ping IPv4 gateway" timeout 15 ping -c 2 -W 5 "$GW"
GW6=$(ip -6 route show default | sed -n 's/.*via \([^ ]*\) dev.*/\1/p' | head -n1)
check "ping IPv6 gateway" timeout 15 ping6 -c 2 -W 5 -I eth0 "$GW6"
check "TCP upload" timeout 30 nc -w 5 "$GW" {up} < /root/up.bin
check "TCP download" sh -c "timeout 30 nc -w 5 $GW {down} > /tmp/down.bin; sha256sum /tmp/down.bin | grep -q {down_sha}"
i=0
while [ ! -f /tmp/inbound.rc ] && [ $i -lt 40 ]; do sleep 0.5; i=$((i+1)); done
check "TCP inbound served" test "$(cat /tmp/inbound.rc 2>/dev/null)" = 0
ip3() {{ out=$1; shift; timeout 40 iperf3 -c "$GW" -p {iperf} -t {secs} -f m --connect-timeout 5000 "$@" > "$out" 2>&1; }}
check "iperf3 TCP guest to host" ip3 /tmp/ip3a.txt
check "iperf3 TCP host to guest" ip3 /tmp/ip3b.txt -R
for x in a b; do echo "INFO iperf3 $x: $(grep -E 'receiver' /tmp/ip3$x.txt | tail -n1)"; done
check "link still up after bulk" timeout 15 ping -c 2 -W 5 "$GW"
kill $LPID 2>/dev/null
"""

@pytest.fixture(scope="module")
def guest(tmp_path_factory):
    """Build the guest, start ferry --vhost-user and host servers, boot
    twice against the same ferry."""
    g = GuestSession()
    g.cache, g.build_s = build_guest()
    tmp = tmp_path_factory.mktemp("vuguest")
    srv = host_side(g, tmp, TCP_UP, TCP_DOWN, IPERF)
    g.ferry = FerryVM(tmp, ["--vhost-user", "-t", str(INBOUND)])
    inbound_client(srv, INBOUND, os.urandom(64 << 10),
                   time.monotonic() + 300)
    script = GUEST_CHECKS.format(
        inbound=INBOUND, host4=HOST4, up=TCP_UP, down=TCP_DOWN,
        down_sha=sha(g.down), iperf=IPERF,
        secs=os.environ.get("FERRY_VU_IPERF_SECS", "2"))
    boot_twice(g, tmp, script, [tmp / "up.bin"], "vhost-user guest ",
               vhost_user=True)
    yield g
    host_side_stop(g)


def test_guest_boots_and_runs(guest):
    assert guest.boot1.ready is not None, guest.boot1.err
    assert guest.boot1.rc in (0, 1), guest.boot1.describe() + guest.boot1.err
    assert guest.ferry.alive(), guest.ferry.output()
    assert "vhost-user: guest memory" in guest.ferry.output()


@pytest.mark.parametrize("check", [
    "DHCPv4 lease", "DHCPv4 address", "SLAAC address", "ping IPv4 gateway",
    "ping IPv6 gateway"])
def test_guest_network_setup(guest, check):
    guest.boot1.check(check, guest.ferry)


# TCP both ways with content checks, the forwarded port: vmchecks.py
test_guest_tcp_upload = vmchecks.test_guest_tcp_upload
test_guest_tcp_download = vmchecks.test_guest_tcp_download
test_guest_tcp_inbound_forwarded_port = \
    vmchecks.test_guest_tcp_inbound_forwarded_port


@pytest.mark.parametrize("check", [
    "iperf3 TCP guest to host", "iperf3 TCP host to guest",
    "link still up after bulk"])
def test_guest_bulk(guest, check):
    guest.boot1.check(check, guest.ferry)


def test_guest_reconnects_to_same_ferry(guest):
    """qemu went away after boot 1; ferry stopped the rings, unmapped the
    memory, and serves a second qemu the same way."""
    vmchecks.boot2_served(guest)
    out = guest.ferry.output()
    assert out.count("vhost-user front-end connected") == 2, out
    assert out.count("guest disconnected") >= 1
