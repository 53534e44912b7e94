"""What the guest sees of the link (issue 20 items 3-4).

Minimum frames: every frame ferry sends the guest is at least 60 bytes
(802.3 without the FCS), checked where the guest receives it: on the tap
inside the guest namespace (a packet socket there) and on the qemu stream
socket (a Python client standing in for qemu). An ARP reply and an ICMP
echo reply without payload are 42 bytes before padding.
"""
import struct
import sys

from conftest import GW4, HOST4
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
