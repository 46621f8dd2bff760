"""The prefix caches of a topology run: one `PrefixCache` per site and per region, the global
`KvIndex` over them, cache moves over the links, and each link's headroom detector.

Request path with a [cache] (any routing):
  arrival -> the region's site policy picks a stage (best-cache may also ask for a cache move)
  -> `enter`: the move first, as a flow of kv_bytes(the blocks the destination lacks) over the
  link between the two clusters, inserted at the destination on arrival -> a lookup in the
  computing cluster's own cache (`req.incr` = the uncached tokens) -> prefill -> at prefill end
  the prompt's blocks enter that cluster's cache.
A site's KV flow carries only what the request's region lacks: S_kv(l) minus the per-token KV of
the region's own cached prefix (its PD-D reads those blocks locally), as in the single pair.

Moves run site -> region over the link itself (through its token bucket, competing with KV
transfers for the site's egress) and region -> site over the link's reverse direction (a link
that follows the forward one's capacity at all times). A move is allowed only while the link has
headroom: a hysteresis detector per link on its forward utilization over the last
`scarcity_window` (`[cache]` scarce_at / abundant_at; routing "scarce" / "abundant" pin it).
There is no path between two sites or two regions: a prefix cached elsewhere is reused by
computing where it sits.

Not modelled on a topology: the PrfaaS transfer cache. A site's instance holds a request until
its KV has left (as without a cache), the conservative side of the pair's detached tails.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict
from typing import TYPE_CHECKING, NamedTuple

from emulator.profiles import Profile
from emulator.scenario.cache import CacheConfig
from emulator.sim.routing.cache_routing import ScarcityDetector
from emulator.sim.routing.kv_index import KvIndex
from emulator.sim.routing.prefix_cache import PrefixCache, kv_layout
from emulator.sim.stages.link import Flow, Link

if TYPE_CHECKING:
    from emulator.sim.core.request import Request
    from emulator.sim.stages.prefill import PrefillStage, PrefillWorker
    from emulator.sim.stages.region import Region
    from emulator.sim.stages.site import SiteLink


class Move(NamedTuple):
    """A cache move a routing decision asks for: `tokens` of prefix from cluster `src` into
    `dst` (which lacks `tokens - have` of them) over `link`."""

    src: str
    dst: str
    tokens: int
    have: int
    link: Link


class LinkCache:
    """One link's cache traffic: both directions, the headroom detector, what moved."""

    def __init__(self, forward: SiteLink, reverse: Link, cfg: CacheConfig):
        self.forward, self.reverse = forward, reverse
        self.detector = ScarcityDetector(cfg.scarce_at, cfg.abundant_at,
                                         scarce=cfg.routing == "scarce")
        self.moves = {"to_region": 0, "to_site": 0}
        self.bytes = {"to_region": 0.0, "to_site": 0.0}

    @property
    def headroom(self) -> bool:
        return not self.detector.scarce


class TopologyCache:
    """See the module docstring. Built by `TopologyRuntime` when the preset has a [cache]."""

    def __init__(self, loop, cfg: CacheConfig, sites: dict, regions: dict[str, Region],
                 profiles: dict[str, Profile], note: Callable[[str], None] | None = None):
        self.loop = loop
        self.cfg = cfg
        self.note = note
        self.index = KvIndex(cfg.block_tokens)
        self.caches: dict[str, PrefixCache] = {}
        self.kind: dict[str, str] = {}  # cluster -> "site" or "region"
        for name, site in sites.items():
            self._add(name, "site", site.stage, profiles[name], cfg.prfaas_capacity)
        for name, region in regions.items():
            self._add(name, "region", region.pdp, profiles[name], cfg.pd_capacity)
        self.links: dict[str, LinkCache] = {}
        self._link_of: dict[tuple[str, str], LinkCache] = {}  # (site, region) -> its link
        for name, site in sites.items():
            for region_name, fwd in site.stage.links.items():
                rev = Link(loop, f"{region_name}->{name}", fwd.capacity, latency=fwd.latency)
                fwd.mirror = rev
                lc = LinkCache(fwd, rev, cfg)
                self.links[fwd.name] = lc
                self._link_of[(name, region_name)] = lc
        self.moving: dict[str, int] = dict.fromkeys(regions, 0)  # region -> moves not yet sent
        self.raw_tokens = 0.0
        self.computed_tokens = 0.0
        if cfg.routing == "auto" and self.links:
            loop.call_at_quiet(loop.now + cfg.scarcity_window, self._tick)

    def _add(self, name: str, kind: str, stage: PrefillStage, profile: Profile,
             capacity: float) -> None:
        cache = PrefixCache(capacity, kv_layout(profile), self.cfg.block_tokens, name)
        cache.attach_index(self.index)
        self.caches[name] = cache
        self.kind[name] = kind
        stage.on_start = _StartHook(self, cache)

    # -- what routing reads ---------------------------------------------------------------------
    def link(self, site: str, region: str) -> LinkCache:
        return self._link_of[(site, region)]

    def mask(self, names: list[str]) -> int:
        m = 0
        for n in names:
            m |= self.index.bit(n)
        return m

    # -- a routed request ---------------------------------------------------------------------
    def enter(self, stage: PrefillStage, req: Request) -> None:
        """Run the decision's cache move first (if any), then prefill."""
        move = req.route
        if isinstance(move, Move):
            lc = self._link_of[(move.src, move.dst) if self.kind[move.src] == "site"
                               else (move.dst, move.src)]
            way = "to_region" if self.kind[move.dst] == "region" else "to_site"
            size = self.caches[move.src].layout.kv_bytes(move.tokens - move.have)
            lc.moves[way] += 1
            lc.bytes[way] += size
            self.moving[req.dest.name] += 1
            move.link.open(size, 0.0, self._move_sent, self._move_arrived, (stage, req))
            return
        self._submit(stage, req)

    def _move_sent(self, flow: Flow) -> None:
        self.moving[flow.payload[1].dest.name] -= 1  # the link counts it while it propagates

    def _move_arrived(self, payload: tuple[PrefillStage, Request]) -> None:
        stage, req = payload
        move = req.route
        self.caches[move.dst].insert(req.hash_ids, move.tokens)
        self._submit(stage, req)

    def _submit(self, stage: PrefillStage, req: Request) -> None:
        cache = stage.on_start.cache
        hit = cache.lookup(req.hash_ids or (), int(req.length))
        req.incr = req.length - hit
        self.raw_tokens += req.length
        self.computed_tokens += req.incr
        stage.submit(req)

    def holding(self, region: Region) -> int:
        """Requests of `region` only the cache holds: moves not yet sent, moves on a reverse
        wire (accounting; the forward wires are the links' own)."""
        n = self.moving[region.name]
        for site in region.links:
            n += self._link_of[(site, region.name)].reverse.propagating_flows
        return n

    # -- prefill start and end ----------------------------------------------------------------
    def started(self, cache: PrefixCache, w: PrefillWorker, req: Request) -> float:
        """At prefill start: arm the prefill-end insert; return the bytes the KV flow carries
        (at a site: only what the region's own cache lacks)."""
        w.end = self.loop.call_at(self.loop.now + req.service, self._prefill_end, cache, w, req)
        if self.kind[cache.name] != "site" or not req.hash_ids:
            return req.kv
        have = self.caches[req.dest.name].peek(req.hash_ids, int(req.length))
        return max(req.kv - cache.layout.per_token_bytes * have, 0.0)

    @staticmethod
    def _prefill_end(cache: PrefixCache, w: PrefillWorker, req: Request) -> None:
        if w.job is req:
            w.end = None
        if req.hash_ids:
            cache.insert(req.hash_ids, int(req.length))

    # -- headroom -----------------------------------------------------------------------------
    def _tick(self) -> None:
        now = self.loop.now
        for lc in self.links.values():
            sent, cap, _ = lc.forward.totals(now)
            flipped, util = lc.detector.look(sent, cap)
            if flipped and self.note is not None:
                self.note(f"cache moves on {lc.forward.name} "
                          f"{'stopped' if lc.detector.scarce else 'resumed'} (link {util:.0%})")
        self.loop.call_at_quiet(now + self.cfg.scarcity_window, self._tick)

    # -- incidents and views --------------------------------------------------------------------
    def flush(self, cluster: str | None = None) -> int:
        """Drop the prefix cache of a site or region (None: all); returns the blocks freed."""
        if cluster is not None and cluster not in self.caches:
            raise ValueError(f"no site or region {cluster!r} (caches: {', '.join(self.caches)})")
        names = [cluster] if cluster is not None else list(self.caches)
        return sum(self.caches[n].clear() for n in names)

    def to_json(self) -> dict:
        """The `cache` object of a topology's `run --json`."""
        out: dict = {"routing": self.cfg.routing, "block_tokens": self.cfg.block_tokens}
        raw = self.raw_tokens
        out["prefill_tokens"] = {"raw": raw, "computed": self.computed_tokens,
                                 "saved": 1 - self.computed_tokens / raw if raw else 0.0}
        for kind in ("sites", "regions"):
            out[kind] = {}
        for name, cache in self.caches.items():
            st = cache.stats
            out[f"{self.kind[name]}s"][name] = {
                **asdict(st), "hit_rate": st.hit_rate, "token_hit_rate": st.token_hit_rate,
                "block_bytes": cache.block_bytes, "state_blocks": cache.state_blocks}
        out["links"] = {name: {"headroom": lc.headroom, "mode_changes": lc.detector.changes,
                               "moves": dict(lc.moves), "bytes_moved": dict(lc.bytes)}
                        for name, lc in self.links.items()}
        out["moving"] = sum(self.moving.values())
        out["index_nodes"] = len(self.index)
        return out


class _StartHook:
    """`PrefillStage.on_start` of a stage whose cluster has a prefix cache."""

    __slots__ = ("owner", "cache")

    def __init__(self, owner: TopologyCache, cache: PrefixCache):
        self.owner, self.cache = owner, cache

    def __call__(self, w: PrefillWorker, req: Request) -> float:
        return self.owner.started(self.cache, w, req)
