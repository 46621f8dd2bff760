"""The one place the #12 tests touch the engine's public API (presets.load, Emulation,
run_until, snapshot, timeline): after the engine refactor only this file needs re-pointing."""

from __future__ import annotations

from emulator import presets
from emulator.effective import LiveState
from emulator.model import System
from emulator.sim.drills import load_drill
from emulator.sim.engine import Emulation
from emulator.stability import Row


def rows_at_load(preset: str, load: float, seed: int, duration: float,
                 every: float = 5.0) -> tuple[list[Row], LiveState]:
    """Snapshot rows every `every` simulated seconds of a run at `load` x exact Lambda_max,
    and the live state at its end."""
    with Emulation(presets.load(preset), load=load, seed=seed, duration=duration) as emu:
        rows = []
        t = every
        while t <= duration + 1e-9:
            emu.run_until(t)
            rows.append(Row.of(emu.snapshot()))
            t += every
        return rows, LiveState.of(emu.snapshot(), emu.timeline.lengths_now())


def drill_state_at(drill: str, at: float, seed: int | None = None,
                   scheduler: bool = False) -> tuple[LiveState, System]:
    """The live state `at` seconds into a drill (scheduler off by default: the incident alone)
    and the drill's nominal System (its overrides applied)."""
    d = load_drill(drill)
    with d.emulation(seed=seed, scheduler=scheduler) as emu:
        emu.run_until(at)
        return LiveState.of(emu.snapshot(), emu.timeline.lengths_now()), d.scenario.system
