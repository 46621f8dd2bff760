"""Issue 22 point 7: y-axis ticks on round numbers, evenly spaced on a chart's rows at every
size (plotext's own read `4.30 3.58 2.15 1.43 0.00` at 80x24), linear and in decades; and the
chart controls' state (window, scale, hidden series)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from prfaas_tui.chart_controls import WINDOWS, ChartControls, window_name
from prfaas_tui.ticks import MAX_TICKS, YTicks, linear_ticks, log_ticks


def mantissa(step: float) -> float:
    return round(step / 10.0 ** math.floor(math.log10(step) + 1e-9), 6)


def check_axis(ax: YTicks, rows: int) -> None:
    """The properties every axis has: ticks inside it, evenly spaced in value and on rows
    (distinct rows, the same gap), 2..MAX_TICKS of them (3 from 7 rows, 4 from 13)."""
    t = np.array(ax.ticks)
    assert 2 <= len(t) <= MAX_TICKS
    assert len(t) >= (4 if rows >= 13 else 3 if rows >= 7 else 2)
    assert ax.lo == pytest.approx(t[0]) and t[-1] <= ax.hi + 1e-9 * (ax.hi - ax.lo)
    steps = np.diff(t)
    assert np.allclose(steps, steps[0], rtol=1e-6)
    assert mantissa(steps[0]) in (1, 2, 5)
    where = [ax.row(v, rows) for v in t]
    assert where[0] == 0 and len(set(where)) == len(where)
    assert len(set(np.diff(where))) == 1, where  # the same number of rows between labels
    assert max(where) <= rows - 1


@settings(max_examples=300, deadline=None)
@given(need=st.floats(1e-6, 1e7), rows=st.integers(2, 60))
def test_linear_ticks_are_round_even_and_cover_the_data(need, rows):
    ax = linear_ticks(0.0, need, rows)
    check_axis(ax, rows)
    assert ax.hi >= need * (1 - 1e-9)
    assert ax.hi <= 2.5 * need * (1 + 1e-9)  # round, yet not far above what it must show
    assert len(set(ax.labels)) == len(ax.labels)
    scale = 1e6 if ax.labels[-1].endswith("M") else 1e3 if ax.labels[-1].endswith("k") else 1
    for v, label in zip(ax.ticks, ax.labels, strict=True):  # a label says its tick exactly
        assert float(label.rstrip("kM")) * scale == pytest.approx(v, rel=1e-9, abs=1e-12)


@pytest.mark.parametrize("need,rows,labels", [
    (2.49 * 1.15, 4, ("0", "1", "2", "3")),  # the 80x24 throughput chart
    (18.8, 5, ("0", "5", "10", "15", "20")),  # the 80x24 TTFT chart
    (110.0, 12, ("0", "20", "40", "60", "80", "100")),
    (2.49, 20, ("0.0", "0.5", "1.0", "1.5", "2.0", "2.5", "3.0")),
    (12345.0, 10, ("0", "5k", "10k", "15k")),
])
def test_linear_ticks_at_the_dashboards_sizes(need, rows, labels):
    assert linear_ticks(0.0, need, rows).labels == labels


def test_an_axis_starting_below_zero_rounds_its_bottom_down_to_a_step():
    ax = linear_ticks(-3.2, 7.0, 12)
    check_axis(ax, 12)
    assert ax.lo <= -3.2 and ax.hi >= 7.0 and 0.0 in ax.ticks


@pytest.mark.parametrize("need", [0.0, -1.0, math.nan, math.inf])
def test_degenerate_data_gets_a_unit_axis(need):
    ax = linear_ticks(0.0, need, 5)  # all-zero data, nothing finite
    check_axis(ax, 5)
    assert (ax.lo, ax.hi) == (0.0, 1.0)


def test_one_value_is_covered_with_round_ticks():
    ax = linear_ticks(0.0, 0.37, 6)
    check_axis(ax, 6)
    assert ax.hi >= 0.37


@settings(max_examples=200, deadline=None)
@given(lo=st.floats(1e-6, 1e3), ratio=st.floats(1.0, 1e9), rows=st.integers(2, 60))
def test_log_ticks_are_decades_that_cover_the_data(lo, ratio, rows):
    values = np.array([lo, lo * ratio, 0.0, math.nan])  # zeros and NaN do not count
    ax = log_ticks(values, rows)
    check_axis(ax, rows)
    assert ax.log and all(float(t).is_integer() for t in ax.ticks)
    for t, label in zip(ax.ticks, ax.labels, strict=True):
        assert float(label) == pytest.approx(10.0 ** t)
    assert 10 ** ax.hi >= lo * ratio * (1 - 1e-9)
    # the bottom reaches the smallest value unless that is more than 6 decades down
    assert 10 ** ax.lo <= lo * (1 + 1e-9) or math.ceil(ax.hi - 1e-9) - ax.lo >= 6


@pytest.mark.parametrize("values", [[], [0.0, 0.0], [math.nan], [-1.0]])
def test_log_ticks_without_positive_data_show_one_decade(values):
    ax = log_ticks(values, 5)
    assert ax.labels == ("1", "10") and (ax.lo, ax.hi) == (0.0, 1.0)


def test_map_holds_data_inside_the_axis():
    ax = linear_ticks(0.0, 9.0, 5)
    assert list(ax.map([-1.0, 4.0, 99.0, math.inf])) == [0.0, 4.0, ax.hi, ax.hi]
    assert math.isnan(ax.map([math.nan])[0])
    lg = log_ticks([0.1, 100.0], 5)
    out = lg.map([0.0, 1.0, 1e9, math.nan])
    assert out[0] == lg.lo and out[1] == 0.0 and out[2] == lg.hi and math.isnan(out[3])


def test_controls_cycle_the_window_and_toggle_scale_and_series():
    c = ChartControls()
    assert [window_name(w) for w in WINDOWS] == ["1m", "5m", "30m", "all"]
    seen = []
    for _ in WINDOWS:
        c = c.next_window()
        seen.append(window_name(c.window))
    assert seen == ["30m", "all", "1m", "5m"]  # from the default 5m round to it again
    c = c.toggle_log().toggle(2)
    assert c.log and not c.shows(2) and c.shows(1)
    assert c.describe(("offered", "served", "Λmax")) == "window 5m · log · off 2 served"
    assert c.describe(("offered", "served"), compact=True) == "5m·log·-2"
    assert c.describe(("capacity",)) == "window 5m · log"  # a chart without a series 2
    assert c.toggle(2).toggle_log() == ChartControls()
    with pytest.raises(ValueError):
        c.toggle(5)


def test_a_log_axis_over_less_than_a_decade_has_a_whole_decade_step():
    ax = log_ticks([1.0, 1.015625], 2)  # hypothesis found it: no integer step was tried
    assert ax.labels == ("1", "10")


@settings(max_examples=200, deadline=None)
@given(lo=st.floats(-1e4, 0.0), span=st.floats(1e-3, 1e5), rows=st.integers(2, 60))
def test_an_axis_across_zero_covers_its_data_on_whole_rows(lo, span, rows):
    ax = linear_ticks(lo, lo + span, rows)
    check_axis(ax, rows)
    assert ax.lo <= lo + 1e-9 * span and ax.hi >= (lo + span) - 1e-9 * span


def test_a_tick_a_hair_below_zero_reads_zero_not_minus_zero():
    ax = linear_ticks(-1e-9, 0.5 - 1e-9, 2)  # the axis covers the data: it starts at -1e-9
    assert ax.lo <= -1e-9 and ax.hi >= 0.5 - 1e-9
    assert ax.labels == ("0.0", "0.5")
