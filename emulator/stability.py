"""Is the deployment keeping up? Per-stage queue growth and load, from a run of snapshot rows.

Above Lambda_max the served rate can still look healthy for minutes: the stages that keep up
go on finishing their share (short requests on PD-P) while one queue (PrfaaS) grows without
bound. The honest signal is the queue's trend, not the served rate. `assess` fits a least-squares
slope to each stage's queue over the last `window` seconds and calls a stage unstable only when
the slope clears a noise floor (an absolute floor, a multiple of its standard error, and a
minimum net rise), so the Poisson jitter of a stage run at 0.8 x its ceiling does not trip it.

Pure functions over `Row`s (build them with `Row.of(snapshot)`); nothing here imports the engine.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple, Protocol

import numpy as np

from emulator.model import STAGES, OperatingPoint

STAGE_WORDS = {"prfaas": "PrfaaS", "pd-p": "PD-P", "pd-d": "PD-D"}


class _StageLike(Protocol):
    queue: int
    busy: int
    served_rate: float


class SnapshotRowLike(Protocol):
    """What `Row.of` reads from an engine Snapshot (read-only: a snapshot is frozen)."""

    @property
    def sim_time(self) -> float: ...
    @property
    def offered_rate(self) -> float: ...
    @property
    def served_rate(self) -> float: ...
    @property
    def stages(self) -> dict: ...
    @property
    def ttft_p90(self) -> float | None: ...


class Row(NamedTuple):
    """One sample: per-stage tuples in STAGES order (prfaas, pd-p, pd-d)."""

    t: float
    queue: tuple[float, float, float]
    busy: tuple[float, float, float]  # requests in service (decode: batch slots held)
    served: tuple[float, float, float]  # req/s leaving each stage, windowed
    offered: float  # req/s arriving, windowed
    served_total: float  # req/s completed, windowed
    ttft_p90: float = math.nan

    @classmethod
    def of(cls, snap: SnapshotRowLike) -> Row:
        st = [snap.stages[s] for s in STAGES]
        p90 = snap.ttft_p90
        return cls(float(snap.sim_time), tuple(float(x.queue) for x in st),
                   tuple(float(x.busy) for x in st), tuple(float(x.served_rate) for x in st),
                   float(snap.offered_rate), float(snap.served_rate),
                   math.nan if p90 is None else float(p90))


@dataclass(frozen=True)
class Trend:
    """A least-squares line through one series over the window."""

    slope: float  # units per second
    stderr: float  # of the slope (white-noise residuals: an underestimate, hence z)
    span: float  # seconds covered
    level: float  # the last value

    @property
    def rise(self) -> float:
        return self.slope * self.span


def trend(ts: Sequence[float], ys: Sequence[float]) -> Trend:
    """Slope and its standard error; zero slope on fewer than three finite points."""
    t = np.asarray(ts, dtype=float)
    y = np.asarray(ys, dtype=float)
    ok = np.isfinite(t) & np.isfinite(y)
    t, y = t[ok], y[ok]
    if len(t) < 3 or np.ptp(t) <= 0:
        return Trend(0.0, math.inf, float(np.ptp(t)) if len(t) else 0.0,
                     float(y[-1]) if len(y) else math.nan)
    tc = t - t.mean()
    sxx = float(tc @ tc)
    slope = float(tc @ (y - y.mean())) / sxx
    res = y - y.mean() - slope * tc
    se = math.sqrt(float(res @ res) / (len(t) - 2) / sxx)
    return Trend(slope, se, float(t[-1] - t[0]), float(y[-1]))


@dataclass(frozen=True)
class NoiseFloor:
    """When a queue slope counts as growth: all four must hold. Measured on paper-case-study
    (8 seeds, 20 min, 180 s windows): the steepest relative slope at 0.8 x Lambda_max was
    0.05 of the stage's rate, the shallowest at 1.3 x was 0.14; `rel_slope` sits between."""

    min_slope: float = 0.02  # req/s
    rel_slope: float = 0.10  # of the stage's served rate
    z: float = 4.0  # standard errors (residuals are autocorrelated: be generous)
    min_rise: float = 5.0  # requests over the window

    def growing(self, tr: Trend, rate: float = 0.0) -> bool:
        return (tr.slope > max(self.min_slope, self.rel_slope * rate)
                and tr.slope > self.z * tr.stderr and tr.rise >= self.min_rise)

    def shrinking(self, tr: Trend, rate: float = 0.0) -> bool:
        return self.growing(Trend(-tr.slope, tr.stderr, tr.span, tr.level), rate)


@dataclass(frozen=True)
class StageStability:
    stage: str
    queue: Trend
    routed_rate: float  # req/s entering: served + growth of (queue + in service)
    served_rate: float
    load: float | None  # routed rate over the stage's Theta (None without a model point)
    growing: bool
    shrinking: bool


@dataclass(frozen=True)
class StabilityReport:
    at: float
    window: float
    stages: dict[str, StageStability]
    ttft_rising: bool
    offered: float
    served: float
    judged: bool = True  # False in the warm-up: rows span < 2/3 of the window

    @property
    def unstable_stages(self) -> tuple[str, ...]:
        return tuple(s for s in STAGES if self.stages[s].growing)

    @property
    def routed_share(self) -> float | None:
        """The live p: PrfaaS's share of what the router sent (routed, not served: served
        lags the routed share whenever a queue grows)."""
        a, b = self.stages["prfaas"].routed_rate, self.stages["pd-p"].routed_rate
        return a / (a + b) if a + b > 0 else None

    @property
    def stable(self) -> bool:
        return not self.unstable_stages

    @property
    def banner(self) -> str | None:
        """'unstable: PrfaaS backlog +0.09 req/s, TTFT rising', or None when stable."""
        if self.stable:
            return None
        parts = [f"{STAGE_WORDS[s]} backlog {self.stages[s].queue.slope:+.2f} req/s"
                 for s in self.unstable_stages]
        if self.ttft_rising:
            parts.append("TTFT rising")
        return "unstable: " + ", ".join(parts)


def _theta(point: OperatingPoint, stage: str) -> float:
    return {"prfaas": point.theta_prfaas, "pd-p": point.theta_pdp, "pd-d": point.theta_pdd}[stage]


def assess(rows: Sequence[Row], point: OperatingPoint | None = None, *, window: float = 180.0,
           floor: NoiseFloor = NoiseFloor(), start: float = 0.0,
           warmup: float = 60.0) -> StabilityReport:
    """Per stage over the last `window` seconds: queue trend, routed rate, load against the
    (effective) model's Theta, and whether the queue grows. `rows` oldest first. A queue filling
    from empty looks like growth, so rows in the first `warmup` seconds after the run's `start`
    are left out, and nothing is called unstable until the rest span 2/3 of the window."""
    if not rows:
        raise ValueError("assess needs at least one row")
    now = rows[-1].t
    recent = [r for r in rows if r.t >= max(now - window, start + warmup)] or [rows[-1]]
    ts = [r.t for r in recent]
    judged = ts[-1] - ts[0] >= 2 * window / 3
    stages = {}
    for i, s in enumerate(STAGES):
        q = trend(ts, [r.queue[i] for r in recent])
        held = trend(ts, [r.queue[i] + r.busy[i] for r in recent])
        served = float(np.mean([r.served[i] for r in recent]))
        routed = served + (held.slope if math.isfinite(held.slope) else 0.0)
        theta = _theta(point, s) if point is not None else math.nan
        load = routed / theta if point is not None and theta > 0 and math.isfinite(theta) else None
        stages[s] = StageStability(s, q, routed, served, load,
                                   judged and floor.growing(q, served),
                                   judged and floor.shrinking(q, served))
    ttft = trend(ts, [r.ttft_p90 for r in recent])
    level = np.nanmedian([r.ttft_p90 for r in recent]) if any(
        math.isfinite(r.ttft_p90) for r in recent) else math.nan
    rising = bool(math.isfinite(level) and ttft.slope > 0 and ttft.slope > 2 * ttft.stderr
                  and ttft.rise > max(0.5, 0.2 * level))
    return StabilityReport(now, window, stages, rising, float(np.mean([r.offered for r in recent])),
                           float(np.mean([r.served_total for r in recent])), judged)


_WHO_FINISHES = {"prfaas": "short requests finish on PD-P",
                 "pd-p": "long requests finish through PrfaaS",
                 "pd-d": "decode finishes what it admits"}


def served_note(report: StabilityReport, lambda_max: float, *, tol: float = 0.02) -> str | None:
    """Why served exceeds Lambda_max (the throughput chart's caption), or None when it does
    not. Above the stable rate the stages that keep up finish their share while another queue
    grows: the surplus is borrowed from that backlog. After an overload the backlog drains and
    served runs above Lambda_max until it is gone."""
    if not (report.served > lambda_max * (1 + tol)):
        return None
    head = f"served {report.served:.2f} > Λmax {lambda_max:.2f} req/s"
    if not report.stable:
        s = report.unstable_stages[0]
        grow = report.stages[s].queue.slope
        return (f"{head}: {_WHO_FINISHES[s]} while the {STAGE_WORDS[s]} queue grows "
                f"{grow:+.2f} req/s; not sustainable")
    draining = [s for s in STAGES if report.stages[s].shrinking]
    if draining:
        s = draining[0]
        return (f"{head}: the {STAGE_WORDS[s]} backlog drains "
                f"({report.stages[s].queue.slope:+.2f} req/s); it ends when the queue is empty")
    return f"{head}: within the sampling noise of the window"
