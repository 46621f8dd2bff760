"""Log-bucketed histograms: percentiles within 1%, exact means, memory independent of count;
and the scalar profile evaluation used on the hot path equals the numpy one."""

import sys

import numpy as np
import pytest

from emulator.scenario.presets import load
from emulator.sim.books.histogram import LogHistogram
from emulator.sim.core.costs import ScalarCurve


@pytest.mark.parametrize("sigma", [0.3, 1.5])
def test_percentiles_within_one_percent(sigma):
    x = np.random.default_rng(7).lognormal(0.5, sigma, 100_000)
    h = LogHistogram()
    for v in x.tolist():
        h.add(v)
    for q in (0.5, 0.9, 0.99):
        exact = np.quantile(x, q, method="inverted_cdf")
        assert h.quantile(q) == pytest.approx(exact, rel=0.01)
    assert h.mean == pytest.approx(x.mean(), rel=1e-12)
    assert (h.min, h.max) == (x.min(), x.max())


def test_window_quantiles_from_count_differences():
    h = LogHistogram()
    for v in [1.0] * 1000:
        h.add(v)
    before = h.snapshot_counts()
    for v in [10.0] * 100:
        h.add(v)
    recent = np.subtract(h.snapshot_counts(), before)
    assert h.quantile(0.5, recent) == pytest.approx(10.0, rel=0.005)
    assert h.quantile(0.5) == pytest.approx(1.0, rel=0.005)
    assert np.isnan(h.quantile(0.5, recent * 0))


def test_memory_does_not_grow_with_count():
    h = LogHistogram()
    size = sys.getsizeof(h.counts)
    for v in np.random.default_rng(1).exponential(1.0, 50_000).tolist():
        h.add(v)
    assert sys.getsizeof(h.counts) == size


def test_out_of_range_values_land_in_the_end_buckets():
    h = LogHistogram(lo=1e-3, hi=10.0)
    for v in (0.0, 1e-9, 1e9):
        h.add(v)
    assert h.counts[0] == 2 and h.counts[-1] == 1


def test_scalar_curve_matches_numpy_curve():
    sc = load("paper-case-study")
    lengths = np.concatenate([[1.0, 1024.0, 8192.0, 131072.0, 200000.0],
                              np.random.default_rng(3).uniform(1, 140_000, 500)])
    for curve in (sc.system.prfaas.prefill_time, sc.system.local.prefill_time,
                  sc.system.prfaas.kv_size):
        fast = ScalarCurve(curve)
        assert [fast(x) for x in lengths.tolist()] == pytest.approx(curve(lengths), rel=1e-12)
