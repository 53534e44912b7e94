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

    def down(self):
        for p in self.procs:
            if p.poll() is None:
                p.kill()
            p.wait()
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
        print(json.dumps(r), flush=True)
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
