"""A real container (podman + crun, busybox inside) on ferry invoked as
`pasta`, in the sequence podman's pasta network mode uses.

podman >= 4.4 runs a pasta container like this: it creates the network
namespace itself and bind-mounts it at a path, runs
`pasta --config-net [its options] --netns PATH` and waits for that
command to exit 0 with its stdout and stderr closed (pasta forks once
ready), starts the container in the namespace, and when the container
is gone unmounts and deletes the path, which makes pasta exit.

Debian bookworm ships podman 4.3.1, which has no pasta mode at all
("--network pasta" is taken as a network name). So this test plays
podman's network part itself, with podman's own command line (the one
test_cli.py parses), and has the real podman 4.3.1 run the containers in
that namespace with `--network ns:PATH`: a real OCI runtime (crun), a
real container, real busybox tools inside.

It runs in the sandbox (test/sandbox.sh), where we are root in a user
namespace: podman takes itself for root there. What that needs (all set
up by the podman_env fixture, all undone after):
- rlimits no higher than ours (no CAP_SYS_RESOURCE): default_ulimits;
- cgroups="disabled" (crun), and on a hybrid cgroup host the cgroup2
  mount hidden under a tmpfs (crun refuses hybrid mode);
- /dev/pts mounted without gid=5 (no group 5 in the sandbox);
- private storage (vfs), run and tmp directories, file locks: nothing
  shared with another podman on the machine;
- the container's root filesystem is a directory (--rootfs) holding
  busybox and its libraries: no image is pulled or built.
"""
import http.server
import os
import resource
import shutil
import signal
import socket
import subprocess
import threading
import time
import urllib.request
from pathlib import Path

import pytest

from conftest import FERRY, GW4, HOST4, hold_port, require, run, wait_for

FWD_PORT = 18080	# host port forwarded to the container's httpd on 80
# The port taken to make pasta fail: one no connection ever used, as
# hold_port() binds without SO_REUSEADDR, which a TIME_WAIT socket on the
# port refuses for 60 s (FWD_PORT has one after the container test's
# fetches: the httpd closes first, so ferry's accepted socket does too).
BUSY_PORT = 18086
HTTP_PORT = 18081	# host HTTP server the container fetches from
DNS_PORT = 53		# host DNS server (busybox nslookup has no port)
DNS_NAME, DNS_A = "ctr.example.test", "198.51.100.77"
RESOLVER = "198.51.100.53"	# the sandbox's /etc/resolv.conf nameserver
HOST_ADDR = "169.254.1.2"	# podman's --map-guest-addr: the host, seen
DNS_ADDR = "169.254.1.1"	# from the container; --dns-forward address
APPLETS = ("sh", "ip", "wget", "nslookup", "httpd", "cat", "echo", "sleep",
           "true", "ls")


def podman_args(pidfile, netns, ports=()):
    """The pasta command line podman 5 builds (libnetwork/pasta), for
    `-p HOST:CTR` in ports: TCP forwards first, then its fixed options."""
    args = ["--config-net"]
    for h, c in ports:
        args += ["-t", f"{h}-{h}:{c}-{c}"]
    if not ports:
        args += ["-t", "none"]
    args += ["-u", "none", "-T", "none", "-U", "none", "--dns-forward",
             DNS_ADDR, "--no-map-gw", "--quiet", "--map-guest-addr",
             HOST_ADDR, "--pid", str(pidfile), "--netns", str(netns)]
    return args


def libs_of(binary):
    """The shared libraries (and loader) binary needs, from ldd: none for a
    static one (busybox-static: ldd says "not a dynamic executable" and
    exits 1), so either Debian busybox makes the container root."""
    r = run(["ldd", binary], check=False)
    if r.returncode != 0 and "not a dynamic executable" in r.stdout + r.stderr:
        return []
    if r.returncode != 0:
        raise AssertionError(f"ldd {binary} exited {r.returncode}: {r.stderr}")
    out = r.stdout
    paths = []
    for line in out.splitlines():
        parts = line.split()
        for p in parts:
            if p.startswith("/"):
                paths.append(p)
                break
    return paths


def make_rootfs(root):
    """A container root: busybox, its libraries, applet links, /www."""
    bb = shutil.which("busybox")
    (root / "bin").mkdir(parents=True)
    shutil.copy(bb, root / "bin" / "busybox")
    for lib in libs_of(bb):
        dst = root / lib.lstrip("/")
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(lib, dst)
    for a in APPLETS:
        os.symlink("busybox", root / "bin" / a)
    for d in ("proc", "sys", "dev", "etc", "tmp", "www"):
        (root / d).mkdir(exist_ok=True)
    (root / "www" / "index.html").write_text("served from the container\n")


def hybrid_cgroups():
    """True when /sys/fs/cgroup is v1 (tmpfs) with a cgroup2 beside it."""
    mounts = Path("/proc/self/mounts").read_text().split("\n")
    fs = {l.split()[1]: l.split()[2] for l in mounts if l.strip()}
    return fs.get("/sys/fs/cgroup") == "tmpfs" and \
        fs.get("/sys/fs/cgroup/unified") == "cgroup2"


class Podman:
    """podman with private storage in d; run() returns CompletedProcess."""

    def __init__(self, d):
        self.d = d
        nofile = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
        nproc = min(resource.getrlimit(resource.RLIMIT_NPROC)[1], 4096)
        self.limits = (nofile, nproc)
        conf = d / "containers.conf"
        conf.write_text(
            "[containers]\n"
            'cgroups = "disabled"\n'
            f'default_ulimits = ["nofile={nofile}:{nofile}", '
            f'"nproc={nproc}:{nproc}"]\n'
            "[engine]\n"
            'cgroup_manager = "cgroupfs"\n'
            'events_logger = "file"\n'
            'lock_type = "file"\n'
            f'tmp_dir = "{d}/tmp"\n'
            'runtime = "crun"\n')
        self.env = dict(os.environ, CONTAINERS_CONF=str(conf),
                        HOME=str(d), XDG_RUNTIME_DIR=str(d / "xdg"))
        (d / "xdg").mkdir()
        self.base = ["podman", "--root", str(d / "root"), "--runroot",
                     str(d / "run"), "--storage-driver", "vfs",
                     "--tmpdir", str(d / "tmp")]

    def _limits(self):
        """podman's own process: NPROC as low as the containers' limit
        (something below podman lowers it to 32768 before crun runs)."""
        nproc = self.limits[1]
        resource.setrlimit(resource.RLIMIT_NPROC, (nproc, nproc))

    def run(self, *args, timeout=60, check=True):
        r = subprocess.run(self.base + list(args), capture_output=True,
                           text=True, timeout=timeout, env=self.env,
                           preexec_fn=self._limits)
        if check and r.returncode != 0:
            raise AssertionError(f"podman {' '.join(args)} exited "
                                 f"{r.returncode}\nstdout:\n{r.stdout}\n"
                                 f"stderr:\n{r.stderr}")
        return r

    def ctr(self, rootfs, netns, *cmd, detach=False):
        """Run cmd in a new container in netns (a path); -d if detach."""
        args = ["run", "--network", f"ns:{netns}", "--mount",
                "type=devpts,destination=/dev/pts,gid=0"]
        args += ["-d"] if detach else ["--rm"]
        return self.run(*args, "--rootfs", str(rootfs), *cmd)


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    """A directory with helpers/pasta (a link to ferry) and netns/."""
    d = tmp_path_factory.mktemp("podman")
    (d / "helpers").mkdir()
    os.symlink(FERRY, d / "helpers" / "pasta")
    (d / "netns").mkdir()
    return d


@pytest.fixture(scope="module")
def podman_env(workdir):
    """(Podman, rootfs, helper dir with a `pasta` link to ferry)."""
    for tool in ("podman", "crun", "busybox", "unshare", "ldd"):
        require(tool)
    d = workdir
    rootfs = d / "rootfs"
    make_rootfs(rootfs)
    helpers = d / "helpers"
    hidden = hybrid_cgroups()
    if hidden:
        run(["mount", "-t", "tmpfs", "-o", "size=4k", "ferry-test-hide",
             "/sys/fs/cgroup/unified"])
    p = Podman(d)
    try:
        r = p.run("info", check=False)
        if r.returncode != 0:
            pytest.fail(f"podman cannot run here:\n{r.stderr}")
        yield p, rootfs, helpers
    finally:
        p.run("rm", "-a", "-f", "-t", "0", check=False)
        if hidden:
            run(["umount", "/sys/fs/cgroup/unified"], check=False)


class PastaNetns:
    """podman's network part: a bind-mounted netns with ferry as pasta."""

    def __init__(self, helpers, d, tag, ports=()):
        self.path = d / "netns" / f"netns-{tag}"
        self.path.touch()
        run(["unshare", f"--net={self.path}", "true"])
        self.pidfile = d / f"pasta-{tag}.pid"
        argv = [str(helpers / "pasta")] + podman_args(self.pidfile,
                                                      self.path, ports)
        # A shell script (`pasta --pid F ...; cat F`) reads the pid file as
        # soon as the parent exits; podman waits like Go's Output(): for
        # the exit and for EOF on stdout and stderr, which the daemon must
        # not hold open.
        p = subprocess.Popen(argv, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
        try:
            p.wait(timeout=20)
            txt = self.pidfile.read_text() if self.pidfile.exists() else ""
            out, err = p.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            p.kill()
            raise AssertionError("pasta did not exit, or its daemon held "
                                 "stdout/stderr open: podman would hang")
        assert p.returncode == 0, err
        # --quiet: nothing printed on a normal start.
        assert out == b"" and err == b"", (out, err)
        assert txt.strip().isdigit(), \
            f"pid file {txt!r} when pasta's parent returned"
        self.pid = int(txt)
        assert os.path.realpath(f"/proc/{self.pid}/exe") == \
            os.path.realpath(FERRY), "the process started is not ferry"

    def alive(self):
        try:
            return Path(f"/proc/{self.pid}/stat").read_text().split()[2] != "Z"
        except FileNotFoundError:
            return False

    def remove(self):
        """What podman does after the container: detach and delete."""
        if self.path.exists():
            run(["umount", "-l", str(self.path)], check=False)
            self.path.unlink()

    def kill(self):
        if self.alive():
            os.kill(self.pid, 9)


class Echo(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = f"host says hello to {self.client_address[0]}\n".encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *a):
        pass


def dns_answer(q):
    """A reply to DNS query q: DNS_NAME's A record, no other data."""
    if len(q) < 17 or q[5] != 1:	# header + root name + type + class
        return None
    end = 12
    while end < len(q) and q[end]:
        end += 1 + q[end]
    if end + 5 > len(q):
        return None
    qname = q[12:end + 1]
    qtype = q[end + 1:end + 3]
    labels = b"".join(bytes([len(l)]) + l.encode() for l in DNS_NAME.split("."))
    hit = qname.lower() == labels + b"\0" and qtype == b"\0\1"
    hdr = q[:2] + b"\x81\x80\0\1" + (b"\0\1" if hit else b"\0\0") + \
        b"\0\0\0\0"
    ans = b"\xc0\x0c\0\1\0\1\0\0\0\x3c\0\4" + socket.inet_aton(DNS_A)
    return hdr + q[12:end + 5] + (ans if hit else b"")


@pytest.fixture(scope="module")
def host_servers():
    """An HTTP server (TCP) and a DNS server (UDP) on the host, all
    addresses: the container reaches them through ferry. The DNS server
    also answers at RESOLVER (added to lo for this module), the host's
    nameserver that --dns-forward hands queries to."""
    run(["ip", "addr", "add", f"{RESOLVER}/32", "dev", "lo"])
    httpd = http.server.ThreadingHTTPServer(("0.0.0.0", HTTP_PORT), Echo)
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    u.bind(("0.0.0.0", DNS_PORT))
    u.settimeout(0.2)
    stop = threading.Event()

    def echo():
        while not stop.is_set():
            try:
                data, peer = u.recvfrom(2048)
            except socket.timeout:
                continue
            reply = dns_answer(data)
            if reply:
                u.sendto(reply, peer)

    threads = [threading.Thread(target=httpd.serve_forever, daemon=True),
               threading.Thread(target=echo, daemon=True)]
    for t in threads:
        t.start()
    yield
    stop.set()
    httpd.shutdown()
    httpd.server_close()
    for t in threads:
        t.join(5)
    u.close()
    run(["ip", "addr", "del", f"{RESOLVER}/32", "dev", "lo"], check=False)


def fetch(url):
    try:
        with urllib.request.urlopen(url, timeout=2) as r:
            return r.read().decode()
    except OSError:
        return None


def test_pid_file_complete_when_pasta_returns(workdir):
    """podman reads --pid as soon as pasta's parent exits: the file must
    then hold the daemon's pid (the parent writes it before exiting).
    That daemon ends when the namespace is deleted (a container's) or on
    SIGTERM to that pid (how podman 5 ends its rootless-netns pasta).
    Several rounds: a pid file written late by the daemon itself is seen
    empty or missing."""
    require("unshare")
    for i in range(8):
        net = PastaNetns(workdir / "helpers", workdir, f"pid{i}")
        try:
            assert net.alive()
            if i % 2:
                wait_for(lambda: in_epoll_wait(net.pid), 10,
                         "ferry's loop to wait")
                os.kill(net.pid, signal.SIGTERM)
                how = "on SIGTERM"
            else:
                net.remove()
                how = "once the namespace is deleted"
            wait_for(lambda: not net.alive(), 10, f"ferry to exit {how}")
        finally:
            net.remove()
            net.kill()


def in_epoll_wait(pid):
    """True while pid sleeps in epoll_wait: its event loop is idle, so a
    signal now must wake it (one sent earlier is seen without a wakeup)."""
    try:
        if Path(f"/proc/{pid}/wchan").read_text() == "do_epoll_wait":
            return True
        nr = Path(f"/proc/{pid}/syscall").read_text().split()[0]
    except (FileNotFoundError, IndexError, PermissionError):
        return False
    return nr in ("232", "281", "441")	# x86-64 epoll_wait, _pwait, 2


def test_vm_daemon_ends_on_sigterm(tmp_path):
    """The same daemon path in VM mode (passt): libvirt stops it with
    SIGTERM to the pid in its pid file (was ignored by the daemon: its
    signalfd had been added to epoll by the parent)."""
    sock, pidfile = tmp_path / "vm.sock", tmp_path / "vm.pid"
    r = subprocess.run([FERRY, "vm", "-s", str(sock), "--pid", str(pidfile)],
                       capture_output=True, timeout=20,
                       stdin=subprocess.DEVNULL)
    assert r.returncode == 0, r.stderr
    pid = int(pidfile.read_text())
    alive = lambda: Path(f"/proc/{pid}/stat").exists() and \
        Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    try:
        assert alive(), "ferry vm did not stay running"
        wait_for(lambda: in_epoll_wait(pid), 10, "ferry vm's loop to wait")
        os.kill(pid, signal.SIGTERM)
        wait_for(lambda: not alive(), 10, "ferry vm to exit on SIGTERM")
    finally:
        if alive():
            os.kill(pid, signal.SIGKILL)


def test_pasta_failure_is_reported_to_podman(workdir):
    """A -p port already taken: podman reports "pasta failed with exit
    code N" and pasta's stderr, so the parent must exit non-zero with the
    reason on stderr, and leave no daemon behind."""
    require("unshare")
    held = hold_port(BUSY_PORT)	# both families: not bindable at all
    path = workdir / "netns" / "netns-busy"
    path.touch()
    pidfile = workdir / "pasta-busy.pid"
    try:
        run(["unshare", f"--net={path}", "true"])
        argv = [str(workdir / "helpers" / "pasta")] + podman_args(
            pidfile, path, [(BUSY_PORT, 80)])
        r = subprocess.run(argv, capture_output=True, text=True, timeout=20,
                           stdin=subprocess.DEVNULL)
        assert r.returncode != 0
        assert str(BUSY_PORT) in r.stderr, r.stderr
        assert len(r.stderr.strip().splitlines()) == 1, r.stderr
        txt = pidfile.read_text().strip() if pidfile.exists() else ""
        assert not txt, f"pid file {txt!r} after a failed start"
    finally:
        for h in held:
            h.close()
        run(["umount", "-l", str(path)], check=False)
        path.unlink()


def test_container_on_ferry_as_pasta(podman_env, host_servers):
    p, rootfs, helpers = podman_env
    net = PastaNetns(helpers, p.d, "1", ports=[(FWD_PORT, 80)])
    cid = None
    try:
        # Every forwarded port listens before pasta's parent returns.
        cid = p.ctr(rootfs, net.path, "httpd", "-f", "-p", "80", "-h",
                    "/www", detach=True).stdout.strip()

        def ex(cmd):
            return p.run("exec", cid, "sh", "-c", cmd).stdout

        addr = ex("ip -4 addr show")
        assert f"inet {HOST4}/24" in addr, addr
        assert f"default via {GW4}" in ex("ip -4 route"), ex("ip route")
        assert "default via" in ex("ip -6 route")
        # (busybox 1.35's wget -T crashes: the podman timeout bounds it)
        page = ex(f"wget -q -O - http://{HOST_ADDR}:{HTTP_PORT}/")
        assert page.startswith("host says hello"), page
        # UDP: a DNS query to the host's server (busybox nc has no -u).
        reply = ex(f"nslookup {DNS_NAME} {HOST_ADDR}")
        assert DNS_A in reply, reply
        # --dns-forward: the address podman puts in resolv.conf reaches the
        # host's own nameserver.
        reply = ex(f"nslookup {DNS_NAME} {DNS_ADDR}")
        assert DNS_A in reply, reply
        # -p FWD_PORT:80: a host connection reaches the container's httpd
        # (the container may still be starting it: poll).
        body = wait_for(lambda: fetch(f"http://127.0.0.1:{FWD_PORT}/"), 15,
                        "the forwarded port to reach httpd")
        assert body == "served from the container\n"
        assert net.alive()
        p.run("stop", "-t", "1", cid)
        p.run("rm", cid)
        cid = None
        net.remove()
        wait_for(lambda: not net.alive(), 10,
                 "ferry to exit once the namespace is deleted")
    finally:
        if cid:
            p.run("rm", "-f", "-t", "0", cid, check=False)
        net.remove()
        net.kill()

    # A second container, its own namespace and ferry, runs as well, and
    # the first one's port is free again.
    net2 = PastaNetns(helpers, p.d, "2", ports=[(FWD_PORT, 80)])
    try:
        out = p.ctr(rootfs, net2.path, "sh", "-c",
                    f"ip -4 addr show; wget -q -O - "
                    f"http://{HOST_ADDR}:{HTTP_PORT}/").stdout
        assert f"inet {HOST4}/24" in out and "host says hello" in out, out
        net2.remove()
        wait_for(lambda: not net2.alive(), 10,
                 "the second ferry to exit once its namespace is deleted")
    finally:
        net2.remove()
        net2.kill()


SLIRP_PORT = 18087	# host port -p forwards to the slirp4netns container


def ferry_slirps():
    """PIDs of processes running ferry under the name slirp4netns."""
    pids = []
    for d in Path("/proc").iterdir():
        try:
            argv0 = (d / "cmdline").read_bytes().split(b"\0")[0]
            if argv0.endswith(b"slirp4netns") and \
               os.path.realpath(d / "exe") == os.path.realpath(FERRY):
                pids.append(int(d.name))
        except (OSError, ValueError):
            pass
    return pids


def test_podman_43_runs_ferry_as_slirp4netns(podman_env, host_servers):
    """Debian 12's own podman 4.3 (no pasta mode) drives ferry itself:
    --network slirp4netns with network_cmd_path (here its command-line
    twin --network-cmd-path) naming a link called slirp4netns. podman
    reads `slirp4netns --help`, passes its usual command line, waits on
    the ready fd and, when the container ends, closes the exit fd. The
    container gets slirp4netns's network (10.0.2.100/24 via 10.0.2.2,
    DNS at 10.0.2.3 from podman's resolv.conf), reaches the host's
    servers through ferry (the gateway's MAC is ferry's), -p works
    through podman's rootlessport, and ferry exits with the container."""
    p, rootfs, helpers = podman_env
    link = helpers / "slirp4netns"
    if not link.exists():
        os.symlink(FERRY, link)
    before = set(ferry_slirps())
    cid = None
    try:
        cid = p.run("--network-cmd-path", str(link), "run", "-d",
                    "--network", "slirp4netns", "-p", f"{SLIRP_PORT}:80",
                    "--mount", "type=devpts,destination=/dev/pts,gid=0",
                    "--rootfs", str(rootfs), "httpd", "-f", "-p", "80",
                    "-h", "/www").stdout.strip()
        mine = set(ferry_slirps()) - before
        assert mine, "ferry as slirp4netns is not running"

        def ex(cmd):
            return p.run("exec", cid, "sh", "-c", cmd).stdout

        assert "inet 10.0.2.100/24" in ex("ip -4 addr show")
        assert "default via 10.0.2.2" in ex("ip -4 route")
        assert "nameserver 10.0.2.3" in ex("cat /etc/resolv.conf")
        page = ex(f"wget -q -O - http://{HOST4}:{HTTP_PORT}/")
        assert page.startswith("host says hello"), page
        reply = ex(f"nslookup {DNS_NAME}")	# via 10.0.2.3, forwarded
        assert DNS_A in reply, reply
        assert "9a:55:9a:55:9a:55" in ex("ip neigh show 10.0.2.2")
        body = wait_for(lambda: fetch(f"http://127.0.0.1:{SLIRP_PORT}/"),
                        15, "the published port to reach httpd")
        assert body == "served from the container\n"
        p.run("stop", "-t", "1", cid)
        wait_for(lambda: not set(ferry_slirps()) & mine, 15,
                 "ferry to exit when podman closes the exit fd")
        p.run("rm", cid)
        cid = None
    finally:
        if cid:
            p.run("rm", "-f", "-t", "0", cid, check=False)
