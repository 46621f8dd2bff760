"""The emulator's own Lambda_max: the highest offered rate at which every stage keeps up, found
by bisection, and the stage that saturates first.

A stage keeps up over a run when, in the run's second half, it serves what it is offered (the
relative deficit, 1 - served / offered, stays under `eps`); measuring the second half only
leaves out the pipeline filling at the start. The saturating stage is measured at an overload:
there every saturated stage serves at its capacity, and the one whose capacity over its share of
the traffic is lowest is the one that saturates first (PrfaaS is reported as `link` when the link
was full meanwhile).
"""

from __future__ import annotations

from dataclasses import dataclass

from emulator.model import STAGES
from emulator.scenario.scenario import Scenario
from emulator.sim.engine import Emulation


@dataclass(frozen=True)
class Probe:
    rate: float
    deficits: dict[str, float]  # stage -> 1 - served / offered over the second half
    stable: bool


@dataclass(frozen=True)
class Capacity:
    rate: float  # highest rate found stable
    unstable_above: float  # lowest rate found unstable
    probes: tuple[Probe, ...]


def probe(scenario: Scenario, rate: float, *, duration: float, seed: int = 1,
          eps: float = 0.01, **kw) -> Probe:
    with Emulation(scenario, rate=rate, duration=duration, seed=seed, **kw) as emu:
        j = emu.run().json
    deficits = {}
    for s in STAGES:
        st = j["stages"][s]
        off = st["offered_rate"]
        deficits[s] = 1.0 - st["served_rate"] / off if off > 0 else 0.0
    return Probe(rate, deficits, max(deficits.values()) <= eps)


def find_capacity(scenario: Scenario, guess: float, *, duration: float, seed: int = 1,
                  rel_tol: float = 0.01, eps: float = 0.01, **kw) -> Capacity:
    """Bisect between guess / 1.25 and guess * 1.25 (widened if needed) to `rel_tol`."""
    probes: list[Probe] = []

    def stable(rate: float) -> bool:
        p = probe(scenario, rate, duration=duration, seed=seed, eps=eps, **kw)
        probes.append(p)
        return p.stable

    lo, hi = guess / 1.25, guess * 1.25
    while not stable(lo):
        hi, lo = lo, lo / 1.5
    while stable(hi):
        lo, hi = hi, hi * 1.5
    while (hi - lo) / lo > rel_tol:
        mid = (lo + hi) / 2
        if stable(mid):
            lo = mid
        else:
            hi = mid
    return Capacity(lo, hi, tuple(probes))


def saturating_stage(scenario: Scenario, rate: float, *, duration: float, seed: int = 1,
                     **kw) -> tuple[str, dict[str, float]]:
    """Run at `rate` (an overload) and return (the stage with the lowest capacity per unit of
    offered traffic, those capacities in req/s of total offered rate)."""
    with Emulation(scenario, rate=rate, duration=duration, seed=seed, **kw) as emu:
        j = emu.run().json
    total = sum(j["stages"][s]["offered_rate"] for s in ("prfaas", "pd-p"))
    ceilings = {}
    for s in STAGES:
        st = j["stages"][s]
        if st["offered_rate"] > 0 and st["queue_growth"] > 0.01 * st["offered_rate"]:
            ceilings[s] = st["served_rate"] * total / st["offered_rate"]
    if not ceilings:
        raise ValueError(f"nothing saturates at {rate:.3f} req/s: offer more")
    first = min(ceilings, key=lambda s: ceilings[s])
    if first == "prfaas" and j["link"]["utilization_second_half"] > j["stages"]["prfaas"][
            "utilization"]:
        first = "link"
    return first, ceilings
