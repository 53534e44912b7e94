"""Tap offloads end to end (virtio-net headers, TSO, checksum offload).

With offloads (the default in namespace mode) the guest's kernel hands
ferry TCP segments of up to 64 KiB whatever the MTU, and ferry sends it
64 KiB GSO frames with partial checksums. These tests check, with content
verified by SHA-256 on both ends:

- bulk transfers both ways, MTU 1500 and 65520, with offloads on (and
  that they really were on: frames larger than the MTU crossed the tap)
  and off (--no-offload: no frame larger than the MTU);
- that ferry's GSO frames split correctly: the guest forwards them to a
  namespace behind it over a veth with segmentation and checksum offload
  off, so its kernel cuts them into MTU-sized segments and computes every
  checksum from ferry's partial ones; the far end's TCP verifies them
  (host to inner namespace only: the other way the guest forwards plain
  MTU-sized frames, nothing offload-specific, and that path can stall
  with or without offloads - ferry keeps no out-of-order queue yet);
- that --pcap with offloads still writes valid frames (checksums right,
  GSO frames as one big frame each), which tshark reads.
"""
import re
import subprocess

import pytest

import conftest
from conftest import require
from tcp_util import PY, TCPX, Endpoint, check_transfer, host_listen

MiB = 1 << 20


def log(f):
    """ferry's log, also after f.stop()."""
    return f.logpath.read_text(errors="replace")


def frame_stats(f):
    """(frames, bytes) from and to the guest, from the exit statistics."""
    m = re.search(r"stats: from guest (\d+) frames (\d+) bytes, to guest "
                  r"(\d+) frames (\d+) bytes", log(f))
    assert m, log(f)[-2000:]
    n = [int(x) for x in m.groups()]
    return (n[0], n[1]), (n[2], n[3])


@pytest.mark.parametrize("v6", [False, True], ids=["v4", "v6"])
@pytest.mark.parametrize("direction", ["up", "down"])
def test_offload_on_mtu1500_frames_beyond_mtu(ferry_ns, direction, v6):
    f = ferry_ns(args=["-m", "1500"])
    check_transfer(f, v6, direction, 64 * MiB, timeout=300)
    assert f.stop() == 0
    assert "tap: offloads checksum TSO4 TSO6" in log(f), log(f)
    frm, to = frame_stats(f)
    frames, nbytes = frm if direction == "up" else to
    # Data frames average far beyond 1514 bytes: GSO was used.
    assert nbytes / frames > 4000, (frm, to)


@pytest.mark.parametrize("v6", [False, True], ids=["v4", "v6"])
def test_offload_mtu65520_tso_frames_carry_64k(ferry_ns, v6):
    """At a big MTU the guest's kernel caps its MSS at half the SYN-ACK's
    window (32 KiB), and one such segment is all a 64 KiB TSO frame
    holds; ferry's MSS of a third of the TSO limit makes every frame
    from the guest carry three: about 64 KiB each, not 32."""
    f = ferry_ns(args=["-m", "65520"])
    check_transfer(f, v6, "up", 64 * MiB, timeout=300)
    assert f.stop() == 0
    frm, to = frame_stats(f)
    assert frm[1] / frm[0] > 48000, (frm, to)


@pytest.mark.parametrize("mtu", [1500, 65520])
@pytest.mark.parametrize("direction", ["up", "down"])
def test_offload_off_bulk(ferry_ns, direction, mtu):
    f = ferry_ns(args=["-m", str(mtu), "--no-offload"])
    check_transfer(f, False, direction, 64 * MiB, timeout=300)
    assert f.stop() == 0
    assert "tap: no offloads" in log(f), log(f)
    frm, to = frame_stats(f)
    frames, nbytes = frm if direction == "up" else to
    if mtu == 1500:
        assert nbytes / frames <= 1514, (frm, to)
    elif direction == "up":
        # Without TSO each frame is one segment of the MTU's MSS
        # (65480; 32741 when it was bounded by the host socket's).
        assert nbytes / frames > 40000, (frm, to)


def test_offload_pcap_valid_checksums(ferry_ns, tmp_path):
    require("tshark")
    cap = tmp_path / "off.pcap"
    f = ferry_ns(args=["-m", "1500", "--pcap", str(cap)])
    check_transfer(f, False, "down", 4 * MiB, timeout=120)
    check_transfer(f, False, "up", 4 * MiB, timeout=120)
    assert f.stop() == 0
    r = subprocess.run(
        ["tshark", "-r", str(cap), "-o", "tcp.check_checksum:TRUE",
         "-o", "ip.check_checksum:TRUE", "-T", "fields", "-e", "frame.len",
         "-e", "ip.src", "-e", "tcp.checksum.status", "-e",
         "ip.checksum.status", "-Y", "tcp"],
        capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert not re.search(r"corrupt|damaged|cut short", r.stderr), r.stderr
    rows = [l.split("\t") for l in r.stdout.splitlines()]
    assert len(rows) > 100, r.stdout[:2000]
    # Status 1: good; 0 would be bad (2: unverified never with checks on).
    bad = [row for row in rows if row[2] != "1" or row[3] != "1"]
    assert not bad, bad[:10]
    big = {row[1] for row in rows if int(row[0]) > 1514}
    assert big == {conftest.GW4, conftest.HOST4}, big  # GSO both ways


def inner_ns(f, tmp_path, mtu):
    """A namespace behind the guest: veth fw0 (guest) <-> fw1 (inner),
    192.0.2.0/24 and 2001:db8:f::/64, MTU mtu, segmentation and checksum
    offloads off on both ends; the guest forwards. Returns the inner
    namespace holder (Popen) and its PID."""
    require("ethtool")
    pidf = tmp_path / "inner.pid"
    f.guest(f"ip link add fw0 mtu {mtu} type veth peer name fw1 mtu {mtu}")
    hold = subprocess.Popen(
        ["nsenter", "-t", str(f.guest_pid), "-U", "-n",
         "--preserve-credentials", "unshare", "-n", "sh", "-c",
         f"echo $$ > {pidf}; exec sleep 600"])
    pid = conftest.wait_for(
        lambda: pidf.exists() and pidf.read_text().strip() or None,
        10, "inner namespace")
    f.guest(f"ip link set fw1 netns {pid} && "
            "ip addr add 192.0.2.1/24 dev fw0 && "
            "ip -6 addr add 2001:db8:f::1/64 dev fw0 nodad && "
            "ip link set fw0 up && "
            "ethtool -K fw0 tso off gso off gro off tx off && "
            "sysctl -qw net.ipv4.ip_forward=1 && "
            "sysctl -qw net.ipv6.conf.all.forwarding=1")
    inner(f, pid, "ip link set lo up && "
          "ip addr add 192.0.2.2/24 dev fw1 && "
          "ip -6 addr add 2001:db8:f::2/64 dev fw1 nodad && "
          "ip link set fw1 up && "
          "ethtool -K fw1 tso off gso off gro off tx off && "
          "ip route add default via 192.0.2.1 && "
          "ip -6 route add default via 2001:db8:f::1")
    return hold, pid


def inner(f, pid, cmd):
    r = subprocess.run(["nsenter", "-t", str(pid), "-U", "-n",
                        "--preserve-credentials", "sh", "-c", cmd],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, (cmd, r.stdout, r.stderr, f.output()[-2000:])


@pytest.mark.parametrize("mtu", [1500, 65520])
def test_offload_gso_frames_split_by_forwarding_guest(ferry_ns, tmp_path,
                                                      mtu):
    # The inner namespace cannot use the guest's link-local router: map
    # a global address (documentation range) to the host's loopback.
    f = ferry_ns(args=["-m", str(mtu), "--map-host-loopback",
                       "2001:db8:e::1"])
    hold, pid = inner_ns(f, tmp_path, 1500)
    try:
        for v6 in (False, True):
            laddr, caddr = ("::1", "2001:db8:e::1") if v6 else \
                ("127.0.0.1", conftest.GW4)
            srv = host_listen(laddr, "send", "--bytes", str(32 * MiB))
            cli = Endpoint(["nsenter", "-t", str(pid), "-U", "-n",
                            "--preserve-credentials", PY, TCPX, "connect",
                            caddr, str(srv.port), "recv", "--timeout",
                            "120"])
            try:
                a, b = cli.result(150), srv.result(150)
            finally:
                cli.kill()
                srv.kill()
            assert a["bytes"] == b["bytes"] == 32 * MiB, (
                v6, a, b, f.output()[-2000:])
            assert a["sha256"] == b["sha256"], v6
    finally:
        hold.kill()
        hold.wait()
    assert f.stop() == 0
    frm, to = frame_stats(f)
    assert to[1] / to[0] > 4000, (frm, to)	# GSO frames went in
