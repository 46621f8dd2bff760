"""The hybrid prefix cache inside a running emulation: one PrefixCache per cluster (the
router's lookup hook peeks both), cache moves as real link flows, transfer-cache blocks, and the detector
that switches the routing rule between scarce and abundant bandwidth.

Request path with a cache:
  arrival -> router (peeks both caches, `cache_routing.route`) -> when the abundant rule moves a
  cache: a flow of `kv_bytes(transfer_tokens)` over the link leaving the cache's cluster (PrfaaS
  -> PD: the main link, competing with KV transfers; PD -> PrfaaS: the reverse link, a Link of
  the same capacity), inserted at the destination on arrival -> lookup in the computing cluster
  (counts the hit; `req.incr` = the uncached tokens) -> prefill of T(incr) -> at prefill end the
  prompt's blocks go into that cluster's cache.
  A PrfaaS prefill's flow carries only the KV that PD lacks (S_kv(l) minus the full-attention KV
  of PD's cached prefix: `egress_tokens`). At prefill end, if its KV has not all left, the tail
  moves into transfer-cache blocks of the PrfaaS pool and the instance is freed; the blocks
  return when the flow's last byte leaves. When pinned blocks leave no room, the instance keeps
  the request (as without a cache) and retries after the next free: nothing is lost.
Evictions between routing and prefill start are not modelled (blocks in use count as pinned).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import asdict
from typing import TYPE_CHECKING

from emulator.profiles import Profile
from emulator.scenario.cache import CacheConfig
from emulator.sim.books.snapshot import CacheSnap, CacheView
from emulator.sim.routing.cache_routing import ScarcityDetector
from emulator.sim.routing.prefix_cache import CLUSTERS, PrefixCache, kv_layout
from emulator.sim.stages.link import Flow, Link

if TYPE_CHECKING:
    from emulator.sim.core.request import Request
    from emulator.sim.routing.site_policy import ThresholdPolicy
    from emulator.sim.stages.prefill import PrefillStage, PrefillWorker

CLUSTER_OF = {"prfaas": "prfaas", "pd-p": "pd"}  # prefill stage -> the cluster it computes in
_TAIL_REL = 1e-9  # a flow this close to done at prefill end needs no transfer cache


class CacheRuntime:
    def __init__(self, loop, cfg: CacheConfig, profiles: dict[str, Profile],
                 links: dict[str, Link], prfaas: PrefillStage, note: Callable[[str], None]):
        self.loop = loop
        self.cfg = cfg
        caps = {"prfaas": cfg.prfaas_capacity, "pd": cfg.pd_capacity}
        self.caches = {c: PrefixCache(caps[c], kv_layout(profiles[c]), cfg.block_tokens, c)
                       for c in CLUSTERS}
        self.links = links  # source cluster -> the link its cache leaves over
        self.prfaas = prfaas
        self.note = note
        self.detector = ScarcityDetector(cfg.scarce_at, cfg.abundant_at,
                                         scarce=cfg.routing == "scarce")
        self.router: ThresholdPolicy | None = None
        self.moving = 0  # requests waiting for a cache move to leave its link
        self.detached = 0  # requests whose KV tail sits in the transfer cache
        self._pins: dict[int, int] = {}  # flow id -> transfer-cache handle
        self._waiting: dict[int, tuple] = {}  # rid -> (worker, request, egress tokens, flow)
        self.moves_out = dict.fromkeys(CLUSTERS, 0)
        self.bytes_out = dict.fromkeys(CLUSTERS, 0.0)
        self.raw_tokens = 0.0  # prompt tokens of requests entering prefill
        self.computed_tokens = 0.0  # of which prefilled (the rest came from a cache)

    def attach(self, router: ThresholdPolicy) -> None:
        """Route with this cache; start the scarcity detector unless the rule is pinned."""
        self.router = router
        router.bandwidth_scarce = self.detector.scarce
        if self.cfg.routing == "auto":
            now = self.loop.now
            self.detector.last = self.links["prfaas"].totals(now)[:2]
            self.loop.call_at_quiet(now + self.cfg.scarcity_window, self._tick)

    @property
    def holding(self) -> int:
        """Requests only the cache holds (accounting): moving caches, detached KV tails."""
        return self.moving + self.detached

    @property
    def waiting(self) -> int:
        """PrfaaS instances kept busy because the transfer cache had no room."""
        return sum(1 for w, req, _, f in self._waiting.values() if w.job is req and w.flow is f)

    # -- routing and admission into prefill ------------------------------------------------
    def lookup(self, req: Request, cluster: str) -> int:
        """The router's hook: reusable prefix in `cluster`, without side effects."""
        h = req.hash_ids
        return self.caches[cluster].peek(h, int(req.length)) if h else 0

    def enter(self, stage: PrefillStage, req: Request) -> None:
        """A routed request: move its cache first when the rule says so, then prefill."""
        d = req.route
        if d is not None and d.transfer_cache and self.router.paradigm == "prfaas-pd":
            src = d.prefix_cluster
            size = self.caches[src].layout.kv_bytes(d.transfer_tokens)
            self.moving += 1
            self.moves_out[src] += 1
            self.bytes_out[src] += size
            self.links[src].open(size, 0.0, self._move_sent, self._move_arrived, (stage, req))
            return
        self._submit(stage, req)

    def _move_sent(self, flow: Flow) -> None:
        self.moving -= 1  # the link counts it while it propagates

    def _move_arrived(self, payload: tuple[PrefillStage, Request]) -> None:
        stage, req = payload
        self.caches[CLUSTER_OF[stage.name]].insert(req.hash_ids, req.route.prefix_used)
        self._submit(stage, req)

    def _submit(self, stage: PrefillStage, req: Request) -> None:
        hit = self.caches[CLUSTER_OF[stage.name]].lookup(req.hash_ids or (), int(req.length))
        req.incr = req.length - hit
        self.raw_tokens += req.length
        self.computed_tokens += req.incr
        stage.submit(req)

    # -- prefill start and end ---------------------------------------------------------------
    def started(self, stage: PrefillStage, w: PrefillWorker, req: Request, kv: float,
                per_token: float | None) -> float:
        """At prefill start: arm the prefill-end timer; return the bytes the KV flow carries."""
        end = self.loop.now + req.service
        if stage is not self.prfaas:
            w.end = self.loop.call_at(end, self._prefill_end, stage, w, req, None)
            return kv
        length = int(req.length)
        l_pd = self.caches["pd"].peek(req.hash_ids, length) if req.hash_ids else 0
        if per_token is None:
            per_token = self.caches["prfaas"].layout.per_token_bytes
        w.end = self.loop.call_at(end, self._prefill_end, stage, w, req, length - l_pd)
        return max(kv - per_token * l_pd, 0.0)

    def _prefill_end(self, stage: PrefillStage, w: PrefillWorker, req: Request,
                     egress: int | None) -> None:
        mine = w.job is req  # else its KV already left (and the worker may serve another)
        if mine:
            w.end = None
        if req.hash_ids:
            self.caches[CLUSTER_OF[stage.name]].insert(req.hash_ids, int(req.length))
        if mine and egress is not None and not self._detach(w, req, egress):
            self._waiting[req.rid] = (w, req, egress, w.flow)

    def _detach(self, w: PrefillWorker, req: Request, egress: int) -> bool:
        """Move the unsent tail into transfer-cache blocks and free the instance; False when
        the pool has no room (the instance keeps the request)."""
        flow = w.flow
        rest = self.prfaas.link.remaining(flow)
        if rest <= flow.size * _TAIL_REL:
            return True  # its last byte leaves now
        handle = self.caches["prfaas"].allocate_transfer(math.ceil(egress * rest / flow.size))
        if handle is None:
            return False
        self._pins[flow.fid] = handle
        self.detached += 1
        self.prfaas.detach(w, self._tail_sent)
        return True

    def _tail_sent(self, flow: Flow) -> None:
        self.detached -= 1
        self.caches["prfaas"].free_transfer(self._pins.pop(flow.fid))
        self._retry()

    def _retry(self) -> None:
        """Blocks were freed: park waiting tails, first come first served."""
        for rid, (w, req, egress, flow) in list(self._waiting.items()):
            if w.job is req and w.flow is flow and not self._detach(w, req, egress):
                return
            del self._waiting[rid]

    # -- scarce / abundant ---------------------------------------------------------------------
    def _tick(self) -> None:
        now = self.loop.now
        sent, cap, _ = self.links["prfaas"].totals(now)
        flipped, util = self.detector.look(sent, cap)
        if flipped:
            self.router.bandwidth_scarce = self.detector.scarce
            self.note(f"cache routing -> {'scarce' if self.detector.scarce else 'abundant'} "
                      f"(egress {util:.0%})")
        self.loop.call_at_quiet(now + self.cfg.scarcity_window, self._tick)

    # -- incidents and views -------------------------------------------------------------------
    def flush(self, cluster: str | None = None) -> int:
        """Drop the prefix caches of `cluster` (or both); returns the blocks freed."""
        if cluster is not None and cluster not in self.caches:
            raise ValueError(f"cluster must be one of {', '.join(CLUSTERS)}, got {cluster!r}")
        return sum(self.caches[c].clear() for c in ((cluster,) if cluster else CLUSTERS))

    def snapshot(self) -> CacheView:
        clusters = {}
        for c, cache in self.caches.items():
            st = cache.stats
            bb = cache.block_bytes
            clusters[c] = CacheSnap(
                hit_rate=st.hit_rate, token_hit_rate=st.token_hit_rate, lookups=st.lookups,
                evicted_blocks=st.evicted_blocks, evicted_states=st.evicted_states,
                used_bytes=st.used_blocks * bb, capacity_bytes=st.capacity_blocks * bb,
                pinned_bytes=st.pinned_blocks * bb, transfers_out=self.moves_out[c],
                bytes_out=self.bytes_out[c])
        return CacheView(scarce=self.router.bandwidth_scarce, clusters=clusters,
                         moving=self.moving, waiting=self.waiting)

    def to_json(self) -> dict:
        """The `cache` object of `run --json`."""
        clusters = {}
        for c, cache in self.caches.items():
            st = cache.stats
            clusters[c] = {**asdict(st), "hit_rate": st.hit_rate,
                           "token_hit_rate": st.token_hit_rate,
                           "block_bytes": cache.block_bytes,
                           "state_blocks": cache.state_blocks,
                           "cache_transfers": self.moves_out[c],
                           "bytes_moved": self.bytes_out[c]}
        raw = self.raw_tokens
        return {"routing": self.cfg.routing, "scarce": self.router.bandwidth_scarce,
                "mode_changes": self.detector.changes, "block_tokens": self.cfg.block_tokens,
                "prefill_tokens": {"raw": raw, "computed": self.computed_tokens,
                                   "saved": 1 - self.computed_tokens / raw if raw else 0.0},
                "moving": self.moving, "waiting_for_transfer_cache": self.waiting,
                "clusters": clusters}
