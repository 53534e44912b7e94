"""The LAN the multicast tests talk to: a network namespace bridged to
the sandbox's uplink (test/sandbox.sh: uplink0, the template interface,
is a veth whose far end uplink0p has no address). A bridge lanbr0 in
the sandbox takes uplink0p and lan0, whose peer lan0p sits in the LAN
namespace with 198.51.100.7/24 and 2001:db8::7/64; the bridge floods
multicast (no snooping), as a switch without IGMP snooping does. Nothing
leaves the machine: the bridge has no other port.

Responders run in the LAN namespace (python3, nsenter -n) and answer
each datagram unicast to its sender, saying what they saw: the address
it was sent to, its TTL / hop limit, its payload.
"""
import json
import os
import socket
import subprocess

from conftest import run, wait_for

PY = "/usr/bin/python3"
LAN4, LAN6 = "198.51.100.7", "2001:db8::7"


class Lan:
    """The LAN namespace, held by a sleeping process we started."""

    def __init__(self):
        self.holder = None
        self.procs = []

    def up(self):
        run(["ip", "link", "add", "lanbr0", "type", "bridge",
             "mcast_snooping", "0"])
        run(["ip", "link", "set", "lanbr0", "mtu", "65520"])
        run(["ip", "link", "add", "lan0", "mtu", "65520", "type", "veth",
             "peer", "name", "lan0p", "mtu", "65520"])
        run(["ip", "link", "set", "uplink0p", "master", "lanbr0"])
        run(["ip", "link", "set", "lan0", "master", "lanbr0"])
        run(["ip", "link", "set", "lan0", "up"])
        run(["ip", "link", "set", "lanbr0", "up"])
        self.holder = subprocess.Popen(["unshare", "-n", "sleep", "3600"])
        mine = os.readlink("/proc/self/ns/net")
        wait_for(lambda: os.readlink(f"/proc/{self.holder.pid}/ns/net")
                 != mine, 5, "LAN namespace")
        run(["ip", "link", "set", "lan0p", "netns", str(self.holder.pid)])
        for cmd in ("ip link set lo up",
                    f"ip addr add {LAN4}/24 dev lan0p",
                    f"ip -6 addr add {LAN6}/64 dev lan0p nodad",
                    "ip link set lan0p up",
                    "ip route add 224.0.0.0/4 dev lan0p"):
            self.run(cmd.split())

    def run(self, cmd, **kw):
        return run(["nsenter", "-t", str(self.holder.pid), "-n"] + cmd, **kw)

    def popen(self, cmd, **kw):
        p = subprocess.Popen(["nsenter", "-t", str(self.holder.pid), "-n"]
                             + cmd, **kw)
        self.procs.append(p)
        return p

    def stop_procs(self):
        """End the responders we started (by their PIDs)."""
        for p in self.procs:
            if p.poll() is None:
                p.kill()
            p.wait()
        self.procs = []

    def down(self):
        self.stop_procs()
        if self.holder:
            self.holder.kill()
            self.holder.wait()
        run(["ip", "link", "del", "lan0"], check=False)
        run(["ip", "link", "set", "uplink0p", "nomaster"], check=False)
        run(["ip", "link", "del", "lanbr0"], check=False)


# LAN responder: RESPONDER PORT [GROUP ...] listens on PORT (IPv4 and
# IPv6), joins each GROUP on lan0p and answers every datagram unicast
# to its sender with a JSON object: to (the address it was sent to),
# ttl, data, and for an SSDP M-SEARCH the usual 200 OK headers in "ssdp".
RESPONDER = r'''
import json, select, socket, struct, sys
port = int(sys.argv[1]); groups = sys.argv[2:]
idx = socket.if_nametoindex("lan0p")
s4 = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s4.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s4.bind(("0.0.0.0", port))
s4.setsockopt(socket.IPPROTO_IP, 8, 1)                    # IP_PKTINFO
s4.setsockopt(socket.IPPROTO_IP, 12, 1)                   # IP_RECVTTL
s6 = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
s6.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
s6.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s6.bind(("::", port))
s6.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_RECVPKTINFO, 1)
s6.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_RECVHOPLIMIT, 1)
for g in groups:
    if ":" in g:
        s6.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_JOIN_GROUP,
                      socket.inet_pton(socket.AF_INET6, g) + struct.pack("@I", idx))
    else:
        s4.setsockopt(socket.IPPROTO_IP, socket.IP_ADD_MEMBERSHIP,
                      struct.pack("4s4si", socket.inet_aton(g), bytes(4), idx))
print("ready", flush=True)
while True:
    for s in select.select([s4, s6], [], [])[0]:
        data, anc, _, peer = s.recvmsg(65535, 256)
        to, ttl = None, None
        for lvl, typ, val in anc:
            if (lvl, typ) == (socket.IPPROTO_IP, 8):
                to = socket.inet_ntoa(val[8:12])
            elif (lvl, typ) == (socket.IPPROTO_IP, 2):       # IP_TTL
                ttl = struct.unpack("@i", val)[0]
            elif (lvl, typ) == (socket.IPPROTO_IPV6, socket.IPV6_PKTINFO):
                to = socket.inet_ntop(socket.AF_INET6, val[:16])
            elif (lvl, typ) == (socket.IPPROTO_IPV6, socket.IPV6_HOPLIMIT):
                ttl = struct.unpack("@i", val)[0]
        r = {"to": to, "ttl": ttl, "data": data.decode(errors="replace"),
             "from": peer[0]}
        if data.startswith(b"M-SEARCH"):
            r["ssdp"] = ("HTTP/1.1 200 OK\r\nCACHE-CONTROL: max-age=60\r\n"
                         "ST: upnp:rootdevice\r\nUSN: uuid:ferry-lan::upnp:rootdevice\r\n"
                         "LOCATION: http://198.51.100.7:8080/desc.xml\r\n\r\n")
        r["sport"] = peer[1]
        print(json.dumps(r), flush=True)
        if peer[1] == port == 5353 and to in groups:
            # RFC 6762 6: an answer to a query from port 5353 goes to
            # the group, from 5353, TTL / hop limit 255.
            if s is s6:
                s6.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_MULTICAST_IF, idx)
                s6.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_MULTICAST_HOPS, 255)
                s6.sendto(json.dumps(r).encode(), (to, 5353, 0, idx))
            else:
                s4.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_TTL, 255)
                s4.sendto(json.dumps(r).encode(), (to, 5353))
            continue
        s.sendto(json.dumps(r).encode(), peer)
'''


# Guest client: QUERY GROUP PORT TTL MESSAGE sends MESSAGE to GROUP:PORT
# (IPv6: on the guest's interface) with that TTL / hop limit from an
# ephemeral port, and prints a JSON list of the answers (sender, payload)
# collected for 3 s, or until the first one with "one".
QUERY = r'''
import json, socket, sys, time
group, port, ttl, msg = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
one = len(sys.argv) > 5
v6 = ":" in group
s = socket.socket(socket.AF_INET6 if v6 else socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("::" if v6 else "0.0.0.0", 0))
if v6:
    idx = socket.if_nametoindex("uplink0")
    s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_MULTICAST_HOPS, ttl)
    s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_MULTICAST_IF, idx)
    dst = (group, port, 0, idx)
else:
    s.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_TTL, ttl)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_BROADCAST, 1)
    dst = (group, port)
s.sendto(msg.encode(), dst)
out, end = [], time.monotonic() + 3
while time.monotonic() < end:
    s.settimeout(max(end - time.monotonic(), 0.01))
    try:
        data, peer = s.recvfrom(65535)
    except socket.timeout:
        break
    out.append({"from": peer[0].split("%")[0], "reply": json.loads(data)})
    if one:
        break
print(json.dumps(out))
'''


# Guest mDNS querier: MDNS GROUP [N] joins GROUP on the guest's
# interface with a socket on port 5353 (as an mDNS responder does), sends
# a query from 5353 with TTL / hop limit 255 and prints a JSON list of
# what reached the socket from others within 3 s (at most N, default 1):
# sender, sender port, the datagram's TTL, payload.
MDNS = r'''
import json, socket, struct, sys, time
group = sys.argv[1]; want = int(sys.argv[2]) if len(sys.argv) > 2 else 1
v6 = ":" in group
idx = socket.if_nametoindex("uplink0")
s = socket.socket(socket.AF_INET6 if v6 else socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
if v6:
    s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
    s.bind(("::", 5353))
    s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_JOIN_GROUP,
                 socket.inet_pton(socket.AF_INET6, group) + struct.pack("@I", idx))
    s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_MULTICAST_IF, idx)
    s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_MULTICAST_HOPS, 255)
    s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_MULTICAST_LOOP, 0)
    s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_RECVHOPLIMIT, 1)
    dst = (group, 5353, 0, idx)
else:
    s.bind(("0.0.0.0", 5353))
    s.setsockopt(socket.IPPROTO_IP, socket.IP_ADD_MEMBERSHIP,
                 struct.pack("4s4si", socket.inet_aton(group), bytes(4), idx))
    s.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_TTL, 255)
    s.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_LOOP, 0)
    s.setsockopt(socket.IPPROTO_IP, 12, 1)                # IP_RECVTTL
    dst = (group, 5353)
print("joined", flush=True)
sys.stdin.readline()
s.sendto(b"mdns announcement", dst)
out, end = [], time.monotonic() + 3
while time.monotonic() < end and len(out) < want:
    s.settimeout(max(end - time.monotonic(), 0.01))
    try:
        data, anc, _, peer = s.recvmsg(65535, 64)
    except socket.timeout:
        break
    ttl = None
    for lvl, typ, val in anc:
        if typ in (2, socket.IPV6_HOPLIMIT):
            ttl = struct.unpack("@i", val)[0]
    out.append({"from": peer[0].split("%")[0], "sport": peer[1], "ttl": ttl,
                "reply": json.loads(data)})
print(json.dumps(out))
'''


def mdns(f, group, joined, n=1):
    """MDNS in the guest of ferry f, sending once joined() (ferry has
    the group: the guest's kernel sends its report a moment after the
    join, and a query sent at once could be answered before ferry
    joined); the list of what it heard."""
    p = subprocess.Popen(["nsenter", "-t", str(f.guest_pid), "-U", "-n",
                          "--preserve-credentials", PY, "-c", MDNS, group,
                          str(n)], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, text=True)
    try:
        assert p.stdout.readline().strip() == "joined"
        joined()
        p.stdin.write("go\n")
        p.stdin.flush()
        return json.loads(p.stdout.readline())
    finally:
        p.stdin.close()
        p.wait()


def responder(lan, port, *groups):
    """Start RESPONDER in the LAN; returns the Popen once it is ready."""
    p = lan.popen([PY, "-c", RESPONDER, str(port)] + list(groups),
                  stdout=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "ready"
    return p


def query(f, group, port, ttl, msg, one=True):
    """QUERY from the guest of ferry f; the list of answers."""
    args = [PY, "-c", QUERY, group, str(port), str(ttl), msg]
    return json.loads(f.guest(args + (["one"] if one else [])).stdout)


def socket_family(addr):
    return socket.AF_INET6 if ":" in addr else socket.AF_INET


# Guest: JOIN GROUP... joins each group on the guest's interface with
# one socket and holds them until stdin closes; prints "joined" first.
JOIN = r'''
import socket, struct, sys
idx = socket.if_nametoindex("uplink0")
socks = []
for g in sys.argv[1:]:
    if ":" in g:
        s = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
        s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_JOIN_GROUP,
                     socket.inet_pton(socket.AF_INET6, g) + struct.pack("@I", idx))
    else:
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.setsockopt(socket.IPPROTO_IP, socket.IP_ADD_MEMBERSHIP,
                     struct.pack("4s4si", socket.inet_aton(g), bytes(4), idx))
    socks.append(s)
print("joined", flush=True)
sys.stdin.read()
'''


def join(f, *groups):
    """JOIN in the guest of ferry f: the Popen, its groups held until
    its stdin is closed (then it exits and the guest leaves them)."""
    p = subprocess.Popen(["nsenter", "-t", str(f.guest_pid), "-U", "-n",
                          "--preserve-credentials", PY, "-c", JOIN]
                         + list(groups), stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "joined"
    return p


# Guest: QUERIES N waits (up to 10 s) for N IGMP and N MLD general
# queries on the guest's interface (an AF_PACKET socket) and prints
# them as JSON: family, destination, TTL / hop limit, type.
QUERIES = r'''
import json, socket, sys, time
n = int(sys.argv[1])
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(3))
s.bind(("uplink0", 0))
s.settimeout(1)
seen, end = [], time.monotonic() + 10
while time.monotonic() < end and (sum(q["v6"] for q in seen) < n or
                                  sum(not q["v6"] for q in seen) < n):
    try:
        f = s.recv(65535)
    except socket.timeout:
        continue
    et = int.from_bytes(f[12:14], "big")
    if et == 0x0800 and f[23] == 2:
        ihl = (f[14] & 15) * 4
        t = f[14 + ihl]
        if t == 0x11:
            seen.append({"v6": False, "dst": socket.inet_ntoa(f[30:34]),
                         "ttl": f[22], "ra": f[34:38].hex(),
                         "mac": f[0:6].hex()})
    elif et == 0x86dd and f[20] == 0 and f[54 + 8] == 130:
        seen.append({"v6": True, "dst": socket.inet_ntop(socket.AF_INET6, f[38:54]),
                     "ttl": f[21], "mac": f[0:6].hex(),
                     "src": socket.inet_ntop(socket.AF_INET6, f[22:38])})
print(json.dumps(seen))
'''


def queries(f, n):
    return json.loads(f.guest([PY, "-c", QUERIES, str(n)], timeout=20).stdout)


# Guest listener: LISTEN GROUP PORT [SEND] joins GROUP on the guest's
# interface with a socket on PORT, first sending one datagram to
# GROUP:PORT when SEND is given (ferry learns the port from it), prints
# "joined", then once told on stdin prints as JSON the first datagram
# from the LAN within 5 s (sender, payload; null if none).
LISTEN = r'''
import json, socket, struct, sys
group, port = sys.argv[1], int(sys.argv[2])
v6 = ":" in group
idx = socket.if_nametoindex("uplink0")
s = socket.socket(socket.AF_INET6 if v6 else socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
if v6:
    s.bind(("::", port))
    s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_JOIN_GROUP,
                 socket.inet_pton(socket.AF_INET6, group) + struct.pack("@I", idx))
    s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_MULTICAST_LOOP, 0)
    dst = (group, port, 0, idx)
else:
    s.bind(("0.0.0.0", port))
    s.setsockopt(socket.IPPROTO_IP, socket.IP_ADD_MEMBERSHIP,
                 struct.pack("4s4si", socket.inet_aton(group), bytes(4), idx))
    s.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_LOOP, 0)
    dst = (group, port)
if len(sys.argv) > 3:
    s.sendto(b"hello group", dst)
print("joined", flush=True)
sys.stdin.readline()
s.settimeout(5)
try:
    data, peer = s.recvfrom(65535)
    print(json.dumps({"from": peer[0].split("%")[0], "data": data.decode()}))
except socket.timeout:
    print("null")
'''

# LAN sender: ANNOUNCE GROUP PORT TEXT sends TEXT to GROUP:PORT on lan0p.
ANNOUNCE = r'''
import socket, sys
group, port, text = sys.argv[1], int(sys.argv[2]), sys.argv[3]
idx = socket.if_nametoindex("lan0p")
if ":" in group:
    s = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
    s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_MULTICAST_IF, idx)
    s.sendto(text.encode(), (group, port, 0, idx))
else:
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.sendto(text.encode(), (group, port))
'''


def listen(f, lan, group, port, joined, send=False, text="NOTIFY"):
    """LISTEN in the guest; once joined() (ferry has the group), the LAN
    sends TEXT to the group: what the guest heard (None: nothing)."""
    p = subprocess.Popen(["nsenter", "-t", str(f.guest_pid), "-U", "-n",
                          "--preserve-credentials", PY, "-c", LISTEN, group,
                          str(port)] + (["send"] if send else []),
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         text=True)
    try:
        assert p.stdout.readline().strip() == "joined"
        joined()
        p.stdin.write("go\n")
        p.stdin.flush()
        lan.run([PY, "-c", ANNOUNCE, group, str(port), text])
        return json.loads(p.stdout.readline())
    finally:
        p.stdin.close()
        p.wait()
