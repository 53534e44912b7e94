"""L2/L3 services as real clients see them, in a guest started WITHOUT
--config-net: DHCPv4 (busybox udhcpc), DHCPv6 (ISC dhclient -6, since
Debian's busybox has no udhcpc6) and SLAAC from our router advertisements
(the guest's own kernel).

ferry reads a resolv.conf of ours (bind-mounted over /etc/resolv.conf in a
private mount namespace of its own), so the nameservers and search list
the clients must receive are known. Client scripts dump their environment
to a file: that is what the client really got.
"""
import ipaddress
import json
import subprocess

import pytest

import conftest
from conftest import require, wait_for

DNS4, DNS6 = "198.51.100.53", "2001:db8::53"
SEARCH = ["example.test", "corp.example"]
MAC = "9a:55:00:00:00:01"                       # ferry's, --mac-addr
RESOLV = f"nameserver {DNS4}\nnameserver {DNS6}\nsearch {' '.join(SEARCH)}\n"


def read_env(path):
    """KEY=VALUE lines (a dumped environment) into a dict."""
    env = {}
    for line in path.read_text().splitlines():
        k, sep, v = line.partition("=")
        if sep:
            env[k] = v.strip("'\"")
    return env


@pytest.fixture
def guest(ferry_ns, tmp_path, monkeypatch):
    """A guest namespace whose ferry read our resolv.conf; .ifname is its
    (unconfigured, down) tap interface."""
    resolv = tmp_path / "resolv.conf"
    resolv.write_text(RESOLV)
    wrap = tmp_path / "ferry-wrap"
    # The sandbox may itself have bound a (deleted) file there: stacking
    # on that fails, so its mount goes first, in our mount namespace only.
    wrap.write_text("#!/bin/sh\n"
                    "exec unshare -m -- sh -c 'umount /etc/resolv.conf "
                    "2>/dev/null; mount --bind \"$0\" /etc/resolv.conf && "
                    "exec \"$@\"' "
                    f"{resolv} {conftest.FERRY} \"$@\"\n")
    wrap.chmod(0o755)
    monkeypatch.setattr(conftest, "FERRY", str(wrap))
    f = ferry_ns(args=["-d", "--mac-addr", MAC], config_net=False)
    links = json.loads(f.guest(["ip", "-j", "link"]).stdout)
    names = [l["ifname"] for l in links if l["ifname"] != "lo"]
    assert len(names) == 1, f"guest interfaces: {names}"
    f.ifname = names[0]
    # No DAD wait: link-local and SLAAC addresses usable at once.
    f.guest(["sysctl", "-qw", f"net.ipv6.conf.{f.ifname}.accept_dad=0"])
    return f


def dump_script(path, dump_dir, key):
    """A client script that dumps its environment to dump_dir/<$key>
    (dhclient runs scripts with a clean environment: paths are baked in)."""
    path.write_text(f'#!/bin/sh\nenv > "{dump_dir}/dump.${key}"\nexit 0\n')
    path.chmod(0o755)


def test_udhcpc_gets_lease_and_names(guest, tmp_path):
    require("busybox")
    dump_script(tmp_path / "udhcpc.sh", tmp_path, "1")
    guest.guest(["ip", "link", "set", guest.ifname, "up"])
    guest.guest(["busybox", "udhcpc", "-i", guest.ifname, "-f", "-q", "-n",
                 "-t", "5", "-T", "1", "-O", "search",
                 "-s", str(tmp_path / "udhcpc.sh")], timeout=30)
    env = read_env(tmp_path / "dump.bound")
    assert env["ip"] == "198.51.100.2"
    assert env["subnet"] == "255.255.255.0"
    assert env["router"] == "198.51.100.1"
    assert env["serverid"] == "198.51.100.1"
    assert env["broadcast"] == "198.51.100.255"
    assert env["dns"].split() == [DNS4]
    assert env["domain"] == SEARCH[0]
    assert env["search"].split() == SEARCH
    assert env["lease"] == str(0xffffffff)
    assert int(env["mtu"]) == 65520
    assert "staticroutes" not in env          # the gateway is on-link
    assert "DHCP: ACK" in guest.output()


def test_no_dhcp_means_no_lease(ferry_ns, tmp_path):
    require("busybox")
    f = ferry_ns(args=["--no-dhcp"], config_net=False)
    ifname = [l["ifname"] for l in json.loads(f.guest(["ip", "-j", "link"]).stdout)
              if l["ifname"] != "lo"][0]
    dump_script(tmp_path / "udhcpc.sh", tmp_path, "1")
    f.guest(["ip", "link", "set", ifname, "up"])
    r = f.guest(["busybox", "udhcpc", "-i", ifname, "-f", "-q", "-n",
                 "-t", "2", "-T", "1", "-s", str(tmp_path / "udhcpc.sh")],
                timeout=30, check=False)
    assert r.returncode != 0
    assert not (tmp_path / "dump.bound").exists()


def test_dhclient6_gets_address_and_dns(guest, tmp_path):
    require("dhclient")
    dump_script(tmp_path / "dhclient.sh", tmp_path, "reason")
    guest.guest(["ip", "link", "set", guest.ifname, "up"])
    # dhclient binds its link-local address, which is tentative until the
    # kernel's DAD work has run, even with DAD off (a workqueue: late on a
    # loaded machine): bind() then fails, "Cannot assign requested address".
    wait_for(lambda: link_local_ready(guest), 10, "a usable link-local address")
    argv = ["nsenter", "-t", str(guest.guest_pid), "-U", "-n",
            "--preserve-credentials", "dhclient", "-6", "-d", "-v", "-1",
            "-sf", str(tmp_path / "dhclient.sh"),
            "-lf", str(tmp_path / "dhclient6.leases"),
            "-pf", str(tmp_path / "dhclient6.pid"), guest.ifname]
    log = open(tmp_path / "dhclient.log", "w")
    proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL)
    try:
        bound = tmp_path / "dump.BOUND6"
        wait_for(lambda: bound.exists() and "new_ip6_address" in bound.read_text()
                 or proc.poll() is not None, 20, "dhclient -6 to bind")
        assert bound.exists(), (tmp_path / "dhclient.log").read_text()
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        log.close()
    env = read_env(bound)
    assert env["new_ip6_address"] == "2001:db8::2"
    assert env["new_dhcp6_name_servers"].split() == [DNS6]
    assert [d.rstrip(".") for d in env["new_dhcp6_domain_search"].split()] == SEARCH
    assert env["new_dhcp6_server_id"].startswith("0:3:0:1:")   # DUID-LL
    assert int(env["new_max_life"]) == 0xffffffff


def addrs6(guest):
    """The guest interface's IPv6 addr_info entries."""
    out = json.loads(guest.guest(["ip", "-6", "-j", "addr", "show", "dev",
                                  guest.ifname]).stdout)
    return [a for link in out for a in link.get("addr_info", [])]


def link_local_ready(guest):
    """The guest interface has a link-local address past DAD."""
    return any(a.get("scope") == "link" and not a.get("tentative")
               for a in addrs6(guest))


def slaac_addr(guest):
    """A /64 address in 2001:db8::/64 that DAD has finished with, if any."""
    net = ipaddress.ip_network("2001:db8::/64")
    for a in addrs6(guest):
        if ipaddress.ip_address(a["local"]) in net and \
                a.get("prefixlen") == 64 and not a.get("tentative"):
            return a
    return None


def default_route(guest):
    out = json.loads(guest.guest(["ip", "-6", "-j", "route", "show",
                                  "default"]).stdout)
    return out[0] if out else None


def test_slaac_address_and_default_route(guest):
    ifn = guest.ifname
    guest.guest(["sysctl", "-qw", f"net.ipv6.conf.{ifn}.accept_ra=1"])
    guest.guest(["ip", "link", "set", ifn, "up"])
    addr = wait_for(lambda: slaac_addr(guest), 15,
                    "a SLAAC address in 2001:db8::/64")["local"]
    assert addr != "2001:db8::2"              # autoconfigured, not leased
    route = wait_for(lambda: default_route(guest), 15,
                     "a default route from the RA")
    assert route["gateway"] == "fe80::1"      # our router address
    assert route["protocol"] == "ra"
    assert route["dev"] == ifn


def test_dad_never_answered_for_guest_addresses(guest):
    """With duplicate address detection on, the guest's link-local and
    SLAAC addresses must come out of DAD unclaimed."""
    ifn = guest.ifname
    guest.guest(["sysctl", "-qw", f"net.ipv6.conf.{ifn}.accept_dad=1"])
    guest.guest(["sysctl", "-qw", f"net.ipv6.conf.{ifn}.accept_ra=1"])
    guest.guest(["ip", "link", "set", ifn, "up"])
    wait_for(lambda: slaac_addr(guest), 20, "SLAAC address through DAD")
    for a in addrs6(guest):
        assert not a.get("dadfailed"), a
    assert link_local_ready(guest)


def test_neighbours_resolve_to_ferry(guest):
    """The router (from the RA's source link-layer option) and an on-link
    global address (by solicitation) both resolve to ferry's MAC."""
    ifn = guest.ifname
    guest.guest(["sysctl", "-qw", f"net.ipv6.conf.{ifn}.accept_ra=1"])
    guest.guest(["ip", "link", "set", ifn, "up"])
    wait_for(lambda: default_route(guest), 15, "a default route from the RA")

    def neigh(addr):
        guest.guest(["ping", "-6", "-c1", "-W1", addr], check=False)
        out = json.loads(guest.guest(["ip", "-6", "-j", "neigh", "show",
                                      addr, "dev", ifn]).stdout)
        ok = [n for n in out if n.get("lladdr") == MAC and
              "FAILED" not in n.get("state", []) and
              "INCOMPLETE" not in n.get("state", [])]
        return ok[0] if ok else None

    wait_for(lambda: neigh("fe80::1"), 10, "fe80::1 resolved")
    wait_for(lambda: neigh("2001:db8::1"), 10, "2001:db8::1 resolved")
