"""UDP segmentation offload (USO) on the tap, both ways.

Host -> guest: on a tap with USO (Linux >= 6.2), ferry sends consecutive
datagrams of one flow that it received in one batch as one GSO frame
(gso_size: the first datagram's size, the last one possibly shorter,
partial checksum); the guest's kernel cuts it back into the datagrams.
These tests check that the guest's receiver sees every datagram, in
order, with its own boundaries and content (zero-length and one-byte
datagrams, runs ending short, sizes up to the MTU's limit), over IPv4 and
IPv6, at MTU 1500 and 65520, with offloads and with --no-offload; and
that GSO frames were really used (fewer frames than datagrams).

The host side sends its bursts with UDP_SEGMENT, so that whole runs wait
in ferry's socket at once (the loopback hands the GSO packet over
whole; the receiving socket cuts it up in one go).

A forwarding guest checks the checksums: it routes ferry's GSO frames to
a namespace behind it over a veth without offloads, so its kernel cuts
them and completes every checksum from ferry's partial one, and the far
end verifies them (receive checksum offload off); a wrong partial sum
would lose datagrams there.

Guest -> host: a guest socket with UDP_SEGMENT hands ferry one GSO frame
per send; ferry must send the datagrams it stands for (split per
gso_size), which the host's receiver checks the same way.
"""
import json
import re
import socket
import struct
import subprocess
import threading

import pytest

import conftest
from conftest import GW4, GW6, require

PY = "/usr/bin/python3"
IFACE = "uplink0"
GW6_SCOPED = f"fe80::1%{IFACE}"

# Shared by the host side and the guest side: the bursts (lists of
# groups: size, count, size of the last) and the payload of datagram i of
# burst b. Groups with count > 1 are sent as one UDP_SEGMENT send.
PLAN = r'''
import random, struct
BLK = bytes(range(256)) * 260
def plan(pmax, nbursts):
    r = random.Random(6)
    sizes = [1, 7, 100, 1000, 1400, pmax, pmax]
    bursts = []
    for b in range(nbursts):
        groups = []
        for g in range(r.randint(1, 4)):
            if r.random() < 0.08:
                groups.append((0, 1, 0))
                continue
            s = min(r.choice(sizes + [r.randint(1, pmax)]), pmax)
            cnt = r.randint(1, max(1, min(40, 60000 // s)))
            last = r.choice([s, s, r.randint(1, s)])
            groups.append((s, cnt, last))
        bursts.append(groups)
    return bursts
def lengths(groups):
    out = []
    for s, cnt, last in groups:
        out += [s] * (cnt - 1) + [last]
    return out
def payload(b, i, n):
    off = (b * 31 + i * 7) % 256
    return BLK[off:off + n]
'''

GUEST_RECV = PLAN + r'''
import json, select, socket, sys
addr, port, pmax, nb = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
ai = socket.getaddrinfo(addr, port, 0, socket.SOCK_DGRAM)[0]
s = socket.socket(ai[0], socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
if len(sys.argv) > 5:
    s.bind((sys.argv[5], 0))
s.connect(ai[4])
res = {"datagrams": 0, "bad": [], "missing": 0}
s.send(b"go")
for b, groups in enumerate(plan(pmax, nb)):
    for i, n in enumerate(lengths(groups)):
        if not select.select([s], [], [], 5)[0]:
            res["missing"] += 1
            break
        d = s.recv(70000)
        res["datagrams"] += 1
        if d != payload(b, i, n) and len(res["bad"]) < 10:
            res["bad"].append((b, i, n, len(d)))
    if res["missing"]:
        break
    s.send(b"next")
print(json.dumps(res))
'''


class Sender(threading.Thread):
    """Host side: waits for the guest's "go", then sends each burst
    (UDP_SEGMENT for groups) and waits for the guest's "next"."""

    def __init__(self, fam, addr, pmax, nbursts):
        super().__init__(daemon=True)
        self.s = socket.socket(fam, socket.SOCK_DGRAM)
        self.s.bind((addr, 0))
        self.s.settimeout(20)
        self.port = self.s.getsockname()[1]
        self.pmax, self.nbursts = pmax, nbursts
        self.env = {}
        exec(PLAN, self.env)
        self.error = None
        self.sent = 0
        self.start()

    def run(self):
        try:
            _, peer = self.s.recvfrom(100)
            for b, groups in enumerate(self.env["plan"](self.pmax,
                                                        self.nbursts)):
                self.send_burst(b, groups, peer)
                self.s.recvfrom(100)
        except OSError as e:
            self.error = e
        finally:
            self.s.close()

    def send_burst(self, b, groups, peer):
        i = 0
        for s, cnt, last in groups:
            lens = [s] * (cnt - 1) + [last]
            buf = b"".join(self.env["payload"](b, i + k, n)
                           for k, n in enumerate(lens))
            if cnt == 1:
                self.s.sendto(buf, peer)
            else:
                self.s.sendmsg([buf], [(socket.SOL_UDP, 103,   # UDP_SEGMENT
                                        struct.pack("H", s))], 0, peer)
            i += cnt
            self.sent += cnt


def to_guest_frames(f):
    m = re.search(r"stats: from guest (\d+) frames (\d+) bytes, to guest "
                  r"(\d+) frames (\d+) bytes", f.logpath.read_text())
    assert m, f.logpath.read_text()[-2000:]
    return int(m.group(3))


def host_to_guest(f, v6, pmax, nbursts, addr=None, bind=None,
                  receiver=None):
    """Run the bursts from a host sender to a guest receiver talking to
    addr (default: the gateway), its socket bound to bind if given; or
    run it with the receiver command prefix instead of in the guest.
    Returns (datagrams sent, the receiver's result)."""
    fam = socket.AF_INET6 if v6 else socket.AF_INET
    snd = Sender(fam, "::1" if v6 else "127.0.0.1", pmax, nbursts)
    args = [addr or (GW6_SCOPED if v6 else GW4), str(snd.port), str(pmax),
            str(nbursts)] + ([bind] if bind else [])
    if receiver is None:
        r = f.guest([PY, "-c", GUEST_RECV] + args, timeout=120)
        out = r.stdout
    else:
        out = subprocess.run(receiver + [PY, "-c", GUEST_RECV] + args,
                             capture_output=True, text=True, timeout=120,
                             check=True).stdout
    snd.join(30)
    res = json.loads(out)
    assert res["bad"] == [] and res["missing"] == 0, res
    assert snd.error is None, snd.error
    return snd.sent, res


@pytest.mark.parametrize("v6,mtu,offload", [
    (False, 1500, True), (True, 1500, True), (False, 65520, True),
    (True, 65520, True), (False, 1500, False)],
    ids=["v4-1500", "v6-1500", "v4-65520", "v6-65520", "v4-no-offload"])
def test_uso_host_to_guest_boundaries(ferry_ns, v6, mtu, offload):
    f = ferry_ns(args=["-m", str(mtu)] + ([] if offload else
                                           ["--no-offload"]))
    pmax = mtu - (48 if v6 else 28)
    sent, res = host_to_guest(f, v6, pmax, 40)
    assert res["bad"] == [] and res["missing"] == 0, res
    assert res["datagrams"] == sent
    assert f.stop() == 0
    log = f.logpath.read_text()
    frames = to_guest_frames(f)
    if offload:
        assert "USO4 USO6" in log, log[-2000:]
        # Runs went as GSO frames: far fewer frames than datagrams (the
        # count includes a few ARP/NDP/DHCP frames).
        assert frames < sent * 0.6, (frames, sent)
    else:
        assert frames >= sent, (frames, sent)


INNER6 = "2001:db8::77"	# in the guest's prefix: ferry accepts it as a source


def test_uso_split_by_forwarding_guest(ferry_ns, tmp_path):
    """The guest routes ferry's UDP GSO frames to a namespace behind it;
    its kernel cuts them and completes the checksums, the far end (no
    receive checksum offload) verifies every one: nothing may be lost,
    no checksum error counted. IPv6 only: the inner namespace's address
    lies in the guest's prefix, which ferry takes as the guest's own (an
    IPv4 source other than the guest's address is refused); the IPv4
    partial checksum is checked by the unit tests."""
    from test_offload import inner, inner_ns
    f = ferry_ns(args=["-m", "65520", "--map-host-loopback",
                       "2001:db8:e::1"])
    hold, pid = inner_ns(f, tmp_path, 1500)
    pmax = 1500 - 48
    try:
        inner(f, pid, f"ethtool -K fw1 rx off && "
              f"ip -6 addr add {INNER6}/128 dev fw1 nodad")
        f.guest(f"ip -6 route add {INNER6}/128 via 2001:db8:f::2 dev fw0")
        sent, res = host_to_guest(
            f, True, pmax, 30, addr="2001:db8:e::1", bind=INNER6,
            receiver=["nsenter", "-t", str(pid), "-U", "-n",
                      "--preserve-credentials"])
        assert res["bad"] == [] and res["missing"] == 0, res
        assert res["datagrams"] == sent
        snmp = subprocess.run(
            ["nsenter", "-t", str(pid), "-U", "-n", "--preserve-credentials",
             "cat", "/proc/net/snmp6"], capture_output=True, text=True,
            check=True).stdout
        row = dict(l.split() for l in snmp.splitlines() if l.strip())
        assert row["Udp6InCsumErrors"] == "0", row
        assert int(row["Udp6InDatagrams"]) >= sent
    finally:
        hold.kill()
        hold.wait()
    assert f.stop() == 0
    assert to_guest_frames(f) < sent * 0.6


GUEST_SEND = PLAN + r'''
import select, socket, struct, sys
addr, port, pmax, nb = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
ai = socket.getaddrinfo(addr, port, 0, socket.SOCK_DGRAM)[0]
s = socket.socket(ai[0], socket.SOCK_DGRAM)
s.connect(ai[4])
for b, groups in enumerate(plan(pmax, nb)):
    i = 0
    for size, cnt, last in groups:
        lens = [size] * (cnt - 1) + [last]
        buf = b"".join(payload(b, i + k, n) for k, n in enumerate(lens))
        if cnt == 1:
            s.send(buf)
        else:
            s.sendmsg([buf], [(socket.SOL_UDP, 103, struct.pack("H", size))])
        i += cnt
    if not select.select([s], [], [], 10)[0]:
        sys.exit("no 'next' after burst %d" % b)
    s.recv(100)
print("done")
'''


class Receiver(threading.Thread):
    """Host side of guest -> host: checks each burst's datagrams (order,
    boundaries, content), then answers "next"."""

    def __init__(self, fam, addr, pmax, nbursts):
        super().__init__(daemon=True)
        self.s = socket.socket(fam, socket.SOCK_DGRAM)
        self.s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
        self.s.bind((addr, 0))
        self.s.settimeout(10)
        self.port = self.s.getsockname()[1]
        self.pmax, self.nbursts = pmax, nbursts
        self.env = {}
        exec(PLAN, self.env)
        self.res = {"datagrams": 0, "bad": [], "missing": 0}
        self.start()

    def run(self):
        try:
            for b, groups in enumerate(self.env["plan"](self.pmax,
                                                        self.nbursts)):
                for i, n in enumerate(self.env["lengths"](groups)):
                    d, peer = self.s.recvfrom(70000)
                    self.res["datagrams"] += 1
                    if d != self.env["payload"](b, i, n) and \
                            len(self.res["bad"]) < 10:
                        self.res["bad"].append((b, i, n, len(d)))
                self.s.sendto(b"next", peer)
        except OSError:
            self.res["missing"] += 1
        finally:
            self.s.close()


@pytest.mark.parametrize("v6,mtu,offload", [
    (False, 1500, True), (True, 1500, True), (False, 65520, True),
    (False, 1500, False)],
    ids=["v4-1500", "v6-1500", "v4-65520", "v4-no-offload"])
def test_uso_guest_to_host_split(ferry_ns, v6, mtu, offload):
    """A guest socket sending with UDP_SEGMENT: each datagram reaches the
    host as sent (ferry splits the guest's GSO frames per gso_size)."""
    f = ferry_ns(args=["-m", str(mtu)] + ([] if offload else
                                           ["--no-offload"]))
    pmax = mtu - (48 if v6 else 28)
    rcv = Receiver(socket.AF_INET6 if v6 else socket.AF_INET,
                   "::1" if v6 else "127.0.0.1", pmax, 40)
    r = f.guest([PY, "-c", GUEST_SEND, GW6_SCOPED if v6 else GW4,
                 str(rcv.port), str(pmax), "40"], timeout=120, check=False)
    rcv.join(30)
    assert rcv.res["bad"] == [] and rcv.res["missing"] == 0, rcv.res
    assert r.returncode == 0 and r.stdout.strip() == "done", r
    assert f.stop() == 0
    m = re.search(r"stats: from guest (\d+) frames", f.logpath.read_text())
    sent = rcv.res["datagrams"]
    if offload:
        assert int(m.group(1)) < sent * 0.6, (m.group(1), sent)
    else:
        assert int(m.group(1)) >= sent, (m.group(1), sent)


SMALL_MTU_DST = "198.51.100.201"


def test_uso_gso_send_falls_back(ferry_ns):
    """ferry sends a run of a flow's datagrams to the host as one
    UDP_SEGMENT send; where the kernel refuses that (here: a route whose
    MTU, 1000, is below the 1400-byte datagrams), each datagram is sent
    on its own (fragmented by the host) and none is lost."""
    conftest.run(["ip", "addr", "replace", SMALL_MTU_DST + "/32", "dev",
                  "lo"])
    conftest.run(["ip", "route", "replace", "local", SMALL_MTU_DST, "dev",
                  "lo", "table", "local", "mtu", "lock", "1000"])
    try:
        f = ferry_ns()
        rcv = Receiver(socket.AF_INET, SMALL_MTU_DST, 1400, 20)
        r = f.guest([PY, "-c", GUEST_SEND, SMALL_MTU_DST, str(rcv.port),
                     "1400", "20"], timeout=120, check=False)
        rcv.join(30)
        assert rcv.res["bad"] == [] and rcv.res["missing"] == 0, rcv.res
        assert r.returncode == 0 and r.stdout.strip() == "done", r
    finally:
        conftest.run(["ip", "addr", "del", SMALL_MTU_DST + "/32", "dev",
                      "lo"], check=False)
