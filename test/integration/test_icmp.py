"""ICMP/ICMPv6 echo through ferry's ping sockets, from inside the guest.

The gateway addresses the guest uses map to the sandbox host's loopback,
so the host kernel answers them. Addresses nobody answers must stay
unanswered (ferry never fakes replies), and with ping sockets forbidden
by net.ipv4.ping_group_range ferry warns once and forwards nothing.
"""
import re
import stat
import struct
import subprocess

import pytest

import conftest
from conftest import GW4, require
from vmguest import csum

PING = ["ping", "-n", "-i", "0.2"]


def received(out):
    m = re.search(r"(\d+) (?:packets )?received", out)
    assert m, f"no ping summary in:\n{out}"
    return int(m.group(1))


def gw6(f):
    """The IPv6 default router the guest uses, as ADDR%DEV when link-local."""
    out = f.guest(["ip", "-6", "route", "show", "default"]).stdout
    m = re.search(r"via (\S+) dev (\S+)", out)
    assert m, f"no IPv6 default route in the guest:\n{out}"
    addr, dev = m.groups()
    return (f"{addr}%{dev}" if addr.lower().startswith("fe80") else addr), dev


def wait_ll_ready(f, dev):
    """Wait until the guest's link-local address has finished DAD."""
    def ready():
        out = f.guest(["ip", "-6", "addr", "show", "dev", dev, "scope",
                       "link"]).stdout
        return "inet6" in out and "tentative" not in out
    conftest.wait_for(ready, 10, "guest link-local address")


def ping4(f, dst, n=3, check=True):
    return f.guest(PING + ["-c", str(n), "-W", "2", dst], check=check)


def ping6(f, dst, n=3, check=True):
    return f.guest(PING + ["-6", "-c", str(n), "-W", "2", dst], check=check)


def test_ping_gateway_ipv4(ferry_ns):
    require("ping")
    f = ferry_ns()
    r = ping4(f, GW4)
    assert received(r.stdout) == 3
    assert f"from {GW4}" in r.stdout


def test_ping_gateway_ipv6(ferry_ns):
    require("ping")
    f = ferry_ns()
    dst, dev = gw6(f)
    wait_ll_ready(f, dev)
    r = ping6(f, dst)
    assert received(r.stdout) == 3
    assert f"from {dst.split('%')[0]}" in r.stdout


def tshark_icmp(path):
    """(family, type, src, dst) of every ICMP/ICMPv6 echo in a capture."""
    require("tshark")
    r = subprocess.run(["tshark", "-r", str(path), "-Y",
                        "icmp.type == 0 || icmp.type == 8 || "
                        "icmpv6.type == 128 || icmpv6.type == 129",
                        "-T", "fields", "-e", "icmp.type", "-e",
                        "icmpv6.type", "-e", "ip.src", "-e", "ip.dst",
                        "-e", "ipv6.src", "-e", "ipv6.dst"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    out = []
    for line in r.stdout.splitlines():
        # An error quoting an echo (ferry relays the host's unreachable)
        # matches too, with "outer,quoted" values: keep the outer ones
        # and only echo messages.
        t4, t6, s4, d4, s6, d6 = [v.split(",")[0] for v in
                                  (line.split("\t") + [""] * 6)[:6]]
        if t4 and int(t4) in (0, 8):
            out.append((4, int(t4), s4, d4))
        elif t6 and int(t6) in (128, 129):
            out.append((6, int(t6), s6, d6))
    return out


def test_unanswered_destination_gets_no_reply(ferry_ns, tmp_path):
    """Nobody answers these (the sandbox uplink's far end has no address):
    the requests reach ferry and the host, and no reply comes back."""
    require("ping")
    cap = tmp_path / "unanswered.pcap"
    f = ferry_ns(args=["--pcap", str(cap)])
    _, dev = gw6(f)
    wait_ll_ready(f, dev)
    dst4, dst6 = "198.51.100.77", "2001:db8:1::77"
    r = ping4(f, dst4, n=2, check=False)
    assert r.returncode != 0 and received(r.stdout) == 0, r.stdout
    r = ping6(f, dst6, n=2, check=False)
    assert r.returncode != 0 and received(r.stdout) == 0, r.stdout
    echoes = tshark_icmp(cap)
    assert (4, 8, conftest.HOST4, dst4) in echoes, echoes
    assert (6, 128, conftest.HOST6, dst6) in echoes, echoes
    assert not [e for e in echoes if e[1] in (0, 129)], echoes


def ferry_in_child_netns(tmp_path, ping_range):
    """A wrapper that starts ferry in a child network namespace shaped
    like the sandbox's host (uplink0, addresses, default routes) but with
    its own net.ipv4.ping_group_range. New namespaces start with "1 0"
    (no group), which we cannot write ourselves: group 1 is not mapped in
    the sandbox's user namespace, so the empty range is checked, not set."""
    w = tmp_path / "ferry-child-netns"
    if ping_range == "1 0":		# shown as "65534 0" here: empty range
        setup = ("r=$(cat /proc/sys/net/ipv4/ping_group_range); "
                 '[ "${r%%[[:space:]]*}" -gt "${r##*[[:space:]]}" ]')
    else:
        setup = f'sysctl -qw net.ipv4.ping_group_range=\"{ping_range}\"'
    w.write_text(f"""#!/bin/sh
exec unshare -n -- sh -ec '
ip link set lo up
ip link add uplink0 type veth peer name uplink0p
ip link set uplink0p up
ip addr add 198.51.100.2/24 dev uplink0
ip -6 addr add 2001:db8::2/64 dev uplink0 nodad
ip link set uplink0 up
ip route add default via 198.51.100.1 dev uplink0 onlink
ip -6 route add default via 2001:db8::1 dev uplink0 onlink
{setup}
exec "$0" "$@"' {conftest.FERRY} "$@"
""")
    w.chmod(w.stat().st_mode | stat.S_IXUSR)
    return str(w)


@pytest.mark.parametrize("ping_range", ["0 0", "1 0"])
def test_ping_sockets_disabled_by_sysctl(ferry_ns, tmp_path, monkeypatch,
                                         ping_range):
    """ping_group_range "1 0" (no group): one warning naming the sysctl,
    and pings time out (dropped, counted, never answered by ferry). "0 0"
    is the control: the same setup answers."""
    require("ping")
    require("unshare")
    monkeypatch.setattr(conftest, "FERRY",
                        ferry_in_child_netns(tmp_path, ping_range))
    f = ferry_ns()
    enabled = ping_range == "0 0"
    dst6, dev = gw6(f)
    wait_ll_ready(f, dev)
    r4 = ping4(f, GW4, n=2, check=False)
    r6 = ping6(f, dst6, n=2, check=False)
    assert received(r4.stdout) == (2 if enabled else 0), r4.stdout
    assert received(r6.stdout) == (2 if enabled else 0), r6.stdout
    assert f.stop() == 0
    log = f.logpath.read_text(errors="replace")
    assert log.count("ping_group_range") == (0 if enabled else 1), log
    if not enabled:
        assert "IPv4 and IPv6" in log, log
        m = re.search(r"drop ICMP_DISABLED (\d+)", log)
        assert m and int(m.group(1)) >= 4, log


def test_no_icmp_option(ferry_ns):
    """--no-icmp: echo requests are dropped, no warning about sysctls."""
    require("ping")
    f = ferry_ns(args=["--no-icmp"])
    r = ping4(f, GW4, n=2, check=False)
    assert received(r.stdout) == 0, r.stdout
    assert f.stop() == 0
    log = f.logpath.read_text(errors="replace")
    assert "ping_group_range" not in log, log
    m = re.search(r"drop ICMP_DISABLED (\d+)", log)
    assert m and int(m.group(1)) >= 2, log


def pcap_frames(path):
    """The frames of a classic pcap file (ferry's --pcap: host order)."""
    data = path.read_bytes()
    pos, out = 24, []
    while pos + 16 <= len(data):
        incl = struct.unpack("<I", data[pos + 8:pos + 12])[0]
        out.append(data[pos + 16:pos + 16 + incl])
        pos += 16 + incl
    return out


def quoted_echoes6(frames):
    """(guest's echo id, checksum verifies) for each ICMPv6 destination
    unreachable to the guest that quotes a whole echo request."""
    out = []
    for fr in frames:
        if len(fr) < 14 + 40 + 8 + 40 + 8 or fr[12:14] != b"\x86\xdd" or \
                fr[20] != 58 or fr[54] != 1:
            continue
        q = fr[62:]				# the quoted IPv6 packet
        plen, nh = struct.unpack(">HB", q[4:7])
        msg = q[40:]
        if nh != 58 or msg[0] != 128 or len(msg) != plen:
            continue
        pseudo = q[8:40] + struct.pack(">IxxxB", plen, 58)
        out.append((struct.unpack(">H", msg[4:6])[0],
                    csum(pseudo + msg) == 0))
    return out


def test_relayed_error_quotes_echo_as_sent(ferry_ns, tmp_path):
    """Nobody answers neighbour discovery for an on-link address: the host
    reports "address unreachable" to ferry's ping socket, and the guest
    gets it quoting its echo request as it sent it: its own id, and a
    checksum that verifies (the host's quote had the kernel's id, with a
    checksum over the host socket's addresses)."""
    require("ping")
    cap = tmp_path / "err.pcap"
    f = ferry_ns(args=["--pcap", str(cap)])
    _, dev = gw6(f)
    wait_ll_ready(f, dev)
    r = ping6(f, "2001:db8::77", n=5, check=False)
    assert received(r.stdout) == 0, r.stdout
    echoes = conftest.wait_for(lambda: quoted_echoes6(pcap_frames(cap)), 15,
                               "an ICMPv6 error quoting an echo request")
    assert all(ok for _, ok in echoes), echoes
    ids = {struct.unpack(">H", fr[58:60])[0] for fr in pcap_frames(cap)
           if len(fr) >= 62 and fr[12:14] == b"\x86\xdd" and fr[20] == 58
           and fr[54] == 128}			# the guest's requests
    assert {i for i, _ in echoes} <= ids, (echoes, ids)
