"""Running a drill (emulator.scenario.drills): an emulation of its scenario with the
scorecard's recorder attached, and the `drill --json` object."""

from __future__ import annotations

from emulator.scenario.drill import Drill
from emulator.sim.engine import Emulation
from emulator.sim.runs.health import served_warnings
from emulator.sim.runs.record import Recorder, attach
from emulator.sim.runs.score import scorecard
from emulator.sim.runtime.topology import topology_bound


def drill_emulation(drill: Drill, seed: int | None = None, scheduler: bool | None = None,
                    routing: str | None = None, max_requests: float | None = None
                    ) -> tuple[Emulation, Recorder]:
    """A fresh emulation of the drill (incidents scheduled; scheduler on, off or, None, as the
    file says; a topology's site policy `routing`, None: the preset's) and its recorder;
    arrivals stop at `max_requests` (the command's cap)."""
    sc = drill.with_scheduler(scheduler)
    if sc.declared_topology is None:
        emu = Emulation(sc, seed=seed, routing=routing)
    else:
        emu = Emulation(sc, seed=seed, routing=routing, bound=topology_bound(sc))
    if max_requests is not None:
        emu.set_arrival_cap(max_requests)
    return emu, attach(emu)


def run_drill(drill: Drill, seed: int | None = None, scheduler: bool | None = None,
              routing: str | None = None, max_requests: float | None = None) -> dict:
    """Run to the end: the `run --json` object plus `drill` and `scorecard` (no timing)."""
    emu, rec = drill_emulation(drill, seed, scheduler, routing, max_requests)
    with emu:
        out = emu.run().to_json()
        out["drill"] = drill.name
        out["scorecard"] = scorecard(emu, rec, drill.scoring).to_dict()
        if warnings := served_warnings(emu):
            out["warnings"] = warnings
    return out
