"""The `[scheduler]` section: the dual-timescale scheduler's settings (emulator.sim.control.scheduler
runs it). Off unless the section exists; the paper gives no numbers, these defaults are this
project's."""

from __future__ import annotations

from dataclasses import dataclass

from emulator.model import MODES
from emulator.scenario.reader import (
    Reader,
    at_least,
    between,
    non_negative,
    one_of,
    positive,
    read_fields,
    setting,
)
from emulator.units import parse_duration

FRACTION = between(0.0, 1.0)


@dataclass(frozen=True)
class SchedulerConfig:
    enabled: bool = setting(False, parse=bool, present=True)  # a [scheduler] section turns it on
    mode: str = setting("exact", parse=str, check=one_of(*MODES))  # model mode of the re-solves
    period: float = setting(10.0, parse=parse_duration, check=positive)  # short loop, seconds
    egress_high: float = setting(0.85, check=positive)  # PrfaaS egress / link capacity trigger
    queue_high: int = setting(8, parse=int, check=positive)  # queued prefills that trigger
    capacity_change: float = setting(0.1, check=FRACTION)  # relative link-capacity change
    capacity_tau: float = setting(30.0, parse=parse_duration, check=non_negative)  # EWMA, s
    p_drift: float = setting(0.1, check=FRACTION)  # change of the routed share since the solve
    t_margin: float = setting(0.05, check=non_negative)  # a new t must gain this much
    history: int = setting(512, parse=int, check=at_least(16))  # lengths the short loop uses
    min_samples: int = setting(256, parse=int, check=positive)  # no re-solve on fewer
    long_period: float = setting(120.0, parse=parse_duration, check=non_negative)  # 0: off
    long_history: int = setting(2048, parse=int, check=positive)
    gain_margin: float = setting(0.05, check=non_negative)  # convert only for this much gain
    stress: float = setting(0.8, check=non_negative)  # ... under this x the current Lambda
    min_dwell: float = setting(300.0, parse=parse_duration, check=non_negative)  # s between


def parse_scheduler(r: Reader | None) -> SchedulerConfig:
    if r is None:
        return SchedulerConfig()
    kw = read_fields(SchedulerConfig, r)
    if kw["long_history"] < kw["history"]:
        raise r.error("long_history", f"must be at least history ({kw['history']})")
    r.finish()
    return SchedulerConfig(**kw)
