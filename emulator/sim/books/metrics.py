"""Metrics with bounded memory: cumulative totals read at sample times, windows as differences
of two totals, latency histograms, and a time series that halves its resolution when full.

Nothing here keeps per-request data: rates, utilizations and queue trends come from counters
and time integrals that the stages and links maintain; percentiles from log-bucketed histograms.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable
from typing import NamedTuple

import numpy as np

from emulator.model import STAGES, _num
from emulator.sim.books.histogram import LogHistogram
from emulator.sim.core.request import Request
from emulator.units import to_gbps

QUANTILES = (0.5, 0.9, 0.99)
CDF_QUANTILES = (0.01, *(i / 20 for i in range(1, 20)), 0.99)  # a TTFT CDF in 21 points


class Totals(NamedTuple):
    """Everything cumulative at one instant (per-stage tuples in STAGES order)."""

    t: float
    arrived: int
    completed: int
    rejected: int
    entered: tuple[int, ...]
    done: tuple[int, ...]
    busy: tuple[float, ...]  # slot-seconds in service
    online: tuple[float, ...]  # slot-seconds available
    queue: tuple[int, ...]  # instantaneous
    compute: float  # PrfaaS prefill seconds started
    link_sent: float  # bytes
    link_cap: float  # nominal bytes the link could have sent
    link_sat: float  # seconds full with bytes waiting
    link_in_flight: float  # instantaneous bytes not yet delivered (nan: not read, Observer.totals)
    in_flight: int  # instantaneous requests


class Window(NamedTuple):
    """Rates and utilizations between two Totals."""

    seconds: float
    offered: float
    served: float
    rejected: float
    stage_rate: dict[str, float]  # requests leaving each stage served, per second
    utilization: dict[str, float]  # busy / online per stage
    compute: float  # PrfaaS compute utilization (prefill seconds / instance-seconds)
    link: float  # bytes sent / nominal capacity
    link_saturated: float  # share of the time the link was full with bytes waiting
    queue_growth: dict[str, float]  # requests per second


def window(a: Totals, b: Totals) -> Window:
    dt = b.t - a.t
    inv = 1.0 / dt if dt > 0 else 0.0
    util, rate, growth = {}, {}, {}
    for i, s in enumerate(STAGES):
        online = b.online[i] - a.online[i]
        util[s] = (b.busy[i] - a.busy[i]) / online if online > 0 else 0.0
        rate[s] = (b.done[i] - a.done[i]) * inv
        growth[s] = (b.queue[i] - a.queue[i]) * inv
    pf_online = b.online[0] - a.online[0]
    cap = b.link_cap - a.link_cap
    return Window(
        seconds=dt, offered=(b.arrived - a.arrived) * inv, served=(b.completed - a.completed) * inv,
        rejected=(b.rejected - a.rejected) * inv, stage_rate=rate, utilization=util,
        compute=(b.compute - a.compute) / pf_online if pf_online > 0 else 0.0,
        link=(b.link_sent - a.link_sent) / cap if cap > 0 else 0.0,
        link_saturated=(b.link_sat - a.link_sat) * inv, queue_growth=growth)


def bottleneck(a: Totals, b: Totals, w: Window | None = None) -> str | None:
    """The stage that limits throughput between two Totals.

    Saturated stages (utilization >= 0.9 with a growing queue) come first, ranked by how fast
    their queue grows relative to what they are offered (the lowest ceiling falls furthest
    behind); otherwise the most utilized stage. PrfaaS counts by its compute; the link counts by
    its bytes and shares PrfaaS's queue (a full link holds PrfaaS instances while their KV
    drains), so between the two the higher utilization wins."""
    w = w or window(a, b)
    if w.seconds <= 0:
        return None
    cand: dict[str, tuple[float, int]] = {}  # name -> (utilization, index of its queue)
    if b.entered[0] > 0:
        cand["prfaas"] = (w.compute, 0)
        cand["link"] = (w.link, 0)
    if b.entered[1] > 0:
        cand["pd-p"] = (w.utilization["pd-p"], 1)
    cand["pd-d"] = (w.utilization["pd-d"], 2)
    saturated = {}
    for name, (u, i) in cand.items():
        grown = b.queue[i] - a.queue[i]
        offered = b.entered[i] - a.entered[i]
        if u >= 0.9 and grown > max(2.0, 0.05 * a.queue[i]) and offered > 0:
            saturated[name] = (grown / offered, u)
    if saturated:
        return max(saturated, key=lambda name: saturated[name])
    return max(cand, key=lambda name: cand[name][0])


class Latencies:
    """TTFT, TPOT and end-to-end latency histograms, SLO attainment, and marks for windows."""

    def __init__(self, window_seconds: float, slo_ttft: float | None, slo_tpot: float | None):
        self.ttft = LogHistogram()
        self.tpot = LogHistogram()
        self.e2e = LogHistogram()
        self.slo_ttft = math.inf if slo_ttft is None else slo_ttft
        self.slo_tpot = math.inf if slo_tpot is None else slo_tpot
        self.has_slo = slo_ttft is not None or slo_tpot is not None
        self.slo_met = 0
        self.window_seconds = window_seconds
        self._marks: deque = deque(maxlen=3)  # (time, ttft counts, tpot counts, slo_met, n)

    def record(self, req: Request, now: float) -> None:
        ttft = req.t_first - req.arrival
        tpot = (now - req.t_first) / (req.out_len - 1) if req.out_len > 1 else 0.0
        self.ttft.add(ttft)
        self.tpot.add(tpot)
        self.e2e.add(now - req.arrival)
        if ttft <= self.slo_ttft and tpot <= self.slo_tpot:
            self.slo_met += 1

    def mark(self, now: float) -> None:
        """Remember the counts now (every half window) so windows can subtract them."""
        self._marks.append((now, self.ttft.snapshot_counts(), self.tpot.snapshot_counts(),
                            self.slo_met, self.ttft.n))

    def _base(self, now: float) -> tuple | None:
        """The oldest mark within the last window (None: the whole record is the window)."""
        for m in self._marks:
            if m[0] >= now - self.window_seconds:
                return m
        return None

    def recent(self, now: float) -> tuple[list[float], list[float], float | None]:
        """(TTFT quantiles, TPOT quantiles, SLO attainment) over roughly the last window."""
        base = self._base(now)
        if base is None:
            return (self.ttft.quantiles(QUANTILES), self.tpot.quantiles(QUANTILES),
                    self.attainment())
        _, c_ttft, c_tpot, met, n = base
        ttft = self.ttft.quantiles(QUANTILES, np.subtract(self.ttft.counts, c_ttft))
        tpot = self.tpot.quantiles(QUANTILES, np.subtract(self.tpot.counts, c_tpot))
        count = self.ttft.n - n
        slo = (self.slo_met - met) / count if self.has_slo and count else None
        return ttft, tpot, slo

    def ttft_cdf(self, now: float) -> tuple[tuple[float, float], ...]:
        """(q, TTFT seconds) at CDF_QUANTILES over the same window as `recent`: the emulated
        TTFT distribution the dashboard draws against the SLO (empty before any request)."""
        base = self._base(now)
        counts = None if base is None else np.subtract(self.ttft.counts, base[1])
        values = self.ttft.quantiles(CDF_QUANTILES, counts)
        return tuple((q, v) for q, v in zip(CDF_QUANTILES, values, strict=True)
                     if not math.isnan(v))

    def attainment(self) -> float | None:
        if not self.has_slo or self.ttft.n == 0:
            return None
        return self.slo_met / self.ttft.n

    @staticmethod
    def summary(h: LogHistogram) -> dict:
        p50, p90, p99 = h.quantiles(QUANTILES)
        return {"mean": _num(h.mean), "p50": _num(p50), "p90": _num(p90), "p99": _num(p99),
                "count": h.n}


def merged(hists: list[LogHistogram]) -> LogHistogram:
    """One histogram of everything the given ones (same buckets) recorded."""
    first = hists[0]
    out = LogHistogram(first.lo, first.hi, first.ratio)
    out.counts = [sum(c) for c in zip(*(h.counts for h in hists), strict=True)]
    out.n = sum(h.n for h in hists)
    out.total = sum(h.total for h in hists)
    out.min = min(h.min for h in hists)
    out.max = max(h.max for h in hists)
    return out


class LatencyGroup:
    """Several regions' Latencies read as one (a topology's totals): each request is recorded
    once, in its region, and the group merges the histograms when it is read (summaries,
    snapshots), which is rare next to recording."""

    def __init__(self, parts: list[Latencies]):
        self.parts = parts
        first = parts[0]
        self.slo_ttft, self.slo_tpot = first.slo_ttft, first.slo_tpot
        self.has_slo = first.has_slo
        self.window_seconds = first.window_seconds

    @property
    def slo_met(self) -> int:
        return sum(p.slo_met for p in self.parts)

    @property
    def ttft(self) -> LogHistogram:
        return merged([p.ttft for p in self.parts])

    @property
    def tpot(self) -> LogHistogram:
        return merged([p.tpot for p in self.parts])

    @property
    def e2e(self) -> LogHistogram:
        return merged([p.e2e for p in self.parts])

    def mark(self, now: float) -> None:
        for p in self.parts:
            p.mark(now)

    def _since(self, now: float, which: str) -> tuple[LogHistogram, object]:
        """The merged histogram and its counts over the window (None: the whole record)."""
        hists = [getattr(p, which) for p in self.parts]
        whole = merged(hists)
        bases = [p._base(now) for p in self.parts]
        if any(b is None for b in bases):
            return whole, None
        i = 1 if which == "ttft" else 2
        return whole, sum(np.subtract(h.counts, b[i]) for h, b in zip(hists, bases, strict=True))

    def recent(self, now: float) -> tuple[list[float], list[float], float | None]:
        ttft, c_ttft = self._since(now, "ttft")
        tpot, c_tpot = self._since(now, "tpot")
        bases = [p._base(now) for p in self.parts]
        if c_ttft is None:
            return ttft.quantiles(QUANTILES), tpot.quantiles(QUANTILES), self.attainment()
        count = sum(p.ttft.n - b[4] for p, b in zip(self.parts, bases, strict=True))
        met = sum(p.slo_met - b[3] for p, b in zip(self.parts, bases, strict=True))
        slo = met / count if self.has_slo and count else None
        return ttft.quantiles(QUANTILES, c_ttft), tpot.quantiles(QUANTILES, c_tpot), slo

    def ttft_cdf(self, now: float) -> tuple[tuple[float, float], ...]:
        ttft, counts = self._since(now, "ttft")
        values = ttft.quantiles(CDF_QUANTILES, counts)
        return tuple((q, v) for q, v in zip(CDF_QUANTILES, values, strict=True)
                     if not math.isnan(v))

    def attainment(self) -> float | None:
        n = sum(p.ttft.n for p in self.parts)
        if not self.has_slo or n == 0:
            return None
        return sum(p.slo_met for p in self.parts) / n


class TimeSeries:
    """Which samples become rows of the time series, and the rows written as the run goes to
    `sink` (the `run --csv` file: Ctrl-C leaves every row written so far). At most `cap` rows
    per stride: when `cap` are out, the stride doubles, so a day of samples writes about the
    rows of an hour (what the series kept when it held every other row)."""

    def __init__(self, cap: int, start: Totals):
        self.cap = cap
        self.stride = 1
        self.sink: Callable[[tuple], None] | None = None  # receives each row (see row())
        self._kept = 0
        self._skipped = 0
        self._prev = start

    @property
    def writes_next(self) -> bool:
        """Whether the next sample offered becomes a row (only a row reads its wire bytes)."""
        return self.sink is not None and self._skipped + 1 >= self.stride

    def offer(self, row: Totals) -> None:
        self._skipped += 1
        if self._skipped < self.stride:
            return
        self._skipped = 0
        if self.sink is not None:
            self.sink(self.row(self._prev, row))
        self._prev = row
        self._kept += 1
        if self._kept >= self.cap:
            self._kept //= 2
            self.stride *= 2

    COLUMNS = ("time", "offered_rate", "served_rate", "rejected_rate", "in_flight",
               "queue_prfaas", "queue_pd_p", "queue_pd_d", "util_prfaas", "util_pd_p",
               "util_pd_d", "link_utilization", "link_gbps", "link_bytes_in_flight")

    @staticmethod
    def row(prev: Totals, row: Totals) -> tuple:
        """One row (COLUMNS): the sample, with rates over the interval since `prev`."""
        w = window(prev, row)
        return (row.t, w.offered, w.served, w.rejected, row.in_flight, *row.queue,
                w.compute, w.utilization["pd-p"], w.utilization["pd-d"], w.link,
                to_gbps(row.link_sent - prev.link_sent) / w.seconds if w.seconds else 0.0,
                row.link_in_flight)
