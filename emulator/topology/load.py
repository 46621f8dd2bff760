"""Offered load against what a deployment serves at its own settings, overall and per region,
and the risk of an optimum without local prefill: the lines `run`, `solve`, `new` and the
screens print, worded in one place.

Why per region: a topology's Lambda is its busiest element's; a region whose own prefill,
decode or links are short runs away (its queue grows) while the total still looks fine, and a
total over Lambda does not say where.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from emulator.topology.policy import evaluate_policy, preset_settings
from emulator.topology.spec import Topology

OVERLOADED = "overloaded: queue grows"
TURNED_AWAY = "overloaded: requests turned away"


def state(offered: float, lam: float, bounded: bool = False) -> str | None:
    """The state of an offered rate against a capacity: None when it is served."""
    if not offered > lam:
        return None
    return TURNED_AWAY if bounded else OVERLOADED


def region_capacities(topo: Topology) -> tuple[float, dict[str, float]]:
    """(Lambda of the topology's own policy, `region_lambdas` at it): thresholds, splits and
    long shares as the preset sets them, exact mode."""
    pt = evaluate_policy(topo, preset_settings(topo))
    util = {n: load * pt.lambda_max / pt.capacity[n] if pt.capacity[n] > 0 else math.inf
            for n, load in pt.loads.items()}
    return pt.lambda_max, region_lambdas(topo, pt.lambda_max, util)


def region_lambdas(topo: Topology, lam: float,
                   utilization: Mapping[str, float | None]) -> dict[str, float]:
    """{region: the rate of its own traffic its own rows carry}, from a policy's Lambda and its
    rows' utilization there (the CLI's policy point, the view's live model). A region's rows
    are its PD-P and PD-D pools and its links; a shared site limits the total only."""
    out: dict[str, float] = {}
    for r in topo.regions:
        rows = [f"pd-p:{r.name}", f"pd-d:{r.name}",
                *(f"link:{k.name}" for k in topo.links_of_region(r.name))]
        busiest = max((utilization.get(n) or 0.0 for n in rows), default=0.0)
        out[r.name] = r.share * lam / busiest if busiest > 0 else math.inf
    return out


def load_warnings(offered: float, lam: float, what: str,
                  regions: dict[str, tuple[float, float]] | None = None,
                  bounded: bool = False) -> list[str]:
    """One line per runaway: the total, then each region (offered, its Lambda). `what` names
    the capacity ("the model's Lambda_max", "the preset's own policy")."""
    out = []
    if (st := state(offered, lam, bounded)) is not None:
        out.append(f"{st}: offered {offered:.4g} req/s against Λ {lam:.4g} req/s, {what} "
                   f"({offered / lam:.2f}x)" if lam > 0 else
                   f"{st}: offered {offered:.4g} req/s against Λ 0 ({what})")
    for name, (off, cap) in (regions or {}).items():
        if (st := state(off, cap, bounded)) is not None:
            out.append(f"region {name} {st}: offered {off:.4g} req/s against its Λ "
                       f"{cap:.4g} req/s ({off / cap:.2f}x)" if cap > 0 else
                       f"region {name} {st}: offered {off:.4g} req/s against its Λ 0")
    return out


def topology_load_warnings(topo: Topology, offered: float, bounded: bool = False) -> list[str]:
    """`load_warnings` for a topology at a total offered rate, each region offered its share."""
    lam, per = region_capacities(topo)
    regions = {r.name: (r.share * offered, per[r.name]) for r in topo.regions}
    return load_warnings(offered, lam, "the preset's own policy (its thresholds, splits and "
                         "shares)", regions, bounded)


NO_LOCAL_PREFILL = "N_p = 0: a link outage stops all prefill"  # a panel's short form


def no_local_prefill_warning(n_p: int, preset: str) -> str | None:
    """The line for an optimum with N_p = 0. Throughput alone prefers it (every local GPU
    decodes), but the region then prefills nothing itself: an outage of the link stops all
    prefill there until it returns, a risk the optimum's numbers do not show."""
    if n_p > 0:
        return None
    return ("the optimum has N_p = 0 (no local prefill: every request is prefilled "
            "remotely), so a link outage leaves this region with no prefill at all until the "
            f"link returns; see it with prfaas-tui drill link-outage --preset {preset}")
