"""Where a topology region's request prefills: its own PD-P or a site it has a link to. One
policy per region (`routing`, `--routing`):

  threshold       the paper's rule: a request longer than the region's t goes to its sites, in
                  the policy's shares (a deterministic weighted round robin, so the shares hold
                  exactly over any stretch of long requests); shorter ones stay local. The
                  single pair routes by it too (its paradigms are modes of it).
  lp              the routing bound's per-bin probabilities: the request's length bin names the
                  share of it prefilled locally and at each site (round robin per bin).
  best-bandwidth  long requests (above t) go wherever they finish first now: queue wait plus
                  max(prefill, KV transfer at the link's current rate), plus the link's delay;
                  PD-P is one of the candidates (its RDMA transfer is not the bottleneck).
  best-cache      the paper's rule on the incremental length with the best cache in reach
                  (emulator.sim.routing.cache_runtime: a prefix cache per site and region, one global
                  index): a request whose uncached part is at most t prefills at its PD-P,
                  with the longest prefix any of its sites holds moved over when that link has
                  headroom; a longer one goes to the site holding the longest usable prefix
                  (its own, or the region's moved over while the link has headroom; ties: the
                  one that finishes first). With no prefix anywhere it is best-bandwidth.

A policy only picks; the region's admission control and the stages do the rest.
"""

from __future__ import annotations

import bisect
import math
from collections import deque
from collections.abc import Callable, Sequence

from emulator.model import Cluster
from emulator.paradigm import Paradigm
from emulator.sim.core.request import Request
from emulator.sim.routing.cache_routing import route
from emulator.sim.routing.cache_runtime import CacheRuntime, Move
from emulator.sim.stages.link import Link
from emulator.sim.stages.prefill import PrefillStage
from emulator.topology.spec import ROUTINGS

POLICIES = ROUTINGS  # every one runs in the emulator
PrefixLookup = Callable[[Request, str], float]
RECENT = 2048  # incremental lengths kept for the scheduler (the [scheduler] section resizes it)


class RoundRobin:
    """Smooth weighted round robin over targets: after n picks each target has been picked
    within one of n x its weight share (deterministic, no random stream)."""

    __slots__ = ("targets", "weights", "credit", "total", "only")

    def __init__(self, targets: Sequence[PrefillStage], weights: Sequence[float]):
        keep = [(t, float(w)) for t, w in zip(targets, weights, strict=True) if w > 0]
        if not keep:
            raise ValueError("a round robin needs a target with a positive weight")
        self.targets = [t for t, _ in keep]
        total = sum(w for _, w in keep)
        self.weights = [w / total for _, w in keep]
        self.credit = [0.0] * len(keep)
        self.total = 1.0
        self.only = self.targets[0] if len(keep) == 1 else None  # one target: no arithmetic

    def next(self) -> PrefillStage:
        credit, weights = self.credit, self.weights
        if len(credit) == 1:
            return self.targets[0]
        best, top = 0, -math.inf
        for i, w in enumerate(weights):
            c = credit[i] + w
            credit[i] = c
            if c > top:
                best, top = i, c
        credit[best] -= 1.0
        return self.targets[best]


class ThresholdPolicy:
    """The paper's rule on the incremental (uncached) length: above t to the region's sites in
    `shares`, else its PD-P. The single pair is the 1x1 case (one site, share 1), where the
    paradigm sets the rule (`emulator.paradigm`: PrfaaS-PD the threshold, homogeneous all
    local, naive heterogeneous all remote) and a prefix-cache hook `cached_prefix(request,
    cluster) -> tokens` ("prfaas" or "pd") makes the bandwidth-aware rule decide
    (`emulator.sim.routing.cache_routing.route`: scarce bandwidth routes on the local increment and
    moves no cache, abundant on the best prefix anywhere); its decision is kept on the request
    (`req.route`). The last increments routed are kept in `recent` (what the pair's scheduler
    re-solves on)."""

    name = "threshold"

    def __init__(self, t: float, local: PrefillStage, sites: Sequence[PrefillStage],
                 shares: Sequence[float], paradigm: Paradigm | str = Paradigm.PRFAAS_PD,
                 cached_prefix: PrefixLookup | None = None, bandwidth_scarce: bool = True):
        self.t = float(t)
        self.local = local
        self.sites = RoundRobin(sites, shares) if sites and sum(shares) > 0 else None
        self.paradigm = paradigm
        self.cached_prefix = cached_prefix
        self.bandwidth_scarce = bandwidth_scarce
        self.recent: deque[float] = deque(maxlen=RECENT)

    @property
    def paradigm(self) -> Paradigm:
        return self._paradigm

    @paradigm.setter
    def paradigm(self, paradigm: Paradigm | str) -> None:
        """ValueError for a name that is no paradigm."""
        self._paradigm = Paradigm(paradigm)
        self._rule = self._paradigm.behaviour.rule  # looked up once: remote() is hot

    def remote(self, req: Request) -> bool:
        """Whether the request prefills at a site; sets `req.incr` (tokens to prefill there)."""
        lookup = self.cached_prefix
        if lookup is None:
            req.incr = req.length
            self.recent.append(req.length)
            return self._rule(req.length, self.t)
        length = int(req.length)
        pd = min(int(lookup(req, Cluster.PD)), length)
        pf = min(int(lookup(req, Cluster.PRFAAS)), length)
        if self._paradigm.threshold_routing:
            req.route = decision = route(length, pf, pd, self.t, self.bandwidth_scarce)
            req.incr = decision.incremental
            self.recent.append(req.incr)
            return decision.target == Cluster.PRFAAS
        to_remote = self._rule(length, self.t)
        req.incr = length - (pf if to_remote else pd)
        return to_remote

    def pick(self, req: Request) -> PrefillStage:
        sites = self.sites
        if self.remote(req) and sites is not None:
            return sites.only if sites.only is not None else sites.next()
        return self.local


class LpPolicy:
    """The routing bound's split per length bin: bin `i` covers lengths up to `edges[i]`
    (the last one everything above), with `weights[i][k]` the share of target k (target 0:
    the region's PD-P, then its sites in order)."""

    name = "lp"

    def __init__(self, edges: Sequence[float], targets: Sequence[PrefillStage],
                 weights: Sequence[Sequence[float]]):
        if len(edges) != len(weights):
            raise ValueError("one weight row per length bin")
        self.edges = [float(e) for e in edges]
        self.bins = [RoundRobin(targets, w) if sum(w) > 0 else RoundRobin(targets[:1], [1.0])
                     for w in weights]

    def pick(self, req: Request) -> PrefillStage:
        req.incr = req.length
        i = min(bisect.bisect_left(self.edges, req.length), len(self.bins) - 1)
        return self.bins[i].next()


class BestBandwidthPolicy:
    """Long requests go where they finish first now (see the module docstring)."""

    name = "best-bandwidth"

    def __init__(self, t: float, local: PrefillStage, sites: Sequence[PrefillStage],
                 links: Sequence[Link]):
        self.t = float(t)
        self.local = local
        self.sites = list(zip(sites, links, strict=True))

    @staticmethod
    def finish(stage: PrefillStage, link: Link, req: Request, prefix: int = 0) -> float:
        """Seconds from now to the request's KV at its decode side if it went to `stage`
        (prefilling all but a cached `prefix` there)."""
        service = stage.costs.t_prefill(req.length - prefix)
        kv = stage.costs.s_kv(req.length)
        rate = link.capacity / (len(link.flows) + 1)  # its fair share if it joined now
        transfer = kv / rate if rate > 0 else math.inf
        return stage.expected_wait() + max(service, transfer) + link.latency

    def pick(self, req: Request) -> PrefillStage:
        req.incr = req.length
        if req.length <= self.t or not self.sites:
            return self.local
        best = self.local
        top = self.finish(self.local, self.local.link, req)
        for stage, link in self.sites:
            f = self.finish(stage, link, req)
            if f < top:
                best, top = stage, f
        return best


class BestCachePolicy:
    """Route on the longest usable prefix in reach (see the module docstring)."""

    name = "best-cache"

    def __init__(self, t: float, region: str, local: PrefillStage, sites: Sequence[str],
                 stages: Sequence[PrefillStage], links: Sequence[Link], cache: CacheRuntime):
        self.t = float(t)
        self.region = region
        self.local = local
        self.cache = cache
        self.sites = list(zip(sites, stages, links, strict=True))
        self.mask = cache.mask([region, *sites])
        self.fallback = BestBandwidthPolicy(t, local, stages, links)

    def pick(self, req: Request) -> PrefillStage:
        req.incr = req.length
        req.route = None
        if not req.hash_ids or not self.sites:
            return self.fallback.pick(req)
        length = int(req.length)
        found = self.cache.index.usable(req.hash_ids, length, self.mask)
        if not found:
            return self.fallback.pick(req)
        region, cache = self.region, self.cache
        own = found.get(region, 0)
        # PD-P: its own prefix, or the longest a site holds, moved over a link with headroom
        best, src, link = own, None, None
        for site, _, lk in self.sites:
            p = found.get(site, 0)
            if p > best and cache.link(site, region).headroom:
                best, src, link = p, site, lk
        if length - best <= self.t:
            if src is not None:
                req.route = Move(src, region, best, own, link)
            return self.local
        # a site: the longest usable prefix (its own, or the region's moved over), ties by the
        # earliest finish; an unusable site (no instance up) is never the choice
        top, pick, move = -1, None, None
        top_finish = math.inf
        for site, stage, lk in self.sites:
            p, m = found.get(site, 0), None
            lc = cache.link(site, region)
            if own > p and lc.headroom:
                p, m = own, Move(region, site, own, found.get(site, 0), lc.reverse)
            finish = BestBandwidthPolicy.finish(stage, lk, req, p)
            if not math.isfinite(finish):
                continue
            if p > top or (p == top and finish < top_finish):
                top, pick, move, top_finish = p, stage, m, finish
        if pick is None or top == 0:
            return self.fallback.pick(req)
        req.route = move
        return pick
