"""Namespace mode: the guest namespace, its tap device and configuration,
the command's exit status, joining an existing namespace, local mode.

Everything is checked from inside the guest with ip(8) (JSON output), and
in the host sandbox (test/sandbox.sh: uplink0 198.51.100.2/24 and
2001:db8::2/64, default routes via 198.51.100.1 and 2001:db8::1).
"""
import json
import os
import signal
import socket
import re
import subprocess

from pathlib import Path

import pytest

from conftest import FERRY, GW4, GW6, HOST4, HOST6, require, run, wait_for

TAP = "uplink0"		# default: the name of the host's template interface
GW6_LL = "fe80::1"	# ferry's link-local router address (see hostconf.c)
MTU = 65520


def ip_json(f, args):
    return json.loads(f.guest(["ip", "-j"] + args).stdout or "[]")


def link(f, name):
    links = [l for l in ip_json(f, ["addr", "show"]) if l["ifname"] == name]
    assert links, f"no interface {name} in the guest"
    return links[0]


def addrs(l, family):
    return {(a["local"], a["prefixlen"]) for a in l.get("addr_info", [])
            if a["family"] == family and a.get("scope") == "global"}


def default_gw(routes):
    d = [r for r in routes if r["dst"] == "default"]
    return d[0].get("gateway") if d else None


def ns_inode(pid, kind):
    return os.stat(f"/proc/{pid}/ns/{kind}").st_ino


def test_tap_gets_host_config(ferry_ns):
    require("ip")
    f = ferry_ns()
    l = link(f, TAP)
    assert "UP" in l["flags"] and l["mtu"] == MTU
    assert addrs(l, "inet") == {(HOST4, 24)}
    assert addrs(l, "inet6") == {(HOST6, 64)}
    assert default_gw(ip_json(f, ["-4", "route"])) == GW4
    # the host's own IPv6 gateway, global as in the sandbox (pasta's way)
    assert default_gw(ip_json(f, ["-6", "route"])) == GW6
    assert "UP" in link(f, "lo")["flags"]
    out = f.output()
    assert f"template interface {TAP}" in out and "local mode" not in out


def test_without_config_net_tap_stays_down(ferry_ns):
    """As pasta documents: only --config-net configures and raises the
    tap; loopback is always brought up."""
    f = ferry_ns(config_net=False)
    l = link(f, TAP)
    assert "UP" not in l["flags"]
    assert not addrs(l, "inet") and not addrs(l, "inet6")
    assert "UP" in link(f, "lo")["flags"]
    # Frames ferry sends to a tap that is down are dropped, not fatal.
    assert f.proc.poll() is None, f.output()


@pytest.mark.parametrize("config_net", [True, False])
def test_tap_transmit_queue_lengthened(ferry_ns, config_net):
    """The tap drops the guest's frames when its queue is full (no
    backpressure on the sender): ferry lengthens it from the default 1000
    to 4096 frames (ns.c NS_TAP_TXQLEN), with or without --config-net."""
    f = ferry_ns(config_net=config_net)
    l = [x for x in ip_json(f, ["link", "show", "dev", TAP])]
    assert l and l[0]["txqlen"] == 4096, l


def test_ns_mac_addr_and_ifname(ferry_ns):
    f = ferry_ns(args=["--ns-mac-addr", "02:00:5e:10:00:01",
                       "--ns-ifname", "eth7"])
    l = link(f, "eth7")
    assert l["address"] == "02:00:5e:10:00:01"
    assert addrs(l, "inet") == {(HOST4, 24)}


def test_guest_is_separate_user_and_net_namespace(ferry_ns):
    f = ferry_ns()
    me = os.getpid()
    assert ns_inode(f.guest_pid, "net") != ns_inode(me, "net")
    assert ns_inode(f.guest_pid, "user") != ns_inode(me, "user")
    # The caller's uid is root inside, and nothing else is mapped.
    assert f.guest("cat /proc/self/uid_map").stdout.split() == \
        ["0", str(os.geteuid()), "1"]
    assert f.guest("cat /proc/self/setgroups").stdout.strip() == "deny"
    # The sandbox's uplink is not visible in the guest: only lo and tap.
    assert {l["ifname"] for l in ip_json(f, ["link"])} == {"lo", TAP}


def test_stats_delay_logs_periodically(ferry_ns):
    """--stats 1: the statistics appear on the log every second while
    ferry runs (pasta's option), not only at exit or on SIGUSR1."""
    f = ferry_ns(args=["--stats", "1"])
    wait_for(lambda: f.output().count("stats: from guest") >= 2, 10,
             "two periodic statistics dumps")
    assert f.proc.poll() is None


@pytest.mark.parametrize("args,printed", [([], False), (["-d"], True),
                                           (["--stats", "600"], True)])
def test_exit_statistics_only_when_asked(args, printed):
    """Quiet by default: a run that ends prints no statistics at exit
    unless --debug or --stats asked for them (SIGUSR1 prints them any
    time). Before 0.13 every run ended with 6-8 "stats:" lines."""
    r = run([FERRY, "ns", "--config-net"] + args + ["--", "true"])
    assert ("stats: from guest" in r.stdout + r.stderr) == printed, \
        r.stdout + r.stderr


def test_ready_fd_and_exit_fd(tmp_path):
    """--ready-fd: "1" arrives once set-up is complete (the sandbox line
    is logged before it) and the fd is closed; --exit-fd: closing the
    caller's end of the pipe ends ferry (exit 0) even though the joined
    namespace lives on. A file descriptor that is not open: one line."""
    holder = subprocess.Popen(["unshare", "-rn", "sleep", "600"])
    rr, rw = os.pipe()
    er, ew = os.pipe()
    log = tmp_path / "ferry.log"
    p = None
    try:
        wait_for(lambda: os.readlink(f"/proc/{holder.pid}/ns/net") !=
                 os.readlink("/proc/self/ns/net"), 10, "the holder")
        p = subprocess.Popen([FERRY, "ns", "-f", "--config-net", "-l",
                              str(log), "--ready-fd", str(rw), "--exit-fd",
                              str(er), str(holder.pid)], pass_fds=(rw, er),
                             stdin=subprocess.DEVNULL)
        os.close(rw)
        os.close(er)
        assert os.read(rr, 16) == b"1"
        assert "sandbox: " in log.read_text()	# written before "1"
        assert os.read(rr, 16) == b""		# and the fd closed
        assert p.poll() is None
        os.close(ew)
        ew = None
        assert p.wait(timeout=20) == 0, log.read_text()
        assert "exit fd readable" in log.read_text()
        assert holder.poll() is None
    finally:
        if p and p.poll() is None:
            p.kill()
            p.wait()
        if ew is not None:
            os.close(ew)
        os.close(rr)
        holder.kill()
        holder.wait()
    for opt in ("--ready-fd", "--exit-fd"):
        r = run([FERRY, "ns", opt, "1000", "--", "true"], check=False)
        assert r.returncode == 1 and r.stderr.count("\n") == 1 and \
            f"{opt}: 1000 is not an open file descriptor" in r.stderr, r


def test_daemon_logs_to_syslog_after_confinement(tmp_path):
    """A daemon without -l logs to syslog through the socket it connected
    at start-up: "<PRI>ferry[PID]: text" datagrams, PID the daemon's, and
    lines logged after seccomp (SIGUSR1's statistics) still arrive. When
    the receiver's queue is full the lines are dropped, never waited for
    (SIGUSR1 keeps being served), and the next line through counts them.
    (The test build reads the socket's path from FERRY_SYSLOG_PATH.)"""
    path = str(tmp_path / "log")
    rx = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    rx.bind(path)
    rx.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    holder = subprocess.Popen(["unshare", "-rn", "sleep", "600"])
    pidfile = tmp_path / "ferry.pid"
    pid = None

    def lines(timeout=0.5):
        got = []
        rx.settimeout(timeout)
        try:
            while True:
                got.append(rx.recv(4096).decode())
        except socket.timeout:
            return got
    try:
        wait_for(lambda: os.readlink(f"/proc/{holder.pid}/ns/net") !=
                 os.readlink("/proc/self/ns/net"), 10, "the holder")
        run([FERRY, "ns", "-P", str(pidfile), str(holder.pid)],
            env=dict(os.environ, FERRY_SYSLOG_PATH=path))
        pid = int(pidfile.read_text())
        got = []
        wait_for(lambda: got.extend(lines()) or
                 any("sandbox: " in l for l in got), 10, "the sandbox line")
        assert all(re.match(r"<\d+>ferry\[\d+\]: ", l) for l in got), got
        assert {re.match(r"<\d+>ferry\[(\d+)\]", l).group(1)
                for l in got} == {str(pid)}, (got, pid)
        os.kill(pid, signal.SIGUSR1)
        wait_for(lambda: got.extend(lines()) or
                 any("stats: from guest" in l for l in got), 10,
                 "statistics logged after seccomp")
        # Flood: nobody reads, the small queue fills, ferry goes on.
        def served():		# no signal pending, ferry asleep again
            st = Path(f"/proc/{pid}/status").read_text()
            f = dict(l.split(":\t", 1) for l in st.splitlines() if ":\t" in l)
            return int(f["ShdPnd"], 16) == 0 == int(f["SigPnd"], 16) and \
                f["State"].startswith("S")
        # one dump at a time (pending signals merge): ~6 lines each, more
        # than the queue takes (net.unix.max_dgram_qlen, the send buffer)
        for _ in range(200):
            os.kill(pid, signal.SIGUSR1)
            wait_for(served, 10, "ferry to serve the signal")
        lines(1)
        os.kill(pid, signal.SIGUSR1)
        tail = []
        wait_for(lambda: tail.extend(lines()) or
                 any("lines lost)" in l for l in tail), 10,
                 "the count of lost lines")
        assert Path(f"/proc/{pid}").exists()
    finally:
        if pid and Path(f"/proc/{pid}").exists():
            os.kill(pid, signal.SIGTERM)
            wait_for(lambda: not Path(f"/proc/{pid}").exists() or
                     Path(f"/proc/{pid}/stat").read_text().split()[2] == "Z",
                     10, "the daemon to exit")
        holder.kill()
        holder.wait()
        rx.close()


def test_exit_status_of_command(ferry_ns):
    f = ferry_ns(cmd=["sh", "-c", "exit 7"])
    assert f.proc.wait(timeout=20) == 7


def test_exit_status_of_killed_command(ferry_ns):
    f = ferry_ns(cmd=["sh", "-c", "kill -TERM $$"])
    assert f.proc.wait(timeout=20) == 128 + signal.SIGTERM


def test_command_not_found(ferry_ns):
    f = ferry_ns(cmd=["/nonexistent/cmd"])
    assert f.proc.wait(timeout=20) == 127
    assert "/nonexistent/cmd" in f.output()


def test_ferry_exits_when_command_exits(ferry_ns):
    f = ferry_ns()
    assert f.proc.poll() is None
    os.kill(f.guest_pid, signal.SIGKILL)	# the command we started
    assert f.proc.wait(timeout=20) == 128 + signal.SIGKILL


def test_command_dies_with_ferry(ferry_ns):
    f = ferry_ns()
    f.proc.send_signal(signal.SIGTERM)
    f.proc.wait(timeout=20)
    wait_for(lambda: not os.path.exists(f"/proc/{f.guest_pid}")
             or "Z" in open(f"/proc/{f.guest_pid}/stat").read().split()[2],
             10, "the command to die with ferry (PR_SET_PDEATHSIG)")


def test_local_mode_without_default_route(tmp_path):
    """No default route on the host (a nested network namespace with only
    lo): link-local fallback, and ferry says so."""
    require("unshare")
    script = ("ip -j addr show tap0; echo; ip -j -4 route; echo; "
              "ip -j -6 route show default")
    r = run(["unshare", "-n", FERRY, "ns", "-f", "--config-net", "--",
             "sh", "-c", script], timeout=30)
    parts = [json.loads(p) for p in r.stdout.strip().split("\n") if p]
    tap, r4, r6 = parts
    a4 = {(a["local"], a["prefixlen"]) for a in tap[0]["addr_info"]
          if a["family"] == "inet"}
    assert a4 == {("169.254.2.1", 16)}
    assert default_gw(r4) == "169.254.2.2"
    assert default_gw(r6) == GW6_LL
    g6 = [a for a in tap[0]["addr_info"] if a["family"] == "inet6"
          and a.get("scope") == "global"]
    assert not g6
    assert r.stderr.count("local mode") == 2, r.stderr


@pytest.fixture
def holder():
    """A namespace made by someone else: `unshare -Urn sleep`, ended by
    its PID at the end."""
    p = subprocess.Popen(["unshare", "-Urn", "sleep", "3600"])
    me = os.stat("/proc/self/ns/net").st_ino
    wait_for(lambda: ns_inode(p.pid, "net") != me, 10, "unshare")
    yield p
    if p.poll() is None:
        p.kill()
        p.wait()


def nsenter(pid, cmd):
    return subprocess.run(["nsenter", "-t", str(pid), "-U", "-n",
                           "--preserve-credentials"] + cmd,
                          capture_output=True, text=True, timeout=30)


def start_join(tmp_path, args):
    log = open(tmp_path / "ferry.log", "w")
    return subprocess.Popen([FERRY, "ns", "-f", "--config-net"] + args,
                            stdout=log, stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL)


def joined_addrs(pid):
    r = nsenter(pid, ["ip", "-j", "addr", "show", TAP])
    return (addrs(json.loads(r.stdout)[0], "inet")
            if r.returncode == 0 and r.stdout.strip() else None)


@pytest.mark.parametrize("how", ["pid", "path"])
def test_join_existing_namespace(tmp_path, holder, how):
    require("nsenter")
    pid = holder.pid
    args = [str(pid)] if how == "pid" else [
        "--netns", f"/proc/{pid}/ns/net", "--userns", f"/proc/{pid}/ns/user"]
    f = start_join(tmp_path, args)
    try:
        got = wait_for(lambda: f.poll() is None and joined_addrs(pid),
                       10, "the tap in the joined namespace")
        assert got == {(HOST4, 24)}
        assert f.poll() is None
        holder.kill()			# the namespace goes away ...
        holder.wait()
        assert f.wait(timeout=20) == 0	# ... and so does ferry
    finally:
        if f.poll() is None:
            f.kill()
            f.wait()


def test_join_netns_path_quits_when_removed(tmp_path):
    """--netns PATH (a bind-mounted namespace, as "ip netns add" makes):
    netns-only join; ferry quits when the path is removed (inotify)."""
    require("nsenter")
    ns = tmp_path / "fns"
    ns.touch()
    run(["unshare", f"--net={ns}", "true"])
    f = start_join(tmp_path, ["--netns", str(ns)])
    try:
        def tap_addrs():
            r = subprocess.run(["nsenter", f"--net={ns}", "ip", "-j", "addr",
                                "show", TAP], capture_output=True, text=True)
            if f.poll() is not None:
                raise AssertionError("ferry exited early")
            return (addrs(json.loads(r.stdout)[0], "inet")
                    if r.returncode == 0 and r.stdout.strip() else None)
        assert wait_for(tap_addrs, 10, "the tap") == {(HOST4, 24)}
        run(["umount", "-l", str(ns)])	# ip netns del: lazy (MNT_DETACH)
        assert f.poll() is None
        ns.unlink()				# like "ip netns del"
        assert f.wait(timeout=20) == 0
    finally:
        if f.poll() is None:
            f.kill()
            f.wait()
        subprocess.run(["umount", "-l", str(ns)], capture_output=True)


def test_address_and_gateway_options_override_host(ferry_ns):
    """-a/-g given: used as they are; the prefix still comes from the host
    address when -a is inside its subnet, else the classful length."""
    f = ferry_ns(args=["-a", "198.51.100.77", "-g", "198.51.100.9",
                       "-a", "2001:db8::77", "-g", "2001:db8::9"])
    l = link(f, TAP)
    assert addrs(l, "inet") == {("198.51.100.77", 24)}
    assert addrs(l, "inet6") == {("2001:db8::77", 64)}
    assert default_gw(ip_json(f, ["-4", "route"])) == "198.51.100.9"
    assert default_gw(ip_json(f, ["-6", "route"])) == "2001:db8::9"
    f2 = ferry_ns(args=["-a", "192.0.2.3"])
    assert addrs(link(f2, TAP), "inet") == {("192.0.2.3", 24)}
    assert default_gw(ip_json(f2, ["-4", "route"])) == GW4
