"""Planning over a topology: the routing bound prunes, emulation checks. On two-regions with a
site-size and bandwidth space the front is monotone and its best candidate at the shipped cost
or less beats the shipped deployment, both emulated the same way."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from emulator.planner.goodput import SLO
from emulator.planner.topology_plan import (
    Prices,
    TopologyPlanError,
    TopologySettings,
    TopologySpace,
    gbps_list,
    pareto,
    plan_topology,
)
from emulator.scenario import presets
from prfaas_tui.cli import main

PRICES = {"hub": 2.0, "east": 1.0, "west": 1.0}
PER_TB = {"hub->east": 0.1, "hub->west": 0.1}


@pytest.fixture(scope="module")
def summary():
    sc = presets.load("two-regions", topology=True)
    prices = Prices.of(sc.declared_topology, PRICES, PER_TB)
    space = TopologySpace({"hub": (8, 9, 10)}, {"hub->east": gbps_list("50,200"),
                                            "hub->west": gbps_list("20,40")}, ("threshold",))
    return plan_topology(sc, space, prices,
                         TopologySettings(SLO(10.0), seeds=(1,), duration=600, steps=7))


def test_shipped_cost_by_hand():
    topo = presets.load("two-regions", topology=True).declared_topology
    prices = Prices.of(topo, PRICES, PER_TB)
    # 8 hub x 2 + 16 region instances x 1 + (100 + 40) Gbps = 17.5 GB/s = 63 TB/h x 0.1
    assert prices.cost_per_hour(topo) == pytest.approx(16 + 16 + 6.3)


def test_front_is_monotone_and_beats_the_shipped_deployment(summary):
    front = summary["pareto"]
    assert len(front) >= 2
    for a, b in zip(front, front[1:], strict=False):
        assert a["cost_per_hour"] < b["cost_per_hour"] and a["goodput"] < b["goodput"]
    shipped, best = summary["shipped"], summary["best_within_shipped_cost"]
    assert best is not None and best in front
    assert best["cost_per_hour"] <= shipped["cost_per_hour"]
    assert best["goodput"] > shipped["goodput"] > 0  # both by emulation (bisection)
    assert best["runs"] == shipped["runs"] == 7


def test_the_bound_prunes_only_what_cannot_matter(summary):
    finished = summary["ranked"] + [summary["shipped"]]
    assert summary["pruned_by_bound"] == len(summary["pruned"]) >= 1
    for p in summary["pruned"]:
        assert any(r["cost_per_hour"] <= p["cost_per_hour"] and r["goodput"] > p["bound"]
                   for r in finished), p
    for r in finished:
        assert 0 <= r["goodput"] <= r["bound"]
    assert summary["emulated"] + summary["pruned_by_bound"] == summary["candidates"] == 12


@given(st.lists(st.tuples(st.floats(0, 100), st.floats(0, 10)), min_size=1, max_size=30))
def test_pareto_front_is_monotone_and_undominated(points):
    recs = [{"key": str(i), "cost_per_hour": c, "goodput": g} for i, (c, g) in enumerate(points)]
    front = pareto(recs)
    for a, b in zip(front, front[1:], strict=False):
        assert a["cost_per_hour"] <= b["cost_per_hour"] and a["goodput"] < b["goodput"]
    for r in recs:  # every record is matched or beaten by a front point costing no more
        assert any(f["cost_per_hour"] <= r["cost_per_hour"] and f["goodput"] >= r["goodput"]
                   for f in front)


def test_a_price_missing_names_the_key():
    topo = presets.load("two-regions", topology=True).declared_topology
    with pytest.raises(TopologyPlanError, match=r"site\[0\]\.price"):
        Prices.of(topo)


@pytest.mark.parametrize("argv, words", [
    (["--site", "hub=8"], "site[0].price"),
    (["--site", "nowhere=3", "--price", "hub=2"], "--site: no site named 'nowhere'"),
    (["--link", "hub->west=-5"], "--link: hub->west: must be >= 1 Mbps"),
    (["--routing", "magic"], "--routing: 'magic'"),
    (["--n-prfaas", "2:4"], "--n-prfaas: a single-pair flag"),
])
def test_bad_topology_plan_flags_are_one_line(argv, words, capsys):
    assert main(["plan", "--preset", "two-regions", *argv]) == 2
    err = capsys.readouterr().err
    assert words in err and len(err.strip().splitlines()) == 1
