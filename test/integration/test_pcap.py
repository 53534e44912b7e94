"""--pcap: a capture file of guest-side frames that tshark reads."""
import re
import struct
import subprocess

from conftest import FERRY, GW4, HOST4, require


def test_pcap_has_echo_request_and_reply(ferry_ns, tmp_path):
    require("ping")
    require("tshark")
    cap = tmp_path / "guest.pcap"
    f = ferry_ns(args=["--pcap", str(cap)])
    f.guest(["ping", "-n", "-c", "2", "-i", "0.2", "-W", "2", GW4])
    assert f.stop() == 0

    raw = cap.read_bytes()
    magic, major, minor, _, _, snaplen, linktype = struct.unpack(
        "=IHHiIII", raw[:24])
    assert (magic, major, minor, linktype) == (0xa1b2c3d4, 2, 4, 1)
    assert snaplen >= 65535

    r = subprocess.run(["tshark", "-r", str(cap), "-T", "fields",
                        "-e", "frame.protocols", "-e", "icmp.type",
                        "-e", "ip.src", "-e", "ip.dst", "-e", "icmp.seq"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert not re.search(r"corrupt|damaged|cut short", r.stderr), r.stderr
    rows = [l.split("\t") for l in r.stdout.splitlines()]
    assert all(row[0].startswith("eth:ethertype:") for row in rows), rows
    req = {row[4] for row in rows
           if row[1] == "8" and row[2] == HOST4 and row[3] == GW4}
    rep = {row[4] for row in rows
           if row[1] == "0" and row[2] == GW4 and row[3] == HOST4}
    assert len(req) == 2 and rep == req, rows
    assert any("arp" in row[0] for row in rows), rows	# both directions


def test_pcap_unwritable_path_is_one_clear_error(tmp_path):
    marker = tmp_path / "ran"
    bad = tmp_path / "no-such-dir" / "x.pcap"
    r = subprocess.run([FERRY, "ns", "-f", "--pcap", str(bad), "--",
                        "touch", str(marker)],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 1, r.stderr
    errs = [l for l in r.stderr.splitlines() if "--pcap" in l]
    assert len(errs) == 1 and str(bad) in errs[0], r.stderr
    assert not marker.exists()
