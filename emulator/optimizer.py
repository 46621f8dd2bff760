"""Exhaustive 2-D search over (t, N_p) and the three deployment paradigms.

The search evaluates every threshold that changes the split (the support points of a discrete or
empirical distribution, a fine quantile grid of a continuous one) against every split of the
local pool, as one numpy array. Ties go to the first maximum: the lowest t, then the lowest N_p.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from emulator.model import Knobs, OperatingPoint, System, ceilings, evaluate, split_stats
from emulator.paradigm import Paradigm, Stage


@dataclass(frozen=True)
class SearchResult:
    """The optimum and the two Figure-5 curves."""

    best: OperatingPoint
    n_p_values: np.ndarray  # 0..pool
    lambda_vs_np: np.ndarray  # Lambda_max against N_p at the best t
    t_values: np.ndarray  # the threshold grid
    prfaas_ceiling_vs_t: np.ndarray  # at the best split
    pdp_ceiling_vs_t: np.ndarray
    lambda_vs_t: np.ndarray
    evaluated: int  # grid points


@dataclass(frozen=True, eq=False)  # arrays: compared by identity
class Grid:
    """Lambda_max over every (threshold, split): what the search maximizes and the heat map
    draws. `lambda_max[i, j]` is at t = t_values[i], N_p = n_p_values[j], N_d = pool - N_p."""

    t_values: np.ndarray
    n_p_values: np.ndarray  # 0..pool
    stack: np.ndarray  # (3, t, N_p): the PrfaaS, PD-P and PD-D ceilings
    lambda_max: np.ndarray  # (t, N_p)
    n_prfaas: int
    bandwidth: float
    pool: int

    @property
    def argmax(self) -> tuple[int, int]:
        """(t index, N_p) of the maximum; ties to the lowest t, then the lowest N_p."""
        it, ip = np.unravel_index(int(np.argmax(self.lambda_max)), self.lambda_max.shape)
        return int(it), int(ip)


def grid(system: System, mode: str = "paper", *, n_prfaas: int | None = None,
         bandwidth: float | None = None, pool: int | None = None,
         thresholds: np.ndarray | None = None) -> Grid:
    """Lambda_max at every threshold that changes the split against every split of the pool
    (N_prfaas, B_out and the pool default to the system's)."""
    n_prfaas = system.n_prfaas if n_prfaas is None else n_prfaas
    bandwidth = system.bandwidth if bandwidth is None else bandwidth
    pool = system.local_pool if pool is None else pool
    t_grid = system.lengths.threshold_grid() if thresholds is None else np.asarray(thresholds, float)
    st = split_stats(system.lengths, system.prfaas, system.local, t_grid, mode)
    n_p = np.arange(pool + 1)
    *_, stack, lam = ceilings(st, n_prfaas, n_p, pool - n_p, bandwidth, system.decode)
    return Grid(t_grid, n_p, stack, lam, n_prfaas, bandwidth, pool)


def search(system: System, mode: str = "paper", *, n_prfaas: int | None = None,
           bandwidth: float | None = None, pool: int | None = None,
           thresholds: np.ndarray | None = None) -> SearchResult:
    """Best (t, N_p, N_d = pool - N_p) for Lambda_max; decode takes what prefill leaves."""
    g = grid(system, mode, n_prfaas=n_prfaas, bandwidth=bandwidth, pool=pool,
             thresholds=thresholds)
    it, ip = g.argmax
    lam, stack = g.lambda_max, g.stack
    knobs = Knobs(t=float(g.t_values[it]), n_p=ip, n_d=int(g.pool - ip), n_prfaas=g.n_prfaas,
                  bandwidth=g.bandwidth)
    best = evaluate(system, knobs, mode)
    return SearchResult(
        best=best, n_p_values=g.n_p_values, lambda_vs_np=lam[it].copy(), t_values=g.t_values,
        prfaas_ceiling_vs_t=stack[0, :, ip].copy(), pdp_ceiling_vs_t=stack[1, :, ip].copy(),
        lambda_vs_t=lam[:, ip].copy(), evaluated=int(lam.size),
    )


def homogeneous(system: System, mode: str = "paper") -> OperatingPoint | None:
    """All prefill and decode in one pool of local-type instances (p = 0), its own best split."""
    par = Paradigm.HOMOGENEOUS
    if par.unavailable(system):
        return None
    pool = par.pool(system)
    prof = par.local_profile(system)
    probe = par.model_knobs(system, Knobs(0.0, 0, pool, 0, system.bandwidth))
    st = split_stats(system.lengths, prof, prof, np.array([probe.t]), mode)
    n_p = np.arange(pool + 1)
    *_, lam = ceilings(st, 0, n_p, pool - n_p, system.bandwidth, system.decode)
    ip = int(np.argmax(lam[0]))
    return par.evaluate(system, replace(probe, n_p=ip, n_d=pool - ip), mode)


def naive(system: System, mode: str = "paper", *, n_prfaas: int | None = None,
          bandwidth: float | None = None) -> OperatingPoint:
    """Every request prefilled remotely (t below the support, p = 1); all local decode."""
    knobs = Knobs(t=0.0, n_p=0, n_d=Paradigm.NAIVE.pool(system),
                  n_prfaas=system.n_prfaas if n_prfaas is None else n_prfaas,
                  bandwidth=system.bandwidth if bandwidth is None else bandwidth)
    return Paradigm.NAIVE.evaluate(system, knobs, mode)


def paradigms(system: System, mode: str = "paper",
              best: OperatingPoint | None = None) -> dict[Paradigm, dict]:
    """The three paradigms on the same hardware, with ratios against homogeneous and, when the
    system has prices, requests per dollar."""
    pts = {
        Paradigm.PRFAAS_PD: best or search(system, mode).best,
        Paradigm.HOMOGENEOUS: homogeneous(system, mode),
        Paradigm.NAIVE: naive(system, mode),
    }
    homo = pts[Paradigm.HOMOGENEOUS]
    base = homo.lambda_max if homo else None
    base_cost = Paradigm.HOMOGENEOUS.cost_per_hour(system)
    base_per_cost = base * 3600 / base_cost if base and base_cost else None
    out: dict[str, dict] = {}
    for name, op in pts.items():
        if op is None:
            continue
        d = op.to_dict()
        d["vs_homogeneous"] = op.lambda_max / base if base else None
        cost = name.cost_per_hour(system)
        d["cost_per_hour"] = cost
        d["requests_per_dollar"] = op.lambda_max * 3600 / cost if cost else None
        d["per_cost_vs_homogeneous"] = (d["requests_per_dollar"] / base_per_cost
                                        if cost and base_per_cost else None)
        out[name] = d
    return out


def starting_split(system: System, paradigm: Paradigm, split: tuple[int, int],
                   mode: str = "paper") -> tuple[int, int]:
    """The (N_p, N_d) a paradigm starts from when switched to: PrfaaS-PD keeps `split`, its
    own pool (homogeneous) takes that pool's best split, no PD-P (naive) gives the whole local
    pool to decode."""
    if paradigm.behaviour.own_pool:
        op = homogeneous(system, mode)
        return (op.knobs.n_p, op.knobs.n_d) if op is not None else split
    if Stage.PD_P not in paradigm.stages:
        return 0, paradigm.pool(system)
    return split
