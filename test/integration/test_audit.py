"""Hostile guest, bounded ferry: floods that try to fill ferry's tables
must leave it responsive, and an ordinary connection must work after."""
import socket
import threading

import conftest
from conftest import wait_for
from fwd_util import fwd_stats

# Guest side: SYNs from a raw socket, each a new flow (source port and
# destination port vary), to a host listener whose accept queue is full:
# the host drops them, so every connect() ferry starts stays pending (and
# holds a flow and a socket) until ferry's connect timeout. Sent in
# chunks, each again when the tap's queue dropped some (tx_dropped).
FLOOD = r"""
import socket, struct, sys, time
n, dst, ports, src, dev = (int(sys.argv[1]), sys.argv[2],
                           [int(p) for p in sys.argv[3].split(",")],
                           sys.argv[4], sys.argv[5])

def csum(b):
    s = sum(struct.unpack("!%dH" % (len(b) // 2), b))
    while s >> 16:
        s = (s & 0xffff) + (s >> 16)
    return ~s & 0xffff

def syn(i):
    sport, dport = 1024 + i % 64000, ports[i // 64000]
    h = struct.pack("!HHIIBBHHH", sport, dport, i, 0, 5 << 4, 0x02, 65535, 0, 0)
    ph = socket.inet_aton(src) + socket.inet_aton(dst) + struct.pack("!BBH", 0, 6, len(h))
    return h[:16] + struct.pack("!H", csum(ph + h)) + h[18:]

def dropped():                       # tx drops of dev (/proc/net: our netns)
    with open("/proc/net/dev") as f:
        for line in f:
            name, _, v = line.partition(":")
            if name.strip() == dev:
                return int(v.split()[11])
    raise SystemExit("no " + dev)

r = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_TCP)
r.sendto(syn(n), (dst, 0))          # resolve the neighbour first
time.sleep(0.5)
for c in range(0, n, 256):
    for tries in range(50):
        d = dropped()
        for i in range(c, min(c + 256, n)):
            try:
                r.sendto(syn(i), (dst, 0))
            except OSError:
                pass
        if dropped() == d:
            break
        time.sleep(0.02)
print(n)
"""


def echo_server():
    """A host echo server on 127.0.0.1 (reached as the gateway)."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(64)

    def serve():
        while True:
            try:
                c, _ = srv.accept()
            except OSError:
                return
            with c:
                data = c.recv(100)
                c.sendall(data)

    threading.Thread(target=serve, daemon=True).start()
    return srv


def test_syn_flood_bounded_then_connection_works(ferry_ns):
    """70000 guest SYNs that the host leaves pending: ferry's flow table
    (and its fds) fill up, extra SYNs get a RST, ferry keeps running and,
    once its connect timeout frees the flows, a connection works again."""
    f = ferry_ns()
    srv = echo_server()
    port = srv.getsockname()[1]
    tarpits = []
    for _ in range(2):
        t = socket.socket()
        t.bind(("127.0.0.1", 0))
        t.listen(0)                 # never accepted: queue full at once
        tarpits.append(t)
    ports = ",".join(str(t.getsockname()[1]) for t in tarpits)
    guest_addr = f.guest(["sh", "-c", "ip -4 -o addr show scope global | "
                          "awk '{print $4}' | cut -d/ -f1 | head -1"]
                         ).stdout.strip()
    dev = f.guest(["sh", "-c", "ip -o link | awk -F': ' '$2 != \"lo\" "
                   "{print $2}' | cut -d@ -f1 | head -1"]).stdout.strip()
    assert guest_addr and dev, f.output()
    f.guest(["python3", "-c", FLOOD, "70000", conftest.GW4, ports,
             guest_addr, dev], timeout=300)
    assert f.proc.poll() is None, f.output()

    hello = ("import socket\n"
             f"s = socket.create_connection(('{conftest.GW4}', {port}), 5)\n"
             "s.sendall(b'ping'); print(s.recv(10).decode())\n")

    def connects():
        assert f.proc.poll() is None, f.output()
        g = f.guest(["python3", "-c", hello], timeout=30, check=False)
        return "ping" in g.stdout

    wait_for(connects, 90, "a connection after the flood", interval=1)
    srv.close()
    for t in tarpits:
        t.close()
    rc = f.stop()
    log = f.logpath.read_text(errors="replace")
    assert rc == 0 and "Sanitizer" not in log, log
    print(log)


HOLD_SERVER = r"""
import socket, sys, time
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("0.0.0.0", int(sys.argv[1])))
s.listen(1024)
held = []
print("ready", flush=True)
while True:
    c, _ = s.accept()
    held.append(c)
"""


def cpu_ticks(pid):
    with open(f"/proc/{pid}/stat") as fh:
        f = fh.read().rsplit(")", 1)[1].split()
    return int(f[11]) + int(f[12])      # utime + stime


def lowfd_ferry(ferry_ns, tmp_path, monkeypatch, nofile, args):
    """ferry_ns() whose ferry starts under `ulimit -n nofile`."""
    wrap = tmp_path / "ferry-lowfd"
    wrap.write_text(f"#!/bin/sh\nulimit -n {nofile}\n"
                    f"exec {conftest.FERRY} \"$@\"\n")
    wrap.chmod(0o755)
    monkeypatch.setattr(conftest, "FERRY", str(wrap))
    return ferry_ns(args=args)


def hold_server(f, port):
    """A guest server on port that accepts and holds every connection."""
    import subprocess
    srv = subprocess.Popen(["nsenter", "-t", str(f.guest_pid), "-U", "-n",
                            "--preserve-credentials", "python3", "-c",
                            HOLD_SERVER, str(port)],
                           stdout=subprocess.PIPE, text=True)
    assert srv.stdout.readline().strip() == "ready"
    return srv


def connect_many(port, n):
    """n non-blocking connections started to the host's port (not waited
    for: the caller polls for what happens to them)."""
    conns = []
    for _ in range(n):
        s = socket.socket()
        s.setblocking(False)
        s.connect_ex((conftest.HOST4, port))
        conns.append(s)
    return conns


def open_fds(pid):
    import os
    return len(os.listdir(f"/proc/{pid}/fd"))


def test_accept_without_fds_does_not_spin(ferry_ns):
    """ferry at its fd limit (lowered under it to one above its highest
    descriptor; a guest server holds the connections that fill the gaps)
    while connections wait on a forwarded port: accept() fails with
    EMFILE and the listener stays readable; ferry must refuse them through
    its spare fd (the clients are reset), not spin the loop."""
    import os
    import resource
    import time
    port = 40091
    f = ferry_ns(args=["-t", str(port), "-T", "none"])
    srv = hold_server(f, port)
    pid = f.proc.pid
    try:
        top = max(int(n) for n in os.listdir(f"/proc/{pid}/fd"))
        resource.prlimit(pid, resource.RLIMIT_NOFILE, (top + 1, top + 1))
        conns = connect_many(port, 120)

        was_reset = set()

        def reset(s):           # ECONNRESET is reported once
            try:
                if s in was_reset or s.recv(1) is None:
                    return True
            except BlockingIOError:
                return False
            except ConnectionResetError:
                was_reset.add(s)
                return True
            return False
        wait_for(lambda: sum(map(reset, conns)) >= 100, 30,
                 "waiting clients refused")
        t0 = cpu_ticks(pid)
        time.sleep(2)
        used = (cpu_ticks(pid) - t0) / os.sysconf("SC_CLK_TCK")
        assert f.proc.poll() is None, f.output()
        assert used < 0.3, f"ferry used {used:.2f} s of CPU in 2 s idle"
        for s in conns:
            s.close()
    finally:
        srv.kill()
        srv.wait()


def test_tcp_fd_budget_leaves_room(ferry_ns, tmp_path, monkeypatch):
    """ferry under `ulimit -n 64` with a guest server holding every
    forwarded connection: TCP stops at its budget (half the limit) and
    refuses the rest, so ferry never runs out of descriptors; its
    forwarding still answers afterwards."""
    port = 40092
    f = lowfd_ferry(ferry_ns, tmp_path, monkeypatch, 64,
                    ["-t", str(port), "-T", "none"])
    srv = hold_server(f, port)
    try:
        conns = connect_many(port, 120)
        wait_for(lambda: fwd_stats(f)["refused"] >= 60, 30,
                 "connections beyond the budget refused")
        st = fwd_stats(f)
        assert st["to_guest"] <= 32, st
        assert open_fds(f.proc.pid) <= 56, open_fds(f.proc.pid)
        assert f.proc.poll() is None, f.output()
        for s in conns:
            s.close()
    finally:
        srv.kill()
        srv.wait()
