"""backends.py - the network paths being compared, as "guest namespaces".

Each backend gives a guest network namespace, connected to the sandbox's
host namespace (test/sandbox.sh) at a given MTU, plus:
  guest(argv)      the argv that runs a command inside the guest;
  server(fam)      the address a guest client uses to reach a server that
                   listens on the host's wildcard address (None: n/a, the
                   reason is in self.na[fam]);
  pid              the translator process (for CPU time and peak RSS),
                   None for veth (the kernel does the work).

  veth         two namespaces joined by a veth pair: the kernel's limit.
               Host 192.0.2.1/24 + 2001:db8:b::1/64, guest .2/::2.
  ferry        `ferry ns -f --config-net -m MTU -- sleep infinity`; the guest
               reaches the host through its gateway address (mapped to the
               host's loopback).
  pasta        the same command line with Debian's pasta (plus --runas 0:
               as root pasta would switch to nobody and then fail to set up
               the namespace in the sandbox).
  ferry-base   the same with another ferry build (FERRY_BASE_BIN), for an
               A/B on every row in one run.
  pasta-trixie the same with Debian trixie's pasta (2025-05), unpacked by
               test/bench/peers.sh and run through trixie's own loader.
  slirp4netns  `slirp4netns --configure --mtu MTU --enable-ipv6 PID tap0`
               on a namespace we create; 10.0.2.2 / fd00::2 reach the host's
               loopback.

All of them run in the same sandbox; nothing leaves the machine.
"""
import json
import os
import shutil

import procs

NO_FWD = ["-t", "none", "-u", "none", "-T", "none", "-U", "none"]

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
# test/bench/peers.sh's wrappers (trixie's passt through its own loader)
TRIXIE_BIN = os.path.join(ROOT, "build", "peers", "trixie", "bin")


class BackendError(Exception):
    pass


class Backend:
    name = "?"
    peer = False		# a peer tool (pasta, slirp4netns): ratio base

    def __init__(self, mtu, workdir):
        self.mtu = mtu
        self.dir = os.path.join(workdir, f"{self.name}-{mtu}")
        os.makedirs(self.dir, exist_ok=True)
        self.log = os.path.join(self.dir, "log")
        if os.path.exists(self.log):
            os.unlink(self.log)	# errors must quote this run's log only
        self.proc = None	# the translator (pid for CPU), if any
        self.holder = None	# the process holding the guest namespace
        self.gpid = None
        self.addrs = {}
        self.na = {}
        self.ns_args = ["-n"]

    @property
    def pid(self):
        return self.proc.pid if self.proc else None

    def guest(self, argv):
        return ["nsenter", "-t", str(self.gpid)] + self.ns_args + list(argv)

    def gjson(self, *args):
        r = procs.run(self.guest(["ip", "-j"] + list(args)), timeout=10)
        try:
            return json.loads(r.stdout or "[]")
        except ValueError:
            return []

    def server(self, fam):
        return self.addrs.get(fam)

    def log_tail(self, n=6):
        try:
            with open(self.log, errors="replace") as f:
                lines = [ln.strip() for ln in f if ln.strip()]
            return " | ".join(lines[-n:])
        except OSError:
            return ""

    def check_alive(self):
        if self.proc and not procs.alive(self.proc):
            raise BackendError(f"{self.name} exited ({self.proc.returncode}): "
                               + self.log_tail())

    def peak_rss_kib(self):
        return procs.peak_rss_kib(self.pid) if self.pid else None

    def stop(self):
        procs.stop(self.proc)
        procs.stop(self.holder)
        self.proc = self.holder = None

    # -- helpers shared by the userspace backends -------------------------

    def _find_guest(self, parent, timeout=10):
        """PID of the `sleep` descendant of parent (the namespace holder)."""
        def look():
            self.check_alive()
            todo = [parent]
            while todo:
                p = todo.pop()
                try:
                    with open(f"/proc/{p}/task/{p}/children") as f:
                        kids = f.read().split()
                    with open(f"/proc/{p}/comm") as f:
                        comm = f.read().strip()
                except OSError:
                    continue
                if comm == "sleep" and p != parent:
                    return p
                todo += [int(k) for k in kids]
            return None
        pid = procs.wait_for(look, timeout)
        if not pid:
            raise BackendError(f"{self.name}: no guest namespace after {timeout}s: "
                               + self.log_tail())
        return pid

    def _wait_net(self, want4=None, want6=None, timeout=10):
        """Wait for default routes and settled (non-tentative) addresses."""
        def ready():
            self.check_alive()
            r4 = self.gjson("-4", "route", "show", "default")
            r6 = self.gjson("-6", "route", "show", "default")
            a6 = self.gjson("-6", "addr", "show", "scope", "global")
            tent = any(a.get("tentative") for i in a6 for a in i.get("addr_info", []))
            have6 = any(a.get("local") for i in a6 for a in i.get("addr_info", []))
            return (r4, r6) if r4 and (r6 or want6 is False) and have6 and not tent else None
        got = procs.wait_for(ready, timeout, interval=0.1)
        r4 = self.gjson("-4", "route", "show", "default")
        r6 = self.gjson("-6", "route", "show", "default")
        for fam, routes, want in (("4", r4, want4), ("6", r6, want6)):
            if want:
                self.addrs[fam] = want
            elif routes and routes[0].get("gateway"):
                gw = routes[0]["gateway"]
                if gw.startswith("fe80:"):
                    gw += "%" + routes[0]["dev"]
                self.addrs[fam] = gw
            else:
                self.na[fam] = f"no IPv{fam} default route in the guest"
        if not got:
            self.na.setdefault("6", "IPv6 address not ready after "
                               f"{timeout}s")


class Veth(Backend):
    name = "veth"
    # interface name prefix, host/guest addresses (ab.py's relay variant
    # runs a second pair beside this one)
    ifx, net4, plen4, net6 = "bv", "192.0.2.", 24, "2001:db8:b::"

    def start(self):
        self.holder = procs.start(["unshare", "-n", "--", "sleep", "infinity"],
                                  log=self.log)
        self.gpid = self._find_guest_self()
        h, g = f"{self.ifx}h{self.mtu}", f"{self.ifx}g{self.mtu}"
        n4, n6 = self.net4, self.net6
        m = str(self.mtu)
        cmds = [
            ["ip", "link", "add", h, "mtu", m, "type", "veth", "peer", "name", g,
             "mtu", m, "netns", str(self.gpid)],
            ["ip", "addr", "add", f"{n4}1/{self.plen4}", "dev", h],
            ["ip", "-6", "addr", "add", f"{n6}1/64", "dev", h, "nodad"],
            ["ip", "link", "set", h, "up"],
        ]
        gcmds = [
            ["ip", "link", "set", "lo", "up"],
            ["ip", "addr", "add", f"{n4}2/{self.plen4}", "dev", g],
            ["ip", "-6", "addr", "add", f"{n6}2/64", "dev", g, "nodad"],
            ["ip", "link", "set", g, "up"],
            ["ip", "route", "add", "default", "via", f"{n4}1"],
            ["ip", "-6", "route", "add", "default", "via", f"{n6}1"],
        ]
        for c in cmds + [self.guest(c) for c in gcmds]:
            r = procs.run(c, timeout=10)
            if r.returncode:
                raise BackendError(f"veth: {' '.join(c)}: {r.stderr.strip()}")
        self._wait_net(f"{n4}1", f"{n6}1")

    def _find_guest_self(self):
        # unshare execs sleep in place: the holder is the guest.
        ok = procs.wait_for(lambda: os.readlink(f"/proc/{self.holder.pid}/ns/net")
                            != os.readlink("/proc/self/ns/net"), 5)
        if not ok:
            raise BackendError("veth: namespace holder did not start")
        return self.holder.pid


class Ferry(Backend):
    name = "ferry"

    def __init__(self, mtu, workdir, binary):
        super().__init__(mtu, workdir)
        self.binary = binary
        self.ns_args = ["-U", "-n", "--preserve-credentials"]

    def argv(self):
        return [self.binary, "ns", "-f", "--config-net", "-m", str(self.mtu)] + NO_FWD

    def start(self):
        self.proc = procs.start(self.argv() + ["--", "sleep", "infinity"], log=self.log)
        self.gpid = self._find_guest(self.proc.pid)
        self._wait_net()


class FerryBase(Ferry):
    """Another ferry build beside the one under test (FERRY_BASE_BIN):
    an A/B in the same run, every row."""
    name = "ferry-base"


class Pasta(Ferry):
    name = "pasta"
    peer = True

    def __init__(self, mtu, workdir, binary="pasta"):
        super().__init__(mtu, workdir, binary)

    def argv(self):
        return [self.binary, "-f", "--runas", "0", "--config-net",
                "-m", str(self.mtu)] + NO_FWD


class PastaTrixie(Pasta):
    name = "pasta-trixie"

    def __init__(self, mtu, workdir):
        super().__init__(mtu, workdir, os.path.join(TRIXIE_BIN, "pasta"))


class Slirp(Backend):
    name = "slirp4netns"
    peer = True

    def start(self):
        if self.mtu > 65520:
            raise BackendError("slirp4netns: MTU above 65520")
        self.holder = procs.start(["unshare", "-n", "--", "sleep", "infinity"],
                                  log=self.log)
        self.gpid = Veth._find_guest_self(self)
        self.proc = procs.start(["slirp4netns", "--configure", f"--mtu={self.mtu}",
                                 "--enable-ipv6", str(self.gpid), "tap0"], log=self.log)
        self._wait_net("10.0.2.2", "fd00::2")


def trixie_version():
    """The trixie passt package's version (peers.sh wrote it), or None."""
    try:
        with open(os.path.join(TRIXIE_BIN, "..", "VERSION")) as f:
            return f.read().strip() or None
    except OSError:
        return None


def available(name):
    """Why a peer tool cannot run (missing binary), or None."""
    if name in ("pasta-trixie", "passt-trixie"):
        if os.access(os.path.join(TRIXIE_BIN, name.split("-")[0]), os.X_OK):
            return None
        return os.environ.get("BENCH_TRIXIE_ERROR") or "trixie passt not unpacked " \
            "(test/bench/peers.sh)"
    exe = {"pasta": "pasta", "slirp4netns": "slirp4netns"}.get(name)
    if exe and not shutil.which(exe):
        return f"{exe} not installed"
    return None
