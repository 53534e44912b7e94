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

TCP connections move too (TCP_REPAIR, through `ferry repair` helpers, one
per ferry): a guest connection to a host server streams both ways
through the migration (lines stamped with the guest's uptime as they
arrive: the longest gap is the downtime the stream saw), and a -t
connection into the guest echoes a stream; every byte must arrive, with
no reset, and new connections work after. The source qemu is quit once
the migration completed: its ferry then closes the sockets it kept in
repair mode, and the destination's, waiting for the same 4-tuples on
this one host, connect. A third migration has the source's ferry corrupt
the state it sends (a test build's FERRY_TEST_MIG_CORRUPT): the
destination refuses it with one line and serves the guest on.
"""
import json
import os
import re
import socket
import subprocess
import threading
import time
from pathlib import Path

import pytest

from conftest import FERRY, ROOT, wait_for
from vmguest import GUEST_PRELUDE, FerryVM, Servers, build_guest, sha, \
    tcp_source

QEMU10_DIR = Path(os.environ.get("QEMU10_DIR", "/var/cache/ferry/qemu10"))
QEMU10 = QEMU10_DIR / "usr" / "bin" / "qemu-system-x86_64"
MAC = "52:54:00:12:34:56"
PINGS = 300			# at 0.2 s: a minute of guest time
# host ports, the guest's -t port, -t on each ferry (each migration its
# own: the module's fixtures live side by side)
PORTS = {"migrate": 18300, "cancel": 18400, "corrupt": 18500}
STREAM, NEW, FWD_GUEST, FWD_SRC, FWD_DST = 0, 1, 2, 11, 12
H_LINES, G_LINES, F_LINES = 600, 300, 300	# lines of each stream
NEW_DATA = bytes(range(256)) * 64


def h_line(i):
    return b"h%05d %s\n" % (i, b"x" * 50)


def g_line(i):
    return b"g%05d %s\n" % (i, b"y" * 50)


def f_line(i):
    return b"f%05d %s\n" % (i, b"z" * 50)


H_DATA = b"".join(h_line(i) for i in range(H_LINES))
G_DATA = b"".join(g_line(i) for i in range(G_LINES))
F_DATA = b"".join(f_line(i) for i in range(F_LINES))

GUEST_SCRIPT = GUEST_PRELUDE + r"""
. /run/ferry/dhcp.env 2>/dev/null
GW=${router:-198.51.100.1}
check "ping before migration" ping -c 1 -W 10 "$GW"
# -t: echo one connection back
(nc -l -p %(fwd)d -e cat; echo $? > /tmp/fwd.rc) &
# TCP both ways: the guest's lines 0.2 s apart, the host's stamped with
# the guest's uptime as they arrive
mkfifo /tmp/g2h
(i=0; while [ $i -lt %(glines)d ]; do printf 'g%%05d %%s
' $i 	yyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyy; i=$((i+1));
	sleep 0.2; done; sleep 600) > /tmp/g2h &
GEN=$!
(nc $GW %(stream)d < /tmp/g2h | while read -r l; do
	read -r up x < /proc/uptime; echo "$up $l"; done > /tmp/h2g.txt
	echo done > /tmp/h2g.done) &
echo "MIGRATE-NOW"
ping -i 0.2 -c %(pings)d -W 2 "$GW" > /tmp/ping.txt 2>&1
awk -F'seq=' '/seq=/ { split($2, a, " "); s = a[1] + 0;
	if (seen && s - last - 1 > gap) gap = s - last - 1; last = s; seen = 1 }
	END { print "INFO longest gap", gap + 0, "replies missing in a row" }' \
	/tmp/ping.txt
tail -n 2 /tmp/ping.txt | sed 's/^/INFO /' 
check "ping after migration" ping -c 3 -W 5 "$GW"
check "DHCP after migration" udhcpc -i eth0 -n -q -t 3 -T 3 -s /bin/true
i=0; while [ ! -f /tmp/h2g.done ] && [ $i -lt 240 ]; do sleep 0.5; i=$((i+1)); done
kill $GEN 2>/dev/null
awk '{ if (n++ && $1 - last > gap) gap = $1 - last; last = $1 }
	END { printf "INFO TCP stream longest gap %%.2f s, %%d lines\n", gap, n }' 	/tmp/h2g.txt
check "TCP stream host to guest intact" sh -c "cut -d' ' -f2- /tmp/h2g.txt | sha256sum | grep -q %(hsha)s"
check "TCP connection after migration" sh -c "timeout 30 nc -w 5 $GW %(new)d > /tmp/new.bin; sha256sum /tmp/new.bin | grep -q %(nsha)s"
i=0; while [ ! -f /tmp/fwd.rc ] && [ $i -lt 120 ]; do sleep 0.5; i=$((i+1)); done
check "forwarded TCP connection served" test "$(cat /tmp/fwd.rc 2>/dev/null)" = 0
exit $fail
"""


def guest_script(base):
    """The guest's script for a migration whose ports start at base."""
    return GUEST_SCRIPT % {
        "pings": PINGS, "fwd": base + FWD_GUEST, "glines": G_LINES,
        "stream": base + STREAM, "hsha": sha(H_DATA), "new": base + NEW,
        "nsha": sha(NEW_DATA), "ypad": "y" * 50}


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


def helper(ferry):
    """`ferry repair` on ferry's --repair-path (the -s path + .repair),
    the helper holding CAP_NET_ADMIN (the sandbox's root): it exits when
    ferry closes its end."""
    path = ferry.sock + ".repair"
    wait_for(lambda: os.path.exists(path), 10, f"{path}")
    log = open(str(ferry.tmp / "repair.out"), "w")
    return subprocess.Popen([FERRY, "repair", path], stdout=log,
                            stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL)


def stream_handler(r):
    """The host's end of the guest's connection: H_LINES lines 0.1 s
    apart while reading the guest's G_LINES; then it closes. What came
    and what went wrong are in r."""
    def handle(conn):
        conn.settimeout(240)
        got = bytearray()

        def rx():
            try:
                while got.count(b"\n") < G_LINES:
                    d = conn.recv(65536)
                    if not d:
                        break
                    got.extend(d)
            except OSError as e:
                r["stream_rx_error"] = repr(e)
        t = threading.Thread(target=rx, daemon=True)
        t.start()
        try:
            for i in range(H_LINES):
                conn.sendall(h_line(i))
                time.sleep(0.1)
        except OSError as e:
            r["stream_tx_error"] = repr(e)
        t.join(240)
        r["g2h"] = bytes(got)
    return handle


def fwd_connect(port, deadline):
    """A -t connection whose first line comes back (the guest's nc may
    not listen yet: its refusal resets the connection, so try again)."""
    last = None
    while time.monotonic() < deadline:
        try:
            s = socket.create_connection(("127.0.0.1", port), 10)
            s.settimeout(10)
            s.sendall(f_line(0))
            got = b""
            while len(got) < len(f_line(0)):
                d = s.recv(65536)
                if not d:
                    break
                got += d
            if got == f_line(0):
                return s, got
            s.close()
        except OSError as e:
            last = e
        time.sleep(0.5)
    raise OSError(f"no -t echo before the deadline: {last!r}")


def fwd_client(r, port):
    """A -t connection into the guest (its nc echoes): F_LINES lines 0.2 s
    apart, the echo read meanwhile; then half-closed, the rest read."""
    def run():
        got = bytearray()
        try:
            s, first = fwd_connect(port, time.monotonic() + 60)
            got.extend(first)
            s.settimeout(240)

            def rx():
                try:
                    while True:
                        d = s.recv(65536)
                        if not d:
                            break
                        got.extend(d)
                except OSError as e:
                    r["fwd_rx_error"] = repr(e)
            t = threading.Thread(target=rx, daemon=True)
            t.start()
            for i in range(1, F_LINES):
                s.sendall(f_line(i))
                time.sleep(0.2)
            s.shutdown(socket.SHUT_WR)
            t.join(240)
            s.close()
        except OSError as e:
            r["fwd_error"] = repr(e)
        r["fwd_back"] = bytes(got)
    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t


def run_migration(tmp_path_factory, name, cancel, corrupt=False):
    """Boot on the source, migrate to the destination while pinging and
    streaming (or, cancel: start the migration slowed down and cancel it
    once memory is moving; corrupt: the source's ferry corrupts the
    state); yields consoles, both ferries, the migration's figures."""
    cache, _ = build_guest()
    base = PORTS[name]
    work = tmp_path_factory.mktemp(name)
    (work / "src").mkdir()
    (work / "dst").mkdir()
    if corrupt:
        os.environ["FERRY_TEST_MIG_CORRUPT"] = "1"
    try:
        fsrc = FerryVM(work / "src", ["--vhost-user", "-t",
                                      f"{base + FWD_SRC}:{base + FWD_GUEST}"])
    finally:
        os.environ.pop("FERRY_TEST_MIG_CORRUPT", None)
    fdst = FerryVM(work / "dst", ["--vhost-user", "-t",
                                  f"{base + FWD_DST}:{base + FWD_GUEST}"])
    rd = initrd(cache, guest_script(base), work)
    mig = work / "mig.sock"
    procs = [None, None]
    srv = Servers()
    r = {"work": work, "src": fsrc, "dst": fdst}
    srv.tcp(base + STREAM, stream_handler(r))
    srv.tcp(base + NEW, tcp_source(NEW_DATA))
    helpers = [helper(fsrc), helper(fdst)]
    try:
        procs[0] = qemu(work, "src", cache, rd, fsrc.sock)
        procs[1] = qemu(work, "dst", cache, rd, fdst.sock, incoming=mig)
        wait_for(lambda: "MIGRATE-NOW" in console(work, "src") or
                 procs[0].poll() is not None, 300, "the guest to boot")
        assert procs[0].poll() is None, console(work, "src")
        fwd = fwd_client(r, base + FWD_SRC)
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
        want = "cancelled" if cancel else "completed"
        if r["info"].get("status") == "completed":
            # its ferry lets the sockets kept in repair mode go
            q.cmd("quit")
            procs[0].wait(timeout=30)
        q.close()
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
        fwd.join(60)
        yield r
    finally:
        for p in procs:
            if p:
                stop(p)
        srv.stop()
        fsrc.stop()
        fdst.stop()
        for h in helpers:
            try:
                h.wait(timeout=10)
            except subprocess.TimeoutExpired:
                h.kill()


@pytest.fixture(scope="module")
def migrated(tmp_path_factory):
    yield from run_migration(tmp_path_factory, "migrate", cancel=False)


@pytest.fixture(scope="module")
def corrupted(tmp_path_factory):
    yield from run_migration(tmp_path_factory, "corrupt", cancel=False,
                             corrupt=True)


@pytest.fixture(scope="module")
def cancelled(tmp_path_factory):
    yield from run_migration(tmp_path_factory, "cancel", cancel=True)


def check_streams(r):
    """Both TCP connections went on, every byte, no error."""
    errs = {k: v for k, v in r.items() if k.endswith("_error")}
    assert not errs, errs
    assert r.get("g2h") == G_DATA, (
        f"guest to host: {len(r.get('g2h') or b'')} of {len(G_DATA)} "
        f"bytes\nsource ferry:\n{r['src'].output()[-2000:]}\n"
        f"destination ferry:\n{r['dst'].output()[-2000:]}")
    assert r.get("fwd_back") == F_DATA, (
        f"-t echo: {len(r.get('fwd_back') or b'')} of {len(F_DATA)} "
        f"bytes\ndestination ferry:\n{r['dst'].output()[-2000:]}")


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


@pytest.mark.parametrize("name", ["TCP stream host to guest intact",
                                  "TCP connection after migration",
                                  "forwarded TCP connection served"])
def test_tcp_in_guest_after_migration(migrated, name):
    check(migrated, name)


def test_tcp_connections_carried_on(migrated):
    """The stream both ways and the -t echo, byte-exact, no reset: their
    sockets moved (the destination says so)."""
    dst = migrated["dst"].output()
    check_streams(migrated)
    assert "TCP connections carried on" in dst, dst
    assert not re.search(r"TCP \S+ -> \S+ not carried on", dst), dst
    print("INFO", [ln for ln in dst.splitlines() if "carried on" in ln])


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


def test_cancelled_migration_leaves_tcp_working(cancelled):
    """... and its TCP connections on, untouched."""
    check(cancelled, "TCP stream host to guest intact")
    check(cancelled, "forwarded TCP connection served")
    check_streams(cancelled)


def test_corrupted_state_refused(corrupted):
    """The source's ferry (a test build) flips a byte of the state it
    sends: the destination refuses it with one line naming why, starts
    without it and serves the guest on (its TCP connections reset)."""
    src, dst = corrupted["src"].output(), corrupted["dst"].output()
    assert "device state corrupted on purpose" in src, src
    refused = [ln for ln in dst.splitlines() if "device state refused" in ln]
    assert len(refused) == 1 and "checksum mismatch" in refused[0], dst
    assert "device state taken" not in dst, dst
    assert corrupted["dst"].alive(), dst
    check(corrupted, "ping after migration")
    check(corrupted, "DHCP after migration")
    print("INFO", refused[0])
