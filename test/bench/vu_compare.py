"""vu_compare.py - VM mode throughput: ferry over a -netdev stream socket,
ferry over vhost-user, and Debian's passt over a stream socket (and over
vhost-user when that passt has --vhost-user), with the qemu/TCG guest of
test/guest and iperf3 both ways.

usage (inside the sandbox, as make bench runs things):
  bash test/sandbox.sh python3 test/bench/vu_compare.py [ROUNDS] [SECONDS]

One guest boot per configuration (vm.run_tool(): ROUNDS rounds of iperf3
guest->host and host->guest, SECONDS each, in that one boot). Prints one
table (Gbit/s, median of the receiver's rates, lowest in brackets) and
ratios to ferry's stream backend. TCG emulates the guest's CPU: absolute
figures are low and noisy, ratios are what to read.
"""
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)

import procs  # noqa: E402
import vm  # noqa: E402

PORT = 5201


def passt_has_vhost_user():
    r = subprocess.run(["passt", "--help"], capture_output=True, text=True)
    return "vhost-user" in (r.stdout + r.stderr)


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    secs = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    ferry = os.path.join(ROOT, "ferry")
    none = ["-t", "none", "-u", "none"]
    configs = [
        ("ferry stream", [ferry, "vm", "-f", "-1"] + none, ()),
        ("ferry vhost-user", [ferry, "vm", "-f", "-1", "--vhost-user"] + none,
         ("-u",)),
        ("passt stream", ["passt", "-f", "-1", "--runas", "0"] + none, ()),
    ]
    if passt_has_vhost_user():
        configs.append(("passt vhost-user", ["passt", "-f", "-1", "--runas",
                                             "0", "--vhost-user"] + none,
                        ("-u",)))
    else:
        print("passt (Debian) has no --vhost-user: that row is left out")
    srv = procs.start(["iperf3", "-s", "-p", str(PORT)])
    procs.wait_for(lambda: procs.listening(PORT), 10)
    work = tempfile.mkdtemp(prefix="vu-compare.")
    res = {name: {"g2h": [], "h2g": []} for name, _, _ in configs}
    try:
        for name, argv, run_args in configs:
            r, _info, err = vm.run_tool(name.replace(" ", "-"), argv, ROOT,
                                        work, rounds, secs, PORT,
                                        run_args=run_args)
            if err:
                print(f"{name}: {err}")
                continue
            for d in ("g2h", "h2g"):
                res[name][d] += [x["value"] for x in r[d]
                                 if x["value"] is not None]
            print(f"{name}: g2h {res[name]['g2h']} h2g {res[name]['h2g']}",
                  flush=True)
    finally:
        procs.stop_all()
    base = {d: statistics.median(res["ferry stream"][d])
            if res["ferry stream"][d] else None for d in ("g2h", "h2g")}
    print(f"\n{rounds} x {secs} s per direction, Gbit/s median (lowest); "
          "ratio to ferry stream")
    print("| configuration | guest->host | host->guest | ratio g->h | "
          "ratio h->g |")
    print("|---|---|---|---|---|")
    for name, _, _ in configs:
        cells, ratios = [], []
        for d in ("g2h", "h2g"):
            v = res[name][d]
            if not v:
                cells.append("n/a")
                ratios.append("n/a")
                continue
            m = statistics.median(v)
            cells.append(f"{m:.2f} ({min(v):.2f})")
            ratios.append(f"{m / base[d]:.2f}x" if base[d] else "n/a")
        print(f"| {name} | {cells[0]} | {cells[1]} | {ratios[0]} | "
              f"{ratios[1]} |")


if __name__ == "__main__":
    main()
