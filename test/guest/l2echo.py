#!/usr/bin/env python3
"""l2echo.py - stand-in peer for qemu's `-netdev stream` UNIX socket.

Theory of operation: qemu's stream netdev connects to a UNIX stream socket
and sends each Ethernet frame as a 4-byte big-endian length followed by that
many bytes.  This script listens on the socket, accepts one connection,
parses that framing, and for every frame prints one line with its length,
MAC addresses, ethertype and (for IPv4/IPv6 UDP) ports, marking DHCPv4
messages by their type.  By default it never sends anything; with
--respond it also answers as the toy router of l2respond.py (DHCP, RA,
ARP/NS, echo) and prints a "reply" line per frame sent.  When qemu disconnects it
prints "l2echo: frames=N bad=M" and exits 0 if at least one well-formed
frame arrived, 1 otherwise.  Used to prove the guest builder, the runner and
the framing without ferry's VM mode.
"""

import argparse
import os
import socket
import struct
import sys

ETH_HLEN = 14
FRAME_MAX = 65535 + ETH_HLEN
DHCP_TYPES = {1: "discover", 2: "offer", 3: "request", 4: "decline",
              5: "ack", 6: "nak", 7: "release", 8: "inform"}


def mac(b):
    """Format 6 bytes as a MAC address."""
    return ":".join("%02x" % x for x in b)


def dhcp_type(udp_payload):
    """Return the DHCP message type name of a BOOTP payload, or None."""
    # fixed BOOTP header is 236 bytes, then the 4-byte magic cookie
    if len(udp_payload) < 240 or udp_payload[236:240] != b"\x63\x82\x53\x63":
        return None
    i = 240
    while i + 1 < len(udp_payload):
        code = udp_payload[i]
        if code == 0:
            i += 1
            continue
        if code == 255:
            break
        olen = udp_payload[i + 1]
        if code == 53 and olen == 1 and i + 2 < len(udp_payload):
            return DHCP_TYPES.get(udp_payload[i + 2], "type%d" % udp_payload[i + 2])
        i += 2 + olen
    return None


def describe_l3(etype, p):
    """Describe the IPv4/IPv6 packet p (bytes after the Ethernet header)."""
    proto, l4 = None, None
    if etype == 0x0800 and len(p) >= 20 and p[0] >> 4 == 4:
        ihl = (p[0] & 0x0F) * 4
        if ihl >= 20 and len(p) >= ihl:
            proto, l4 = p[9], p[ihl:]
    elif etype == 0x86DD and len(p) >= 40 and p[0] >> 4 == 6:
        proto, l4 = p[6], p[40:]
        # skip a hop-by-hop options header (MLD reports carry one)
        if proto == 0 and len(l4) >= 8 and len(l4) >= (l4[1] + 1) * 8:
            proto, l4 = l4[0], l4[(l4[1] + 1) * 8:]
    if proto is None:
        return ""
    if proto == 17 and len(l4) >= 8:
        sport, dport = struct.unpack("!HH", l4[:4])
        s = " udp %d->%d" % (sport, dport)
        if etype == 0x0800 and dport in (67, 68):
            s += " dhcp-%s" % dhcp_type(l4[8:])
        return s
    if proto == 58 and len(l4) >= 1:
        return " icmpv6 type %d" % l4[0]
    return " proto %d" % proto


def read_exact(conn, n):
    """Read exactly n bytes; return None on EOF before n bytes."""
    buf = bytearray()
    while len(buf) < n:
        chunk = conn.recv(n - len(buf))
        if not chunk:
            return None
        buf += chunk
    return bytes(buf)


def describe(f):
    """One-line description of Ethernet frame f (at least ETH_HLEN bytes)."""
    (etype,) = struct.unpack("!H", f[12:14])
    return "len %d %s -> %s ethertype 0x%04x%s" % (
        len(f), mac(f[6:12]), mac(f[0:6]), etype,
        describe_l3(etype, f[ETH_HLEN:]))


def serve(conn, out, responder=None):
    """Read frames from conn until EOF, answering with responder(frame)
    when given; return (frames, bad)."""
    frames = bad = 0
    while True:
        hdr = read_exact(conn, 4)
        if hdr is None:
            return frames, bad
        (flen,) = struct.unpack("!I", hdr)
        if flen < ETH_HLEN or flen > FRAME_MAX:
            # framing is lost: nothing after this can be trusted
            print("l2echo: bad frame length %d, closing" % flen, file=out)
            return frames, bad + 1
        f = read_exact(conn, flen)
        if f is None:
            print("l2echo: EOF inside a frame", file=out)
            return frames, bad + 1
        frames += 1
        print("frame %d %s" % (frames, describe(f)), file=out, flush=True)
        for r in responder(f) if responder else []:
            conn.sendall(struct.pack("!I", len(r)) + r)
            print("reply %s" % describe(r), file=out, flush=True)


def main():
    """Listen on the socket path, serve one qemu connection, report."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("socket", help="UNIX socket path to listen on")
    ap.add_argument("--respond", action="store_true",
                    help="answer DHCP/RA/ARP/NS/echo as a toy router")
    args = ap.parse_args()
    responder = None
    if args.respond:
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        from l2respond import respond as responder
    if os.path.exists(args.socket):
        os.unlink(args.socket)
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(args.socket)
    srv.listen(1)
    print("l2echo: listening on %s" % args.socket, flush=True)
    conn, _ = srv.accept()
    srv.close()
    os.unlink(args.socket)
    print("l2echo: peer connected", flush=True)
    frames, bad = serve(conn, sys.stdout, responder)
    print("l2echo: frames=%d bad=%d" % (frames, bad), flush=True)
    return 0 if frames > 0 and bad == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
