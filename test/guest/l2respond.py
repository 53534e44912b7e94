"""l2respond.py - a toy router for l2echo.py --respond.

Theory of operation: just enough of a gateway to configure the guest the
way ferry's VM mode will, so the guest side (/init, udhcpc.script, the
SLAAC wait) can be tested before ferry exists.  respond(frame) returns the
frames to send back (possibly none):
  - DHCPDISCOVER -> DHCPOFFER, DHCPREQUEST -> DHCPACK for GUEST4/24 with
    router and DNS ROUTER4, domain DOMAIN, lease LEASE_S
  - IPv6 router solicitation -> router advertisement for PREFIX6::/64
    (autonomous, on-link) from ROUTER6_LL
  - ARP request for ROUTER4 -> ARP reply; neighbour solicitation for one
    of our IPv6 addresses -> neighbour advertisement
  - ICMP/ICMPv6 echo request to one of our addresses -> echo reply
Only documentation addresses are used (RFC 5737, RFC 3849).  Every frame is
parsed with explicit length checks; anything else is ignored.
"""

import ipaddress
import struct

ROUTER_MAC = bytes.fromhex("020000000001")
ROUTER4 = ipaddress.IPv4Address("198.51.100.1")
GUEST4 = ipaddress.IPv4Address("198.51.100.2")
PREFIX4_LEN = 24
DOMAIN = b"ferry.test"
LEASE_S = 3600
PREFIX6 = ipaddress.IPv6Address("2001:db8:1::")
ROUTER6 = ipaddress.IPv6Address("2001:db8:1::1")
ROUTER6_LL = ipaddress.IPv6Address("fe80::1")
ETH_HLEN = 14


def csum(data):
    """Internet checksum (RFC 1071) of data."""
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack("!%dH" % (len(data) // 2), data))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def eth(dst, etype, payload):
    """Ethernet frame from the router MAC."""
    return dst + ROUTER_MAC + struct.pack("!H", etype) + payload


def ipv4(src, dst, proto, payload):
    """IPv4 packet with a valid header checksum, TTL 64, no options."""
    hdr = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(payload), 0, 0x4000,
                      64, proto, 0, src.packed, dst.packed)
    return hdr[:10] + struct.pack("!H", csum(hdr)) + hdr[12:] + payload


def icmp6(src, dst, msg):
    """IPv6 packet (hop limit 255) carrying ICMPv6 msg, checksum filled."""
    pseudo = src.packed + dst.packed + struct.pack("!I3xB", len(msg), 58)
    msg = msg[:2] + struct.pack("!H", csum(pseudo + msg)) + msg[4:]
    return struct.pack("!IHBB16s16s", 0x60000000, len(msg), 58, 255,
                       src.packed, dst.packed) + msg


def dhcp_reply(req, mtype):
    """BOOTP reply of DHCP type mtype to request payload req (>= 240 B)."""
    xid, flags, chaddr = req[4:8], req[10:12], req[28:44]
    bootp = (struct.pack("!BBBB", 2, 1, 6, 0) + xid + b"\0\0" + flags +
             bytes(4) + GUEST4.packed + bytes(8) + chaddr + bytes(192) +
             b"\x63\x82\x53\x63")
    mask = (0xFFFFFFFF << (32 - PREFIX4_LEN)) & 0xFFFFFFFF
    opts = (bytes([53, 1, mtype]) + bytes([54, 4]) + ROUTER4.packed +
            bytes([51, 4]) + struct.pack("!I", LEASE_S) +
            bytes([1, 4]) + struct.pack("!I", mask) +
            bytes([3, 4]) + ROUTER4.packed + bytes([6, 4]) + ROUTER4.packed +
            bytes([15, len(DOMAIN)]) + DOMAIN + b"\xff")
    payload = bootp + opts
    udp = struct.pack("!HHHH", 67, 68, 8 + len(payload), 0) + payload
    bcast = ipaddress.IPv4Address("255.255.255.255")
    return eth(b"\xff" * 6, 0x0800, ipv4(ROUTER4, bcast, 17, udp))


def dhcp_msg_type(p):
    """DHCP message type (option 53) of BOOTP payload p, or None."""
    if len(p) < 240 or p[236:240] != b"\x63\x82\x53\x63":
        return None
    i = 240
    while i < len(p) and p[i] != 255:
        if p[i] == 0:
            i += 1
            continue
        if i + 1 >= len(p) or i + 2 + p[i + 1] > len(p):
            return None
        if p[i] == 53 and p[i + 1] == 1:
            return p[i + 2]
        i += 2 + p[i + 1]
    return None


def on_ipv4(src_mac, p):
    """Replies to IPv4 packet p (after the Ethernet header)."""
    if len(p) < 20 or p[0] >> 4 != 4:
        return []
    ihl, tot = (p[0] & 0xF) * 4, struct.unpack("!H", p[2:4])[0]
    if ihl < 20 or tot < ihl or tot > len(p):
        return []
    proto, src, dst = p[9], p[12:16], ipaddress.IPv4Address(p[16:20])
    l4 = p[ihl:tot]
    if proto == 17 and len(l4) >= 8 and struct.unpack("!H", l4[2:4])[0] == 67:
        mtype = dhcp_msg_type(l4[8:])
        if mtype == 1:
            return [dhcp_reply(l4[8:], 2)]
        if mtype == 3:
            return [dhcp_reply(l4[8:], 5)]
    if proto == 1 and dst == ROUTER4 and len(l4) >= 8 and l4[0] == 8:
        reply = b"\0\0\0\0" + l4[4:]
        reply = reply[:2] + struct.pack("!H", csum(reply)) + reply[4:]
        return [eth(src_mac, 0x0800,
                    ipv4(ROUTER4, ipaddress.IPv4Address(src), 1, reply))]
    return []


def on_arp(src_mac, p):
    """ARP reply if p is an Ethernet/IPv4 request for ROUTER4."""
    if len(p) < 28 or p[0:8] != b"\x00\x01\x08\x00\x06\x04\x00\x01":
        return []
    if p[24:28] != ROUTER4.packed:
        return []
    arp = (b"\x00\x01\x08\x00\x06\x04\x00\x02" + ROUTER_MAC + ROUTER4.packed +
           p[8:14] + p[14:18])
    return [eth(src_mac, 0x0806, arp)]


def router_advert():
    """RA for PREFIX6/64 to all nodes, with our link-layer address."""
    ra = struct.pack("!BBHBBHII", 134, 0, 0, 64, 0, 1800, 0, 0)
    ra += bytes([1, 1]) + ROUTER_MAC
    ra += struct.pack("!BBBBIII16s", 3, 4, 64, 0xC0, 86400, 14400, 0,
                      PREFIX6.packed)
    allnodes = ipaddress.IPv6Address("ff02::1")
    return eth(bytes.fromhex("333300000001"), 0x86DD,
               icmp6(ROUTER6_LL, allnodes, ra))


def on_ipv6(src_mac, p):
    """Replies to IPv6 packet p: RS -> RA, NS -> NA, echo -> reply."""
    if len(p) < 40 or p[0] >> 4 != 6 or p[6] != 58:
        return []
    plen = struct.unpack("!H", p[4:6])[0]
    if 40 + plen > len(p) or plen < 8:
        return []
    src = ipaddress.IPv6Address(p[8:24])
    dst = ipaddress.IPv6Address(p[24:40])
    m = p[40:40 + plen]
    ours = (ROUTER6, ROUTER6_LL)
    if m[0] == 133:
        return [router_advert()]
    if m[0] == 135 and len(m) >= 24 and not src.is_unspecified:
        target = ipaddress.IPv6Address(m[8:24])
        if target in ours:
            # flags: router, solicited, override
            na = (struct.pack("!BBHI", 136, 0, 0, 0xE0000000) +
                  target.packed + bytes([2, 1]) + ROUTER_MAC)
            return [eth(src_mac, 0x86DD, icmp6(target, src, na))]
    if m[0] == 128 and dst in ours:
        return [eth(src_mac, 0x86DD, icmp6(dst, src, b"\x81\0\0\0" + m[4:]))]
    return []


def respond(frame):
    """Frames to send in answer to Ethernet frame (validated length)."""
    if len(frame) < ETH_HLEN:
        return []
    src_mac = frame[6:12]
    (etype,) = struct.unpack("!H", frame[12:14])
    if etype == 0x0800:
        return on_ipv4(src_mac, frame[ETH_HLEN:])
    if etype == 0x0806:
        return on_arp(src_mac, frame[ETH_HLEN:])
    if etype == 0x86DD:
        return on_ipv6(src_mac, frame[ETH_HLEN:])
    return []
