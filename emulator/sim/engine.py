"""The emulation: a scenario's clusters, link, router and workload wired on a virtual-time loop.

Request path: arrival -> router -> admission control -> PrfaaS or PD-P prefill (FIFO, the
instance held until the KV has left) -> cross-datacenter link or intra-cluster RDMA (pipelined
with prefill) -> PD-D decode queue -> continuous batching -> completion.

Live changes go through `apply(controls)` (the engine computes the diff) and lose nothing:
instances that change role drain first. Incidents act through the public fault API (keyed and
composed: `set_link_factor`, `set_rate_multiplier`, `set_length_distribution`,
`fail_instance`/`restore_instance`, `flush_cache`); `every`, `spawn` and `call_at` attach
controllers, coroutines and timers to the virtual loop. Observation (totals, accounting,
snapshots) is emulator.sim.reports.observe's.
"""

from __future__ import annotations

import asyncio
import math
from collections import deque
from collections.abc import Callable, Coroutine, Hashable
from dataclasses import replace

import numpy as np

from emulator.budget import CAPS, BudgetError
from emulator.distributions import LengthDistribution
from emulator.model import STAGES, Cluster, OperatingPoint, Stage
from emulator.optimizer import homogeneous as homogeneous_point
from emulator.paradigm import Paradigm
from emulator.scenario.decode import CardStep, retimed
from emulator.scenario.incidents import Incident
from emulator.scenario.knobs import Controls, KnobError, best_cache_problem
from emulator.scenario.scenario import Scenario, with_tpot
from emulator.scenario.topology import replay_problem
from emulator.sim.arrivals.sessions import generate_sessions, to_trace
from emulator.sim.arrivals.workload import TraceSource, Workload
from emulator.sim.books.accounting import Accounting
from emulator.sim.books.metrics import LatencyGroup, Totals
from emulator.sim.books.snapshot import LiveKnobs, Snapshot
from emulator.sim.books.timeline import Active, Timeline
from emulator.sim.control.scheduler import Scheduler
from emulator.sim.core.costs import Costs
from emulator.sim.core.loop import VirtualTimeLoop
from emulator.sim.core.request import Request
from emulator.sim.reports.observe import NOTE_LOG, Observer
from emulator.sim.reports.result import RunResult
from emulator.sim.reports.topology_report import marks
from emulator.sim.routing.site_policy import PrefixLookup, ThresholdPolicy
from emulator.sim.runtime.prefill_backend import TorchService
from emulator.sim.runtime.topology import (
    RoutingBound,
    RunFeatures,
    TopologyRuntime,
    keyed,
    named,
)
from emulator.sim.stages.link import Link
from emulator.sim.stages.pool import Pool
from emulator.sim.stages.prefill import PrefillStage
from emulator.topology.spec import PAIR_LINK, PAIR_REGION, PAIR_SITE, Topology
from emulator.topology.transport import PathChange, Transport
from emulator.topology.transport import goodput as path_goodput
from emulator.trace_formats import load_trace
from emulator.traces import MOONCAKE_BLOCK_TOKENS, Trace
from emulator.units import to_gbps

# the pair's runtime names, as its reports and the UI have them (emulator.sim.runtime.topology)
PAIR_NAMES = {f"link:{PAIR_LINK}": "link", f"reverse:{PAIR_LINK}": "link-reverse",
              f"rdma:{PAIR_REGION}": "rdma", f"pool:{PAIR_REGION}": "local"}


class Emulation:
    """One run of a scenario. See docs/emulator-api.md for the contract."""

    def __init__(self, scenario: Scenario, *, seed: int | None = None,
                 rate: float | None = None, load: float | None = None,
                 duration: float | None = None, paradigm: Paradigm | str = Paradigm.PRFAAS_PD,
                 trace: str | Trace | None = None, mode: str = "exact",
                 n_p: int | None = None, n_d: int | None = None,
                 cached_prefix: PrefixLookup | None = None, routing: str | None = None,
                 bound: RoutingBound | None = None):
        self.loop = VirtualTimeLoop()
        # the run's one event log (knob changes, incidents, scheduler decisions): bounded, the
        # dashboard's events view reads it whole; snapshots carry only the last few
        self.decisions: deque[str] = deque(maxlen=NOTE_LOG)
        self.cache_flushes = 0
        self._done_hooks: list[Callable[[Request, float], None]] = []
        self._arrive_hooks: list[Callable[[Request], None]] = []
        self._tasks: list[asyncio.Task[object]] = []
        try:
            self._build(scenario, seed, rate, load, duration, paradigm, trace, mode, n_p, n_d,
                        cached_prefix, routing, bound)
        except BaseException:  # a refused scenario leaves no open loop behind
            self.loop.close()
            raise

    def _build(self, scenario: Scenario, seed, rate, load, duration, paradigm, trace, mode,
               n_p, n_d, cached_prefix, routing, bound) -> None:
        paradigm = Paradigm(paradigm)
        if rate is not None and load is not None:
            raise ValueError("give a rate or a load, not both")
        sim = scenario.sim
        self.scenario = scenario
        self.mode = mode
        self.seed = sim.seed if seed is None else int(seed)
        self.duration = sim.duration if duration is None else float(duration)
        loop = self.loop
        self.topology: TopologyRuntime | None = None
        if scenario.declared_topology is not None:
            self._init_topology(scenario, rate, load, routing, bound, trace, paradigm,
                                cached_prefix)
        else:
            self._init_pair(scenario, rate, load, duration, paradigm, trace, n_p, n_d,
                            cached_prefix, routing)
        # the incidents' contributions by key: composed, so ending one removes only its own
        # (a link's factors are on the link; the rate's are per region)
        self._rate_factors: dict[str, dict[Hashable, float]] = {r: {} for r in self.regions}
        self._length_shifts: dict[Hashable, LengthDistribution] = {}
        # observation, the preset's incidents and scheduler (all public: UI, drills, scorecards)
        self.observer = Observer(self, loop, sim.sample_interval, sim.window,
                                 sim.timeseries_rows)
        self.timeline = Timeline(self, sim.incidents)
        self.scheduler: Scheduler | None = None
        if sim.scheduler.enabled:  # both timescales, on the pair and on a topology
            self.scheduler = Scheduler(self, sim.scheduler)

    def _init_pair(self, scenario: Scenario, rate, load, duration, paradigm: Paradigm, trace,
                   n_p, n_d, cached_prefix, routing) -> None:
        """The 1x1 topology (`Topology.pair`: site prfaas, region pd, their link) laid out for
        the paradigm, built by the one runtime with the pair's features as data: its streams
        and names, its top-level replay or sessions, its threshold rule's paradigm and prefix
        hook, the transfer cache, the torch backend."""
        if routing is not None and routing != "threshold":
            raise KnobError("routing", "a single-pair preset routes by its threshold: the "
                            "site policies need a topology ([[site]], [[region]], [[link]])")
        sim = scenario.sim
        system = scenario.system
        self.bandwidth = float(system.bandwidth)
        self.paradigm = paradigm
        self._n_prfaas = system.n_prfaas  # the PrfaaS size the non-homogeneous paradigms use
        self._split = (scenario.n_p, scenario.n_d)

        tr = self._trace(trace, sim)
        replay = tr is not None  # a replay runs to its last arrival by default
        if tr is None and sim.sessions is not None:  # a fifth stream: the first four unchanged
            rng = np.random.default_rng(np.random.SeedSequence(self.seed).spawn(5)[4])
            tr = to_trace(generate_sessions(sim.sessions, rng, duration=self.duration))
        if sim.cache is not None:
            if cached_prefix is not None:
                raise ValueError("give cached_prefix or a [cache] section, not both")
            if replay and tr.hash_ids and sim.cache.block_tokens != MOONCAKE_BLOCK_TOKENS:
                raise ValueError(f"the trace's hash_ids name {MOONCAKE_BLOCK_TOKENS}-token "
                                 f"blocks: [cache] block_tokens must be {MOONCAKE_BLOCK_TOKENS}")
        torch = TorchService(sim.prefill, self.seed) if sim.prefill is not None else None
        if (why := paradigm.unavailable(system)) is not None:
            raise KnobError("paradigm", why)
        split = self._split_of(paradigm)
        split = (split[0] if n_p is None else n_p, split[1] if n_d is None else n_d)
        replace(scenario.controls, n_p=split[0], n_d=split[1],
                paradigm=paradigm).validate(system)
        if paradigm.threshold_routing:
            self._split = split

        pair = Topology.pair(system, scenario.t, split[0], split[1], sim.link_latency,
                             scenario.transport, scenario.line_bandwidth)
        pair = replace(pair, sites=(replace(pair.sites[0],
                                            instances=paradigm.n_prfaas(system.n_prfaas)),),
                       regions=(replace(pair.regions[0], profile=paradigm.local_profile(system),
                                        pool=paradigm.pool(system)),))
        rt = TopologyRuntime(self.loop, pair, sim, self.seed, "threshold", note=self.note,
                             features=RunFeatures(root_streams=True, names=PAIR_NAMES, replay=tr,
                                                  paradigm=paradigm, cached_prefix=cached_prefix,
                                                  transfer_cache=True, torch=torch))
        self._views(rt)  # and the pair's own, onto its one site, region and link
        region = self.region
        self.link = rt.links[PAIR_LINK]
        self.prfaas, self.remote = rt.sites[PAIR_SITE].stage, rt.sites[PAIR_SITE].pool
        self.rdma, self.pdp, self.pdd, self.local = region.rdma, region.pdp, region.pdd, \
            region.local
        self.stages = {"prfaas": self.prfaas, "pd-p": self.pdp, "pd-d": self.pdd}
        self.router: ThresholdPolicy = region.policy
        self.cache = rt.cache
        self.reverse_link = None if rt.cache is None else rt.cache.links[self.link.name].reverse

        # the offered rate: a replay's own by default, a load relative to the model
        source = region.source
        native = source.native_rate / sim.replay_time_scale if isinstance(
            source, TraceSource) else None
        if rate is None:  # a load is relative to the model's Lambda_max in exact mode
            if load is not None:
                rate = load * self.model_point("exact").lambda_max
            elif native is not None:
                rate = native
            elif sim.rate is not None:
                rate = sim.rate
            else:
                rate = sim.load * self.model_point("exact").lambda_max
        if not (rate >= 0 and math.isfinite(rate)):
            how = "" if load is None and sim.rate is not None else " (load x the exact Lambda_max)"
            raise ValueError(f"offered rate must be a finite number >= 0 req/s{how}, got {rate!r}")
        if replay and duration is None and rate > 0:  # replay the whole trace (the
            # slack covers the rounding of summed gaps, so the last arrivals are in)
            assert isinstance(source, TraceSource) and tr is not None
            span = tr.duration * source.native_rate / rate
            self.duration = max(span * (1 + 1e-9) + 1e-9, sim.sample_interval)
        if not self.duration > 0:
            raise ValueError(f"duration must be > 0 seconds, got {self.duration!r}")
        self.latencies = region.latencies
        self._arrivals(rt, rate)

    def _init_topology(self, scenario: Scenario, rate: float | None, load: float | None,
                       routing: str | None, bound: RoutingBound | None,
                       trace: str | Trace | None, paradigm: Paradigm,
                       cached_prefix: PrefixLookup | None) -> None:
        """Every site, region and link of the declared topology on this loop (see
        emulator.sim.runtime.topology), with the torch prefill backend when the preset names
        one (on every site's stage and region's PD-P that `[prefill] stages` lists); the
        pair-only features are refused in one line each."""
        sim = scenario.sim
        topo = scenario.declared_topology
        for what, given in (("--trace / workload.replay", trace is not None or sim.replay),
                            ("a cached_prefix hook", cached_prefix is not None),
                            ("--paradigm", paradigm != Paradigm.PRFAAS_PD)):
            if given:
                raise KnobError("topology", f"{what}: runs on single-pair presets only")
        if (why := replay_problem(topo, sim)) is not None:
            raise KnobError("topology", why)
        routing = topo.routing if routing is None else routing
        if routing == "best-cache" and (why := best_cache_problem(sim)) is not None:
            raise KnobError("routing", why)
        if routing == "lp" and bound is None:
            raise KnobError("routing", "lp needs the routing bound (emulator.topology.bound)")
        self.routing = routing
        self.bound = bound
        if rate is None:
            lam = bound.lambda_max if bound is not None else None
            if load is None and sim.rate is not None:
                rate = sim.rate
            elif lam is None:
                raise ValueError("a topology's load is relative to its routing bound: give "
                                 "a rate, or the bound")
            else:
                rate = (sim.load if load is None else load) * lam
        if not (rate >= 0 and math.isfinite(rate)):
            raise ValueError(f"offered rate must be a finite number >= 0 req/s, got {rate!r}")
        if not self.duration > 0:
            raise ValueError(f"duration must be > 0 seconds, got {self.duration!r}")
        self.paradigm = Paradigm.PRFAAS_PD
        self.bandwidth = math.fsum(k.bandwidth for k in topo.links)
        self.cache = self.reverse_link = None
        torch = TorchService(sim.prefill, self.seed) if sim.prefill is not None else None
        self.topology = rt = TopologyRuntime(self.loop, topo, sim, self.seed, routing, bound,
                                             self.note, RunFeatures(torch=torch))
        self._views(rt)
        # each request is recorded once, in its region; the totals merge them when read
        self.latencies = LatencyGroup([r.latencies for r in rt.regions.values()])
        self._arrivals(rt, rate)
        self.start_marks = self._half_marks = marks(rt, 0.0)

    def _views(self, rt: TopologyRuntime) -> None:
        """The runtime's elements as the engine reads them (the pair's: its one of each)."""
        self.runtime = rt
        self.regions = rt.regions
        self.region = next(iter(rt.regions.values()))
        self.sites = rt.sites
        self.links = rt.links
        self.site_pools = {name: site.pool for name, site in rt.sites.items()}
        self.torch = rt.features.torch

    def _arrivals(self, rt: TopologyRuntime, rate: float) -> None:
        """Each region's arrivals at its share of `rate`, capped, started (in file order)."""
        rt.arrivals(rate, self.duration)
        self.workload = self.region.workload  # the first region's (the UI's pair view)
        self.set_arrival_cap(CAPS.requests)  # a command sets its own (set_arrival_cap)
        where = {r.name: "" if self.topology is None else f" in {r.name}" for r in
                 rt.regions.values()}
        for r in rt.regions.values():  # live: arrivals stop; run() raises instead
            r.workload.on_cap = lambda r=r: self.note(
                f"arrivals{where[r.name]} stopped at the cap of {r.workload.emitted:,} requests")
        rt.start(self.scenario.sim)

    @staticmethod
    def _trace(trace: str | Trace | None, sim) -> Trace | None:
        if isinstance(trace, Trace):
            return trace
        path = trace if trace is not None else sim.replay
        return load_trace(path) if path is not None else None  # the reader that accepted it

    # -- the books (each region's, summed) ----------------------------------------------------
    @property
    def arrived(self) -> int:
        return sum(r.arrived for r in self.regions.values())

    @property
    def completed(self) -> int:
        return sum(r.completed for r in self.regions.values())

    @property
    def rejected(self) -> dict[str, int]:
        """Rejections by reason (the 1x1 region's own dict; a topology's, merged)."""
        if len(self.regions) == 1:
            return self.region.rejected
        out: dict[str, int] = {}
        for r in self.regions.values():
            for reason, n in r.rejected.items():
                out[reason] = out.get(reason, 0) + n
        return out

    @property
    def rerouted(self) -> int:
        return sum(r.rerouted for r in self.regions.values())

    def stage_queues(self) -> dict[str, int]:
        """Requests queued now per stage kind (PrfaaS: every site's; PD-P/PD-D: every
        region's)."""
        regions = self.regions.values()
        return {"prfaas": sum(len(s.queue) for s in self.site_stages),
                "pd-p": sum(len(r.pdp.queue) for r in regions),
                "pd-d": sum(len(r.pdd.queue) for r in regions)}

    @property
    def site_stages(self) -> list[PrefillStage]:
        """Every site's prefill stage (the pair: its PrfaaS stage)."""
        return [pool.stages[Cluster.PRFAAS.value] for pool in self.site_pools.values()]

    @property
    def wan_links(self) -> list[Link]:
        """Every site -> region link (the pair: its one link)."""
        return list(self.links.values())

    def _done_hooks_run(self, req: Request, now: float) -> None:
        for fn in self._done_hooks:
            fn(req, now)

    # -- running ---------------------------------------------------------------------------
    @property
    def now(self) -> float:
        return self.loop.now

    @property
    def events(self) -> int:
        return self.loop.timer_events

    def run_until(self, t: float) -> None:
        """Advance virtual time to t (as fast as the CPU allows)."""
        self.loop.run_until(t)

    def run(self, progress: Callable[[float, float], None] | None = None,
            slices: int = 100) -> RunResult:
        """Run to `duration`, check the accounting (AccountingError), return a RunResult.
        `progress(now, duration)` is called `slices` times along the way when given."""
        end = self.duration
        for wl in self.workloads:
            wl.on_cap = self.check_arrivals  # abort at the cap, not at the end
        mid = self.now + (end - self.now) / 2
        halfway: list[Totals] = []
        self.loop.call_at_quiet(mid, lambda: halfway.append(self.totals()))
        if self.topology is not None:
            self.loop.call_at_quiet(mid, lambda: setattr(self, "_half_marks",
                                                         marks(self.topology, self.now)))
        if progress is None:
            self.run_until(end)
        else:
            start = self.now
            for i in range(1, slices + 1):
                self.run_until(start + (end - start) * i / slices)
                progress(self.now, end)
        self.check_arrivals()
        acc = self.accounting
        if self.topology is not None:
            self.topology.check()  # per region first: it names the region
        acc.check()
        return RunResult(self, acc, halfway[0] if halfway else self.observer.start)

    @property
    def workloads(self) -> list[Workload]:
        """Every arrival process: the pair's one, a topology's one per region."""
        return [r.workload for r in self.regions.values()]

    def set_arrival_cap(self, requests: float) -> None:
        """Arrivals stop at `requests` in all (a command's cap), each region's process at its
        share of it, so the cap holds for any CV or burst (see check_arrivals)."""
        if len(self.regions) == 1:
            self.workload.limit = requests
            return
        for r in self.regions.values():
            r.workload.limit = max(1.0, math.ceil(requests * r.share))

    def check_arrivals(self) -> None:
        """BudgetError when an arrival process reached its cap (workload.limit) before the
        end: the requests were counted as generated, so a CV or burst that offers far more
        than its target rate stops at the cap instead of growing without end."""
        for region in self.regions.values():
            wl = region.workload
            if wl.capped_at is None:
                continue
            t = wl.capped_at
            sim = self.scenario.sim
            why = f"{sim.arrival} arrivals" + (f" with cv = {sim.cv:g}" if sim.arrival == "gamma"
                                               else "")
            if self.topology is not None:
                why += f" in region {region.name}"
            offered = f"offered {wl.emitted / t:.4g} req/s" if t > 1e-6 else "all at once"
            raise BudgetError(
                f"workload.arrival: {why} reached the cap of {wl.emitted:,} requests at t = "
                f"{t:.4g} s ({offered} against a target of {wl.mean_rate:.4g} req/s, "
                f"{wl.expected():.4g} requests by then): a process this bursty cannot realise "
                "its rate in this run; lower workload.cv or raise the cap with --max-requests N")

    def close(self) -> None:
        """Cancel attached coroutines and close the loop."""
        for task in self._tasks:
            task.cancel()
        if self._tasks and not self.loop.is_closed():
            self.loop.run_until(self.now)  # let the cancellations run
        self._tasks.clear()
        if not self.loop.is_closed():
            self.loop.close()

    def __enter__(self) -> Emulation:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- controllers -----------------------------------------------------------------------
    def every(self, period: float, fn: Callable[[Emulation], None],
              start: float | None = None) -> None:
        """Call fn(emulation) every `period` simulated seconds (a periodic controller)."""
        if not period > 0:
            raise ValueError("period must be > 0 seconds")

        def tick() -> None:
            fn(self)
            self.loop.call_at(self.loop.now + period, tick)

        self.loop.call_at(self.now + period if start is None else start, tick)

    def spawn(self, coro: Coroutine[object, object, object]) -> asyncio.Task[object]:
        """Run a coroutine on the virtual loop (asyncio.sleep is simulated time there)."""
        task = self.loop.create_task(coro)
        self._tasks.append(task)
        return task

    def on_arrive(self, fn: Callable[[Request], None]) -> None:
        """Call fn(request) at every arrival, before admission (scorecards follow the requests
        that never finish)."""
        self._arrive_hooks.append(fn)
        for region in self.regions.values():
            region.on_arrive = self._arrive_hooks_run

    def _arrive_hooks_run(self, req: Request) -> None:
        for fn in self._arrive_hooks:
            fn(req)

    def on_done(self, fn: Callable[[Request, float], None]) -> None:
        """Call fn(request, now) at every completion (scorecards' per-request views)."""
        self._done_hooks.append(fn)
        for region in self.regions.values():
            region.on_done = self._done_hooks_run

    def note(self, text: str) -> None:
        """Record a decision (shown in snapshots)."""
        self.decisions.append(f"{self.now:9.1f}s {text}")

    # -- live changes ----------------------------------------------------------------------
    @property
    def t(self) -> float:
        """The threshold t in tokens (the router owns it; only threshold routing reads it)."""
        return self.router.t

    @property
    def controls(self) -> Controls:
        """The operator's settings now: t, the local split deployed, the PrfaaS size asked for
        (kept while a paradigm without PrfaaS runs), B_out, the offered rate, the paradigm."""
        return Controls(t=self.router.t, n_p=self.local.count("pd-p"),
                        n_d=self.local.count("pd-d"), n_prfaas=self._n_prfaas,
                        bandwidth=self.bandwidth, rate=self.workload.base_rate,
                        paradigm=self.paradigm)

    def apply(self, new: Controls) -> Controls:
        """Take the running emulation to `new` at the current simulated time, changing only
        what differs from `controls` (rate None: unchanged). A paradigm switch alone deploys
        that paradigm's own split (PrfaaS-PD: the last one it ran). Role changes drain first,
        nothing is lost. KnobError, and nothing changed, when `new` cannot run here. Returns
        the controls now in force."""
        old = self.controls
        par = Paradigm(new.paradigm)
        split = (new.n_p, new.n_d)
        if par != old.paradigm and split == (old.n_p, old.n_d):
            if (why := par.unavailable(self.scenario.system)) is not None:
                raise KnobError("paradigm", why)
            split = self._split_of(par)
        rate = old.rate if new.rate is None else new.rate
        target = replace(new, n_p=split[0], n_d=split[1], rate=rate, paradigm=par)
        target.validate(self.scenario.system)
        if target.t != old.t:
            self.router.t = float(target.t)
            self.note(f"threshold -> {target.t:.0f} tokens")
        if par != old.paradigm:
            self._deploy(par, split, immediate=False)
            self.note(f"paradigm -> {par}")
        elif split != (old.n_p, old.n_d):
            self.local.set_counts({"pd-p": split[0], "pd-d": split[1]})
            if par.threshold_routing:
                self._split = split  # what a switch back to PrfaaS-PD returns to
            self.note(f"split -> N_p {split[0]} / N_d {split[1]}")
        if target.n_prfaas != old.n_prfaas:
            self._n_prfaas = target.n_prfaas
            self._set_remote(par.n_prfaas(target.n_prfaas))
            self.note(f"PrfaaS instances -> {target.n_prfaas}")
        if target.bandwidth != old.bandwidth:
            self.bandwidth = self.link.bandwidth = float(target.bandwidth)
            self.link.rebalance()
            self.note(f"bandwidth -> {to_gbps(self.bandwidth):.2f} Gbps")
        if rate != old.rate:
            self.workload.set_rate(rate)
            self.note(f"offered rate -> {rate:.3f} req/s")
        return self.controls

    def change(self, **knobs: object) -> Controls:
        """`apply` with some knobs changed (names as in Controls), the rest as they are."""
        return self.apply(replace(self.controls, **knobs))

    def set_transport(self, line: float, transport: Transport) -> None:
        """The pair's link gets a new TCP (its loss, connections; `line` its line rate): the
        goodput follows, its bandwidth knob is the caller's `apply`. No-op when unchanged."""
        link = self.link
        if transport == link.transport:
            return
        link.set_transport(line, transport)
        link.rebalance()
        goodput = path_goodput(line, link.rtt, transport).bytes_per_s
        self.note(f"link: loss {transport.loss:g}, {transport.n} connections -> goodput "
                  f"{to_gbps(goodput):.3g} Gbps")

    def tpot(self, region: str | None = None) -> float | None:
        """The TPOT SLO a region's decode from the cards runs under (None: constants)."""
        step = self.regions[region or self.region.name].pdd.step
        return getattr(step, "tpot", None) if isinstance(step, CardStep) else None

    def set_tpot(self, tpot: float, region: str | None = None) -> None:
        """Derive a region's decode (the pair's, `region` None) again under the TPOT SLO
        `tpot`: the model's Eq. 5 and the decode stage's BS_max, which new joins obey (those
        in a batch stay; the step is physics and unchanged). KnobError, and nothing changed,
        on constant decode or a TPOT no batch of 1 meets."""
        name = region or self.region.name
        if name not in self.regions:
            raise KnobError("tpot", f"no region {name!r}")
        stage = self.regions[name].pdd
        where = None if self.topology is None else f"region {name}"
        sc = self.scenario
        if self.topology is None:
            sc = with_tpot(sc, tpot)
            step = sc.sim.step
        else:
            step = retimed(stage.step, tpot, where)

            def turned(topo: Topology) -> Topology:
                return replace(topo, regions=tuple(
                    replace(r, decode=step.decode(r.decode), step=step) if r.name == name
                    else r for r in topo.regions))

            assert sc.declared_topology is not None
            sc = replace(sc, declared_topology=turned(sc.declared_topology))
            self.topology.topo = turned(self.topology.topo)
        self.scenario = sc
        assert isinstance(step, CardStep) and step.limit is not None
        stage.retime(step.limit.batch, step.limit.step.step_s, step)
        self.note(f"{'' if where is None else name + ': '}TPOT -> {tpot * 1e3:g} ms: BS_max "
                  f"{step.limit.batch} ({step.limit.binds} binds), t_decode "
                  f"{step.limit.step.step_s * 1e3:.2f} ms")

    def _split_of(self, par: Paradigm) -> tuple[int, int]:
        """The local split a paradigm starts with: homogeneous its own best, naive all decode,
        PrfaaS-PD the split it last ran."""
        system = self.scenario.system
        if par.behaviour.own_pool:
            op = homogeneous_point(system, self.mode)
            return op.knobs.n_p, op.knobs.n_d
        if Stage.PD_P not in par.stages:
            return 0, par.pool(system)
        return self._split

    def _deploy(self, par: Paradigm, split: tuple[int, int], immediate: bool) -> None:
        """Lay the paradigm's stages out on the pools (validated by the caller)."""
        system = self.scenario.system
        pool = par.pool(system)
        self.paradigm = par
        self.router.paradigm = par
        self.pdp.set_costs(Costs(par.local_profile(system)))
        self.local.resize(max(len(self.local.machines), pool))
        self.local.size = pool
        self.local.set_counts({"pd-p": split[0], "pd-d": split[1]}, immediate=immediate)
        if par.threshold_routing:
            self._split = split
        self._set_remote(par.n_prfaas(self._n_prfaas), immediate)

    def _set_remote(self, n: int, immediate: bool = False) -> None:
        self.remote.resize(max(self.remote.size, n))
        self.remote.set_counts({"prfaas": n}, immediate=immediate)

    # -- the scheduler, in an operator's hands ---------------------------------------------------
    @property
    def scheduler_enabled(self) -> bool:
        """Whether the scheduler may change t and the split (False without one)."""
        return self.scheduler is not None and self.scheduler.enabled

    @scheduler_enabled.setter
    def scheduler_enabled(self, on: bool) -> None:
        if self.scheduler is None:
            if on:
                raise ValueError("this scenario has no scheduler ([sim.scheduler] enabled)")
            return
        if self.scheduler.enabled != bool(on):
            self.scheduler.enabled = bool(on)
            self.note(f"scheduler {'on' if on else 'off'} (by hand)")

    PINNABLE = ("t", "split")

    def pin(self, knob: str, pinned: bool = True) -> None:
        """Pin (or release) a knob set by hand: the scheduler then leaves it alone. `knob`:
        "t" or "split"."""
        if knob not in self.PINNABLE:
            raise ValueError(f"can pin {' or '.join(self.PINNABLE)}, not {knob!r}")
        if self.scheduler is None:
            return
        was = knob in self.scheduler.pinned
        (self.scheduler.pinned.add if pinned else self.scheduler.pinned.discard)(knob)
        if was != pinned:
            self.note(f"{knob} {'pinned: the scheduler leaves it alone' if pinned else 'released'}")

    # -- faults: the public API incidents use (emulator.scenario.incidents.Faults) -----------
    def inject(self, incident: Incident) -> Active | None:
        """Start an incident now (or at its `at`); None when it starts later."""
        return self.timeline.inject(incident)

    def end_manual_incidents(self) -> int:
        """End every active incident started by hand (`inject` without `at`); how many."""
        return self.timeline.end_manual()

    def call_at(self, when: float, fn: Callable[..., object], *args: object) -> asyncio.TimerHandle:
        """Call fn(*args) at simulated time `when` (an event of the emulated system)."""
        return self.loop.call_at(when, fn, *args)

    @property
    def base_lengths(self) -> LengthDistribution:
        return self.scenario.system.lengths

    @property
    def base_threshold(self) -> float:
        return self.scenario.t

    @property
    def lengths_fixed(self) -> bool:
        return isinstance(self.workload.source, TraceSource)

    def set_link_factor(self, key: Hashable, factor: float | None,
                        link: str | None = None) -> None:
        """`key`'s share of `link`'s bandwidth (None factor: it no longer limits the link; None
        link: every link, the pair's one). A link delivers its bandwidth times the product of
        every key's factor, also across bandwidth changes (a site's egress then shares it)."""
        targets = self._links_named(link)
        for lk in targets:
            keyed(lk.factors, key, factor)
        self._rebalance(targets)

    def set_link_path(self, key: Hashable, change: PathChange | None,
                      link: str | None = None) -> None:
        """`key`'s change to `link`'s path (loss, round trip; None change: gone; None link:
        every link): the link carries its goodput share under the changes and delivers after
        the changed round trip."""
        targets = self._links_named(link)
        for lk in targets:
            lk.set_path_change(key, change)
        self._rebalance(targets)

    def _links_named(self, link: str | None) -> list[Link]:
        return list(self.links.values()) if link is None else [named("link", self.links, link)]

    @staticmethod
    def _rebalance(links: list[Link]) -> None:
        for group in {id(lk.group): lk.group for lk in links}.values():
            group.rebalance()

    def set_rate_multiplier(self, key: Hashable, factor: float | None,
                            region: str | None = None) -> None:
        """`key`'s surge (> 1) or lull on `region`'s offered rate (None factor: gone; None
        region: every region's); they multiply."""
        names = list(self.regions) if region is None else [named("region", self.regions,
                                                                 region).name]
        for name in names:
            table = self._rate_factors[name]
            keyed(table, key, factor)
            self.regions[name].workload.set_multiplier(math.prod(table.values()))

    @property
    def lengths_now(self) -> LengthDistribution:
        """The length mix new requests draw from now: the newest active shift, else the
        preset's (the effective model evaluates at it)."""
        shifts = self._length_shifts
        return next(reversed(shifts.values())) if shifts else self.base_lengths

    def set_length_distribution(self, key: Hashable, dist: LengthDistribution | None) -> None:
        """`key`'s length mix for new requests (None: gone); the newest key still set wins."""
        if dist is None:
            self._length_shifts.pop(key, None)
        else:
            self._length_shifts[key] = dist
        self.workload.set_lengths(self.lengths_now)

    def flush_cache(self, cluster: str | None = None) -> int:
        """Empty the prefix cache of `cluster` (a site or region by name: the pair's "prfaas"
        or "pd"; None: every one): every prefix block and state snapshot goes, pinned transfer
        blocks stay. Counts the flush even without a [cache]. Returns how many caches were
        emptied."""
        self.cache_flushes += 1
        cache = self.cache if self.topology is None else self.topology.cache
        if cache is None:
            return 0
        blocks = cache.flush(cluster)
        every = "both" if self.topology is None else "every site and region"
        self.note(f"prefix cache flushed ({cluster or every}): {blocks} blocks")
        return 1 if cluster else len(cache.caches)

    def pool_of(self, stage: str, where: str | None = None) -> Pool:
        """The pool whose machines serve `stage` at `where`: a site's for "prfaas", a region's
        for "pd-p" and "pd-d" (the pair's: "prfaas", "pd"; None: the only one there is)."""
        if stage not in STAGES:
            raise ValueError(f"stage must be one of {', '.join(STAGES)}, got {stage!r}")
        if stage == Cluster.PRFAAS.value:
            return named("site", self.site_pools, where)
        return named("region", self.regions, where).local

    def live_instances(self, stage: str, where: str | None = None) -> list[int]:
        """Ids of the live instances assigned to `stage` (at `where`, see pool_of), ascending.
        An id is the instance's number in its pool, stable across role changes."""
        return [m.idx for m in self.pool_of(stage, where).machines
                if m.alive and m.target == stage]

    @property
    def region_names(self) -> tuple[str, ...]:
        return tuple(self.regions)

    def fail_instance(self, stage: str, idx: int, where: str | None = None) -> None:
        """Instance `idx` of `stage`'s pool dies: a prefill restarts from the queue head, a
        decode batch goes back through the router (its KV is gone)."""
        self.pool_of(stage, where).fail(idx)

    def restore_instance(self, stage: str, idx: int, where: str | None = None) -> None:
        """Instance `idx` of `stage`'s pool comes back (in whatever role it holds now)."""
        self.pool_of(stage, where).restore(idx)

    # -- state -------------------------------------------------------------------------------
    @property
    def knobs(self) -> LiveKnobs:
        """The configured knobs: instance targets, whether alive or not (see StageSnap)."""
        regions = self.regions.values()  # summed over the sites and regions (t: the first's)
        return LiveKnobs(t=getattr(self.region.policy, "t", math.nan),
                         n_p=sum(r.local.count("pd-p") for r in regions),
                         n_d=sum(r.local.count("pd-d") for r in regions),
                         n_prfaas=sum(p.count("prfaas") for p in self.site_pools.values()),
                         bandwidth=self.bandwidth, paradigm=self.paradigm)

    def model_point(self, mode: str | None = None) -> OperatingPoint:
        """The closed-form model at the current knobs and paradigm."""
        return self.knobs.model_point(self.scenario.system, mode or self.mode)

    # observation (emulator.sim.reports.observe)
    @property
    def in_flight(self) -> int:
        return self.observer.in_flight

    @property
    def accounting(self) -> Accounting:
        return self.observer.accounting

    def totals(self) -> Totals:
        return self.observer.totals()

    def snapshot(self) -> Snapshot:
        return self.observer.snapshot()
