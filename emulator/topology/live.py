"""The model at what a running topology has now: the threshold policy at the live settings
(its Lambda and what binds) and the routing bound at the live capacities (its Lambda and every
constraint's shadow price), per element in the operator's units.

`LiveState` is what the emulator runs now, as plain hashable numbers (alive instances per
site, each link's bandwidth knob and the share of it incidents leave, each site's egress now,
each region's threshold, alive split and long-request shares); `live_spec` turns it into a
`Topology` the model solves. The dashboard's topology view and `snapshot --format json` both
read `LiveModel.to_dict()`, so a number on screen and in the JSON has one source.

Prices are per unit of the knob an operator turns: a link's "+1 Gbps" is one more Gbps of its
bandwidth knob, which a brownout delivers only in part (the dual times the share it leaves).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from emulator.topology.bound import BoundError, routing_bound
from emulator.topology.policy import evaluate_policy, preset_settings
from emulator.topology.spec import Topology
from emulator.units import GBPS


@dataclass(frozen=True)
class LiveState:
    """What runs now (hashable: the model is recomputed only when it changes)."""

    sites: tuple[tuple[str, int, float | None], ...]  # name, alive instances, egress now (B/s)
    links: tuple[tuple[str, float, float], ...]  # name, bandwidth knob (B/s), share delivered
    regions: tuple[tuple[str, float, int, int, tuple[float, ...]], ...]  # t, n_p, n_d, shares

    @classmethod
    def of_spec(cls, topo: Topology) -> LiveState:
        """The state a healthy topology starts in (its preset's settings)."""
        return cls(tuple((s.name, s.instances, s.egress) for s in topo.sites),
                   tuple((k.name, k.bandwidth, 1.0) for k in topo.links),
                   tuple((r.name, r.threshold, r.n_p, r.n_d,
                          tuple(k.long_share for k in topo.links_of_region(r.name)))
                         for r in topo.regions))

    def link_factor(self, name: str) -> float:
        return next(f for n, _, f in self.links if n == name)


def live_spec(base: Topology, state: LiveState) -> Topology:
    """`base` at the live state: alive instances, each link's capacity now, each site's egress
    now, each region's threshold, split and shares (its pool is its alive split)."""
    sites = {n: (i, e) for n, i, e in state.sites}
    links = {n: (b, f) for n, b, f in state.links}
    regions = {n: (t, p, d, sh) for n, t, p, d, sh in state.regions}
    out_sites = tuple(replace(s, instances=sites[s.name][0], egress=sites[s.name][1])
                      for s in base.sites)
    out_regions = []
    shares: dict[str, float] = {}
    for r in base.regions:
        t, n_p, n_d, sh = regions[r.name]
        out_regions.append(replace(r, threshold=t, n_p=n_p, n_d=n_d, pool=n_p + n_d))
        for k, v in zip(base.links_of_region(r.name), sh, strict=True):
            shares[k.name] = v
    out_links = tuple(replace(k, bandwidth=links[k.name][0] * links[k.name][1],
                              long_share=shares[k.name]) for k in base.links)
    return replace(base, sites=out_sites, regions=tuple(out_regions), links=out_links)


def element_of(row: str) -> str:
    """The element a model row belongs to: `link:hub->west` -> `hub->west`, `site:hub` and
    `egress:hub` -> `hub`, `pd-p:east` / `pd-d:east` / `pool:east` -> `east`."""
    return row.split(":", 1)[1]


@dataclass(frozen=True)
class LiveModel:
    """The policy's and the bound's answers at one live state (see the module docstring)."""

    policy_lambda: float
    policy_binding: tuple[str, ...]
    policy_utilization: dict[str, float]  # row -> load at the policy's Lambda / capacity
    bound_lambda: float
    bound_binding: tuple[str, ...]
    prices: dict[str, float]  # row -> req/s per knob unit (instance, or Gbps of bandwidth)
    bound_split: dict[str, tuple[int, int]]

    @property
    def binding_element(self) -> str | None:
        """The element the running policy's first binding row names (None: nothing binds)."""
        return element_of(self.policy_binding[0]) if self.policy_binding else None

    def price_of(self, element: str, kind: str) -> dict[str, float]:
        """An element's prices: a link its `link:` row; a site its `site:` and `egress:`; a
        region its `pool:`, `pd-p:` and `pd-d:` rows (absent rows left out)."""
        rows = {"link": ("link",), "site": ("site", "egress"),
                "region": ("pool", "pd-p", "pd-d")}[kind]
        return {r: self.prices[f"{r}:{element}"] for r in rows if f"{r}:{element}" in self.prices}

    def to_dict(self) -> dict:
        return {"policy": {"lambda_max": self.policy_lambda,
                           "binding": list(self.policy_binding),
                           "binding_element": self.binding_element,
                           "utilization": {k: round(v, 6) for k, v in
                                           sorted(self.policy_utilization.items())}},
                "bound": {"lambda_max": self.bound_lambda, "binding": list(self.bound_binding),
                          "n_p": {k: v[0] for k, v in self.bound_split.items()},
                          "n_d": {k: v[1] for k, v in self.bound_split.items()}},
                "shadow_prices": {k: round(v, 9) for k, v in sorted(self.prices.items())},
                "shadow_price_units": "req/s per instance (site, pool, pd-p, pd-d) or per Gbps "
                                      "of the bandwidth knob (link, egress), at the bound's "
                                      "split"}


def live_model(base: Topology, state: LiveState) -> LiveModel:
    """The policy at the live settings and the bound at the live capacities."""
    topo = live_spec(base, state)
    point = evaluate_policy(topo, preset_settings(topo))
    util = {n: (load * point.lambda_max / point.capacity[n] if point.capacity[n] > 0 else 0.0)
            for n, load in point.loads.items() if math.isfinite(point.capacity[n])}
    try:
        bound = routing_bound(topo)
    except BoundError:
        return LiveModel(point.lambda_max, point.binding, util, math.nan, (), {}, {})
    prices = {}
    for row in bound.rows:
        p = bound.shadow_prices[row.name]
        if row.kind == "link":
            p *= state.link_factor(element_of(row.name))
        prices[row.name] = p
    split = {r: (bound.n_p[r], bound.n_d[r]) for r in bound.n_p}
    return LiveModel(point.lambda_max, point.binding, util, bound.lambda_max, bound.binding,
                     prices, split)


def bandwidth_gbps(state: LiveState, link: str) -> float:
    """A link's bandwidth knob in Gbps."""
    return next(b for n, b, _ in state.links if n == link) / GBPS


LINK_STEP_GBPS = 10.0  # the detail panel's finite step for a link (a site's: one instance)


def with_step(state: LiveState, kind: str, name: str, step: float) -> LiveState:
    """The live state with one knob raised: a link's bandwidth by `step` Gbps, a site's
    instances or a region's pool (to PD-P and PD-D as the bound splits it) by `step`."""
    if kind == "link":
        links = tuple((n, b + step * GBPS if n == name else b, f) for n, b, f in state.links)
        return replace(state, links=links)
    if kind == "site":
        sites = tuple((n, i + int(step) if n == name else i, e) for n, i, e in state.sites)
        return replace(state, sites=sites)
    regions = tuple((n, t, p, d + int(step) if n == name else d, sh)
                    for n, t, p, d, sh in state.regions)
    return replace(state, regions=regions)


def step_gain(base: Topology, state: LiveState, kind: str, name: str, step: float) -> float:
    """What the routing bound gains when one knob is raised by `step` (the MILP re-solved):
    the exact answer beside the shadow price, which holds only until another constraint
    binds."""
    try:
        now = routing_bound(live_spec(base, state)).lambda_max
        up = routing_bound(live_spec(base, with_step(state, kind, name, step))).lambda_max
    except BoundError:
        return math.nan
    return up - now
