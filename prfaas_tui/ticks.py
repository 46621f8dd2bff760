"""Y-axis ticks on round numbers that land exactly on a chart's rows. Textual-free.

plotext puts a tick label on the row nearest its value: row = floor(0.5 + (rows - 1) * (y - lo)
/ (hi - lo)). Its own ticks split [lo, hi] evenly whatever the rows, so at 80x24 a chart read
`4.30 3.58 2.15 1.43 0.00` (uneven, one missing). Here the step is 1, 2 or 5 x 10^k and the axis
top is chosen so that every tick falls on a row, `gap` rows apart: the labels are round and
evenly spaced, and the axis covers them (the top row may lie between two ticks).

A log axis is the same in decades: data are drawn as log10(y) on a linear axis whose ticks
are whole powers of ten (plotext's own log scale cannot set limits or show zeros).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

MANTISSAS = (1, 2, 5)
MAX_TICKS = 8
MAX_DECADES = 6  # a log axis spans at most this many decades below its top


@dataclass(frozen=True)
class YTicks:
    """An axis [lo, hi] in plotted units (log10 of the data on a log axis), its ticks there
    and their labels in data units."""

    lo: float
    hi: float
    ticks: tuple[float, ...]
    labels: tuple[str, ...]
    log: bool = False

    def map(self, y: Iterable[float] | float) -> np.ndarray:
        """Data to plotted units, held inside the axis (nothing drawn outside the frame; a
        line above the top rides along it). NaN stays NaN; on a log axis y <= 0 sits at the
        bottom."""
        a = np.asarray(y, dtype=float)
        if self.log:
            with np.errstate(divide="ignore", invalid="ignore"):
                a = np.where(a > 0, np.log10(a), np.where(np.isnan(a), np.nan, -np.inf))
        return np.clip(a, self.lo, self.hi)

    def row(self, value: float, rows: int) -> int:
        """The row (0 = bottom) plotext draws a plotted `value` on."""
        return math.floor(round(0.5 + (rows - 1) * (value - self.lo) / (self.hi - self.lo), 8))


def _steps(lo_exp: int, hi_exp: int, integer: bool) -> Iterable[float]:
    for k in range(lo_exp, hi_exp + 1):
        for m in MANTISSAS:
            step = m * 10.0 ** k
            if not integer or (step >= 1 and float(step).is_integer()):
                yield step


def _nice(lo: float, need: float, rows: int, *, integer: bool) -> tuple[float, float, float]:
    """(base, top, step): an axis from `base` (lo rounded down to the step) over `rows` rows
    that reaches `need`, with ticks `step` apart on whole rows: 2 to MAX_TICKS of them, at
    least 3 from 7 rows and 4 from 13 (a tall chart with two labels reads as unlabelled).

    The tightest such axis wins (the data fill the chart), except that labelling every row of
    a tall chart costs as much as 15% more height, and a top row between two ticks 1%; among
    equals, more labels."""
    rows = max(int(rows), 2)
    span = need - lo
    fewest = 4 if rows >= 13 else 3 if rows >= 7 else 2
    best: tuple | None = None
    k0 = math.floor(math.log10(span / (rows - 1))) - 1
    k1 = max(math.ceil(math.log10(span)) + 1, 0 if integer else -400)  # decades: a step >= 1
    for step in _steps(k0, k1, integer):
        # decades start at the data's own (whole) decade; linear ticks at multiples of the step,
        # lo snapped onto one within rounding, never past the data by more than 5e-10 x span
        base = lo if integer else math.floor(lo / step + min(1e-9, 5e-10 * span / step)) * step
        for gap in range(1, rows):
            n = (rows - 1) // gap + 1
            top = base + step * (rows - 1) / gap
            if not fewest <= n <= MAX_TICKS or top < need - 1e-9 * span:
                continue
            score = ((top - base) / span + (0.15 if gap == 1 and rows > 5 else 0.0)
                     + (0.01 if (rows - 1) % gap else 0.0))
            key = (round(score, 9), -n)
            if best is None or key < best[0]:
                best = (key, base, top, step)
    if best is None:  # an axis across zero on two rows: from lo itself, one step per row
        step = next(s for s in _steps(k0, k1 + 1, integer) if s * (rows - 1) >= span)
        return float(lo), lo + step * (rows - 1), step
    return best[1], best[2], best[3]


def _ticks(base: float, top: float, step: float) -> tuple[float, ...]:
    n = math.floor((top - base) / step + 1e-9)
    return tuple(round(base + i * step, 12) for i in range(n + 1))


def tick_labels(ticks: tuple[float, ...], step: float) -> tuple[str, ...]:
    """Ticks with as many decimals as their step needs: 0.5 1.0 1.5; 0 20 40; an axis past
    10,000 in k or M (0k 20k 40k): one unit for the whole axis."""
    top = max(abs(t) for t in ticks)
    scale, suffix = next(((s, x) for s, x in ((1e6, "M"), (1e3, "k")) if top >= 10 * s
                          and step >= s), (1.0, ""))
    digits = max(0, -math.floor(math.log10(step / scale) + 1e-9))
    return tuple("0" if suffix and t == 0 else f"{_rounded(t / scale, digits)}{suffix}"
                 for t in ticks)


def _rounded(v: float, digits: int) -> str:
    """`v` with `digits` decimals, never a negative zero (-1e-9 on a 0.5 step reads 0.0)."""
    s = f"{v:.{digits}f}"
    return s[1:] if s.startswith("-") and float(s) == 0 else s


def linear_ticks(lo: float, need: float, rows: int) -> YTicks:
    """Round ticks from `lo` (rounded down to a step) up past `need`, on `rows` plot rows.
    Degenerate input (NaN, need <= lo) gets a unit axis."""
    lo = lo if math.isfinite(lo) else 0.0
    if not math.isfinite(need) or need <= lo:
        need = lo + (abs(lo) if lo else 1.0)
    base, top, step = _nice(lo, need, rows, integer=False)
    ticks = _ticks(base, top, step)
    return YTicks(base, top, ticks, tick_labels(ticks, step))


def decade_label(exp: int) -> str:
    """10^exp as an operator reads it: 0.01, 0.1, 1, 10, 100, 1000, 10000, else 1e5."""
    return f"{10.0 ** exp:g}" if -2 <= exp <= 4 else f"1e{exp}"


def log_ticks(values: Iterable[float], rows: int, need: float | None = None) -> YTicks:
    """Decades covering the positive finite `values` (and `need`, a level the axis must show),
    at most MAX_DECADES below the top; ticks every 1, 2 or 5 decades on whole rows."""
    a = np.asarray(list(values) if not isinstance(values, np.ndarray) else values, dtype=float)
    pos = a[np.isfinite(a) & (a > 0)]
    if need is not None and math.isfinite(need) and need > 0:
        pos = np.append(pos, need)
    if not len(pos):
        hi, lo = 1.0, 0
    else:
        hi = math.log10(float(pos.max()))
        lo = max(math.floor(math.log10(float(pos.min()))), math.ceil(hi - 1e-9) - MAX_DECADES)
        if hi <= lo:
            hi = lo + 1.0
    base, top, step = _nice(float(lo), hi, rows, integer=True)
    ticks = _ticks(base, top, step)
    return YTicks(base, top, ticks, tuple(decade_label(round(t)) for t in ticks), log=True)
