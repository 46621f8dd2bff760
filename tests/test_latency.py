"""The latency layer of the model (emulator/latency.py): exact queueing limits, exact service
moments, monotonicity, agreement with the emulator, the SLO-bound rate and `solve --slo-ttft`."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import integrate

from emulator.distributions import Discrete, Empirical, TruncatedLogNormal
from emulator.latency import (
    _partial_moment,
    erlang_c,
    layout_at,
    mean_ttft,
    mgc_wait,
    predict,
    service_moments,
    slo_rate,
    slo_search,
    tail,
)
from emulator.optimizer import search
from emulator.profiles import Curve, Profile
from emulator.scenario import presets
from prfaas_tui.cli import main

rho_s = st.floats(0.01, 0.97)
es_s = st.floats(0.01, 20.0)


# -- exact limits of the queueing approximation --------------------------------------------
@settings(max_examples=60, deadline=None)
@given(rho_s, es_s)
def test_mm1_mean_wait_is_exact(rho, es):
    lam = rho / es
    _, wq, _ = mgc_wait(lam, 1, es, 2 * es * es)  # exponential service: E[S^2] = 2 E[S]^2
    assert float(wq) == pytest.approx(rho * es / (1 - rho), rel=1e-9)


@settings(max_examples=60, deadline=None)
@given(rho_s, es_s)
def test_md1_mean_wait_is_pollaczek_khinchine(rho, es):
    lam = rho / es
    pw, wq, _ = mgc_wait(lam, 1, es, es * es)
    assert float(pw) == pytest.approx(rho, rel=1e-9)  # M/G/1: P(wait) = rho
    assert float(wq) == pytest.approx(rho * es / (2 * (1 - rho)), rel=1e-9)


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 40), rho_s)
def test_erlang_c_matches_the_textbook_sum(c, rho):
    a = rho * c
    terms = sum(a**k / math.factorial(k) for k in range(c))
    top = a**c / math.factorial(c) / (1 - rho)
    assert float(erlang_c(c, a)) == pytest.approx(top / (terms + top), rel=1e-7)


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 12), rho_s, rho_s, es_s)
def test_wait_grows_with_the_rate(c, r1, r2, es):
    lo, hi = sorted((r1, r2))
    w = [float(mgc_wait(r * c / es, c, es, 1.7 * es * es)[1]) for r in (lo, hi)]
    assert w[0] <= w[1] + 1e-12


def test_unstable_queue_waits_forever():
    pw, wq, cond = mgc_wait(2.0, 1, 1.0, 1.0)
    assert pw == 1.0 and math.isinf(float(cond))


# -- exact service moments -----------------------------------------------------------------
def test_square_moments_of_a_quadratic_profile_are_exact_on_a_sample():
    rng = np.random.default_rng(7)
    x = rng.lognormal(9.5, 1.0, 4000).clip(128, 131072)
    dist = Empirical.of(x)
    prof = Profile("q", Curve.poly(0.4, 4e-5, 9e-11), Curve.poly(1e8))
    t = np.array([5000.0, 20000.0, 60000.0])
    for above in (True, False):
        m1, m2 = service_moments(dist, prof, t, above)
        for i, ti in enumerate(t):
            side = x[x > ti] if above else x[x <= ti]
            y = prof.t_prefill(side)
            assert m1[i] == pytest.approx(y.mean(), rel=1e-9)
            assert m2[i] == pytest.approx((y**2).mean(), rel=1e-9)


@pytest.mark.parametrize("k", [3, 4])
def test_lognormal_higher_partial_moments_match_quadrature(k):
    d = TruncatedLogNormal(9.9, 1.0, 128, 131072)
    mass = integrate.quad(lambda v: math.exp(-((math.log(v) - 9.9) ** 2) / 2) / (v * math.sqrt(2 * math.pi)),
                          128, 131072, limit=400)[0]
    pdf = lambda v: math.exp(-((math.log(v) - 9.9) ** 2) / 2) / (v * math.sqrt(2 * math.pi)) / mass  # noqa: E731
    want = integrate.quad(lambda v: v**k * pdf(v), 10000, 50000, limit=400)[0]
    got = float(_partial_moment(d, np.array(10000.0), np.array(50000.0), k))
    assert got == pytest.approx(want, rel=1e-6)


def test_discrete_toy_service_is_deterministic_per_side():
    dist = Discrete.of([1024, 32768], [0.5, 0.5])
    toy = presets.load("toy").system
    m1, m2 = service_moments(dist, toy.prfaas, np.array([8192.0]), True)
    assert m1[0] == pytest.approx(2.0) and m2[0] == pytest.approx(4.0)


# -- properties of the predictions ---------------------------------------------------------
@pytest.fixture(scope="module")
def paper_layout():
    sc = presets.load("paper-case-study")
    return layout_at(sc.system, sc.knobs)


@settings(max_examples=30, deadline=None)
@given(st.floats(0.01, 0.98), st.floats(0.01, 0.98), st.floats(1.0, 30.0))
def test_predicted_ttft_grows_with_the_rate(paper_layout, f1, f2, x):
    lay, lam = paper_layout
    lo, hi = sorted((f1, f2))
    m = [float(mean_ttft(lay, np.array([f * lam]))[0][0]) for f in (lo, hi)]
    t = [float(tail(lay, np.array([f * lam]), np.array([x]))[0]) for f in (lo, hi)]
    assert m[0] <= m[1] + 1e-9
    assert t[0] <= t[1] + 1e-9


def test_quantiles_are_ordered_and_above_the_mean_path_service(paper_layout):
    sc = presets.load("paper-case-study")
    pr = predict(sc.system, sc.knobs, 2.0)
    assert 0 < pr.p50 < pr.p90 < pr.paths["prfaas"]["p90"]
    assert pr.paths["pd-p"]["p90"] < pr.paths["prfaas"]["p90"]
    assert pr.mean == pytest.approx(sum(v["share"] * v["mean"] for v in pr.paths.values()))


# -- against the emulator (short runs; benchmarks/bench_latency.py has the full table) --------
CELLS = [("toy", "prfaas-pd", 0.5), ("paper-case-study", "prfaas-pd", 0.5),
         ("paper-case-study", "homogeneous", 0.7), ("dense-contrast", "prfaas-pd", 0.3)]


@pytest.mark.parametrize("name,paradigm,load", CELLS)
def test_predicted_ttft_matches_the_emulator(name, paradigm, load):
    from emulator.optimizer import homogeneous
    from emulator.sim.engine import Emulation

    sc = presets.load(name)
    knobs, profs = sc.knobs, None
    if paradigm == "homogeneous":
        knobs = homogeneous(sc.system, "exact").knobs
        prof = sc.system.homogeneous_profile or sc.system.local
        profs = (prof, prof)
    _, lam = layout_at(sc.system, knobs, profiles=profs)
    rate = load * lam
    pred = predict(sc.system, knobs, rate, profiles=profs)
    emu = Emulation(sc, seed=1, rate=rate, duration=12000 / rate, paradigm=paradigm).run().to_json()
    assert pred.mean == pytest.approx(emu["ttft"]["mean"], rel=0.10)
    assert pred.p90 == pytest.approx(emu["ttft"]["p90"], rel=0.20)


# -- the SLO-bound rate and its optimum ----------------------------------------------------
def test_slo_rate_grows_with_the_target_and_stays_below_lambda_max():
    sc = presets.load("paper-case-study")
    _, lam = layout_at(sc.system, sc.knobs)
    rates = [slo_rate(sc.system, sc.knobs, x) for x in (4.0, 6.0, 10.0, 60.0)]
    assert rates == sorted(rates)
    assert rates[0] > 0 and rates[-1] < lam
    assert rates[-1] > 0.98 * lam  # a loose SLO: the SLO-bound rate is Lambda_max
    assert slo_rate(sc.system, sc.knobs, 3.0) == 0.0  # the P90 at zero load is ~3.6 s


def test_slo_optimum_beats_every_split_at_its_t_and_tends_to_the_lambda_optimum():
    sc = presets.load("paper-case-study")
    opt = slo_search(sc.system, 6.0)
    from emulator.model import Knobs

    for n_p in range(0, sc.system.local_pool):
        k = Knobs(opt.t, n_p, sc.system.local_pool - n_p, sc.system.n_prfaas, sc.system.bandwidth)
        assert slo_rate(sc.system, k, 6.0) <= opt.rate * (1 + 1e-4)
    loose = slo_search(sc.system, 600.0)
    assert loose.rate == pytest.approx(search(sc.system, "exact").best.lambda_max, rel=5e-3)


# -- solve --slo-ttft ----------------------------------------------------------------------
def test_solve_json_has_the_slo_object(capsys):
    assert main(["solve", "--slo-ttft", "6s", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    slo = d["slo"]
    assert slo["target_s"] == 6.0 and slo["quantile"] == 0.9
    assert 0 < slo["rate"] <= slo["optimum"]["rate"] * (1 + 1e-3)
    assert set(slo["ttft"]) >= {"mean", "p90"} and slo["ttft"]["mean"] < slo["ttft"]["p90"]
    assert set(slo["optimum"]) == {"t", "n_p", "n_d", "rate"}
    assert d["objective"] == "lambda"


def test_solve_objective_slo_reports_the_slo_optimum(capsys):
    assert main(["solve", "--slo-ttft", "4s", "--objective", "slo", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    o = d["slo"]["optimum"]
    assert (d["optimum"]["t"], d["optimum"]["n_p"], d["optimum"]["n_d"]) == (o["t"], o["n_p"], o["n_d"])


def test_solve_without_slo_flags_is_unchanged(capsys):
    assert main(["solve", "--json"]) == 0
    assert "slo" not in json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("argv,flag", [
    (["--slo-ttft", "0"], "--slo-ttft"),
    (["--slo-ttft=-5ms"], "--slo-ttft"),
    (["--slo-ttft", "soon"], "--slo-ttft"),
    (["--slo-ttft", "6s", "--slo-quantile", "1.5"], "--slo-quantile"),
    (["--slo-ttft", "6s", "--slo-quantile", "x"], "--slo-quantile"),
    (["--slo-ttft", "6s", "--objective", "latency"], "--objective"),
    (["--objective", "slo"], "--objective"),
])
def test_bad_slo_flags_are_one_line_and_exit_2(capsys, argv, flag):
    assert main(["solve", *argv]) == 2
    cap = capsys.readouterr()
    assert cap.out == "" and cap.err.count("\n") == 1 and flag in cap.err
    assert "Traceback" not in cap.err


def test_a_negative_value_is_either_checked_or_explained(capsys):
    """`--slo-ttft=-5ms` reaches the value check; `--slo-ttft -5ms` (argparse reads -5ms as a
    flag) says how to write it, without a private argparse matcher."""
    assert main(["solve", "--slo-ttft=-5ms"]) == 2
    assert "--slo-ttft: must be > 0 (got '-5ms')" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exc:  # argparse's own exit, as from the shell
        main(["solve", "--slo-ttft", "-5ms"])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "written --slo-ttft=VALUE" in err


# -- the fast path must not move the answers ------------------------------------------------
# `solve --preset paper-case-study --slo-ttft X --json` before the speed-up (commit 604c930):
# (SLO-bound rate at the preset point, SLO-optimal t, N_p, N_d, its rate), and the predicted
# TTFT at the offered rate (mean, P50, P90), which the README's accuracy table rests on.
BEFORE_SPEEDUP = {
    "4s": (1.6553103886054776, 23969.51940810717, 5, 3, 1.865542526615555),
    "6s": (2.5014020399868073, 22303.217243775904, 4, 4, 2.6870389110015505),
    "10s": (2.841361336700972, 22679.858434632817, 4, 4, 2.972019552588443),
}
TTFT_BEFORE_SPEEDUP = (4.9449492005799165, 3.832937600964968, 9.66449529009215)


@pytest.mark.parametrize("slo", sorted(BEFORE_SPEEDUP))
def test_solve_slo_answers_match_the_recorded_ones(capsys, slo):
    assert main(["solve", "--preset", "paper-case-study", "--slo-ttft", slo, "--json"]) == 0
    d = json.loads(capsys.readouterr().out)["slo"]
    rate, t, n_p, n_d, opt_rate = BEFORE_SPEEDUP[slo]
    o = d["optimum"]
    assert (o["t"], o["n_p"], o["n_d"]) == (pytest.approx(t, rel=1e-9), n_p, n_d)
    assert d["rate"] == pytest.approx(rate, rel=5e-3)
    assert o["rate"] == pytest.approx(opt_rate, rel=5e-3)
    tt = d["ttft"]
    assert (tt["mean"], tt["p50"], tt["p90"]) == pytest.approx(TTFT_BEFORE_SPEEDUP, rel=1e-6)


# -- the fast search's building blocks are exact ---------------------------------------------
def _paper_grid():
    from emulator import latency as lat
    from emulator.model import ceilings, split_stats

    s = presets.load("paper-case-study").system
    grid = s.lengths.threshold_grid()
    n_p = np.arange(s.local_pool + 1)
    st = split_stats(s.lengths, s.prfaas, s.local, grid, "exact")
    flat = ceilings(st, s.n_prfaas, n_p, s.local_pool - n_p, s.bandwidth, s.decode)[-1].ravel()
    fast, moments = lat._grid_stats(s, grid)
    layouts = lat._GridLayouts(s, grid, fast, moments, s.n_prfaas, s.local_pool, s.bandwidth,
                               0.0, 0.0)
    return s, grid, st, fast, flat, layouts


def test_grid_stats_match_split_stats_and_service_moments():
    from emulator import latency as lat

    s, grid, st, fast, _, _ = _paper_grid()
    for f in ("p", "l_long", "l_short", "t_long", "s_long", "t_short"):
        np.testing.assert_allclose(getattr(fast, f), getattr(st, f), rtol=1e-11, equal_nan=True)
    moments = lat._grid_stats(s, grid)[1]
    for i, (prof, above) in enumerate(((s.prfaas, True), (s.local, False))):
        es, es2 = service_moments(s.lengths, prof, grid, above)
        side = moments[i]
        np.testing.assert_allclose(side[0], es, rtol=1e-11, equal_nan=True)
        np.testing.assert_allclose(side[1], es2, rtol=1e-11, equal_nan=True)


@pytest.mark.parametrize("x", [4.0, 6.0, 10.0])
def test_coarse_nodes_give_a_lower_bound_of_the_tail(x):
    _, _, _, _, flat, layouts = _paper_grid()
    idx = np.random.default_rng(0).choice(flat.size, 400, replace=False)
    rate = np.minimum(0.8 * flat[idx], 2.5)
    lower = tail(layouts(idx, coarse=True), rate, x)
    full = tail(layouts(idx), rate, x)
    assert np.all(lower <= full + 1e-12)
    assert np.mean(lower > 0.9 * full) > 0.5  # and a useful one


@pytest.mark.parametrize("x", [4.0, 6.0, 10.0])
def test_best_rate_is_one_bisection_over_the_point_set(x):
    from emulator import latency as lat

    _, _, _, _, flat, layouts = _paper_grid()
    top = np.lexsort((np.arange(flat.size), -flat))[:64]
    lay, lam_max = layouts(top), flat[top]
    rate, winners = lat.best_rate(lay, lam_max, x, 0.9, steps=12)
    # the definition: one point-set bisection step per evaluation
    alive = np.flatnonzero(tail(lay, np.full(64, 1e-9), x) <= 0.1)
    lo, hi = 0.0, float(lam_max[alive].max())
    tol = hi * 2.0 ** -12
    while hi - lo > tol:
        mid = 0.5 * (lo + hi)
        cand = alive[lam_max[alive] > mid]
        good = cand[tail(lat._take(lay, cand), np.full(cand.size, mid), x) <= 0.1]
        lo, hi, alive = (mid, hi, good) if good.size else (lo, mid, alive)
    assert rate == lo and set(winners) == set(alive)


@pytest.mark.parametrize("x", [4.0, 6.0, 10.0])
def test_a_thresholds_best_case_bounds_each_of_its_points_from_below(x):
    """The search drops whole thresholds whose best case (most PD-P and most decode instances
    among their points) misses the SLO: it must never drop a point the coarse check keeps."""
    _, grid, _, _, flat, layouts = _paper_grid()
    idx = np.random.default_rng(1).choice(np.flatnonzero(flat > 0), 1500, replace=False)
    idx.sort()
    best, inv = layouts.best_case(idx)
    assert inv.shape == idx.shape
    for rate in (0.5, 1.8, 2.6):
        at = np.array([rate])
        lower = tail(best, at, x)[inv]
        each = tail(layouts(idx, coarse=True), at, x)
        assert np.all(lower <= each + 1e-12)
        assert np.mean(lower > 0.5 * each) > 0.5  # and a useful one


@pytest.mark.parametrize("argv", [["--slo-ttft", "2s"], ["--slo-ttft", "4s", "--slo-quantile", "0.99"]])
def test_an_unreachable_slo_reads_rate_zero_not_a_traceback(capsys, argv):
    """No point of the grid meets the SLO even at a vanishing rate (an empty candidate set
    once crashed the search with numpy's max of nothing): rate 0, no optimum named."""
    assert main(["solve", "--preset", "paper-case-study", *argv, "--json"]) == 0
    d = json.loads(capsys.readouterr().out)["slo"]
    assert d["rate"] == 0.0 and d["optimum"] is None


def test_exact_stats_batches_thresholds_without_moving_a_bit():
    """One split_stats call for the thresholds announced and asked for, with the bits of a
    call per threshold (split_stats is elementwise in t)."""
    from emulator import latency as lat
    from emulator.model import SplitStats, split_stats

    s = presets.load("paper-case-study").system
    ts = s.lengths.threshold_grid()[[3, 700, 1500]]
    cache = lat.ExactStats(s)
    cache.want(19400.0)
    got = cache.get(ts)
    assert sorted(cache._rows) == sorted([19400.0, *ts])  # the wanted one came along
    for j, t in enumerate(ts):
        one = split_stats(s.lengths, s.prfaas, s.local, np.array([t]), "exact")
        for f in SplitStats.__dataclass_fields__:
            np.testing.assert_array_equal(getattr(got, f)[j], getattr(one, f)[0])


@pytest.mark.parametrize("load", [0.3, 0.8, 0.97])
def test_quantiles_are_one_bisection_on_x_for_all_rows(load):
    """`quantiles` against its definition: one halving per tails evaluation, every row at
    once, to the bit."""
    from emulator import latency as lat

    sc = presets.load("paper-case-study")
    lay, lam = lat.layout_at(sc.system, sc.knobs)
    rate = load * lam
    p = float(lay.paths[0].share[0])
    rows = [((p, 1 - p), 0.5), ((p, 1 - p), 0.9), ((1.0, 0.0), 0.9), ((0.0, 1.0), 0.99)]
    got = lat.quantiles(lay, rate, rows)
    # the definition: one bisection step on x per evaluation, all rows together
    w = np.array([r[0] for r in rows])
    q = np.array([r[1] for r in rows])
    rs = lat.rate_state(lay, np.array([rate]))
    hi, rtol = 1e6, 1e-4
    mean = float(np.nan_to_num(lat.mean_ttft(lay, np.array([rate]), rs)[0][0], nan=hi, posinf=hi))

    def over(x):
        t0, t1 = lat.tails_at(lay, rs, x[:, None])
        return w[:, 0] * t0[:, 0] + w[:, 1] * t1[:, 0] > 1 - q

    lo, up = np.zeros(len(rows)), np.full(len(rows), min(hi, 50.0 * mean + 1.0))
    up = np.where(over(up), hi, up)
    for _ in range(80):
        mid = 0.5 * (lo + up)
        o = over(mid)
        lo, up = np.where(o, mid, lo), np.where(o, up, mid)
        if np.all(up - lo <= rtol * np.maximum(up, 1e-3)):
            break
    np.testing.assert_array_equal(got, np.where(up >= hi * (1 - 1e-9), np.inf, up))
