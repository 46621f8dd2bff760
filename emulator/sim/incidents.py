"""Incidents: timed disturbances of a running emulation (link brownout, outage, flap, diurnal
swing, instance loss, traffic surge, length-mix shift, cache flush).

An incident is a frozen description (`Incident` subclasses, parsed from `[[incidents]]` in a
preset or drill, or built by the UI) that the emulation's `Timeline` starts and stops. Incidents
compose instead of overwriting each other: the link delivers B_out times the product of the
active link factors, the offered rate is multiplied by every active surge, the newest active
length shift wins, and every instance loss restores exactly the machines it failed. Starting
or ending one never drops a request: lost instances hand their work back to the engine (a prefill
restarts on a surviving instance, a decode batch is prefilled again), a dead link only stalls
its flows. Active incidents are `emu.incidents` (label -> since), hence `Snapshot.incidents`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

import numpy as np

from emulator.distributions import LengthDistribution
from emulator.model import STAGES
from emulator.scenario.lengths import parse_lengths
from emulator.scenario.reader import Reader, non_negative, one_of, positive
from emulator.sim.workload import TraceSource
from emulator.units import format_tokens, parse_duration, parse_tokens

if TYPE_CHECKING:
    from emulator.sim.engine import Emulation


# -- the incidents -----------------------------------------------------------------------------
@dataclass(frozen=True)
class Incident:
    """Starts at `at` (simulated seconds; None = when injected) and lasts `duration` seconds
    (None = until ended by hand)."""

    at: float | None = None
    duration: float | None = None
    kind: ClassVar[str] = ""
    describe: ClassVar[str] = ""

    @property
    def label(self) -> str:
        return self.kind

    def apply(self, emu: Emulation) -> Active:
        """Start this incident on `emu` now (or at `at` if that is later); see Timeline.inject."""
        return emu.timeline.inject(self)

    # the Timeline calls these; `act` holds per-run state
    def start(self, emu: Emulation, act: Active) -> None:
        raise NotImplementedError

    def stop(self, emu: Emulation, act: Active) -> None:
        pass


@dataclass(frozen=True)
class Brownout(Incident):
    factor: float = 0.2  # share of B_out the link still delivers
    kind: ClassVar[str] = "brownout"
    describe: ClassVar[str] = "the link delivers factor x B_out"

    @property
    def label(self) -> str:
        return f"link brownout to {self.factor:.0%}"

    def start(self, emu, act):
        act.timeline.set_link(act, self.factor)

    def stop(self, emu, act):
        act.timeline.set_link(act, None)


@dataclass(frozen=True)
class Outage(Incident):
    kind: ClassVar[str] = "outage"
    describe: ClassVar[str] = "the link delivers nothing (flows stall, nothing is dropped)"

    @property
    def label(self) -> str:
        return "link outage"

    def start(self, emu, act):
        act.timeline.set_link(act, 0.0)

    def stop(self, emu, act):
        act.timeline.set_link(act, None)


@dataclass(frozen=True)
class Flap(Incident):
    """The link goes down for `down` seconds, up for `up` seconds, repeatedly."""

    down: float = 10.0
    up: float = 20.0
    kind: ClassVar[str] = "flap"
    describe: ClassVar[str] = "the link goes down and up repeatedly"

    @property
    def label(self) -> str:
        return f"link flap ({self.down:g} s down / {self.up:g} s up)"

    def start(self, emu, act):
        def toggle(down: bool) -> None:
            act.timeline.set_link(act, 0.0 if down else None)
            act.timer = emu.loop.call_at(emu.now + (self.down if down else self.up),
                                         toggle, not down)
        toggle(True)

    def stop(self, emu, act):
        act.cancel_timer()
        act.timeline.set_link(act, None)


@dataclass(frozen=True)
class Diurnal(Incident):
    """Link capacity follows a cosine between 1 and `low` x B_out over `period` seconds (a
    compressed day of a shared VPC link), updated every `step` seconds."""

    low: float = 0.3
    period: float = 1200.0
    step: float = 30.0
    kind: ClassVar[str] = "diurnal"
    describe: ClassVar[str] = "link capacity swings between B_out and low x B_out"

    @property
    def label(self) -> str:
        return f"diurnal link swing to {self.low:.0%} (period {self.period:g} s)"

    def factor_at(self, elapsed: float) -> float:
        return 1.0 - (1.0 - self.low) * (1.0 - math.cos(2 * math.pi * elapsed / self.period)) / 2

    def start(self, emu, act):
        t0 = emu.now

        def tick() -> None:
            act.timeline.set_link(act, self.factor_at(emu.now - t0))
            act.timer = emu.loop.call_at(emu.now + self.step, tick)
        tick()

    def stop(self, emu, act):
        act.cancel_timer()
        act.timeline.set_link(act, None)


@dataclass(frozen=True)
class InstanceLoss(Incident):
    """`count` instances of `stage` die (the highest-numbered live ones) and come back at the
    end. PrfaaS / PD-P: the prefill in service restarts from the head of the stage's queue and
    the queue waits for the survivors (or the recovery). PD-D: the batch lost its KV; those
    requests go back through the router and are prefilled and decoded again (their TTFT counts
    from the original arrival). Nothing is dropped either way."""

    stage: str = "prfaas"
    count: int = 1
    kind: ClassVar[str] = "instance-loss"
    describe: ClassVar[str] = "instances of a stage die and later recover"

    @property
    def label(self) -> str:
        return f"{self.count} {self.stage} instance{'s' if self.count != 1 else ''} lost"

    def start(self, emu, act):
        pool = emu.remote if self.stage == "prfaas" else emu.local
        alive = [m for m in pool.machines if m.alive and m.target == self.stage]
        act.machines = [m.idx for m in alive[::-1][: self.count]]
        for idx in act.machines:
            pool.fail(idx)

    def stop(self, emu, act):
        pool = emu.remote if self.stage == "prfaas" else emu.local
        for idx in act.machines:
            pool.restore(idx)


@dataclass(frozen=True)
class Surge(Incident):
    """The offered rate x `factor`; or, with `long_factor`, only requests longer than `cut`
    tokens (default: the preset's threshold) arrive `long_factor` times as often (re-weighting
    the preset's length mix; the newest active length change wins)."""

    factor: float | None = None
    long_factor: float | None = None
    cut: float | None = None
    kind: ClassVar[str] = "surge"
    describe: ClassVar[str] = "traffic surge: offered rate x factor (or long requests only)"

    @property
    def label(self) -> str:
        if self.long_factor is not None:
            return f"{self.long_factor:g}x long-request surge"
        return f"{self.factor:g}x traffic surge"

    def start(self, emu, act):
        if self.long_factor is None:
            act.timeline.set_rate(act, self.factor)
            return
        shifted = _long_mix(emu, act, self.cut, self.long_factor)
        act.timeline.set_lengths(act, shifted)
        act.timeline.set_rate(act, shifted.mass)  # short requests keep their rate

    def stop(self, emu, act):
        act.timeline.set_rate(act, None)
        act.timeline.set_lengths(act, None)


@dataclass(frozen=True)
class LengthShift(Incident):
    """New requests draw from another length mix at the same rate: the preset's mix with the
    odds of being longer than `cut` x `long_factor`, or a whole new distribution (`lengths`)."""

    long_factor: float | None = None
    cut: float | None = None
    lengths: LengthDistribution | None = field(default=None, compare=False)
    kind: ClassVar[str] = "length-shift"
    describe: ClassVar[str] = "length-mix shift at the same rate"

    @property
    def label(self) -> str:
        if self.lengths is not None:
            return f"length mix -> {self.lengths.describe()}"
        return f"long share odds x{self.long_factor:g}"

    def start(self, emu, act):
        if self.lengths is not None:
            act.timeline.set_lengths(act, self.lengths)
        else:
            act.timeline.set_lengths(act, _long_mix(emu, act, self.cut, self.long_factor))

    def stop(self, emu, act):
        act.timeline.set_lengths(act, None)


def _long_mix(emu: Emulation, act: Active, cut: float | None, factor: float) -> Reweighted:
    """The preset's mix with the odds above `cut` (default: the threshold) x `factor`."""
    return Reweighted.of(act.timeline.base_lengths, emu.scenario.t if cut is None else cut, factor)


@dataclass(frozen=True)
class CacheFlush(Incident):
    """The prefix cache of `cluster` ("prfaas", "pd"; None: both) is emptied at once
    (`emu.flush_cache`; counted even without a [cache])."""

    cluster: str | None = None
    kind: ClassVar[str] = "cache-flush"
    describe: ClassVar[str] = "empty the prefix caches"

    @property
    def label(self) -> str:
        return f"prefix-cache flush ({self.cluster or 'both clusters'})"

    def start(self, emu, act):
        emu.flush_cache(self.cluster)


KINDS: dict[str, type[Incident]] = {c.kind: c for c in (
    Brownout, Outage, Flap, Diurnal, InstanceLoss, Surge, LengthShift, CacheFlush)}


def catalog() -> list[tuple[str, str, Incident]]:
    """(kind, description, a ready-made open-ended incident) for a UI's injection menu; end a
    hand-made one with `Active.end()` or `emu.timeline.end(label)`."""
    ready = [Brownout(factor=0.2), Outage(), Flap(), Diurnal(), InstanceLoss(stage="prfaas", count=1),
             InstanceLoss(stage="pd-d", count=1), Surge(factor=1.5), Surge(long_factor=3.0),
             LengthShift(long_factor=3.0), CacheFlush()]
    return [(i.label, i.describe, i) for i in ready]


# -- a length mix with the long side re-weighted -----------------------------------------------
@dataclass(frozen=True, eq=False)
class Reweighted(LengthDistribution):
    """`base` with the probability mass above `cut` multiplied by `factor`, renormalized: the
    odds of a long request x factor, the shape on each side unchanged."""

    base: LengthDistribution
    cut: float
    factor: float
    kind: str = field(default="reweighted", init=False)

    @classmethod
    def of(cls, base: LengthDistribution, cut: float, factor: float) -> Reweighted:
        out = cls(base, float(cut), float(factor))
        if not 0 < out.p < 1:
            raise ValueError(f"nothing to re-weight: P(L > {cut:.0f}) = {out.p:.3g}")
        return out

    @cached_property
    def p(self) -> float:
        """P(L > cut) of the base."""
        return float(self.base.p_above(self.cut))

    @property
    def mass(self) -> float:
        """(1 - p) + factor x p: the base's mass after re-weighting, before renormalizing (the
        rate multiplier that keeps requests below `cut` at their rate)."""
        return (1 - self.p) + self.factor * self.p

    @property
    def _weights(self) -> tuple[float, float]:
        """(weight below, weight above)."""
        z = self.mass
        return 1 / z, self.factor / z

    def partial_moments(self, a, b):
        a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
        c = self.cut
        w_lo, w_hi = self._weights
        lo = self.base.partial_moments(np.minimum(a, c), np.minimum(b, c))
        hi = self.base.partial_moments(np.maximum(a, c), np.maximum(b, c))
        return tuple(w_lo * x + w_hi * y for x, y in zip(lo, hi, strict=True))

    def sample(self, rng, n):
        above = rng.random(n) < self._weights[1] * self.p
        out = np.empty(n)
        for side in (True, False):
            want = int(np.count_nonzero(above == side))
            got, have = [np.empty(0)], 0
            while have < want:  # rejection from the base, one side at a time
                x = np.asarray(self.base.sample(rng, max(64, 2 * (want - have))), dtype=float)
                got.append(x[(x > self.cut) == side])
                have += len(got[-1])
            out[above == side] = np.concatenate(got)[:want]
        return out

    def threshold_grid(self):
        return self.base.threshold_grid()

    @property
    def support(self):
        return self.base.support

    def describe(self):
        return f"{self.base.describe()}, odds above {format_tokens(self.cut)} x{self.factor:g}"


# -- the timeline: scheduling, composition, what is active --------------------------------------
class Active:
    """One started incident: its label in `emu.incidents`, its timers and what it changed."""

    def __init__(self, timeline: Timeline, incident: Incident, label: str, window: list):
        self.timeline = timeline
        self.incident = incident
        self.label = label
        self.window = window  # [start, end or None, label], shared with Timeline.planned
        self.start = window[0]
        self.timer = None  # flap / diurnal ticks
        self.stop_timer = None
        self.machines: list[int] = []  # instance loss: the machines it failed
        self.over = False

    def cancel_timer(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None

    def end(self) -> None:
        """End it now (hand-made incidents; scripted ones end on their own)."""
        self.timeline.finish(self)


class Timeline:
    """The incidents of one emulation: scripted ones scheduled at construction, injected ones
    started live. Windows (start, end) are kept for scorecards and the UI's timeline view."""

    def __init__(self, emu: Emulation, scripted: tuple[Incident, ...] = ()):
        self.emu = emu
        self.base_lengths = emu.scenario.system.lengths
        self._link: dict[int, float] = {}  # id(active) -> link factor
        self._rate: dict[int, float] = {}
        self._lengths: dict[int, LengthDistribution] = {}
        self.active: list[Active] = []
        self.planned: list[list] = []  # [start, end or None, label] per incident
        self._listeners: list[Callable[[Active, bool], None]] = []
        for inc in scripted:
            self.inject(inc)

    # -- public ----------------------------------------------------------------------------
    def inject(self, incident: Incident) -> Active | None:
        """Start `incident` at max(now, incident.at) for `incident.duration` seconds (None:
        until `Active.end()`). Returns the handle once started, None if it starts later."""
        emu = self.emu
        if not isinstance(incident, Incident):
            raise TypeError(f"not an incident: {incident!r}")
        _check_fits(incident, emu)
        at = emu.now if incident.at is None else max(emu.now, incident.at)
        window = [at, None if incident.duration is None else at + incident.duration,
                  incident.label]
        self.planned.append(window)
        if at > emu.now:
            emu.loop.call_at(at, self._start, incident, window)
            return None
        return self._start(incident, window)

    def listen(self, fn: Callable[[Active, bool], None]) -> None:
        """Call fn(active, started) whenever a lasting incident (any but a cache flush) starts
        or ends."""
        self._listeners.append(fn)

    def end(self, label: str) -> None:
        """End the active incident with this label (KeyError if none)."""
        for act in self.active:
            if act.label == label:
                self.finish(act)
                return
        raise KeyError(label)

    def windows(self) -> list[tuple[float, float | None, str]]:
        """(start, end, label) of every incident planned so far (end None: open): the UI's
        timeline."""
        return [(s, e, lbl) for s, e, lbl in self.planned]

    def lengths_now(self) -> LengthDistribution:
        return next(reversed(self._lengths.values())) if self._lengths else self.base_lengths

    # -- composition (incidents call these) --------------------------------------------------
    def set_link(self, act: Active, factor: float | None) -> None:
        self._set(self._link, act, factor)
        self.emu.set_link_factor(math.prod(self._link.values()))

    def set_rate(self, act: Active, factor: float | None) -> None:
        self._set(self._rate, act, factor)
        self.emu.set_rate_multiplier(math.prod(self._rate.values()))

    def set_lengths(self, act: Active, dist: LengthDistribution | None) -> None:
        self._set(self._lengths, act, dist)
        self.emu.set_length_distribution(self.lengths_now())

    @staticmethod
    def _set(table: dict, act: Active, value) -> None:
        if value is None:
            table.pop(id(act), None)
        else:
            table[id(act)] = value

    # -- lifecycle ---------------------------------------------------------------------------
    def _start(self, incident: Incident, window: list) -> Active:
        emu = self.emu
        at = window[0]
        label = incident.label
        n = 2
        while label in emu.incidents:
            label, n = f"{incident.label} #{n}", n + 1
        window[2] = label
        act = Active(self, incident, label, window)
        incident.start(emu, act)
        if isinstance(incident, CacheFlush):  # instantaneous
            window[1], act.over = at, True
            emu.note(f"incident: {label}")
            return act
        self.active.append(act)
        emu.incidents[label] = at
        emu.note(f"incident: {label}")
        if incident.duration is not None:
            act.stop_timer = emu.loop.call_at(at + incident.duration, self.finish, act)
        for fn in self._listeners:
            fn(act, True)
        return act

    def finish(self, act: Active) -> None:
        if act.over:
            return
        emu = self.emu
        act.over = True
        if act.stop_timer is not None and emu.now < act.stop_timer.when():
            act.stop_timer.cancel()
        act.incident.stop(emu, act)
        act.window[1] = emu.now
        self.active.remove(act)
        emu.incidents.pop(act.label, None)
        emu.note(f"incident over: {act.label}")
        for fn in self._listeners:
            fn(act, False)


def _check_fits(incident: Incident, emu: Emulation) -> None:
    """ValueError with a one-line reason when the incident cannot run on this emulation."""
    if isinstance(emu.workload.source, TraceSource) and (
            isinstance(incident, LengthShift)
            or (isinstance(incident, Surge) and incident.long_factor is not None)):
        raise ValueError(f"{incident.kind}: a replayed trace brings its own lengths")
    if isinstance(incident, InstanceLoss) and incident.stage not in STAGES:
        raise ValueError(f"instance-loss: stage must be one of {', '.join(STAGES)}")


# -- parsing [[incidents]] -------------------------------------------------------------------------
def parse_incidents(items: list[Reader], base_dir: Path) -> tuple[Incident, ...]:
    """The `[[incidents]]` array of a preset or drill, strictly: every bad key is one line."""
    out = []
    for r in items:
        kind = r.get("kind", str, check=one_of(*KINDS))
        kw: dict = {"at": r.get("at", parse_duration, check=non_negative)}
        if kind != "cache-flush":
            kw["duration"] = r.get("duration", parse_duration, check=positive)
        if kind == "brownout":
            kw["factor"] = r.get("factor", float, check=_below_one)
        elif kind == "flap":
            kw["down"] = r.get("down", parse_duration, 10.0, check=positive)
            kw["up"] = r.get("up", parse_duration, 20.0, check=positive)
        elif kind == "diurnal":
            kw["low"] = r.get("low", float, 0.3, check=_below_one)
            kw["period"] = r.get("period", parse_duration, 1200.0, check=positive)
            kw["step"] = r.get("step", parse_duration, 30.0, check=positive)
        elif kind == "instance-loss":
            kw["stage"] = r.get("stage", str, "prfaas", check=one_of(*STAGES))
            kw["count"] = r.get("count", int, 1, check=positive)
        elif kind == "cache-flush":
            kw["cluster"] = r.get("cluster", str, None, check=one_of("prfaas", "pd"))
        elif kind in ("surge", "length-shift"):
            _mix(r, kind, kw, base_dir)
        r.finish()
        out.append(KINDS[kind](**kw))
    return tuple(out)


def _below_one(x: float) -> str | None:
    return None if 0 <= x < 1 else "must be in [0, 1) (a share of B_out)"


def _mix(r: Reader, kind: str, kw: dict, base_dir: Path) -> None:
    """surge: factor | long_factor (+ cut); length-shift: long_factor (+ cut) | lengths."""
    other = "factor" if kind == "surge" else "lengths"
    if r.has(other) == r.has("long_factor"):
        raise r.error("long_factor", f"give exactly one of {other} or long_factor")
    if r.has("long_factor"):
        kw["long_factor"] = r.get("long_factor", float, check=positive)
        kw["cut"] = r.get("cut", parse_tokens, None, check=positive)
    elif kind == "surge":
        kw["factor"] = r.get("factor", float, check=positive)
    else:
        kw["lengths"] = parse_lengths(r.section("lengths", required=True), base_dir)
