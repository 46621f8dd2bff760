"""The live state of one dashboard, without Textual: the operator's settings, the model at them,
the driver of the running emulation and its latest tick. One kind of session for a single pair
and a topology (sites, regions, links): the run, the driver, the ticks, the change log, forks
and drills are the same; what differs is the model at the live state.

A knob change takes one path: `request` validates it once (`Settings.apply`), recomputes the
model and hands the whole new setting to the driver, which takes the emulation there
(`live.apply_controls`). A topology element's knobs (`set_region`, `set_site`, `set_link`) are
checked on the running spec, then handed to the driver as an `ElementChange`. Either way the
driver logs the change at its simulated time, so a fork replays it. What the emulation runs
comes back in ticks: when no change of ours is still on its way, the tick's knobs are the
truth, so a scheduler's move (drills) shows on the knobs and in the model without being sent
back. Screens and widgets read this object; they keep no copy of its state. A what-if fork
(`prfaas_tui.fork`) is a `branch` of it on a replay of its emulation; kept, this session
`adopt`s it, so every screen's reference stays good.

The UI reaches the emulation only through the driver (`live.Emulator`).
"""

from __future__ import annotations

import copy
import math
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import partial
from typing import TYPE_CHECKING

from emulator.effective import (
    DRIVING_MODE,
    EffectiveView,
    LiveState,
    effective_point,
    effective_view,
    targets_for,
)
from emulator.model import MODES, OperatingPoint, System
from emulator.paradigm import Paradigm
from emulator.scenario.scenario import Scenario
from emulator.stability import Row, StabilityReport, assess
from emulator.topology.spec import Topology
from prfaas_tui.events import Event, events_of
from prfaas_tui.live import (
    LIVE_KEY,
    POLICIES_KEY,
    Driver,
    ElementChange,
    Emulator,
    Tick,
    attach_recorder,
    make_emulation,
)
from prfaas_tui.metrics_export import metric_row
from prfaas_tui.modelview import DEFAULT_SPEED, ModelView, Refused, Settings, live_latency
from prfaas_tui.series_record import SeriesRecord

if TYPE_CHECKING:
    from emulator.scenario.drill import Drill
    from emulator.scenario.incidents import Incident
    from emulator.topology import live as topology_live
    from prfaas_tui.live import LiveKnobs, Snapshot


def _initial(scenario: Scenario, speed: float) -> Settings:
    """A pair's settings at its preset (its rate, load x Λmax otherwise); a topology's carry
    the scenario and the pace only (its regions' rates are its own)."""
    if scenario.declared_topology is None:
        return Settings.initial(scenario, speed)
    return Settings(scenario=scenario, speed=speed)


def _view(settings: Settings) -> ModelView | None:
    return ModelView.of(settings) if settings.scenario.declared_topology is None else None


@dataclass(frozen=True)
class Run:
    """What a fresh emulation starts from: its scenario, an optional drill, and for a plan
    candidate its pinned split and the plan's base scenario."""

    scenario: Scenario
    drill: Drill | None = None
    split: tuple[int, int] | None = None
    base: Scenario | None = None


ROWS = 2000  # stability rows kept: ticks arrive every ~0.1-2 simulated s, assess reads 180 s
MODELS = 64  # topology models kept by live state (each a routing bound solve)
GAINS = 256  # step gains kept (each a bound solve)


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
        self.settings = _initial(scenario, speed)
        # the pair's model at the settings (None on a topology: its model is `model`)
        self.view: ModelView | None = _view(self.settings)
        self.tick: Tick | None = None
        self.generation = 0
        self.driver: Emulator | None = None
        self._points: dict[tuple[LiveState, str], OperatingPoint] = {}
        # the mode driving the model panel: the preset's, as `solve` defaults to (`M` toggles)
        self.mode = scenario.mode
        self.effective: EffectiveView | None = None  # the model at the live state
        self.report: StabilityReport | None = None  # queue trends over the last window
        self._rows: deque[Row] = deque(maxlen=ROWS)
        self.record = SeriesRecord()  # the whole run's series, for export
        self._listeners: list[Callable[[Tick], None]] = []  # see `listen`
        # a topology: the model at its live state (the threshold policy and the routing bound)
        self.model: topology_live.LiveModel | None = None
        self._state: topology_live.LiveState | None = None
        self._models: dict[topology_live.LiveState, topology_live.LiveModel] = {}
        self._gains: dict[tuple[topology_live.LiveState, str, str], float] = {}

    @property
    def drill(self) -> Drill | None:
        return self.run.drill

    @property
    def scenario(self) -> Scenario:
        """The scenario the run started from (the knobs since are `settings`' or the
        elements')."""
        return self.run.scenario

    @property
    def base(self) -> Scenario:
        """What a plan candidate was built from, else the running scenario itself."""
        return self.run.base or self.run.scenario

    @property
    def topology(self) -> Topology | None:
        """The declared topology (sites, regions, links); None for a single pair."""
        return self.run.scenario.declared_topology

    @property
    def base_name(self) -> str:
        return self.run.scenario.name.split(":", 1)[0]

    # -- the emulation ---------------------------------------------------------------------------
    def start(self, at: float | None = None, *, initial: Settings | None = None,
              prepare: Callable[[Driver], None] | None = None, led: bool = False,
              sent: int = 0) -> None:
        """Start the emulation of the current run; not live, run it to `at` (or just build it)
        and take the first tick. Raises what the emulation's construction raised. A fork
        (`prfaas_tui.fork`) builds it at the parent's `initial` settings, `prepare`s it (the
        replay) and has it `led` by the parent's clock."""
        gen, drill = self.generation, self.run.drill
        self.driver = driver = Driver(
            initial or self.settings, live=self.live, seed=self.seed, generation=gen,
            attach=attach_recorder if drill else None,
            stop_at=drill.duration if drill else None,
            factory=partial(make_emulation, split=self.run.split),
            prepare=prepare, led=led, sent=sent,
            on_tick=self._emit,
            on_error=lambda text, fatal: self._post_error(text, gen))
        driver.start()
        if at:
            self.take(driver.run_to(at))
        elif not self.live:
            self.take(driver.current())

    def _emit(self, tick: Tick) -> None:
        """A live tick, on the emulator thread: to the UI, and to whoever listens (a fork
        follows its parent's clock)."""
        self._post_tick(tick)
        for fn in tuple(self._listeners):
            fn(tick)

    def listen(self, fn: Callable[[Tick], None]) -> Callable[[], None]:
        """Also hand every live tick to `fn` (on the emulator thread); returns the undo."""
        self._listeners.append(fn)

        def undo() -> None:
            if fn in self._listeners:
                self._listeners.remove(fn)
        return undo

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
        other._models, other._gains = self._models, self._gains  # pure functions of the state
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
        settings = _initial(scenario, self.settings.speed)
        if paradigm != settings.paradigm:
            settings = settings.apply(paradigm=paradigm)
        self.stop()
        self.generation += 1
        self.run = Run(scenario, drill, split, base)
        self.settings, self.view = settings, _view(settings)
        self.mode = scenario.mode
        self._points.clear()
        self.tick = None
        self.effective, self.report = None, None
        self._rows.clear()
        self.record = SeriesRecord()
        self.model, self._state = None, None
        self._models, self._gains = {}, {}

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
        if self.topology is not None:
            self._observe_topology(tick.snapshot)
            return True
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

    def _observe_topology(self, snap: Snapshot) -> None:
        """The topology's model follows its live state (solved once per state)."""
        from emulator.topology import live as topology_live

        topo = self.topology
        objects = snap.topology
        if topo is None or objects is None:
            return
        state = objects[LIVE_KEY]
        assert isinstance(state, topology_live.LiveState)
        if state != self._state:
            self._state = state
            if state not in self._models:
                if len(self._models) > MODELS:
                    self._models.clear()
                self._models[state] = topology_live.live_model(topo, state)
            self.model = self._models[state]

    @property
    def system(self) -> System:
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

    def _follow(self, knobs: LiveKnobs) -> None:
        """The scheduler moves t and the split of a PrfaaS-PD emulation (other paradigms run
        their own split, which is not the operator's)."""
        sc = self.settings.scenario
        if (knobs.paradigm != Paradigm.PRFAAS_PD or self.settings.paradigm != Paradigm.PRFAAS_PD
                or (knobs.t, knobs.n_p, knobs.n_d) == (sc.t, sc.n_p, sc.n_d)):
            return
        self.settings = self.settings.running(t=knobs.t, n_p=knobs.n_p, n_d=knobs.n_d)
        self.view = ModelView.of(self.settings)

    # -- changes -----------------------------------------------------------------------------------
    def check(self, **changes: object) -> Settings:
        """The settings with these changes; Refused (one line) when impossible."""
        return self.settings.apply(**changes)

    def request(self, **changes: object) -> None:
        """Validate the changes, recompute the model and take the emulation there; Refused,
        with nothing changed, when impossible. A topology's settings carry its pace only (its
        knobs are its elements': `set_region`, `set_site`, `set_link`)."""
        if self.topology is not None:
            if set(changes) - {"speed", "rate"}:
                raise Refused("a topology's knobs are its regions', sites' and links' (enter "
                              "on the map) and its total offered rate (r)")
            speed = changes.get("speed", self.settings.speed)
            if not isinstance(speed, int | float) or not speed > 0:
                raise Refused("the speed must be > 0")
            rate = (self.topology_rate(changes["rate"]) if "rate" in changes
                    else self.settings.rate)
            self.settings = replace(self.settings, speed=float(speed), rate=rate)
            if self.driver is not None:
                self.take(self.driver.apply(self.settings, ("rate",) if "rate" in changes
                                            else ()))
            return
        old, new = self.settings.scenario, self.settings.apply(**changes)
        self.settings, self.view = new, ModelView.of(new)
        if self.driver is not None:  # only the knobs asked for: the rest may have moved since
            self.take(self.driver.apply(new, tuple(k for k in changes if k != "speed")))
            sc = new.scenario
            if "t" in changes and sc.t != old.t:
                self.pin("t")
            if {"n_p", "n_d"} & set(changes) and (sc.n_p, sc.n_d) != (old.n_p, old.n_d):
                self.pin("split")

    def topology_rate(self, rate: object) -> float:
        """A topology's total offered rate, checked as the rate knob and the dashboard's work
        caps check a pair's; Refused with the reason."""
        from emulator import budget
        from emulator.scenario.knobs import KNOBS, KnobError

        try:
            value = float(KNOBS["rate"].read(rate))
            if not value > 0:  # a pair's rate 0 idles it; a topology has no other knob for it
                raise KnobError("rate", "must be > 0")
            duration = self.settings.scenario.sim.duration
            budget.check("requests", budget.run_requests(value, duration),
                         f"rate x the run's {duration:g} s", budget.caps_for("dashboard"))
        except KnobError as exc:
            raise Refused(f"rate: {exc.reason}") from None
        except budget.BudgetError as exc:
            raise Refused(str(exc)) from None
        return value

    # -- a topology's elements (each checked on the running spec: KnobError, nothing changed) ---
    def check_element(self, kind: str, name: str, **knobs: object) -> ElementChange:
        """The change, checked on the running spec; KnobError (one line) when it cannot run."""
        change = ElementChange.of(kind, name, knobs)
        if self.topology is None:
            self._pair_link(change)
        elif self.driver is not None:
            self.driver.check_element(change)
        return change

    def set_element(self, kind: str, name: str, **knobs: object) -> None:
        """Turn one element's knobs (checked first; the driver logs it as a change). The pair's
        one element is its link: its knobs are settings, so the model follows them too."""
        change = self.check_element(kind, name, **knobs)
        if self.topology is None:
            new = self._pair_link(change)
            self.settings, self.view = new, ModelView.of(new)
            if self.driver is not None:
                self.take(self.driver.apply(new))
        elif self.driver is not None:
            self.take(self.driver.set_element(change))

    def _pair_link(self, change: ElementChange) -> Settings:
        """The settings with the pair's link turned, as the topology view turns a link: the
        bandwidth alone is the knob, with a loss or connections it is the line rate the goodput
        is computed over. KnobError (one line) when it cannot run."""
        from emulator.scenario.knobs import KnobError, check_element
        from emulator.scenario.scenario import with_transport

        spec = self.running_spec()
        if change.kind != "link" or change.name != spec.links[0].name:
            raise KnobError("element", f"a single pair's one element is its link "
                            f"{spec.links[0].name}, not {change.kind} {change.name}")
        if change.loss and self.settings.scenario.sim.link_latency <= 0:
            raise KnobError("loss", "a loss rate needs a round trip above 0: set the preset's "
                            "[emulator] link_latency", f"link {change.name}")
        check_element(spec, "link", change.name, bandwidth=change.bandwidth, loss=change.loss,
                      connections=change.connections)
        if change.loss is None and change.connections is None:
            if change.bandwidth is None:
                return self.settings
            try:
                return self.settings.apply(bandwidth=change.bandwidth)
            except Refused as exc:
                raise KnobError("bandwidth", str(exc), f"link {change.name}") from None
        sc = with_transport(self.settings.scenario, change.loss, change.connections,
                            change.bandwidth)
        try:
            self.settings.apply(bandwidth=sc.system.bandwidth)  # the dashboard's caps
        except Refused as exc:
            raise KnobError("bandwidth", str(exc), f"link {change.name}") from None
        return replace(self.settings, scenario=sc)

    def set_region(self, region: str, **knobs: object) -> None:
        """A region's t, n_p, n_d, routing and (threshold policy) shares {site: part}."""
        self.set_element("region", region, **knobs)

    def set_site(self, site: str, instances: int) -> None:
        self.set_element("site", site, instances=instances)

    def set_link(self, link: str, bandwidth: float) -> None:
        """A link's bandwidth knob, bytes/s ("site->region")."""
        self.set_element("link", link, bandwidth=bandwidth)

    def running_spec(self) -> Topology:
        """The running topology's spec at its knobs now (configured, alive or not); a single
        pair's is the 1x1 topology at its settings."""
        if self.topology is None:
            return self.settings.scenario.topology
        assert self.driver is not None
        return self.driver.running_spec()

    @property
    def objects(self) -> dict[str, object] | None:
        """A topology tick's `regions`, `sites`, `links` (and live state, policies)."""
        return self.tick.snapshot.topology if self.tick is not None else None

    @property
    def state(self) -> topology_live.LiveState:
        """The topology's live state (the declared one before the first tick)."""
        from emulator.topology import live as topology_live

        if self._state is not None:
            return self._state
        assert self.topology is not None
        return topology_live.LiveState.of_spec(self.topology)

    def region_policy(self, region: str) -> str:
        obj = self.objects
        if obj is not None:
            policies = obj[POLICIES_KEY]
            assert isinstance(policies, dict)
            return str(policies[region])
        assert self.topology is not None
        return self.topology.routing

    def step_gain(self, kind: str, name: str) -> tuple[float, float]:
        """(step, what the bound gains by it) for the selected element: a link +10 Gbps of
        bandwidth, a site or a region +1 instance (re-solved once per live state)."""
        from emulator.topology import live as topology_live

        assert self.topology is not None
        step = topology_live.LINK_STEP_GBPS if kind == "link" else 1.0
        key = (self.state, kind, name)
        if key not in self._gains:
            if len(self._gains) > GAINS:
                self._gains.clear()
            self._gains[key] = topology_live.step_gain(self.topology, self.state, kind, name,
                                                       step)
        return step, self._gains[key]

    def apply_policy_optimum(self) -> dict[str, tuple[float, int, int]]:
        """`o` on a topology: every region to the best threshold policy at the live state (its
        thresholds and splits; the failed instances stay in their stage)."""
        from emulator.topology import live as topology_live
        from emulator.topology.policy import search_policy

        assert self.topology is not None
        point, _ = search_policy(topology_live.live_spec(self.topology, self.state))
        out = {n: (s.t, s.n_p, s.n_d) for n, s in point.settings.items()}
        for region, s in point.settings.items():
            self._region_split(region, s.n_p, s.n_d, t=s.t, routing="threshold",
                               shares=dict(s.shares) if s.shares else None)
        return out

    def apply_bound_optimum(self) -> dict[str, tuple[int, int]]:
        """`O` on a topology: every region to the routing bound's split at the live state and
        `lp` routing (the bound's per-bin shares)."""
        from emulator.topology import live as topology_live

        assert self.topology is not None
        model = self.model or topology_live.live_model(self.topology, self.state)
        out = dict(model.bound_split)
        for region, (n_p, n_d) in out.items():
            self._region_split(region, n_p, n_d, routing="lp")
        return out

    def _region_split(self, region: str, n_p: int, n_d: int, **knobs: object) -> None:
        """Alive targets plus the region's failed instances, kept in their stage."""
        regions = self.objects.get("regions") if self.objects else None
        r = dict(regions[region]) if isinstance(regions, dict) else {}
        alive = {n: (p, d) for n, _, p, d, _ in self.state.regions}
        now_p, now_d = alive.get(region, (n_p, n_d))
        failed_p = int(r.get("n_p", n_p)) - now_p
        failed_d = int(r.get("n_d", n_d)) - now_d
        self.set_region(region, n_p=n_p + max(failed_p, 0), n_d=n_d + max(failed_d, 0),
                        **knobs)

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

    def inject(self, incident: Incident | str) -> None:
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
                return events_of(self.driver.decisions())
            except RuntimeError:  # the emulator thread has stopped
                pass
        return events_of(self.tick.snapshot.decisions if self.tick else ())

    def scorecard(self) -> dict[str, object]:
        """The running drill's scorecard; the emulator stays paused at the drill's end."""
        assert self.driver is not None and self.run.drill is not None
        if self.live:
            self.driver.pause(True)
        return self.driver.scorecard(self.run.drill)

    def point_at(self, snap: Snapshot) -> OperatingPoint:
        """The live Λmax line at one snapshot: the model at what was alive then (instances,
        link capacity, mix, knobs), in the mode driving the panel, so chart, strip and panel
        show one Λmax. Cached on the live state (it changes rarely)."""
        key = (LiveState.of(snap), self.mode)
        if key not in self._points:
            if len(self._points) > 256:
                self._points.clear()
            self._points[key] = effective_point(self.system, key[0], self.mode)
        return self._points[key]
