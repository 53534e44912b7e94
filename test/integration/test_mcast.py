"""Multicast and broadcast from the guest to the host's network (issue
20 item 1): SSDP's M-SEARCH, an mDNS one-shot query and a broadcast
reach responders on a LAN bridged to the sandbox's uplink
(mcast_util.py), with the guest's TTL / hop limit, and their unicast
answers come back to the guest from each responder's own address.
--no-multicast drops them (counted as MCAST_BCAST), and nothing reaches
the LAN then.

Every wait polls with a deadline; the LAN's processes are ended by the
PIDs we started.
"""
import re

import pytest

from conftest import HOST4, wait_for
from mcast_util import (LAN4, LAN6, Lan, join, listen, mdns, query, queries,
                        responder)
from test_udp import stats

SSDP = ("M-SEARCH * HTTP/1.1\r\nHOST: 239.255.255.250:1900\r\n"
        'MAN: "ssdp:discover"\r\nMX: 1\r\nST: upnp:rootdevice\r\n\r\n')


@pytest.fixture(scope="module")
def lan_ns():
    lan = Lan()
    try:
        lan.up()
        yield lan
    finally:
        lan.down()


@pytest.fixture
def lan(lan_ns):
    """The LAN, its responders ended after each test."""
    yield lan_ns
    lan_ns.stop_procs()


@pytest.mark.parametrize("group,ttl", [("239.255.255.250", 1),
                                       ("239.255.255.250", 3),
                                       ("ff02::c", 1), ("ff05::c", 4)])
def test_ssdp_msearch_answered(ferry_ns, lan, group, ttl):
    r = responder(lan, 1900, group)
    f = ferry_ns()
    got = query(f, group, 1900, ttl, SSDP)
    assert got, f.output()
    a = got[0]
    assert a["from"] == (LAN6 if ":" in group else LAN4) or \
        a["from"].startswith("fe80:"), a
    rep = a["reply"]
    assert rep["to"] == group and rep["ttl"] == ttl, rep
    assert rep["data"] == SSDP
    assert "LOCATION: http://198.51.100.7:8080/desc.xml" in rep["ssdp"]
    assert r.poll() is None


@pytest.mark.parametrize("group", ["224.0.0.251", "ff02::fb"])
def test_mdns_one_shot_query_answered(ferry_ns, lan, group):
    """RFC 6762 5.1: a query from a port other than 5353 gets its answer
    unicast to that port."""
    responder(lan, 5353, group)
    f = ferry_ns()
    got = query(f, group, 5353, 255, "mdns query")
    assert got and got[0]["reply"]["to"] == group, f.output()
    assert got[0]["reply"]["data"] == "mdns query"


@pytest.mark.parametrize("dst", ["255.255.255.255", "198.51.100.255"])
def test_broadcast_reaches_lan_as_subnet_broadcast(ferry_ns, lan, dst):
    responder(lan, 9999)
    f = ferry_ns()
    got = query(f, dst, 9999, 64, "who is there")
    assert got, f.output()
    assert got[0]["from"] == LAN4
    rep = got[0]["reply"]
    assert rep["to"] == "198.51.100.255" and rep["from"] == HOST4, rep


def test_no_multicast_drops(ferry_ns, lan):
    r = responder(lan, 1900, "239.255.255.250", "ff02::c")
    f = ferry_ns(args=["--no-multicast"])
    for g in ("239.255.255.250", "ff02::c", "255.255.255.255"):
        assert query(f, g, 1900, 1, SSDP) == []
    assert int(stats(f, r"stats: drop MCAST_BCAST (\d+)")) >= 3
    assert r.poll() is None


# --- the guest's groups (IGMP, MLD): issue 20 item 2 ----------------------

@pytest.mark.parametrize("group", ["224.0.0.251", "ff02::fb"])
def test_mdns_both_ways_after_join(ferry_ns, lan, group):
    """The guest joins the mDNS group on port 5353 and queries from it:
    the LAN hears the query from port 5353 with TTL 255 and answers to
    the group (RFC 6762 6), which reaches the guest because ferry joined
    the group on the host (IGMPv3 / MLDv2 report)."""
    r = responder(lan, 5353, group)
    f = ferry_ns()
    got = mdns(f, group, lambda: groups_line(f, r"\b1 groups"))
    assert got, f.output()
    a = got[0]
    assert a["sport"] == 5353 and a["ttl"] == 255, a
    seen = a["reply"]
    assert seen["to"] == group and seen["sport"] == 5353, seen
    assert seen["ttl"] == 255 and seen["data"] == "mdns announcement"
    line = stats(f, r"stats: multicast (.*)")
    assert "1 joined" in line or "2 joined" in line, line
    assert r.poll() is None


def groups_line(f, pattern):
    """The multicast statistics line once it matches pattern."""
    return stats(f, r"stats: multicast (.*%s.*)" % pattern)


@pytest.mark.parametrize("group", ["224.0.0.251", "ff02::fb"])
def test_group_leave_stops_delivery(ferry_ns, lan, group):
    r = responder(lan, 5353, group)
    f = ferry_ns()
    assert mdns(f, group, lambda: groups_line(f, r"\b1 groups")), \
        f.output()                             # joined, answered, left
    line = groups_line(f, r"0 groups, 1 joined, 1 left")
    n = int(re.search(r"(\d+) datagrams to the groups", line).group(1))
    assert n >= 1, line
    # A second query with no member: the LAN answers to the group again,
    # and ferry, having left, delivers nothing.
    q = query(f, group, 5353, 255, "after leave", one=False)
    assert q == [], q
    wait_for(lambda: r.stdout.readline().count("after leave"), 5,
             "the LAN saw the second query")
    line = groups_line(f, r"groups")
    assert f"{n} datagrams to the groups" in line, line


def test_group_cap_holds(ferry_ns, lan, monkeypatch):
    monkeypatch.setenv("FERRY_TEST_MCAST_GROUPS", "2")
    f = ferry_ns()
    g = join(f, "239.1.1.1", "239.1.1.2", "239.1.1.3", "ff05::1:1")
    try:
        line = groups_line(f, r"2 groups, 2 joined, 0 left.* [2-9]\d* beyond")
        assert "group cap reached (2 groups)" in f.output(), line
    finally:
        g.stdin.close()
        g.wait()
    groups_line(f, r"0 groups, 2 joined, 2 left")


def test_querier_queries_seen_in_guest(ferry_ns, lan, monkeypatch):
    monkeypatch.setenv("FERRY_TEST_MCAST_QUERY_MS", "1000")
    f = ferry_ns()
    g = join(f, "239.2.2.2", "ff05::2:2")
    try:
        seen = queries(f, 2)
        v4 = [q for q in seen if not q["v6"]]
        v6 = [q for q in seen if q["v6"]]
        assert len(v4) >= 2 and len(v6) >= 2, seen
        assert all(q["dst"] == "224.0.0.1" and q["ttl"] == 1 and
                   q["ra"] == "94040000" and q["mac"] == "01005e000001"
                   for q in v4), v4
        assert all(q["dst"] == "ff02::1" and q["ttl"] == 1 and
                   q["mac"] == "333300000001" and
                   q["src"].startswith("fe80:") for q in v6), v6
        # The guest answers them, and its groups stay joined.
        line = groups_line(f, r"2 groups, 2 joined, 0 left")
        assert int(re.search(r"(\d+) reports", line).group(1)) >= 4, line
    finally:
        g.stdin.close()
        g.wait()


@pytest.mark.parametrize("group", ["239.255.255.250", "ff02::c"])
def test_ssdp_notify_reaches_guest(ferry_ns, lan, group):
    """SSDP's well-known port: a LAN device's NOTIFY reaches the guest
    that joined the group, without the guest sending first."""
    f = ferry_ns()
    got = listen(f, lan, group, 1900,
                 lambda: groups_line(f, r"\b1 groups"), text="NOTIFY *")
    assert got and got["data"] == "NOTIFY *", f.output()
    assert got["from"] == (LAN4 if ":" not in group else got["from"])


@pytest.mark.parametrize("group", ["239.7.7.7", "ff05::7:7"])
def test_group_port_learned_from_guest(ferry_ns, lan, group):
    """A group with no well-known port is heard on the ports the guest
    sends to in it; without that, on none."""
    f = ferry_ns()
    got = listen(f, lan, group, 4000,
                 lambda: groups_line(f, r"\b1 groups"), send=True,
                 text="to port 4000")
    assert got and got["data"] == "to port 4000", f.output()
    line = groups_line(f, r"\b0 groups")        # left on exit
    assert "1 datagrams to the groups" in line, line
    got = listen(f, lan, group, 4001,
                 lambda: groups_line(f, r"\b1 groups"), text="to 4001")
    assert got is None
