"""targets.py - issue 6's targets, judged row by row from one bench run.

Input is the document report.py writes as results.json (rows with their
per-tool results and ratios); output is a markdown table "target |
measured | met?" that make bench prints and publishes in doc/bench.md
between the bench:targets markers, so the verdicts are computed from the
run they describe instead of typed by hand. Standalone:

    python3 test/bench/targets.py build/bench/results.json

A ratio to the best peer (either pasta or slirp4netns; in VM mode the
better passt, Debian 12's or trixie's) within LEVEL of 1 counts
as level, not ahead or behind: medians of three short runs on a shared
2-core machine do not separate closer figures.
"""
import json
import sys

TARGETS_B, TARGETS_E = "<!-- bench:targets:begin -->", "<!-- bench:targets:end -->"
LEVEL = 0.02
ZERO_GBIT = 0.1		# a "second at zero": the lowest 1-s interval below this

TCP_FLOOR = {65520: 0.9, 1500: 0.6}
NS_PEERS = ("pasta", "pasta-trixie", "slirp4netns")
FLOWS_FLOOR = 0.95
VM_PEERS = ("passt", "passt-trixie")


def _short(row):
    """A compact name for a row inside a table cell."""
    i = row["id"]
    if row["kind"] == "tcp":
        streams, d = i.split("-")[0][3:], i.split("-")[1]
        return f"{streams}s {d.replace('2', '->')} v{row['family']}"
    return i


def _fmt(x, unit):
    if x is None:
        return "n/a"
    if unit == "Gbit/s":
        return f"{x:.2f}"
    if unit == "us":
        return f"{x:.1f} us"
    return f"{x:.0f}/s"


def _med(row, tool):
    return row["results"].get(tool, {}).get("median")


def _peer_ratio(row):
    """ferry over the best peer, oriented so that > 1 means ferry is better."""
    rp = row.get("ferry_vs_best_peer")
    if not rp:
        return None
    return 1 / rp if row["better"] == "lower" else rp


def _veth_ok(row, floor):
    rv = row.get("ferry_vs_base")
    if rv is None:
        return None
    return rv <= floor if row["better"] == "lower" else rv >= floor


def _floor_line(rows, what, floor, label):
    """One target "ratio to veth at least (or at most) floor" over rows."""
    cells, met, known = [], 0, 0
    for r in rows:
        ok = _veth_ok(r, floor)
        rv = r.get("ferry_vs_base")
        cells.append(f"{label(r)} {rv:.2f}x" if rv is not None else f"{label(r)} n/a")
        if ok is not None:
            known += 1
            met += ok
    if not rows:
        return [what, "not measured in this run", "n/a"]
    verdict = "yes" if known and met == len(rows) else (
        "no" if met == 0 else f"{met} of {len(rows)} rows")
    return [what, "; ".join(cells), verdict]


def _tcp_lines(rows):
    out = []
    for mtu, floor in TCP_FLOOR.items():
        sel = [r for r in rows if r["kind"] == "tcp" and r["mtu"] == mtu]
        out.append(_floor_line(sel, f"TCP at MTU {mtu} >= {floor}x veth", floor, _short))
    return out


def _zero_line(rows):
    tcp = [r for r in rows if r["kind"] == "tcp"]
    lows = [(r["results"]["ferry"]["min_per_sec"], r) for r in tcp
            if r["results"].get("ferry", {}).get("min_per_sec") is not None]
    if not lows:
        return ["no second at zero", "not measured in this run", "n/a"]
    low, where = min(lows, key=lambda x: x[0])
    peers = {}
    for r in tcp:
        for t in NS_PEERS:
            m = r["results"].get(t, {}).get("min_per_sec")
            if m is not None and m < ZERO_GBIT:
                peers[t] = peers.get(t, 0) + 1
    txt = f"ferry's lowest second in any TCP row {low:.2f} Gbit/s ({_short(where)}, MTU {where['mtu']})"
    if peers:
        txt += "; below %.1f Gbit/s: " % ZERO_GBIT + ", ".join(
            f"{t} in {n} row{'s' if n > 1 else ''}" for t, n in sorted(peers.items()))
    return ["no second at zero", txt, "yes" if low >= ZERO_GBIT else "no"]


def _one(rows, kind_id, what, floor, detail):
    sel = [r for r in rows if r["id"].startswith(kind_id)]
    return _floor_line(sel, what, floor, detail)


def _vs_veth(r):
    f, v = _med(r, "ferry"), _med(r, "veth")
    name = "IPv" + r["family"] if r["unit"] == "us" else ""
    return (f"{name} {_fmt(f, r['unit'])} vs {_fmt(v, r['unit'])}").strip()


def _is_vm(row):
    """A VM-mode row: measured against passt, not against veth and the
    namespace peers (every row lists its tools, so that list cannot tell)."""
    return row["kind"] == "vm"


def _peer_line(rows):
    """Ahead of the peers on every row they were measured on."""
    behind, level, ahead = [], [], 0
    for r in rows:
        if _is_vm(r) or r["kind"] == "flows":	# flows: a ratio to itself
            continue
        q = _peer_ratio(r)
        if q is None:
            continue
        name = f"{_short(r)}{' MTU ' + str(r['mtu']) if r['kind'] == 'tcp' else ''}"
        if q < 1 - LEVEL:
            behind.append(f"{name} ({q:.2f}x)")
        elif q <= 1 + LEVEL:
            level.append(f"{name} ({q:.2f}x)")
        else:
            ahead += 1
    parts = []
    if behind:
        parts.append("behind on " + ", ".join(behind))
    if level:
        parts.append(f"level (within {LEVEL:.0%}) on " + ", ".join(level))
    parts.append(f"ahead on {ahead} row{'s' if ahead != 1 else ''}")
    return ["ahead of pasta (both) and slirp4netns on every row (ratio to the best peer, "
            "> 1 is ferry better)", "; ".join(parts), "no" if behind or level else "yes"]


def _flows_line(rows):
    """Issue 23's 10k flows: the bulk stream beside them >= FLOWS_FLOOR
    of its rate without; None when the row was not run."""
    sel = [r for r in rows if r["kind"] == "flows"]
    if not sel:
        return None
    cells, met = [], 0
    for r in sel:
        d = r["results"].get("ferry", {})
        q = d.get("median")
        runs = d.get("runs", [])
        n = runs[0].get("flows") if runs else None
        cells.append(f"{q:.2f}x with {n} TCP + {n} UDP" if q is not None else "n/a")
        met += bool(q is not None and q >= FLOWS_FLOOR)
    return [f"bulk beside 10k idle flows >= {FLOWS_FLOOR}x without (issue 23)",
            "; ".join(cells), "yes" if met == len(sel) else "no"]


def _vm_line(rows):
    vm = [r for r in rows if _is_vm(r)]
    if not vm:
        return None
    cells, met = [], 0
    for r in vm:
        f = _med(r, "ferry")
        got = [(_med(r, t), t) for t in VM_PEERS if _med(r, t)]
        base, name = max(got) if got else (None, None)
        alt = r.get("alt_base", {}).get("median")
        b, how = (base, name) if base else (alt, "passt stream")
        q = f / b if f and b else None
        met += bool(q and q >= 1 - LEVEL)
        cells.append(f"{r['id']} {_fmt(f, r['unit'])} vs {how} {_fmt(b, r['unit'])}"
                     + (f" ({q:.2f}x)" if q else ""))
    return ["VM mode: at least level with the better passt", "; ".join(cells),
            "yes" if met == len(vm) else f"{met} of {len(vm)} rows"]


def lines(doc):
    """The rows of the targets table for one results document."""
    rows = doc["rows"]
    out = [["target (issue 6)", "measured (ferry / veth unless said)", "met?"]]
    out += _tcp_lines(rows)
    out.append(_zero_line(rows))
    out.append(_one(rows, "udp-max-", "UDP >= 0.7x veth at < 1% loss", 0.7,
                    lambda r: r["id"].split("-")[2].replace("2", "->")))
    out.append(_one(rows, "rr-", "latency p50 <= 1.3x veth", 1.3, _vs_veth))
    out.append(_one(rows, "http-close-", "connection rate >= 0.8x veth", 0.8, _vs_veth))
    out.append(_one(rows, "http-keep-", "keep-alive request rate >= 0.7x veth", 0.7,
                    _vs_veth))
    fl = _flows_line(rows)
    if fl:
        out.append(fl)
    out.append(_peer_line(rows))
    vm = _vm_line(rows)
    if vm:
        out.append(vm)
    return out


def section(doc):
    """The markdown section published in doc/bench.md (markers included)."""
    t = lines(doc)
    md = ["| " + " | ".join(t[0]) + " |", "| --- | --- | --- |"]
    md += ["| " + " | ".join(c.replace("|", "/") for c in r) + " |" for r in t[1:]]
    m = doc.get("meta", {})
    return "\n".join([TARGETS_B, "",
                      f"Computed by `test/bench/targets.py` from the run of {m.get('date', '?')} "
                      f"({m.get('ferry', 'ferry')}).", ""] + md + ["", TARGETS_E])


def text(doc):
    """The same verdicts for stdout, one target per line."""
    return "\n".join(f"{r[2]:>14}  {r[0]}: {r[1]}" for r in lines(doc)[1:])


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: targets.py RESULTS_JSON")
    with open(sys.argv[1]) as f:
        print(section(json.load(f)))
