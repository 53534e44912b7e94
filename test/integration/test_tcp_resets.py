"""Resets both ways, always (issue 25, item 5).

A host peer that aborts (SO_LINGER {1, 0}) in the middle of a guest
upload, at varied points, must be heard by the guest at once, and ferry
must free the flow and its socket: its fd count comes back to where it
was. The reset points: while the guest sends and the host reads; after
the host stopped reading long enough for ferry's socket to fill (ferry
then holds guest data it could not write and the window it offers the
guest is shut); after the host half-closed (ferry sent the guest our
FIN, the guest sends on). The same for a guest that aborts in the
middle of a download: the host sender hears it.

Each run is one connection of a few MiB: seconds per run on the loaded
test machine, 50 runs per direction.
"""
import fcntl
import os
import signal
import socket
import struct
import subprocess
import threading
import time

import pytest

import conftest

from tcp_util import target

MiB = 1 << 20
RUNS = int(os.environ.get("FERRY_RESET_RUNS", 50))
# How long a peer may take to hear of the reset: far beyond any
# retransmission ferry does, far below the guest's own timeouts.
HEAR_S = 10

# The guest's uploader: 1 MiB blocks until the connection fails;
# prints what ended it ("reset" for ECONNRESET / EPIPE).
GUEST_UP = r"""
import socket, sys, time
s = socket.create_connection((sys.argv[1], int(sys.argv[2])), 10)
s.settimeout(float(sys.argv[3]))
blk = b"u" * (1 << 20)
try:
    while True:
        s.sendall(blk)
except (ConnectionResetError, BrokenPipeError):
    print("reset")
except socket.timeout:
    print("timeout")
"""

# The guest's downloader: reads n bytes, then aborts (SO_LINGER {1, 0}).
GUEST_DOWN = r"""
import socket, sys
s = socket.create_connection((sys.argv[1], int(sys.argv[2])), 10)
n = int(sys.argv[3])
while n > 0:
    d = s.recv(min(n, 65536))
    if not d:
        print("eof"); sys.exit()
    n -= len(d)
s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\1\0\0\0\0\0\0\0")
s.close()
print("rst")
"""

# No automatic forwarding: its listeners for the tests' own host ports
# would come and go in ferry's fd count.
NO_FWD = ["-t", "none", "-u", "none", "-T", "none", "-U", "none"]

LINGER0 = b"\x01\x00\x00\x00\x00\x00\x00\x00"


def fd_count(f):
    return len(os.listdir(f"/proc/{f.proc.pid}/fd"))


def abort(s):
    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, LINGER0)
    s.close()


def read_n(s, n):
    while n > 0:
        d = s.recv(min(n, 1 << 20))
        assert d, "the guest's upload ended early"
        n -= len(d)


def queue_full(s):
    """The server stopped reading: wait until its receive queue stops
    growing (its window is shut, ferry's socket fills behind it)."""
    last = [-1]

    def still():
        q = _fionread(s)
        same = q == last[0] and q > 0
        last[0] = q
        return same
    conftest.wait_for(still, 20, "the host receiver's queue to fill",
                      interval=0.2)


def _fionread(s):
    buf = fcntl.ioctl(s.fileno(), 0x541B, b"\0\0\0\0")   # FIONREAD
    return struct.unpack("i", buf)[0]


def host_upload_server(srv, how, nbytes, errors):
    """Accept one connection, take part of the upload as `how` says,
    then abort it."""
    try:
        s, _ = srv.accept()
        s.settimeout(30)
        if how == "reading":
            read_n(s, nbytes)
        elif how == "full":
            read_n(s, nbytes)
            queue_full(s)
        elif how == "halfclose":
            s.shutdown(socket.SHUT_WR)
            read_n(s, nbytes)
        abort(s)
    except Exception as e:              # reported by the test
        errors.append(repr(e))


def upload_reset_once(f, v6, how, nbytes):
    laddr, caddr = target(f, v6)
    fam = socket.AF_INET6 if v6 else socket.AF_INET
    with socket.socket(fam, socket.SOCK_STREAM) as srv:
        srv.bind((laddr, 0))
        srv.listen(1)
        errors = []
        th = threading.Thread(target=host_upload_server,
                              args=(srv, how, nbytes, errors))
        th.start()
        t0 = time.monotonic()
        r = f.guest(["python3", "-c", GUEST_UP, caddr,
                     str(srv.getsockname()[1]), str(HEAR_S)],
                    timeout=HEAR_S + 40)
        th.join(30)
        assert not errors, errors
        return r.stdout.strip(), time.monotonic() - t0


def fds_back(f, base, timeout=10):
    """Whether ferry's fd count comes back to base within timeout s."""
    try:
        conftest.wait_for(lambda: fd_count(f) <= base, timeout, "fds")
        return True
    except AssertionError:
        return False


@pytest.mark.parametrize("v6", [False, True], ids=["v4", "v6"])
def test_tcp_host_reset_mid_upload(ferry_ns, v6):
    """RUNS uploads aborted by the host at varied points: every one is
    a reset for the guest, and ferry's fds return to the baseline."""
    f = ferry_ns(args=NO_FWD)
    hows = ("reading", "full", "halfclose")
    upload_reset_once(f, v6, "reading", MiB)        # warm-up
    base = fd_count(f)
    bad = []
    for i in range(RUNS):
        how = hows[i % len(hows)]
        nbytes = (i * 7919 % 23 + 1) * 256 * 1024   # 256 KiB .. 6 MiB
        got, took = upload_reset_once(f, v6, how, nbytes)
        if got != "reset" or not fds_back(f, base):
            bad.append((i, how, nbytes, got, round(took, 1), fd_count(f)))
            base = fd_count(f)      # count each leak once
    assert not bad, ("runs (i, point, bytes, guest saw, s, ferry fds) "
                     f"not reset or leaking (baseline {base}): {bad}")
    # ferry keeps serving
    assert upload_reset_once(f, v6, "reading", MiB)[0] == "reset"


def host_download_server(srv, result):
    """Accept one connection and send until it fails."""
    try:
        s, _ = srv.accept()
        s.settimeout(HEAR_S)
        blk = b"d" * (1 << 20)
        while True:
            s.sendall(blk)
    except (ConnectionResetError, BrokenPipeError):
        result.append("reset")
    except socket.timeout:
        result.append("timeout")
    except Exception as e:
        result.append(repr(e))


@pytest.mark.parametrize("v6", [False, True], ids=["v4", "v6"])
def test_tcp_guest_reset_mid_download(ferry_ns, v6):
    """RUNS downloads aborted by the guest after varied amounts: the
    host sender hears the reset every time, ferry's fds come back."""
    f = ferry_ns(args=NO_FWD)
    laddr, caddr = target(f, v6)
    fam = socket.AF_INET6 if v6 else socket.AF_INET
    base = None
    bad = []
    for i in range(RUNS + 1):
        nbytes = (i * 7919 % 23 + 1) * 256 * 1024
        with socket.socket(fam, socket.SOCK_STREAM) as srv:
            srv.bind((laddr, 0))
            srv.listen(1)
            result = []
            th = threading.Thread(target=host_download_server,
                                  args=(srv, result))
            th.start()
            r = f.guest(["python3", "-c", GUEST_DOWN, caddr,
                         str(srv.getsockname()[1]), str(nbytes)],
                        timeout=40)
            th.join(HEAR_S + 20)
            assert r.stdout.strip() == "rst", r.stdout + r.stderr
        if i == 0:                      # warm-up
            base = fd_count(f)
            continue
        if result != ["reset"] or not fds_back(f, base):
            bad.append((i, nbytes, result, fd_count(f)))
            base = fd_count(f)
    assert not bad, ("runs (i, bytes, host saw, ferry fds) not reset or "
                     f"leaking: {bad}")


# A SYN flood from the guest: IPv4 SYNs from sources the guest does not
# own (its kernel drops our SYN-ACKs, never answers them), to dst:dport.
GUEST_FLOOD = r"""
import socket, struct, sys
dst, dport, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
d4 = socket.inet_aton(dst)
s = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_RAW)
def csum(b):
    t = sum(struct.unpack('!%dH' % (len(b) // 2), b))
    t = (t & 0xffff) + (t >> 16)
    return ~((t & 0xffff) + (t >> 16)) & 0xffff
sent = 0
for i in range(n):
    src = bytes([198, 51, 100, 10 + i % 240])
    sport = 1024 + (i // 240) % 60000
    tcp = struct.pack('!HHIIBBHHH', sport, dport, i * 7919, 0, 0x50, 0x02,
                      65535, 0, 0)
    c = csum(src + d4 + b'\0\x06\0\x14' + tcp)
    tcp = tcp[:16] + struct.pack('!H', c) + tcp[18:]
    ip = struct.pack('!BBHHHBBH4s4s', 0x45, 0, 40, 0, 0, 64, 6, 0, src, d4)
    try:
        s.sendto(ip + tcp, (dst, 0))
        sent += 1
    except OSError:
        pass
print(sent)
"""

# Ordinary connections, one after the other: each connects, has one byte
# echoed, closes; prints how many of n did within 5 s each.
GUEST_ORDINARY = r"""
import socket, sys
ok = 0
for i in range(int(sys.argv[3])):
    try:
        s = socket.create_connection((sys.argv[1], int(sys.argv[2])), 5)
        s.settimeout(5)
        s.sendall(b"x")
        ok += s.recv(1) == b"x"
        s.close()
    except OSError:
        pass
print(ok)
"""


def echo_server(srv, stop):
    """Echo one byte on every connection until stop is set."""
    srv.settimeout(0.2)
    while not stop.is_set():
        try:
            s, _ = srv.accept()
        except socket.timeout:
            continue
        with s:
            s.settimeout(5)
            try:
                s.sendall(s.recv(1))
            except OSError:
                pass


def rss_kib(f):
    with open(f"/proc/{f.proc.pid}/status") as st:
        return int(next(l for l in st if l.startswith("VmRSS:")).split()[1])


def test_tcp_syn_flood_leaves_room(ferry_ns):
    """100 000 spoofed-source SYNs toward a host port whose connects never
    complete (a listener with a full accept queue): during the flood at
    least 95% of 50 ordinary new connections succeed; after it ferry's
    fds come back to the baseline and its RSS stops growing (a second
    flood adds nothing)."""
    f = ferry_ns(args=NO_FWD)
    laddr, caddr = target(f, False)
    stop = threading.Event()
    with socket.socket() as dead, socket.socket() as srv:
        dead.bind((laddr, 0))
        dead.listen(0)
        filler = socket.create_connection(dead.getsockname())  # queue full
        srv.bind((laddr, 0))
        srv.listen(128)
        th = threading.Thread(target=echo_server, args=(srv, stop))
        th.start()
        try:
            ordinary = ["python3", "-c", GUEST_ORDINARY, caddr,
                        str(srv.getsockname()[1])]
            assert f.guest(ordinary + ["3"]).stdout.strip() == "3"
            base, rss = fd_count(f), []
            for _ in range(2):
                flood = subprocess.Popen(
                    ["nsenter", "-t", str(f.guest_pid), "-U", "-n",
                     "--preserve-credentials", "python3", "-c", GUEST_FLOOD,
                     caddr, str(dead.getsockname()[1]), "100000"],
                    stdout=subprocess.PIPE, text=True)
                conftest.wait_for(lambda: fd_count(f) > base + 500, 30,
                                  "the flood's pending connects")
                ok = int(f.guest(ordinary + ["50"], timeout=300)
                         .stdout.strip())
                during = fd_count(f)
                sent = int(flood.communicate(timeout=120)[0])
                if not fds_back(f, base, 60):
                    f.proc.send_signal(signal.SIGUSR1)
                    conftest.wait_for(lambda: "tcp opened" in f.output(), 5)
                    raise AssertionError(
                        f"ferry's fds {fd_count(f)}, baseline {base} (ok "
                        f"{ok}, {during} during):\n" + f.output()[-3000:])
                rss.append(rss_kib(f))
                print(f"flood: {sent} SYNs sent, {ok}/50 ordinary "
                      f"connections, {during} fds during, RSS {rss[-1]} KiB")
                assert ok >= 48, f"{ok} of 50 ordinary connections: " + \
                    f.output()[-2000:]
            assert rss[1] <= rss[0] + 2048, rss
        finally:
            stop.set()
            th.join()
            filler.close()


# A guest client that connects, says one byte and then holds the
# connection without a word (it is killed at the end).
GUEST_IDLE = r"""
import socket, sys, time
s = socket.create_connection((sys.argv[1], int(sys.argv[2])), 10)
s.sendall(b"x")
print("connected", flush=True)
time.sleep(600)
"""


def test_tcp_keepalive_silent_guest(ferry_ns):
    """--tcp-keepalive 2: a guest whose interface goes down has its
    connection reset on the host side, and ferry's socket closed, within
    the bound the man page gives (idle 2 s, then 4 probes 1 s apart: 6 s,
    plus a quarter interval of timer grain), here 6 s + 3 s of slack for
    the loaded test machine; a guest that stays up keeps its idle
    connection through the probes."""
    f = ferry_ns(args=NO_FWD + ["--tcp-keepalive", "2"])
    laddr, caddr = target(f, False)
    ifname = f.guest("ip -o link show | awk -F': ' '$2 != \"lo\" "
                     "{print $2; exit}'").stdout.strip().split("@")[0]
    with socket.socket() as srv:
        srv.bind((laddr, 0))
        srv.listen(2)
        port = str(srv.getsockname()[1])
        clients = []
        try:
            for _ in range(2):
                cl = subprocess.Popen(
                    ["nsenter", "-t", str(f.guest_pid), "-U", "-n",
                     "--preserve-credentials", "python3", "-c", GUEST_IDLE,
                     caddr, port], stdout=subprocess.PIPE, text=True)
                clients.append(cl)
                assert cl.stdout.readline().strip() == "connected"
            alive, _ = srv.accept()
            silent, _ = srv.accept()
            for s in (alive, silent):
                s.settimeout(10)
                assert s.recv(1) == b"x"
            base = fd_count(f)
            # the first stays up through two rounds of probes
            alive.settimeout(6)
            try:
                alive.recv(1)
            except socket.timeout:
                pass
            assert fd_count(f) == base, "a live guest's connection went"
            f.guest(["ip", "link", "set", "dev", ifname, "down"])
            t0 = time.monotonic()
            silent.settimeout(30)
            try:
                got = "eof" if silent.recv(1) == b"" else "data"
            except ConnectionResetError:
                got = "reset"
            except socket.timeout:
                got = "nothing in 30 s"
            took = time.monotonic() - t0
            print(f"keepalive: {got} after {took:.1f} s")
            assert got == "reset", got
            assert took <= 9, f"reset after {took:.1f} s"
            assert fds_back(f, base - 2, 5), fd_count(f)
            assert "keepalives sent/answered/resets" in stats_text(f)
        finally:
            for cl in clients:
                cl.kill()
                cl.wait()


def stats_text(f):
    """ferry's statistics lines after a SIGUSR1."""
    before = len(f.output())
    f.proc.send_signal(signal.SIGUSR1)
    conftest.wait_for(lambda: "stats: tcp opened" in f.output()[before:], 5,
                      "statistics")
    return f.output()[before:]
