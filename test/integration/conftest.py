"""Shared fixtures for ferry's integration tests.

The whole pytest run happens inside test/sandbox.sh: a private user and
network namespace whose "host" network (uplink0, 198.51.100.2/24 and
2001:db8::2/64, default routes to nobody) cannot reach outside this
machine. Each test starts its own ferry and guest namespace and acts from
inside the guest with real tools (ip, ping, busybox udhcpc, ...).
test_rootless.py alone runs in a variant of that sandbox without a user
namespace (FERRY_SANDBOX_ROOT=1), to run ferry as a real unprivileged uid.

Rules: no sleeping-and-hoping (use wait_for with a deadline); processes
are only ever ended by the PIDs we started.

FERRY_VALGRIND=1 (make valgrind) runs every ferry the tests start under
valgrind memcheck (test/valgrind-ferry.sh, on FERRY_BIN): a test fails
when one reported an error, and every deadline given to wait_for(), run()
and Ferry is SLOW times longer (tests with deadlines of their own scale
them by SLOW too). VM mode only: valgrind (3.19) cannot run namespace
mode, it has no pidfd_open() and refuses ns.c's helper task,
clone(CLONE_VM | CLONE_FILES | CLONE_VFORK), as "Unsupported clone()
flags" (test/run.sh runs the VM-mode test files).
"""
import os
import re
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FERRY = os.environ.get("FERRY_BIN", str(ROOT / "ferry"))
VALGRIND = os.environ.get("FERRY_VALGRIND") == "1"
SLOW = 6 if VALGRIND else 1    # the one factor deadlines widen by
if VALGRIND:
    os.environ["FERRY_VG_BIN"] = FERRY
    FERRY = str(ROOT / "test" / "valgrind-ferry.sh")

HOST4, HOST6 = "198.51.100.2", "2001:db8::2"
GW4, GW6 = "198.51.100.1", "2001:db8::1"


def pytest_sessionstart(session):
    if os.environ.get("FERRY_SANDBOX") != "1":
        pytest.exit("integration tests must run inside test/sandbox.sh "
                    "(use make check)", returncode=3)


def wait_for(pred, timeout=10.0, what="condition", interval=0.02):
    """Poll pred() until it returns a true value or the deadline passes."""
    timeout *= SLOW
    deadline = time.monotonic() + timeout
    while True:
        v = pred()
        if v:
            return v
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(interval)


def require(tool):
    """Fail (never skip) when a tool the test needs is missing."""
    if not shutil.which(tool):
        pytest.fail(f"required tool '{tool}' is not installed "
                    "(test/deps.sh installs it as root)")


def run(cmd, timeout=30, check=True, **kw):
    """Run a command in the sandbox host namespace."""
    r = subprocess.run(cmd, capture_output=True, text=True,
                       timeout=timeout * SLOW, **kw)
    if check and r.returncode != 0:
        raise AssertionError(f"{cmd} exited {r.returncode}\nstdout:\n{r.stdout}"
                             f"\nstderr:\n{r.stderr}")
    return r


def hold_port(port, kind=socket.SOCK_STREAM, fams=("4", "6")):
    """Sockets bound to port on the host (any address, per family in
    fams), not listening and without SO_REUSEADDR: like a client socket
    that has the port as its local one, they keep ferry's forwarding
    listener from binding it in that family. Close them to free it."""
    socks = []
    for fam in fams:
        s = socket.socket(socket.AF_INET if fam == "4" else socket.AF_INET6,
                          kind)
        if fam == "6":
            s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
        s.bind(("0.0.0.0" if fam == "4" else "::", port))
        socks.append(s)
    return socks


class Ferry:
    """A running `ferry ns` with a guest namespace held by a sleeping shell.

    guest(cmd) runs a command inside the guest's user+network namespace.
    """

    def __init__(self, tmp_path, args=(), config_net=True, cmd=None):
        self.tmp = tmp_path
        self.pidfile = tmp_path / "guest.pid"
        self.logpath = tmp_path / "ferry.log"
        hold = cmd or ["sh", "-c", f"echo $$ > {self.pidfile}; exec sleep 3600"]
        # --stats: the tests read the statistics ferry logs at exit
        # (quiet by default); every 86400 s never fires during a test.
        argv = [FERRY, "ns", "-f", "--stats", "86400"]
        if config_net:
            argv.append("--config-net")
        argv += list(args) + ["--"] + hold
        self.argv = argv
        self.log = open(self.logpath, "w")
        self.proc = subprocess.Popen(argv, stdout=self.log, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL)
        self.guest_pid = None
        if cmd is None:
            self.guest_pid = int(wait_for(self._read_pid, 10, "guest namespace"))

    def _read_pid(self):
        if self.proc.poll() is not None:
            raise AssertionError(f"ferry exited early ({self.proc.returncode}):\n"
                                 + self.output())
        try:
            txt = self.pidfile.read_text().strip()
            return txt if txt else None
        except FileNotFoundError:
            return None

    def output(self):
        self.log.flush()
        return self.logpath.read_text(errors="replace")

    def guest(self, cmd, timeout=30, check=True, **kw):
        """Run cmd (list or shell string) inside the guest namespace."""
        if isinstance(cmd, str):
            cmd = ["sh", "-c", cmd]
        full = ["nsenter", "-t", str(self.guest_pid), "-U", "-n",
                "--preserve-credentials"] + cmd
        r = subprocess.run(full, capture_output=True, text=True,
                           timeout=timeout * SLOW, **kw)
        if check and r.returncode != 0:
            raise AssertionError(f"guest: {cmd} exited {r.returncode}\n"
                                 f"stdout:\n{r.stdout}\nstderr:\n{r.stderr}\n"
                                 f"ferry log:\n{self.output()}")
        return r

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=10 * SLOW)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()
        return self.proc.returncode


def start_fails(ferry_ns, args, held, tmp_path):
    """Start ferry with args while the sockets held live: it must exit
    with an error before it runs its command. Returns its output."""
    marker = tmp_path / "ran"
    try:
        f = ferry_ns(args=args, cmd=["touch", str(marker)])
        rc = f.proc.wait(timeout=30)
    finally:
        for s in held:
            s.close()
    assert rc != 0, f.output()
    assert not marker.exists()
    return f.output()


def valgrind_reports(logdir, seen):
    """The reports in the valgrind logs under logdir (vg.PID.log) beyond
    the first seen[log] of each; updates seen. A report is a line
    followed by a stack ("at 0x..."): an error or a fatal signal."""
    new = []
    for log in sorted(logdir.glob("vg.*.log")):
        lines = log.read_text(errors="replace").splitlines()
        starts = [i for i in range(len(lines) - 1)
                  if re.match(r"==\d+== \S", lines[i])
                  and re.match(r"==\d+==    at 0x", lines[i + 1])]
        for i in starts[seen.get(log, 0):]:
            j = i + 1
            while j < len(lines) and re.match(r"==\d+== {3,}\S", lines[j]):
                j += 1
            new.append(f"{log.name}:\n" + "\n".join(lines[i:j]))
        seen[log] = len(starts)
    return new


@pytest.fixture(scope="session")
def _valgrind_logs(tmp_path_factory):
    """FERRY_VALGRIND: one log directory for the session (a ferry may
    outlive the test that started it); errors reported after the last
    test fail the session's teardown."""
    if not VALGRIND:
        yield None
        return
    d = tmp_path_factory.mktemp("valgrind")
    os.environ["FERRY_VG_LOGDIR"] = str(d)
    seen = {}
    yield d, seen
    new = valgrind_reports(d, seen)
    assert not new, "valgrind:\n" + "\n\n".join(new)


@pytest.fixture(autouse=True)
def _valgrind_clean(_valgrind_logs):
    """FERRY_VALGRIND: fail the test during which valgrind reported."""
    yield
    if _valgrind_logs:
        new = valgrind_reports(*_valgrind_logs)
        assert not new, "valgrind:\n" + "\n\n".join(new)


@pytest.fixture
def ferry_ns(tmp_path):
    """Factory: ferry_ns(args=(), config_net=True) -> Ferry; stopped after."""
    started = []

    def start(args=(), config_net=True, cmd=None):
        d = tmp_path / f"f{len(started)}"
        d.mkdir()
        f = Ferry(d, args, config_net, cmd)
        started.append(f)
        return f

    yield start
    for f in started:
        f.stop()
