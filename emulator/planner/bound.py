"""The model's SLO-bound rate as an upper bound on a candidate's emulated SLO goodput.

The bisection of `goodput.slo_goodput` never returns more than Lambda_max (1 - 2^-steps), a hard
ceiling. The analytic SLO-bound rate (emulator/latency.py, P90 TTFT at the SLO) is far tighter;
it is widened by `MARGIN` for the model's error and for the noise of short emulations, whose P90
can pass the SLO a little above the true SLO-bound rate.
"""

from __future__ import annotations

import math

from emulator.latency import slo_rate
from emulator.model import Knobs
from emulator.planner.goodput import Settings
from emulator.planner.prune import Scored, candidate_system
from emulator.presets import Scenario

MARGIN = 0.25


def upper_bound(sc: Scenario, s: Scored, settings: Settings) -> float:
    """min(bisection ceiling, (1 + MARGIN) x the model's SLO-bound rate) for one candidate."""
    c = s.cand
    system = candidate_system(sc.system, c)
    ceiling = s.lambda_max * (1 - 2.0 ** -settings.steps)
    t = s.t if math.isfinite(s.t) else system.lengths.support[1]
    knobs = Knobs(t=t, n_p=c.n_p, n_d=c.n_d, n_prfaas=system.n_prfaas, bandwidth=system.bandwidth)
    profiles = (system.local, system.local) if c.paradigm == "homogeneous" else None
    rate = slo_rate(system, knobs, settings.slo.ttft_p90, 0.9, profiles=profiles,
                    link_latency=sc.sim.link_latency, rdma_latency=sc.sim.rdma_latency, steps=20)
    return min(ceiling, (1 + MARGIN) * rate)


def upper_bounds(sc: Scenario, scored: list[Scored], settings: Settings) -> dict[str, float]:
    return {s.cand.key: upper_bound(sc, s, settings) for s in scored}
