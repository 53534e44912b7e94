"""procs.py - the processes the benchmark starts, and only those.

Every long-running process (tools under test, namespace holders, servers)
is started through start(), which records its PID and puts it in a new
session so that its own children (pasta's command, nginx) can be ended
with it. stop() and stop_all() end exactly those PIDs: first SIGTERM,
then SIGKILL after a deadline. bench.py calls stop_all() on every exit
path (normal end, exception, SIGINT, SIGTERM), so a run never leaves
processes behind. Short client commands use run(), which kills the child
on its own timeout.
"""
import os
import signal
import subprocess
import time

_started = []


def start(argv, log=None, **kw):
    """Start argv in its own session; output to the file `log` (or null)."""
    out = open(log, "ab") if log else subprocess.DEVNULL
    p = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT,
                         stdin=subprocess.DEVNULL, start_new_session=True, **kw)
    if log:
        out.close()
    _started.append(p)
    return p


def alive(p):
    return p is not None and p.poll() is None


def stop(p, grace=5.0):
    """End process p (started by start()) and its session: TERM, then KILL."""
    if p is None:
        return
    if p.poll() is None:
        _signal_group(p, signal.SIGTERM)
        try:
            p.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            _signal_group(p, signal.SIGKILL)
            p.wait()
    # The session may outlive its leader (a forked child): end what is left.
    _signal_group(p, signal.SIGKILL)
    if p in _started:
        _started.remove(p)


def _signal_group(p, sig):
    try:
        os.killpg(p.pid, sig)	# the session/group we created for p
    except (ProcessLookupError, PermissionError):
        pass


def stop_all():
    for p in list(reversed(_started)):
        stop(p, grace=2.0)


def run(argv, timeout, **kw):
    """Run a short command in its own session; returns CompletedProcess.

    On timeout the whole session is killed (run.sh's qemu included) and
    the result has returncode 124.
    """
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         stdin=subprocess.DEVNULL, text=True, start_new_session=True, **kw)
    _started.append(p)
    try:
        out, err = p.communicate(timeout=timeout)
        rc = p.returncode
    except subprocess.TimeoutExpired:
        _signal_group(p, signal.SIGKILL)
        out, err = p.communicate()
        rc, err = 124, (err or "") + f"\ntimeout after {timeout}s"
    _signal_group(p, signal.SIGKILL)	# leftovers of the session, if any
    _started.remove(p)
    return subprocess.CompletedProcess(argv, rc, out or "", err or "")


def wait_for(pred, timeout, interval=0.02):
    """Poll pred() until true or the deadline; returns its last value."""
    deadline = time.monotonic() + timeout
    while True:
        v = pred()
        if v or time.monotonic() > deadline:
            return v
        time.sleep(interval)


def cpu_seconds(pid):
    """utime + stime of pid (all threads) in seconds, or None."""
    try:
        user, system = cpu_split(pid)
    except OSError:
        return None
    return user + system


def cpu_split(pid):
    """(user, system) CPU seconds of pid (all threads) from /proc."""
    with open(f"/proc/{pid}/stat") as f:
        st = f.read()
    fields = st[st.rindex(")") + 2:].split()
    hz = os.sysconf("SC_CLK_TCK")
    return int(fields[11]) / hz, int(fields[12]) / hz


def machine_busy_seconds():
    """CPU seconds all CPUs spent busy (user, nice, system, irq, softirq;
    not idle, iowait or steal) since boot, from /proc/stat."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:9]]
    return (v[0] + v[1] + v[2] + v[5] + v[6]) / os.sysconf("SC_CLK_TCK")


def print_loadavg(when):
    """Print the 1/5/15-minute load averages, "at start" or "at end" of a
    run: a loaded machine explains outliers."""
    with open("/proc/loadavg") as f:
        print(f"load average {when}:", " ".join(f.read().split()[:3]),
              flush=True)


def main_guarded(main):
    """The scripts' entry point: run main(), and on every exit path stop
    whatever it started through start()."""
    try:
        main()
    finally:
        stop_all()


def peak_rss_kib(pid):
    """VmHWM of pid in KiB, or None."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def listening(port, proto="tcp"):
    """True if something in this namespace listens on port (any address)."""
    want = f":{port:04X}"
    for name in (f"/proc/net/{proto}", f"/proc/net/{proto}6"):
        try:
            with open(name) as f:
                next(f)
                for line in f:
                    parts = line.split()
                    if parts[1].endswith(want) and (proto == "udp" or parts[3] == "0A"):
                        return True
        except OSError:
            pass
    return False
