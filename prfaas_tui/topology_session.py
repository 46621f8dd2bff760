"""The live state of the topology view, without Textual: the running topology's emulation (the
issue-20 engine, on its virtual-time loop, paced through the dashboard's `Driver`), its latest
tick, and the model at the live state (`emulator.topology.live`).

Every number the view shows comes from two objects: the tick's snapshot `topology` objects
(`regions`, `sites`, `links`: the engine's report, the same ones `snapshot --format json`
prints) and `model` (the threshold policy at the live settings and the routing bound at the live
capacities, with shadow prices). Knob changes go to the engine through the driver
(`emulator.sim.topology_live`); a refusal is a `KnobError` with one line, and nothing changes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from emulator.scenario.scenario import Scenario
from emulator.topology.live import LiveModel, LiveState, live_model
from emulator.topology.spec import Topology
from prfaas_tui.live import Driver, Tick, attach_recorder
from prfaas_tui.modelview import DEFAULT_SPEED

if TYPE_CHECKING:
    from emulator.sim.drills import Drill

LIVE_KEY = "live_state"  # the snapshot's topology entry that carries the LiveState


@dataclass(frozen=True)
class _Pace:
    """What the driver reads of the dashboard's settings: the speed."""

    speed: float


class LiveTopology:
    """An Emulation whose snapshots also carry the topology's live state and each region's
    site policy (read on the emulator thread, so a tick is one consistent instant)."""

    def __init__(self, emu: Any) -> None:
        self.emu = emu

    def __getattr__(self, name: str) -> Any:
        return getattr(self.emu, name)

    def snapshot(self) -> Any:
        from emulator.sim.topology_live import live_state, region_routing

        snap = self.emu.snapshot()
        policies = {r: region_routing(self.emu, r) for r in self.emu.topology.regions}
        return replace(snap, topology={**snap.topology, LIVE_KEY: live_state(self.emu),
                                       "policies": policies})

    def close(self) -> None:
        self.emu.close()


def make_topology_emulation(scenario: Scenario, seed: int | None = None,
                            routing: str | None = None) -> Any:
    """The engine on a topology preset, with its routing bound (lp routing, --load)."""
    from emulator.sim.engine import Emulation
    from emulator.sim.topology import topology_bound

    return Emulation(scenario, seed=seed, bound=topology_bound(scenario), routing=routing)


class TopologySession:
    """One topology view's live state; see the module docstring. `post_tick(tick)` and
    `post_error(text, generation)` are called on the emulator thread."""

    def __init__(self, scenario: Scenario, *, post_tick: Callable[[Tick], None],
                 post_error: Callable[[str, int], None], live: bool = True,
                 seed: int | None = None, speed: float = DEFAULT_SPEED,
                 drill: Drill | None = None) -> None:
        self.scenario, self.drill = scenario, drill
        self.live, self.seed, self.speed = live, seed, speed
        self._post_tick, self._post_error = post_tick, post_error
        self.generation = 0
        self.driver: Driver | None = None
        self.tick: Tick | None = None
        self.model: LiveModel | None = None
        self._state: LiveState | None = None
        self._models: dict[LiveState, LiveModel] = {}
        self._gains: dict[tuple, float] = {}
        self.sent = 0

    @property
    def base_name(self) -> str:
        return self.scenario.name.split(":", 1)[0]

    @property
    def base(self) -> Topology:
        return self.scenario.declared_topology

    # -- the emulation ---------------------------------------------------------------------------
    def start(self, at: float | None = None) -> None:
        gen, drill, sc, seed = self.generation, self.drill, self.scenario, self.seed

        def factory(_settings: Any, seed: int | None = None) -> LiveTopology:
            return LiveTopology(make_topology_emulation(sc, seed))

        self.driver = Driver(
            _Pace(self.speed), live=self.live, seed=seed, generation=gen,  # type: ignore[arg-type]
            attach=(lambda emu: attach_recorder(emu.emu)) if drill else None,
            stop_at=drill.duration if drill else None, factory=factory,
            on_tick=self._post_tick, on_error=lambda text, fatal: self._post_error(text, gen))
        self.driver.start()
        if at:
            self.take(self.driver.run_to(at))
        elif not self.live:
            self.take(self.driver.current())

    def load(self, scenario: Scenario, drill: Drill | None = None) -> None:
        """Replace the running topology (or start a drill): a fresh emulation (`start`)."""
        self.stop()
        self.generation += 1
        self.scenario, self.drill = scenario, drill
        self.tick, self.model, self._state = None, None, None
        self._models.clear()

    def stop(self) -> None:
        if self.driver is not None:
            self.driver.stop()

    def take(self, tick: Tick | None) -> bool:
        """Take a tick of the current emulation; the model follows the live state."""
        if tick is None or tick.generation != self.generation:
            return False
        self.tick = tick
        state = tick.snapshot.topology[LIVE_KEY]
        if state != self._state:
            self._state = state
            if state not in self._models:
                if len(self._models) > 64:
                    self._models.clear()
                self._models[state] = live_model(self.base, state)
            self.model = self._models[state]
        return True

    @property
    def objects(self) -> dict[str, Any] | None:
        """The tick's `regions`, `sites`, `links` (and live state, policies)."""
        return self.tick.snapshot.topology if self.tick is not None else None

    @property
    def state(self) -> LiveState:
        return self._state if self._state is not None else LiveState.of_spec(self.base)

    # -- changes (each checked on the emulator thread: KnobError, nothing changed) ---------------
    def _change(self, kind: str, name: str, fn: Callable[[Any], None], **knobs: Any) -> None:
        """Check the change on the running spec (KnobError: refused, nothing changed), then
        hand it to the engine (live: between slices; synchronous: now)."""
        if self.driver is None:
            return
        self.check(kind, name, **knobs)
        self.sent += 1
        self.take(self.driver.submit(fn))

    def set_region(self, region: str, **knobs: Any) -> None:
        from emulator.sim.topology_live import set_region

        self._change("region", region, lambda emu: set_region(emu.emu, region, **knobs),
                     **knobs)

    def set_site(self, site: str, instances: int) -> None:
        from emulator.sim.topology_live import set_site

        self._change("site", site, lambda emu: set_site(emu.emu, site, instances),
                     instances=instances)

    def set_link(self, link: str, bandwidth: float) -> None:
        from emulator.sim.topology_live import set_link

        self._change("link", link, lambda emu: set_link(emu.emu, link, bandwidth),
                     bandwidth=bandwidth)

    def check(self, kind: str, name: str, **knobs: Any) -> None:
        """KnobError unless the change could run now (the running spec's checks)."""
        from emulator.scenario.knobs import best_cache_problem, check_element
        from emulator.sim.topology_live import running_spec

        assert self.driver is not None
        spec, bound = self.driver.call(lambda emu: (running_spec(emu.emu),
                                                    emu.emu.bound is not None))
        check_element(spec, kind, name, has_bound=bound,
                      cache_problem=best_cache_problem(self.scenario.sim), **knobs)

    def step_gain(self, kind: str, name: str) -> tuple[float, float]:
        """(step, what the bound gains by it) for the selected element: a link +10 Gbps of
        bandwidth, a site or a region +1 instance (re-solved once per live state)."""
        from emulator.topology.live import LINK_STEP_GBPS, step_gain

        step = LINK_STEP_GBPS if kind == "link" else 1.0
        key = (self.state, kind, name)
        if key not in self._gains:
            if len(self._gains) > 256:
                self._gains.clear()
            self._gains[key] = step_gain(self.base, self.state, kind, name, step)
        return step, self._gains[key]

    def running_spec(self) -> Topology:
        from emulator.sim.topology_live import running_spec

        assert self.driver is not None
        return self.driver.call(lambda emu: running_spec(emu.emu))

    def region_policy(self, region: str) -> str:
        obj = self.objects
        return obj["policies"][region] if obj else self.base.routing

    def apply_policy_optimum(self) -> dict[str, tuple[float, int, int]]:
        """`o`: every region to the best threshold policy at the live state (its thresholds
        and splits; the failed instances stay in their stage)."""
        from emulator.topology.live import live_spec
        from emulator.topology.policy import search_policy

        spec = live_spec(self.base, self.state)
        point, _ = search_policy(spec)
        out = {n: (s.t, s.n_p, s.n_d) for n, s in point.settings.items()}
        for region, s in point.settings.items():
            self._region_split(region, s.n_p, s.n_d, t=s.t, routing="threshold",
                               shares=s.shares if s.shares else None)
        return out

    def apply_bound_optimum(self) -> dict[str, tuple[int, int]]:
        """`O`: every region to the routing bound's split at the live state and `lp` routing
        (the bound's per-bin shares)."""
        model = self.model or live_model(self.base, self.state)
        out = dict(model.bound_split)
        for region, (n_p, n_d) in out.items():
            self._region_split(region, n_p, n_d, routing="lp")
        return out

    def _region_split(self, region: str, n_p: int, n_d: int, **kw: Any) -> None:
        """Alive targets plus the region's failed instances, kept in their stage."""
        r = dict(self.objects["regions"][region]) if self.objects else {}
        state = {n: (p, d) for n, _, p, d, _ in self.state.regions}
        failed_p = r.get("n_p", n_p) - state.get(region, (n_p, n_d))[0]
        failed_d = r.get("n_d", n_d) - state.get(region, (n_p, n_d))[1]
        self.set_region(region, n_p=n_p + max(failed_p, 0), n_d=n_d + max(failed_d, 0), **kw)

    # -- the clock -----------------------------------------------------------------------------
    def pause(self) -> None:
        if self.driver is not None:
            self.take(self.driver.pause())

    def step(self, seconds: float) -> None:
        if self.driver is not None:
            self.take(self.driver.step(seconds))

    def set_speed(self, speed: float) -> None:
        self.speed = speed
        if self.driver is not None:
            self.take(self.driver.submit(lambda emu: setattr(self.driver, "_speed", speed)))

    def scorecard(self) -> dict:
        assert self.driver is not None and self.drill is not None
        if self.live:
            self.driver.pause(True)
        return self.driver.scorecard(self.drill)
