"""What a topology run reports, per region, site and link: the `regions`, `sites` and `links`
objects of `run --json` (over a span of the run) and of snapshots (over the window).

Rates over a span come from cumulative counters read at its two ends (`Marks`), so a snapshot
never perturbs the run and a day-long run keeps no per-request data.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from emulator.model import _num
from emulator.sim.books.histogram import LogHistogram
from emulator.sim.books.metrics import QUANTILES
from emulator.sim.books.snapshot import Feed, LinkSnap, RegionStages, StageSnap
from emulator.sim.runtime.topology import TopologyRuntime
from emulator.sim.stages.region import Region

GBIT = 8e-9  # bits per byte / 10^9


@dataclass(frozen=True)
class Marks:
    """Every cumulative per-region, per-site and per-link counter at one instant."""

    t: float
    # arrived, completed, rejected, TTFT bucket counts, TTFT sum, TTFT count, in flight
    regions: dict[str, tuple]
    sites: dict[str, tuple[float, float, int, float]]  # busy, online slot-s, done, work done
    links: dict[str, tuple[float, float, float]]  # bytes sent, capacity x s, saturated s
    # per region, its PD-P's then its PD-D's busy slot-s, online slot-s, done
    stages: dict[str, tuple[float, ...]] = field(default_factory=dict)


def marks(rt: TopologyRuntime, now: float) -> Marks:
    regions = {n: (r.arrived, r.completed, r.rejected_total, r.latencies.ttft.snapshot_counts(),
                   r.latencies.ttft.total, r.latencies.ttft.n, rt.in_flight(r))
               for n, r in rt.regions.items()}
    sites = {}
    for n, s in rt.sites.items():
        busy, online, _ = s.stage.totals(now)
        sites[n] = (busy, online, s.stage.done, s.stage.work_done(now))
    links = {n: lk.totals(now) for n, lk in rt.links.items()}
    stages = {n: (*r.pdp.totals(now)[:2], r.pdp.done, *r.pdd.totals(now)[:2], r.pdd.done)
              for n, r in rt.regions.items()}
    return Marks(now, regions, sites, links, stages)


def _ttft(h: LogHistogram, a: tuple | None = None, b: tuple | None = None) -> dict:
    """{mean, p50, p90, p99} of a region's TTFT: over the whole record, or between marks a
    and b (the exact mean from the running sums; percentiles within half a bucket)."""
    if a is None or b is None:
        p50, p90, p99 = h.quantiles(QUANTILES)
        mean = h.mean
    else:
        p50, p90, p99 = h.quantiles(QUANTILES, np.subtract(b[3], a[3]))
        n = b[5] - a[5]
        mean = (b[4] - a[4]) / n if n else float("nan")
    return {"mean": _num(mean), "p50": _num(p50), "p90": _num(p90), "p99": _num(p99)}


def region_books(rt: TopologyRuntime, r: Region) -> dict:
    """arrived = completed + in flight + rejected, for one region (`lost`: the imbalance)."""
    in_flight = rt.in_flight(r)
    return {"arrived": r.arrived, "completed": r.completed, "in_flight": in_flight,
            "rejected": r.rejected_total,
            "lost": r.arrived - r.completed - in_flight - r.rejected_total}


def objects(rt: TopologyRuntime, a: Marks, b: Marks, *, whole: bool) -> dict:
    """The `regions`, `sites` and `links` objects between marks a and b (`whole`: TTFT over
    the whole run, else over the span)."""
    dt = b.t - a.t
    inv = 1.0 / dt if dt > 0 else 0.0
    regions = {}
    for name, r in rt.regions.items():
        ma, mb = a.regions[name], b.regions[name]
        (a0, c0, j0), (a1, c1, j1) = ma[:3], mb[:3]
        books = region_books(rt, r)
        pd_queue = len(r.pdp.queue) + len(r.pdd.queue)
        regions[name] = {
            **books,
            "offered_rate": (a1 - a0) * inv, "served_rate": (c1 - c0) * inv,
            "rejected_rate": (j1 - j0) * inv,
            "in_flight_growth": (mb[6] - ma[6]) * inv,  # requests per second (a growing queue)
            "target_rate": r.workload.mean_rate,
            "ttft": _ttft(r.latencies.ttft) if whole else _ttft(r.latencies.ttft, ma, mb),
            "n_p": r.local.count("pd-p"), "n_d": r.local.count("pd-d"),
            "queue": pd_queue + sum(rt.sites[s].held_by(name) for s in r.links),
            "routing": rt.routing,
        }
    sites = {}
    for name, s in rt.sites.items():
        (bz0, on0, d0, w0), (bz1, on1, d1, w1) = a.sites[name], b.sites[name]
        online = on1 - on0
        sent = sum(b.links[lk.name][0] - a.links[lk.name][0] for lk in s.egress.links)
        egress = s.egress.capacity
        sites[name] = {
            "instances": s.stage.n_accepting, "failed": s.pool.failed("prfaas"),
            "busy": s.stage.in_service, "queue": len(s.stage.queue),
            "utilization": (w1 - w0) / online if online > 0 else 0.0,
            "occupancy": (bz1 - bz0) / online if online > 0 else 0.0,
            "served_rate": (d1 - d0) * inv,
            "egress_gbps": sent * inv * GBIT,
            "egress_capacity_gbps": egress * GBIT,
            "egress_utilization": sent * inv / egress if egress > 0 else 0.0,
        }
    links = {}
    for name, lk in rt.links.items():
        (s0, _, sat0), (s1, _, sat1) = a.links[name], b.links[name]
        gbps = (s1 - s0) * inv * GBIT
        links[name] = {
            "gbps": gbps,
            "utilization": (s1 - s0) * inv / lk.bandwidth if lk.bandwidth > 0 else 0.0,
            "bandwidth_gbps": lk.bandwidth * GBIT,
            "capacity_gbps": lk.capacity * GBIT,  # what it may carry now (share of egress)
            "saturated_fraction": (sat1 - sat0) * inv,
            "flows": len(lk.flows),
            "rtt": lk.latency,
        }
        if lk.transport is not None or lk.path_changes:  # a WAN path: goodput against line
            g = lk.path_goodput()
            links[name] |= {"line_gbps": lk.line * GBIT, "goodput_gbps": g.bytes_per_s * GBIT,
                            "cap": g.cap}
    return {"regions": regions, "sites": sites, "links": links}


def region_stages(rt: TopologyRuntime, a: Marks, b: Marks) -> dict[str, RegionStages]:
    """Each region's stages between marks a and b, measured as the pair's snapshot measures
    its own (utilization: busy over online slot-seconds; PrfaaS: compute over instance time;
    a link: bytes sent over what it could carry). Kept out of the `regions` objects, so a run's
    JSON is unchanged."""
    inv = 1.0 / (b.t - a.t) if b.t > a.t else 0.0

    def ratio(x: float, y: float) -> float:
        return x / y if y > 0 else 0.0

    out = {}
    for name, r in rt.regions.items():
        d = np.subtract(b.stages[name], a.stages[name])
        pd = []
        for i, (stage, role) in enumerate(((r.pdp, "pd-p"), (r.pdd, "pd-d"))):
            acc, drain = stage.counts()
            pd.append(StageSnap(instances=acc, busy=stage.in_service,
                                utilization=ratio(d[3 * i], d[3 * i + 1]),
                                queue=len(stage.queue), served_rate=d[3 * i + 2] * inv,
                                draining=drain, failed=r.local.failed(role)))
        feeds = []
        for site_name, lk in r.links.items():
            s = rt.sites[site_name]
            (_, on0, d0, w0), (_, on1, d1, w1) = a.sites[site_name], b.sites[site_name]
            acc, drain = s.stage.counts()
            site = StageSnap(instances=acc, busy=s.stage.in_service,
                             utilization=ratio(w1 - w0, on1 - on0), queue=len(s.stage.queue),
                             served_rate=(d1 - d0) * inv, draining=drain,
                             failed=s.pool.failed("prfaas"))
            (s0, c0, _), (s1, c1, _) = a.links[lk.name], b.links[lk.name]
            link = LinkSnap(capacity=lk.capacity, utilization=ratio(s1 - s0, c1 - c0),
                            bytes_in_flight=math.nan, queued_bytes=lk.queued_bytes(b.t),
                            flows=len(lk.flows))
            feeds.append(Feed(site_name, rt.topo.link(site_name, name).name, site, link))
        util = {f"pd-p:{name}": pd[0].utilization, f"pd-d:{name}": pd[1].utilization}
        for f in feeds:
            util.setdefault(f"site:{f.site}", f.stage.utilization)
            util[f"link:{f.link}"] = f.link_snap.utilization
        out[name] = RegionStages(tuple(feeds), pd[0], pd[1], max(util, key=util.__getitem__))
    return out


def run_objects(rt: TopologyRuntime, start: Marks, half: Marks, end: Marks) -> dict:
    """`run --json`'s topology objects: the whole run, and the second half's rates per region
    (the steady state: served vs offered, and whether its queues grow)."""
    out = objects(rt, start, end, whole=True)
    late = objects(rt, half, end, whole=False)
    for name, r in out["regions"].items():
        lr = late["regions"][name]
        r["second_half"] = {k: lr[k] for k in ("offered_rate", "served_rate", "in_flight_growth",
                                               "ttft")}
    return out
