"""The prefix caches inside a running emulation, on any topology (the single pair is the 1x1
case: its site "prfaas", its region "pd"): one `PrefixCache` per site and per region, cache
moves over the links as real flows, a headroom detector per link, and on the pair the PrfaaS
transfer cache.

Request path with a [cache]:
  arrival -> the region's policy picks a stage and may ask for a cache move: the pair's
  threshold rule with the bandwidth-aware hook (`cache_routing.route`, which peeks both caches
  through `lookup`: scarce bandwidth routes on the local increment and moves nothing, abundant
  on the best prefix anywhere), or a topology's best-cache on the global `KvIndex` -> `enter`:
  the move first, as a flow of kv_bytes(the blocks the destination lacks) over the link between
  the two clusters, inserted at the destination on arrival -> a lookup in the computing
  cluster's own cache (counts the hit; `req.incr` = the uncached tokens) -> prefill of
  T(incr) -> at prefill end the prompt's blocks enter that cluster's cache.
A site's KV flow carries only what the request's region lacks: S_kv(l) minus the per-token KV of
the region's own cached prefix (its PD-D reads those blocks locally).

Moves run site -> region over the link itself (competing with KV transfers) and region -> site
over the link's reverse direction (a link that follows the forward one's capacity at all times).
Each link has a hysteresis detector on its forward utilization over the last `scarcity_window`
(`[cache]` scarce_at / abundant_at; routing "scarce" / "abundant" pin it): on the pair it
switches the threshold rule between scarce and abundant, on a topology it allows moves only
while the link has headroom. There is no path between two sites or two regions: a prefix cached
elsewhere is reused by computing where it sits.

The transfer cache (the pair's): at prefill end, if a PrfaaS prefill's KV has not all left, the
tail moves into transfer-cache blocks of the site's pool and the instance is freed; the blocks
return when the flow's last byte leaves. When pinned blocks leave no room, the instance keeps
the request (as without a cache) and retries after the next free: nothing is lost. A topology's
site holds a request until its KV has left, the conservative side of it.
Evictions between routing and prefill start are not modelled (blocks in use count as pinned).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import asdict
from typing import TYPE_CHECKING, NamedTuple, Protocol

from emulator.profiles import Profile
from emulator.scenario.cache import CacheConfig
from emulator.sim.books.snapshot import CacheSnap, CacheView
from emulator.sim.routing.cache_routing import RouteDecision, ScarcityDetector
from emulator.sim.routing.kv_index import KvIndex
from emulator.sim.routing.prefix_cache import PrefixCache, kv_layout
from emulator.sim.stages.link import Flow, Link

if TYPE_CHECKING:
    from emulator.sim.core.request import Request
    from emulator.sim.stages.prefill import PrefillStage, PrefillWorker
    from emulator.sim.stages.region import Region

_TAIL_REL = 1e-9  # a flow this close to done at prefill end needs no transfer cache
_OUT = {"site": "to_region", "region": "to_site"}  # a cluster's moves leave in this direction


class Rule(Protocol):
    """The pair's routing rule as the cache drives it (site_policy.ThresholdPolicy)."""

    bandwidth_scarce: bool
    paradigm: object


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

    def __init__(self, forward: Link, reverse: Link, cfg: CacheConfig):
        self.forward, self.reverse = forward, reverse
        self.detector = ScarcityDetector(cfg.scarce_at, cfg.abundant_at,
                                         scarce=cfg.routing == "scarce")
        self.moves = {"to_region": 0, "to_site": 0}
        self.bytes = {"to_region": 0.0, "to_site": 0.0}

    @property
    def headroom(self) -> bool:
        return not self.detector.scarce


class CacheRuntime:
    """See the module docstring. Built empty, then each site's and region's cluster
    (`add_cluster`) and each link (`add_link`) added, then `start`ed (the pair: `attach`)."""

    def __init__(self, loop, cfg: CacheConfig, note: Callable[[str], None], *,
                 transfer_cache: bool = False, index: bool = False):
        self.loop = loop
        self.cfg = cfg
        self.note = note
        self.transfer_cache = transfer_cache
        self.index = KvIndex(cfg.block_tokens) if index else None  # best-cache reads it
        self.caches: dict[str, PrefixCache] = {}
        self.kind: dict[str, str] = {}  # cluster -> "site" or "region"
        self.cluster_of: dict[PrefillStage, str] = {}  # a prefill stage -> where it computes
        self.links: dict[str, LinkCache] = {}
        self._link_of: dict[tuple[str, str], LinkCache] = {}  # (site, region) -> its link
        self.moving: dict[str, int] = {}  # region -> its moves not yet sent
        self.router: Rule | None = None  # the pair's rule follows its link's detector
        self.detached = 0  # requests whose KV tail sits in the transfer cache
        self._pins: dict[int, int] = {}  # flow id -> transfer-cache handle
        self._waiting: dict[int, tuple] = {}  # rid -> (stage, worker, request, tokens, flow)
        self.raw_tokens = 0.0  # prompt tokens of requests entering prefill
        self.computed_tokens = 0.0  # of which prefilled (the rest came from a cache)

    # -- building -------------------------------------------------------------------------------
    def add_cluster(self, name: str, kind: str, stage: PrefillStage, profile: Profile) -> None:
        """The prefix cache of a site (`kind` "site") or a region ("region"), whose prefills
        run on `stage`."""
        cfg = self.cfg
        capacity = cfg.prfaas_capacity if kind == "site" else cfg.pd_capacity
        cache = PrefixCache(capacity, kv_layout(profile), cfg.block_tokens, name)
        if self.index is not None:
            cache.attach_index(self.index)
        self.caches[name] = cache
        self.kind[name] = kind
        self.cluster_of[stage] = name
        if kind == "region":
            self.moving[name] = 0

    def add_link(self, site: str, region: str, forward: Link, reverse_name: str) -> Link:
        """The link from `site` to `region` and its reverse direction (returned), which follows
        the forward one's capacity."""
        reverse = Link(self.loop, reverse_name, forward.capacity, latency=forward.latency)
        forward.mirror = reverse
        lc = LinkCache(forward, reverse, self.cfg)
        self.links[forward.name] = lc
        self._link_of[(site, region)] = lc
        return reverse

    def start(self) -> None:
        """Start the headroom detectors unless the rule is pinned."""
        if self.cfg.routing == "auto" and self.links:
            now = self.loop.now
            for lc in self.links.values():
                lc.detector.last = lc.forward.totals(now)[:2]
            self.loop.call_at_quiet(now + self.cfg.scarcity_window, self._tick)

    def attach(self, router: Rule) -> None:
        """The pair: route with this cache, the rule following the link's detector; start."""
        self.router = router
        router.bandwidth_scarce = self._pair_link.detector.scarce
        self.start()

    @property
    def _pair_link(self) -> LinkCache:
        return next(iter(self.links.values()))

    # -- what routing reads ---------------------------------------------------------------------
    def lookup(self, req: Request, cluster: str) -> int:
        """The pair's routing hook: reusable prefix in `cluster`, without side effects."""
        h = req.hash_ids
        return self.caches[cluster].peek(h, int(req.length)) if h else 0

    def link(self, site: str, region: str) -> LinkCache:
        return self._link_of[(site, region)]

    def mask(self, names: list[str]) -> int:
        assert self.index is not None
        m = 0
        for n in names:
            m |= self.index.bit(n)
        return m

    # -- a routed request -----------------------------------------------------------------------
    def enter(self, stage: PrefillStage, req: Request) -> None:
        """Run the decision's cache move first (if any), then prefill."""
        move = req.route
        if isinstance(move, RouteDecision):  # the pair's rule: a move only where it computes
            move = self._pair_move(stage, move)
        if isinstance(move, Move):
            lc = self._link_of[(move.src, move.dst) if self.kind[move.src] == "site"
                               else (move.dst, move.src)]
            way = _OUT[self.kind[move.src]]
            size = self.caches[move.src].layout.kv_bytes(move.tokens - move.have)
            lc.moves[way] += 1
            lc.bytes[way] += size
            self.moving[req.dest.name] += 1
            move.link.open(size, 0.0, self._move_sent, self._move_arrived, (stage, req, move))
            return
        self._submit(stage, req)

    def _pair_move(self, stage: PrefillStage, d: RouteDecision) -> Move | None:
        if not d.transfer_cache or self.router is None or self.router.paradigm != "prfaas-pd":
            return None
        src, dst = d.prefix_cluster, self.cluster_of[stage]
        assert src is not None
        lc = self._pair_link
        return Move(src, dst, d.prefix_used, d.prefix_used - d.transfer_tokens,
                    lc.forward if self.kind[src] == "site" else lc.reverse)

    def _move_sent(self, flow: Flow) -> None:
        self.moving[flow.payload[1].dest.name] -= 1  # the link counts it while it propagates

    def _move_arrived(self, payload: tuple[PrefillStage, Request, Move]) -> None:
        stage, req, move = payload
        self.caches[move.dst].insert(req.hash_ids, move.tokens)
        self._submit(stage, req)

    def _submit(self, stage: PrefillStage, req: Request) -> None:
        hit = self.caches[self.cluster_of[stage]].lookup(req.hash_ids or (), int(req.length))
        req.incr = req.length - hit
        self.raw_tokens += req.length
        self.computed_tokens += req.incr
        stage.submit(req)

    # -- accounting -----------------------------------------------------------------------------
    @property
    def holding(self) -> int:
        """Requests only the cache holds: moves not yet sent, detached KV tails."""
        return sum(self.moving.values()) + self.detached

    def held_by(self, region: Region) -> int:
        """Requests of a topology's `region` only the cache holds: moves not yet sent, moves on
        a reverse wire (the forward wires are the links' own)."""
        n = self.moving[region.name]
        for site in region.links:
            n += self._link_of[(site, region.name)].reverse.propagating_flows
        return n

    @property
    def waiting(self) -> int:
        """Site instances kept busy because the transfer cache had no room."""
        return sum(1 for _, w, req, _, f in self._waiting.values()
                   if w.job is req and w.flow is f)

    # -- prefill start and end ------------------------------------------------------------------
    def started(self, stage: PrefillStage, w: PrefillWorker, req: Request, kv: float,
                per_token: float | None) -> float:
        """At prefill start: arm the prefill-end timer; return the bytes the KV flow carries
        (at a site: only what the region's own cache lacks)."""
        end = self.loop.now + req.service
        cluster = self.cluster_of[stage]
        if self.kind[cluster] != "site":
            w.end = self.loop.call_at(end, self._prefill_end, stage, w, req, None)
            return kv
        length = int(req.length)
        have = self.caches[req.dest.name].peek(req.hash_ids, length) if req.hash_ids else 0
        if per_token is None:
            per_token = self.caches[cluster].layout.per_token_bytes
        egress = length - have if self.transfer_cache else None
        w.end = self.loop.call_at(end, self._prefill_end, stage, w, req, egress)
        return max(kv - per_token * have, 0.0)

    def _prefill_end(self, stage: PrefillStage, w: PrefillWorker, req: Request,
                     egress: int | None) -> None:
        mine = w.job is req  # else its KV already left (and the worker may serve another)
        if mine:
            w.end = None
        if req.hash_ids:
            self.caches[self.cluster_of[stage]].insert(req.hash_ids, int(req.length))
        if mine and egress is not None and not self._detach(stage, w, req, egress):
            self._waiting[req.rid] = (stage, w, req, egress, w.flow)

    def _detach(self, stage: PrefillStage, w: PrefillWorker, req: Request, egress: int) -> bool:
        """Move the unsent tail into transfer-cache blocks and free the instance; False when
        the pool has no room (the instance keeps the request)."""
        flow = w.flow
        rest = stage.link_for(req).remaining(flow)
        if rest <= flow.size * _TAIL_REL:
            return True  # its last byte leaves now
        cache = self.caches[self.cluster_of[stage]]
        handle = cache.allocate_transfer(math.ceil(egress * rest / flow.size))
        if handle is None:
            return False
        self._pins[flow.fid] = (cache, handle)
        self.detached += 1
        stage.detach(w, self._tail_sent)
        return True

    def _tail_sent(self, flow: Flow) -> None:
        self.detached -= 1
        cache, handle = self._pins.pop(flow.fid)
        cache.free_transfer(handle)
        self._retry()

    def _retry(self) -> None:
        """Blocks were freed: park waiting tails, first come first served."""
        for rid, (stage, w, req, egress, flow) in list(self._waiting.items()):
            if w.job is req and w.flow is flow and not self._detach(stage, w, req, egress):
                return
            del self._waiting[rid]

    # -- headroom -------------------------------------------------------------------------------
    def _tick(self) -> None:
        now = self.loop.now
        for lc in self.links.values():
            sent, cap, _ = lc.forward.totals(now)
            flipped, util = lc.detector.look(sent, cap)
            if not flipped:
                continue
            scarce = lc.detector.scarce
            if self.router is not None:
                self.router.bandwidth_scarce = scarce
                self.note(f"cache routing -> {'scarce' if scarce else 'abundant'} "
                          f"(egress {util:.0%})")
            else:
                self.note(f"cache moves on {lc.forward.name} "
                          f"{'stopped' if scarce else 'resumed'} (link {util:.0%})")
        self.loop.call_at_quiet(now + self.cfg.scarcity_window, self._tick)

    # -- incidents and views --------------------------------------------------------------------
    def flush(self, cluster: str | None = None) -> int:
        """Drop the prefix cache of a site or region (None: all); returns the blocks freed."""
        if cluster is not None and cluster not in self.caches:
            raise ValueError(f"cluster must be one of {', '.join(self.caches)}, got {cluster!r}")
        names = [cluster] if cluster is not None else list(self.caches)
        return sum(self.caches[n].clear() for n in names)

    def _out(self, cluster: str) -> tuple[int, float]:
        """(moves, bytes) that left `cluster`'s cache over its links."""
        way = _OUT[self.kind[cluster]]
        ends = [lc for (site, region), lc in self._link_of.items() if cluster in (site, region)]
        return sum(lc.moves[way] for lc in ends), math.fsum(lc.bytes[way] for lc in ends)

    def snapshot(self) -> CacheView:
        """The pair's cache view (Snapshot.cache)."""
        assert self.router is not None
        clusters = {}
        for c, cache in self.caches.items():
            st = cache.stats
            bb = cache.block_bytes
            moves, moved = self._out(c)
            clusters[c] = CacheSnap(
                hit_rate=st.hit_rate, token_hit_rate=st.token_hit_rate, lookups=st.lookups,
                evicted_blocks=st.evicted_blocks, evicted_states=st.evicted_states,
                used_bytes=st.used_blocks * bb, capacity_bytes=st.capacity_blocks * bb,
                pinned_bytes=st.pinned_blocks * bb, transfers_out=moves, bytes_out=moved)
        return CacheView(scarce=self.router.bandwidth_scarce, clusters=clusters,
                         moving=sum(self.moving.values()), waiting=self.waiting)

    def to_json(self) -> dict:
        """The `cache` object of `run --json`: the pair's per cluster, a topology's per site,
        region and link."""
        raw = self.raw_tokens
        tokens = {"raw": raw, "computed": self.computed_tokens,
                  "saved": 1 - self.computed_tokens / raw if raw else 0.0}
        moving = sum(self.moving.values())
        if self.router is not None:
            clusters = {}
            for c, cache in self.caches.items():
                st = cache.stats
                moves, moved = self._out(c)
                clusters[c] = {**asdict(st), "hit_rate": st.hit_rate,
                               "token_hit_rate": st.token_hit_rate,
                               "block_bytes": cache.block_bytes,
                               "state_blocks": cache.state_blocks,
                               "cache_transfers": moves, "bytes_moved": moved}
            return {"routing": self.cfg.routing, "scarce": self.router.bandwidth_scarce,
                    "mode_changes": self._pair_link.detector.changes,
                    "block_tokens": self.cfg.block_tokens, "prefill_tokens": tokens,
                    "moving": moving, "waiting_for_transfer_cache": self.waiting,
                    "clusters": clusters}
        out: dict = {"routing": self.cfg.routing, "block_tokens": self.cfg.block_tokens,
                     "prefill_tokens": tokens, "sites": {}, "regions": {}}
        for name, cache in self.caches.items():
            st = cache.stats
            out[f"{self.kind[name]}s"][name] = {
                **asdict(st), "hit_rate": st.hit_rate, "token_hit_rate": st.token_hit_rate,
                "block_bytes": cache.block_bytes, "state_blocks": cache.state_blocks}
        out["links"] = {name: {"headroom": lc.headroom, "mode_changes": lc.detector.changes,
                               "moves": dict(lc.moves), "bytes_moved": dict(lc.bytes)}
                        for name, lc in self.links.items()}
        out["moving"] = moving
        out["index_nodes"] = len(self.index) if self.index is not None else 0
        return out
