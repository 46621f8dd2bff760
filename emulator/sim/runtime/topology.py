"""A topology's runtime on the engine's one virtual-time loop: every site (its instances, its
one queue, its egress), every region (its arrivals at its share of the total rate, its own length
mix and decode constants, its PD-P and PD-D, its site policy, its books) and every link (a token
bucket with its RTT, sharing its site's egress).

Built by `Emulation` for every run: a preset's declared [[site]]/[[region]]/[[link]] tables, or
the single pair as the 1x1 `Topology.pair` with its own features as data (`RunFeatures`: its
streams, names, replay, paradigm, transfer cache, torch backend). A site with no egress cap and
one link has that link as its egress (a plain link: the pair's site); otherwise its
links share the water-filled egress of `emulator.sim.stages.site`. The
incidents find a link (by its name "site->region"), a site or a region through `named`, the one
lookup the engine uses on the pair too.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass, field, replace
from typing import Protocol, TypeVar

import numpy as np

from emulator.model import Stage
from emulator.paradigm import Paradigm
from emulator.scenario.cache import SessionWorkload
from emulator.scenario.knobs import KnobError
from emulator.scenario.sim import SimConfig
from emulator.sim.arrivals.sessions import generate_sessions, to_trace
from emulator.sim.arrivals.workload import SyntheticSource, TraceSource, Workload
from emulator.sim.books.accounting import AccountingError
from emulator.sim.core.costs import Costs
from emulator.sim.routing.cache_runtime import CacheRuntime
from emulator.sim.routing.site_policy import (
    BestBandwidthPolicy,
    BestCachePolicy,
    LpPolicy,
    PrefixLookup,
    ThresholdPolicy,
)
from emulator.sim.runtime.prefill_backend import TorchService, start_hook
from emulator.sim.stages.link import Link
from emulator.sim.stages.region import Region
from emulator.sim.stages.site import Egress, LinkEgress, Site, SiteLink
from emulator.topology.bound import Bound, routing_bound
from emulator.topology.spec import Topology
from emulator.trace_formats import load_trace
from emulator.traces import MOONCAKE_BLOCK_TOKENS, Trace

T = TypeVar("T")


class RoutingBound(Protocol):
    """What the emulator reads from the routing bound (emulator.topology): its Lambda, the
    integer split per region and, per region, the bins' edges and routing shares."""

    lambda_max: float
    splits: dict[str, tuple[int, int]]

    def routing_for(self, region: str, sites: list[str]
                    ) -> tuple[list[float], list[list[float]]]: ...


class TopologyError(ValueError):
    """A name that is not in the topology, or a routing the topology cannot run."""


@dataclass(frozen=True)
class RunFeatures:
    """What a run adds to its topology's description: a declared topology runs with the
    defaults; the single pair (the 1x1 topology, `Topology.pair`) sets them, as data."""

    # the regions draw their streams from the seed itself (the pair's four, then a fifth for
    # sessions) instead of each from its own child of it (`SeedSequence(seed).spawn(n)[i]`)
    root_streams: bool = False
    # runtime names by element key ("link:S->R", "reverse:S->R", "rdma:R", "pool:R"); a key
    # not here keeps the topology's name ("S->R", "R->S", "rdma:R", "R")
    names: Mapping[str, str] = field(default_factory=dict)
    # the one region's arrivals replay this trace at the offered rate (no on/off bursts)
    replay: Trace | None = None
    # the threshold policy's paradigm and its prefix-cache hook (emulator.sim.routing)
    paradigm: Paradigm = Paradigm.PRFAAS_PD
    cached_prefix: PrefixLookup | None = None
    # [cache] with the PrfaaS transfer cache and the bandwidth-aware threshold rule (one site,
    # one region) instead of the KV index the site policies read
    transfer_cache: bool = False
    torch: TorchService | None = None  # a real prefill backend on the stages it names

    def name(self, key: str, default: str) -> str:
        return self.names.get(key, default)


class TopologyRuntime:
    """See the module docstring. Built in two steps: the elements (`__init__`), then the
    arrivals at the offered rate (`arrivals`), which for the pair may depend on the elements
    (a load is relative to the model at their knobs)."""

    def __init__(self, loop, topo: Topology, sim: SimConfig, seed: int, routing: str,
                 lp: RoutingBound | None = None, note: Callable[[str], None] | None = None,
                 features: RunFeatures = RunFeatures()):
        self.loop = loop
        self.topo = topo
        self.sim = sim
        self.routing = routing
        self.features = ft = features
        self.rate = 0.0
        self.sites: dict[str, Site] = {}
        self.links: dict[str, Link] = {}
        self.regions: dict[str, Region] = {}
        self._streams: dict[str, np.random.SeedSequence] = {}
        self._traces: dict[str, Trace | None] = {}
        n_regions = len(topo.regions)
        sole: dict[str, bool] = {}  # a site with no egress cap and one link: the link is it
        for s in topo.sites:
            links = topo.links_of_site(s.name)
            sole[s.name] = s.egress is None and len(links) == 1
            egress: Egress | LinkEgress = LinkEgress() if sole[s.name] else Egress(
                s.egress if s.egress is not None else math.fsum(k.bandwidth for k in links))
            self.sites[s.name] = Site(loop, s.name, Costs(s.profile), s.instances, egress,
                                      reroute=lambda reqs: [r.dest.reroute([r]) for r in reqs])
        splits = _lp_splits(lp, topo) if routing == "lp" else {}
        root = np.random.SeedSequence(seed)
        streams = [root] if ft.root_streams else root.spawn(n_regions)
        for i, spec in enumerate(topo.regions):
            region = Region(spec.name, loop, rid_offset=i, rid_step=n_regions)
            region.share = spec.share
            dec = spec.decode
            trace = ft.replay if ft.replay is not None else (
                load_trace(spec.replay) if spec.replay is not None else None)  # as loaded
            mean_out = dec.l_out if trace is None else float(np.mean(trace.output_lengths))
            region.wire(sim if spec.step is None else replace(sim, step=spec.step), spec.profile,
                        dec, spec.rdma_bandwidth, mean_out,
                        rdma=ft.name(f"rdma:{spec.name}", f"rdma:{spec.name}"),
                        pool=ft.name(f"pool:{spec.name}", spec.name))
            region.local.resize(spec.pool)
            n_p, n_d = splits.get(spec.name, (spec.n_p, spec.n_d))
            region.local.set_counts({"pd-p": n_p, "pd-d": n_d}, immediate=True)
            for k in topo.links_of_region(spec.name):
                site = self.sites[k.site]
                name = ft.name(f"link:{k.name}", k.name)
                if sole[k.site]:
                    link: Link = Link(loop, name, k.bandwidth, burst=sim.link_burst,
                                      peak=sim.link_peak, latency=k.rtt, line=k.line,
                                      transport=k.transport)
                    site.stage.link, site.stage.deliver = link, region.kv_in
                else:
                    assert isinstance(site.egress, Egress)
                    link = SiteLink(loop, name, k.bandwidth, site.egress, burst=sim.link_burst,
                                    latency=k.rtt, line=k.line, transport=k.transport)
                site.egress.links.append(link)
                site.links[spec.name] = link
                region.links[k.site] = link
                self.links[k.name] = link
            if (trace is not None and ft.replay is None and sim.cache is not None
                    and trace.hash_ids and sim.cache.block_tokens != MOONCAKE_BLOCK_TOKENS):
                raise KnobError("topology", f"region {spec.name!r} replays Mooncake hash_ids "
                                f"(blocks of {MOONCAKE_BLOCK_TOKENS} tokens): set [cache] "
                                f"block_tokens = {MOONCAKE_BLOCK_TOKENS}")
            self._streams[spec.name] = streams[i]
            self._traces[spec.name] = trace
            rngs = [np.random.default_rng(s) for s in streams[i].spawn(4)]
            region.burst_rng = rngs[3] if ft.replay is None else None
            if trace is not None:  # its own arrivals, at its share of the offered rate
                region.source = TraceSource(trace)
            elif sim.sessions is None:  # sessions: at `arrivals`, scaled to the rate
                region.source = SyntheticSource(rngs[:3], sim.arrival, sim.cv, spec.lengths,
                                                dec.l_out, sim.output_lengths)
            self.regions[spec.name] = region
        for site in self.sites.values():
            site.egress.rebalance()
        self.cache: CacheRuntime | None = None
        if sim.cache is not None:
            self.cache = cache = CacheRuntime(loop, sim.cache, note or _quiet,
                                              transfer_cache=ft.transfer_cache,
                                              index=not ft.transfer_cache)
            for s in topo.sites:
                cache.add_cluster(s.name, "site", self.sites[s.name].stage, s.profile)
            for r in topo.regions:
                cache.add_cluster(r.name, "region", self.regions[r.name].pdp, r.profile)
            for name, site in self.sites.items():
                for region_name, fwd in site.links.items():
                    k = topo.link(name, region_name)
                    cache.add_link(name, region_name, fwd,
                                   ft.name(f"reverse:{k.name}", f"{region_name}->{name}"))
            for region in self.regions.values():
                region.cache = cache
        stages = [(site.stage, Stage.PRFAAS.value) for site in self.sites.values()] + [
            (region.pdp, Stage.PD_P.value) for region in self.regions.values()]
        for stage, role in stages:  # sites first, as the cache lists them
            stage.on_start = start_hook(stage, ft.torch, self.cache, role)
        if self.cache is not None and not ft.transfer_cache:
            self.cache.start()
        for spec in topo.regions:
            self.regions[spec.name].policy = self._policy(spec, routing, lp)
        if self.cache is not None and ft.transfer_cache:
            self.cache.attach(self.regions[topo.regions[0].name].policy)  # type: ignore[arg-type]

    def _policy(self, spec, routing: str, lp: RoutingBound | None):
        region = self.regions[spec.name]
        links = self.topo.links_of_region(spec.name)
        stages = [self.sites[k.site].stage for k in links]
        if routing == "threshold":
            ft = self.features
            lookup = self.cache.lookup if self.cache is not None and ft.transfer_cache else \
                ft.cached_prefix
            return ThresholdPolicy(spec.threshold, region.pdp, stages,
                                   [k.long_share for k in links], ft.paradigm, lookup)
        if routing == "best-bandwidth":
            return BestBandwidthPolicy(spec.threshold, region.pdp, stages,
                                       [region.links[k.site] for k in links])
        if routing == "lp":
            edges, weights = _lp_routing(lp, spec.name, [k.site for k in links])
            return LpPolicy(edges, [region.pdp, *stages], weights)
        if routing == "best-cache" and self.cache is not None:
            return BestCachePolicy(spec.threshold, spec.name, region.pdp,
                                   [k.site for k in links], stages,
                                   [region.links[k.site] for k in links], self.cache)
        raise TopologyError(f"routing: {routing!r} is not available in the emulator")

    def arrivals(self, rate: float, duration: float) -> None:
        """Each region's arrival process at its share of the offered `rate`, not started (a
        region of chat sessions draws them now, from a fifth stream: the first four as they
        were)."""
        self.rate = float(rate)
        sessions = self.sim.sessions
        for spec in self.topo.regions:
            region = self.regions[spec.name]
            if region.source is None:
                assert sessions is not None
                ses = np.random.default_rng(self._streams[spec.name].spawn(1)[0])
                region.source = session_source(sessions, ses, duration, self.rate * spec.share)
            region.workload = Workload(self.loop, region.arrive, region.source,
                                       self.rate * spec.share)

    def start(self, sim: SimConfig) -> None:
        """Start every region's arrivals (in file order: the loop's ties go first-come)."""
        for region in self.regions.values():
            region.workload.start()
            if sim.arrival == "onoff" and region.burst_rng is not None:
                region.workload.start_bursts(region.burst_rng, sim.on_mean, sim.off_mean,
                                             sim.off_level)

    # -- targets of incidents -----------------------------------------------------------------
    def link(self, name: str) -> Link:
        return named("link", self.links, name)

    def site(self, name: str) -> Site:
        return named("site", self.sites, name)

    def region(self, name: str) -> Region:
        return named("region", self.regions, name)

    def set_rate(self, rate: float) -> None:
        """The total offered rate (each region its share)."""
        self.rate = float(rate)
        for region in self.regions.values():
            region.workload.set_rate(self.rate * region.share)

    # -- books --------------------------------------------------------------------------------
    def in_flight(self, region: Region) -> int:
        """Requests of `region` held anywhere: its PD-P, PD-D and RDMA wire, the sites'
        queues and instances, its links' wires (counted, not derived)."""
        n = region.pdp.holding + region.pdd.holding + region.rdma.propagating_flows
        for site, link in region.links.items():
            n += self.sites[site].held_by(region.name) + link.propagating_flows
        if self.cache is not None:
            n += self.cache.held_by(region)
        return n

    def check(self) -> None:
        """AccountingError naming the first region whose books do not balance."""
        for r in self.regions.values():
            held = self.in_flight(r)
            lost = r.arrived - r.completed - held - r.rejected_total
            if lost:
                raise AccountingError(
                    f"accounting broken in region {r.name}: arrived {r.arrived} != completed "
                    f"{r.completed} + in flight {held} + rejected {r.rejected_total} "
                    f"({lost:+d} unaccounted)")


def _quiet(_: str) -> None:
    """No decision log to write to."""


def session_source(work: SessionWorkload, rng: np.random.Generator, duration: float,
                   rate: float) -> TraceSource:
    """A region's chat sessions as its arrival stream. Sessions set the shape (turns, think
    time, lengths); the region's share of the total offered rate sets how many start: a pilot
    draw measures the turns per second one session rate gives, the real draw is scaled to
    `rate` (so think times stay as written, and the replay's time scale stays near 1). The
    draw covers 1.25 x the run: arrivals end when the sessions do (a long surge may get there)."""
    span = max(duration, 1.0) * 1.25
    if rate <= 0:
        return TraceSource(to_trace(generate_sessions(work, rng, n_sessions=1)))
    pilot = generate_sessions(replace(work, session_rate=rate / work.mean_turns), rng,
                              duration=span)
    got = len(pilot) / span
    scaled = work.session_rate if got <= 0 else rate / work.mean_turns * rate / got
    reqs = generate_sessions(replace(work, session_rate=scaled), rng, duration=span)
    return TraceSource(to_trace(reqs if reqs else pilot))


def named(what: str, table: dict[str, T], name: str | None) -> T:
    """The element `name` of a kind (`what`: "link", "site", "region"), the one lookup every
    incident and live change goes through; None: the only one there is (the pair's)."""
    if name is None:
        if len(table) == 1:
            return next(iter(table.values()))
        raise TopologyError(f"name the {what} ({what}s: {', '.join(table)})")
    if name not in table:
        raise TopologyError(f"no {what} {name!r} ({what}s: {', '.join(table)})")
    return table[name]


def keyed(table: dict[Hashable, float], key: Hashable, value: float | None) -> None:
    """Set (or with None drop) one incident's factor in a table of them."""
    if value is None:
        table.pop(key, None)
    elif not (value >= 0 and math.isfinite(value)):
        raise ValueError(f"factor must be a finite number >= 0, got {value!r}")
    else:
        table[key] = float(value)


def _lp_splits(lp: RoutingBound | None, topo: Topology) -> dict[str, tuple[int, int]]:
    if lp is None:
        raise TopologyError("routing lp: the routing bound is not available")
    return {r: (int(v[0]), int(v[1])) for r, v in lp.splits.items()}


def _lp_routing(lp: RoutingBound | None, region: str, sites: list[str]
                ) -> tuple[list[float], list[list[float]]]:
    """(bin upper edges, per bin: [share local, share at each site]) from the bound."""
    if lp is None:
        raise TopologyError("routing lp: the routing bound is not available")
    return lp.routing_for(region, sites)


class BoundRouting:
    """The routing bound as the emulator reads it (see RoutingBound)."""

    def __init__(self, bound: Bound):
        self.bound = bound
        self.lambda_max = bound.lambda_max
        self.splits = {r: (bound.n_p[r], bound.n_d[r]) for r in bound.n_p}

    def routing_for(self, region: str, sites: list[str]
                    ) -> tuple[list[float], list[list[float]]]:
        rr = self.bound.routing[region]
        edges = [float(h) for h in rr.bins.hi]
        weights = [[float(rr.local[i]), *(float(rr.sites[s][i]) for s in sites)]
                   for i in range(len(edges))]
        return edges, weights


def topology_bound(scenario) -> BoundRouting | None:
    """The routing bound of a topology scenario (HiGHS, well under a second on the shipped
    presets): what `lp` routing runs and what `--load` multiplies. None for a single pair."""
    topo = scenario.declared_topology
    if topo is None:
        return None
    return BoundRouting(routing_bound(topo))
