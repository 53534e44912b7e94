#!/usr/bin/env python3
"""drain_send.py - a guest command that exits right after its last write.

  drain_send.py ADDR PORT BYTES [--stall S] [--stamp PATH]

Connects, writes BYTES of tcpx.py's deterministic stream (BYTES 0: writes
until one write has waited S seconds, a peer that stopped reading), then
writes time.monotonic() to PATH (if given) and exits at once: the close
leaves whatever the socket still holds to the kernel, which sends it (and
the FIN) after the process is gone. That is the case of issue 25: an
application whose close() returned, its last bytes still in flight.
"""
import argparse
import socket
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import tcpx  # noqa: E402


def main():
    p = argparse.ArgumentParser()
    p.add_argument("addr")
    p.add_argument("port", type=int)
    p.add_argument("bytes", type=int)
    p.add_argument("--stall", type=float, default=2.0)
    p.add_argument("--stamp")
    a = p.parse_args()
    s = socket.create_connection((a.addr, a.port), timeout=60)
    if a.bytes:
        for blk in tcpx.stream_blocks(a.bytes):
            s.sendall(blk)
    else:
        s.settimeout(a.stall)
        blk = b"x" * 65536
        try:
            while True:
                s.send(blk)
        except socket.timeout:
            pass
    if a.stamp:
        Path(a.stamp).write_text(repr(time.monotonic()))
    s.close()


if __name__ == "__main__":
    main()
