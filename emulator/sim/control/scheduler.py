"""The dual-timescale scheduler (paper and seed, "Dual-Timescale Scheduling"), as two periodic
controllers on the emulation's virtual clock, on any topology; the single pair is the 1x1 case.

Short timescale (every `period` s): watch the live state and, when it moved, re-solve the
routing on it.
- The pair (one region, one site, one link, threshold routing): watch the PrfaaS egress (bytes
  sent over what the link can deliver now), the prefill queues, the link's capacity, the live
  PrfaaS instances and the routed share (the first solve comes once `min_samples` requests
  were seen). When one crosses its threshold, re-solve the threshold t by Eq. 7 on what the
  router saw lately (the incremental, post-prefix-match lengths of the last `history`
  requests) with the capacity the link delivers NOW and the instances alive NOW, and apply it
  if the model gains at least `t_margin`. Why this helps in a brownout: the PrfaaS ceiling is
  min(N / T(l_long), B / S_kv(l_long)) / p; when B shrinks the bandwidth term binds, and the
  producers' balance moves to a higher t: fewer, longer requests cross the link (their KV per
  request grows more slowly than p falls) while PD-P takes the rest. When the link recovers
  the capacity trigger fires again and t comes back.
- A topology: each site's instances alive now, each link's capacity now (its bandwidth times
  its incidents' factors) and each site's egress; when one moved by more than
  `capacity_change` since the last solve, re-solve the routing on the live topology at the
  splits each region runs now and hand every region its new routing: `lp` the routing bound's
  per-bin shares (emulator.topology.bound), `threshold` the best threshold policy
  (emulator.topology.policy.search_policy: each region's t and its sites' shares);
  `best-bandwidth` reads the live state at every request already.

Long timescale (every `long_period` s): convert local instances between prefill and decode,
with hysteresis: only when the current splits are under stress (the offered rate is at least
`stress` x their Lambda_max: splits with headroom are left alone, whatever the model would gain)
and the optimum beats them by `gain_margin`; one instance per period, in one region; none while
another is still draining or reloading; at least `min_dwell` s between conversions. The pool
drains converted instances: nothing is lost. The pair re-runs the 2-D search (Eqs. 7 and 8) on
the last `long_history` lengths (at least half of them seen) and the link's mean capacity since
the last look; a topology searches its threshold policy with free splits on the live topology
and steps the first region (file order) whose split differs from the optimum's.

Every decision is a `Decision` (time, timescale, reason, change) in `Scheduler.log`, an
`emu.note` line in snapshots, and part of the run JSON.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, replace
from itertools import islice
from typing import NamedTuple, Protocol

import numpy as np

from emulator.distributions import Empirical
from emulator.model import System, ceilings, split_stats
from emulator.optimizer import search
from emulator.paradigm import Paradigm
from emulator.scenario.knobs import KnobError, check_element
from emulator.scenario.scheduler import SchedulerConfig
from emulator.sim.books.metrics import Totals, window
from emulator.sim.routing.site_policy import LpPolicy, RoundRobin, ThresholdPolicy
from emulator.sim.runtime.topology import BoundRouting, TopologyRuntime
from emulator.sim.runtime.topology_live import running_spec, set_region
from emulator.sim.stages.link import Link
from emulator.sim.stages.region import Region
from emulator.topology.bound import BoundError, routing_bound
from emulator.topology.policy import (
    PolicyPoint,
    RegionSetting,
    evaluate_policy,
    search_policy,
)
from emulator.topology.spec import Topology
from emulator.units import format_tokens, to_gbps

FLOOR = 1e-3  # a dead link or site is solved as this share of it (the program stays bounded)


class _Scenario(Protocol):
    system: System


class Controlled(Protocol):
    """What the scheduler reads from and changes in the engine."""

    scenario: _Scenario
    paradigm: Paradigm
    region: Region
    regions: dict[str, Region]
    topology: TopologyRuntime | None

    @property
    def now(self) -> float: ...

    def totals(self) -> Totals: ...

    def change(self, **knobs: object) -> object: ...

    def every(self, period: float, fn: Callable[[Controlled], None]) -> None: ...

    def note(self, text: str) -> None: ...

    def live_instances(self, stage: str, where: str | None = None) -> list[int]: ...


@dataclass(frozen=True)
class Decision:
    time: float
    timescale: str  # "short" or "long"
    reason: str  # what crossed
    change: str  # what was done (or "kept ...")

    def __str__(self) -> str:
        return f"{self.time:7.1f}s {self.timescale}: {self.reason} -> {self.change}"

    def to_dict(self) -> dict:
        return {"time": self.time, "timescale": self.timescale, "reason": self.reason,
                "change": self.change}


@dataclass(frozen=True)
class Conditions:
    """What the pair's scheduler solves for: observed lengths and the resources alive now."""

    lengths: Empirical
    n_prfaas: int
    bandwidth: float  # bytes/s the link delivers now
    n_p: int
    n_d: int


class Conversion(NamedTuple):
    """One long-timescale step: `region`'s split (n_p, n_d) -> (n_p_new, total - n_p_new)."""

    region: str
    n_p: int
    n_d: int
    n_p_new: int
    reason: str


def best_threshold(system: System, cond: Conditions, mode: str, n_p: int | None = None,
                   t_now: float | None = None) -> tuple[float, float, float, float]:
    """Eq. 7 at a fixed split: the t on the observed distribution's grid that maximizes the
    producers' ceiling min(Theta_prfaas / p, Theta_pdp / (1 - p)) (decode does not depend on t,
    so it cannot break ties). Ties go to the t nearest `t_now`. Returns (t, producers' ceiling
    there, the same at `t_now` (nan without one), Lambda_max there)."""
    n_p = cond.n_p if n_p is None else n_p
    n_d = cond.n_p + cond.n_d - n_p
    grid = cond.lengths.threshold_grid()
    if t_now is not None:
        grid = np.append(grid, t_now)
    st = split_stats(cond.lengths, system.prfaas, system.local, grid, mode)
    *_, stack, lam = ceilings(st, cond.n_prfaas, np.array([n_p]), np.array([n_d]),
                              cond.bandwidth, system.decode)
    prod = np.minimum(stack[0, :, 0], stack[1, :, 0])
    best = float(np.max(prod))
    ties = np.flatnonzero(prod >= best * (1 - 1e-9)) if best > 0 else np.arange(len(grid))
    ref = grid[-1] if t_now is not None else grid[0]
    i = int(ties[np.argmin(np.abs(grid[ties] - ref))])
    cur = float(prod[-1]) if t_now is not None else math.nan
    return float(grid[i]), best, cur, float(lam[i, 0])


class Scheduler:
    """Both loops on one emulation, pair or topology; attach with `Scheduler(emu, config)`."""

    MAX_LOG = 1000

    def __init__(self, emu: Controlled, config: SchedulerConfig):
        self.emu = emu
        self.config = config
        self.system = emu.scenario.system
        self.rt = emu.topology  # None: the pair
        self.log: list[Decision] = []
        self.last: Decision | None = None  # the newest decision (the log stops at MAX_LOG)
        self.decisions = 0  # made so far (the log keeps the first MAX_LOG)
        self.conversions = 0
        self.changes = 0  # knob changes applied (t, routing or split): Snapshot.scheduler_changes
        self._last_convert = -math.inf
        self.enabled = True  # off: it keeps watching but changes nothing (an operator's switch)
        self.pinned: set[str] = set()  # "t", "split": set by hand, left alone
        self._short_prev = self._long_prev = emu.totals()
        if self.rt is None:
            self.link: Link = next(iter(emu.region.links.values()))
            # The short loop's estimate of what the link delivers: an EWMA (time constant
            # capacity_tau) of its mean capacity per period. A blip shorter than tau (a 60 s
            # outage) is ridden out, since the backlog it leaves at PrfaaS drains faster than
            # re-routing everything onto the slower PD-P would; a lasting change is followed.
            self.capacity = self.link_capacity(self.link)
            # what t was last solved for: (capacity estimate, PrfaaS alive, routed share or None)
            self._solved: tuple[float, int, float | None] = (self.capacity, self._alive(), None)
            self.router.recent = deque(self.router.recent, maxlen=config.long_history)
        else:
            self._live_solved = self._live()  # the live state the running routing was solved for
        emu.every(config.period, lambda _: self.short_tick())
        if config.long_period > 0:
            emu.every(config.long_period, lambda _: self.long_tick())

    # -- what the scheduler sees ---------------------------------------------------------------
    @property
    def router(self) -> ThresholdPolicy:
        """The pair's routing policy (its one region's threshold rule)."""
        policy = self.emu.region.policy
        assert isinstance(policy, ThresholdPolicy)
        return policy

    @staticmethod
    def link_capacity(link: Link) -> float:
        """What a link delivers now, bytes/s: the one place the scheduler reads a link's
        capacity now (its bandwidth times its incidents' factors)."""
        return link.nominal

    def _alive(self) -> int:
        return len(self.emu.live_instances("prfaas"))

    def _recent(self, history: int) -> np.ndarray:
        recent = self.router.recent
        return np.fromiter(islice(recent, max(0, len(recent) - history), None), float)

    def conditions(self, history: int, bandwidth: float,
                   least: int | None = None) -> Conditions | None:
        """The pair's observed incremental lengths and what is alive now, or None on fewer
        than `least` (default min_samples) observations."""
        xs = self._recent(history)
        if len(xs) < (self.config.min_samples if least is None else least):
            return None
        local = self.emu.region.local
        return Conditions(Empirical.of(np.maximum(xs, 1.0), "observed"), self._alive(), bandwidth,
                          local.count("pd-p"), local.count("pd-d"))

    def triggers(self) -> list[str]:
        """The pair's: update the observations and return the reasons to re-solve t now
        (empty: none)."""
        emu, cfg = self.emu, self.config
        prev, now = self._short_prev, emu.totals()
        self._short_prev = now
        w = window(prev, now)
        if w.seconds > 0:
            mean = (now.link_cap - prev.link_cap) / w.seconds
            keep = math.exp(-w.seconds / cfg.capacity_tau) if cfg.capacity_tau > 0 else 0.0
            self.capacity = keep * self.capacity + (1 - keep) * mean
        out = []
        egress = max(w.link, w.link_saturated)
        if egress >= cfg.egress_high:
            out.append(f"egress {egress:.0%} >= {cfg.egress_high:.0%}")
        for i, stage in ((0, "prfaas"), (1, "pd-p")):
            if now.queue[i] >= cfg.queue_high:
                out.append(f"{stage} queue {now.queue[i]} >= {cfg.queue_high}")
        cap, n_pf, p = self._solved
        if abs(self.capacity - cap) > cfg.capacity_change * max(cap, self.capacity):
            # the strip shows the link's capacity now; the estimate solved for lags it by tau
            out.append(f"link {to_gbps(self.link_capacity(self.link)):.1f} Gbps now (estimate "
                       f"{to_gbps(cap):.1f} -> {to_gbps(self.capacity):.1f} over "
                       f"{cfg.capacity_tau:g} s)")
        if (alive := self._alive()) != n_pf:
            out.append(f"PrfaaS alive {n_pf} -> {alive}")
        xs = self._recent(cfg.history)
        if len(xs) >= cfg.min_samples:
            p_now = float(np.mean(xs > self.router.t))
            if p is None:
                out.append(f"first {len(xs)} requests observed")
            elif abs(p_now - p) > cfg.p_drift:
                out.append(f"routed share {p:.2f} -> {p_now:.2f}")
        return out

    def _live(self) -> dict[str, float]:
        """A topology's live state: alive instances per site, capacity per link and egress."""
        rt = self.rt
        assert rt is not None
        out = {f"site:{n}": float(len(s.live())) for n, s in rt.sites.items()}
        out |= {f"link:{n}": self.link_capacity(lk) for n, lk in rt.links.items()}
        out |= {f"egress:{n}": s.egress.capacity for n, s in rt.sites.items()}
        return out

    def live_topology(self, live: dict[str, float]) -> Topology:
        """The declared topology at the live capacities and the splits running now."""
        rt = self.rt
        assert rt is not None
        topo = rt.topo
        sites = tuple(replace(s, instances=max(int(live[f"site:{s.name}"]), 0),
                              egress=None if s.egress is None else
                              max(live[f"egress:{s.name}"], FLOOR * s.egress))
                      for s in topo.sites)
        links = tuple(replace(k, bandwidth=max(live[f"link:{k.name}"], FLOOR * k.bandwidth))
                      for k in topo.links)
        regions = tuple(replace(r, n_p=rt.regions[r.name].local.count("pd-p"),
                                n_d=rt.regions[r.name].local.count("pd-d"))
                        for r in topo.regions)
        return replace(topo, sites=sites, links=links, regions=regions)

    # -- short timescale: the routing ------------------------------------------------------------
    def short_tick(self) -> None:
        if self.rt is not None:
            live = self._live()
            tol = self.config.capacity_change
            was = self._live_solved
            moved = [k for k, v in live.items() if abs(v - was[k]) > tol * max(was[k], 1e-12)]
            if moved and self.enabled:
                self.resolve_routing(", ".join(_moved(k, was[k], live[k]) for k in moved[:3]),
                                     live)
            return
        reasons = self.triggers()  # observations stay current while off
        if reasons and self.enabled and self.emu.paradigm.threshold_routing:
            self.resolve_t(", ".join(reasons))

    def resolve_t(self, reason: str, n_p: int | None = None) -> None:
        """The pair's: re-solve t by Eq. 7 on the recent lengths and the capacity estimate;
        apply it when the producers' ceiling gains more than t_margin (sampling noise moves the
        optimum a little at every solve)."""
        emu, cfg = self.emu, self.config
        t_now = self.router.t
        cond = self.conditions(cfg.history, self.capacity)
        if cond is None:
            return
        if "t" in self.pinned:
            self._decide("short", reason, f"kept t {format_tokens(t_now)} (pinned by hand)",
                         quiet=True)
            self._solved = (cond.bandwidth, cond.n_prfaas, self._solved[2])
            return
        t_new, gain, cur, lam = best_threshold(self.system, cond, cfg.mode, n_p, t_now)
        if t_new == t_now or not gain > cur * (1 + cfg.t_margin):
            self._decide("short", reason, f"kept t {format_tokens(t_now)} "
                         f"(Eq. 7 gain {_ratio(gain, cur)})", quiet=True)
        else:
            self._decide("short", reason, f"t {format_tokens(t_now)} -> {format_tokens(t_new)} "
                         f"(producers {cur:.2f} -> {gain:.2f} req/s, Lambda {lam:.2f})")
            emu.change(t=t_new)
            self.changes += 1
        p = float(np.mean(cond.lengths.sorted_values > self.router.t))
        self._solved = (cond.bandwidth, cond.n_prfaas, p)

    def resolve_routing(self, reason: str, live: dict[str, float] | None = None) -> None:
        """A topology's: re-solve the routing on the live topology at the splits now and hand
        every region its part (a numerical failure keeps the routing running)."""
        live = self._live() if live is None else live
        self._live_solved = live
        if "t" in self.pinned:
            self._decide("short", reason, "kept the routing (pinned by hand)")
            return
        try:
            change = self._hand_out(self.live_topology(live))
        except BoundError as exc:
            change = f"kept (re-solve failed: {exc})"
        self._decide("short", reason, change)

    def _hand_out(self, topo: Topology) -> str:
        rt = self.rt
        assert rt is not None
        if rt.routing == "lp":
            bound = BoundRouting(routing_bound(topo))
            for spec in topo.regions:
                region = rt.regions[spec.name]
                if not isinstance(region.policy, LpPolicy):
                    continue  # its routing was switched by hand: left alone
                links = topo.links_of_region(spec.name)
                stages = [rt.sites[k.site].stage for k in links]
                edges, weights = bound.routing_for(spec.name, [k.site for k in links])
                region.policy = LpPolicy(edges, [region.pdp, *stages], weights)
            self.changes += 1
            return f"lp routing re-solved: Lambda {bound.lambda_max:.3f} req/s"
        if rt.routing == "threshold":
            point = _at_splits(topo)
            for spec in topo.regions:
                s = point.settings[spec.name]
                region = rt.regions[spec.name]
                links = topo.links_of_region(spec.name)
                policy = region.policy
                if not isinstance(policy, ThresholdPolicy):
                    continue  # its routing was switched by hand: left alone
                policy.t = s.t
                shares = [s.shares.get(k.site, 0.0) for k in links]
                stages = [rt.sites[k.site].stage for k in links]
                policy.sites = RoundRobin(stages, shares) if sum(shares) > 0 else None
            self.changes += 1
            ts = ", ".join(f"{n} t {s.t:.0f}" for n, s in point.settings.items())
            return f"thresholds re-solved: {ts} (Lambda {point.lambda_max:.3f} req/s)"
        return "kept (best-bandwidth reads the live state per request)"

    # -- long timescale: the splits ------------------------------------------------------------
    def long_tick(self) -> None:
        """One conversion step toward the optimum, with hysteresis (see the module)."""
        emu = self.emu
        prev, now = self._long_prev, emu.totals()
        self._long_prev = now
        if (not self.enabled or "split" in self.pinned or not emu.paradigm.threshold_routing
                or emu.now - self._last_convert < self.config.min_dwell):
            return
        for region in emu.regions.values():
            local = region.local
            if any(m.role != m.target for m in local.machines[: local.size]):
                return  # a conversion is still draining or reloading
        step = self._pair_step(prev, now) if self.rt is None else self._region_step(prev, now)
        if step is None:
            return
        name, n_p, n_d, new, reason = step
        total = n_p + n_d
        where = "" if self.rt is None else f"{name}: "
        self._decide("long", reason, f"{where}split N_p {n_p} -> {new}, N_d {n_d} -> {total - new}")
        if self.rt is None:
            emu.change(n_p=new, n_d=total - new)
        else:
            set_region(emu, name, n_p=new, n_d=total - new)
        self.changes += 1
        self.conversions += 1
        self._last_convert = emu.now
        if self.rt is None:
            self.resolve_t("new split", new)
        elif self.rt.routing != "best-bandwidth":
            self.resolve_routing("new split")

    def _pair_step(self, prev: Totals, now: Totals) -> Conversion | None:
        """The pair's step: the 2-D search (Eqs. 7 and 8) on the observed lengths."""
        cfg = self.config
        # the long timescale sees the link's mean capacity since its last look, not a blip
        mean_cap = (now.link_cap - prev.link_cap) / (now.t - prev.t) if now.t > prev.t else 0.0
        cond = self.conditions(cfg.long_history, mean_cap, cfg.long_history // 2)
        if cond is None:
            return None
        here = best_threshold(self.system, cond, cfg.mode)[3]
        offered = (now.arrived - prev.arrived) / (now.t - prev.t)
        if offered < cfg.stress * here:
            return None  # headroom: converting would only churn
        pool = cond.n_p + cond.n_d
        best = search(replace(self.system, lengths=cond.lengths), cfg.mode,
                      n_prfaas=cond.n_prfaas, bandwidth=cond.bandwidth, pool=pool).best
        target = best.knobs.n_p
        if target == cond.n_p or not best.lambda_max > here * (1 + cfg.gain_margin):
            return None
        n_p = cond.n_p + (1 if target > cond.n_p else -1)
        if best_threshold(self.system, cond, cfg.mode, n_p)[3] < here:
            return None  # the first step alone would lose throughput
        return Conversion(self.emu.region.name, cond.n_p, cond.n_d, n_p,
                          f"offered {offered:.2f} req/s; optimum N_p {target} / N_d "
                          f"{pool - target} gives Lambda {best.lambda_max:.2f} vs {here:.2f} "
                          f"req/s ({best.binding} binds there)")

    def _region_step(self, prev: Totals, now: Totals) -> Conversion | None:
        """A topology's step: its threshold policy searched with free splits on the live
        topology; the first region (file order) whose split differs moves one instance, when
        that step alone loses nothing and the region's knob rules allow it."""
        cfg = self.config
        if not now.t > prev.t:
            return None
        emu = self.emu
        topo = self.live_topology(self._live())
        best, _ = search_policy(topo)
        point = _keep_splits(topo, best)
        here = point.lambda_max
        offered = (now.arrived - prev.arrived) / (now.t - prev.t)
        if offered < cfg.stress * here or not best.lambda_max > here * (1 + cfg.gain_margin):
            return None  # headroom, or too little to gain: converting would only churn
        for r in topo.regions:
            total = r.n_p + r.n_d
            target = min(best.settings[r.name].n_p, total)
            if target == r.n_p:
                continue
            n_p = r.n_p + (1 if target > r.n_p else -1)
            step = {**point.settings, r.name: replace(point.settings[r.name], n_p=n_p,
                                                      n_d=total - n_p)}
            if evaluate_policy(topo, step).lambda_max < here:
                continue  # the first step alone would lose throughput
            try:
                check_element(running_spec(emu), "region", r.name, n_p=n_p, n_d=total - n_p)
            except KnobError:
                continue
            binds = ", ".join(best.binding) or "nothing"
            return Conversion(r.name, r.n_p, r.n_d, n_p,
                              f"offered {offered:.2f} req/s; {r.name}'s optimum N_p {target} "
                              f"/ N_d {total - target} gives Lambda {best.lambda_max:.2f} vs "
                              f"{here:.2f} req/s ({binds} binds there)")
        return None

    # -- the log -------------------------------------------------------------------------------
    def _decide(self, timescale: str, reason: str, change: str, quiet: bool = False) -> None:
        """Record a decision. `quiet` ones (nothing changed) are logged only when the previous
        decision was not the same kind of no-op, so a standing trigger does not flood the log."""
        if quiet and self.log and self.log[-1].change.startswith("kept"):
            return
        d = Decision(self.emu.now, timescale, reason, change)
        self.last = d
        self.decisions += 1
        if len(self.log) < self.MAX_LOG:
            self.log.append(d)
        self.emu.note(f"scheduler ({timescale}): {reason} -> {change}")

    def to_dict(self) -> dict:
        return {"config": {k: getattr(self.config, k) for k in self.config.__dataclass_fields__},
                "decisions": [d.to_dict() for d in self.log], "decision_count": self.decisions,
                "conversions": self.conversions}


def _at_splits(topo: Topology) -> PolicyPoint:
    """The best threshold policy on `topo` at each region's split there (the search may move
    splits; converting instances is the long timescale's)."""
    return _keep_splits(topo, search_policy(topo)[0])


def _keep_splits(topo: Topology, point: PolicyPoint) -> PolicyPoint:
    """A searched policy's thresholds and shares at each region's split in `topo`."""
    settings: dict[str, RegionSetting] = {
        r.name: replace(point.settings[r.name], n_p=r.n_p, n_d=r.n_d) for r in topo.regions}
    return evaluate_policy(topo, settings)


def _ratio(new: float, old: float) -> str:
    if not (old > 0 and math.isfinite(old)):
        return "n/a"
    return f"{new / old - 1:+.1%}"


def _moved(key: str, was: float, now: float) -> str:
    """One live quantity's move in words: "link hub->east 0.143 -> 100 Gbps", "egress hub
    ...", "site hub alive 8 -> 6" (the live state keeps bytes/s and instance counts)."""
    kind, _, name = key.partition(":")
    if kind == "site":
        return f"site {name} alive {was:g} -> {now:g}"
    return f"{kind} {name} {to_gbps(was):.3g} -> {to_gbps(now):.3g} Gbps"
