"""One time axis for every live chart: a shared window, relative labels, incident spans, event
markers and y-axis rescale rules. Textual-free: the charts (and tests) feed it numbers.

Why: four charts kept four windows and labelled raw simulated seconds (26969.5); an operator
reads "-5m ... now". Incidents show as spans and knob changes or scheduler decisions as markers
on the same axis, so cause and effect line up across charts. The y rules keep a scale stable
while data wobbles, yet follow a knob that changes the scale at once (the link axis stayed at
0-110 Gbps for 45 s after B_out dropped to 10).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from prfaas_tui.events import events_of, parse_decision

DEFAULT_SPAN = 300.0  # seconds shown: five minutes
TICK_STEPS = (1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600,
              43200, 86400)


@dataclass(frozen=True)
class TimeWindow:
    """[lo, hi] in simulated seconds; charts plot x = t - hi (negative: the past)."""

    lo: float
    hi: float

    @property
    def span(self) -> float:
        return self.hi - self.lo


def shared_window(now: float, span: float = DEFAULT_SPAN, start: float = 0.0) -> TimeWindow:
    """The window every chart uses: the last `span` seconds, not before the run's start."""
    if not span > 0:
        raise ValueError(f"span must be > 0 seconds, got {span!r}")
    return TimeWindow(max(start, now - span), now)


def covering_window(incidents: Iterable[tuple[float, float | None, str]], now: float,
                    pad: float = 60.0, min_span: float = DEFAULT_SPAN) -> TimeWindow:
    """A window holding every incident begun so far, from `pad` before the first start to now:
    the compare charts must not scroll past the incident they compare."""
    starts = [s for s, _, _ in incidents if s <= now]
    lo = min(starts) - pad if starts else now - min_span
    lo = max(0.0, min(lo, now - min_span))
    return TimeWindow(lo, now)


def clip(window: TimeWindow, t: Sequence[float], *ys: Sequence[float]) -> tuple[np.ndarray, ...]:
    """(x relative to now, *ys) for the samples inside the window."""
    ta = np.asarray(t, dtype=float)
    keep = (ta >= window.lo) & (ta <= window.hi)
    return (ta[keep] - window.hi, *(np.asarray(y, dtype=float)[keep] for y in ys))


def relative_label(dt: float) -> str:
    """Seconds relative to now as an operator says them: 0 'now', -300 '-5m', -90 '-1m30s',
    -5400 '-1h30m', -45 '-45s'."""
    s = round(abs(dt))
    if s == 0:
        return "now"
    sign = "-" if dt < 0 else "+"
    h, rem = divmod(s, 3600)
    m, sec = divmod(rem, 60)
    parts = [f"{h}h" if h else "", f"{m}m" if m else "", f"{sec}s" if sec else ""]
    if h:
        parts[2] = ""  # hours do not need seconds at chart resolution
    return sign + "".join(parts)


def relative_ticks(window: TimeWindow, max_ticks: int = 6) -> list[tuple[float, str]]:
    """Ticks at round steps back from now (x <= 0), at most `max_ticks`, labelled relatively."""
    span = window.span
    if span <= 0:
        return [(0.0, "now")]
    n = max(max_ticks - 1, 1)
    step = next((s for s in TICK_STEPS if span / s <= n), None)
    if step is None:
        step = TICK_STEPS[-1] * math.ceil(span / n / TICK_STEPS[-1])
    out = []
    k = 0
    while k * step <= span + 1e-9:
        out.append((-k * step, relative_label(-k * step)))
        k += 1
    return out[::-1]


@dataclass(frozen=True)
class Span:
    """An incident on the relative axis; `open` while it lasts (x1 is then now, 0)."""

    x0: float
    x1: float
    label: str
    open: bool


def incident_spans(incidents: Iterable[tuple[float, float | None, str]],
                   window: TimeWindow) -> list[Span]:
    """The incidents that overlap the window, clipped to it (planned ones not begun: left
    out; an instantaneous one, like a cache flush, has x0 == x1)."""
    out = []
    for start, end, label in incidents:
        if start > window.hi:
            continue
        stop = window.hi if end is None or end > window.hi else end
        if stop < window.lo:
            continue
        out.append(Span(max(start, window.lo) - window.hi, stop - window.hi, label,
                        end is None or end > window.hi))
    return out


@dataclass(frozen=True)
class Marker:
    x: float  # relative seconds
    kind: str  # "knob" (by hand) or "scheduler"
    label: str


def decision_markers(lines: Iterable[str], window: TimeWindow) -> list[Marker]:
    """Markers for the changes inside the window, oldest first: kind "knob" for a change by
    hand, "scheduler" for one the scheduler carried out (its decisions that kept everything
    as it was are in the events view, not on the charts)."""
    return [Marker(e.t - window.hi, e.kind, e.text) for e in events_of(lines)
            if e.change and window.lo <= e.t <= window.hi]


@dataclass(frozen=True)
class YAxis:
    """A chart's y range [0, top]; data before `since` (the last scale change) is ignored."""

    top: float
    since: float = -math.inf


def rescale_y(prev: YAxis | None, t: Sequence[float], ys: Sequence[float], *,
              hint: float = 0.0, changed_at: float | None = None, headroom: float = 0.1,
              floor: float = 1e-3) -> YAxis:
    """The next y range. `hint` is a level the axis must show (the link's capacity now);
    `changed_at` the time of the last knob change that moves the scale (B_out, rate).

    Rules: a new scale change resets the axis to the data since it (and the hint) + headroom;
    data above the top grows the axis at once; otherwise the axis shrinks only when what it
    must show falls below half of it, so Poisson wobble does not make the scale breathe."""
    since = prev.since if prev is not None else -math.inf
    fresh = changed_at is not None and changed_at > since
    if fresh:
        since = changed_at
    ta, ya = np.asarray(t, dtype=float), np.asarray(ys, dtype=float)
    seen = ya[(ta >= since) & np.isfinite(ya)] if len(ya) else ya
    need = max(hint if math.isfinite(hint) else 0.0,
               float(seen.max()) if len(seen) else 0.0, floor)
    want = need * (1 + headroom)
    if prev is None or fresh or need > prev.top or want < prev.top / 2:
        return YAxis(want, since)
    return YAxis(prev.top, since)


@dataclass(frozen=True)
class Frame:
    """What every chart on one time axis draws besides its data: the window, the incident
    spans and the knob/scheduler markers (incidents are spans, not markers). The ticks depend
    on each chart's width: `relative_ticks` at draw time."""

    window: TimeWindow
    spans: tuple[Span, ...]
    markers: tuple[Marker, ...]


def frame(window: TimeWindow, incidents: Iterable[tuple[float, float | None, str]],
          decisions: Iterable[str]) -> Frame:
    return Frame(window, tuple(incident_spans(incidents, window)),
                 tuple(decision_markers(decisions, window)))


# the knob changes that move each live chart's y scale (Emulation.note wording)
SCALE_KNOBS = {
    "link": ("bandwidth ->",),
    "throughput": ("offered rate ->", "bandwidth ->", "split ->", "PrfaaS instances ->",
                   "paradigm ->", "threshold ->"),
}
SCALE_KNOBS["ceilings"] = SCALE_KNOBS["throughput"]


def last_change(decisions: Iterable[str], prefixes: Sequence[str]) -> float | None:
    """The simulated time of the newest noted change starting with one of `prefixes`
    (by hand or by the scheduler), None if none."""
    out = None
    for line in decisions:
        parsed = parse_decision(line)
        if parsed is not None and parsed[1].startswith(tuple(prefixes)):
            out = parsed[0]
    return out
