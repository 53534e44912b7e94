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
    the combined output logged.
"""
import json
import os
import socket
import stat
import subprocess
import time

import pytest

import conftest
from conftest import FERRY, hold_port, run, wait_for
from fwd_util import (MiB, guest_listening, guest_server, host_listening,
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
            s.sendall(b"{\"op\":\"version\"}\n")
        for s in conns:
            r = json.loads(read_line(s))
            refused += r.get("error") == "too many clients"
        assert refused == 100 - 64, refused
    finally:
        for s in conns:
            s.close()
    assert serving(sock)
    st = request(sock, {"op": "stats"})
    line = [l for l in st["lines"] if l.startswith("control")]
    assert line and " refused 36" in line[0], st["lines"]


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
