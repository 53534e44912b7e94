"""ferry run by a real unprivileged user, as rootless podman and a user's
shell run it.

Every other integration test runs in test/sandbox.sh, a user namespace
that maps only uid 0: ferry there is root of the namespace that owns its
"host" network, with every capability over it. A real user's ferry has
none: it is an ordinary uid in the initial user namespace, the host
network belongs to the real root, and only the namespaces ferry (or
podman) creates are its own.

So this file does not run in that sandbox: test/run.sh runs it as the
real root in `test/sandbox.sh` with FERRY_SANDBOX_ROOT=1 (new network and
mount namespaces, no user namespace: the same documentation-address
network that goes nowhere). The tests switch to a uid no account uses
(setpriv, no groups, no capabilities) and, as that user:
- `unshare -Urn true` (the kernel must allow unprivileged user
  namespaces at all, or nothing rootless can work);
- `ferry ns --config-net -t 18091:80 -- CMD`: the guest has its address
  and reaches a server the test started on the host, through the
  gateway; the forwarded port reaches the guest's server; ICMP echo is
  off, saying why (the sandbox's ping_group_range leaves the user out);
- `-t 80`: a port below 1024 is refused, and ferry exits saying so;
- podman's sequence with ferry as `pasta`: in a user + mount namespace
  of its own (podman's rootless namespace), a network namespace
  bind-mounted at a path, `pasta --config-net ... --netns PATH` with
  podman's options, the guest reaching the host's server through
  --map-guest-addr, and ferry ending when the path is deleted;
and checks that ferry holds no capability anywhere: in ns mode it runs
as the uid in the guest's user namespace (the user's own) with empty
capability sets, in VM mode in a user namespace of its own, and both are
confined (isolated(): no_new_privs, empty root, own mount/ipc/uts
namespaces); as the real root, after its drop to nobody, too.
"""
import os
import pwd
import re
import shutil
import socket
import subprocess
import tempfile
import threading
from pathlib import Path

import pytest

from conftest import FERRY, GW4, HOST4, require, run, wait_for
from test_podman import HOST_ADDR, podman_args
from test_vhost_user import F_VERSION_1, GET_FEATURES, FrontEnd
from vmguest import (FerryVM, StreamClient, arp_request, boot_guest,
                     build_guest, guest_tcp_exchange, is_arp_reply)

PORT = 18090		# the host's server the guests reach
FWD_PORT = 18091	# forwarded by the user's ferry to the guest's port 80
PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
TOOLS = ("setpriv", "unshare", "nsenter", "ip", "python3", "umount")

# Run in the guest: wait for its address, then fetch a line from the
# host's server (both polled up to a deadline), print that line.
GUEST_CHECK = r"""
import json, socket, subprocess, sys, time
want, host, port = sys.argv[1], sys.argv[2], int(sys.argv[3])
deadline = time.monotonic() + 20
while True:
    out = subprocess.run(["ip", "-j", "-4", "addr", "show"],
                         capture_output=True, text=True).stdout
    have = [a["local"] for i in json.loads(out or "[]")
            for a in i.get("addr_info", [])]
    if want in have:
        break
    if time.monotonic() > deadline:
        sys.exit(f"the guest never got {want}: it has {have}")
    time.sleep(0.05)
while True:
    try:
        with socket.create_connection((host, port), timeout=2) as s:
            print(s.makefile().readline().strip())
            break
    except OSError as e:
        if time.monotonic() > deadline:
            sys.exit(f"the guest cannot reach {host}:{port}: {e}")
        time.sleep(0.05)
"""


# Run in the guest: a server on port 80 (root of the guest's namespaces
# may bind it), one line to each client; touches argv[1] once listening.
GUEST_SERVER = r"""
import socket, sys
s = socket.create_server(("0.0.0.0", 80))
open(sys.argv[1], "w").close()
while True:
    c, a = s.accept()
    with c:
        c.sendall(f"guest says hello to {a[0]}\n".encode())
"""


def real_root():
    """True when we are uid 0 of the initial user namespace (its whole
    uid range mapped), which creating a process of another uid needs."""
    m = Path("/proc/self/uid_map").read_text().split()
    return os.getuid() == 0 and m[:3] == ["0", "0", "4294967295"]


def unused_uid():
    """A uid that no account has and no process runs as."""
    used = {p.pw_uid for p in pwd.getpwall()}
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                used.add(d.stat().st_uid)
            except FileNotFoundError:
                pass
    for uid in range(61000, 62000):
        if uid not in used:
            return uid
    pytest.fail("no unused uid in 61000-61999")


@pytest.fixture
def user():
    """(uid, dir, env): an unprivileged uid, a directory it owns (with a
    copy of ferry, `ferry`, and a `pasta` link to it) and an environment
    for it. The copy: the checkout may be in a directory other users
    cannot enter."""
    if not real_root():
        pytest.fail("test_rootless.py needs the real root (to switch to "
                    "an unprivileged uid): test/run.sh runs it with "
                    "FERRY_SANDBOX_ROOT=1 test/sandbox.sh as root, never "
                    "in the user-namespace sandbox")
    for tool in TOOLS:
        require(tool)
    uid = unused_uid()
    # not under pytest's tmp_path: its /tmp/pytest-of-root is 0700
    d = Path(tempfile.mkdtemp(prefix="ferry-rootless-"))
    shutil.copy(FERRY, d / "ferry")
    os.chmod(d / "ferry", 0o755)
    os.symlink("ferry", d / "pasta")
    os.chown(d, uid, uid)
    os.chmod(d, 0o755)
    env = {"PATH": PATH, "HOME": str(d), "XDG_RUNTIME_DIR": str(d),
           "ASAN_OPTIONS": os.environ.get("ASAN_OPTIONS", "")}
    yield uid, d, env
    shutil.rmtree(d, ignore_errors=True)


def as_user(uid, argv):
    """argv run as uid: its own group, no supplementary groups, no
    capabilities (setuid from root clears them; inheritable too)."""
    return ["setpriv", f"--reuid={uid}", f"--regid={uid}",
            "--clear-groups", "--inh-caps=-all", "--"] + argv


class Server:
    """A TCP server on the host (any address): one line to each client,
    naming the address it came from; with echo, it reads a line from
    the client first and answers "got LINE"."""

    def __init__(self, port, echo=False):
        self.sock = socket.create_server(("0.0.0.0", port))
        self.peers = []
        self.echo = echo
        self.t = threading.Thread(target=self._serve, daemon=True)
        self.t.start()

    def _serve(self):
        while True:
            try:
                c, a = self.sock.accept()
            except OSError:
                return
            self.peers.append(a[0])
            with c:
                if self.echo:
                    c.sendall(b"got " + c.makefile("rb").readline())
                else:
                    c.sendall(f"hello {a[0]}\n".encode())

    def close(self):
        self.sock.shutdown(socket.SHUT_RDWR)	# wakes accept()
        self.sock.close()
        self.t.join(5)


def status(pid):
    """Fields of /proc/PID/status (as seen from our user namespace)."""
    out = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        k, _, v = line.partition(":")
        out[k] = v.split()
    return out


def test_user_namespaces_allowed(user):
    uid, d, env = user
    r = run(as_user(uid, ["unshare", "-Urn", "id", "-u"]), check=False,
            env=env)
    assert r.returncode == 0 and r.stdout.strip() == "0", (
        "an unprivileged user cannot create a user namespace here "
        "(kernel.unprivileged_userns_clone, user.max_user_namespaces or an "
        f"AppArmor restriction): {r.stderr}")


def isolated(pid):
    """ferry at pid is confined (isolate.c): no_new_privs, nothing in the
    ambient and bounding sets but what it keeps, an empty root, mount,
    ipc and uts namespaces of its own."""
    st = status(pid)
    assert st["NoNewPrivs"] == ["1"], st
    assert st["CapBnd"] == st["CapEff"] and st["CapAmb"] == ["0" * 16], st
    assert os.listdir(f"/proc/{pid}/root") == [], "a file is reachable"
    for name in ("mnt", "ipc", "uts"):
        assert os.readlink(f"/proc/{pid}/ns/{name}") != \
            os.readlink(f"/proc/self/ns/{name}"), name


def test_ns_mode_as_unprivileged_user(user):
    """`ferry ns` by a user: ferry keeps the user's uid, joins the
    guest's user namespace (the user owns it: there it may make the mount
    namespace of its sandbox) and clears every capability there, so it
    has none anywhere; it is confined (isolated()), its guest is configured and
    reaches the host through the gateway (the host's loopback), a port
    the user's ferry forwards (-t, above 1023) reaches the guest's server,
    and ICMP echo, whose ping sockets the user's group may not open
    (ping_group_range), is off with a reason instead of failing."""
    uid, d, env = user
    srv = Server(PORT)
    pidfile, log = d / "guest.pid", d / "ferry.log"
    argv = as_user(uid, [str(d / "ferry"), "ns", "-f", "--config-net", "-t",
                         f"{FWD_PORT}:80", "--", "sh", "-c",
                         f"echo $$ > {pidfile}; exec sleep 3600"])
    gsrv = None
    with open(log, "w") as lf:
        p = subprocess.Popen(argv, stdout=lf, stderr=subprocess.STDOUT,
                             stdin=subprocess.DEVNULL, env=env)
    try:
        def guest_pid():
            assert p.poll() is None, \
                f"ferry exited ({p.returncode}):\n{log.read_text()}"
            txt = pidfile.read_text().strip() if pidfile.exists() else ""
            return txt if txt else None
        guest = wait_for(guest_pid, 20, "the guest's command to start")
        st = status(p.pid)	# setpriv exec()s ferry: p.pid is ferry
        assert Path(f"/proc/{p.pid}/exe").resolve() == d / "ferry"
        assert st["Uid"] == [str(uid)] * 4 and st["Gid"] == [str(uid)] * 4, st
        assert st["CapEff"] == st["CapPrm"] == ["0000000000000000"], st
        # the guest's user namespace (which the user owns), as pasta's
        assert os.readlink(f"/proc/{p.pid}/ns/user") == \
            os.readlink(f"/proc/{guest}/ns/user"), "not the guest's userns"
        isolated(p.pid)
        r = run(as_user(uid, ["nsenter", "-t", guest, "-U", "-n",
                              "--preserve-credentials", "python3", "-c",
                              GUEST_CHECK, HOST4, GW4, str(PORT)]),
                check=False, env=env, timeout=60)
        assert r.returncode == 0, f"{r.stderr}\nferry:\n{log.read_text()}"
        assert r.stdout.strip() == "hello 127.0.0.1", r.stdout
        assert "cannot open ping sockets (Permission denied)" in \
            log.read_text(), log.read_text()

        listening = d / "guest-listening"
        gsrv = subprocess.Popen(
            as_user(uid, ["nsenter", "-t", guest, "-U", "-n",
                          "--preserve-credentials", "python3", "-c",
                          GUEST_SERVER, str(listening)]),
            env=env, stdin=subprocess.DEVNULL)
        wait_for(listening.exists, 20, "the guest's server on port 80")
        with socket.create_connection((HOST4, FWD_PORT), timeout=10) as s:
            line = s.makefile().readline().strip()
        # the host's own address is the guest's: a client from it is
        # shown to the guest as the gateway
        assert line == f"guest says hello to {GW4}", line
    finally:
        if gsrv:
            gsrv.kill()
            gsrv.wait()
        if p.poll() is None:
            p.terminate()
        p.wait(timeout=20)
        srv.close()


def test_vm_mode_as_unprivileged_user(user):
    """`ferry vm` by a user: a user namespace of its own (its uid mapped
    to itself) in which it makes its sandbox, then no capability left in
    it; a qemu stand-in is answered (ARP) twice in turn."""
    uid, d, env = user
    sock, log = d / "vm.sock", d / "vm.log"
    with open(log, "w") as lf:
        p = subprocess.Popen(as_user(uid, [str(d / "ferry"), "vm", "-f",
                                           "-s", str(sock)]),
                             stdout=lf, stderr=subprocess.STDOUT,
                             stdin=subprocess.DEVNULL, env=env)
    try:
        wait_for(lambda: "sandbox: " in log.read_text() or
                 p.poll() is not None, 20, "the sandbox line")
        assert "sandbox: user namespace, mount namespace" in \
            log.read_text(), log.read_text()
        st = status(p.pid)
        assert st["Uid"] == [str(uid)] * 4, st
        assert st["CapEff"] == st["CapPrm"] == ["0" * 16], st
        isolated(p.pid)
        for _ in range(2):
            c = StreamClient(str(sock))
            c.send_frame(arp_request(GW4))
            c.wait_frame(is_arp_reply(GW4), 5, "ARP reply")
            c.close()
    finally:
        p.terminate()
        p.wait(timeout=20)


def test_low_port_refused_as_user(user):
    """A user's ferry cannot bind a host port below 1024: asked for one by
    number, it exits with an error naming the port and the reason before
    the guest's command runs (pasta's behaviour)."""
    uid, d, env = user
    ran = d / "ran"
    r = run(as_user(uid, [str(d / "ferry"), "ns", "-f", "--config-net",
                          "-t", "80", "--", "touch", str(ran)]),
            check=False, env=env, timeout=60)
    assert r.returncode != 0, r.stdout + r.stderr
    assert "-t port 80: Permission denied" in r.stderr, r.stderr
    assert not ran.exists()


# As the user, in a user + mount namespace of its own (podman's rootless
# namespace): the bind-mounted network namespace, ferry as pasta with
# podman's command line, the guest check inside it; then wait for the
# test's go-ahead (it inspects ferry meanwhile), delete the path as
# podman does, and wait (deadline 20 s) for ferry to exit.
PODMAN = r"""
set -eu
d=$1; shift
touch "$d/netns"
unshare --net="$d/netns" true
"$d/pasta" "$@"
pid=$(cat "$d/pasta.pid")
nsenter --net="$d/netns" python3 -c "$GUEST_CHECK" "$HOST4" "$HOST_ADDR" \
    "$PORT" > "$d/guest.out"
echo "$pid" > "$d/ready"
i=0
while [ ! -e "$d/go" ]; do
    i=$((i + 1)); [ $i -lt 600 ] || { echo "no go-ahead" >&2; exit 1; }
    sleep 0.1
done
umount -l "$d/netns"
rm "$d/netns"
i=0
while kill -0 "$pid" 2>/dev/null; do
    i=$((i + 1))
    [ $i -lt 200 ] || { echo "ferry $pid did not exit" >&2; exit 1; }
    sleep 0.1
done
"""


def test_pasta_netns_as_unprivileged_user(user):
    """The pasta link run the way rootless podman runs it, by a user."""
    uid, d, env = user
    srv = Server(PORT)
    env = dict(env, GUEST_CHECK=GUEST_CHECK, HOST4=HOST4,
               HOST_ADDR=HOST_ADDR, PORT=str(PORT))
    args = podman_args(d / "pasta.pid", d / "netns")
    p = subprocess.Popen(as_user(uid, ["unshare", "-Urm", "sh", "-c", PODMAN,
                                       "sh", str(d)] + args),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         stdin=subprocess.DEVNULL, env=env, text=True)
    pid = None
    try:
        def ready():
            if p.poll() is not None:
                out, err = p.communicate()
                raise AssertionError(f"exited {p.returncode}: {out}{err}")
            f = d / "ready"
            return f.exists() and f.read_text().strip()
        pid = int(wait_for(ready, 60, "podman's sequence as the user"))
        assert (d / "guest.out").read_text().strip() == f"hello {HOST4}"
        st = status(pid)
        assert Path(f"/proc/{pid}/exe").resolve() == d / "ferry"
        # root of the user's namespace, the user's uid outside it
        assert st["Uid"] == [str(uid)] * 4, st
        assert os.readlink(f"/proc/{pid}/ns/user") != \
            os.readlink("/proc/self/ns/user"), "pasta in the host's userns"
        (d / "go").touch()
        out, err = p.communicate(timeout=60)
        assert p.returncode == 0, f"{out}{err}"
        pid = None
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        if pid and Path(f"/proc/{pid}").exists() and \
                Path(f"/proc/{pid}/exe").resolve() == d / "ferry":
            os.kill(pid, 9)
        srv.close()


# ------------------------------------------------ ferry started as root
#
# Started as the real root, ferry gives up root once everything
# privileged is open (priv.c): to the --runas user, else to nobody; with
# --runas 0:0 it stays root. These tests run as the real root here (the
# user-namespace sandbox maps only its own root, where nobody cannot be
# changed to: test_cli.py checks that side).

def nobody_ids():
    """nobody's uid and gid as priv.c reads them (65534 without one)."""
    try:
        pw = pwd.getpwnam("nobody")
        return pw.pw_uid, pw.pw_gid
    except KeyError:
        return 65534, 65534


@pytest.fixture
def root_dir():
    """A directory for a root test's files (not under pytest's tmp_path:
    the command, as nobody, writes its pid file there)."""
    if not real_root():
        pytest.fail("needs the real root: test/run.sh runs this file with "
                    "FERRY_SANDBOX_ROOT=1 test/sandbox.sh as root")
    for tool in TOOLS:
        require(tool)
    d = Path(tempfile.mkdtemp(prefix="ferry-root-"))
    os.chmod(d, 0o777)
    yield d
    shutil.rmtree(d, ignore_errors=True)


def dropped(st, uid, gid, caps="0000000000000000"):
    """/proc status fields of a ferry that gave up root to uid:gid,
    keeping the capabilities caps (permitted, effective, bounding)."""
    assert st["Uid"] == [str(uid)] * 4 and st["Gid"] == [str(gid)] * 4, st
    assert st["Groups"] == [], st
    assert st["CapEff"] == st["CapPrm"] == st["CapBnd"] == [caps], st
    assert st["CapInh"] == st["CapAmb"] == ["0000000000000000"], st
    assert st["NoNewPrivs"] == ["1"], st


class RootNs:
    """`ferry ns -f --config-net ARGS -- sleep` started as root; .guest is
    the command's pid once it runs (the drop happened before)."""

    def __init__(self, d, args):
        self.d, self.pidfile, self.log = d, d / "guest.pid", d / "ferry.log"
        # --stats: the exit statistics the tests read (see conftest.Ferry)
        argv = [FERRY, "ns", "-f", "--config-net", "--stats", "86400"] + \
            list(args) + [
            "--", "sh", "-c", f"echo $$ > {self.pidfile}; exec sleep 3600"]
        with open(self.log, "w") as lf:
            self.p = subprocess.Popen(argv, stdout=lf,
                                      stderr=subprocess.STDOUT,
                                      stdin=subprocess.DEVNULL)
        self.guest = wait_for(self._guest_pid, 20, "the guest's command")
        self.servers = []

    def _guest_pid(self):
        assert self.p.poll() is None, \
            f"ferry exited ({self.p.returncode}):\n{self.log.read_text()}"
        txt = self.pidfile.read_text().strip() \
            if self.pidfile.exists() else ""
        return txt if txt else None

    def in_guest(self, argv):
        """argv in the guest's user and network namespaces, as its root
        (the real root is not mapped there: it would exec without
        capabilities, and could not bind port 80)."""
        return ["nsenter", "-t", self.guest, "-U", "-n"] + argv

    def serve_80(self):
        """The guest's server on port 80 (GUEST_SERVER), once listening."""
        listening = self.d / f"listening{len(self.servers)}"
        self.servers.append(subprocess.Popen(
            self.in_guest(["python3", "-c", GUEST_SERVER, str(listening)]),
            stdin=subprocess.DEVNULL))
        wait_for(listening.exists, 20, "the guest's server on port 80")

    def stop(self):
        for s in self.servers:
            s.kill()
            s.wait()
        if self.p.poll() is None:
            self.p.terminate()
        self.p.wait(timeout=20)


def read_line(addr, port, deadline=20):
    """The first line a server at addr:port sends, retrying until it
    answers (an auto-forwarded port appears after ferry's next scan)."""
    def attempt():
        try:
            with socket.create_connection((addr, port), timeout=5) as s:
                return s.makefile().readline().strip() or None
        except OSError:
            return None
    return wait_for(attempt, deadline, f"a line from {addr}:{port}")


def test_root_ns_mode_drops_to_nobody(root_dir):
    """Without --runas, ferry started as root runs as nobody once set up:
    all uids and gids nobody's, no groups, no capability in any set,
    no_new_privs; its command runs as nobody outside too (root of its
    own user namespace, which nobody owns: ferry keeps entering it).
    Traffic after the drop: the guest reaches the host's server, and the
    forwarded port reaches the guest's server both through the tap (from
    the host's address) and spliced (from loopback: ferry opens the
    socket inside the namespace after the drop)."""
    uid, gid = nobody_ids()
    srv = Server(PORT)
    f = RootNs(root_dir, ["-t", f"{FWD_PORT}:80", "-u", "none"])
    try:
        dropped(status(f.p.pid), uid, gid)
        isolated(f.p.pid)
        assert status(f.guest)["Uid"] == [str(uid)] * 4
        assert "running as %d:%d" % (uid, gid) in f.log.read_text()
        r = run(f.in_guest(["python3", "-c", GUEST_CHECK, HOST4, GW4,
                            str(PORT)]), check=False, timeout=60)
        assert r.returncode == 0, f"{r.stderr}\nferry:\n{f.log.read_text()}"
        assert r.stdout.strip() == "hello 127.0.0.1", r.stdout
        f.serve_80()
        assert read_line(HOST4, FWD_PORT) == f"guest says hello to {GW4}"
        assert read_line("127.0.0.1", FWD_PORT).startswith("guest says")
    finally:
        f.stop()
        srv.close()


@pytest.fixture
def ping_range():
    """set(RANGE): net.ipv4.ping_group_range of the sandbox's network
    namespace (never the host's: test/sandbox.sh made this one), put
    back afterwards."""
    assert os.environ.get("FERRY_SANDBOX") == "1", "outside the sandbox"
    path = Path("/proc/sys/net/ipv4/ping_group_range")
    old = path.read_text()
    yield lambda value: path.write_text(value)
    path.write_text(old)


def guest_pings(f, dst, n=2):
    """How many of n echo requests from the guest to dst were answered."""
    r = run(f.in_guest(["ping", "-n", "-c", str(n), "-i", "0.2", "-W", "2",
                        dst]), check=False, timeout=30)
    m = re.search(r"(\d+) (?:packets )?received", r.stdout)
    assert m, r.stdout + r.stderr
    return int(m.group(1))


def test_root_ping_after_drop_to_group_outside_range(root_dir, ping_range):
    """ping_group_range "0 0" lets root open ping sockets but not nobody:
    ferry keeps ping sockets opened before the drop, says so once, and
    the guest's echo requests are answered after the drop."""
    require("ping")
    ping_range("0 0")
    f = RootNs(root_dir, ["-t", "none", "-u", "none"])
    try:
        assert guest_pings(f, GW4) == 2, f.log.read_text()
        log = f.log.read_text()
        assert "running as" in log and log.count("ICMP echo") == 1, log
        assert "may not open ping sockets" in log, log
    finally:
        f.stop()
    assert "ICMP_DISABLED" not in f.log.read_text(), f.log.read_text()


def test_root_ping_range_excludes_all(root_dir, ping_range):
    """ping_group_range "1 0" (the kernel's default) excludes root too:
    ferry says so once at start-up, naming the group to allow, and counts
    the guest's echo requests as dropped (ICMP_DISABLED) after the drop."""
    require("ping")
    ping_range("1 0")
    f = RootNs(root_dir, ["-t", "none", "-u", "none"])
    try:
        assert guest_pings(f, GW4) == 0
    finally:
        f.stop()
    log = f.log.read_text()
    assert log.count("ICMP echo forwarding disabled") == 1, log
    assert "allow group 0 in sysctl net.ipv4.ping_group_range" in log, log
    assert re.search(r"drop ICMP_DISABLED 2\b", log), log


def test_root_auto_forward_keeps_low_ports(root_dir):
    """With -t auto ferry opens host listeners after the drop, for the
    ports the guest listens on: it keeps CAP_NET_BIND_SERVICE (and only
    that) so a guest server on port 80 is reached on the host's port 80."""
    uid, gid = nobody_ids()
    f = RootNs(root_dir, ["-t", "auto", "-u", "none"])
    try:
        dropped(status(f.p.pid), uid, gid, caps="0000000000000400")
        f.serve_80()
        assert read_line(HOST4, 80) == f"guest says hello to {GW4}"
    finally:
        f.stop()


def test_root_runas_0_keeps_root(root_dir):
    """--runas 0:0 (sandboxing tools pass it) keeps uid 0, but the
    sandbox still clears every capability and sets no_new_privs; with
    --sandbox=off root keeps its capabilities, no_new_privs unset."""
    f = RootNs(root_dir, ["-t", "none", "-u", "none", "--runas", "0:0"])
    try:
        st = status(f.p.pid)
        assert st["Uid"] == ["0"] * 4 and st["Gid"] == ["0"] * 4, st
        dropped(st, 0, 0)
        isolated(f.p.pid)
        assert status(f.guest)["Uid"] == ["0"] * 4
    finally:
        f.stop()
    f = RootNs(root_dir, ["-t", "none", "-u", "none", "--runas", "0:0",
                          "--sandbox=off"])
    try:
        st = status(f.p.pid)
        assert int(st["CapEff"][0], 16) >> 21 & 1, st	# CAP_SYS_ADMIN
        assert st["NoNewPrivs"] == ["0"], st
    finally:
        f.stop()


def helper_of(pid):
    """The pids of pid's children (ferry's resident namespace helper)."""
    kids = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                if status(d.name)["PPid"] == [str(pid)]:
                    kids.append(int(d.name))
            except (FileNotFoundError, KeyError):
                pass
    return kids


def test_root_joined_root_netns_drops_with_helper(root_dir):
    """A network namespace the real root made ("ip netns add") belongs to
    ferry's own user namespace: nobody could not enter it after the drop,
    so a helper task enters it as root first, then gives up root itself,
    and runs ferry's work inside from then on. ferry and the helper run
    as nobody (the helper in the namespace), and a host loopback client
    of a -t port is spliced into the namespace after the drop (its socket
    there comes from the helper); --runas naming a user works too."""
    uid, gid = nobody_ids()
    ns = f"ferry-priv-{os.getpid()}"
    run(["ip", "netns", "add", ns])
    log = root_dir / "ferry.log"
    gsrv = p = None
    try:
        listening = root_dir / "listening"
        gsrv = subprocess.Popen(["ip", "netns", "exec", ns, "sh", "-c",
                                 "ip link set lo up && exec python3 -c \"$0\" "
                                 "\"$1\"", GUEST_SERVER, str(listening)],
                                stdin=subprocess.DEVNULL)
        wait_for(listening.exists, 20, "the server in the namespace")
        with open(log, "w") as lf:
            p = subprocess.Popen([FERRY, "ns", "-f", "--netns", ns, "-t",
                                  f"{FWD_PORT}:80", "-u", "none",
                                  "--host-lo-to-ns-lo"],
                                 stdout=lf, stderr=subprocess.STDOUT,
                                 stdin=subprocess.DEVNULL)
        wait_for(lambda: "running as" in log.read_text() or
                 p.poll() is not None, 20, "the drop")
        assert "staying root" not in log.read_text(), log.read_text()
        dropped(status(p.pid), uid, gid)
        kids = helper_of(p.pid)
        assert len(kids) == 1, (kids, log.read_text())
        dropped(status(kids[0]), uid, gid)
        isolated(p.pid)
        isolated(kids[0])
        assert os.stat(f"/proc/{kids[0]}/ns/net").st_ino == \
            os.stat(f"/run/netns/{ns}").st_ino
        # The seccomp filter, in ferry and (seccomp.c's job) the helper.
        wait_for(lambda: "seccomp:" in log.read_text(), 20, "the filter")
        assert status(p.pid)["Seccomp"] == ["2"], log.read_text()
        assert status(kids[0])["Seccomp"] == ["2"], log.read_text()
        for _ in range(3):	# more than one socket from the helper
            line = read_line("127.0.0.1", FWD_PORT)
            assert line == "guest says hello to 127.0.0.1", line
        p.terminate()
        p.wait(timeout=20)
        wait_for(lambda: not Path(f"/proc/{kids[0]}").exists() or
                 status(kids[0])["State"][0] == "Z", 10, "the helper to end")
        with open(log, "w") as lf:
            p = subprocess.Popen([FERRY, "ns", "-f", "--netns", ns,
                                  "-t", "none", "-u", "none",
                                  "--runas", "12345:12346"],
                                 stdout=lf, stderr=subprocess.STDOUT,
                                 stdin=subprocess.DEVNULL)
        wait_for(lambda: "running as 12345:12346" in log.read_text() or
                 p.poll() is not None, 20, "the drop")
        dropped(status(p.pid), 12345, 12346)
    finally:
        end_netns(ns, p, gsrv)


def end_netns(ns, *procs):
    """Stop procs (those started, still running), delete netns ns."""
    for proc in procs:
        if proc and proc.poll() is None:
            proc.terminate()
            proc.wait(timeout=20)
    run(["ip", "netns", "del", ns], check=False)


def test_root_strict_refuses_what_cannot_be_confined(root_dir, user):
    """A network namespace whose user namespace another user owns (one
    the test's unprivileged user made), joined with --netns-only by a
    root that stays root (--runas 0:0): ferry enters it with its own
    CAP_SYS_ADMIN every time (ns_call()), so its capabilities cannot be
    cleared. --sandbox=strict refuses to start, naming the layer;
    --sandbox=on warns and keeps them, every other layer in force."""
    uid, d, env = user
    holder = subprocess.Popen(as_user(uid, ["unshare", "-rn", "sleep",
                                            "600"]), env=env)
    net = f"/proc/{holder.pid}/ns/net"
    argv = [FERRY, "ns", "-f", "--netns", net, "--netns-only", "--runas",
            "0:0", "-t", "none", "-u", "none", "-T", "none", "-U", "none"]
    log = root_dir / "ferry.log"
    p = None
    try:
        wait_for(lambda: os.readlink(net) != os.readlink("/proc/self/ns/net"),
                 10, "the user's namespace")
        r = run(argv + ["--sandbox=strict"], check=False)
        assert r.returncode == 1, r.stdout + r.stderr
        assert "--sandbox=strict: capabilities: kept" in r.stderr, r.stderr
        with open(log, "w") as lf:
            p = subprocess.Popen(argv, stdout=lf, stderr=subprocess.STDOUT,
                                 stdin=subprocess.DEVNULL)
        wait_for(lambda: "sandbox: mount" in log.read_text() or
                 p.poll() is not None, 20, "the sandbox line")
        text = log.read_text()
        assert "sandbox: no capabilities: kept" in text, text
        line = [ln for ln in text.splitlines() if "sandbox: mount" in ln]
        assert "capabilities" not in line[0] and "landlock" in line[0], text
        st = status(p.pid)
        assert int(st["CapEff"][0], 16) >> 21 & 1, st	# CAP_SYS_ADMIN
        assert st["NoNewPrivs"] == ["1"], st
        assert os.listdir(f"/proc/{p.pid}/root") == []
    finally:
        if p and p.poll() is None:
            p.terminate()
            p.wait(timeout=20)
        holder.kill()
        holder.wait()


def vm_clients_after_drop(root_dir, args, uid, gid, client):
    """`ferry vm ARGS` as root: uid:gid once listening (dropped()); then
    client(ferry, i) twice, for a client ferry accepts before and one it
    accepts after the first left (one at a time: the second connects
    once ferry saw the first go)."""
    f = FerryVM(root_dir, args)
    try:
        wait_for(lambda: "running as" in f.output(), 10, "the drop")
        dropped(status(f.proc.pid), uid, gid)
        isolated(f.proc.pid)
        for i in range(2):
            client(f, i)
            wait_for(lambda: f.output().count("disconnected") > i, 10,
                     "ferry to see the client leave")
        assert f.alive(), f.output()
    finally:
        f.stop()


def test_root_vm_mode_runas_user(root_dir):
    """`ferry vm --runas UID:GID` as root: that user once listening, and a
    qemu stand-in exchanges TCP data with a host server through it; after
    it leaves, the next client (accepted after the drop) does too."""
    def client(f, i):
        c = StreamClient(f.sock)
        got = guest_tcp_exchange(c, HOST4, GW4, PORT, b"ping %d\n" % i,
                                 sport=40100 + i)
        assert got == b"got ping %d\n" % i, got
        c.close()

    uid = unused_uid()
    srv = Server(PORT, echo=True)
    try:
        vm_clients_after_drop(root_dir, ["--runas", f"{uid}:{uid + 1}"],
                              uid, uid + 1, client)
    finally:
        srv.close()


def test_root_vhost_user_drops_and_serves_next(root_dir):
    """`ferry vm --vhost-user` as root, without --runas: nobody once
    listening; a front-end is answered, and after it leaves the next one
    (accepted after the drop) too."""
    def client(f, i):
        fe = FrontEnd(f.sock)
        assert fe.u64(GET_FEATURES) & F_VERSION_1
        fe.close()

    uid, gid = nobody_ids()
    vm_clients_after_drop(root_dir, ["--vhost-user"], uid, gid, client)


# The guest of test_root_vhost_user_data_path_after_drop (busybox sh,
# vmguest.GUEST_PRELUDE's check()).
VU_GUEST = r"""
. /run/ferry/dhcp.env 2>/dev/null
GW=$DHCP_ROUTER
check "DHCPv4 lease" test "$FERRY_GUEST_DHCP" = ok
check "ping IPv4 gateway" timeout 15 ping -c 2 -W 5 "$GW"
check "TCP exchange" sh -c "echo after the drop | timeout 30 nc -w 5 $GW {port} | grep -qx 'got after the drop'"
"""


def test_root_vhost_user_data_path_after_drop(root_dir, ping_range):
    """`ferry vm --vhost-user` as root, nobody once listening: a real
    guest (test/guest, RAM in a shared memfd) connects after the drop, so
    ferry maps its memory and serves its rings as nobody: DHCP, ICMP echo
    to the gateway (through the ping sockets kept before the drop: the
    range "0 0" leaves nobody out) and a TCP exchange with a host
    server."""
    ping_range("0 0")
    build_guest()
    uid, gid = nobody_ids()
    srv = Server(PORT, echo=True)
    f = FerryVM(root_dir, ["--vhost-user"])
    try:
        wait_for(lambda: "running as" in f.output(), 10, "the drop")
        dropped(status(f.proc.pid), uid, gid)
        (root_dir / "boot").mkdir()
        g = boot_guest(root_dir / "boot", f.sock, VU_GUEST.format(port=PORT),
                       kargs="ferry.dad=0", vhost_user=True)
        for check in ("DHCPv4 lease", "ping IPv4 gateway", "TCP exchange"):
            g.check(check, f)
        assert "vhost-user: guest memory" in f.output(), f.output()
        assert f.alive(), f.output()
    finally:
        f.stop()
        srv.close()
