"""The scheduler's short timescale on a topology: every `[scheduler] period` seconds it reads
the live state (each site's instances alive now, each link's capacity now: its bandwidth times
its incidents' factors, each site's egress) and, when that moved by more than
`capacity_change` since the last solve, re-solves the routing on it and hands every region its
new routing:

- `lp`: the routing bound on the live topology (emulator.topology.bound), each region's
  per-bin shares (its split stays: role changes are the long timescale's, and the bound's
  routing is re-solved at the split each region runs now);
- `threshold`: the best threshold policy on the live topology at the splits now
  (emulator.topology.policy.search_policy): each region's t and its sites' shares.
- `best-bandwidth` reads the live state at every request already: nothing to re-solve.

Each re-solve is a `Decision` in the log (the run JSON's `scheduler`) and a note.
"""

from __future__ import annotations

from dataclasses import replace

from emulator.scenario.scheduler import SchedulerConfig
from emulator.sim.control.scheduler import Decision
from emulator.sim.routing.site_policy import LpPolicy, RoundRobin, ThresholdPolicy
from emulator.sim.runtime.topology import BoundRouting, TopologyRuntime
from emulator.topology.bound import BoundError, routing_bound
from emulator.topology.policy import RegionSetting, evaluate_policy, search_policy
from emulator.topology.spec import Topology

FLOOR = 1e-3  # a dead link or site is solved as this share of it (the program stays bounded)


class TopologyScheduler:
    """See the module docstring; attach with `TopologyScheduler(emu, config)`."""

    MAX_LOG = 1000

    def __init__(self, emu, config: SchedulerConfig):
        self.emu = emu
        self.config = config
        self.rt: TopologyRuntime = emu.topology
        self.enabled = True
        self.pinned: set[str] = set()
        self.log: list[Decision] = []
        self.last: Decision | None = None
        self.decisions = 0
        self.changes = 0
        self.conversions = 0
        self._solved = self._live()  # the state the running routing was solved for
        emu.every(config.period, lambda _: self.tick())

    def _live(self) -> dict[str, float]:
        rt = self.rt
        out = {f"site:{n}": float(len(s.live())) for n, s in rt.sites.items()}
        out |= {f"link:{n}": lk.nominal for n, lk in rt.links.items()}
        out |= {f"egress:{n}": s.egress.capacity for n, s in rt.sites.items()}
        return out

    def _moved(self, live: dict[str, float]) -> list[str]:
        tol = self.config.capacity_change
        return [k for k, v in live.items()
                if abs(v - self._solved[k]) > tol * max(self._solved[k], 1e-12)]

    def live_topology(self, live: dict[str, float]) -> Topology:
        """The declared topology at the live capacities and the splits running now."""
        topo = self.rt.topo
        sites = tuple(replace(s, instances=max(int(live[f"site:{s.name}"]), 0),
                              egress=None if s.egress is None else
                              max(live[f"egress:{s.name}"], FLOOR * s.egress))
                      for s in topo.sites)
        links = tuple(replace(k, bandwidth=max(live[f"link:{k.name}"], FLOOR * k.bandwidth))
                      for k in topo.links)
        regions = tuple(replace(r, n_p=self.rt.regions[r.name].local.count("pd-p"),
                                n_d=self.rt.regions[r.name].local.count("pd-d"))
                        for r in topo.regions)
        return replace(topo, sites=sites, links=links, regions=regions)

    def tick(self) -> None:
        live = self._live()
        moved = self._moved(live)
        if not moved or not self.enabled:
            return
        reason = ", ".join(f"{k} {self._solved[k]:.3g} -> {live[k]:.3g}" for k in moved[:3])
        topo = self.live_topology(live)
        try:
            change = self._resolve(topo)
        except BoundError as exc:  # a numerical failure keeps the routing running
            change = f"kept (re-solve failed: {exc})"
        self._solved = live
        self._record(reason, change)

    def _resolve(self, topo: Topology) -> str:
        rt = self.rt
        if rt.routing == "lp":
            bound = BoundRouting(routing_bound(topo))
            for spec in topo.regions:
                region = rt.regions[spec.name]
                links = topo.links_of_region(spec.name)
                stages = [rt.sites[k.site].stage for k in links]
                edges, weights = bound.routing_for(spec.name, [k.site for k in links])
                region.policy = LpPolicy(edges, [region.pdp, *stages], weights)
            self.changes += 1
            return f"lp routing re-solved: Lambda {bound.lambda_max:.3f} req/s"
        if rt.routing == "threshold":
            point, _ = search_policy(topo)
            settings = _keep_splits(topo, point.settings)
            point = evaluate_policy(topo, settings)
            for spec in topo.regions:
                s = settings[spec.name]
                region = rt.regions[spec.name]
                links = topo.links_of_region(spec.name)
                policy = region.policy
                assert isinstance(policy, ThresholdPolicy)
                policy.t = s.t
                shares = [s.shares.get(k.site, 0.0) for k in links]
                stages = [rt.sites[k.site].stage for k in links]
                policy.sites = RoundRobin(stages, shares) if sum(shares) > 0 else None
            self.changes += 1
            ts = ", ".join(f"{n} t {s.t:.0f}" for n, s in settings.items())
            return f"thresholds re-solved: {ts} (Lambda {point.lambda_max:.3f} req/s)"
        return "kept (best-bandwidth reads the live state per request)"

    def _record(self, reason: str, change: str) -> None:
        d = Decision(self.emu.now, "short", reason, change)
        self.decisions += 1
        self.last = d
        if len(self.log) < self.MAX_LOG:
            self.log.append(d)
        self.emu.note(f"scheduler: {reason} -> {change}")

    def to_dict(self) -> dict:
        return {"period": self.config.period, "decisions": self.decisions,
                "changes": self.changes, "log": [d.to_dict() for d in self.log]}


def _keep_splits(topo: Topology, settings: dict[str, RegionSetting]) -> dict[str, RegionSetting]:
    """The searched thresholds and shares at each region's split now (the search may move
    splits; converting instances is the long timescale's)."""
    return {r.name: replace(settings[r.name], n_p=r.n_p, n_d=r.n_d) for r in topo.regions}

