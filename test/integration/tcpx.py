#!/usr/bin/env python3
"""tcpx.py - TCP test endpoint for ferry's integration tests.

Runs on the sandbox host or inside the guest. One side listens, the other
connects; either side can send a deterministic byte stream or receive one,
and both print a JSON line with the byte count and SHA-256 so the test can
compare them.

  tcpx.py listen  ADDR PORT ROLE [options]   (prints "ready PORT" first)
  tcpx.py connect ADDR PORT ROLE [options]
  ROLE: send | recv | echo | sendrecv | halfclose | rst | hold

Options: --bytes N (send size), --pause-at N --pause S (receiver stops
reading for S seconds after N bytes; N < 0: after -N milliseconds), --rate-log (receiver: bytes per
100 ms slot), --conns N --parallel P --size N (many connections: connect
side opens N connections, at most P at once, each sends N bytes and
reads the echo), --count N (listen side: serve N connections).
"""
import argparse
import hashlib
import json
import selectors
import socket
import sys
import time

BLOCK = 1 << 20


def stream_blocks(total):
    """Deterministic data: a fixed random MiB, rotated per block."""
    seed = hashlib.sha256(b"ferry").digest() * 128
    base = bytes((b * 131 + i) & 0xff for i, b in enumerate(seed)) * (BLOCK // 4096)
    sent, i = 0, 0
    while sent < total:
        k = (i * 4099) % BLOCK
        blk = base[k:] + base[:k]
        n = min(BLOCK, total - sent)
        yield blk[:n]
        sent += n
        i += 1


def do_send(s, total):
    h = hashlib.sha256()
    n = 0
    for blk in stream_blocks(total):
        h.update(blk)
        s.sendall(blk)
        n += len(blk)
    return n, h.hexdigest()


def do_recv(s, pause_at=None, pause=0.0, rate_log=False, pause_bytes=None):
    """Receive to EOF. pause_at >= 0: pause after that many bytes; < 0:
    after -pause_at ms; pause_bytes: also pause once that many bytes
    arrived (whichever comes first), so a fast transfer still pauses."""
    h = hashlib.sha256()
    n = 0
    slots = []
    t0 = time.monotonic()
    paused = False
    buf = bytearray(1 << 18)
    while True:
        if (pause_at is not None and not paused and
                ((n >= pause_at if pause_at >= 0
                  else time.monotonic() - t0 >= -pause_at / 1000) or
                 (pause_bytes is not None and n >= pause_bytes))):
            paused = True
            pause_start = time.monotonic() - t0
            time.sleep(pause)
            pause_end = time.monotonic() - t0
        k = s.recv_into(buf)
        if k == 0:
            break
        h.update(memoryview(buf)[:k])
        n += k
        if rate_log:
            slot = int((time.monotonic() - t0) * 10)
            while len(slots) <= slot:
                slots.append(0)
            slots[slot] += k
    r = {"bytes": n, "sha256": h.hexdigest(),
         "secs": time.monotonic() - t0}
    if rate_log:
        r["slots"] = slots
    if paused:
        r["pause"] = [pause_start, pause_end]
    return r


def role(s, a):
    if a.role == "send":
        n, d = do_send(s, a.bytes)
        s.shutdown(socket.SHUT_WR)
        s.recv(1)           # wait for the peer's close: all delivered
        return {"bytes": n, "sha256": d}
    if a.role == "recv":
        return do_recv(s, a.pause_at, a.pause, a.rate_log, a.pause_bytes)
    if a.role == "echo":
        n = 0
        while True:
            d = s.recv(65536)
            if not d:
                break
            s.sendall(d)
            n += len(d)
        s.shutdown(socket.SHUT_WR)
        return {"bytes": n}
    if a.role == "halfclose":
        # Send, close our side, then keep receiving: half-close.
        n, d = do_send(s, a.bytes)
        s.shutdown(socket.SHUT_WR)
        r = do_recv(s)
        return {"sent": n, "sent_sha256": d, **r}
    if a.role == "sendrecv":
        # Receive everything first (the peer half-closes), then send.
        r = do_recv(s)
        n, d = do_send(s, a.bytes)
        s.shutdown(socket.SHUT_WR)
        return {"sent": n, "sent_sha256": d, **r}
    if a.role == "rst":
        s.recv(1)           # established end to end: the peer spoke
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                     b"\x01\x00\x00\x00\x00\x00\x00\x00")
        s.close()
        return {"rst": True}
    if a.role == "hold":
        try:
            s.sendall(b"x")
            d = s.recv(1)
            return {"eof": d == b""}
        except ConnectionResetError:
            return {"reset": True}
    raise SystemExit(f"unknown role {a.role}")


def many(a, fam):
    """Open a.conns connections, a.parallel at once; each sends a.size
    bytes, half-closes, and must read the same bytes back."""
    sel = selectors.DefaultSelector()
    payload = bytes(range(256)) * (a.size // 256 + 1)
    payload = payload[:a.size]
    started = done = bad = 0
    live = {}

    dst = socket.getaddrinfo(a.addr, a.port, fam, socket.SOCK_STREAM)[0][4]

    def start():
        nonlocal started
        s = socket.socket(fam, socket.SOCK_STREAM)
        s.setblocking(False)
        s.connect_ex(dst)
        live[s] = [0, bytearray()]
        sel.register(s, selectors.EVENT_WRITE | selectors.EVENT_READ)
        started += 1

    deadline = time.monotonic() + a.timeout
    while done < a.conns and time.monotonic() < deadline:
        while started < a.conns and len(live) < a.parallel:
            start()
        for key, ev in sel.select(1.0):
            s = key.fileobj
            st = live[s]
            try:
                if ev & selectors.EVENT_WRITE and st[0] < a.size:
                    st[0] += s.send(payload[st[0]:st[0] + 65536])
                    if st[0] >= a.size:
                        s.shutdown(socket.SHUT_WR)
                        sel.modify(s, selectors.EVENT_READ)
                if ev & selectors.EVENT_READ:
                    d = s.recv(65536)
                    if d:
                        st[1] += d
                        continue
                    if bytes(st[1]) != payload:
                        bad += 1
                    done += 1
                    sel.unregister(s)
                    s.close()
                    del live[s]
            except OSError:
                bad += 1
                done += 1
                sel.unregister(s)
                s.close()
                del live[s]
    return {"done": done, "bad": bad, "conns": a.conns}


def serve_many(ls, count):
    """Echo server for many connections at once (selectors)."""
    sel = selectors.DefaultSelector()
    ls.setblocking(False)
    sel.register(ls, selectors.EVENT_READ)
    served = 0
    echoed = 0
    while served < count:
        for key, _ in sel.select(30):
            s = key.fileobj
            if s is ls:
                try:
                    c, _ = ls.accept()
                except BlockingIOError:
                    continue
                c.setblocking(True)
                sel.register(c, selectors.EVENT_READ)
                continue
            d = s.recv(65536)
            if d:
                s.sendall(d)
                echoed += len(d)
                continue
            sel.unregister(s)
            s.shutdown(socket.SHUT_WR)
            s.close()
            served += 1
    return {"served": served, "echoed": echoed}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("mode", choices=["listen", "connect"])
    p.add_argument("addr")
    p.add_argument("port", type=int)
    p.add_argument("role")
    p.add_argument("--bytes", type=int, default=0)
    p.add_argument("--pause-at", type=int)
    p.add_argument("--pause", type=float, default=0.0)
    p.add_argument("--pause-bytes", type=int)
    p.add_argument("--rate-log", action="store_true")
    p.add_argument("--conns", type=int, default=1)
    p.add_argument("--parallel", type=int, default=1)
    p.add_argument("--size", type=int, default=1024)
    p.add_argument("--count", type=int, default=1)
    p.add_argument("--timeout", type=float, default=120)
    a = p.parse_args()
    fam = socket.AF_INET6 if ":" in a.addr else socket.AF_INET
    if a.mode == "listen":
        ls = socket.socket(fam, socket.SOCK_STREAM)
        ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        ls.bind((a.addr, a.port))
        ls.listen(1024)
        print(f"ready {ls.getsockname()[1]}", flush=True)
        if a.role == "echo" and a.count > 1:
            r = serve_many(ls, a.count)
        else:
            s, _ = ls.accept()
            r = role(s, a)
    else:
        if a.role == "many":
            r = many(a, fam)
        else:
            s = socket.create_connection((a.addr, a.port), timeout=a.timeout)
            s.settimeout(a.timeout)
            r = role(s, a)
    print(json.dumps(r), flush=True)


if __name__ == "__main__":
    sys.exit(main())
