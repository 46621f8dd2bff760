"""The model's SLO-bound rate as an upper bound on a candidate's emulated SLO goodput.

The bisection of `goodput.slo_goodput` never returns more than Lambda_max (1 - 2^-steps), a hard
ceiling. The analytic SLO-bound rate (emulator/latency.py, P90 TTFT at the SLO) is far tighter;
it is widened by `MARGIN` for the model's error and for the noise of short emulations, whose P90
can pass the SLO a little above the true SLO-bound rate.

Why the bound prunes candidates but does not bracket each bisection: deciding a probe from the
model, however wide the margin, would change per-seed results the plain bisection produces (a
short run's P90 is noisy near the SLO-bound rate). Dropping a whole candidate that a cheaper
finished one beats on the bound changes neither the best candidate nor the Pareto front.
"""

from __future__ import annotations

import math

from emulator.latency import predict, slo_rate
from emulator.model import Knobs
from emulator.paradigm import Paradigm
from emulator.planner.goodput import Settings
from emulator.planner.prune import Scored, candidate_system
from emulator.planner.space import Candidate
from emulator.scenario.scenario import Scenario

MARGIN = 0.25  # the emulated SLO goodput lies below (1 + MARGIN) x the model's rate


def _point(sc: Scenario, c: Candidate, t: float):
    """(system, knobs, profiles) the latency layer evaluates a candidate at."""
    system = candidate_system(sc.system, c)
    t = t if math.isfinite(t) else system.lengths.support[1]
    knobs = Knobs(t=t, n_p=c.n_p, n_d=c.n_d, n_prfaas=system.n_prfaas, bandwidth=system.bandwidth)
    profiles = (system.local, system.local) if c.paradigm == Paradigm.HOMOGENEOUS else None
    return system, knobs, profiles


def model_rate(sc: Scenario, s: Scored, settings: Settings) -> float:
    """The model's SLO-bound rate (P90 TTFT) of one candidate."""
    system, knobs, profiles = _point(sc, s.cand, s.t)
    return slo_rate(system, knobs, settings.slo.ttft_p90, 0.9, profiles=profiles,
                    link_latency=sc.sim.link_latency, rdma_latency=sc.sim.rdma_latency, steps=20)


def zero_load_p90(sc: Scenario, c: Candidate, t: float) -> float:
    """The model's P90 TTFT of a candidate with no queueing (an offered rate near 0): no rate
    meets a TTFT target below it, so such a candidate's goodput is 0 whatever the emulation."""
    system, knobs, profiles = _point(sc, c, t)
    return predict(system, knobs, 1e-9, profiles=profiles, link_latency=sc.sim.link_latency,
                   rdma_latency=sc.sim.rdma_latency).p90


def upper_bound(s: Scored, rate: float, settings: Settings) -> float:
    """min(the bisection's own ceiling, (1 + MARGIN) x the model's rate)."""
    return min(s.lambda_max * (1 - 2.0 ** -settings.steps), (1 + MARGIN) * rate)
