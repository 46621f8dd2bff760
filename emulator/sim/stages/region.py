"""One PD region's request path and books: its arrivals, admission control, the router's choice
of prefill stage, its PD-P and PD-D, and its counters (arrived = completed + in flight +
rejected, per region).

Each region has a site policy (`emulator.sim.routing.site_policy`) that picks its PD-P or the stage of a
site it has a link to; `req.dest` names the region, so a site's shared queue sends each
request's KV over that region's link to that region's PD-D. The single PrfaaS-PD pair is the 1x1
case: one region whose threshold policy picks between the one PrfaaS stage and its PD-P.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

import numpy as np

from emulator.model import DecodeSpec
from emulator.profiles import Profile
from emulator.scenario.sim import SimConfig
from emulator.sim.arrivals.workload import SyntheticSource, TraceSource, Workload
from emulator.sim.books.metrics import Latencies
from emulator.sim.core.costs import Costs
from emulator.sim.core.request import Request
from emulator.sim.stages.decode import DecodeStage
from emulator.sim.stages.link import Link
from emulator.sim.stages.pool import Pool
from emulator.sim.stages.prefill import PrefillStage


class Picks(Protocol):
    """A region's site choice (emulator.sim.routing.site_policy)."""

    def pick(self, req: Request) -> PrefillStage: ...


class Region:
    """See the module docstring. Built empty, then `wire`d (the stages need its callbacks
    before it can hold them)."""

    def __init__(self, name: str, loop, *, rid_offset: int = 0, rid_step: int = 1):
        self.name = name
        self.loop = loop
        self.arrived = 0
        self.completed = 0
        self.rejected: dict[str, int] = {}
        self.rerouted = 0
        self._rid = rid_offset  # request ids: unique across regions (offset + k x step)
        self._step = rid_step
        self.share = 1.0  # its part of the total offered rate
        # wired by the engine
        self.policy: Picks = None  # type: ignore[assignment]
        self.pdp: PrefillStage = None  # type: ignore[assignment]
        self.pdd: DecodeStage = None  # type: ignore[assignment]
        self.rdma: Link = None  # type: ignore[assignment]
        self.local: Pool = None  # type: ignore[assignment]
        self.workload: Workload = None  # type: ignore[assignment]
        self.source: SyntheticSource | TraceSource | None = None  # what its workload draws
        self.burst_rng: np.random.Generator | None = None  # on/off bursts (None: none)
        self.latencies: Latencies = None  # type: ignore[assignment]
        self.links: dict[str, Link] = {}  # site name -> the link from it to this region
        self.cache = None  # the 1x1 prefix cache (CacheRuntime), when the preset has one
        self.max_queue: int | None = None
        self.max_wait: float | None = None
        self.kv_bounded = False
        self.admission = False
        self.on_done: Callable[[Request, float], None] | None = None  # the engine's hooks
        self.on_arrive: Callable[[Request], None] | None = None

    def wire(self, sim: SimConfig, profile: Profile, decode: DecodeSpec, rdma_bandwidth: float,
             mean_out: float, *, rdma: str, pool: str) -> None:
        """Build its PD side and books, the same for the pair and every region of a topology:
        the RDMA link (`rdma` its name), PD-P, PD-D, the local pool (`pool`) they share, the
        latency books and the admission settings. The policy, sites, links and arrivals are the
        builder's."""
        loop = self.loop
        self.rdma = Link(loop, rdma, rdma_bandwidth, latency=sim.rdma_latency)
        self.pdp = PrefillStage(loop, "pd-p", Costs(profile), self.rdma, self.kv_in)
        self.pdd = DecodeStage(loop, decode.t_decode, decode.bs_max, sim.kv_budget, self.done,
                               mean_out, sim.step)
        self.local = Pool(loop, pool, {"pd-p": self.pdp, "pd-d": self.pdd},
                          conversion_delay=sim.conversion_delay, reroute=self.reroute)
        self.latencies = Latencies(sim.window, sim.slo_ttft, sim.slo_tpot)
        self.max_queue, self.max_wait = sim.max_queue, sim.max_queue_seconds
        self.kv_bounded = sim.kv_budget is not None
        self.admission = sim.admission_bounded or self.kv_bounded

    # -- the request path (hot) ------------------------------------------------------------
    def arrive(self, length: float, out_len: int, hash_ids: list[int] | None) -> None:
        self._rid += self._step
        self.arrived += 1
        req = Request(self._rid, self.loop.now, length, out_len, hash_ids)
        req.dest = self
        stage = self.policy.pick(req)
        if self.on_arrive is not None:  # before admission: scorecards follow the refused too
            self.on_arrive(req)
        if self.admission:
            reason = self._refuse(stage, req)
            if reason is not None:
                self.rejected[reason] = self.rejected.get(reason, 0) + 1
                return
        if self.cache is None:
            stage.submit(req)
        else:
            self.cache.enter(stage, req)

    def _refuse(self, stage: PrefillStage, req: Request) -> str | None:
        """Admission control: why this request is turned away, or None."""
        if self.kv_bounded and not self.pdd.fits(stage.costs.s_kv(req.length)):
            return "kv-exceeds-decode-budget"
        if self.max_queue is not None:
            if len(stage.queue) >= self.max_queue:
                return f"queue-full:{stage.name}"
            if len(self.pdd.queue) >= self.max_queue:
                return "queue-full:pd-d"
        if self.max_wait is not None:
            if stage.expected_wait() > self.max_wait:
                return f"queue-time:{stage.name}"
            if self.pdd.expected_wait() > self.max_wait:
                return "queue-time:pd-d"
        return None

    def kv_in(self, req: Request) -> None:
        self.pdd.submit(req)

    def done(self, req: Request, now: float) -> None:
        self.completed += 1
        self.latencies.record(req, now)
        if self.on_done is not None:
            self.on_done(req, now)

    def reroute(self, reqs: list[Request]) -> None:
        """Requests whose instance failed with their KV: prefill them again (no admission
        check: they were admitted once)."""
        for req in reqs:
            self.rerouted += 1
            stage = self.policy.pick(req)
            if self.cache is None:
                stage.submit(req)
            else:
                self.cache.enter(stage, req)

    # -- books -----------------------------------------------------------------------------
    @property
    def rejected_total(self) -> int:
        return sum(self.rejected.values())
