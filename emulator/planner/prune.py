"""Stage 1 of the planner: the closed-form model scores every candidate and prunes the space
before any emulation runs.

Lambda_max (exact mode) is an upper bound on a candidate's SLO goodput, so a candidate is worth
emulating only if its bound is competitive. Rules, in order:
1. infeasible: Lambda_max = 0 (no decode, no prefill path for some requests);
2. per hardware configuration (paradigm, N_prfaas, pool, B_out) keep the `per_config` best
   (t, split) choices by Lambda_max: the model already says the others waste that hardware;
3. cost dominance: drop c when a candidate costing no more has a bound above
   Lambda_max(c) / (1 - margin) — c cannot win on goodput nor on goodput per dollar.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from emulator.model import STAGES, SplitStats, System, ceilings, split_stats
from emulator.paradigm import Paradigm
from emulator.planner.space import AUTO_T, Candidate

MODE = "exact"


@dataclass(frozen=True)
class Scored:
    cand: Candidate
    t: float  # the threshold actually used (AUTO_T resolved)
    lambda_max: float
    binding: str
    cost_per_hour: float | None
    pruned: str | None = None  # the rule that removed it, or None


def candidate_system(system: System, c: Candidate) -> System:
    """The model's System for one candidate (homogeneous: its pool with the local-type profile)."""
    if c.paradigm == Paradigm.HOMOGENEOUS:
        prof = system.homogeneous_profile or system.local
        return replace(system, prfaas=prof, local=prof, n_prfaas=0, local_pool=c.n_p + c.n_d,
                       homogeneous_pool=c.n_p + c.n_d, homogeneous_profile=prof)
    return replace(system, n_prfaas=c.n_prfaas, local_pool=c.n_p + c.n_d, bandwidth=c.bandwidth)


def cost(system: System, c: Candidate) -> float | None:
    if system.price_local is None:
        return None
    local = (c.n_p + c.n_d) * system.price_local
    if c.n_prfaas == 0:
        return local
    return None if system.price_prfaas is None else local + c.n_prfaas * system.price_prfaas


def score_all(system: System, cands: list[Candidate]) -> list[Scored]:
    """Lambda_max (exact mode) of every candidate. The length statistics depend only on t and
    the profiles, so they are computed once per distinct threshold; the rest is arithmetic."""
    hi = system.lengths.support[1]
    grid = system.lengths.threshold_grid()
    out: list[Scored | None] = [None] * len(cands)
    by_profile: dict[str, list[int]] = {}
    for i, c in enumerate(cands):
        by_profile.setdefault(c.paradigm == Paradigm.HOMOGENEOUS, []).append(i)
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
        cols = {f: np.array([getattr(cands[i], f) for i in idx], dtype=float)
                for f in ("n_prfaas", "n_p", "n_d", "bandwidth")}
        *_, stack, lam = ceilings(st, cols["n_prfaas"], cols["n_p"], cols["n_d"],
                                  cols["bandwidth"], system.decode, outer=False)
        binding = np.argmin(stack, axis=0)
        for j, i in enumerate(idx):
            out[i] = Scored(cands[i], float(ts[j]), float(lam[j]), STAGES[int(binding[j])],
                            cost(system, cands[i]))
    return out  # type: ignore[return-value]


def prune(system: System, cands: list[Candidate], *, per_config: int = 3,
          margin: float = 0.10) -> list[Scored]:
    """Score all candidates; mark the pruned ones with the rule that removed them."""
    scored = score_all(system, cands)
    groups: dict[tuple, list[int]] = {}
    for i, s in enumerate(scored):
        if not s.lambda_max > 0:
            scored[i] = replace(s, pruned="infeasible")
            continue
        c = s.cand
        groups.setdefault((c.paradigm, c.n_prfaas, c.n_p + c.n_d, c.bandwidth), []).append(i)
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
