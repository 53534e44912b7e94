"""TCP port forwarding end to end (-t host -> guest, -T guest -> host).

A client on the sandbox host connects to the host's own address
(198.51.100.2 / 2001:db8::2: through the guest link, the guest sees the
gateway as the client) or to its loopback (127.0.0.1 / ::1: spliced to
the namespace's loopback) and reaches a server inside the guest;
content is compared with SHA-256 both ways. Ranges, ":target"
translation, "~" exclusions, bind addresses and interfaces, "auto"
detection of servers started later, and -T. Sizes are small (8 MiB):
bulk throughput is test_tcp.py's and test_tcp_splice.py's business.
"""
import os
import subprocess

import pytest

import conftest
from conftest import hold_port
from fwd_util import (MiB, client, exchange, fwd_stats, guest_listening,
                      guest_server, host_listening, host_server,
                      refused_or_reset, roles, to_guest, to_host,
                      wait_guest_port, wait_host_port)
from tcp_util import PY, guest_argv

SIZE = 8 * MiB
ADDRS = {"v4": "198.51.100.2", "v6": "2001:db8::2",
         "lo4": "127.0.0.1", "lo6": "::1"}


@pytest.mark.parametrize("direction", ["up", "down"])
@pytest.mark.parametrize("via", list(ADDRS))
def test_fwd_content(ferry_ns, via, direction):
    """-t 40001: each address family, through the tap and spliced."""
    f = ferry_ns(args=["-t", "40001", "-T", "none"])
    wait_host_port(40001)
    to_guest(f, ADDRS[via], 40001, 40001, direction, SIZE)
    st = fwd_stats(f)
    assert st["accepted"] == 1, st
    if via.startswith("lo"):
        assert st["spliced"] == 1 and st["to_guest"] == 0, st
    else:
        assert st["to_guest"] == 1 and st["spliced"] == 0, st


@pytest.mark.parametrize("fam", ["v4", "v6"])
def test_fwd_client_address_seen_by_guest(ferry_ns, fam):
    """A client using the host's own address (which the guest shares)
    appears in the guest as the gateway (IPv6: the host's, 2001:db8::1,
    copied as pasta does)."""
    f = ferry_ns(args=["-t", "40002", "-T", "none"])
    wait_host_port(40002)
    srv = guest_server(f, "::", 40002, "recv")
    cli = client([], ADDRS[fam], 40002, "hold")
    try:
        def peer():
            out = f.guest(["ss", "-Htn", "state", "established"]).stdout
            return out if ":40002" in out else None
        out = conftest.wait_for(peer, 10, "established connection in guest")
        gw = conftest.GW4 if fam == "v4" else conftest.GW6
        assert gw in out.split()[-1], out      # the peer column
    finally:
        cli.kill()
        srv.kill()


@pytest.mark.parametrize("fam", ["v4", "v6"])
def test_fwd_range_target_exclusion(ferry_ns, fam):
    """-t 40010-40013:40110-40113,~40012: a range translated to other
    guest ports, one excluded (nothing listens for it on the host)."""
    f = ferry_ns(args=["-t", "40010-40013:40110-40113,~40012", "-T", "none"])
    for p in (40010, 40011, 40013):
        wait_host_port(p)
    assert 40012 not in host_listening()
    addr = ADDRS[fam]
    for p in (40010, 40013):
        to_guest(f, addr, p, p + 100, "down", MiB)
    to_guest(f, addr, 40011, 40111, "up", MiB)
    # The excluded port is not forwarded even though the guest listens.
    srv = guest_server(f, "::", 40112, "hold")
    try:
        assert refused_or_reset(addr, 40012)
    finally:
        srv.kill()


def test_fwd_guest_not_listening_resets(ferry_ns):
    """A forwarded port without a guest server: the client is reset."""
    f = ferry_ns(args=["-t", "40020", "-T", "none"])
    wait_host_port(40020)
    assert refused_or_reset("198.51.100.2", 40020)
    assert refused_or_reset("127.0.0.1", 40020)
    st = fwd_stats(f)
    assert st["accepted"] == 2, st


def test_fwd_bind_address_and_interface(ferry_ns):
    """-t 127.0.0.1/40030 listens on IPv4 loopback only; -t %lo/40031 is
    bound to the loopback device: local clients reach it, and the port
    is not open for IPv6 on other addresses... but lo carries both."""
    f = ferry_ns(args=["-t", "127.0.0.1/40030", "-t", "%lo/40031",
                       "-T", "none"])
    wait_host_port(40030, fams=("4",))
    wait_host_port(40031)
    assert 40030 not in host_listening("6")
    srv = guest_server(f, "::", 40030, "hold")
    try:
        assert refused_or_reset("198.51.100.2", 40030)
        assert refused_or_reset("::1", 40030)
    finally:
        srv.kill()
    to_guest(f, "127.0.0.1", 40030, 40030, "up", MiB)
    to_guest(f, "127.0.0.1", 40031, 40031, "down", MiB)


def test_fwd_auto_follows_guest_servers(ferry_ns):
    """-t auto: a guest server started after ferry gets a host listener
    within a scan period or two, and loses it when it stops."""
    f = ferry_ns(args=["-t", "auto", "-T", "none"])
    assert 40040 not in host_listening()
    srv = guest_server(f, "::", 40040, "recv")
    wait_host_port(40040, True, 5)
    cli_out = conftest.run(["python3", "-c",
                            "import socket;s=socket.create_connection("
                            "('198.51.100.2',40040),5);s.sendall(b'a'*1000);"
                            "s.close()"])
    assert cli_out.returncode == 0
    assert srv.result(30)["bytes"] == 1000
    wait_host_port(40040, False, 5)


def test_fwd_auto_exclusion(ferry_ns):
    """-t auto -t ~40051: the excluded port stays closed on the host."""
    f = ferry_ns(args=["-t", "auto", "-t", "~40051", "-T", "none"])
    a = guest_server(f, "::", 40050, "hold")
    b = guest_server(f, "::", 40051, "hold")
    try:
        wait_host_port(40050, True, 5)
        # Two more scans: both guest servers were seen by then.
        scans = fwd_stats(f)["scans"]
        conftest.wait_for(lambda: fwd_stats(f)["scans"] >= scans + 2, 5,
                          "two more scans")
        assert 40051 not in host_listening()
    finally:
        a.kill()
        b.kill()


@pytest.mark.parametrize("direction", ["up", "down"])
@pytest.mark.parametrize("fam", ["v4", "v6"])
def test_fwd_ns_to_host(ferry_ns, fam, direction):
    """-T 40060:40061: a guest client on the namespace's loopback reaches
    a host loopback server on the translated port."""
    f = ferry_ns(args=["-t", "none", "-T", "40060:40061"])
    lo = "127.0.0.1" if fam == "v4" else "::1"
    wait_guest_port(f, 40060)
    to_host(f, lo, 40060, 40061, direction, SIZE, host_addr=lo)


def test_fwd_ns_auto_follows_host_servers(ferry_ns):
    """-T auto: a host server started later appears on the namespace's
    loopback; ferry's own -t listeners are not mirrored back."""
    f = ferry_ns(args=["-t", "40071", "-T", "auto"])
    wait_host_port(40071)
    srv_port = 40070
    assert srv_port not in guest_listening(f)
    sr, cr = roles("up", MiB)
    srv = host_server("127.0.0.1", srv_port, *sr)
    wait_guest_port(f, srv_port, 5, fams=("4",))
    cli = client(guest_argv(f, []), "127.0.0.1", srv_port, *cr)
    exchange(srv, cli, "up", MiB)
    assert 40071 not in guest_listening(f)


def test_fwd_busy_family_retried(ferry_ns):
    """-t 40080 while a host socket holds the IPv4 port: IPv6 forwards at
    once, IPv4 is warned about once and retried until the port is free,
    then forwards too."""
    held = hold_port(40080, fams=("4",))
    try:
        f = ferry_ns(args=["-t", "40080", "-T", "none"])
        wait_host_port(40080, fams=("6",))
        assert 40080 not in host_listening("4")
        out = f.output()
        assert "-t port 40080 (IPv4): Address already in use, retrying" in out
        to_guest(f, ADDRS["v6"], 40080, 40080, "up", MiB)
    finally:
        for s in held:
            s.close()
    wait_host_port(40080, timeout=15)
    conftest.wait_for(lambda: "-t port 40080 (IPv4) forwarded now"
                      in f.output(), 5, "the retry reported")
    to_guest(f, ADDRS["v4"], 40080, 40080, "down", MiB)
    assert f.output().count("40080 (IPv4): Address already in use") == 1


def test_fwd_busy_port_is_fatal(ferry_ns, tmp_path):
    """-t 40081 with the port taken in both families: ferry exits with an
    error naming the port (pasta does: podman -p expects a busy host port
    to fail loudly), and the command never runs."""
    out = conftest.start_fails(ferry_ns, ["-t", "40081", "-T", "none"],
                               hold_port(40081), tmp_path)
    assert "cannot forward -t port 40081: Address already in use" in out


def test_fwd_auto_retries_busy_port(ferry_ns):
    """-t auto: a guest server on a port the host has taken gets no host
    listener while it is taken, and one (both families) once it is free."""
    f = ferry_ns(args=["-t", "auto", "-T", "none"])
    held = hold_port(40082)
    srv = None
    try:
        srv = guest_server(f, "::", 40082, "recv")
        scans = fwd_stats(f)["scans"]
        conftest.wait_for(lambda: fwd_stats(f)["scans"] >= scans + 2, 5,
                          "two more scans")
        assert 40082 not in host_listening()
    finally:
        for s in held:
            s.close()
    try:
        wait_host_port(40082, timeout=15)
        conftest.run(["python3", "-c",
                      "import socket;s=socket.create_connection("
                      "('2001:db8::2',40082),5);s.sendall(b'a'*1000);"
                      "s.close()"])
        assert srv.result(30)["bytes"] == 1000
    finally:
        srv.kill()


def test_fwd_command_uses_ns_port_at_once(ferry_ns):
    """Every listener exists before the command starts: a command whose
    first action is to connect to a -T port gets through (bash, so that
    nothing slow runs before the connect), to the last of 800 forwarded
    ports (opened last)."""
    conftest.require("bash")
    srv = host_server("127.0.0.1", 40999, "echo")
    try:
        # The command waits for the echo: ferry exits with it.
        f = ferry_ns(args=["-t", "none", "-T", "40200-40999"],
                     cmd=["bash", "-c", "exec 3<>/dev/tcp/127.0.0.1/40999 "
                          "&& printf hello >&3 && x=$(head -c 5 <&3) && "
                          "[ \"$x\" = hello ]"])
        assert f.proc.wait(timeout=30) == 0, f.output()
        assert srv.result(30)["bytes"] == 5
    finally:
        srv.kill()


# In a namespace: bring lo up, bind ADDR PORT (not listening, no
# SO_REUSEADDR), say "ready", hold it until stdin closes.
NS_HOLD = r'''
import socket, subprocess, sys
subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
s.bind((sys.argv[1], int(sys.argv[2])))
print("ready", flush=True)
sys.stdin.read()
'''


def test_fwd_ns_busy_family_retried(tmp_path):
    """-T 40090 into a joined namespace where a socket holds
    127.0.0.1:40090: ::1 forwards at once, IPv4 is retried and forwards
    once the port is free."""
    holder = subprocess.Popen(["unshare", "-Urn", "sleep", "3600"])
    me = os.stat("/proc/self/ns/net").st_ino
    procs = [holder]
    try:
        conftest.wait_for(lambda: os.stat(f"/proc/{holder.pid}/ns/net")
                          .st_ino != me, 10, "unshare")
        enter = ["nsenter", "-t", str(holder.pid), "-U", "-n",
                 "--preserve-credentials"]
        hold = subprocess.Popen(enter + [PY, "-c", NS_HOLD, "127.0.0.1",
                                         "40090"], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, text=True)
        procs.append(hold)
        assert hold.stdout.readline().strip() == "ready"
        log = tmp_path / "ferry.log"
        f = subprocess.Popen([conftest.FERRY, "ns", "-f", "--config-net",
                              "-t", "none", "-T", "40090", str(holder.pid)],
                             stdout=open(log, "w"), stderr=subprocess.STDOUT,
                             stdin=subprocess.DEVNULL)
        procs.append(f)
        conftest.wait_for(lambda: "-T port 40090 (IPv4): Address already "
                          "in use, retrying" in log.read_text(), 10,
                          "the warning")
        to = ("import socket;s=socket.create_connection(('{}',40090),5);"
              "s.sendall(b'a'*1000);s.close()")
        srv = host_server("::1", 40090, "recv")
        conftest.run(enter + [PY, "-c", to.format("::1")])
        assert srv.result(30)["bytes"] == 1000
        hold.stdin.close()
        hold.wait(10)
        conftest.wait_for(lambda: "-T port 40090 (IPv4) forwarded now"
                          in log.read_text(), 15, "the retry")
        srv = host_server("127.0.0.1", 40090, "recv")
        conftest.run(enter + [PY, "-c", to.format("127.0.0.1")])
        assert srv.result(30)["bytes"] == 1000
        assert log.read_text().count("Address already in use") == 1
    finally:
        for p in reversed(procs):
            if p.poll() is None:
                p.kill()
                p.wait()
