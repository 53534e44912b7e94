"""test_bench.py - the benchmark's own logic that does not need a network:
udp_search() (test/bench/measure.py), the "best rate with < 1% loss"
search, driven by a fake probe with a known loss threshold."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "bench"))
import measure  # noqa: E402


def search(limit, probes=7, fail_at=None):
    """udp_search() against a path that loses >= 1% above limit bit/s
    (probe number fail_at, counted from 0, errors out)."""
    calls = []

    def probe(rate):
        calls.append(rate)
        if fail_at is not None and len(calls) - 1 == fail_at:
            return {"value": None, "error": "iperf3 failed"}
        return {"value": min(rate, limit) / 1e9, "loss": 0.0 if rate <= limit else 5.0}

    return measure.udp_search(None, "4", 1, False, 5e8, probes, probe=probe), calls


def test_search_separates_rates_within_a_bracket():
    # 1.00 and 1.20 Gbit/s paths: the old ladder (5 probes, halving) gave
    # both 1.00; the search must now tell them apart
    a, _ = search(1.0e9)
    b, _ = search(1.2e9)
    assert a["value"] < b["value"]
    for res, limit in ((a, 1.0e9), (b, 1.2e9)):
        best = res["value"] * 1e9
        assert best <= limit
        assert best >= limit / measure.UDP_SEARCH_STEP ** 2, res["probes"]


def test_search_stops_when_bracket_is_narrow():
    res, calls = search(1.0e9, probes=20)
    rates = sorted(r for r, _ in res["probes"])
    ok = [r for r, loss in res["probes"] if loss < 1.0]
    bad = [r for r, loss in res["probes"] if loss >= 1.0]
    assert min(bad) / max(ok) <= measure.UDP_SEARCH_STEP
    assert len(calls) < 20 and len(rates) == len(calls)


def test_search_all_lossy_and_errors():
    res, _ = search(1e8, probes=3)	# halves down: 0.5, 0.25, 0.125 all lose
    assert res["value"] == 0.0 and "loss >= 1%" in res["note"]
    res, _ = search(1e8)		# ... then finds the rate below 0.1
    assert 0.09 < res["value"] <= 0.1
    res, _ = search(1e9, fail_at=0)	# the first probe fails: its error
    assert res["value"] is None and res["error"] == "iperf3 failed"
    res, _ = search(1e9, fail_at=3)	# a later one: the best so far
    assert res["value"] == 1.0


# targets.py: issue 6's verdicts computed from a results document.
import targets  # noqa: E402


def _row(rid, kind, unit, better, res, fam="4", mtu=65520, tools=None, **extra):
    """A results.json row with the ratios report.py would store."""
    f = res.get("ferry", {}).get("median")
    # report.py lists every row's tools; only VM rows are measured on passt
    tools = tools or ["veth", "ferry", "pasta", "slirp4netns"]
    base = res.get("passt" if kind == "vm" else "veth", {}).get("median")
    peers = [res[p]["median"] for p in ("pasta", "slirp4netns") if p in res]
    best = (max(peers) if better == "higher" else min(peers)) if peers else None
    r = {"id": rid, "kind": kind, "unit": unit, "better": better, "family": fam,
         "mtu": mtu, "tools": tools, "results": res,
         "ferry_vs_base": f / base if f and base else None,
         "ferry_vs_best_peer": f / best if f and best else None}
    r.update(extra)
    return r


def _tcp(rid, mtu, veth, ferry, pasta, fmin=5.0, pmin=5.0):
    return _row(rid, "tcp", "Gbit/s", "higher",
                {"veth": {"median": veth}, "ferry": {"median": ferry, "min_per_sec": fmin},
                 "pasta": {"median": pasta, "min_per_sec": pmin}},
                fam=rid.split("-v")[1][0], mtu=mtu)


def _doc(rows):
    return {"meta": {"date": "2026-11-30 00:00 UTC", "ferry": "ferry test"}, "rows": rows}


def _verdicts(rows):
    return {line[0]: line for line in targets.lines(_doc(rows))[1:]}


def test_targets_tcp_floors_count_rows_that_meet_them():
    v = _verdicts([_tcp("tcp1-g2h-v4-65520", 65520, 10, 9.5, 9),
                   _tcp("tcp1-h2g-v4-65520", 65520, 10, 8.0, 7),
                   _tcp("tcp1-g2h-v4-1500", 1500, 10, 6.5, 3)])
    assert v["TCP at MTU 65520 >= 0.9x veth"][2] == "1 of 2 rows"
    assert "1s g->h v4 0.95x" in v["TCP at MTU 65520 >= 0.9x veth"][1]
    assert v["TCP at MTU 1500 >= 0.6x veth"][2] == "yes"
    assert v["no second at zero"][2] == "yes"


def test_targets_second_at_zero_and_peers_stalls():
    v = _verdicts([_tcp("tcp4-g2h-v6-1500", 1500, 10, 7, 3, fmin=0.05, pmin=0.0)])
    assert v["no second at zero"][2] == "no"
    assert "0.05 Gbit/s (4s g->h v6, MTU 1500)" in v["no second at zero"][1]
    assert "pasta in 1 row" in v["no second at zero"][1]


def test_targets_latency_is_lower_better_both_for_veth_and_peers():
    rr = _row("rr-v4-65520", "sockperf", "us", "lower",
              {"veth": {"median": 20.0}, "ferry": {"median": 25.0},
               "pasta": {"median": 50.0}})
    v = _verdicts([rr])
    assert v["latency p50 <= 1.3x veth"][2] == "yes"	# 1.25x
    assert "IPv4 25.0 us vs 20.0 us" in v["latency p50 <= 1.3x veth"][1]
    peers = [k for k in v if k.startswith("ahead of pasta")][0]
    assert v[peers][1] == "ahead on 1 row" and v[peers][2] == "yes"
    rr["results"]["ferry"]["median"] = 51.0	# 2% behind pasta: level
    rr["ferry_vs_base"], rr["ferry_vs_best_peer"] = 51.0 / 20, 51.0 / 50
    v = _verdicts([rr])
    assert v["latency p50 <= 1.3x veth"][2] == "no"
    assert "level (within 2%) on rr-v4-65520" in v[peers][1] and v[peers][2] == "no"


def test_targets_behind_a_peer_is_named():
    v = _verdicts([_tcp("tcp4-g2h-v4-65520", 65520, 10, 5.0, 6.0),
                   _tcp("tcp4-h2g-v4-65520", 65520, 10, 9.0, 6.0)])
    line = [v[k] for k in v if k.startswith("ahead of pasta")][0]
    assert line[1] == "behind on 4s g->h v4 MTU 65520 (0.83x); ahead on 1 row"
    assert line[2] == "no"


def test_targets_vm_rows_fall_back_to_passt_stream():
    vm = _row("vm-tcp1-g2h-v4", "vm", "Gbit/s", "higher",
              {"ferry": {"median": 1.7}, "passt": {"median": 1.7}}, tools=["ferry", "passt"])
    vu = _row("vm-vu-tcp1-g2h-v4", "vm", "Gbit/s", "higher",
              {"ferry": {"median": 1.0}, "passt": {"na": "no vhost-user"}},
              tools=["ferry", "passt"], alt_base={"label": "passt stream", "median": 2.0})
    line = _verdicts([vm, vu])["VM mode: at least level with the better passt"]
    assert "vm-vu-tcp1-g2h-v4 1.00 vs passt stream 2.00 (0.50x)" in line[1]
    assert line[2] == "1 of 2 rows"


def test_vm_rows_compare_with_the_better_passt():
    """Debian 12's passt and trixie's in one VM row: the verdict, the
    report's f/passt ratio and the chart's bars use the faster one; the
    namespace rows take trixie's pasta as a peer."""
    import report
    import chart
    vm = _row("vm-vu-tcp1-h2g-v4", "vm", "Gbit/s", "higher",
              {"ferry": {"median": 2.0}, "passt": {"na": "no vhost-user"},
               "passt-trixie": {"median": 2.5}}, tools=["ferry", "passt", "passt-trixie"])
    line = _verdicts([vm])["VM mode: at least level with the better passt"]
    assert line[1] == "vm-vu-tcp1-h2g-v4 2.00 vs passt-trixie 2.50 (0.80x)"
    assert line[2] == "0 of 1 rows"

    class Row:
        base, better = "passt", "higher"
    rv, _ = report.ratios(Row, vm["results"])
    assert abs(rv - 0.8) < 1e-9
    vm["base_median"] = report.base_value(Row, vm["results"])
    assert abs(chart._rel(vm, "ferry")[0] - 0.8) < 1e-9
    Row.base, Row.better = "veth", "lower"
    rr = {"veth": {"median": 20.0}, "ferry": {"median": 30.0}, "pasta": {"median": 60.0},
          "pasta-trixie": {"median": 40.0}}
    assert report.ratios(Row, rr) == (1.5, 0.75)


def test_targets_vm_and_namespace_rows_stay_apart():
    """As report.py writes them (every row lists its tools): the VM line
    names only VM rows, the peer line counts only namespace rows."""
    vm = _row("vm-tcp1-g2h-v4", "vm", "Gbit/s", "higher",
              {"ferry": {"median": 2.0}, "passt": {"median": 1.8}}, tools=["ferry", "passt"])
    v = _verdicts([_tcp("tcp1-g2h-v4-65520", 65520, 10, 9.5, 9), vm])
    line = v["VM mode: at least level with the better passt"]
    assert line[1] == "vm-tcp1-g2h-v4 2.00 vs passt 1.80 (1.11x)" and line[2] == "yes"
    peers = [v[k] for k in v if k.startswith("ahead of pasta")][0]
    assert peers[1] == "ahead on 1 row" and peers[2] == "yes"


def test_targets_section_has_markers_and_a_row_per_target():
    s = targets.section(_doc([_tcp("tcp1-g2h-v4-65520", 65520, 10, 9.5, 9)]))
    assert s.startswith(targets.TARGETS_B) and s.endswith(targets.TARGETS_E)
    assert s.count("\n| ") == 10	# header, separator, 8 targets (no VM rows)


def test_render_text_takes_ragged_and_empty_tables():
    """A BENCH_ONLY selection crashed the report after every run had
    finished (IndexError: a table empty, or rows shorter than the first)."""
    import report
    assert report.render_text([]) == ""
    t = report.render_text([["path", "unit", "veth"], ["VM", "x"], ["a", "b", "10", "2"]])
    assert t.splitlines()[2].endswith("10  2")


def test_flows_row_has_its_own_target_and_no_peer_verdict():
    """The 10k-flow row's figure is a ratio to the same tool without the
    flows: judged against 0.95, never against the peers."""
    fl = _row("flows10k-g2h-v4-65520", "flows", "x", "higher",
              {"veth": {"median": 1.0}, "ferry": {"median": 0.9, "runs": [{"flows": 9836}]},
               "pasta": {"median": 2.0}})
    v = _verdicts([fl, _tcp("tcp1-g2h-v4-65520", 65520, 10, 9.5, 9)])
    line = v["bulk beside 10k idle flows >= 0.95x without (issue 23)"]
    assert line[1] == "0.90x with 9836 TCP + 9836 UDP" and line[2] == "no"
    peers = [v[k] for k in v if k.startswith("ahead of pasta")][0]
    assert peers[1] == "ahead on 1 row"


def test_base_build_is_a_column_after_ferry():
    """BENCH_BASE / FERRY_BASE_BIN: the A/B build sits beside ferry in
    the namespace and VM tool lists; without it the lists are as they
    were."""
    import bench
    assert bench.with_base(bench.NS_TOOLS, None) == bench.NS_TOOLS
    ns = bench.with_base(bench.NS_TOOLS, "/tmp/ferry-base")
    assert ns[:3] == ("veth", "ferry", "ferry-base") and len(ns) == len(bench.NS_TOOLS) + 1
    assert bench.with_base(bench.VM_TOOLS, "/x")[:2] == ("ferry", "ferry-base")
