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
