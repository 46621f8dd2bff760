"""Issue 12: one readable time axis: a shared window with relative labels, incident spans,
decision markers, and y-axes that follow a scale-changing knob at once but do not breathe."""

from __future__ import annotations

import numpy as np
import pytest

from prfaas_tui.events import parse_decision
from prfaas_tui.timeaxis import (
    SCALE_KNOBS,
    Span,
    TimeWindow,
    YAxis,
    clip,
    covering_window,
    decision_markers,
    frame,
    incident_spans,
    last_change,
    relative_label,
    relative_ticks,
    rescale_y,
    shared_window,
)


def test_every_chart_shares_one_window_that_starts_at_the_run():
    assert shared_window(26969.5) == TimeWindow(26669.5, 26969.5)
    assert shared_window(100.0) == TimeWindow(0.0, 100.0)
    with pytest.raises(ValueError):
        shared_window(10.0, span=0)


@pytest.mark.parametrize("dt,label", [(0, "now"), (-300, "-5m"), (-90, "-1m30s"), (-45, "-45s"),
                                      (-3600, "-1h"), (-5400, "-1h30m"), (-0.4, "now")])
def test_relative_labels(dt, label):
    assert relative_label(dt) == label


def test_ticks_run_from_minus_five_minutes_to_now_not_raw_seconds():
    ticks = relative_ticks(shared_window(26969.5), max_ticks=6)
    assert [lbl for _, lbl in ticks] == ["-5m", "-4m", "-3m", "-2m", "-1m", "now"]
    assert [x for x, _ in ticks] == [-300, -240, -180, -120, -60, 0]
    assert all("26969" not in lbl for _, lbl in ticks)
    assert len(relative_ticks(TimeWindow(0, 3 * 86400), max_ticks=5)) <= 5


def test_clip_keeps_the_window_relative_to_now():
    x, y = clip(TimeWindow(100, 200), [50, 100, 150, 200], [1, 2, 3, 4])
    assert list(x) == [-100, -50, 0] and list(y) == [2, 3, 4]


def test_incident_spans_are_clipped_and_open_ones_end_now():
    w = TimeWindow(600, 900)
    spans = incident_spans([(300, 700, "brownout"), (800, None, "loss"), (1000, 1100, "later"),
                            (100, 200, "gone"), (850, 850, "cache flush")], w)
    assert spans == [Span(-300, -200, "brownout", False), Span(-100, 0, "loss", True),
                     Span(-50, -50, "cache flush", False)]


def test_the_compare_window_spans_the_whole_incident():
    w = covering_window([(600, 1200, "brownout")], now=2400)
    assert w.lo == 540 and w.hi == 2400  # not the last five minutes only
    assert covering_window([], now=2400) == TimeWindow(2100, 2400)


def test_changes_become_markers_by_who_made_them():
    lines = ["    600.0s incident: link brownout to 20%",
             "    610.0s scheduler (short): egress 6.0 of 6 Gbps -> t 19K",
             "    610.0s threshold -> 19000 tokens",
             "    615.0s scheduler (short): headroom -> kept",
             "    620.0s threshold -> 28000 tokens", "    100.0s split -> N_p 3 / N_d 5",
             "garbage"]
    assert parse_decision(lines[4]) == (620.0, "threshold -> 28000 tokens")
    ms = decision_markers(lines, TimeWindow(500, 800))
    # the incident is a span, the no-op decision no change: neither is a marker
    assert [(m.x, m.kind) for m in ms] == [(-190, "scheduler"), (-180, "knob")]


def test_link_axis_follows_a_bandwidth_change_at_once():
    t = np.arange(0, 100.0)
    cap = np.where(t < 50, 100.0, 10.0)
    ax = rescale_y(None, t[:50], cap[:50], hint=100.0)
    assert ax.top == pytest.approx(110.0)
    ax = rescale_y(ax, t, cap, hint=10.0, changed_at=50.0)  # B_out 100 -> 10 Gbps
    assert ax.top == pytest.approx(11.0)


def test_axis_grows_at_once_but_shrinks_only_below_half():
    ax = YAxis(11.0)
    assert rescale_y(ax, [0, 1], [5.0, 12.0]).top == pytest.approx(13.2)
    assert rescale_y(ax, [0, 1], [6.0, 5.5]).top == 11.0  # wobble: keep the scale
    assert rescale_y(ax, [0, 1], [4.0, 4.5]).top == pytest.approx(4.95)  # below half: shrink


def test_brownout_keeps_the_axis_until_the_old_level_leaves_the_window():
    """An incident is not a knob: the drop stays visible until it scrolls out."""
    ax = rescale_y(None, [0, 1], [30.0, 30.0], hint=30.0)
    ax = rescale_y(ax, [0, 1, 2], [30.0, 30.0, 6.0], hint=6.0)
    assert ax.top == pytest.approx(33.0)
    ax = rescale_y(ax, [300, 301], [6.0, 6.0], hint=6.0)
    assert ax.top == pytest.approx(6.6)


def test_a_frame_holds_the_window_its_spans_and_changes():
    f = frame(TimeWindow(600, 900), [(700, None, "brownout")],
              ["  650.0s incident: brownout", "  800.0s bandwidth -> 10.00 Gbps"])
    assert f.spans == (Span(-200, 0, "brownout", True),)
    assert [(m.x, m.kind) for m in f.markers] == [(-100, "knob")]


def test_the_last_scale_change_is_the_newest_matching_note():
    lines = ["   10.0s bandwidth -> 30.00 Gbps", "   20.0s threshold -> 19000 tokens",
             "   30.0s bandwidth -> 10.00 Gbps", "   40.0s incident: link brownout to 20%"]
    assert last_change(lines, SCALE_KNOBS["link"]) == 30.0
    assert last_change(lines, SCALE_KNOBS["throughput"]) == 30.0
    assert last_change(lines[:2], SCALE_KNOBS["link"]) == 10.0
    assert last_change(lines[3:], SCALE_KNOBS["link"]) is None  # an incident is no knob
