"""vm.py - VM mode: ferry vm against Debian's passt, with the qemu guest.

For each tool: start it on a UNIX socket (`ferry vm -f -1 -s SOCK` or
`passt -f -1 --runas 0 -s SOCK`, no port forwarding), boot the guest of
test/guest (run.sh: qemu, TCG here, virtio-net on -netdev stream) once,
and let the guest script run N rounds of iperf3 guest->host and
host->guest (-R) against the host's iperf3 server at the DHCP router
address (mapped to the host's loopback by both tools). The script prints
each iperf3 text report between markers; we parse the receiver's rate
and the per-second intervals. One boot per tool keeps the cost at about
a minute per tool. Under TCG the guest's CPU is emulated, so these
figures say more about the guest than about the translator; they are
compared with passt only (no veth row for VM mode).
"""
import os
import re
import subprocess
import threading

import procs

GUEST_SCRIPT = """
. /run/ferry/dhcp.env
echo "BENCH-ROUTER $DHCP_ROUTER"
i=0
while [ $i -lt {n} ]; do
    for d in {dirs}; do
        r=""; [ $d = h2g ] && r=-R
        echo "BENCH-BEGIN $d"
        timeout {tmo} iperf3 -c "$DHCP_ROUTER" -p {port} -t {secs} -f m \\
            --connect-timeout 3000 $r 2>&1
        echo "BENCH-END $d $?"
    done
    i=$((i + 1))
done
"""

IV = re.compile(r"^\[\s*\d+\]\s+([\d.]+)-([\d.]+)\s+sec\s+[\d.]+ \w+\s+([\d.]+) Mbits/sec(.*)$")


def parse(out):
    """{direction: [result dicts]} from the guest's output."""
    res = {"g2h": [], "h2g": []}
    for m in re.finditer(r"BENCH-BEGIN (\w+)\n(.*?)BENCH-END \1 (\d+)", out, re.S):
        d, body, rc = m.group(1), m.group(2), int(m.group(3))
        per, recv = [], None
        for line in body.splitlines():
            iv = IV.match(line.strip())
            if not iv:
                continue
            if "receiver" in iv.group(4):
                recv = float(iv.group(3)) / 1000
            elif "sender" not in iv.group(4) and float(iv.group(2)) - float(iv.group(1)) >= 0.5:
                per.append(float(iv.group(3)) / 1000)
        if rc == 0 and recv is not None:
            res[d].append({"value": recv, "min": min(per) if per else None})
        else:
            tail = " | ".join(body.strip().splitlines()[-2:])
            res[d].append({"value": None, "error": f"iperf3 exit {rc}: {tail}"[:300]})
    return res


def has_vhost_user(cmd):
    """Does this translator (cmd: its argv up to the options) offer
    --vhost-user? Debian 12's passt does not."""
    try:
        r = subprocess.run(cmd + ["--help"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return False
    return "--vhost-user" in r.stdout + r.stderr


def run_tool(tool, argv, root, workdir, n, secs, port, run_args=(),
             dirs=("g2h", "h2g"), watch=None, script_text=GUEST_SCRIPT):
    """Boot the guest against one tool: (results by direction, info, error).
    run_args: extra test/guest/run.sh options (-u: vhost-user); dirs: the
    directions each round runs; watch: called with the tool's pid once it
    listens, its before_stop() when the guest is gone (vmprof.py);
    script_text: the guest script's template (GUEST_SCRIPT's fields). The
    guest's whole output is info["out"]."""
    d = os.path.join(workdir, f"vm-{tool}")
    os.makedirs(d, exist_ok=True)
    sock = os.path.join(d, "sock")
    if os.path.exists(sock):
        os.unlink(sock)
    script = os.path.join(d, "t.sh")
    tmo = secs + 20
    with open(script, "w") as f:
        f.write(script_text.format(n=n, secs=secs, port=port, tmo=tmo,
                                    dirs=" ".join(dirs)))
    if os.path.exists(os.path.join(d, "log")):
        os.unlink(os.path.join(d, "log"))
    try:
        p = procs.start(argv + ["-s", sock], log=os.path.join(d, "log"))
    except OSError as e:
        return None, {}, f"{tool} did not start: {e}"
    info = {}
    try:
        if not procs.wait_for(lambda: os.path.exists(sock) or not procs.alive(p), 10) \
                or not procs.alive(p):
            return None, info, f"{tool} did not start: " + _tail(os.path.join(d, "log"))
        if watch:
            watch(p.pid)
        deadline = 240 + n * len(dirs) * (tmo + 5)
        done = threading.Event()
        sampler = threading.Thread(target=_sample_rss, args=(p.pid, info, done))
        sampler.start()
        try:
            r = procs.run(["bash", os.path.join(root, "test/guest/run.sh"), "-t",
                           str(deadline), "-l", os.path.join(d, "console.log"),
                           *run_args, sock, script],
                          timeout=deadline + 30)
        finally:
            done.set()
            sampler.join()
        if watch:
            watch.before_stop()
        res = parse(r.stdout)
        info["out"] = r.stdout
        if not res["g2h"] and not res["h2g"]:
            return None, info, (f"guest run failed (exit {r.returncode}): "
                                + " | ".join(r.stderr.strip().splitlines()[-3:])[:300])
        return res, info, None
    finally:
        procs.stop(p)


def _sample_rss(pid, info, done):
    """Keep the largest VmHWM of pid in info until done (it exits with qemu)."""
    while not done.wait(0.5):
        v = procs.peak_rss_kib(pid)
        if v:
            info["peak_rss_kib"] = max(v, info.get("peak_rss_kib", 0))


def _tail(path):
    try:
        with open(path, errors="replace") as f:
            return " | ".join(ln.strip() for ln in f.readlines()[-4:])
    except OSError:
        return ""
