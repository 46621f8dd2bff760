"""Running a drill (emulator.scenario.drills): an emulation of its scenario with the
scorecard's recorder attached, and the `drill --json` object."""

from __future__ import annotations

from emulator.scenario.drill import Drill
from emulator.sim.engine import Emulation
from emulator.sim.health import served_warnings
from emulator.sim.record import Recorder, attach
from emulator.sim.score import scorecard


def drill_emulation(drill: Drill, seed: int | None = None, scheduler: bool | None = None,
                    max_requests: float | None = None) -> tuple[Emulation, Recorder]:
    """A fresh emulation of the drill (incidents scheduled; scheduler on, off or, None, as the
    file says) and its recorder; arrivals stop at `max_requests` (the command's cap)."""
    emu = Emulation(drill.with_scheduler(scheduler), seed=seed)
    if max_requests is not None:
        emu.workload.limit = max_requests
    return emu, attach(emu)


def run_drill(drill: Drill, seed: int | None = None, scheduler: bool | None = None,
              max_requests: float | None = None) -> dict:
    """Run to the end: the `run --json` object plus `drill` and `scorecard` (no timing)."""
    emu, rec = drill_emulation(drill, seed, scheduler, max_requests)
    with emu:
        out = emu.run().to_json()
        out["drill"] = drill.name
        out["scorecard"] = scorecard(emu, rec, drill.scoring).to_dict()
        if warnings := served_warnings(emu):
            out["warnings"] = warnings
    return out
