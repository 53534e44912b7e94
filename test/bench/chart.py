"""chart.py - results.json as an SVG bar chart, written by hand (no deps).

One group of horizontal bars per row, one bar per tool, each bar the
tool's median relative to veth in the same run, drawn so that longer is
always better: throughput and rates as tool/veth, latency as veth/tool.
The absolute median is printed at the end of each bar, with the loss
where the row measured one (UDP); a lossy bar (>= 1% lost) is drawn pale,
its length the rate delivered. A tool that could not do the row shows
"n/a". veth (the kernel's limit) is the line at 1.0. Labels longer than
the label column wrap onto two lines; a caption line says that bars near
zero are measured values whenever a row has one.
"""
from xml.sax.saxutils import escape

COLORS = {"veth": "#9e9e9e", "ferry": "#d9480f", "ferry-base": "#f08c00", "pasta": "#1c7ed6",
          "pasta-trixie": "#15aabf", "slirp4netns": "#37b24d", "passt": "#7048e8",
          "passt-trixie": "#ae3ec9"}
LABEL_W, BAR_W, RIGHT_W, BAR_H, GAP, TOP = 330, 520, 90, 9, 9, 108
LABEL_CHARS = 50	# what fits in LABEL_W at font size 11
NEAR_ZERO = 0.05	# a bar below this share of its base reads as "missing"


def _wrap(label):
    """The label as one line, or two split at the space nearest the middle
    when it is longer than LABEL_CHARS."""
    if len(label) <= LABEL_CHARS:
        return [label]
    spaces = [i for i, ch in enumerate(label) if ch == " "]
    if not spaces:
        return [label]
    cut = min(spaces, key=lambda i: abs(i - len(label) / 2))
    return [label[:cut], label[cut + 1:]]


def _loss(row, tool):
    """The tool's loss in percent on this row, or None."""
    return row["results"].get(tool, {}).get("loss")


def _near_zero_tools(rows, tools):
    """Tools with a measured bar below NEAR_ZERO of its base somewhere."""
    out = []
    for r in rows:
        for t in r.get("tools", tools):
            rel, v = _rel(r, t)
            if v is not None and rel is not None and rel < NEAR_ZERO and t not in out:
                out.append(t)
    return out


def _rel(row, tool):
    r = row["results"].get(tool, {})
    v = r.get("median")
    base = row.get("base_median")	# a VM row: the better passt
    if base is None:	# results.json before trixie's passt came in
        base = row["results"].get(row.get("base", "veth"), {}).get("median")
    if not base:	# e.g. passt without --vhost-user: its stream figure
        base = row.get("alt_base", {}).get("median")
    if v is None or not base:
        return None, v
    if row["better"] == "lower":
        return (base / v if v else None), v
    return v / base, v


def _fmt(v, unit):
    if unit == "Gbit/s":
        return f"{v:.2f}"
    if unit == "us":
        return f"{v:.0f} us"
    return f"{v / 1000:.1f}k" if v >= 1000 else f"{v:.0f}"


def write(path, doc):
    tools = doc["tools"]
    rows = doc["rows"]
    rels = [_rel(r, t)[0] for r in rows for t in r.get("tools", tools)]
    top = max([x for x in rels if x] + [1.2])
    top = min(top, 3.0)
    group_h = len(tools) * BAR_H + GAP
    height = TOP + len(rows) * group_h + 40
    width = LABEL_W + BAR_W + RIGHT_W
    x0 = LABEL_W
    sx = BAR_W / top
    m = doc["meta"]
    o = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
         f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="11">',
         f'<rect width="{width}" height="{height}" fill="white"/>',
         f'<text x="10" y="20" font-size="15" font-weight="bold">ferry vs veth, pasta, '
         f'slirp4netns (VM mode: vs passt): relative to veth (longer is better)</text>',
         f'<text x="10" y="38" fill="#444">{escape(m["date"])}, kernel {escape(m["kernel"])}, '
         f'{m["cpus"]} CPUs ({escape(m["cpu"][:48])}); median of {m["runs"]} x '
         f'{m["seconds_per_run"]} s; `{escape(m["command"])}`. Numbers: absolute medians '
         '(Gbit/s, us, req/s).</text>']
    low = _near_zero_tools(rows, tools)
    if low:
        o.append(f'<text x="10" y="54" fill="#444">Bars near zero are measured, not '
                 f'missing: {escape(", ".join(low))} delivered under {NEAR_ZERO:.0%} of '
                 'veth there (doc/bench.md says why). Pale bars lost 1% or more.</text>')
    lx = 10
    legend = list(tools)
    for r in rows:
        legend += [t for t in r.get("tools", []) if t not in legend]
    for t in legend:
        o.append(f'<rect x="{lx}" y="66" width="12" height="12" fill="{COLORS.get(t, "#888")}"/>')
        o.append(f'<text x="{lx + 16}" y="76">{escape(t)}</text>')
        lx += 30 + 7 * len(t)
    # grid
    step = 0.25 if top <= 1.5 else 0.5
    g = 0.0
    while g <= top + 1e-9:
        x = x0 + g * sx
        o.append(f'<line x1="{x:.1f}" y1="{TOP - 12}" x2="{x:.1f}" y2="{height - 30}" '
                 f'stroke="{"#333" if abs(g - 1) < 1e-9 else "#ddd"}" '
                 f'stroke-width="{1.5 if abs(g - 1) < 1e-9 else 1}"/>')
        o.append(f'<text x="{x:.1f}" y="{TOP - 16}" text-anchor="middle" fill="#666">'
                 f'{g:.2f}x</text>')
        g += step
    y = TOP
    for i, r in enumerate(rows):
        if i % 2:
            o.append(f'<rect x="0" y="{y - 2}" width="{width}" height="{group_h}" '
                     'fill="#f6f6f6" fill-opacity="0.7"/>')
        base = r.get("base", "veth")
        if not r["results"].get(base, {}).get("median") and r.get("alt_base"):
            base = r["alt_base"]["label"]
        label = r["label"] + (f" (vs {base})" if base != "veth" else "")
        lines = _wrap(label)
        mid = y + len(tools) * BAR_H / 2 + 4 - 6.5 * (len(lines) - 1)
        for k, line in enumerate(lines):
            o.append(f'<text x="{LABEL_W - 8}" y="{mid + 13 * k:.1f}" '
                     f'text-anchor="end">{escape(line)}</text>')
        for j, t in enumerate(r.get("tools", tools)):
            rel, v = _rel(r, t)
            by = y + j * BAR_H
            if v is None:
                o.append(f'<text x="{x0 + 3}" y="{by + BAR_H - 1}" font-size="9" '
                         f'fill="{COLORS.get(t, "#888")}">{escape(t)}: n/a</text>')
                continue
            w = max(1.0, min(rel if rel is not None else 0, top) * sx)
            loss = _loss(r, t)
            txt = _fmt(v, r["unit"])
            if loss is not None:
                txt += f", {loss:.1f}% lost"
            pale = ' fill-opacity="0.4"' if loss is not None and loss >= 1.0 else ""
            o.append(f'<rect x="{x0}" y="{by}" width="{w:.1f}" height="{BAR_H - 1}" '
                     f'fill="{COLORS.get(t, "#888")}"{pale}><title>{escape(t)}: '
                     f'{escape(txt)}</title></rect>')
            o.append(f'<text x="{x0 + w + 3:.1f}" y="{by + BAR_H - 1}" font-size="9">'
                     f'{escape(txt)}</text>')
        y += group_h
    o.append(f'<text x="10" y="{height - 10}" fill="#666">made by test/bench/chart.py from '
             'build/bench/results.json (doc/bench.md says how)</text>')
    o.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(o) + "\n")
