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
import os
import fcntl
import socket
import struct
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


def fds_back(f, base):
    """Whether ferry's fd count comes back to base within 10 s."""
    try:
        conftest.wait_for(lambda: fd_count(f) <= base, 10, "fds")
        return True
    except AssertionError:
        return False


@pytest.mark.parametrize("v6", [False, True], ids=["v4", "v6"])
def test_tcp_host_reset_mid_upload(ferry_ns, v6):
    """RUNS uploads aborted by the host at varied points: every one is
    a reset for the guest, and ferry's fds return to the baseline."""
    f = ferry_ns()
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
    f = ferry_ns()
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
