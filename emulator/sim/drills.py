"""Drills: a preset, a timeline of incidents, an SLO and expectations, run in virtual time and
scored (the incident rehearsal of issue 4).

A drill file (presets/drills/NAME.toml) names its base preset and overrides it section by
section; everything but the drill's own keys goes through the preset parser, so a drill is
checked as strictly as a preset and a bad key is one line naming the drill file and the key:

    name = "link-brownout"            # optional (the file's stem)
    description = "..."
    preset = "paper-case-study"       # base preset: a name, or a path relative to this file
    [deployment] / [workload] / [emulator] / [slo] / [scheduler]   # merged over the base
    [[incidents]]                     # the timeline (emulator.sim.incidents), replaces the base's
    [expect]                          # bars the scorecard checks: lost (at most, default 0),
                                      # slo_attainment (at least), recovery_seconds,
                                      # peak_ttft_p90, ttft_p90_during (at most)
    [score]                           # recovery_window (s, default 300), tolerance (0.05)

The scorecard: requests lost, SLO attainment, peak windowed TTFT P90, TTFT P90 of the requests
that arrived during an incident (the ones still unfinished count with their wait so far, a lower
bound), peak queues, time to recover (see `recovery`), and the scheduler's decisions.
"""

from __future__ import annotations

import math
import tomllib
import weakref
from collections import deque
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from emulator.model import STAGES, _num
from emulator.scenario.presets import from_dict, presets_dir, resolve
from emulator.scenario.reader import (
    PresetError,
    Reader,
    between,
    non_negative,
    positive,
    read_toml,
)
from emulator.scenario.scenario import Scenario
from emulator.sim.engine import Emulation
from emulator.units import parse_duration

if TYPE_CHECKING:
    from emulator.sim.incidents import Active
    from emulator.sim.request import Request

DRILL_KEYS = ("name", "description", "preset", "expect", "score")
EXPECT_MAX = ("lost", "recovery_seconds", "peak_ttft_p90", "ttft_p90_during")
EXPECT_MIN = ("slo_attainment",)
_RECORDERS: weakref.WeakKeyDictionary[Emulation, Recorder] = weakref.WeakKeyDictionary()


# -- loading -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Drill:
    name: str
    description: str
    path: str
    scenario: Scenario  # the base preset with the drill's overrides, incidents and scheduler
    expect: dict[str, float] = field(default_factory=dict)
    recovery_window: float = 300.0
    tolerance: float = 0.05

    @property
    def duration(self) -> float:
        return self.scenario.sim.duration

    @property
    def timeline(self) -> tuple[tuple[float, float | None, str], ...]:
        """(start, end, label) of the scripted incidents, for a timeline view (a cache flush
        is instantaneous: end == start)."""
        return tuple((i.at, i.at + (i.duration or 0.0), i.label)
                     for i in self.scenario.sim.incidents)

    def with_scheduler(self, on: bool | None) -> Scenario:
        """The drill's scenario with its scheduler on or off (off: the static baseline; None:
        as the drill file says)."""
        if on is None:
            return self.scenario
        sim = self.scenario.sim
        return replace(self.scenario, sim=replace(sim, scheduler=replace(sim.scheduler,
                                                                         enabled=on)))

    def emulation(self, seed: int | None = None, scheduler: bool | None = None) -> Emulation:
        """A fresh emulation of the drill: incidents scheduled, scheduler on, off or (None) as
        the file says, recorder attached (so `scorecard` works at the end)."""
        emu = Emulation(self.with_scheduler(scheduler), seed=seed)
        self.attach(emu)
        return emu

    def attach(self, emu: Emulation) -> None:
        """Attach the scorecard's recorder to an emulation of `self.scenario` built elsewhere
        (the UI builds its own); the scenario already carries the incidents and scheduler.
        Idempotent."""
        if emu not in _RECORDERS:
            _RECORDERS[emu] = Recorder(emu)

    def scorecard(self, emu: Emulation) -> Scorecard:
        return scorecard(emu, self.expect, self.recovery_window, self.tolerance)

    def run(self, seed: int | None = None, scheduler: bool | None = None) -> dict:
        """Run to the end: the `run --json` object plus `drill` and `scorecard` (no timing)."""
        with self.emulation(seed, scheduler) as emu:
            result = emu.run()
            out = result.to_json()
            out["drill"] = self.name
            out["scorecard"] = self.scorecard(emu).to_dict()
        return out


def drills_dir() -> Path:
    return presets_dir() / "drills"


def list_drills() -> list[tuple[str, str]]:
    """(name, description) of the shipped drills."""
    out = []
    for p in sorted(drills_dir().glob("*.toml")):
        try:
            desc = str(tomllib.loads(p.read_text(encoding="utf-8")).get("description", ""))
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
            desc = f"(unreadable: {exc})"
        out.append((p.stem, desc))
    return out


def load_drill(name_or_path: str | Path) -> Drill:
    """A shipped drill by name, or a drill file by path; PresetError (one line naming the file
    and the key) when it is broken."""
    raw = str(name_or_path)
    p = Path(raw)
    if not (p.suffix == ".toml" or "/" in raw or p.exists()):
        p = drills_dir() / f"{raw}.toml"
        if not p.is_file():
            known = ", ".join(n for n, _ in list_drills())
            raise PresetError(raw, "", f"no drill of that name (shipped: {known})")
    if not p.is_file():
        raise PresetError(p, "", "no such drill file")
    return drill_from_dict(read_toml(p), p)


def drill_from_dict(data: dict, path: Path) -> Drill:
    r = Reader(data, path)
    name = r.get("name", str, path.stem)
    description = r.get("description", str, "")
    ref = r.get("preset", str)
    if Path(ref).suffix == ".toml" or "/" in ref:  # a path, relative to the drill file
        ref = str(path.parent / ref)
    try:
        base = resolve(ref)
        base_data = read_toml(base)
        from_dict(base_data, base)  # a broken base is the base's error, reported as such
    except PresetError as exc:
        raise r.error("preset", f"{ref!r}: {exc}") from None
    overrides = {k: v for k, v in data.items() if k not in DRILL_KEYS}
    merged = merge(base_data, overrides)
    try:
        scenario = from_dict(merged, base)
    except PresetError as exc:  # the base alone was fine: the drill's overrides broke it
        raise PresetError(path, exc.key, exc.message) from None
    if not scenario.sim.incidents:
        raise r.error("incidents", "a drill needs at least one [[incidents]] entry")
    expect = _expect(r.section("expect"))
    score = r.section("score")
    window, tol = 300.0, 0.05
    if score is not None:
        window = score.get("recovery_window", parse_duration, 300.0, check=positive)
        tol = score.get("tolerance", float, 0.05, check=between(0.0, 1.0))
        score.finish()
    r.used.update(overrides)
    r.finish()
    return Drill(name, description, str(path), scenario, expect, window, tol)


def _expect(r: Reader | None) -> dict[str, float]:
    out: dict[str, float] = {"lost": 0}
    if r is None:
        return out
    out["lost"] = r.get("lost", int, 0, check=non_negative)
    for key in EXPECT_MIN + EXPECT_MAX[1:]:
        conv = float if key == "slo_attainment" else parse_duration
        check = between(0.0, 1.0) if key == "slo_attainment" else non_negative
        if (value := r.get(key, conv, None, check=check)) is not None:
            out[key] = value
    r.finish()
    return out


def merge(base: dict, over: dict) -> dict:
    """A preset's TOML with `over` laid on top: tables merge key by key; anything else
    (values, arrays of tables such as [[incidents]]) replaces."""
    out = dict(base)
    for k, v in over.items():
        out[k] = merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


# -- recording ---------------------------------------------------------------------------------
class Recorder:
    """What a scorecard needs beyond the run's totals, in bounded memory: arrivals and
    completions every `interval` s (for recovery), peak windowed TTFT P90 and queues, and the
    TTFT of each request that arrived while an incident was active."""

    MAX_ROWS = 100_000
    MAX_DURING = 200_000

    def __init__(self, emu: Emulation, interval: float = 5.0):
        self.emu = emu
        self.interval = interval
        self.rows: deque[tuple[float, int, int, int]] = deque(maxlen=self.MAX_ROWS)
        self.peak_ttft_p90 = math.nan
        self.peak_queue = dict.fromkeys(STAGES, 0)
        self.during: list[float] = []  # TTFT of requests that arrived during an incident
        self.episodes: list[list] = []  # [first rid, last rid or None, end time or None]
        self._depth = 0
        self._row()
        emu.on_done(self._done)
        emu.timeline.listen(self._incident)
        for act in emu.timeline.active:  # already running when attached
            self._incident(act, True)
        emu.loop.call_at_quiet(emu.now + interval, self._tick)

    def _row(self) -> None:
        emu = self.emu
        self.rows.append((emu.now, emu.arrived, emu.completed, sum(emu.rejected.values())))

    def _tick(self) -> None:
        emu = self.emu
        self._row()
        ttft = emu.latencies.recent(emu.now)[0][1]
        if not math.isnan(ttft) and not ttft <= self.peak_ttft_p90:
            self.peak_ttft_p90 = ttft
        for name, st in emu.stages.items():
            self.peak_queue[name] = max(self.peak_queue[name], len(st.queue))
        emu.loop.call_at_quiet(emu.now + self.interval, self._tick)

    def _incident(self, act: Active, started: bool) -> None:
        if started:
            self._depth += 1
            if self._depth == 1:
                self.episodes.append([self.emu.arrived + 1, None, None])
        else:
            self._depth -= 1
            if self._depth == 0:
                self.episodes[-1][1:] = [self.emu.arrived, self.emu.now]

    def _done(self, req: Request, now: float) -> None:
        if self.episodes and len(self.during) < self.MAX_DURING:
            for first, last, _ in reversed(self.episodes):
                if req.rid >= first and (last is None or req.rid <= last):
                    self.during.append(req.t_first - req.arrival)
                    break
                if last is not None and req.rid > last:
                    break

    def arrived_during(self) -> int:
        return sum((self.emu.arrived if last is None else last) - first + 1
                   for first, last, _ in self.episodes)


# -- scoring -----------------------------------------------------------------------------------
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

    @property
    def passed(self) -> bool:
        return all(e["ok"] for e in self.expectations.values())

    def to_dict(self) -> dict[str, Any]:
        return {"lost": self.lost, "slo_attainment": self.slo_attainment,
                "peak_ttft_p90": self.peak_ttft_p90, "ttft_p90_during": self.ttft_p90_during,
                "unfinished_during": self.unfinished_during,
                "recovery_seconds": self.recovery_seconds, "peak_queue": self.peak_queue,
                "conversions": self.conversions, "decisions": self.decisions,
                "expectations": self.expectations, "passed": self.passed}


def scorecard(emu: Emulation, expect: dict[str, float] | None = None,
              recovery_window: float = 300.0, tolerance: float = 0.05) -> Scorecard:
    """The scorecard of an emulation now (normally at its end). Without a recorder (attach
    one with `Drill.attach` before running) the per-incident figures are None."""
    rec = _RECORDERS.get(emu)
    acc = emu.accounting
    during, unfinished, recovery, peak, queues = None, 0, None, None, dict.fromkeys(STAGES, 0)
    if rec is not None:
        rec._row()
        values = list(rec.during)
        unfinished = max(0, rec.arrived_during() - len(values))
        if unfinished:  # they arrived before their episode ended: waited at least this long
            last_end = max((e for *_, e in rec.episodes if e is not None), default=emu.now)
            values += [emu.now - last_end] * unfinished
        during = float(np.percentile(values, 90)) if values else None
        ends = [e for *_, e in rec.episodes]
        recovery = recovery_time(list(rec.rows), ends, recovery_window, tolerance)
        peak, queues = _num(rec.peak_ttft_p90), dict(rec.peak_queue)
    sched = emu.scheduler
    card = dict(lost=acc.lost_total, slo_attainment=emu.latencies.attainment(),
                peak_ttft_p90=peak, ttft_p90_during=during, unfinished_during=unfinished,
                recovery_seconds=recovery, peak_queue=queues,
                decisions=[str(d) for d in sched.log] if sched else [],
                conversions=sched.conversions if sched else 0)
    checks = {}
    for key, bar in (expect or {}).items():
        value = card[key]
        if key in EXPECT_MIN:
            ok = value is not None and value >= bar
        else:
            ok = value is not None and value <= bar
        checks[key] = {"bar": bar, "value": value, "ok": ok}
    return Scorecard(**card, expectations=checks)


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
