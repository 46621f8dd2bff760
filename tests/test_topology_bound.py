"""The routing bound (a MILP over per-bin routing and integer splits), its shadow prices, and
the threshold policy on a topology, against answers worked by hand and the single-pair model."""

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from emulator.distributions import Discrete
from emulator.model import DecodeSpec
from emulator.optimizer import search
from emulator.profiles import Curve, Profile
from emulator.scenario.presets import load
from emulator.topology.bound import routing_bound
from emulator.topology.policy import evaluate_policy, preset_settings, search_policy
from emulator.topology.spec import Link, Region, Site, Topology
from prfaas_tui.cli import main


def test_toy_bound_by_hand():
    """The toy: 1K (0.5 s, 100 MB) and 32K (2.0 s, 800 MB) requests, half each; 2 PrfaaS and
    3 local instances of the same profile; 1000 MB/s; a decode instance finishes
    bs_max / (t_decode l_out) = 10 / (0.025 x 100) = 4 req/s.

    Any routing does 0.5 x 2.0 + 0.5 x 0.5 = 1.25 instance-seconds of prefill per request, on
    2 + N_p instances: Lambda <= (2 + N_p) / 1.25, and decode: Lambda <= 4 (3 - N_p).
    N_p = 2: min(3.2, 4) = 3.2; N_p = 1: min(2.4, 8) = 2.4; N_p = 3: 0. At 3.2 the site spends
    its 2 instance-seconds per second on 1 req/s of 32K requests (800 MB/s, under the link's
    1000) and the rest stays local: 0.6 x 2.0 + 1.6 x 0.5 = 2.0 = N_p. One more instance anywhere
    is worth 1 / 1.25 = 0.8 req/s; the link and decode have slack (price 0). The threshold rule
    sends all or none of a length out: 2.0 at best (its optimum, unchanged)."""
    sc = load("toy")
    b = routing_bound(sc.topology)
    assert b.lambda_max == pytest.approx(3.2, rel=1e-9)
    assert (b.n_p["pd"], b.n_d["pd"]) == (2, 1)
    assert set(b.binding) == {"site:prfaas", "pd-p:pd"}
    prices = b.shadow_prices
    assert prices["site:prfaas"] == pytest.approx(0.8) and prices["pd-p:pd"] == pytest.approx(0.8)
    assert prices["pool:pd"] == pytest.approx(0.8)
    assert prices["link:prfaas->pd"] == pytest.approx(0.0, abs=1e-9)
    assert prices["pd-d:pd"] == pytest.approx(0.0, abs=1e-9)
    assert b.used["link:prfaas->pd"] == pytest.approx(6.4)  # 800 MB/s in Gbps
    route = b.routing["pd"]
    assert route.sites["prfaas"][-1] == pytest.approx(1 / 1.6)  # of the 1.6 req/s of 32K
    assert route.local[0] == pytest.approx(1.0)
    for mode in ("paper", "exact"):
        assert search(sc.system, mode).best.lambda_max == pytest.approx(2.0)
    policy, _ = search_policy(sc.topology, b)
    assert policy.lambda_max == pytest.approx(2.0)


def test_two_toy_regions_sharing_the_site_by_hand():
    """Two toy regions, each half the rate, share the toy's site (egress 2000 MB/s, links
    1000 MB/s). Prefill: 2 + N_p,east + N_p,west instances for 1.25 s per request:
    Lambda <= (2 + 2 + 2) / 1.25 = 4.8 at N_p = 2 in both; each region's decode takes
    4 x 1 = 4 >= 2.4 req/s. The site's 2 instances carry at most 1 req/s of 32K requests:
    800 MB/s of egress, split over two links of 1000 MB/s; neither binds. 4.8 req/s."""
    topo = load("toy-two-regions", topology=True).topology
    b = routing_bound(topo)
    assert b.lambda_max == pytest.approx(4.8, rel=1e-9)
    assert b.n_p == {"east": 2, "west": 2} and b.n_d == {"east": 1, "west": 1}
    assert {"site:hub", "pd-p:east", "pd-p:west"} <= set(b.binding)
    # at most 800 MB/s of egress (the site's compute on 32K requests); which lengths go is a
    # free choice among the optima
    assert b.used["egress:hub"] <= 6.4 * (1 + 1e-9) and "egress:hub" not in b.binding
    assert b.shadow_prices["site:hub"] == pytest.approx(0.8)
    policy, _ = search_policy(topo, b)  # all or none of a region's long requests leave
    assert policy.lambda_max == pytest.approx(3.2)


def test_a_link_that_binds_sends_short_requests_remote():
    """The toy with a 50 MB/s link: 32K requests (800 MB, 2 s) ship 400 MB per second of saved
    compute, 1K ones (100 MB, 0.5 s) 200 MB: the bound fills the link with short requests."""
    sc = load("toy").with_knobs(bandwidth=50e6)
    b = routing_bound(sc.topology)
    route = b.routing["pd"]
    assert "link:prfaas->pd" in b.binding
    assert route.sites["prfaas"][0] > 0 and route.sites["prfaas"][-1] == pytest.approx(0.0)


@pytest.mark.parametrize("name", ["two-regions", "global", "toy-two-regions", "paper-case-study"])
def test_shadow_prices_equal_finite_differences(name):
    """Each binding row's dual against re-solving the LP at the bound's split with +1% on that
    row. Where another row starts to bind inside that 1% (the value is piecewise linear), a
    +0.001% step still matches and +1% is worth less, never more."""
    b = routing_bound(load(name, topology=True).topology)
    assert b.binding
    for row in b.binding:
        if b.capacity[row] <= 0:
            continue
        price, step = b.shadow_prices[row], b.finite_difference(row, 0.01)
        if abs(step - price) <= 0.02 * max(abs(price), 1e-9):
            continue
        small = b.finite_difference(row, 1e-5)
        assert small == pytest.approx(price, rel=0.02, abs=1e-9), row
        assert step < price, row


@pytest.mark.parametrize("name", ["two-regions", "global"])
def test_shipped_topologies_prices_match_the_one_percent_step(name):
    """The shipped topologies have no second kink within 1% of a binding row: each price is
    what +1% of that row, re-solved, is worth (within 2%), and what `plus_1pct` reports."""
    b = routing_bound(load(name, topology=True).topology)
    assert any(b.shadow_prices[row] > 0 for row in b.binding)
    for row in b.binding:
        step = b.finite_difference(row)
        assert step == pytest.approx(b.shadow_prices[row], rel=0.02, abs=1e-9), row
        assert b.plus_1pct()[row] == pytest.approx(step)


def test_two_regions_binds_the_hub_and_prefill():
    b = routing_bound(load("two-regions", topology=True).topology)
    assert set(b.binding) == {"site:hub", "pd-p:east", "pd-p:west"}
    assert b.shadow_prices["link:hub->west"] == 0.0  # 40 Gbps at 30%: worth nothing more


def test_paper_case_study_exact_bound_holds_the_threshold_optimum():
    sc = load("paper-case-study")
    best = search(sc.system, "exact").best
    assert best.lambda_max == pytest.approx(3.16, abs=0.005)
    out = json.loads(_solve_json(["--preset", "paper-case-study", "--mode", "exact"]))["topology"]
    assert out["bound"]["lambda_max"] >= best.lambda_max
    assert out["threshold_policy"]["lambda_max"] == pytest.approx(best.lambda_max, rel=1e-12)
    assert 0 <= out["gap"] < 1e-3 and "threshold grid" in out["gap_reasons"][0]


def _solve_json(argv, capsys=None) -> str:
    import contextlib
    import io

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        assert main(["solve", *argv, "--json"]) == 0
    return buf.getvalue()


@pytest.mark.parametrize("name", ["toy", "paper-case-study", "dense-contrast"])
def test_single_pair_policy_is_the_model_search(name):
    sc = load(name)
    best = search(sc.system, "exact").best
    policy, _ = search_policy(sc.topology, routing_bound(sc.topology))
    s = policy.settings["pd"]
    assert (s.t, s.n_p, s.n_d) == (best.knobs.t, best.knobs.n_p, best.knobs.n_d)
    assert policy.lambda_max == best.lambda_max
    assert evaluate_policy(sc.topology, preset_settings(sc.topology)).lambda_max == \
        pytest.approx(search(sc.system, "exact", thresholds=np.array([sc.t])).lambda_vs_np[sc.n_p])


def test_solve_json_on_a_topology():
    out = json.loads(_solve_json(["--preset", "global"]))
    assert set(out) == {"scenario", "mode", "topology"}
    topo = out["topology"]
    b = topo["bound"]
    assert topo["gpus"] >= 10_000 and len(topo["regions"]) >= 4 and len(topo["sites"]) >= 2
    assert set(b["n_p"]) == set(topo["regions"]) == set(b["n_d"])
    names = set(b["shadow_prices"])
    assert {"site:us-hub", "egress:eu-hub", "link:us-hub->sa-east", "pd-p:ap-south",
            "pd-d:ap-south", "pool:ap-south"} <= names
    assert set(b["binding"]) <= names
    for region in b["routing"].values():
        for row in region["bins"]:
            assert row["local"] + sum(row["sites"].values()) == pytest.approx(1.0, abs=1e-5)
        assert sum(r["share"] for r in region["bins"]) == pytest.approx(1.0)
    pol = topo["threshold_policy"]
    assert pol["lambda_max"] <= b["lambda_max"] * (1 + 1e-9)
    for name, s in pol["regions"].items():
        assert sum(s["long_shares"].values()) == pytest.approx(1.0)
        assert s["n_p"] + s["n_d"] == topo["regions"][name]["pool"]
        assert pol["ttft"]["regions"][name]["p90"] is not None
    assert b["lp"]["variables"] > 0 and b["lp"]["constraints"] > 0


def test_text_solve_on_a_topology(capsys):
    assert main(["solve", "--preset", "two-regions", "--slo-ttft", "12s"]) == 0
    text = capsys.readouterr().out
    for needle in ("regions: the routing bound", "sites", "links", "hub->west",
                   "what binds the bound", "SLO rate", "LP "):
        assert needle in text, needle


def test_knob_flags_on_a_topology_are_refused(capsys, tmp_path):
    trace = tmp_path / "t.jsonl"
    trace.write_text('{"timestamp": 0, "input_length": 100, "output_length": 10}\n')
    for argv, flag in ((["--t", "8K"], "--t"), (["--trace", str(trace)], "--trace"),
                       (["--slo-ttft", "6s", "--objective", "slo"], "--objective")):
        assert main(["solve", "--preset", "two-regions", *argv]) == 2, argv
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and flag in err, err


def test_solve_on_a_topology_is_deterministic():
    assert _solve_json(["--preset", "global", "--slo-ttft", "8s"]) == \
        _solve_json(["--preset", "global", "--slo-ttft", "8s"])


def _toy_profile(t1: float, t2: float, s1: float, s2: float) -> Profile:
    return Profile("p", Curve.table([1024, 32768], [t1, t2]), Curve.table([1024, 32768], [s1, s2]))


@settings(max_examples=25, deadline=None)
@given(p_long=st.floats(0.05, 0.95), n_site=st.integers(0, 4), pool=st.integers(2, 8),
       bw=st.floats(1e7, 5e9), t2=st.floats(1.0, 6.0), bs=st.integers(2, 40))
def test_bound_holds_every_threshold_policy(p_long, n_site, pool, bw, t2, bs):
    """On any 1x1 topology the bound is at least the model's exact threshold optimum, and the
    policy search finds that optimum."""
    prof = _toy_profile(0.5, t2, 1e8, 8e8)
    lengths = Discrete.of([1024, 32768], [1 - p_long, p_long])
    region = Region("pd", prof, pool, 1, pool - 1, 1024, 1.0, lengths, DecodeSpec(0.025, bs, 100))
    topo = Topology((Site("s", prof, n_site),), (region,), (Link("s", "pd", bw),))
    b = routing_bound(topo)
    best = search(topo.pair_system("pd"), "exact").best
    assert b.lambda_max >= best.lambda_max * (1 - 1e-9)
    policy, _ = search_policy(topo, b)
    assert policy.lambda_max == pytest.approx(best.lambda_max, rel=1e-9, abs=1e-12)


@settings(max_examples=60, deadline=None)
@given(cap=st.floats(0.01, 100.0), pdp=st.one_of(st.just(0.0), st.floats(1e-6, 5.0)), per_d=st.floats(0.01, 10.0),
       pool=st.integers(1, 300))
def test_best_split_in_closed_form_matches_every_split(cap, pdp, per_d, pool):
    from emulator.topology.policy import _best_splits

    n, lam = _best_splits(np.array([cap]), np.array([pdp]), per_d, pool)
    splits = np.arange(pool + 1, dtype=float)
    with np.errstate(divide="ignore", over="ignore"):
        every = np.minimum(np.minimum(cap, splits / pdp if pdp > 0 else np.inf),
                           (pool - splits) * per_d)
    assert lam[0] == pytest.approx(every.max(), rel=1e-12)
    assert every[n[0]] == pytest.approx(every.max(), rel=1e-12)


def test_link_rtt_is_in_the_remote_path():
    """two-regions: east and west differ only in their links (10 vs 25 ms; neither binds), so
    their remote paths' TTFT differs by the 15 ms and the local paths not at all."""
    out = json.loads(_solve_json(["--preset", "two-regions"]))["topology"]
    east, west = (out["threshold_policy"]["ttft"]["regions"][r]["paths"] for r in ("east", "west"))
    assert west["hub"]["mean"] - east["hub"]["mean"] == pytest.approx(0.015, abs=1e-9)
    assert west["local"]["mean"] == pytest.approx(east["local"]["mean"], rel=1e-12)
