"""report.py - the stdout table, results.json, results.md and the chart.

Ratios: "f/veth" is ferry's median divided by veth's; "f/peer" divides by
the best peer (either pasta or slirp4netns: the highest, or for latency
the lowest). VM rows compare with the best passt (Debian 12's or
trixie's). For throughput and rates a ratio above 1 is better; for latency
(us) below 1 is better. Throughput cells show "median (min/s)", the
lowest one-second interval over all runs; UDP cells add the loss.
"""
import datetime
import json
import os
import platform
import re
import shutil
import statistics
import subprocess

import backends
import chart
import targets

PEERS = ("pasta", "pasta-trixie", "slirp4netns")
VM_PEERS = ("passt", "passt-trixie")
MARK_B, MARK_E = "<!-- bench:results:begin -->", "<!-- bench:results:end -->"
README_B, README_E = "<!-- bench:readme:begin -->", "<!-- bench:readme:end -->"


def _ver(argv):
    try:
        r = subprocess.run(argv, capture_output=True, text=True, timeout=5)
        return (r.stdout + r.stderr).strip().splitlines()[0][:80]
    except (OSError, IndexError, subprocess.SubprocessError):
        return "unknown"


def _pkg(name):
    try:
        r = subprocess.run(["dpkg-query", "-W", "-f=${Version}", name],
                           capture_output=True, text=True, timeout=5)
        return r.stdout.strip() or "not installed"
    except OSError:
        return "unknown"


def meta(b, elapsed):
    cpu = "unknown"
    try:
        with open("/proc/cpuinfo") as f:
            m = re.search(r"model name\s*:\s*(.*)", f.read())
            cpu = m.group(1) if m else cpu
    except OSError:
        pass
    return {
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "kernel": platform.release(), "cpu": cpu, "cpus": os.cpu_count(),
        "command": "make bench" + (" (BENCH_QUICK=1)" if b.quick else ""),
        "runs": b.n, "seconds_per_run": b.secs, "elapsed_s": round(elapsed),
        "vm_runs": getattr(b, "vm_n", b.n), "vm_seconds_per_run": getattr(b, "vm_secs", b.secs),
        "row_secs": getattr(b, "row_secs", {}),
        "ferry": _ver([b.ferry, "--version"]), "pasta": _pkg("passt"),
        "ferry-base": _ver([b.base, "--version"]) if getattr(b, "base", None) else None,
        "pasta-trixie": backends.trixie_version() or "not unpacked",
        "slirp4netns": _pkg("slirp4netns"), "iperf3": _pkg("iperf3"),
        "sockperf": _pkg("sockperf"), "wrk": _pkg("wrk"), "nginx": _pkg("nginx-light"),
    }


def best_of(row, per, tools):
    """The best median among tools in per (highest, or lowest for
    latency), or None."""
    vals = [per[t]["median"] for t in tools if per.get(t, {}).get("median")]
    if not vals:
        return None
    return max(vals) if row.better == "higher" else min(vals)


def base_value(row, per):
    """The median ferry is divided by in "f/veth" (veth's; in a VM row the
    better of the two passts), or None."""
    if row.base == "passt":
        return best_of(row, per, VM_PEERS)
    return per.get(row.base, {}).get("median")


def ratios(row, per):
    """(ferry / base tool, ferry / best peer); None where not measurable."""
    f = per.get("ferry", {}).get("median")
    v = base_value(row, per)
    best = best_of(row, per, PEERS)
    rv = f / v if f is not None and v else None
    rp = f / best if f is not None and best else None
    return rv, rp


def fmt_val(x, unit):
    if unit in ("Gbit/s", "x"):
        return f"{x:.2f}"
    if unit == "us":
        return f"{x:.1f}"
    return f"{x:.0f}"


def extras(minv, loss, p99):
    """The cell's tail: (lowest 1-s interval), loss %, p99."""
    s = ""
    if minv is not None:
        s += f" ({minv:.2f})"
    if loss is not None:
        s += f" {loss:.1f}%"
    if p99 is not None:
        s += f" p99 {p99:.0f}"
    return s


def cell(d, unit):
    if "median" not in d:
        return "n/a"
    return fmt_val(d["median"], unit) + extras(d.get("min_per_sec"), d.get("loss"),
                                               d.get("p99"))


def _ratio(x):
    return f"{x:.2f}" if x else "n/a"


def table(b, summary):
    """(main table, CPU/RSS/VM section, n/a reasons) as rows of strings."""
    ns_rows = [r for r in b.rows if not r.tools]
    vm_rows = [r for r in b.rows if r.tools]
    lines, notes = [["path", "unit"] + b.tools + ["f/veth", "f/peer"]], []
    for row in ns_rows:
        per = summary[row.id]
        rv, rp = ratios(row, per)
        lines.append([row.label, row.unit] + [cell(per[t], row.unit) for t in b.tools]
                     + [_ratio(rv), _ratio(rp)])
    for row in b.rows:
        for t in b.row_tools(row):
            if "na" in summary[row.id][t]:
                notes.append(f"{t} / {row.id}: {summary[row.id][t]['na']}")
    pad = [""] * len(b.tools)
    extra = [["CPU s/GiB (translator process)", ""] + pad + ["", ""]]
    for row in ns_rows:
        if row.kind != "tcp":
            continue
        per = summary[row.id]
        vals = [f"{per[t]['cpu_s_per_gib']:.2f}" if per[t].get("cpu_s_per_gib") is not None
                else "-" for t in b.tools]
        if any(v != "-" for v in vals):
            extra.append(["  " + row.label, "s/GiB"] + vals + ["", ""])
    extra.append(["CPU s/GiB (whole machine)", ""] + pad + ["", ""])
    for row in ns_rows:
        if row.kind != "tcp":
            continue
        per = summary[row.id]
        vals = [f"{per[t]['machine_cpu_s_per_gib']:.2f}"
                if per[t].get("machine_cpu_s_per_gib") is not None else "-" for t in b.tools]
        if any(v != "-" for v in vals):
            extra.append(["  " + row.label, "s/GiB"] + vals + ["", ""])
    extra.append(["peak RSS (VmHWM)", "MiB"] + [_mib(b.tool_info.get(t, {}), "peak_rss_kib")
                                              for t in b.tools] + ["", ""])
    extra += flows_lines(b, [r for r in ns_rows if r.kind == "flows"], summary)
    if vm_rows:
        vt = vm_rows[0].tools
        pad = [""] * (len(b.tools) - len(vt))
        extra.append(["VM mode (qemu guest, TCG)", ""]
                     + [t.replace("ferry", "ferry vm", 1) if t.startswith("ferry") else t
                        for t in vt]
                     + pad + ["f/passt", "f/passt stream"])
        for row in vm_rows:
            per = summary[row.id]
            rv, _ = ratios(row, per)
            alt = vm_alt_base(row, summary)
            f = per.get("ferry", {}).get("median")
            extra.append(["  " + row.label, row.unit] + [cell(per.get(t, {}), row.unit)
                                                         for t in vt]
                         + pad + [_ratio(rv), _ratio(f / alt if f and alt else None)
                                  if alt is not None else ""])
        for key, what in (("vm_peak_rss_kib", ""), ("vu_peak_rss_kib", ", vhost-user")):
            extra.append([f"  peak RSS (VmHWM{what})", "MiB"] + [
                _mib(b.tool_info.get(t, {}), key) for t in vt] + pad + ["", ""])
    return lines, extra, notes


FLOWS_KEYS = (("flows", "flows opened (each protocol)", "", "{:.0f}"),
              ("fds", "translator's open fds with them", "", "{:.0f}"),
              ("rss_bytes_per_flow", "RSS per flow (first run)", "bytes", "{:.0f}"),
              ("idle_cpu_pct", "CPU while they idle", "%", "{:.2f}"),
              ("idle_wakeups_per_s", "wake-ups while they idle", "1/s", "{:.1f}"),
              ("tcp_ms_per_1000", "TCP set-up (wall clock)", "ms/1000", "{:.0f}"),
              ("udp_ms_per_1000", "UDP set-up and answers (wall clock)", "ms/1000", "{:.0f}"),
              ("udp_answered", "UDP flows answered", "", "{:.0f}"))
FLOWS_FIRST_ONLY = ("rss_bytes_per_flow",)
for _d, _what in (("g2h", "guest->host"), ("h2g", "host->guest")):
    FLOWS_KEYS += (
        (f"ratio_{_d}", f"{_what}: beside them / without", "x", "{:.2f}"),
        (f"bulk_without_{_d}", f"{_what}: bulk without them", "Gbit/s", "{:.2f}"),
        (f"bulk_with_{_d}", f"{_what}: bulk beside them", "Gbit/s", "{:.2f}"),
        (f"cpu_s_per_gib_without_{_d}", f"{_what}: CPU per GiB without", "s/GiB", "{:.3f}"),
        (f"cpu_s_per_gib_with_{_d}", f"{_what}: CPU per GiB beside", "s/GiB", "{:.3f}"),
        (f"user_ms_per_gib_without_{_d}", f"{_what}: user CPU per GiB without", "ms/GiB",
         "{:.1f}"),
        (f"user_ms_per_gib_with_{_d}", f"{_what}: user CPU per GiB beside", "ms/GiB",
         "{:.1f}"))


def flows_lines(b, rows, summary):
    """The 10k-flow row's details (flows.py), one line per figure: the
    median over the runs for each tool, "-" where it has none. RSS per
    flow is the first run's: the pages it touched stay resident, so the
    later runs' flows reuse them and read 0."""
    out = []
    for row in rows:
        per = summary[row.id]
        out.append([row.label, ""] + [""] * len(b.tools) + ["", ""])
        for key, what, unit, fmt in FLOWS_KEYS:
            vals = []
            for t in b.tools:
                got = [r[key] for r in per.get(t, {}).get("runs", [])
                       if r.get(key) is not None]
                if key in FLOWS_FIRST_ONLY:
                    got = got[:1]
                vals.append(fmt.format(statistics.median(got)) if got else "-")
            if any(v != "-" for v in vals):
                out.append(["  " + what, unit] + vals + ["", ""])
    return out


def vm_alt_base(row, summary):
    """A vhost-user VM row's fallback base: the best passt's median over
    qemu's stream socket in the same direction (Debian 12's passt has no
    --vhost-user; trixie's may be missing); None for other rows or when
    that is missing too."""
    if not row.id.startswith("vm-vu-"):
        return None
    stream = summary.get(row.id.replace("vm-vu-", "vm-"), {})
    return best_of(row, stream, VM_PEERS)


def _mib(info, key):
    return f"{info[key] / 1024:.1f}" if info.get(key) else "-"


def render_text(rows):
    """Aligned columns; rows may differ in length (the VM part has its own
    header) and a selection may leave a table empty."""
    if not rows:
        return ""
    n = max(len(r) for r in rows)
    w = [max(len(r[i]) for r in rows if i < len(r)) for i in range(n)]
    return "\n".join("  ".join(c.ljust(w[i]) if i < 2 else c.rjust(w[i])
                               for i, c in enumerate(r)).rstrip() for r in rows)


def render_md(rows):
    out = ["| " + " | ".join(rows[0]) + " |", "|" + "---|" * len(rows[0])]
    out += ["| " + " | ".join(c.strip() or " " for c in r) + " |" for r in rows[1:]]
    return "\n".join(out)


def md_section(m, main, extra, notes):
    s = [MARK_B, "",
         f"Measured {m['date']} on {m['cpu']} ({m['cpus']} CPUs), kernel {m['kernel']}; "
         f"`{m['command']}`, median of {m['runs']} runs of {m['seconds_per_run']} s each"
         f" (VM rows: {m.get('vm_runs', m['runs'])} of {m.get('vm_seconds_per_run', m['seconds_per_run'])} s,"
         f" in one guest boot per tool); "
         f"whole run {m['elapsed_s']} s. {m['ferry']}, pasta (passt) {m['pasta']}, "
         f"trixie's {m.get('pasta-trixie', 'not run')}, "
         f"slirp4netns {m['slirp4netns']}, iperf3 {m['iperf3']}.", "",
         render_md(main), "", render_md(extra), ""]
    if notes:
        s += ["n/a reasons:", ""] + [f"- {n}" for n in notes] + [""]
    s += [MARK_E]
    return "\n".join(s)


def write_all(b, summary, elapsed, m=None):
    """Print the table; write results.json/.md, the chart; publish if asked."""
    m = m or meta(b, elapsed)
    main, extra, notes = table(b, summary)
    os.makedirs(b.out, exist_ok=True)
    doc = {"meta": m, "tools": b.tools, "tool_info": b.tool_info, "rows": []}
    for row in b.rows:
        rv, rp = ratios(row, summary[row.id])
        doc["rows"].append({"id": row.id, "label": row.label, "unit": row.unit,
                            "tools": b.row_tools(row), "base": row.base, "kind": row.kind,
                            "better": row.better, "mtu": row.mtu, "family": row.fam,
                            "results": summary[row.id], "ferry_vs_base": rv,
                            "base_median": base_value(row, summary[row.id]),
                            "ferry_vs_best_peer": rp})
        alt = vm_alt_base(row, summary)
        if alt:
            doc["rows"][-1]["alt_base"] = {"label": "passt stream", "median": alt}
    with open(os.path.join(b.out, "results.json"), "w") as f:
        json.dump(doc, f, indent=1)
    text = render_text(main) + "\n\n" + render_text(extra)
    if notes:
        text += "\n\nn/a:\n" + "\n".join("  " + n for n in notes)
    print(f"\nferry benchmark, {m['date']}, kernel {m['kernel']}, {m['cpus']} CPUs; "
          f"median of {m['runs']} x {m['seconds_per_run']} s; cells: median (lowest "
          "1-s interval) [loss] [p99]\n")
    print(text)
    print("\ntargets (issue 6):\n" + targets.text(doc))
    md = md_section(m, main, extra, notes)
    with open(os.path.join(b.out, "results.md"), "w") as f:
        f.write(md + "\n")
    svg = os.path.join(b.out, "bench.svg")
    chart.write(svg, doc)
    print(f"\nwrote {b.out}/results.json, results.md, bench.svg")
    if b.publish:
        docdir = os.path.join(b.root, "doc")
        shutil.copy(svg, os.path.join(docdir, "bench.svg"))
        publish_md(os.path.join(docdir, "bench.md"), md)
        publish_md(os.path.join(docdir, "bench.md"), targets.section(doc),
                   targets.TARGETS_B, targets.TARGETS_E, append=False)
        publish_md(os.path.join(b.root, "README.md"), readme_line(m), README_B, README_E)
        print("published doc/bench.svg, the results and targets in doc/bench.md and "
              "README.md's chart caption")


def readme_line(m):
    """README's caption for the chart: when, where, how it was made."""
    return (f"{README_B}\nThe chart above: {m['date']}, {m['cpu']} with {m['cpus']} CPUs "
            f"(shared), kernel {m['kernel']}, `{m['command']}` (median of {m['runs']} runs "
            f"of {m['seconds_per_run']} s; {m['ferry']}, pasta {m['pasta']} and "
            f"{m.get('pasta-trixie', 'not run')}, "
            f"slirp4netns {m['slirp4netns']}).\n{README_E}")


def publish_md(path, section, begin=MARK_B, end=MARK_E, append=True):
    """Replace the generated section of a file (between the markers); where
    the markers are missing, append the section (or, without append, leave
    the file alone: the section's place is chosen by hand)."""
    try:
        with open(path) as f:
            text = f.read()
    except FileNotFoundError:
        text = "# Benchmarks\n\n" + begin + "\n" + end + "\n"
    if begin in text and end in text:
        a, rest = text.split(begin, 1)
        _, z = rest.split(end, 1)
        text = a + section + z
    elif append:
        text += "\n" + section + "\n"
    else:
        return
    with open(path, "w") as f:
        f.write(text)
