"""Stage 1 of the planner: every candidate's ceiling on its goodput and its cost, and the
pruning of the space before any emulation runs.

A pair candidate fixes its split and threshold, so the closed-form model scores all of them at
once (exact-mode Lambda_max, vectorized); a topology candidate's ceiling is the routing bound
(no routing sustains more). The pair's space is then pruned by these rules, in order:
1. infeasible: Lambda_max = 0 (no decode, no prefill path for some requests);
2. per hardware configuration (paradigm, N_prfaas, pool, B_out and the link's connections
   where searched) keep the `per_config` best (t, split) choices by Lambda_max: the model
   already says the others waste that hardware;
3. cost dominance: drop c when a candidate costing no more has a bound above
   Lambda_max(c) / (1 - margin) — c cannot win on goodput nor on goodput per dollar.
A topology candidate has no (t, split) choice to rank, and rules 1 and 3 rest on the pair
model's tightness; a topology plan prunes only in the waves, by emulated goodput against each
bound, which drops nothing that could be the best or on the front.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from emulator.model import STAGES, SplitStats, System, ceilings, split_stats
from emulator.paradigm import Paradigm
from emulator.planner.prices import Prices, pair_cost
from emulator.planner.space import AUTO_T, Candidate
from emulator.topology.bound import BoundError, routing_bound
from emulator.topology.spec import Topology

MODE = "exact"


@dataclass(frozen=True)
class Scored:
    cand: Candidate
    t: float  # the threshold actually used (AUTO_T resolved; a topology's: AUTO_T, its policy's)
    lambda_max: float  # the ceiling: exact-mode Lambda_max, or a topology's routing bound
    binding: tuple[str, ...]  # what binds at the ceiling
    cost_per_hour: float | None
    pruned: str | None = None  # the rule that removed it, or None


def candidate_system(system: System, c: Candidate) -> System:
    """The model's System for one pair candidate (homogeneous: its pool with the local-type
    profile)."""
    if c.paradigm == Paradigm.HOMOGENEOUS:
        prof = system.homogeneous_profile or system.local
        return replace(system, prfaas=prof, local=prof, n_prfaas=0, local_pool=c.n_p + c.n_d,
                       homogeneous_pool=c.n_p + c.n_d, homogeneous_profile=prof)
    return replace(system, n_prfaas=c.n_prfaas, local_pool=c.n_p + c.n_d, bandwidth=c.bandwidth)


def score_all(system: System, cands: list[Candidate]) -> list[Scored]:
    """Lambda_max (exact mode) of every pair candidate. The length statistics depend only on
    t and the profiles, so they are computed once per distinct threshold; the rest is
    arithmetic."""
    hi = system.lengths.support[1]
    grid = system.lengths.threshold_grid()
    out: list[Scored | None] = [None] * len(cands)
    by_profile: dict[str, list[int]] = {}
    for i, c in enumerate(cands):
        by_profile.setdefault(c.paradigm == Paradigm.HOMOGENEOUS, []).append(i)
    # n_prfaas, n_p, n_d, bandwidth of each, read once (the space may hold 10^5 candidates)
    knobs = np.array([(c.sites[0][1], c.split.n_p, c.split.n_d, c.links[0][1])  # type: ignore[union-attr]
                      for c in cands], dtype=float).reshape(-1, 4)
    for own_pool, idx in by_profile.items():
        sysk = candidate_system(system, cands[idx[0]])
        ts = np.array([hi if own_pool else cands[i].t for i in idx], dtype=float)
        auto = ts == AUTO_T
        # resolve AUTO_T per deployment on the full grid
        st_grid = split_stats(system.lengths, sysk.prfaas, sysk.local, grid, MODE)
        resolved: dict[tuple, float] = {}
        for j in np.flatnonzero(auto):
            c = cands[idx[j]]
            key = (c.n_prfaas, c.n_p, c.n_d, c.bandwidth)
            if key not in resolved:
                *_, lam = ceilings(st_grid, c.n_prfaas, c.n_p, c.n_d, c.bandwidth, system.decode)
                resolved[key] = float(grid[int(np.argmax(lam))])
            ts[j] = resolved[key]
        uniq, inv = np.unique(ts, return_inverse=True)
        st = split_stats(system.lengths, sysk.prfaas, sysk.local, uniq, MODE)
        st = SplitStats(*(getattr(st, f)[inv] for f in ("t", "p", "l_long", "l_short", "t_long",
                                                         "s_long", "t_short")))
        cols = knobs[idx]
        *_, stack, lam = ceilings(st, cols[:, 0], cols[:, 1], cols[:, 2], cols[:, 3],
                                  system.decode, outer=False)
        binding = np.argmin(stack, axis=0)
        for j, i in enumerate(idx):
            out[i] = Scored(cands[i], float(ts[j]), float(lam[j]), (STAGES[int(binding[j])],),
                            pair_cost(system, cands[i]))
    return out  # type: ignore[return-value]


def score_topology(base: Topology, cands: list[Candidate], prices: Prices) -> list[Scored]:
    """Each topology candidate's routing bound (its ceiling on any goodput) and cost."""
    out = []
    for c in cands:
        topo = c.topology(base)
        try:
            b = routing_bound(topo)
            lam, binding = b.lambda_max, tuple(b.binding)
        except BoundError:
            lam, binding = 0.0, ()
        out.append(Scored(c, AUTO_T, lam, binding, prices.cost_per_hour(topo)))
    return out


def prune(system: System, cands: list[Candidate], *, per_config: int = 3,
          margin: float = 0.10) -> list[Scored]:
    """Score all pair candidates; mark the pruned ones with the rule that removed them."""
    scored = score_all(system, cands)
    groups: dict[tuple, list[int]] = {}
    for i, s in enumerate(scored):
        if not s.lambda_max > 0:
            scored[i] = replace(s, pruned="infeasible")
            continue
        c = s.cand
        groups.setdefault((c.paradigm, c.n_prfaas, c.n_p + c.n_d, c.bandwidth, c.connections),
                          []).append(i)
    for idx in groups.values():
        idx.sort(key=lambda i: (-scored[i].lambda_max, i))
        for i in idx[per_config:]:
            scored[i] = replace(scored[i], pruned="weak for its hardware")
    alive = [i for i, s in enumerate(scored) if s.pruned is None]
    if all(scored[i].cost_per_hour is not None for i in alive):
        order = sorted(alive, key=lambda i: (scored[i].cost_per_hour, -scored[i].lambda_max, i))
        best = 0.0
        for i in order:
            lam = scored[i].lambda_max
            if lam < (1 - margin) * best:
                scored[i] = replace(scored[i], pruned="dominated at its cost")
            best = max(best, lam)
    return scored
