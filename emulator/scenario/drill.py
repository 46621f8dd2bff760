"""A drill as the simulator receives it: the scenario (base preset, overrides, incidents,
scheduler) and how to score it. Drill files load through emulator.scenario.drills."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from emulator.scenario.reader import between, positive, setting
from emulator.scenario.scenario import Scenario
from emulator.units import parse_duration

EXPECT_MAX = ("lost", "recovery_seconds", "peak_ttft_p90", "ttft_p90_during")  # at most
EXPECT_MIN = ("slo_attainment",)  # at least


@dataclass(frozen=True)
class Scoring:
    """How a drill is scored: the bars of [expect] and the recovery criterion of [score]."""

    expect: dict[str, float] = field(default_factory=lambda: {"lost": 0})
    # [score]: seconds of traffic each recovery window covers; served within this share of
    # offered counts as recovered
    recovery_window: float = setting(300.0, parse=parse_duration, check=positive)
    tolerance: float = setting(0.05, check=between(0.0, 1.0))


@dataclass(frozen=True)
class Drill:
    name: str
    description: str
    path: str
    scenario: Scenario  # the base preset with the drill's overrides, incidents and scheduler
    scoring: Scoring = field(default_factory=Scoring)
    # the drill file's own tables (everything but name, description, preset, expect, score):
    # what `emulator.scenario.drills.drill_on` lays over another preset
    overrides: dict = field(default_factory=dict, repr=False, compare=False)

    @property
    def duration(self) -> float:
        return self.scenario.sim.duration

    @property
    def timeline(self) -> tuple[tuple[float, float | None, str], ...]:
        """(start, end, label) of the scripted incidents, for a timeline view (a cache flush
        is instantaneous: end == start)."""
        return tuple((i.at, i.at + (i.duration or 0.0), i.label)
                     for i in self.scenario.sim.incidents)

    def with_scheduler(self, on: bool | None) -> Scenario:
        """The drill's scenario with its scheduler on or off (off: the static baseline; None:
        as the drill file says)."""
        if on is None:
            return self.scenario
        sim = self.scenario.sim
        return replace(self.scenario, sim=replace(sim, scheduler=replace(sim.scheduler,
                                                                         enabled=on)))
