"""The live state of one dashboard, without Textual: the operator's settings, the model at them,
the driver of the running emulation and its latest tick.

A knob change takes one path: `request` validates it once (`Settings.apply`), recomputes the
model and hands the whole new setting to the driver, which takes the emulation there
(`live.apply_controls`). What the emulation runs comes back in ticks: when no change of ours is
still on its way, the tick's knobs are the truth, so a scheduler's move (drills) shows on the
knobs and in the model without being sent back. Screens and widgets read this object; they keep
no copy of its state.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any

from emulator.model import OperatingPoint
from emulator.paradigm import Paradigm
from emulator.scenario.scenario import Scenario
from prfaas_tui.live import Driver, Tick, attach_recorder, make_emulation
from prfaas_tui.modelview import DEFAULT_SPEED, ModelView, Settings, paradigm_point

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

    @property
    def drill(self) -> Drill | None:
        return self.run.drill

    @property
    def base(self) -> Scenario:
        """What a plan candidate was built from, else the running scenario itself."""
        return self.run.base or self.run.scenario

    # -- the emulation ---------------------------------------------------------------------------
    def start(self, at: float | None = None) -> None:
        """Start the emulation of the current run; not live, run it to `at` (or just build it)
        and take the first tick. Raises what the emulation's construction raised."""
        gen, drill = self.generation, self.run.drill
        self.driver = Driver(
            self.settings, live=self.live, seed=self.seed, generation=gen,
            attach=attach_recorder if drill else None,
            stop_at=drill.duration if drill else None,
            factory=partial(make_emulation, split=self.run.split),
            on_tick=self._post_tick,
            on_error=lambda text, fatal: self._post_error(text, gen))
        self.driver.start()
        if at:
            self.take(self.driver.run_to(at))
        elif not self.live:
            self.take(self.driver.current())

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
        self._points.clear()
        self.tick = None

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
        return True

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
        new = self.settings.apply(**changes)
        self.settings, self.view = new, ModelView.of(new)
        if self.driver is not None:
            self.take(self.driver.apply(new))

    def pause(self) -> None:
        if self.driver is not None:
            self.take(self.driver.pause())

    def step(self, seconds: float) -> None:
        if self.driver is not None:
            self.take(self.driver.step(seconds))

    def inject(self, label: str) -> None:
        """Start a catalog incident by hand (or end the hand-made ones)."""
        if self.driver is not None:
            self.take(self.driver.inject(label))

    def scorecard(self) -> dict:
        """The running drill's scorecard; the emulator stays paused at the drill's end."""
        assert self.driver is not None and self.run.drill is not None
        if self.live:
            self.driver.pause(True)
        return self.driver.scorecard(self.run.drill)

    def point_at(self, snap: Any) -> OperatingPoint:
        """The model at the knobs a snapshot ran with (cached: knobs change rarely). They are
        the engine's, already accepted: no second validation."""
        k = snap.knobs  # LiveKnobs: frozen, so it keys the cache
        if k not in self._points:
            s = self.settings.running(t=k.t, n_p=k.n_p, n_d=k.n_d, n_prfaas=k.n_prfaas,
                                      bandwidth=k.bandwidth, paradigm=k.paradigm)
            self._points[k] = paradigm_point(s)
        return self._points[k]
