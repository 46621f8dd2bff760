"""The one place the #12 tests touch the engine's public API (presets.load, Emulation,
run_until, snapshot, timeline, drills): after the engine refactor only this file needs
re-pointing."""

from __future__ import annotations

from typing import Any, NamedTuple

from emulator.effective import LiveState
from emulator.model import System
from emulator.scenario import presets
from emulator.scenario.drills import load_drill
from emulator.sim.engine import Emulation
from emulator.sim.runs.drills import drill_emulation
from emulator.sim.runs.score import scorecard
from emulator.stability import Row


def system_of(preset: str) -> System:
    """A shipped preset's nominal System."""
    return presets.load(preset).system


def _sample(emu: Emulation, until: float, every: float) -> list[Row]:
    rows = []
    t = every
    while t <= until + 1e-9:
        emu.run_until(t)
        rows.append(Row.of(emu.snapshot()))
        t += every
    return rows


def rows_at_load(preset: str, load: float, seed: int, duration: float,
                 every: float = 5.0) -> tuple[list[Row], LiveState]:
    """Snapshot rows every `every` simulated seconds of a run at `load` x exact Lambda_max,
    and the live state at its end."""
    with Emulation(presets.load(preset), load=load, seed=seed, duration=duration) as emu:
        rows = _sample(emu, duration, every)
        return rows, LiveState.of(emu.snapshot())


class DrillProbe(NamedTuple):
    snapshot: Any  # emulator.sim.books.snapshot.Snapshot
    rows: list[Row]
    state: LiveState
    system: System  # the drill's nominal system (its overrides applied)


def drill_at(drill: str, at: float, seed: int | None = None, scheduler: bool = False,
             every: float = 5.0) -> DrillProbe:
    """A drill run `at` seconds in (scheduler off by default: the incident alone)."""
    d = load_drill(drill)
    emu, _ = drill_emulation(d, seed, scheduler)
    with emu:
        rows = _sample(emu, at, every)
        snap = emu.snapshot()
        return DrillProbe(snap, rows, LiveState.of(snap),
                          d.scenario.system)


def drill_state_at(drill: str, at: float, seed: int | None = None,
                   scheduler: bool = False) -> tuple[LiveState, System]:
    """The live state `at` seconds into a drill and the drill's nominal System."""
    p = drill_at(drill, at, seed, scheduler, every=at)
    return p.state, p.system


def drill_with_knobs_at(drill: str, at: float, choose, seed: int | None = None) -> dict:
    """Run a drill (scheduler off), at `at` set (t, N_p, N_d) = choose(live state, system) as
    an operator pressing `o` would, run to the end; the scorecard as a dict."""
    d = load_drill(drill)
    emu, rec = drill_emulation(d, seed, False)
    with emu:
        emu.run_until(at)
        t, n_p, n_d = choose(LiveState.of(emu.snapshot()),
                             d.scenario.system)
        emu.change(t=t, n_p=n_p, n_d=n_d)
        emu.run_until(d.duration)
        return scorecard(emu, rec, d.scoring).to_dict()


def engine_point_and_state(preset: str, paradigm: str, at: float = 60.0, mode: str = "exact"):
    """(the engine's own model_point, the live state) `at` seconds into a healthy run."""
    with Emulation(presets.load(preset), paradigm=paradigm, seed=1, duration=at) as emu:
        emu.run_until(at)
        return emu.model_point(mode), LiveState.of(emu.snapshot())
