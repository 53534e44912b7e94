"""The control socket (-c PATH), `ferry ctl` and the `pesto` link.

Forwards are added and deleted at run time and traffic goes through each
right after the reply (IPv4 and IPv6, -t, -u and -T); an established
connection outlives the deletion of its forward; bad requests (garbage, a
1 MiB line, an unknown op, a bad spec, a port in use) get error replies
and ferry keeps serving; 100 clients come and go; a client that never
reads is dropped; `ferry ctl flows` shows a live iperf3 transfer.

The callers' command lines, as their public code passes them (the shapes
test_pesto_callers uses):
  rootlesskit (pkg/port/pasta/pesto.go): "pesto --version" must exit 0;
    then "pesto -A --tcp-ports=0.0.0.0/8080:80 SOCKET" and
    "pesto -D --udp-ports=::/8080:80 SOCKET" (IPv6 unbracketed); only the
    exit status is read, the output is logged on failure.
  podman container-libs (common/libnetwork/pasta/pesto_linux.go):
    "pesto --add -t 0.0.0.0/8080:80 -t [::]/8080:80 -u ... SOCKET" and
    "pesto --delete ... SOCKET" (ranges 8080-8081:80-81); an add of a
    forward already there must succeed ("idempotent"); exit status read,
    the combined output logged. Since PR #1004 each forward names the
    container's address: "-t 0.0.0.0/8080:10.0.0.2/80 -t
    [::]/8080:fd00::2/80" (test_pesto_target_address).
"""
import json
import os
import re
import socket
import stat
import subprocess
import time

import pytest

import conftest
from conftest import FERRY, hold_port, run, wait_for
from fwd_util import (MiB, guest_argv, guest_listening, guest_server,
                      host_listening,
                      refused_or_reset, to_guest, to_host, wait_guest_port,
                      wait_host_port)

ADDRS = {"v4": "198.51.100.2", "v6": "2001:db8::2"}


def start(ferry_ns, tmp_path, args=(), auto=False):
    """ferry ns with a control socket and no forwards but args (auto:
    pasta's default, -t, -u and -U auto); returns (ferry, socket path)."""
    sock = str(tmp_path / "ctl.sock")
    none = [] if auto else ["-t", "none", "-u", "none", "-U", "none"]
    f = ferry_ns(args=["-c", sock, "-T", "none"] + none + list(args))
    wait_for(lambda: os.path.exists(sock), 10, "control socket")
    return f, sock


def ctl(sock, *args, check=True):
    """ferry ctl SOCK ARGS...: the completed process."""
    return run([FERRY, "ctl", sock] + list(args), check=check)


def request(sock, obj):
    """One raw request, its reply as a dict."""
    with socket.socket(socket.AF_UNIX) as s:
        s.connect(sock)                 # blocking: waits for the backlog
        s.settimeout(10 * conftest.SLOW)
        line = obj if isinstance(obj, (bytes, str)) else json.dumps(obj)
        s.sendall((line if isinstance(line, bytes) else line.encode())
                  + b"\n")
        return json.loads(read_line(s))


def read_line(s):
    buf = b""
    while not buf.endswith(b"\n"):
        d = s.recv(65536)
        if not d:
            break
        buf += d
    return buf


def serving(sock):
    """ferry still answers on its control socket."""
    r = request(sock, {"op": "version", "id": 7})
    assert r["ok"] and r["id"] == 7, r
    return True


def test_ctl_socket_version_forwards(ferry_ns, tmp_path):
    """The socket is 0600; version, forwards and log-level answer."""
    f, sock = start(ferry_ns, tmp_path, ["-t", "40201:40301,40202"])
    assert stat.S_IMODE(os.stat(sock).st_mode) == 0o600
    assert stat.S_ISSOCK(os.stat(sock).st_mode)
    out = ctl(sock, "version").stdout.strip()
    assert out == run([FERRY, "--version"]).stdout.split()[1], out
    fw = ctl(sock, "forwards").stdout
    assert "-t 40201:40301,40202" in fw, fw
    r = request(sock, {"op": "forwards"})
    assert r["tcp"] == ["40201:40301", "40202"] and r["udp"] == [], r
    assert ctl(sock, "log-level", "debug").stdout.strip() == "debug"
    assert ctl(sock, "log-level").stdout.strip() == "debug"
    wait_for(lambda: "log level debug (was info)" in f.output(), 5,
             "the level change logged")
    bad = ctl(sock, "log-level", "loud", check=False)
    assert bad.returncode == 1 and "unknown level" in bad.stderr, bad
    assert len(bad.stderr.strip().splitlines()) == 1, bad.stderr


@pytest.mark.parametrize("fam,auto", [("v4", False), ("v6", False),
                                      ("v4", True)])
def test_ctl_add_delete_tcp(ferry_ns, tmp_path, fam, auto):
    """add -t, traffic at once, del: the port closes, new connections
    are refused; also beside -t auto (rootlesskit's pasta runs so)."""
    f, sock = start(ferry_ns, tmp_path, auto=auto)
    assert 40210 not in host_listening()
    r = ctl(sock, "add", "-t", "40210:40310")
    assert r.stdout == "", r.stdout
    to_guest(f, ADDRS[fam], 40210, 40310, "up", MiB)    # no wait needed
    to_guest(f, ADDRS[fam], 40210, 40310, "down", MiB)
    assert "40210:40310" in ctl(sock, "forwards").stdout
    ctl(sock, "del", "-t", "40210")
    assert 40210 not in host_listening()
    assert refused_or_reset(ADDRS[fam], 40210)
    assert ("-t auto" if auto else "-t none") in ctl(sock, "forwards").stdout
    again = ctl(sock, "del", "-t", "40210", check=False)
    assert again.returncode == 1, again
    assert "port 40210 is not forwarded" in again.stderr, again.stderr


def test_ctl_established_survives_delete(ferry_ns, tmp_path):
    """A connection through a forward goes on after the forward is
    deleted; a new one is refused."""
    f, sock = start(ferry_ns, tmp_path)
    ctl(sock, "add", "-t", "40215")
    srv = guest_server(f, "::", 40215, "recv")
    try:
        c = socket.create_connection((ADDRS["v4"], 40215), 10)
        c.sendall(b"a" * MiB)
        ctl(sock, "del", "-t", "40215")
        assert 40215 not in host_listening()
        assert refused_or_reset(ADDRS["v4"], 40215)
        c.sendall(b"b" * MiB)
        c.close()
        res = srv.result(60)
        assert res["bytes"] == 2 * MiB, res
    finally:
        srv.kill()


@pytest.mark.parametrize("fam", ["v4", "v6"])
def test_ctl_add_udp(ferry_ns, tmp_path, fam):
    """add -u: a datagram reaches the guest right after the reply."""
    f, sock = start(ferry_ns, tmp_path)
    ctl(sock, "add", "-u", "40220")
    addr = "0.0.0.0" if fam == "v4" else "::"
    code = ("import socket\n"
            f"s=socket.socket(socket.AF_INET{'6' if fam == 'v6' else ''},"
            "socket.SOCK_DGRAM)\n"
            f"s.bind(({addr!r},40220)); print('ready', flush=True)\n"
            "s.settimeout(20); d,a=s.recvfrom(100); print(d.decode())\n")
    p = subprocess.Popen(["nsenter", "-t", str(f.guest_pid), "-U", "-n",
                          "--preserve-credentials", "python3", "-c", code],
                         stdout=subprocess.PIPE, text=True)
    try:
        assert p.stdout.readline().strip() == "ready"
        s = socket.socket(socket.AF_INET6 if fam == "v6" else socket.AF_INET,
                          socket.SOCK_DGRAM)

        def got():
            s.sendto(b"ping", (ADDRS[fam], 40220))
            return p.poll() is not None
        wait_for(got, 20, "datagram in the guest", interval=0.2)
        assert p.stdout.read().strip() == "ping"
    finally:
        p.kill()
        p.wait()
    ctl(sock, "del", "-u", "40220")
    assert request(sock, {"op": "forwards"})["udp"] == []


def test_ctl_add_tcp_ns(ferry_ns, tmp_path):
    """add -T: the guest reaches a host server through a port opened in
    its namespace at run time."""
    f, sock = start(ferry_ns, tmp_path)
    ctl(sock, "add", "-T", "40225:40325")
    assert 40225 in guest_listening(f)
    to_host(f, "127.0.0.1", 40225, 40325, "up", MiB)
    ctl(sock, "del", "-T", "40225")
    assert 40225 not in guest_listening(f)


def test_ctl_bad_requests(ferry_ns, tmp_path):
    """Errors, each a reply, and ferry serving after each; a failed add
    applies nothing."""
    f, sock = start(ferry_ns, tmp_path)
    for line in (b"garbage", b"{\"op\":", b"[1,2]", b"{\"op\":\"x\"}",
                 b"{\"op\":\"add\"}", b"{\"op\":\"add\",\"tcp\":\"0\"}",
                 b"{\"op\":\"add\",\"tcp\":\"all\"}",
                 b"{\"op\":\"add\",\"tcp\":{\"a\":1}}", b"\xff\xfe{}"):
        r = request(sock, line)
        assert r["ok"] is False and r["error"], (line, r)
        assert serving(sock)
    assert request(sock, {"op": "nope"})["error"] == "unknown op"
    # 1 MiB on one line: an error, the client closed, ferry fine.
    with socket.socket(socket.AF_UNIX) as s:
        s.connect(sock)
        s.settimeout(10)
        try:
            s.sendall(b"x" * (1 << 20) + b"\n")
        except (BrokenPipeError, ConnectionResetError):
            pass
        r = json.loads(read_line(s))
        assert "longer than 65536" in r["error"], r
        try:
            assert s.recv(10) == b""           # closed after the reply
        except ConnectionResetError:
            pass                               # ... with input unread
    assert serving(sock)
    # A port in use: its number and errno; the other port not opened.
    held = hold_port(40231)
    try:
        r = request(sock, {"op": "add", "tcp": ["40230", "40231"]})
        assert r["ok"] is False and r["port"] == 40231, r
        assert r["errno_name"] == "EADDRINUSE", r
        assert 40230 not in host_listening(), "half of a failed add applied"
        assert request(sock, {"op": "forwards"})["tcp"] == []
        out = ctl(sock, "add", "-t", "40230", "-u", "40231", "-t", "40231",
                  check=False)
        assert out.returncode == 1 and "40231" in out.stderr, out
    finally:
        for s in held:
            s.close()
    assert serving(sock)
    # A conflicting target: refused, the first forward unchanged.
    ctl(sock, "add", "-t", "40232:40332")
    ctl(sock, "add", "-t", "40232:40332")          # the same: no-op
    r = request(sock, {"op": "add", "tcp": "40232:40333"})
    assert not r["ok"] and "forwarded already" in r["error"], r
    assert request(sock, {"op": "forwards"})["tcp"] == ["40232:40332"]
    assert f.proc.poll() is None


def test_ctl_socket_removed_at_exit(ferry_ns, tmp_path):
    """The control socket's file goes when ferry exits, from inside the
    sandbox (a directory fd kept from start-up, Landlock): at the end of
    its command and on SIGTERM in namespace mode, on SIGTERM in VM
    mode."""
    from vmguest import FerryVM
    f, sock = start(ferry_ns, tmp_path)
    assert serving(sock)
    f.stop()
    assert not os.path.exists(sock), "left behind after SIGTERM"
    # the command's end: it sees the socket, ferry exits with its status
    sock2 = str(tmp_path / "ctl2.sock")
    f2 = ferry_ns(args=["-c", sock2], cmd=["sh", "-c", f"test -S {sock2}"
                                           " && exit 3 || exit 4"])
    assert f2.proc.wait(timeout=20 * conftest.SLOW) == 3, f2.output()
    assert not os.path.exists(sock2), "left behind at the command's end"
    # a file put at the path since (another ferry's socket) is not ferry's
    f4, sock4 = start(ferry_ns, tmp_path)
    assert serving(sock4)
    os.rename(sock4, sock4 + ".old")
    open(sock4, "w").close()
    f4.stop()
    assert os.path.exists(sock4), "removed a file that was not ferry's"
    sock3 = str(tmp_path / "ctl3.sock")
    v = FerryVM(tmp_path, ["-c", sock3])
    try:
        wait_for(lambda: os.path.exists(sock3), 10, "the control socket")
        assert serving(sock3)
    finally:
        v.stop()
    assert not os.path.exists(sock3) or conftest.VALGRIND, \
        "left behind in VM mode"


def test_repair_socket_removed_at_exit_if_own(tmp_path):
    """VM mode with --vhost-user: the repair helper's socket beside -s
    (PATH.repair) goes at exit with it, through the directory fd the
    sandbox keeps, but only while it is the file ferry bound: one put at
    that path since stays."""
    from vmguest import FerryVM
    for replace in (False, True):
        d = tmp_path / ("replaced" if replace else "own")
        d.mkdir()
        v = FerryVM(d, ["--vhost-user"])
        rep = v.sock + ".repair"
        try:
            wait_for(lambda: os.path.exists(rep), 10, "the repair socket")
            if replace:
                os.rename(rep, rep + ".old")
                open(rep, "w").close()
        finally:
            v.stop()
        assert not os.path.exists(v.sock) or conftest.VALGRIND, v.output()
        if replace:
            assert os.path.exists(rep), "removed a file that was not ferry's"
            assert os.path.exists(rep + ".old")  # moved: not at its path
        else:
            assert not os.path.exists(rep) or conftest.VALGRIND, \
                "the repair socket left behind\n" + v.output()


def test_ctl_many_clients(ferry_ns, tmp_path):
    """100 clients one after another, then 100 at once: beyond the cap
    (64) a client gets one error line; all served once others left."""
    f, sock = start(ferry_ns, tmp_path)
    for _ in range(100):
        assert serving(sock)
    conns = []
    try:
        for _ in range(100):
            s = socket.socket(socket.AF_UNIX)
            s.connect(sock)
            s.settimeout(10)
            conns.append(s)
        refused = 0
        for s in conns:
            try:
                s.sendall(b"{\"op\":\"version\"}\n")
            except (BrokenPipeError, ConnectionResetError):
                pass            # refused and closed already: its line waits
        for s in conns:
            r = json.loads(read_line(s))
            refused += r.get("error") == "too many clients"
        assert refused == 100 - 64, refused
    finally:
        for s in conns:
            s.close()
    # ferry learns of the 100 closes on its next loop turns: until then a
    # new client may still be over the cap; it is served once they are seen
    early = []                  # polls refused before ferry saw them go

    def served():
        r = request(sock, {"op": "version", "id": 7})
        if r.get("error") == "too many clients":
            early.append(r)
        return r.get("ok")
    wait_for(served, 10, "a client served once the 100 left")
    assert serving(sock)
    st = request(sock, {"op": "stats"})
    line = [l for l in st["lines"] if l.startswith("control")]
    assert line and f" refused {36 + len(early)}" in line[0], st["lines"]


def test_ctl_client_never_reads(ferry_ns, tmp_path):
    """A client that sends requests and reads no reply is dropped; the
    others are served meanwhile."""
    f, sock = start(ferry_ns, tmp_path, ["-t", "40240-40999"])
    s = socket.socket(socket.AF_UNIX)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.connect(sock)
    s.setblocking(False)
    req = b"{\"op\":\"stats\"}\n" * 64
    dropped = False
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not dropped:
        try:
            s.send(req)
        except (BrokenPipeError, ConnectionResetError):
            dropped = True
        except BlockingIOError:
            time.sleep(0.01)
        assert serving(sock)
    s.close()
    assert dropped, "a client not reading was never dropped"
    st = request(sock, {"op": "stats"})
    assert any(l.startswith("control") and "dropped 1" in l
               for l in st["lines"]), st["lines"]


def test_pesto_callers(ferry_ns, tmp_path):
    """pesto through a link, with the callers' argument shapes (see the
    top of this file): exit status 0 on success, 1 and one line else."""
    pesto = str(tmp_path / "pesto")
    os.symlink(FERRY, pesto)
    f, sock = start(ferry_ns, tmp_path)
    v = run([pesto, "--version"])
    assert v.returncode == 0 and v.stdout.strip(), v
    # rootlesskit
    run([pesto, "-A", "--tcp-ports=0.0.0.0/40250:40350", sock])
    to_guest(f, ADDRS["v4"], 40250, 40350, "up", MiB)
    run([pesto, "-A", "--udp-ports=::/40251:40351", sock])
    run([pesto, "-D", "--udp-ports=::/40251:40351", sock])
    run([pesto, "-D", "--tcp-ports=0.0.0.0/40250:40350", sock])
    assert 40250 not in host_listening()
    # container-libs: both families, a range, TCP and UDP in one call
    args = ["-t", "0.0.0.0/40252-40253:40352-40353",
            "-t", "[::]/40252-40253:40352-40353",
            "-u", "0.0.0.0/40254:40354", "-u", "[::]/40254:40354"]
    run([pesto, "--add"] + args + [sock])
    run([pesto, "--add"] + args + [sock])            # idempotent
    for fam in ("v4", "v6"):
        to_guest(f, ADDRS[fam], 40253, 40353, "down", MiB)
    shown = run([pesto, sock]).stdout
    assert "0.0.0.0/40252-40253:40352-40353" in shown, shown
    assert "::/40252-40253:40352-40353" in shown, shown
    run([pesto, "--delete"] + args + [sock])
    assert not {40252, 40253} & host_listening()
    # failures: exit 1, one line
    held = hold_port(40255)
    try:
        r = run([pesto, "--add", "-t", "0.0.0.0/40255:80", sock], check=False)
    finally:
        for s in held:
            s.close()
    assert r.returncode == 1 and "40255" in r.stderr, r
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr
    r = run([pesto, "--add", "-t", "40256", str(tmp_path / "nosock")],
            check=False)
    assert r.returncode == 1 and "cannot connect" in r.stderr, r


TARGET4, TARGET6 = "203.0.113.7", "2001:db8:7::7"


def test_pesto_target_address(ferry_ns, tmp_path):
    """Newer podman (container-libs PR #1004, pesto_linux.go
    portMappingsToPestoArgs()) names the container's address per
    forward: "pesto --add -t 0.0.0.0/8080:10.0.0.2/80 -t
    [::]/8080:fd00::2/80 SOCKET" (host addresses bracketed, container
    ones never; ranges "0.0.0.0/8000-8004:10.0.0.2/80-84"). A server
    bound only to that guest address is reached through it, TCP and UDP,
    both families (and -T to a host address); a plain forward to the
    same port is not; bad forms
    fail with one line naming the option."""
    pesto = str(tmp_path / "pesto")
    os.symlink(FERRY, pesto)
    f, sock = start(ferry_ns, tmp_path)
    f.guest(["ip", "addr", "add", TARGET4 + "/32", "dev", "lo"])
    f.guest(["ip", "-6", "addr", "add", TARGET6 + "/128", "dev", "lo"])
    args = ["-t", f"0.0.0.0/40301:{TARGET4}/40300",
            "-t", f"[::]/40301:{TARGET6}/40300",
            "-t", f"0.0.0.0/40305-40306:{TARGET4}/40305-40306",
            "-u", f"0.0.0.0/40301:{TARGET4}/40300"]
    run([pesto, "--add"] + args + [sock])
    run([pesto, "--add"] + args + [sock])            # idempotent
    shown = run([pesto, sock]).stdout
    for item in (f"0.0.0.0/40301:{TARGET4}/40300",
                 f"::/40301:{TARGET6}/40300",
                 f"0.0.0.0/40305-40306:{TARGET4}/40305-40306"):
        assert item in shown, shown
    to_guest(f, ADDRS["v4"], 40301, 40300, "up", MiB, guest_addr=TARGET4)
    to_guest(f, ADDRS["v6"], 40301, 40300, "down", MiB, guest_addr=TARGET6)
    to_guest(f, ADDRS["v4"], 40306, 40306, "up", MiB, guest_addr=TARGET4)
    # UDP: the reply comes from the target address (udp.c takes it on
    # the flow the forward made)
    code = ("import socket\n"
            "s=socket.socket(socket.AF_INET,socket.SOCK_DGRAM)\n"
            f"s.bind(({TARGET4!r},40300))\n"
            "print('ready',flush=True)\n"
            "d,a=s.recvfrom(100); s.sendto(d[::-1],a)\n")
    srv = subprocess.Popen(guest_argv(f, ["python3", "-c", code]),
                           stdout=subprocess.PIPE, text=True)
    try:
        assert srv.stdout.readline().strip() == "ready"
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as u:
            u.settimeout(10 * conftest.SLOW)
            u.sendto(b"ping", (ADDRS["v4"], 40301))
            assert u.recvfrom(100)[0] == b"gnip"
    finally:
        srv.kill()
        srv.wait()
    # -T: to a host address instead of the host's loopback
    ctl(sock, "add", "-T", f"127.0.0.1/40310:{ADDRS['v4']}/40311")
    to_host(f, "127.0.0.1", 40310, 40311, "up", MiB, host_addr=ADDRS["v4"])
    # a forward without the target address goes to the guest's own one
    ctl(sock, "add", "-t", "40302:40300")
    srv = guest_server(f, TARGET4, 40300, "recv")
    try:
        assert refused_or_reset(ADDRS["v4"], 40302)
    finally:
        srv.kill()
    run([pesto, "--delete"] + args + [sock])
    assert not {40301, 40305, 40306} & host_listening()
    # bad forms: exit 1, one line naming the option
    for bad, part in ((f"40303:{TARGET4}/40300", "needs a bind address"),
                      (f"0.0.0.0/40303:{TARGET6}/40300", "another family"),
                      ("0.0.0.0/40303:203.0.113.300/40300",
                       "bad target address")):
        r = run([pesto, "--add", "-t", bad, sock], check=False)
        assert r.returncode == 1 and "-t" in r.stderr and part in r.stderr, r
        assert len(r.stderr.strip().splitlines()) == 1, r.stderr
        r = run([FERRY, "ns", "-t", bad, "--", "true"], check=False)
        assert r.returncode != 0 and "-t" in r.stderr and part in r.stderr, r
        assert len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert serving(sock)


def test_ctl_flows_iperf3(ferry_ns, tmp_path):
    """ferry ctl flows during an iperf3 transfer through a forward: a
    TCP row with the guest's window, queues, RTT and byte counts."""
    conftest.require("iperf3")
    f, sock = start(ferry_ns, tmp_path, ["-t", "40260"])
    srv = subprocess.Popen(["nsenter", "-t", str(f.guest_pid), "-U", "-n",
                            "--preserve-credentials", "iperf3", "-s", "-1",
                            "-p", "40260"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_guest_port(f, 40260, fams=("6",))   # iperf3: [::], both
        cli = subprocess.Popen(["iperf3", "-c", ADDRS["v4"], "-p", "40260",
                                "-t", "4"], stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True)

        def data_flow():
            r = request(sock, {"op": "flows"})
            fl = [x for x in r["flows"] if x["proto"] == "tcp" and
                  x.get("guest", "").endswith(":40260") and
                  x.get("bytes_from_guest", 0) + x.get("bytes_to_guest", 0)
                  > MiB]
            return fl
        fl = wait_for(data_flow, 15, "a busy iperf3 flow")
        table = ctl(sock, "flows").stdout
        print(table)
        x = fl[0]
        assert x["state"] == "established" and x["forwarded"], x
        assert x["wnd_from_guest"] > 0 and "sock_inq" in x, x
        assert x["rtt_us"] > 0 and "retrans" in x and x["age_ms"] >= 0, x
        assert x["host_local"].endswith(":40260"), x
        assert "established" in table and ":40260" in table, table
        js = json.loads(ctl(sock, "flows", "--json").stdout)
        assert js["ok"] and js["count"] >= 1, js
        cli.wait(60)
    finally:
        srv.kill()
        srv.wait()


def syn_to(port):
    """Predicate: a TCP SYN frame to port (IPv4 or IPv6)."""
    def pred(fr):
        et = fr[12:14]
        if et == b"\x08\x00" and fr[23] == 6:
            l4 = fr[14 + (fr[14] & 15) * 4:]
        elif et == b"\x86\xdd" and fr[20] == 6:
            l4 = fr[54:]
        else:
            return False
        return (len(l4) >= 14 and int.from_bytes(l4[2:4], "big") == port
                and l4[13] & 0x02 and not l4[13] & 0x10)
    return pred


@pytest.mark.parametrize("fam", ["v4", "v6"])
def test_ctl_vm_mode_add_delete(tmp_path, fam):
    """VM mode: a -t forward added at run time sends the guest (a qemu
    stand-in on the stream socket) a SYN for the next host client at
    once; deleted, the port closes."""
    from vmguest import FerryVM, StreamClient, arp_request, is_arp_reply
    sock = str(tmp_path / "ctl.sock")
    f = FerryVM(tmp_path, ["-c", sock])
    try:
        wait_for(lambda: os.path.exists(sock) and os.path.exists(f.sock),
                 10, "the sockets")
        g = StreamClient(f.sock)
        g.send_frame(arp_request(conftest.GW4))     # ferry learns the MAC
        g.wait_frame(is_arp_reply(conftest.GW4), 5, "ARP reply")
        assert request(sock, {"op": "version"})["mode"] == "vm"
        assert "tcp_ns" not in request(sock, {"op": "forwards"})
        r = request(sock, {"op": "add", "tcp_ns": "40270"})
        assert not r["ok"] and "only in namespace mode" in r["error"], r
        ctl(sock, "add", "-t", "40270:40370")
        c = socket.create_connection((ADDRS[fam], 40270), 10)
        try:
            g.wait_frame(syn_to(40370), 10, "SYN to the guest")
            flows = request(sock, {"op": "flows"})["flows"]
            assert any(x.get("state") == "syn-sent" and x["forwarded"]
                       for x in flows), flows
        finally:
            c.close()
        ctl(sock, "del", "-t", "40270")
        assert 40270 not in host_listening()
        assert refused_or_reset(ADDRS[fam], 40270)
    finally:
        f.stop()


def test_debug_log_flow_lines_and_size(ferry_ns, tmp_path):
    """--debug: each flow's open (both ends, who opened it) and close
    (how, bytes each way); the log's size for a fixed workload (20
    forwarded connections, 64 KiB each way) is printed for the record."""
    log = tmp_path / "debug.log"
    f, sock = start(ferry_ns, tmp_path, ["-t", "40280", "--debug", "-l",
                                         str(log)])
    srv = guest_server(f, "::", 40280, "echo", "--count", "20")
    try:
        for _ in range(20):
            with socket.create_connection((ADDRS["v4"], 40280), 10) as c:
                c.sendall(b"x" * 65536)
                c.shutdown(socket.SHUT_WR)
                got = 0
                while got < 65536:
                    d = c.recv(65536)
                    assert d, got
                    got += len(d)
    finally:
        srv.kill()

    def closed():
        t = log.read_text(errors="replace")
        return t if t.count("tcp closed") + t.count("tcp reset") >= 20 \
            else None
    text = wait_for(closed, 20, "20 close lines")
    opens = [l for l in text.splitlines() if "tcp open" in l]
    assert len(opens) >= 20, text[-2000:]
    assert any("-> 198.51.100.1:" in l or ":40280 ->" in l for l in opens)
    assert all("by a host client (a -t forward)" in l for l in opens), opens
    closes = [l for l in text.splitlines() if "tcp closed" in l]
    # from guest: what the host peer acknowledged (our FIN may be in it)
    assert any(re.search(r"from guest 6553[67] bytes, to guest 65536 bytes",
                         l) for l in closes), closes[:3]
    print(f"debug log for 20 forwarded connections of 64 KiB each way: "
          f"{len(text.encode())} bytes, {len(text.splitlines())} lines")


def flow_lines(text, key):
    """The debug lines of the flow whose open line has key, in order."""
    m = re.search(r"flow (\d+): tcp open [^\n]*" + re.escape(key), text)
    assert m, text[-3000:]
    start = text.index(m.group(0))
    lines, pre = [], f"flow {m.group(1)}: "
    for line in text[start:].splitlines():
        if pre in line:
            lines.append(line.split(pre, 1)[1])
            if line.split(pre, 1)[1].startswith(("tcp closed", "tcp reset")):
                break
    return lines


def in_order(lines, wanted):
    """Each of wanted (regular expressions) matches a line, in order."""
    i = 0
    for w in wanted:
        while i < len(lines) and not re.search(w, lines[i]):
            i += 1
        assert i < len(lines), f"no {w!r} (in order) in:\n" + \
            "\n".join(lines)
        i += 1


def test_debug_log_tcp_states_and_resets(ferry_ns, tmp_path):
    """--debug: one line per TCP state change between a flow's open and
    close, in order, with what caused it; a reset says its cause (the
    guest's RST; a host connect() that failed, with the error)."""
    log = tmp_path / "states.log"
    f, sock = start(ferry_ns, tmp_path, ["-t", "40295-40296", "--debug",
                                         "-l", str(log)])
    echo = guest_server(f, "::", 40295, "echo")
    rst = guest_server(f, "::", 40296, "rst")
    with socket.socket() as free:       # a port nothing listens on
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]
    try:
        with socket.create_connection((ADDRS["v4"], 40295), 10) as c:
            me = c.getsockname()[1]
            c.sendall(b"x" * 1000)
            got = b""
            while len(got) < 1000:      # established end to end
                got += c.recv(65536)
            c.shutdown(socket.SHUT_WR)  # then the host's EOF
            assert c.recv(10) == b""
        with socket.create_connection((ADDRS["v4"], 40296), 10) as c:
            rme = c.getsockname()[1]
            c.sendall(b"x")
            with pytest.raises(ConnectionResetError):
                c.recv(10)
        f.guest(["python3", "-c", "import socket\ntry:\n socket."
                 f"create_connection(('198.51.100.1',{port}),5)\n"
                 "except OSError: pass"])
    finally:
        echo.kill()
        rst.kill()

    def done():
        t = log.read_text(errors="replace")
        return t if t.count("tcp reset (") >= 2 and \
            "tcp closed in time-wait" in t else None
    try:
        text = wait_for(done, 20, "the flows' last lines")
    except AssertionError:
        print(log.read_text(errors="replace")[-4000:])
        raise
    life = flow_lines(text, f"198.51.100.1:{me} by a host client")
    in_order(life, [r"^tcp syn-sent -> established: the guest's SYN-ACK$",
                    r"^tcp established: host EOF$",
                    r"^tcp established -> fin-wait-1: our FIN",
                    r"^tcp fin-wait-1 -> fin-wait-2: the guest's ACK of our",
                    r"^tcp fin-wait-2 -> time-wait: the guest's FIN$",
                    r"^tcp time-wait: the guest's FIN passed on",
                    r"^tcp closed in time-wait after"])
    assert len(life) == 8, life         # open, six steps, close
    reset = flow_lines(text, f"198.51.100.1:{rme} by a host client")
    assert reset[-1].startswith("tcp reset (the guest's RST) in established"),\
        reset
    refused = flow_lines(text, f":{port} by the guest")
    assert not any("host EOF" in l for l in refused), refused   # no FIN came
    assert re.match(r"tcp reset \(host connect\(\) failed\) in connecting"
                    r".*socket error: Connection refused", refused[-1]), \
        refused


def test_debug_log_flood_rotation(ferry_ns, tmp_path):
    """A flood of flows with --debug and --log-size 64k: the file stays
    within the bound, keeps the newest lines with sorted timestamps, and
    says what the rate limit held back."""
    log = tmp_path / "flood.log"
    f, sock = start(ferry_ns, tmp_path, ["-t", "40285", "--debug", "-l",
                                         str(log), "--log-size", "64k"])
    srv = guest_server(f, "::", 40285, "echo", "--count", "100000")
    code = ("import socket,sys\n"
            "for i in range(int(sys.argv[1])):\n"
            " s=socket.create_connection(('198.51.100.2',40285),10)\n"
            " s.sendall(b'x'); s.shutdown(socket.SHUT_WR); s.recv(10); "
            "s.close()\n")
    try:
        run(["python3", "-c", code, "1500"], timeout=300)
        # the newest: one more connection after the flood
        with socket.create_connection((ADDRS["v4"], 40285), 10) as c:
            port = c.getsockname()[1]
            c.sendall(b"y")
            c.shutdown(socket.SHUT_WR)
            c.recv(10)
    finally:
        srv.kill()
    want = f"198.51.100.1:{port}"
    text = wait_for(lambda: (lambda t: t if want in t else None)(
        log.read_text(errors="replace")), 20, "the last flow's lines")
    assert log.stat().st_size <= 64 * 1024, log.stat().st_size
    lines = text.splitlines()
    assert lines[0].startswith("ferry ") and str(log) in lines[0], lines[0]
    stamps = [float(l.split(":", 1)[0]) for l in lines[1:] if l[:1].isdigit()]
    assert stamps == sorted(stamps) and len(stamps) > 100, stamps[:5]
    assert "tcp open" in text and "tcp closed" in text
    st = request(sock, {"op": "stats"})
    assert f.proc.poll() is None and st["ok"]


def test_trace_segments_and_runtime_level(ferry_ns, tmp_path):
    """log-level trace at run time: a line per TCP segment from the
    guest; back to info: none."""
    log = tmp_path / "trace.log"
    f, sock = start(ferry_ns, tmp_path, ["-t", "40290", "-l", str(log)])
    srv = guest_server(f, "::", 40290, "echo", "--count", "2")
    try:
        ctl(sock, "log-level", "trace")
        with socket.create_connection((ADDRS["v4"], 40290), 10) as c:
            c.sendall(b"z" * 1000)
            c.shutdown(socket.SHUT_WR)
            c.recv(2000)
        seg = re.compile(r"trace: tcp from guest 198\.51\.100\.2:40290 -> "
                         r"198\.51\.100\.1:\d+ S\. seq \d+ ack \d+ win \d+ "
                         r"len 0")
        wait_for(lambda: seg.search(log.read_text()), 10, "a SYN-ACK line")
        ctl(sock, "log-level", "info")
        n = log.read_text().count("tcp from guest")
        with socket.create_connection((ADDRS["v4"], 40290), 10) as c:
            c.sendall(b"z")
            c.shutdown(socket.SHUT_WR)
            c.recv(10)
        assert log.read_text().count("tcp from guest") == n
    finally:
        srv.kill()
