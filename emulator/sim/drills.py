"""Running a drill (emulator.scenario.drills): an emulation of its scenario with the
scorecard's recorder attached, and the `drill --json` object."""

from __future__ import annotations

from emulator.scenario.drill import Drill
from emulator.sim.engine import Emulation
from emulator.sim.record import Recorder, attach
from emulator.sim.score import scorecard


def drill_emulation(drill: Drill, seed: int | None = None,
                    scheduler: bool | None = None) -> tuple[Emulation, Recorder]:
    """A fresh emulation of the drill (incidents scheduled; scheduler on, off or, None, as the
    file says) and its recorder."""
    emu = Emulation(drill.with_scheduler(scheduler), seed=seed)
    return emu, attach(emu)


def run_drill(drill: Drill, seed: int | None = None, scheduler: bool | None = None) -> dict:
    """Run to the end: the `run --json` object plus `drill` and `scorecard` (no timing)."""
    emu, rec = drill_emulation(drill, seed, scheduler)
    with emu:
        out = emu.run().to_json()
        out["drill"] = drill.name
        out["scorecard"] = scorecard(emu, rec, drill.scoring).to_dict()
    return out
