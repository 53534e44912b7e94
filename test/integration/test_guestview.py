"""What the guest sees of the link (issue 20 items 3-4).

Minimum frames: every frame ferry sends the guest is at least 60 bytes
(802.3 without the FCS), checked where the guest receives it: on the tap
inside the guest namespace (a packet socket there) and on the qemu stream
socket (a Python client standing in for qemu). An ARP reply and an ICMP
echo reply without payload are 42 bytes before padding.

Neighbours: a LAN host beside the sandbox with a known MAC; the guest's
ARP and NDP for it must give that MAC.

traceroute: Debian's traceroute in the guest, UDP (-U) and ICMP (-I),
IPv4 and IPv6, through two routers in namespaces beyond the sandbox's
uplink: each hop must show its own address.
"""
import json
import os
import struct
import subprocess
import sys

import pytest

from conftest import GW4, HOST4, require, run, wait_for
from vmguest import (GUEST_MAC, StreamClient, arp_reply_for, arp_request,
                     csum, ferry_vms, ip4, is_arp_reply)

ETH_ZLEN = 60
TAP = "uplink0"

# Runs inside the guest namespace: a packet socket on the tap sends an ARP
# request for the gateway and reads what comes in until the reply; prints
# each received frame's length and ethertype, then the reply's bytes.
TAP_ARP = r"""
import socket, struct, sys, time
dev, gw = sys.argv[1], socket.inet_aton(sys.argv[2])
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(3))
s.bind((dev, 0))
mac = s.getsockname()[4]
me = socket.inet_aton(sys.argv[3])
arp = struct.pack(">HHBBH", 1, 0x0800, 6, 4, 1) + mac + me + b"\0" * 6 + gw
s.send(b"\xff" * 6 + mac + b"\x08\x06" + arp)
end = time.monotonic() + 10
s.settimeout(1)
while time.monotonic() < end:
    try:
        f, addr = s.recvfrom(65536)
    except socket.timeout:
        continue
    if addr[2] == socket.PACKET_OUTGOING:
        continue
    print("frame", len(f), f[12:14].hex())
    if f[12:14] == b"\x08\x06" and f[20:22] == b"\x00\x02" and f[28:32] == gw:
        print("reply", f.hex())
        sys.exit(0)
sys.exit(1)
"""


def test_tap_arp_reply_padded_to_60_bytes(ferry_ns, tmp_path):
    script = tmp_path / "tap_arp.py"
    script.write_text(TAP_ARP)
    f = ferry_ns()
    r = f.guest([sys.executable, str(script), TAP, GW4, HOST4])
    rows = [l.split() for l in r.stdout.splitlines()]
    lens = [int(x[1]) for x in rows if x[0] == "frame"]
    assert lens and min(lens) >= ETH_ZLEN, r.stdout
    reply = bytes.fromhex(rows[-1][1])
    assert len(reply) == ETH_ZLEN, r.stdout
    assert reply[42:] == b"\0" * 18		# zero padding after the ARP
    assert reply[28:32] == ip4(GW4)


def echo_request(dst, ident=0x4242, seq=1):
    """An ICMP echo request from the guest without payload: 42 bytes."""
    icmp = struct.pack(">BBHHH", 8, 0, 0, ident, seq)
    icmp = icmp[:2] + struct.pack(">H", csum(icmp)) + icmp[4:]
    ip = struct.pack(">BBHHHBBH4s4s", 0x45, 0, 20 + len(icmp), 1, 0x4000,
                     64, 1, 0, ip4(HOST4), ip4(dst))
    ip = ip[:10] + struct.pack(">H", csum(ip)) + ip[12:]
    return bytes(6) + GUEST_MAC + b"\x08\x00" + ip + icmp


def test_stream_frames_padded_to_60_bytes(tmp_path):
    with ferry_vms(tmp_path, "vm") as vm:
        f = vm()
        c = StreamClient(f.sock)
        c.send_frame(arp_request(GW4))
        rep = c.wait_frame(is_arp_reply(GW4), 5, "ARP reply")
        assert len(rep) == ETH_ZLEN and rep[42:] == b"\0" * 18
        gw_mac = arp_reply_for(rep, GW4)
        req = echo_request(GW4)
        assert len(req) == 42
        c.send_frame(gw_mac + req[6:])

        def echo_reply(fr):
            return (fr[12:14] == b"\x08\x00" and fr[23] == 1 and
                    fr[34] == 0 and fr[38:40] == b"\x42\x42" or None)
        e = c.wait_frame(echo_reply, 5, "echo reply")
        assert len(e) == ETH_ZLEN and e[42:] == b"\0" * 18
        assert struct.unpack(">H", e[16:18])[0] == 28	# IP length as sent
        c.close()


# ------------------------------------------------------------ traceroute

# Routers beyond the sandbox's uplink, each a network namespace held by
# a sleeping process we started: r1 answers as the sandbox's gateway
# (198.51.100.1, 2001:db8::1: a macvlan on uplink0's far end, uplink0p),
# r2 behind it, the target behind r2. ICMP errors unlimited in rate, so
# every probe gets its answer. The namespaces, and the links in them,
# vanish with their processes.
HOPS4 = ["198.51.100.1", "203.0.113.2", "203.0.113.6"]
HOPS6 = ["2001:db8::1", "2001:db8:1::2", "2001:db8:2::2"]
ROUTERS = r"""
set -e
r1=$1 r2=$2 t=$3
at() { p=$1; shift; nsenter -t "$p" -n "$@"; }
ip link add r1up link uplink0p type macvlan mode bridge
ip link set r1up netns "$r1"
ip link add r12a type veth peer name r12b
ip link set r12a netns "$r1"; ip link set r12b netns "$r2"
ip link add r2t type veth peer name tr2
ip link set r2t netns "$r2"; ip link set tr2 netns "$t"
for p in "$r1" "$r2" "$t"; do
	at "$p" ip link set lo up
	at "$p" sysctl -qw net.ipv4.ip_forward=1 net.ipv6.conf.all.forwarding=1 \
		net.ipv4.icmp_ratelimit=0 net.ipv6.icmp.ratelimit=0
done
at "$r1" ip link set r1up up
at "$r1" ip addr add 198.51.100.1/24 dev r1up
at "$r1" ip -6 addr add 2001:db8::1/64 dev r1up nodad
at "$r1" ip link set r12a up
at "$r1" ip addr add 203.0.113.1/30 dev r12a
at "$r1" ip -6 addr add 2001:db8:1::1/64 dev r12a nodad
at "$r1" ip route add 203.0.113.4/30 via 203.0.113.2
at "$r1" ip -6 route add 2001:db8:2::/64 via 2001:db8:1::2
at "$r2" ip link set r12b up
at "$r2" ip addr add 203.0.113.2/30 dev r12b
at "$r2" ip -6 addr add 2001:db8:1::2/64 dev r12b nodad
at "$r2" ip link set r2t up
at "$r2" ip addr add 203.0.113.5/30 dev r2t
at "$r2" ip -6 addr add 2001:db8:2::1/64 dev r2t nodad
at "$r2" ip route add default via 203.0.113.1
at "$r2" ip -6 route add default via 2001:db8:1::1
at "$t" ip link set tr2 up
at "$t" ip addr add 203.0.113.6/30 dev tr2
at "$t" ip -6 addr add 2001:db8:2::2/64 dev tr2 nodad
at "$t" ip route add default via 203.0.113.5
at "$t" ip -6 route add default via 2001:db8:2::1
# Warm every neighbour cache on the path (the probes then never wait
# behind address resolution in a router).
at "$t" ping -q -c 1 -W 5 198.51.100.2 >/dev/null
at "$t" ping -q -6 -c 1 -W 5 2001:db8::2 >/dev/null
"""


@pytest.fixture
def routers():
    """r1 -> r2 -> target beyond the uplink; torn down after the test
    (the processes we started ended, the sandbox's neighbour cache for
    the gateway flushed so later tests find nobody there again)."""
    require("traceroute")
    procs = [subprocess.Popen(["unshare", "-n", "sleep", "600"])
             for _ in range(3)]
    try:
        for p in procs:
            wait_for(lambda p=p: os.path.exists(f"/proc/{p.pid}/ns/net") and
                     os.stat(f"/proc/{p.pid}/ns/net").st_ino !=
                     os.stat("/proc/self/ns/net").st_ino, 5, "router ns")
        run(["sh", "-c", ROUTERS, "sh"] + [str(p.pid) for p in procs])
        yield
    finally:
        for p in procs:
            p.kill()
            p.wait()
        run(["ip", "neigh", "flush", "dev", "uplink0"], check=False)


def hops(out):
    """traceroute -n -q 1: the address each hop line reports, in order."""
    got = []
    for line in out.splitlines()[1:]:
        f = line.split()
        if len(f) >= 2 and f[0].isdigit():
            got.append(f[1])
    return got


@pytest.mark.parametrize("v6", [False, True], ids=["v4", "v6"])
@pytest.mark.parametrize("method", ["-U", "-I"])
def test_traceroute_reports_each_hop(ferry_ns, routers, method, v6):
    """The guest's TTL / hop limit reaches the host socket and each
    router's time exceeded comes back from that router's address; the
    target answers last (port unreachable for -U, echo reply for -I)."""
    f = ferry_ns()
    want = HOPS6 if v6 else HOPS4
    cmd = ["traceroute", "-6" if v6 else "-4", "-n", "-q", "1", "-w", "3",
           "-m", "5", method, want[-1]]
    r = f.guest(cmd, timeout=60)
    assert hops(r.stdout) == want, r.stdout + r.stderr


# ---------------------------------------------------- neighbours' MACs

LAN_MAC = "02:00:5e:10:00:07"
LAN4, LAN6 = "198.51.100.7", "2001:db8::7"


@pytest.fixture
def lan_host():
    """A neighbour on the sandbox's LAN (a macvlan on uplink0's far end,
    in a namespace held by a process we started) with a known MAC; the
    sandbox host has talked to it, so its neighbour table knows it."""
    p = subprocess.Popen(["unshare", "-n", "sleep", "600"])
    try:
        wait_for(lambda: os.stat(f"/proc/{p.pid}/ns/net").st_ino !=
                 os.stat("/proc/self/ns/net").st_ino, 5, "LAN host ns")
        pid = str(p.pid)
        run(["ip", "link", "add", "lan0", "link", "uplink0p", "address",
             LAN_MAC, "type", "macvlan", "mode", "bridge"])
        run(["ip", "link", "set", "lan0", "netns", pid])
        run(["nsenter", "-t", pid, "-n", "sh", "-ec",
             f"ip link set lo up; ip link set lan0 up; "
             f"ip addr add {LAN4}/24 dev lan0; "
             f"ip -6 addr add {LAN6}/64 dev lan0 nodad"])
        run(["ping", "-c", "1", "-W", "5", LAN4])
        run(["ping", "-6", "-c", "1", "-W", "5", LAN6])
        yield
    finally:
        p.kill()
        p.wait()
        run(["ip", "neigh", "flush", "dev", "uplink0"], check=False)


def guest_lladdr(f, addr):
    """The MAC the guest resolved addr to (after a ping through it)."""
    v6 = ":" in addr
    f.guest(["ping", "-6" if v6 else "-4", "-c", "1", "-W", "5", addr],
            check=False)
    out = f.guest(["ip", "-j", "-6" if v6 else "-4", "neigh", "show", addr,
                   "dev", TAP]).stdout
    ent = [n for n in json.loads(out) if n.get("lladdr")]
    return ent[0]["lladdr"] if ent else None


def test_arp_ndp_give_lan_neighbours_real_mac(ferry_ns, lan_host):
    """ARP and NDP for a neighbour the host knows on its LAN answer with
    that neighbour's MAC; an unknown LAN address and the gateway keep
    ferry's."""
    f = ferry_ns()
    assert guest_lladdr(f, LAN4) == LAN_MAC, f.output()
    assert guest_lladdr(f, LAN6) == LAN_MAC
    ours = guest_lladdr(f, GW4)
    assert ours and ours != LAN_MAC
    assert guest_lladdr(f, "198.51.100.9") == ours
