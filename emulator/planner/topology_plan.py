"""The planner on a topology: where the next prefill capacity and bandwidth should go.

A candidate is one choice of PrfaaS instances per site, bandwidth per link and a routing
policy (`TopologySpace`); everything else is the preset's. Its cost per hour (`Prices`) is its
sites' and regions' instances at their instance-hour prices plus each link's leased bandwidth at
its `price_per_tb` (the bandwidth priced as if it carried its full rate for the hour: a
committed lease, so a link's cost is what is provisioned, not what happens to flow).

Stage 1 prunes with the routing bound: no routing sustains more than the bound's Lambda, so a
candidate whose bound is below the goodput of an emulated candidate that costs no more can be
neither the best nor on the front, and is never emulated. Candidates are emulated in waves, each
the analytic front of what is left (cheapest first, each with a bound above every cheaper one's),
as the single-pair planner does.

Stage 2 checks by emulation: a candidate's SLO goodput is the highest total offered rate at
which every region keeps up (served >= 95% of offered over the run) and meets the P90 TTFT
target, by bisection per seed between 0 and its bound. A `threshold` or `best-bandwidth`
candidate runs the best threshold policy of its hardware (`search_policy`: thresholds, splits,
long-request shares), an `lp` one the bound's split and per-bin routing; the shipped deployment
(the preset as written) is emulated the same way, as the baseline the candidates must beat.

Every emulation is an independent virtual-time run, so a record depends only on its inputs;
the runs go to the same executors as the single-pair planner (a process pool, or Dask).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

from emulator.planner.executors import LocalPool, run_dask
from emulator.planner.goodput import KEEPS_UP, SLO
from emulator.scenario.scenario import Scenario
from emulator.topology.bound import BoundError, routing_bound
from emulator.topology.policy import search_policy
from emulator.topology.spec import Topology
from emulator.units import GBPS, to_gbps

TB = 1e12
SHIPPED = "shipped"  # the baseline record's key


class TopologyPlanError(ValueError):
    """A plan that cannot run: one line naming the flag or the preset key."""


@dataclass(frozen=True)
class Prices:
    """Per instance-hour for sites and regions, per TB for links (None: not priced)."""

    site: dict[str, float]
    region: dict[str, float]
    link_per_tb: dict[str, float]

    @classmethod
    def of(cls, topo: Topology, overrides: dict[str, float] | None = None,
           per_tb: dict[str, float] | None = None) -> Prices:
        """The preset's prices (site.price, region.price, link.price_per_tb), overridden by
        name; TopologyPlanError naming the first element without one (a cost needs them all;
        a link without a price is free)."""
        over, tb = dict(overrides or {}), dict(per_tb or {})
        names = {s.name for s in topo.sites} | {r.name for r in topo.regions}
        for n in over:
            if n not in names:
                raise TopologyPlanError(f"--price: no site or region named {n!r} (known: "
                                        f"{', '.join(sorted(names))})")
        for n in tb:
            if n not in {k.name for k in topo.links}:
                raise TopologyPlanError(f"--price-per-tb: no link named {n!r} (known: "
                                        f"{', '.join(k.name for k in topo.links)})")
        site, region = {}, {}
        for i, s in enumerate(topo.sites):
            p = over.get(s.name, s.price)
            if p is None:
                raise TopologyPlanError(f"site[{i}].price: site {s.name} has no instance-hour "
                                        f"price (give it in the preset or --price {s.name}=X)")
            site[s.name] = float(p)
        for i, r in enumerate(topo.regions):
            p = over.get(r.name, r.price)
            if p is None:
                raise TopologyPlanError(f"region[{i}].price: region {r.name} has no "
                                        f"instance-hour price (give it in the preset or --price "
                                        f"{r.name}=X)")
            region[r.name] = float(p)
        links = {k.name: float(tb.get(k.name, k.price_per_tb or 0.0)) for k in topo.links}
        return cls(site, region, links)

    def cost_per_hour(self, topo: Topology) -> float:
        return (sum(s.instances * self.site[s.name] for s in topo.sites)
                + sum(r.pool * self.region[r.name] for r in topo.regions)
                + sum(k.bandwidth * 3600 / TB * self.link_per_tb[k.name] for k in topo.links))


@dataclass(frozen=True)
class Candidate:
    sites: tuple[tuple[str, int], ...]  # site -> PrfaaS instances
    links: tuple[tuple[str, float], ...]  # link -> bandwidth, bytes/s
    routing: str

    @property
    def key(self) -> str:
        s = ",".join(f"{n}={i}" for n, i in self.sites)
        k = ",".join(f"{n}={to_gbps(b):g}" for n, b in self.links)
        return f"{self.routing}|{s}|{k}"

    @property
    def label(self) -> str:
        s = " ".join(f"{n}:{i}" for n, i in self.sites)
        k = " ".join(f"{n}:{to_gbps(b):g}G" for n, b in self.links)
        return f"{s} {k} {self.routing}"

    def topology(self, base: Topology) -> Topology:
        inst, bw = dict(self.sites), dict(self.links)
        return replace(base, routing=self.routing,
                       sites=tuple(replace(s, instances=inst.get(s.name, s.instances))
                                   for s in base.sites),
                       links=tuple(replace(k, bandwidth=bw.get(k.name, k.bandwidth))
                                   for k in base.links))

    def to_dict(self) -> dict:
        return {"sites": dict(self.sites),
                "links_gbps": {n: to_gbps(b) for n, b in self.links}, "routing": self.routing}


@dataclass(frozen=True)
class TopologySpace:
    """Per site the instance counts, per link the bandwidths (bytes/s), and the routings; an
    element not named keeps its preset value."""

    sites: dict[str, tuple[int, ...]]
    links: dict[str, tuple[float, ...]]
    routings: tuple[str, ...]

    def size(self, topo: Topology) -> int:
        n = len(self.routings)
        for s in topo.sites:
            n *= len(self.sites.get(s.name, (s.instances,)))
        for k in topo.links:
            n *= len(self.links.get(k.name, (k.bandwidth,)))
        return n

    def candidates(self, topo: Topology) -> list[Candidate]:
        site_opts = [[(s.name, i) for i in self.sites.get(s.name, (s.instances,))]
                     for s in topo.sites]
        link_opts = [[(k.name, b) for b in self.links.get(k.name, (k.bandwidth,))]
                     for k in topo.links]
        return [Candidate(tuple(ss), tuple(ls), r) for r in self.routings
                for ss in itertools.product(*site_opts) for ls in itertools.product(*link_opts)]


@dataclass(frozen=True)
class TopologySettings:
    slo: SLO
    seeds: tuple[int, ...] = (1,)
    duration: float = 600.0
    steps: int = 6


@dataclass(frozen=True)
class Scored:
    cand: Candidate
    bound: float  # the routing bound's Lambda
    binding: tuple[str, ...]
    cost_per_hour: float


def score(base: Topology, cands: list[Candidate], prices: Prices) -> list[Scored]:
    """Stage 1: each candidate's routing bound (its ceiling on any goodput) and cost."""
    out = []
    for c in cands:
        topo = c.topology(base)
        try:
            b = routing_bound(topo)
            lam, binding = b.lambda_max, b.binding
        except BoundError:
            lam, binding = 0.0, ()
        out.append(Scored(c, lam, binding, prices.cost_per_hour(topo)))
    return out


def run_topology(sc: Scenario, topo: Topology) -> Scenario:
    """The scenario the emulator runs for a candidate's topology: a threshold or
    best-bandwidth routing at the best threshold policy of its hardware; lp at the bound's."""
    if topo.routing != "lp":
        point, _ = search_policy(topo, routing_bound(topo))
        regions = []
        links = []
        for r in topo.regions:
            s = point.settings[r.name]
            regions.append(replace(r, threshold=s.t, n_p=s.n_p, n_d=s.n_d))
        for k in topo.links:
            links.append(replace(k, long_share=point.settings[k.region].shares.get(k.site, 0.0)))
        topo = replace(topo, regions=tuple(regions), links=tuple(links))
    return replace(sc, declared_topology=topo, name=f"{sc.name}:{topo.routing}")


def probe(sc: Scenario, rate: float, seed: int, duration: float) -> dict:
    """One emulation at a total offered rate: each region's figures the SLO test reads."""
    from emulator.sim.engine import Emulation
    from emulator.sim.topology import topology_bound

    every = max(duration, sc.sim.window, sc.sim.sample_interval)
    quiet = replace(sc, sim=replace(sc.sim, sample_interval=every, window=every))
    with Emulation(quiet, seed=seed, rate=rate, duration=duration,
                   bound=topology_bound(quiet)) as emu:
        res = emu.run().json
    return {name: {"offered": r["offered_rate"], "rejected": r["rejected"],
                   "growth": r["second_half"]["in_flight_growth"],
                   "ttft_p90": r["ttft"]["p90"]} for name, r in res["regions"].items()}


def ok(p: dict, slo: SLO) -> bool:
    """Every region keeps up (nothing rejected, and over the run's second half what it holds
    in flight grows by less than 5% of its offered rate: served = offered in steady state,
    whatever the decode tail a run ends with) and meets the TTFT target over the run."""
    return all(r["rejected"] == 0 and r["growth"] <= (1 - KEEPS_UP) * r["offered"]
               and slo.met(r["ttft_p90"], None) for r in p.values())


def goodput(sc: Scenario, hi: float, settings: TopologySettings) -> dict:
    """Bisection per seed between 0 and `hi` (the bound)."""
    per_seed = []
    runs = 0
    for seed in settings.seeds:
        lo, top = 0.0, hi
        for _ in range(settings.steps):
            mid = 0.5 * (lo + top)
            runs += 1
            if ok(probe(sc, mid, seed, settings.duration), settings.slo):
                lo = mid
            else:
                top = mid
        per_seed.append(lo)
    arr = np.asarray(per_seed)
    mean = float(arr.mean())
    half = float(1.96 * arr.std(ddof=1) / math.sqrt(len(arr))) if len(arr) > 1 else 0.0
    return {"goodput": mean, "goodput_lo": max(mean - half, 0.0), "goodput_hi": mean + half,
            "per_seed": [float(x) for x in per_seed], "runs": runs}


def evaluate(sc: Scenario, s: Scored, settings: TopologySettings) -> dict:
    """One candidate's record (module level: process pools pickle it)."""
    topo = s.cand.topology(sc.declared_topology)
    out = goodput(run_topology(sc, topo), s.bound, settings)
    return {"key": s.cand.key, "label": s.cand.label, "candidate": s.cand.to_dict(),
            "bound": s.bound, "binding": list(s.binding), "cost_per_hour": s.cost_per_hour,
            **out, "utilization": out["goodput"] / s.bound if s.bound > 0 else 0.0,
            "goodput_per_cost": out["goodput"] / s.cost_per_hour if s.cost_per_hour else None}


def evaluate_shipped(sc: Scenario, prices: Prices, settings: TopologySettings) -> dict:
    """The preset as written (its own thresholds, splits, shares and routing), emulated the
    same way: the baseline."""
    topo = sc.declared_topology
    b = routing_bound(topo)
    out = goodput(sc, b.lambda_max, settings)
    cost = prices.cost_per_hour(topo)
    cand = Candidate(tuple((s.name, s.instances) for s in topo.sites),
                     tuple((k.name, k.bandwidth) for k in topo.links), topo.routing)
    return {"key": SHIPPED, "label": f"shipped ({cand.label})", "candidate": cand.to_dict(),
            "bound": b.lambda_max, "binding": list(b.binding), "cost_per_hour": cost, **out,
            "utilization": out["goodput"] / b.lambda_max if b.lambda_max > 0 else 0.0,
            "goodput_per_cost": out["goodput"] / cost if cost else None}


def pareto(records: list[dict]) -> list[dict]:
    """No other is cheaper (or as cheap) with more goodput: costs and goodputs both rise."""
    front, best = [], -1.0
    for r in sorted(records, key=lambda r: (r["cost_per_hour"], -r["goodput"], r["key"])):
        if r["goodput"] > best:
            front.append(r)
            best = r["goodput"]
    return front


def _beaten(s: Scored, finished: list[tuple[float, float]]) -> bool:
    return any(cost <= s.cost_per_hour and g > s.bound for cost, g in finished)


def plan_topology(sc: Scenario, space: TopologySpace, prices: Prices,
                  settings: TopologySettings, *, workers: int = 1, dask: str | object | None = None,
                  on_result: Callable[[dict], None] | None = None) -> dict:
    """Prune by the bound, emulate in waves, summarize: the front, the best candidate per
    budget (each front point is the best at its cost), the shipped baseline."""
    base = sc.declared_topology
    scored = score(base, space.candidates(base), prices)
    pool = LocalPool(workers) if dask is None else None
    done: dict[str, dict] = {}

    def emulate(batch: list) -> None:
        stream = run_dask(batch, dask) if pool is None else pool.run(batch)
        for key, rec in stream:
            done[key] = rec
            if on_result:
                on_result(rec)

    skipped: list[Scored] = []
    try:
        emulate([(SHIPPED, evaluate_shipped, (sc, prices, settings))])
        pending = sorted(scored, key=lambda s: (-s.bound, s.cand.key))
        while pending:
            finished = [(r["cost_per_hour"], r["goodput"]) for r in done.values()]
            keep = [s for s in pending if not _beaten(s, finished)]
            skipped += [s for s in pending if s not in keep]
            if not keep:
                break
            wave, top = [], -1.0
            for s in sorted(keep, key=lambda s: (s.cost_per_hour, -s.bound, s.cand.key)):
                if s.bound > top:
                    wave.append(s)
                    top = s.bound
            emulate([(s.cand.key, evaluate, (sc, s, settings)) for s in wave])
            pending = [s for s in keep if s not in wave]
    except BaseException:
        if pool is not None:
            pool.terminate()
        raise
    finally:
        if pool is not None:
            pool.close()
    shipped = done.pop(SHIPPED)
    records = sorted(done.values(), key=lambda r: (-r["goodput"], r["key"]))
    front = pareto(records)
    within = [r for r in records if r["cost_per_hour"] <= shipped["cost_per_hour"] + 1e-9]
    best_within = max(within, key=lambda r: (r["goodput"], -r["cost_per_hour"]), default=None)
    return {"kind": "topology-plan", "scenario": sc.name, "preset": sc.path or sc.name,
            "space": {"sites": {k: list(v) for k, v in space.sites.items()},
                      "links_gbps": {k: [to_gbps(x) for x in v] for k, v in space.links.items()},
                      "routings": list(space.routings)},
            "prices": {"site": prices.site, "region": prices.region,
                       "link_per_tb": prices.link_per_tb},
            "slo": {"ttft_p90": settings.slo.ttft_p90}, "seeds": list(settings.seeds),
            "duration": settings.duration, "steps": settings.steps,
            "candidates": len(scored), "emulated": len(records),
            "pruned_by_bound": len(skipped),
            "pruned": [{"key": s.cand.key, "bound": s.bound, "cost_per_hour": s.cost_per_hour}
                       for s in skipped],
            "shipped": shipped, "best": records[0] if records else None,
            "best_within_shipped_cost": best_within,
            "ranked": records, "pareto": front}


def gbps_list(text: str) -> tuple[float, ...]:
    """'20,40,80' (Gbps) -> bytes/s."""
    return tuple(float(x) * GBPS for x in text.split(","))


def candidate_of(rec: dict) -> Candidate:
    """A record's candidate (`Candidate.to_dict` read back)."""
    c = rec["candidate"]
    return Candidate(tuple((n, int(i)) for n, i in c["sites"].items()),
                     tuple((n, float(g) * GBPS) for n, g in c["links_gbps"].items()),
                     str(c["routing"]))


def scenario_of_record(sc: Scenario, rec: dict) -> Scenario:
    """The scenario a plan record ran (the shipped one: the preset itself), for the view."""
    if rec.get("key") == SHIPPED:
        return sc
    topo = candidate_of(rec).topology(sc.declared_topology)
    out = run_topology(sc, topo)
    return replace(out, name=f"{sc.name}:{rec['label']}")
