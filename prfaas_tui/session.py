"""The live state of one dashboard, without Textual: the operator's settings, the model at them,
the driver of the running emulation and its latest tick.

A knob change takes one path: `request` validates it once (`Settings.apply`), recomputes the
model and hands the whole new setting to the driver, which takes the emulation there
(`live.apply_controls`). What the emulation runs comes back in ticks: when no change of ours is
still on its way, the tick's knobs are the truth, so a scheduler's move (drills) shows on the
knobs and in the model without being sent back. Screens and widgets read this object; they keep
no copy of its state. A what-if fork (`prfaas_tui.fork`) is a `branch` of it on a replay of its
emulation; kept, this session `adopt`s it, so every screen's reference stays good.
"""

from __future__ import annotations

import copy
import math
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any

from emulator.effective import (
    DRIVING_MODE,
    EffectiveView,
    LiveState,
    effective_point,
    effective_view,
    targets_for,
)
from emulator.model import MODES, OperatingPoint
from emulator.paradigm import Paradigm
from emulator.scenario.scenario import Scenario
from emulator.stability import Row, StabilityReport, assess
from prfaas_tui.events import Event, events_of
from prfaas_tui.live import Driver, Tick, attach_recorder, make_emulation
from prfaas_tui.metrics_export import metric_row
from prfaas_tui.modelview import DEFAULT_SPEED, ModelView, Settings, live_latency
from prfaas_tui.series_record import SeriesRecord

if TYPE_CHECKING:
    from emulator.sim.drills import Drill


@dataclass(frozen=True)
class Run:
    """What a fresh emulation starts from: its scenario, an optional drill, and for a plan
    candidate its pinned split and the plan's base scenario."""

    scenario: Scenario
    drill: Drill | None = None
    split: tuple[int, int] | None = None
    base: Scenario | None = None


ROWS = 2000  # stability rows kept: ticks arrive every ~0.1-2 simulated s, assess reads 180 s


class Session:
    """One dashboard's live state; see the module docstring.

    `post_tick(tick)` and `post_error(text, generation)` are called on the emulator thread:
    they hand over to the UI thread, which passes the tick back to `take`.
    """

    def __init__(self, scenario: Scenario, *, post_tick: Callable[[Tick], None],
                 post_error: Callable[[str, int], None], live: bool = True,
                 seed: int | None = None, speed: float = DEFAULT_SPEED,
                 drill: Drill | None = None) -> None:
        self.live, self.seed = live, seed
        self._post_tick, self._post_error = post_tick, post_error
        self.run = Run(scenario, drill)
        self.settings = Settings.initial(scenario, speed)
        self.view = ModelView.of(self.settings)
        self.tick: Tick | None = None
        self.generation = 0
        self.driver: Driver | None = None
        self._points: dict[Any, OperatingPoint] = {}
        # the mode driving the model panel: the preset's, as `solve` defaults to (`M` toggles)
        self.mode = scenario.mode
        self.effective: EffectiveView | None = None  # the model at the live state
        self.report: StabilityReport | None = None  # queue trends over the last window
        self._rows: deque[Row] = deque(maxlen=ROWS)
        self.record = SeriesRecord()  # the whole run's series, for export
        self._listeners: list[Callable[[Tick], None]] = []  # see `listen`

    @property
    def drill(self) -> Drill | None:
        return self.run.drill

    @property
    def base(self) -> Scenario:
        """What a plan candidate was built from, else the running scenario itself."""
        return self.run.base or self.run.scenario

    # -- the emulation ---------------------------------------------------------------------------
    def start(self, at: float | None = None, *, initial: Settings | None = None,
              prepare: Callable[[Driver, Any], None] | None = None, led: bool = False,
              sent: int = 0) -> None:
        """Start the emulation of the current run; not live, run it to `at` (or just build it)
        and take the first tick. Raises what the emulation's construction raised. A fork
        (`prfaas_tui.fork`) builds it at the parent's `initial` settings, `prepare`s it (the
        replay) and has it `led` by the parent's clock."""
        gen, drill = self.generation, self.run.drill
        self.driver = Driver(
            initial or self.settings, live=self.live, seed=self.seed, generation=gen,
            attach=attach_recorder if drill else None,
            stop_at=drill.duration if drill else None,
            factory=partial(make_emulation, split=self.run.split),
            prepare=prepare, led=led, sent=sent,
            on_tick=self._emit,
            on_error=lambda text, fatal: self._post_error(text, gen))
        self.driver.start()
        if at:
            self.take(self.driver.run_to(at))
        elif not self.live:
            self.take(self.driver.current())

    def _emit(self, tick: Tick) -> None:
        """A live tick, on the emulator thread: to the UI, and to whoever listens (a fork
        follows its parent's clock)."""
        self._post_tick(tick)
        for fn in tuple(self._listeners):
            fn(tick)

    def listen(self, fn: Callable[[Tick], None]) -> Callable[[], None]:
        """Also hand every live tick to `fn` (on the emulator thread); returns the undo."""
        self._listeners.append(fn)
        return lambda: self._listeners.remove(fn) if fn in self._listeners else None

    def branch(self, *, post_tick: Callable[[Tick], None],
               post_error: Callable[[str, int], None]) -> Session:
        """A new session on this run, at the same settings and mode, holding this one's record
        and stability rows so far; not started (a fork starts it on a replay of this one's
        emulation, `prfaas_tui.fork`). Its ticks are a generation of their own."""
        other = Session(self.run.scenario, post_tick=post_tick, post_error=post_error,
                        live=self.live, seed=self.seed, speed=self.settings.speed,
                        drill=self.run.drill)
        other.run, other.mode = self.run, self.mode
        other.settings, other.view = self.settings, self.view
        other.generation = self.generation + 1
        other._rows = deque(self._rows, maxlen=ROWS)
        other.record = copy.copy(self.record)
        other.record.rows = list(self.record.rows)
        return other

    def adopt(self, other: Session) -> None:
        """Carry on as `other` (a fork kept): its run, settings, emulation, history and
        record become this session's, and its ticks come here; this one's emulation stops.
        The screens keep their reference to this object."""
        self.stop()
        other._post_tick, other._post_error = self._post_tick, self._post_error
        other._listeners = self._listeners = []
        vars(self).update(vars(other))

    def load(self, scenario: Scenario, drill: Drill | None = None, *,
             paradigm: Paradigm = Paradigm.PRFAAS_PD, split: tuple[int, int] | None = None,
             base: Scenario | None = None) -> None:
        """Replace the running scenario (or start a drill): new settings and model, then a
        fresh emulation (`start`). Refused, with nothing replaced, when the paradigm cannot run
        on the scenario."""
        settings = Settings.initial(scenario, self.settings.speed)
        if paradigm != settings.paradigm:
            settings = settings.apply(paradigm=paradigm)
        self.stop()
        self.generation += 1
        self.run = Run(scenario, drill, split, base)
        self.settings, self.view = settings, ModelView.of(settings)
        self.mode = scenario.mode
        self._points.clear()
        self.tick = None
        self.effective, self.report = None, None
        self._rows.clear()
        self.record = SeriesRecord()

    def stop(self) -> None:
        if self.driver is not None:
            self.driver.stop()

    def take(self, tick: Tick | None) -> bool:
        """Take a tick of the current emulation (False: none, or an older emulation's). When
        it reflects every change requested so far, its knobs become the settings: that is how
        a scheduler's move reaches the knobs and the model."""
        if tick is None or tick.generation != self.generation or self.driver is None:
            return False
        self.tick = tick
        if tick.applied == self.driver.sent:
            self._follow(tick.snapshot.knobs)
        self._observe(tick)
        return True

    def _observe(self, tick: Tick) -> None:
        """The effective view at the tick's live state (rebuilt only when that state changes:
        alive instances, link capacity, mix, knobs) and the stability report over its rows."""
        snap = tick.snapshot
        last = self._rows[-1].t if self._rows else -math.inf
        fresh = []  # the history since the last row (a step or a headless run adds many)
        for s in reversed(tick.history):
            if s.sim_time <= last:
                break
            fresh.append(s)
        self._rows.extend(Row.of(s) for s in reversed(fresh))
        self.record.extend(metric_row(s, self.point_at(s)) for s in reversed(fresh))
        state = LiveState.of(snap)
        if self.effective is None or self.effective.state != state \
                or self.effective.driving != self.mode:
            self.effective = effective_view(self.system, state, MODES, self.mode)
        self.report = assess(self._rows, self.effective.effective[DRIVING_MODE])

    @property
    def system(self) -> Any:
        """The running scenario's nominal System (profiles, the preset's mix); the live knobs,
        instances and link come from each snapshot."""
        return self.run.scenario.system

    def toggle_mode(self) -> str:
        """Switch the mode driving the model panel (exact <-> paper); the live Λmax line and
        the stability judgement stay exact, the mode the emulator sustains."""
        self.mode = "paper" if self.mode == "exact" else "exact"
        if self.effective is not None:
            self.effective = effective_view(self.system, self.effective.state, MODES, self.mode)
        return self.mode

    def optimum_targets(self) -> tuple[float, int, int] | None:
        """(t, N_p, N_d) that `o` applies: the optimum of the effective state in the driving
        mode, with failed instances kept in their stage. None before the first tick or for a
        paradigm without t."""
        v = self.effective
        if v is None or self.mode not in v.optimum:
            return None
        return targets_for(v.optimum[self.mode], v.state)

    def slo_targets(self) -> tuple[float, int, int] | None:
        """(t, N_p, N_d) that `O` applies: the SLO optimum of the effective state (the panel's
        live TTFT line), failed instances kept in their stage. None before the first tick or
        for a paradigm without t."""
        v = self.effective
        if v is None:
            return None
        best = live_latency(self.settings, v).slo_optimum
        return None if best is None else targets_for(best, v.state)

    def _follow(self, knobs: Any) -> None:
        """The scheduler moves t and the split of a PrfaaS-PD emulation (other paradigms run
        their own split, which is not the operator's)."""
        sc = self.settings.scenario
        if (knobs.paradigm != Paradigm.PRFAAS_PD or self.settings.paradigm != Paradigm.PRFAAS_PD
                or (knobs.t, knobs.n_p, knobs.n_d) == (sc.t, sc.n_p, sc.n_d)):
            return
        self.settings = self.settings.running(t=knobs.t, n_p=knobs.n_p, n_d=knobs.n_d)
        self.view = ModelView.of(self.settings)

    # -- changes -----------------------------------------------------------------------------------
    def check(self, **changes: Any) -> Settings:
        """The settings with these changes; Refused (one line) when impossible."""
        return self.settings.apply(**changes)

    def request(self, **changes: Any) -> None:
        """Validate the changes, recompute the model and take the emulation there; Refused,
        with nothing changed, when impossible."""
        old, new = self.settings.scenario, self.settings.apply(**changes)
        self.settings, self.view = new, ModelView.of(new)
        if self.driver is not None:
            self.take(self.driver.apply(new))
            sc = new.scenario
            if "t" in changes and sc.t != old.t:
                self.pin("t")
            if {"n_p", "n_d"} & set(changes) and (sc.n_p, sc.n_d) != (old.n_p, old.n_d):
                self.pin("split")

    # -- the scheduler -------------------------------------------------------------------------
    def pin(self, knob: str, pinned: bool = True) -> None:
        """A knob set by hand ("t", "split"): the scheduler leaves it alone until released."""
        if self.driver is not None:
            self.take(self.driver.pin(knob, pinned))

    def release_pins(self) -> None:
        if self.driver is not None:
            self.take(self.driver.release_pins())

    def set_scheduler(self, on: bool) -> None:
        """Switch the emulation's scheduler on or off live (no-op without one)."""
        if self.driver is not None:
            self.take(self.driver.set_scheduler(on))

    def pause(self) -> None:
        if self.driver is not None:
            self.take(self.driver.pause())

    def step(self, seconds: float) -> None:
        if self.driver is not None:
            self.take(self.driver.step(seconds))

    def inject(self, incident: Any) -> None:
        """Start an incident by hand (`live.hand_incident`), or END_ALL: end the hand-made
        ones."""
        if self.driver is not None:
            self.take(self.driver.inject(incident))

    def hand_incidents(self) -> list[tuple[int, str]]:
        """The incidents started by hand that are still on: (index, label)."""
        return self.driver.hand_incidents() if self.driver is not None else []

    def end_incident(self, index: int) -> None:
        if self.driver is not None:
            self.take(self.driver.end_incident(index))

    def events(self) -> list[Event]:
        """The run's events from the engine's note log (the one store, read whole on the
        emulator thread); without a running emulator, the latest snapshot's recent ones."""
        if self.driver is not None:
            try:
                return events_of(self.driver.call(lambda emu: tuple(emu.decisions)))
            except RuntimeError:  # the emulator thread has stopped
                pass
        return events_of(self.tick.snapshot.decisions if self.tick else ())

    def scorecard(self) -> dict:
        """The running drill's scorecard; the emulator stays paused at the drill's end."""
        assert self.driver is not None and self.run.drill is not None
        if self.live:
            self.driver.pause(True)
        return self.driver.scorecard(self.run.drill)

    def point_at(self, snap: Any) -> OperatingPoint:
        """The live Λmax line at one snapshot: the model at what was alive then (instances,
        link capacity, mix, knobs), in the mode driving the panel, so chart, strip and panel
        show one Λmax. Cached on the live state (it changes rarely)."""
        key = (LiveState.of(snap), self.mode)
        if key not in self._points:
            if len(self._points) > 256:
                self._points.clear()
            self._points[key] = effective_point(self.system, key[0], self.mode)
        return self._points[key]
