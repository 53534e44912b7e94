"""TCP through ferry when the guest link loses, duplicates and reorders
frames (--fault, test build only): transfers complete intact, without
a stalled second (the MTU 1500 upload with duplicates: ferry answered
every segment at once, by its own clock; see there), and the faults
really happened (ferry's counters).

Rates: 1% loss and 1% reordering each way (10 per mille), plus 0.5%
duplication in one case. Sizes are 32 MiB per transfer (CI budget: each
case takes a few seconds on 2 shared cores; FERRY_FAULT_SIZE overrides).
The release binary refuses the option.

Guest -> host data under loss goes through the out-of-order queue
(tcp_ooo.c) and SACK: the upload cases check from ferry's counters that
segments were queued out of order and SACK blocks went out, and that no
segment was refused for lack of queue space. Before the queue, every
lost guest segment made the guest resend the rest of its window (32 MiB
took 30 s to >120 s); now 32 MiB takes about 2 s with the ASan build, and
the large upload, 1 GiB as the issue asks, about 10 s (8 s with an -O2
build with fault injection: the Python endpoints set the pace).
FERRY_FAULT_BIG (bytes) overrides its size.
"""
import os
import re
import signal
import struct

import pytest

import conftest
from fwd_util import guest_server, client, exchange, roles
from tcp_util import check_transfer

MiB = 1 << 20
SIZE = int(os.environ.get("FERRY_FAULT_SIZE", 32 * MiB))
BIG = int(os.environ.get("FERRY_FAULT_BIG", 1024 * MiB))
OOO_STATS = (r"tcp ooo segments (\d+) bytes (\d+) delivered (\d+) drops "
             r"full/reach (\d+)/(\d+) sack acks (\d+)")
FAULT_STATS = (r"fault from guest dropped (\d+) duplicated (\d+) reordered "
               r"(\d+), to guest dropped (\d+) duplicated (\d+) reordered (\d+)")


def fault_stats(f):
    before = len(f.output())
    f.proc.send_signal(signal.SIGUSR1)

    def line():
        m = re.findall(FAULT_STATS, f.output()[before:])
        return m[-1] if m else None
    return list(map(int, conftest.wait_for(line, 5, "fault statistics")))


def ooo_stats(f):
    """Out-of-order queue counters: segments, bytes, delivered, drops
    full, drops beyond reach, ACKs with SACK blocks."""
    before = len(f.output())
    f.proc.send_signal(signal.SIGUSR1)

    def line():
        m = re.findall(OOO_STATS, f.output()[before:])
        return m[-1] if m else None
    return dict(zip(("segs", "bytes", "delivered", "full", "reach", "sack"),
                    map(int, conftest.wait_for(line, 5, "ooo statistics"))))


def check_ooo_used(f, sack=True):
    """The upload recovered through the queue: out-of-order segments were
    kept and delivered, none refused, SACK blocks sent."""
    st = ooo_stats(f)
    assert st["segs"] > 0 and st["delivered"] > 0, st
    assert st["full"] == 0 and st["reach"] == 0, st
    assert (st["sack"] > 0) == sack, st
    return st


def no_stall(rcv, secs=1):
    """No secs whole seconds without progress between the first and the
    last byte (receiver's 100 ms slots)."""
    slots = rcv["slots"]
    first = next(i for i, v in enumerate(slots) if v)
    run = worst = 0
    for v in slots[first:]:
        run = run + 1 if not v else 0
        worst = max(worst, run)
    assert worst < 10 * secs, f"{worst * 100} ms without progress: {slots}"


@pytest.mark.parametrize("v6", [False, True], ids=["v4", "v6"])
def test_tcp_lossy_link(ferry_ns, v6):
    """Host -> guest at 1% loss and 1% reordering both ways."""
    f = ferry_ns(args=["--fault", "drop=10,reorder=10,seed=3", "-t", "none",
                       "-T", "none"])
    rcv, secs = check_transfer(f, v6, "down", SIZE, timeout=120,
                               recv_opts=("--rate-log",))
    no_stall(rcv)
    st = fault_stats(f)
    # Data frames went the transfer's way: dropped and reordered ones.
    # The ACKs the other way are too few (a few hundred frames at 1%) for
    # a fault among them to be certain, so they are not checked.
    assert st[3] > 0 and st[5] > 0, st


def test_tcp_lossy_link_mtu1500_dup(ferry_ns):
    # --no-offload: 1500-byte frames; with offloads the data would travel
    # as a few hundred 64 KiB GSO frames, too few for certain faults.
    f = ferry_ns(args=["-m", "1500", "--no-offload", "--fault",
                       "drop=10,reorder=10,dup=5,seed=11", "-t", "none",
                       "-T", "none"])
    rcv, secs = check_transfer(f, False, "down", SIZE // 2, timeout=120,
                               recv_opts=("--rate-log",))
    no_stall(rcv)
    st = fault_stats(f)
    assert st[4] > 0 and st[3] > 0, st


@pytest.mark.parametrize("v6", [False, True], ids=["v4", "v6"])
def test_tcp_lossy_upload(ferry_ns, v6):
    """Guest -> host at 1% loss and reordering: the out-of-order queue and
    SACK keep it going (see the module note)."""
    f = ferry_ns(args=["--fault", "drop=10,reorder=10,seed=3", "-t", "none",
                       "-T", "none"])
    rcv, secs = check_transfer(f, v6, "up", SIZE, timeout=45,
                               recv_opts=("--rate-log",))
    no_stall(rcv)
    check_ooo_used(f)


def pcap_tcp(path):
    """(time, TCP view) per IPv4/IPv6 TCP frame of a --pcap file, in the
    order ferry wrote them; view: (sport, dport, seq, ack, payload length,
    flags, SACK blocks)."""
    b = path.read_bytes()
    assert struct.unpack_from("<I", b)[0] == 0xa1b2c3d4, "not a pcap file"
    o = 24
    while o + 16 <= len(b):
        sec, usec, incl, _ = struct.unpack_from("<IIII", b, o)
        fr = b[o + 16:o + 16 + incl]
        o += 16 + incl
        et = struct.unpack_from("!H", fr, 12)[0] if len(fr) >= 14 else 0
        if et == 0x0800 and len(fr) >= 34 and fr[23] == 6:
            l4 = 14 + (fr[14] & 15) * 4
            end = 14 + struct.unpack_from("!H", fr, 16)[0]
        elif et == 0x86dd and len(fr) >= 54 and fr[20] == 6:
            l4, end = 54, 54 + struct.unpack_from("!H", fr, 18)[0]
        else:
            continue
        if end > len(fr) or l4 + 20 > end:
            continue
        sport, dport, seq, ack = struct.unpack_from("!HHII", fr, l4)
        doff, flags = (fr[l4 + 12] >> 4) * 4, fr[l4 + 13]
        sacks, i = [], l4 + 20
        while i + 1 < l4 + doff and fr[i]:
            if fr[i] == 1:
                i += 1
                continue
            if fr[i] == 5:
                sacks = [struct.unpack_from("!II", fr, i + 2 + 8 * j)
                         for j in range((fr[i + 1] - 2) // 8)]
            i += max(fr[i + 1], 2)
        yield sec + usec / 1e6, (sport, dport, seq, ack, end - l4 - doff,
                                 flags, sacks)


def seq_le(a, b):
    return (b - a) & 0xffffffff < 0x80000000


def late_acks(pcap, log, port, late=0.15):
    """Guest segments to port that ferry acknowledged late, by its own
    clock (--pcap records ferry's reads from and writes to the guest, in
    its order, so a ferry that is not scheduled or blocked delays both
    ends alike): a segment is answered by the first frame to the guest
    whose ACK or SACK blocks cover it. Late means: more than `late`
    seconds after ferry read it, not in the first write after that read
    (a preemption inside one loop iteration is excused), only after the
    guest sent something again (a delayed ACK's timer late for the
    scheduler is excused), and with no frame to the guest dropped or held
    by the injector in that first write (it may have been the answer:
    the log's `fault: drop|hold to guest at T` lines). Returns (count of
    answered segments, the late ones as (seconds, relative seq))."""
    faults = [float(t) for t in re.findall(
        r"fault: (?:drop|hold) to guest at ([0-9.]+): tcp", log)]
    pending, late_ones, n = [], [], 0
    batch = writes = 0
    isn, last, first_write = None, None, {}
    for t, (sp, dp, seq, ack, ln, fl, sacks) in pcap_tcp(pcap):
        if dp == port:
            if fl & 0x02:
                isn = seq
            if last != "rx":
                batch += 1
                writes = 0
            last = "rx"
            if ln:
                pending.append((t, seq, (seq + ln) & 0xffffffff, batch))
            continue
        if sp != port or not fl & 0x10:
            continue
        if last != "tx":
            writes += 1
            if writes == 1:
                first_write[batch] = t
        last = "tx"
        keep = []
        for t0, s, e, b in pending:
            if not (seq_le(e, ack) or any(seq_le(a, s) and seq_le(e, z)
                                          for a, z in sacks)):
                keep.append((t0, s, e, b))
                continue
            n += 1
            if t - t0 <= late or (b == batch and writes == 1):
                continue
            if b == batch:  # no guest frame since: a timer
                continue
            w = first_write.get(b)
            if w is not None and any(t0 <= x <= w + 0.001 for x in faults):
                continue
            late_ones.append((round(t - t0, 3), (s - (isn or 0)) &
                              0xffffffff))
        pending = keep
    assert not pending, f"{len(pending)} guest segments never acknowledged"
    return n, late_ones


def ferry_drops(log):
    """Ferry's drop counters by name, from its last statistics (at exit)."""
    return {k: int(v) for k, v in
            re.findall(r"stats: drop (\S+) (\d+)", log.rsplit(
                "stats: from guest", 1)[-1])}


def test_tcp_lossy_upload_mtu1500_dup(ferry_ns, tmp_path):
    """Small segments (offloads off: no 64 KiB GSO frames from the guest),
    and duplicated ones: many more holes per byte, and batches holding the
    guest's retransmissions of several holes.

    What this checks is ferry's part, not the guest's recovery: no frame
    dropped by ferry outside the injector (a retransmission that filled a
    hole right after the batch's in-order write used to be dropped, and
    the guest waited for its backed-off RTO, 0.6 to 1 s: unit test
    tcp_ooo_hole_filled_by_the_write_before_it), every guest segment
    acknowledged or SACKed at once by ferry's own clock (late_acks()),
    data intact, and no pause of 5 s. A whole second without progress is
    not a failure here: in a sweep with captures on both sides (session 6,
    doc/tcp.md) every such pause had ferry answering every segment it got
    within 80 ms, and came from the injector dropping or holding the same
    segment's transmissions in a row (the guest's RTO backs off), from
    the guest retransmitting later holes but not the first one until its
    RTO, or from ferry or the endpoints not running for up to 0.5 s on a
    loaded machine."""
    pcap = tmp_path / "up.pcap"
    f = ferry_ns(args=["-m", "1500", "--no-offload", "--fault",
                       "drop=10,reorder=10,dup=5,seed=7", "-t", "none",
                       "-T", "none", "-d", "--pcap", str(pcap)])
    rcv, secs = check_transfer(f, False, "up", SIZE // 2, timeout=60,
                               recv_opts=("--rate-log",))
    no_stall(rcv, 5)
    check_ooo_used(f)
    f.stop()  # the statistics at exit, the capture complete
    log = f.logpath.read_text(errors="replace")
    drops = ferry_drops(log)
    # NO_FLOW: a duplicate or a held frame of the guest's that the
    # injector delivers after the connection closed (seen once in 150).
    assert set(drops) <= {"FAULT_INJECTED", "MCAST_BCAST", "NO_FLOW"}, drops
    assert drops.get("FAULT_INJECTED", 0) > 0, drops
    port = int(re.search(r"fault: pass from guest at [0-9.]+: tcp \d+>(\d+) "
                         r"seq \d+ len 0 ack \d+ flags 0x02",
                         log).group(1))
    n, late = late_acks(pcap, log, port)
    assert n > SIZE // 2 // 1460, n
    assert not late, f"{len(late)} of {n} guest segments acknowledged " \
                     f"late (s, relative seq): {late[:20]}"


def test_tcp_lossy_upload_big(ferry_ns):
    """1 GiB up (FERRY_FAULT_BIG) at 1% loss and reordering both ways: no
    corruption, no stalled second, no queue overflow."""
    f = ferry_ns(args=["--fault", "drop=10,reorder=10,seed=9", "-t", "none",
                       "-T", "none"])
    rcv, secs = check_transfer(f, False, "up", BIG, timeout=300,
                               recv_opts=("--rate-log",))
    no_stall(rcv)
    check_ooo_used(f)


@pytest.mark.parametrize("direction", ["up", "down"],
                         ids=["to-guest", "from-guest"])
def test_tcp_forwarded_lossy(ferry_ns, direction):
    """A -t connection through the tap (SYN to the guest) under the same
    faults, data either way; our SYN offers SACK-permitted, so the guest's
    data is recovered with SACK too."""
    f = ferry_ns(args=["-t", "40201", "-T", "none", "--fault",
                       "drop=10,reorder=10,seed=5"])
    sr, cr = roles(direction, SIZE)
    srv = guest_server(f, "0.0.0.0", 40201, *sr)
    cli = client([], "198.51.100.2", 40201, *cr, "--timeout", "120")
    exchange(srv, cli, direction, SIZE, 150)
    st = fault_stats(f)
    # Faults on the data's way (to the guest for "up", from it for "down"):
    # drops, duplicates or reorders (at 1% each, one kind alone can miss
    # the ~500 TSO frames of 32 MiB: seen once, 0 drops and 5 reorders);
    # the ACKs the other way are too few for a certain fault.
    way = st[3:6] if direction == "up" else st[0:3]
    assert sum(way) > 0, st
    if direction == "down":
        check_ooo_used(f)


def test_fault_refused_by_release_build(tmp_path):
    release = conftest.ROOT / "ferry"
    if not release.exists():
        pytest.fail("release binary ./ferry missing (make check builds it)")
    r = conftest.run([str(release), "ns", "--fault", "drop=10", "--", "true"],
                     check=False)
    assert r.returncode == 1 and "only in test builds" in r.stderr, r
