"""DNS through ferry with a real resolver on the sandbox host.

dnsmasq (--no-resolv: it never forwards anywhere) answers ferry.test from
a local record, listening on host loopback (127.0.0.53 like
systemd-resolved, or ::1) or on a host address the guest does not share.
ferry reads a resolv.conf of ours (bind-mounted over /etc/resolv.conf in
a mount namespace of its own), tells the guest its nameserver by DHCP,
and the guest asks with dig.

Every query is asked over UDP and over TCP (dig +tcp): --dns-forward
applies to both (nat_outbound_l4()).
"""
import re
import subprocess
import time

import pytest

import conftest
from conftest import run, wait_for, require

NAME, A, AAAA = "ferry.test", "198.51.100.77", "2001:db8::77"
EXTRA4 = "198.51.100.200"
IFACE = "uplink0"


@pytest.fixture
def dnsmasq(tmp_path):
    """Factory: dnsmasq(*addrs) answering NAME on those addresses."""
    require("dnsmasq")
    require("dig")
    procs = []

    def start(*addrs):
        # --no-daemon: foreground, and no user/group change (which the
        # sandbox's user namespace refuses).
        args = ["dnsmasq", "--no-daemon", "--no-resolv", "--log-facility=-",
                "--no-hosts", "--conf-file=/dev/null", "--bind-interfaces",
                "--port=53",
                f"--pid-file={tmp_path}/dnsmasq{len(procs)}.pid",
                f"--address=/{NAME}/{A}", f"--address=/{NAME}/{AAAA}"]
        args += [f"--listen-address={a}" for a in addrs]
        log = open(tmp_path / f"dnsmasq{len(procs)}.log", "w")
        p = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT)
        procs.append(p)
        for a in addrs:
            wait_for(lambda a=a: dig(a, "A") == A or p.poll() is not None,
                     10, f"dnsmasq on {a}")
            assert p.poll() is None, (tmp_path / f"dnsmasq{len(procs) - 1}"
                                      ".log").read_text()
        return p

    yield start
    for p in procs:
        p.terminate()
        p.wait(5)


def dig(server, rtype, runner=None, tcp=False):
    """Ask server for NAME; the first answer line, or ''."""
    cmd = ["dig", "+short", "+time=2", "+tries=2", f"@{server}", NAME, rtype]
    if tcp:
        cmd.insert(1, "+tcp")
    r = (runner or run)(cmd, check=False, timeout=15)
    return r.stdout.strip().splitlines()[0] if r.stdout.strip() else ""


@pytest.fixture
def host_resolv(tmp_path, monkeypatch):
    """Factory: make ferry read a resolv.conf with these lines."""
    def use(*lines):
        resolv = tmp_path / "resolv.conf"
        resolv.write_text("".join(l + "\n" for l in lines))
        wrap = tmp_path / "ferry-dns-wrap"
        wrap.write_text(
            "#!/bin/sh\n"
            "exec unshare -m -- sh -c 'umount /etc/resolv.conf 2>/dev/null; "
            "mount --bind \"$0\" /etc/resolv.conf && exec \"$@\"' "
            f"{resolv} {conftest.FERRY} \"$@\"\n")
        wrap.chmod(0o755)
        monkeypatch.setattr(conftest, "FERRY", str(wrap))
    return use


def dhcp_dns(f, tmp_path):
    """The nameservers the guest gets by DHCP (busybox udhcpc)."""
    require("busybox")
    script = tmp_path / "udhcpc-dns.sh"
    script.write_text('#!/bin/sh\n[ "$1" = bound ] && echo "DNS=$dns"\n'
                      'exit 0\n')
    script.chmod(0o755)
    r = f.guest(["busybox", "udhcpc", "-i", IFACE, "-f", "-q", "-n",
                 "-t", "5", "-T", "1", "-s", str(script)], timeout=30)
    m = re.search(r"^DNS=(.*)$", r.stdout, re.M)
    assert m, r.stdout + r.stderr
    return m.group(1).split()


def test_dns_loopback_resolver_default(ferry_ns, dnsmasq, host_resolv,
                                       tmp_path):
    """Default configuration, the host's only resolver on 127.0.0.53:
    the guest is told the gateway, and its queries reach the resolver."""
    dnsmasq("127.0.0.53")
    host_resolv("nameserver 127.0.0.53")
    f = ferry_ns()
    assert dhcp_dns(f, tmp_path) == [conftest.GW4]
    for tcp in (False, True):
        assert dig(conftest.GW4, "A", f.guest, tcp) == A
        assert dig(conftest.GW4, "AAAA", f.guest, tcp) == AAAA


def test_dns_loopback_resolver_ipv6(ferry_ns, dnsmasq, host_resolv):
    """A resolver on ::1 is reached through the gateway (the host's,
    2001:db8::1, which maps to host loopback) and through the router's
    link-local address fe80::1, which the guest learns from RAs."""
    dnsmasq("::1")
    host_resolv("nameserver ::1")
    f = ferry_ns()
    gw = conftest.GW6
    assert f"nameserver ::1 is loopback: advertising {gw}" in f.output()
    for tcp in (False, True):
        assert dig(gw, "AAAA", f.guest, tcp) == AAAA
        assert dig(f"fe80::1%{IFACE}", "AAAA", f.guest, tcp) == AAAA


def test_dns_forward_address(ferry_ns, dnsmasq, host_resolv, tmp_path):
    """--dns-forward ADDR: the guest is told ADDR, whose port 53 goes to
    the first host nameserver (the default --dns-host)."""
    dnsmasq("127.0.0.53")
    host_resolv("nameserver 127.0.0.53")
    f = ferry_ns(args=["--dns-forward", "198.51.100.53"])
    assert dhcp_dns(f, tmp_path) == ["198.51.100.53"]
    for tcp in (False, True):
        assert dig("198.51.100.53", "A", f.guest, tcp) == A


def test_dns_forward_explicit_host(ferry_ns, dnsmasq, host_resolv, tmp_path):
    """--dns-forward with --dns-host: queries go where --dns-host says,
    whatever resolv.conf lists."""
    dnsmasq("127.0.0.54")
    host_resolv("nameserver 198.51.100.9")
    f = ferry_ns(args=["--dns-forward", "198.51.100.53",
                       "--dns-host", "127.0.0.54"])
    for tcp in (False, True):
        assert dig("198.51.100.53", "A", f.guest, tcp) == A


def test_dns_non_loopback_host_resolver(ferry_ns, dnsmasq, host_resolv,
                                        tmp_path):
    """A resolver on an ordinary host address is advertised unchanged."""
    run(["ip", "addr", "replace", EXTRA4 + "/32", "dev", "lo"])
    try:
        dnsmasq(EXTRA4)
        host_resolv(f"nameserver {EXTRA4}")
        f = ferry_ns()
        assert dhcp_dns(f, tmp_path) == [EXTRA4]
        for tcp in (False, True):
            assert dig(EXTRA4, "A", f.guest, tcp) == A
    finally:
        run(["ip", "addr", "del", EXTRA4 + "/32", "dev", "lo"], check=False)
