"""Helpers for the VM-mode tests (test_vm.py, test_vhost_user.py): `ferry
vm`, a stream client speaking qemu's socket protocol from Python, frame
builders, small host servers, booting the real test guest
(test/guest/run.sh), and the host side both guest sessions share (the
checks on it: vmchecks.py).

The stream protocol: each Ethernet frame travels as a 4-byte big-endian
length followed by the frame (qemu's -netdev stream/socket). StreamClient
checks every length it receives: a framing error anywhere in what ferry
sends fails the test at once.
"""
import contextlib
import hashlib
import os
import re
import signal
import socket
import struct
import subprocess
import threading
import time
from pathlib import Path

from conftest import FERRY, ROOT, SLOW, Ferry, wait_for

GUEST_DIR = ROOT / "test" / "guest"
FRAME_MAX = 14 + 40 + 65535		# pkt.h: Ethernet + IPv6 + 64 KiB
GUEST_MAC = bytes.fromhex("525400123456")
BCAST = b"\xff" * 6


class FramingError(AssertionError):
    pass


class FerryVM(Ferry):
    """A running `ferry vm -f` (or argv0 as given) on a UNIX socket;
    stop() is conftest.Ferry's."""

    def __init__(self, tmp, args=(), socket_path=True, argv0=None,
                 pass_fds=(), foreground=True):
        self.tmp = Path(tmp)
        self.sock = str(self.tmp / "ferry.sock") if socket_path is True \
            else socket_path
        self.logpath = self.tmp / "ferry.out"
        argv = [argv0] if argv0 else [FERRY, "vm"]
        if foreground:
            argv.append("-f")
        if self.sock:
            argv += ["-s", self.sock]
        # the exit statistics the tests read (conftest.Ferry says why)
        self.argv = argv + ["--stats", "86400"] + list(args)
        self.log = open(self.logpath, "w")
        self.proc = subprocess.Popen(
            self.argv, stdout=self.log, stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL, pass_fds=pass_fds)
        if self.sock:
            wait_for(self._listening, 10, f"ferry listening on {self.sock}")

    def _listening(self):
        if self.proc.poll() is not None:
            raise AssertionError(f"ferry exited early ({self.proc.returncode})"
                                 f":\n{self.output()}")
        return os.path.exists(self.sock) and _is_socket(self.sock)

    def output(self):
        if not self.log.closed:
            self.log.flush()
        return self.logpath.read_text(errors="replace")

    def alive(self):
        return self.proc.poll() is None

    def wait_exit(self, timeout=10):
        try:
            return self.proc.wait(timeout=timeout * SLOW)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"ferry still running after {timeout}s:\n"
                                 + self.output())

    def stats(self):
        """Drop counters from the exit statistics: {reason: count}."""
        out = self.output()
        assert "stats: from guest" in out, "no statistics in the log:\n" + out
        return {m.group(1): int(m.group(2)) for m in
                re.finditer(r"stats: drop (\S+) (\d+)", out)}


@contextlib.contextmanager
def ferry_vms(tmp_path, name, base=()):
    """A factory for a test's fixture: start(args=(), **kw) -> FerryVM
    with base + args, each in its own directory tmp_path/NAME<i>; all are
    stopped when the block ends."""
    started = []

    def start(args=(), **kw):
        d = tmp_path / f"{name}{len(started)}"
        d.mkdir()
        f = FerryVM(d, list(base) + list(args), **kw)
        started.append(f)
        return f

    try:
        yield start
    finally:
        for f in started:
            f.stop()


def _is_socket(path):
    import stat
    try:
        return stat.S_ISSOCK(os.stat(path).st_mode)
    except FileNotFoundError:
        return False


class StreamClient:
    """A qemu stand-in: length-prefixed Ethernet frames on a stream socket."""

    def __init__(self, path=None, sock=None, rcvbuf=None):
        if sock is None:
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            if rcvbuf:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
            sock.connect(path)
        elif rcvbuf:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        self.s = sock
        self.buf = b""
        self.pending = []		# parsed, not yet taken by wait_frame
        self.frames_seen = 0
        self.eof = False

    def close(self):
        self.s.close()

    def send_frame(self, frame):
        self.s.sendall(struct.pack(">I", len(frame)) + frame)

    def send_raw(self, data):
        self.s.sendall(data)

    def _parse(self):
        out = []
        while len(self.buf) >= 4:
            n = struct.unpack(">I", self.buf[:4])[0]
            if n < 14 or n > FRAME_MAX:
                raise FramingError(f"frame {self.frames_seen}: bad length "
                                   f"{n} (next bytes {self.buf[4:20].hex()})")
            if len(self.buf) < 4 + n:
                break
            out.append(self.buf[4:4 + n])
            self.buf = self.buf[4 + n:]
            self.frames_seen += 1
        return out

    def recv_some(self, timeout, bufsize=65536):
        """Frames that arrive within timeout (at least one read)."""
        self.s.settimeout(timeout)
        try:
            d = self.s.recv(bufsize)
        except socket.timeout:
            return []
        if not d:
            self.eof = True
            return []
        self.buf += d
        return self._parse()

    def wait_frame(self, pred, timeout=5.0, what="frame"):
        """Read frames until pred(frame) is true; return that frame."""
        timeout *= SLOW
        deadline = time.monotonic() + timeout
        while True:
            while self.pending:
                f = self.pending.pop(0)
                if pred(f):
                    return f
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"no {what} within {timeout}s")
            self.pending += self.recv_some(left)
            if self.eof:
                raise AssertionError(f"ferry closed the stream waiting for "
                                     f"{what}")

    def wait_closed(self, timeout=5.0):
        """True once ferry closes the connection (framing still checked)."""
        deadline = time.monotonic() + timeout * SLOW
        while not self.eof and time.monotonic() < deadline:
            try:
                self.recv_some(max(0.01, deadline - time.monotonic()))
            except (ConnectionResetError, BrokenPipeError):
                self.eof = True
        return self.eof


def ip4(a):
    return socket.inet_aton(a)


def arp_request(target, sender="198.51.100.2", mac=GUEST_MAC):
    """Broadcast ARP who-has target from (mac, sender)."""
    arp = struct.pack(">HHBBH", 1, 0x0800, 6, 4, 1) + mac + ip4(sender) + \
        b"\0" * 6 + ip4(target)
    return BCAST + mac + b"\x08\x06" + arp


def arp_reply_for(frame, target, mac=GUEST_MAC):
    """The ARP reply's sender MAC if frame answers who-has target to mac."""
    if len(frame) < 42 or frame[12:14] != b"\x08\x06":
        return None
    op = struct.unpack(">H", frame[20:22])[0]
    if op != 2 or frame[28:32] != ip4(target) or frame[32:38] != mac:
        return None
    return frame[22:28]


def is_arp_reply(target, mac=GUEST_MAC):
    return lambda f: arp_reply_for(f, target, mac) is not None


def csum(data):
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack(f">{len(data) // 2}H", data))
    while s >> 16:
        s = (s & 0xffff) + (s >> 16)
    return ~s & 0xffff


def dhcp_discover(mac=GUEST_MAC, xid=0x1234abcd, prl=(1, 3, 6, 12, 15, 26)):
    """A broadcast DHCPDISCOVER from mac asking for the options in prl."""
    bootp = struct.pack(">BBBBIHH", 1, 1, 6, 0, xid, 0, 0x8000) + \
        b"\0" * 16 + mac + b"\0" * 10 + b"\0" * 192 + b"\x63\x82\x53\x63"
    opts = bytes([53, 1, 1, 55, len(prl)]) + bytes(prl) + b"\xff"
    udp_payload = bootp + opts
    udp = struct.pack(">HHHH", 68, 67, 8 + len(udp_payload), 0) + udp_payload
    iph = struct.pack(">BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), 0, 0, 64, 17,
                      0, b"\0" * 4, b"\xff" * 4)
    iph = iph[:10] + struct.pack(">H", csum(iph)) + iph[12:]
    return BCAST + mac + b"\x08\x00" + iph + udp


def dhcp_parse(frame, xid=0x1234abcd):
    """(yiaddr, {option: bytes}) of a DHCP reply in frame with xid, or None."""
    if len(frame) < 14 + 20 + 8 + 240 or frame[12:14] != b"\x08\x00":
        return None
    ihl = (frame[14] & 15) * 4
    if frame[23] != 17:
        return None
    u = 14 + ihl
    if struct.unpack(">H", frame[u:u + 2])[0] != 67:
        return None
    b = frame[u + 8:]
    if b[0] != 2 or struct.unpack(">I", b[4:8])[0] != xid:
        return None
    opts, pos = {}, 240
    while pos < len(b) and b[pos] != 255:
        if b[pos] == 0:
            pos += 1
            continue
        n = b[pos + 1]
        opts[b[pos]] = b[pos + 2:pos + 2 + n]
        pos += 2 + n
    return socket.inet_ntoa(b[16:20]), opts


# ---------------------------------------------------------------- host side

class Servers:
    """Small host servers in threads, stopped together."""

    def __init__(self):
        self.threads = []
        self.socks = []
        self.results = {}
        self.stop_ev = threading.Event()

    def _thread(self, fn, *args):
        t = threading.Thread(target=fn, args=args, daemon=True)
        t.start()
        self.threads.append(t)

    def tcp(self, port, handler, host="127.0.0.1"):
        """Accept connections on host:port; handler(conn) per connection."""
        fam = socket.AF_INET6 if ":" in host else socket.AF_INET
        s = socket.socket(fam, socket.SOCK_STREAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind((host, port))
        s.listen(4)
        s.settimeout(0.2)
        self.socks.append(s)

        def loop():
            while not self.stop_ev.is_set():
                try:
                    conn, _ = s.accept()
                except (socket.timeout, OSError):
                    continue
                conn.settimeout(60)
                try:
                    handler(conn)
                except OSError as e:
                    self.results.setdefault("errors", []).append(repr(e))
                finally:
                    conn.close()
        self._thread(loop)

    def udp(self, port, handler, host="127.0.0.1"):
        """handler(sock, data, addr) for each datagram on host:port."""
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.bind((host, port))
        s.settimeout(0.2)
        self.socks.append(s)

        def loop():
            while not self.stop_ev.is_set():
                try:
                    data, addr = s.recvfrom(65535)
                except (socket.timeout, OSError):
                    continue
                handler(s, data, addr)
        self._thread(loop)

    def stop(self):
        self.stop_ev.set()
        for t in self.threads:
            t.join(timeout=5)
        for s in self.socks:
            s.close()


def dns_answer(query, answers):
    """A DNS response to query: A records from answers {name: ip4}, else
    NXDOMAIN. Only what nslookup needs."""
    qid, flags = struct.unpack(">HH", query[:4])
    pos, labels = 12, []
    while query[pos]:
        n = query[pos]
        labels.append(query[pos + 1:pos + 1 + n].decode())
        pos += 1 + n
    qtype = struct.unpack(">H", query[pos + 1:pos + 3])[0]
    question = query[12:pos + 5]
    name = ".".join(labels).lower()
    rr = b""
    rcode = 0
    if name in answers and qtype == 1:
        rr = b"\xc0\x0c" + struct.pack(">HHIH", 1, 1, 60, 4) + \
            ip4(answers[name])
    elif name not in answers:
        rcode = 3
    hdr = struct.pack(">HHHHHH", qid, 0x8180 | rcode | (flags & 0x0100), 1,
                      1 if rr else 0, 0, 0)
    return hdr + question + rr


def tftp_handler(files, received):
    """A TFTP (RFC 1350) server over one socket: RRQ serves files[name],
    WRQ stores into received[name]. Replies come from the same port."""
    state = {}

    def handle(s, data, addr):
        op = struct.unpack(">H", data[:2])[0]
        if op in (1, 2):
            name = data[2:].split(b"\0")[0].decode()
            if op == 1:
                body = files.get(name)
                if body is None:
                    s.sendto(struct.pack(">HH", 5, 1) + b"no such file\0",
                             addr)
                    return
                state[addr] = ("r", name, body)
                s.sendto(struct.pack(">HH", 3, 1) + body[:512], addr)
            else:
                state[addr] = ("w", name, bytearray())
                s.sendto(struct.pack(">HH", 4, 0), addr)
        elif op == 4 and addr in state and state[addr][0] == "r":
            _, name, body = state[addr]
            blk = struct.unpack(">H", data[2:4])[0]
            if blk * 512 > len(body):
                del state[addr]		# the last block was short: done
                return
            nxt = (blk + 1) & 0xffff
            s.sendto(struct.pack(">HH", 3, nxt) +
                     body[blk * 512:(blk + 1) * 512], addr)
        elif op == 3 and addr in state and state[addr][0] == "w":
            _, name, acc = state[addr]
            blk = struct.unpack(">H", data[2:4])[0]
            if blk * 512 - 512 == len(acc):
                acc += data[4:]
            s.sendto(struct.pack(">HH", 4, blk), addr)
            if len(data) - 4 < 512:
                received[name] = bytes(acc)
    return handle


# ---------------------------------------------------------------- the guest

def build_guest():
    """Build (or find up to date) the guest; returns (cache dir, seconds)."""
    t0 = time.monotonic()
    r = subprocess.run(["bash", str(GUEST_DIR / "build.sh")],
                       capture_output=True, text=True, timeout=1800)
    if r.returncode != 0:
        raise AssertionError(f"test/guest/build.sh failed ({r.returncode}):\n"
                             f"{r.stderr[-3000:]}")
    return r.stdout.strip().splitlines()[-1], time.monotonic() - t0


class GuestRun:
    """The result of one guest boot: rc, script output, checks, timings."""

    def __init__(self, rc, out, err, wall):
        self.rc, self.out, self.err, self.wall = rc, out, err, wall
        m = re.search(r"guest ready at ([0-9.]+)s", err)
        self.ready = float(m.group(1)) if m else None
        self.checks = {}
        for line in out.splitlines():
            m = re.match(r"(PASS|FAIL) ([^:]+?)(?:: (.*))?$", line)
            if m:
                self.checks[m.group(2)] = (m.group(1) == "PASS",
                                           m.group(3) or "")

    def check(self, name, ferry=None):
        """Assert that the guest reported PASS for check name."""
        if name not in self.checks:
            raise AssertionError(f"guest did not run check '{name}' (exit "
                                 f"{self.rc}):\n{self.out}\n{self.err}")
        ok, detail = self.checks[name]
        if not ok:
            extra = f"\nferry:\n{ferry.output()[-3000:]}" if ferry else ""
            raise AssertionError(f"guest check '{name}' failed: {detail}\n"
                                 f"guest output:\n{self.out}{extra}")

    def describe(self):
        return (f"guest exit {self.rc}, ready at {self.ready}s guest time, "
                f"{self.wall:.1f}s wall")


# Shell prelude for guest scripts: check NAME CMD... prints one line.
GUEST_PRELUDE = r"""
fail=0
check() {	# check NAME COMMAND...: one PASS/FAIL line, output on failure
	local what=$1; shift
	local out
	if out=$("$@" 2>&1); then echo "PASS $what"
	else echo "FAIL $what: $(echo "$out" | tail -n 3 | tr '\n' '|')"; fail=1
	fi
}
"""


def boot_guest(tmp, sock, script, files=(), kargs="", timeout=240,
               vhost_user=False):
    """Boot the test guest against sock running script (busybox sh, after
    GUEST_PRELUDE); returns a GuestRun. Never raises for a guest failure.
    vhost_user: sock is a vhost-user back-end (run.sh -u)."""
    tmp = Path(tmp)
    t = tmp / "guest-test.sh"
    t.write_text(GUEST_PRELUDE + script + "\nexit $fail\n")
    cmd = ["bash", str(GUEST_DIR / "run.sh"), "-t", str(timeout),
           "-l", str(tmp / "console.log")]
    for f in files:
        cmd += ["-f", str(f)]
    if kargs:
        cmd += ["-a", kargs]
    if vhost_user:
        cmd.append("-u")
    cmd += [sock, str(t)]
    t0 = time.monotonic()
    r = subprocess.run(cmd, capture_output=True, text=True,
                       timeout=timeout + 60)
    return GuestRun(r.returncode, r.stdout, r.stderr, time.monotonic() - t0)


def ferry_stats_block(f, timeout=10):
    """Ask a running ferry for its statistics (SIGUSR1); returns the whole
    block of lines, from "stats: from guest" to its TCP line, which every
    block has and which comes after the drop and link lines: ferry writes
    the block a line at a time, so the first line alone does not mean the
    drops have been written yet."""
    before = f.output().count("stats: from guest")
    f.proc.send_signal(signal.SIGUSR1)

    def whole():
        out = f.output()
        if out.count("stats: from guest") <= before:
            return None
        block = out[out.rindex("stats: from guest"):]
        m = re.search(r"^stats: tcp opened .*\n", block, re.M)
        return block[:m.end()] if m else None
    return wait_for(whole, timeout, "ferry statistics")


def ferry_stats(f, timeout=10):
    """Ask a running ferry for its statistics (SIGUSR1); returns
    (from_guest_frames, to_guest_frames, {drop reason: count})."""
    return ferry_stats_parse(ferry_stats_block(f, timeout))


def ferry_stats_parse(block):
    """(from_guest_frames, to_guest_frames, {drop reason: count}) from a
    block of ferry_stats_block()."""
    m = re.match(r"stats: from guest (\d+) frames \d+ bytes, to guest "
                 r"(\d+) frames", block)
    drops = {}
    for line in block.splitlines()[1:]:
        d = re.search(r"stats: drop (\S+) (\d+)$", line)
        if not d:
            break
        drops[d.group(1)] = int(d.group(2))
    return int(m.group(1)), int(m.group(2)), drops


GUEST_LL6 = socket.inet_pton(socket.AF_INET6, "fe80::5054:ff:fe12:3456")


def dhcp6_solicit(mac=GUEST_MAC, xid=0x00abcd, iaid=7):
    """A DHCPv6 SOLICIT with Rapid Commit and one IA_NA, from the guest's
    link-local address to All_DHCP_Relay_Agents_and_Servers."""
    duid = struct.pack(">HH", 3, 1) + mac			# DUID-LL
    opts = struct.pack(">HH", 1, len(duid)) + duid		# client id
    opts += struct.pack(">HHIII", 3, 12, iaid, 0, 0)		# IA_NA
    opts += struct.pack(">HHH", 8, 2, 0)			# elapsed time
    opts += struct.pack(">HH", 14, 0)				# rapid commit
    msg = struct.pack(">I", (1 << 24) | xid) + opts
    dst = socket.inet_pton(socket.AF_INET6, "ff02::1:2")
    udp = struct.pack(">HHHH", 546, 547, 8 + len(msg), 0) + msg
    pseudo = GUEST_LL6 + dst + struct.pack(">IxxxB", len(udp), 17)
    udp = udp[:6] + struct.pack(">H", csum(pseudo + udp) or 0xffff) + udp[8:]
    ip6 = struct.pack(">IHBB", 6 << 28, len(udp), 17, 1) + GUEST_LL6 + dst
    return b"\x33\x33\x00\x01\x00\x02" + mac + b"\x86\xdd" + ip6 + udp


def dhcp6_parse(frame, xid=0x00abcd):
    """(message type, {option: [bytes, ...]}) of a DHCPv6 message to port
    546 with xid in frame, else None."""
    if len(frame) < 14 + 40 + 8 + 4 or frame[12:14] != b"\x86\xdd" or \
            frame[20] != 17:
        return None
    u = frame[54:]
    if struct.unpack(">H", u[2:4])[0] != 546:
        return None
    m = u[8:]
    if struct.unpack(">I", m[:4])[0] & 0xffffff != xid:
        return None
    opts, pos = {}, 4
    while pos + 4 <= len(m):
        code, n = struct.unpack(">HH", m[pos:pos + 4])
        opts.setdefault(code, []).append(m[pos + 4:pos + 4 + n])
        pos += 4 + n
    return m[0], opts


# ------------------------------------------- a guest session's host side
#
# test_vm.py and test_vhost_user.py each boot the guest twice against one
# ferry (their module fixture `guest`): boot 1 runs the checks, boot 2
# proves a second qemu is served. The host servers and records they share:

GUEST_AGAIN = r"""
. /run/ferry/dhcp.env 2>/dev/null
check "DHCPv4 lease" test "$FERRY_GUEST_DHCP" = ok
check "ping IPv4 gateway" timeout 15 ping -c 2 -W 5 "$DHCP_ROUTER"
"""


class GuestSession:
    """What a module's guest fixture yields: ferry, srv (Servers, results
    in srv.results), up (the upload the host expects), boot1, boot2."""


def sha(b):
    return hashlib.sha256(b).hexdigest()


def tcp_sink(store, key, size):
    """Handler: read size bytes, keep them, close."""
    def handle(conn):
        data = b""
        while len(data) < size:
            d = conn.recv(65536)
            if not d:
                break
            data += d
        store[key] = data
    return handle


def tcp_source(payload):
    """Handler: send payload, close."""
    def handle(conn):
        conn.sendall(payload)
    return handle


def inbound_client(srv, port, payload, deadline):
    """Until it works or the deadline: connect to the forwarded port and
    check the guest echoes payload back. Records the outcome in
    srv.results["inbound"] ("ok" or what went wrong last)."""
    def run():
        last = "never connected"
        while time.monotonic() < deadline and not srv.stop_ev.is_set():
            try:
                s = socket.create_connection(("127.0.0.1", port), 5)
                s.settimeout(30)
                s.sendall(payload)
                s.shutdown(socket.SHUT_WR)
                back = b""
                while True:
                    d = s.recv(65536)
                    if not d:
                        break
                    back += d
                s.close()
                if back == payload:
                    srv.results["inbound"] = "ok"
                    return
                last = f"echo of {len(back)} bytes, sent {len(payload)}"
            except OSError as e:
                last = repr(e)
            time.sleep(0.2)
        srv.results["inbound"] = last
    t = threading.Thread(target=run, daemon=True)
    t.start()
    srv.threads.append(t)


def host_side(g, tmp, up_port, down_port, iperf_port):
    """Start the host side of session g: a sink on up_port expecting
    tmp/up.bin (written here, 256 KiB), a source of g.down on down_port,
    an iperf3 server. Stop it with host_side_stop(g)."""
    g.up, g.down = os.urandom(256 << 10), os.urandom(256 << 10)
    (tmp / "up.bin").write_bytes(g.up)
    srv = g.srv = Servers()
    srv.tcp(up_port, tcp_sink(srv.results, "up", len(g.up)))
    srv.tcp(down_port, tcp_source(g.down))
    g.iperf = subprocess.Popen(["iperf3", "-s", "-p", str(iperf_port)],
                               stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    return srv


def host_side_stop(g):
    g.srv.stop()
    g.ferry.stop()
    g.iperf.terminate()
    g.iperf.wait(10)


def boot_twice(g, tmp, script, files, what, **kw):
    """Boot 1 runs script (with files), boot 2 GUEST_AGAIN, both against
    g.ferry; prints timings, the INFO lines and ferry's counters."""
    (tmp / "b1").mkdir()
    (tmp / "b2").mkdir()
    g.boot1 = boot_guest(tmp / "b1", g.ferry.sock, script, files=files,
                         kargs="ferry.dad=0", **kw)
    g.boot2 = boot_guest(tmp / "b2", g.ferry.sock, GUEST_AGAIN,
                         kargs="ferry.slaac_wait=0", **kw)
    print(f"\n{what}boot 1: {g.boot1.describe()}; boot 2: "
          f"{g.boot2.describe()}")
    print("\n".join(x for x in g.boot1.out.splitlines()
                    if x.startswith("INFO")))
    print("ferry from/to guest frames, drops:", ferry_stats(g.ferry))


def _tcp_frame(dst_mac, src, dst, sport, dport, seq, ack, flags, data=b"",
               opts=b""):
    """An Ethernet + IPv4 + TCP frame from the guest (GUEST_MAC)."""
    off = (20 + len(opts)) // 4
    tcp = struct.pack(">HHIIBBHHH", sport, dport, seq, ack, off << 4, flags,
                      65535, 0, 0) + opts + data
    pseudo = ip4(src) + ip4(dst) + struct.pack(">BBH", 0, 6, len(tcp))
    tcp = tcp[:16] + struct.pack(">H", csum(pseudo + tcp)) + tcp[18:]
    iph = struct.pack(">BBHHHBBH4s4s", 0x45, 0, 20 + len(tcp), 0, 0x4000, 64,
                      6, 0, ip4(src), ip4(dst))
    iph = iph[:10] + struct.pack(">H", csum(iph)) + iph[12:]
    return dst_mac + GUEST_MAC + b"\x08\x00" + iph + tcp


def _tcp_of(frame, sport, dport):
    """(seq, flags, payload) of an IPv4 TCP frame sport -> dport, or None."""
    if len(frame) < 54 or frame[12:14] != b"\x08\x00" or frame[23] != 6:
        return None
    ihl = (frame[14] & 15) * 4
    tot = struct.unpack(">H", frame[16:18])[0]
    t = frame[14 + ihl:14 + tot]
    if len(t) < 20 or struct.unpack(">HH", t[:4]) != (sport, dport):
        return None
    seq, flags = struct.unpack(">I", t[4:8])[0], t[13]
    return seq, flags, t[(t[12] >> 4) * 4:]


def guest_tcp_exchange(c, guest, gw, port, line, sport=40123):
    """As the guest on StreamClient c (address guest): connect to gw:port
    through ferry, send line, return the first data the server sends back
    (ferry's handshake and both directions of data)."""
    c.send_frame(arp_request(gw, sender=guest))
    mac = arp_reply_for(c.wait_frame(is_arp_reply(gw), 10, "ARP reply"), gw)
    mss = b"\x02\x04\x05\xb4"
    c.send_frame(_tcp_frame(mac, guest, gw, sport, port, 1000, 0, 0x02,
                            opts=mss))
    synack = c.wait_frame(
        lambda f: (_tcp_of(f, port, sport) or (0, 0))[1] & 0x12 == 0x12, 10,
        f"SYN-ACK from {gw}:{port}")
    srv = _tcp_of(synack, port, sport)[0] + 1
    c.send_frame(_tcp_frame(mac, guest, gw, sport, port, 1001, srv, 0x18,
                            line))
    got = c.wait_frame(lambda f: bool((_tcp_of(f, port, sport) or
                                       (0, 0, b""))[2]), 10,
                       f"data from {gw}:{port}")
    seq, _, data = _tcp_of(got, port, sport)
    c.send_frame(_tcp_frame(mac, guest, gw, sport, port, 1001 + len(line),
                            seq + len(data), 0x14))		# RST|ACK: done
    return data
