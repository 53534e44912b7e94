#!/usr/bin/env python3
"""gen_corpus.py - write the seed corpus of ferry's fuzz targets.

Usage: test/fuzz/gen_corpus.py [DIR]   (default: test/fuzz/corpus)

One valid input of each kind per target (and a few deliberately broken
ones), deterministic, so the committed corpus can be regenerated and
diffed. Formats are described in test/fuzz/fuzz.h (frames), fuzz_stream.c,
fuzz_conf.c, fuzz_fwd.c, fuzz_netlink.c, fuzz_vu_sock.c and tcp_prog.c. Addresses are the unit-test
harness's documentation addresses: guest 198.51.100.2 / 2001:db8::2,
gateway 198.51.100.1 / fe80::1.

Files named crash-* in the corpus directories are reproducers of fixed
bugs; this script leaves them alone.
"""
import ipaddress
import os
import struct
import sys

GUEST_MAC = bytes.fromhex("020000000002")
OUR_MAC = bytes.fromhex("9a559a559a55")
BCAST = b"\xff" * 6
G4, GW4 = "198.51.100.2", "198.51.100.1"
G6, GW6, LL6 = "2001:db8::2", "fe80::1", "fe80::2"
FIX, BATCH, TIMERS, EVENTS, VNET = 1, 2, 4, 8, 16


def a4(s):
    return ipaddress.IPv4Address(s).packed


def a6(s):
    return ipaddress.IPv6Address(s).packed


def csum(b):
    if len(b) % 2:
        b += b"\0"
    s = sum(struct.unpack("!%dH" % (len(b) // 2), b))
    while s >> 16:
        s = (s & 0xffff) + (s >> 16)
    return ~s & 0xffff


def eth(dst, etype, payload, src=GUEST_MAC):
    return dst + src + struct.pack("!H", etype) + payload


def l4_fix(proto, l4, pseudo):
    off = {6: 16, 17: 6, 1: 2, 58: 2}[proto]
    l4 = bytearray(l4)
    l4[off:off + 2] = b"\0\0"
    s = csum(bytes(l4) if proto == 1 else pseudo + bytes(l4))
    if proto == 17 and s == 0:
        s = 0xffff
    l4[off:off + 2] = struct.pack("!H", s)
    return bytes(l4)


def ip4(src, dst, proto, l4, dmac=OUR_MAC):
    pseudo = a4(src) + a4(dst) + struct.pack("!BBH", 0, proto, len(l4))
    l4 = l4_fix(proto, l4, pseudo)
    h = bytearray(struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(l4), 1,
                              0x4000, 64, proto, 0, a4(src), a4(dst)))
    h[10:12] = struct.pack("!H", csum(bytes(h)))
    return eth(dmac, 0x0800, bytes(h) + l4)


def ip6(src, dst, proto, l4, hlim=64, dmac=OUR_MAC, ext=b""):
    pseudo = a6(src) + a6(dst) + struct.pack("!IxxxB", len(l4), proto)
    l4 = l4_fix(proto, l4, pseudo)
    nh = proto
    if ext:                      # one hop-by-hop header in front
        nh = 0
        ext = bytes([proto]) + ext[1:]
    h = struct.pack("!IHBB16s16s", 6 << 28, len(ext) + len(l4), nh, hlim,
                    a6(src), a6(dst))
    return eth(dmac, 0x86dd, h + ext + l4)


def udp(sport, dport, data):
    return struct.pack("!HHHH", sport, dport, 8 + len(data), 0) + data


def tcp_seg(sport, dport, flags, seq=1000, ack=0, data=b"", opts=b""):
    return struct.pack("!HHIIBBHHH", sport, dport, seq, ack,
                       (5 + len(opts) // 4) << 4, flags, 65535, 0, 0) + \
        opts + data


def tcp_syn(sport, dport):
    opts = bytes([2, 4, 0x05, 0xb4, 1, 3, 3, 7, 4, 2, 8, 10]) + \
        struct.pack("!II", 12345, 0) + b"\0\0"
    return tcp_seg(sport, dport, 0x02, opts=opts)


def arp(op, sha, spa, tpa):
    return eth(BCAST, 0x0806, struct.pack("!HHBBH6s4s6s4s", 1, 0x0800, 6, 4,
                                          op, sha, a4(spa), b"\0" * 6,
                                          a4(tpa)))


def dhcp(mtype, extra=b"", ciaddr="0.0.0.0"):
    h = struct.pack("!BBBBIHH4s4s4s4s16s64s128sI", 1, 1, 6, 0, 0x1234, 0,
                    0x8000, a4(ciaddr), b"\0" * 4, b"\0" * 4, b"\0" * 4,
                    GUEST_MAC + b"\0" * 10, b"", b"", 0x63825363)
    opts = bytes([53, 1, mtype]) + bytes([61, 7, 1]) + GUEST_MAC + \
        bytes([55, 8, 1, 3, 6, 12, 15, 26, 119, 121]) + \
        bytes([57, 2, 0x05, 0xdc]) + extra + bytes([255])
    return udp(68, 67, h + opts)


def d6opt(code, val):
    return struct.pack("!HH", code, len(val)) + val


def dhcpv6(mtype, *opts):
    return udp(546, 547, bytes([mtype, 0xab, 0xcd, 0xef]) + b"".join(opts))


CLIENT_ID = d6opt(1, struct.pack("!HH", 3, 1) + GUEST_MAC)
SERVER_ID = d6opt(2, struct.pack("!HH", 3, 1) + OUR_MAC)
IA_NA = d6opt(3, struct.pack("!III", 1, 0, 0) +
              d6opt(5, a6(G6) + struct.pack("!II", 0, 0)) +
              d6opt(5, a6("2001:db8:1::9") + struct.pack("!II", 0, 0)))
ORO = d6opt(6, struct.pack("!HHH", 23, 24, 39))
ELAPSED = d6opt(8, b"\0\0")


def ndp(mtype, body):
    return bytes([mtype, 0, 0, 0]) + body


SLLA = bytes([1, 1]) + GUEST_MAC
SOL_NODE_LL1 = "ff02::1:ff00:1"


def echo(v6, ident, seq, data=b"ping" * 8):
    return struct.pack("!BBHHH", 128 if v6 else 8, 0, 0, ident, seq) + data


def vnet(flags=0, gso=0, hdr_len=0, gso_size=0, cstart=0, coff=0):
    """A virtio-net header (vnet.h), little-endian."""
    return struct.pack("<BBHHHHH", flags, gso, hdr_len, gso_size, cstart,
                       coff, 0)


def frames():
    one = lambda f, flags=FIX: bytes([flags]) + f
    batch = lambda fs, flags=FIX | BATCH: bytes([flags]) + b"".join(
        struct.pack("!H", len(f)) + f for f in fs)
    dns_q = bytes.fromhex("123401000001000000000000076578616d706c6504746573"
                          "740000010001")
    u4 = ip4(G4, GW4, 17, udp(40000, 53, dns_q))
    u6 = ip6(G6, GW6, 17, udp(40000, 53, dns_q))
    return {
        "arp_request": one(arp(1, GUEST_MAC, G4, GW4)),
        "arp_reply": one(arp(2, GUEST_MAC, G4, GW4)),
        "arp_dad": one(arp(1, GUEST_MAC, "0.0.0.0", G4)),
        "dhcp_discover": one(ip4("0.0.0.0", "255.255.255.255", 17,
                                 dhcp(1, bytes([80, 0, 81, 3, 0, 0, 0])),
                                 dmac=BCAST)),
        "dhcp_request": one(ip4("0.0.0.0", "255.255.255.255", 17,
                                dhcp(3, bytes([50, 4]) + a4(G4) +
                                     bytes([54, 4]) + a4(GW4)), dmac=BCAST)),
        "dhcp_inform": one(ip4(G4, "255.255.255.255", 17,
                               dhcp(8, ciaddr=G4), dmac=BCAST)),
        "dhcp_release": one(ip4(G4, GW4, 17, dhcp(7, ciaddr=G4))),
        "dhcpv6_solicit": one(ip6(LL6, "ff02::1:2", 17,
                                  dhcpv6(1, CLIENT_ID, IA_NA, ORO, ELAPSED,
                                         d6opt(14, b"")),
                                  dmac=bytes.fromhex("333300010002"))),
        "dhcpv6_request": one(ip6(LL6, "ff02::1:2", 17,
                                  dhcpv6(3, CLIENT_ID, SERVER_ID, IA_NA, ORO,
                                         d6opt(39, b"\0")),
                                  dmac=bytes.fromhex("333300010002"))),
        "dhcpv6_confirm": one(ip6(LL6, "ff02::1:2", 17,
                                  dhcpv6(4, CLIENT_ID, IA_NA),
                                  dmac=bytes.fromhex("333300010002"))),
        "dhcpv6_info": one(ip6(LL6, "ff02::1:2", 17, dhcpv6(11, CLIENT_ID, ORO),
                               dmac=bytes.fromhex("333300010002"))),
        "ndp_rs": one(ip6(LL6, "ff02::2", 58, ndp(133, b"\0" * 4 + SLLA),
                          hlim=255, dmac=bytes.fromhex("333300000002"))),
        "ndp_ns": one(ip6(LL6, SOL_NODE_LL1, 58,
                          ndp(135, b"\0" * 4 + a6(GW6) + SLLA), hlim=255)),
        "ndp_ns_dad": one(ip6("::", SOL_NODE_LL1, 58,
                              ndp(135, b"\0" * 4 + a6(GW6)), hlim=255)),
        "ndp_na": one(ip6(LL6, "ff02::1", 58,
                          ndp(136, bytes([0x20, 0, 0, 0]) + a6(LL6) +
                              bytes([2, 1]) + GUEST_MAC), hlim=255)),
        "icmp4_echo": one(ip4(G4, GW4, 1, echo(False, 7, 1)), FIX | EVENTS),
        "icmp6_echo": one(ip6(G6, GW6, 58, echo(True, 7, 1)), FIX | EVENTS),
        "udp4_dns": one(u4, FIX | EVENTS),
        "udp6_dns": one(u6, FIX | EVENTS),
        "udp4_refused": one(ip4(G4, GW4, 17, udp(40002, 9, b"x")),
                            FIX | EVENTS),
        "udp6_hopopts": one(ip6(G6, GW6, 17, udp(40001, 9, b"x" * 20),
                                ext=bytes([17, 0, 1, 4, 0, 0, 0, 0])),
                            FIX | EVENTS),
        "tcp4_syn": one(ip4(G4, GW4, 6, tcp_syn(40000, 80)), FIX | EVENTS),
        "tcp6_syn": one(ip6(G6, GW6, 6, tcp_syn(40000, 80)), FIX | EVENTS),
        "tcp4_refused": one(ip4(G4, GW4, 6, tcp_syn(40003, 9)),
                            FIX | EVENTS | TIMERS),
        "tcp4_syn_data_rst": batch([
            ip4(G4, GW4, 6, tcp_syn(40004, 80)),
            ip4(G4, GW4, 6, tcp_seg(40004, 80, 0x18, 1001, 1, b"GET /")),
            ip4(G4, GW4, 6, tcp_seg(40004, 80, 0x11, 1006, 1)),
            ip4(G4, GW4, 6, tcp_seg(40004, 80, 0x04, 1007))],
            FIX | BATCH | EVENTS),
        "batch_mixed": batch([arp(1, GUEST_MAC, G4, GW4), u4, u4, u6,
                              ip4(G4, GW4, 1, echo(False, 8, 2))]),
        "batch_timers": batch([u4, u6], FIX | BATCH | TIMERS),
        "vnet_tcp4_gso": batch([
            vnet() + ip4(G4, GW4, 6, tcp_syn(40005, 80)),
            vnet(1, 1, 54, 1000, 34, 16) +
            ip4(G4, GW4, 6, tcp_seg(40005, 80, 0x18, 1001, 1, b"x" * 3000))],
            FIX | BATCH | EVENTS | VNET),
        "vnet_tcp6_partial": one(vnet(1, 0, 0, 0, 54, 16) +
                                 ip6(G6, GW6, 6, tcp_syn(40006, 80)),
                                 FIX | EVENTS | VNET),
        "bad_vnet_gso": one(vnet(0, 3, 0, 1000) + u4, FIX | VNET),
        "bad_vnet_csum": one(vnet(1, 0, 0, 0, 34, 6000) + u4, FIX | VNET),
        "bad_vnet_short": one(b"\x01\x02", VNET),
        "bad_short": one(b"\x02" * 10, 0),
        "bad_ihl": one(eth(OUR_MAC, 0x0800, bytes([0x4f]) + b"\0" * 30), 0),
        "bad_frag": one(ip4(G4, GW4, 17, udp(1, 2, b""))[:20] +
                        b"\x20\x00" + ip4(G4, GW4, 17, udp(1, 2, b""))[22:]),
    }


def stream():
    f = arp(1, GUEST_MAC, G4, GW4)
    rec = struct.pack("!I", len(f)) + f
    two = rec + rec
    return {
        "whole": bytes([len(two)]) + two,
        "split": bytes([3]) + two[:3] + bytes([50]) + two[3:53] +
        bytes([255]) + two[53:],
        "bad_len": bytes([8]) + struct.pack("!I", 0) + b"abcd",
        "udp": bytes([255]) + struct.pack("!I", len(frames()["udp4_dns"]) - 1)
        + frames()["udp4_dns"][1:],
    }


def conf():
    z = lambda mode, *args: bytes([mode]) + b"\0".join(
        a.encode() for a in args)
    return {
        "podman": z(0, "--config-net", "-t", "none", "-u", "none", "-T",
                    "none", "-U", "none", "--dns-forward", "169.254.1.1",
                    "--no-map-gw", "--quiet", "--netns",
                    "/run/user/1000/netns/x"),
        "ns_full": z(0, "-a", "198.51.100.7/24", "-g", "198.51.100.1", "-m",
                     "1400", "-D", "2001:db8::53", "-S", "a.test,b.test",
                     "-H", "guest", "--fqdn", "guest.a.test", "-M",
                     "02:11:22:33:44:55", "-t", "127.0.0.1/8080:80,~81",
                     "--log-size", "1M", "--", "sh", "-c", "true"),
        "ns_pid": z(0, "-4", "--netns-only", "--userns", "/proc/1/ns/user",
                    "1234"),
        "vm": z(1, "-s", "/tmp/ferry.sock", "-1", "-F", "3", "--vhost-user",
                "-u", "%lo/53", "--runas", "0:0", "-p", "/tmp/x.pcap"),
        "vm_bad": z(1, "--netns", "x", "-m", "99999"),
        "help": z(1, "--print-capabilities"),
    }


def fwd():
    z = lambda *a: b"\0".join(x.encode() for x in a)
    return {
        "list": z("22,80:8080,1000-1010:2000-2010,~1005"),
        "bind": z("198.51.100.1/22", "[2001:db8::1]%lo/443", "%eth0/80"),
        "excl": z("~22-25"),
        "auto": z("auto", "~53"),
        "all": z("127.0.0.1/all", "~5353"),
        "none": z("none", "none", "1"),
    }


def nlmsg(mtype, body, flags=0x2):
    return struct.pack("=IHHII", 16 + len(body), mtype, flags, 0, 0) + body


def rta(t, v):
    n = 4 + len(v)
    return struct.pack("=HH", n, t) + v + b"\0" * ((4 - n % 4) % 4)


def netlink():
    dg = lambda *msgs: struct.pack("!H", sum(map(len, msgs))) + b"".join(msgs)
    done = nlmsg(3, struct.pack("=i", 0))
    rtm = lambda fam: struct.pack("=BBBBBBBBI", fam, 0, 0, 0, 254, 3, 0, 1, 0)
    route4 = nlmsg(24, rtm(2) + rta(15, struct.pack("=I", 254)) +
                   rta(4, struct.pack("=I", 2)) + rta(5, a4(GW4)))
    nh = lambda ifi, hops, gw: (lambda a: struct.pack(
        "=HBBi", 8 + len(a), 0, hops, ifi) + a)(rta(5, gw))
    route6mp = nlmsg(24, rtm(10) + rta(9, nh(2, 1, a6(GW6)) +
                                       nh(3, 5, a6("fe80::9"))))
    link = nlmsg(16, struct.pack("=BxHiII", 0, 1, 2, 0x1, 0) +
                 rta(3, b"eth0\0") + rta(4, struct.pack("=I", 1500)) +
                 rta(1, OUR_MAC))
    ack = nlmsg(2, struct.pack("=i", 0) + b"\0" * 16)
    addr = lambda fam, a: nlmsg(20, struct.pack("=BBBBI", fam, 24, 0, 0, 2) +
                                rta(1, a) + rta(2, a) +
                                rta(8, struct.pack("=I", 0)))
    rtm_dst = lambda fam, dlen: struct.pack("=BBBBBBBBI", fam, dlen, 0, 0, 254,
                                             4, 253, 1, 0)
    route4_net = nlmsg(24, rtm_dst(2, 24) + rta(1, a4("192.0.2.0")) +
                       rta(4, struct.pack("=I", 2)) +
                       rta(6, struct.pack("=I", 50)))
    route6_net = nlmsg(24, rtm_dst(10, 48) + rta(1, a6("2001:db8:5::")) +
                       rta(4, struct.pack("=I", 2)) + rta(5, a6("2001:db8::fe")))
    return {
        "addr_table4": bytes([5]) + dg(addr(2, a4(G4)), addr(2, a4("203.0.113.7")),
                                       done),
        "addr_table6": bytes([6]) + dg(addr(10, a6(G6))) + dg(done),
        "route_table4": bytes([7]) + dg(route4, route4_net) + dg(done),
        "route_table6": bytes([8]) + dg(route6_net, route6mp, done),
        "route4": bytes([0]) + dg(route4) + dg(done),
        "route6_multipath": bytes([1]) + dg(route6mp, done),
        "link": bytes([2]) + dg(link, ack),
        "addr4": bytes([3]) + dg(addr(2, a4(G4)), done),
        "addr6": bytes([4]) + dg(addr(10, a6(G6))) + dg(done),
        "error": bytes([2]) + dg(nlmsg(2, struct.pack("=i", -19) + b"\0" * 16)),
    }


def scan():
    hdr = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when " \
        "retrnsmt   uid  timeout inode\n"
    tcp = hdr + "   0: 0100007F:0050 00000000:0000 0A 00000000:00000000 " \
        "00:00000000 00000000     0        0 1 1 0 100 0 0 10 0\n"
    udp6 = hdr + "  1: 00000000000000000000000000000000:0035 " \
        "00000000000000000000000000000000:0000 07 00000000:00000000 " \
        "00:00000000 00000000     0        0 2 2 0 0"
    return {"tcp": b"\0" + tcp.encode(), "udp6": b"\1" + udp6.encode()}


def vu_sock():
    """fuzz_vu_sock: vhost-user messages (header: request, flags, size,
    host order) in chunks [n][n bytes] written between handler runs."""
    def msg(req, flags=1, payload=b"", size=None):
        return struct.pack("<III", req, flags,
                           len(payload) if size is None else size) + payload
    ack = 1 | 8
    setup = (msg(1) + msg(15) + msg(16, payload=struct.pack("<Q", 9)) +
             msg(3) + msg(17) +
             msg(2, ack, struct.pack("<Q", (1 << 32) | (1 << 30))) +
             msg(8, ack, struct.pack("<II", 0, 256)) +
             msg(10, ack, struct.pack("<II", 1, 0)) +
             msg(11, payload=struct.pack("<II", 0, 0)) +
             msg(18, ack, struct.pack("<II", 1, 1)))
    return {
        "setup": bytes([255]) + setup,
        "split": b"".join(bytes([len(setup[i:i + 5])]) + setup[i:i + 5]
                          for i in range(0, len(setup), 5)),
        "too_big": bytes([12]) + msg(5, size=4097),
        "eof_mid_payload": bytes([14]) + msg(2, payload=b"\0" * 8)[:14],
        "unknown_ack": bytes([12]) + msg(99, ack),
    }


# fuzz_tcp programs (tcp_prog.c): an 8-byte header, then [op a b c] steps.
V6, SACKP, WS, MSS, JUMBO, MANUAL, AUTOACK, AUTOREAD = 1, 2, 4, 8, 16, 32, 64, 128
(SEND, BURST, ACK, SACK, DUPACK, WND, FIN, RST, SYN, HWRITE, HREAD, HSHUT,
 CLOCK, LOOP, SYNACK) = range(15)      # SYNACK: host-initiated programs only
HOST = b"host"          # before the header: the host connects, ferry sends the SYN


def thdr(flags, ws=7, mss=1460, synwnd=65535, rcvbuf=0, wnd_k=0):
    return struct.pack("!BBHHBB", flags, ws, mss, synwnd, rcvbuf, wnd_k)


def st(op, a=0, b=0, c=0):
    return bytes([op, a, b, c])


def ack_all():
    return st(ACK, 0, 0, 0)


def tcp_progs():
    full = thdr(SACKP | WS | MSS)
    hw = lambda n, sh=0: st(HWRITE, n >> 8, n & 255, sh)
    return {
        # guest -> host: data in order, the host reads, both close
        "upload": full + st(SEND, 5, 0xb4) + st(SEND, 5, 0xb4) +
        st(HREAD, 255, 255, 4) + st(FIN, 0, 0) + st(HSHUT) + ack_all() +
        st(CLOCK, 15),
        # host -> guest: the guest ACKs all, then the host closes
        "download": full + hw(20000) + ack_all() + hw(60000) + ack_all() +
        st(HSHUT) + ack_all() + st(FIN) + ack_all() + st(CLOCK, 15),
        # loss: three duplicate ACKs, SACK above the hole, timeouts
        "sack_loss": full + hw(30000) + st(ACK, 0x6a, 0x30, 0) +
        st(SACK, 0) + bytes([4, 10]) + st(DUPACK, 0, 0, 2) +
        st(SACK, 1) + bytes([4, 10, 14, 20]) + st(CLOCK, 9) +
        st(CLOCK, 11) + ack_all() + st(HSHUT) + ack_all(),
        # guest data out of order: a gap, then the hole filled
        "ooo": full + st(SEND, 2, 0, 32) + st(SEND, 2, 0, 16) +
        st(SEND, 4, 0) + st(HREAD, 255, 255, 4) + st(SEND, 1, 0, 0xf0),
        # zero window, persist probes, window opens
        "zero_wnd": full + st(WND, 0, 0, 1) + hw(5000) + st(CLOCK, 9) +
        st(CLOCK, 12) + st(WND, 0x10, 0, 1) + ack_all() + st(WND, 0, 4, 1),
        # the window shrinks under data in flight
        "shrink": thdr(MSS, wnd_k=32) + hw(40000) + st(WND, 0x08, 0, 1) +
        st(ACK, 0x10, 0, 3) + st(CLOCK, 9) + ack_all(),
        # bursts from the guest at MTU 9000, IPv6, a small host buffer
        "burst6": thdr(V6 | SACKP | WS | MSS | JUMBO, mss=8940,
                       rcvbuf=16) + st(BURST, 7) + st(BURST, 7) +
        st(BURST, 7) + st(LOOP) + st(HREAD, 255, 255, 4) + st(BURST, 3) +
        st(CLOCK, 1) + st(HREAD, 255, 255, 4),
        # the guest resets, then connects again on the same port
        "rst_syn": full + hw(1000) + st(RST, 0, 0, 1) + st(SEND, 0, 10) +
        st(SYN, 1, 0) + st(SEND, 0, 100) + st(HREAD, 255, 255),
        # a clean close, TIME-WAIT answers, a new SYN reopens
        "tw": full + st(SEND, 0, 50) + st(FIN) + st(HSHUT) + ack_all() +
        st(HREAD, 0, 100) + st(FIN) + st(ACK, 0, 0, 0) + st(SYN, 0, 1) +
        st(SEND, 0, 10),
        # the host aborts with data in flight
        "host_abort": thdr(V6 | SACKP) + hw(10000) + st(SEND, 0, 200) +
        st(HSHUT, 0, 0, 2) + st(SEND, 0, 10) + ack_all(),
        # the handshake left to the fuzzer: SYN again, then the ACK
        "manual": thdr(MANUAL | WS, ws=14) + st(SYN) + st(CLOCK, 12) +
        ack_all() + hw(3000, 2) + ack_all(),
        # ACKs of never-sent data, old ACKs with a larger window
        # a well-behaved guest and host: bulk both ways, loss and a
        # timeout in between
        "bulk_auto": thdr(SACKP | WS | MSS | AUTOACK | AUTOREAD) +
        hw(60000, 4) + st(BURST, 7) + hw(60000, 4) + st(BURST, 7) +
        st(SACK, 0) + bytes([4, 10]) + st(DUPACK, 0, 0, 3) +
        st(CLOCK, 9) + hw(60000, 4) + st(HSHUT) + st(FIN) + st(CLOCK, 15),
        "odd_acks": full + hw(30000) + st(ACK, 0, 100, 2) +
        st(ACK, 0x40, 0, 0) + st(WND, 0xff, 0xff) + st(ACK, 0x10, 0, 3) +
        st(LOOP) + st(CLOCK, 10),
        # host-initiated (-t): the guest's SYN-ACK at once, both ways, closes
        "host_basic": HOST + full + hw(4096) + ack_all() + st(SEND, 2, 0) +
        st(HREAD, 255, 255, 4) + st(HSHUT) + ack_all() + st(FIN) +
        st(CLOCK, 15),
        # SYN-ACKs (and an ACK) acknowledging ISS, beyond SND.NXT, far:
        # RSTs, still SYN-SENT; then the right one
        "host_badack": HOST + thdr(MANUAL | WS | MSS, ws=3) +
        st(SYNACK, 1) + st(SYNACK, 2, 5) + st(SYNACK, 3, 7, 9) +
        st(ACK, 0, 5, 2) + st(SYNACK, 0) + st(SEND, 0, 100) +
        st(HREAD, 255, 255),
        # RSTs in SYN-SENT: without ACK, with a wrong one (dropped), with
        # ISS + 1 (the client is reset); a new connection after it
        "host_rst": HOST + thdr(MANUAL | SACKP) + st(RST, 0, 0, 0) +
        st(ACK, 0, 3, 2) + st(RST, 0, 0, 1) + st(ACK, 0, 0, 0) +
        st(RST, 0, 9, 1) + st(SYN, 0, 1) + st(SYNACK, 0) + hw(100) +
        ack_all(),
        # no answer: the SYN's retries, the flow goes, the client is
        # reset (with bytes ferry did not read, and then without)
        "host_retry": HOST + thdr(MANUAL | MSS) + hw(100) + st(CLOCK, 12) +
        st(CLOCK, 12, 100) + st(CLOCK, 15) + st(SYN, 0, 2) +
        st(CLOCK, 13) + st(CLOCK, 15),
        # simultaneous open (a bare SYN), a retransmitted SYN, then a
        # SYN-ACK with data and a FIN, which come again
        "host_simopen": HOST + thdr(MANUAL | SACKP | WS | MSS | V6) +
        st(SYN) + st(CLOCK, 12) + st(SYNACK, 4 | 2 << 3) +
        st(SEND, 0, 64, 0xff) + st(FIN, 0, 0) + st(HREAD, 255, 255) +
        st(HSHUT) + ack_all(),
        # the host writes and closes, the guest sends data and a FIN
        # before the handshake ends; then the SYN-ACK and everything again
        "host_early": HOST + thdr(MANUAL | WS | MSS) + hw(3000) +
        st(HSHUT) + st(SEND, 2, 0) + st(FIN) + st(SYNACK, 0) + ack_all() +
        st(SEND, 2, 0, 0xf8) + st(FIN) + st(HREAD, 255, 255) +
        st(CLOCK, 15),
        # the host aborts before the guest answered: RST to the guest;
        # the SYN-ACK after it finds no connection
        "host_abort_early": HOST + thdr(MANUAL | V6) + hw(500) +
        st(HSHUT, 0, 0, 2) + st(SYNACK, 0) + st(SYN, 0, 5),
        # the host closes before the guest answered; later the guest's
        # data finds the client gone
        "host_close_early": HOST + thdr(MANUAL | SACKP) + hw(700) +
        st(HSHUT, 0, 0, 1) + st(SYNACK, 0) + ack_all() + st(SEND, 1, 0) +
        st(LOOP) + st(CLOCK, 10),
        # bulk both ways at MTU 9000, IPv6, a well-behaved guest and host
        "host_bulk6": HOST + thdr(V6 | SACKP | WS | MSS | JUMBO | AUTOACK |
                                  AUTOREAD, mss=8940) +
        hw(60000, 4) + st(BURST, 7) + st(SACK, 0) + bytes([4, 10]) +
        st(DUPACK, 0, 0, 3) + st(CLOCK, 9) + st(HSHUT) + st(FIN) +
        st(CLOCK, 15),
    }


def mig():
    """Device states (mig_state.c's format): a good one, an empty one, one
    with a socket and its queues, and broken ones (another version, cut, a
    record of the wrong length)."""
    import zlib

    def state(body, version=2):
        return (b"FERRYMIG" + struct.pack("!III", version, 0, len(body)) +
                struct.pack("!I", zlib.crc32(body)) + body)

    guest = struct.pack("!HH", 1, 44) + bytes([1, 0, 2, 0, 0, 0, 0, 2,
                                              198, 51, 100, 2]) + bytes(32)
    key = bytes(10) + b"\xff\xff" + bytes([198, 51, 100, 2]) + bytes(10) + \
        b"\xff\xff" + bytes([203, 0, 113, 7]) + struct.pack("!HH", 40000, 443)
    tcp = struct.pack("!HH", 2, 62) + key + bytes([4, 7, 9, 0]) + \
        struct.pack("!HIIIII", 1460, 1000, 900, 2000, 65535, 65535)
    udp = struct.pack("!HH", 3, 36) + key
    good = state(guest + tcp + udp)
    sock = struct.pack("!HH", 4, 88) + bytes([0, 7, 7, 9]) + \
        struct.pack("!HH", 65483, 0) + bytes([127, 0, 0, 1]) + bytes(12) + \
        bytes([127, 0, 0, 1]) + bytes(12) + \
        struct.pack("!HHIIIIIIIIIII", 18311, 40000, 1000, 2000, 5, 2, 3,
                    77, 1, 2, 3, 4, 5)
    data = struct.pack("!HH", 5, 7) + bytes([0, 0]) + b"hello" + \
        struct.pack("!HH", 5, 5) + bytes([1, 0]) + b"abc"
    return {
        "good": good,
        "sock": state(guest + tcp + sock + data),
        "empty": state(b""),
        "version1": state(guest, version=1),
        "cut": good[:-5],
        "bad_len": state(struct.pack("!HH", 1, 43) + guest[4:-1]),
    }


def main():
    top = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "corpus")
    for target, seeds in (("frame", frames()), ("stream", stream()),
                          ("conf", conf()), ("fwd", fwd()),
                          ("netlink", netlink()), ("scan", scan()),
                          ("vu_sock", vu_sock()), ("tcp", tcp_progs()),
                          ("mig", mig())):
        d = os.path.join(top, target)
        os.makedirs(d, exist_ok=True)
        for name, data in seeds.items():
            with open(os.path.join(d, name), "wb") as f:
                f.write(data)


if __name__ == "__main__":
    main()
