"""--config-net copies the template interface's addresses and routes, as
pasta documents: every global, non-link-local address (with its prefix
length) and every route through the interface (main table, other than the
default route, which goes via the gateway as before); --no-copy-addrs and
--no-copy-routes limit that to one address and the default route, and -a
and -g imply them for their family.

Each test runs ferry in a nested network namespace (unshare -n inside the
sandbox) with its own uplink0, laid out like the sandbox's (test/sandbox.sh)
plus extra documentation-range addresses and routes. The sandbox's own
uplink0 is never touched, so tests running after these see it unchanged,
and the nested namespace disappears with ferry. The guest reports what it
got with ip(8) in JSON.
"""
import json

import pytest

from conftest import FERRY, GW4, GW6, HOST4, HOST6, require, run

GW6_LL = "fe80::1"	# ferry's link-local router (hostconf.c)
MTU = 65520
MAX_ADDRS, MAX_ROUTES = 16, 64	# CONF_MAX_ADDRS, CONF_MAX_ROUTES (conf.h)

# The sandbox's host layout (test/sandbox.sh), rebuilt in the nested
# namespace. The extra IPv6 address comes first: the kernel lists IPv6
# addresses newest first, so HOST6 stays the template's first address.
BASE = f"""
ip link set lo up
ip link add uplink0 type veth peer name uplink0p
ip link set uplink0 mtu {MTU}
ip link set uplink0p mtu {MTU}
ip link set uplink0p up
ip -6 addr add 2001:db8:1::7/56 dev uplink0 nodad
ip addr add {HOST4}/24 dev uplink0
ip -6 addr add {HOST6}/64 dev uplink0 nodad
ip link set uplink0 up
ip route add default via {GW4} dev uplink0 onlink
ip -6 route add default via 2001:db8::1 dev uplink0 onlink
"""

# The extras: a secondary address in the same subnet, a primary in
# another, a link-local one (not copied), a gateway route with a metric
# and device routes.
EXTRA = """
ip addr add 198.51.100.77/24 dev uplink0
ip addr add 203.0.113.7/25 dev uplink0
ip addr add 169.254.9.9/16 dev uplink0 noprefixroute
ip route add 192.0.2.0/24 via 198.51.100.254 dev uplink0 metric 50
ip -6 route add 2001:db8:5::/48 via 2001:db8::fe dev uplink0
ip -6 route add 2001:db8:6::/64 dev uplink0 metric 7
"""

GUEST = ("ip -j addr show uplink0; echo; ip -j -4 route; echo; "
         "ip -j -6 route; echo; ip -j route get 192.0.2.10; echo; "
         "ip -j route get 2001:db8:5::10")

ADDRS4 = {(HOST4, 24), ("198.51.100.77", 24), ("203.0.113.7", 25)}
ADDRS6 = {(HOST6, 64), ("2001:db8:1::7", 56)}


class Guest:
    """What the guest saw: its tap, its routes; and ferry's stderr."""

    def __init__(self, out, err):
        parts = [json.loads(p) for p in out.strip().split("\n") if p]
        assert len(parts) == 5, out
        self.tap = parts[0][0]
        self.r4, self.r6 = parts[1], parts[2]
        self.get4, self.get6 = parts[3][0], parts[4][0]
        self.err = err

    def addrs(self, family):
        return {(a["local"], a["prefixlen"])
                for a in self.tap["addr_info"]
                if a["family"] == family and a.get("scope") == "global"}

    def route(self, routes, dst):
        """The route to dst (text as ip prints it) that ferry configured,
        None if none. Routes the guest learnt from ferry's router
        advertisements (proto ra) may come and go: not counted."""
        found = [r for r in routes
                 if r["dst"] == dst and r.get("protocol") != "ra"]
        assert len(found) <= 1, routes
        return found[0] if found else None


def guest(setup, args=()):
    """Run ferry --config-net in a nested namespace built by setup, with
    a guest that prints its configuration; ferry exits with it."""
    require("ip")
    require("unshare")
    r = run(["unshare", "-n", "sh", "-ec", setup + '\nexec "$@"', "sh",
             FERRY, "ns", "-f", "--config-net", *args, "--",
             "sh", "-c", GUEST], timeout=60)
    return Guest(r.stdout, r.stderr)


def test_copies_all_addresses_and_routes():
    g = guest(BASE + EXTRA)
    assert g.tap["mtu"] == MTU and "UP" in g.tap["flags"]
    assert g.addrs("inet") == ADDRS4		# 169.254.9.9 left out
    assert g.addrs("inet6") == ADDRS6
    # The default routes are ferry's, as without copies.
    assert g.route(g.r4, "default")["gateway"] == GW4
    assert g.route(g.r6, "default")["gateway"] == GW6
    r = g.route(g.r4, "192.0.2.0/24")
    assert r and r["gateway"] == "198.51.100.254" and r["metric"] == 50
    r = g.route(g.r4, "203.0.113.0/25")
    assert r and "gateway" not in r and r["scope"] == "link"
    assert r.get("prefsrc") == "203.0.113.7"
    r = g.route(g.r6, "2001:db8:5::/48")
    assert r and r["gateway"] == "2001:db8::fe"
    r = g.route(g.r6, "2001:db8:6::/64")
    assert r and "gateway" not in r and r["metric"] == 7
    assert g.route(g.r6, "2001:db8:1::/56")	# the copied address's
    # The guest's kernel uses them.
    assert g.get4["gateway"] == "198.51.100.254" and g.get4["dev"] == "uplink0"
    assert g.get6["gateway"] == "2001:db8::fe"
    assert "copying 2 more addresses and" in g.err, g.err
    assert "left out" not in g.err, g.err


def test_no_copy_addrs_keeps_one_address_per_family():
    g = guest(BASE + EXTRA, ["--no-copy-addrs"])
    assert g.addrs("inet") == {(HOST4, 24)}
    assert g.addrs("inet6") == {(HOST6, 64)}
    # Routes are still copied; the one whose source the guest does not
    # hold comes without it.
    assert g.route(g.r4, "192.0.2.0/24")["gateway"] == "198.51.100.254"
    r = g.route(g.r4, "203.0.113.0/25")
    assert r and "prefsrc" not in r
    assert g.route(g.r6, "2001:db8:5::/48")


def test_no_copy_routes_keeps_only_the_default_route():
    g = guest(BASE + EXTRA, ["--no-copy-routes"])
    assert g.addrs("inet") == ADDRS4
    assert g.addrs("inet6") == ADDRS6
    assert g.route(g.r4, "default")["gateway"] == GW4
    assert g.route(g.r6, "default")["gateway"] == GW6
    assert not g.route(g.r4, "192.0.2.0/24")
    assert not g.route(g.r6, "2001:db8:5::/48")
    assert not g.route(g.r6, "2001:db8:6::/64")
    # Only the prefix routes of the addresses remain, made by the kernel.
    assert {r["dst"] for r in g.r4} == {"default", "198.51.100.0/24",
                                         "203.0.113.0/25"}
    assert g.get4["gateway"] == GW4		# via the default route


def test_address_and_gateway_options_imply_no_copy_per_family():
    """-a for IPv4: no other IPv4 addresses (IPv6 ones still copied);
    -g for IPv6: no IPv6 routes (IPv4 ones still copied)."""
    g = guest(BASE + EXTRA, ["-a", "192.0.2.9/24", "-g", "2001:db8::99"])
    assert g.addrs("inet") == {("192.0.2.9", 24)}
    assert g.addrs("inet6") == ADDRS6
    assert g.route(g.r6, "default")["gateway"] == "2001:db8::99"
    assert not g.route(g.r6, "2001:db8:5::/48")
    assert g.route(g.r4, "198.51.100.0/24")	# copied, without source
    assert "prefsrc" not in g.route(g.r4, "198.51.100.0/24")


def test_without_extras_nothing_changes():
    """The plain sandbox layout: exactly what ferry configured before."""
    g = guest(BASE.replace("ip -6 addr add 2001:db8:1::7/56 dev uplink0 "
                           "nodad\n", ""))
    assert g.addrs("inet") == {(HOST4, 24)}
    assert g.addrs("inet6") == {(HOST6, 64)}
    assert {r["dst"] for r in g.r4} == {"default", "198.51.100.0/24"}
    assert "left out" not in g.err and "copying only" not in g.err


def test_tables_are_bounded_with_a_warning():
    """More addresses and routes than ferry copies: the first ones are
    copied, and ferry says how many it left out."""
    n_addrs, n_routes = MAX_ADDRS + 4, MAX_ROUTES + 6
    batch = "".join(f"addr add 198.51.100.{100 + i}/24 dev uplink0\n"
                    for i in range(n_addrs))
    batch += "".join(f"route add 192.0.2.{i}/32 via 198.51.100.254 "
                     "dev uplink0\n" for i in range(n_routes))
    setup = BASE + f"ip -batch - <<'EOF'\n{batch}EOF\n"
    g = guest(setup)
    got = g.addrs("inet")
    assert len(got) == 1 + MAX_ADDRS, got
    assert (HOST4, 24) in got
    assert f"has {n_addrs} more IPv4 addresses: copying only {MAX_ADDRS}" \
        in g.err, g.err
    # The host's prefix route and the /32s; the table holds the first
    # MAX_ROUTES in the kernel's order, by destination: 192.0.2.0-63.
    # (198.51.100.0/24 comes last, and the guest's kernel makes it.)
    assert f"has {n_routes + 1} IPv4 routes: copying only {MAX_ROUTES}" \
        in g.err, g.err
    copied = {r["dst"] for r in g.r4 if r["dst"].startswith("192.0.2.")}
    assert copied == {f"192.0.2.{i}" for i in range(MAX_ROUTES)}, copied


# The host's IPv6 gateway, copied as pasta copies it (hostconf.c): global
# as given (BASE: 2001:db8::1, the tests above), link-local kept
# link-local, and ferry's fe80::1 when the host's default route names no
# gateway. The guest resolves it by NDP to ferry and reaches host
# loopback through it (ping: the host kernel answers on ::1).
PING_GW6 = ("ip -j -6 route show default; echo; "
            "ping -6 -n -c 1 -W 5 {gw} >/dev/null && echo '[\"pong\"]'")
LL_DEFAULT = "ip -6 route add default via 2001:db8::1 dev uplink0 onlink\n"


def gateway_guest(setup, gw):
    """ferry --config-net in a nested namespace built by setup; the guest
    prints its IPv6 default route and pings gw. Returns (routes, pong)."""
    setup += 'sysctl -qw net.ipv4.ping_group_range="0 0"\n'
    r = run(["unshare", "-n", "sh", "-ec", setup + '\nexec "$@"', "sh",
             FERRY, "ns", "-f", "--config-net", "--",
             "sh", "-c", PING_GW6.format(gw=gw)], timeout=60)
    parts = [json.loads(p) for p in r.stdout.strip().split("\n") if p]
    routes = [x for x in parts[0] if x.get("protocol") != "ra"]
    return routes, len(parts) > 1 and parts[1] == ["pong"]


def test_ipv6_default_route_is_the_hosts_global_gateway():
    routes, pong = gateway_guest(BASE, GW6)
    assert [x["gateway"] for x in routes] == [GW6], routes
    assert pong


@pytest.mark.parametrize("default, gw, ping", [
    ("via fe80::99 dev uplink0", "fe80::99", "fe80::99%uplink0"),
    ("dev uplink0", GW6_LL, "fe80::1%uplink0")], ids=["link-local", "none"])
def test_ipv6_default_route_link_local_or_ferrys(default, gw, ping):
    """A link-local host gateway stays link-local; a default route with
    no gateway leaves ferry's own fe80::1."""
    setup = BASE.replace(LL_DEFAULT, f"ip -6 route add default {default}\n")
    assert setup != BASE
    routes, pong = gateway_guest(setup, ping)
    assert [x["gateway"] for x in routes] == [gw], routes
    assert pong
