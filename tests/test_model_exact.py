"""Distributions and profiles: conditional expectations are exact (checked against numerical
quadrature and brute-force sums), and the model's invariants hold for random inputs."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import integrate, stats

from emulator.distributions import Discrete, Empirical, TruncatedLogNormal
from emulator.model import Knobs, evaluate
from emulator.optimizer import search
from emulator.profiles import Curve


def test_lognormal_partial_moments_match_quadrature():
    d = TruncatedLogNormal(9.9, 1.0, 128, 131072)
    base = stats.lognorm(s=1.0, scale=np.exp(9.9))
    mass = base.cdf(131072) - base.cdf(128)
    for t in (1000.0, 19400.0, 60000.0):
        num, _ = integrate.quad(lambda x: x * base.pdf(x), t, 131072, limit=200)
        p, _ = integrate.quad(base.pdf, t, 131072, limit=200)
        assert d.p_above(t) == pytest.approx(p / mass, rel=1e-6)
        assert d.mean_above(t) == pytest.approx(num / p, rel=1e-6)


def test_curve_expectation_matches_quadrature():
    d = TruncatedLogNormal(9.9, 1.0, 128, 131072)
    curve = Curve.table([1024, 8192, 32768, 131072], [0.44, 0.72, 1.84, 7.40])
    base = stats.lognorm(s=1.0, scale=np.exp(9.9))
    t = 19400.0
    pts = [t, 32768]
    num, _ = integrate.quad(lambda x: curve(x) * base.pdf(x), t, 131072, points=pts, limit=400)
    den, _ = integrate.quad(base.pdf, t, 131072)
    assert d.expect(curve, t, above=True) == pytest.approx(num / den, rel=1e-6)


def test_empirical_is_exact_on_samples():
    rng = np.random.default_rng(3)
    x = rng.integers(100, 100_000, size=2000).astype(float)
    d = Empirical.of(x)
    curve = Curve.poly(0.4, 4e-5, 1e-10)
    for t in (500.0, 20_000.0, 99_000.0):
        above = x[x > t]
        assert d.p_above(t) == pytest.approx(len(above) / len(x))
        assert d.expect(curve, t, above=True) == pytest.approx(curve(above).mean())
        assert d.mean_below(t) == pytest.approx(x[x <= t].mean())


def test_discrete_sides():
    d = Discrete.of([1024, 32768], [0.5, 0.5])
    assert d.p_above(0) == 1 and d.p_above(1024) == 0.5 and d.p_above(32768) == 0
    assert d.mean_above(1024) == 32768 and d.mean_below(1024) == 1024
    assert np.isnan(d.mean_above(32768))
    assert list(d.threshold_grid()) == [1023, 1024, 32768]


def test_table_beyond_rules():
    lin = Curve.table([1, 2], [10, 20])
    clamp = Curve.table([1, 2], [10, 20], beyond="clamp")
    assert lin(3) == pytest.approx(30) and clamp(3) == 20 and clamp(0) == 10


# --- properties of the model (hypothesis) -------------------------------------------------
knob_st = st.fixed_dictionaries({
    "t": st.floats(0, 131072), "n_p": st.integers(0, 8), "n_prfaas": st.integers(0, 8),
    "bw": st.floats(1e8, 1e11), "mode": st.sampled_from(["paper", "exact"]),
})


@settings(max_examples=60, deadline=None)
@given(knob_st)
def test_lambda_never_exceeds_a_ceiling(paper, k):
    sysm = paper.system
    op = evaluate(sysm, Knobs(k["t"], k["n_p"], 8 - k["n_p"], k["n_prfaas"], k["bw"]), k["mode"])
    assert op.lambda_max <= min(op.ceilings.values()) + 1e-12
    assert op.lambda_max >= 0


@settings(max_examples=60, deadline=None)
@given(knob_st, st.floats(1.0, 4.0), st.integers(1, 4))
def test_lambda_monotone_in_bandwidth_and_prfaas(paper, k, bw_factor, extra):
    sysm = paper.system
    base = Knobs(k["t"], k["n_p"], 8 - k["n_p"], k["n_prfaas"], k["bw"])
    lam = evaluate(sysm, base, k["mode"]).lambda_max
    more_bw = Knobs(base.t, base.n_p, base.n_d, base.n_prfaas, base.bandwidth * bw_factor)
    more_pf = Knobs(base.t, base.n_p, base.n_d, base.n_prfaas + extra, base.bandwidth)
    assert evaluate(sysm, more_bw, k["mode"]).lambda_max >= lam - 1e-12
    assert evaluate(sysm, more_pf, k["mode"]).lambda_max >= lam - 1e-12


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 8), st.floats(1e9, 2e10), st.sampled_from(["paper", "exact"]),
       st.lists(st.tuples(st.floats(0, 131072), st.integers(0, 8)), min_size=1, max_size=10))
def test_optimum_beats_every_offered_point(paper, n_prfaas, bw, mode, probes):
    sysm = paper.system
    found = search(sysm, mode, n_prfaas=n_prfaas, bandwidth=bw)
    grid = found.t_values
    for t, n_p in probes:
        t_grid = float(grid[np.argmin(np.abs(grid - t))])  # every point the search was offered
        op = evaluate(sysm, Knobs(t_grid, n_p, 8 - n_p, n_prfaas, bw), mode)
        assert found.best.lambda_max >= op.lambda_max - 1e-9
