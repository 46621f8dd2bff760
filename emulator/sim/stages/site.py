"""A PrfaaS site in a topology: its prefill instances behind one shared FIFO queue, its links
to the regions (each a token bucket with the link's RTT), and its egress cap shared by them.

A request queued at a site carries its region (`req.dest`): its KV leaves over the link to that
region and lands in that region's PD-D. The site's egress is processor-shared among its busy
links (the links carrying KV now): each gets an equal share, never more than its own capacity
(bandwidth x its incidents' factors), and what a link cannot use goes to the others
(water-filling). The shares are recomputed whenever a link turns busy or idle or a capacity
changes, so an idle link never holds egress another one could use.

A site with no egress cap of its own and one link has that link as its egress (`LinkEgress`)
and a plain `PrefillStage` on it, which serves that link's region only (the single pair's site):
the hot path then meets one stage type, as Python's attribute caches like it.
"""

from __future__ import annotations

from collections.abc import Callable

from emulator.sim.core.costs import Costs
from emulator.sim.core.request import Request
from emulator.sim.stages.link import Flow, Link
from emulator.sim.stages.pool import Pool
from emulator.sim.stages.prefill import PrefillStage
from emulator.topology.transport import Transport


class SiteLink(Link):
    """A site -> region link whose capacity the site's egress sets (see the module docstring):
    its `nominal` rate is what it could carry alone."""

    def __init__(self, loop, name: str, bandwidth: float, egress: Egress, *, burst: float = 0.0,
                 latency: float = 0.0, line: float | None = None,
                 transport: Transport | None = None):
        super().__init__(loop, name, bandwidth, burst=burst, latency=latency, line=line,
                         transport=transport)
        self.egress = egress
        self.busy = False

    @property
    def group(self) -> Egress:  # type: ignore[override]
        return self.egress

    def open(self, size: float, prod_time: float, on_sent: Callable[[Flow], object],
             on_delivered: Callable[[object], object], payload: object) -> Flow:
        if not self.busy:
            self.busy = True
            self.egress.rebalance()
        return super().open(size, prod_time, on_sent, on_delivered, payload)

    def cancel(self, f: Flow) -> float:
        sent = super().cancel(f)
        self._maybe_idle()
        return sent

    def _finish(self, f: Flow, now: float) -> None:
        super()._finish(f, now)
        self._maybe_idle()

    def _maybe_idle(self) -> None:
        if self.busy and not self.flows and not self.pending:
            self.busy = False
            self.egress.rebalance()


class Egress:
    """A site's egress cap, water-filled over its busy links."""

    def __init__(self, capacity: float):
        self.capacity = float(capacity)
        self.links: list[SiteLink] = []

    def rebalance(self) -> None:
        """Give each busy link min(its nominal, its fair share); an idle link is set to what it
        would get if it turned busy now (so its first flow sees the right rate)."""
        busy = sorted((lk for lk in self.links if lk.busy), key=lambda lk: lk.nominal)
        left, n = self.capacity, len(busy)
        for lk in busy:
            give = min(lk.nominal, left / n)
            lk.set_capacity(give)
            left -= give
            n -= 1
        for lk in self.links:
            if not lk.busy:
                lk.set_capacity(min(lk.nominal, max(left, self.capacity / (len(busy) + 1))))


class LinkEgress:
    """The egress of a site with no cap of its own and one link: that link (a plain `Link`,
    whose capacity is its nominal rate; the single pair's site)."""

    def __init__(self) -> None:
        self.links: list[Link] = []  # its one link, once built

    @property
    def capacity(self) -> float:
        return self.links[0].capacity

    def rebalance(self) -> None:
        for lk in self.links:
            lk.rebalance()


class SiteStage(PrefillStage):
    """A site's prefill instances and its one queue, shared by every region it serves."""

    def __init__(self, loop, name: str, costs: Costs, egress: Egress):
        super().__init__(loop, name, costs, None, _to_region)  # type: ignore[arg-type]
        self.egress = egress
        self.links: dict[str, SiteLink] = {}  # region name -> link
        self.held: dict[str, int] = {}  # region name -> its requests queued or in service here

    def link_for(self, req: Request) -> Link:
        return self.links[req.dest.name]

    def submit(self, req: Request) -> None:
        name = req.dest.name
        self.held[name] = self.held.get(name, 0) + 1
        super().submit(req)

    def _sent(self, flow: Flow) -> None:
        """The last KV byte left: the request leaves the site (onto its link's wire)."""
        self.held[flow.payload.dest.name] -= 1
        super()._sent(flow)

    def _count(self, req: Request, delta: int) -> None:
        self.held[req.dest.name] += delta  # a batched step's request left, or a chunk's on the wire

    def _kv_rate(self) -> float:
        return self.egress.capacity  # queued KV leaves through the site's egress

    def held_by(self, region: str) -> int:
        """Requests of `region` queued or in service here (counted as they enter and leave,
        like the stage's own `holding`)."""
        return self.held.get(region, 0)


def _to_region(req: Request) -> None:
    req.dest.kv_in(req)


class Site:
    """A site's runtime: its stage, its pool of instances and its egress (a cap shared by its
    links, or its one link)."""

    def __init__(self, loop, name: str, costs: Costs, instances: int,
                 egress: Egress | LinkEgress, reroute: Callable[[list[Request]], None]):
        self.name = name
        self.egress = egress
        self.stage: PrefillStage
        if isinstance(egress, LinkEgress):  # its link and region are set as they are built
            self.stage = PrefillStage(loop, name, costs, None, _to_region)  # type: ignore[arg-type]
            self.links: dict[str, Link] = {}
        else:
            self.stage = stage = SiteStage(loop, name, costs, egress)
            self.links = stage.links  # type: ignore[assignment]
        self.pool = Pool(loop, name, {"prfaas": self.stage}, reroute=reroute)
        self.pool.resize(instances)
        self.instances = instances
        self.pool.set_counts({"prfaas": instances}, immediate=True)

    def held_by(self, region: str) -> int:
        """Requests of `region` queued or in service here."""
        stage = self.stage
        if isinstance(stage, SiteStage):
            return stage.held_by(region)
        return stage.holding if region in self.links else 0

    def live(self) -> list[int]:
        return [m.idx for m in self.pool.machines if m.alive and m.target == "prfaas"]
