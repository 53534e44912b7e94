"""Live migration of a vhost-user guest between two ferries (issue 22).

Two qemu 10.0 (TCG; test/qemu10.sh unpacks it beside the system's 7.2,
run.sh calls it before the sandbox), each against its own `ferry vm
--vhost-user`: the source boots the test guest, the destination waits
with -incoming on a UNIX socket; the QMP monitor of the source starts
`migrate unix:PATH`. qemu refuses to migrate a vhost-user device without
dirty logging (LOG_ALL), and carries ferry's device state in its stream
(DEVICE_STATE): both ferries log the transfer.

The guest pings its gateway every 0.2 s through the switch-over and
counts the longest run of missing replies (the downtime as the guest saw
it, printed as INFO for the report); after it, ping and a new DHCP
request must work through the destination's ferry. A migration cancelled
while memory is being copied leaves the guest working on the source.
"""
import json
import os
import socket
import subprocess
import time
from pathlib import Path

import pytest

from conftest import ROOT, wait_for
from vmguest import GUEST_PRELUDE, FerryVM, build_guest

QEMU10_DIR = Path(os.environ.get("QEMU10_DIR", "/var/cache/ferry/qemu10"))
QEMU10 = QEMU10_DIR / "usr" / "bin" / "qemu-system-x86_64"
MAC = "52:54:00:12:34:56"
PINGS = 300			# at 0.2 s: a minute of guest time

GUEST_SCRIPT = GUEST_PRELUDE + r"""
. /run/ferry/dhcp.env 2>/dev/null
GW=${router:-198.51.100.1}
check "ping before migration" ping -c 1 -W 10 "$GW"
echo "MIGRATE-NOW"
ping -i 0.2 -c %(pings)d -W 2 "$GW" > /tmp/ping.txt 2>&1
awk -F'seq=' '/seq=/ { split($2, a, " "); s = a[1] + 0;
	if (seen && s - last - 1 > gap) gap = s - last - 1; last = s; seen = 1 }
	END { print "INFO longest gap", gap + 0, "replies missing in a row" }' \
	/tmp/ping.txt
tail -n 2 /tmp/ping.txt | sed 's/^/INFO /' 
check "ping after migration" ping -c 3 -W 5 "$GW"
check "DHCP after migration" udhcpc -i eth0 -n -q -t 3 -T 3 -s /bin/true
exit $fail
""" % {"pings": PINGS}


def qemu10_or_fail():
    if not QEMU10.exists():
        pytest.fail(f"qemu 10.0 not found at {QEMU10}: run test/qemu10.sh "
                    "as root (Debian bookworm-backports qemu-system-x86)")
    return str(QEMU10)


class Qmp:
    """A QMP monitor client: one command at a time, events skipped."""

    def __init__(self, path, timeout=30):
        self.s = None
        wait_for(lambda: self._connect(path), timeout, f"QMP at {path}")
        self.f = self.s.makefile("rw")
        json.loads(self.f.readline())		# the greeting
        self.cmd("qmp_capabilities")

    def _connect(self, path):
        try:
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.connect(path)
        except OSError:
            return False
        self.s = s
        return True

    def cmd(self, name, **args):
        self.f.write(json.dumps({"execute": name, "arguments": args}) + "\n")
        self.f.flush()
        while True:
            r = json.loads(self.f.readline())
            if "return" in r:
                return r["return"]
            if "error" in r:
                raise AssertionError(f"QMP {name}: {r['error']}")

    def close(self):
        self.s.close()


def initrd(cache, script, work):
    """The base initramfs with script appended as /test.sh (run.sh's way)."""
    stage = work / "stage"
    (stage / "root").mkdir(parents=True)
    (stage / "test.sh").write_text(script)
    (stage / "test.sh").chmod(0o755)
    out = work / "initrd"
    out.write_bytes((Path(cache) / "initramfs.cpio.gz").read_bytes())
    files = subprocess.run(["find", ".", "-mindepth", "1"], cwd=stage,
                           capture_output=True, check=True).stdout
    cpio = subprocess.run(["cpio", "--quiet", "-o", "-H", "newc", "-R",
                           "0:0"], cwd=stage, input=files,
                          capture_output=True, check=True).stdout
    with open(out, "ab") as f:
        f.write(cpio)
    return out


def qemu(work, name, cache, rd, sock, incoming=None):
    """Start qemu 10 (TCG) for the guest against ferry's socket sock."""
    cmd = [qemu10_or_fail(), "-L", str(QEMU10_DIR / "usr/share/qemu"),
           "-nodefaults", "-no-user-config", "-no-reboot",
           "-machine", "pc,accel=tcg", "-cpu", "qemu64", "-smp", "1",
           "-m", "256", "-display", "none",
           "-serial", f"file:{work / (name + '.console')}",
           "-qmp", f"unix:{work / (name + '.qmp')},server=on,wait=off",
           "-kernel", str(Path(cache) / "vmlinux"), "-initrd", str(rd),
           "-append", "console=ttyS0 quiet panic=-1 8250.nr_uarts=1 "
           "no_timer_check ferry.dad=0",
           "-nic", "none",
           "-object", "memory-backend-memfd,id=mem,size=256M,share=on",
           "-numa", "node,memdev=mem",
           "-chardev", f"socket,id=c0,path={sock}",
           "-netdev", "vhost-user,id=n0,chardev=c0",
           "-device", f"virtio-net-pci,netdev=n0,mac={MAC},vectors=0"]
    if incoming:
        cmd += ["-incoming", f"unix:{incoming}"]
    log = open(work / (name + ".qemu.out"), "w")
    return subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL)


def console(work, name):
    p = work / (name + ".console")
    return p.read_text(errors="replace").replace("\r", "") \
        if p.exists() else ""


def stop(p):
    if p.poll() is None:
        p.kill()
    p.wait(timeout=10)


def run_migration(tmp_path_factory, name, cancel):
    """Boot on the source, migrate to the destination while pinging (or,
    cancel: start the migration slowed down and cancel it once memory is
    moving); yields consoles, both ferries, the migration's figures."""
    cache, _ = build_guest()
    work = tmp_path_factory.mktemp(name)
    (work / "src").mkdir()
    (work / "dst").mkdir()
    fsrc = FerryVM(work / "src", ["--vhost-user"])
    fdst = FerryVM(work / "dst", ["--vhost-user"])
    rd = initrd(cache, GUEST_SCRIPT, work)
    mig = work / "mig.sock"
    procs = []
    r = {"work": work, "src": fsrc, "dst": fdst}
    try:
        procs.append(qemu(work, "src", cache, rd, fsrc.sock))
        procs.append(qemu(work, "dst", cache, rd, fdst.sock, incoming=mig))
        wait_for(lambda: "MIGRATE-NOW" in console(work, "src") or
                 procs[0].poll() is not None, 300, "the guest to boot")
        assert procs[0].poll() is None, console(work, "src")
        q = Qmp(str(work / "src.qmp"))
        if cancel:			# 256 KiB/s: many seconds of copying
            q.cmd("migrate-set-parameters", **{"max-bandwidth": 256 << 10})
        t0 = time.monotonic()
        q.cmd("migrate", uri=f"unix:{mig}")

        def status():
            r["info"] = q.cmd("query-migrate")
            return r["info"].get("status")
        if cancel:
            wait_for(lambda: r["info"].get("ram", {}).get("transferred", 0)
                     > (1 << 20) if status() == "active" else
                     status() != "setup", 60, "memory moving", interval=0.2)
            assert status() == "active", r["info"]
            q.cmd("migrate_cancel")
        wait_for(lambda: status() in ("completed", "failed", "cancelled"),
                 180, "the migration to end", interval=0.2)
        r["wall"] = time.monotonic() - t0
        q.close()
        want = "cancelled" if cancel else "completed"
        assert r["info"]["status"] == want, (
            f"{r['info']}\nsource ferry:\n{fsrc.output()[-2000:]}\n"
            f"destination ferry:\n{fdst.output()[-2000:]}\n"
            f"{(work / 'dst.qemu.out').read_text()[-2000:]}")
        end = "src" if cancel else "dst"
        wait_for(lambda: "FERRY-GUEST-EXIT" in console(work, end) or
                 procs[0 if cancel else 1].poll() is not None, 300,
                 "the guest to finish")
        # the source's console holds what came before the switch
        r["console"] = console(work, "src") + \
            ("" if cancel else console(work, "dst"))
        yield r
    finally:
        for p in procs:
            stop(p)
        fsrc.stop()
        fdst.stop()


@pytest.fixture(scope="module")
def migrated(tmp_path_factory):
    yield from run_migration(tmp_path_factory, "migrate", cancel=False)


@pytest.fixture(scope="module")
def cancelled(tmp_path_factory):
    yield from run_migration(tmp_path_factory, "cancel", cancel=True)


def check(r, name):
    line = [ln for ln in r["console"].splitlines()
            if ln.startswith(("PASS " + name, "FAIL " + name))]
    assert line and line[0].startswith("PASS"), (
        f"{name}: {line}\nguest:\n{r['console'][-3000:]}\n"
        f"destination ferry:\n{r['dst'].output()[-2000:]}")


def test_migration_completes_with_device_state(migrated):
    src, dst = migrated["src"].output(), migrated["dst"].output()
    assert "dirty log of" in src or "device state sent" in src, src
    assert "vhost-user: device state sent" in src, src
    assert "vhost-user: device state received" in dst, dst
    assert "migration: device state taken" in dst, dst
    assert "migration: gateway announced to the guest" in dst, dst
    print("INFO migration", migrated["info"].get("downtime"), "ms downtime "
          "(qemu's figure),", f"{migrated['wall']:.1f} s wall")
    print("INFO", [ln for ln in src.splitlines() if "device state" in ln])


@pytest.mark.parametrize("name", ["ping before migration",
                                  "ping after migration",
                                  "DHCP after migration"])
def test_guest_works_after_migration(migrated, name):
    check(migrated, name)


def test_guest_downtime_reported(migrated):
    info = [ln for ln in migrated["console"].splitlines()
            if ln.startswith("INFO ")]
    assert any(ln.startswith("INFO longest gap") for ln in info), \
        migrated["console"][-3000:]
    print("\n".join(info), "(pings 0.2 s apart)")


@pytest.mark.parametrize("name", ["ping before migration",
                                  "ping after migration",
                                  "DHCP after migration"])
def test_cancelled_migration_leaves_source_working(cancelled, name):
    """Cancelled while memory moves: the guest goes on on the source, its
    ferry serving it (the rings restarted, logging off)."""
    assert "device state sent" not in cancelled["src"].output()
    assert cancelled["src"].alive(), cancelled["src"].output()
    check(cancelled, name)
