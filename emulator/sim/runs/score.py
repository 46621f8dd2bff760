"""A drill's scorecard: requests lost, SLO attainment, peak windowed TTFT P90, TTFT P90 of the
requests that arrived during an incident (the ones still without their first token count as
waiting until now, a lower bound), peak queues, time to recover (`recovery_time`), and the scheduler's
decisions, each checked against the drill's bars."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from emulator.model import STAGES, _num
from emulator.scenario.drill import EXPECT_MIN, Scoring
from emulator.sim.engine import Emulation
from emulator.sim.runs.record import Recorder


@dataclass(frozen=True)
class Scorecard:
    lost: int
    slo_attainment: float | None
    peak_ttft_p90: float | None
    ttft_p90_during: float | None
    unfinished_during: int
    recovery_seconds: float | None  # None: not recovered by the end of the run
    peak_queue: dict[str, int]
    decisions: list[str]
    conversions: int
    expectations: dict[str, dict]  # key -> {"bar", "value", "ok"}
    regions: dict[str, dict] | None = None  # a topology: the same figures per region

    @property
    def passed(self) -> bool:
        return all(e["ok"] for e in self.expectations.values())

    def to_dict(self) -> dict[str, Any]:
        return {"lost": self.lost, "slo_attainment": self.slo_attainment,
                "peak_ttft_p90": self.peak_ttft_p90, "ttft_p90_during": self.ttft_p90_during,
                "unfinished_during": self.unfinished_during,
                "recovery_seconds": self.recovery_seconds, "peak_queue": self.peak_queue,
                "conversions": self.conversions, "decisions": self.decisions,
                "expectations": self.expectations, "passed": self.passed,
                **({"regions": self.regions} if self.regions is not None else {})}


def scorecard(emu: Emulation, rec: Recorder | None = None,
              scoring: Scoring | None = None) -> Scorecard:
    """The scorecard of an emulation now (normally at its end) against `scoring`'s bars (None:
    the defaults). Without a recorder (`attach` one before running) the per-incident figures
    are None."""
    scoring = scoring or Scoring()
    acc = emu.accounting
    during, unfinished, recovery, peak, queues = None, 0, None, None, dict.fromkeys(STAGES, 0)
    if rec is not None:
        rec._row()
        values = rec.waits_during()
        unfinished = rec.unfinished_during()
        during = float(np.percentile(values, 90)) if values else None
        ends = [e for *_, e in rec.episodes]
        recovery = recovery_time(list(rec.rows), ends, scoring.recovery_window,
                                 scoring.tolerance)
        peak, queues = _num(rec.peak_ttft_p90), dict(rec.peak_queue)
    sched = emu.scheduler
    card = dict(lost=acc.lost, slo_attainment=attainment(emu, rec),
                peak_ttft_p90=peak, ttft_p90_during=during, unfinished_during=unfinished,
                recovery_seconds=recovery, peak_queue=queues,
                decisions=[str(d) for d in sched.log] if sched else [],
                conversions=sched.conversions if sched else 0)
    checks = {}
    for key, bar in scoring.expect.items():
        value = card[key]
        if key in EXPECT_MIN:
            ok = value is not None and value >= bar
        else:
            ok = value is not None and value <= bar
        checks[key] = {"bar": bar, "value": value, "ok": ok}
    regions = _regions(emu, rec, scoring) if emu.topology is not None else None
    return Scorecard(**card, expectations=checks, regions=regions)


def _regions(emu: Emulation, rec: Recorder | None, scoring: Scoring) -> dict[str, dict]:
    """Per region: its books, SLO attainment, TTFT P90 during incidents, peak windowed TTFT
    P90 and time to recover (its own arrivals and completions)."""
    out = {}
    rt = emu.topology
    for name, r in emu.regions.items():
        held = rt.in_flight(r)
        row = {"lost": r.arrived - r.completed - held - r.rejected_total,
               "slo_attainment": r.latencies.attainment(), "ttft_p90_during": None,
               "unfinished_during": 0, "peak_ttft_p90": None, "recovery_seconds": None}
        if rec is not None:
            values = rec.waits_during(name)
            row["ttft_p90_during"] = float(np.percentile(values, 90)) if values else None
            row["unfinished_during"] = rec.unfinished_during(name)
            row["peak_ttft_p90"] = _num(rec.region_peak[name])
            row["recovery_seconds"] = recovery_time(
                list(rec.region_rows[name]), [s[1] for s in rec.spans],
                scoring.recovery_window, scoring.tolerance)
        out[name] = row
    return out


def attainment(emu: Emulation, rec: Recorder | None) -> float | None:
    """SLO attainment of the finished requests, with every unfinished incident arrival that has
    already waited past the TTFT target counted as a miss (it can no longer meet it): a drill
    whose incident starves requests cannot read as meeting its SLO."""
    lat = emu.latencies
    missed = 0 if rec is None else sum(1 for w in rec.open_waits() if w > lat.slo_ttft)
    if not lat.has_slo or lat.ttft.n + missed == 0:
        return None
    return lat.slo_met / (lat.ttft.n + missed)


def recovery_time(rows: list[tuple[float, int, int, int]], ends: list[float | None],
                  window: float, tolerance: float, hold: float | None = None) -> float | None:
    """Seconds from the end of the last incident until the served rate is back within
    `tolerance` of the offered rate: the first tau >= end such that over every `window`-second
    interval starting in [tau, tau + hold] (hold: window / 5) the completions are within
    `tolerance` of the arrivals. Forward windows see only post-incident time, so a surplus of
    completions means a backlog still draining and a deficit work still piling up; the
    criterion reads "what is left of the backlog is at most `tolerance` of a window's traffic".
    None: never, the incident has not ended, or the run has no full window after it."""
    if not ends or any(e is None for e in ends):
        return None
    hold = window / 5 if hold is None else hold
    end = max(e for e in ends if e is not None)
    times = np.array([r[0] for r in rows])
    arrived = np.array([r[1] for r in rows], dtype=float)
    done = np.array([r[2] for r in rows], dtype=float)
    starts = np.flatnonzero((times >= end - 1e-9) & (times + window <= times[-1] + 1e-9))
    if len(starts) == 0:
        return None
    stops = np.searchsorted(times, times[starts] + window - 1e-9)
    offered = arrived[stops] - arrived[starts]
    served = done[stops] - done[starts]
    bad = np.abs(served - offered) > tolerance * np.maximum(offered, 1.0)
    t0 = times[starts]
    for i in np.flatnonzero(~bad):
        if t0[i] + hold > t0[-1]:
            return None  # too late in the run to confirm
        held = (t0 >= t0[i]) & (t0 <= t0[i] + hold + 1e-9)
        if not bad[held].any():
            return max(0.0, float(t0[i] - end))
    return None
