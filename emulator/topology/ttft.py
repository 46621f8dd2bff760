"""Per-region TTFT and SLO-bound rate of a threshold policy, from the latency layer.

Each of a region's paths is the latency layer's single-pair prediction (`emulator.latency`
`predict` / `slo_rate`) on a view of the region with one of its sites:

- the site's instances in proportion to this region's part of that site's prefill load at the
  policy (the same utilization as the shared site, at least one instance); fewer servers pool
  less than the shared site does, so the wait is on the safe side;
- the link's bandwidth, or the region's part of the site's egress when that is less;
- the link's RTT as the path's delay (the request's trip to the site and its KV's trip back);
- the region's rate times its long-request share over this link (the local path is predicted at
  the region's whole rate); its PD-P and PD-D as they are, so with several links a remote
  path's decode wait is predicted at that path's part of the decode load (optimistic by the
  decode wait, which is small next to prefill at the shipped settings).

A region with one link (or none) gets the layer's own answer. With several, the mean is the
paths' mean weighted by their traffic and the P90 is the largest of the paths' P90s: an upper
bound of the mixture's, since each path meets it with probability >= 0.9.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from emulator.latency import predict, slo_rate
from emulator.model import Knobs
from emulator.topology.policy import PolicyPoint
from emulator.topology.spec import Region, Topology


@dataclass(frozen=True)
class RegionLatency:
    offered_rate: float  # req/s into this region
    mean: float | None
    p90: float | None
    paths: dict[str, dict]  # "local" and each site -> share, mean, p90
    slo_rate: float | None  # region rate at which its TTFT quantile meets the target

    def to_dict(self) -> dict:
        return {"offered_rate": self.offered_rate, "mean": self.mean, "p90": self.p90,
                "paths": self.paths, "slo_rate": self.slo_rate}


def _views(topo: Topology, point: PolicyPoint, r: Region):
    """(site name, System view, Knobs, delay, share of the region's long requests) per link."""
    s = point.settings[r.name]
    links = topo.links_of_region(r.name)
    if not links:
        system = topo.pair_system(r.name)
        yield None, system, Knobs(s.t, s.n_p, s.n_d, 0, system.bandwidth), 0.0, 1.0
        return
    for k in links:
        site = topo.site(k.site)
        system = topo.pair_system(r.name, k.site)
        total = point.loads.get(f"site:{k.site}", 0.0)
        mine = _own_site_load(topo, point, r, k.site)
        frac = mine / total if total > 0 else 1.0
        bw = k.bandwidth
        egress_total = point.loads.get(f"egress:{k.site}", 0.0)
        if site.egress is not None and egress_total > 0:
            bw = min(bw, site.egress * point.loads.get(f"link:{k.name}", 0.0) / egress_total
                     or bw)
        instances = max(1, int(np.floor(site.instances * frac + 1e-9))) if site.instances else 0
        system = replace(system, n_prfaas=instances, bandwidth=bw)
        yield k.site, system, Knobs(s.t, s.n_p, s.n_d, instances, bw), k.rtt, s.shares.get(k.site, 0.0)


def _own_site_load(topo: Topology, point: PolicyPoint, r: Region, site: str) -> float:
    """Region r's prefill seconds per unit Lambda at `site` (its link's bytes, scaled by the
    site's seconds per byte for all its regions: exact when one region uses the site)."""
    link = point.loads.get(f"link:{site}->{r.name}", 0.0)
    egress = point.loads.get(f"egress:{site}", 0.0) or sum(
        point.loads.get(f"link:{k.name}", 0.0) for k in topo.links_of_site(site))
    total = point.loads.get(f"site:{site}", 0.0)
    return total * link / egress if egress > 0 else 0.0


def _paths(topo: Topology, point: PolicyPoint, r: Region, lam_r: float,
           rdma_latency: float) -> dict[str, dict]:
    """Each path's share, mean and P90 at region rate `lam_r` (None: unstable)."""
    p = point.p[r.name]
    paths: dict[str, dict] = {}
    for i, (site, system, knobs, delay, a) in enumerate(_views(topo, point, r)):
        if i == 0 and p < 1:  # the local path, at the region's whole rate
            d = predict(system, knobs, lam_r, link_latency=delay,
                        rdma_latency=rdma_latency).to_dict()
            e = d["paths"]["pd-p"]
            paths["local"] = {"share": 1 - p, "mean": e["mean"], "p90": e["p90"]}
        if site is None or a <= 0 or p <= 0:
            continue
        d = predict(system, knobs, lam_r * a, link_latency=delay,
                    rdma_latency=rdma_latency).to_dict()
        e = d["paths"]["prfaas"]
        paths[site] = {"share": p * a, "mean": e["mean"], "p90": e["p90"], "rtt_s": delay,
                       "instances_seen": knobs.n_prfaas}
    return paths


def _summary(paths: dict[str, dict]) -> tuple[float | None, float | None]:
    if any(v["mean"] is None or v["p90"] is None for v in paths.values()) or not paths:
        return None, None
    w = np.array([v["share"] for v in paths.values()])
    mean = float(np.dot(w, [v["mean"] for v in paths.values()]) / w.sum())
    return mean, float(max(v["p90"] for v in paths.values()))


def region_latency(topo: Topology, point: PolicyPoint, rate: float, *, rdma_latency: float = 0.0,
                   target: float | None = None, q: float = 0.9) -> dict[str, RegionLatency]:
    """TTFT per region at total offered `rate` (each region gets its share) under `point`;
    with `target`, each region's SLO-bound rate, its part of each site held as at the policy:
    the latency layer's own for a region with at most one link, else the highest rate at which
    every path's P90 meets it (q = 0.9 only; None for other quantiles)."""
    out = {}
    for r in topo.regions:
        lam_r = r.share * rate
        views = list(_views(topo, point, r))
        if len(views) == 1:  # the layer's own answer, its mixture of the two paths included
            site, system, knobs, delay, _ = views[0]
            d = predict(system, knobs, lam_r, link_latency=delay,
                        rdma_latency=rdma_latency).to_dict()
            mean, p90 = d["mean"], d["p90"]
            paths = {}
            if "pd-p" in d["paths"]:
                paths["local"] = {k: d["paths"]["pd-p"][k] for k in ("share", "mean", "p90")}
            if site is not None and "prfaas" in d["paths"]:
                paths[site] = {**{k: d["paths"]["prfaas"][k] for k in ("share", "mean", "p90")},
                               "rtt_s": delay, "instances_seen": knobs.n_prfaas}
        else:
            paths = _paths(topo, point, r, lam_r, rdma_latency)
            mean, p90 = _summary(paths)
        bound_rate = None
        if target is not None:
            if len(views) == 1:
                _, system, knobs, delay, _ = views[0]
                bound_rate = slo_rate(system, knobs, target, q, link_latency=delay,
                                      rdma_latency=rdma_latency)
            elif q == 0.9:
                bound_rate = _bisect_rate(topo, point, r, target, rdma_latency)
        out[r.name] = RegionLatency(lam_r, mean, p90, paths, bound_rate)
    return out


def _bisect_rate(topo: Topology, point: PolicyPoint, r: Region, target: float,
                 rdma_latency: float, steps: int = 30) -> float:
    """The highest region rate at which every path's P90 is within `target`, its part of each
    site held as at the policy (as the one-link case's view holds it): doubled from its share
    of the policy's Lambda until a path fails, then bisected."""
    def ok(x: float) -> bool:
        _, p90 = _summary(_paths(topo, point, r, x, rdma_latency))
        return p90 is not None and p90 <= target

    hi = r.share * point.lambda_max
    if hi <= 0 or not ok(hi * 1e-6):
        return 0.0
    lo = hi * 1e-6
    for _ in range(40):
        if not ok(hi):
            break
        lo, hi = hi, 2 * hi
    else:
        return lo
    for _ in range(steps):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if ok(mid) else (lo, mid)
    return lo
