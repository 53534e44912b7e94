"""`ferry vm`: the qemu stream socket backend, end to end.

Two kinds of tests:
- a Python client speaking qemu's stream protocol (4-byte big-endian
  length + Ethernet frame) stands in for qemu: ARP, protocol errors, one
  client at a time, --one-off, -F, libvirt's command line, flooding;
- a real Linux guest (test/guest: Debian kernel + busybox initramfs under
  qemu/TCG) boots against ferry and runs a batch of checks in one boot
  (DHCP, SLAAC, ping, TCP, UDP, DNS, an inbound port); a second boot
  against the same ferry checks that qemu can disconnect and reconnect.
Guest boots are slow under TCG (seconds each): keep them few, batch checks.
"""
import os
import re
import socket
import struct
import subprocess
import threading
import time

import pytest

from conftest import FERRY, GW4, HOST4, wait_for
from vmguest import (FRAME_MAX, FerryVM, StreamClient, arp_request, ferry_stats,
                     arp_reply_for, dhcp_discover, dhcp_parse, is_arp_reply)

OUR_MAC_LEN = 6


@pytest.fixture
def vm(tmp_path):
    """Factory: vm(args=(), **kw) -> FerryVM, stopped after the test."""
    started = []

    def start(args=(), **kw):
        d = tmp_path / f"vm{len(started)}"
        d.mkdir()
        f = FerryVM(d, args, **kw)
        started.append(f)
        return f

    yield start
    for f in started:
        f.stop()


def arp_works(client, target=GW4):
    """Ask for target's MAC; returns the MAC ferry answers with."""
    client.send_frame(arp_request(target))
    f = client.wait_frame(is_arp_reply(target), 5, f"ARP reply for {target}")
    return arp_reply_for(f, target)


# ------------------------------------------------- protocol, Python client

def test_arp_request_for_gateway_answered(vm):
    f = vm()
    c = StreamClient(f.sock)
    mac = arp_works(c)
    assert len(mac) == OUR_MAC_LEN and mac != b"\0" * 6
    # the guest's own address is not answered for (it is the guest's)
    c.send_frame(arp_request("198.51.100.77"))
    assert arp_works(c) == mac
    c.close()


def test_dhcp_offer_over_the_stream(vm):
    f = vm()
    c = StreamClient(f.sock)
    c.send_frame(dhcp_discover())
    fr = c.wait_frame(lambda fr: dhcp_parse(fr) is not None, 5, "DHCP offer")
    yiaddr, opts = dhcp_parse(fr)
    assert yiaddr == HOST4		# the host's address, copied
    assert opts[53] == b"\x02"
    assert socket.inet_ntoa(opts[3][:4]) == GW4


@pytest.mark.parametrize("length", [0, FRAME_MAX + 1, 0xffffffff])
def test_bad_length_drops_client_and_next_is_served(vm, length):
    f = vm()
    c = StreamClient(f.sock)
    arp_works(c)
    # a good frame and the bad length in one write
    c.send_raw(struct.pack(">I", 42) + arp_request(GW4) +
               struct.pack(">I", length) + b"x" * 64)
    assert c.wait_closed(5), "ferry kept a client that sent length " \
        f"{length}"
    c.close()
    assert f.alive()
    c2 = StreamClient(f.sock)
    arp_works(c2)
    c2.close()
    assert "bad frame length" in f.output()


def test_partial_frames_across_writes(vm):
    """A frame split at every byte boundary still arrives whole."""
    f = vm()
    c = StreamClient(f.sock)
    data = b""
    for i in range(3):
        fr = arp_request(GW4)
        data += struct.pack(">I", len(fr)) + fr
    for b in data:
        c.send_raw(bytes([b]))
    for _ in range(3):
        c.wait_frame(is_arp_reply(GW4), 5, "ARP reply")
    c.close()


def test_second_client_refused_first_still_served(vm):
    f = vm()
    c1 = StreamClient(f.sock)
    arp_works(c1)
    c2 = StreamClient(f.sock)
    c2.send_frame(arp_request(GW4))
    assert c2.wait_closed(5), "second client was not refused"
    assert c2.frames_seen == 0
    c2.close()
    arp_works(c1)
    assert "refusing a second guest connection" in f.output()
    c1.close()


def test_one_off_exits_after_first_client(vm):
    f = vm(["--one-off"])
    c = StreamClient(f.sock)
    arp_works(c)
    assert f.alive()
    c.close()
    assert f.wait_exit(10) == 0
    assert not os.path.exists(f.sock), "socket file left behind"


def test_without_one_off_next_client_served(vm):
    f = vm()
    for _ in range(3):
        c = StreamClient(f.sock)
        arp_works(c)
        c.close()
        wait_for(lambda: "guest disconnected" in f.output(), 5,
                 "ferry to notice the disconnect")
    assert f.alive()
    assert f.output().count("guest connected") == 3


def test_inherited_socket_fd(vm):
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    f = vm(["-F", str(b.fileno())], socket_path=None, pass_fds=[b.fileno()])
    b.close()
    c = StreamClient(sock=a)
    arp_works(c)
    assert f.alive()
    c.close()		# nothing to wait for after: ferry exits
    assert f.wait_exit(10) == 0


def test_default_socket_path_printed_and_usable(vm):
    f = vm(socket_path=None)
    m = wait_for(lambda: re.search(r"UNIX domain socket bound at (\S+)",
                                   f.output()), 10, "socket path message")
    path = m.group(1)
    assert re.fullmatch(r"/tmp/ferry_\d+\.socket", path), path
    assert f"addr.path={path}" in f.output()	# the qemu hint
    c = StreamClient(path)
    arp_works(c)
    c.close()
    f.stop()
    assert not os.path.exists(path)


def test_libvirt_command_line_as_passt(tmp_path):
    """libvirt starts `passt` (a link to ferry) with exactly these options
    and no -f: it daemonizes, writes the pid file, serves one client."""
    passt = tmp_path / "passt"
    os.symlink(FERRY, passt)
    sock, pidf = tmp_path / "vm-net0.socket", tmp_path / "passt.pid"
    log = tmp_path / "passt.log"
    argv = [str(passt), "--one-off", "--socket", str(sock), "--pid",
            str(pidf), "--mtu", "1400", "--interface", "uplink0",
            "--log-file", str(log), "--hostname", "vm1", "--fqdn",
            "vm1.example.test", "--address", "198.51.100.10", "--netmask",
            "24", "--tcp-ports", "2222:22", "--udp-ports", "5353:53"]
    r = subprocess.run(argv, capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    pid = int(wait_for(lambda: pidf.exists() and pidf.read_text().strip(),
                       10, "pid file"))
    try:
        assert os.path.exists(f"/proc/{pid}")
        wait_for(lambda: sock.exists(), 10, "socket")
        c = StreamClient(str(sock))
        c.send_frame(dhcp_discover())
        fr = c.wait_frame(lambda fr: dhcp_parse(fr) is not None, 5,
                          "DHCP offer")
        yiaddr, opts = dhcp_parse(fr)
        assert yiaddr == "198.51.100.10"
        assert struct.unpack(">H", opts[26])[0] == 1400
        assert opts[12] == b"vm1"
        assert socket.inet_ntoa(opts[1]) == "255.255.255.0"
        c.close()
        # --one-off: the daemon exits when its client leaves
        wait_for(lambda: not os.path.exists(f"/proc/{pid}") or
                 open(f"/proc/{pid}/stat").read().split()[2] == "Z", 10,
                 "passt daemon to exit")
        assert not sock.exists()
        assert "UNIX domain socket bound at" in log.read_text()
    finally:
        if os.path.exists(f"/proc/{pid}"):
            os.kill(pid, 15)


# ------------------------------------------------------ floods, framing

def sender(c, data):
    """Write data to the client's socket from a thread; returns the thread."""
    t = threading.Thread(target=c.send_raw, args=(data,), daemon=True)
    t.start()
    return t


def test_flood_to_slow_reader_keeps_framing(vm):
    """The guest floods ARP requests at line rate while reading slowly
    (small socket buffer): ferry's writes to it are partial; every frame
    that arrives must still parse with the right length, and every reply
    is either delivered or counted as dropped (TX_FULL)."""
    n = 20000
    f = vm()
    c = StreamClient(f.sock, rcvbuf=4096)
    req = arp_request(GW4)
    t = sender(c, (struct.pack(">I", len(req)) + req) * n)
    got = 0
    c.s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)

    def drain_slowly():
        nonlocal got
        for fr in c.recv_some(0.5, bufsize=1024):	# raises on bad framing
            assert arp_reply_for(fr, GW4) is not None or \
                fr[12:14] == b"\x86\xdd", fr.hex()
            got += fr[12:14] == b"\x08\x06"
        time.sleep(0.003)
        return not t.is_alive()
    # Not reading for a moment fills ferry's socket buffer for sure (its
    # bounded wait for a cut frame is 1 s).
    wait_for(lambda: ferry_stats(f)[0] > 3000, 20, "ferry to take requests",
             interval=0.05)
    wait_for(drain_slowly, 120, "the flood to be written", interval=0)
    last = []

    def settled():
        """All requests handled, everything queued arrived or was counted
        as dropped (ferry has queued frames it has not flushed yet when it
        prints statistics: so ask until the numbers agree)."""
        drain_slowly()
        last[:] = ferry_stats(f)
        rx, tx, drops = last
        return rx == n and c.frames_seen == tx - drops.get("TX_FULL", 0)
    wait_for(settled, 60, "all frames delivered or counted", interval=0)
    rx, tx, drops = last
    assert got + drops.get("TX_FULL", 0) >= n
    assert drops.get("TX_FULL", 0) > 0, "the reader was never slow enough " \
        "to make ferry's writes partial: the test did not test"
    arp_works(c)		# and the stream is still in sync both ways
    c.close()


def test_flood_from_guest_with_backlog(vm):
    """Megabytes of small frames at once (more than ferry handles per
    event-loop turn), then one ARP request: ferry must neither drop the
    client nor leave the request sitting in its buffer."""
    n = 250000			# 50-byte frames: 12.5 MB, > ferry's rx buffer
    f = vm()
    c = StreamClient(f.sock)
    junk = b"\x02" * 6 + bytes.fromhex("525400123456") + b"\x88\xb5" + \
        b"\0" * 32
    req = arp_request(GW4)
    t = sender(c, (struct.pack(">I", len(junk)) + junk) * n +
               struct.pack(">I", len(req)) + req)
    c.wait_frame(is_arp_reply(GW4), 120, "ARP reply after the flood")
    t.join(10)
    rx, _, drops = ferry_stats(f)
    assert rx == n + 1
    assert drops.get("ETH_TYPE", 0) == n
    c.close()
