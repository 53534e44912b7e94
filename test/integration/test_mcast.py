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
import pytest

from conftest import HOST4
from mcast_util import LAN4, LAN6, Lan, query, responder
from test_udp import stats

SSDP = ("M-SEARCH * HTTP/1.1\r\nHOST: 239.255.255.250:1900\r\n"
        'MAN: "ssdp:discover"\r\nMX: 1\r\nST: upnp:rootdevice\r\n\r\n')


@pytest.fixture(scope="module")
def lan():
    lan = Lan()
    try:
        lan.up()
        yield lan
    finally:
        lan.down()


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
