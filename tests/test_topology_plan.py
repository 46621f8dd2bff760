"""Planning over a topology: the routing bound prunes, emulation checks. On two-regions with a
site-size and bandwidth space the front is monotone and its best candidate at the shipped cost
or less beats the shipped deployment, both emulated the same way."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from emulator.planner.goodput import SLO, Settings
from emulator.planner.prices import PlanInputError, Prices
from emulator.planner.space import TopologySpace
from emulator.planner.sweep import Plan, pareto, run_plan
from emulator.scenario import presets
from emulator.units import GBPS
from prfaas_tui.cli import main

PRICES = {"hub": 2.0, "east": 1.0, "west": 1.0}
PER_TB = {"hub->east": 0.1, "hub->west": 0.1}


def gbps_list(text: str) -> tuple[float, ...]:
    return tuple(float(x) * GBPS for x in text.split(","))


@pytest.fixture(scope="module")
def summary():
    sc = presets.load("two-regions", topology=True)
    prices = Prices.of(sc.declared_topology, PRICES, PER_TB)
    space = TopologySpace({"hub": (8, 9, 10)}, {"hub->east": gbps_list("50,200"),
                                            "hub->west": gbps_list("20,40")}, ("threshold",))
    return run_plan(Plan(sc, space, Settings(SLO(10.0), seeds=(1,), duration=600, steps=7),
                         prices=prices))


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
    for r in recs:  # every record served is matched or beaten by a front point costing no more
        if r["goodput"] <= 0:
            assert r not in front  # no rate met the SLO: on no front
            continue
        assert any(f["cost_per_hour"] <= r["cost_per_hour"] and f["goodput"] >= r["goodput"]
                   for f in front)


def _unpriced(tmp_path):
    """two-regions with its instance-hour prices taken out."""
    import re
    from pathlib import Path

    text = (Path(__file__).resolve().parents[1] / "presets" / "two-regions.toml").read_text()
    out = tmp_path / "unpriced.toml"
    out.write_text(re.sub(r"(?m)^price = .*\n", "", text), encoding="utf-8")
    return out


def test_a_price_missing_names_the_key(tmp_path, capsys):
    topo = presets.load(_unpriced(tmp_path), topology=True).declared_topology
    with pytest.raises(PlanInputError, match=r"site\[0\]\.price"):
        Prices.of(topo)
    assert main(["plan", "--preset", str(_unpriced(tmp_path)), "--site", "hub=8"]) == 2
    assert "site[0].price" in capsys.readouterr().err


def test_every_shipped_topology_is_priced_for_a_plan():
    for name in ("two-regions", "global", "toy-two-regions"):
        topo = presets.load(name, topology=True).declared_topology
        assert Prices.of(topo).cost_per_hour(topo) > 0


@pytest.mark.parametrize("argv, words", [
    (["--site", "nowhere=3", "--price", "hub=2"], "--site: no site named 'nowhere'"),
    (["--price", "hub=1,2"], "--price: hub: must be a number, got '1,2'"),
    (["--price-per-tb", "hub->west=nan"], "--price-per-tb: hub->west: must be finite"),
    (["--link", "hub->west=-5"], "--link: hub->west: must be >= 1 Mbps"),
    (["--routing", "magic"], "--routing: 'magic'"),
    (["--n-prfaas", "2:4"], "--n-prfaas: a single-pair flag"),
    (["--trace", "x.csv"], "--trace: a single-pair flag"),
    (["--slo-tpot", "20ms"], "--slo-tpot: 0.02 s is below the decode step of region east"),
    (["--per-config", "2"], "--per-config: a single-pair flag"),
    (["--t", "8K"], "--t: a single-pair flag"),
    (["--link", "hub->west=" + ",".join(str(g) for g in range(1, 5001)), "--price", "hub=2",
      "--price", "east=1", "--price", "west=1"], "--max-runs"),
    (["--site", "hub=0:100000000"], "--max-instances"),
    (["--max-requests", "1e9"], "--max-requests: a single-pair flag"),
])
def test_bad_topology_plan_flags_are_one_line(argv, words, capsys):
    assert main(["plan", "--preset", "two-regions", *argv]) == 2
    err = capsys.readouterr().err
    assert words in err and len(err.strip().splitlines()) == 1


def test_the_pair_planned_as_its_1x1_topology_gives_the_same_candidates_and_scores():
    """The pair's space (instances, bandwidths; the best split and t per hardware) and the same
    ranges over its 1x1 topology: the same candidates (sites, links), the threshold policy the
    topology candidate runs is the pair candidate's deployment, at the pair's Lambda_max, and
    the topology's routing bound holds it."""
    from dataclasses import replace

    from emulator.paradigm import Paradigm
    from emulator.planner.goodput import candidate_scenario
    from emulator.planner.prices import Prices
    from emulator.planner.prune import prune, score_topology
    from emulator.planner.space import Space
    from emulator.topology.bound import routing_bound
    from emulator.topology.policy import search_policy

    sc = presets.load("toy")
    bws = (sc.system.bandwidth, 2 * sc.system.bandwidth)
    pair = [s for s in prune(sc.system, Space.around(sc, n_prfaas=(1, 2, 3), bandwidths=bws,
                                                     paradigms=(Paradigm.PRFAAS_PD,)).candidates(),
                             per_config=1) if s.pruned is None]
    one = replace(sc, declared_topology=sc.topology)
    space = TopologySpace({"prfaas": (1, 2, 3)}, {"prfaas->pd": bws}, ("threshold",))
    free = Prices({"prfaas": 0.0}, {"pd": 0.0}, {"prfaas->pd": 0.0})
    scored = {(s.cand.sites, s.cand.links): s
              for s in score_topology(one.declared_topology, space.candidates(one.topology), free)}
    assert len(pair) == 6 and {(s.cand.sites, s.cand.links) for s in pair} == set(scored)
    for s in pair:
        t = scored[(s.cand.sites, s.cand.links)]
        region = candidate_scenario(one, t).declared_topology.regions[0]
        assert (region.threshold, region.n_p, region.n_d) == (s.t, s.cand.n_p, s.cand.n_d)
        topo = t.cand.topology(one.declared_topology)
        assert search_policy(topo, routing_bound(topo))[0].lambda_max == s.lambda_max
        assert t.lambda_max >= s.lambda_max * (1 - 1e-9)


def test_topology_flags_on_a_pair_are_one_line(capsys):
    for flag, value in (("--site", "prfaas=3"), ("--link", "prfaas->pd=8"), ("--routing", "lp"),
                        ("--price", "pd=1"), ("--price-per-tb", "prfaas->pd=1")):
        assert main(["plan", "--preset", "toy", flag, value]) == 2
        err = capsys.readouterr().err
        assert f"{flag}: a topology flag; toy is a single pair" in err
        assert len(err.strip().splitlines()) == 1


def test_a_topology_plan_without_out_writes_nothing_and_its_csv_has_the_bound(
        tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    argv = ["plan", "--preset", "toy-two-regions", "--site", "hub=2", "--price", "hub=3",
            "--price", "east=1", "--price", "west=1", "--seeds", "1", "--steps", "1",
            "--duration", "60", "--workers", "1"]
    assert main(argv) == 0
    assert list(tmp_path.iterdir()) == []
    assert "Results not kept" in capsys.readouterr().out
    assert main([*argv, "--csv", "ranked.csv"]) == 0
    rows = (tmp_path / "ranked.csv").read_text().splitlines()
    assert rows[0].split(",")[:5] == ["label", "goodput", "goodput_lo", "goodput_hi", "bound"]
    assert len(rows) == 2 and "hub:2" in rows[1]
