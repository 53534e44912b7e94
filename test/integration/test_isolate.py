"""The sandbox after set-up (--sandbox, isolate.c, priv.c): what a
running ferry can still reach, read from outside in /proc/PID.

Here ferry is root of the sandbox's user namespace (test/sandbox.sh),
which maps only itself: it stays uid 0 and clears its capabilities
instead. For each mode (namespace mode spawned, attached by PID as a
daemon, attached to an "ip netns add" namespace; VM mode with the
stream and the vhost-user back-end, in the foreground and as a daemon):
NoNewPrivs 1, CapEff/CapPrm/CapBnd only what a running feature needs
(CAP_NET_BIND_SERVICE with auto forwards, else nothing), CapAmb 0,
/proc/PID/root an empty directory, mount/ipc/uts namespaces not the
caller's, the PID namespace too for a daemon; and ferry still works
(the guest's traffic, forwarded ports, SIGUSR1 statistics).
--sandbox=off keeps the old view and warns; --sandbox=strict starts
where every layer applies. test_rootless.py checks the same as an
unprivileged user and as the real root.
"""
import os
import signal
import socket
import subprocess
from pathlib import Path

import pytest

from conftest import FERRY, GW4, run, wait_for
from test_rootless import GUEST_SERVER, end_netns, helper_of, status
from vmguest import (FerryVM, StreamClient, arp_reply_for, arp_request,
                     ferry_vms, is_arp_reply)

BIND = "0000000000000400"	# CAP_NET_BIND_SERVICE alone
NONE = "0000000000000000"
LAYERS = "mount namespace, ipc namespace, uts namespace, capabilities, " \
    "no-new-privs, landlock"


def guest_gets(guest, bind, dest, port):
    """A host server bound to bind:port sends "hi PORT" to the client that
    a process in guest's user and network namespaces starts towards
    dest:port; returns the line that client read."""
    srv = socket.create_server((bind, port))
    srv.settimeout(20)
    try:
        cl = subprocess.Popen(["nsenter", "-t", str(guest), "-U", "-n",
                               "--preserve-credentials", "python3", "-c",
                               "import socket,sys;s=socket.create_connection("
                               "(sys.argv[1],int(sys.argv[2])),timeout=10);"
                               "print(s.recv(64).decode())", dest, str(port)],
                              stdout=subprocess.PIPE, text=True)
        c, _ = srv.accept()
        c.sendall(b"hi %d\n" % port)
        c.close()
        return cl.communicate(timeout=20)[0].strip()
    finally:
        srv.close()


def ns_of(pid, name):
    return os.readlink(f"/proc/{pid}/{'ns/' + name}")


def confined(pid, caps=NONE, pidns=False):
    """pid runs confined (see top); returns its status fields."""
    st = status(pid)
    assert st["NoNewPrivs"] == ["1"], st
    assert st["CapEff"] == st["CapPrm"] == st["CapBnd"] == [caps], st
    assert st["CapAmb"] == st["CapInh"] == [NONE], st
    assert os.listdir(f"/proc/{pid}/root") == [], "a file is reachable"
    for name in ("mnt", "ipc", "uts") + (("pid",) if pidns else ()):
        assert ns_of(pid, name) != ns_of("self", name), name
    if not pidns:
        assert ns_of(pid, "pid") == ns_of("self", "pid")
    return st


def log_line(text):
    """The start-up line naming the layers in force."""
    lines = [ln for ln in text.splitlines() if "sandbox: " in ln]
    assert len(lines) == 1, text
    return lines[0]


def test_ns_spawned_confined(ferry_ns):
    """Namespace mode with a command: confined, and the guest still
    reaches the host (TCP through the gateway) and ferry answers ping."""
    f = ferry_ns(args=["-t", "none", "-u", "none"])
    wait_for(lambda: "sandbox: " in f.output(), 10, "the sandbox line")
    confined(f.proc.pid)
    assert LAYERS in log_line(f.output()), f.output()
    f.guest(f"ping -c1 -W5 {GW4}")
    assert guest_gets(f.guest_pid, "0.0.0.0", GW4, 18190) == "hi 18190"


def test_ns_auto_keeps_only_bind_service(ferry_ns):
    """-t auto opens host listeners later, low ports too: only
    CAP_NET_BIND_SERVICE stays."""
    f = ferry_ns(args=["-t", "auto", "-u", "none"])
    wait_for(lambda: "sandbox: " in f.output(), 10, "the sandbox line")
    confined(f.proc.pid, caps=BIND)


def test_ns_attached_daemon_own_pid_namespace(tmp_path):
    """Attached to a PID without -f: the daemon is PID 1 of its own PID
    namespace; -T still reaches a host server from the guest (ns_call()
    opened the listener), SIGUSR1 logs the statistics into the log file."""
    pidfile, log = tmp_path / "ferry.pid", tmp_path / "ferry.log"
    holder = subprocess.Popen(["unshare", "-rn", "sleep", "600"])
    pid = None
    try:
        wait_for(lambda: ns_of(holder.pid, "net") != ns_of("self", "net"),
                 10, "the holder's namespace")
        run([FERRY, "ns", "--config-net", "-t", "none", "-u", "none",
             "-T", "18191", "-P", str(pidfile), "-l", str(log),
             str(holder.pid)])
        pid = int(pidfile.read_text())
        wait_for(lambda: "sandbox: " in log.read_text(), 10, "the line")
        st = confined(pid, pidns=True)
        assert st["NSpid"][-1] == "1", st
        assert "pid namespace" in log_line(log.read_text())
        assert guest_gets(holder.pid, "127.0.0.1", "127.0.0.1",
                          18191) == "hi 18191"
        os.kill(pid, signal.SIGUSR1)
        wait_for(lambda: "stats: " in log.read_text(), 10, "statistics")
    finally:
        if pid and Path(f"/proc/{pid}").exists():
            os.kill(pid, signal.SIGTERM)
        holder.kill()
        holder.wait()


def test_ns_netns_path_helper_confined(tmp_path):
    """An "ip netns add" namespace belongs to ferry's own user namespace:
    a resident helper enters it before the capabilities go. Both are
    confined (same mount namespace, empty root), and a -t port is still
    spliced into the namespace through the helper's sockets. (The helper
    would keep CAP_NET_BIND_SERVICE for -T/-U auto, the default.)"""
    ns = f"ferry-iso-{os.getpid()}"
    run(["ip", "netns", "add", ns])
    log = tmp_path / "ferry.log"
    gsrv = p = None
    try:
        gsrv = subprocess.Popen(["ip", "netns", "exec", ns, "sh", "-c",
                                 "ip link set lo up && exec python3 -c "
                                 "\"$0\" \"$1\"", GUEST_SERVER,
                                 str(tmp_path / "up")])
        wait_for((tmp_path / "up").exists, 20, "the server in the netns")
        with open(log, "w") as lf:
            p = subprocess.Popen([FERRY, "ns", "-f", "--netns", ns, "-t",
                                  "18192:80", "-u", "none", "-T", "none",
                                  "-U", "none", "--host-lo-to-ns-lo"],
                                 stdout=lf, stderr=subprocess.STDOUT)
        wait_for(lambda: "sandbox: " in log.read_text() or
                 p.poll() is not None, 20, "the sandbox line")
        confined(p.pid)
        kids = helper_of(p.pid)
        assert len(kids) == 1, (kids, log.read_text())
        confined(kids[0])
        assert ns_of(kids[0], "mnt") == ns_of(p.pid, "mnt")
        for _ in range(2):
            with socket.create_connection(("127.0.0.1", 18192), 10) as s:
                line = s.makefile().readline().strip()
                assert line == "guest says hello to 127.0.0.1", line
    finally:
        end_netns(ns, p, gsrv)


@pytest.fixture
def vm(tmp_path):
    with ferry_vms(tmp_path, "vm") as start:
        yield start


def arp_answered(sock):
    c = StreamClient(sock)
    c.send_frame(arp_request(GW4))
    f = c.wait_frame(is_arp_reply(GW4), 5, "ARP reply")
    assert len(arp_reply_for(f, GW4)) == 6
    c.close()


def test_vm_stream_confined_and_reconnects(vm):
    """VM mode, stream back-end: confined; two clients in turn are
    served (the second accepted inside the sandbox)."""
    f = vm()
    wait_for(lambda: "sandbox: " in f.output(), 10, "the sandbox line")
    confined(f.proc.pid)
    for i in range(2):
        arp_answered(f.sock)
        wait_for(lambda: f.output().count("disconnected") > i, 10,
                 "ferry to see the client leave")


def test_vm_vhost_user_confined(vm):
    """VM mode, vhost-user: confined; a front-end after another is
    served (GET_FEATURES answered)."""
    from test_vhost_user import F_VERSION_1, GET_FEATURES, FrontEnd
    f = vm(["--vhost-user"])
    wait_for(lambda: "sandbox: " in f.output(), 10, "the sandbox line")
    confined(f.proc.pid)
    for _ in range(2):
        fe = FrontEnd(f.sock)
        assert fe.u64(GET_FEATURES) & F_VERSION_1
        fe.close()
    assert f.alive()


def test_vm_daemon_own_pid_namespace(tmp_path):
    """VM mode without -f: the daemon is PID 1 of its own PID namespace."""
    sock, pidfile = tmp_path / "s", tmp_path / "pid"
    log = tmp_path / "log"
    run([FERRY, "vm", "-s", str(sock), "-P", str(pidfile), "-l", str(log)])
    pid = int(pidfile.read_text())
    try:
        wait_for(lambda: "sandbox: " in log.read_text(), 10, "the line")
        st = confined(pid, pidns=True)
        assert st["NSpid"][-1] == "1", st
        # the log's header names the PID its caller sees, not 1
        head = log.read_text().splitlines()[0].rstrip()
        assert head.endswith(f"({pid})"), log.read_text()
        arp_answered(str(sock))
    finally:
        os.kill(pid, signal.SIGTERM)
        wait_for(lambda: not Path(f"/proc/{pid}").exists() or
                 status(pid)["State"][0] == "Z", 10, "ferry to end")


def test_sandbox_off_keeps_old_view_and_warns(vm):
    """--sandbox=off: the caller's namespaces and root, capabilities
    kept (root of the sandbox stays as it was), a warning."""
    f = vm(["--sandbox=off"])
    wait_for(lambda: "UNIX domain socket bound" in f.output(), 10, "start")
    st = status(f.proc.pid)
    assert st["NoNewPrivs"] == ["0"], st
    assert int(st["CapEff"][0], 16) >> 21 & 1, st	# CAP_SYS_ADMIN
    assert os.listdir(f"/proc/{f.proc.pid}/root") != []
    for name in ("mnt", "ipc", "uts", "pid"):
        assert ns_of(f.proc.pid, name) == ns_of("self", name), name
    assert f.output().count("--sandbox=off: no confinement") == 1
    assert "sandbox: " not in f.output().replace("--sandbox=off", "")
    arp_answered(f.sock)


def test_sandbox_strict_starts_where_all_layers_apply(vm, ferry_ns):
    """--sandbox=strict starts in the test sandbox (every layer applies)
    in both modes, and says nothing is missing."""
    f = vm(["--sandbox=strict"])
    wait_for(lambda: "sandbox: " in f.output(), 10, "the sandbox line")
    confined(f.proc.pid)
    assert "sandbox: no " not in f.output()
    g = ferry_ns(args=["--sandbox", "strict", "-t", "none", "-u", "none"])
    wait_for(lambda: "sandbox: " in g.output(), 10, "the sandbox line")
    confined(g.proc.pid)
    g.guest(f"ping -c1 -W5 {GW4}")


def test_bad_sandbox_value_one_line(tmp_path):
    r = run([FERRY, "vm", "--sandbox=loose", "-s", str(tmp_path / "s")],
            check=False)
    assert r.returncode == 1
    assert r.stderr.strip().splitlines() == [
        "ferry: --sandbox: 'loose' is not a sandbox mode (off, on, strict)"]
