"""The thread that drives the emulator: the one place the UI touches `emulator.sim`.

One `Driver` owns one emulation and one thread, and every call into the emulation happens on
that thread (its event loop must not meet Textual's). The UI holds the driver only as
`Emulator`, the typed protocol of what sessions, forks and screens may ask of it, and never the
emulation itself (an import-linter contract keeps `emulator.sim` out of every other UI
module; mypy checks this module strictly). A single pair and a topology run on the same driver; a topology's snapshots also carry
its live state (`LIVE_KEY`) and each region's site policy. Two ways to run it:

- live: virtual time paced to the wall clock through the engine's `Pacer` (speed x wall time
  per slice, or flat out), coalescing `Tick`s posted to the UI at about 10 Hz;
- synchronous (`live=False`): nothing moves unless asked; `run_to`, `step` and every change block
  until done and return the new `Tick`. Deterministic, for snapshots and tests.

Changes queue and apply between slices, so a keypress never waits for a slice. Every change
that alters the emulated system (settings, incidents, pins, the scheduler switch, a topology
element's knobs) is a `Change`,
data rather than a callable, and the driver logs each one with the simulated time it took
effect (`Driver.log`): the same scenario and seed with the log replayed runs the same run again
(a what-if fork, `prfaas_tui.fork`). Pausing, stepping and the pace are not changes: they move
the clock, not the system.
"""

from __future__ import annotations

import math
import queue
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, fields, replace
from typing import TYPE_CHECKING, Protocol, TypeVar, cast

from prfaas_tui.modelview import Settings

if TYPE_CHECKING:
    from emulator.scenario.drill import Drill
    from emulator.scenario.incidents import Incident
    from emulator.sim.books.snapshot import LiveKnobs as LiveKnobs  # the UI's types, re-exported
    from emulator.sim.books.snapshot import Snapshot as Snapshot
    from emulator.sim.books.timeline import Active
    from emulator.sim.engine import Emulation
    from emulator.sim.runs.pacer import Pacer
    from emulator.sim.runs.record import Recorder
    from emulator.topology.spec import Topology

TICK_S = 0.05  # wall seconds per paced slice
POST_S = 0.1  # wall seconds between ticks posted to the UI
MAX_SLICE_S = 0.25  # a late slice catches up at most this much wall time (no spiral)
HISTORY = 720  # snapshots kept for the plots
YIELD_SHARE = 0.5  # after a slice, sleep this share of its cost (the emulator gets <= 2/3 CPU)
FLAT_OUT_SLICE_S = 0.02  # wall seconds one flat-out slice aims to cost
STEP_SAMPLES = 30  # snapshots recorded along one single step, for the plots
BUSY_SLICE_S = 0.005  # a slice costlier than this makes the emulator yield to keypresses
LIVE_KEY = "live_state"  # a topology snapshot's entry that carries its LiveState
POLICIES_KEY = "policies"  # ... and each region's site policy by name

T = TypeVar("T")


@dataclass(frozen=True)
class Tick:
    """What the emulator looked like at one moment: immutable, safe to share across threads."""

    snapshot: Snapshot
    history: tuple[Snapshot, ...]  # earlier snapshots, oldest first (ends with `snapshot`)
    paused: bool
    speed: float
    rtf: float | None  # simulated seconds per wall second; None when not paced by the wall clock
    generation: int = 0  # which emulation produced it (a preset load starts a new one)
    applied: int = 0  # how many of the UI's setting changes the emulation has taken so far


def make_emulation(settings: Settings, *, seed: int | None = None,
                   split: tuple[int, int] | None = None) -> Emulation:
    """An Emulation at the settings (the engine's, by the API contract). A single pair runs at
    the settings' rate and paradigm, `split` pinning the starting N_p/N_d whatever the
    paradigm (a plan candidate: the homogeneous paradigm otherwise starts at its own best
    split); a topology runs its preset, with its routing bound (lp routing, --load)."""
    from emulator.sim.engine import Emulation
    from emulator.sim.runtime.topology import topology_bound

    sc = settings.scenario
    if sc.declared_topology is not None:
        return Emulation(sc, seed=seed, bound=topology_bound(sc))
    n_p, n_d = split if split is not None else (None, None)
    return Emulation(sc, seed=seed, rate=settings.rate, paradigm=settings.paradigm,
                     n_p=n_p, n_d=n_d)


def snapshot_of(emu: Emulation) -> Snapshot:
    """The emulation's snapshot; a topology's also carries its live state and each region's
    site policy (read on the emulator thread, so a tick is one consistent instant)."""
    snap = emu.snapshot()
    if emu.topology is None or snap.topology is None:
        return snap
    from emulator.sim.runtime.topology_live import live_state, region_routing

    policies = {r: region_routing(emu, r) for r in emu.topology.regions}
    return replace(snap, topology={**snap.topology, LIVE_KEY: live_state(emu),
                                   POLICIES_KEY: policies})


def apply_controls(emu: Emulation, new: Settings, asked: tuple[str, ...] | None = None) -> None:
    """Take a running emulation to the `new` settings: the one place the UI changes an
    emulation's knobs; the engine computes the diff (`Emulation.apply`). The settings hold the
    operator's PrfaaS-PD split whatever the paradigm; a paradigm that runs its own split
    (homogeneous, naive) gets the split the engine runs now, so that a switch to it deploys
    its own (the engine's rule for a paradigm switch alone) and it keeps that one while in
    force. (Sending the operator's split on a switch from homogeneous to naive asked for
    naive with PD-P instances: refused, and the homogeneous deployment stayed on screen.)
    A topology's knobs are its elements' (`ElementChange`): its settings carry the pace and
    the total offered rate (each region offered its share).

    `asked`: the knobs the operator changed (Controls field names); only those move, the rest
    stay as the emulation runs them now. The UI's settings may lag the emulation (a scheduler
    move after the last tick it took), so sending them whole would undo that move as a change
    nobody made (a speed key resetting t to the UI's stale value). None: every knob."""
    if emu.topology is not None:
        if asked and "rate" in asked and new.rate != emu.topology.rate:
            emu.topology.set_rate(new.rate)  # each region its share
            emu.note(f"offered rate -> {new.rate:.3f} req/s")
        return
    sc = new.scenario
    if sc.transport is not None:  # its loss, connections
        emu.set_transport(sc.line_bandwidth if sc.line_bandwidth is not None
                          else sc.system.bandwidth, sc.transport)
    if new.tpot is not None and new.tpot != emu.tpot():
        emu.set_tpot(new.tpot)
    target, now = new.controls, emu.controls
    if asked is not None:
        if {"n_p", "n_d"} & set(asked):  # a split is one knob: checked whole by the caller
            asked = (*asked, "n_p", "n_d")
        knobs = {f.name for f in fields(now)}  # tpot is not one: it was set above
        target = replace(now, **{k: getattr(target, k) for k in asked if k in knobs})
    if not target.paradigm.threshold_routing:
        target = replace(target, n_p=now.n_p, n_d=now.n_d)
    emu.apply(target)


ELEMENT_KINDS = ("region", "site", "link")


@dataclass(frozen=True)
class ElementChange:
    """One topology element's knobs, None where unchanged: a region's threshold t (tokens),
    split N_p/N_d, site policy and (threshold policy) the share of its long requests per site;
    a site's prefill instances; a link's bandwidth knob (bytes/s, "site->region") and its TCP's
    loss and connections."""

    kind: str  # "region", "site" or "link"
    name: str
    t: float | None = None
    n_p: int | None = None
    n_d: int | None = None
    routing: str | None = None
    shares: tuple[tuple[str, float], ...] | None = None
    instances: int | None = None
    bandwidth: float | None = None
    loss: float | None = None  # a link's TCP: its goodput is recomputed under them
    connections: int | None = None
    tpot: float | None = None  # a region's TPOT SLO (its decode from the cards; the pair's "pd")

    @classmethod
    def of(cls, kind: str, name: str, knobs: Mapping[str, object]) -> ElementChange:
        """From {knob: value} (a dialog's parse): KnobError, one line, for a knob the element
        does not have."""
        from emulator.scenario.knobs import KnobError

        own = {"region": {"t", "n_p", "n_d", "routing", "shares", "tpot"}, "site": {"instances"},
               "link": {"bandwidth", "loss", "connections"}}
        if kind not in own:
            raise KnobError("element", f"no such element kind {kind!r}")
        if unknown := set(knobs) - own[kind]:
            raise KnobError(sorted(unknown)[0], f"a {kind} has no knob {sorted(unknown)[0]!r}")
        values = dict(knobs)
        if isinstance(shares := values.get("shares"), dict):
            values["shares"] = tuple(sorted(shares.items()))
        return cls(kind, name, **values)  # type: ignore[arg-type]

    def knobs(self) -> dict[str, object]:
        """The knobs it sets, {name: value}."""
        return {f.name: getattr(self, f.name) for f in fields(self)
                if f.name not in ("kind", "name") and getattr(self, f.name) is not None}


def _share_map(shares: tuple[tuple[str, float], ...] | None) -> dict[str, float] | None:
    return None if shares is None else dict(shares)


def running_spec(emu: Emulation) -> Topology:
    """The topology's spec at its knobs now (what the knob checks see)."""
    from emulator.sim.runtime.topology_live import running_spec as spec

    return spec(emu)


def check_element(emu: Emulation, change: ElementChange) -> None:
    """KnobError (one line) unless the change could run now: the knob registry's check on the
    running spec (`emulator.scenario.knobs.check_element`), the one the engine makes when it
    takes it."""
    from emulator.scenario.knobs import KnobError, best_cache_problem
    from emulator.scenario.knobs import check_element as check

    knobs = {k: v for k, v in change.knobs().items() if k not in ("shares", "tpot")}
    if change.tpot is not None:  # its own check: the region's decode step derives it
        from emulator.scenario.decode import retimed

        if change.name not in emu.regions:
            raise KnobError("tpot", f"no region {change.name!r}")
        retimed(emu.regions[change.name].pdd.step, change.tpot,
                None if emu.topology is None else f"region {change.name}")
        if not knobs:
            return
    check(running_spec(emu), change.kind, change.name, has_bound=emu.bound is not None,
          cache_problem=best_cache_problem(emu.scenario.sim), **knobs)


def set_element(emu: Emulation, change: ElementChange) -> None:
    """Turn one element's knobs on the running topology now (the engine checks and notes it)."""
    from emulator.sim.runtime import topology_live as tl

    if change.tpot is not None:
        emu.set_tpot(change.tpot, change.name)
        if not replace(change, tpot=None).knobs():
            return
    if change.kind == "region":
        tl.set_region(emu, change.name, t=change.t, n_p=change.n_p, n_d=change.n_d,
                      routing=change.routing, shares=_share_map(change.shares))
    elif change.kind == "site":
        assert change.instances is not None
        tl.set_site(emu, change.name, change.instances)
    elif change.kind == "link":
        tl.set_link(emu, change.name, change.bandwidth, change.loss, change.connections)
    else:
        raise ValueError(f"unknown element kind {change.kind!r}")


def make_pacer(emu: Emulation, speed: float) -> Pacer:
    from emulator.sim.runs.pacer import Pacer

    return Pacer(emu, speed=speed if math.isfinite(speed) else 1.0)


@dataclass(frozen=True)
class Change:
    """One change to the emulated system, as data (replayable, unlike a callable).

    kind and value: "settings" (the whole new `Settings`), "incident" (an incident built by
    hand, a catalog label, or END_ALL), "end" (the index of a hand-made incident, as
    `Driver.hand_incidents`), "pin" ((knob, pinned)), "release" (None: every pin), "scheduler"
    (on: bool), "element" (an `ElementChange`: a topology region's, site's or link's knobs)."""

    kind: str
    value: Settings | Incident | str | int | tuple[str, bool] | ElementChange | None = None
    asked: tuple[str, ...] | None = None  # "settings": the knobs changed (apply_controls)


@dataclass(frozen=True)
class Logged:
    """A change and the simulated time the emulation took it."""

    at: float
    change: Change


@dataclass
class _Call:
    fn: Callable[[Emulation], object]
    done: threading.Event | None = None
    result: object = None
    error: BaseException | None = None


@dataclass
class _Rate:
    """Simulated seconds per wall second over about the last second."""

    points: deque[tuple[float, float]] = field(default_factory=lambda: deque(maxlen=32))

    def add(self, wall: float, sim: float) -> float:
        self.points.append((wall, sim))
        while len(self.points) > 2 and wall - self.points[0][0] > 1.0:
            self.points.popleft()
        (w0, s0), (w1, s1) = self.points[0], self.points[-1]
        return (s1 - s0) / (w1 - w0) if w1 > w0 else 0.0


class Factory(Protocol):
    """What builds a driver's emulation (`make_emulation`, or it with a split pinned)."""

    def __call__(self, settings: Settings, *, seed: int | None = None) -> Emulation: ...


class Emulator(Protocol):
    """What the UI may ask of a running emulation: the driver seam. Sessions, forks and
    screens hold one of these (a `Driver`), never the emulation itself."""

    live: bool
    led: bool
    paused: bool
    generation: int
    stop_at: float | None

    @property
    def initial(self) -> Settings: ...
    @property
    def sent(self) -> int: ...
    def start(self) -> None: ...
    def stop(self) -> None: ...
    def hold(self, seconds: float = 0.1) -> None: ...
    def current(self) -> Tick: ...
    def run_to(self, sim_time: float, samples: int = 240) -> Tick: ...
    def pause(self, paused: bool | None = None) -> Tick | None: ...
    def step(self, seconds: float) -> Tick | None: ...
    def apply(self, new: Settings, asked: tuple[str, ...] | None = None) -> Tick | None: ...
    def change(self, change: Change) -> Tick | None: ...
    def inject(self, incident: Incident | str) -> Tick | None: ...
    def hand_incidents(self) -> list[tuple[int, str]]: ...
    def end_incident(self, index: int) -> Tick | None: ...
    def pin(self, knob: str, pinned: bool = True) -> Tick | None: ...
    def release_pins(self) -> Tick | None: ...
    def set_scheduler(self, on: bool) -> Tick | None: ...
    def set_element(self, change: ElementChange) -> Tick | None: ...
    def check_element(self, change: ElementChange) -> None: ...
    def running_spec(self) -> Topology: ...
    def decisions(self) -> tuple[str, ...]: ...
    def warnings(self) -> list[str]: ...
    def scorecard(self, drill: Drill) -> dict[str, object]: ...
    def origin(self) -> tuple[float, tuple[Logged, ...], tuple[Snapshot, ...]]: ...
    def follow(self, times: Iterable[float]) -> Tick | None: ...
    def lead(self, paused: bool) -> Tick | None: ...


class Driver:
    """Runs one emulation on its own thread; see the module docstring. It is an `Emulator`;
    `prepare` (a fork's replay) runs on the emulator thread before the first tick and may use
    the thread-side methods (`now`, `run_until`, `snapshot`, `perform`, `keep`)."""

    def __init__(self, settings: Settings, *, on_tick: Callable[[Tick], None],
                 on_error: Callable[[str, bool], None], live: bool = True,
                 seed: int | None = None,
                 attach: Callable[[Emulation], Recorder] | None = None,
                 stop_at: float | None = None, generation: int = 0,
                 factory: Factory = make_emulation,
                 prepare: Callable[[Driver], None] | None = None,
                 led: bool = False, sent: int = 0) -> None:
        self.settings = settings
        self._initial = settings  # what the emulation was built at (a replay starts there)
        self.live = live
        # led: the clock is another driver's; the emulation moves only by `follow`
        self.led = led
        self.generation = generation
        self.paused = False
        self._on_tick, self._on_error = on_tick, on_error
        self._factory: Callable[[], Emulation] = lambda: factory(settings, seed=seed)
        self._attach = attach  # e.g. a drill's scorecard recorder, on the new emulation
        self.attached: Recorder | None = None  # what `attach` returned
        self._prepare = prepare  # run on the new emulation before the first tick (a replay)
        self.log: list[Logged] = []  # every change taken, in order (appended on this thread)
        self.stop_at = stop_at  # a drill's end: a live run or a step pauses exactly there
        self._calls: queue.SimpleQueue[_Call] = queue.SimpleQueue()
        self._stop = threading.Event()
        self._history: deque[Snapshot] = deque(maxlen=HISTORY)
        self._speed = settings.speed
        self._chunk = 1.0  # flat-out slice, simulated seconds (adapts to cost one tick)
        self._rate = _Rate()
        self._rtf: float | None = None
        self._hold_until = 0.0
        # setting changes submitted / taken by the emulation (`sent`: a replay's, owed)
        self._sent, self._applied = sent, 0
        self._injected: list[Active] = []  # incidents started by hand (handles from emu.inject)
        self._busy = False  # the last slice cost more than BUSY_SLICE_S of wall time
        self._emu: Emulation | None = None
        self._pacer: Pacer | None = None
        self._thread = threading.Thread(target=self._main, name="prfaas-emulator", daemon=True)

    @property
    def initial(self) -> Settings:
        return self._initial

    # -- the UI's side -----------------------------------------------------------------------
    def start(self) -> None:
        self._thread.start()
        if not self.live:
            self.call(lambda emu: None)  # surface a construction error here, synchronously

    def hold(self, seconds: float = 0.1) -> None:
        """The user just pressed a key: a busy emulator steps aside for a moment, so the UI
        has the GIL to itself while it answers (calls still apply meanwhile)."""
        self._hold_until = time.perf_counter() + seconds

    def _held(self, now: float) -> bool:
        return self._busy and now < self._hold_until

    def stop(self) -> None:
        self._stop.set()
        self._calls.put(_Call(lambda emu: None))
        if self._thread.is_alive() and threading.current_thread() is not self._thread:
            self._thread.join(timeout=2.0)

    def call(self, fn: Callable[[Emulation], T]) -> T:
        """Run fn(emulation) on the emulator thread and wait for its result."""
        done = threading.Event()
        c = _Call(fn, done)
        self._calls.put(c)
        while not done.wait(0.5):
            if not self._thread.is_alive():
                raise RuntimeError("the emulator thread has stopped")
        if c.error is not None:
            raise c.error
        return cast(T, c.result)

    def submit(self, fn: Callable[[Emulation], object]) -> Tick | None:
        """Queue fn(emulation): applied between slices when live (a tick follows), at once and
        returning the new tick when synchronous."""
        if self.live:
            self._calls.put(_Call(fn))
            return None
        self.call(fn)
        return self.current()

    @property
    def sent(self) -> int:
        """Setting changes submitted so far (compare with Tick.applied)."""
        return self._sent

    def apply(self, new: Settings, asked: tuple[str, ...] | None = None) -> Tick | None:
        """Take the running emulation to the new settings (validated by the caller): the
        knobs in `asked` (Controls field names; None: all) and the pace."""
        self.settings = new
        self._sent += 1
        return self.change(Change("settings", new, asked))

    def inject(self, incident: Incident | str) -> Tick | None:
        """Start an incident now (built by hand: `at` None, `duration` None or set; or a
        catalog label: its ready-made one), or END_ALL: end the ones started here."""
        return self.change(Change("incident", incident))

    def hand_incidents(self) -> list[tuple[int, str]]:
        """(index, label) of the incidents started here that are still on, oldest first."""
        return self.call(lambda emu: [(i, a.label) for i, a in enumerate(self._injected)
                                      if not a.over])

    def end_incident(self, index: int) -> Tick | None:
        """End one incident started here (`hand_incidents` index); the others go on."""
        return self.change(Change("end", index))

    def pin(self, knob: str, pinned: bool = True) -> Tick | None:
        """Pin (or release) a knob set by hand ("t", "split"): the scheduler leaves it alone."""
        return self.change(Change("pin", (knob, pinned)))

    def release_pins(self) -> Tick | None:
        return self.change(Change("release"))

    def set_scheduler(self, on: bool) -> Tick | None:
        """Switch the emulation's scheduler on or off (no-op without one)."""
        return self.change(Change("scheduler", on))

    def set_element(self, change: ElementChange) -> Tick | None:
        """Turn one topology element's knobs (checked by the caller: `check_element`)."""
        return self.change(Change("element", change))

    def check_element(self, change: ElementChange) -> None:
        """KnobError (one line) unless the element change could run now; nothing changes."""
        self.call(lambda emu: check_element(emu, change))

    def running_spec(self) -> Topology:
        """The running topology's spec at its knobs now."""
        return self.call(running_spec)

    def decisions(self) -> tuple[str, ...]:
        """The engine's note log, whole (knob changes, incidents, scheduler decisions)."""
        return self.call(lambda emu: tuple(emu.decisions))

    def warnings(self) -> list[str]:
        """What the run so far must say out loud (emulator.sim.runs.health): too few of its arrivals
        served, an offered rate far from its target."""
        from emulator.sim.runs.health import served_warnings

        return self.call(served_warnings)

    def change(self, change: Change) -> Tick | None:
        """Queue a change to the emulated system (as `submit`); logged once it took effect."""
        return self.submit(lambda emu: self._perform(emu, change))

    def perform(self, change: Change) -> None:
        """Make one change now and log it (the emulator thread only: a replay). A refused one
        (KnobError: nothing changed) raises and is not logged."""
        self._perform(self._here(), change)

    def _perform(self, emu: Emulation, change: Change) -> None:
        kind, value = change.kind, change.value
        if kind == "settings":
            assert isinstance(value, Settings)
            self._speed = value.speed
            try:
                apply_controls(emu, value, change.asked)
            finally:
                self._applied += 1
        elif kind == "incident" and value == END_ALL:
            for act in self._injected:
                act.end()  # a no-op for one already over
            self._injected.clear()
        elif kind == "incident":
            incident = _catalog_entry(value) if isinstance(value, str) else value
            started = emu.inject(cast("Incident", incident))
            if started is not None:
                self._injected.append(started)
        elif kind == "end":
            assert isinstance(value, int)
            self._injected[value].end()
        elif kind == "pin":
            assert isinstance(value, tuple)
            emu.pin(*value)
        elif kind == "release":
            for knob in emu.PINNABLE:
                emu.pin(knob, False)
        elif kind == "scheduler":
            emu.scheduler_enabled = bool(value)
        elif kind == "element":
            assert isinstance(value, ElementChange)
            set_element(emu, value)
        else:
            raise ValueError(f"unknown change {kind!r}")
        self.log.append(Logged(emu.now, change))

    def origin(self) -> tuple[float, tuple[Logged, ...], tuple[Snapshot, ...]]:
        """The simulated time now, the change log and the history, read together between two
        slices (what a fork replays and checks itself against)."""
        return self.call(lambda emu: (emu.now, tuple(self.log), tuple(self._history)))

    def follow(self, times: Iterable[float]) -> Tick | None:
        """A led driver: run to each of these simulated times (the leader's snapshots) and
        snapshot there, so both histories share one time axis; a tick follows."""
        def run(emu: Emulation) -> None:
            for t in times:
                if t > emu.now:
                    emu.run_until(t)
                    self._history.append(snapshot_of(emu))
        return self.submit(run)

    def lead(self, paused: bool) -> Tick | None:
        """A led driver takes its own clock (a fork kept): paced from now on, or paused."""
        def run(emu: Emulation) -> None:
            self.led = False
            pacer = self._pace_of()
            (pacer.pause if paused else pacer.resume)()
        self.paused = paused
        return self.submit(run)

    def pause(self, paused: bool | None = None) -> Tick | None:
        """Pause, resume, or (None) toggle."""
        want = not self.paused if paused is None else paused
        self.paused = want

        def run(emu: Emulation) -> None:
            pacer = self._pace_of()
            (pacer.pause if want else pacer.resume)()
        return self.submit(run)

    def step(self, seconds: float) -> Tick | None:
        """Pause and advance exactly `seconds` of simulated time (sampled for the plots; a step
        across `stop_at` ends there)."""
        self.paused = True

        def step(emu: Emulation) -> None:
            self._pace_of().pause()
            self._run_sampled(emu, self._limit(emu, emu.now + seconds), STEP_SAMPLES)
        return self.submit(step)

    def scorecard(self, drill: Drill) -> dict[str, object]:
        """The drill's scorecard of the emulation now, as a dict (`attach_recorder` attached
        its recorder)."""
        from emulator.sim.runs.score import scorecard

        return self.call(lambda emu: dict(scorecard(emu, self.attached,
                                                    drill.scoring).to_dict()))

    def current(self) -> Tick:
        """The emulation as it is now (waits for the emulator thread)."""
        return self.call(self._tick)

    def run_to(self, sim_time: float, samples: int = 240) -> Tick:
        """Synchronous mode: run to a simulated time, recording history on a fixed grid."""
        def run(emu: Emulation) -> Tick:
            self._run_sampled(emu, sim_time, samples)
            return self._tick(emu)
        return self.call(run)

    def _run_sampled(self, emu: Emulation, end: float, samples: int) -> None:
        """Run to exactly `end`, recording a snapshot at `samples` even steps on the way."""
        start = emu.now
        for i in range(1, samples + 1):
            emu.run_until(end if i == samples else start + (end - start) * i / samples)
            self._history.append(snapshot_of(emu))

    # -- the emulator thread: what `prepare` (a fork's replay) may use -------------------------
    def _here(self) -> Emulation:
        assert self._emu is not None and threading.current_thread() is self._thread
        return self._emu

    def _pace_of(self) -> Pacer:
        assert self._pacer is not None
        return self._pacer

    @property
    def now(self) -> float:
        """The simulated time (the emulator thread only)."""
        return self._here().now

    def run_until(self, t: float) -> None:
        """Run the emulation to `t` (the emulator thread only)."""
        self._here().run_until(t)

    def snapshot(self) -> Snapshot:
        """A snapshot now, as the ticks carry them (the emulator thread only)."""
        return snapshot_of(self._here())

    def keep(self, snap: Snapshot) -> None:
        """Add a snapshot to the history the plots read (the emulator thread only)."""
        self._history.append(snap)

    # -- the emulator thread --------------------------------------------------------------------
    def _tick(self, emu: Emulation) -> Tick:
        snap = snapshot_of(emu)
        if self._history and self._history[-1].sim_time == snap.sim_time:
            self._history.pop()  # same moment, newer knobs: the plots must show them
        self._history.append(snap)
        return Tick(snap, tuple(self._history), self.paused, self._speed,
                    self._rtf if self.live else None, self.generation, self._applied)

    def _main(self) -> None:
        try:
            self._emu = emu = self._factory()
            if self._attach is not None:
                self.attached = self._attach(emu)
            self._pacer = make_pacer(emu, self._speed)
            if self._prepare is not None:
                self._prepare(self)
            if self.live:
                self._on_tick(self._tick(emu))
            last = last_post = time.perf_counter()
            while not self._stop.is_set():
                ran = self._drain(emu, timeout=TICK_S if self.live and not self.led else None)
                if self._stop.is_set() or not self.live:
                    continue
                if self.led:  # moved only by `follow` and changes: tell the UI of each
                    self._on_tick(self._tick(emu))
                    last = time.perf_counter()
                    continue
                now = time.perf_counter()
                wall_dt, last = min(now - last, MAX_SLICE_S), now
                if not self.paused and not self._held(now):
                    self._advance(emu, wall_dt)
                    ran = ran or self.paused  # it stopped at stop_at: tell the UI now
                    cost = time.perf_counter() - now
                    self._busy = cost > BUSY_SLICE_S
                    # leave the GIL to the UI for a share of every slice: a CPU-bound thread
                    # would otherwise make each of the UI's many GIL hand-offs wait
                    time.sleep(YIELD_SHARE * cost)
                self._rtf = 0.0 if self.paused else self._rate.add(time.perf_counter(), emu.now)
                if ran or (not self.paused and time.perf_counter() - last_post >= POST_S):
                    last_post = time.perf_counter()
                    self._on_tick(self._tick(emu))
                elif emu.now != (self._history[-1].sim_time if self._history else None):
                    self._history.append(snapshot_of(emu))
        except Exception as exc:  # the UI shows it; the app keeps running
            self._on_error(f"emulator stopped: {type(exc).__name__}: {exc}", True)
        finally:
            if self._emu is not None:
                self._emu.close()

    def _drain(self, emu: Emulation, timeout: float | None) -> bool:
        """Run queued calls; wait up to `timeout` for the first (None: forever, 0 when running
        flat out). True if any ran."""
        if self.live and not self.led and not self.paused and math.isinf(self._speed):
            timeout = max(0.0, self._hold_until - time.perf_counter()) if self._busy else 0.0
        deadline = None if timeout is None else time.perf_counter() + timeout
        ran = False
        while True:
            wait = None if deadline is None else max(0.0, deadline - time.perf_counter())
            try:
                c = self._calls.get(block=not ran and wait != 0.0, timeout=wait)
            except queue.Empty:
                return ran
            ran = True
            try:
                c.result = c.fn(emu)
            except Exception as exc:
                c.error = exc
                if c.done is None:
                    self._on_error(str(exc), False)
            if c.done is not None:
                c.done.set()

    def _advance(self, emu: Emulation, wall_dt: float) -> None:
        pacer = self._pace_of()
        flat_out = not math.isfinite(self._speed)
        pacer.speed = self._chunk / TICK_S if flat_out else self._speed
        wall = TICK_S if flat_out else wall_dt
        end = self._limit(emu, emu.now + pacer.speed * wall)
        if end < emu.now + pacer.speed * wall:  # the drill's end: stop exactly there, paused
            pacer.step(end - emu.now)
            self.paused = True
            pacer.pause()
            return
        t0 = time.perf_counter()
        pacer.advance(wall)
        if flat_out:  # size the next slice to cost about FLAT_OUT_SLICE_S
            cost = max(time.perf_counter() - t0, 1e-4)
            self._chunk = max(1e-3, self._chunk * min(2.0, max(0.5, FLAT_OUT_SLICE_S / cost)))

    def _limit(self, emu: Emulation, target: float) -> float:
        """`target`, or `stop_at` when the run would cross it (once: after it, no limit)."""
        if self.stop_at is not None and emu.now < self.stop_at < target:
            return self.stop_at
        return target


# -- drills and incidents (emulator.scenario.drills/incidents, emulator.sim.runs.record/score) ---
END_ALL = "end all"


def load_drill(name_or_path: str, preset: str | None = None) -> Drill:
    """A shipped drill by name or a drill file by path (PresetError, one line, if broken), on
    `preset` when given (emulator.scenario.drills.load_drill)."""
    from emulator.scenario.drills import load_drill as load

    return load(name_or_path, preset)


def attach_recorder(emu: Emulation) -> Recorder:
    """Record an emulation for its drill scorecard (Driver's `attach`; see Driver.scorecard)."""
    from emulator.sim.runs.record import attach

    return attach(emu)


def incident_catalog() -> list[tuple[str, str, Incident]]:
    """(label, description, incident) of the incidents an operator can inject by hand."""
    from emulator.scenario.incidents import catalog

    return catalog()


def hand_incident(kind: str, values: dict[str, object], settings: Settings) -> Incident:
    """An incident typed by hand for the running deployment, checked as a drill file's entry:
    the ranges of `emulator.scenario.incidents.by_hand` and the work caps a drill's incidents
    meet (`emulator.budget.check_hand_incident`, the dashboard's caps): PresetError, one line
    naming the key."""
    from emulator import budget
    from emulator.scenario.incidents import by_hand
    from emulator.scenario.reader import PresetError

    sc = settings.scenario
    fixed = sc.sim.replay is not None or sc.sim.sessions is not None
    inc = by_hand(kind, values, n_prfaas=sc.system.n_prfaas, pool=sc.system.local_pool,
                  lengths=None if fixed else sc.system.lengths)
    try:
        budget.check_hand_incident(inc, rate=settings.rate, run_duration=sc.sim.duration,
                                   caps=budget.caps_for("dashboard"))
    except budget.BudgetError as exc:
        raise PresetError(kind, "", str(exc)) from None
    return inc


def _catalog_entry(label: str) -> Incident:
    """The ready-made incident of a catalog label (the injection menu's choices)."""
    return next(inc for lbl, _, inc in incident_catalog() if lbl == label)


def incident_kinds() -> list[tuple[str, str]]:
    """(label, description) of the incidents an operator can inject by hand, and END_ALL."""
    return [(label, desc) for label, desc, _ in incident_catalog()] + [
        (END_ALL, "end every incident started by hand")]
